/*
 * fswire.c: the file service's messages (fswire.h). Headers are copied
 * with memcpy (a received buffer has no alignment to rely on); every
 * length is checked against the bytes that arrived before anything is
 * pointed at, and a string holding a NUL is refused.
 */
#include <string.h>

#include "fswire.h"

void
fsw_st_from(struct fsw_st *w, const struct stat *st)
{
	memset(w, 0, sizeof(*w));
	w->mode = (uint32_t)st->st_mode;
	w->uid = (uint32_t)st->st_uid;
	w->gid = (uint32_t)st->st_gid;
	w->size = (int64_t)st->st_size;
	w->dev = (uint64_t)st->st_dev;
	w->ino = (uint64_t)st->st_ino;
	w->mtime_s = (int64_t)st->st_mtim.tv_sec;
	w->mtime_ns = (int64_t)st->st_mtim.tv_nsec;
	w->ctime_s = (int64_t)st->st_ctim.tv_sec;
	w->ctime_ns = (int64_t)st->st_ctim.tv_nsec;
}

void
fsw_st_to(struct stat *st, const struct fsw_st *w)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = (mode_t)w->mode;
	st->st_uid = (uid_t)w->uid;
	st->st_gid = (gid_t)w->gid;
	st->st_size = (off_t)w->size;
	st->st_dev = (dev_t)w->dev;
	st->st_ino = (ino_t)w->ino;
	st->st_mtim.tv_sec = (time_t)w->mtime_s;
	st->st_mtim.tv_nsec = (long)w->mtime_ns;
	st->st_ctim.tv_sec = (time_t)w->ctime_s;
	st->st_ctim.tv_nsec = (long)w->ctime_ns;
}

/* Length of s for a message (NULL: 0), or -1 when it cannot go. */
static long
str_len(const char *s)
{
	size_t n;

	if (s == NULL)
		return 0;
	n = strlen(s);
	return n > FSW_STR_MAX ? -1 : (long)n;
}

/* Header (hlen bytes at h), then the strings; fills the lengths at l1,
 * l2 (inside the header copy). */
static size_t
build(char *out, void *h, size_t hlen, uint16_t *l1, uint16_t *l2,
    const char *s1, const char *s2)
{
	long n1 = str_len(s1), n2 = str_len(s2);

	if (n1 < 0 || n2 < 0 || hlen + (size_t)n1 + (size_t)n2 > FSW_MSG_MAX)
		return 0;
	*l1 = (uint16_t)n1;
	*l2 = (uint16_t)n2;
	memcpy(out, h, hlen);
	if (n1 > 0)
		memcpy(out + hlen, s1, (size_t)n1);
	if (n2 > 0)
		memcpy(out + hlen + n1, s2, (size_t)n2);
	return hlen + (size_t)n1 + (size_t)n2;
}

size_t
fsw_req_build(char *out, struct fsw_req *h, const char *s1, const char *s2)
{
	return build(out, h, sizeof(*h), &h->len1, &h->len2, s1, s2);
}

size_t
fsw_rep_build(char *out, struct fsw_rep *h, const char *s1, const char *s2)
{
	return build(out, h, sizeof(*h), &h->len1, &h->len2, s1, s2);
}

/* The strings after a header of hlen bytes; the rest is what follows. */
static int
parse(const char *p, size_t n, size_t hlen, size_t l1, size_t l2,
    struct fsw_msg *m)
{
	memset(m, 0, sizeof(*m));
	if (n < hlen || n > FSW_MSG_MAX || l1 > FSW_STR_MAX || l2 > FSW_STR_MAX ||
	    l1 + l2 > n - hlen)
		return -1;
	m->s1 = p + hlen;
	m->n1 = l1;
	m->s2 = m->s1 + l1;
	m->n2 = l2;
	if (memchr(m->s1, '\0', l1) != NULL || memchr(m->s2, '\0', l2) != NULL)
		return -1;
	m->rest = m->s2 + l2;
	m->nrest = n - hlen - l1 - l2;
	return 0;
}

int
fsw_req_parse(const char *p, size_t n, struct fsw_req *h, struct fsw_msg *m)
{
	if (n < sizeof(*h))
		return -1;
	memcpy(h, p, sizeof(*h));
	if (h->op == 0 || h->op >= FSW_OP_MAX)
		return -1;
	if (parse(p, n, sizeof(*h), h->len1, h->len2, m) == -1 || m->nrest != 0)
		return -1;
	return 0;
}

int
fsw_rep_parse(const char *p, size_t n, struct fsw_rep *h, struct fsw_msg *m)
{
	if (n < sizeof(*h))
		return -1;
	memcpy(h, p, sizeof(*h));
	if ((h->kind != FSW_K_END && h->kind != FSW_K_ENTS) ||
	    (h->rc != 0 && h->rc != -1) || h->step >= FSW_S_MAX ||
	    h->err < 0 || h->err > 4095)
		return -1;
	if (parse(p, n, sizeof(*h), h->len1, h->len2, m) == -1)
		return -1;
	/* only a batch of entries carries more than its strings */
	if (h->kind == FSW_K_END && m->nrest != 0)
		return -1;
	return 0;
}

/* An entry: its stat, the two lengths, the two strings. */
#define ENT_HEAD	(sizeof(struct fsw_st) + 2 * sizeof(uint16_t))

int
fsw_ent_add(char *out, size_t *len, const struct stat *st, const char *rel,
    size_t nrel, const char *target, size_t ntarget)
{
	struct fsw_st w;
	uint16_t l[2];

	if (nrel > FSW_STR_MAX || ntarget > FSW_STR_MAX ||
	    *len + ENT_HEAD + nrel + ntarget > FSW_MSG_MAX)
		return -1;
	fsw_st_from(&w, st);
	l[0] = (uint16_t)nrel;
	l[1] = (uint16_t)ntarget;
	memcpy(out + *len, &w, sizeof(w));
	memcpy(out + *len + sizeof(w), l, sizeof(l));
	*len += ENT_HEAD;
	if (nrel > 0)
		memcpy(out + *len, rel, nrel);
	*len += nrel;
	if (ntarget > 0)
		memcpy(out + *len, target, ntarget);
	*len += ntarget;
	return 0;
}

int
fsw_ent_next(const char **p, size_t *left, struct fsw_ent *e)
{
	uint16_t l[2];

	if (*left == 0)
		return 0;
	if (*left < ENT_HEAD)
		return -1;
	memcpy(&e->st, *p, sizeof(e->st));
	memcpy(l, *p + sizeof(e->st), sizeof(l));
	if (l[0] > FSW_STR_MAX || l[1] > FSW_STR_MAX ||
	    (size_t)l[0] + l[1] > *left - ENT_HEAD)
		return -1;
	e->rel = *p + ENT_HEAD;
	e->nrel = l[0];
	e->target = e->rel + l[0];
	e->ntarget = l[1];
	/* a name never holds a NUL, nor does a relative path start at / */
	if (memchr(e->rel, '\0', e->nrel) != NULL ||
	    memchr(e->target, '\0', e->ntarget) != NULL ||
	    (e->nrel > 0 && e->rel[0] == '/'))
		return -1;
	*p += ENT_HEAD + l[0] + l[1];
	*left -= ENT_HEAD + l[0] + l[1];
	return 1;
}
