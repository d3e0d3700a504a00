#!/usr/bin/env bash
# 68-k8s-sandbox.sh: the kubernetes runtime's sandbox pods for both
# run_as_root values (root: ALL dropped and exactly the documented set added
# back; non-root: ALL dropped, runAsNonRoot, a non-zero uid; both without
# privilege escalation), per-sandbox limits as the pod's resources and the
# claim's size, check() refusing what create would (a bad image reference,
# limits out of bounds, a carry it cannot do) without making anything, and
# a /workspace carried to a new sandbox by cloning its claim (the old one
# unchanged). Every body is validated against the real schemas by the fake
# API server.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
k8s_setup

ROOT_CAPS='["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "AUDIT_WRITE", "SETFCAP"]'
kq() { kctl "$@" >/dev/null; }
nobj() { fake_get state | jq_py "len([o for o in d['items'] if o['metadata'].get('labels', {}).get('sandbox.dev/id') == '$1'])"; }

# --- run_as_root: true ---
check "create a root sandbox" kq create r1
pod=$(obj pods sandboxes sbx-r1)
check "root: the sandbox container drops ALL" test "$(echo "$pod" | jq_py 'd["spec"]["containers"][0]["securityContext"]["capabilities"]["drop"]')" = '["ALL"]'
check "root: exactly the documented capabilities are added back" test "$(echo "$pod" | jq_py 'd["spec"]["containers"][0]["securityContext"]["capabilities"]["add"]')" = "$ROOT_CAPS"
check "root: no privilege escalation, not privileged" test "$(echo "$pod" | jq_py \
    '[d["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"], d["spec"]["containers"][0]["securityContext"]["privileged"]]')" = '[false, false]'
check "root: runs as uid 0 of the pod" test "$(echo "$pod" | jq_py \
    '[d["spec"]["securityContext"]["runAsUser"], d["spec"]["securityContext"]["runAsNonRoot"]]')" = '[0, false]'
check "root: the init container gets nothing back" test "$(echo "$pod" | jq_py \
    '[d["spec"]["initContainers"][0]["securityContext"]["capabilities"], d["spec"]["initContainers"][0]["securityContext"]["allowPrivilegeEscalation"]]')" = '[{"drop": ["ALL"]}, false]'
check "root: gVisor by default" test "$(echo "$pod" | jq_py 'd["spec"]["runtimeClassName"]')" = gvisor
check "root: the runtime reports it" test "$(kctl get r1 | jq_py '[d["run_as_root"], d["writable_root"]]')" = '[true, true]'

# --- run_as_root: false ---
check "create a non-root sandbox" kq create n1 --non-root
pod=$(obj pods sandboxes sbx-n1)
check "non-root: ALL dropped, nothing added" test "$(echo "$pod" | jq_py 'd["spec"]["containers"][0]["securityContext"]["capabilities"]')" = '{"drop": ["ALL"]}'
check "non-root: runAsNonRoot on the pod and the container, uid 65532" test "$(echo "$pod" | jq_py \
    '[d["spec"]["securityContext"]["runAsNonRoot"], d["spec"]["containers"][0]["securityContext"]["runAsNonRoot"], d["spec"]["securityContext"]["runAsUser"], d["spec"]["securityContext"]["runAsGroup"], d["spec"]["securityContext"]["fsGroup"]]')" = '[true, true, 65532, 65532, 65532]'
check "non-root: no privilege escalation" test "$(echo "$pod" | jq_py 'd["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"]')" = False
check "non-root: the runtime reports it" test "$(kctl get n1 | jq_py 'd["run_as_root"]')" = False

# --- Pod Security (the fake enforces deploy/00-namespaces.yaml's levels) ---
psa() { fake_get psa | jq_py "[w['level'] for w in d['warnings'] if w['name'] == '$1']"; }
check "Pod Security: a root sandbox is admitted under baseline, warned under restricted" \
    test "$(psa sbx-r1)" = '["restricted"]' || echo "#   got: $(fake_get psa)"
check "Pod Security: a non-root sandbox meets restricted (no warning)" test "$(psa sbx-n1)" = "[]"
out=$(kapi POST /api/v1/namespaces/sandboxes/pods?fieldValidation=Strict \
    '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"psa-probe","namespace":"sandboxes"},"spec":{"hostPID":true,"containers":[{"name":"x","image":"busybox","securityContext":{"privileged":true}}]}}')
check "Pod Security: a privileged pod is refused in sandboxes (403, baseline)" \
    test "$(jq_py '[d["code"], d["message"]]' <<<"$out")" = \
    '[403, "pods \"psa-probe\" is forbidden: violates PodSecurity \"baseline:latest\": host namespaces (hostPID=true), privileged (containers x)"]' ||
	echo "#   got: $out"
