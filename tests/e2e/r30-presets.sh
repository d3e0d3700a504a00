# r30-presets: the credential presets an operator copies (addons/creds/*.lua,
# docs/addons.md "Presets") load as shipped with only addon_config set, say
# which key is missing when one is, and each puts its secret where its
# service wants it: a recording upstream posing as every host receives the
# real value in the right field (Bearer, Basic, x-api-key, cargo's bare
# Authorization), swapped for the sandbox's placeholder or added, and the
# register reply names the client file each one feeds.
. "$(dirname "$0")/../lib/common.sh"
PY=${PY:-/usr/bin/python3}
FX=$TOP/tests/fixtures
. "$TOP/tests/lib/upca.sh"
HOSTS="registry.npmjs.org reg.acme.test pypi.acme.test maven.acme.test crates.acme.test api.openai.com api.anthropic.com api.corp.test s3.amazonaws.com"
# shellcheck disable=SC2086
upca_mk "$T/upca.crt" "$T/upca.key" "$T/srv.crt" "$T/srv.key" $HOSTS

UP=$(free_port); PP=$(free_port)
"$PY" "$FX/upstream.py" "$UP" --keepalive --log "$T/rec.jsonl" --cert "$T/srv.crt" \
	--key "$T/srv.key" & track_pid $!

rnd() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
mkdir -p "$T/s" "$T/export"
for k in npm pypi maven cargo openai anthropic corp registry; do
	printf '%s-REAL-%s\n' "$k" "$(rnd)" >"$T/s/$k"
