#!/usr/bin/env bash
# r30-fixtures.sh: the honest upstreams of the credential tests (issue 30),
# each proven honest by its real client, with no proxy in between:
#   s3fake.py     the AWS CLI (cp, ls, multipart, presign, aws-chunked with a
#                 trailer) and botocore-signed requests (s3probe.py: AWS's
#                 published SigV4 examples, tampered and stale requests,
#                 signed aws-chunked uploads) -- a wrong secret is refused
#   oauthfake.py  curl through client credentials, refresh with rotation,
#                 reuse detection, expiry, revocation
#   modelfake.py  curl and the OpenAI and Anthropic SDKs, right and wrong keys
#   registry.sh   skopeo pushing/pulling through docker-registry with token
#                 auth (regtoken.py) and with htpasswd, right and wrong creds
#   verdaccio.sh  npm install of @acme/private-lib with and without a token,
#                 and with tarballs on another host that gets no credential
# Every case asserts on what the upstream recorded, not only on exit codes.
. "$(dirname "$0")/../lib/common.sh"
PY=/usr/bin/python3 # Debian's: python3-botocore, python3-cryptography
FX=$TOP/tests/fixtures
CRED=$TOP/tests/cred

# Nothing here is optional: make test installs every client and server
# (scripts/install-deps.sh: deps/cred-tests.txt and the other deps/*.txt),
# so a missing one fails by its package's name and the script stops, rather
# than skipping or failing later as an unexplained case.
need() { # PACKAGE COMMAND...: fail unless COMMAND succeeds
	local pkg=$1
	shift
	"$@" >/dev/null 2>&1 || { fail "missing $pkg" "'$*' failed (install it: make deps)"; _need=1; }
}
_need=0
need awscli test -x /usr/bin/aws
need python3-botocore "$PY" -c 'import botocore.auth'
need python3-cryptography "$PY" -c 'import cryptography'
need docker-registry command -v docker-registry
need skopeo command -v skopeo
need nodejs command -v node
need "npm (scripts/deps-npm.sh)" command -v npm
need jq command -v jq
need curl command -v curl
need openssl command -v openssl
[ $_need -eq 0 ] || exit 1

# the npm packages (Verdaccio, the model SDKs) from tests/cred's lock file:
# installed by make deps (scripts/deps-npm.sh), here too if still missing
if [ ! -d "$CRED/node_modules/verdaccio" ] || [ ! -d "$CRED/node_modules/openai" ] ||
	[ ! -d "$CRED/node_modules/@anthropic-ai/sdk" ]; then
	bash "$TOP/scripts/deps-npm.sh" >"$T/npm-ci.log" 2>&1 ||
		{ fail "npm ci in tests/cred (scripts/deps-npm.sh)" "$(tail -3 "$T/npm-ci.log")"; exit 1; }
fi

# PKI: the test CA and one leaf for every loopback name used here
bash "$FX/mkpki.sh" "$T/pki" >/dev/null
(
	cd "$T/pki"
	openssl ecparam -name prime256v1 -genkey -noout -out cred.key 2>/dev/null
	openssl req -new -key cred.key -subj /CN=localhost -out cred.csr 2>/dev/null
	printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:127.0.0.2,DNS:s3.test,DNS:*.s3.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >cred.ext
	openssl x509 -req -in cred.csr -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days 2 \
		-extfile cred.ext -out cred.pem 2>/dev/null
)
CA=$T/pki/ca.pem CERT=$T/pki/cred.pem KEY=$T/pki/cred.key
C=(curl -s --max-time 10 --cacert "$CA")

S3P=$(free_port) OAP=$(free_port) MP=$(free_port) RTP=$(free_port) RTKP=$(free_port)
RBP=$(free_port) VMP=$(free_port) VBP=$(free_port) BLP=$(free_port)
AKID=AKIAFAKE000000000001
SECRET=fakeSecret/0123456789abcdefghijklmnopqrst
OKEY=sk-test-openai-5f0c1e2d3c4b5a69
AKEY=sk-ant-test-7a6b5c4d3e2f1a0b

