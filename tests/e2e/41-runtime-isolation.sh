#!/usr/bin/env bash
# 41-runtime-isolation: two sandboxes cannot see each other's files or
# processes; a sandbox sees no host process and not the state directory;
# root inside is not root outside (files it makes belong to its own host
# uid, host-owned files are not writable, no new user namespaces, seccomp
# refuses the dangerous calls).
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/runtime.sh"
# these checks look at the sandbox's files from the host (upper/, workspace/):
# no disk image (the default one is tested in 43 and 47)
RT_EXTRA_CONF="disk_bytes: 0"
rt_setup
lacks() { ! grep -q -- "$1" <<<"$2"; }

sbx create sb-a >/dev/null && sbx create sb-b >/dev/null || { fail "create" "two sandboxes"; exit 1; }
ua=$(rt_uid sb-a); ub=$(rt_uid sb-b)
check "distinct-host-uids" [ -n "$ua" ] && [ "$ua" != "$ub" ] && [ "$ua" -ge 1000 ]

# ---- files ----
rt_sh sb-a 'echo A-SECRET > /workspace/a.txt; echo A-SECRET > /etc/a.txt; echo A-SECRET > /tmp/a.txt' >/dev/null
out=$(rt_sh sb-b 'ls /workspace /tmp; cat /etc/a.txt 2>&1; grep -rl A-SECRET / --exclude-dir=proc 2>/dev/null; echo end')
check "files-invisible-across" lacks 'a.txt$\|A-SECRET' "$out"
check "files-probe-ran" grep -q '^end$' <<<"$out"

# ---- processes ----
r=$(rt_api sb-a POST /v1/jobs '{"command":"exec sleep 997"}')
check "job-in-a" grep -q '"id"' <<<"$r"
wait_for 10 bash -c "$(declare -f rt_pids); RT_CG=$RT_CG; for p in \$(rt_pids sb-a); do grep -q 'sleep' /proc/\$p/cmdline 2>/dev/null && exit 0; done; exit 1"
out=$(rt_sh sb-b 'ps -o pid,comm; cat /proc/1/comm')
check "no-foreign-sleep" lacks 'sleep' "$out"
# pid 1 is the sandbox's init (agent/nest.c), below the agent and bwrap
check "pid1-is-sandbox-init" [ "$(tail -n1 <<<"$out")" = init ]
n=$(rt_sh sb-b 'ls -d /proc/[0-9]* | wc -l')
check "few-processes-visible" [ "$n" -le 8 ]
out=$(rt_sh sb-b 'ps -o comm' )
check "no-host-processes" lacks 'sandboxctl\|process_api\|systemd\|sshd\|python3' "$out"
hostpid=$$
out=$(rt_sh sb-b "kill -0 $hostpid 2>&1; echo rc=\$?")
check "cannot-signal-host-pid" grep -q 'rc=1' <<<"$out"
out=$(rt_sh sb-a 'ps -o comm')
check "own-job-visible" grep -q 'sleep' <<<"$out"

# ---- the state directory and the host tree ----
out=$(rt_sh sb-b "ls '$RT_STATE' 2>&1; ls '$T' 2>&1; find / -name record.json -not -path '/proc/*' 2>/dev/null; ls /work /root/.ssh /etc/shadow 2>&1; echo end")
check "state-dir-invisible" lacks 'record.json\|sb-a' "$out"
check "host-paths-invisible" [ "$(grep -c 'No such file' <<<"$out")" -ge 4 ]
out=$(rt_sh sb-b 'cat /proc/self/mountinfo')
check "no-host-mount-sources-but-own" lacks 'sb-a' "$out"

