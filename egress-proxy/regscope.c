/*
 * regscope.c: the token scope of an OCI/Docker registry request
 * (regscope.h has the rules).
 */
#include <stdio.h>
#include <string.h>

#include "regscope.h"

#define SEG_MAX	(REGSCOPE_NAME_MAX / 2 + 8)	/* segments of a /v2/ path worth reading */

static int
lalnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

int
regscope_name_ok(const char *s, size_t n)
{
	size_t i = 0, k;

	if (n == 0 || n > REGSCOPE_NAME_MAX)
		return 0;
	for (;;) {
		/* a component: alnum runs joined by one separator */
		if (i == n || !lalnum(s[i]))
			return 0;
		while (i < n && lalnum(s[i]))
			i++;
		if (i == n)
			return 1;
		if (s[i] == '/') {
			i++;
			continue;
		}
		if (s[i] == '.' || (s[i] == '_' && (i + 1 == n || s[i + 1] != '_')))
			i++;
		else if (s[i] == '_')
			i += 2;	/* "__" */
		else if (s[i] == '-') {
			for (k = i; k < n && s[k] == '-'; k++)
				;
			i = k;
		} else
			return 0;
		if (i == n || !lalnum(s[i]))
			return 0;
	}
}

/*
 * The value of parameter name in query q (ql bytes), percent-decoded into
 * out: 0; 1: none; -1: a bad encoding, a NUL, too long.
 */
static int
query_param(const char *q, size_t ql, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name), i = 0, e, k, o;
	int hi, lo;

	while (i < ql) {
		for (e = i; e < ql && q[e] != '&'; e++)
			;
		if (e - i > nl && memcmp(q + i, name, nl) == 0 && q[i + nl] == '=') {
			for (k = i + nl + 1, o = 0; k < e; k++) {
				char ch = q[k];

				if (ch == '%') {
					if (k + 2 >= e)
						return -1;
					hi = q[k + 1] >= '0' && q[k + 1] <= '9' ? q[k + 1] - '0' :
					    q[k + 1] >= 'A' && q[k + 1] <= 'F' ? q[k + 1] - 'A' + 10 :
					    q[k + 1] >= 'a' && q[k + 1] <= 'f' ? q[k + 1] - 'a' + 10 : -1;
					lo = q[k + 2] >= '0' && q[k + 2] <= '9' ? q[k + 2] - '0' :
					    q[k + 2] >= 'A' && q[k + 2] <= 'F' ? q[k + 2] - 'A' + 10 :
					    q[k + 2] >= 'a' && q[k + 2] <= 'f' ? q[k + 2] - 'a' + 10 : -1;
					if (hi < 0 || lo < 0)
						return -1;
					ch = (char)(hi * 16 + lo);
					k += 2;
				}
				if (o + 1 >= outlen || ch == '\0')
					return -1;
				out[o++] = ch;
			}
			out[o] = '\0';
			return 0;
		}
		i = e + 1;
	}
	return 1;
}

int
regscope_derive(const char *method, const char *target, size_t tl, char *out, size_t outlen,
    char *err, size_t errlen)
{
	const char *seg[SEG_MAX], *q, *actions, *kw;
	size_t segl[SEG_MAX], pl, ns = 0, i, j, rest, nl = 0;
	char from[REGSCOPE_NAME_MAX + 2];
	int read_only;

	out[0] = '\0';
	q = memchr(target, '?', tl);
	pl = q != NULL ? (size_t)(q - target) : tl;
	if (pl < 3 || memcmp(target, "/v2", 3) != 0 || (pl > 3 && target[3] != '/'))
		return 1;
	read_only = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	actions = read_only ? "pull" : strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
	    strcmp(method, "PATCH") == 0 ? "pull,push" : strcmp(method, "DELETE") == 0 ?
	    "delete" : NULL;
	if (actions == NULL) {
		snprintf(err, errlen, "registry: method %.16s is not in the registry API", method);
		return -1;
	}
	if (pl <= 4) {	/* "/v2" or "/v2/": the ping */
		if (read_only)
			return 0;
		snprintf(err, errlen, "registry: /v2/ is only read");
		return -1;
	}
	/* the segments after "/v2/"; a trailing '/' leaves an empty last one */
	for (i = 4; ns < SEG_MAX;) {
		for (j = i; j < pl && target[j] != '/'; j++)
			;
		seg[ns] = target + i;
		segl[ns++] = j - i;
		if (j == pl)
			break;
		i = j + 1;
	}
	if (ns == SEG_MAX) {
		snprintf(err, errlen, "registry: the path has too many segments");
		return -1;
	}
	if (ns == 1 && segl[0] == 8 && memcmp(seg[0], "_catalog", 8) == 0) {
		if (!read_only) {
			snprintf(err, errlen, "registry: the catalog is only read");
			return -1;
		}
		if ((size_t)snprintf(out, outlen, "registry:catalog:*") >= outlen) {
			snprintf(err, errlen, "registry: no room for the scope");
			out[0] = '\0';
			return -1;
		}
		return 0;
	}
	/* the first keyword segment whose remainder has its shape ends the name */
	for (j = 1; j < ns && nl == 0; j++) {
		rest = ns - j - 1;
		kw = seg[j];
		if (segl[j] == 9 && memcmp(kw, "manifests", 9) == 0)
			nl = rest == 1 && segl[j + 1] > 0;
		else if (segl[j] == 5 && memcmp(kw, "blobs", 5) == 0)
			nl = (rest == 1 && segl[j + 1] > 0) || (rest == 2 && segl[j + 1] == 7 &&
			    memcmp(seg[j + 1], "uploads", 7) == 0);
		else if (segl[j] == 4 && memcmp(kw, "tags", 4) == 0)
			nl = rest == 1 && segl[j + 1] == 4 && memcmp(seg[j + 1], "list", 4) == 0;
		else if (segl[j] == 9 && memcmp(kw, "referrers", 9) == 0)
			nl = rest == 1 && segl[j + 1] > 0;
		if (nl != 0)
			nl = (size_t)(seg[j] - 1 - seg[0]);
	}
	if (nl == 0) {
		snprintf(err, errlen, "registry: not a registry API path");
		return -1;
	}
	if (!regscope_name_ok(seg[0], nl)) {
		snprintf(err, errlen, "registry: the repository name is not a valid one "
		    "(lower-case components of [a-z0-9] and single separators, at most %d bytes)",
		    REGSCOPE_NAME_MAX);
		return -1;
	}
	if ((size_t)snprintf(out, outlen, "repository:%.*s:%s", (int)nl, seg[0], actions) >=
	    outlen) {
		snprintf(err, errlen, "registry: no room for the scope");
		out[0] = '\0';
		return -1;
	}
	/* a cross-repository blob mount reads the other repository too */
	if (q != NULL && strcmp(method, "POST") == 0 && query_param(q + 1, tl - pl - 1, "mount",
	    from, sizeof(from)) == 0) {
		size_t l = strlen(out);
		int r = query_param(q + 1, tl - pl - 1, "from", from, sizeof(from));

		if (r == 1)
			return 0;	/* no from: the registry mounts nothing */
		if (r == -1 || !regscope_name_ok(from, strlen(from))) {
			snprintf(err, errlen, "registry: the mount's from is not a valid repository "
			    "name");
			out[0] = '\0';
			return -1;
		}
		if ((size_t)snprintf(out + l, outlen - l, " repository:%s:pull", from) >= outlen - l) {
			snprintf(err, errlen, "registry: no room for the scope");
			out[0] = '\0';
			return -1;
		}
	}
	return 0;
}
