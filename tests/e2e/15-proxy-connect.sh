# 15-proxy-connect: the CONNECT target is canonicalised once and that form
# alone drives the decision, the leaf, SNI and credential lookup; bad
# targets are refused; upstreams with bad certificates get no request byte.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"
# The proxy core is under test here: use the small fixture addon (22/23 test the shipped ones).
PX_ADDONS="[$FX/addons/inject.lua]"

fx_all || { fail "fixtures start"; exit 1; }
fx_recorder plain; PLAIN_PORT=$REC_PORT
IDN=xn--bcher-kva.example
CONF=$("$PY" -c 'print("g\u0456thub.com".encode("idna").decode())')   # Cyrillic i
PX_RESOLVE="  \"$IDN:443\": \"127.0.0.1:$PLAIN_PORT\"
  \"$CONF:443\": \"127.0.0.1:$PLAIN_PORT\""
px_config && px_start && px_sandbox || { fail "proxy start"; exit 1; }
ok "proxy start"
R=$T/r; mkdir -p "$R"

# --- spellings of an intercepted host: same leaf, same credential
i=0
for spell in "API.GITHUB.COM:443" "api.github.com.:443" "Api.GitHub.Com.:443" "api.github.com:0443"; do
	i=$((i + 1))
	pc --connect "$spell" --tls --sni api.github.com --send "GET /user?m=spell$i HTTP/1.1\r\nHost: api.github.com\r\nConnection: close\r\n\r\n" >"$R/spell$i" 2>&1
	check "CONNECT $spell: intercepted with leaf for api.github.com" grep -q "tls: ok san=api.github.com$" "$R/spell$i"
	check "CONNECT $spell: token injected" test "$(fx_api_q "r['path']=='/user?m=spell$i' and r['auth_ok']")" = 1
done
# The client's SNI is not the authority: SNI evil.test on a github CONNECT still gets github's leaf.
pc --connect api.github.com:443 --tls --sni evil.test --insecure --send "GET /user?m=sni HTTP/1.1\r\nHost: api.github.com\r\nConnection: close\r\n\r\n" >"$R/sni" 2>&1
check "client SNI ignored: leaf for the CONNECT target" grep -q "tls: ok san=api.github.com$" "$R/sni"
check "client SNI ignored: token still injected for the target" test "$(fx_api_q "r['path']=='/user?m=sni' and r['auth_ok']")" = 1

# --- IDN and confusables: canonical A-label is the key for the resolve map (tunnelled, not intercepted)
# Raw UTF-8 in a CONNECT line is not a valid request-target: it is either refused (400) or
# canonicalised to the A-label; never anything else. Real clients send the A-label.
utf8_ok() { # file marker
	grep -q '^connect: HTTP/1.[01] 400' "$1" || wait_for 5 grep -q "$2" "$T/rec-plain.bytes"
}
pc --connect "bücher.example:443" --send "idn-unicode-$$\r\n" --wait 0.3 >"$R/idn1" 2>&1
check "CONNECT bücher.example (raw UTF-8): 400 or tunnelled as $IDN" utf8_ok "$R/idn1" "idn-unicode-$$"
pc --connect "$IDN:443" --send "idn-alabel-$$\r\n" --wait 0.3 >"$R/idn2" 2>&1
check "CONNECT $IDN: resolve map hit" wait_for 5 grep -q "idn-alabel-$$" "$T/rec-plain.bytes"
pc --connect "XN--BCHER-KVA.EXAMPLE.:443" --send "idn-upper-$$\r\n" --wait 0.3 >"$R/idn3" 2>&1
check "CONNECT XN--BCHER-KVA.EXAMPLE.: same destination" wait_for 5 grep -q "idn-upper-$$" "$T/rec-plain.bytes"
api_n=$(wc -l <"$T/api.log")
pc --connect "gіthub.com:443" --send "confusable-$$\r\n" --wait 0.3 >"$R/conf" 2>&1
check "confusable gіthub.com (raw UTF-8): 400 or tunnelled as $CONF" utf8_ok "$R/conf" "confusable-$$"
pc --connect "$CONF:443" --send "confusable-a-$$\r\n" --wait 0.3 >"$R/conf2" 2>&1
check "confusable A-label $CONF is not github.com: tunnelled, not intercepted" wait_for 5 grep -q "confusable-a-$$" "$T/rec-plain.bytes"
check "confusables reached no github upstream" test "$(wc -l <"$T/api.log")" = "$api_n"
check "confusables got no token" rec_clean plain

