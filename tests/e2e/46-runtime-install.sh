#!/usr/bin/env bash
# 46-runtime-install: a sandbox from the default Debian image (`make image`)
# installs packages as root from an internal mirror, through its egress
# proxy, the way an operator would set it up: apt-get update/install of a
# signed suite (a Depends and a postinst doing useradd + chown), dpkg -i of a
# local .deb, useradd/su/chown, pip install of a wheel into the system
# site-packages, and npm install -g of a tarball (and the registry protocol
# fetched with curl inside; the host's npm through the same proxy with a
# registered credential). The mirror (tests/lib/mirror.sh, built offline, nginx on a loopback
# address of its own) is admitted by upstream.allow_cidrs for that one
# address and a `resolve` entry for its name; an addon allows only it (plain
# HTTP), so nothing can reach the internet. The proxy's audit log must show
# every request passed through untouched, no credential injected, and the
# mirror must have seen exactly those requests.
#
# Then what must keep holding once sandbox root has capabilities: the
# capability set exactly CAP_SET below (and nothing more in the bounding
# set); no mount, module, device node, user/mount/net namespace, signal to a
# host process, cgroup limit change, write into another sandbox or change to
# the shared image; with --no-root (run_as_root: false) no capability and
# not root.
#
# A check that depends on sandbox root holding capabilities says which in
# its failure reason ("root needs CAP_...").
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/runtime.sh"
. "$TOP/tests/lib/mirror.sh"
IMG=${SANDBOX_DEFAULT_IMAGE_DIR:-/var/lib/sandbox/images/default}
if [ ! -x "$IMG/usr/bin/apt-get" ] || [ ! -x "$IMG/usr/bin/pip3" ]; then
	fail "runtime-install" "default image not built ($IMG; make test builds it: scripts/build-image.sh)"
	exit 1
fi
PROXY=$BIN/egress-proxy/egress-proxy
[ -x "$PROXY" ] || { fail "egress-proxy-built" "$PROXY missing (make)"; exit 1; }
for c in dpkg-deb dpkg-scanpackages gpg nginx gcc; do
	command -v "$c" >/dev/null || { fail "tool-$c" "$c missing (make deps: deps/mirror-tests.txt)"; exit 1; }
done

# The capability set of sandbox root (docs/local-runtime.md). 0xa00405fb;
# Docker's default set (0xa80425fb) has NET_RAW and MKNOD besides.
CAP_SET="chown dac_override fowner fsetid kill setgid setuid setpcap net_bind_service sys_chroot audit_write setfcap"
declare -A CAPNUM=([chown]=0 [dac_override]=1 [fowner]=3 [fsetid]=4 [kill]=5 [setgid]=6
	[setuid]=7 [setpcap]=8 [net_bind_service]=10 [sys_chroot]=18 [audit_write]=29 [setfcap]=31)
CAP_WANT=0
for c in $CAP_SET; do CAP_WANT=$((CAP_WANT | (1 << CAPNUM[$c]))); done
CAP_WANT=$(printf '%016x' "$CAP_WANT")
capnames() { capsh --decode="$1" 2>/dev/null | sed 's/.*=//'; }

M=mirror.e2e.test		# the mirror's name, as sandboxes use it (port 80)
MADDR=127.0.0.77		# its address: one of its own, the only one allowed

# ---- the mirror: built offline, checked from the host ----
mirror_build || { fail "mirror-build"; exit 1; }
ok "mirror-build"
mirror_start "$MADDR" || { fail "mirror-start" "$(tail -3 "$MIRROR_DIR/nginx/error.log" 2>/dev/null)"; exit 1; }
mirror_selfcheck

# ---- the egress proxy: only the mirror, plain HTTP ----
cat >"$T/mirror.lua" <<LUA
-- only the internal mirror, and only plain HTTP (no credential ever)
local M = { name = "e2e-mirror" }
-- (lo.e2e.test and ten.e2e.test: names the addon allows at addresses it must not reach)
local allowed = { ["$M"] = true, ["lo.e2e.test"] = true, ["ten.e2e.test"] = true }
function M.on_connect(ctx)
  if ctx.plain and ctx.port == 80 and allowed[ctx.host] then return "tunnel" end
  return "deny", "only the internal mirror", 403
