# tests/lib/common.sh: helpers for e2e scripts. Source it first:
#   . "$(dirname "$0")/../lib/common.sh"
# It makes $T (a private temp dir, removed at exit), kills every pid added
# with track_pid at exit, and gives ok/fail/skip reporting:
#   check "name" test-command...      -> "ok name" or "not ok name"
#   ok "name" / fail "name" "why" / skip "name" "why"
# At exit the script's status is non-zero if anything failed.
set -u
TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
B=${B:-build}
case "$B" in /*) BIN=$B ;; *) BIN=$TOP/$B ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/e2e.XXXXXX")
_pids=()
_nfail=0
_cleanups=()

track_pid() { _pids+=("$1"); }
on_exit() { _cleanups+=("$1"); }

_t_exit() {
	local rc=$? i
	for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do eval "${_cleanups[$i]}" || true; done
	for p in "${_pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${_pids[@]}"; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
	done
	[ -n "${KEEP_T:-}" ] || rm -rf "$T"
	[ $_nfail -gt 0 ] && exit 1
	exit $rc
}
trap _t_exit EXIT
trap 'exit 1' INT TERM HUP

ok()   { echo "ok $1"; }
fail() { echo "not ok $1${2:+ -- $2}"; _nfail=$((_nfail + 1)); }
skip() { echo "skip $1 ${2:-}"; }
check() {
	local name=$1; shift
	if "$@"; then ok "$name"; else fail "$name"; return 1; fi
}

# A free TCP port on 127.0.0.1 (racy by nature; good enough for tests).
free_port() {
	/usr/bin/python3 - <<'PY'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

# wait_for SECONDS cmd...: retries cmd every 50 ms until it succeeds.
wait_for() {
	local deadline=$(( $(date +%s%N) / 1000000 + ${1%.*} * 1000 )); shift
	while ! "$@" >/dev/null 2>&1; do
		[ $(( $(date +%s%N) / 1000000 )) -ge $deadline ] && return 1
		sleep 0.05
	done
}

# wait_port PORT [SECONDS]: until something listens on 127.0.0.1:PORT.
wait_port() {
	wait_for "${2:-10}" bash -c "exec 3<>/dev/tcp/127.0.0.1/$1"
}

# contains FILE STRING / not_contains FILE STRING (fixed strings).
contains() { grep -qF -- "$2" "$1"; }
not_contains() { ! grep -qF -- "$2" "$1"; }
