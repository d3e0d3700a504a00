/*
 * fuzz_proxy_reqcanon.c: canonical request targets (egress-proxy/
 * reqcanon.c). The input is a request target. A refusal must say why and
 * leave the output as it was; a canonical form must be what reqcanon.h
 * promises (an absolute path with no empty or dot segment and no trailing
 * '/', escapes upper-case and only of bytes that need one, no raw byte
 * outside pchar, the query after the path length) and a fixed point.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/reqcanon.h"

#define FZ_ASSERT(e) do { if (!(e)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
uhex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

static int
unres(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '.' || c == '_' || c == '~';
}

static void
check_path(const char *p, size_t n)
{
	size_t i, s;

	if (n == 1 && p[0] == '*')
		return;
	FZ_ASSERT(n >= 1 && p[0] == '/');
	FZ_ASSERT(n == 1 || p[n - 1] != '/');
	for (s = 1; s < n; s = i + 1) {
		for (i = s; i < n && p[i] != '/'; i++)
			;
		FZ_ASSERT(i > s);
		FZ_ASSERT(!(i - s == 1 && p[s] == '.'));
		FZ_ASSERT(!(i - s == 2 && p[s] == '.' && p[s + 1] == '.'));
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c == '%') {
			FZ_ASSERT(i + 2 < n && uhex(p[i + 1]) && uhex(p[i + 2]));
			c = (unsigned char)(strtol((char[]){ p[i + 1], p[i + 2], 0 }, NULL, 16));
			FZ_ASSERT(!unres(c) && c >= 0x20 && c != 0x7f && c != '\\');
			i += 2;
			continue;
		}
		FZ_ASSERT(c == '/' || unres(c) || (c != 0 && strchr("!$&'()*+,=:@", c) != NULL));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf out, again;
	char err[128];
	size_t pl = 0, pl2 = 0;

	buf_init(&out, REQCANON_MAX * 3 + 8);
	err[0] = '\0';
	if (reqcanon_target((const char *)data, size, &out, &pl, err, sizeof(err)) == -1) {
		FZ_ASSERT(err[0] != '\0');
		FZ_ASSERT(out.len == 0);
		buf_free(&out);
		return 0;
	}
	FZ_ASSERT(pl <= out.len && out.len <= 3 * size);
	FZ_ASSERT(pl == out.len || out.p[pl] == '?');
	check_path(out.p, pl);
	buf_init(&again, REQCANON_MAX * 3 + 8);
	FZ_ASSERT(reqcanon_target(out.p, out.len, &again, &pl2, err, sizeof(err)) == 0);
	FZ_ASSERT(again.len == out.len && pl2 == pl && memcmp(again.p, out.p, out.len) == 0);
	buf_free(&again);
	buf_free(&out);
	return 0;
}
