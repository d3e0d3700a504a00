/*
 * jobx.h: jobs run as an exec would run (docs/agent.md, "Jobs run as
 * execs"): the start options that make a job behave as /v1/exec (stdout
 * and stderr apart, a timeout that kills the tree with exit 124, cwd, env,
 * stdin, an output cap, a caller-chosen id), the split spool's framing,
 * and GET /v1/jobs/{id}/stream, the job's output as /v1/exec's NDJSON
 * lines from an offset, following the job live until its exit line.
 *
 * The split spool is a sequence of records: a tag byte ('o' stdout, 'e'
 * stderr, 'n' the cap was reached), a 4-byte big-endian length, then that
 * many bytes. The wrapper writes each record with one write(2); a reader
 * takes only whole records, so a record being written is never half read.
 */
#ifndef AGENT_JOBX_H
#define AGENT_JOBX_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct conn;
struct json;
struct jw;

#define JOBX_HDR	5			/* tag + 4-byte length */
#define JOBX_REC_MAX	((size_t)64 * 1024)	/* payload bytes a record */

/* What POST /v1/jobs may add to "command". */
struct jobx_opts {
	char		 id[32];	/* "": a random one */
	int		 split;		/* "streams":"split" */
	int		 kill_leftovers;	/* the end of its main process
					 * kills the rest of its tree */
	long long	 timeout_ms;	/* 0: none */
	long long	 max_output;	/* 0: the spool cap */
	char		 cwd[PATH_MAX];	/* "": the shell's */
	struct buf	 env;		/* export lines for the script */
	unsigned char	*in;		/* stdin bytes (NULL: /dev/null) */
	size_t		 inlen;
};

/* Parses the options of body into o (replies 400 and returns -1 when one
 * is wrong). valid_id checks a caller's id. jobx_opts_free frees. */
int	jobx_opts_parse(struct conn *, const struct json *body,
	    int (*valid_id)(const char *), struct jobx_opts *o);
void	jobx_opts_free(struct jobx_opts *);

/* A record's header for n payload bytes of tag. */
void	jobx_frame_hdr(unsigned char hdr[JOBX_HDR], char tag, uint32_t n);

/* What the job's record says about its end, for the stream's last line. */
struct jobx_end {
	int		 running;
	int		 have_exit;	/* else: lost (exit unknown) */
	long long	 exit_code, sig;	/* -1: null */
	int		 oom, timed_out;
	long long	 started_ms, ended_ms;
	long long	 dropped;
	long long	 max_output;	/* the cap the note names */
};
/* 0 and *e filled, or -1: no such job. */
typedef int (*jobx_state_fn)(const char *id, struct jobx_end *e);

/*
 * Streams the job's output file (path; split: framed, else raw bytes as
 * "out") from offset as NDJSON, then the exit line once the job has ended
 * and its output is all sent. The job is not touched when the client
 * goes away.
 */
void	jobx_http_stream(struct conn *, const char *id, const char *path,
	    int split, long long offset, jobx_state_fn state);
/*
 * A split job's output as {"s","b"} objects of an array already opened
 * on w: whole records from offset, at most max payload bytes (one record
 * at least). Returns the offset after the last record taken.
 */
long long jobx_chunks(struct jw *, const char *path, long long offset,
	    size_t max);
int	jobx_stream_count(void);

#endif
