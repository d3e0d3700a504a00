/*
 * fsd.c: the agent's file service (fsd.h), the client side and the file
 * helper's life.
 *
 * Nested (nest.h), the operations run in a helper process: a fork of the
 * agent that joins the sandbox's user namespace N3 and mount namespace M3
 * (not its pid namespace P2: sandbox code cannot name, signal or ptrace
 * it), takes the sandbox's ids and capabilities as a command does
 * (nest_child_drop), is not dumpable, holds nothing of the agent's but
 * its end of a SOCK_SEQPACKET socketpair, and dies with the agent
 * (PR_SET_PDEATHSIG). So a path resolves in M3, where /run/agent (the
 * agent's socket and state) does not exist and /run is the sandbox's
 * 64 MiB tmpfs; a file is created with the owner a command would give it;
 * /home/user is writable exactly when a command could write it.
 *
 * The agent keeps the streaming: the helper opens and returns descriptors
 * (SCM_RIGHTS), the agent reads and writes them, and the helper does what
 * needs the sandbox's identity (create, chmod, chown, rename, unlink,
 * stat, listing). The helper runs with the sandbox's identity, so what it
 * sends is hostile input: every message is checked by fswire.c, bounded
 * by FSW_MSG_MAX and FSW_MAX_FDS, matched to its request by sequence
 * number; a descriptor is only read or written, never used to resolve a
 * path, and its type is checked by the caller's own fstat. A helper that
 * breaks the protocol or does not answer within FSD_REPLY_MS is killed
 * (through a pidfd: never a reused pid) and a new one forked for the next
 * call.
 *
 * Without nesting (the fake runtime, Kubernetes) the same operations
 * (fsview.c) run in the agent, and their replies go through the same
 * checks.
 *
 * Rules: one call at a time (the agent is single-threaded); what runs in
 * the helper between fork and its loop is system calls only.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "fsd.h"
#include "fsview.h"
#include "log.h"
#include "nest.h"
#include "proc.h"
#include "util.h"
#include "xmalloc.h"

/* How long the agent waits for the helper's next message: a listing of
 * 100000 entries or a recursive delete of a big tree takes seconds; a
 * helper silent this long is stuck (the agent's loop waits meanwhile). */
#define FSD_REPLY_MS	60000

static struct {
	int		 helper;	/* operations go to a helper process */
	int		 root;		/* without a helper: "/" */
	int		 sock;		/* the helper's socket, -1: none yet */
	int		 pidfd;		/* the helper, for the kill */
	pid_t		 pid;
	uint32_t	 seq;		/* the last request's */
} fsd = { 0, -1, -1, -1, -1, 0 };

/* One call's reply, filled as its messages arrive. */
struct call {
	uint32_t	 seq;
	int		 done;		/* the final message came */
	int		 bad;		/* a message did not add up */
	struct fsw_rep	 rep;
	char		 s1[FSW_STR_MAX + 1], s2[FSW_STR_MAX + 1];
	int		 fds[FSW_MAX_FDS];
	int		 nfds;
	void		(*ent)(void *, const struct fsw_ent *);
	void		*arg;
	int64_t		 nents, maxents;	/* entries taken, asked for */
};

static void
close_fds(const int *fds, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (fds[i] != -1)
			close(fds[i]);
}

/* One reply message (both transports): checked, then taken into cl.
 * The descriptors are taken too (kept with the final message, else
 * closed). A batch holds at least one entry and a listing no more than
 * it asked for, so a helper cannot keep the agent reading. */
static void
on_msg(struct call *cl, const char *p, size_t n, const int *fds, int nfds)
{
	struct fsw_rep h;
	struct fsw_msg m;
	struct fsw_ent e;
	const char *q;
	size_t left;
	int64_t k = 0;
	int r;

	if (cl->done || cl->bad || fsw_rep_parse(p, n, &h, &m) == -1 ||
	    h.seq != cl->seq || nfds > FSW_MAX_FDS ||
	    (h.kind == FSW_K_ENTS && (nfds != 0 || cl->ent == NULL ||
	    h.num < 1))) {
		cl->bad = 1;
		close_fds(fds, nfds);
		return;
	}
	if (h.kind == FSW_K_ENTS) {
		q = m.rest;
		left = m.nrest;
		/* never more than asked for: a helper cannot keep us busy */
		while ((r = fsw_ent_next(&q, &left, &e)) == 1 &&
		    cl->nents < cl->maxents) {
			cl->ent(cl->arg, &e);
			cl->nents++;
			k++;
		}
		if (r != 0 || k != h.num)
			cl->bad = 1;
		return;
	}
	cl->rep = h;
	memcpy(cl->s1, m.s1, m.n1);
	cl->s1[m.n1] = '\0';
	memcpy(cl->s2, m.s2, m.n2);
	cl->s2[m.n2] = '\0';
	if (nfds > 0)
		memcpy(cl->fds, fds, (size_t)nfds * sizeof(int));
	cl->nfds = nfds;
	cl->done = 1;
}

