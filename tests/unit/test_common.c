/* test_common.c: buf, strnum, log_escape, util and the id grammars. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

#include "buf.h"
#include "ids.h"
#include "log.h"
#include "strnum.h"
#include "unit.h"
#include "util.h"

TEST(test_buf_bounds)
{
	struct buf b;
	char *s;
	size_t n;

	buf_init(&b, 10);
	CHECK(buf_addstr(&b, "hello") == 0);
	CHECK(buf_addstr(&b, "world") == 0);
	CHECK_INT(b.len, 10);
	CHECK(buf_addstr(&b, "!") == -1);	/* over max: refused */
	CHECK_STR(b.p, "helloworld");		/* and nothing lost */
	buf_consume(&b, 5);
	CHECK_STR(b.p, "world");
	CHECK(buf_addf(&b, "%d", 12345) == 0);
	CHECK(buf_addf(&b, "%d", 1) == -1);
	s = buf_steal(&b, &n);
	CHECK_STR(s, "world12345");
	CHECK_INT(n, 10);
	free(s);
	CHECK(b.p == NULL && b.len == 0);
	buf_free(&b);
}

TEST(test_strnum)
{
	static const struct { const char *s; long long min, max, want; int ok; } t[] = {
		{ "0", 0, 10, 0, 1 }, { "10", 0, 10, 10, 1 }, { "11", 0, 10, 0, 0 },
		{ "-1", 0, 10, 0, 0 }, { "", 0, 10, 0, 0 }, { " 1", 0, 10, 0, 0 },
		{ "1x", 0, 10, 0, 0 }, { "99999999999999999999", 0, LLONG_MAX, 0, 0 },
		{ "-5", -10, 10, -5, 1 },
	};
	const char *err;
	long long v;
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int rc = strnum_ll(t[i].s, t[i].min, t[i].max, &v, &err);
		CHECK_INT(rc == 0, t[i].ok);
		if (rc == 0)
			CHECK_INT(v, t[i].want);
		else
			CHECK(err != NULL);
	}
}

TEST(test_units)
{
	static const struct { const char *s; long long want; int ok; } d[] = {
		{ "250", 250, 1 }, { "250ms", 250, 1 }, { "30s", 30000, 1 },
		{ "10m", 600000, 1 }, { "1h", 3600000, 1 }, { "2d", 172800000, 1 },
		{ "1.5s", 0, 0 }, { "s", 0, 0 }, { "-1s", 0, 0 }, { "10y", 0, 0 },
		{ "99999999999999999d", 0, 0 },
	}, z[] = {
		{ "512", 512, 1 }, { "64KiB", 65536, 1 }, { "16MiB", 16777216, 1 },
		{ "1GiB", 1073741824, 1 }, { "10k", 10240, 1 }, { "1MB", 1000000, 1 },
		{ "1TiB", 0, 0 }, { "KiB", 0, 0 },
	};
	const char *err;
	long long v;
	size_t i;

	for (i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		int rc = strnum_duration_ms(d[i].s, &v, &err);
		CHECK_INT(rc == 0, d[i].ok);
		if (rc == 0)
			CHECK_INT(v, d[i].want);
	}
	for (i = 0; i < sizeof(z) / sizeof(z[0]); i++) {
		int rc = strnum_size(z[i].s, &v, &err);
		CHECK_INT(rc == 0, z[i].ok);
		if (rc == 0)
			CHECK_INT(v, z[i].want);
	}
}

TEST(test_log_escape)
{
	char out[16];

	CHECK_STR(log_escape(out, sizeof(out), "a\r\nb\"", 5), "a\\x0d\\x0ab\\x22");
	CHECK_STR(log_escape(out, 4, "abcdef", 6), "abc");
	CHECK_STR(log_escape(out, 5, "\x01\x02", 2), "\\x01");
}

TEST(test_util_hash)
{
	/* FNV-1a 32-bit reference values. */
	CHECK(util_hash_str("") == 0x811c9dc5u);
	CHECK(util_hash_str("a") == 0xe40c292cu);
	CHECK(util_hash_str("foobar") == 0xbf9cf968u);
	CHECK(util_hash_str("sb-1") != util_hash_str("sb-2"));
}

