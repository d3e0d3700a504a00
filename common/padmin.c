/* padmin.c: SOCK_SEQPACKET client for the proxy admin socket. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "padmin.h"

int
padmin_call(const char *path, const char *json, int fd, char *reply,
    size_t replylen, int timeout_ms, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	struct msghdr msg;
	struct iovec iov;
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct pollfd pfd;
	size_t len = strlen(json);
	ssize_t n;
	int s, rc = -1;

	if (len > PADMIN_MAX_MSG || replylen == 0) {
		snprintf(err, errlen, "admin request too large");
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "admin socket path too long: %s", path);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(s, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		snprintf(err, errlen, "connect %s: %s", path, strerror(errno));
		goto out;
	}
	memset(&msg, 0, sizeof(msg));
	iov.iov_base = (void *)json;
	iov.iov_len = len;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd != -1) {
		struct cmsghdr *c;
		memset(&cm, 0, sizeof(cm));
		msg.msg_control = cm.buf;
		msg.msg_controllen = sizeof(cm.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (sendmsg(s, &msg, MSG_NOSIGNAL) == -1) {
		snprintf(err, errlen, "send to %s: %s", path, strerror(errno));
		goto out;
	}
	pfd.fd = s;
	pfd.events = POLLIN;
	for (;;) {
		int p = poll(&pfd, 1, timeout_ms);
		if (p == -1 && errno == EINTR)
			continue;
		if (p == 0) {
			snprintf(err, errlen, "no reply from %s in %d ms", path, timeout_ms);
			goto out;
		}
		if (p == -1) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			goto out;
		}
		break;
	}
	n = recv(s, reply, replylen - 1, 0);
	if (n <= 0) {
		snprintf(err, errlen, "admin reply from %s: %s", path,
		    n == 0 ? "connection closed" : strerror(errno));
		goto out;
	}
	reply[n] = '\0';
	rc = 0;
out:
	close(s);
	return rc;
}
