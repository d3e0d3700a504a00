/*
 * test_proxy_sigv4.c: AWS Signature Version 4 (egress-proxy/sigv4.c).
 * The vectors' canonical requests and signatures were computed with
 * botocore 1.43 (SigV4Auth, S3SigV4Auth) and agree with AWS's own test
 * suite where it has the case (get-vanilla, get-vanilla-query-order-key);
 * the streaming chunk signatures are those of S3's documentation
 * ("Signature calculations for the Authorization header: transferring
 * payload in multiple chunks", the 64 KiB + 1 KiB example). Hostile
 * Authorization values and chunk streams are refused with a reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/sigv4.h"
#include "unit.h"

#define SECRET	"wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define AMZDATE	"20150830T123600Z"

static const struct {
	const char	*name, *method, *target, *headers, *payload;
	int		 s3;
	const char	*service, *signed_headers, *creq, *sig;
} vec[] = {
	{ "get-vanilla", "GET", "/",
	  "Host: example.amazonaws.com\n"
	    "X-Amz-Date: 20150830T123600Z\n"
	    "",
	  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 0, "service", "host;x-amz-date",
	  "GET\n"
	    "/\n"
	    "\n"
	    "host:example.amazonaws.com\n"
	    "x-amz-date:20150830T123600Z\n"
	    "\n"
	    "host;x-amz-date\n"
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	  "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
	{ "query-order", "GET", "/?Param2=value2&Param1=value1",
	  "Host: example.amazonaws.com\n"
	    "X-Amz-Date: 20150830T123600Z\n"
	    "",
	  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 0, "service", "host;x-amz-date",
	  "GET\n"
	    "/\n"
	    "Param1=value1&Param2=value2\n"
	    "host:example.amazonaws.com\n"
	    "x-amz-date:20150830T123600Z\n"
	    "\n"
	    "host;x-amz-date\n"
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	  "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500" },
	{ "query-repeat", "GET", "/?a=2&a=1&b=&c",
	  "Host: example.amazonaws.com\n"
	    "X-Amz-Date: 20150830T123600Z\n"
	    "",
	  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 0, "service", "host;x-amz-date",
	  "GET\n"
	    "/\n"
	    "a=1&a=2&b=&c=\n"
	    "host:example.amazonaws.com\n"
	    "x-amz-date:20150830T123600Z\n"
	    "\n"
	    "host;x-amz-date\n"
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	  "410da475f03ffbc5ab1061b9fcbcbdf49eb2e68810a0ef95bdaee6b4e058af8a" },
	{ "slashes-dots", "GET", "/a//b/./c/../d/",
	  "Host: example.amazonaws.com\n"
	    "X-Amz-Date: 20150830T123600Z\n"
	    "",
	  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 0, "service", "host;x-amz-date",
	  "GET\n"
	    "/a/b/d/\n"
	    "\n"
	    "host:example.amazonaws.com\n"
	    "x-amz-date:20150830T123600Z\n"
	    "\n"
	    "host;x-amz-date\n"
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	  "fc87438582477f9ca8c8209b32704e0e9f5b46786f0101a26c46e85478a0f14f" },
	{ "escaped-path", "GET", "/x%20y/%E1%88%B4:z",
	  "Host: example.amazonaws.com\n"
	    "X-Amz-Date: 20150830T123600Z\n"
	    "",
	  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 0, "service", "host;x-amz-date",
	  "GET\n"
	    "/x%2520y/%25E1%2588%25B4%3Az\n"
	    "\n"
	    "host:example.amazonaws.com\n"
	    "x-amz-date:20150830T123600Z\n"
	    "\n"
	    "host;x-amz-date\n"
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	  "d95f9145f36d4636bb00be292a06db468a5ee2e018927575266b792b81eefa2f" },
	{ "header-spaces", "POST", "/",
	  "Host: example.amazonaws.com\n"
	    "My-Header1:   a   b  c \n"
	    "X-Amz-Date: 20150830T123600Z\n"
	    "Content-Type: application/x-www-form-urlencoded; charset=utf-8\n"
	    "",
	  "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e", 0, "service", "content-type;host;my-header1;x-amz-date",
	  "POST\n"
	    "/\n"
	    "\n"
	    "content-type:application/x-www-form-urlencoded; charset=utf-8\n"
	    "host:example.amazonaws.com\n"
	    "my-header1:a b c\n"
	    "x-amz-date:20150830T123600Z\n"
	    "\n"
	    "content-type;host;my-header1;x-amz-date\n"
	    "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
	  "db8eb29ef057d2778c32ba67ebde2545a40cb6bea90ed1b35a12ec34128928ff" },
	{ "s3-put", "PUT", "/bucket/key%20with%2Fslash~.txt?partNumber=1&uploadId=abc%2Bdef",
	  "Host: s3.us-east-1.amazonaws.com\n"
	    "X-Amz-Date: 20150830T123600Z\n"
	    "X-Amz-Content-SHA256: UNSIGNED-PAYLOAD\n"
	    "",
	  "UNSIGNED-PAYLOAD", 1, "s3", "host;x-amz-content-sha256;x-amz-date",
	  "PUT\n"
	    "/bucket/key%20with%2Fslash~.txt\n"
	    "partNumber=1&uploadId=abc%2Bdef\n"
	    "host:s3.us-east-1.amazonaws.com\n"
	    "x-amz-content-sha256:UNSIGNED-PAYLOAD\n"
	    "x-amz-date:20150830T123600Z\n"
	    "\n"
	    "host;x-amz-content-sha256;x-amz-date\n"
	    "UNSIGNED-PAYLOAD",
	  "2c105baf43940aaeb6cf5778c8604942ab44f18c1b205d25ad8ca9a7d6a0d9a8" },
	{ "s3-get-hash", "GET", "/bucket/dir/",
	  "Host: bucket.s3.amazonaws.com\n"
	    "X-Amz-Date: 20150830T123600Z\n"
	    "X-Amz-Content-SHA256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
	    "Range: bytes=0-9\n"
	    "",
	  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 1, "s3", "host;range;x-amz-content-sha256;x-amz-date",
	  "GET\n"
	    "/bucket/dir/\n"
	    "\n"
	    "host:bucket.s3.amazonaws.com\n"
	    "range:bytes=0-9\n"
	    "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
	    "x-amz-date:20150830T123600Z\n"
	    "\n"
	    "host;range;x-amz-content-sha256;x-amz-date\n"
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	  "b72ec2bc8113c7c13a9d210f757f70471e0d205db85dfd1f8cd530292282791d" },
};

/* Splits "Name: value\n..." into fields (pointing into s). */
static size_t
fields(const char *s, struct sigv4_field *f, size_t max)
{
	size_t n = 0;
	const char *e, *c;

	while (*s != '\0' && n < max) {
		e = strchr(s, '\n');
		c = memchr(s, ':', (size_t)(e - s));
		f[n].name = s;
		f[n].nl = (size_t)(c - s);
		for (c++; *c == ' '; c++)
			;
		f[n].value = c;
		f[n].vl = (size_t)(e - c);
		n++;
		s = e + 1;
	}
	return n;
}

