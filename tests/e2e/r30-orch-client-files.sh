#!/usr/bin/env bash
# r30-orch-client-files.sh: named credentials' client files (issue 30, item
# 2) with real clients in real sandboxes (the local runtime) through the
# real orchestrator and egress proxy:
#   - declarations with a bad "client" stop the proxy's load, naming why;
#   - a session whose policy names the credentials gets ~/.npmrc and
#     ~/.config/pip/pip.conf written at attach: placeholders only, mode
#     0600, owned by the sandbox user, rewritten when they are changed;
#   - npm install of @acme/private-lib from Verdaccio (auth required; its
#     tarball on another host, blobhost, which must get no credential) and
#     pip install of a private wheel from nginx behind auth_basic, each run
#     by the client alone from those files;
#   - afterwards the real secrets are nowhere the sandbox can read (its
#     environment, the files, the clients' caches and logs), and each
#     upstream's log shows the real credential was used;
#   - the fake and kubernetes runtimes (child runs, --fake and --k8s: the
#     real agent on the host; for kubernetes the fake API server and a
#     stand-in proxy admin) get the same variables and files.
. "$(dirname "$0")/../lib/common.sh"

# The kubernetes runtime's part (a child run, --k8s: the fake API server,
# pods whose agent runs on the host, the stand-in proxy admin answering a
# register with the credentials of $T/k8s-creds.json as the proxy would).
if [ "${1:-}" = --k8s ]; then
	. "$TOP/tests/k8s/lib.sh"
	printf '%s\n' '{"npm":{"form":"bearer","hosts":["npm.acme.test"],"env":["NPM_TOKEN"],"client":{"npm":"https://npm.acme.test/","scope":"@acme"}},"s3":{"form":"sigv4","hosts":["s3.test"],"client":{"aws":"default","region":"eu-west-1"}}}' >"$T/k8s-creds.json"
	K8S_POD_CMD="exec python3 $K8S_DIR/fake_proxy_admin.py \$ADMIN_PORT $T/admin-token $T/proxy-record.jsonl $T/k8s-creds.json" k8s_setup
	k8s_orch_setup
	check "k8s: orchestrator starts" k8s_orch_start
	orch_rest POST /v1/sessions -d '{"id":"cf-k","policy":{"credentials":["npm","s3"]}}' >/dev/null
	out=$(mcp_tool cf-k shell '{"command":"echo tok=$NPM_TOKEN; cat \"$HOME/.npmrc\" \"$HOME/.aws/credentials\" \"$HOME/.aws/config\"; stat -c %a \"$HOME/.npmrc\" \"$HOME/.aws/credentials\" \"$HOME/.aws/config\""}')
	ph=$(grep -oE '^tok=PXC[A-Z2-7]{29}$' <<<"$out" | cut -d= -f2)
	check "k8s: the credential's variable is a placeholder" test -n "$ph"
	check "k8s: ~/.npmrc has it as the token" grep -qx "//npm.acme.test/:_authToken=$ph" <<<"$out"
	check "k8s: ~/.aws/credentials has the default profile's placeholders" \
		grep -qE '^aws_secret_access_key = PXC[A-Z2-7]{29}$' <<<"$out"
	check "k8s: ~/.aws/config has the region" grep -qx 'region = eu-west-1' <<<"$out"
	check "k8s: all three 0600" test "$(grep -cx 600 <<<"$out")" = 3 || sed 's/^/# /' <<<"$out" >&2
	check "k8s: the orchestrator logged the files" grep -q "session=cf-k .*client files written=3 failed=0" "$T/orch.log"
	orch_rest DELETE /v1/sessions/cf-k >/dev/null
	k8s_no_violations
	exit 0
fi

if [ "${1:-}" = --fake ]; then
	export ORCH_TEST_RUNTIME=fake
	. "$TOP/tests/lib/fakegit.sh"
	. "$TOP/tests/lib/proxy.sh"
	fx_pki && fx_tokens || { fail "fake: fixtures"; exit 1; }
	GH_PORT=$(free_port) API_PORT=$(free_port) GL_PORT=$(free_port)
	printf 'npm-fake-REAL-%s\n' "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" >"$T/npm.tok"
	cat >"$T/creds.lua" <<EOF
