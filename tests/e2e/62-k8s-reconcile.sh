#!/usr/bin/env bash
# Kubernetes runtime: a restarted orchestrator rebuilds its state from the
# cluster (labels + annotations), and the reconcile sweep removes pods,
# PVCs and policies that belong to no session (orphans of each kind).
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
k8s_setup --page 1

kctl create r1 --label session=s-1 --label user=alice >/dev/null
kctl create r2 --label session=s-2 >/dev/null
kctl stop r2
# Each k8sctl run is a fresh process: nothing survives but the cluster.
check "restart: list rebuilds both with state and labels" test "$(kctl list | jq_py \
    'sorted((x["id"], x["state"], x["labels"].get("session"), x["created_ms"] > 0) for x in d)')" \
    = '[["r1", "running", "s-1", true], ["r2", "stopped", "s-2", true]]'
check "restart: agent of r1 reachable (token derived, not stored)" test "$(agent_sh r1 'echo up')" = up

# Another orchestrator instance's objects are not ours.
k8s_write_config 'instance: other'
check "another instance sees none of them" test "$(kctl list)" = "[]"
k8s_write_config

# Orphans of each kind, made behind the runtime's back.
lbl='"labels":{"app.kubernetes.io/managed-by":"sandbox-orchestrator","sandbox.dev/instance":"default","sandbox.dev/id":"ORPH"}'
kapi POST '/api/v1/namespaces/sandboxes/pods?fieldValidation=Strict' \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"sbx-o1\",${lbl/ORPH/o1}},\"spec\":{\"runtimeClassName\":\"gvisor\",\"containers\":[{\"name\":\"c\",\"image\":\"debian:12\"}]}}" >/dev/null
kapi POST '/apis/networking.k8s.io/v1/namespaces/sandboxes/networkpolicies?fieldValidation=Strict' \
    "{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\",\"metadata\":{\"name\":\"sbx-o2\",${lbl/ORPH/o2}},\"spec\":{\"podSelector\":{\"matchLabels\":{\"sandbox.dev/id\":\"o2\"}},\"policyTypes\":[\"Egress\"]}}" >/dev/null
kapi POST '/api/v1/namespaces/sandboxes/persistentvolumeclaims?fieldValidation=Strict' \
    "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"sbx-o3-ws\",${lbl/ORPH/o3}},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}" >/dev/null
list=$(kctl list)
check "orphan pod listed as failed" test "$(echo "$list" | jq_py '[x["state"]+":"+x["reason"] for x in d if x["id"]=="o1"]')" = '["failed:orphan pod: its workspace claim is gone"]'
check "orphan policy listed" test "$(echo "$list" | jq_py '[x["state"]+":"+x["reason"] for x in d if x["id"]=="o2"]')" = '["failed:orphan network policy"]'
check "unknown claim listed as a stopped sandbox" test "$(echo "$list" | jq_py '[x["state"] for x in d if x["id"]=="o3"]')" = '["stopped"]'

# The sweep keeps the sessions the orchestrator knows (r1, r2).
kctl reconcile r1 r2 >"$T/rec"
check "reconcile destroyed the three orphans" test "$(sort "$T/rec" | cut -d' ' -f2 | tr '\n' ' ')" = "o1 o2 o3 "
check "orphan pod gone" test "$(obj pods sandboxes sbx-o1)" = null
check "orphan policy gone" test "$(obj networkpolicies sandboxes sbx-o2)" = null
check "orphan claim gone" test "$(obj persistentvolumeclaims sandboxes sbx-o3-ws)" = null
check "known sessions kept" test "$(kctl list | jq_py 'sorted(x["id"] for x in d)')" = '["r1", "r2"]'
check "a stopped session resumes after the restart" kctl start r2

# A claim deleted behind our back: its token Secret is garbage-collected
# (ownerReference), the pod is an orphan and is swept.
kapi DELETE /api/v1/namespaces/sandboxes/persistentvolumeclaims/sbx-r2-ws >/dev/null
kapi DELETE '/api/v1/namespaces/sandboxes/pods/sbx-r2?gracePeriodSeconds=0' >/dev/null
secret_gone() { test "$(obj secrets sandboxes sbx-r2-agent)" = null; }
check "secret garbage-collected with its claim" wait_for 10 secret_gone
kctl reconcile r1 >/dev/null
check "after the sweep only r1 remains" test "$(kctl list | jq_py '[x["id"] for x in d]')" = '["r1"]'

check "lists were paginated (continue tokens followed)" bash -c "curl -sS --cacert $T/pki/ca.crt https://127.0.0.1:$API_PORT/_fake/log | grep -q continue="
kctl destroy r1
k8s_no_violations
