/*
 * qaction.c: GitLab quick actions in request text (see qaction.h for what
 * counts as one and where it is looked for). A JSON body is read by gql.c's
 * strict reader (a key twice refused: Rails and the proxy must read the
 * same value); form text is split and decoded here as Rack does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "qaction.h"
#include "strnum.h"
#include "xmalloc.h"

/* Bytes of a quick action's name shown in a refusal. */
#define QA_CMD_SHOW	40

static int
is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

enum qaction_body
qaction_body_kind(const char *ct, size_t n)
{
	size_t e;

	if (ct == NULL)
		return QA_FORM;		/* Rack reads a POST without a type as a form */
	for (e = 0; e < n && ct[e] != ';' && ct[e] != ' ' && ct[e] != '\t'; e++)
		;
	if (e == 16 && strncasecmp(ct, "application/json", 16) == 0)
		return QA_JSON;
	if (e == 33 && strncasecmp(ct, "application/x-www-form-urlencoded", 33) == 0)
		return QA_FORM;
	return QA_OTHER;
}

int
qaction_find(const char *s, size_t n, char *cmd, size_t cmdlen)
{
	size_t i = 0, k;

	while (i < n) {
		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (i + 1 < n && s[i] == '/' && is_alpha((unsigned char)s[i + 1])) {
			for (k = 0, i++; i < n && k + 1 < cmdlen && (is_alpha((unsigned char)s[i]) ||
			    s[i] == '_' || (s[i] >= '0' && s[i] <= '9')); i++)
				cmd[k++] = s[i];
			if (cmdlen > 0)
				cmd[k] = '\0';
			return 1;
		}
		while (i < n && s[i] != '\n' && s[i] != '\r')
			i++;
		i++;
	}
	return 0;
}

/* gql_str_fn: refuses a string holding a quick action. */
static int
qa_str(void *arg, const char *s, size_t n, char *why, size_t whylen)
{
	char cmd[QA_CMD_SHOW + 1];

	(void)arg;
	if (!qaction_find(s, n, cmd, sizeof(cmd)))
		return 0;
	snprintf(why, whylen, "text with a line GitLab runs as the quick action /%s (under push "
	    "rules no quick action is sent; put it in a code span or start the line with "
	    "another character)", cmd);
	return 1;
}


void
qaction_judge_form(const char *s, size_t n, struct gql_verdict *v)
{
	char *d = xmalloc(n + 1);
	size_t i = 0, e, k;

	memset(v, 0, sizeof(*v));
	v->res = GQL_PASS;
	while (i < n) {
		/* one name or value: up to '=', '&' or ';' */
		for (e = i, k = 0; e < n && s[e] != '=' && s[e] != '&' && s[e] != ';'; e++) {
			if (s[e] == '%') {
				if (n - e < 3 || strnum_hexdigit((unsigned char)s[e + 1]) < 0 ||
				    strnum_hexdigit((unsigned char)s[e + 2]) < 0) {
					v->res = GQL_BAD;
					snprintf(v->why, sizeof(v->why), "a malformed %%-escape in "
					    "form text at byte %zu", e);
					goto out;
				}
				d[k++] = (char)(strnum_hexdigit((unsigned char)s[e + 1]) << 4 |
				    strnum_hexdigit((unsigned char)s[e + 2]));
				e += 2;
			} else if (s[e] == '+')
				d[k++] = ' ';
			else
				d[k++] = s[e];
		}
		if (qa_str(NULL, d, k, v->why, sizeof(v->why)) != 0) {
			v->res = GQL_DENY;
			goto out;
		}
		i = e + 1;
	}
out:
	free(d);
}

void
qaction_judge_body(enum qaction_body k, const char *body, size_t n, struct gql_verdict *v)
{
	memset(v, 0, sizeof(*v));
	v->res = GQL_PASS;
	switch (k) {
	case QA_NONE:
		break;
	case QA_JSON:
		gql_json_strings(body, n, qa_str, NULL, v);
		break;
	case QA_FORM:
		qaction_judge_form(body, n, v);
		break;
	default:
		v->res = GQL_BAD;
		snprintf(v->why, sizeof(v->why), "a body that is neither JSON nor a form cannot be "
		    "checked for quick actions");
		break;
	}
}
