#!/usr/bin/env bash
# r30-orch-clients-in-sandbox.sh: the credential forms of issue 30 driven by
# their real clients INSIDE one real sandbox (the local runtime, the default
# Debian image) of one orchestrator session whose policy names the
# credentials, through the real egress proxy loaded with the shipped presets
# (addons/creds/models.lua, aws.lua, registry.lua), against fixtures behind
# their own CA. The sandbox never holds a real secret: it gets the
# placeholders the orchestrator sets and writes, nothing else.
#   - the official OpenAI and Anthropic SDKs (node; tests/cred/node_modules,
#     uploaded as a tarball through the orchestrator's file API) with only
#     OPENAI_API_KEY / ANTHROPIC_API_KEY (placeholders) and their default
#     hosts, against tests/fixtures/modelfake.py, which checks the keys
#     (tests/fixtures/sdk-sandbox.mjs: node 18's fetch ignores HTTPS_PROXY,
#     so the SDKs are handed a small fetch that tunnels through it);
#   - the AWS CLI (s3 cp up and down, s3 ls) with the ~/.aws/credentials and
#     config the orchestrator wrote (the AWS_* variables unset) against
#     tests/fixtures/s3fake.py, which verifies SigV4 with the real secret;
#   - skopeo copy docker://... dir:... from Debian's docker-registry with the
#     token flow (tests/fixtures/regtoken.py: the registry form, no client
#     file, skopeo holds nothing), and from a second one with htpasswd (the
#     basic form with client docker: ~/.docker/config.json, a placeholder);
#   - awscli and skopeo are not in the image: sandbox root installs both
#     (one apt-get) from a signed mirror of the real Debian packages
#     (tests/lib/debmirror.sh), served on loopback and reached only through
#     the proxy; the .debs are fetched once by the host's apt (kept in
#     $B/debcache), before the test enters its network namespace;
#   - each upstream's log shows the real credential; nothing the sandbox can
#     read (its environment, every process's /proc/PID/environ, the client
#     files, ~/.aws, ~/.docker, the home with whatever caches the clients
#     made, /var with apt's, /workspace with the SDKs, the clients' debug
#     output: OPENAI_LOG/ANTHROPIC_LOG=debug, aws --debug, skopeo --debug)
#     holds a real secret, and the same walk finds the placeholders.
. "$(dirname "$0")/../lib/common.sh"
IMG=${SANDBOX_DEFAULT_IMAGE_DIR:-/var/lib/sandbox/images/default}
PKGS="awscli skopeo"

if [ "$(id -u)" != 0 ] || ! command -v bwrap >/dev/null 2>&1; then
	skip "clients in a sandbox" "the local runtime needs root and bwrap"
	exit 0
fi
if [ ! -x "$IMG/usr/bin/apt-get" ] || [ ! -x "$IMG/usr/bin/node" ]; then
	fail "default image" "$IMG not built (make test builds it: scripts/build-image.sh)"
	exit 1
fi
for c in apt-get dpkg-scanpackages gpg nginx jq node skopeo docker-registry openssl; do
	command -v "$c" >/dev/null 2>&1 || { fail "tool $c" "missing (make deps: deps/cred-tests.txt, deps/mirror-tests.txt)"; exit 1; }
done
CRED=$TOP/tests/cred/node_modules
[ -d "$CRED/openai" ] && [ -d "$CRED/@anthropic-ai/sdk" ] ||
	{ fail "the SDKs" "tests/cred/node_modules missing (scripts/deps-npm.sh)"; exit 1; }

