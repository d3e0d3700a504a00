/*
 * filetools.c: the MCP file tools (filetools.h). Bytes travel as the
 * agent's raw file endpoints carry them (GET/PUT /v1/files/raw, base64 or
 * checked UTF-8 in the tool's JSON); sizes are capped by
 * files.tool_max_bytes with a tool error beyond, never a transport error.
 * Symlinks are resolved by the agent inside the sandbox, one hop at a time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "areq.h"
#include "buf.h"
#include "filetools.h"
#include "lib/jsonu.h"
#include "schema.h"
#include "toolres.h"

/* Appends s percent-encoded for a query value (all but unreserved bytes
 * and '/'). */
static int
pct_add(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p;
	char e[3];

	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' ||
		    *p == '.' || *p == '~' || *p == '/') {
			if (buf_add(b, p, 1) == -1)
				return -1;
			continue;
		}
		e[0] = '%';
		e[1] = hex[*p >> 4];
		e[2] = hex[*p & 15];
		if (buf_add(b, e, 3) == -1)
			return -1;
	}
	return 0;
}

/* "/v1/files/<op>?path=<path>" into b (then the caller adds &...). */
static int
file_url(struct buf *b, const char *op, const char *path)
{
	buf_init(b, 4 * TOOLS_MAX_PATH + 512);
	return buf_addf(b, "/v1/files/%s?path=", op) == -1 || pct_add(b, path) == -1 ?
	    -1 : 0;
}


/*
 * The agent's error reply for a file tool, with what to do next: 404 and
 * 413 in words, the rest as the agent said it (a 507 with areq_error_text's
 * advice).
 */
static void
file_error(struct tool_call *tc, struct areq *a, const char *what,
    const char *path)
{
	struct buf out;

	buf_init(&out, 64 * 1024);
	if (a->status == 404)
		ign(buf_addf(&out, "%s failed: %s does not exist in the sandbox "
		    "(paths are absolute or relative to /workspace; list_files shows "
		    "what is there)", what, path));
	else if (a->status == 413)
		ign(buf_addf(&out, "%s failed: the sandbox's agent refused the "
		    "size (too_large); write it in parts with append", what));
	else if (a->j != NULL)
		areq_error_text(a, what, &out);
	else
		ign(buf_addf(&out, "%s failed: the sandbox's agent answered HTTP "
		    "%d; retry the call", what, a->status));
	toolres_set_buf(tc, &out, 1);
	buf_free(&out);
}

#define FILE_MS		60000	/* a file request of at most 16 MiB */
#define SYMLINK_HOPS	16	/* links followed before giving up (a loop) */

/*
 * The regular file path names, through its symlinks (each resolved by
 * the agent inside the sandbox, a relative target against its link's
 * directory), into *f. 0, or -1 with tc's result set.
 */
static int
file_meta(struct tool_call *tc, struct sess *s, const char *path,
    struct tr_file *f)
{
	char cur[TOOLS_MAX_PATH + 1], next[2 * TOOLS_MAX_PATH + 2], *slash;
	const char *type, *abs, *tgt;
	struct areq a;
	struct buf url;
	cJSON *e;
	int hops;