return { name = "clientfiles", credentials = {
  { name = "npm", form = "bearer", secret = "file:$T/npm.tok", hosts = { "npm.acme.test" },
    env = { "NPM_TOKEN" }, client = { npm = "https://npm.acme.test/", scope = "@acme" } },
  { name = "reg", form = "basic", user = "bot", secret = "file:$T/npm.tok",
    hosts = { "registry.acme.test" }, client = { docker = "registry.acme.test:5000" } },
} }
EOF
	PX_ADDONS="[$TOP/addons/github.lua, $T/creds.lua]" px_config && px_start ||
		{ fail "fake: proxy start"; exit 1; }
	. "$TOP/tests/mcp/orch-lib.sh"
	ORCH_FAKE_EXTRA="proxy_admin: $PX_ADMIN
  proxy_addr: 127.0.0.1:$PX_PORT
  proxy_ca: $PX_CA" orch_config
	check "fake: orch starts" orch_start
	rest POST /v1/sessions -H 'Content-Type: application/json' \
		-d '{"id":"cf-f","policy":{"credentials":["npm","reg"]}}' >/dev/null
	out=$(mcp_tool cf-f shell '{"command":"echo tok=$NPM_TOKEN; cat \"$HOME/.npmrc\" \"$HOME/.docker/config.json\"; stat -c %a \"$HOME/.npmrc\" \"$HOME/.docker/config.json\""}')
	ph=$(grep -oE '^tok=PXC[A-Z2-7]{29}$' <<<"$out" | cut -d= -f2)
	check "fake: the credential's variable is a placeholder" test -n "$ph"
	check "fake: ~/.npmrc has it as the token" grep -qx "//npm.acme.test/:_authToken=$ph" <<<"$out"
	check "fake: ~/.docker/config.json has the registry" grep -qF '"registry.acme.test:5000"' <<<"$out"
	check "fake: both 0600" test "$(grep -cx 600 <<<"$out")" = 2 || sed "s/^/# /" <<<"$out" >&2
	check "fake: no value in them" not_contains <(echo "$out") "$(cat "$T/npm.tok")"
	check "fake: the orchestrator logged the files" grep -q "session=cf-f .*client files written=2 failed=0" "$ORCH_LOG"
	rest DELETE /v1/sessions/cf-f >/dev/null
	exit 0
fi

if [ "$(id -u)" != 0 ] || ! command -v bwrap >/dev/null 2>&1; then
	skip "client files (local runtime)" "the local runtime needs root and bwrap"
	bash "$0" --fake; rc=$?
	bash "$0" --k8s || rc=1
	exit $rc
fi
if [ -z "${E2E_NETNS:-}" ]; then
	unshare --net env E2E_NETNS=1 bash -c 'ip link set lo up && exec bash "$0" "$@"' "$0" "$@" &
	child=$!
	on_exit "kill $child 2>/dev/null; wait $child 2>/dev/null"
	wait "$child"
	exit $?
fi
export ORCH_TEST_RUNTIME=local
PY=/usr/bin/python3
need() { command -v "$1" >/dev/null 2>&1 || { fail "missing $1" "install it (make deps)"; exit 1; }; }
need node; need npm; need nginx; need jq
[ -d "$TOP/tests/cred/node_modules/verdaccio" ] ||
	{ fail "verdaccio" "tests/cred/node_modules missing (scripts/deps-npm.sh)"; exit 1; }
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
fx_pki && fx_tokens || { fail "fixtures"; exit 1; }
GH_PORT=$(free_port) API_PORT=$(free_port) GL_PORT=$(free_port)

# ---- a leaf of the test CA for the upstreams' names ----
(
	cd "$PKI" || exit 1
	openssl ecparam -name prime256v1 -genkey -noout -out up.key 2>/dev/null
	openssl req -new -key up.key -subj /CN=npm.acme.test -out up.csr 2>/dev/null
	printf 'subjectAltName=DNS:npm.acme.test,DNS:blob.acme.test,DNS:pypi.acme.test,DNS:localhost,IP:127.0.0.1,IP:127.0.0.2\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >up.ext
	openssl x509 -req -in up.csr -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days 2 \
		-extfile up.ext -out up.pem 2>/dev/null
) || { fail "leaf certificate"; exit 1; }

