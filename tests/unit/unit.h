/*
 * unit.h: a tiny table-friendly test harness. Each TEST prints "ok NAME" or
 * "not ok NAME" (tests/run counts these lines); CHECK records a failure
 * with file:line and carries on.
 *
 *   TEST(test_foo) { CHECK(foo(1) == 2); CHECK_STR(bar(), "x"); }
 *   int main(void) { RUN(test_foo); return unit_done(); }
 */
#ifndef UNIT_H
#define UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_failed_total, unit_cur_failed;

#define TEST(name) static void name(void)

#define CHECK(e) do { if (!(e)) { unit_cur_failed++;			\
	fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #e); } } while (0)

#define CHECK_STR(a, b) do { const char *a_ = (a), *b_ = (b);		\
	if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) { unit_cur_failed++;	\
	fprintf(stderr, "  %s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__,	\
	    a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } } while (0)

#define CHECK_INT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
	if (a_ != b_) { unit_cur_failed++;					\
	fprintf(stderr, "  %s:%d: %s == %lld, expected %lld\n", __FILE__,	\
	    __LINE__, #a, a_, b_); } } while (0)

#define RUN(name) do { unit_cur_failed = 0; name();				\
	printf("%s %s\n", unit_cur_failed ? "not ok" : "ok", #name);		\
	fflush(stdout); if (unit_cur_failed) unit_failed_total++; } while (0)

static inline int
unit_done(void)
{
	return unit_failed_total ? 1 : 0;
}

#endif