/* Sends one message with its descriptors. 0, or -1 with errno. */
static int
send_msg(int sock, const char *p, size_t n, const int *fds, int nfds)
{
	union {
		struct cmsghdr	 h;
		char		 b[CMSG_SPACE(sizeof(int) * FSW_MAX_FDS)];
	} u;
	struct iovec io = { (void *)p, n };
	struct msghdr m;
	ssize_t k;

	memset(&m, 0, sizeof(m));
	m.msg_iov = &io;
	m.msg_iovlen = 1;
	if (nfds > 0) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		u.h.cmsg_level = SOL_SOCKET;
		u.h.cmsg_type = SCM_RIGHTS;
		u.h.cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(&u.h), fds, sizeof(int) * (size_t)nfds);
	}
	while ((k = sendmsg(sock, &m, MSG_NOSIGNAL)) == -1 && errno == EINTR)
		;
	if (k == -1)
		return -1;
	if ((size_t)k != n) {
		errno = EIO;
		return -1;
	}
	return 0;
}

/*
 * Receives one message into p (FSW_MSG_MAX bytes) and up to FSW_MAX_FDS
 * descriptors (close-on-exec). Its length, 0 at EOF, -1 with errno; a
 * message cut short (too long, too many descriptors) is EPROTO.
 */
static ssize_t
recv_msg(int sock, char *p, int *fds, int *nfds)
{
	union {
		struct cmsghdr	 h;
		char		 b[CMSG_SPACE(sizeof(int) * FSW_MAX_FDS)];
	} u;
	struct iovec io = { p, FSW_MSG_MAX };
	struct cmsghdr *h;
	struct msghdr m;
	size_t k, nk;
	ssize_t n;

	*nfds = 0;
	memset(&m, 0, sizeof(m));
	m.msg_iov = &io;
	m.msg_iovlen = 1;
	m.msg_control = u.b;
	m.msg_controllen = sizeof(u.b);
	while ((n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) == -1 && errno == EINTR)
		;
	if (n == -1)
		return -1;
	for (h = CMSG_FIRSTHDR(&m); h != NULL; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS ||
		    h->cmsg_len < CMSG_LEN(0))
			continue;
		nk = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < nk; k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(h) + k * sizeof(int), sizeof(fd));
			if (*nfds < FSW_MAX_FDS)
				fds[(*nfds)++] = fd;
			else {
				close(fd);
				m.msg_flags |= MSG_CTRUNC;
			}
		}
	}
	if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		close_fds(fds, *nfds);
		*nfds = 0;
		errno = EPROTO;
		return -1;
	}
	return n;
}

/* ---- the helper ---- */

/* The helper's replies: sent, then its copies of the descriptors go. */
static int
helper_emit(void *arg, const char *msg, size_t len, const int *fds, int nfds)
{
	int rc = send_msg(*(int *)arg, msg, len, fds, nfds);

	close_fds(fds, nfds);
	return rc;
}