# ---- bad declarations: the load stops, naming the entry and why ----
bad_decl() {	# bad_decl NAME LUA-ENTRY EXPECTED
	printf 'return { name = "bad", credentials = { %s } }\n' "$2" >"$T/bad.lua"
	PX_ADDONS="[$T/bad.lua]" px_config bad
	if "$PROXY_BIN" -n -f "$T/bad/proxy.yaml" >"$T/bad.out" 2>&1; then
		fail "declaration refused: $1" "the config was taken"
	elif grep -qF -- "$3" "$T/bad.out"; then
		ok "declaration refused: $1"
	else
		fail "declaration refused: $1" "$(tail -n 3 "$T/bad.out")"
	fi
}
DECL='name = "x", secret = "env:HOME", hosts = { "npm.acme.test", "*.pypi.test" }'
bad_decl "client not a table" "{ $DECL, form = \"bearer\", client = \"npm\" }" "x: client is a table"
bad_decl "an unknown client key" "{ $DECL, form = \"bearer\", client = { yarn = \"https://npm.acme.test/\" } }" "client keys are npm, pip, maven, docker, aws and scope"
bad_decl "two clients" "{ $DECL, form = \"bearer\", client = { npm = \"https://npm.acme.test/\", pip = \"https://npm.acme.test/\" } }" "client names one client"
bad_decl "scope alone" "{ $DECL, form = \"bearer\", client = { scope = \"@acme\" } }" "client names one client"
bad_decl "npm with form basic" "{ $DECL, form = \"basic\", user = \"u\", client = { npm = \"https://npm.acme.test/\" } }" "client npm needs form bearer"
bad_decl "an npm URL on another host" "{ $DECL, form = \"bearer\", client = { npm = \"https://evil.test/\" } }" "client npm is a https URL on one of hosts"
bad_decl "an npm URL over http" "{ $DECL, form = \"bearer\", client = { npm = \"http://npm.acme.test/\" } }" "client npm is a https URL"
bad_decl "a URL with a newline" "{ $DECL, form = \"bearer\", client = { npm = \"https://npm.acme.test/\\n//evil.test/:_authToken=x\" } }" "client npm is a https URL"
bad_decl "a URL without the final /" "{ $DECL, form = \"bearer\", client = { npm = \"https://npm.acme.test/r\" } }" "client npm is a https URL"
bad_decl "a scope with a newline" "{ $DECL, form = \"bearer\", client = { npm = \"https://npm.acme.test/\", scope = \"@a\\nregistry=x\" } }" "client scope is npm's"
bad_decl "a scope on pip" "{ $DECL, form = \"basic\", user = \"u\", client = { pip = \"https://a.pypi.test/simple/\", scope = \"@a\" } }" "client scope is npm's"
bad_decl "pip with form bearer" "{ $DECL, form = \"bearer\", client = { pip = \"https://a.pypi.test/simple/\" } }" "client pip needs form basic"
bad_decl "a maven id with markup" "{ $DECL, form = \"basic\", user = \"u\", client = { maven = \"a</id>\" } }" "client maven is a server id"
bad_decl "a docker registry not in hosts" "{ $DECL, form = \"basic\", user = \"u\", client = { docker = \"registry.evil.test\" } }" "client docker is a registry"
bad_decl "aws on a bearer credential" "{ $DECL, form = \"bearer\", client = { aws = \"default\" } }" "client aws needs form sigv4"

# ---- the upstreams: Verdaccio (tarballs on blobhost), nginx with Basic ----
NPM_PW=alice-REAL$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
PIP_PW=pip-REAL$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
VMP=$(free_port) BLP=$(free_port) NGP=$(free_port)
VD_CERT=$PKI/up.pem VD_KEY=$PKI/up.key VD_CA=$PKI/ca.pem
. "$TOP/tests/lib/verdaccio.sh"
vd_users "alice:$NPM_PW"
vd_start main "$VMP" "https://blob.acme.test/"
vd_blobhost "$BLP" 127.0.0.2 "$PKI/up.pem" "$PKI/up.key" || { fail "blobhost"; exit 1; }

