/*
 * test_agent_proc.c: the agent's process-tree logic (agent/proc.c) on real
 * processes: a snapshot of a tree, then killing only what appeared since
 * (setsid'd, TERM-ignoring and orphaned processes included) while the
 * snapshot's processes and what they start later live on.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../agent/proc.h"
#include "unit.h"

static int report_fd = -1;	/* children write their pids here */
static int go_fd = -1;		/* the old process reads "go" here */

static void
say_pid(void)
{
	pid_t me = getpid();

	if (write(report_fd, &me, sizeof(me)) != (ssize_t)sizeof(me))
		_exit(1);
}

static pid_t
read_pid(int fd)
{
	pid_t p = -1;

	if (read(fd, &p, sizeof(p)) != (ssize_t)sizeof(p))
		return -1;
	return p;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void
forever(void)
{
	for (;;)
		pause();
}

/* Forks a process running fn; returns its pid. */
static pid_t
spawn(void (*fn)(void))
{
	pid_t p = fork();

	if (p == 0) {
		fn();
		_exit(0);
	}
	return p;
}

/* Old: reports itself, after the snapshot (told on go_fd) starts a child. */
static void
old_with_late_child(void)
{
	char c;

	say_pid();
	if (read(go_fd, &c, 1) != 1)
		_exit(1);
	if (fork() == 0) {
		say_pid();
		forever();
	}
	forever();
}

/* Old orphan: a double fork, the middle one exits. */
static void
old_orphan(void)
{
	if (fork() == 0) {
		say_pid();
		forever();
	}
	_exit(0);
}

/* New: a child that setsid()s and ignores SIGTERM. */
static void
new_with_setsid_child(void)
{
	say_pid();
	if (fork() == 0) {
		setsid();
		signal(SIGTERM, SIG_IGN);
		say_pid();
		forever();
	}
	forever();
}

/* New orphan: a double fork with setsid, the middle one exits. */
static void
new_orphan(void)
{
	if (fork() == 0) {
		setsid();
		say_pid();
		forever();
	}
	_exit(0);
}

static int
alive(pid_t p)
{
	return proc_starttime(p) != -1;	/* neither gone nor a zombie */
}

static void
reap_all(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

TEST(test_snapshot_no_children)
{
	struct proc_set s;

	CHECK_INT(proc_snapshot(getpid(), &s), 0);
	CHECK_INT(s.n, 0);
	proc_set_free(&s);
}

TEST(test_kill_only_new)
{
	struct proc_set old;
	pid_t a, a_late, a_orph, b, b_child, c_orph, p;
	int pp[2], go[2], n, i, found;

	CHECK(pipe(pp) == 0);
	CHECK(pipe(go) == 0);
	report_fd = pp[1];
	go_fd = go[0];
	p = spawn(old_with_late_child);
	a = read_pid(pp[0]);
	CHECK_INT(a, p);
	p = spawn(old_orphan);
	a_orph = read_pid(pp[0]);
	waitpid(p, NULL, 0);
	CHECK(proc_snapshot(getpid(), &old) == 0);
	CHECK_INT(old.n, 2);
	for (i = 0, found = 0; i < (int)old.n; i++)
		found += old.v[i].pid == a || old.v[i].pid == a_orph;
	CHECK_INT(found, 2);
	CHECK(write(go[1], "g", 1) == 1);
	a_late = read_pid(pp[0]);	/* the old one's late child */

	/* What starts now is "the command". */
	p = spawn(new_with_setsid_child);
	b = read_pid(pp[0]);
	b_child = read_pid(pp[0]);
	p = spawn(new_orphan);
	c_orph = read_pid(pp[0]);
	waitpid(p, NULL, 0);

	n = proc_kill_tree(getpid(), &old, SIGKILL);
	CHECK(n >= 3);
	reap_all();
	sleep_ms(50);
	reap_all();
	CHECK(!alive(b));
	CHECK(!alive(b_child));
	CHECK(!alive(c_orph));
	CHECK(alive(a));
	CHECK(alive(a_orph));
	CHECK(alive(a_late));
	/* Nothing new is left: a second pass signals nobody. */
	CHECK_INT(proc_kill_tree(getpid(), &old, SIGKILL), 0);

	/* Without a snapshot, the whole tree goes. */
	CHECK(proc_kill_tree(getpid(), NULL, SIGKILL) >= 3);
	reap_all();
	sleep_ms(50);
	reap_all();
	CHECK(!alive(a));
	CHECK(!alive(a_orph));
	CHECK(!alive(a_late));
	CHECK_INT(proc_kill_tree(getpid(), NULL, 0), 0);
	proc_set_free(&old);
	close(pp[0]);
	close(pp[1]);
	close(go[0]);
	close(go[1]);
}

TEST(test_signal_zero_counts)
{
	pid_t p;

	p = spawn(forever);
	sleep_ms(20);
	CHECK_INT(proc_kill_tree(getpid(), NULL, 0), 1);
	CHECK(alive(p));
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	CHECK_INT(proc_kill_tree(getpid(), NULL, 0), 0);
}

int
main(void)
{
	/* Orphans of our children come back to us, as to the agent's shell. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		return 1;
	RUN(test_snapshot_no_children);
	RUN(test_kill_only_new);
	RUN(test_signal_zero_counts);
	return unit_done();
}
