#!/usr/bin/env bash
# r30-orch-mvn-cargo.sh: the maven and cargo client files (issue 30) used by
# the real clients, inside a real sandbox (the local runtime), through the
# real orchestrator and egress proxy, against private hosts with their own
# CA (tests/lib/upca.sh) that only the proxy trusts and can reach:
#   - declarations: the presets addons/creds/maven.lua and cargo.lua (with
#     cargo_index); a cargo client needing form header, field Authorization;
#   - the session gets ~/.m2/settings.xml (a <server> acme, the placeholder
#     as its password) and ~/.cargo/config.toml (the registry acme, sparse)
#     with ~/.cargo/credentials.toml (the placeholder as its token): 0600,
#     the sandbox user's;
#   - Maven: mvn runs IN the sandbox (the image gets the host's JDK and
#     Debian's maven as hard links, as r30-orch-client-files.sh gives it
#     node and python; the sandbox image itself has no java). Debian ships
#     no Maven plugins and there is no network, so the goal run is one the
#     test builds (tests/fixtures/r30-mvn-cargo: ShowMojo, which requires
#     the project's compile dependencies), installed into ~/.m2/repository
#     as `mvn install` would; Maven itself resolves com.acme:acme-priv:1.0.0
#     (pom, jar, checksums) from https://maven.acme.test/releases/ (nginx,
#     auth_basic), the repository id acme matched with the orchestrator's
#     settings.xml server; the goal loads a class from the jar. The only
#     set-up the command does is the sandbox's own proxy and CA for Java
#     (a global settings file with $HTTPS_PROXY, a trust store from
#     $SSL_CERT_FILE), which Java does not take from the environment.
#     Maven (wagon) sends its server's pair only after a 401, and the proxy
#     adds the real pair to every request to the host, so nginx never
#     challenges and the placeholder is never sent: Maven's debug log shows
#     it took the settings.xml server for the repository (username
#     deployer), the proxy's audit shows the pair added (maven:basic),
#     nginx the real pair;
#   - cargo: the rustup toolchain's cargo and rustc (1.74 or newer: sparse
#     registries with credential providers; Debian 12's cargo is 0.66) copied
#     into the image; `cargo generate-lockfile`, `cargo fetch` and `cargo
#     build --offline` of a project with acmecrate = { registry = "acme" },
#     from a sparse registry (config.json with auth-required, the index, the
#     .crate) that nginx serves only to the real token in Authorization.
#     The preset also sets CARGO_REGISTRIES_ACME_TOKEN; cargo runs without
#     it, so the token comes from credentials.toml (the audit shows the
#     placeholder cargo sent swapped, acme:swap), and fails with no token
#     when that file is moved away;
#   - each upstream's log shows the real credential; the real secrets are
#     nowhere the sandbox can read (env, files, ~/.m2, ~/.cargo caches).
. "$(dirname "$0")/../lib/common.sh"

if [ "$(id -u)" != 0 ] || ! command -v bwrap >/dev/null 2>&1; then
	skip "maven and cargo client files (local runtime)" "the local runtime needs root and bwrap"
	exit 0
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
need nginx; need jq; need mvn; need javac; need jar; need keytool
JHOME=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
JETC=/etc/$(basename "$JHOME" | sed 's/-[a-z0-9_]*$//')	# /etc/java-17-openjdk: the JDK's conf links
MVNHOME=$(dirname "$(dirname "$(readlink -f "$(command -v mvn)")")")
# cargo: the toolchain's own binary (rustup's cargo is a proxy to it)
CARGO=
for c in "$(command -v cargo 2>/dev/null)" "$HOME/.cargo/bin/cargo"; do
	[ -x "$c" ] || continue
	d=$("$(dirname "$c")/rustc" --print sysroot 2>/dev/null) || continue
	v=$("$d/bin/cargo" --version 2>/dev/null | sed -n 's/^cargo 1\.\([0-9]*\)\..*/\1/p')
	[ -n "$v" ] && [ "$v" -ge 74 ] && { CARGO=$d/bin/cargo; RSYS=$d; break; }
done
[ -n "$CARGO" ] || skip "cargo part" "no cargo 1.74+ (rustup's; Debian 12's cargo is too old for sparse registries with credential providers)"

. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
. "$TOP/tests/lib/upca.sh"
fx_tokens
PKI=$T/pki PX_NORESOLVE=1
mkdir -p "$PKI"
check "the private hosts' CA and leaf" \
	upca_mk "$PKI/ca.pem" "$PKI/ca.key" "$PKI/up.pem" "$PKI/up.key" maven.acme.test crates.acme.test localhost 127.0.0.1 ||
	exit 1

# ---- bad cargo declarations: the load stops, naming why ----
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
DECL='name = "x", secret = "env:HOME", hosts = { "crates.acme.test" }'
bad_decl "cargo with form bearer" "{ $DECL, form = \"bearer\", client = { cargo = \"https://crates.acme.test/index/\" } }" "client cargo needs form header"
bad_decl "cargo with another header" "{ $DECL, form = \"header\", field = \"X-Token\", client = { cargo = \"https://crates.acme.test/index/\" } }" "client cargo needs field Authorization"
bad_decl "a cargo index on another host" "{ $DECL, form = \"header\", field = \"Authorization\", client = { cargo = \"https://evil.test/index/\" } }" "client cargo is a sparse index's https URL"
bad_decl "a cargo index with a quote" "{ $DECL, form = \"header\", field = \"Authorization\", client = { cargo = 'https://crates.acme.test/\"x/' } }" "client cargo is a sparse index's https URL"

# ---- the upstreams: a Maven repository and a sparse cargo registry (nginx) ----
rnd() { od -An -N8 -tx1 /dev/urandom | tr -d ' \n'; }
MVN_PW=mvn-REAL$(rnd)
CARGO_TOK=cargo-REAL$(rnd)
. "$TOP/tests/fixtures/r30-mvn-cargo/mkrepo.sh"
check "the Maven repository, plugin and project built (javac, jar)" r30mvn_build "$T/mvn" || exit 1
check "the sparse registry built" "$PY" "$TOP/tests/fixtures/r30-mvn-cargo/mkcrate.py" "$T/crates" https://crates.acme.test/
printf 'deployer:%s\n' "$(openssl passwd -apr1 "$MVN_PW")" >"$T/htpasswd"
MVP=$(free_port) CGP=$(free_port)
mkdir -p "$T/ngx/tmp"
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
		listen 127.0.0.1:$MVP ssl;
		ssl_certificate $PKI/up.pem;
		ssl_certificate_key $PKI/up.key;
		access_log $T/ngx/maven.log cred;
		auth_basic "acme";
		auth_basic_user_file $T/htpasswd;
		location /releases/ { alias $T/mvn/repo/; }
	}
	server {
		listen 127.0.0.1:$CGP ssl;
		ssl_certificate $PKI/up.pem;
		ssl_certificate_key $PKI/up.key;
		access_log $T/ngx/cargo.log cred;
		root $T/crates;
		location / {
			if (\$http_authorization != "$CARGO_TOK") { return 401; }
		}
	}
}
EOF
nginx -c "$T/ngx/nginx.conf" -e "$T/ngx/error.log" >"$T/ngx/out" 2>&1 &
track_pid $!
check "nginx up (both servers)" wait_port "$CGP" 10

# ---- the proxy with the two presets ----
printf '%s\n' "$MVN_PW" >"$T/mvn.pw"
printf '%s\n' "$CARGO_TOK" >"$T/cargo.tok"
PX_ADDONS="[$TOP/addons/creds/maven.lua, $TOP/addons/creds/cargo.lua]" \
PX_ADDON_CONFIG="  maven_host: maven.acme.test
  maven_user: deployer
  maven_password: file:$T/mvn.pw
  maven_server: acme
  cargo_host: crates.acme.test
  cargo_token: file:$T/cargo.tok
  cargo_index: https://crates.acme.test/index/
  cargo_name: acme" \
PX_RESOLVE="  \"maven.acme.test:443\": \"127.0.0.1:$MVP\"
  \"crates.acme.test:443\": \"127.0.0.1:$CGP\"" px_config && px_start || { fail "proxy start"; exit 1; }
ok "proxy start (the maven and cargo presets)"
reg=$(px_admin '{"op":"register","id":"mc-probe","secret":"0123456789abcdef","policy":{"credentials":["maven","acme"]}}')
check "the register reply: maven's server id, cargo's index" \
	test "$(jq -c '[.credentials.maven.client, .credentials.acme.client, .credentials.acme.field]' <<<"$reg")" = \
	'[{"maven":"acme"},{"cargo":"https://crates.acme.test/index/"},"Authorization"]'
px_admin '{"op":"deregister","id":"mc-probe"}' >/dev/null

