#!/usr/bin/env bash
# tests/bench/k8s-fleet/run.sh: what a claim costs with the egress-proxy
# fleet at zero (kubernetes.proxy.min_replicas: 0, the default: the claim
# scales the Deployment to 1 and waits for a Ready proxy pod) and with a
# warm proxy (min_replicas: 1: only the registration), against the fake API
# server (tests/k8s/fake_apiserver.py) with its stand-in proxy pods. A claim
# here is the runtime's attach (k8sctl attach) of a warm-pool member: the
# proxy choice, scale, registration, assignment annotation and policy,
# timed in ms (median and max of N claims each).
# What the fake cannot show: scheduling on a real node, the image pull of
# the proxy image (a cold node pulls it first: seconds to minutes), the
# proxy's real start and its kubelet readiness probe (periodSeconds), and
# the API server's and controllers' latencies; on a cluster the gap
# between the two figures is wider. Say the load (uptime) with each figure.
#   B=build bash tests/bench/k8s-fleet/run.sh [N]
set -u
cd "$(dirname "$0")/../../.."
export TOP=$PWD
N=${1:-5}
. tests/lib/common.sh
. tests/k8s/lib.sh
[ -x "$K8SCTL" ] || { echo "build $K8SCTL first (make)"; exit 1; }
k8s_setup >/dev/null
k8s_write_config 'sandboxes_per_proxy: 100'

replicas() { obj deployments sandbox-system egress-proxy | jq_py 'd["spec"]["replicas"]'; }
proxy_pods() { fake_get state | jq_py 'len([o for o in d["items"] if o["kind"]=="Pod" and o["metadata"]["namespace"]=="sandbox-system"])'; }
ready_proxy() { fake_get state | jq_py 'len([o for o in d["items"] if o["kind"]=="Pod" and o["metadata"]["namespace"]=="sandbox-system" and not o["metadata"].get("deletionTimestamp") and any(c["type"]=="Ready" and c["status"]=="True" for c in o["status"].get("conditions",[]))])'; }
ms_now() { echo $(( $(date +%s%N) / 1000000 )); }
stats() { sort -n | awk '{v[NR]=$1} END {printf "median %d ms, max %d ms (n=%d)", v[int((NR+1)/2)], v[NR], NR}'; }

# One claim: a warm member w<i> made ahead (holds no replica), then its
# attach timed. $1: round, $2: file for the figure.
claim() {
	kctl create "w$1" --label pool=1 >/dev/null || { echo "create failed"; exit 1; }
	local t0 t1
	t0=$(ms_now)
	kctl attach "w$1" acme alice "s-$1" >/dev/null || { echo "attach failed"; exit 1; }
	t1=$(ms_now)
	echo $((t1 - t0)) >>"$2"
	kctl destroy "w$1"
}

: >"$T/zero"
: >"$T/warm"
for i in $(seq "$N"); do
	kctl fleet-sync
	for _ in $(seq 200); do [ "$(proxy_pods)" = 0 ] && break; sleep 0.1; done
	[ "$(replicas)" = 0 ] && [ "$(proxy_pods)" = 0 ] || { echo "fleet did not reach zero"; exit 1; }
	claim "z$i" "$T/zero"
done
sed -i "s|^    wait: 20s|    wait: 20s\n    min_replicas: 1|" "$CFG"
kctl fleet-sync
for _ in $(seq 300); do [ "$(ready_proxy)" = 1 ] && break; sleep 0.1; done
for i in $(seq "$N"); do
	kctl fleet-sync
	[ "$(ready_proxy)" = 1 ] || { echo "no warm proxy"; exit 1; }
	claim "m$i" "$T/warm"
done
echo "load: $(uptime | sed 's/.*load average: //')"
echo "claim, fleet at zero (min_replicas 0): $(stats <"$T/zero")"
echo "claim, warm proxy   (min_replicas 1): $(stats <"$T/warm")"
