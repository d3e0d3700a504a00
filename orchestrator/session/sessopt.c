/*
 * sessopt.c: the options of a sandbox request (sessopt.h). One row per
 * option holds its name, its kind (which decides its type, format and
 * fixed bounds) and where it goes; a second table holds the operator's
 * maximum of each limit. create_sandbox's inputSchema (tools.c) and
 * POST /v1/sessions (rest.c) both read requests through sessopt_parse,
 * so the two surfaces take the same options in the same formats.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "sessopt.h"
#include "strnum.h"

#define IMAGE_MAX	255	/* what the session record keeps */
#define CPU_MAX_CORES	256	/* the runtimes' own ceiling */
#define MS_MAX		(3650LL * 86400000)	/* ten years */

enum okind { K_IMAGE, K_FLAG, K_CPU, K_SIZE, K_DURATION };

static const struct opt {
	const char	*name;
	enum okind	 kind;
	size_t		 off;	/* in struct sess_opts */
} opts[] = {
#define F(m) offsetof(struct sess_opts, m)
	{ "image",		K_IMAGE,	F(image) },
	{ "use_kata",		K_FLAG,		F(use_kata) },
	{ "run_as_root",	K_FLAG,		F(run_as_root) },
	{ "writable_root",	K_FLAG,		F(writable_root) },
	{ "fresh_workspace",	K_FLAG,		F(fresh_workspace) },
	{ "cpu",		K_CPU,		F(cpu_millis) },
	{ "memory",		K_SIZE,		F(mem_bytes) },
	{ "memory_reservation",	K_SIZE,		F(mem_reserve_bytes) },
	{ "disk",		K_SIZE,		F(disk_bytes) },
	{ "lifetime",		K_DURATION,	F(lifetime_ms) },
	{ "idle_timeout",	K_DURATION,	F(idle_ms) },
#undef F
};

/* The operator's maximum of each limit (conf.c's key table). */
static const struct cap {
	const char	*name;
	enum okind	 kind;
	size_t		 off;		/* in struct sess_opts */
	size_t		 conf_off;	/* in struct conf */
	const char	*key;
} caps[] = {
	{ "cpu", K_CPU, offsetof(struct sess_opts, cpu_millis),
	  offsetof(struct conf, max_cpu_millis), "sandbox.max_cpu_millis" },
	{ "memory", K_SIZE, offsetof(struct sess_opts, mem_bytes),
	  offsetof(struct conf, max_mem_bytes), "sandbox.max_memory" },
	{ "memory_reservation", K_SIZE, offsetof(struct sess_opts,
	  mem_reserve_bytes), offsetof(struct conf, max_mem_reserve_bytes),
	  "sandbox.max_memory_reservation" },
	{ "disk", K_SIZE, offsetof(struct sess_opts, disk_bytes),
	  offsetof(struct conf, max_disk_bytes), "sandbox.max_disk" },
	{ "lifetime", K_DURATION, offsetof(struct sess_opts, lifetime_ms),
	  offsetof(struct conf, max_lifetime_ms), "reap.max_lifetime" },
	{ "idle_timeout", K_DURATION, offsetof(struct sess_opts, idle_ms),
	  offsetof(struct conf, max_idle_ms), "reap.max_idle" },
};

void
sessopt_init(struct sess_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->use_kata = o->run_as_root = o->writable_root = -1;
}

int
sessopt_sandbox_given(const struct sess_opts *o)
{
	return (o->image != NULL && o->image[0] != '\0') || o->use_kata > 0 ||
	    o->run_as_root >= 0 || o->writable_root >= 0 || o->cpu_millis > 0 ||
	    o->mem_bytes > 0 || o->mem_reserve_bytes > 0 || o->disk_bytes > 0;
}

void
sessopt_fmt_size(char *out, size_t len, long long b)
{
	static const char *const u[] = { "TiB", "GiB", "MiB", "KiB" };
	int i;

	for (i = 0; i < 4; i++) {
		long long m = 1LL << (10 * (4 - i));
		if (b >= m && b % m == 0) {
			snprintf(out, len, "%lld%s", b / m, u[i]);
			return;
		}
	}
	snprintf(out, len, "%lld bytes", b);
}

void
sessopt_fmt_duration(char *out, size_t len, long long ms)
{
	if (ms >= 3600000 && ms % 3600000 == 0)
		snprintf(out, len, "%lldh", ms / 3600000);
	else if (ms >= 60000 && ms % 60000 == 0)
		snprintf(out, len, "%lldm", ms / 60000);
	else if (ms >= 1000 && ms % 1000 == 0)
		snprintf(out, len, "%llds", ms / 1000);
	else
		snprintf(out, len, "%lld ms", ms);
}

static void
fmt_value(char *out, size_t len, enum okind k, long long v)
{
	if (k == K_SIZE)
		sessopt_fmt_size(out, len, v);
	else if (k == K_DURATION)
		sessopt_fmt_duration(out, len, v);
	else
		snprintf(out, len, "%g cores", (double)v / 1000.0);
}

