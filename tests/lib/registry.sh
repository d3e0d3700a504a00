# tests/lib/registry.sh: the real distribution registry (Debian's
# docker-registry) on loopback TLS, with the two kinds of authentication
# registries use, and a tiny OCI image to push through it. Source after
# tests/lib/common.sh; needs a test PKI (tests/fixtures/mkpki.sh) in $REG_PKI
# (default $T/pki; its loopback.pem serves localhost and 127.0.0.1 unless
# REG_CERT/REG_KEY name another leaf of its CA).
#
#   reg_start_token PORT TOKEN_PORT USER:PASS:GRANTS...
#       auth: token (realm https://localhost:TOKEN_PORT/token, service
#       registry.test, issuer regtoken) answered by tests/fixtures/regtoken.py,
#       whose ES256 signing certificate is the registry's rootcertbundle.
#       GRANTS as regtoken.py's --user ("acme/*=pull,push").
#       Sets REG_TOKEN_URL (https://localhost:PORT), REGTOKEN_LOG.
#   reg_start_basic PORT USER:PASS...
#       auth: htpasswd (bcrypt), realm "basic-realm". Sets REG_BASIC_URL.
#   reg_oci_image DIR TAG
#       an OCI image layout in DIR (one 2-file layer, config, manifest) under
#       TAG; prints the layer digest.
#   reg_skopeo ARGS...
#       skopeo with a throwaway policy (accept anything: these tests check
#       authentication, not signatures), no auth file of the machine's, and
#       the test CA for every registry (--*-cert-dir are added by the caller
#       with "$REG_CERTS").
# Each registry's own log is $T/registry-NAME.log (its access log lines).
PY=${PY:-/usr/bin/python3}
REG_PKI=${REG_PKI:-$T/pki}
REG_CERT=${REG_CERT:-$REG_PKI/loopback.pem}
REG_KEY=${REG_KEY:-$REG_PKI/loopback.key}
REG_CERTS=$T/reg-certs

_reg_common() { # NAME PORT -> the config's common part on stdout
	mkdir -p "$T/registry-$1" "$REG_CERTS"
	cp "$REG_PKI/ca.pem" "$REG_CERTS/ca.crt"
	cat <<EOF
version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $T/registry-$1
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$2
  secret: $($PY -c 'import secrets; print(secrets.token_hex(16))')
  tls:
    certificate: $REG_CERT
    key: $REG_KEY
EOF
}

_reg_run() { # NAME PORT
	docker-registry serve "$T/registry-$1.yml" >"$T/registry-$1.log" 2>&1 &
	track_pid $!
	wait_port "$2" 15
}

reg_start_token() {
	local port=$1 tport=$2 u
	shift 2
	openssl ecparam -name prime256v1 -genkey -noout -out "$T/regtoken-sign.key" 2>/dev/null
	openssl req -x509 -new -key "$T/regtoken-sign.key" -sha256 -days 2 \
		-subj "/CN=regtoken signing" -out "$T/regtoken-sign.pem" 2>/dev/null
	{
		_reg_common token "$port"
		cat <<EOF
auth:
  token:
    realm: https://localhost:$tport/token
    service: registry.test
    issuer: regtoken
    rootcertbundle: $T/regtoken-sign.pem
EOF
	} >"$T/registry-token.yml"
	REGTOKEN_LOG=$T/regtoken.log
	local args=()
	for u in "$@"; do args+=(--user "$u"); done
	"$PY" "$TOP/tests/fixtures/regtoken.py" --listen "$tport" --cert "$REG_CERT" --key "$REG_KEY" \
		--sign-key "$T/regtoken-sign.key" --sign-cert "$T/regtoken-sign.pem" \
		--issuer regtoken --service registry.test "${args[@]}" --log "$REGTOKEN_LOG" \
		>"$T/regtoken.out" 2>&1 &
	track_pid $!
	_reg_run token "$port"
	wait_port "$tport" 10
	REG_TOKEN_URL=https://localhost:$port
}

reg_start_basic() {
	local port=$1 u
	shift
	for u in "$@"; do
		# bcrypt (the only hash distribution's htpasswd takes), cost 4: the
		# registry checks it on every request
		"$PY" -W ignore -c 'import crypt, sys; u, p = sys.argv[1].split(":", 1); print(u + ":" + crypt.crypt(p, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))' "$u"
	done >"$T/registry-htpasswd"
	{
		_reg_common basic "$port"
		cat <<EOF
auth:
  htpasswd:
    realm: basic-realm
    path: $T/registry-htpasswd
EOF
	} >"$T/registry-basic.yml"
	_reg_run basic "$port"
	REG_BASIC_URL=https://localhost:$port
}

reg_oci_image() {
	"$PY" - "$1" "$2" <<'PY'
import gzip, hashlib, io, json, os, sys, tarfile
d, tag = sys.argv[1], sys.argv[2]
blobs = os.path.join(d, "blobs", "sha256")
os.makedirs(blobs, exist_ok=True)
def put(data):
    h = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, h), "wb") as f:
        f.write(data)
    return "sha256:" + h, len(data)
raw = io.BytesIO()
with tarfile.open(fileobj=raw, mode="w") as t:
    for name, body in (("hello.txt", b"hello from a tiny image\n"), ("etc/tiny", b"1\n")):
        ti = tarfile.TarInfo(name); ti.size = len(body); ti.mtime = 0
        t.addfile(ti, io.BytesIO(body))
layer = gzip.compress(raw.getvalue(), mtime=0)
ldig, lsize = put(layer)
cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                  "rootfs": {"type": "layers",
                             "diff_ids": ["sha256:" + hashlib.sha256(raw.getvalue()).hexdigest()]}}).encode()
cdig, csize = put(cfg)
man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                  "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                             "digest": cdig, "size": csize},
                  "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                              "digest": ldig, "size": lsize}]}).encode()
mdig, msize = put(man)
with open(os.path.join(d, "index.json"), "w") as f:
    json.dump({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": mdig, "size": msize,
        "annotations": {"org.opencontainers.image.ref.name": tag}}]}, f)
with open(os.path.join(d, "oci-layout"), "w") as f:
    json.dump({"imageLayoutVersion": "1.0.0"}, f)
print(ldig)
PY
}

reg_skopeo() {
	[ -f "$T/reg-policy.json" ] ||
		echo '{"default":[{"type":"insecureAcceptAnything"}]}' >"$T/reg-policy.json"
	REGISTRY_AUTH_FILE=$T/reg-auth.json HOME=$T/reg-home \
		skopeo --policy "$T/reg-policy.json" "$@"
}
