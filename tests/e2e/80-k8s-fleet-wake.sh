#!/usr/bin/env bash
# A proxy pod's readiness change heals at once (docs/kubernetes.md, "The
# proxy fleet"): the real orchestrator (its watch cache and fleet thread)
# against the fake API, the real egress-proxy binary as the proxy pods,
# kubernetes.fleet_interval 1h so no timed sweep runs during the test. A
# proxy restarted in place and seen by its probe (Ready False, then True),
# or restarted with the pod staying Ready (restartCount + 1), has its
# sandboxes registered again within seconds: the watch event wakes the
# sweep. Without the wake they would get 407 for up to an hour. A proxy
# that listens again only after the wake is retried, not left for the
# next timed sweep.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
ORCH_BIN=$BIN/orchestrator/orchestrator
k8s_setup_real_proxy
k8s_orch_setup 'pool:
  min_idle: 0' 'fleet_interval: 1h'
k8s_orch_up "orchestrator starts (fleet_interval 1h)"
shell_text() { mcp_tool "$1" shell "{\"command\":\"$2\"}"; }
stats() { curl -s --max-time 5 -H "Authorization: Bearer $(cat "$T/admin-token")" -d '{"op":"stats"}' "http://$1:$ADMIN_PORT/v1/admin"; }
boot_of() { stats "$1" | jq_py 'd.get("boot_id", "")'; }
lists() { stats "$1" | grep -q "\"id\":\"$2\""; }

proxy_url=$(shell_text w-1 'printenv HTTP_PROXY' | head -n1)
check "the sandbox got a proxy URL" grep -q '^http://' <<<"$proxy_url"
sb=$(obj pods sandboxes "" | jq_py '[p["metadata"]["labels"]["sandbox.dev/id"] for p in d["items"]][0]' 2>/dev/null)
[ -n "$sb" ] || sb=$(fake_get state | jq_py '[o["metadata"]["labels"]["sandbox.dev/id"] for o in d["items"] if o["kind"] == "Pod" and o["metadata"]["namespace"] == "sandboxes"][0]')
pip=$(obj networkpolicies sandboxes "sbx-$sb" | jq_py 'd["metadata"]["annotations"]["sandbox.dev/proxy-ip"]')
pod1=$(obj networkpolicies sandboxes "sbx-$sb" | jq_py 'd["metadata"]["annotations"]["sandbox.dev/proxy-pod"]')
sip=$(obj pods sandboxes "sbx-$sb" | jq_py 'd["status"]["podIP"]')
# The sandbox's request through its proxy from its pod IP, to an address
# the proxy refuses to reach: 407 = not registered, 403 = it worked.
through() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 --interface "$sip" -x "$proxy_url" "http://127.0.0.1:9/"; }
healed() { [ "$(through)" = 403 ]; }
check "sandbox $sb registered at proxy pod $pod1" lists "$pip" "$sb"
check "its credential works through its proxy" healed

# heal_case NAME RESTART-BODY: the proxy restarts; the sandbox's
# credential works again within seconds, though no timed sweep runs.
heal_case() {
	local name=$1 boot0 t0 ms
	boot0=$(boot_of "$pip")
	t0=$(date +%s%N)
	fake restart "$2" >/dev/null
	new_boot() { local b; b=$(boot_of "$pip"); [ -n "$b" ] && [ "$b" != "$boot0" ]; }
	check "$name: the proxy restarted (new boot id)" wait_for 20 new_boot
	check "$name: the sandbox's credential works again" wait_for 20 healed
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	echo "# $name: healed ${ms} ms after the restart (fleet_interval 1h)"
	check "$name: within 10 s, no timed sweep (${ms} ms)" test "$ms" -lt 10000
}
heal_case "seen by the probe (Ready False, then True)" \
    "{\"ns\":\"sandbox-system\",\"name\":\"$pod1\",\"ready\":false}"
check "the wake was logged" grep -q "a proxy pod turned Ready or restarted: sweeping now" "$T/orch.log"
n1=$(grep -c "sweeping now" "$T/orch.log")
heal_case "in place, the pod staying Ready (restartCount + 1)" \
    "{\"ns\":\"sandbox-system\",\"name\":\"$pod1\"}"
# (Checked after the second restart: the first one's sweep may be the
# first to see this proxy's boot id at all, when the pod was Ready before
# the orchestrator's watch began; it then registers the sandbox as
# missing, not as restarted.)
check "the sweep registered the sandbox again" grep -q "sandbox=$sb proxy=$pod1 registered again (the proxy restarted)" "$T/orch.log"
check "the Ready-staying restart woke a sweep too" test "$(grep -c "sweeping now" "$T/orch.log")" -gt "$n1"
# The race of a restart in place: the restartCount rises (and wakes the
# sweep) before the new process listens, so the woken sweep's stats call
# is refused; the sweep is retried soon (500 ms, doubling), not one
# fleet_interval later.
heal_case "in place, the new process listening 2 s after the restartCount rises" \
    "{\"ns\":\"sandbox-system\",\"name\":\"$pod1\",\"start_after\":2}"
check "the woken sweep's refused stats call was retried" grep -q "retrying the last sweep's failed healing" "$T/orch.log"
# A watch event that is neither (a label change) wakes nothing.
n2=$(grep -c "sweeping now" "$T/orch.log")
kapi PATCH "/api/v1/namespaces/sandbox-system/pods/$pod1?fieldValidation=Strict" '{"metadata":{"labels":{"example.com/touched":"1"}}}' >/dev/null
sleep 2
check "a change that is no readiness change or restart wakes no sweep" test "$(grep -c "sweeping now" "$T/orch.log")" = "$n2"

kill "$ORCH_PID" 2>/dev/null
wait "$ORCH_PID" 2>/dev/null
check "no sanitizer report in the orchestrator's log" bash -c "! grep -q 'runtime error\|AddressSanitizer\|LeakSanitizer' '$T/orch.log'"
k8s_no_violations
