# r30-proxy-registry: a container registry with Basic authentication
# (Debian's real docker-registry, htpasswd) through the proxy with the
# basic form of a named credential (issue 30): skopeo in the "sandbox"
# holds only the placeholder as its password, pushes and pulls a tiny OCI
# image through the proxy, and the real password reaches the registry only
# from the proxy. The registry's token flow (realm + Bearer) is not served
# yet (docs/addons.md "Named credentials").
. "$(dirname "$0")/../lib/common.sh"
PY=/usr/bin/python3
FX=$TOP/tests/fixtures
command -v skopeo >/dev/null && command -v docker-registry >/dev/null ||
	{ skip "r30-proxy-registry" "skopeo or docker-registry missing (scripts/install-deps.sh)"; exit 0; }

# ---- a test CA, the registry's leaf (reg.test) ----
mkdir -p "$T/pki"
. "$TOP/tests/lib/upca.sh"
upca_mk "$T/pki/ca.pem" "$T/pki/ca.key" "$T/pki/reg.pem" "$T/pki/reg.key" reg.test localhost 127.0.0.1
REG_PKI=$T/pki REG_CERT=$T/pki/reg.pem REG_KEY=$T/pki/reg.key
. "$TOP/tests/lib/registry.sh"

RBP=$(free_port); PP=$(free_port)
REAL_PW=carol-REAL-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
reg_start_basic "$RBP" "carol:$REAL_PW" || { fail "registry start" "$(tail -5 "$T/registry-basic.log")"; exit 1; }
printf '%s\n' "$REAL_PW" >"$T/reg.pw"
chmod 600 "$T/reg.pw"

cat >"$T/reg.lua" <<EOF
return {
  name = "reg",
  credentials = {
    { name = "registry", form = "basic", user = "carol", secret = "file:$T/reg.pw",
      hosts = { "reg.test" }, default = true },
  },
}
EOF
mkdir -p "$T/export"
cat >"$T/p.yaml" <<EOF
listen: 127.0.0.1:$PP
workers: 2
admin:
  socket: $T/admin.sock
ca: {cert: $T/ca.crt, key: $T/ca.key, export: $T/export/ca.crt}
upstream:
  ca_bundle: $T/pki/ca.pem
  allow_cidrs: [127.0.0.0/8]
resolve:
  "reg.test:443": "127.0.0.1:$RBP"
addons: [$T/reg.lua]
audit:
  log: $T/audit.jsonl
log:
  file: $T/proxy.log
EOF
. "$TOP/tests/lib/pxsolo.sh"
px_solo
"$PY" "$FX/padmin.py" "$T/admin.sock" '{"op":"register","id":"sb-r","secret":"s-r"}' >"$T/reg-r.json"
PH=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["credentials"]["registry"]["placeholder"])' "$T/reg-r.json")
check "register: a placeholder for the registry credential" bash -c "[[ '$PH' == PXC* ]]"

# The sandbox's side: the proxy's CA only, the proxy in HTTPS_PROXY, the placeholder as password.
mkdir -p "$T/sbcerts"
cp "$T/export/ca.crt" "$T/sbcerts/ca.crt"
layer=$(reg_oci_image "$T/img" v1)
sbk() { HTTPS_PROXY="http://sb-r:s-r@127.0.0.1:$PP" NO_PROXY= reg_skopeo "$@"; }
sbk copy --dest-creds "carol:$PH" --dest-cert-dir "$T/sbcerts" "oci:$T/img:v1" \
	docker://reg.test/acme/tiny:v1 >"$T/push.out" 2>&1
check "skopeo push through the proxy with the placeholder: the image is in the registry" \
	test -n "$(find "$T/registry-basic" -path "*blobs/sha256/*/${layer#sha256:}*" 2>/dev/null | head -1)"
sbk copy --src-creds "carol:$PH" --src-cert-dir "$T/sbcerts" docker://reg.test/acme/tiny:v1 \
	"oci:$T/back:v1" >"$T/pull.out" 2>&1
check "skopeo pull through the proxy with the placeholder: the layer arrived" \
	test -f "$T/back/blobs/sha256/${layer#sha256:}"
sbk inspect --creds "carol:$PH" --cert-dir "$T/sbcerts" docker://reg.test/acme/tiny:v1 >"$T/inspect.out" 2>&1
check "skopeo inspect through the proxy: the manifest" grep -q '"Layers"' "$T/inspect.out"
check "the registry authenticated carol on the proxied requests" \
	grep -q 'auth.user.name="\?carol' "$T/registry-basic.log"
check "the placeholder alone, straight to the registry, is refused" bash -c \
	"$(declare -f reg_skopeo); T=$T; ! reg_skopeo inspect --creds 'carol:$PH' --cert-dir '$REG_CERTS' docker://localhost:$RBP/acme/tiny:v1 >/dev/null 2>&1"
# skopeo sends its credentials only after a challenge; the proxy adds the
# Basic form to every request, so the registry never challenges it.
sbk copy --src-cert-dir "$T/sbcerts" docker://reg.test/acme/tiny:v1 "oci:$T/back2:v1" >"$T/pull2.out" 2>&1
check "skopeo with no credentials at all through the proxy: the basic form is added, the pull works" \
	test -f "$T/back2/blobs/sha256/${layer#sha256:}"
check "audit: the proxied requests name the credential added" \
	grep -q '"credentials":"registry:basic"' "$T/audit.jsonl"
code=$(curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://sb-r:s-r@127.0.0.1:$PP" \
	-u "carol:$PH" -o "$T/v2.out" -w '%{http_code}' https://reg.test/v2/ 2>&1)
check "a client that sends Basic carol:PLACEHOLDER: swapped, the registry answers 200" test "$code" = 200
check "audit: that request names the swap" grep -q '"credentials":"registry:swap"' "$T/audit.jsonl"
check "the real password is nowhere the sandbox sees (skopeo's output, its auth file, its home)" \
	bash -c "! grep -rqF -- '$REAL_PW' '$T/push.out' '$T/pull.out' '$T/pull2.out' '$T/inspect.out' '$T/v2.out' '$T/reg-r.json' '$T/reg-home' '$T/reg-auth.json' 2>/dev/null"
check "the real password is not in the proxy's log or audit log" \
	bash -c "! grep -qF -- '$REAL_PW' '$T/proxy.log' '$T/stderr' '$T/audit.jsonl'"
check "the proxy still runs" kill -0 "$PX_PID"
check "no sanitizer report in the proxy's stderr" bash -c "! grep -q 'AddressSanitizer\|runtime error' '$T/stderr'"
