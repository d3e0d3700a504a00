# tests/lib/proxy.sh: start the egress proxy against the fixtures of
# tests/lib/fakegit.sh. Source after common.sh and fakegit.sh.
#
#   px_config [NAME]     writes $T/NAME/proxy.yaml (NAME defaults to proxy); knobs (env):
#                          PX_ADDONS   yaml list of addon files (default: shipped github+gitlab)
#                          PX_ALLOW    yaml list of allowed CIDRs (default [127.0.0.0/8])
#                          PX_ANON     true/false (default false: sandboxes must identify)
#                          PX_EXTRA    raw yaml appended (limits:, timeouts:, ...)
#                          PX_RESOLVE  extra "  key: value" lines for the resolve map
#                          PX_NORESOLVE=1  leave out the fixture hosts from the resolve map
#                          PX_ADDON_CONFIG extra "  key: value" lines for addon_config
#   px_start [NAME]      starts it (tokens only in ITS environment), sets PX_PORT, PX_PID,
#                        PX_DIR, PX_CA (the exported CA for clients), PX_ADMIN
#   px_register ID SECRET [ATTRS-JSON]   registers a sandbox with a proxy credential
#   px_client_env ID SECRET  exports HTTPS_PROXY/HTTP_PROXY and CA variables for git/curl/gh
#   px_admin JSON        one admin call, prints the reply
#   px_rss               resident set size of the proxy in KiB
# PROXY_BIN_OVERRIDE (env): run this instead of the built proxy, e.g. a wrapper
# script that execs valgrind --tool=massif on it (tests and tests/bench/proxy).
PROXY_BIN=${PROXY_BIN_OVERRIDE:-$BIN/egress-proxy/egress-proxy}

px_base_resolve() {
	[ -n "${PX_NORESOLVE:-}" ] && return 0
	cat <<EOF
  "github.com:443": "127.0.0.1:$GH_PORT"
  "uploads.github.com:443": "127.0.0.1:$GH_PORT"
  "codeload.github.com:443": "127.0.0.1:$GH_PORT"
  "raw.githubusercontent.com:443": "127.0.0.1:$GH_PORT"
  "api.github.com:443": "127.0.0.1:$API_PORT"
  "gitlab.com:443": "127.0.0.1:$GL_PORT"
EOF
}

px_config() {
	local name=${1:-proxy}
	PX_DIR=$T/$name
	PX_PORT=$(free_port)
	mkdir -p "$PX_DIR/export" "$T/secrets"
	printf '%s' "$GH_TOKEN_REAL" >"$T/secrets/github_token"
	printf '%s' "$GL_TOKEN_REAL" >"$T/secrets/gitlab_token"
	chmod 600 "$T/secrets/"*
	local addons=${PX_ADDONS:-"[$TOP/addons/github.lua, $TOP/addons/gitlab.lua]"}
	cat >"$PX_DIR/proxy.yaml" <<EOF
listen: 127.0.0.1:$PX_PORT
workers: 2
anonymous: ${PX_ANON:-false}
admin:
  socket: $PX_DIR/admin.sock
ca:
  cert: $PX_DIR/ca.crt
  key: $PX_DIR/ca.key
  export: $PX_DIR/export/ca.crt
upstream:
  ca_bundle: $PKI/ca.pem
  allow_cidrs: ${PX_ALLOW:-[127.0.0.0/8]}
resolve:
$(px_base_resolve)
${PX_RESOLVE:-}
addons: $addons
addon_config:
  github_token: file:$T/secrets/github_token
  gitlab_token: file:$T/secrets/gitlab_token
${PX_ADDON_CONFIG:-}
addon_watch: 200ms
audit:
  log: $PX_DIR/audit.jsonl
log:
  file: $PX_DIR/proxy.log
${PX_EXTRA:-}
EOF
}

px_start() {
	local name=${1:-proxy}
	PX_DIR=$T/$name
	PX_ADMIN=$PX_DIR/admin.sock
	PX_CA=$PX_DIR/export/ca.crt
	rm -f "$PX_ADMIN"
	# sanitizer builds: a small ASan quarantine so memory-bound tests stay meaningful
	ASAN_OPTIONS=quarantine_size_mb=16:${ASAN_OPTIONS:-} "$PROXY_BIN" -d -v -f "$PX_DIR/proxy.yaml" >>"$PX_DIR/stderr" 2>&1 &
	PX_PID=$!
	track_pid $PX_PID
	wait_port "$PX_PORT" 20 && wait_for 10 test -S "$PX_ADMIN" && wait_for 10 test -s "$PX_CA" || {
		echo "proxy did not start; log:" >&2
		tail -n 20 "$PX_DIR/stderr" "$PX_DIR/proxy.log" >&2 2>/dev/null
		return 1
	}
}

px_admin() { "$PY" "$FX/padmin.py" "$PX_ADMIN" "$@"; }

px_register() {
	local attrs=${3:-'{"org":"e2e-org","user":"e2e-user"}'}
	px_admin "{\"op\":\"register\",\"id\":\"$1\",\"secret\":\"$2\",\"attrs\":$attrs}" >/dev/null
}

# px_metric NAME or 'NAME{LABELS}': the metric's value from the admin
# "metrics" op ("none" when the proxy does not report it).
px_metric() {
	px_admin '{"op":"metrics"}' | "$PY" -c '
import json, sys
t = json.load(sys.stdin)["text"]
print(([l.rsplit(" ", 1)[1] for l in t.splitlines() if l.startswith(sys.argv[1] + " ")] or ["none"])[0])' "$1"
}

