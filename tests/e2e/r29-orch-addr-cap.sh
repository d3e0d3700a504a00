#!/usr/bin/env bash
# r29-orch-addr-cap.sh: http.max_conns_per_addr at its least (1). A second
# connection from an address whose one connection is idle closes that one
# (common/addrcount.c counts, http.c evicts). Evicting the address's last
# connection freed its counter while the new connection still used it (a
# use-after-free ASan reports; the daemon then counted garbage).
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

orch_config "http:" "  max_conns_per_addr: 1" "  idle_timeout: 30s"
check "orch starts with max_conns_per_addr 1" orch_start
# Two keep-alive requests on one connection, then a second connection: the
# first is idle, so it is evicted and the second is served.
python3 - "$ORCH_URL" >"$T/out" 2>&1 <<'PY'
import http.client, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
a = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
a.request("GET", "/healthz"); r = a.getresponse(); r.read(); print("a", r.status)
for i in range(3):
    b = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
    b.request("GET", "/healthz"); r = b.getresponse(); r.read(); print("b", r.status)
    a = b
PY
cat "$T/out"
check "the first connection served" grep -q '^a 200' "$T/out"
check "each new connection served (the idle one before it evicted)" test "$(grep -c '^b 200' "$T/out")" = 3
check "the daemon still answers" curl -sf --max-time 5 "$ORCH_URL/healthz"
orch_stop
check "no sanitizer report" bash -c "! grep -q 'ERROR: AddressSanitizer\|runtime error' '$ORCH_LOG' '$T/orch.stderr' 2>/dev/null"
