/*
 * sessopt.h: the options of a sandbox request (create_sandbox's arguments,
 * the fields of POST /v1/sessions): what a session's sandbox is made with
 * and the session's own reaper limits. One parser for both surfaces, the
 * check against the operator's maxima (conf.h sandbox.max_*, reap.max_*),
 * and the formats (docs/operator-guide.md, "Sandbox options"):
 *   cpu           cores, a JSON number (fractions to 0.001; at least 0.01)
 *   memory, memory_reservation, disk  a size string: "512MiB", "2GiB",
 *                 "10G", or bytes ("1073741824")
 *   lifetime, idle_timeout  a duration string with a unit: "90s", "30m", "2h"
 * Nothing here touches a session or the runtime.
 */
#ifndef SESSOPT_H
#define SESSOPT_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "attrib.h"
#include "conf.h"

/* A request's options; unset fields take the operator's defaults. */
struct sess_opts {
	const char	*image;		/* NULL: default */
	int		 use_kata;	/* -1: default */
	int		 run_as_root;	/* -1: default */
	int		 writable_root;	/* -1: default */
	long long	 cpu_millis;	/* 0: default (1000 = one core) */
	long long	 mem_bytes;	/* 0: default */
	long long	 mem_reserve_bytes;	/* 0: default (within mem_bytes) */
	long long	 disk_bytes;	/* 0: default */
	long long	 lifetime_ms;	/* 0: reap.lifetime */
	long long	 idle_ms;	/* 0: reap.idle */
	int		 fresh_workspace;	/* 1: the new sandbox starts with an
					 * empty /workspace (default: a copy) */
};

/* Shortest lifetime or idle_timeout a request may set: one reaper round
 * must not reap a sandbox the moment it is made. */
#define SESSOPT_MIN_REAP_MS	60000

void	sessopt_init(struct sess_opts *);
/* 1 if o asks for anything about the sandbox itself (image, flags,
 * cpu/memory/disk): such a request cannot be served by the warm pool. */
int	sessopt_sandbox_given(const struct sess_opts *);
/*
 * Reads the option members of obj into o (sessopt_init first): types,
 * formats and the fixed bounds. A member named in also (a NULL-terminated
 * list; may be NULL) is skipped; any other member not an option is
 * refused, naming it. o's strings point into obj. 0, or -1 with err.
 */
int	sessopt_parse(const cJSON *obj, const char *const *also,
	    struct sess_opts *o, char *err, size_t errlen) WUNRES;
/* Checks o against the operator's maxima; the error names the maximum
 * and its key. 0, or -1 with err. */
int	sessopt_check(const struct conf *, const struct sess_opts *, char *err,
	    size_t errlen) WUNRES;
/* bytes as "2GiB", "512MiB", "3KiB" when exact, else "N bytes". */
void	sessopt_fmt_size(char *out, size_t len, long long bytes);
/* ms as "2h", "30m", "90s" when exact, else "N ms". */
void	sessopt_fmt_duration(char *out, size_t len, long long ms);

#endif