# start every upstream at once (Verdaccio is the slow one)
"$PY" "$FX/s3fake.py" --listen "$S3P" --cert "$CERT" --key "$KEY" --cred "$AKID:$SECRET" \
	--bucket probe --log "$T/s3.log" >"$T/s3.out" 2>&1 &
track_pid $!
"$PY" "$FX/oauthfake.py" --listen "$OAP" --cert "$CERT" --key "$KEY" \
	--client 'app:s3cr%t:read,write' --refresh 'app:rt_seed:read' --access-ttl 1 \
	--log "$T/oauth.log" >"$T/oauth.out" 2>&1 &
track_pid $!
"$PY" "$FX/modelfake.py" --listen "$MP" --cert "$CERT" --key "$KEY" --openai-key "$OKEY" \
	--anthropic-key "$AKEY" --log "$T/model.log" >"$T/model.out" 2>&1 &
track_pid $!
REG_CERT=$CERT REG_KEY=$KEY
. "$TOP/tests/lib/registry.sh"
VD_CERT=$CERT VD_KEY=$KEY VD_CA=$CA
. "$TOP/tests/lib/verdaccio.sh"
vd_users alice:alicepw
vd_start main "$VMP"
vd_start blob "$VBP" "https://127.0.0.2:$BLP/"
reg_start_token "$RTP" "$RTKP" 'alice:alicepw:acme/*=pull,push' 'bob:bobpw:acme/*=pull'
reg_start_basic "$RBP" 'carol:carolpw'
check "s3fake, oauthfake, modelfake listen" wait_for 10 bash -c \
	"exec 3<>/dev/tcp/127.0.0.1/$S3P && exec 4<>/dev/tcp/127.0.0.1/$OAP && exec 5<>/dev/tcp/127.0.0.1/$MP"

# jq over a JSON-lines log: jl FILE FILTER (slurped)
jl() { jq -rs "$2" "$1"; }

# ---- S3 ---------------------------------------------------------------------
"$PY" "$CRED/s3probe.py" selfcheck >"$T/s3self.out" 2>&1
check "s3probe selfcheck: the verifier reproduces AWS's SigV4 examples and botocore" \
	bash -c "! grep -q '^not ok' '$T/s3self.out' && [ \$(grep -c '^ok' '$T/s3self.out') -ge 30 ]" ||
	grep '^not ok' "$T/s3self.out"

"$PY" "$CRED/s3probe.py" live "https://localhost:$S3P" "$CA" "$AKID" "$SECRET" probe \
	--vhost s3.test >"$T/probe.out" 2>&1
pr() { grep -qx "$1" "$T/probe.out" || { echo "probe: want '$1'"; grep "^${1%% *} " "$T/probe.out"; return 1; }; }
check "botocore-signed PUT and GET succeed, body intact" pr "get-body-matches True"
check "a wrong secret: 403 SignatureDoesNotMatch" pr "wrong-secret 403 SignatureDoesNotMatch"
check "an unknown key id: 403 InvalidAccessKeyId" pr "unknown-key 403 InvalidAccessKeyId"
check "a wrong region: 400 AuthorizationHeaderMalformed" pr "wrong-region 400 AuthorizationHeaderMalformed"
check "a wrong service: 400 AuthorizationHeaderMalformed" pr "wrong-service 400 AuthorizationHeaderMalformed"
check "a date 20 minutes old: 403 RequestTimeTooSkewed" pr "stale-date 403 RequestTimeTooSkewed"
check "a signed header changed: 403 SignatureDoesNotMatch" pr "tampered-header 403 SignatureDoesNotMatch"
check "the query changed: 403 SignatureDoesNotMatch" pr "tampered-query 403 SignatureDoesNotMatch"
check "the body changed under a signed hash: 400 XAmzContentSHA256Mismatch" pr "tampered-body 400 XAmzContentSHA256Mismatch"
check "an unsigned x-amz- header: 403 AccessDenied" pr "unsigned-amz-header 403 AccessDenied"
check "no Authorization: 403 AccessDenied" pr "no-auth 403 AccessDenied"
check "another Host than signed: 403 SignatureDoesNotMatch" pr "auth-dropped-host-signed-other 403 SignatureDoesNotMatch"
check "UNSIGNED-PAYLOAD: accepted, the body not hashed (as S3)" pr "unsigned-payload 200 -"
check "signed aws-chunked upload (botocore seed signature): stored intact" pr "stream-body-matches True"
check "signed aws-chunked with one chunk changed: 403 SignatureDoesNotMatch" pr "streaming-bad-chunk 403 SignatureDoesNotMatch"
check "aws-chunked with a trailing CRC32: accepted; a wrong one 400 BadDigest" \
	bash -c "grep -qx 'trailer-crc-ok 200 -' '$T/probe.out' && grep -qx 'trailer-crc-wrong 400 BadDigest' '$T/probe.out'"
