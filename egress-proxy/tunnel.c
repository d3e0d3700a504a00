/*
 * tunnel.c: a blind tunnel (CS_TUNNEL), the relay after a CONNECT the
 * addons let through untouched. It relays bytes both ways with backpressure
 * (a side is not read while the other has buffers.high_watermark unsent)
 * and passes a half-close on. A tunnel is never left but by conn_kill, so
 * its callbacks are its own and call only conn.c (and upool.c's upool_kick);
 * its audit line is written at the close (conn_kill, connaudit_tunnel).
 */
#include <stddef.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "evrelay.h"
#include "proxy_int.h"
#include "sandbox.h"
#include "util.h"

static void tun_cl_read(struct bufferevent *, void *);
static void tun_up_read(struct bufferevent *, void *);
static void tun_up_write(struct bufferevent *, void *);
static void tun_cl_write(struct bufferevent *, void *);
static void tun_cl_event(struct bufferevent *, short, void *);
static void tun_up_event(struct bufferevent *, short, void *);

/*
 * c's upstream is connected (not TLS) and the client's 200 is queued: bytes
 * both ways from now on, until conn_kill.
 */
void
tunnel_start(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	size_t hwm = (size_t)the_proxy.conf->high_watermark;

	c->st = CS_TUNNEL;
	c->tunnel_open = 1;
	c->deadline = 0;
	bufferevent_setcb(c->cl, tun_cl_read, tun_cl_write, tun_cl_event, c);
	bufferevent_setcb(c->up, tun_up_read, tun_up_write, tun_up_event, c);
	bufferevent_setwatermark(c->cl, EV_READ, 0, hwm);
	bufferevent_setwatermark(c->up, EV_READ, 0, hwm);
	bufferevent_setwatermark(c->cl, EV_WRITE, hwm / 2, 0);
	bufferevent_setwatermark(c->up, EV_WRITE, hwm / 2, 0);
	/* Bulk: fewer, larger reads and writes than libevent's 16 KiB. */
	bufferevent_set_max_single_read(c->cl, hwm);
	bufferevent_set_max_single_read(c->up, hwm);
	bufferevent_set_max_single_write(c->cl, hwm);
	bufferevent_set_max_single_write(c->up, hwm);
	/* Bytes the client sent after CONNECT go first. */
	if (evbuffer_get_length(in) > 0) {
		c->tot_up += evbuffer_get_length(in);
		evbuffer_add_buffer(bufferevent_get_output(c->up), in);
	}
	evrelay_bev_enable(c->cl, EV_READ | EV_WRITE);
	evrelay_bev_enable(c->up, EV_READ | EV_WRITE);
	if (c->cl_eof) {
		/* The client already half-closed: FIN once its bytes are out. */
		bufferevent_disable(c->cl, EV_READ);
		if (evbuffer_get_length(bufferevent_get_output(c->up)) == 0)
			shutdown(bufferevent_getfd(c->up), SHUT_WR);
		else
			bufferevent_setwatermark(c->up, EV_WRITE, 0, 0);
	}
}

/* Client bytes go up; reading stops while the upstream has hwm unsent. */
static void
tun_cl_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t hwm = (size_t)the_proxy.conf->high_watermark;
	size_t n;

	c->last_active = util_mono_coarse_ms();
	n = evbuffer_get_length(in);
	evbuffer_add_buffer(bufferevent_get_output(c->up), in);
	n += evrelay_tunnel_pull(bev, bufferevent_get_output(c->up), hwm);
	c->tot_up += n;
	atomic_fetch_add(&the_proxy.st.bytes_up, (long)n);
	atomic_fetch_add(&c->sb->bytes_up, (long)n);
	if (c->dead)
		return;
	if (evbuffer_get_length(bufferevent_get_output(c->up)) >= hwm)
		bufferevent_disable(c->cl, EV_READ);
}

/* Upstream bytes go to the client, with the same backpressure. */
static void
tun_up_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer *out = bufferevent_get_output(c->cl);
	size_t hwm = (size_t)the_proxy.conf->high_watermark, n;

	c->last_active = util_mono_coarse_ms();
	n = evbuffer_get_length(in);
	evbuffer_add_buffer(out, in);
	n += evrelay_tunnel_pull(bev, out, hwm);
	c->tot_down += n;
	atomic_fetch_add(&the_proxy.st.bytes_down, (long)n);
	atomic_fetch_add(&c->sb->bytes_down, (long)n);
	if (c->dead)
		return;
	if (evbuffer_get_length(out) >= hwm)
		bufferevent_disable(c->up, EV_READ);
}

/* The upstream's output drained below the low watermark. */
static void
tun_up_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->cl_eof) {
		/* Client half-closed: pass the FIN on once flushed. */
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			shutdown(bufferevent_getfd(bev), SHUT_WR);
		return;
	}
	evrelay_bev_enable(c->cl, EV_READ);
}

/* The client's output drained below the low watermark. */
static void
tun_cl_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->up_eof) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			conn_kill(c);
		return;
	}
	if (c->up != NULL) {
		evrelay_bev_enable(c->up, EV_READ);
		upool_kick(c);
	}
}

/*
 * The client's EOF is a half-close, passed on; an error closes. The
 * client side is the plain socket it sent CONNECT on: no handshake event.
 */
static void
tun_cl_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if (conn_cl_eof(c, what) && c->up != NULL && !c->up_eof) {
		/*
		 * Half-close: flush what the client sent, pass the FIN on,
		 * keep relaying the other way until the upstream closes (or
		 * the idle timeout).
		 */
		bufferevent_disable(c->cl, EV_READ);
		if (evbuffer_get_length(bufferevent_get_output(c->up)) == 0)
			shutdown(bufferevent_getfd(c->up), SHUT_WR);
		else
			bufferevent_setwatermark(c->up, EV_WRITE, 0, 0);
		return;
	}
	conn_kill(c);
}

/* The upstream's EOF or error: flush to the client, then close. */
static void
tun_up_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if ((what & BEV_EVENT_CONNECTED) || !(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	c->up_eof = 1;
	if (evbuffer_get_length(bufferevent_get_output(c->cl)) > 0) {
		/* Flush to the client first (tun_cl_write closes). */
		bufferevent_disable(c->up, EV_READ);
		bufferevent_setwatermark(c->cl, EV_WRITE, 0, 0);
		return;
	}
	conn_kill(c);
}
