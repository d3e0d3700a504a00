/*
 * credwatch.h: named credentials' secrets refreshed without a reload
 * (issue 30; credwatch.c). One thread of its own, never a worker's event
 * loop, looks at the current addons' credentials every tick:
 *  - a file: secret is read again when the file (followed through
 *    symlinks) changes: device, inode, size, mtime or ctime, polled every
 *    credentials.secret_watch;
 *  - a cmd: secret is run again every secret_refresh seconds (its
 *    declaration's; creddecl.h has the default).
 * A changed value takes effect by swapping the addons' credential set for
 * a copy holding it (addon_src_creds_set): a request takes the set once,
 * so it sees the old or the new value, never half; the old set is freed,
 * its secrets wiped, with its last reference. A failed read keeps the last
 * good value and logs one line (rate-limited). env: secrets, key_id, token
 * and refresh are read at load only.
 */
#ifndef PROXY_CREDWATCH_H
#define PROXY_CREDWATCH_H

#include <stdatomic.h>

/* Secrets refreshed with a new value, and refreshes that failed (metrics.c). */
extern atomic_long credwatch_changed, credwatch_failed;

/*
 * Starts the thread: files polled every file_ms (0: files not watched),
 * commands run when due. 0, or -1 (the thread could not start).
 */
int	credwatch_start(long long file_ms);
/* Stops and joins the thread (waits for a command running, at most its timeout). */
void	credwatch_stop(void);

#endif
