#!/usr/bin/env bash
# Kubernetes runtime: pods that fail. An evicted or OOM-killed pod is
# reported (state failed, reason), its agent address is a clear error, and
# the next start recreates it on the same workspace; an image that cannot
# be pulled fails create fast and leaves nothing behind; a missing
# RuntimeClass is refused by admission with a clear error.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
k8s_setup

kctl create f1 >/dev/null
agent_sh f1 'echo precious > keep.txt' >/dev/null
fake evict '{"ns":"sandboxes","name":"sbx-f1"}' >/dev/null
check "evicted pod reported as failed: evicted" test "$(kctl get f1 | jq_py '[d["state"], d["reason"].split(":")[0]]')" = '["failed", "evicted"]'
check "eviction message kept" bash -c "$K8SCTL -c $CFG get f1 | grep -q 'low on resource: memory'"
check "agent address of a failed sandbox is a clear error" fails_with "sandbox f1 failed: evicted" kctl addr f1
check "attach to a failed sandbox refused" fails_with "not running" kctl attach f1 o u s
uid1=$(obj pods sandboxes sbx-f1 | jq_py 'd["metadata"]["uid"]')
check "start recreates the evicted pod" kctl start f1
uid2=$(obj pods sandboxes sbx-f1 | jq_py 'd["metadata"]["uid"]')
check "it is a new pod" test "$uid1" != "$uid2"
check "workspace kept across the eviction" test "$(agent_sh f1 'cat keep.txt')" = precious

fake oom '{"ns":"sandboxes","name":"sbx-f1"}' >/dev/null
check "OOM-killed pod reported as oom" test "$(kctl get f1 | jq_py '[d["state"], d["reason"]]')" = '["failed", "oom"]'
check "start after OOM" kctl start f1
check "running again" test "$(kctl get f1 | jq_py 'd["state"]')" = running

# The agent process dies (container exits): restartPolicy Never -> Failed.
kill -9 "$(pgrep -f "tcp:$(kctl addr f1 | cut -d' ' -f1):$AGENT_PORT" | head -1)"
f1_failed() { test "$(kctl get f1 | jq_py 'd["state"]')" = failed; }
check "dead agent reported as failed" wait_for 15 f1_failed
check "and recreated on next start" kctl start f1

fake badimage '{"image":"registry.example/missing*"}' >/dev/null
t0=$(date +%s)
check "unpullable image fails create with the kubelet's reason" fails_with "ImagePullBackOff" kctl create f2 --image registry.example/missing:1
check "fails fast (not the ready timeout)" test $(( $(date +%s) - t0 )) -lt 20
check "failed create leaves nothing" test "$(obj pods sandboxes sbx-f2)$(obj persistentvolumeclaims sandboxes sbx-f2-ws)$(obj networkpolicies sandboxes sbx-f2)" = nullnullnull

k8s_write_config 'runtime_class: nope'
check "missing RuntimeClass: admission's 403 surfaced" fails_with 'RuntimeClass "nope" not found (403 Forbidden)' kctl create f3
k8s_write_config
check "nothing left of f3" test "$(obj persistentvolumeclaims sandboxes sbx-f3-ws)" = null

# Pod stuck Pending: create times out with the phase in the message.
fake hold '{"on":true}' >/dev/null
k8s_write_config 'ready_timeout: 2s'
check "stuck pod: create times out naming the phase" fails_with "not ready after 2 s (phase Pending" kctl create f4
fake hold '{"on":false}' >/dev/null
k8s_write_config
kctl destroy f1
check "nothing left" test "$(kctl list)" = "[]"
k8s_no_violations
