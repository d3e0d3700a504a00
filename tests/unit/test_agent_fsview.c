/*
 * test_agent_fsview.c: the agent's file service without a sandbox: the
 * message codec (fswire.c: round trips, and every malformed length, NUL
 * or kind refused) and the operations (fsview.c) against a temporary
 * root holding the links a sandbox would plant: absolute and relative
 * links, chains and loops stay inside the root, /proc's magic links are
 * refused, a write follows its links to the target, a recursive delete
 * never leaves the tree.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../agent/fsview.h"
#include "../../agent/fswire.h"
#include "unit.h"

/* ---- the codec ---- */

TEST(test_req_round_trip)
{
	char msg[FSW_MSG_MAX];
	struct fsw_req q, h;
	struct fsw_msg m;
	size_t n;

	memset(&q, 0, sizeof(q));
	q.seq = 7;
	q.op = FSW_TMP;
	q.flags = FSW_F_MKPARENTS;
	n = fsw_req_build(msg, &q, "/workspace/a", "0123456789abcdef");
	CHECK(n == sizeof(q) + 12 + 16);
	CHECK(fsw_req_parse(msg, n, &h, &m) == 0);
	CHECK_INT(h.seq, 7);
	CHECK_INT(h.op, FSW_TMP);
	CHECK(m.n1 == 12 && memcmp(m.s1, "/workspace/a", 12) == 0);
	CHECK(m.n2 == 16 && memcmp(m.s2, "0123456789abcdef", 16) == 0);
	/* trailing bytes, a cut string, an unknown op */
	CHECK(fsw_req_parse(msg, n + 1, &h, &m) == -1);
	CHECK(fsw_req_parse(msg, n - 1, &h, &m) == -1);
	CHECK(fsw_req_parse(msg, sizeof(q) - 1, &h, &m) == -1);
	q.op = FSW_OP_MAX;
	n = fsw_req_build(msg, &q, "/x", NULL);
	CHECK(fsw_req_parse(msg, n, &h, &m) == -1);
}

TEST(test_build_refuses)
{
	char msg[FSW_MSG_MAX], *big = malloc(FSW_STR_MAX + 2);
	struct fsw_req q;

	memset(&q, 0, sizeof(q));
	q.op = FSW_OPEN;
	memset(big, 'a', FSW_STR_MAX + 1);
	big[FSW_STR_MAX + 1] = '\0';
	CHECK(fsw_req_build(msg, &q, big, NULL) == 0);
	big[FSW_STR_MAX] = '\0';
	CHECK(fsw_req_build(msg, &q, big, NULL) == sizeof(q) + FSW_STR_MAX);
	free(big);
}

/* A reply header with the given strings' lengths claimed. */
static size_t
rep_raw(char *msg, uint32_t kind, int32_t rc, int32_t err, uint16_t l1,
    uint16_t l2, const char *tail, size_t ntail)
{
	struct fsw_rep h;

	memset(&h, 0, sizeof(h));
	h.seq = 1;
	h.kind = kind;
	h.rc = rc;
	h.err = err;
	h.len1 = l1;
	h.len2 = l2;
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), tail, ntail);
	return sizeof(h) + ntail;
}

TEST(test_rep_malformed)
{
	char msg[FSW_MSG_MAX];
	struct fsw_rep h;
	struct fsw_msg m;
	size_t n;

	n = rep_raw(msg, FSW_K_END, 0, 0, 2, 1, "abc", 3);
	CHECK(fsw_rep_parse(msg, n, &h, &m) == 0);
	CHECK(m.n1 == 2 && m.n2 == 1 && m.s2[0] == 'c');
	/* a length past what arrived */
	n = rep_raw(msg, FSW_K_END, 0, 0, 3, 1, "abc", 3);
	CHECK(fsw_rep_parse(msg, n, &h, &m) == -1);
	n = rep_raw(msg, FSW_K_END, 0, 0, 65535, 65535, "abc", 3);
	CHECK(fsw_rep_parse(msg, n, &h, &m) == -1);
	/* a NUL inside a string */
	n = rep_raw(msg, FSW_K_END, 0, 0, 3, 0, "a\0c", 3);
	CHECK(fsw_rep_parse(msg, n, &h, &m) == -1);
	/* bytes after an end's strings, a bad kind, rc, errno */
	n = rep_raw(msg, FSW_K_END, 0, 0, 1, 0, "abc", 3);
	CHECK(fsw_rep_parse(msg, n, &h, &m) == -1);
	n = rep_raw(msg, 9, 0, 0, 0, 0, "", 0);
	CHECK(fsw_rep_parse(msg, n, &h, &m) == -1);
	n = rep_raw(msg, FSW_K_END, 5, 0, 0, 0, "", 0);
	CHECK(fsw_rep_parse(msg, n, &h, &m) == -1);
	n = rep_raw(msg, FSW_K_END, -1, -3, 0, 0, "", 0);
	CHECK(fsw_rep_parse(msg, n, &h, &m) == -1);
	n = rep_raw(msg, FSW_K_END, -1, 100000, 0, 0, "", 0);
	CHECK(fsw_rep_parse(msg, n, &h, &m) == -1);
	CHECK(fsw_rep_parse(msg, sizeof(h) - 1, &h, &m) == -1);
}