end
return M
LUA
PP=$(free_port)
cat >"$T/p.yaml" <<YAML
listen: 127.0.0.1:$PP
admin:
  socket: $T/admin.sock
ca: {cert: $T/ca.crt, key: $T/ca.key}
upstream:
  allow_cidrs: [$MADDR/32]
resolve:
  "$M:80": "$MADDR:$MIRROR_PORT"
  "lo.e2e.test:80": "127.0.0.1:$MIRROR_HOSTONLY_PORT"
  "ten.e2e.test:80": "10.255.255.1:80"
default_action: deny
addons: [$T/mirror.lua]
addon_watch: 0
audit: {log: $T/audit.jsonl}
YAML
"$PROXY" -d -f "$T/p.yaml" >"$T/proxy.log" 2>&1 & track_pid $!
PROXY_PID=$!
wait_port "$PP" 20 && wait_for 10 test -S "$T/admin.sock" ||
	{ fail "proxy-start" "$(tail -5 "$T/proxy.log")"; exit 1; }

# files go into $RT_STATE/sb-m/workspace from the host: no disk image
RT_EXTRA_CONF="proxy_admin_socket: $T/admin.sock
  proxy_ca_cert: $T/ca.crt
  disk_bytes: 0"
rt_setup
sbx image add debian "$IMG" || { fail "image-add-debian"; exit 1; }
sbx create --image debian sb-m >/dev/null || { fail "create-sb-m" "$(tail -3 "$RT_STATE/sb-m/log" 2>/dev/null)"; exit 1; }
sbx create --image debian sb-o >/dev/null || { fail "create-sb-o"; exit 1; }
sbx create --image debian --no-root sb-n >/dev/null || { fail "create-sb-n"; exit 1; }
WS=$RT_STATE/sb-m/workspace
um=$(rt_uid sb-m)
# run CMD in sb-m as root, output and status to $T/NAME.out (the reason of a failed check)
run() { local n=$1; shift; rt_sh sb-m "$@" >"$T/$n.out" 2>&1; echo "rc=$?" >>"$T/$n.out"; }
rc0() { grep -qx 'rc=0' "$T/$1.out"; }
has() { grep -q -- "$2" "$T/$1.out"; }
# expect NAME OUT NEED cmd...: a check; a failure's reason is NEED (what the
# step depends on; may be empty) and the last lines of $T/OUT.out
expect() {
	local name=$1 out=$2 need=$3
	shift 3
	if "$@"; then ok "$name"; else
		fail "$name" "${need:+$need; }$(tail -n 6 "$T/$out.out" 2>/dev/null | tr '\n' ' ')"
	fi
}
NEED_APT="root needs CAP_SETUID, CAP_SETGID and CAP_CHOWN (apt hands downloads to _apt)"
NEED_PI="root needs CAP_CHOWN (useradd rewrites root:shadow /etc/shadow; chown to e2ehello)"
NEED_DPKG="root needs CAP_CHOWN and CAP_FSETID (dpkg sets root:staff and the setgid bit)"
NEED_USER="root needs CAP_CHOWN, CAP_SETUID, CAP_SETGID (useradd, chown, su)"

