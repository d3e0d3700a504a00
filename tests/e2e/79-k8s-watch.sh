#!/usr/bin/env bash
# The watch cache (runtime/k8s/cache.c, docs/kubernetes.md "Watch cache"):
# the real orchestrator on the kubernetes runtime against the fake API
# server lists its sandbox pods, claims and proxy pods once, then watches
# them (resourceVersion, bookmarks); it follows adds, changes and deletes
# made behind its back without listing again (seen through what the
# reconcile, which reads the cache, does with them), resumes a dropped
# watch from where it was, lists again after a 410 Gone, falls back to
# listing while its watches are refused, and a new session (a warm claim
# and the pool's refill) costs at most 5 API requests.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
k8s_setup
k8s_orch_setup 'pool:
  min_idle: 1
reconcile:
  interval: 1s' 'fleet_interval: 10m'
k8s_orch_up "orchestrator starts"
call() { mcp_raw "$1" shell "{\"command\":\"echo hi-$1\"}"; }
# The fake's log: requests by kind. lists POD|PVC: plain (non-watch) lists
# of the sandbox pods / claims; watches RES: watch requests.
flog() { fake_get log; }
lists() { flog | jq_py "len([e for e in d['log'] if e[0]=='GET' and '/namespaces/sandboxes/$1?' in e[1] and 'watch=1' not in e[1] and 'limit=1&' not in e[1]])"; }
watches() { flog | jq_py "len([e for e in d['log'] if '/$1?' in e[1] and 'watch=1' in e[1]])"; }
nwarm() { grep -c "warm pool member ready" "$T/orch.log"; }
open_w() { fake counts | jq_py 'd["open_watches"]'; }
three_open() { [ "$(open_w)" -ge 4 ]; }
check "four watches open (sandbox pods, claims, policies, proxy pods)" wait_for 30 three_open
w1=$(flog | jq_py "[e[1] for e in d['log'] if 'watch=1' in e[1]][0]")
check "a watch asks for bookmarks from the list's resourceVersion" \
    bash -c "grep -q 'allowWatchBookmarks=true' <<<'$w1' && grep -Eq 'resourceVersion=[0-9]+' <<<'$w1'"
warm_one() { [ "$(nwarm)" -ge 1 ]; }
check "warm pool: one ready sandbox" wait_for 90 warm_one
out=$(call seed)
check "a first session runs" grep -q hi-seed <<<"$out"
sid=$(orch_rest GET /v1/sessions/seed | jq_py 'd["sandbox_id"]')
refill() { [ "$(nwarm)" -ge "$1" ]; }
check "the pool refills" wait_for 90 refill 2
sleep 1.5
pl0=$(lists pods); cl0=$(lists persistentvolumeclaims)

# A new session: the claim and the pool's refill, counted by the fake.
fake counts '{"reset":true}' >/dev/null
n0=$(flog | jq_py 'len(d["log"])')
out=$(call new-1)
check "a new session runs" grep -q hi-new-1 <<<"$out"
check "the pool refills after it" wait_for 90 refill 3
sleep 1
c=$(fake counts '{"reset":true}')
echo "# a new session's API cost: $c"
# What a new session sends is writes: the claim's one (its policy, which
# is the session's record, gains the labels and the proxy) and the pool's
# refill (claim, secret, policy, pod); nothing else.
sess_log=$(flog | jq_py "d['log'][$n0:]")
echo "# its requests: $(jq_py '", ".join("%s %s" % (e[0], e[1].split("?")[0].rsplit("/", 2)[-2]) for e in d)' <<<"$sess_log")"
check "a new session lists nothing (no list of pods, claims or proxy pods)" \
    test "$(jq_py "len([e for e in d if e[0]=='GET' and 'watch=1' not in e[1] and ('/pods?' in e[1] or '/persistentvolumeclaims?' in e[1])])" <<<"$sess_log")" = 0
check "a new session reads no pod or claim from the API (the cache answers)" \
    test "$(jq_py "len([e for e in d if e[0]=='GET' and ('/pods/' in e[1] or '/persistentvolumeclaims/' in e[1])])" <<<"$sess_log")" = 0
check "a new session issues <= 5 read requests" \
    test "$(jq_py "len([e for e in d if e[0]=='GET' and 'watch=1' not in e[1]])" <<<"$sess_log")" -le 5
check "a new session sends <= 5 requests in all (the target)" \
    test "$(jq_py 'd["requests"]' <<<"$c")" -le 5
check "... of which the claim itself is one write, to its policy" \
    test "$(jq_py "len([e for e in d if e[0]=='PUT' and '/networkpolicies/' in e[1]])" <<<"$sess_log")" = 1
check "a new session's answers are <= 64 KiB" test "$(jq_py 'd["bytes"]' <<<"$c")" -le 65536