TEST(test_entries)
{
	char msg[FSW_MSG_MAX];
	const char *p;
	size_t len = 0, left;
	struct fsw_ent e;
	struct stat st;
	int n = 0;

	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFLNK | 0777;
	st.st_size = 3;
	CHECK(fsw_ent_add(msg, &len, &st, "a/l", 3, "/x", 2) == 0);
	st.st_mode = S_IFREG | 0644;
	st.st_size = 0;
	CHECK(fsw_ent_add(msg, &len, &st, "b", 1, NULL, 0) == 0);
	p = msg;
	left = len;
	while (fsw_ent_next(&p, &left, &e) == 1) {
		if (n == 0)
			CHECK(e.nrel == 3 && memcmp(e.rel, "a/l", 3) == 0 &&
			    e.ntarget == 2 && S_ISLNK((mode_t)e.st.mode));
		else
			CHECK(e.nrel == 1 && e.ntarget == 0 && e.st.size == 0);
		n++;
	}
	CHECK_INT(n, 2);
	/* cut anywhere: refused, never read past the end */
	p = msg;
	left = len - 1;
	CHECK(fsw_ent_next(&p, &left, &e) == 1);
	CHECK(fsw_ent_next(&p, &left, &e) == -1);
	p = msg;
	left = 10;
	CHECK(fsw_ent_next(&p, &left, &e) == -1);
	/* a relative path starting with '/', a NUL in a name */
	len = 0;
	CHECK(fsw_ent_add(msg, &len, &st, "/etc", 4, NULL, 0) == 0);
	p = msg;
	left = len;
	CHECK(fsw_ent_next(&p, &left, &e) == -1);
	len = 0;
	CHECK(fsw_ent_add(msg, &len, &st, "a\0b", 3, NULL, 0) == 0);
	p = msg;
	left = len;
	CHECK(fsw_ent_next(&p, &left, &e) == -1);
	/* a batch is full at FSW_MSG_MAX */
	len = FSW_MSG_MAX - 10;
	CHECK(fsw_ent_add(msg, &len, &st, "x", 1, NULL, 0) == -1);
}

/* ---- the operations, against a temporary root ---- */

/* short: the paths below it must fit PATH_MAX */
static char root_path[512];
static int root_fd = -1;

/* What a request got back (the in-process transport of fsd.c, reduced). */
struct got {
	struct fsw_rep	 rep;
	char		 s1[FSW_STR_MAX + 1], s2[FSW_STR_MAX + 1];
	int		 fds[FSW_MAX_FDS], nfds;
	int		 ends, bad;
	char		 names[64][256];
	int		 nents;
	char		 targets[64][256];
};

static int
emit(void *arg, const char *msg, size_t len, const int *fds, int nfds)
{
	struct got *g = arg;
	struct fsw_rep h;
	struct fsw_msg m;
	struct fsw_ent e;
	const char *p;
	size_t left;

	if (fsw_rep_parse(msg, len, &h, &m) == -1) {
		g->bad++;
		return -1;
	}
	if (h.kind == FSW_K_ENTS) {
		p = m.rest;
		left = m.nrest;
		while (fsw_ent_next(&p, &left, &e) == 1 && g->nents < 64) {
			snprintf(g->names[g->nents], 256, "%.*s", (int)e.nrel, e.rel);
			snprintf(g->targets[g->nents], 256, "%.*s", (int)e.ntarget,
			    e.target);
			g->nents++;
		}
		return 0;
	}
	g->rep = h;
	snprintf(g->s1, sizeof(g->s1), "%.*s", (int)m.n1, m.s1);
	snprintf(g->s2, sizeof(g->s2), "%.*s", (int)m.n2, m.s2);
	if (nfds > 0)
		memcpy(g->fds, fds, (size_t)nfds * sizeof(int));
	g->nfds = nfds;
	g->ends++;
	return 0;
}