check "virtual-host style (Host: probe.s3.test): PUT and GET" pr "vhost-body-matches True"
check "s3fake logged the signed chunks it verified (4: 3 data + the final)" \
	test "$(jl "$T/s3.log" '[.[] | select(.verdict == "ok" and .auth.payload == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")][0].auth.chunks')" = 4

# the AWS CLI (Debian's v2, never a version manager's shim), its own config dir
export AWS_CONFIG_FILE=$T/aws/config AWS_SHARED_CREDENTIALS_FILE=$T/aws/credentials
export AWS_CA_BUNDLE=$CA AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true AWS_PAGER=
export AWS_ACCESS_KEY_ID=$AKID AWS_SECRET_ACCESS_KEY=$SECRET
mkdir -p "$T/aws"
AWS=(/usr/bin/aws --endpoint-url "https://localhost:$S3P")
# what `aws configure set default.s3.X` writes (written here: each aws call
# costs most of a second); two variants for the payload and addressing cases
awscfg() { printf '[default]\ns3 =\n    multipart_threshold = 8MB\n    multipart_chunksize = 5MB\n%s' "$1"; }
awscfg "" >"$T/aws/config"
awscfg "    payload_signing_enabled = true
" >"$T/aws/config-signed"
awscfg "    addressing_style = virtual
" >"$T/aws/config-vhost"
head -c 1000 /dev/urandom >"$T/small.bin"
head -c $((9 * 1024 * 1024 + 77)) /dev/urandom >"$T/big.bin"
: >"$T/s3.log"
check "aws s3 cp (small)" "${AWS[@]}" s3 cp --no-progress "$T/small.bin" s3://probe/dir/small.bin
check "aws s3 cp (9 MiB, threshold 8 MiB: multipart)" "${AWS[@]}" s3 cp --no-progress "$T/big.bin" s3://probe/big.bin
"${AWS[@]}" s3 ls --recursive s3://probe/ >"$T/ls.out" 2>&1
check "aws s3 ls lists both with their sizes" bash -c \
	"grep -q ' 1000 dir/small.bin\$' '$T/ls.out' && grep -q ' $((9 * 1024 * 1024 + 77)) big.bin\$' '$T/ls.out'"
check "aws s3 cp back (ranged GETs): identical" bash -c \
	"$(printf '%q ' "${AWS[@]}") s3 cp --no-progress s3://probe/big.bin '$T/big.back' >/dev/null && cmp -s '$T/big.bin' '$T/big.back'"
check "the CLI's PutObject was UNSIGNED-PAYLOAD with Content-MD5 (read from the log)" \
	test "$(jl "$T/s3.log" '[.[] | select(.op == "PutObject") | [.auth.payload, ([.headers[] | select(.[0] | ascii_downcase == "content-md5")] | length)]][0] | @tsv')" = "UNSIGNED-PAYLOAD	1"
check "the multipart upload: Create, 2 UploadParts (UNSIGNED-PAYLOAD), Complete" \
	test "$(jl "$T/s3.log" '[.[] | select(.verdict == "ok") | .op] | [index("CreateMultipartUpload") != null, ([.[] | select(. == "UploadPart")] | length), index("CompleteMultipartUpload") != null] | @tsv')" = "true	2	true"
check "the stored multipart object has 2 parts' ETag" bash -c \
	"$(printf '%q ' "${AWS[@]}") s3api head-object --bucket probe --key big.bin | grep -q '\"ETag\": \"\\\\\"[0-9a-f]*-2\\\\\"\"'"
