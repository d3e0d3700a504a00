/*
 * canon.c: CONNECT target canonicalisation (see canon.h for the rules).
 */
#include <arpa/inet.h>
#include <idn2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"

/* One inet_aton part: decimal, 0-prefixed octal or 0x hex. */
static int
aton_part(const char *s, size_t n, unsigned long long *out)
{
	unsigned long long v = 0;
	unsigned base = 10, d;
	size_t i = 0;

	if (n == 0)
		return -1;
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
		if (n == 2)	/* "0x" alone is 0 for inet_aton; refuse */
			return -1;
	} else if (n >= 2 && s[0] == '0') {
		base = 8;
		i = 1;
	}
	for (; i < n; i++) {
		char c = s[i];
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -1;
		if (d >= base)
			return -1;
		v = v * base + d;
		if (v > 0xffffffffULL)
			return -1;
	}
	*out = v;
	return 0;
}

int
canon_ipv4(const char *s, size_t len, uint32_t *out)
{
	unsigned long long part[4];
	size_t np = 0, i, start = 0;
	uint32_t v;

	if (len == 0 || len > 64)
		return -1;
	for (i = 0; i <= len; i++) {
		if (i == len || s[i] == '.') {
			if (np == 4)
				return -1;
			if (aton_part(s + start, i - start, &part[np]) == -1)
				return -1;
			np++;
			start = i + 1;
		}
	}
	switch (np) {
	case 1:
		v = (uint32_t)part[0];
		break;
	case 2:
		if (part[0] > 255 || part[1] > 0xffffff)
			return -1;
		v = (uint32_t)(part[0] << 24 | part[1]);
		break;
	case 3:
		if (part[0] > 255 || part[1] > 255 || part[2] > 0xffff)
			return -1;
		v = (uint32_t)(part[0] << 24 | part[1] << 16 | part[2]);
		break;
	default:
		if (part[0] > 255 || part[1] > 255 || part[2] > 255 || part[3] > 255)
			return -1;
		v = (uint32_t)(part[0] << 24 | part[1] << 16 | part[2] << 8 | part[3]);
		break;
	}
	*out = v;
	return 0;
}