/* One option's value v (not null) into *o. 0, or -1 with err. */
static int
parse_one(const struct opt *d, const cJSON *v, struct sess_opts *o, char *err,
    size_t errlen)
{
	char *dst = (char *)o + d->off;
	const char *es;
	long long n;

	switch (d->kind) {
	case K_IMAGE:
		if (!cJSON_IsString(v) || v->valuestring[0] == '\0' ||
		    strlen(v->valuestring) > IMAGE_MAX) {
			snprintf(err, errlen, "image must be a non-empty string of at "
			    "most %d bytes", IMAGE_MAX);
			return -1;
		}
		*(const char **)(void *)dst = v->valuestring;
		return 0;
	case K_FLAG:
		if (!cJSON_IsBool(v)) {
			snprintf(err, errlen, "%s must be true or false", d->name);
			return -1;
		}
		*(int *)(void *)dst = cJSON_IsTrue(v);
		return 0;
	case K_CPU:
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
		    v->valuedouble < 0.01 || v->valuedouble > CPU_MAX_CORES) {
			snprintf(err, errlen, "cpu must be a number of cores from 0.01 "
			    "to %d (e.g. 0.5 or 2)", CPU_MAX_CORES);
			return -1;
		}
		*(long long *)(void *)dst = (long long)(v->valuedouble * 1000.0 + 0.5);
		return 0;
	case K_SIZE:
		if (!cJSON_IsString(v) || strnum_size(v->valuestring, &n, &es) == -1 ||
		    n <= 0) {
			snprintf(err, errlen, "%s must be a size such as \"512MiB\" or "
			    "\"2GiB\" (a string; a bare number is bytes)", d->name);
			return -1;
		}
		*(long long *)(void *)dst = n;
		return 0;
	case K_DURATION:
		n = cJSON_IsString(v) ? (long long)strlen(v->valuestring) : 0;
		if (n == 0 || !((v->valuestring[n - 1] >= 'a' &&
		    v->valuestring[n - 1] <= 'z')) ||
		    strnum_duration_ms(v->valuestring, &n, &es) == -1 ||
		    n < SESSOPT_MIN_REAP_MS || n > MS_MAX) {
			snprintf(err, errlen, "%s must be a duration of at least 1m "
			    "with its unit, such as \"90s\", \"30m\" or \"2h\"", d->name);
			return -1;
		}
		*(long long *)(void *)dst = n;
		return 0;
	}
	return -1;
}

int
sessopt_parse(const cJSON *obj, const char *const *also, struct sess_opts *o,
    char *err, size_t errlen)
{
	const cJSON *v;
	size_t i;

	if (!cJSON_IsObject(obj)) {
		snprintf(err, errlen, "the options must be a JSON object");
		return -1;
	}
	cJSON_ArrayForEach(v, obj) {
		for (i = 0; also != NULL && also[i] != NULL; i++)
			if (strcmp(v->string, also[i]) == 0)
				break;
		if (also != NULL && also[i] != NULL)
			continue;
		for (i = 0; i < NELEM(opts); i++)
			if (strcmp(v->string, opts[i].name) == 0)
				break;
		if (i == NELEM(opts)) {
			snprintf(err, errlen, "unknown field '%.64s' (the options are "
			    "image, use_kata, run_as_root, writable_root, cpu, memory, "
			    "memory_reservation, disk, lifetime, idle_timeout, "
			    "fresh_workspace)", v->string);
			return -1;
		}
		if (cJSON_GetObjectItemCaseSensitive(obj, v->string) != v) {
			snprintf(err, errlen, "field '%s' appears twice", v->string);
			return -1;
		}
		if (!cJSON_IsNull(v) && parse_one(&opts[i], v, o, err, errlen) == -1)
			return -1;
	}
	return 0;
}

int
sessopt_check(const struct conf *c, const struct sess_opts *o, char *err,
    size_t errlen)
{
	char want[48], max[48];
	long long v, m;
	size_t i;

	for (i = 0; i < NELEM(caps); i++) {
		v = *(const long long *)(const void *)((const char *)o + caps[i].off);
		m = *(const long long *)(const void *)((const char *)c +
		    caps[i].conf_off);
		if (v <= m)
			continue;
		fmt_value(want, sizeof(want), caps[i].kind, v);
		fmt_value(max, sizeof(max), caps[i].kind, m);
		snprintf(err, errlen, "%s %s is above the maximum of %s (%s)",
		    caps[i].name, want, max, caps[i].key);
		return -1;
	}
	/* a reservation is within the limit (the runtime checks it against
	 * its own default when neither names one) */
	m = o->mem_bytes > 0 ? o->mem_bytes : c->mem_bytes;
	if (o->mem_reserve_bytes > 0 && m > 0 && o->mem_reserve_bytes > m) {
		fmt_value(want, sizeof(want), K_SIZE, o->mem_reserve_bytes);
		fmt_value(max, sizeof(max), K_SIZE, m);
		snprintf(err, errlen, "memory_reservation %s is above the "
		    "sandbox's memory limit of %s: ask for more memory or a "
		    "smaller memory_reservation", want, max);
		return -1;
	}
	return 0;
}