check "s3api put-object --checksum-algorithm CRC32: aws-chunked, trailer verified" \
	"${AWS[@]}" s3api put-object --bucket probe --key chunked.bin --body "$T/small.bin" --checksum-algorithm CRC32 --output text
check "... the CLI really sent STREAMING-UNSIGNED-PAYLOAD-TRAILER, Content-Encoding aws-chunked, x-amz-checksum-crc32 in the trailer" \
	test "$(jl "$T/s3.log" '[.[] | select(.key == "chunked.bin" and .verdict == "ok")][0] | [.auth.payload, ([.headers[] | select(.[0] | ascii_downcase == "content-encoding")][0][1]), (.auth.trailer | has("x-amz-checksum-crc32"))] | @tsv')" = "STREAMING-UNSIGNED-PAYLOAD-TRAILER	aws-chunked	true"
check "payload_signing_enabled: PutObject with the body's SHA-256 signed" bash -c \
	"AWS_CONFIG_FILE='$T/aws/config-signed' $(printf '%q ' "${AWS[@]}") s3 cp --no-progress '$T/small.bin' s3://probe/signed.bin >/dev/null && \
	 test \"\$(jq -rs '[.[] | select(.key == \"signed.bin\")][0].auth.payload' '$T/s3.log')\" = \"\$(sha256sum '$T/small.bin' | cut -c1-64)\""
