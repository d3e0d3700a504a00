/*
 * page.c: the gateway's own responses (errors, the token redirect): a
 * small HTML page, never cached, never sniffed.
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "gw.h"
#include "h1.h"
#include "head.h"

/* Appends s HTML-escaped. */
static int
add_esc(struct buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		int r;

		switch (*s) {
		case '<': r = buf_addstr(b, "&lt;"); break;
		case '>': r = buf_addstr(b, "&gt;"); break;
		case '&': r = buf_addstr(b, "&amp;"); break;
		case '"': r = buf_addstr(b, "&quot;"); break;
		case '\'': r = buf_addstr(b, "&#39;"); break;
		default: r = buf_add(b, s, 1); break;
		}
		if (r == -1)
			return -1;
	}
	return 0;
}

int
page_build(struct buf *out, int status, const char *title, const char *text,
    const char *extra, int close)
{
	struct buf body;
	const char *reason = h1_reason(status);
	int r;

	buf_init(&body, 8192);
	r = buf_addstr(&body, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>");
	r |= add_esc(&body, title);
	r |= buf_addstr(&body, "</title></head>\n<body><h1>");
	r |= add_esc(&body, title);
	r |= buf_addstr(&body, "</h1>\n<p>");
	r |= add_esc(&body, text);
	r |= buf_addstr(&body, "</p>\n</body></html>\n");
	if (r != 0) {
		buf_free(&body);
		return -1;
	}
	r = buf_addf(out, "HTTP/1.1 %d %s\r\n"
	    "Content-Type: text/html; charset=utf-8\r\n"
	    "Content-Length: %zu\r\n"
	    "Cache-Control: no-store\r\n"
	    "X-Content-Type-Options: nosniff\r\n"
	    "Referrer-Policy: no-referrer\r\n"
	    "%s%s\r\n", status, reason, body.len,
	    extra != NULL ? extra : "", close ? "Connection: close\r\n" : "");
	if (r == 0)
		r = buf_add(out, body.p, body.len);
	buf_free(&body);
	return r;
}