TEST(test_vectors)
{
	struct sigv4_field f[16];
	struct sigv4_req r;
	struct sigv4_auth a;
	struct buf b;
	unsigned char key[32];
	char err[128], scope[200], sig[65];
	size_t i;

	buf_init(&b, SIGV4_CREQ_MAX);
	for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		memset(&r, 0, sizeof(r));
		r.method = vec[i].method;
		r.target = vec[i].target;
		r.tl = strlen(vec[i].target);
		r.f = f;
		r.nf = fields(vec[i].headers, f, 16);
		r.payload_hash = vec[i].payload;
		r.s3 = vec[i].s3;
		err[0] = '\0';
		CHECK_INT(sigv4_canonical(&r, vec[i].signed_headers, &b, err, sizeof(err)), 0);
		CHECK_STR(b.p, vec[i].creq);
		memset(&a, 0, sizeof(a));
		memcpy(a.date, AMZDATE, 8);
		snprintf(a.region, sizeof(a.region), "us-east-1");
		snprintf(a.service, sizeof(a.service), "%s", vec[i].service);
		sigv4_scope(&a, scope, sizeof(scope));
		sigv4_key(SECRET, a.date, a.region, a.service, key);
		sigv4_sign(key, AMZDATE, scope, b.p, b.len, sig);
		if (strcmp(sig, vec[i].sig) != 0)
			fprintf(stderr, "  vector %s\n", vec[i].name);
		CHECK_STR(sig, vec[i].sig);
	}
	buf_free(&b);
}

