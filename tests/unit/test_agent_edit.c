/* test_agent_edit.c: view / str_replace / insert logic of the agent. */
#include <stdlib.h>
#include <string.h>

#include "../../agent/edit.h"
#include "unit.h"

#define S(x) x, sizeof(x) - 1

TEST(test_count_lines)
{
	CHECK_INT(edit_count_lines(S("")), 0);
	CHECK_INT(edit_count_lines(S("a")), 1);
	CHECK_INT(edit_count_lines(S("a\n")), 1);
	CHECK_INT(edit_count_lines(S("a\nb")), 2);
	CHECK_INT(edit_count_lines(S("\n\n")), 2);
}

TEST(test_binary)
{
	CHECK(!edit_is_binary(S("text\n\xc3\xa9")));
	CHECK(edit_is_binary("a\0b", 3));
	CHECK(edit_is_binary(S("\xff\xfe")));
	CHECK(!edit_is_binary(S("")));
}

struct vcase {
	const char	*text;
	long long	 start, end;
	int		 ok;
	const char	*out;
	const char	*errpart;
};

static const struct vcase view_cases[] = {
	{ "a\nb\nc\n", 0, 0, 1, "     1\ta\n     2\tb\n     3\tc\n", NULL },
	{ "a\nb\nc", 2, -1, 1, "     2\tb\n     3\tc\n", NULL },
	{ "a\nb\nc", 2, 2, 1, "     2\tb\n", NULL },
	{ "a\nb\nc", 3, 3, 1, "     3\tc\n", NULL },
	{ "a\n\nc", 1, 3, 1, "     1\ta\n     2\t\n     3\tc\n", NULL },
	{ "", 0, 0, 1, "", NULL },
	{ "a\nb\nc", 0, 2, 0, NULL, "start must be between 1 and 3" },
	{ "a\nb\nc", 4, -1, 0, NULL, "start must be between 1 and 3" },
	{ "a\nb\nc", 2, 1, 0, NULL, "end must be -1 or between 2 and 3" },
	{ "a\nb\nc", 1, 4, 0, NULL, "end must be -1" },
	{ "a\nb\nc", -5, -1, 0, NULL, "invalid view_range" },
	{ "", 1, 1, 0, NULL, "between 1 and 0" },
};

TEST(test_view_table)
{
	size_t i;
	char err[256];
	struct buf out;
	int r;

	for (i = 0; i < NELEM(view_cases); i++) {
		const struct vcase *c = &view_cases[i];
		buf_init(&out, 1 << 20);
		err[0] = '\0';
		r = edit_view(c->text, strlen(c->text), c->start, c->end, &out, err,
		    sizeof(err));
		CHECK_INT(r, c->ok ? 0 : -1);
		if (c->ok)
			CHECK_STR(out.p ? out.p : "", c->out);
		else
			CHECK(strstr(err, c->errpart) != NULL);
		buf_free(&out);
	}
}

struct rcase {
	const char	*text, *old, *new_;
	int		 ok;
	const char	*out;		/* result, or a part of the error */
};

static const struct rcase replace_cases[] = {
	{ "one two three", "two", "2", 1, "one 2 three" },
	{ "one two three", "one two three", "", 1, "" },
	{ "a\nb\nc\n", "b\n", "", 1, "a\nc\n" },
	{ "x", "x", "a much longer replacement", 1, "a much longer replacement" },
	{ "aaa", "aa", "b", 1, "ba" },	/* non-overlapping count: 1 */
	{ "dup\nx\ndup\n", "dup", "d", 0, "occurs 2 times (lines 1, 3)" },
	{ "dup dup\n", "dup", "d", 0, "occurs 2 times (lines 1)" },
	{ "abc", "abd", "", 0, "0 matches" },
	{ "  if (x)\n\treturn;\n", "if (x)\n  return;", "", 0, "whitespace is ignored" },
	{ "a\nb\n", "a\r\nb", "", 0, "CRLF" },
	{ "abc", "", "x", 0, "must not be empty" },
	{ "", "a", "b", 0, "0 matches" },
};