# ---- root inside is not root outside ----
rt_sh sb-a 'id -u > /workspace/who; mkdir /workspace/d; echo x > /etc/rootfile' >/dev/null
check "inside-is-root" [ "$(cat "$RT_STATE/sb-a/workspace/who")" = 0 ]
check "workspace-file-owned-by-uid" [ "$(stat -c %u "$RT_STATE/sb-a/workspace/who")" = "$ua" ]
check "workspace-dir-owned-by-uid" [ "$(stat -c %u:%g "$RT_STATE/sb-a/workspace/d")" = "$ua:$ua" ]
check "overlay-file-owned-by-uid" [ "$(stat -c %u "$RT_STATE/sb-a/upper/etc/rootfile")" = "$ua" ]
cpid=$(awk '{print $3}' "$RT_STATE/sb-a/pid")
check "uid-map-range" [ "$(echo $(cat /proc/$cpid/uid_map))" = "0 $ua 65536" ]
check "host-sees-uid" [ "$(stat -c %u /proc/$cpid)" = "$ua" ]
panic0=$(cat /proc/sys/kernel/panic)
out=$(rt_sh sb-a 'echo x > /run/sandbox/sandbox-agent 2>&1; echo 3 > /proc/sys/vm/drop_caches 2>&1; echo b > /proc/sysrq-trigger 2>&1; mknod /tmp/sda b 8 0 2>&1; echo 77 > /proc/sys/kernel/panic 2>&1; echo end')
# the agent's binary is not in the sandbox's view (its /run is its own)
check "agent-binary-out-of-view" grep -q 'sandbox-agent.*\(No such file\|nonexistent\|Read-only\|denied\)' <<<"$out"
check "proc-sys-not-writable" [ "$(grep -c 'Read-only\|denied\|Operation not permitted\|No such file' <<<"$out")" -ge 5 ]
check "host-file-unchanged" [ "$(cat /proc/sys/kernel/panic)" = "$panic0" ]
out=$(rt_sh sb-a 'unshare -U true 2>&1; echo rc=$?')
check "no-nested-userns" grep -q 'rc=[1-9]' <<<"$out"
out=$(rt_sh sb-a 'grep NoNewPrivs /proc/self/status')
check "no-new-privs" grep -q '1' <<<"$out"
out=$(rt_sh sb-a 'grep Seccomp: /proc/self/status')
check "seccomp-on" grep -q '2' <<<"$out"

# ---- seccomp refuses the dangerous calls (static probe from the host) ----
if command -v gcc >/dev/null; then
	cat >"$T/probe.c" <<'C'
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>
#include <sys/syscall.h>
static void t(const char *n, long r) { printf("%s %s\n", n, r == -1 && errno == EPERM ? "EPERM" : r == -1 ? strerror(errno) : "ALLOWED"); }
int main(void) {
	t("bpf", syscall(SYS_bpf, 0, 0, 0));
	t("keyctl", syscall(SYS_keyctl, 0, 0, 0, 0, 0));
	t("add_key", syscall(SYS_add_key, "user", "k", "v", 1, -1));
	t("perf_event_open", syscall(SYS_perf_event_open, 0, 0, -1, -1, 0));
	t("io_uring_setup", syscall(SYS_io_uring_setup, 1, 0));
	t("kexec_load", syscall(SYS_kexec_load, 0, 0, 0, 0));
	t("init_module", syscall(SYS_init_module, 0, 0, ""));
	t("open_by_handle_at", syscall(SYS_open_by_handle_at, -1, 0, 0));
	t("unshare_user", unshare(CLONE_NEWUSER));
	t("x32_getpid", syscall(0x40000000 | 39));
	t("getpid", getpid() > 0 ? 0 : -1);
	return 0;
}
C
	if gcc -static -O1 -o "$T/probe" "$T/probe.c" 2>/dev/null; then
		cp "$T/probe" "$RT_STATE/sb-a/workspace/probe"
		out=$(rt_sh sb-a '/workspace/probe')
		for c in bpf keyctl add_key perf_event_open io_uring_setup kexec_load init_module open_by_handle_at x32_getpid; do
			check "seccomp-$c" grep -q "^$c EPERM" <<<"$out"
		done
		check "seccomp-unshare-user-refused" lacks '^unshare_user ALLOWED' "$out"
		check "seccomp-allows-normal" grep -q '^getpid ALLOWED' <<<"$out"
	else
		fail "seccomp-probe-build" "gcc -static failed"
	fi
else
	fail "seccomp-probe-build" "gcc missing"
fi

# ---- a range of ids per sandbox: image owners and non-root users map ----
check "host-ranges-disjoint" [ $(( ua > ub ? ua - ub : ub - ua )) -ge 65536 ]
IMGU=$T/img-u
cp -a "$RT_BB" "$IMGU" && mkdir -p "$IMGU/home/u" "$IMGU/srv/nob" &&
	chown 1000:1000 "$IMGU/home/u" && chown 65534:65534 "$IMGU/srv/nob" &&
	sbx image add uimg "$IMGU" || fail "uid-image" "could not build the test image"