if [ -z "${E2E_NETNS:-}" ]; then
	# the real .debs, fetched by the host's apt while it has the network
	. "$TOP/tests/lib/debmirror.sh"
	DEBC=${E2E_DEB_CACHE:-$BIN/debcache/clients-in-sandbox}
	t0=$SECONDS
	# shellcheck disable=SC2086
	if debm_fetch "$DEBC" "$IMG" $PKGS; then
		ok "the .debs $PKGS need on the image: $(ls "$DEBC"/archives/*.deb | wc -l) packages ($((SECONDS - t0)) s; kept in $DEBC)"
	else
		fail "the .debs $PKGS need on the image" "$(tail -n 3 "$DEBC/fetch.log" 2>/dev/null)"
		exit 1
	fi
	unshare --net env E2E_NETNS=1 E2E_DEBS="$DEBC/archives" bash -c 'ip link set lo up && exec bash "$0" "$@"' "$0" "$@" &
	child=$!
	on_exit "kill $child 2>/dev/null; wait $child 2>/dev/null"
	wait "$child"
	exit $?
fi
export ORCH_TEST_RUNTIME=local
PY=/usr/bin/python3
FX=$TOP/tests/fixtures
T_START=$SECONDS
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
fx_pki && fx_tokens || { fail "fixtures"; exit 1; }
GH_PORT=$(free_port) API_PORT=$(free_port) GL_PORT=$(free_port)

# ---- a leaf of the test CA for every upstream's name ----
UPHOSTS="api.openai.com api.anthropic.com s3.us-east-1.amazonaws.com probe.s3.us-east-1.amazonaws.com reg.test regb.test localhost"
(
	cd "$PKI" || exit 1
	openssl ecparam -name prime256v1 -genkey -noout -out up.key 2>/dev/null
	openssl req -new -key up.key -subj /CN=upstreams -out up.csr 2>/dev/null
	printf 'subjectAltName=%s,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
		"$(for h in $UPHOSTS; do printf 'DNS:%s,' "$h"; done | sed 's/,$//')" >up.ext
	openssl x509 -req -in up.csr -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days 2 \
		-extfile up.ext -out up.pem 2>/dev/null
) || { fail "leaf certificate"; exit 1; }

