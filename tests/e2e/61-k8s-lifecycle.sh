#!/usr/bin/env bash
# Kubernetes runtime against the fake API server: create with every option,
# the real agent reached over TCP with its token, labels, stop/start keeps
# the workspace PVC, warm-pool claim without recreation, destroy.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
k8s_setup

# --- create with every option ---
out=$(kctl create s1 --image registry.example/tools:1 --kata --non-root --ro-root \
    --mem 1073741824 --cpu 1500 --pids 512 --disk 2147483648 \
    --label session=abc --label user=u-1 --env FOO=bar 2>"$T/err") 
check "create with every option" test "$(echo "$out" | jq_py 'd["state"]')" = running
pod=$(obj pods sandboxes sbx-s1)
check "pod runtimeClassName kata" test "$(echo "$pod" | jq_py 'd["spec"]["runtimeClassName"]')" = kata
check "pod image" test "$(echo "$pod" | jq_py 'd["spec"]["containers"][0]["image"]')" = registry.example/tools:1
check "no service account token, no host namespaces" test "$(echo "$pod" | jq_py \
    '[d["spec"]["automountServiceAccountToken"], d["spec"]["hostNetwork"], d["spec"]["hostPID"], d["spec"]["hostIPC"], any("hostPath" in v for v in d["spec"]["volumes"])]')" = '[false, false, false, false, false]'
check "container drops ALL, no escalation, seccomp" test "$(echo "$pod" | jq_py \
    '[c["securityContext"]["capabilities"]["drop"] for c in d["spec"]["containers"]+d["spec"]["initContainers"]] + [d["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"], d["spec"]["securityContext"]["seccompProfile"]["type"]]')" = '[["ALL"], ["ALL"], false, "RuntimeDefault"]'
check "non-root maps to runAsNonRoot/runAsUser" test "$(echo "$pod" | jq_py \
    '[d["spec"]["securityContext"]["runAsNonRoot"], d["spec"]["securityContext"]["runAsUser"]]')" = '[true, 65532]'
check "ro-root maps to readOnlyRootFilesystem" test "$(echo "$pod" | jq_py \
    'd["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"]')" = True
check "limits cpu/memory/ephemeral-storage" test "$(echo "$pod" | jq_py \
    'd["spec"]["containers"][0]["resources"]["limits"]')" = '{"cpu": "1500m", "memory": "1073741824", "ephemeral-storage": "2147483648"}'
check "agent is the entrypoint, copied by the init container" test "$(echo "$pod" | jq_py \
    '[d["spec"]["containers"][0]["command"][0], d["spec"]["initContainers"][0]["command"][0]]')" = '["/opt/agent/sandbox-agent", "/agent-install"]'
check "env passed" test "$(echo "$pod" | jq_py '[e["value"] for e in d["spec"]["containers"][0]["env"] if e["name"]=="FOO"]')" = '["bar"]'
pvc=$(obj persistentvolumeclaims sandboxes sbx-s1-ws)
check "workspace PVC sized by the disk limit, RWO" test "$(echo "$pvc" | jq_py '[d["spec"]["resources"]["requests"]["storage"], d["spec"]["accessModes"]]')" = '["2147483648", ["ReadWriteOnce"]]'
check "token secret owned by the PVC" test "$(obj secrets sandboxes sbx-s1-agent | jq_py 'd["metadata"]["ownerReferences"][0]["kind"]')" = PersistentVolumeClaim
np=$(obj networkpolicies sandboxes sbx-s1)
check "policy: no egress before attach, ingress only orchestrator:agent" test "$(echo "$np" | jq_py \
    '[d["spec"]["egress"], d["spec"]["policyTypes"], d["spec"]["ingress"][0]["ports"][0]["port"]]')" = "[[], [\"Ingress\", \"Egress\"], $AGENT_PORT]"

# --- the real agent, through agent_addr ---
check "agent shell answers (token auth over TCP)" test "$(agent_sh s1 'echo hello-$FOO')" = "hello-bar"
agent_sh s1 'echo keep-me > /dev/null; pwd' >"$T/pwd"
agent_sh s1 'echo persisted > marker.txt' >/dev/null
addr=$(kctl addr s1)
ip=${addr% *}
check "wrong token refused by the agent" test "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope' "http://$ip:$AGENT_PORT/v1/health")" = 401