sbx create --image uimg sb-u >/dev/null || fail "create-uimg"
out=$(rt_sh sb-u 'stat -c %u:%g /home/u /srv/nob /bin | tr "\n" " "')
check "image-owners-keep-ids" [ "$out" = "1000:1000 65534:65534 0:0 " ]
sbx create --image uimg --no-root sb-n >/dev/null || fail "create-nonroot"
un=$(rt_uid sb-n)
out=$(rt_sh sb-n 'id -u; echo one > /workspace/f; mkdir /workspace/d; echo h > /home/u/new; touch /etc/nope 2>&1; stat -c %u:%g /workspace/f /home/u/new')
check "nonroot-is-1000" [ "$(sed -n 1p <<<"$out")" = 1000 ]
check "nonroot-cannot-write-root-files" grep -q 'Permission denied' <<<"$out"
check "nonroot-files-owned-inside" [ "$(tail -n2 <<<"$out" | tr '\n' ' ')" = "1000:1000 1000:1000 " ]
check "nonroot-workspace-host-owner" [ "$(stat -c %u:%g "$RT_STATE/sb-n/workspace/f")" = "$((un + 1000)):$((un + 1000))" ]
check "nonroot-upper-host-owner" [ "$(stat -c %u "$RT_STATE/sb-n/upper/home/u/new")" = "$((un + 1000))" ]
check "image-untouched" [ "$(stat -c %u "$IMGU/home/u")" = 1000 ] && [ ! -e "$IMGU/home/u/new" ]
sbx stop sb-n && sbx start sb-n || fail "nonroot-stop-start"
out=$(rt_sh sb-n 'echo two >> /workspace/f && cat /workspace/f /home/u/new; stat -c %u:%g /workspace/f /workspace/d /home/u/new | tr "\n" " "')
check "nonroot-survives-stop-start" [ "$(head -n3 <<<"$out" | tr '\n' ' ')" = "one two h " ]
check "nonroot-owners-survive" [ "$(tail -n1 <<<"$out")" = "1000:1000 1000:1000 1000:1000 " ]
out=$(rt_sh sb-u 'busybox unshare -U true 2>&1; echo rc=$?')
check "range-still-no-userns" grep -q 'rc=1' <<<"$out"

# ---- the agent out of the sandbox's reach (agent/nest.c) ----
# As root with its capabilities, on the default image (python for the
# system calls): the agent, the job wrappers and bwrap are not in the
# sandbox's pid namespace; its pid 1 ignores SIGSTOP/SIGKILL from inside;
# ptrace, pidfd_getfd and /proc/1/mem of pid 1 are refused (not dumpable,
# in a user namespace where the sandbox has no capability); the sandbox
# still answers afterwards.
IMG=${SANDBOX_DEFAULT_IMAGE_DIR:-/var/lib/sandbox/images/default}
if [ -x "$IMG/usr/bin/python3" ]; then
	sbx image add debian "$IMG"
	sbx create --image debian sb-r >/dev/null || fail "create-debian"
	rt_api sb-r POST /v1/jobs '{"command":"exec sleep 991"}' >/dev/null
	out=$(rt_sh sb-r 'ps -e -o pid=,comm= | tr -s " " | tr "\n" ";"; ls /run/agent /run/sandbox 2>&1 | tr "\n" " "')
	check "agent-not-in-pid-namespace" lacks 'sandbox-agent\|bwrap' "$out"
	check "job-visible-wrapper-not" grep -q 'sleep' <<<"$out"
	check "agent-dirs-out-of-view" grep -q "/run/agent.*No such file" <<<"$out"
	cp "$TOP/tests/fixtures/pid1probe.py" "$RT_STATE/sb-r/workspace/reach.py"
	out=$(rt_sh sb-r 'python3 /workspace/reach.py --signal 2>&1')
	check "reach-as-root-with-caps" grep -q '^caps 00000000a00405fb' <<<"$out"
	check "ptrace-init-refused" grep -q '^ptrace -1 Operation not permitted' <<<"$out"
	check "pidfd-getfd-init-refused" grep -q '^getfd -1 Operation not permitted' <<<"$out"
	check "init-mem-refused" grep -q '^mem Permission denied' <<<"$out"
	check "signals-to-init-delivered-nowhere" grep -q '^signalled' <<<"$out"
	check "sandbox-answers-after" [ "$(rt_sh sb-r 'echo alive; cat /proc/1/comm' | tr '\n' ' ')" = "alive init " ]
	apid=$(pgrep -P "$(awk '{print $3}' "$RT_STATE/sb-r/pid")" | head -n1)
	check "agent-not-stopped" bash -c "grep -q '^State:.*S\|^State:.*R' /proc/$apid/status"
	check "agent-not-dumpable-host-view" [ "$(stat -c %u /proc/$apid)" = "$(rt_uid sb-r)" ]
	out=$(rt_sh sb-r 'unshare -U true 2>&1; echo rc=$?; unshare -p -f true 2>&1; echo rc=$?')
	check "no-userns-below-root" grep -q 'No space left on device' <<<"$out"
	sbx destroy sb-r
else
	fail "agent-out-of-reach" "the default image is missing ($IMG; make image)"
fi
