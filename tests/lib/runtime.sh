# tests/lib/runtime.sh: shared setup for the local runtime's e2e
# tests (tests/e2e/4x-runtime-*.sh) and its benchmark (tests/bench/runtime).
# Source it after tests/lib/common.sh. It gives:
#   rt_setup          state dir under $T, the busybox test image, a config
#                     with a cgroup parent of its own; destroys everything
#                     (and removes the cgroup parents) at exit
#   sbx ARGS...       sandboxctl with that config
#   rt_sh ID CMD      runs CMD through the sandbox's agent (sandboxctl exec)
#   rt_api ID METHOD PATH [JSON]   raw agent API call (curl --unix-socket)
#   rt_uid ID         the sandbox's host uid
SBX=${SBX:-$BIN/orchestrator/sandboxctl}
AGENT_BIN=${AGENT_BIN:-$BIN/agent/sandbox-agent}
RT_CG=${RT_CG:-e2e-$$}

rt_setup() {
	if [ "$(id -u)" != 0 ]; then
		skip "runtime" "the local runtime needs root"
		exit 0
	fi
	[ -x "$SBX" ] || { fail "sandboxctl-built" "$SBX missing (make)"; exit 1; }
	[ -x "$AGENT_BIN" ] || { fail "agent-built" "$AGENT_BIN missing (make)"; exit 1; }
	chmod 711 "$T"
	# a private copy: the agent may be rebuilt while tests run
	cp "$AGENT_BIN" "$T/sandbox-agent" && chmod 755 "$T/sandbox-agent"
	RT_STATE=$T/s
	RT_IMAGES=$T/images
	RT_BB=${RT_BB:-$BIN/images/busybox}
	mkdir -p "$(dirname "$RT_BB")"
	bash "$TOP/scripts/build-image.sh" --busybox "$RT_BB" 2>/dev/null ||
		{ fail "busybox-image" "scripts/build-image.sh --busybox failed"; exit 1; }
	cat >"$T/rt.yaml" <<YAML
local:
  state_dir: $RT_STATE
  images_dir: $RT_IMAGES
  default_image: busybox
  agent_bin: $T/sandbox-agent
  cgroup_name: $RT_CG
  mem_bytes: 512MiB
  pids_max: 256
  start_timeout: 30s
  uid_base: ${RT_UID_BASE:-$((3000000 + ($$ % 10000) * 64))}
  uid_count: ${RT_UID_COUNT:-64}
  ${RT_EXTRA_CONF:-}
YAML
	sbx image add busybox "$RT_BB" || { fail "image-add"; exit 1; }
	on_exit rt_teardown
}

sbx() { "$SBX" -c "$T/rt.yaml" "$@"; }

rt_teardown() {
	local d
	for d in "$RT_STATE"/*/; do
		[ -d "$d" ] || continue
		sbx destroy "$(basename "$d")" 2>/dev/null
	done
	# whatever destroy could not remove (it failed, or was never reached):
	# kill by cgroup, so no test leaves a sandbox running
	for d in /sys/fs/cgroup/unified/"$RT_CG"/*/ /sys/fs/cgroup/"$RT_CG"/*/; do
		[ -f "$d/cgroup.kill" ] && echo 1 >"$d/cgroup.kill" 2>/dev/null
	done
	for d in /sys/fs/cgroup/*/"$RT_CG"/*/ /sys/fs/cgroup/unified/"$RT_CG"/*/; do
		[ -d "$d" ] || continue
		for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$d" 2>/dev/null && break; sleep 0.3; done
	done
	for d in /sys/fs/cgroup/*/"$RT_CG" /sys/fs/cgroup/unified/"$RT_CG"; do
		[ -d "$d" ] && rmdir "$d" 2>/dev/null
	done
	return 0
}

rt_sh() { local id=$1; shift; sbx exec "$id" -- "$@"; }

rt_api() {
	curl -sS --max-time "${RT_API_TIMEOUT:-60}" --unix-socket "$RT_STATE/$1/agent/agent.sock" \
		-X "$2" ${4:+-H 'Content-Type: application/json' --data-binary "$4"} "http://agent$3"
}

rt_uid() { sed -n 's/.*"uid":\([0-9]*\).*/\1/p' "$RT_STATE/$1/record.json"; }

# Pids of the sandbox (its whole cgroup); empty when none.
rt_pids() {
	cat "/sys/fs/cgroup/unified/$RT_CG/$1/cgroup.procs" 2>/dev/null ||
		cat "/sys/fs/cgroup/$RT_CG/$1/cgroup.procs" 2>/dev/null ||
		cat "/sys/fs/cgroup/pids/$RT_CG/$1/cgroup.procs" 2>/dev/null
}

# Succeeds if any of the given pids still runs (zombies do not count).
rt_alive() {
	local p st
	for p in "$@"; do
		st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) || continue
		[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ] && return 0
	done
	return 1
}