/* Does the last label look like a number (so the name means an address)? */
static int
ends_in_number(const char *s, size_t n)
{
	size_t i = n, start;

	while (i > 0 && s[i - 1] != '.')
		i--;
	start = i;
	if (start == n)
		return 0;
	if (n - start >= 2 && s[start] == '0' && (s[start + 1] == 'x' ||
	    s[start + 1] == 'X')) {
		for (i = start + 2; i < n; i++)
			if (strchr("0123456789abcdefABCDEF", s[i]) == NULL)
				return 0;
		return 1;
	}
	for (i = start; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static void
finish(struct target *t)
{
	if (t->kind == CANON_IPV6) {
		snprintf(t->hostport, sizeof(t->hostport), "[%s]:%u", t->host, t->port);
		snprintf(t->hosthdr, sizeof(t->hosthdr), "[%s]", t->host);
	} else {
		snprintf(t->hostport, sizeof(t->hostport), "%s:%u", t->host, t->port);
		snprintf(t->hosthdr, sizeof(t->hosthdr), "%s", t->host);
	}
	if (t->port != 443 && t->port != 80) {
		size_t n = strlen(t->hosthdr);
		snprintf(t->hosthdr + n, sizeof(t->hosthdr) - n, ":%u", t->port);
	}
}

static int
err_set(char *err, size_t errlen, const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	return -1;
}

int
canon_host(const char *in, size_t len, uint16_t port, struct target *t,
    char *err, size_t errlen)
{
	char name[1024], *ace = NULL;
	struct in6_addr a6;
	uint32_t v4;
	size_t i, n, lab;
	int nonascii = 0, rc;

	memset(t, 0, sizeof(*t));
	t->port = port;
	if (port == 0)
		return err_set(err, errlen, "port out of range");
	if (len == 0)
		return err_set(err, errlen, "empty host");
	if (len >= sizeof(name))
		return err_set(err, errlen, "host too long");
	if (in[0] == '[') {
		if (len < 3 || in[len - 1] != ']' || len - 2 >= 64)
			return err_set(err, errlen, "bad IPv6 literal");
		memcpy(name, in + 1, len - 2);
		name[len - 2] = '\0';
		if (memchr(name, '%', len - 2) != NULL)
			return err_set(err, errlen, "IPv6 zone ids are not allowed");
		if (inet_pton(AF_INET6, name, &a6) != 1)
			return err_set(err, errlen, "bad IPv6 literal");
		if (inet_ntop(AF_INET6, &a6, t->host, sizeof(t->host)) == NULL)
			return err_set(err, errlen, "bad IPv6 literal");
		t->kind = CANON_IPV6;
		finish(t);
		return 0;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == '\0')
			return err_set(err, errlen, "NUL in host");
		if (c >= 0x80)
			nonascii = 1;
		else if (c <= 0x20 || c == 0x7f)
			return err_set(err, errlen, "control or space in host");
	}
	memcpy(name, in, len);
	name[len] = '\0';
	n = len;
	if (nonascii) {
		rc = idn2_to_ascii_8z(name, &ace, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
		if (rc != IDN2_OK) {
			rc = idn2_to_ascii_8z(name, &ace, IDN2_TRANSITIONAL | IDN2_NFC_INPUT);
			if (rc != IDN2_OK) {
				snprintf(err, errlen, "bad international name: %s",
				    idn2_strerror(rc));
				return -1;
			}
		}
		n = strlen(ace);
		if (n >= sizeof(name)) {
			idn2_free(ace);
			return err_set(err, errlen, "host too long");
		}
		memcpy(name, ace, n + 1);
		idn2_free(ace);
	}
	for (i = 0; i < n; i++)
		if (name[i] >= 'A' && name[i] <= 'Z')
			name[i] = (char)(name[i] - 'A' + 'a');
	if (n > 0 && name[n - 1] == '.')
		name[--n] = '\0';
	if (n == 0)
		return err_set(err, errlen, "empty host");
	if (ends_in_number(name, n)) {
		if (canon_ipv4(name, n, &v4) == -1)
			return err_set(err, errlen, "bad IPv4 address");
		snprintf(t->host, sizeof(t->host), "%u.%u.%u.%u", v4 >> 24,
		    (v4 >> 16) & 255, (v4 >> 8) & 255, v4 & 255);
		t->kind = CANON_IPV4;
		finish(t);
		return 0;
	}
	if (n > CANON_HOST_MAX)
		return err_set(err, errlen, "host too long");
	lab = 0;
	for (i = 0; i < n; i++) {
		char c = name[i];
		if (c == '.') {
			if (lab == 0)
				return err_set(err, errlen, "empty label in host");
			if (name[i - 1] == '-')
				return err_set(err, errlen, "label ends with '-'");
			lab = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
		    c == '_'))
			return err_set(err, errlen, "bad character in host");
		if (c == '-' && lab == 0)
			return err_set(err, errlen, "label starts with '-'");
		if (++lab > 63)
			return err_set(err, errlen, "label longer than 63");
	}
	if (lab == 0)
		return err_set(err, errlen, "empty label in host");
	if (name[n - 1] == '-')
		return err_set(err, errlen, "label ends with '-'");
	memcpy(t->host, name, n + 1);
	t->kind = CANON_NAME;
	finish(t);
	return 0;
}

int
canon_authority(const char *in, size_t len, struct target *t, char *err,
    size_t errlen)
{
	size_t i, hl;
	unsigned long port = 0;

	memset(t, 0, sizeof(*t));
	for (i = len; i > 0 && in[i - 1] != ':' && in[i - 1] != ']'; i--)
		;
	if (i == 0 || in[i - 1] != ':')
		return err_set(err, errlen, "port missing");
	hl = i - 1;
	if (i == len || len - i > 5)
		return err_set(err, errlen, "bad port");
	for (; i < len; i++) {
		if (in[i] < '0' || in[i] > '9')
			return err_set(err, errlen, "bad port");
		port = port * 10 + (unsigned long)(in[i] - '0');
	}
	if (port == 0 || port > 65535)
		return err_set(err, errlen, "port out of range");
	if (hl > 0 && in[0] != '[' && memchr(in, ':', hl) != NULL)
		return err_set(err, errlen, "IPv6 literal must be bracketed");
	return canon_host(in, hl, (uint16_t)port, t, err, errlen);
}
