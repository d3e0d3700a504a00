/*
 * fuzz_proxy_regscope.c: the scope a registry request needs
 * (egress-proxy/regscope.c). The first byte picks the method, the second
 * the room given for the scope; the rest is the request target. Asserts:
 *  - the verdict is 0, 1 or -1, and -1 always says why;
 *  - the scope never runs past the room it was given (the buffer is
 *    exactly that size, so ASan sees a byte past it);
 *  - a scope is "", "registry:catalog:*" or one or two
 *    "repository:NAME:ACTIONS" separated by one space, whose every NAME
 *    passes regscope_name_ok and is, byte for byte, the repository the
 *    target's path names (so a token is never asked for a repository the
 *    request does not touch), with the actions the method owes;
 *  - a target outside /v2/ gets no token (1);
 *  - the same input gives the same answer twice (no hidden state).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/regscope.h"

#define FZ_ASSERT(e) do { if (!(e)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const methods[] = {
	"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE",
};

/* The actions the method owes for a repository scope. */
static const char *
fz_actions(const char *m)
{
	if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)
		return "pull";
	if (strcmp(m, "DELETE") == 0)
		return "delete";
	return "pull,push";
}

/*
 * One "repository:NAME:ACTIONS" scope at s (n bytes): NAME is a valid
 * repository name; the first scope's NAME is the one the path names.
 */
static void
fz_repo_scope(const char *s, size_t n, const char *path, size_t pl, const char *want)
{
	const char *name, *colon;
	size_t nl;

	FZ_ASSERT(n > 11 && memcmp(s, "repository:", 11) == 0);
	name = s + 11;
	colon = NULL;
	for (const char *p = s + n; p > name; p--)
		if (p[-1] == ':') {
			colon = p - 1;
			break;
		}
	FZ_ASSERT(colon != NULL);
	nl = (size_t)(colon - name);
	FZ_ASSERT(regscope_name_ok(name, nl));
	FZ_ASSERT(strlen(want) == (size_t)(s + n - colon - 1) &&
	    memcmp(colon + 1, want, strlen(want)) == 0);
	if (path != NULL) {
		/* /v2/NAME/... : the path's repository, byte for byte */
		FZ_ASSERT(pl > 4 + nl && memcmp(path + 4, name, nl) == 0 && path[4 + nl] == '/');
	}
}

static int
fz_derive(const char *m, const char *t, size_t tl, size_t room, char *err, size_t errlen,
    char **outp)
{
	char *out = malloc(room);
	int rc;

	FZ_ASSERT(out != NULL);
	err[0] = '\0';
	rc = regscope_derive(m, t, tl, out, room, err, errlen);
	*outp = out;
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *m, *t, *sp;
	char err[256], err2[256], *out, *out2;
	size_t tl, room, ol, pl;
	int rc, rc2;

	if (size < 2)
		return 0;
	m = methods[data[0] % (sizeof(methods) / sizeof(methods[0]))];
	/* room: 1..REGSCOPE_MAX+1, small ones often (the overflow edge) */
	room = data[1] < 200 ? (size_t)data[1] % 64 + 1 : (size_t)REGSCOPE_MAX + 1;
	t = (const char *)data + 2;
	tl = size - 2;
	rc = fz_derive(m, t, tl, room, err, sizeof(err), &out);
	FZ_ASSERT(rc == 0 || rc == 1 || rc == -1);
	if (rc == -1)
		FZ_ASSERT(err[0] != '\0' && memchr(err, '\0', sizeof(err)) != NULL);
	/* the path: the target up to its query; only /v2 and under is the API */
	pl = 0;
	while (pl < tl && t[pl] != '?')
		pl++;
	if (pl < 3 || memcmp(t, "/v2", 3) != 0 || (pl > 3 && t[3] != '/'))
		FZ_ASSERT(rc == 1);
	else
		FZ_ASSERT(rc != 1);
	if (rc == 0) {
		ol = strnlen(out, room);
		FZ_ASSERT(ol < room);
		if (ol == 0) {
			/* the ping, only read */
			FZ_ASSERT(pl <= 4 && (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0));
		} else if (strcmp(out, "registry:catalog:*") == 0) {
			FZ_ASSERT(pl == 12 && memcmp(t, "/v2/_catalog", 12) == 0);
		} else if ((sp = memchr(out, ' ', ol)) != NULL) {
			/* a mount: this repository's push, the other's pull */
			FZ_ASSERT(strcmp(m, "POST") == 0);
			fz_repo_scope(out, (size_t)(sp - out), t, pl, fz_actions(m));
			fz_repo_scope(sp + 1, ol - (size_t)(sp + 1 - out), NULL, 0, "pull");
			FZ_ASSERT(memchr(sp + 1, ' ', ol - (size_t)(sp + 1 - out)) == NULL);
			FZ_ASSERT(memmem(t + pl, tl - pl, "from=", 5) != NULL);
		} else {
			fz_repo_scope(out, ol, t, pl, fz_actions(m));
		}
	}
	/* the same answer twice */
	rc2 = fz_derive(m, t, tl, room, err2, sizeof(err2), &out2);
	FZ_ASSERT(rc2 == rc);
	if (rc == 0)
		FZ_ASSERT(strcmp(out, out2) == 0);
	else if (rc == -1)
		FZ_ASSERT(strcmp(err, err2) == 0);
	free(out);
	free(out2);
	/* the name check alone: never reads past n, bounded by the maximum */
	if (regscope_name_ok(t, tl)) {
		FZ_ASSERT(tl > 0 && tl <= REGSCOPE_NAME_MAX);
		for (size_t i = 0; i < tl; i++)
			FZ_ASSERT((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') ||
			    t[i] == '.' || t[i] == '_' || t[i] == '-' || t[i] == '/');
	}
	return 0;
}
