#!/usr/bin/env bash
# 55b-orch-reconcile-claim.sh: a warm-pool member claimed while a
# reconcile's listing of the runtime is on its way (the listing still says
# "pool member") is the claiming session's alone. The reconcile neither
# adopts it into the pool again (which would hand one sandbox to two
# sessions) nor destroys it as a stale member (which would take the
# session's sandbox away mid-call). This was the race behind the flaky
# 66-k8s-orchestrator (issue 17). The fake runtime's fake.list_delay makes
# every listing arrive 2 s after it was read, so the claim lands inside
# that window deterministically: the test waits for the runtime to log
# that a listing was read, then claims.
. "$(dirname "$0")/../lib/common.sh"
ORCH_TEST_RUNTIME=fake
. "$TOP/tests/mcp/orch-lib.sh"

ORCH_FAKE_EXTRA="list_delay: 2s" orch_config "pool:" "  min_idle: 1" "reconcile:" "  interval: 1s" "reap:" "  interval: 500ms"
check "orchestrator starts (fake runtime, listings 2 s late)" orch_start ||
	{ tail -20 "$ORCH_LOG"; exit 1; }
idle() { curl -s -H "Authorization: Bearer $ORCH_KEY" "$ORCH_URL/metrics" | awk '$1 == "orch_pool_idle" {print $2}'; }
one_idle() { [ "$(idle)" = 1 ]; }
check "a warm member is ready" wait_for 60 one_idle
member=$(sandboxes | head -n1)
check "it is the only sandbox" test "$(nsandboxes)" = 1

# Claim inside a listing's window: right after the runtime read a listing
# that shows the member unclaimed.
n0=$(grep -c "fake: listing read" "$ORCH_LOG")
listed() { [ "$(grep -c "fake: listing read" "$ORCH_LOG")" -gt "$n0" ]; }
check "a reconcile reads a listing" wait_for 20 listed
t0=$(date +%s%N)
out=$(mcp_tool race-a shell '{"command":"echo claimed-a"}')
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "session race-a claims the warm member (${ms} ms, inside the 2 s window)" \
    bash -c "grep -qx claimed-a <<<'$out' && [ $ms -lt 2000 ]"
check "race-a holds the member" test "$(sbx_of race-a)" = "$member"
# That listing now arrives and is reconciled; wait past two more.
n1=$(grep -c "fake: listing read" "$ORCH_LOG")
two_more() { [ "$(grep -c "fake: listing read" "$ORCH_LOG")" -ge $((n1 + 2)) ]; }
check "two more reconciles ran" wait_for 20 two_more
check "the claimed member was not adopted into the pool again" \
    bash -c "! grep -q 'sandbox=$member adopted into warm pool' '$ORCH_LOG'"
check "nor destroyed as a stale pool member" \
    bash -c "! grep -q 'sandbox=$member.*stale pool member' '$ORCH_LOG'"
out=$(mcp_tool race-a shell '{"command":"echo still-a"}')
check "race-a's sandbox still works, the same one" \
    bash -c "grep -qx still-a <<<'$out' && [ '$(sbx_of race-a)' = '$member' ]"
refilled() { one_idle && [ "$(nsandboxes)" = 2 ]; }
check "the pool refilled with a new member" wait_for 60 refilled
out=$(mcp_tool race-b shell '{"command":"echo claimed-b"}')
check "session race-b gets a sandbox of its own" \
    bash -c "grep -qx claimed-b <<<'$out' && [ -n '$(sbx_of race-b)' ] && [ '$(sbx_of race-b)' != '$member' ]"
orch_stop