/* The helper process: into the sandbox's view, then its loop. */
static NORETURN void
helper_main(int sock, pid_t agent)
{
	char *buf;
	int fds[FSW_MAX_FDS], nfds, root, nul;
	sigset_t none;
	ssize_t n;

	if (nest_join_view() == -1)
		_exit(120);
	/* nothing of the agent's: its connections, the namespaces' fds */
	proc_closefrom(3, sock);
	nest_child_drop();
	/* after the drop: a change of credentials resets both */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1 ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1)
		_exit(121);
	if (getppid() != agent)
		_exit(0);		/* the agent went meanwhile */
	(void)prctl(PR_SET_NAME, "agent-files", 0, 0, 0);
	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) == -1)
		_exit(122);
	/* M3's root (setns set it), and the sandbox's /dev/null for stdio:
	 * the agent's stderr is a file on the host */
	if ((root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (nul = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1 ||
	    dup2(nul, 0) == -1 || dup2(nul, 1) == -1 || dup2(nul, 2) == -1)
		_exit(123);
	if (nul > 2)
		close(nul);
	buf = xmalloc(FSW_MSG_MAX);
	for (;;) {
		if ((n = recv_msg(sock, buf, fds, &nfds)) <= 0)
			_exit(n == 0 ? 0 : 124);
		fsview_serve(root, buf, (size_t)n, fds, nfds, helper_emit, &sock);
	}
}

/* Kills the helper (if any) and forgets it; the agent's reap collects it. */
static void
helper_kill(void)
{
	if (fsd.pidfd != -1) {
		(void)syscall(SYS_pidfd_send_signal, fsd.pidfd, SIGKILL, NULL, 0);
		close(fsd.pidfd);
	}
	if (fsd.sock != -1)
		close(fsd.sock);
	fsd.pidfd = -1;
	fsd.sock = -1;
	fsd.pid = -1;
}

/* Forks a helper. 0, or -1 with errno. */
static int
helper_spawn(void)
{
	pid_t agent = getpid(), pid;
	int sv[2], e;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		return -1;
	if ((pid = fork()) == -1) {
		e = errno;
		close(sv[0]);
		close(sv[1]);
		errno = e;
		return -1;
	}
	if (pid == 0) {
		close(sv[0]);
		helper_main(sv[1], agent);
	}
	close(sv[1]);
	fsd.sock = sv[0];
	fsd.pid = pid;
	/* pinned before the loop can reap it: a kill never hits a reused pid */
	if ((fsd.pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) == -1) {
		e = errno;
		kill(pid, SIGKILL);
		close(fsd.sock);
		fsd.sock = -1;
		errno = e;
		return -1;
	}
	log_info("files: helper pid=%d in the sandbox's namespaces", (int)pid);
	return 0;
}

/* A request to the helper and its replies into cl. 0, or -1 with errno
 * (the helper killed when it failed the call). */
static int
helper_call(struct call *cl, const char *req, size_t n, const int *fds,
    int nfds)
{
	struct pollfd pf;
	char *buf;
	int rfds[FSW_MAX_FDS], nr, tries, r;
	ssize_t k;

	for (tries = 0;; tries++) {
		if (fsd.sock == -1 && helper_spawn() == -1) {
			log_warn("files: cannot start the helper");
			return -1;
		}
		if (send_msg(fsd.sock, req, n, fds, nfds) == 0)
			break;
		/* a helper that died since the last call never saw this one */
		r = errno;
		helper_kill();
		if (tries > 0 || (r != EPIPE && r != ECONNRESET && r != ENOTCONN)) {
			errno = r;
			return -1;
		}
	}
	buf = xmalloc(FSW_MSG_MAX);
	while (!cl->done && !cl->bad) {
		pf.fd = fsd.sock;
		pf.events = POLLIN;
		pf.revents = 0;
		while ((r = poll(&pf, 1, FSD_REPLY_MS)) == -1 && errno == EINTR)
			;
		if (r == 0) {
			log_warnx("files: the helper did not answer in %d ms; "
			    "killing it", FSD_REPLY_MS);
			helper_kill();
			free(buf);
			errno = ETIMEDOUT;
			return -1;
		}
		if ((k = recv_msg(fsd.sock, buf, rfds, &nr)) <= 0) {
			log_warnx("files: the helper %s", k == 0 ? "exited" :
			    "sent a message cut short");
			helper_kill();
			free(buf);
			errno = EIO;
			return -1;
		}
		on_msg(cl, buf, (size_t)k, rfds, nr);
	}
	free(buf);
	if (cl->bad) {
		log_warnx("files: the helper sent a malformed reply; killing it");
		helper_kill();
		errno = EIO;
		return -1;
	}
	return 0;
}

/* Without a helper: the replies are taken as they are made. */
static int
inproc_emit(void *arg, const char *msg, size_t len, const int *fds, int nfds)
{
	struct call *cl = arg;

	on_msg(cl, msg, len, fds, nfds);
	return cl->bad ? -1 : 0;
}

static int
inproc_call(struct call *cl, const char *req, size_t n, const int *fds,
    int nfds)
{
	int dup_fds[FSW_MAX_FDS], i;

	/* fsview takes the descriptors it is given: copies of ours */
	for (i = 0; i < nfds; i++)
		if ((dup_fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 0)) == -1) {
			close_fds(dup_fds, i);
			return -1;
		}
	fsview_serve(fsd.root, req, n, dup_fds, nfds, inproc_emit, cl);
	if (!cl->done || cl->bad) {
		errno = EIO;
		return -1;
	}
	return 0;
}

/*
 * One call: the request q with strings s1, s2 (NULL: none) and fds, the
 * replies into cl. 0 when the operation succeeded (cl->fds are the
 * caller's), else -1 with errno and *step (when not NULL).
 */