# ---- the proxy path (needs no capability) ----
run curl "curl -sS --max-time 20 http://$M/debian/dists/e2e/Release -o /tmp/Release && sha256sum </tmp/Release"
expect "curl-mirror-through-proxy" curl "" has curl "$(sha256sum <"$MIRROR_WWW/debian/dists/e2e/Release" | cut -c1-64)"
run direct "curl -sS --noproxy '*' --max-time 5 http://$MADDR:$MIRROR_PORT/debian/dists/e2e/Release"
expect "mirror-unreachable-directly" direct "" bash -c "! grep -qx rc=0 '$T/direct.out'"
run hostlo "curl -sS --max-time 10 -w '\nstatus=%{http_code}\n' http://lo.e2e.test/ http://ten.e2e.test/"
expect "host-loopback-refused-by-address" hostlo "" has hostlo 'lo.e2e.test:80 not allowed (proxy-address)'
expect "internal-range-refused-by-address" hostlo "" has hostlo 'ten.e2e.test:80 not allowed (private)'
expect "refusals-are-403" hostlo "" bash -c "[ \$(grep -c '^status=403$' '$T/hostlo.out') = 2 ]"
check "host-loopback-never-reached" not_contains "$MIRROR_LOG" '"GET / HTTP/1.1" 200 host="lo.e2e.test"'
run other "curl -sS --max-time 10 -D - -o /dev/null http://deb.debian.org/debian/; curl -sS --max-time 10 -o /dev/null https://$M/ 2>&1"
expect "other-hosts-denied-by-addon" other "" bash -c "grep -q '^HTTP/1.1 403' '$T/other.out' && grep -qi '^x-proxy-deny-reason: only the internal mirror' '$T/other.out'"
expect "https-connect-denied-by-addon" other "" has other 'CONNECT tunnel failed, response 403'

# ---- apt: the signed suite, as root ----
cp "$MIRROR_KEY" "$WS/e2e-mirror.gpg" && cp "$MIRROR_LOCAL_DEB" "$WS/" && chmod 644 "$WS"/*
run aptkey "install -m 0644 /workspace/e2e-mirror.gpg /etc/apt/trusted.gpg.d/e2e-mirror.gpg &&
	echo 'deb http://$M/debian e2e main' >/etc/apt/sources.list && rm -f /etc/apt/sources.list.d/*"
expect "apt-key-and-sources" aptkey "" rc0 aptkey
run aptupdate "apt-get -q update"
expect "apt-update" aptupdate "$NEED_APT" bash -c "grep -qx rc=0 '$T/aptupdate.out' && ! grep -q '^[EW]:' '$T/aptupdate.out'"
run aptinstall "DEBIAN_FRONTEND=noninteractive apt-get -q -y install e2e-hello"
expect "apt-install" aptinstall "$NEED_APT" rc0 aptinstall
run hello "e2e-hello; dpkg-query -W -f='\${Package} \${Status}\n' e2e-hello-lib; getent passwd e2ehello"
expect "apt-installed-depends" hello "$NEED_APT" has hello '^e2e-hello-lib install ok installed'
expect "e2e-hello-runs" hello "$NEED_APT" has hello '^hello from the e2e mirror$'
expect "postinst-useradd-chown" hello "$NEED_PI" has hello '^state owner: e2ehello:e2ehello$'
expect "postinst-system-user" hello "$NEED_PI" bash -c "awk -F: '\$1==\"e2ehello\" && \$3<1000 {f=1} END {exit !f}' '$T/hello.out'"
run unsigned "echo 'deb http://$M/debian-unsigned e2e main' >/etc/apt/sources.list.d/unsigned.list &&
	apt-get -q update; rm -f /etc/apt/sources.list.d/unsigned.list"
expect "apt-refuses-unsigned" unsigned "$NEED_APT" has unsigned 'debian-unsigned e2e InRelease.*not signed\|The repository .*debian-unsigned e2e Release. is not signed'

# ---- dpkg -i of a local .deb (setgid root:staff file) ----
run dpkg "dpkg -i /workspace/e2e-local_1.0_all.deb && e2e-local && stat -c '%A %U:%G' /usr/lib/e2e-local/tool"
expect "dpkg-i-local" dpkg "$NEED_DPKG" has dpkg '^e2e-local ok$'
expect "dpkg-i-keeps-owner-and-setgid" dpkg "$NEED_DPKG" has dpkg '^-rwxr-sr-x root:staff$'

# ---- useradd, su, chown ----
run users "useradd -m -s /bin/bash e2euser && id -u e2euser && echo data >/workspace/owned &&
	chown e2euser:e2euser /workspace/owned && stat -c 'owner %U:%G' /workspace/owned &&
	su -c 'echo who \$(id -un); grep CapEff /proc/self/status; echo mine >~/f && cat ~/f' e2euser"
expect "useradd" users "$NEED_USER" bash -c "grep -qx '[0-9]*' '$T/users.out'"
expect "chown-to-user" users "$NEED_USER" has users '^owner e2euser:e2euser$'
expect "su-to-user" users "$NEED_USER" has users '^who e2euser$'
expect "su-user-has-no-caps" users "$NEED_USER" has users '^CapEff:[[:space:]]*0000000000000000$'
expect "user-writes-own-home" users "$NEED_USER" has users '^mine$'
eu=$(grep -x '[0-9]*' "$T/users.out" | head -n1)
expect "chown-maps-into-sandbox-range" users "$NEED_USER; host owner $(stat -c %u "$WS/owned" 2>/dev/null), want $um+${eu:-?}" \
	[ "$(stat -c %u "$WS/owned" 2>/dev/null)" = "$((um + ${eu:--1}))" ]

# ---- pip: the wheel into the system site-packages ----
run pip "pip install --break-system-packages --no-index --no-deps --disable-pip-version-check \
	--root-user-action=ignore http://$M/py/$MIRROR_WHEEL &&
	python3 -c 'import e2e_hello_py; print(e2e_hello_py.__file__); e2e_hello_py.main()' && e2e-hello-py"
expect "pip-install-system" pip "" rc0 pip
expect "pip-import-from-system-site" pip "" has pip '^/usr/local/lib/python3[.0-9]*/dist-packages/e2e_hello_py/__init__.py$'
expect "pip-console-script" pip "" bash -c "[ \$(grep -c '^hello from the e2e wheel$' '$T/pip.out') = 2 ]"

