/*
 * test_proxy_credtok.c: what egress-proxy/credtok.c reads from token
 * endpoints and declarations: a successful answer (access_token, bearer,
 * expires_in, a rotated refresh_token) and every hostile or malformed one
 * (not JSON, not an object, wrong types, a token a header cannot carry,
 * oversized, out-of-range lifetimes), an error answer's code (never its
 * description), and the oauth2 declaration checks (token_url, client_id,
 * scope).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/credtok.h"
#include "unit.h"

static int
parse(const char *body, char *tok, size_t toklen, long *ttl, char *rt, size_t rtlen)
{
	char err[256];

	err[0] = '\0';
	return credtok_parse(body, strlen(body), tok, toklen, ttl, rt, rtlen, err, sizeof(err));
}

TEST(test_parse_ok)
{
	char tok[CREDTOK_TOKEN_MAX], rt[CREDTOK_TOKEN_MAX];
	long ttl;

	CHECK_INT(parse("{\"access_token\":\"at-1.x_y~z+/==\",\"token_type\":\"Bearer\","
	    "\"expires_in\":120,\"refresh_token\":\"rt!2\",\"scope\":\"read\"}", tok, sizeof(tok),
	    &ttl, rt, sizeof(rt)), 0);
	CHECK_STR(tok, "at-1.x_y~z+/==");
	CHECK_STR(rt, "rt!2");
	CHECK_INT(ttl, 120);
	/* no expires_in: the default lifetime; no refresh_token: none */
	CHECK_INT(parse("{\"access_token\":\"a\",\"token_type\":\"bearer\"}", tok, sizeof(tok),
	    &ttl, rt, sizeof(rt)), 0);
	CHECK_INT(ttl, CREDTOK_TTL_DEFAULT);
	CHECK_STR(rt, "");
}

TEST(test_parse_hostile)
{
	static const char *const bad[] = {
		"",
		"not json",
		"[]",
		"\"a string\"",
		"{}",
		"{\"token_type\":\"bearer\"}",
		"{\"access_token\":42,\"token_type\":\"bearer\"}",
		"{\"access_token\":\"\",\"token_type\":\"bearer\"}",
		"{\"access_token\":\"a b\",\"token_type\":\"bearer\"}",
		"{\"access_token\":\"a\\r\\nX-Evil: 1\",\"token_type\":\"bearer\"}",
		"{\"access_token\":\"a\\u0000b\",\"token_type\":\"bearer\"}",
		"{\"access_token\":\"a=b\",\"token_type\":\"bearer\"}",
		"{\"access_token\":\"a\"}",
		"{\"access_token\":\"a\",\"token_type\":\"mac\"}",
		"{\"access_token\":\"a\",\"token_type\":7}",
		"{\"access_token\":\"a\",\"token_type\":\"bearer\",\"expires_in\":0}",
		"{\"access_token\":\"a\",\"token_type\":\"bearer\",\"expires_in\":-5}",
		"{\"access_token\":\"a\",\"token_type\":\"bearer\",\"expires_in\":\"60\"}",
		"{\"access_token\":\"a\",\"token_type\":\"bearer\",\"expires_in\":1e300}",
		"{\"access_token\":\"a\",\"token_type\":\"bearer\",\"refresh_token\":5}",
		"{\"access_token\":\"a\",\"token_type\":\"bearer\",\"refresh_token\":\"\"}",
		"{\"access_token\":\"a\",\"token_type\":\"bearer\",\"refresh_token\":\"r s\"}",
		"{\"access_token\":\"a\",\"token_type\":\"bearer\",\"refresh_token\":\"r\\n\"}",
		"{\"access_token\":\"a\",\"token_type\":\"bearer\"",
	};
	char tok[CREDTOK_TOKEN_MAX], rt[CREDTOK_TOKEN_MAX], err[256];
	char *big;
	size_t i, n;
	long ttl;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (credtok_parse(bad[i], strlen(bad[i]), tok, sizeof(tok), &ttl, rt, sizeof(rt), err,
		    sizeof(err)) != -1 || err[0] == '\0' || tok[0] != '\0') {
			printf("  accepted: %s\n", bad[i]);
			CHECK(0);
		}
	}
	/* a token longer than the caller's room, and than CREDTOK_TOKEN_MAX */
	CHECK_INT(parse("{\"access_token\":\"abcdefgh\",\"token_type\":\"bearer\"}", tok, 8,
	    &ttl, rt, sizeof(rt)), -1);
	n = CREDTOK_TOKEN_MAX + 100;
	big = malloc(n + 100);
	memcpy(big, "{\"access_token\":\"", 17);
	memset(big + 17, 'a', n);
	memcpy(big + 17 + n, "\",\"token_type\":\"bearer\"}", 25);
	CHECK_INT(credtok_parse(big, strlen(big), tok, sizeof(tok), &ttl, rt, sizeof(rt), err,
	    sizeof(err)), -1);
	free(big);
	/* an answer past CREDTOK_RESP_MAX is refused unread */
	n = CREDTOK_RESP_MAX + 1;
	big = calloc(1, n + 1);
	memset(big, ' ', n);
	big[0] = '{';
	big[n - 1] = '}';
	CHECK_INT(credtok_parse(big, n, tok, sizeof(tok), &ttl, rt, sizeof(rt), err,
	    sizeof(err)), -1);
	free(big);
	/* the error never quotes the body */
	err[0] = '\0';
	CHECK_INT(credtok_parse("{\"access_token\":\"SECRET VALUE\",\"token_type\":\"x\"}", 47, tok,
	    sizeof(tok), &ttl, rt, sizeof(rt), err, sizeof(err)), -1);
	CHECK(strstr(err, "SECRET") == NULL);
}