	snprintf(cur, sizeof(cur), "%s", path);
	for (hops = 0; hops <= SYMLINK_HOPS; hops++) {
		memset(&a, 0, sizeof(a));
		a.s = s;
		a.tc = tc;
		if (file_url(&url, "list", cur) == -1 ||
		    buf_addstr(&url, "&max_entries=1") == -1) {
			buf_free(&url);
			toolres_set_text(tc, "read_file: the path is too long", 1);
			return -1;
		}
		if (areq_do(&a, "GET", url.p, NULL, FILE_MS) == -1) {
			buf_free(&url);
			toolres_set_text(tc, a.err, 1);
			areq_free(&a);
			return -1;
		}
		buf_free(&url);
		if (a.status != 200) {
			file_error(tc, &a, "read_file", path);
			areq_free(&a);
			return -1;
		}
		e = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a.j,
		    "entries"), 0);
		type = toolres_str(e, "type");
		/* a directory lists what it holds (or nothing), a file itself */
		if (e == NULL || toolres_str(e, "path") == NULL || toolres_str(a.j, "path") ==
		    NULL || strcmp(toolres_str(e, "path"), toolres_str(a.j, "path")) != 0)
			type = "dir";
		if (toolres_file_from_entry(f, e) == 0) {
			areq_free(&a);
			return 0;
		}
		abs = toolres_str(e, "path");
		tgt = toolres_str(e, "target");
		if (type == NULL || strcmp(type, "symlink") != 0 || tgt == NULL ||
		    abs == NULL || abs[0] != '/') {
			char m[TOOLS_MAX_PATH + 256];
			snprintf(m, sizeof(m), "read_file: %s is %s: read_file reads "
			    "regular files%s", path, type != NULL && strcmp(type,
			    "dir") == 0 ? "a directory" : "not a regular file (a "
			    "device, FIFO or socket)", type != NULL && strcmp(type,
			    "dir") == 0 ? " (list_files lists a directory)" : "");
			toolres_set_text(tc, m, 1);
			areq_free(&a);
			return -1;
		}
		if (tgt[0] == '/')
			snprintf(next, sizeof(next), "%s", tgt);
		else {
			snprintf(next, sizeof(next), "%s", abs);
			slash = strrchr(next, '/');
			snprintf(slash + 1, sizeof(next) - (size_t)(slash + 1 - next),
			    "%s", tgt);
		}
		areq_free(&a);
		if (strlen(next) > TOOLS_MAX_PATH)
			break;
		snprintf(cur, sizeof(cur), "%s", next);
	}
	toolres_set_text(tc, "read_file: too many levels of symbolic links (or a "
	    "link loop)", 1);
	return -1;
}

/* The cap message of read_file and write_file. */
static void
cap_error(struct tool_call *tc, const char *what, long long n, long long cap)
{
	char m[512];

	snprintf(m, sizeof(m), "%s: %lld bytes is over this server's limit of "
	    "%lld bytes per call (files.tool_max_bytes). %s Files of any size "
	    "move over REST: PUT/GET /v1/sessions/{id}/files/<path>.", what, n,
	    cap, strcmp(what, "read_file") == 0 ? "Read it in parts with offset "
	    "and max_bytes (next_offset says where to go on)." : "Write it in "
	    "parts: the first call, then write_file with append: true for each "
	    "next part.");
	toolres_set_text(tc, m, 1);
}

void
filetools_read(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	const char *path = schema_str(args, "path");
	const char *enc = schema_str(args, "encoding");
	long long off = schema_int(args, "offset", 0);
	long long max = schema_int(args, "max_bytes", -1);
	struct areq a = { .s = s, .tc = tc };
	struct tr_file f;
	struct buf url;

	(void)m;
	if (enc == NULL)
		enc = "text";
	if (max > c->tool_max_bytes) {
		cap_error(tc, "read_file", max, c->tool_max_bytes);
		return;
	}
	if (max == -1)
		max = c->tool_max_bytes;
	if (file_meta(tc, s, path, &f) == -1)
		return;
	if (file_url(&url, "raw", f.path) == -1 ||
	    buf_addf(&url, "&offset=%lld&length=%lld", off, max) == -1) {
		buf_free(&url);
		toolres_set_text(tc, "read_file: the path is too long", 1);
		return;
	}
	if (areq_bytes(&a, "GET", url.p, NULL, 0, (size_t)max + 1,
	    FILE_MS) == -1)
		toolres_set_text(tc, a.err, 1);
	else if (a.status != 200)
		file_error(tc, &a, "read_file", path);
	else if ((long long)a.resp.len > max)
		toolres_set_text(tc, "read_file: the sandbox's agent sent more bytes than "
		    "asked for; retry the call", 1);
	else
		toolres_read_file(tc, &f, enc, a.resp.p ? a.resp.p : "", a.resp.len,
		    off, max);
	buf_free(&url);
	areq_free(&a);
}

