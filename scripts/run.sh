#!/usr/bin/env bash
# scripts/run.sh: what `make run` runs. Starts the egress proxy (with the
# shipped addons) and the orchestrator on the local runtime, in the
# foreground, until Ctrl-C. Everything it writes lives in var/ (gitignored):
#
#   var/orchestrator.key   the bearer key (generated on first start, 0600)
#   var/orchestrator.yaml  the orchestrator's configuration (rewritten)
#   var/egress-proxy.yaml  the proxy's configuration (rewritten)
#   var/proxy/             proxy CA (generated on first start), admin socket
#   var/state/             sandbox state; var/images/ the local images
#
# Environment: ORCH_LISTEN (default 127.0.0.1:8080), GITHUB_TOKEN /
# GITLAB_TOKEN (handed to the addons through env:, never to sandboxes),
# ORCH_POOL (warm pool size, default 2), IMAGE=busybox to skip the Debian
# image build, APPS_PORT (default 8081: the app gateway, apps published
# with expose_port at http://<name>-<sandbox>.apps.localhost:APPS_PORT/).
set -euo pipefail
cd "$(dirname "$0")/.."
TOP=$PWD
B=${B:-build}
VAR=$TOP/var
ORCH=$B/orchestrator/orchestrator
PROXY=$B/egress-proxy/egress-proxy
AGENT=$B/agent/sandbox-agent
GATEWAY=$B/gateway/app-gateway
LISTEN=${ORCH_LISTEN:-127.0.0.1:8080}
APPS_PORT=${APPS_PORT:-8081}
POOL=${ORCH_POOL:-2}

die() { echo "run: $*" >&2; exit 1; }
for b in "$ORCH" "$PROXY" "$AGENT" "$GATEWAY"; do
	[ -x "$b" ] || die "$b is missing: run make first"
done
[ "$(id -u)" = 0 ] || die "the local runtime needs root (user namespaces, cgroups, mounts): run as root"
mkdir -p "$VAR" "$VAR/proxy" "$VAR/state" "$VAR/images"
chmod 711 "$VAR" "$VAR/state"

