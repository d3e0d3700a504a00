/*
 * fileops.h: the /v1/files endpoints: view, create, str_replace, insert and
 * raw bytes. Paths are absolute or relative to the workdir, and resolved
 * in the sandbox's own view by the file service (fsd.h). Every write is
 * atomic (O_EXCL temp file in the same directory, fsync, rename) and keeps
 * the mode (and owner, when allowed) of a file it replaces.
 */
#ifndef AGENT_FILEOPS_H
#define AGENT_FILEOPS_H

#include <stddef.h>
#include <sys/types.h>

struct conn;
struct http_req;
struct json;
struct stat;

#define FILEOPS_MAX_LIST	2000	/* directory entries listed by view */

/* op is "view", "create", "str_replace" or "insert". */
void	fileops_http(struct conn *, const char *op, const struct json *body);
/* Streams the file (offset=, length=) with X-File-Size/Version/Mode. */
void	fileops_http_raw_get(struct conn *, const char *query);
/* The head of a raw PUT (a streamed-body route): takes the body itself. */
void	fileops_http_raw_put(struct conn *, const char *query,
	    const struct http_req *r);
/* GET /v1/files/list?path=&recursive=&max_entries= */
void	fileops_http_list(struct conn *, const char *query);
/* POST /v1/files/delete {"path","recursive"} */
void	fileops_http_delete(struct conn *, const struct json *body);
/* The version stamp of a file: 16 hex digits, a hash of its device,
 * inode, size, mtime and ctime (changes when its content does). */
void	fileops_version(const struct stat *st, char out[17]);
/* mkdir -p dir (mode 0755) in the agent's own view: its state and work
 * directories at start, never a path a caller names. 0, or -1 with errno. */
int	fileops_mkdirs(const char *dir);

#endif