# ---- the secrets: only in the proxy's files ----
rnd() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
mkdir -p "$T/s"
OKEY=sk-proj-REAL$(rnd)
AKEY=sk-ant-api03-REAL$(rnd)
AKID=AKIAINSBX$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)
S3SECRET=insbxSecret/$(rnd)+REAL
REG_PW=carol-REAL-$(rnd)
REGB_PW=dave-REAL-$(rnd)
printf '%s\n' "$OKEY" >"$T/s/openai"
printf '%s\n' "$AKEY" >"$T/s/anthropic"
printf '%s\n' "$AKID" >"$T/s/aws_id"
printf '%s\n' "$S3SECRET" >"$T/s/aws_secret"
printf '%s\n' "$REG_PW" >"$T/s/registry"
printf '%s\n' "$REGB_PW" >"$T/s/regb"
chmod 600 "$T"/s/*

# ---- the upstreams ----
MP=$(free_port) S3P=$(free_port) RP=$(free_port) TP=$(free_port) RBP=$(free_port)
"$PY" "$FX/modelfake.py" --listen "$MP" --cert "$PKI/up.pem" --key "$PKI/up.key" \
	--openai-key "$OKEY" --anthropic-key "$AKEY" --log "$T/model.log" >"$T/model.out" 2>&1 &
track_pid $!
"$PY" "$FX/s3fake.py" --listen "$S3P" --cert "$PKI/up.pem" --key "$PKI/up.key" --cred "$AKID:$S3SECRET" \
	--bucket probe --domain s3.us-east-1.amazonaws.com --log "$T/s3.log" >"$T/s3.out" 2>&1 &
track_pid $!
REG_PKI=$PKI REG_CERT=$PKI/up.pem REG_KEY=$PKI/up.key
. "$TOP/tests/lib/registry.sh"
reg_start_token "$RP" "$TP" "carol:$REG_PW:acme/*=pull,push,delete;*=pull" ||
	{ fail "registry (token) start" "$(tail -n 5 "$T/registry-token.log")"; exit 1; }
reg_start_basic "$RBP" "dave:$REGB_PW" ||
	{ fail "registry (htpasswd) start" "$(tail -n 5 "$T/registry-basic.log")"; exit 1; }

# ---- the mirror: the real .debs, signed, on an address of its own ----
. "$TOP/tests/lib/mirror.sh"
. "$TOP/tests/lib/debmirror.sh"
M=mirror.e2e.test MADDR=127.0.0.77
mkdir -p "$MIRROR_WWW"
check "mirror of the .debs built and signed" debm_repo "$MIRROR_WWW" "$E2E_DEBS"
mirror_start "$MADDR" || { fail "mirror start" "$(tail -n 3 "$MIRROR_DIR/nginx/error.log" 2>/dev/null)"; exit 1; }

# ---- the proxy: the presets as shipped, their keys in addon_config ----
PX_ADDONS="[$TOP/addons/github.lua, $TOP/addons/creds/models.lua, $TOP/addons/creds/aws.lua, $TOP/addons/creds/registry.lua, $T/regb.lua]"
# the htpasswd registry: registry.lua again would redeclare "registry"; the
# same declaration registry.lua makes without a realm, named regb
cat >"$T/regb.lua" <<EOF
return { name = "regb", credentials = {
  { name = "regb", form = "basic", user = "dave", secret = "file:$T/s/regb",
    hosts = { "regb.test" }, client = { docker = "regb.test" } },
} }
EOF
PX_ADDON_CONFIG="  openai_key: file:$T/s/openai
  anthropic_key: file:$T/s/anthropic
  aws_key_id: file:$T/s/aws_id
  aws_secret: file:$T/s/aws_secret
  aws_regions: us-east-1
  aws_hosts: "s3.us-east-1.amazonaws.com,*.s3.us-east-1.amazonaws.com"
  registry_host: reg.test
  registry_user: carol
  registry_password: file:$T/s/registry
  registry_realm: https://localhost:$TP/token
  registry_service: registry.test" PX_RESOLVE="  \"api.openai.com:443\": \"127.0.0.1:$MP\"
  \"api.anthropic.com:443\": \"127.0.0.1:$MP\"
  \"s3.us-east-1.amazonaws.com:443\": \"127.0.0.1:$S3P\"
  \"probe.s3.us-east-1.amazonaws.com:443\": \"127.0.0.1:$S3P\"
  \"reg.test:443\": \"127.0.0.1:$RP\"
  \"regb.test:443\": \"127.0.0.1:$RBP\"
  \"localhost:$TP\": \"127.0.0.1:$TP\"
  \"$M:80\": \"$MADDR:$MIRROR_PORT\"" px_config && px_start || { fail "proxy start"; exit 1; }
ok "proxy start (presets models, aws, registry; regb)"

# ---- the images in the registries, pushed from the host through the proxy ----
px_admin '{"op":"register","id":"push","secret":"s-push","policy":{"credentials":["registry","regb"]}}' >/dev/null
mkdir -p "$T/pxcerts" && cp "$PX_CA" "$T/pxcerts/ca.crt"
LAYER=$(reg_oci_image "$T/img" v1)
for r in reg.test regb.test; do
	HTTPS_PROXY="http://push:s-push@127.0.0.1:$PX_PORT" NO_PROXY= reg_skopeo copy --dest-cert-dir "$T/pxcerts" \
		"oci:$T/img:v1" "docker://$r/acme/tiny:v1" >"$T/push-$r.out" 2>&1
	check "the image pushed to $r (host skopeo through the proxy)" grep -q 'Writing manifest' "$T/push-$r.out" ||
		tail -n 3 "$T/push-$r.out" >&2
done
px_admin '{"op":"deregister","id":"push"}' >/dev/null

# ---- the orchestrator: local runtime, the default Debian image ----
. "$TOP/tests/mcp/orch-lib.sh"
ORCH_LOCAL_YAML="$(sed 's/mem_bytes: 512MiB/mem_bytes: 2GiB/' <<<"$ORCH_LOCAL_YAML")
  proxy_admin_socket: $PX_ADMIN
  proxy_ca_cert: $PX_CA"
printf '%s\n' "$ORCH_LOCAL_YAML" >"$T/rt.yaml"
sbx image add debian "$IMG" >/dev/null || { fail "image add"; exit 1; }
orch_config "sandbox:" "  image: debian"
check "orch starts (local runtime, default image)" orch_start || exit 1

has() { grep -qF -- "$2" <<<"$1" || { head -n 40 <<<"$1" | sed 's/^/# /' >&2; return 1; }; }
sh_in() {	# sh_in SESSION COMMAND [TIMEOUT]: the shell tool's text
	mcp_tool "$1" shell "$(jq -nc --arg c "$2" --argjson t "${3:-150}" '{command: $c, timeout: $t}')" --max-time $((${3:-150} + 30)) |
		sed '/^\[exit code [0-9]*, [0-9]* ms\]$/d'
}
put() {	# put SESSION HOSTFILE SANDBOXPATH: the orchestrator's file API
	curl -sf -X PUT -H "Authorization: Bearer $ORCH_KEY" -T "$2" "$ORCH_URL/v1/sessions/$1/files$3" >/dev/null
}
S=cs-1
out=$(rest POST /v1/sessions -H 'Content-Type: application/json' \
	-d "{\"id\":\"$S\",\"policy\":{\"credentials\":[\"openai\",\"anthropic\",\"aws\",\"registry\",\"regb\"]}}")
check "a session naming openai, anthropic, aws, registry, regb" test "$(jq -r .state <<<"$out" 2>/dev/null)" = running ||
	{ echo "# $out" >&2; exit 1; }
check "the orchestrator wrote its client files (aws: 2, docker: 1)" wait_until 15 \
	grep -q "session=$S .*client files written=3 failed=0" "$ORCH_LOG"
envs=$(sh_in $S 'id -u; echo "HOME=$HOME"; env | grep -E "^(OPENAI|ANTHROPIC|AWS)_" | sort; cat "$HOME/.aws/credentials" "$HOME/.aws/config"; echo "docker=$(jq -r ".auths[\"regb.test\"].auth" "$HOME/.docker/config.json" | base64 -d)"')
HOME_IN=$(sed -n 's/^HOME=//p' <<<"$envs")
check "the sandbox runs as root (uid 0), HOME $HOME_IN" test "$(head -n1 <<<"$envs")" = 0
check "OPENAI_API_KEY and ANTHROPIC_API_KEY are placeholders" bash -c \
	"grep -qE '^OPENAI_API_KEY=PXC[A-Z2-7]{29}\$' <<<'$envs' && grep -qE '^ANTHROPIC_API_KEY=PXC[A-Z2-7]{29}\$' <<<'$envs'"
PH_ID=$(sed -n 's/^aws_access_key_id = //p' <<<"$envs")
PH_S3=$(sed -n 's/^aws_secret_access_key = //p' <<<"$envs")
check "~/.aws/credentials: the key id's and the secret's placeholders" bash -c \
	"[ -n '$PH_ID' ] && [ '$PH_ID' != '$AKID' ] && grep -qE '^PXC[A-Z2-7]{29}\$' <<<'$PH_S3'"
check "~/.aws/config: the region" has "$envs" "region = us-east-1"
check "~/.docker/config.json: regb.test with dave:PLACEHOLDER" grep -qE '^docker=dave:PXC[A-Z2-7]{29}$' <<<"$envs"

# ---- awscli and skopeo: root installs both from the mirror, one apt-get ----
# (through the exec route, in the background: the SDKs' part runs meanwhile)
put $S "$MIRROR_DIR/debm-key.gpg" /workspace/debm-key.gpg || fail "upload the mirror's key"
APTCMD="install -m 0644 /workspace/debm-key.gpg /etc/apt/trusted.gpg.d/e2e-debm.gpg &&
	echo 'deb http://$M/debian e2e main' >/etc/apt/sources.list && rm -f /etc/apt/sources.list.d/* &&
	echo force-unsafe-io >/etc/dpkg/dpkg.cfg.d/e2e-unsafe-io &&
	apt-get -q update >/tmp/apt-update.log 2>&1 && echo update-ok;
	t=\$SECONDS; DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends -o Dpkg::Use-Pty=0 \
		install $PKGS >/tmp/apt-install.log 2>&1
	echo install-rc=\$? install-s=\$((SECONDS - t)); tail -n 3 /tmp/apt-install.log; aws --version; skopeo --version"
t_apt=$SECONDS
curl -sN -X POST -H "Authorization: Bearer $ORCH_KEY" -H 'Content-Type: application/json' --max-time 300 \
	-d "$(jq -nc --arg c "$APTCMD" '{command: $c, timeout: 280}')" "$ORCH_URL/v1/sessions/$S/exec" >"$T/apt.ndjson" &
apt_pid=$!
track_pid $apt_pid

# ---- 1. the model SDKs: only the placeholders in the environment ----
tar -C "$CRED" --exclude='*.d.ts' --exclude='*.d.mts' --exclude='*.d.cts' --exclude='*.map' \
	--exclude='./*/src' --exclude='./@*/*/src' -czf "$T/sdk.tgz" openai @anthropic-ai @opentelemetry/api \
	standardwebhooks json-schema-to-ts @babel/runtime ts-algebra @stablelib/base64 fast-sha256 ||
	fail "the SDKs' tarball"
put $S "$T/sdk.tgz" /workspace/sdk/sdk.tgz && put $S "$FX/sdk-sandbox.mjs" /workspace/sdk/sdk-sandbox.mjs ||
	fail "upload the SDKs"
out=$(sh_in $S 'cd /workspace/sdk && mkdir -p node_modules && tar -xzf sdk.tgz -C node_modules &&
	OPENAI_LOG=debug ANTHROPIC_LOG=debug node sdk-sandbox.mjs >/tmp/sdk-debug.log 2>&1; echo "rc=$?"
	grep -E "^(ok|not ok|sdk-done) " /tmp/sdk-debug.log; grep -c "sending request" /tmp/sdk-debug.log')
while read -r st name; do
	case $st in
	ok) ok "in the sandbox: $name" ;;
	not) fail "in the sandbox: ${name#ok }" ;;
	esac
done < <(grep -E '^(ok|not ok) ' <<<"$out")
check "the SDK run ended well" has "$out" "sdk-done failed=0"
check "... with the SDKs' debug logging on (OPENAI_LOG, ANTHROPIC_LOG: /tmp/sdk-debug.log)" test "$(tail -n1 <<<"$out")" -ge 5
mjq() { jq -se "$1" "$T/model.log" >/dev/null; }
check "modelfake: OpenAI requests with Authorization: Bearer <the real key>, 200" \
	mjq "[.[] | select(.path == \"/v1/chat/completions\" and .status == 200 and any(.headers[]; (.[0] | ascii_downcase) == \"authorization\" and .[1] == \"Bearer $OKEY\"))] | length >= 2"
check "modelfake: Anthropic requests with x-api-key: <the real key>, 200" \
	mjq "[.[] | select(.path == \"/v1/messages\" and .status == 200 and any(.headers[]; (.[0] | ascii_downcase) == \"x-api-key\" and .[1] == \"$AKEY\"))] | length >= 2"
check "modelfake: the SDKs' own user agents (not curl)" \
	mjq '[.[] | .headers[] | select((.[0] | ascii_downcase) == "user-agent") | .[1]] | any(test("OpenAI/JS")) and any(test("Anthropic/JS"))'
check "modelfake: no request refused, no placeholder arrived" bash -c \
	"jq -se 'all(.[]; .status == 200)' '$T/model.log' >/dev/null && ! grep -qE 'PXC[A-Z2-7]{29}' '$T/model.log'"

wait $apt_pid
t_apt=$((SECONDS - t_apt))
out=$(jq -r 'select(.s == "out" or .s == "err") | .b' "$T/apt.ndjson" | base64 -d)
check "apt-get update from the mirror (signed) in the sandbox" has "$out" "update-ok"
check "apt-get install $PKGS as sandbox root ($(grep -o 'install-s=[0-9]*' <<<"$out" | cut -d= -f2) s; the exec $t_apt s)" \
	has "$out" "install-rc=0"
check "... aws and skopeo run" bash -c "grep -q '^aws-cli/' <<<'$out' && grep -q '^skopeo version' <<<'$out'"
check "... the exec ended with status 0" jq -se 'last | .exit == 0' "$T/apt.ndjson"

# ---- 2. the AWS CLI: the files the orchestrator wrote (no AWS_* variables) ----
head -c 300001 /dev/urandom >"$T/up.bin"
put $S "$T/up.bin" /workspace/up.bin || fail "upload up.bin"
A='env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY aws'
out=$(sh_in $S "cd /workspace && $A s3 cp --no-progress up.bin s3://probe/in/up.bin; echo rc-up=\$?
	$A s3 ls s3://probe/in/; echo rc-ls=\$?
	$A s3 cp --no-progress s3://probe/in/up.bin down.bin; echo rc-down=\$?
	cmp up.bin down.bin && echo same
	$A --debug s3 ls s3://probe/ >/tmp/aws-debug.log 2>&1; echo rc-debug=\$?
	grep -c 'Credential=$PH_ID/' /tmp/aws-debug.log" 120)
check "aws s3 cp up" has "$out" "rc-up=0"
check "aws s3 ls lists it" bash -c "grep -qE ' 300001 up.bin\$' <<<'$out' && grep -qx rc-ls=0 <<<'$out'"
check "aws s3 cp down: the same bytes" bash -c "grep -qx rc-down=0 <<<'$out' && grep -qx same <<<'$out'"
check "aws --debug: the CLI signed with the key id placeholder (from ~/.aws/credentials)" bash -c \
	"grep -qx rc-debug=0 <<<'$out' && [ \"\$(tail -n1 <<<'$out')\" -ge 1 ]"
check "s3fake: every request verified with the real secret, signed by the real key id" "$PY" -c 'import json,sys
rs = [json.loads(l) for l in open(sys.argv[1])]
ops = {r.get("op") for r in rs}
assert {"PutObject", "GetObject", "ListObjectsV2"} <= ops, ops
bad = [(r.get("op"), r.get("verdict"), (r.get("auth") or {}).get("key_id")) for r in rs
       if r.get("verdict") != "ok" or (r.get("auth") or {}).get("key_id") != sys.argv[2]]
assert not bad, bad' "$T/s3.log" "$AKID"

# ---- 3. skopeo: token flow (no credential at all) and htpasswd (~/.docker/config.json) ----
out=$(sh_in $S "cd /workspace && for r in reg.test regb.test; do
	skopeo --debug copy docker://\$r/acme/tiny:v1 dir:/workspace/tiny-\$r >/tmp/skopeo-\$r.log 2>&1; echo rc-\$r=\$?
	sha256sum /workspace/tiny-\$r/${LAYER#sha256:} | cut -c1-64; done" 120)
check "skopeo copy from reg.test (token flow) into dir:" has "$out" "rc-reg.test=0"
check "skopeo copy from regb.test (htpasswd) into dir:" has "$out" "rc-regb.test=0"
check "... both layers arrived whole" test "$(grep -cx "${LAYER#sha256:}" <<<"$out")" = 2
rl() { "$PY" -c 'import json,sys
recs=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
exec(sys.argv[2])' "$REGTOKEN_LOG" "$1"; }
check "realm: the proxy got carol tokens for repository:acme/tiny:pull with the real password" rl '
assert any(r["user"] == "carol" and r["status"] == 200 and "repository:acme/tiny:pull" in (r.get("scopes") or []) for r in recs), recs'
# (distribution logs the user only on errors: a 200 to a GET of the manifest
# is what an accepted token / Basic pair gives; the host only pushed, HEAD and PUT)
pulled() { grep 'msg="response completed"' "$1" | grep 'http.request.method=GET' |
	grep 'http.request.uri=/v2/acme/tiny/manifests/v1' | grep -q 'http.response.status=200'; }
check "reg.test (auth: token): the sandbox's pull of the manifest answered 200 (carol's token)" pulled "$T/registry-token.log"
check "regb.test (htpasswd): the sandbox's pull of the manifest answered 200 (dave's real password)" pulled "$T/registry-basic.log"
check "the proxy's audit: registry:registry on reg.test, regb (basic) on regb.test, from the sandbox" bash -c \
	"grep '\"host\":\"reg.test:443\"' '$PX_DIR/audit.jsonl' | grep -q '\"credentials\":\"registry:registry\"' &&
	 grep '\"host\":\"regb.test:443\"' '$PX_DIR/audit.jsonl' | grep -q '\"credentials\":\"regb:'"

# ---- nothing the sandbox can read holds a real secret ----
# The secrets go in base64, so the command (in the sandbox's /proc) never
# holds them; the same search must find a placeholder (it can fail).
# One walk for every string: prints "env I N", "proc I N" and "file I PATH"
# for string I, then "end".
leak_scan() {	# leak_scan SESSION STRING...: where the sandbox holds each STRING
	local sid=$1 b64="" x
	shift
	for x in "$@"; do b64="$b64 $(printf '%s' "$x" | base64 -w0)"; done
	sh_in "$sid" "L=(); for b in $b64; do L+=(\"\$(echo \$b | base64 -d)\"); done; A=()
	for i in \"\${!L[@]}\"; do A+=(-e \"\${L[\$i]}\")
		echo \"env \$i \$(env | grep -cF -- \"\${L[\$i]}\")\"
		echo \"proc \$i \$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -cF -- \"\${L[\$i]}\")\"
	done
	grep -rlF \"\${A[@]}\" /workspace /tmp /root /home /etc /var /run /usr/local \"\$HOME\" 2>/dev/null | sort -u |
		while read -r f; do for i in \"\${!L[@]}\"; do grep -qF -- \"\${L[\$i]}\" \"\$f\" && echo \"file \$i \$f\"; done; done
	unset L A; echo end" 150
}
SECRETS=("$OKEY" "$AKEY" "$S3SECRET" "$AKID" "$REG_PW" "$REGB_PW")
out=$(leak_scan $S "$PH_S3" "$PH_ID" "${SECRETS[@]}")
check "the scan finds the secret placeholder in $HOME_IN/.aws/credentials (the scan works)" \
	grep -qx "file 0 $HOME_IN/.aws/credentials" <<<"$out"
check "... and the key id placeholder in aws's debug output" grep -qx "file 1 /tmp/aws-debug.log" <<<"$out"
check "the scan ran to its end" grep -qx end <<<"$out"
for i in "${!SECRETS[@]}"; do
	s=${SECRETS[$i]} n=$((i + 2))
	check "no real secret (${s:0:10}...) in the env, /proc/*/environ, files, caches or debug logs" \
		test "$(grep -E "^(env|proc|file) $n " <<<"$out" | tr -d '\r' | tr '\n' ' ')" = "env $n 0 proc $n 0 " ||
		grep -E "^(env|proc|file) $n " <<<"$out" | sed 's/^/# /' >&2
done
out=$(sh_in $S 'ls -d /tmp/sdk-debug.log /tmp/aws-debug.log /tmp/skopeo-reg.test.log /tmp/skopeo-regb.test.log /var/cache/apt/archives "$HOME/.aws" "$HOME/.docker" 2>&1')
check "the SDKs' debug log, aws's and skopeo's debug output, the caches and client dirs were searched (they exist)" \
	bash -c "! grep -q 'No such' <<<'$out'" || sed 's/^/# /' <<<"$out" >&2
check "no real secret in the proxy's log or audit" bash -c \
	"! grep -qF -e '$OKEY' -e '$AKEY' -e '$S3SECRET' -e '$REG_PW' -e '$REGB_PW' '$PX_DIR/proxy.log' '$PX_DIR/audit.jsonl' '$PX_DIR/stderr'"
rest DELETE /v1/sessions/$S >/dev/null
echo "# in-sandbox part took $((SECONDS - T_START)) s"
exit 0