TEST(test_replace_table)
{
	size_t i;
	char err[512];
	struct buf out, snip;
	int r;

	for (i = 0; i < NELEM(replace_cases); i++) {
		const struct rcase *c = &replace_cases[i];
		buf_init(&out, EDIT_MAX_FILE);
		buf_init(&snip, 1 << 20);
		err[0] = '\0';
		r = edit_str_replace(c->text, strlen(c->text), c->old, strlen(c->old),
		    c->new_, strlen(c->new_), &out, &snip, err, sizeof(err));
		CHECK_INT(r, c->ok ? 0 : -1);
		if (c->ok)
			CHECK_STR(out.p ? out.p : "", c->out);
		else if (strstr(err, c->out) == NULL) {
			fprintf(stderr, "  case %zu: error \"%s\" lacks \"%s\"\n", i, err, c->out);
			CHECK(0);
		}
		buf_free(&out);
		buf_free(&snip);
	}
}

TEST(test_replace_many_lines_listed)
{
	struct buf text, out;
	char err[2048];
	int i;

	buf_init(&text, 1 << 20);
	buf_init(&out, EDIT_MAX_FILE);
	for (i = 0; i < 100; i++)
		CHECK(buf_addstr(&text, "same\n") == 0);
	CHECK(edit_str_replace(text.p, text.len, S("same"), S("x"), &out, NULL, err,
	    sizeof(err)) == -1);
	CHECK(strstr(err, "occurs 100 times") != NULL);
	CHECK(strstr(err, ", ...") != NULL);
	buf_free(&text);
	buf_free(&out);
}

TEST(test_replace_snippet)
{
	const char *t = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\n";
	struct buf out, snip;
	char err[256];

	buf_init(&out, EDIT_MAX_FILE);
	buf_init(&snip, 1 << 20);
	CHECK(edit_str_replace(t, strlen(t), S("l6\n"), S("six\nSIX\n"), &out, &snip,
	    err, sizeof(err)) == 0);
	CHECK_STR(snip.p, "     2\tl2\n     3\tl3\n     4\tl4\n     5\tl5\n     6\tsix\n"
	    "     7\tSIX\n     8\tl7\n     9\tl8\n    10\tl9\n    11\tl10\n");
	buf_free(&out);
	buf_free(&snip);
}

struct icase {
	const char	*text;
	long long	 line;
	const char	*ins;
	int		 ok;
	const char	*out;
};

static const struct icase insert_cases[] = {
	{ "a\nb\n", 0, "top", 1, "top\na\nb\n" },
	{ "a\nb\n", 1, "mid\n", 1, "a\nmid\nb\n" },
	{ "a\nb\n", 2, "end", 1, "a\nb\nend\n" },
	{ "a\nb", 2, "end", 1, "a\nb\nend\n" },
	{ "", 0, "x", 1, "x\n" },
	{ "a\n", 0, "", 1, "\na\n" },
	{ "a\nb\n", 3, "x", 0, "between 0" },
	{ "a\nb\n", -1, "x", 0, "invalid insert_line -1" },
	{ "", 1, "x", 0, "and 0" },
};

TEST(test_insert_table)
{
	size_t i;
	char err[256];
	struct buf out, snip;
	int r;

	for (i = 0; i < NELEM(insert_cases); i++) {
		const struct icase *c = &insert_cases[i];
		buf_init(&out, EDIT_MAX_FILE);
		buf_init(&snip, 1 << 20);
		err[0] = '\0';
		r = edit_insert(c->text, strlen(c->text), c->line, c->ins, strlen(c->ins),
		    &out, &snip, err, sizeof(err));
		CHECK_INT(r, c->ok ? 0 : -1);
		if (c->ok)
			CHECK_STR(out.p ? out.p : "", c->out);
		else
			CHECK(strstr(err, c->out) != NULL);
		buf_free(&out);
		buf_free(&snip);
	}
}

TEST(test_large_file_fast)
{
	/* a 4 MiB file of one repeated character and a long old_str */
	size_t n = 4 * 1024 * 1024, on = 64 * 1024;
	char *t = malloc(n), *o = malloc(on);
	struct buf out;
	char err[512];

	memset(t, 'a', n);
	memset(o, 'a', on);
	buf_init(&out, EDIT_MAX_FILE);
	CHECK(edit_str_replace(t, n, o, on, "b", 1, &out, NULL, err, sizeof(err)) == -1);
	CHECK(strstr(err, "occurs 64 times") != NULL);
	buf_free(&out);
	free(t);
	free(o);
}

int
main(void)
{
	RUN(test_count_lines);
	RUN(test_binary);
	RUN(test_view_table);
	RUN(test_replace_table);
	RUN(test_replace_many_lines_listed);
	RUN(test_replace_snippet);
	RUN(test_insert_table);
	RUN(test_large_file_fast);
	return unit_done();
}