# a wheel written by hand (a zip with its dist-info), and a simple index
mkdir -p "$T/www/simple/acmepriv" "$T/www/packages"
"$PY" - "$T/www/packages" <<'EOF' || { fail "wheel"; exit 1; }
import base64, hashlib, sys, zipfile
d = sys.argv[1]
name = "acmepriv-1.0.0-py3-none-any.whl"
files = {
    "acmepriv/__init__.py": b'VERSION = "acmepriv 1.0.0"\n',
    "acmepriv-1.0.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: acmepriv\nVersion: 1.0.0\n",
    "acmepriv-1.0.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: r30\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
rec = []
for p, b in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
    rec.append("%s,sha256=%s,%d" % (p, h, len(b)))
rec.append("acmepriv-1.0.0.dist-info/RECORD,,")
with zipfile.ZipFile(d + "/" + name, "w") as z:
    for p, b in files.items():
        z.writestr(p, b)
    z.writestr("acmepriv-1.0.0.dist-info/RECORD", "\n".join(rec) + "\n")
EOF
WSHA=$(sha256sum "$T/www/packages/acmepriv-1.0.0-py3-none-any.whl" | cut -d' ' -f1)
printf '<!DOCTYPE html><html><body><a href="../../packages/acmepriv-1.0.0-py3-none-any.whl#sha256=%s">acmepriv-1.0.0-py3-none-any.whl</a></body></html>\n' \
	"$WSHA" >"$T/www/simple/acmepriv/index.html"
printf 'ci-bot:%s\n' "$(openssl passwd -apr1 "$PIP_PW")" >"$T/htpasswd"
mkdir -p "$T/ngx"
cat >"$T/ngx/nginx.conf" <<EOF
daemon off;
pid $T/ngx/nginx.pid;
error_log $T/ngx/error.log;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $T/ngx/tmp; proxy_temp_path $T/ngx/tmp;
	fastcgi_temp_path $T/ngx/tmp; uwsgi_temp_path $T/ngx/tmp; scgi_temp_path $T/ngx/tmp;
	log_format cred '\$remote_user \$status \$request_uri auth=\$http_authorization';
	server {
		listen 127.0.0.1:$NGP ssl;
		ssl_certificate $PKI/up.pem;
		ssl_certificate_key $PKI/up.key;
		access_log $T/ngx/access.log cred;
		root $T/www;
		auth_basic "acme";
		auth_basic_user_file $T/htpasswd;
	}
}
EOF
mkdir -p "$T/ngx/tmp"
nginx -c "$T/ngx/nginx.conf" -e "$T/ngx/error.log" >"$T/ngx/out" 2>&1 &
track_pid $!

# ---- the proxy with the two credentials ----
printf '%s' "$PIP_PW" >"$T/pip.pw"
check "Verdaccio up" vd_wait "https://localhost:$VMP/"
NPM_TOK=$(vd_token "https://localhost:$VMP/" alice "$NPM_PW")
check "a Verdaccio token for alice" test -n "$NPM_TOK"
printf '%s\n' "$NPM_TOK" >"$T/npm.tok"
publish() { vd_publish "https://localhost:$VMP/" "$NPM_TOK" 1.0.0 >"$T/publish.out" 2>&1; }
check "npm publish @acme/private-lib (on the host, with the token)" publish
cat >"$T/creds.lua" <<EOF
return { name = "clientfiles", credentials = {
  { name = "npm", form = "bearer", secret = "file:$T/npm.tok", hosts = { "npm.acme.test" },
    client = { npm = "https://npm.acme.test/", scope = "@acme" } },
  { name = "pypi", form = "basic", user = "ci-bot", secret = "file:$T/pip.pw",
    hosts = { "pypi.acme.test" }, client = { pip = "https://pypi.acme.test/simple/" } },
} }
EOF
PX_ADDONS="[$TOP/addons/github.lua, $T/creds.lua]" PX_RESOLVE="  \"npm.acme.test:443\": \"127.0.0.1:$VMP\"
  \"blob.acme.test:443\": \"127.0.0.2:$BLP\"
  \"pypi.acme.test:443\": \"127.0.0.1:$NGP\"" px_config && px_start || { fail "proxy start"; exit 1; }