done
printf 'AKIAPRESET%s\n' "$(od -An -N5 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)" >"$T/s/aws_id"
printf 'presetSecret/%s\n' "$(rnd)" >"$T/s/aws_secret"
chmod 600 "$T"/s/*
val() { tr -d '\n' <"$T/s/$1"; }

PRESETS="npm pypi maven cargo models generic aws registry"
addons_yaml() { local p l=""; for p in $PRESETS; do l="${l:+$l, }$TOP/addons/creds/$p.lua"; done; echo "[$l]"; }
px_yaml() {	# px_yaml ADDONS-YAML [extra addon_config lines]
	cat <<EOF
listen: 127.0.0.1:$PP
workers: 1
admin:
  socket: $T/admin.sock
ca: {cert: $T/ca.crt, key: $T/ca.key, export: $T/export/ca.crt}
upstream:
  ca_bundle: $T/upca.crt
  allow_cidrs: [127.0.0.0/8]
resolve:
$(for h in $HOSTS; do printf '  "%s:443": "127.0.0.1:%s"\n' "$h" "$UP"; done)
addons: $1
addon_config:
  npm_token: file:$T/s/npm
  npm_scope: "@acme"
  pypi_index: https://pypi.acme.test/simple/
  pypi_password: file:$T/s/pypi
  pypi_user: deploy
  maven_host: maven.acme.test
  maven_user: ci
  maven_password: file:$T/s/maven
  maven_server: acme-releases
  cargo_host: crates.acme.test
  cargo_token: file:$T/s/cargo
  openai_key: file:$T/s/openai
  anthropic_key: file:$T/s/anthropic
  models_default: "true"
  generic_name: corp
  generic_hosts: api.corp.test
  generic_secret: file:$T/s/corp
  generic_form: header
  generic_field: X-Corp-Key
  generic_env: CORP_KEY
  aws_key_id: file:$T/s/aws_id
  aws_secret: file:$T/s/aws_secret
  registry_host: reg.acme.test
  registry_user: bot
  registry_password: file:$T/s/registry
${2:-}
audit:
  log: $T/audit.jsonl
log:
  file: $T/proxy.log
EOF
}

# ---- 1. as shipped: each loads with its keys; a missing key is named ----
px_yaml "$(addons_yaml)" >"$T/p.yaml"
check "every preset loads as shipped (egress-proxy -n)" "$BIN/egress-proxy/egress-proxy" -n -f "$T/p.yaml"
px_yaml "[$TOP/addons/creds/registry.lua]" "  registry_realm: https://auth.acme.test/token" >"$T/realm.yaml"
check "registry with a realm: the token flow's declaration loads" \
	"$BIN/egress-proxy/egress-proxy" -n -f "$T/realm.yaml"
for p in npm pypi maven cargo models generic aws registry; do
	case $p in
	registry) key=registry_host ;;
	npm) key=npm_token ;; pypi) key=pypi_index ;; maven) key=maven_host ;; cargo) key=cargo_host ;;
	models) key="openai_key and/or anthropic_key" ;; generic) key=generic_name ;; aws) key=aws_key_id ;;
	esac
	px_yaml "[$TOP/addons/creds/$p.lua]" | sed -E "/^  (${p}_|openai_|anthropic_|generic_|models_)/d" >"$T/miss.yaml"
	if "$BIN/egress-proxy/egress-proxy" -n -f "$T/miss.yaml" >"$T/miss.out" 2>&1; then
		fail "creds/$p.lua without its addon_config: refused" "the config was taken"
	elif grep -qF "creds/$p.lua: set addon_config.$key" "$T/miss.out"; then
		ok "creds/$p.lua without its addon_config: refused, naming $key"
	else
		fail "creds/$p.lua without its addon_config: refused, naming $key" "$(tail -n 2 "$T/miss.out")"
	fi
done

. "$TOP/tests/lib/pxsolo.sh"
px_solo

# ---- 2. the register reply: what each preset declares ----
adm '{"op":"register","id":"sb-p","secret":"s-p","policy":{"credentials":["npm","pypi","maven","cargo","openai","anthropic","corp","aws","registry"]}}' >"$T/reg.json"
adm '{"op":"register","id":"sb-d","secret":"s-d"}' >"$T/reg-d.json"
jc() {	# jc NAME PYTHON: PYTHON asserts on c, the reply's credentials
	if "$PY" -c "import json,sys; c=json.load(open(sys.argv[1]))['credentials']; $2" "$T/reg.json" 2>"$T/jc.err"; then
		ok "$1"
	else
		fail "$1" "$(tail -n 1 "$T/jc.err")"
	fi
}
jc "npm: bearer on registry.npmjs.org, .npmrc for scope @acme, NPM_TOKEN" \
	'n=c["npm"]; assert n["form"]=="bearer" and n["hosts"]==["registry.npmjs.org"] and n["client"]=={"npm":"https://registry.npmjs.org/","scope":"@acme"} and n["env"]["NPM_TOKEN"]==n["placeholder"], n'
jc "pypi: Basic deploy:... on the index's host, pip.conf for the index" \
	'p=c["pypi"]; assert p["form"]=="basic" and p["user"]=="deploy" and p["hosts"]==["pypi.acme.test"] and p["client"]=={"pip":"https://pypi.acme.test/simple/"}, p'
jc "maven: Basic ci:..., settings.xml server acme-releases" \
	'm=c["maven"]; assert m["form"]=="basic" and m["user"]=="ci" and m["client"]=={"maven":"acme-releases"}, m'
jc "cargo: the bare Authorization field, CARGO_REGISTRIES_CARGO_TOKEN" \
	'g=c["cargo"]; assert g["form"]=="header" and g["field"]=="Authorization" and set(g["env"])=={"CARGO_REGISTRIES_CARGO_TOKEN","CARGO_REGISTRY_TOKEN"}, g'
jc "models: openai bearer and anthropic x-api-key, with the SDKs' variables" \
	'o=c["openai"]; a=c["anthropic"]; assert o["form"]=="bearer" and o["env"]=={"OPENAI_API_KEY":o["placeholder"]} and a["field"]=="x-api-key" and a["env"]=={"ANTHROPIC_API_KEY":a["placeholder"]}, (o, a)'
jc "generic: the form, field and variable named in addon_config" \
	'g=c["corp"]; assert g["form"]=="header" and g["field"]=="X-Corp-Key" and g["hosts"]==["api.corp.test"] and list(g["env"])==["CORP_KEY"], g'
jc "aws: sigv4 on S3, the key id placeholder, the aws files" \
	'w=c["aws"]; assert w["form"]=="sigv4" and "key_id" in w and w["client"]["aws"]=="default" and set(w["env"])=={"AWS_ACCESS_KEY_ID","AWS_SECRET_ACCESS_KEY"}, w'
jc "registry without a realm: Basic bot:... on its host, the docker config" \
	'r=c["registry"]; assert r["form"]=="basic" and r["user"]=="bot" and r["client"]=={"docker":"reg.acme.test"}, r'
check "models_default: a sandbox without a credentials policy gets the model APIs only" \
	"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert sorted(d['credentials'])==['anthropic','openai'], d" "$T/reg-d.json"

# ---- 3. each secret where its service wants it ----
ph() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['credentials'][sys.argv[2]]['placeholder'])" "$T/reg.json" "$1"; }
C=(curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://sb-p:s-p@127.0.0.1:$PP" -o /dev/null)
last() { tail -n 1 "$T/rec.jsonl"; }
hdr() {	# hdr NAME: the value of header NAME in the last recorded request
	last | "$PY" -c "import json,sys; r=json.load(sys.stdin); print(next((v for k,v in r['headers'] if k.lower()==sys.argv[1].lower()), ''))" "$1"
}
b64() { printf '%s' "$1" | base64 -w0; }
"${C[@]}" -H "Authorization: Bearer $(ph npm)" https://registry.npmjs.org/@acme%2fpriv
check "npm: the placeholder token swapped for the real one" test "$(hdr authorization)" = "Bearer $(val npm)"
"${C[@]}" -u "deploy:$(ph pypi)" https://pypi.acme.test/simple/acmepriv/
check "pypi: the placeholder inside the Basic pair swapped" test "$(hdr authorization)" = "Basic $(b64 "deploy:$(val pypi)")"
"${C[@]}" https://maven.acme.test/releases/com/acme/lib/1.0/lib-1.0.pom
check "maven: Basic added when the client sent none" test "$(hdr authorization)" = "Basic $(b64 "ci:$(val maven)")"
"${C[@]}" -H "Authorization: $(ph cargo)" https://crates.acme.test/index/config.json
check "cargo: the bare token in Authorization, swapped" test "$(hdr authorization)" = "$(val cargo)"
"${C[@]}" https://api.openai.com/v1/models
check "openai: Bearer added" test "$(hdr authorization)" = "Bearer $(val openai)"
"${C[@]}" -H "x-api-key: $(ph anthropic)" https://api.anthropic.com/v1/messages -d '{}'
check "anthropic: x-api-key swapped" test "$(hdr x-api-key)" = "$(val anthropic)"
"${C[@]}" https://api.corp.test/v1/things
check "generic: X-Corp-Key added" test "$(hdr x-corp-key)" = "$(val corp)"
"${C[@]}" https://reg.acme.test/v2/acme/app/manifests/latest
check "registry (Basic): added to a registry request" test "$(hdr authorization)" = "Basic $(b64 "bot:$(val registry)")"
"${C[@]}" -H "Authorization: Bearer $(ph npm)" https://api.corp.test/leak
check "a placeholder sent to another credential's host stays a placeholder" \
	bash -c "test \"\$(tail -n 1 '$T/rec.jsonl' | grep -c '$(val npm)')\" = 0"
check "no real value in the proxy's log or audit" bash -c \
	"! grep -qF -e '$(val npm)' -e '$(val pypi)' -e '$(val maven)' -e '$(val cargo)' -e '$(val openai)' -e '$(val anthropic)' -e '$(val corp)' -e '$(val aws_secret)' -e '$(val registry)' '$T/proxy.log' '$T/audit.jsonl' '$T/stderr'"
