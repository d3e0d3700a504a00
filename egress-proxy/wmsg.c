/*
 * wmsg.c: messages into the worker threads' inboxes (worker.c reads them,
 * inbox_cb). The lowest layer of the engine that crosses threads: files
 * below worker.c (unid.c) post through it without calling worker.c.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "proxy_int.h"
#include "xmalloc.h"

static struct worker *ws;
static int nws;

void
wmsg_init(struct worker *w, int n)
{
	ws = w;
	nws = n;
}

void
wmsg_post(struct worker *w, struct msg *m)
{
	m->next = NULL;
	pthread_mutex_lock(&w->mtx);
	if (w->inbox_tail != NULL)
		w->inbox_tail->next = m;
	else
		w->inbox = m;
	w->inbox_tail = m;
	pthread_mutex_unlock(&w->mtx);
	event_active(w->inbox_ev, EV_READ, 0);
}

void
proxy_evict_src(const struct worker *w, int fam, const unsigned char peer[16])
{
	struct msg *m;
	int i;

	for (i = 0; i < nws; i++) {
		if (&ws[i] == w)
			continue;
		m = xcalloc(1, sizeof(*m));
		m->type = MSG_EVICT_SRC;
		m->fd = fam;
		memcpy(m->peer, peer, sizeof(m->peer));
		wmsg_post(&ws[i], m);
	}
}
