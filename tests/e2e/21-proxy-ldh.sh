# 25b-proxy-ldh (PENDING: fails against the current proxy): CONNECT targets
# whose labels break the LDH rule (leading/trailing hyphen) are refused with
# 400 instead of being resolved through DNS. Runs in its own netns.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"
PX_ADDONS="[$FX/addons/inject.lua]"
fx_all || { fail "fixtures start"; exit 1; }
px_config && px_start && px_sandbox || { fail "proxy start"; exit 1; }
for bad in "-api.github.com:443" "api-.github.com:443" "api.-github.com:443"; do
	pc "--connect=$bad" --wait 3 >"$T/out" 2>&1
	check "CONNECT '$bad' refused with 400" grep -q '^connect: HTTP/1.[01] 400' "$T/out"
done
sleep 12
check "none of them was resolved or dialled" bash -c "! grep -qE 'target=(-api|api-|api\\.-).*reason=(resolve_failed|connect_failed|connect_timeout|address_policy)' $PX_DIR/proxy.log"
check "each refused as a bad target in the audit log" test "$(grep -c '"type":"connect".*"status":400.*"reason":"bad_target"' "$PX_DIR/audit.jsonl")" = 3
