#!/usr/bin/env bash
# Proxies heal (docs/kubernetes.md, "The proxy fleet"): the real egress-proxy
# binary as the proxy Deployment's pods behind the fake API. A proxy
# restarted in place (same pod, still Ready) forgets its registrations:
# the sandbox gets 407; within one fleet sweep it is registered again (the
# boot id in the proxy's stats changed) and its credential works. A
# registration missing without a restart comes back too; registrations of
# sandboxes that are gone, or of ids that are none of ours, are removed.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
k8s_setup_real_proxy

stats() { proxy_pod_admin "$1" '{"op":"stats"}'; }
boot_of() { stats "$1" | jq_py 'd.get("boot_id", "")'; }
lists() { stats "$1" | grep -q "\"id\":\"$2\""; }
pod_ip() { obj pods sandboxes "sbx-$1" | jq_py 'd["status"]["podIP"]'; }
# The sandbox's request through its proxy, from its pod IP (the
# credential is good from there only), to a loopback address the proxy
# refuses to reach: 407 = not registered, 403 = its credential worked.
through_proxy() {
	local url
	url=$(sed -n 's/^HTTP_PROXY=//p' "$T/env-$1")
	curl -s -o /dev/null -w '%{http_code}' --max-time 10 --interface "$(pod_ip "$1")" \
	    -x "$url" "http://127.0.0.1:9/"
}

kctl create h1 >/dev/null
check "attach registers at the real egress-proxy" kctl attach h1 acme alice s-1 repo=acme/app >"$T/env-h1"
pip=$(obj networkpolicies sandboxes sbx-h1 | jq_py 'd["metadata"]["annotations"]["sandbox.dev/proxy-ip"]')
pod1=$(obj networkpolicies sandboxes sbx-h1 | jq_py 'd["metadata"]["annotations"]["sandbox.dev/proxy-pod"]')
boot1=$(boot_of "$pip")
check "the proxy's stats carry a 128-bit hex boot id" bash -c "[[ '$boot1' =~ ^[0-9a-f]{32}$ ]]"
check "the sandbox's credential works through its proxy" test "$(through_proxy h1)" = 403

# Sweeps every 500 ms in one process (it remembers boot ids, as the
# orchestrator's fleet thread does).
# (SIGSTOP/SIGCONT of that process pause the sweeps so the test sees the
# state between a fault and the sweep that heals it.)
"$K8SCTL" -c "$CFG" -v fleet-sync 160 500 >"$T/sweeps.out" 2>"$T/sweeps.err" &
SWEEP_PID=$!
track_pid $SWEEP_PID
wait_for 20 grep -q "sweep 1 ok" "$T/sweeps.out"
kill -STOP "$SWEEP_PID"
fake restart "{\"ns\":\"sandbox-system\",\"name\":\"$pod1\"}" >/dev/null
new_boot() { b=$(boot_of "$pip"); [ -n "$b" ] && [ "$b" != "$boot1" ]; }
check "the proxy restarted in place with a new boot id (same pod)" wait_for 20 new_boot
check "the proxy pod stayed Ready through the restart" test "$(obj pods sandbox-system "$pod1" | jq_py '[c["status"] for c in d["status"]["conditions"] if c["type"]=="Ready"][0]')" = True
check "the restarted proxy forgot the sandbox: 407 (the bug, before a sweep)" test "$(through_proxy h1)" = 407
t0=$(date +%s%N)
kill -CONT "$SWEEP_PID"
healed() { [ "$(through_proxy h1)" = 403 ]; }
check "after the restart the sandbox's credential works again" wait_for 20 healed
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "# healed ${ms} ms after the sweeps resumed (a sweep every 500 ms)"
# One sweep is 500 ms plus its own calls; generous under load.
check "healed within a few sweeps (${ms} ms)" test "$ms" -lt 8000
check "the sweep named the restart (boot id changed)" grep -q "proxy pod=$pod1 restarted (boot id" "$T/sweeps.err"
check "it registered the sandbox again" grep -q "sandbox=h1 proxy=$pod1 registered again (the proxy restarted)" "$T/sweeps.err"

# A registration missing without a restart (deregistered behind our back).
kill -STOP "$SWEEP_PID"
proxy_pod_admin "$pip" '{"op":"deregister","id":"h1"}' >/dev/null
check "deregistered behind the orchestrator's back: 407" test "$(through_proxy h1)" = 407
kill -CONT "$SWEEP_PID"
check "a missing registration is made again within a sweep" wait_for 20 healed
check "the sweep said why" grep -q "sandbox=h1 proxy=$pod1 registered again (its registration was missing)" "$T/sweeps.err"

# Stale registrations: a sandbox whose pod vanished (the orchestrator
# never destroyed it), an id that is none of our sandboxes.
kctl create h2 >/dev/null
kctl attach h2 acme bob s-2 >"$T/env-h2"
check "a second sandbox registered at the same proxy" lists "$pip" h2
fake vanish '{"ns":"sandboxes","name":"sbx-h2"}' >/dev/null
proxy_pod_admin "$pip" '{"op":"register","id":"ghost-1","secret":"0123456789abcdef0123456789abcdef","client_ips":["127.0.0.250"],"attrs":{"labels":{}}}' >/dev/null
check "a foreign registration is there" lists "$pip" ghost-1
gone_h2() { ! lists "$pip" h2; }
gone_ghost() { ! lists "$pip" ghost-1; }
check "the vanished sandbox's registration is removed" wait_for 20 gone_h2
check "a registration of no sandbox of ours is removed" wait_for 20 gone_ghost
check "the live sandbox stays registered" lists "$pip" h1
check "the sweep said why" grep -q "sandbox=h2 proxy=$pod1 stale registration (its pod is gone)" "$T/sweeps.err"

# A restart that the readiness probe sees (Ready turns False, then True).
boot2=$(boot_of "$pip")
fake restart "{\"ns\":\"sandbox-system\",\"name\":\"$pod1\",\"ready\":false}" >/dev/null
check "a restart seen by the probe: healed once Ready again" wait_for 40 bash -c "b=\$(curl -s --max-time 5 -H 'Authorization: Bearer $(cat "$T/admin-token")' -d '{\"op\":\"stats\"}' http://$pip:$ADMIN_PORT/v1/admin | python3 -c 'import json,sys; print(json.load(sys.stdin).get(\"boot_id\",\"\"))' 2>/dev/null); [ -n \"\$b\" ] && [ \"\$b\" != '$boot2' ] && [ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --interface $(pod_ip h1) -x \"\$(sed -n 's/^HTTP_PROXY=//p' $T/env-h1)\" http://127.0.0.1:9/)\" = 403 ]"

check "no sweep failed (the sweeper still runs)" kill -0 "$SWEEP_PID"
kill "$SWEEP_PID" 2>/dev/null; wait "$SWEEP_PID" 2>/dev/null
kctl destroy h1
kctl destroy h2 2>/dev/null
k8s_no_violations