# ---- the key: generated once, printed every time ----
KEYF=$VAR/orchestrator.key
if [ ! -s "$KEYF" ]; then
	(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$KEYF"; echo >> "$KEYF")
	echo "run: generated a new orchestrator key in $KEYF"
fi
chmod 600 "$KEYF"
KEY=$(head -n1 "$KEYF")

# ---- the image: the Debian default, or busybox as a fallback ----
IMG=default
if [ "${IMAGE:-}" = busybox ]; then
	IMG=busybox
elif [ ! -d "$VAR/images/default" ]; then
	echo "run: building the default Debian image into var/images/default (first start only; a few minutes)..."
	if ! bash scripts/build-image.sh "$VAR/images/default" >"$VAR/image-build.log" 2>&1; then
		echo "run: the Debian image could not be built (see var/image-build.log);" \
		    "falling back to the small busybox image (sh, coreutils, static bash; no git or compilers)" >&2
		IMG=busybox
	fi
fi
if [ "$IMG" = busybox ] && [ ! -d "$VAR/images/busybox" ]; then
	bash scripts/build-image.sh --busybox "$VAR/images/busybox" >>"$VAR/image-build.log" 2>&1 ||
	    die "could not build the busybox image either (see var/image-build.log)"
fi

# ---- configurations ----
cat > "$VAR/egress-proxy.yaml" <<EOF
# written by scripts/run.sh; edit scripts/run.sh or run the daemons yourself
listen: 127.0.0.1:3128
admin:
  socket: $VAR/proxy/admin.sock
ca:
  cert: $VAR/proxy/ca.crt
  key: $VAR/proxy/ca.key
  export: $VAR/proxy/ca-export.crt
addons:
  - $TOP/addons/github.lua
  - $TOP/addons/gitlab.lua
addon_config:
  github_token: "env:GITHUB_TOKEN"
  gitlab_token: "env:GITLAB_TOKEN"
EOF
cat > "$VAR/orchestrator.yaml" <<EOF
# written by scripts/run.sh
listen: $LISTEN
key_file: $KEYF
runtime: local
pool:
  min_idle: $POOL
local:
  state_dir: $VAR/state
  images_dir: $VAR/images
  default_image: $IMG
  agent_bin: $TOP/$AGENT
  proxy_admin_socket: $VAR/proxy/admin.sock
  proxy_ca_cert: $VAR/proxy/ca-export.crt
apps:
  domain: apps.localhost
  port: $APPS_PORT
  control_socket: $VAR/gateway.sock
EOF
cat > "$VAR/app-gateway.yaml" <<EOF
# written by scripts/run.sh: the app gateway (docs/gateway.md)
listen: 127.0.0.1:$APPS_PORT
domain: apps.localhost
control:
  socket: $VAR/gateway.sock
EOF
"$PROXY" -n -f "$VAR/egress-proxy.yaml" >/dev/null || die "egress proxy configuration check failed"
env -u ORCHESTRATOR_KEY "$ORCH" -n -f "$VAR/orchestrator.yaml" >/dev/null || die "orchestrator configuration check failed"
"$GATEWAY" -n -f "$VAR/app-gateway.yaml" >/dev/null || die "app gateway configuration check failed"

pids=()
cleanup() {
	trap - INT TERM EXIT
	echo
	echo "run: stopping (sandboxes keep running and are adopted on the next start)"
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup INT TERM EXIT

"$PROXY" -f "$VAR/egress-proxy.yaml" &
pids+=($!)
for _ in $(seq 1 100); do [ -S "$VAR/proxy/admin.sock" ] && break; sleep 0.1; done
[ -S "$VAR/proxy/admin.sock" ] || die "the egress proxy did not start"
env -u ORCHESTRATOR_KEY "$ORCH" -d -f "$VAR/orchestrator.yaml" &
pids+=($!)
for _ in $(seq 1 100); do curl -sf "http://$LISTEN/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -sf "http://$LISTEN/readyz" >/dev/null 2>&1 || die "the orchestrator did not become ready"
# The gateway faces browsers: no key, no credential; it only asks the
# orchestrator for connections to published apps.
"$GATEWAY" -f "$VAR/app-gateway.yaml" &
pids+=($!)

cat <<EOF

================================================================
 Orchestrator ready (runtime local, image $IMG, warm pool $POOL)
 MCP URL : http://$LISTEN/mcp
 REST    : http://$LISTEN/v1/sessions
 Apps    : http://<name>-<sandbox>.apps.localhost:$APPS_PORT/
           (expose_port publishes a sandbox's web server and gives
           its address and token; open <url>?token=<token>)
 Key     : $KEY
           (in $KEYF; send it as Authorization: Bearer <key>)
 CLI     : export ORCH_URL=http://$LISTEN ORCH_KEY_FILE=$KEYF
           (or ORCH_KEY=<key> when not root: the key file is root's)
           $TOP/$B/cli/orch list   (completion: . $TOP/cli/orch.bash)

 MCP client configuration (e.g. Claude Code .mcp.json, Cursor
 mcp.json); pick any X-Session-Id per agent session:
 {
   "mcpServers": {
     "sandbox": {
       "type": "http",
       "url": "http://$LISTEN/mcp",
       "headers": {
         "Authorization": "Bearer $KEY",
         "X-Session-Id": "my-session-1"
       }
     }
   }
 }
 Try it:
   curl -s http://$LISTEN/mcp -H 'Authorization: Bearer $KEY' \\
     -H 'X-Session-Id: demo' -H 'Content-Type: application/json' \\
     -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","arguments":{"command":"uname -a"}}}'
 Ctrl-C stops the daemons.
================================================================
EOF
wait -n "${pids[@]}" || true
echo "run: a daemon exited" >&2