url=$("${AWS[@]}" s3 presign s3://probe/dir/small.bin --expires-in 60)
check "aws s3 presign: curl fetches the object with the presigned URL" bash -c \
	"$(printf '%q ' "${C[@]}") '$url' | cmp -s - '$T/small.bin'"
check "a presigned URL with another key in it is refused" bash -c \
	"$(printf '%q ' "${C[@]}") '${url/small.bin/big.bin}' | grep -q '<Code>SignatureDoesNotMatch</Code>'"
AWS_SECRET_ACCESS_KEY=${SECRET}x "${AWS[@]}" s3 ls s3://probe/ >"$T/wrong.out" 2>&1
check "aws with a wrong secret: refused (SignatureDoesNotMatch)" grep -q SignatureDoesNotMatch "$T/wrong.out"
check "... and s3fake logged the request with the key id and verdict" \
	test "$(jl "$T/s3.log" '[.[] | select(.verdict == "SignatureDoesNotMatch")][-1] | [.auth.key_id, .status] | @tsv')" = "$AKID	403"
# virtual-host addressing needs BUCKET.s3.test to resolve: a private /etc/hosts
printf '127.0.0.1 localhost s3.test probe.s3.test\n' >"$T/hosts"
if unshare -m true 2>/dev/null; then
	AWS_CONFIG_FILE=$T/aws/config-vhost unshare -m bash -c "mount --bind '$T/hosts' /etc/hosts && /usr/bin/aws --endpoint-url https://s3.test:$S3P s3 ls s3://probe/dir/" >"$T/vhost.out" 2>&1
	check "aws with addressing_style virtual: Host probe.s3.test, listed" bash -c \
		"grep -q small.bin '$T/vhost.out' && test \"\$(jq -rs '[.[] | select(.style == \"virtual\")][-1] | [.host, .verdict] | @tsv' '$T/s3.log')\" = 'probe.s3.test:$S3P	ok'"
else
	skip "aws with addressing_style virtual" "no mount namespace here (unshare -m)"
fi

# ---- OAuth 2.0 ------------------------------------------------------------------
O=https://localhost:$OAP
BAS=(-u 'app:s3cr%25t') # Basic: client_id and secret form-urlencoded first
tok() { "${C[@]}" -o "$T/o.json" -w '%{http_code}' "$@" "$O/token"; }
oj() { jq -r "$1" "$T/o.json"; }
check "client_credentials with Basic: 200, Bearer, expires_in 1, no refresh token" bash -c \
	"[ \"\$($(declare -f tok); C=($(printf '%q ' "${C[@]}")); O=$O; T=$T; tok -u 'app:s3cr%25t' -d grant_type=client_credentials -d scope=read)\" = 200 ] && \
	 jq -e '.token_type == \"Bearer\" and .expires_in == 1 and (has(\"refresh_token\") | not) and .scope == \"read\"' '$T/o.json' >/dev/null"
check "client_credentials with the secret in the body: 200" \
	test "$(tok -d client_id=app --data-urlencode 'client_secret=s3cr%t' -d grant_type=client_credentials)" = 200
check "both client authentication methods at once: 400 invalid_request" bash -c \
	"[ \"\$($(printf '%q ' "${C[@]}") -o '$T/o2.json' -w '%{http_code}' -u 'app:s3cr%25t' -d client_id=app --data-urlencode 'client_secret=s3cr%t' -d grant_type=client_credentials $O/token)\" = 400 ] && jq -e '.error == \"invalid_request\"' '$T/o2.json' >/dev/null"
"${C[@]}" -D "$T/o.hdr" -o "$T/o.json" -u 'app:wrong' -d grant_type=client_credentials "$O/token"
check "a wrong client secret: 401 invalid_client, WWW-Authenticate Basic" bash -c \
	"grep -q '^HTTP/1.1 401' '$T/o.hdr' && grep -qi '^WWW-Authenticate: Basic' '$T/o.hdr' && jq -e '.error == \"invalid_client\"' '$T/o.json' >/dev/null"
check "a scope beyond the client's: 400 invalid_scope" bash -c \
	"[ \"\$($(printf '%q ' "${C[@]}") -o '$T/o3.json' -w '%{http_code}' -u 'app:s3cr%25t' -d grant_type=client_credentials -d 'scope=read admin' $O/token)\" = 400 ] && jq -e '.error == \"invalid_scope\"' '$T/o3.json' >/dev/null"
check "refresh with the seeded refresh token: 200, a new refresh token" \
	test "$(tok "${BAS[@]}" -d grant_type=refresh_token -d refresh_token=rt_seed)" = 200
AT1=$(oj .access_token) RT1=$(oj .refresh_token)
check "... rotated: the new refresh token is not the old one" bash -c "[ -n '$RT1' ] && [ '$RT1' != null ] && [ '$RT1' != rt_seed ]"
api() { "${C[@]}" -D "$T/a.hdr" -o "$T/a.json" -w '%{http_code}' "$@"; }
check "the API with the access token: 200" test "$(api -H "Authorization: Bearer $AT1" "$O/api/data")" = 200
check "the API without a token: 401, Bearer challenge without an error code" bash -c \
	"[ \"\$($(printf '%q ' "${C[@]}") -D '$T/a0.hdr' -o /dev/null -w '%{http_code}' $O/api/data)\" = 401 ] && grep -qi '^WWW-Authenticate: Bearer realm=\"oauthfake\"' '$T/a0.hdr' && ! grep -qi 'error=' '$T/a0.hdr'"
check "a scope the token lacks: 403 insufficient_scope" test "$(api -H "Authorization: Bearer $AT1" "$O/api/scoped/write/x")" = 403
sleep 1.1
check "the access token once expired: 401 error=\"invalid_token\"" bash -c \
	"[ \"\$($(printf '%q ' "${C[@]}") -D '$T/a1.hdr' -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer $AT1' $O/api/data)\" = 401 ] && grep -qi 'WWW-Authenticate: Bearer .*error=\"invalid_token\"' '$T/a1.hdr'"
check "the rotated refresh token works once: 200 and another new one" \
	test "$(tok "${BAS[@]}" -d grant_type=refresh_token -d "refresh_token=$RT1")" = 200
AT2=$(oj .access_token) RT2=$(oj .refresh_token)
check "the spent refresh token again: 400 invalid_grant (reuse)" bash -c \
	"[ \"\$($(printf '%q ' "${C[@]}") -o '$T/o4.json' -w '%{http_code}' -u 'app:s3cr%25t' -d grant_type=refresh_token -d refresh_token=$RT1 $O/token)\" = 400 ] && jq -e '.error == \"invalid_grant\"' '$T/o4.json' >/dev/null"
check "... which revoked the family: the newest refresh token is refused too" \
	test "$(tok "${BAS[@]}" -d grant_type=refresh_token -d "refresh_token=$RT2")" = 400
check "... and its access token: 401" test "$(api -H "Authorization: Bearer $AT2" "$O/api/data")" = 401
RT3=$("${C[@]}" -d client_id=app -d scope=read "$O/_control/issue" | jq -r .refresh_token)
"${C[@]}" -o /dev/null -d "refresh_token=$RT3" "$O/_control/revoke"
check "a refresh token revoked by the control endpoint: 400 invalid_grant" bash -c \
	"[ \"\$($(printf '%q ' "${C[@]}") -o '$T/o5.json' -w '%{http_code}' -u 'app:s3cr%25t' -d grant_type=refresh_token -d refresh_token=$RT3 $O/token)\" = 400 ] && jq -e '.error == \"invalid_grant\"' '$T/o5.json' >/dev/null"
check "the log holds what arrived: the Basic header and the body's client_secret" bash -c \
	"jq -se 'any(.[]; .headers[] | select(.[0] == \"Authorization\") | .[1] == \"Basic $(printf 'app:s3cr%%25t' | base64)\") and any(.[]; .form.client_secret == \"s3cr%t\")' '$T/oauth.log' >/dev/null"
check "the server counted 1 reuse and 2 revoked families" bash -c \
	"$(printf '%q ' "${C[@]}") $O/_control/state | jq -e '.reuse_detected == 1 and .families_revoked == 2' >/dev/null"

# ---- model APIs --------------------------------------------------------------
M=https://localhost:$MP
mreq() { "${C[@]}" -o "$T/m.json" -w '%{http_code}' "$@"; }
body='{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi there"}]}'
check "OpenAI-style, right bearer: 200, the reply echoes" bash -c \
	"[ \"\$($(printf '%q ' "${C[@]}") -o '$T/m1.json' -w '%{http_code}' -H 'Authorization: Bearer $OKEY' -H 'content-type: application/json' -d '$body' $M/v1/chat/completions)\" = 200 ] && jq -e '.choices[0].message.content == \"echo: hi there\"' '$T/m1.json' >/dev/null"
check "OpenAI-style, no key: 401, code null" bash -c \
	"[ \"\$($(printf '%q ' "${C[@]}") -o '$T/m2.json' -w '%{http_code}' -d '$body' $M/v1/chat/completions)\" = 401 ] && jq -e '.error.type == \"invalid_request_error\" and .error.code == null' '$T/m2.json' >/dev/null"
check "OpenAI-style, wrong key: 401 invalid_api_key, the key masked in the message" bash -c \
	"[ \"\$($(printf '%q ' "${C[@]}") -o '$T/m3.json' -w '%{http_code}' -H 'Authorization: Bearer sk-wrong-0123456789abcdef' -d '$body' $M/v1/chat/completions)\" = 401 ] && jq -e '.error.code == \"invalid_api_key\"' '$T/m3.json' >/dev/null && ! grep -q 'sk-wrong-0123456789abcdef' '$T/m3.json'"
check "Anthropic-style, x-api-key + anthropic-version: 200" \
	test "$(mreq -H "x-api-key: $AKEY" -H 'anthropic-version: 2023-06-01' -d "$body" "$M/v1/messages")" = 200
check "Anthropic-style, no anthropic-version: 400 invalid_request_error" bash -c \
	"[ \"\$($(printf '%q ' "${C[@]}") -o '$T/m4.json' -w '%{http_code}' -H 'x-api-key: $AKEY' -d '$body' $M/v1/messages)\" = 400 ] && jq -e '.type == \"error\" and .error.type == \"invalid_request_error\"' '$T/m4.json' >/dev/null"
check "Anthropic-style, wrong x-api-key: 401 authentication_error" bash -c \
	"[ \"\$($(printf '%q ' "${C[@]}") -o '$T/m5.json' -w '%{http_code}' -H 'x-api-key: sk-ant-wrong' -H 'anthropic-version: 2023-06-01' -d '$body' $M/v1/messages)\" = 401 ] && jq -e '.error.type == \"authentication_error\"' '$T/m5.json' >/dev/null"
check "Anthropic-style, the OpenAI key as x-api-key: 401" \
	test "$(mreq -H "x-api-key: $OKEY" -H 'anthropic-version: 2023-06-01' -d "$body" "$M/v1/messages")" = 401
(cd "$CRED" && NODE_EXTRA_CA_CERTS=$CA node model-sdk.mjs "$M" "$OKEY" "$AKEY") >"$T/sdk.out" 2>&1
cat "$T/sdk.out"
check "the vendors' SDKs: all cases pass" bash -c \
	"! grep -q '^not ok' '$T/sdk.out' && [ \$(grep -c '^ok' '$T/sdk.out') -eq 7 ]"
check "the log shows the SDKs' headers: Bearer for OpenAI, Bearer or x-api-key for Anthropic" \
	jq -se >/dev/null "any(.[]; .path == \"/v1/chat/completions\" and .status == 200 and (.headers | any(.[0] == \"authorization\" and .[1] == \"Bearer $OKEY\"))) and any(.[]; .path == \"/v1/messages\" and .status == 200 and (.headers | any(.[0] == \"x-api-key\" and .[1] == \"$AKEY\")))" "$T/model.log"

# ---- OCI registries ----------------------------------------------------------------
layer=$(reg_oci_image "$T/img" v1)
rs() { reg_skopeo copy -q "$@" >>"$T/skopeo.out" 2>&1; }
check "skopeo push with token auth (alice: pull,push)" \
	rs --dest-creds alice:alicepw --dest-cert-dir "$REG_CERTS" "oci:$T/img:v1" "docker://localhost:$RTP/acme/tiny:v1"
check "skopeo pull with token auth (bob: pull): the layer came back" bash -c \
	"$(declare -f rs reg_skopeo); T=$T; rs --src-creds bob:bobpw --src-cert-dir '$REG_CERTS' docker://localhost:$RTP/acme/tiny:v1 'oci:$T/back:v1' && test -f '$T/back/blobs/sha256/${layer#sha256:}'"
check "skopeo push as bob (pull only): refused" bash -c \
	"$(declare -f rs reg_skopeo); T=$T; ! rs --dest-creds bob:bobpw --dest-cert-dir '$REG_CERTS' 'oci:$T/img:v1' docker://localhost:$RTP/acme/tiny:v2"
check "skopeo pull with a wrong password: refused by the token endpoint" bash -c \
	"$(declare -f rs reg_skopeo); T=$T; ! rs --src-creds alice:wrong --src-cert-dir '$REG_CERTS' docker://localhost:$RTP/acme/tiny:v1 'oci:$T/back2:v1'"
check "skopeo pull without credentials: refused (the anonymous token grants nothing)" bash -c \
	"$(declare -f rs reg_skopeo); T=$T; ! rs --src-cert-dir '$REG_CERTS' docker://localhost:$RTP/acme/tiny:v1 'oci:$T/back3:v1'"
check "regtoken logged alice's Basic credentials and granted pull,push on acme/tiny" \
	jq -se "any(.[]; .user == \"alice\" and .status == 200 and .access == [{\"type\":\"repository\",\"name\":\"acme/tiny\",\"actions\":[\"pull\",\"push\"]}] and (.headers | any(.[0] == \"Authorization\" and .[1] == \"Basic $(printf alice:alicepw | base64)\")))" "$REGTOKEN_LOG" >/dev/null
check "... granted bob pull only when he asked for push" \
	jq -se 'any(.[]; .user == "bob" and (.scopes | index("repository:acme/tiny:pull,push")) and .access[0].actions == ["pull"])' "$REGTOKEN_LOG" >/dev/null
check "the registry refuses a bearer token it did not get from regtoken" bash -c \
	"[ \"\$($(printf '%q ' "${C[@]}") -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer eyJhbGciOiJFUzI1NiJ9.e30.AAAA' https://localhost:$RTP/v2/acme/tiny/manifests/v1)\" = 401 ]"
check "skopeo push with htpasswd Basic auth" \
	rs --dest-creds carol:carolpw --dest-cert-dir "$REG_CERTS" "oci:$T/img:v1" "docker://localhost:$RBP/acme/tiny:v1"
check "skopeo pull with htpasswd Basic auth: the layer came back" bash -c \
	"$(declare -f rs reg_skopeo); T=$T; rs --src-creds carol:carolpw --src-cert-dir '$REG_CERTS' docker://localhost:$RBP/acme/tiny:v1 'oci:$T/back4:v1' && test -f '$T/back4/blobs/sha256/${layer#sha256:}'"
check "skopeo pull with a wrong htpasswd password: refused" bash -c \
	"$(declare -f rs reg_skopeo); T=$T; ! rs --src-creds carol:wrong --src-cert-dir '$REG_CERTS' docker://localhost:$RBP/acme/tiny:v1 'oci:$T/back5:v1'"
check "the registries' own logs name who they authenticated (carol by htpasswd, alice by token)" bash -c \
	"grep -q 'auth.user.name=\"*carol' '$T/registry-basic.log' && grep -q 'auth.user.name=\"*alice' '$T/registry-token.log'"

# ---- npm: Verdaccio -------------------------------------------------------------
VM=https://localhost:$VMP/ VB=https://localhost:$VBP/
check "Verdaccio (main) up" vd_wait "$VM"
check "Verdaccio (tarballs on 127.0.0.2) up" vd_wait "$VB"
vd_blobhost "$BLP" 127.0.0.2 "$CERT" "$KEY"
TOK=$(vd_token "$VM" alice alicepw)
check "npm login (legacy, Basic) gives a token" test -n "$TOK" -a "$TOK" != null
check "a wrong password gets no token" test "$(vd_token "$VM" alice wrong)" = ""
check "npm publish @acme/private-lib with the token" vd_publish "$VM" "$TOK" 1.0.0
inst() { # NAME NPMRC: npm install @acme/private-lib in a fresh project
	mkdir -p "$T/$1" && echo '{"name":"'"$1"'","private":true}' >"$T/$1/package.json"
	(cd "$T/$1" && vd_npm "$2" install @acme/private-lib --loglevel=error) >"$T/$1.out" 2>&1
}
vd_npmrc "$T/ok.npmrc" "$VM" "$TOK"
check "npm install @acme/private-lib with the right _authToken" inst c-ok "$T/ok.npmrc"
check "... installed the published code" bash -c "cd '$T/c-ok' && node -e 'process.exit(require(\"@acme/private-lib\") === \"private-lib 1.0.0\" ? 0 : 1)'"
vd_npmrc "$T/none.npmrc" "$VM"
check "npm install without a token: refused (E401)" bash -c \
	"$(declare -f inst vd_npm); T=$T; ! inst c-none '$T/none.npmrc' && grep -q E401 '$T/c-none.out'"
vd_npmrc "$T/bad.npmrc" "$VM" "$(printf nobody:not-a-token | base64)"
check "npm install with a wrong token: refused" bash -c \
	"$(declare -f inst vd_npm); T=$T; ! inst c-bad '$T/bad.npmrc'"
check "Verdaccio logged alice for the tarball and anonymous 401s" bash -c \
	"grep '^{' '$T/verdaccio-main.log' | jq -se 'any(.[]; .user == \"alice\" and .status == 200 and (.request.url // \"\" | endswith(\".tgz\"))) and any(.[]; .user == null and .status == 401)' >/dev/null"
vd_npmrc "$T/blob.npmrc" "$VB" "$TOK"
check "npm install with tarballs on another host (127.0.0.2)" inst c-blob "$T/blob.npmrc"
check "... the tarball came from that host" \
	jq -se 'any(.[]; .status == 200 and (.path | endswith("/private-lib-1.0.0.tgz")))' "$T/blobhost.log" >/dev/null
check "... which received no credential (no Authorization, not the token anywhere)" bash -c \
	"jq -se 'all(.[]; all(.headers[]; .[0] | ascii_downcase | IN(\"authorization\", \"cookie\", \"proxy-authorization\") | not))' '$T/blobhost.log' >/dev/null && ! grep -qF '$TOK' '$T/blobhost.log'"
