#!/usr/bin/env bash
# tests/bench/k8s-scale/run.sh: what one new session costs the API server
# with 1,000 sandboxes in the namespace (issue 17; targets <= 5 requests
# and <= 64 KiB a session). The real orchestrator on the kubernetes
# runtime against the fake API server (tests/k8s/fake_apiserver.py), which
# counts the API requests it answers and the bytes of its answers (a watch
# stream counts as one request, and every byte it sends while measured).
# One session is made for real (a warm claim), its pod and claim are then
# copied 1,000 times (synthetic objects the fake kubelet leaves alone; the
# orchestrator adopts them as live sessions at its next reconcile), and
# then BENCH_K8S_N new sessions each make one shell call; for each, the
# requests and bytes the fake answered between the call's start and the
# pool's refill (the claim, the proxy assignment, the fleet rescale and
# the new warm member's creation). Figures, not a gate.
#   BENCH_K8S_N=5 BENCH_K8S_SANDBOXES=1000 bash tests/bench/k8s-scale/run.sh
set -u
cd "$(dirname "$0")/../../.."
TOP=$PWD
. tests/lib/common.sh
. tests/k8s/lib.sh
N=${BENCH_K8S_N:-5}
NS=${BENCH_K8S_SANDBOXES:-1000}
make -s -j2 "$B/orchestrator/orchestrator" "$B/orchestrator/k8sctl" "$B/agent/sandbox-agent" || exit 1
k8s_setup --page 500
k8s_orch_setup "pool:
  min_idle: 1
reconcile:
  interval: ${BENCH_K8S_RECONCILE:-10m}" "fleet_interval: ${BENCH_K8S_FLEET:-10m}" 'sandboxes_per_proxy: 100000'
k8s_orch_start || { echo "orchestrator did not start"; tail "$T/orch.log"; exit 1; }
call() { mcp_raw "$1" shell '{"command":"echo hi"}'; }
idle() { orch_rest GET /metrics | awk '$1 == "orch_pool_idle" {print $2}'; }
pool_full() { [ "$(idle)" = 1 ] && grep -c "warm pool member ready" "$T/orch.log" | awk -v n="$1" '{exit !($1 >= n)}'; }
wait_for 90 pool_full 1 || { echo "no warm pod"; exit 1; }
call seed | grep -q hi || { echo "first call failed"; tail "$T/orch.log"; exit 1; }
sid=$(orch_rest GET /v1/sessions/seed | jq_py 'd["sandbox_id"]')
wait_for 90 pool_full 2 || { echo "pool did not refill"; exit 1; }
fake bulk "{\"ns\":\"sandboxes\",\"pod\":\"sbx-$sid\",\"count\":$NS}" >/dev/null
npods=$(fake_get state | jq_py 'len([o for o in d["items"] if o["kind"]=="Pod" and o["metadata"]["namespace"]=="sandboxes"])')
echo "# sandbox pods in the namespace: $npods; load: $(uptime | sed 's/.*load average: //')"
sleep 2
: >"$T/per"
for i in $(seq 1 "$N"); do
	want=$((i + 2))
	fake counts '{"reset":true}' >/dev/null
	n0=$(fake_get log | jq_py 'len(d["log"])')
	call "new-$i" | grep -q hi || echo "call new-$i failed"
	wait_for 240 pool_full "$want" || echo "pool did not refill after new-$i"
	sleep 0.5
	c=$(fake counts '{"reset":true}')
	echo "$c" | jq_py '"%d %d %d" % (d["requests"], d["bytes"], d["watches"])' >>"$T/per"
	echo "# session new-$i: $c"
done
# What the last session's requests were (the fake's log from its start;
# the log also holds the watches' reconnections, which counts do not).
echo "# the requests of new-$N:"
fake_get log | jq_py '"\n".join("#   %s %s %s" % (e[0], e[1].split("?")[0], e[2]) for e in d["log"]['"$n0"':])'

python3 - "$T/per" "$NS" <<'PY'
import sys, statistics
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
rq = [r[0] for r in rows]; by = [r[1] for r in rows]
print("k8s-scale: %s sandboxes, %d sessions: API requests per new session "
      "median %d (max %d), bytes median %d (%.1f KiB; max %.1f KiB); targets <= 5, <= 64 KiB"
      % (sys.argv[2], len(rows), statistics.median(rq), max(rq),
         statistics.median(by), statistics.median(by) / 1024, max(by) / 1024))
PY