TEST(test_auth_parse)
{
	static const char ok[] = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/"
	    "service/aws4_request, SignedHeaders=host;x-amz-date, Signature="
	    "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31";
	static const char *bad[] = {
		"",
		"AWS4-HMAC-SHA256",
		"AWS4-HMAC-SHA1 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, Signature=",
		/* missing part, extra part, bad date, bad terminator */
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/aws4_request, SignedHeaders=host, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/x/aws4_request, SignedHeaders=host, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		"AWS4-HMAC-SHA256 Credential=A/2015083/r/s/aws4_request, SignedHeaders=host, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws5_request, SignedHeaders=host, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		/* a key id with '/' smuggled, upper-case region */
		"AWS4-HMAC-SHA256 Credential=A-B/20150830/r/s/aws4_request, SignedHeaders=host, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		"AWS4-HMAC-SHA256 Credential=A/20150830/US-EAST-1/s/aws4_request, SignedHeaders=host, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		/* signed headers: unsorted, repeated, upper case, empty name */
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=x-amz-date;host, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host;host, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=Host, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host;;x, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		/* signature: short, upper-case hex; components: repeated, unknown, missing, trailing comma */
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, Signature=5fa0",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, Signature=5FA00FA31553B73EBF1942676E86291E8372FF2A2260956D9B8AAE1D763FBF31",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31, Extra=1",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		"AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31,",
	};
	struct sigv4_auth a;
	char err[128], out[512];
	size_t i;

	CHECK_INT(sigv4_auth_parse(ok, strlen(ok), &a, err, sizeof(err)), 0);
	CHECK_STR(a.akid, "AKIDEXAMPLE");
	CHECK_STR(a.date, "20150830");
	CHECK_STR(a.region, "us-east-1");
	CHECK_STR(a.service, "service");
	CHECK_STR(a.signed_headers, "host;x-amz-date");
	CHECK_STR(a.sig, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
	CHECK_INT(sigv4_auth_write(&a, "AKIDEXAMPLE", a.sig, out, sizeof(out)), 0);
	CHECK_STR(out, ok);
	CHECK_INT(sigv4_auth_write(&a, "AKIDEXAMPLE", a.sig, out, 40), -1);
	/* what botocore sends: no spaces after the commas is read alike */
	{
		static const char tight[] = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/"
		    "service/aws4_request,SignedHeaders=host;x-amz-date,Signature="
		    "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31";
		CHECK_INT(sigv4_auth_parse(tight, strlen(tight), &a, err, sizeof(err)), 0);
	}
	/* a NUL in a signed header name (the fuzzer's find: strchr matched the terminator) */
	{
		static const char nul[] = "AWS4-HMAC-SHA256 Credential=K/20150830/u/s/aws4_request,"
		    "SignedHeaders=\0,Signature="
		    "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31";
		CHECK_INT(sigv4_auth_parse(nul, sizeof(nul) - 1, &a, err, sizeof(err)), -1);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (sigv4_auth_parse(bad[i], strlen(bad[i]), &a, err, sizeof(err)) != -1)
			fprintf(stderr, "  accepted: %s\n", bad[i]);
		CHECK(err[0] != '\0');
	}
}

TEST(test_canonical_refusals)
{
	struct sigv4_field f[2] = {
		{ "Host", "h", 4, 1 }, { "X-Amz-Date", AMZDATE, 10, 16 },
	};
	struct sigv4_req r = { "GET", "/", 1, f, 2, "UNSIGNED-PAYLOAD", 0 };
	struct buf b;
	char err[128];

	buf_init(&b, SIGV4_CREQ_MAX);
	/* a signed header the request does not have */
	CHECK_INT(sigv4_canonical(&r, "host;x-amz-content-sha256;x-amz-date", &b, err, sizeof(err)), -1);
	CHECK(strstr(err, "x-amz-content-sha256") != NULL);
	/* a malformed escape in the query, a target that is not a path */
	r.target = "/?a=%zz";
	r.tl = strlen(r.target);
	CHECK_INT(sigv4_canonical(&r, "host", &b, err, sizeof(err)), -1);
	r.target = "*";
	r.tl = 1;
	CHECK_INT(sigv4_canonical(&r, "host", &b, err, sizeof(err)), -1);
	/* "+" is a plus sign, "%7e" an unreserved byte: re-encoded canonically */
	r.target = "/?b=%7e&a=x+y";
	r.tl = strlen(r.target);
	CHECK_INT(sigv4_canonical(&r, "host", &b, err, sizeof(err)), 0);
	CHECK(strstr(b.p, "\na=x%2By&b=~\n") != NULL);
	/* ".." above the root stays at the root; a path past the canonical bound is refused */
	r.target = "/../../a";
	r.tl = strlen(r.target);
	CHECK_INT(sigv4_canonical(&r, "host", &b, err, sizeof(err)), 0);
	CHECK(strncmp(b.p, "GET\n/a\n", 7) == 0);
	{
		char *big = malloc(SIGV4_CREQ_MAX + 2);
		memset(big, 'a', SIGV4_CREQ_MAX + 1);
		big[0] = '/';
		r.target = big;
		r.tl = SIGV4_CREQ_MAX + 1;
		CHECK_INT(sigv4_canonical(&r, "host", &b, err, sizeof(err)), -1);
		free(big);
	}
	buf_free(&b);
}

/* "/s" n times (then '\0') into a new buffer: a path of n segments. */
static char *
segs(size_t n, const char *tail)
{
	size_t tl = strlen(tail);
	char *p = malloc(2 * n + tl + 1);
	size_t i;

	for (i = 0; i < n; i++)
		memcpy(p + 2 * i, "/s", 2);
	memcpy(p + 2 * n, tail, tl + 1);
	return p;
}

/*
 * canon_uri keeps at most SIGV4_SEGS_MAX segments: that many sign, one more
 * is refused with a reason (not cut, not a crash), "." and ".." do not count
 * against it, and S3's as-sent path has no such bound.
 */
TEST(test_canonical_segments)
{
	struct sigv4_field f[1] = { { "Host", "h", 4, 1 } };
	struct sigv4_req r = { "GET", "/", 1, f, 1, "UNSIGNED-PAYLOAD", 0 };
	struct buf b;
	char err[128], *p;

	buf_init(&b, SIGV4_CREQ_MAX);
	p = segs(SIGV4_SEGS_MAX, "");
	r.target = p;
	r.tl = strlen(p);
	CHECK_INT(sigv4_canonical(&r, "host", &b, err, sizeof(err)), 0);
	CHECK(strncmp(b.p + 4, p, r.tl) == 0 && b.p[4 + r.tl] == '\n');
	free(p);
	p = segs(SIGV4_SEGS_MAX + 1, "");
	r.target = p;
	r.tl = strlen(p);
	err[0] = '\0';
	CHECK_INT(sigv4_canonical(&r, "host", &b, err, sizeof(err)), -1);
	CHECK_STR(err, "the path cannot be signed");
	/* the same path as S3 sends it: signed as is */
	r.s3 = 1;
	CHECK_INT(sigv4_canonical(&r, "host", &b, err, sizeof(err)), 0);
	r.s3 = 0;
	free(p);
	/* a ".." takes its segment back before the next is counted */
	p = segs(SIGV4_SEGS_MAX, "/../t/./");
	r.target = p;
	r.tl = strlen(p);
	CHECK_INT(sigv4_canonical(&r, "host", &b, err, sizeof(err)), 0);
	CHECK(strstr(b.p, "/s/t/\n") != NULL);
	free(p);
	buf_free(&b);
}

/* S3's documented streaming example: 65,536 + 1,024 bytes of 'a', then the final chunk. */
#define DOC_SECRET	"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define DOC_DATE	"20130524T000000Z"
#define DOC_SCOPE	"20130524/us-east-1/s3/aws4_request"
#define DOC_SEED	"4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
static const char *doc_sigs[] = {
	"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
	"0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
	"b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
};

/* The documented body, signed with the documented key. */
static void
doc_body(struct buf *b)
{
	static const size_t sizes[] = { 65536, 1024, 0 };
	char *a = malloc(65536);
	size_t i;

	memset(a, 'a', 65536);
	for (i = 0; i < 3; i++)
		if (buf_addf(b, "%zx;chunk-signature=%s\r\n", sizes[i], doc_sigs[i]) != 0 ||
		    buf_add(b, a, sizes[i]) != 0 || buf_add(b, "\r\n", 2) != 0)
			abort();
	free(a);
}

TEST(test_chunks_documented)
{
	unsigned char key[32], real[32];
	struct sigv4_chunks c;
	struct buf in, out, again;
	char err[128];
	size_t i, step;
	int r = 0;

	sigv4_key(DOC_SECRET, "20130524", "us-east-1", "s3", key);
	sigv4_key(SECRET, "20130524", "us-east-1", "s3", real);
	buf_init(&in, 1 << 20);
	buf_init(&out, 1 << 20);
	buf_init(&again, 1 << 20);
	doc_body(&in);
	/* fed whole, and one byte at a time: the same output */
	for (step = 0; step < 2; step++) {
		sigv4_chunks_init(&c, key, DOC_SEED, real, "0000000000000000000000000000000000000000000000000000000000000000",
		    DOC_DATE, DOC_SCOPE);
		buf_reset(step == 0 ? &out : &again);
		if (step == 0)
			r = sigv4_chunks_feed(&c, in.p, in.len, &out, err, sizeof(err));
		else
			for (i = 0; i < in.len && r != -1; i++)
				r = sigv4_chunks_feed(&c, in.p + i, 1, &again, err, sizeof(err));
		if (r != 1)
			fprintf(stderr, "  step %zu: %s\n", step, err);
		CHECK_INT(r, 1);
		sigv4_chunks_free(&c);
	}
	CHECK_INT(out.len, in.len);	/* framing and sizes as sent */
	CHECK(out.len == again.len && memcmp(out.p, again.p, out.len) == 0);
	CHECK(memcmp(out.p, "10000;chunk-signature=", 22) == 0);
	CHECK(memcmp(out.p + 22, doc_sigs[0], 64) != 0);	/* signed again */
	/* The output verifies under the real key's chain: feed it back as a client's. */
	sigv4_chunks_init(&c, real, "0000000000000000000000000000000000000000000000000000000000000000",
	    key, DOC_SEED, DOC_DATE, DOC_SCOPE);
	buf_reset(&again);
	CHECK_INT(sigv4_chunks_feed(&c, out.p, out.len, &again, err, sizeof(err)), 1);
	CHECK(again.len == in.len && memcmp(again.p, in.p, in.len) == 0);	/* and back */
	sigv4_chunks_free(&c);
	buf_free(&in);
	buf_free(&out);
	buf_free(&again);
}

TEST(test_chunks_hostile)
{
	unsigned char key[32];
	struct sigv4_chunks c;
	struct buf in, out;
	char err[128];
	size_t i;
	static const char *bad[] = {
		/* a bare LF, no signature, a short one, upper-case hex signature */
		"0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\n\r\n",
		"0\r\n\r\n",
		"0;chunk-signature=b6c6\r\n\r\n",
		"0;chunk-signature=B6C6EA8A5354EAF15B3CB7646744F4275B71EA724FED81CEB9323E279D449DF9\r\n\r\n",
		/* a size past the bound, an overlong size, a size of no digits */
		"1000000;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n",
		"0000000000000000001;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n",
		";chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n",
		/* data not ended by CRLF */
		"1;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\nax\n",
	};

	sigv4_key(DOC_SECRET, "20130524", "us-east-1", "s3", key);
	buf_init(&out, 1 << 20);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sigv4_chunks_init(&c, key, DOC_SEED, key, DOC_SEED, DOC_DATE, DOC_SCOPE);
		err[0] = '\0';
		CHECK_INT(sigv4_chunks_feed(&c, bad[i], strlen(bad[i]), &out, err, sizeof(err)), -1);
		CHECK(err[0] != '\0');
		sigv4_chunks_free(&c);
	}
	/* a chunk whose signature is not the client's chain: refused, nothing written */
	buf_init(&in, 1 << 20);
	doc_body(&in);
	in.p[100] = 'b';
	buf_reset(&out);
	sigv4_chunks_init(&c, key, DOC_SEED, key, DOC_SEED, DOC_DATE, DOC_SCOPE);
	CHECK_INT(sigv4_chunks_feed(&c, in.p, in.len, &out, err, sizeof(err)), -1);
	CHECK(strstr(err, "does not verify") != NULL);
	CHECK_INT(out.len, 0);
	sigv4_chunks_free(&c);
	/* the chunks out of order (the second first): the chain breaks */
	buf_reset(&in);
	doc_body(&in);
	buf_reset(&out);
	sigv4_chunks_init(&c, key, DOC_SEED, key, DOC_SEED, DOC_DATE, DOC_SCOPE);
	{
		size_t first = strlen("10000;chunk-signature=") + 64 + 2 + 65536 + 2;
		CHECK_INT(sigv4_chunks_feed(&c, in.p + first, in.len - first, &out, err, sizeof(err)), -1);
	}
	sigv4_chunks_free(&c);
	/* bytes after the final chunk */
	buf_reset(&in);
	doc_body(&in);
	CHECK(buf_add(&in, "x", 1) == 0);
	sigv4_chunks_init(&c, key, DOC_SEED, key, DOC_SEED, DOC_DATE, DOC_SCOPE);
	CHECK_INT(sigv4_chunks_feed(&c, in.p, in.len, &out, err, sizeof(err)), -1);
	sigv4_chunks_free(&c);
	buf_free(&in);
	buf_free(&out);
}

