/*
 * fswire.h: the messages between the agent and its file service (fsd.c,
 * fsview.c), built and checked here and nowhere else. Pure code (no I/O),
 * unit-tested and fuzzed: the file service runs with the sandbox's
 * identity, so the agent reads what it sends as hostile input.
 *
 * One request and its replies are SOCK_SEQPACKET messages (or, without a
 * helper process, the same bytes handed over in memory): a fixed header,
 * then up to two strings (no NUL inside, none after), then for a listing
 * a run of entries. Descriptors travel beside them (SCM_RIGHTS). Every
 * length is checked against what arrived before it is used; a message
 * that does not add up is refused whole.
 */
#ifndef AGENT_FSWIRE_H
#define AGENT_FSWIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* A message's largest size: a header, two paths, or a batch of entries.
 * Bounds what the agent reads from the service in one go. */
#define FSW_MSG_MAX	((size_t)64 * 1024)
/* A string in a message (a path, a name, a link's target). */
#define FSW_STR_MAX	4096
/* Descriptors one message may carry (a write's directory, its temporary
 * file and the old file). */
#define FSW_MAX_FDS	3

enum fsw_op {
	FSW_OPEN = 1,	/* s1 path: a descriptor to read it (O_NONBLOCK) */
	FSW_STAT,	/* s1 path (flags FSW_F_NOFOLLOW): its stat */
	FSW_TMP,	/* s1 path: a temporary file beside the write's target */
	FSW_COMMIT,	/* fds dir, tmp; s1 tmp name, s2 name: put it in place */
	FSW_CANCEL,	/* fd dir; s1 tmp name: remove it */
	FSW_LIST,	/* s1 path: entries, then the end */
	FSW_DELETE,	/* s1 path: remove it (FSW_F_RECURSIVE) */
	FSW_OP_MAX
};

/* Request flags. */
#define FSW_F_NOFOLLOW	0x1	/* STAT: the last component is not followed */
#define FSW_F_MKPARENTS	0x2	/* TMP: make missing parent directories */
#define FSW_F_OLD	0x4	/* TMP: also a descriptor of the old file */
#define FSW_F_HAVE	0x8	/* COMMIT: the target existed (keep owner) */
#define FSW_F_RECURSIVE	0x10	/* LIST, DELETE */
#define FSW_F_NOHIDDEN	0x20	/* LIST: skip names starting with '.' */

/* Reply flags. */
#define FSW_R_HAVE	0x1	/* TMP: the target exists (st is its stat) */
#define FSW_R_DIR	0x2	/* LIST: the path is a directory */
#define FSW_R_TRUNC	0x4	/* LIST: stopped at the entry limit */

/* What failed (a reply's step), so the agent words the error itself. */
enum fsw_step {
	FSW_S_NONE = 0,
	FSW_S_RESOLVE,		/* the path (or a directory on it) */
	FSW_S_PARENTS,		/* making the parent directories */
	FSW_S_NOTREG,		/* the target is not a regular file */
	FSW_S_LOOP,		/* too many links on the way to the target */
	FSW_S_CREATE,		/* creating the temporary file */
	FSW_S_CHMOD,
	FSW_S_RENAME,
	FSW_S_NOTEMPTY,		/* DELETE: a directory, not empty */
	FSW_S_REMOVE,		/* DELETE: an entry (s1 names it) */
	FSW_S_PROTO,		/* a malformed request */
	FSW_S_MAX
};

/* A stat as it travels. */
struct fsw_st {
	uint32_t	mode;
	uint32_t	uid;
	uint32_t	gid;
	uint32_t	_pad;
	int64_t		size;
	uint64_t	dev;
	uint64_t	ino;
	int64_t		mtime_s;
	int64_t		mtime_ns;
	int64_t		ctime_s;
	int64_t		ctime_ns;
};

struct fsw_req {
	uint32_t	seq;
	uint32_t	op;		/* enum fsw_op */
	uint32_t	flags;		/* FSW_F_* */
	uint32_t	mode;		/* COMMIT: the mode to give */
	uint32_t	uid, gid;	/* COMMIT with HAVE: the owner to keep */
	int64_t		max;		/* LIST: entries at most */
	uint32_t	depth;		/* LIST: levels below the path at most */
	uint16_t	len1, len2;	/* the strings that follow */
};

/* Reply kinds: entries of a listing come before its end. */
#define FSW_K_END	1
#define FSW_K_ENTS	2

struct fsw_rep {
	uint32_t	seq;
	uint32_t	kind;		/* FSW_K_* */
	int32_t		rc;		/* 0, or -1 with err and step */
	int32_t		err;		/* an errno value */
	uint32_t	step;		/* enum fsw_step */
	uint32_t	flags;		/* FSW_R_* */
	int64_t		num;		/* DELETE: removed; ENTS: entries here */
	struct fsw_st	st;		/* STAT, TMP (with HAVE), LIST's path */
	uint16_t	len1, len2;	/* TMP: tmp name, name; DELETE: entry */
	uint32_t	_pad;
};

/* A checked message: the header and its strings (NUL-terminated copies
 * are the caller's; these point into the message). */
struct fsw_msg {
	const char	*s1, *s2;
	size_t		 n1, n2;
	const char	*rest;		/* ENTS: the entries */
	size_t		 nrest;
};

/* One entry of a listing: rel is the path below the listed one ("" for
 * the path itself), target a symlink's (ntarget 0: none). */
struct fsw_ent {
	struct fsw_st	 st;
	const char	*rel;
	size_t		 nrel;
	const char	*target;
	size_t		 ntarget;
};

/* Converts a stat (both ways). */
void	fsw_st_from(struct fsw_st *, const struct stat *);
void	fsw_st_to(struct stat *, const struct fsw_st *);

/*
 * Builds a request (or a reply, when rep is set) into out (FSW_MSG_MAX
 * bytes): the header with len1/len2 filled in, then s1 and s2 (NULL: "").
 * Returns its size, or 0 when a string is over FSW_STR_MAX or holds a NUL.
 */
size_t	fsw_req_build(char *out, struct fsw_req *h, const char *s1,
	    const char *s2);
size_t	fsw_rep_build(char *out, struct fsw_rep *h, const char *s1,
	    const char *s2);
/* Checks a received message; copies its header into h. 0, or -1. */
int	fsw_req_parse(const char *p, size_t n, struct fsw_req *h,
	    struct fsw_msg *m);
int	fsw_rep_parse(const char *p, size_t n, struct fsw_rep *h,
	    struct fsw_msg *m);
/*
 * Appends one entry to a batch being built in out (size *len, at most
 * FSW_MSG_MAX with the reply header counted by the caller in *len).
 * 0, or -1 when it does not fit (send the batch, start another).
 */
int	fsw_ent_add(char *out, size_t *len, const struct stat *st,
	    const char *rel, size_t nrel, const char *target, size_t ntarget);
/*
 * Takes the next entry from *p (*left bytes): 1 with e filled (pointing
 * into the batch), 0 at the end, -1 when the batch is malformed.
 */
int	fsw_ent_next(const char **p, size_t *left, struct fsw_ent *e);

#endif