check "... and nothing was made" test "$(obj pods sandboxes psa-probe)" = null
check "the proxy pods (restricted) were admitted: no Pod Security violation" \
    bash -c "! grep -q 'Pod Security' '$T/violations' 2>/dev/null"

# --- per-sandbox limits: the pod's resources and the claim's size ---
check "create with limits" kq create l1 --mem 536870912 --cpu 500 --disk 3221225472
pod=$(obj pods sandboxes sbx-l1)
check "limits: cpu, memory, ephemeral-storage" test "$(echo "$pod" | jq_py 'd["spec"]["containers"][0]["resources"]["limits"]')" = \
    '{"cpu": "500m", "memory": "536870912", "ephemeral-storage": "3221225472"}'
check "requests: cpu capped by the limit, memory equal" test "$(echo "$pod" | jq_py \
    '[d["spec"]["containers"][0]["resources"]["requests"]["cpu"], d["spec"]["containers"][0]["resources"]["requests"]["memory"]]')" = '["250m", "536870912"]'
check "the disk limit sizes the workspace claim" test "$(obj persistentvolumeclaims sandboxes sbx-l1-ws | jq_py 'd["spec"]["resources"]["requests"]["storage"]')" = 3221225472
check "the runtime reports the limits" test "$(kctl get l1 | jq_py '[d["limits"]["mem_bytes"], d["limits"]["cpu_millis"], d["limits"]["disk_bytes"]]')" = '[536870912, 500, 3221225472]'
check "defaults: the configured claim size" test "$(obj persistentvolumeclaims sandboxes sbx-r1-ws | jq_py 'd["spec"]["resources"]["requests"]["storage"]')" = 10737418240
check "limits survive a stop and start" bash -c "'$K8SCTL' -c '$CFG' stop l1 && '$K8SCTL' -c '$CFG' start l1"
check "restarted pod has the same limits" test "$(obj pods sandboxes sbx-l1 | jq_py 'd["spec"]["containers"][0]["resources"]["limits"]["memory"]')" = 536870912

# --- check: what create would refuse, making nothing ---
check "check accepts a good spec" kq check c1 --image ghcr.io/org/tools:1.2 --mem 1073741824
check "check refuses a bad image reference" fails_with "is not a valid image reference" kctl check c1 --image 'Registry/UPPER:tag'
check "check refuses a digest too short" fails_with "is not a valid image reference" kctl check c1 --image 'debian@sha256:abc'
check "check refuses memory below the minimum" fails_with "memory 1000000 bytes is outside the kubernetes runtime's bounds (16MiB" kctl check c1 --mem 1000000
check "check refuses cpu below the minimum" fails_with "cpu 5 millicores is outside" kctl check c1 --cpu 5
check "check refuses a carry from nowhere" fails_with "sandbox nope has no workspace claim to copy" kctl check c1 --workspace-from nope
check "check made nothing" test "$(nobj c1)" = 0
check "create with a bad image makes nothing" fails_with "is not a valid image reference" kctl create c2 --image 'a:b:c'
check "nothing left of the refused create" test "$(nobj c2)" = 0

# --- /workspace carried by cloning the claim ---
check "a file in the old sandbox" test "$(agent_sh r1 'echo carried > f.txt; cat f.txt')" = carried
check "create carrying r1's /workspace" kq create w1 --workspace-from r1 --image registry.example/other:2
pvc=$(obj persistentvolumeclaims sandboxes sbx-w1-ws)
check "the new claim is a clone of the old one" test "$(echo "$pvc" | jq_py 'd["spec"]["dataSource"]')" = '{"kind": "PersistentVolumeClaim", "name": "sbx-r1-ws"}'
check "the new sandbox has the file" test "$(agent_sh w1 'cat f.txt')" = carried
check "the old sandbox is unchanged and running" test "$(agent_sh r1 'cat f.txt')" = carried
check "a carry into a smaller claim is refused" fails_with "a copy cannot shrink" kctl create w2 --workspace-from r1 --disk 1073741824
check "nothing left of the refused carry" test "$(nobj w2)" = 0
check "old sandbox still there after the refused carry" test "$(kctl get r1 | jq_py 'd["state"]')" = running
k8s_write_config "workspace_clone: false"
check "carrying off: refused by check" fails_with "kubernetes.workspace_clone: false" kctl check w3 --workspace-from r1
k8s_write_config "ready_timeout: 3s"
fake noclone '{"on":true}' >/dev/null
check "a storage class without cloning: create fails (claim never bound)" fails_with "not ready after" kctl create w4 --workspace-from r1
fake noclone '{"on":false}' >/dev/null
check "nothing left of the failed clone" test "$(nobj w4)" = 0
check "old sandbox unchanged after the failed clone" test "$(agent_sh r1 'cat f.txt')" = carried

k8s_no_violations