/* A name added to SignedHeaders where it sorts (the session token the proxy adds). */
TEST(test_signed_add)
{
	static const struct {
		const char *in, *name, *out;
		int rc;
	} t[] = {
		{ "host;x-amz-content-sha256;x-amz-date", "x-amz-security-token",
		    "host;x-amz-content-sha256;x-amz-date;x-amz-security-token", 0 },
		{ "host;x-amz-date;x-amz-target", "x-amz-security-token",
		    "host;x-amz-date;x-amz-security-token;x-amz-target", 0 },
		{ "x-amz-target", "host", "host;x-amz-target", 0 },
		{ "host", "host", "host", 0 },			/* already there */
		{ "", "host", "host", 0 },
		{ "x-amz-date-x", "x-amz-date", "x-amz-date;x-amz-date-x", 0 },	/* a prefix sorts first */
		{ "x-amz", "x-amz-date", "x-amz;x-amz-date", 0 },
		{ "host;x-amz-date", "x-amz-security-token", NULL, -1 },	/* no room (cap 24) */
	};
	char sh[80];
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(sh, sizeof(sh), "%s", t[i].in);
		CHECK_INT(sigv4_signed_add(sh, t[i].rc == -1 ? 24 : sizeof(sh), t[i].name),
		    t[i].rc);
		if (t[i].out != NULL)
			CHECK(strcmp(sh, t[i].out) == 0);
		else
			CHECK(strcmp(sh, t[i].in) == 0);	/* untouched */
	}
}

