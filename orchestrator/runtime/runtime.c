/* runtime.c: helpers shared by every runtime engine. */
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>


#include "runtime.h"

void
rt_info_clear(struct rt_info *ri)
{
	size_t i;

	for (i = 0; i < ri->nlabels; i++) {
		free((char *)ri->labels[i].k);
		free((char *)ri->labels[i].v);
	}
	free(ri->labels);
	ri->labels = NULL;
	ri->nlabels = 0;
}

void
rt_info_free_array(struct rt_info *a, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		rt_info_clear(&a[i]);
	free(a);
}

const char *
rt_state_name(enum rt_state s)
{
	switch (s) {
	case RT_CREATING: return "creating";
	case RT_RUNNING: return "running";
	case RT_STOPPED: return "stopped";
	case RT_FAILED: return "failed";
	}
	return "unknown";
}

const char *
rt_kv_get(const struct rt_kv *kv, size_t n, const char *k)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (kv[i].k != NULL && strcmp(kv[i].k, k) == 0)
			return kv[i].v;
	return NULL;
}

const char *
rt_label(const struct rt_info *ri, const char *k)
{
	return rt_kv_get(ri->labels, ri->nlabels, k);
}

cJSON *
rt_info_json(const struct rt_info *ri)
{
	cJSON *o = cJSON_CreateObject(), *l;
	size_t i;

	cJSON_AddStringToObject(o, "id", ri->id);
	cJSON_AddStringToObject(o, "state", rt_state_name(ri->state));
	cJSON_AddStringToObject(o, "image", ri->image);
	cJSON_AddNumberToObject(o, "created_ms", (double)ri->created_ms);
	cJSON_AddNumberToObject(o, "started_ms", (double)ri->started_ms);
	cJSON_AddStringToObject(o, "reason", ri->reason);
	l = cJSON_AddObjectToObject(o, "limits");
	cJSON_AddNumberToObject(l, "mem_bytes", (double)ri->lim.mem_bytes);
	cJSON_AddNumberToObject(l, "mem_reserve_bytes",
	    (double)ri->lim.mem_reserve_bytes);
	cJSON_AddNumberToObject(l, "cpu_millis", (double)ri->lim.cpu_millis);
	cJSON_AddNumberToObject(l, "pids_max", (double)ri->lim.pids_max);
	cJSON_AddNumberToObject(l, "disk_bytes", (double)ri->lim.disk_bytes);
	cJSON_AddBoolToObject(o, "run_as_root", ri->run_as_root);
	cJSON_AddBoolToObject(o, "writable_root", ri->writable_root);
	cJSON_AddBoolToObject(o, "use_kata", ri->use_kata);
	l = cJSON_AddObjectToObject(o, "labels");
	for (i = 0; i < ri->nlabels; i++)
		cJSON_AddStringToObject(l, ri->labels[i].k, ri->labels[i].v);
	return o;
}


int
rt_limit_ok(const char *rt, const char *what, long long v, long long min,
    long long max, long long scale, const char *unit, char *err, size_t errlen)
{
	if (v >= min * scale && v <= max * scale)
		return 0;
	if (v % scale == 0)
		snprintf(err, errlen, "%s %lld%s is outside the %s runtime's "
		    "bounds (%lld%s to %lld%s)", what, v / scale, unit, rt, min,
		    unit, max, unit);
	else
		snprintf(err, errlen, "%s %lld bytes is outside the %s runtime's "
		    "bounds (%lld%s to %lld%s)", what, v, rt, min, unit, max, unit);
	return -1;
}

int
rt_scrub(char *err, size_t errlen, const char *path, const char *name)
{
	char out[4096];
	const char *p, *hit;
	size_t len, nlen = strlen(name), o = 0, n;

	if (err == NULL || errlen == 0 || path == NULL ||
	    (len = strlen(path)) < 2 || strstr(err, path) == NULL)
		return 0;
	for (p = err; (hit = strstr(p, path)) != NULL; p = hit + len) {
		n = (size_t)(hit - p);
		if (o + n + nlen >= sizeof(out))
			break;
		memcpy(out + o, p, n);
		o += n;
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", name);
	}
	snprintf(out + o, sizeof(out) - o, "%s", p);
	snprintf(err, errlen, "%s", out);
	return 1;
}

void
rt_progress(const struct rt_progress *pg, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (pg == NULL || pg->fn == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pg->fn(pg->arg, msg);
}