# the same wheel found through the mirror's simple index (an http index is
# not a "secure origin" to pip: it needs --trusted-host)
run pipidx "pip download --no-deps --disable-pip-version-check -d /tmp/pd --index-url http://$M/py/simple/ \
	--trusted-host $M e2e-hello-py==1.0 && sha256sum </tmp/pd/$MIRROR_WHEEL"
expect "pip-index-through-proxy" pipidx "" has pipidx "$(sha256sum <"$MIRROR_WWW/py/$MIRROR_WHEEL" | cut -c1-64)"

# ---- npm ----
run npm "npm install -g --no-audit --no-fund http://$M/npm/e2e-hello-npm/-/$MIRROR_NPM_TGZ && e2e-hello-npm"
expect "npm-install-global" npm "" has npm '^hello from the e2e npm package$'
# what npm does on the wire, from inside: the packument, then the tarball, checked by its integrity
run npmwire "curl -sS --max-time 20 http://$M/npm/e2e-hello-npm -o /tmp/p.json &&
	u=\$(python3 -c 'import json; print(json.load(open(\"/tmp/p.json\"))[\"versions\"][\"1.0.0\"][\"dist\"][\"tarball\"])') &&
	curl -sS --max-time 20 \"\$u\" -o /tmp/p.tgz && python3 -c '