TEST(test_error_code)
{
	char code[64];
	static const char *const bad[] = {
		"nope", "{}", "{\"error\":5}", "{\"error\":\"\"}", "{\"error\":\"Invalid Grant\"}",
		"{\"error\":\"a\\r\\nb\"}", "{\"error\":\"x<script>\"}",
	};
	size_t i;

	static const char ok[] = "{\"error\":\"invalid_grant\",\"error_description\":\"rt SECRET\"}";

	credtok_error_code(ok, strlen(ok), code, sizeof(code));
	CHECK_STR(code, "invalid_grant");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		credtok_error_code(bad[i], strlen(bad[i]), code, sizeof(code));
		CHECK_STR(code, "");
	}
}

TEST(test_decl)
{
	char err[256];
	char longurl[CREDTOK_URL_MAX + 20];

	CHECK_STR(credtok_decl_check("https://auth.test/oauth/token", "app", "read write", err,
	    sizeof(err)), "");
	CHECK_STR(credtok_decl_check("https://auth.test:8443/token", "app id", NULL, err,
	    sizeof(err)), "");
	CHECK(*credtok_decl_check("http://auth.test/token", "app", NULL, err, sizeof(err)) != '\0');
	CHECK(*credtok_decl_check("https:///token", "app", NULL, err, sizeof(err)) != '\0');
	CHECK(*credtok_decl_check("https://user:pw@auth.test/token", "app", NULL, err,
	    sizeof(err)) != '\0');
	CHECK(*credtok_decl_check("https://auth.test/token#x", "app", NULL, err,
	    sizeof(err)) != '\0');
	CHECK(*credtok_decl_check("https://auth.test/to ken", "app", NULL, err,
	    sizeof(err)) != '\0');
	CHECK(*credtok_decl_check("https://auth.test/\r\nx", "app", NULL, err, sizeof(err)) != '\0');
	CHECK(*credtok_decl_check(NULL, "app", NULL, err, sizeof(err)) != '\0');
	CHECK(*credtok_decl_check("https://auth.test/t", NULL, NULL, err, sizeof(err)) != '\0');
	CHECK(*credtok_decl_check("https://auth.test/t", "", NULL, err, sizeof(err)) != '\0');
	CHECK(*credtok_decl_check("https://auth.test/t", "a\nb", NULL, err, sizeof(err)) != '\0');
	CHECK(*credtok_decl_check("https://auth.test/t", "app", "", err, sizeof(err)) != '\0');
	CHECK(*credtok_decl_check("https://auth.test/t", "app", "a  b", err, sizeof(err)) != '\0');
	CHECK(*credtok_decl_check("https://auth.test/t", "app", " a", err, sizeof(err)) != '\0');
	CHECK(*credtok_decl_check("https://auth.test/t", "app", "a\"b", err, sizeof(err)) != '\0');
	memcpy(longurl, "https://a.test/", 15);
	memset(longurl + 15, 'x', sizeof(longurl) - 16);
	longurl[sizeof(longurl) - 1] = '\0';
	CHECK(*credtok_decl_check(longurl, "app", NULL, err, sizeof(err)) != '\0');
}