px_client_env() {
	export HTTPS_PROXY=http://$1:$2@127.0.0.1:$PX_PORT
	export HTTP_PROXY=$HTTPS_PROXY https_proxy=$HTTPS_PROXY http_proxy=$HTTPS_PROXY
	unset NO_PROXY no_proxy ALL_PROXY all_proxy 2>/dev/null || true
	export GIT_SSL_CAINFO=$PX_CA CURL_CA_BUNDLE=$PX_CA SSL_CERT_FILE=$PX_CA
}

px_rss() { awk '/^VmRSS:/ {print $2}' "/proc/${1:-$PX_PID}/status"; }

# px_alive: the proxy process still runs.
px_alive() { kill -0 "$PX_PID" 2>/dev/null; }

# The recorder never saw TOKEN (nor its base64 forms). $1 = recorder name.
rec_clean() {
	local f=$T/rec-$1.bytes t
	for t in "$GH_TOKEN_REAL" "$GL_TOKEN_REAL" "$(b64 "x-access-token:$GH_TOKEN_REAL")" \
		"$(b64 "oauth2:$GL_TOKEN_REAL")" $(cat "$T/minted.tokens" 2>/dev/null); do
		grep -qF -- "$t" "$f" && { echo "TOKEN reached recorder $1" >&2; return 1; }
	done
	return 0
}
# The recorder received no byte at all / saw no connection at all.
rec_empty() { test ! -s "$T/rec-$1.bytes"; }
rec_noconn() { ! grep -q accept "$T/rec-$1.events"; }

# pc ARGS...: tests/fixtures/pclient.py against the proxy as sandbox
# $PC_ID:$PC_SECRET (set by px_sandbox), CA = the proxy's exported CA.
pc() {
	"$PY" "$FX/pclient.py" --proxy "127.0.0.1:$PX_PORT" ${PC_ID:+--proxy-auth "$PC_ID:$PC_SECRET"} \
		--cafile "$PX_CA" "$@"
}
# pci HOST 'request bytes' [more pclient args]: CONNECT HOST:443, TLS, send the request.
pci() {
	local h=$1 req=$2; shift 2
	pc --connect "$h:443" --tls --sni "$h" --send "$req" "$@"
}
# px_sandbox: registers sandbox sb-e2e with a fresh secret; sets PC_ID/PC_SECRET/SECRET.
px_sandbox() {
	SECRET=sec-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	PC_ID=sb-e2e PC_SECRET=$SECRET
	px_register sb-e2e "$SECRET"
}
# status_of FILE: HTTP status of the first response after the "----" line.
status_of() { awk 'f && /^HTTP\/1\.[01] / {print $2; exit} /^----$/ {f=1}' "$1"; }
# st_in FILE CODE...: that status is one of the CODEs ("" matches a closed connection).
st_in() {
	local s c; s=$(status_of "$1"); shift
	for c; do [ "$s" = "$c" ] && return 0; done
	echo "status was '$s', wanted one of: $*" >&2
	return 1
}
# api_saw STRING: the fake API (incl. git auth backend) logged a request containing STRING.
api_saw() { grep -qF -- "$1" "$T/api.log"; }

# px_stat ID FIELD: one number from the admin stats of sandbox ID.
px_stat() {
	px_admin "{\"op\":\"stats\",\"id\":\"$1\"}" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
print([s for s in d["sandboxes"] if s["id"] == sys.argv[1]][0][sys.argv[2]])' "$1" "$2"
}
# hold NAME ARGS...: holdconns.py in the background as sandbox sb-e2e; waits until all are set up.
# Result line in $T/hold-NAME.out; release with `release NAME`.
hold() {
	local name=$1; shift
	rm -f "$T/hold-$name" "$T/hold-$name.ready"
	"$PY" "$FX/holdconns.py" --proxy "127.0.0.1:$PX_PORT" --auth "$PC_ID:$PC_SECRET" \
		--hold "$T/hold-$name" "$@" >"$T/hold-$name.out" 2>&1 &
	track_pid $!
	eval "HOLD_PID_$name=\$!"
	wait_for 180 test -f "$T/hold-$name.ready"
}
release() {
	touch "$T/hold-$1"
	local p; eval "p=\$HOLD_PID_$1"
	wait "$p" 2>/dev/null
}
# opened NAME: number of connections the hold set up.
opened() { awk '/^opened/ {print $2}' "$T/hold-$1.out"; }

# px_isolate: re-runs the calling test inside a fresh network namespace
# holding only a loopback interface, so nothing the proxy does (DNS for a
# name missing from the resolve map, a dial that should have been refused)
# can leave this machine even on a bug. Call right after sourcing the libs.
px_isolate() {
	[ -n "${E2E_NETNS:-}" ] && return 0
	local ns=e2e-px-$$ rc child
	ip netns add "$ns" || { echo "not ok netns (ip netns add failed)"; exit 1; }
	ip netns exec "$ns" ip link set lo up
	ip netns exec "$ns" env E2E_NETNS="$ns" bash "$0" "$@" &
	child=$!
	# if this outer script is stopped (timeout), stop the inner run and drop the netns
	on_exit "kill $child 2>/dev/null; wait $child 2>/dev/null; ip netns del $ns 2>/dev/null"
	wait "$child"
	rc=$?
	exit $rc
}

# px_san_clean: no proxy started by this test reported a sanitizer error (ASan
# aborts at the first one; UBSan is built with -fno-sanitize-recover).
px_san_clean() {
	! grep -l "ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer" "$T"/*/stderr 2>/dev/null | grep -q .
}
