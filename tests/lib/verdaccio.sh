# tests/lib/verdaccio.sh: a private npm registry, Verdaccio (npm package,
# installed from tests/cred/package-lock.json), on loopback TLS, with
# authentication required to read or publish anything, and a scoped
# package @acme/private-lib published into it. Source after
# tests/lib/common.sh. Needs a leaf of the test CA in VD_CERT/VD_KEY
# (default $T/pki/loopback.*) and the CA in VD_CA.
#
#   vd_start NAME PORT [PUBLIC_URL]
#       starts instance NAME on https://localhost:PORT (htpasswd auth: the
#       users of vd_users; no uplinks, no self-registration). All instances
#       share one storage. PUBLIC_URL (Verdaccio's VERDACCIO_PUBLIC_URL) is
#       the base its package documents give tarball URLs under: another host
#       makes npm fetch tarballs there (see vd_blobhost). Log (JSON, one
#       line per request, "user" is who it authenticated):
#       $T/verdaccio-NAME.log. Sets VD_URL (of the last started). Returns
#       at once (Verdaccio takes a second or two): vd_wait before use. Call
#       it in the script's own shell, not in a subshell (`&`), so its
#       process is tracked and ended at exit.
#   vd_wait URL                 until the instance at URL answers /-/ping
#   vd_users USER:PASS...       the htpasswd file (call before vd_start)
#   vd_token URL USER PASS      logs in (npm's legacy login: PUT
#                               /-/user/org.couchdb.user:USER with Basic) and
#                               prints the token npm uses as _authToken
#   vd_publish URL TOKEN VERSION   publishes @acme/private-lib@VERSION
#                               (index.js exports "private-lib VERSION")
#   vd_npmrc FILE URL [TOKEN]   a user npmrc: @acme from URL, the CA, and
#                               the token for URL's host (none without TOKEN)
#   vd_npm NPMRC ARGS...        npm with that npmrc only and a cache of its
#                               own (NPMRC.cache: a case never reads another's)
#   vd_blobhost PORT ADDR CERT KEY   tests/fixtures/blobhost.py on ADDR:PORT
#                               serving the storage's tarballs without auth,
#                               log $T/blobhost.log
PY=${PY:-/usr/bin/python3}
VD_DIR=$T/verdaccio
VD_CERT=${VD_CERT:-$T/pki/loopback.pem}
VD_KEY=${VD_KEY:-$T/pki/loopback.key}
VD_CA=${VD_CA:-$T/pki/ca.pem}
VD_BIN=$TOP/tests/cred/node_modules/verdaccio/bin/verdaccio

vd_users() {
	local u
	mkdir -p "$VD_DIR/storage"
	for u in "$@"; do
		"$PY" -W ignore -c 'import crypt, sys; u, p = sys.argv[1].split(":", 1); print(u + ":" + crypt.crypt(p, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))' "$u"
	done >"$VD_DIR/htpasswd"
}

vd_start() {
	local name=$1 port=$2 pub=${3:-}
	mkdir -p "$VD_DIR/storage"
	# max_users 1 with the users already in htpasswd: nobody can register
	# (-1 would also refuse the logins of existing users)
	cat >"$VD_DIR/$name.yaml" <<EOF
storage: $VD_DIR/storage
auth:
  htpasswd:
    file: $VD_DIR/htpasswd
    max_users: 1
uplinks: {}
packages:
  '@acme/*':
    access: \$authenticated
    publish: \$authenticated
    unpublish: \$authenticated
  '**':
    access: \$authenticated
    publish: \$authenticated
web:
  enable: false
listen: https://127.0.0.1:$port
https:
  key: $VD_KEY
  cert: $VD_CERT
log: { type: stdout, format: json, level: http }
EOF
	VERDACCIO_PUBLIC_URL=$pub node "$VD_BIN" --config "$VD_DIR/$name.yaml" \
		>"$T/verdaccio-$name.log" 2>&1 &
	track_pid $!
	VD_URL=https://localhost:$port/
}

vd_wait() {
	wait_for 30 curl -sf --cacert "$VD_CA" "${1}-/ping"
}

vd_token() {
	curl -sf --cacert "$VD_CA" -u "$2:$3" -X PUT -H 'content-type: application/json' \
		"${1}-/user/org.couchdb.user:$2" \
		-d "{\"name\":\"$2\",\"password\":\"$3\"}" | jq -r .token
}

vd_npmrc() { # FILE URL [TOKEN]
	local hostpart=${2#https:}
	{
		echo "@acme:registry=$2"
		echo "registry=$2"
		echo "cafile=$VD_CA"
		echo "audit=false"
		echo "fund=false"
		echo "update-notifier=false"
		[ -z "${3:-}" ] || echo "$hostpart:_authToken=$3"
	} >"$1"
}

vd_npm() {
	local rc=$1
	shift
	# only this npmrc (no user or global one of the machine), its own cache
	NPM_CONFIG_USERCONFIG=$rc NPM_CONFIG_GLOBALCONFIG=/dev/null \
		NPM_CONFIG_CACHE=$rc.cache HOME=$T/npm-home npm --no-audit --no-fund "$@"
}

vd_publish() {
	local url=$1 tok=$2 ver=$3 d=$T/pkg-private-lib
	mkdir -p "$d"
	printf '{"name":"@acme/private-lib","version":"%s","main":"index.js","license":"UNLICENSED"}\n' \
		"$ver" >"$d/package.json"
	printf 'module.exports = "private-lib %s";\n' "$ver" >"$d/index.js"
	vd_npmrc "$T/publish.npmrc" "$url" "$tok"
	(cd "$d" && vd_npm "$T/publish.npmrc" publish --registry "$url" --loglevel=error)
}

vd_blobhost() {
	"$PY" "$TOP/tests/fixtures/blobhost.py" --listen "$1" --addr "$2" --cert "$3" --key "$4" \
		--root "$VD_DIR/storage" --log "$T/blobhost.log" >"$T/blobhost.out" 2>&1 &
	track_pid $!
	wait_for 10 bash -c "exec 3<>/dev/tcp/$2/$1"
}