# --- IPv4 literals in every inet_aton spelling reach the same address
i=0
for spell in "127.0.0.1" "0x7f.1" "2130706433" "0177.0.0.1" "127.1" "0x7f000001" "127.0.1" "0x7F.0.0.1"; do
	i=$((i + 1))
	pc --connect "$spell:$PLAIN_PORT" --send "ipspell$i-$$\r\n" --wait 0.3 >"$R/ip$i" 2>&1
	check "CONNECT $spell:$PLAIN_PORT reaches 127.0.0.1" wait_for 5 grep -q "ipspell$i-$$" "$T/rec-plain.bytes"
done

# --- targets that are not host:port are refused (400), and reach nothing
before=$(grep -c accept "$T/rec-plain.events")
api_before=$(wc -l <"$T/api.log")
i=0
for bad in "api.github.com" "api.github.com:" "api.github.com:0" "api.github.com:65536" \
	"api.github.com:443/x" "user@api.github.com:443" "api.github.com:443:443" "api..github.com:443" \
	"api.github.com:-1" "api.github.com:+443" "[::1%25lo]:$PLAIN_PORT" "%61pi.github.com:443" \
	"api github.com:443" "$(printf 'a%.0s' $(seq 300)).com:443" \
	"api.github.com:443 HTTP/1.1\r\nX: y" "*:443" ":443"; do
	i=$((i + 1))
	pc "--connect=$bad" --wait 3 >"$R/bad$i" 2>&1
	check "CONNECT '$bad' refused" bash -c "grep -q '^connect: HTTP/1.[01] 4[0-9][0-9]' $R/bad$i"
done
check "no refused target reached the recorder" test "$(grep -c accept "$T/rec-plain.events")" = "$before"
check "no refused target reached the API" test "$(wc -l <"$T/api.log")" = "$api_before"

# --- the proxy's own listener is not a destination, even with loopback allowed
pc --connect "127.0.0.1:$PX_PORT" --wait 3 >"$R/self" 2>&1
check "CONNECT to the proxy's own listener refused (403)" grep -q '^connect: HTTP/1.[01] 403' "$R/self"

# --- upstream certificate failures: 502 to CONNECT, no request byte ever sent
badcert() { # name cert-base
	fx_recorder "$1" --cert "$PKI/$2.pem" --key "$PKI/$2.key"
	PX_NORESOLVE=1 PX_RESOLVE="  \"github.com:443\": \"127.0.0.1:$REC_PORT\"
  \"api.github.com:443\": \"127.0.0.1:$REC_PORT\"" px_config "px-$1" && px_start "px-$1" && px_sandbox || { fail "$1: proxy start"; return; }
	pc --connect github.com:443 --tls --sni github.com --send "GET /e2e-org/repo.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: github.com\r\n\r\n" >"$R/$1" 2>&1
	check "$1: CONNECT refused with 502" grep -q '^connect: HTTP/1.[01] 502' "$R/$1"
	check "$1: upstream handshake did not complete" bash -c "! grep -q tls-ok $T/rec-$1.events"
	check "$1: not one request byte upstream" rec_empty "$1"
	( fx_client_home; px_client_env sb-e2e "$SECRET"; ! git ls-remote https://github.com/e2e-org/repo.git >"$R/$1.git" 2>&1 )
	check "$1: git through it fails" test $? = 0
	check "$1: still no byte upstream after git" rec_empty "$1"
	check "$1: token never sent" rec_clean "$1"
	kill "$PX_PID"; wait "$PX_PID" 2>/dev/null
}
badcert untrusted github.com-untrusted
badcert expired github.com-expired
badcert wronghost wronghost
check "no sanitizer report from the proxy" px_san_clean