void
filetools_write(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	const char *path = schema_str(args, "path");
	const char *content = schema_str(args, "content");
	const char *enc = schema_str(args, "encoding");
	const char *mode = schema_str(args, "mode");
	int append = schema_bool(args, "append") == 1;
	struct areq a = { .s = s, .tc = tc };
	struct buf data, url;
	const char *body;
	size_t len;
	char err[256], m4[8];

	(void)m;
	buf_init(&url, 1);
	buf_init(&data, (size_t)c->tool_max_bytes);
	if (enc != NULL && strcmp(enc, "base64") == 0) {
		if (toolres_b64_decode(content, &data, err, sizeof(err)) == -1) {
			char msg[512];
			if (err[0] == '\0')
				cap_error(tc, "write_file", (long long)strlen(content) /
				    4 * 3, c->tool_max_bytes);
			else {
				snprintf(msg, sizeof(msg), "argument 'content' is not "
				    "base64: %s", err);
				toolres_set_text(tc, msg, 1);
			}
			goto out;
		}
		body = data.p ? data.p : "";
		len = data.len;
	} else {
		body = content;
		len = strlen(content);
		if ((long long)len > c->tool_max_bytes) {
			cap_error(tc, "write_file", (long long)len, c->tool_max_bytes);
			goto out;
		}
	}
	buf_free(&url);
	if (file_url(&url, "raw", path) == -1 ||
	    (append && buf_addstr(&url, "&append=1") == -1)) {
		toolres_set_text(tc, "write_file: the path is too long", 1);
		goto out;
	}
	if (mode != NULL) {
		/* the schema's pattern: 3 or 4 octal digits, maybe a leading 0 */
		snprintf(m4, sizeof(m4), "%04lo", strtol(mode, NULL, 8));
		if (buf_addf(&url, "&mode=%s", m4) == -1)
			goto out;
	}
	if (areq_bytes(&a, "PUT", url.p, body, len, 64 * 1024, FILE_MS) == -1) {
		toolres_set_text(tc, a.err, 1);
		goto out;
	}
	if (a.status != 200 && a.status != 201) {
		file_error(tc, &a, "write_file", path);
		goto out;
	}
	a.j = cJSON_ParseWithLength(a.resp.p ? a.resp.p : "", a.resp.len);
	if (!cJSON_IsObject(a.j)) {
		toolres_set_text(tc, "write_file: the sandbox's agent sent an unreadable "
		    "reply; the file may have been written: read_file or list_files "
		    "shows it", 1);
		goto out;
	}
	toolres_write_file(tc, path, append, a.j);
out:
	buf_free(&url);
	buf_free(&data);
	areq_free(&a);
}

void
filetools_list(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	const char *path = schema_str(args, "path");
	struct areq a = { .s = s, .tc = tc };
	struct buf url;

	(void)m;
	(void)c;
	if (file_url(&url, "list", path) == -1 ||
	    buf_addf(&url, "&max_entries=%lld%s", schema_int(args, "max_entries",
	    TOOLS_DEF_LIST), schema_bool(args, "recursive") == 1 ? "&recursive=1" : "") ==
	    -1) {
		toolres_set_text(tc, "list_files: the path is too long", 1);
		buf_free(&url);
		return;
	}
	if (areq_do(&a, "GET", url.p, NULL, FILE_MS) == -1)
		toolres_set_text(tc, a.err, 1);
	else if (a.status != 200)
		file_error(tc, &a, "list_files", path);
	else
		toolres_list_files(tc, a.j);
	buf_free(&url);
	areq_free(&a);
}

void
filetools_delete(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	const char *path = schema_str(args, "path");
	struct areq a = { .s = s, .tc = tc };
	cJSON *body = cJSON_CreateObject();

	(void)m;
	(void)c;
	cJSON_AddStringToObject(body, "path", path);
	cJSON_AddBoolToObject(body, "recursive", schema_bool(args, "recursive") == 1);
	if (areq_do(&a, "POST", "/v1/files/delete", body, FILE_MS) == -1)
		toolres_set_text(tc, a.err, 1);
	else if (a.status != 200)
		file_error(tc, &a, "delete_file", path);
	else
		toolres_delete_file(tc, path, a.j);
	cJSON_Delete(body);
	areq_free(&a);
}