ok "proxy start (client declarations taken)"
reg=$(px_admin '{"op":"register","id":"cf-probe","secret":"0123456789abcdef","policy":{"credentials":["npm","pypi"]}}')
check "the register reply echoes each credential's client" \
	test "$(jq -c '[.credentials.npm.client, .credentials.pypi.client]' <<<"$reg")" = \
	'[{"npm":"https://npm.acme.test/","scope":"@acme"},{"pip":"https://pypi.acme.test/simple/"}]'
px_admin '{"op":"deregister","id":"cf-probe"}' >/dev/null

# ---- an image: busybox plus the host's node, npm, python3 and pip ----
. "$TOP/tests/mcp/orch-lib.sh"
client_image() {
	local d=$1 libs
	cp -a "$ORCH_BB" "$d" || return 1
	mkdir -p "$d/usr/bin" "$d/usr/lib/node_modules" "$d/usr/lib/python3/dist-packages"
	cp -l /usr/bin/node "$d/usr/bin/node" 2>/dev/null || cp /usr/bin/node "$d/usr/bin/node" || return 1
	cp -al /usr/lib/node_modules/npm "$d/usr/lib/node_modules/" 2>/dev/null ||
		cp -a /usr/lib/node_modules/npm "$d/usr/lib/node_modules/" || return 1
	ln -s ../lib/node_modules/npm/bin/npm-cli.js "$d/usr/bin/npm"
	[ -e "$d/usr/bin/env" ] || ln -s ../../bin/env "$d/usr/bin/env"	# npm's #!
	cp -l /usr/bin/python3.11 "$d/usr/bin/" 2>/dev/null || cp /usr/bin/python3.11 "$d/usr/bin/" || return 1
	ln -s python3.11 "$d/usr/bin/python3"
	cp -al /usr/lib/python3.11 "$d/usr/lib/" 2>/dev/null || cp -a /usr/lib/python3.11 "$d/usr/lib/" || return 1
	rm -f "$d/usr/lib/python3.11/EXTERNALLY-MANAGED"
	cp -al /usr/lib/python3/dist-packages/pip "$d/usr/lib/python3/dist-packages/" 2>/dev/null ||
		cp -a /usr/lib/python3/dist-packages/pip "$d/usr/lib/python3/dist-packages/" || return 1
	libs=$(ldd /usr/bin/node /usr/bin/python3.11 /usr/lib/python3.11/lib-dynload/*.so 2>/dev/null |
		awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $2 ~ /^\(/ {print $1}' | sort -u)
	[ -n "$libs" ] || return 1
	# shellcheck disable=SC2086
	cp -lL --parents $libs "$d/" 2>/dev/null || cp -L --parents $libs "$d/"
}
check "client image assembled from the host's node, npm and python" client_image "$T/climg"
# The sandboxes trust the proxy's CA, and the test CA for the blob host,
# which the proxy does not intercept (a tunnel: as a CDN with a public CA).
cat "$PX_CA" "$PKI/ca.pem" >"$T/sandbox-ca.pem"
ORCH_LOCAL_YAML="$ORCH_LOCAL_YAML
  proxy_admin_socket: $PX_ADMIN
  proxy_ca_cert: $T/sandbox-ca.pem"
printf '%s\n' "$ORCH_LOCAL_YAML" >"$T/rt.yaml"
sbx image add climg "$T/climg" >/dev/null || { fail "image add"; exit 1; }
orch_config "sandbox:" "  image: climg" "homes:" "  size: 16MiB" "pool:" "  min_idle: 1"
check "orch starts (local runtime)" orch_start
# cf-1 claims the warm member (the files come from the claim's attach);
# the fake and kubernetes parts below create theirs.
pool_ready() { grep -q "warm pool member ready" "$ORCH_LOG"; }
check "a warm sandbox is ready" wait_until 60 pool_ready

# has OUT TEXT: OUT holds TEXT (else OUT's tail, for the log)
has() { grep -qF -- "$2" <<<"$1" || { head -n 40 <<<"$1" | sed 's/^/# /' >&2; return 1; }; }
sh_in() {	# sh_in SESSION COMMAND: the shell tool's text
	mcp_tool "$1" shell "$(jq -nc --arg c "$2" '{command: $c, timeout: 150}')" --max-time 200 |
		sed '/^\[exit code [0-9]*, [0-9]* ms\]$/d'
}
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' -d '{"id":"cf-1","policy":{"credentials":["npm","pypi"]}}')
check "a session with the two credentials" test "$(jq -r .state <<<"$out" 2>/dev/null)" = running
check "... claimed from the warm pool" grep -q "session=cf-1 sandbox=.* claimed from pool" "$ORCH_LOG"
check "the orchestrator wrote its client files" wait_until 10 \
	grep -q "session=cf-1 .*client files written=2 failed=0" "$ORCH_LOG"
reg=$(px_admin '{"op":"stats"}')
sb=$(sbx_of cf-1)
npmrc=$(sh_in cf-1 'cat "$HOME/.npmrc"; echo; stat -c "%a %U" "$HOME/.npmrc" "$HOME/.config/pip/pip.conf"; id -un')
check ".npmrc: the scope's registry line" has "$npmrc" "@acme:registry=https://npm.acme.test/"
check ".npmrc: the token line, a placeholder" grep -qE '^//npm\.acme\.test/:_authToken=PXC[A-Z2-7]{29}$' <(echo "$npmrc")
user=$(tail -n1 <<<"$npmrc")
check "both files are 0600 and the sandbox user's ($user)" \
	test "$(grep -cx "600 $user" <<<"$npmrc")" = 2
pipconf=$(sh_in cf-1 'cat "$HOME/.config/pip/pip.conf"')
check "pip.conf: index-url with user:placeholder" grep -qE '^index-url = https://ci-bot:PXC[A-Z2-7]{29}@pypi\.acme\.test/simple/$' <(echo "$pipconf")

# ---- npm install: the client alone, from ~/.npmrc ----
out=$(sh_in cf-1 'mkdir -p /workspace/app && cd /workspace/app && npm install --no-audit --no-fund @acme/private-lib 2>&1; echo "rc=$?"; node -e "console.log(require(\"@acme/private-lib\"))"')
check "npm install @acme/private-lib in the sandbox" has "$out" "rc=0"
check "... and the package loads" has "$out" "private-lib 1.0.0"
vlog=$T/verdaccio-main.log
check "Verdaccio: the metadata request authenticated as alice (the real token)" \
	bash -c "grep '^{' '$vlog' | jq -se 'any(.[]; (.user // \"\") == \"alice\" and ((.req.url // .request.url // \"\") | test(\"private-lib\")))' >/dev/null"
check "blobhost served the tarball" \
	bash -c "jq -se 'any(.[]; .status == 200 and (.path | endswith(\"/private-lib-1.0.0.tgz\")))' '$T/blobhost.log' >/dev/null"
check "... and got no credential (no Authorization, no token, no placeholder)" bash -c \
	"jq -se 'all(.[]; all(.headers[]; .[0] | ascii_downcase | IN(\"authorization\", \"cookie\", \"proxy-authorization\") | not))' '$T/blobhost.log' >/dev/null && ! grep -qF '$NPM_TOK' '$T/blobhost.log' && ! grep -qE 'PXC[A-Z2-7]{29}' '$T/blobhost.log'"

# ---- pip install: the client alone, from pip.conf ----
out=$(sh_in cf-1 'cd /workspace && python3 -m pip install --disable-pip-version-check --target /workspace/pylib acmepriv 2>&1; echo "rc=$?"; PYTHONPATH=/workspace/pylib python3 -c "import acmepriv; print(acmepriv.VERSION)"')
check "pip install acmepriv in the sandbox" has "$out" "rc=0"
check "... and the module imports" has "$out" "acmepriv 1.0.0"
want_auth="auth=Basic $(printf 'ci-bot:%s' "$PIP_PW" | base64 -w0)"
check "nginx: the index and the wheel fetched as ci-bot with the real password" bash -c \
	"grep -F 'ci-bot 200 /simple/acmepriv/ $want_auth' '$T/ngx/access.log' && grep -F 'ci-bot 200 /packages/acmepriv-1.0.0-py3-none-any.whl' '$T/ngx/access.log'" >/dev/null

# ---- no secret anywhere the sandbox can read ----
# The secrets go in base64, so the command (in the sandbox's /proc) never
# holds them; the same search must find a placeholder (it can fail).
leak_scan() {	# leak_scan SESSION STRING: where the sandbox holds STRING
	sh_in "$1" "s=\$(echo $(printf '%s' "$2" | base64 -w0) | base64 -d); env | grep -cF \"\$s\"; for d in /workspace /tmp /root /home /etc /var /run; do [ -d \"\$d\" ] && grep -rlF \"\$s\" \"\$d\" 2>/dev/null; done; echo end"
}
ph=$(grep -oE 'PXC[A-Z2-7]{29}' <<<"$npmrc" | head -n1)
home=$(sh_in cf-1 'echo "$HOME"')
out=$(leak_scan cf-1 "$ph")
check "the scan finds the npm placeholder in $home/.npmrc (the scan works)" has "$out" "$home/.npmrc"
for s in "$NPM_TOK" "$NPM_PW" "$PIP_PW"; do
	out=$(leak_scan cf-1 "$s")
	check "no real secret (${s:0:9}...) in the env, files, caches or logs" test "$(printf '%s\n' "$out" | tr -d '\r')" = "$(printf '0\nend')"
done
out=$(sh_in cf-1 'ls -d "$HOME/.npm/_cacache" "$HOME/.npm/_logs" "$HOME/.cache/pip"')
check "the npm and pip caches and logs were searched (they exist)" bash -c \
	"[ \$(grep -c '^$home/' <<<'$out') = 3 ]"

# ---- rewritten on re-attach: a changed file comes back ----
sh_in cf-1 'echo "//npm.acme.test/:_authToken=stolen" >"$HOME/.npmrc"; chmod 644 "$HOME/.npmrc"' >/dev/null
rest POST /v1/sessions/cf-1/stop >/dev/null
out=$(sh_in cf-1 'cat "$HOME/.npmrc"; stat -c %a "$HOME/.npmrc"')
check "after a stop and resume, ~/.npmrc is written again, 0600" bash -c \
	"grep -qx '//npm.acme.test/:_authToken=$ph' <<<'$out' && grep -qx 600 <<<'$out'"

# ---- a session without the credentials gets no files ----
rest POST /v1/sessions -H 'Content-Type: application/json' -d '{"id":"cf-2","policy":{"credentials":[]}}' >/dev/null
out=$(sh_in cf-2 'ls -a "$HOME"')
check "a session without them: no .npmrc, no pip.conf" bash -c "! grep -qx .npmrc <<<'$out' && ! grep -qx .config <<<'$out'"
# ---- a session with a user: the files go into the user's home ----
rest POST /v1/sessions -H 'Content-Type: application/json' -d '{"id":"cf-3","user":"alice","policy":{"credentials":["npm"]}}' >/dev/null
out=$(sh_in cf-3 'echo "home=$HOME"; cat /home/user/.npmrc; stat -c %a /home/user/.npmrc')
check "a session with a home: HOME is /home/user" has "$out" "home=/home/user"
check "... and ~/.npmrc is there, 0600, with the token placeholder" bash -c \
	"grep -qE '^//npm\.acme\.test/:_authToken=PXC[A-Z2-7]{29}\$' <<<'$out' && grep -qx 600 <<<'$out'"
rest DELETE /v1/sessions/cf-1 >/dev/null
rest DELETE /v1/sessions/cf-2 >/dev/null
rest DELETE /v1/sessions/cf-3 >/dev/null

# ---- the fake runtime: the same variables and files ----
bash "$0" --fake || fail "fake runtime part" "see the lines above"
# ---- the kubernetes runtime: the same variables and files ----
bash "$0" --k8s || fail "kubernetes runtime part" "see the lines above"
exit 0
