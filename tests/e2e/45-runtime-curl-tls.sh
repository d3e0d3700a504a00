#!/usr/bin/env bash
# 45-runtime-curl-tls: with the default Debian image (`make image`), curl
# inside a sandbox goes through its netns proxy listener to a local TLS
# upstream that poses as github.com; the proxy intercepts (its CA is trusted
# inside through the bundle the runtime installed in the overlay), and the
# request is attributed to the sandbox in the audit log. `make test` builds
# the default image first; without it this fails.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/runtime.sh"
IMG=${SANDBOX_DEFAULT_IMAGE_DIR:-/var/lib/sandbox/images/default}
if [ ! -x "$IMG/usr/bin/curl" ]; then
	fail "curl-tls" "default image not built ($IMG; make test builds it: scripts/build-image.sh)"
	exit 1
fi
PROXY=$BIN/egress-proxy/egress-proxy
[ -x "$PROXY" ] || { fail "egress-proxy-built" "$PROXY missing (make)"; exit 1; }

. "$TOP/tests/lib/upca.sh"
upca_mk "$T/upca.crt" "$T/upca.key" "$T/srv.crt" "$T/srv.key" github.com
UP=$(free_port); PP=$(free_port)
python3 "$TOP/tests/fixtures/upstream.py" "$UP" --log "$T/up.jsonl" --body tls-upstream-ok --cert "$T/srv.crt" --key "$T/srv.key" & track_pid $!
cat >"$T/addon.lua" <<'LUA'
local M = { name = "e2e-rt" }
function M.on_connect(ctx)
  if ctx.host == "github.com" then return "intercept" end
  return nil
end
return M
LUA
cat >"$T/p.yaml" <<YAML
listen: 127.0.0.1:$PP
admin:
  socket: $T/admin.sock
ca: {cert: $T/ca.crt, key: $T/ca.key}
upstream:
  ca_bundle: $T/upca.crt
  allow_cidrs: [127.0.0.0/8]
resolve:
  "github.com:443": "127.0.0.1:$UP"
addons: [$T/addon.lua]
addon_watch: 0
audit: {log: $T/audit.jsonl}
YAML
"$PROXY" -d -f "$T/p.yaml" >"$T/proxy.log" 2>&1 & track_pid $!
wait_port "$PP" 20 && wait_for 10 test -S "$T/admin.sock" && wait_port "$UP" 10 ||
	{ fail "proxy-start" "$(tail -5 "$T/proxy.log")"; exit 1; }

RT_EXTRA_CONF="proxy_admin_socket: $T/admin.sock
  proxy_ca_cert: $T/ca.crt"
rt_setup
sbx image add debian "$IMG"
sbx create --image debian --label session=tls-1 sb-d >/dev/null || { fail "create-debian"; exit 1; }

out=$(rt_sh sb-d 'curl -sS --max-time 30 https://github.com/through-curl 2>&1')
check "curl-https-intercepted" [ "$out" = "tls-upstream-ok" ]
check "upstream-saw-request" grep -q '"path": "/through-curl"' "$T/up.jsonl"
check "audit-attributes-sandbox" grep -q '"sandbox":"sb-d".*through-curl' "$T/audit.jsonl"
out=$(rt_sh sb-d 'python3 -c "import ssl,os; print(os.environ[\"SSL_CERT_FILE\"])"')
check "python-sees-bundle" grep -q '/etc/ssl/certs/ca-certificates.crt' <<<"$out"
out=$(rt_sh sb-d 'curl -sS --noproxy "*" --max-time 10 https://github.com/direct 2>&1; echo rc=$?')
check "curl-direct-fails" grep -q 'rc=[1-9]' <<<"$out"
check "image-bundle-untouched" bash -c "! grep -qF '$(sed -n 2p "$T/ca.crt")' '$IMG/etc/ssl/certs/ca-certificates.crt'"
sbx destroy sb-d