# --- get, list, labels ---
check "get running with labels" test "$(kctl get s1 | jq_py '[d["state"], d["labels"]["session"], d["image"]]')" = '["running", "abc", "registry.example/tools:1"]'
kctl labels s1 session=xyz owner=o-9
check "set_labels replaces labels" test "$(kctl get s1 | jq_py 'd["labels"]')" = '{"session": "xyz", "owner": "o-9"}'

# --- stop keeps the PVC; start reuses it ---
check "stop" kctl stop s1
check "stopped: pod gone" test "$(obj pods sandboxes sbx-s1)" = null
check "stopped: PVC kept" test "$(obj persistentvolumeclaims sandboxes sbx-s1-ws)" != null
check "get says stopped" test "$(kctl get s1 | jq_py 'd["state"]')" = stopped
check "stop is idempotent" kctl stop s1
check "agent_addr of a stopped sandbox is a clear error" fails_with "sandbox s1 is not running" kctl addr s1
check "start" kctl start s1
check "workspace survived stop/start" test "$(agent_sh s1 'cat marker.txt')" = persisted
check "labels survived stop/start" test "$(kctl get s1 | jq_py 'd["labels"]["owner"]')" = o-9
check "start of a running sandbox is a no-op" kctl start s1

# --- warm pool: create unlabelled, claim = labels + attach, same pod ---
kctl create w1 >/dev/null
uid1=$(obj pods sandboxes sbx-w1 | jq_py 'd["metadata"]["uid"]')
kctl labels w1 session=claimed org=acme
kctl attach w1 acme alice sess-1 repo=x/y >"$T/env"
uid2=$(obj pods sandboxes sbx-w1 | jq_py 'd["metadata"]["uid"]')
check "warm claim keeps the same pod" test "$uid1" = "$uid2"
check "warm claim labels" test "$(kctl get w1 | jq_py 'd["labels"]["session"]')" = claimed
check "claim env has HTTPS_PROXY with credential" grep -q '^HTTPS_PROXY=http://w1:[0-9a-f]\{64\}@127\.0\.0\.[0-9]*:3128$' "$T/env"
check "claimed sandbox's shell has the proxy env" test "$(agent_sh w1 'echo $HTTPS_PROXY')" = "$(sed -n 's/^HTTPS_PROXY=//p' "$T/env")"
check "root sandbox by default" test "$(obj pods sandboxes sbx-w1 | jq_py 'd["spec"]["securityContext"]["runAsUser"]')" = 0
check "default runtimeClassName gvisor" test "$(obj pods sandboxes sbx-w1 | jq_py 'd["spec"]["runtimeClassName"]')" = gvisor

# --- list and destroy ---
check "list shows both" test "$(kctl list | jq_py 'sorted((x["id"], x["state"]) for x in d)')" = '[["s1", "running"], ["w1", "running"]]'
check "destroy" kctl destroy s1
check "destroy removed pod, PVC, policy, secret" test "$(obj pods sandboxes sbx-s1)$(obj persistentvolumeclaims sandboxes sbx-s1-ws)$(obj networkpolicies sandboxes sbx-s1)$(obj secrets sandboxes sbx-s1-agent)" = nullnullnullnull
check "destroy is idempotent" kctl destroy s1
check "get of a destroyed sandbox: not found" fails_with "not found" kctl get s1
kctl destroy w1

# --- bad input ---
k8s_write_config 'kata_runtime_class: ""'; mv "$CFG" "$T/nokata.yaml"; k8s_write_config
check "invalid id refused" fails_with "invalid sandbox id" kctl create 'Bad_ID'
check "image with spaces refused" fails_with "image name must not contain spaces" kctl create s2 --image 'a b'
check "bad env name refused" fails_with "invalid environment variable name" kctl create s3 --env '1X=y'
check "use_kata without a kata class refused" fails_with "no kata runtime class" env K8S_X=1 "$K8SCTL" -c "$T/nokata.yaml" create s4 --kata
check "nothing left behind" test "$(kctl list)" = "[]"
k8s_no_violations
