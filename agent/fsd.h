/*
 * fsd.h: the agent's file service (fsd.c): every file operation the
 * agent's endpoints perform on a path the caller names (read, write,
 * stat, list, delete) runs in the sandbox's own view, with the identity
 * and the limits a command there has. In a nested sandbox (nest.h) that
 * is a helper process in the sandbox's user and mount namespaces with
 * the sandbox's ids and capabilities; without nesting the agent itself.
 *
 * Each call returns 0, or -1 with errno set (and, where given, *step: an
 * enum fsw_step naming what failed). A helper that does not answer within
 * FSD_REPLY_MS, or answers nonsense, is killed and replaced; its call
 * fails with ETIMEDOUT or EIO. Descriptors returned are the caller's.
 */
#ifndef AGENT_FSD_H
#define AGENT_FSD_H

#include <limits.h>
#include <sys/stat.h>

#include "fswire.h"

/* Starts the service (the helper, when nested). 0, or -1 with err. */
int	fsd_init(char *err, size_t errlen);
/* 1 when file operations see the agent's own view (no helper): the
 * agent's state is then reachable by path and must be fenced by name. */
int	fsd_in_agent_view(void);

/* A descriptor to read path (O_NONBLOCK). */
int	fsd_open(const char *path, int *fd);
/* path's stat (nofollow: the last component's own). */
int	fsd_stat(const char *path, int nofollow, struct stat *st);

/* A write in progress: a temporary file beside its target. */
struct fsd_tmp {
	int		 dir;		/* the target's directory (O_PATH) */
	int		 fd;		/* the temporary file, open to write */
	int		 old;		/* the old file to read, or -1 */
	int		 have;		/* the target exists */
	struct stat	 st;		/* its stat, when it does */
	char		 tmp[NAME_MAX + 1];	/* the temporary file's name */
	char		 name[NAME_MAX + 1];	/* the target's name */
};

/*
 * Opens a write to path: its symlinks followed (inside the sandbox) to
 * the target, which must be a regular file or absent; mkparents makes
 * missing directories; old asks for a descriptor of the existing file.
 * On failure nothing is left and t holds no descriptor.
 */
int	fsd_tmp_open(const char *path, int mkparents, int old,
	    struct fsd_tmp *t, int *step);
/* Puts the written temporary file in place: fsync, the owner kept (when
 * allowed), mode (-1: the target's, 0644 for a new file), rename. On
 * failure the temporary file is removed. t->fd stays open either way. */
int	fsd_tmp_commit(struct fsd_tmp *t, int mode, int *step);
/* Removes the temporary file (unless committed) and closes t. */
void	fsd_tmp_cancel(struct fsd_tmp *t);
/* Closes t's descriptors (after a commit). */
void	fsd_tmp_close(struct fsd_tmp *t);

/* Listing flags (fswire.h's FSW_F_RECURSIVE, FSW_F_NOHIDDEN). */
/*
 * Lists path (followed): a directory's entries, depth first, names sorted,
 * down to depth levels below it, at most max; anything else is one entry
 * of itself (rel ""). cb gets each entry (pointers valid during the call);
 * top gets path's stat; *trunc is 1 when entries were left out.
 */
int	fsd_list(const char *path, int flags, int depth, long long max,
	    void (*cb)(void *, const struct fsw_ent *), void *arg,
	    struct stat *top, int *trunc);
/* Deletes path (never followed): *n entries removed; on failure ent (the
 * failing entry below path, may be "") and *step. */
int	fsd_delete(const char *path, int recursive, long long *n, char *ent,
	    size_t entlen, int *step);

#endif