/* Runs one request against root (fds taken); fills g. */
static void
run(int root, struct got *g, uint32_t op, uint32_t flags, const char *s1,
    const char *s2, int *fds, int nfds)
{
	char msg[FSW_MSG_MAX];
	struct fsw_req q;
	size_t n;

	memset(g, 0, sizeof(*g));
	memset(&q, 0, sizeof(q));
	q.seq = 1;
	q.op = op;
	q.flags = flags;
	q.mode = 0640;
	q.max = 100;
	q.depth = 8;
	n = fsw_req_build(msg, &q, s1, s2);
	fsview_serve(root, msg, n, fds, nfds, emit, g);
}

static void
close_got(struct got *g)
{
	int i;

	for (i = 0; i < g->nfds; i++)
		close(g->fds[i]);
	g->nfds = 0;
}

static void
put(const char *rel, const char *data)
{
	char p[PATH_MAX + 600];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root_path, rel);
	if ((f = fopen(p, "w")) != NULL) {
		fputs(data, f);
		fclose(f);
	}
}

static void
link_at(const char *target, const char *rel)
{
	char p[PATH_MAX + 600];

	snprintf(p, sizeof(p), "%s/%s", root_path, rel);
	if (symlink(target, p) == -1)
		perror(p);
}

/* The content of root/rel, or "" */
static const char *
read_rel(const char *rel)
{
	static char buf[256];
	char p[PATH_MAX + 512];
	ssize_t n;
	int fd;

	buf[0] = '\0';
	snprintf(p, sizeof(p), "%s/%s", root_path, rel);
	if ((fd = open(p, O_RDONLY)) == -1)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return buf;
}