# Adds: copies of the seed session's pod and claim (new sandboxes of new
# sessions) made behind the orchestrator's back; the reconcile reads the
# cache and adopts them.
adopted() { grep -q "session=bulk-00000$1 sandbox=[a-z0-9-]*b00000$1 adopted" "$T/orch.log"; }
fake bulk "{\"ns\":\"sandboxes\",\"pod\":\"sbx-$sid\",\"count\":3}" >/dev/null
check "cache follows adds: the reconcile adopts sandboxes made behind its back" wait_for 30 adopted 0
copy=$(fake_get state | jq_py "[o['metadata']['name'] for o in d['items'] if o['kind']=='Pod' and o['metadata']['name'].endswith('b000000')][0]")
# Changes: the copy's pod fails.
fake fail-pod "{\"ns\":\"sandboxes\",\"name\":\"$copy\",\"reason\":\"Error\"}" >/dev/null
fixed() { grep -q "session=bulk-000000 sandbox=${copy#sbx-} fixed: runtime says" "$T/orch.log"; }
check "cache follows changes: a pod that failed is seen as failed" wait_for 30 fixed
# Deletes: pod, claim and policy (the session record) go.
NP=/apis/networking.k8s.io/v1/namespaces/sandboxes/networkpolicies
fake vanish "{\"ns\":\"sandboxes\",\"name\":\"$copy\"}" >/dev/null
kapi DELETE "/api/v1/namespaces/sandboxes/persistentvolumeclaims/${copy}-ws" >/dev/null
kapi DELETE "$NP/$copy" >/dev/null
gone() { grep -q "session=bulk-000000 sandbox=${copy#sbx-} fixed: sandbox gone" "$T/orch.log"; }
check "cache follows deletes: a sandbox whose pod, claim and policy went is gone" wait_for 30 gone
check "none of that listed the sandbox pods or claims again" \
    test "$(lists pods)" = "$pl0" -a "$(lists persistentvolumeclaims)" = "$cl0"

# A dropped watch resumes from its resourceVersion (no new list).
wp=$(watches pods)
fake watch-drop >/dev/null
rewatched() { [ "$(watches pods)" -gt "$wp" ]; }
check "a dropped watch is opened again" wait_for 30 rewatched
check "... from its resourceVersion, without listing" test "$(lists pods)" = "$pl0"
fake bulk "{\"ns\":\"sandboxes\",\"pod\":\"sbx-$sid\",\"count\":5}" >/dev/null
check "... and follows adds after it" wait_for 30 adopted 4

# 410 Gone: every version seen is too old; the cache lists again.
fake compact >/dev/null
fake watch-drop >/dev/null
relisted() { [ "$(lists pods)" -gt "$pl0" ] && grep -q "resourceVersion expired (410); listing again" "$T/orch.log"; }
check "410 Gone: the cache lists again" wait_for 30 relisted
fake vanish "{\"ns\":\"sandboxes\",\"name\":\"${copy%b000000}b000001\"}" >/dev/null
kapi DELETE "/api/v1/namespaces/sandboxes/persistentvolumeclaims/${copy%b000000}b000001-ws" >/dev/null
kapi DELETE "$NP/${copy%b000000}b000001" >/dev/null
gone1() { grep -q "session=bulk-000001 sandbox=[a-z0-9-]*b000001 fixed: sandbox gone" "$T/orch.log"; }
check "... and follows deletes after it" wait_for 30 gone1

# Watches refused: after the stale bound the reads list again (and say
# why in the log, not in a flood), and the cache comes back afterwards.
pl1=$(lists pods)
fake fail '{"method":"GET","path":"/pods","status":500,"count":100000,"message":"etcd down"}' >/dev/null
fake watch-drop >/dev/null
fellback() { [ "$(lists pods)" -gt "$pl1" ]; }
check "watches refused: reads fall back to listing" wait_for 40 fellback
nwarn=$(grep -c "k8s cache sandbox pods" "$T/orch.log")
check "the errors back off (not a flood in the log)" test "$nwarn" -le 40
fake clear >/dev/null
back() { grep -q "k8s cache sandbox pods" "$T/orch.log" && [ "$(open_w)" -ge 4 ]; }
check "the watches come back once the API answers" wait_for 60 back
out=$(call new-2)
check "a session after all that runs" grep -q hi-new-2 <<<"$out"
check "orchestrator still running" kill -0 "$ORCH_PID"
k8s_no_violations
k8s_orch_stop
check "no watch left open after the orchestrator stops" wait_for 10 bash -c "[ \"\$(curl -sS --cacert $T/pki/ca.crt -X POST -d '{}' https://127.0.0.1:$API_PORT/_fake/counts | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"open_watches\"])')\" = 0 ]"