TEST(test_util_files)
{
	char path[] = "/tmp/test_common.XXXXXX", file[64], link[64], err[256];
	struct buf b;
	int fd;

	CHECK(mkdtemp(path) != NULL);
	snprintf(file, sizeof(file), "%s/f", path);
	CHECK(util_write_file_atomic(file, "hello", 5, 0600, err, sizeof(err)) == 0);
	CHECK(util_write_file_atomic(file, "bye", 3, 0600, err, sizeof(err)) == 0);
	buf_init(&b, 3);
	CHECK(util_read_file(file, &b, err, sizeof(err)) == 0);
	CHECK_STR(b.p, "bye");
	buf_free(&b);
	buf_init(&b, 2);
	CHECK(util_read_file(file, &b, err, sizeof(err)) == -1);
	CHECK(strstr(err, "larger than 2 bytes") != NULL);
	buf_free(&b);
	CHECK(util_read_file("/nonexistent/x", &b, err, sizeof(err)) == -1);
	CHECK(strstr(err, "No such file") != NULL);
	/* util_read_fd: from the fd's offset; EFBIG past b->max, what fitted kept. */
	CHECK((fd = open(file, O_RDONLY)) != -1);
	CHECK(lseek(fd, 1, SEEK_SET) == 1);
	buf_init(&b, 2);
	CHECK(util_read_fd(fd, &b) == 0);
	CHECK_STR(b.p, "ye");
	buf_free(&b);
	CHECK(lseek(fd, 0, SEEK_SET) == 0);
	buf_init(&b, 2);
	errno = 0;
	CHECK(util_read_fd(fd, &b) == -1 && errno == EFBIG);
	buf_free(&b);
	close(fd);
	CHECK(util_read_fd(fd, &b) == -1 && errno == EBADF);
	CHECK(util_write_file_atomic("/nonexistent/x", "a", 1, 0600, err, sizeof(err)) == -1);
	/* the no-fsync variant replaces the same way */
	CHECK(util_write_file_replace(file, "again", 5, 0600, err, sizeof(err)) == 0);
	buf_init(&b, 16);
	CHECK(util_read_file_flags(file, O_NOFOLLOW, &b, err, sizeof(err)) == 0);
	CHECK_STR(b.p, "again");
	buf_free(&b);
	CHECK(util_write_file_replace("/nonexistent/x", "a", 1, 0600, err, sizeof(err)) == -1);
	/* O_NOFOLLOW refuses a link the plain read follows */
	snprintf(link, sizeof(link), "%s/l", path);
	CHECK(symlink(file, link) == 0);
	CHECK(util_read_file(link, &b, err, sizeof(err)) == 0);
	CHECK_STR(b.p, "again");
	buf_free(&b);
	CHECK(util_read_file_flags(link, O_NOFOLLOW, &b, err, sizeof(err)) == -1);
	CHECK(b.len == 0);
	unlink(link);
	CHECK(util_mono_ms() > 0 && util_unix_ms() > 1700000000000LL);
	unlink(file);
	rmdir(path);
}

TEST(test_util_kv)
{
	char a[] = "KEY=v=w", b[] = "=v", c[] = "novalue", d[] = "K=";
	char *k, *v;
	size_t kl;

	CHECK(util_kv_split(a, &k, &v) == 0);
	CHECK_STR(k, "KEY");
	CHECK_STR(v, "v=w");			/* only the first '=' splits */
	CHECK(util_kv_split(b, &k, &v) == -1);	/* empty key */
	CHECK_STR(b, "=v");			/* refused: untouched */
	CHECK(util_kv_split(c, &k, &v) == -1);
	CHECK(util_kv_split(d, &k, &v) == 0);
	CHECK_STR(v, "");
	CHECK(util_kv_find("AB=cd", 2, &kl) == NULL);	/* '=' past n */
	CHECK(util_kv_find("AB=cd", 5, &kl) != NULL && kl == 2);
}

TEST(test_ids)
{
	static const struct { const char *s; int sess, sb, px; } t[] = {
		{ "abc", 1, 1, 1 },
		{ "", 0, 0, 0 },
		{ "-abc", 1, 0, 1 },
		{ "a-b-c", 1, 1, 1 },
		{ "ABC", 1, 0, 1 },
		{ "user@example.com", 1, 0, 1 },
		{ "a+b=c", 1, 0, 0 },
		{ "a b", 0, 0, 0 },
		{ "a/b", 0, 0, 0 },
		{ "a\nb", 0, 0, 0 },
		{ "caf\xc3\xa9", 0, 0, 0 },
	};
	char big[200];
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		CHECK_INT(id_session_valid(t[i].s), t[i].sess);
		CHECK_INT(id_sandbox_valid(t[i].s), t[i].sb);
		CHECK_INT(id_proxy_valid(t[i].s), t[i].px);
	}
	/* the longest of each grammar passes, one more byte fails */
	memset(big, 'a', sizeof(big));
	big[ID_SANDBOX_MAX - 1] = '\0';
	CHECK(id_sandbox_valid(big));
	memset(big, 'a', sizeof(big));
	big[ID_SANDBOX_MAX] = '\0';
	CHECK(!id_sandbox_valid(big));
	memset(big, 'a', sizeof(big));
	big[ID_PROXY_MAX] = '\0';
	CHECK(id_proxy_valid(big));
	memset(big, 'a', sizeof(big));
	big[ID_PROXY_MAX + 1] = '\0';
	CHECK(!id_proxy_valid(big));
	memset(big, 'a', sizeof(big));
	big[ID_SESSION_MAX] = '\0';
	CHECK(id_session_valid(big));
	memset(big, 'a', sizeof(big));
	big[ID_SESSION_MAX + 1] = '\0';
	CHECK(!id_session_valid(big));
}

int
main(void)
{
	RUN(test_buf_bounds);
	RUN(test_strnum);
	RUN(test_units);
	RUN(test_log_escape);
	RUN(test_util_hash);
	RUN(test_util_files);
	RUN(test_util_kv);
	RUN(test_ids);
	return unit_done();
}