TEST(test_signed_del)
{
	static const struct { const char *in, *name, *out; int rc; } t[] = {
		{ "content-type;expect;host", "expect", "content-type;host", 1 },
		{ "expect;host", "expect", "host", 1 },
		{ "host;x-amz-date;expect", "expect", "host;x-amz-date", 1 },
		{ "expect", "expect", "", 1 },
		{ "expected;host", "expect", "expected;host", 0 },
		{ "host;x-expect", "expect", "host;x-expect", 0 },
		{ "", "expect", "", 0 },
	};
	char sh[64];
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		snprintf(sh, sizeof(sh), "%s", t[i].in);
		CHECK_INT(sigv4_signed_del(sh, t[i].name), t[i].rc);
		CHECK_STR(sh, t[i].out);
	}
}

/*
 * A presigned URL (the query form), AWS's documented example (S3 API
 * reference, "Authenticating Requests: Using Query Parameters"): made with
 * a placeholder key id, written again with the real one, its signature
 * left out; signed with the documented key it is the documented URL.
 */
TEST(test_presign_documented)
{
	static const char target[] = "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
	    "&X-Amz-Credential=PXCAAAAAAAAAAAAAAAAAAAAAAAAAAAAA%2F20130524%2Fus-east-1%2Fs3%2F"
	    "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400"
	    "&X-Amz-SignedHeaders=host&X-Amz-Signature="
	    "0000000000000000000000000000000000000000000000000000000000000000";
	const char *q = strchr(target, '?') + 1;
	struct sigv4_auth a;
	struct sigv4_field f = { "host", "examplebucket.s3.amazonaws.com", 4, 30 };
	struct sigv4_req r;
	struct buf t, creq;
	unsigned char key[32];
	char amz[17], err[200], scope[200], sig[65];

	CHECK_INT(sigv4_presign_parse(q, strlen(q), &a, amz, err, sizeof(err)), 0);
	CHECK_STR(a.akid, "PXCAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
	CHECK_STR(a.region, "us-east-1");
	CHECK_STR(a.signed_headers, "host");
	CHECK_STR(amz, "20130524T000000Z");
	buf_init(&t, 1024);
	buf_init(&creq, 4096);
	CHECK_INT(sigv4_presign_target(target, strlen(target), "AKIAIOSFODNN7EXAMPLE", &t), 0);
	CHECK(buf_add(&t, "", 1) == 0);
	CHECK_STR(t.p, "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
	    "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
	    "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host");
	memset(&r, 0, sizeof(r));
	r.method = "GET";
	r.target = t.p;
	r.tl = t.len - 1;
	r.f = &f;
	r.nf = 1;
	r.payload_hash = "UNSIGNED-PAYLOAD";
	r.s3 = 1;
	CHECK_INT(sigv4_canonical(&r, a.signed_headers, &creq, err, sizeof(err)), 0);
	sigv4_key(DOC_SECRET, a.date, a.region, a.service, key);
	sigv4_scope(&a, scope, sizeof(scope));
	sigv4_sign(key, amz, scope, creq.p, creq.len, sig);
	CHECK_STR(sig, "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
	buf_free(&t);
	buf_free(&creq);
}

/* Not presigned, malformed, repeated, SigV4a: each told apart. */
TEST(test_presign_refusals)
{
	static const struct { const char *q; int rc; } t[] = {
		{ "a=b&c=d", 1 },
		{ "", 1 },
		{ "X-Amz-Signature=00", -1 },	/* the rest missing */
		{ "X-Amz-Algorithm=AWS4-ECDSA-P256-SHA256&X-Amz-Credential=AKIDAKIDAKIDAKID%2F20130524"
		  "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-SignedHeaders=host&X-Amz-Date=20130524T000000Z"
		  "&X-Amz-Signature=0000000000000000000000000000000000000000000000000000000000000000",
		  -2 },
		{ "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDAKIDAKIDAKID%2F20130524"
		  "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-SignedHeaders=host&X-Amz-Date=20130525T000000Z"
		  "&X-Amz-Signature=0000000000000000000000000000000000000000000000000000000000000000",
		  -1 },	/* a date of another day */
		{ "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDAKIDAKIDAKID%2F20130524"
		  "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-SignedHeaders=host&X-Amz-Date=20130524T000000Z"
		  "&X-Amz-Signature=0000000000000000000000000000000000000000000000000000000000000000"
		  "&X-Amz-Signature=00", -1 },	/* twice */
		{ "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%00AKIDAKIDAKID%2F20130524"
		  "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-SignedHeaders=host&X-Amz-Date=20130524T000000Z"
		  "&X-Amz-Signature=0000000000000000000000000000000000000000000000000000000000000000",
		  -1 },	/* a NUL in it */
		{ "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDAKIDAKIDAKID%2F20130524"
		  "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-SignedHeaders=host&X-Amz-Date=20130524T000000Z"
		  "&X-Amz-Signature=000000000000000000000000000000000000000000000000000000000000000%", -1 },
	};
	struct sigv4_auth a;
	char amz[17], err[200];
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		err[0] = '\0';
		CHECK_INT(sigv4_presign_parse(t[i].q, strlen(t[i].q), &a, amz, err, sizeof(err)),
		    t[i].rc);
		if (t[i].rc < 0)
			CHECK(err[0] != '\0');
	}
}

int
main(void)
{
	RUN(test_vectors);
	RUN(test_auth_parse);
	RUN(test_canonical_refusals);
	RUN(test_canonical_segments);
	RUN(test_chunks_documented);
	RUN(test_chunks_hostile);
	RUN(test_signed_add);
	RUN(test_signed_del);
	RUN(test_presign_documented);
	RUN(test_presign_refusals);
	return unit_done();
}