static void
setup_root(void)
{
	char p[PATH_MAX + 600];

	snprintf(root_path, sizeof(root_path), "%s/fsview.XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(root_path) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(p, sizeof(p), "%s/ws", root_path);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/ws/d", root_path);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/etc", root_path);
	mkdir(p, 0755);
	put("etc/passwd", "root-inside\n");
	put("ws/plain", "plain\n");
	put("ws/d/x", "x\n");
	put("ws/d/.hidden", "h\n");
	link_at("/etc/passwd", "ws/abs");		/* absolute: inside */
	link_at("../../../../../etc/passwd", "ws/up");	/* ..: stops at root */
	link_at("/ws/c2", "ws/c1");			/* a chain */
	link_at("d/x", "ws/c2");
	link_at("/ws/loop2", "ws/loop1");		/* a loop */
	link_at("/ws/loop1", "ws/loop2");
	link_at("/ws/newfile", "ws/dang");		/* dangling */
	link_at("/etc", "ws/etcdir");			/* a directory */
	link_at("/proc/self/root", "ws/proc");		/* no /proc inside */
	if ((root_fd = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1) {
		perror(root_path);
		exit(1);
	}
}

/* The content read from a descriptor the service returned. */
static const char *
read_fd(int fd)
{
	static char buf[256];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

TEST(test_open_stays_inside)
{
	struct got g;

	run(root_fd, &g, FSW_OPEN, 0, "/ws/abs", NULL, NULL, 0);
	CHECK(g.rep.rc == 0 && g.nfds == 1);
	CHECK_STR(read_fd(g.fds[0]), "root-inside\n");
	close_got(&g);
	run(root_fd, &g, FSW_OPEN, 0, "/ws/up", NULL, NULL, 0);
	CHECK(g.rep.rc == 0 && g.nfds == 1);
	CHECK_STR(read_fd(g.fds[0]), "root-inside\n");
	close_got(&g);
	run(root_fd, &g, FSW_OPEN, 0, "/../../../etc/passwd", NULL, NULL, 0);
	CHECK(g.rep.rc == 0 && g.nfds == 1);
	CHECK_STR(read_fd(g.fds[0]), "root-inside\n");
	close_got(&g);
	run(root_fd, &g, FSW_OPEN, 0, "/ws/etcdir/passwd", NULL, NULL, 0);
	CHECK(g.rep.rc == 0 && g.nfds == 1 &&
	    strcmp(read_fd(g.fds[0]), "root-inside\n") == 0);
	close_got(&g);
	run(root_fd, &g, FSW_OPEN, 0, "/ws/c1", NULL, NULL, 0);
	CHECK(g.rep.rc == 0 && strcmp(read_fd(g.fds[0]), "x\n") == 0);
	close_got(&g);
	run(root_fd, &g, FSW_OPEN, 0, "/ws/loop1", NULL, NULL, 0);
	CHECK(g.rep.rc == -1 && g.rep.err == ELOOP && g.nfds == 0);
	run(root_fd, &g, FSW_OPEN, 0, "/ws/proc/etc/passwd", NULL, NULL, 0);
	CHECK(g.rep.rc == -1 && g.rep.err == ENOENT);
	CHECK_INT(g.ends, 1);
	CHECK_INT(g.bad, 0);
}

TEST(test_magic_links_refused)
{
	char p[64];
	struct got g;
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = open(root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	/* with the real /proc (root "/"): the magic links do not resolve */
	run(root, &g, FSW_STAT, 0, "/proc/self/root/etc/passwd", NULL, NULL, 0);
	CHECK(g.rep.rc == -1 && g.rep.err == ELOOP);
	snprintf(p, sizeof(p), "/proc/self/fd/%d/ws/plain", fd);
	run(root, &g, FSW_OPEN, 0, p, NULL, NULL, 0);
	CHECK(g.rep.rc == -1 && g.rep.err == ELOOP && g.nfds == 0);
	run(root, &g, FSW_LIST, 0, "/proc/self/cwd", NULL, NULL, 0);
	CHECK(g.rep.rc == -1 && g.rep.err == ELOOP);
	snprintf(p, sizeof(p), "/proc/self/fd/%d/ws/viafd", fd);
	run(root, &g, FSW_TMP, FSW_F_MKPARENTS, p, "0123456789abcdef", NULL, 0);
	CHECK(g.rep.rc == -1 && g.nfds == 0);
	CHECK(read_rel("ws/viafd")[0] == '\0');
	/* /proc/self itself is an ordinary link: still fine */
	run(root, &g, FSW_STAT, 0, "/proc/self/status", NULL, NULL, 0);
	CHECK(g.rep.rc == 0);
	close(fd);
	close(root);
}

/* A write: TMP, some bytes, COMMIT. The reply's step on failure. */
static int
write_path(const char *path, uint32_t flags, const char *data, int *step)
{
	struct got g, c;
	int fds[2];

	run(root_fd, &g, FSW_TMP, flags, path, "0123456789abcdef", NULL, 0);
	*step = (int)g.rep.step;
	if (g.rep.rc != 0 || g.nfds < 2) {
		close_got(&g);
		return -1;
	}
	if (write(g.fds[1], data, strlen(data)) != (ssize_t)strlen(data))
		return -1;
	fds[0] = g.fds[0];
	fds[1] = g.fds[1];
	run(root_fd, &c, FSW_COMMIT, 0, g.s1, g.s2, fds, 2);
	if (g.nfds == 3)
		close(g.fds[2]);
	*step = (int)c.rep.step;
	return c.rep.rc;
}

TEST(test_write_follows_links_inside)
{
	struct stat st;
	char p[PATH_MAX + 600];
	int step;

	CHECK(write_path("/ws/abs", 0, "new passwd\n", &step) == 0);
	CHECK_STR(read_rel("etc/passwd"), "new passwd\n");
	snprintf(p, sizeof(p), "%s/ws/abs", root_path);
	CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode));	/* the link stays */
	CHECK(write_path("/ws/c1", 0, "via chain\n", &step) == 0);
	CHECK_STR(read_rel("ws/d/x"), "via chain\n");
	CHECK(write_path("/ws/dang", 0, "target made\n", &step) == 0);
	CHECK_STR(read_rel("ws/newfile"), "target made\n");
	snprintf(p, sizeof(p), "%s/ws/newfile", root_path);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0640);
	CHECK(write_path("/ws/loop1", 0, "x", &step) == -1 && step == FSW_S_LOOP);
	CHECK(write_path("/ws/etcdir", 0, "x", &step) == -1 && step == FSW_S_NOTREG);
	CHECK(write_path("/ws/proc/x", FSW_F_MKPARENTS, "x", &step) == -1);
	CHECK(write_path("/ws/new/deep/f", 0, "x", &step) == -1 &&
	    step == FSW_S_RESOLVE);
	CHECK(write_path("/ws/new/deep/f", FSW_F_MKPARENTS, "deep\n", &step) == 0);
	CHECK_STR(read_rel("ws/new/deep/f"), "deep\n");
}