# ---- an image: busybox plus the host's JDK, maven, cargo and rustc ----
. "$TOP/tests/mcp/orch-lib.sh"
lnk() {	# lnk SRC DST: a hard-linked copy (a copy across file systems)
	mkdir -p "$(dirname "$2")" && { cp -al "$1" "$2" 2>/dev/null || cp -a "$1" "$2"; }
}
client_image() {
	local d=$1 libs
	cp -a "$ORCH_BB" "$d" || return 1
	lnk "$JHOME" "$d$JHOME" && lnk "$JETC" "$d$JETC" &&
	lnk "$MVNHOME" "$d$MVNHOME" && lnk /etc/maven "$d/etc/maven" &&
	lnk /usr/share/java "$d/usr/share/java" || return 1
	mkdir -p "$d/opt/r30" && cp -a "$T/mvn/plugin" "$d/opt/r30/m2" && cp -a "$T/mvn/app" "$d/opt/r30/mvnapp" ||
		return 1
	libs=$(ldd "$JHOME/bin/java" "$JHOME/bin/keytool" "$JHOME"/lib/*.so "$JHOME"/lib/server/*.so 2>/dev/null |
		awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $2 ~ /^\(/ {print $1}' | sort -u)
	if [ -n "$CARGO" ]; then
		lnk "$CARGO" "$d/opt/rust/bin/cargo" && lnk "$RSYS/bin/rustc" "$d/opt/rust/bin/rustc" &&
		lnk "$RSYS/lib" "$d/opt/rust/lib" || return 1
		libs="$libs $(ldd "$CARGO" "$RSYS/bin/rustc" "$RSYS"/lib/*.so* 2>/dev/null |
			awk '$2 == "=>" && $3 ~ /^\// && $3 !~ /rustup/ {print $3} $1 ~ /^\// && $2 ~ /^\(/ {print $1}' | sort -u)"
		mkdir -p "$d/opt/r30/cargoapp/src"
		printf '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nacmecrate = { version = "1", registry = "acme" }\n' \
			>"$d/opt/r30/cargoapp/Cargo.toml"
		printf 'pub fn version() -> &%sstatic str { acmecrate::VERSION }\n' "'" >"$d/opt/r30/cargoapp/src/lib.rs"
	fi
	[ -n "$libs" ] || return 1
	# shellcheck disable=SC2086
	cp -lL --parents $libs "$d/" 2>/dev/null || cp -L --parents $libs "$d/"
}
check "client image assembled from the host's JDK, maven and cargo" client_image "$T/climg" || exit 1
ORCH_LOCAL_YAML="$ORCH_LOCAL_YAML
  proxy_admin_socket: $PX_ADMIN
  proxy_ca_cert: $PX_CA"
printf '%s\n' "$ORCH_LOCAL_YAML" >"$T/rt.yaml"
sbx image add climg "$T/climg" >/dev/null || { fail "image add"; exit 1; }
orch_config "sandbox:" "  image: climg"
check "orch starts (local runtime)" orch_start

# has OUT TEXT: OUT holds TEXT (else OUT's tail, for the log)
has() { grep -qF -- "$2" <<<"$1" || { tail -n 40 <<<"$1" | sed 's/^/# /' >&2; return 1; }; }
sh_in() {	# sh_in SESSION COMMAND: the shell tool's text
	mcp_tool "$1" shell "$(jq -nc --arg c "$2" '{command: $c, timeout: 150}')" --max-time 200 |
		sed '/^\[exit code [0-9]*, [0-9]* ms\]$/d'
}
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' -d '{"id":"mc-1","policy":{"credentials":["maven","acme"]}}')
check "a session with the two credentials" test "$(jq -r .state <<<"$out" 2>/dev/null)" = running
check "the orchestrator wrote its client files" wait_until 10 \
	grep -q "session=mc-1 .*client files written=3 failed=0" "$ORCH_LOG"
files=$(sh_in mc-1 'cat "$HOME/.m2/settings.xml" "$HOME/.cargo/config.toml" "$HOME/.cargo/credentials.toml"; stat -c "%a %U" "$HOME/.m2/settings.xml" "$HOME/.cargo/config.toml" "$HOME/.cargo/credentials.toml"; id -un')
check "settings.xml: the server acme, user deployer" bash -c \
	"grep -qx '      <id>acme</id>' <<<'$files' && grep -qx '      <username>deployer</username>' <<<'$files'"
check "... its password a placeholder" grep -qE '^      <password>PXC[A-Z2-7]{29}</password>$' <<<"$files"
check "config.toml: the registry acme, sparse, with the cargo:token provider" bash -c \
	"grep -qx '\[registries.acme\]' <<<'$files' && grep -qx 'index = \"sparse+https://crates.acme.test/index/\"' <<<'$files' && grep -qx 'credential-provider = \[\"cargo:token\"\]' <<<'$files'"
check "credentials.toml: the token a placeholder" grep -qE '^token = "PXC[A-Z2-7]{29}"$' <<<"$files"
user=$(tail -n1 <<<"$files")
check "the three files are 0600 and the sandbox user's ($user)" test "$(grep -cx "600 $user" <<<"$files")" = 3

# ---- mvn in the sandbox: the settings.xml the orchestrator wrote ----
MVN_CMD='p=${HTTPS_PROXY#http://}; up=${p%@*}; hp=${p##*@}; hp=${hp%/}
printf "<settings><proxies><proxy><id>egress</id><active>true</active><protocol>http</protocol><host>%s</host><port>%s</port><username>%s</username><password>%s</password></proxy></proxies></settings>\n" "${hp%:*}" "${hp##*:}" "${up%%:*}" "${up#*:}" >/tmp/egress-settings.xml
'"$JHOME"'/bin/keytool -importcert -noprompt -alias egress -file "$SSL_CERT_FILE" -keystore /tmp/egress.p12 -storetype PKCS12 -storepass changeit >/dev/null 2>&1 || echo keytool failed
mkdir -p "$HOME/.m2/repository" /workspace && cp -r /opt/r30/m2/. "$HOME/.m2/repository/" && cp -r /opt/r30/mvnapp /workspace/ && cd /workspace/mvnapp &&
JAVA_HOME='"$JHOME"' MAVEN_OPTS="-Xmx160m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djavax.net.ssl.trustStore=/tmp/egress.p12 -Djavax.net.ssl.trustStorePassword=changeit" \
'"$MVNHOME"'/bin/mvn -B -X -gs /tmp/egress-settings.xml r30:r30-maven-plugin:1.0:show >/tmp/mvn.log 2>&1; echo "rc=$?"
grep -E "r30 (resolved|loaded)|BUILD|ERROR|Using connector .*maven.acme.test|user settings" /tmp/mvn.log | head -n 30'
out=$(sh_in mc-1 "$MVN_CMD")
check "mvn in the sandbox resolves com.acme:acme-priv:1.0.0" has "$out" "rc=0"
check "... from the private repository into ~/.m2, and loads its class" bash -c \
	"grep -qE 'r30 resolved com.acme:acme-priv:jar:1.0.0 /.*/\.m2/repository/com/acme/acme-priv/1.0.0/acme-priv-1.0.0.jar' <<<'$out' && grep -qF 'r30 loaded acme-priv 1.0.0' <<<'$out'"
check "... with the settings.xml server for the repository (user deployer)" \
	grep -qE 'Using connector .* for https://maven.acme.test/releases/ with username=deployer, password=\*\*\*' <<<"$out"
want_auth="auth=Basic $(printf 'deployer:%s' "$MVN_PW" | base64 -w0)"
check "nginx: the pom, jar and checksums fetched as deployer with the real password" bash -c \
	"for f in acme-priv-1.0.0.pom acme-priv-1.0.0.pom.sha1 acme-priv-1.0.0.jar acme-priv-1.0.0.jar.sha1; do grep -qF \"deployer 200 /releases/com/acme/acme-priv/1.0.0/\$f $want_auth\" '$T/ngx/maven.log' || exit 1; done"
check "nginx (maven): no placeholder arrived" bash -c "! grep -qE 'PXC[A-Z2-7]{29}' '$T/ngx/maven.log'"
# audit "NAME:basic": the proxy added the pair (NAME:swap: it swapped the
# client's placeholder, which Maven sends only when challenged)
audit() {	# audit PATH-SUFFIX: the credentials column of the audit lines for it
	jq -r --arg p "$1" 'select(.type == "intercept" and (.path | endswith($p))) | .credentials' \
		"$PX_DIR/audit.jsonl"
}
check "audit: each Maven request got the pair added by the proxy (maven:basic)" \
	test "$(audit .jar; audit .pom)" = "$(printf 'maven:basic\nmaven:basic')"

# ---- cargo in the sandbox: config.toml and credentials.toml ----
if [ -n "$CARGO" ]; then
	CARGO_CMD='export PATH=/opt/rust/bin:$PATH; unset CARGO_REGISTRIES_ACME_TOKEN CARGO_REGISTRY_TOKEN
mkdir -p /workspace && cp -r /opt/r30/cargoapp /workspace/ && cd /workspace/cargoapp &&
cargo generate-lockfile 2>&1 && cargo fetch 2>&1 && cargo build --offline 2>&1; echo "rc=$?"
grep -A2 "name = \"acmecrate\"" Cargo.lock; ls "$HOME"/.cargo/registry/cache/*/'
	out=$(sh_in mc-1 "$CARGO_CMD")
	check "cargo generate-lockfile, fetch and build in the sandbox" has "$out" "rc=0"
	check "... acmecrate 1.0.0 from the acme registry, built" bash -c \
		"grep -qF 'Compiling acmecrate v1.0.0 (registry \`acme\`)' <<<'$out' && grep -qx 'acmecrate-1.0.0.crate' <<<'$out' && grep -qF 'source = \"sparse+https://crates.acme.test/index/\"' <<<'$out'"
	check "nginx: config.json, the index and the .crate fetched with the real token" bash -c \
		"grep -qF '200 /index/config.json auth=$CARGO_TOK' '$T/ngx/cargo.log' && grep -qF '200 /index/ac/me/acmecrate auth=$CARGO_TOK' '$T/ngx/cargo.log' && grep -qF '200 /dl/acmecrate/acmecrate-1.0.0.crate auth=$CARGO_TOK' '$T/ngx/cargo.log'"
	check "nginx (cargo): no placeholder arrived" bash -c "! grep -qE 'PXC[A-Z2-7]{29}' '$T/ngx/cargo.log'"
	check "audit: cargo sent credentials.toml's placeholder for the index and the .crate (acme:swap)" \
		test "$(audit /ac/me/acmecrate; audit /acmecrate-1.0.0.crate)" = "$(printf 'acme:swap\nacme:swap')"
	out=$(sh_in mc-1 'export PATH=/opt/rust/bin:$PATH; unset CARGO_REGISTRIES_ACME_TOKEN CARGO_REGISTRY_TOKEN
cd /workspace/cargoapp && mv "$HOME/.cargo/credentials.toml" /tmp/c.toml && rm -f Cargo.lock && rm -rf "$HOME"/.cargo/registry/index
cargo generate-lockfile 2>&1; echo "rc=$?"; mv /tmp/c.toml "$HOME/.cargo/credentials.toml"')
	check "without credentials.toml cargo has no token for acme (the file is what it used)" bash -c \
		"grep -qx 'rc=101' <<<'$out' && grep -qiE 'no token found for .acme.' <<<'$out'" ||
		sed 's/^/# /' <<<"$out" >&2
fi

# ---- no secret anywhere the sandbox can read ----
leak_scan() {	# leak_scan SESSION STRING: where the sandbox holds STRING
	sh_in "$1" "s=\$(echo $(printf '%s' "$2" | base64 -w0) | base64 -d); env | grep -cF \"\$s\"; for d in /workspace /tmp /root /home /etc /var /run; do [ -d \"\$d\" ] && grep -rlF \"\$s\" \"\$d\" 2>/dev/null; done; echo end"
}
ph=$(grep -oE 'PXC[A-Z2-7]{29}' <<<"$files" | tail -n1)
home=$(sh_in mc-1 'echo "$HOME"')
out=$(leak_scan mc-1 "$ph")
check "the scan finds the cargo placeholder in $home/.cargo/credentials.toml (the scan works)" \
	has "$out" "$home/.cargo/credentials.toml"
for s in "$MVN_PW" "$CARGO_TOK"; do
	out=$(leak_scan mc-1 "$s")
	check "no real secret (${s:0:9}...) in the env, files, ~/.m2 or ~/.cargo" \
		test "$(printf '%s\n' "$out" | tr -d '\r')" = "$(printf '0\nend')"
done
out=$(sh_in mc-1 'ls -d "$HOME/.m2/repository/com/acme" "$HOME/.cargo/registry/cache" 2>&1')
check "the Maven and cargo caches were searched (they exist)" \
	test "$(grep -c "^$home/" <<<"$out")" = "$([ -n "$CARGO" ] && echo 2 || echo 1)"
rest DELETE /v1/sessions/mc-1 >/dev/null
exit 0