static int
fsd_call(struct call *cl, struct fsw_req *q, const char *s1, const char *s2,
    const int *fds, int nfds, int *step)
{
	char *req;
	size_t n;
	int rc;

	if (step != NULL)
		*step = FSW_S_NONE;
	if (fsd.root == -1 && !fsd.helper) {
		errno = EAGAIN;
		return -1;
	}
	q->seq = ++fsd.seq;
	cl->seq = q->seq;
	req = xmalloc(FSW_MSG_MAX);
	if ((n = fsw_req_build(req, q, s1, s2)) == 0) {
		free(req);
		errno = ENAMETOOLONG;
		return -1;
	}
	rc = fsd.helper ? helper_call(cl, req, n, fds, nfds) :
	    inproc_call(cl, req, n, fds, nfds);
	free(req);
	if (rc == -1)
		return -1;
	if (cl->rep.rc == -1) {
		close_fds(cl->fds, cl->nfds);
		cl->nfds = 0;
		if (step != NULL)
			*step = (int)cl->rep.step;
		errno = cl->rep.err != 0 ? cl->rep.err : EIO;
		return -1;
	}
	return 0;
}

static void
call_init(struct call *cl)
{
	memset(cl, 0, sizeof(*cl));
}

/* A reply that must carry exactly want descriptors: else closed, EIO. */
static int
want_fds(struct call *cl, int lo, int hi)
{
	if (cl->nfds < lo || cl->nfds > hi) {
		close_fds(cl->fds, cl->nfds);
		cl->nfds = 0;
		errno = EIO;
		return -1;
	}
	return 0;
}

