# r30-proxy-aws-apis: SigV4 re-signing for AWS services other than S3
# (issue 30: "AWS, S3 and every service"). Their clients sign the body's
# SHA-256 without sending it (no x-amz-content-sha256), so the proxy reads
# the body whole (at most 8 MiB: bodygate.h, the hash gate), hashes it, and
# signs the request again with the real key before its head goes. The real
# AWS CLI (Debian's awscli) runs with the placeholders against
# tests/fixtures/awsapifake.py (STS's query protocol and DynamoDB's JSON
# protocol, verifying SigV4 with the real secret and the body's hash):
#   - sts get-caller-identity, dynamodb list-tables: verified, the real key;
#   - dynamodb put-item of a 1 MiB item: the whole body hashed and signed;
#   - a body over 8 MiB: 413 from the proxy with the reason, nothing sent;
#   - a session's key: the token added and signed;
#   - the placeholder straight to the service: refused (InvalidClientTokenId);
#   - a service the credential does not sign for: 403, nothing sent;
#   - curl --aws-sigv4 (another client), a body with Expect: 100-continue.
. "$(dirname "$0")/../lib/common.sh"
PY=/usr/bin/python3
FX=$TOP/tests/fixtures
[ -x /usr/bin/aws ] || { fail "aws CLI" "/usr/bin/aws missing (make deps: awscli)"; exit 1; }

. "$TOP/tests/lib/upca.sh"
upca_mk "$T/upca.crt" "$T/upca.key" "$T/srv.crt" "$T/srv.key" sts.test dynamodb.test localhost

rnd() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
AKID=AKIAR30API$(od -An -N5 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)
SECRET=r30Api/$(rnd)
STS_AKID=ASIAR30API$(od -An -N5 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)
STS_SECRET=r30ApiSts$(rnd)
STS_TOKEN=IQoJb3JpZ2luX2VjR30api$(rnd)/tok+en==
AP=$(free_port); PP=$(free_port)
"$PY" "$FX/awsapifake.py" --listen "$AP" --cert "$T/srv.crt" --key "$T/srv.key" \
	--cred "$AKID:$SECRET" --cred "$STS_AKID:$STS_SECRET:$STS_TOKEN" --log "$T/api.log" \
	>"$T/api.out" 2>&1 & track_pid $!
wait_port "$AP" 20 || { fail "awsapifake start" "$(tail -5 "$T/api.out")"; exit 1; }
printf '%s\n' "$AKID" >"$T/akid"; printf '%s\n' "$SECRET" >"$T/secret"
printf '%s\n' "$STS_AKID" >"$T/sts.akid"; printf '%s\n' "$STS_SECRET" >"$T/sts.secret"
printf '%s\n' "$STS_TOKEN" >"$T/sts.token"
chmod 600 "$T/akid" "$T/secret" "$T"/sts.*