/* A registry realm's answer (the Docker token spec). */
TEST(test_parse_registry)
{
	static const char *const bad[] = {
		"", "not json", "[]", "{}", "{\"expires_in\":60}",
		"{\"token\":42}",
		"{\"token\":\"\"}",
		"{\"token\":\"a b\"}",
		"{\"token\":\"a\\r\\nX-Evil: 1\"}",
		"{\"token\":\"a\\u0000b\"}",
		/* token wins over access_token, even a bad one */
		"{\"token\":\"a b\",\"access_token\":\"good\"}",
		"{\"token\":\"a\",\"expires_in\":0}",
		"{\"token\":\"a\",\"expires_in\":\"60\"}",
		"{\"token\":\"a\",\"expires_in\":1e300}",
		"{\"token\":\"a\"",
	};
	char tok[CREDTOK_TOKEN_MAX], err[256];
	long ttl;
	size_t i;
	const char *b;

	b = "{\"token\":\"eyJ.a-b_c.d\",\"access_token\":\"eyJ.a-b_c.d\",\"expires_in\":300,"
	    "\"issued_at\":\"2026-01-01T00:00:00Z\"}";
	CHECK_INT(credtok_parse_registry(b, strlen(b), tok, sizeof(tok), &ttl, err, sizeof(err)), 0);
	CHECK_STR(tok, "eyJ.a-b_c.d");
	CHECK_INT(ttl, 300);
	/* access_token alone; no expires_in: the default; no token_type needed */
	b = "{\"access_token\":\"at\"}";
	CHECK_INT(credtok_parse_registry(b, strlen(b), tok, sizeof(tok), &ttl, err, sizeof(err)), 0);
	CHECK_STR(tok, "at");
	CHECK_INT(ttl, CREDTOK_TTL_DEFAULT);
	/* a refresh_token is ignored, never a reason to refuse */
	b = "{\"token\":\"t\",\"refresh_token\":\"r s\"}";
	CHECK_INT(credtok_parse_registry(b, strlen(b), tok, sizeof(tok), &ttl, err, sizeof(err)), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK_INT(credtok_parse_registry(bad[i], strlen(bad[i]), tok, sizeof(tok), &ttl, err,
		    sizeof(err)), -1);
		CHECK(err[0] != '\0' && tok[0] == '\0');
	}
	/* the registry's error code, never its message */
	credtok_error_code("{\"errors\":[{\"code\":\"UNAUTHORIZED\",\"message\":\"pw=x\"}]}", 57,
	    err, sizeof(err));
	CHECK_STR(err, "UNAUTHORIZED");
	b = "{\"errors\":[{\"code\":\"pw is hunter2\"}]}";
	credtok_error_code(b, strlen(b), err, sizeof(err));
	CHECK_STR(err, "");
	b = "{\"errors\":[]}";
	credtok_error_code(b, strlen(b), err, sizeof(err));
	CHECK_STR(err, "");
	b = "{\"errors\":{\"code\":\"X\"}}";
	credtok_error_code(b, strlen(b), err, sizeof(err));
	CHECK_STR(err, "");
}

TEST(test_regdecl)
{
	char err[300];

	CHECK_STR(credtok_regdecl_check("https://auth.test/token", "registry.test", "carol", err,
	    sizeof(err)), "");
	CHECK_STR(credtok_regdecl_check("https://auth.test/token?x=1", "r", "a b", err,
	    sizeof(err)), "");
	CHECK(*credtok_regdecl_check("http://auth.test/token", "r", "u", err, sizeof(err)) != '\0');
	CHECK(*credtok_regdecl_check("https://u:p@auth.test/t", "r", "u", err, sizeof(err)) != '\0');
	CHECK(*credtok_regdecl_check("https:///t", "r", "u", err, sizeof(err)) != '\0');
	CHECK(*credtok_regdecl_check(NULL, "r", "u", err, sizeof(err)) != '\0');
	CHECK(*credtok_regdecl_check("https://a.test/t", NULL, "u", err, sizeof(err)) != '\0');
	CHECK(*credtok_regdecl_check("https://a.test/t", "", "u", err, sizeof(err)) != '\0');
	CHECK(*credtok_regdecl_check("https://a.test/t", "r s", "u", err, sizeof(err)) != '\0');
	CHECK(*credtok_regdecl_check("https://a.test/t", "r\n", "u", err, sizeof(err)) != '\0');
	CHECK(*credtok_regdecl_check("https://a.test/t", "r", NULL, err, sizeof(err)) != '\0');
	CHECK(*credtok_regdecl_check("https://a.test/t", "r", "", err, sizeof(err)) != '\0');
	CHECK(*credtok_regdecl_check("https://a.test/t", "r", "a:b", err, sizeof(err)) != '\0');
	CHECK(*credtok_regdecl_check("https://a.test/t", "r", "a\r\nb", err, sizeof(err)) != '\0');
}

int
main(void)
{
	RUN(test_parse_ok);
	RUN(test_parse_registry);
	RUN(test_regdecl);
	RUN(test_parse_hostile);
	RUN(test_error_code);
	RUN(test_decl);
	return unit_done();
}
