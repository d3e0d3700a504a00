/*
 * evrelay.c: bufferevent helpers shared by the egress proxy's tunnels and
 * the app gateway's relay (evrelay.h).
 */
#include <errno.h>
#include <stddef.h>
#include <sys/uio.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/util.h>

#include "evrelay.h"
/*
 * Both run on every event of the hot path: no allocation, no log.
 * evrelay_tunnel_pull reports a read error through src's event callback, as
 * libevent does, which may kill the connection: callers check
 * their own liveness flag after it.
 */

/*
 * bufferevent_enable() for the bits not enabled yet. Enabling EV_WRITE again
 * on an empty output re-adds the write event: one epoll_ctl to add it, a
 * wake-up with nothing to write, one more to remove it, per request.
 */
void
evrelay_bev_enable(struct bufferevent *bev, short what)
{
	short add = (short)(what & ~bufferevent_get_enabled(bev));

	if (add != 0)
		bufferevent_enable(bev, add);
}

/*
 * libevent 2.1 reads at most 4,096 bytes per readable event (one FIONREAD
 * ioctl, one readv and one epoll_wait each), so a blind tunnel moving bulk
 * data cost 3.5 times the CPU per MiB of squid's. After libevent's read,
 * the tunnel pulls what the socket still holds itself, straight into the
 * other side's output, until the socket is drained or dst reaches the high
 * watermark. EOF is left for libevent's next read (it stays readable); a
 * read error is reported through src's event callback. Returns the bytes
 * pulled.
 */
size_t
evrelay_tunnel_pull(struct bufferevent *src, struct evbuffer *dst, size_t hwm)
{
	evutil_socket_t fd = bufferevent_getfd(src);
	struct evbuffer_iovec v[2];
	struct iovec iov[2];
	size_t got = 0, len, room, k;
	ssize_t r;
	int n, i;

	if (fd < 0)
		return 0;
	while ((len = evbuffer_get_length(dst)) < hwm) {
		/*
		 * At most 60 KiB: libevent rounds a chain (data + header) up
		 * to a power of two, and 128 KiB chains went through mmap or
		 * made glibc trim and re-fault its heap per chain.
		 */
		room = hwm - len;
		if (room > 61440)
			room = 61440;
		if ((n = evbuffer_reserve_space(dst, (ev_ssize_t)room, v, 2)) <= 0)
			break;
		for (i = 0; i < n; i++) {
			iov[i].iov_base = v[i].iov_base;
			iov[i].iov_len = v[i].iov_len;
		}
		do
			r = readv(fd, iov, n);
		while (r == -1 && errno == EINTR);
		if (r <= 0) {
			int e = errno;

			evbuffer_commit_space(dst, v, 0);
			if (r == -1 && e != EAGAIN && e != EWOULDBLOCK) {
				EVUTIL_SET_SOCKET_ERROR(e);
				bufferevent_trigger_event(src, BEV_EVENT_READING | BEV_EVENT_ERROR, 0);
			}
			break;
		}
		k = (size_t)r;
		for (i = 0; i < n; i++) {
			if (v[i].iov_len > k)
				v[i].iov_len = k;
			k -= v[i].iov_len;
		}
		evbuffer_commit_space(dst, v, n == 2 && v[1].iov_len > 0 ? 2 : 1);
		got += (size_t)r;
		if ((size_t)r < room)
			break;	/* drained */
	}
	return got;
}