import base64, hashlib, json
d = json.load(open(\"/tmp/p.json\"))[\"versions\"][\"1.0.0\"][\"dist\"]
h = \"sha512-\" + base64.b64encode(hashlib.sha512(open(\"/tmp/p.tgz\", \"rb\").read()).digest()).decode()
print(\"integrity\", \"ok\" if h == d[\"integrity\"] else \"MISMATCH\")' && tar -xzOf /tmp/p.tgz package/bin/hello.js | tail -n1"
expect "npm-registry-fetch-in-sandbox" npmwire "" bash -c "grep -qx 'integrity ok' '$T/npmwire.out' && grep -q 'hello from the e2e npm package' '$T/npmwire.out'"
if command -v npm >/dev/null 2>&1; then
	NPMSEC=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	"$PROXY" --admin "$T/admin.sock" "{\"op\":\"register\",\"id\":\"host-npm\",\"secret\":\"$NPMSEC\"}" >/dev/null
	(cd "$T" && npm install -g --prefix "$T/npmp" --cache "$T/npm-cache" --no-audit --no-fund \
		--no-update-notifier --registry "http://$M/npm/" --proxy "http://host-npm:$NPMSEC@127.0.0.1:$PP" \
		e2e-hello-npm) >"$T/npmhost.out" 2>&1
	expect "npm-install-through-proxy (host npm)" npmhost "" bash -c "'$T/npmp/bin/e2e-hello-npm' | grep -qx 'hello from the e2e npm package'"
	check "npm-proxy-credential-not-forwarded" not_contains "$MIRROR_LOG" "$NPMSEC"
else
	fail "npm-install-through-proxy" "npm not installed on the host (scripts/install-deps.sh installs it)"
fi

# ---- the audit log and the mirror's log agree: untouched, no credential ----
# audit lines are written once per event-loop pass: wait for the last request's
wait_for 5 grep -q "/npm/e2e-hello-npm/-/$MIRROR_NPM_TGZ" "$T/audit.jsonl"
"$MIRROR_PY" - "$T/audit.jsonl" "$MIRROR_LOG" "$M" >"$T/agree.out" 2>&1 <<'PY'
# prints one line per check: NAME<TAB>ok|fail<TAB>reason
import json, re, sys
audit = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
host = sys.argv[3] + ":80"
line = re.compile(r'^(\S+) "(\S+) (\S+) HTTP/1\.[01]" (\d+) host="([^"]*)" ua="((?:[^"\\]|\\.)*)" '
                  r'auth="([^"]*)" pauth="([^"]*)" via="([^"]*)" xff="([^"]*)"$')
seen = []
for l in open(sys.argv[2]):
    m = line.match(l.rstrip("\n"))
    if m:
        seen.append(m.groups())
    else:
        print("mirror-log-parses\tfail\tunparsed line: " + l.strip()[:200])
def res(name, ok, why=""):
    print("%s\t%s\t%s" % (name, "ok" if ok else "fail", "" if ok else why))
inj = [a for a in audit if a.get("injected") or a.get("rule")]
res("audit-no-credential-injected", not inj, "injected: %s" % json.dumps(inj[:2]))
sb = [a for a in audit if a.get("sandbox") == "sb-m" and a.get("host") == host]
bad = [a for a in sb if a.get("type") != "http"]
res("audit-mirror-requests-plain-http", sb and not bad,
    "not plain http: %s" % json.dumps(bad[:2]) if sb else "no audit line of sb-m for " + host)
paths = {a["path"] for a in sb}
apt = "; apt-get update/install above must have succeeded"
for what, path, need in [("apt-inrelease", "/debian/dists/e2e/InRelease", ""),
                         ("apt-packages", "/debian/dists/e2e/main/binary-", apt),
                         ("apt-deb", "/debian/pool/main/e/e2e-hello_1.0_all.deb", apt),
                         ("apt-deb-depends", "/debian/pool/main/e/e2e-hello-lib_1.0_all.deb", apt),
                         ("pip-wheel", "/py/e2e_hello_py-1.0-py3-none-any.whl", ""),
                         ("npm-packument", "/npm/e2e-hello-npm", "")]:
    res("audit-saw-" + what, any(p.startswith(path) for p in paths),
        "no audit line of sb-m for " + path + need)
proxied = {(a["method"], a["path"]) for a in audit if a.get("host") == host}
mine = [s for s in seen if s[4] == sys.argv[3]]
stray = [s[1:3] for s in mine if (s[1], s[2]) not in proxied]
res("mirror-saw-only-proxied-requests", mine and not stray,
    "mirror requests without an audit line: %s" % stray[:3] if mine else "the mirror saw no request for its name")
touched = [s[1:3] + s[6:] for s in mine if s[6:] != ("-", "-", "-", "-")]
res("mirror-requests-untouched", mine and not touched,
    "Authorization/Proxy-Authorization/Via/X-Forwarded-For arrived: %s" % touched[:3])
uas = {s[5].split("/")[0] for s in mine}
res("mirror-saw-the-tools", {"curl", "pip", "Debian APT-HTTP"} <= uas, "user agents: %s" % sorted(uas))
PY
while IFS=$'\t' read -r name st why; do
	if [ "$st" = ok ]; then ok "$name"; else fail "$name" "$why"; fi
done <"$T/agree.out"
expect "audit-check-ran" agree "" bash -c "grep -q '^mirror-saw-the-tools' '$T/agree.out' && ! grep -q Traceback '$T/agree.out'"

# ---- what must keep holding with capabilities: sb-m (root, used above) ----
run caps "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status; id -u"
eff=$(awk '/^CapEff:/ {print $2}' "$T/caps.out")
bnd=$(awk '/^CapBnd:/ {print $2}' "$T/caps.out")
expect "root-capeff-exact" caps "CapEff ${eff:-?} ($(capnames "0x${eff:-0}")), want $CAP_WANT ($CAP_SET)" \
	[ "$eff" = "$CAP_WANT" ]
expect "root-capbnd-within-set" caps "CapBnd ${bnd:-?} ($(capnames "0x${bnd:-0}")) has more than $CAP_WANT" \
	[ "$(( 0x${bnd:-ff} & ~0x$CAP_WANT ))" = 0 ]
expect "root-is-uid-0" caps "" has caps '^0$'

# mounts: proc, a bind of /, tmpfs, sysfs, cgroup2; the mount table is unchanged
run mounts "n0=\$(wc -l </proc/self/mountinfo); mkdir -p /mnt/m
	for m in 'mount -t proc proc /mnt/m' 'mount --bind / /mnt/m' 'mount -o bind /workspace /mnt/m' \
		'mount -t tmpfs tmpfs /mnt/m' 'mount -t sysfs sysfs /mnt/m' 'mount -t cgroup2 none /mnt/m'; do
		\$m 2>/dev/null && echo \"MOUNTED: \$m\" || echo \"refused: \$m\"
	done; echo mountinfo \$n0 \$(wc -l </proc/self/mountinfo)"
expect "no-mount" mounts "" bash -c "! grep -q MOUNTED '$T/mounts.out' && [ \$(grep -c '^refused' '$T/mounts.out') = 6 ]"
expect "mount-table-unchanged" mounts "" bash -c "grep -q '^mountinfo \([0-9]*\) \1$' '$T/mounts.out'"

# modules and namespaces: a static probe (init/finit/delete_module, unshare, setns)
cat >"$T/probe.c" <<'C'
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static void t(const char *n, long r) { printf("%s %s\n", n, r == 0 ? "ALLOWED" : strerror(errno)); }
int main(void) {
	int fd = open("/dev/null", O_RDONLY);
	t("init_module", syscall(SYS_init_module, "\177ELF", 4, ""));
	t("finit_module", syscall(SYS_finit_module, fd, "", 0));
	t("delete_module", syscall(SYS_delete_module, "loop", O_NONBLOCK));
	t("unshare_user", unshare(CLONE_NEWUSER));
	t("unshare_mount", unshare(CLONE_NEWNS));
	t("unshare_net", unshare(CLONE_NEWNET));
	t("setns_host_net", setns(open("/proc/1/ns/net", O_RDONLY), 0));
	t("getpid", getpid() > 0 ? 0 : -1);
	return 0;
}
C
gcc -static -O1 -o "$WS/probe" "$T/probe.c" 2>"$T/probe.cc" || fail "probe-build" "$(tail -3 "$T/probe.cc")"
run probe "/workspace/probe; for c in modprobe insmod; do command -v \$c >/dev/null && { \$c loop 2>&1; echo \"\$c rc=\$?\"; }; done
	echo /x >/proc/sys/kernel/modprobe 2>&1; echo modprobe-knob rc=\$?"
for c in init_module finit_module delete_module; do
	expect "no-$c" probe "" bash -c "grep -q '^$c ' '$T/probe.out' && ! grep -q '^$c ALLOWED' '$T/probe.out'"
done
expect "no-modprobe-insmod" probe "" bash -c "! grep -q '^\(modprobe\|insmod\) rc=0' '$T/probe.out'"
expect "modprobe-knob-read-only" probe "" bash -c "grep -q '^modprobe-knob rc=[1-9]' '$T/probe.out'"
for c in unshare_user unshare_mount unshare_net setns_host_net; do
	expect "no-$c" probe "" bash -c "grep -q '^$c ' '$T/probe.out' && ! grep -q '^$c ALLOWED' '$T/probe.out'"
done
expect "probe-ran" probe "" has probe '^getpid ALLOWED'
run unshare "for o in -U -m -n -p; do unshare \$o -f true 2>/dev/null && echo \"UNSHARED \$o\" || echo \"refused \$o\"; done"
expect "no-unshare-U-m-n-p" unshare "" bash -c "! grep -q UNSHARED '$T/unshare.out' && [ \$(grep -c refused '$T/unshare.out') = 4 ]"
# devices and host processes: no device node, no signal outside the pid namespace
run devkill "mknod /tmp/sda b 8 0 2>/dev/null && echo 'MADE block' || echo 'refused block'
	mknod /tmp/mem c 1 1 2>/dev/null && echo 'MADE char' || echo 'refused char'
	for p in $PROXY_PID $$; do kill -0 \$p 2>/dev/null && echo \"SIGNALLED \$p\" || echo \"refused \$p\"; done"
expect "no-mknod" devkill "" bash -c "! grep -q MADE '$T/devkill.out' && [ \$(grep -c '^refused [bc]' '$T/devkill.out') = 2 ]"
expect "no-signal-to-host-processes" devkill "" bash -c "! grep -q SIGNALLED '$T/devkill.out' && [ \$(grep -c '^refused [0-9]' '$T/devkill.out') = 2 ]"

# cgroups: the limits, read on the host, do not move whatever root inside writes
cglimits() {
	local f
	for f in /sys/fs/cgroup/*/"$RT_CG"/sb-m/{pids.max,memory.limit_in_bytes,memory.memsw.limit_in_bytes,cpu.cfs_quota_us} \
		/sys/fs/cgroup/"$RT_CG"/sb-m/{pids.max,memory.max,memory.swap.max,cpu.max}; do
		[ -f "$f" ] && echo "$f $(cat "$f")"
	done
}
cg0=$(cglimits)
cat >"$WS/cgroup.sh" <<'SH'
# every cgroup filesystem mount but the read-only counters (one file each:
# the OOM counter, the process count, limit and refusals the agent reads)
awk '/ - cgroup2? / && !($6 ~ /^ro/ && $4 ~ /\/(memory\.(oom_control|events)|pids\.(current|max|events))$/) {print "cgroup-mount " $5}' \
	/proc/self/mountinfo
for w in 'max pids.max' 'max memory.max' '-1 memory.limit_in_bytes' 'max cpu.max' \
	'-1 cpu.cfs_quota_us' '1 cgroup.procs' '0 memory.events'; do
	set -- $w
	echo "$1" >"/sys/fs/cgroup/$2" 2>/dev/null && echo "wrote $2" || echo "refused $2"
done
echo 0 >/run/sandbox/memory.events 2>/dev/null && echo "wrote oom-counter" || echo "refused oom-counter"
SH
run cgroup "bash /workspace/cgroup.sh"
cg1=$(cglimits)
check "cgroup-limits-found-on-host" [ -n "$cg0" ]
expect "no-cgroup-fs-inside" cgroup "a cgroup filesystem is mounted in the sandbox" not_contains "$T/cgroup.out" cgroup-mount
expect "oom-counter-read-only" cgroup "" bash -c "grep -qx 'refused memory.events' '$T/cgroup.out' && grep -qx 'refused oom-counter' '$T/cgroup.out'"
expect "cgroup-limits-unchanged" cgroup "before: $(echo $cg0) after: $(echo $cg1)" [ "$cg0" = "$cg1" ]

# another sandbox's files: sb-o holds a secret; sb-m tries every path to it
rt_sh sb-o 'echo O-SECRET >/workspace/o.txt; echo O-SECRET >/etc/o.txt' >/dev/null
o0=$(cd "$RT_STATE/sb-o" && find workspace upper -newer record.json -printf '%p %s\n' 2>/dev/null | sort; cat workspace/o.txt upper/etc/o.txt)
run cross "for p in '$RT_STATE/sb-o/workspace/o.txt' '$RT_STATE/sb-o/upper/etc/o.txt' \
	'$RT_STATE/sb-o/workspace/new' '$RT_STATE/sb-o/agent/x' /proc/*/root/workspace/o.txt /proc/*/cwd/o.txt; do
		echo M-WAS-HERE >>\"\$p\" 2>/dev/null && echo \"WROTE \$p\"
	done
	curl -s --max-time 3 --unix-socket '$RT_STATE/sb-o/agent/agent.sock' http://agent/v1/health && echo 'REACHED sb-o agent'
	grep -rl O-SECRET / --exclude-dir=proc --exclude-dir=sys 2>/dev/null | sed 's/^/FOUND /'; echo end"
o1=$(cd "$RT_STATE/sb-o" && find workspace upper -newer record.json -printf '%p %s\n' 2>/dev/null | sort; cat workspace/o.txt upper/etc/o.txt)
expect "cross-sandbox-probe-ran" cross "" has cross '^end$'
expect "cross-sandbox-no-write" cross "" bash -c "! grep -q 'WROTE\|REACHED' '$T/cross.out'"
expect "cross-sandbox-invisible" cross "" bash -c "! grep -q FOUND '$T/cross.out'"
check "cross-sandbox-files-unchanged" [ "$o0" = "$o1" ]
check "cross-sandbox-no-marker" bash -c "! grep -rqs M-WAS-HERE '$RT_STATE/sb-o'"
rt_sh sb-o "ls -d /usr/bin/e2e-hello /usr/lib/e2e-local /usr/local/bin/e2e-hello-py 2>/dev/null; getent passwd e2ehello e2euser; echo end" >"$T/osees.out" 2>&1
expect "other-sandbox-sees-no-install" osees "sb-o sees what sb-m installed" [ "$(cat "$T/osees.out")" = end ]
# the image is shared: owner and mode changes of its files stay in sb-m's upper layer
mode0=$(stat -c '%a %u' "$IMG/usr/bin/bash" "$IMG/etc/issue" | tr '\n' ' ')
run meta "chmod 4777 /usr/bin/bash; chown 1234:1234 /etc/issue; stat -c '%a %u' /usr/bin/bash /etc/issue"
rt_sh sb-o "stat -c '%a %u' /usr/bin/bash /etc/issue" >"$T/ometa.out" 2>&1
expect "shared-image-metadata-stays-private" meta "image: $mode0; sb-o: $(tr '\n' ' ' <"$T/ometa.out")" \
	[ "$(stat -c '%a %u' "$IMG/usr/bin/bash" "$IMG/etc/issue" | tr '\n' ' ')" = "$mode0" -a \
	"$(tr '\n' ' ' <"$T/ometa.out")" = "$mode0" ]
check "image-untouched" bash -c "! grep -q 'e2ehello\|e2euser' '$IMG/etc/passwd' && [ ! -e '$IMG/usr/bin/e2e-hello' ] &&
	[ ! -e '$IMG/usr/local/lib/python3.11/dist-packages/e2e_hello_py' ] && ! grep -q e2e '$IMG/etc/apt/sources.list'"

# ---- --no-root (run_as_root: false): not root, no capability ----
rt_sh sb-n "id -u; grep -E '^Cap(Prm|Eff|Amb):' /proc/self/status; echo x >/etc/nr 2>&1" >"$T/nr.out" 2>&1
expect "noroot-not-root" nr "" grep -qx 1000 "$T/nr.out"
expect "noroot-capeff-zero" nr "" grep -q '^CapEff:[[:space:]]*0000000000000000$' "$T/nr.out"
expect "noroot-capprm-zero" nr "" grep -q '^CapPrm:[[:space:]]*0000000000000000$' "$T/nr.out"
expect "noroot-cannot-write-root-files" nr "" grep -q 'Permission denied' "$T/nr.out"

sbx destroy sb-m; sbx destroy sb-o; sbx destroy sb-n
