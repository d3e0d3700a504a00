#!/usr/bin/env bash
# 40-runtime-basic: the local runtime's lifecycle through sandboxctl and the
# real agent: create, exec, list (text and JSON), labels, stop (processes
# gone, workspace and root changes kept), start, destroy (nothing left:
# processes, mounts, cgroups, state); bad input refused clearly.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/runtime.sh"
rt_setup

# ---- the default image's package list is the Dockerfile's ----
pk=$(grep -v '^#' "$TOP/images/default/packages.txt" | sort | tr '\n' ' ')
dk=$(sed -n '/install -y/,/rm -rf/p' "$TOP/images/default/Dockerfile" | tr ' \\' '\n\n' |
	grep -E '^[a-z0-9][a-z0-9.+-]+$' | grep -vE '^(apt-get|install|rm|rf|y|no|DEBIAN_FRONTEND)$' | sort | tr '\n' ' ')
check "image-lists-in-sync" [ "$pk" = "$dk" ]

# ---- create and exec ----
out=$(sbx create --label team=red --label session=s-1 sb-a 2>&1)
check "create" grep -q '^sb-a	running	busybox' <<<"$out"
out=$(rt_sh sb-a 'echo hello; id -u; hostname; pwd')
check "exec-output" [ "$out" = "hello
0
sb-a
/workspace" ]
rt_sh sb-a 'exit 7'; rc=$?
check "exec-exit-code" [ $rc -eq 7 ]
check "shell-state-persists" bash -c "$(declare -f sbx rt_sh); SBX='$SBX' T='$T'; rt_sh sb-a 'cd /tmp; FOO=bar' && [ \"\$(rt_sh sb-a 'echo \$PWD \$FOO')\" = '/tmp bar' ]"
check "agent-socket-on-host" [ -S "$RT_STATE/sb-a/agent/agent.sock" ]
check "health" bash -c "$(declare -f rt_api); RT_STATE='$RT_STATE'; rt_api sb-a GET /v1/health | grep -q '\"ok\":true'"

# ---- list / get ----
out=$(sbx list)
check "list" grep -q '^sb-a	running	busybox	-	.*team=red' <<<"$out"
out=$(sbx list --json)
check "list-json" python3 -c "
import json,sys; a=json.loads(sys.argv[1]); s=a[0]
assert s['id']=='sb-a' and s['state']=='running' and s['labels']=={'team':'red','session':'s-1'}, s
assert s['created_ms']>0 and s['started_ms']>=s['created_ms']" "$out"
sbx labels sb-a team=blue owner=me
out=$(sbx get sb-a)
check "set-labels" python3 -c "
import json,sys; s=json.loads(sys.argv[1]); assert s['labels']=={'team':'blue','owner':'me'}, s" "$out"
check "get-missing" bash -c "! '$SBX' -c '$T/rt.yaml' get nope 2>/dev/null"

# ---- writable root (overlay), workspace, stop/start ----
rt_sh sb-a 'echo w > /workspace/keep; echo r > /etc/rootfile; echo t > /tmp/tmpfile; mkdir -p /opt/x'
check "image-untouched" [ ! -e "$RT_BB/etc/rootfile" ]
# the disk limit is on by default: root writes land in the disk image
check "write-in-disk-image" [ ! -e "$RT_STATE/sb-a/upper/etc/rootfile" -a -f "$RT_STATE/sb-a/disk.img" ]
pids=$(rt_pids sb-a | tr "\n" " ")
check "has-processes" [ -n "$pids" ]
sbx stop sb-a
check "stop-state" bash -c "'$SBX' -c '$T/rt.yaml' list | grep -q '^sb-a	stopped'"
check "stop-kills-processes" bash -c "$(declare -f rt_alive); ! rt_alive $pids"
check "stop-releases-cgroups" [ ! -d "/sys/fs/cgroup/memory/$RT_CG/sb-a" ]
check "stop-idempotent" sbx stop sb-a
check "exec-on-stopped-fails" bash -c "! '$SBX' -c '$T/rt.yaml' exec sb-a -- true 2>/dev/null"
sbx start sb-a
check "start-state" bash -c "'$SBX' -c '$T/rt.yaml' list | grep -q '^sb-a	running'"
out=$(rt_sh sb-a 'cat /workspace/keep /etc/rootfile; ls /tmp/tmpfile 2>/dev/null; test -d /opt/x && echo d')
check "start-keeps-workspace-and-root" [ "$out" = "w
r
d" ]
check "start-idempotent" sbx start sb-a

# ---- read-only root, second image name ----
sbx image add bb2 "$RT_BB"
sbx create --image bb2 --read-only sb-ro >/dev/null
out=$(rt_sh sb-ro 'touch /etc/x 2>&1; echo ok > /workspace/w && cat /workspace/w')
check "read-only-root" grep -q 'Read-only file system' <<<"$out"
check "read-only-workspace-writable" grep -q '^ok$' <<<"$out"
out=$(sbx create --no-root sb-nr >/dev/null && rt_sh sb-nr 'id -u')
check "run-as-non-root" [ "$out" = "1000" ]

# ---- bad input ----
bad() {	# name expected-substring args...
	local name=$1 want=$2; shift 2
	out=$(sbx "$@" 2>&1); rc=$?
	if [ $rc -ne 0 ] && grep -qF -- "$want" <<<"$out"; then ok "bad-$name"; else fail "bad-$name" "rc=$rc out=$out"; fi
}
bad dup-id "already exists" create sb-a
bad id-upper "invalid sandbox id" create Bad
bad id-slash "invalid sandbox id" create a/b
bad id-dots "invalid sandbox id" create ..
bad id-long "invalid sandbox id" create "$(printf 'a%.0s' $(seq 1 80))"
bad image-missing 'image "nosuch" not found' create --image nosuch sb-x
bad image-traversal "invalid image name" create --image ../images sb-x
bad image-add-relative "not an absolute path" image add x relative/dir
bad image-add-name "invalid image name" image add ../x /tmp
bad mem-too-small "memory 1MiB is outside the local runtime's bounds (8MiB" create --mem 1MiB sb-x
bad unknown-config "unknown key" -c /dev/stdin list <<<"local: {nosuch: 1}"
check "failed-create-leaves-nothing" [ ! -e "$RT_STATE/sb-x" ]
check "destroy-missing-ok" sbx destroy never-existed

# ---- destroy leaves nothing ----
pids=$(rt_pids sb-a | tr "\n" " ")
uid=$(rt_uid sb-a)
sbx destroy sb-a
check "destroy-state" [ ! -e "$RT_STATE/sb-a" ]
check "destroy-processes" bash -c "$(declare -f rt_alive); ! rt_alive $pids"
check "destroy-no-uid-processes" bash -c "! ps -eo uid=,stat= | grep -v Z | grep -q '^ *$uid '"
check "destroy-cgroups" bash -c "! ls -d /sys/fs/cgroup/*/$RT_CG/sb-a /sys/fs/cgroup/unified/$RT_CG/sb-a 2>/dev/null | grep -q ."
check "destroy-mounts" bash -c "! grep -q '$RT_STATE/sb-a' /proc/self/mountinfo"
check "no-mounts-ever-on-host" bash -c "! grep -q '$RT_STATE' /proc/self/mountinfo"
check "destroy-idempotent" sbx destroy sb-a
for id in sb-ro sb-nr; do sbx destroy "$id"; done
check "all-gone" [ -z "$(ls "$RT_STATE")" ]