TEST(test_list_and_delete)
{
	struct got g;
	char p[PATH_MAX + 600];
	struct stat st;

	run(root_fd, &g, FSW_LIST, FSW_F_RECURSIVE, "/ws/d", NULL, NULL, 0);
	CHECK(g.rep.rc == 0 && (g.rep.flags & FSW_R_DIR));
	CHECK_INT(g.nents, 2);
	CHECK_STR(g.names[0], ".hidden");
	CHECK_STR(g.names[1], "x");
	run(root_fd, &g, FSW_LIST, FSW_F_RECURSIVE | FSW_F_NOHIDDEN, "/ws", NULL,
	    NULL, 0);
	CHECK(g.rep.rc == 0 && g.nents > 8);
	CHECK_STR(g.names[0], "abs");
	CHECK_STR(g.targets[0], "/etc/passwd");
	/* a link to a directory is followed at the top only */
	run(root_fd, &g, FSW_LIST, 0, "/ws/etcdir", NULL, NULL, 0);
	CHECK(g.rep.rc == 0 && g.nents == 1 && strcmp(g.names[0], "passwd") == 0);
	/* a link itself: one entry, not followed */
	run(root_fd, &g, FSW_LIST, 0, "/ws/dang", NULL, NULL, 0);
	CHECK(g.rep.rc == 0 && g.nents == 1 && g.names[0][0] == '\0' &&
	    strcmp(g.targets[0], "/ws/newfile") == 0);
	/* a recursive delete through a tree holding a link to /etc: the
	 * link goes, /etc stays */
	snprintf(p, sizeof(p), "%s/ws/del", root_path);
	mkdir(p, 0755);
	link_at("/etc", "ws/del/l");
	put("ws/del/f", "f");
	run(root_fd, &g, FSW_DELETE, 0, "/ws/del", NULL, NULL, 0);
	CHECK(g.rep.rc == -1 && g.rep.step == FSW_S_NOTEMPTY);
	run(root_fd, &g, FSW_DELETE, FSW_F_RECURSIVE, "/ws/del", NULL, NULL, 0);
	CHECK(g.rep.rc == 0 && g.rep.num == 3);
	CHECK(lstat(p, &st) == -1);
	CHECK_STR(read_rel("etc/passwd"), "new passwd\n");
	/* a link as the last component: removed, its target kept */
	run(root_fd, &g, FSW_DELETE, 0, "/ws/abs", NULL, NULL, 0);
	CHECK(g.rep.rc == 0 && g.rep.num == 1);
	CHECK_STR(read_rel("etc/passwd"), "new passwd\n");
	run(root_fd, &g, FSW_DELETE, 0, "/ws/nothing", NULL, NULL, 0);
	CHECK(g.rep.rc == -1 && g.rep.err == ENOENT && g.rep.step == FSW_S_RESOLVE);
}

TEST(test_bad_requests)
{
	char msg[FSW_MSG_MAX];
	struct fsw_req q;
	struct got g;
	int fd;

	/* a relative path, the wrong descriptors, a bad name to commit */
	run(root_fd, &g, FSW_OPEN, 0, "ws/plain", NULL, NULL, 0);
	CHECK(g.rep.rc == -1 && g.rep.step == FSW_S_PROTO);
	fd = open(root_path, O_PATH | O_CLOEXEC);
	run(root_fd, &g, FSW_OPEN, 0, "/ws/plain", NULL, &fd, 1);
	CHECK(g.rep.rc == -1 && g.rep.step == FSW_S_PROTO);
	fd = open(root_path, O_PATH | O_CLOEXEC);
	run(root_fd, &g, FSW_CANCEL, 0, "../etc/passwd", NULL, &fd, 1);
	CHECK(g.rep.rc == -1 && g.rep.step == FSW_S_PROTO);
	CHECK_STR(read_rel("etc/passwd"), "new passwd\n");
	run(root_fd, &g, FSW_TMP, 0, "/ws/x", "not-hex", NULL, 0);
	CHECK(g.rep.rc == -1 && g.rep.step == FSW_S_PROTO);
	/* a cut message is answered, with its sequence number */
	memset(&q, 0, sizeof(q));
	q.seq = 42;
	q.op = FSW_OPEN;
	fsw_req_build(msg, &q, "/ws/plain", NULL);
	memset(&g, 0, sizeof(g));
	fsview_serve(root_fd, msg, sizeof(q) + 3, NULL, 0, emit, &g);
	CHECK(g.ends == 1 && g.rep.seq == 42 && g.rep.step == FSW_S_PROTO);
}

static void
cleanup(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root_path);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", root_path);
}

int
main(void)
{
	RUN(test_req_round_trip);
	RUN(test_build_refuses);
	RUN(test_rep_malformed);
	RUN(test_entries);
	setup_root();
	RUN(test_open_stays_inside);
	RUN(test_magic_links_refused);
	RUN(test_write_follows_links_inside);
	RUN(test_list_and_delete);
	RUN(test_bad_requests);
	close(root_fd);
	cleanup();
	return unit_done();
}