int
fsd_init(char *err, size_t errlen)
{
	if (nest_on()) {
		fsd.helper = 1;
		if (helper_spawn() == -1) {
			snprintf(err, errlen, "the file helper: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	if ((fsd.root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "open /: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int
fsd_in_agent_view(void)
{
	return !fsd.helper;
}

int
fsd_open(const char *path, int *fd)
{
	struct fsw_req q;
	struct call cl;

	memset(&q, 0, sizeof(q));
	q.op = FSW_OPEN;
	call_init(&cl);
	if (fsd_call(&cl, &q, path, NULL, NULL, 0, NULL) == -1 ||
	    want_fds(&cl, 1, 1) == -1)
		return -1;
	*fd = cl.fds[0];
	return 0;
}

int
fsd_stat(const char *path, int nofollow, struct stat *st)
{
	struct fsw_req q;
	struct call cl;

	memset(&q, 0, sizeof(q));
	q.op = FSW_STAT;
	q.flags = nofollow ? FSW_F_NOFOLLOW : 0;
	call_init(&cl);
	if (fsd_call(&cl, &q, path, NULL, NULL, 0, NULL) == -1 ||
	    want_fds(&cl, 0, 0) == -1)
		return -1;
	fsw_st_to(st, &cl.rep.st);
	return 0;
}

/* 1 when fd is open on a regular file (by our own fstat). */
static int
is_reg_fd(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

/* 1 when fd is open on a directory (O_PATH will do). */
static int
is_dir_fd(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

int
fsd_tmp_open(const char *path, int mkparents, int old, struct fsd_tmp *t,
    int *step)
{
	char rnd[17];
	struct fsw_req q;
	struct call cl;

	memset(t, 0, sizeof(*t));
	t->dir = t->fd = t->old = -1;
	memset(&q, 0, sizeof(q));
	q.op = FSW_TMP;
	q.flags = (mkparents ? FSW_F_MKPARENTS : 0) | (old ? FSW_F_OLD : 0);
	agent_random_hex(rnd, 8);
	call_init(&cl);
	if (fsd_call(&cl, &q, path, rnd, NULL, 0, step) == -1 ||
	    want_fds(&cl, 2, 3) == -1)
		return -1;
	t->dir = cl.fds[0];
	t->fd = cl.fds[1];
	t->old = cl.nfds == 3 ? cl.fds[2] : -1;
	t->have = (cl.rep.flags & FSW_R_HAVE) != 0;
	if (t->have)
		fsw_st_to(&t->st, &cl.rep.st);
	/* names as op_tmp makes them; descriptors as they must be */
	if (strlen(cl.s1) > NAME_MAX || strlen(cl.s2) > NAME_MAX ||
	    cl.s1[0] != '.' || strchr(cl.s1, '/') != NULL || cl.s2[0] == '\0' ||
	    strchr(cl.s2, '/') != NULL || !is_dir_fd(t->dir) || !is_reg_fd(t->fd) ||
	    (t->old != -1 && !is_reg_fd(t->old)) || (old && t->have &&
	    t->old == -1) || (!t->have && t->old != -1)) {
		close_fds(cl.fds, cl.nfds);
		memset(t, 0, sizeof(*t));
		t->dir = t->fd = t->old = -1;
		log_warnx("files: the helper's write reply does not add up");
		helper_kill();
		errno = EIO;
		if (step != NULL)
			*step = FSW_S_NONE;
		return -1;
	}
	memcpy(t->tmp, cl.s1, strlen(cl.s1) + 1);
	memcpy(t->name, cl.s2, strlen(cl.s2) + 1);
	return 0;
}

int
fsd_tmp_commit(struct fsd_tmp *t, int mode, int *step)
{
	struct fsw_req q;
	struct call cl;
	int fds[2], e;

	if (step != NULL)
		*step = FSW_S_NONE;
	/* the agent's own: fsync needs no right to the file */
	if (fsync(t->fd) == -1) {
		e = errno;
		fsd_tmp_cancel(t);
		errno = e;
		return -1;
	}
	memset(&q, 0, sizeof(q));
	q.op = FSW_COMMIT;
	q.mode = (uint32_t)(mode >= 0 ? mode : t->have ?
	    (int)(t->st.st_mode & 07777) : 0644);
	if (t->have) {
		q.flags = FSW_F_HAVE;
		q.uid = (uint32_t)t->st.st_uid;
		q.gid = (uint32_t)t->st.st_gid;
	}
	fds[0] = t->dir;
	fds[1] = t->fd;
	call_init(&cl);
	if (fsd_call(&cl, &q, t->tmp, t->name, fds, 2, step) == -1) {
		e = errno;
		fsd_tmp_cancel(t);
		errno = e;
		return -1;
	}
	close_fds(cl.fds, cl.nfds);
	t->tmp[0] = '\0';	/* it is the target now */
	return 0;
}

void
fsd_tmp_cancel(struct fsd_tmp *t)
{
	struct fsw_req q;
	struct call cl;

	if (t->dir != -1 && t->tmp[0] != '\0') {
		memset(&q, 0, sizeof(q));
		q.op = FSW_CANCEL;
		call_init(&cl);
		if (fsd_call(&cl, &q, t->tmp, NULL, &t->dir, 1, NULL) == -1)
			log_warn("files: removing the temporary file %s",
			    t->tmp);
		else
			close_fds(cl.fds, cl.nfds);
	}
	t->tmp[0] = '\0';
	fsd_tmp_close(t);
}

void
fsd_tmp_close(struct fsd_tmp *t)
{
	if (t->fd != -1)
		close(t->fd);
	if (t->old != -1)
		close(t->old);
	if (t->dir != -1)
		close(t->dir);
	t->fd = t->old = t->dir = -1;
}

int
fsd_list(const char *path, int flags, int depth, long long max,
    void (*cb)(void *, const struct fsw_ent *), void *arg, struct stat *top,
    int *trunc)
{
	struct fsw_req q;
	struct call cl;

	memset(&q, 0, sizeof(q));
	q.op = FSW_LIST;
	q.flags = (uint32_t)flags & (FSW_F_RECURSIVE | FSW_F_NOHIDDEN);
	q.depth = depth > 0 ? (uint32_t)depth : 0;
	q.max = max;
	call_init(&cl);
	cl.ent = cb;
	cl.arg = arg;
	cl.maxents = q.max;
	if (fsd_call(&cl, &q, path, NULL, NULL, 0, NULL) == -1 ||
	    want_fds(&cl, 0, 0) == -1)
		return -1;
	fsw_st_to(top, &cl.rep.st);
	*trunc = (cl.rep.flags & FSW_R_TRUNC) != 0;
	return 0;
}

int
fsd_delete(const char *path, int recursive, long long *n, char *ent,
    size_t entlen, int *step)
{
	struct fsw_req q;
	struct call cl;
	int rc;

	memset(&q, 0, sizeof(q));
	q.op = FSW_DELETE;
	q.flags = recursive ? FSW_F_RECURSIVE : 0;
	call_init(&cl);
	rc = fsd_call(&cl, &q, path, NULL, NULL, 0, step);
	*n = cl.done ? (long long)cl.rep.num : 0;
	snprintf(ent, entlen, "%s", cl.done ? cl.s1 : "");
	if (rc == 0 && want_fds(&cl, 0, 0) == -1)
		return -1;
	return rc;
}