cat >"$T/aws.lua" <<EOF
return {
  name = "aws",
  credentials = {
    { name = "aws", form = "sigv4", key_id = "file:$T/akid", secret = "file:$T/secret",
      hosts = { "sts.test", "dynamodb.test" }, regions = { "us-east-1" },
      services = { "sts", "dynamodb" }, default = true },
    { name = "aws-sts", form = "sigv4", key_id = "file:$T/sts.akid", secret = "file:$T/sts.secret",
      token = "file:$T/sts.token", hosts = { "sts.test", "dynamodb.test" } },
    { name = "aws-sts-only", form = "sigv4", key_id = "file:$T/akid", secret = "file:$T/secret",
      hosts = { "dynamodb.test" }, services = { "sts" } },
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
  ca_bundle: $T/upca.crt
  allow_cidrs: [127.0.0.0/8]
resolve:
  "sts.test:443": "127.0.0.1:$AP"
  "dynamodb.test:443": "127.0.0.1:$AP"
addons: [$T/aws.lua]
audit:
  log: $T/audit.jsonl
log:
  file: $T/proxy.log
EOF
. "$TOP/tests/lib/pxsolo.sh"
px_solo
pyj() { "$PY" -c "import json,sys; d=json.load(sys.stdin); $1"; }
adm '{"op":"register","id":"sb-a","secret":"s-a"}' >"$T/reg-a.json"
adm '{"op":"register","id":"sb-s","secret":"s-s","policy":{"credentials":["aws-sts"]}}' >"$T/reg-s.json"
adm '{"op":"register","id":"sb-o","secret":"s-o","policy":{"credentials":["aws-sts-only"]}}' >"$T/reg-o.json"
PH_AKID=$(pyj "print(d['credentials']['aws']['key_id'])" <"$T/reg-a.json")
PH_SECRET=$(pyj "print(d['credentials']['aws']['placeholder'])" <"$T/reg-a.json")
S_AKID=$(pyj "print(d['credentials']['aws-sts']['key_id'])" <"$T/reg-s.json")
S_SECRET=$(pyj "print(d['credentials']['aws-sts']['placeholder'])" <"$T/reg-s.json")
S_TOK=$(pyj "print(d['credentials']['aws-sts']['session_token'])" <"$T/reg-s.json")
O_AKID=$(pyj "print(d['credentials']['aws-sts-only']['key_id'])" <"$T/reg-o.json")
O_SECRET=$(pyj "print(d['credentials']['aws-sts-only']['placeholder'])" <"$T/reg-o.json")

# awsx WHO AKID SECRET [TOKEN] -- aws-args...: the real CLI through the proxy
awsx() {
	local who=$1 id=$2 sec=$3 tok=$4
	shift 5
	env -i PATH=/usr/bin:/bin HOME="$T" AWS_CONFIG_FILE="$T/none" AWS_SHARED_CREDENTIALS_FILE="$T/none" \
		AWS_CA_BUNDLE="$T/export/ca.crt" AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true \
		AWS_PAGER= AWS_ACCESS_KEY_ID="$id" AWS_SECRET_ACCESS_KEY="$sec" ${tok:+AWS_SESSION_TOKEN="$tok"} \
		HTTPS_PROXY="http://$who@127.0.0.1:$PP" NO_PROXY= /usr/bin/aws "$@"
}
last() {	# last N PYTHON [ARG]: asserts on rs, the last N lines of the fake's log (ARG: sys.argv[3])
	"$PY" -c 'import json,sys
rs = [json.loads(l) for l in open(sys.argv[1])][-int(sys.argv[2]):]
'"$2" "$T/api.log" "$1" "${@:3}"
}
nlog() { wc -l <"$T/api.log"; }

# ---- the query protocol (STS) and the JSON protocol (DynamoDB) ----
out=$(awsx sb-a:s-a "$PH_AKID" "$PH_SECRET" "" -- --endpoint-url https://sts.test sts get-caller-identity --output json 2>&1)
check "sts get-caller-identity with the placeholders: the real key's identity" \
	"$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["UserId"] == sys.argv[2], d' "$out" "$AKID"
check "... the fake verified the body's hash, none sent" last 1 \
	'r = rs[0]; assert r["verdict"] == "ok" and r["service"] == "sts" and r["key_id"] == sys.argv[3] and not r["content_sha256_sent"], r' "$AKID"
out=$(awsx sb-a:s-a "$PH_AKID" "$PH_SECRET" "" -- --endpoint-url https://dynamodb.test dynamodb list-tables --output json 2>&1)
check "dynamodb list-tables: verified ($(tr -d '\n ' <<<"$out" | head -c 80))" grep -q acme-jobs <<<"$out"
check "... with the real key" last 1 'r = rs[0]; assert r["verdict"] == "ok" and r["op"] == "ListTables" and r["key_id"] == sys.argv[3], r' "$AKID"
"$PY" -c 'import json; print(json.dumps({"id": {"S": "big"}, "blob": {"S": "x" * (1 << 20)}}))' >"$T/item.json"
out=$(awsx sb-a:s-a "$PH_AKID" "$PH_SECRET" "" -- --endpoint-url https://dynamodb.test dynamodb put-item \
	--table-name acme-jobs --item "file://$T/item.json" --return-consumed-capacity TOTAL --output json 2>&1)
check "dynamodb put-item of a 1 MiB item: the whole body hashed and signed" last 1 \
	'r = rs[0]; assert r["verdict"] == "ok" and r["body_len"] > (1 << 20), r'
check "the audit names the re-signing" grep -q '"credentials":"aws:sigv4"' "$T/audit.jsonl"

# ---- a session's key: its token added and signed ----
out=$(awsx sb-s:s-s "$S_AKID" "$S_SECRET" "$S_TOK" -- --endpoint-url https://sts.test sts get-caller-identity --output json 2>&1)
out2=$(awsx sb-s:s-s "$S_AKID" "$S_SECRET" "" -- --endpoint-url https://sts.test sts get-caller-identity --output json 2>&1)
check "a session's key, with the token's placeholder and without: both verified" last 2 \
	'assert all(r["verdict"] == "ok" and r["key_id"] == sys.argv[3] for r in rs), rs' "$STS_AKID"

# ---- refusals ----
n0=$(nlog)
"$PY" -c 'import json; print(json.dumps({"id": {"S": "huge"}, "blob": {"S": "x" * (9 << 20)}}))' >"$T/huge.json"
out=$(awsx sb-a:s-a "$PH_AKID" "$PH_SECRET" "" -- --endpoint-url https://dynamodb.test dynamodb put-item \
	--table-name acme-jobs --item "file://$T/huge.json" --cli-read-timeout 20 2>&1)
check "a body over 8 MiB: 413 from the proxy, nothing sent ($(grep -o '413[^.]*' <<<"$out" | head -n 1))" \
	bash -c "grep -q '413' <<<'$(tr "'" ' ' <<<"$out" | head -c 2000)' && test \$(wc -l <'$T/api.log') = $n0"
check "... the audit says why" grep -q '"reason":"sigv4_body"' "$T/audit.jsonl"
out=$(awsx sb-o:s-o "$O_AKID" "$O_SECRET" "" -- --endpoint-url https://dynamodb.test dynamodb list-tables 2>&1)
check "a service the credential does not sign for: 403, nothing sent" \
	bash -c "grep -q 'does not sign for service dynamodb' '$T/audit.jsonl' && test \$(wc -l <'$T/api.log') = $n0"
out=$(env -i PATH=/usr/bin:/bin HOME="$T" AWS_CONFIG_FILE="$T/none" AWS_SHARED_CREDENTIALS_FILE="$T/none" \
	AWS_CA_BUNDLE="$T/upca.crt" AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true \
	AWS_ACCESS_KEY_ID="$PH_AKID" AWS_SECRET_ACCESS_KEY="$PH_SECRET" \
	/usr/bin/aws --endpoint-url "https://localhost:$AP" sts get-caller-identity 2>&1)
check "the placeholders straight to the service (no proxy): InvalidClientTokenId" grep -q InvalidClientTokenId <<<"$out"

# ---- another client, and Expect: 100-continue through the gate ----
# curl signs with the placeholders (--aws-sigv4), sends no x-amz-content-sha256
sigcurl() {	# sigcurl BODY-FILE EXTRA-CURL-ARGS...
	local f=$1; shift
	curl -sS --max-time 20 --cacert "$T/export/ca.crt" -x "http://sb-a:s-a@127.0.0.1:$PP" \
		--aws-sigv4 "aws:amz:us-east-1:dynamodb" --user "$PH_AKID:$PH_SECRET" \
		-H 'Content-Type: application/x-amz-json-1.0' -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
		--data-binary "@$f" "$@" https://dynamodb.test/ 2>&1
}
printf '{}' >"$T/empty.json"
check "curl --aws-sigv4 with the placeholders: verified" bash -c "$(declare -f sigcurl); T='$T' PP=$PP PH_AKID=$PH_AKID PH_SECRET=$PH_SECRET; sigcurl '$T/empty.json' | grep -q acme-jobs"
head -c 300000 /dev/zero | tr '\0' ' ' >"$T/spaces.json"; printf '{}' >>"$T/spaces.json"
sigcurl "$T/spaces.json" -H 'Expect: 100-continue' >"$T/100.out"
check "a 300 KB body with Expect: 100-continue: answered by the proxy, then verified ($(head -c 200 "$T/100.out"))" \
	grep -q acme-jobs "$T/100.out"
check "... the whole body was hashed" last 1 'r = rs[0]; assert r["verdict"] == "ok" and r["body_len"] == 300002, r'
check "no secret, token or key id in the proxy's log, stderr or audit" \
	bash -c "! grep -qF -e '$SECRET' -e '$STS_SECRET' -e '$STS_TOKEN' '$T/proxy.log' '$T/audit.jsonl' '$T/stderr'"
check "the proxy still runs" kill -0 "$PX_PID"
