#!/usr/bin/env bash
# Per-user homes on the kubernetes runtime (docs/kubernetes.md, "Homes"),
# the real orchestrator against the fake API server (every body validated
# against the real schemas): a session with a user gets a claim
# home-<sha256(user)[:32]> (labels, annotations, size, storage class,
# access mode) made before its pod, which mounts it at /home/user and
# carries the home label; no warm pod is taken for it; a second session of
# the user shares the claim; a session without a user takes the warm pod
# and has no home; create_sandbox and stop/start keep the home mounted;
# clear_session and a restarted orchestrator's reconcile keep the claim;
# GET/DELETE /v1/users/{id}/home (409 while in use); the last use is
# written at most once a minute; homes.ttl purges unused homes only;
# hostile user ids give valid names; a bad access mode stops start-up;
# ReadWriteOncePod makes a second session of the user wait for the first;
# k8sctl homes/home/home-delete.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
k8s_setup
k8s_orch_setup

# orch_config HOMES_YAML_LINES...: the orchestrator's config, homes: section
# made of the given lines.
orch_config() {
	k8s_orch_config "pool:
  min_idle: 1
reconcile:
  interval: 1s
reap:
  interval: 500ms
homes:
$(printf '  %s\n' "$@")" 'fleet_interval: 1s'
}
# user_tool SID USER TOOL ARGS: mcp_tool as USER ("": no X-User-Id)
user_tool() {
	local uh=()
	[ -n "$2" ] && uh=(-H "X-User-Id: $2")
	mcp_tool "$1" "$3" "$4" "${uh[@]}"
}
hash_of() { python3 -c 'import hashlib,sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest()[:32])' "$1"; }
claim_of() { echo "home-$(hash_of "$1")"; }
# Home claims in the sandbox namespace (names, sorted).
home_claims() { fake_get state | jq_py 'sorted(o["metadata"]["name"] for o in d["items"] if o["kind"]=="PersistentVolumeClaim" and o["metadata"]["name"].startswith("home-"))'; }
sbx_of() { orch_rest GET "/v1/sessions/$1" | jq_py 'd["sandbox_id"]'; }
# home_mount POD: "<claimName> <mountPath> <label>" of the pod's home, or "none".
home_mount() {
	obj pods sandboxes "$1" | python3 -c '
import json, sys
p = json.load(sys.stdin)
if p is None:
    print("nopod"); sys.exit()
vols = {v["name"]: v for v in p["spec"]["volumes"]}
c = p["spec"]["containers"][0]
m = [x for x in c["volumeMounts"] if x["name"] == "home"]
lbl = p["metadata"]["labels"].get("sandbox.dev/home")
if "home" not in vols and not m and lbl is None:
    print("none"); sys.exit()
print(vols["home"]["persistentVolumeClaim"]["claimName"], m[0]["mountPath"] if m else "-", lbl)'
}

# A bad access mode is a configuration error at start.
orch_config "k8s:" "  access_mode: ReadWriteSometimes"
"$ORCH_BIN" -n -f "$T/orch.yaml" >"$T/badmode.out" 2>&1
check "homes.k8s.access_mode: an unknown mode stops start-up, naming the key" \
    bash -c "grep -q 'homes.k8s.access_mode: expected ReadWriteOnce, ReadWriteOncePod or ReadWriteMany' '$T/badmode.out'"

orch_config "size: 64MiB" "users:" "  bigu: 80MiB" "k8s:" "  storage_class: fast-homes" \
    "  access_mode: ReadWriteMany"
k8s_orch_up "orchestrator starts with homes on the kubernetes runtime"
k8s_warm_pod "the warm pod is readied"
: >"$T/fake-bodies-0"

# --- a session with a user ---
A=$(claim_of alice)
HA=$(hash_of alice)
code=$(orch_rest POST /v1/sessions -d '{"id":"a-1","user":"alice"}' -o "$T/a1" -w '%{http_code}')
check "REST session with a user: 201" test "$code" = 201
pa=sbx-$(sbx_of a-1)
check "its sandbox is a new pod, not the warm one" test -z "${uid_before[$pa]:-}"
for p in "${!uid_before[@]}"; do
	check "warm pod $p: still idle (same uid)" test "$(obj pods sandboxes "$p" | jq_py 'd["metadata"]["uid"]')" = "${uid_before[$p]}"
	check "warm pod $p: no session owns it" test "$(orch_rest GET /v1/sessions | jq_py "len([s for s in d['sessions'] if 'sbx-' + (s.get('sandbox_id') or '') == '$p'])")" = 0
done
obj persistentvolumeclaims sandboxes "$A" >"$T/claim-a"
check "claim $A made (home-<first 32 hex of sha256(user)>)" test "$(jq_py 'd is not None' <"$T/claim-a")" = True
check "claim labels: managed-by, instance and sandbox.dev/home=<hash>, no sandbox id" test "$(jq_py 'json.dumps(d["metadata"]["labels"], sort_keys=True)' <"$T/claim-a")" = "{\"app.kubernetes.io/managed-by\": \"sandbox-orchestrator\", \"sandbox.dev/home\": \"$HA\", \"sandbox.dev/instance\": \"default\"}"
check "claim annotation sandbox.dev/home-user is the user id" test "$(jq_py 'd["metadata"]["annotations"]["sandbox.dev/home-user"]' <"$T/claim-a")" = alice
lu=$(jq_py 'int(d["metadata"]["annotations"]["sandbox.dev/home-last-used"])' <"$T/claim-a")
now=$(date +%s%3N)
check "claim annotation sandbox.dev/home-last-used is now (unix ms)" test $((now - lu)) -ge 0 -a $((now - lu)) -lt 120000
check "claim size: homes.size (64MiB)" test "$(jq_py 'd["spec"]["resources"]["requests"]["storage"]' <"$T/claim-a")" = 67108864
check "claim storage class: homes.k8s.storage_class" test "$(jq_py 'd["spec"].get("storageClassName")' <"$T/claim-a")" = fast-homes
check "claim access mode: homes.k8s.access_mode" test "$(jq_py 'd["spec"]["accessModes"]' <"$T/claim-a")" = '["ReadWriteMany"]'
posted_at() { fake_get bodies | python3 -c '
import json, sys
b = json.load(sys.stdin)["bodies"]
i = [n for n, x in enumerate(b) if x[0] == "POST" and isinstance(x[3], dict) and x[3].get("metadata", {}).get("name") == sys.argv[1]]
print(i[0] if i else -1)' "$1"; }
ia=$(posted_at "$A")
ip=$(posted_at "$pa")
check "the claim was made before the pod ($ia < $ip)" test "$ia" -ge 0 -a "$ia" -lt "$ip"
check "pod mounts the claim at /home/user (volume home) and has the label" test "$(home_mount "$pa")" = "$A /home/user $HA"
check "ReadWriteMany: no pod affinity (any node can mount the claim)" test "$(obj pods sandboxes "$pa" | jq_py 'd["spec"].get("affinity")')" = None
check "root pod: the same securityContext as for /workspace (no fsGroup)" test "$(obj pods sandboxes "$pa" | jq_py '(d["spec"]["securityContext"].get("fsGroup"), d["spec"]["securityContext"].get("fsGroupChangePolicy"), d["spec"]["securityContext"]["runAsUser"])')" = "(None, None, 0)"
out=$(user_tool a-1 alice shell '{"command":"echo home=$HOME"}')
check "HOME is /home/user in the shell" bash -c "grep -q '^home=/home/user' <<<'$out'"

# --- the second session of the same user shares the claim ---
out=$(user_tool a-2 alice shell '{"command":"echo second"}')
check "MCP session with X-User-Id: alice runs" bash -c "grep -q second <<<'$out'"
pa2=sbx-$(sbx_of a-2)
check "second session: a new pod too (not the warm one)" test -z "${uid_before[$pa2]:-}" -a "$pa2" != "$pa"
check "second session: the same claim mounted" test "$(home_mount "$pa2")" = "$A /home/user $HA"
check "one claim for the user" test "$(home_claims)" = "[\"$A\"]"
npatch() { fake_get bodies | jq_py "len([b for b in d['bodies'] if b[0] == 'PATCH' and b[1].split('?')[0].endswith('/persistentvolumeclaims/$A')])"; }
if [ $(( $(date +%s%3N) - lu )) -lt 55000 ]; then
	check "a use within a minute of the last does not rewrite the last-use annotation" test "$(npatch)" = 0
else
	skip "a use within a minute of the last does not rewrite the last-use annotation" "(the second session took over 55 s to start)"
fi

# --- a session without a user: the warm pod, no home ---
out=$(user_tool n-1 "" shell '{"command":"echo nouser"}')
pn=sbx-$(sbx_of n-1)
check "a session without a user takes the warm pod" test -n "${uid_before[$pn]:-}" -a "$(obj pods sandboxes "$pn" | jq_py 'd["metadata"]["uid"]')" = "${uid_before[$pn]:-x}"
check "and mounts no home (no volume, no mount, no label)" test "$(home_mount "$pn")" = none
check "still one home claim" test "$(home_claims)" = "[\"$A\"]"

# --- per-user size ---
orch_rest POST /v1/sessions -d '{"id":"b-1","user":"bigu","run_as_root":false}' -o /dev/null
check "homes.users size override (80MiB)" test "$(obj persistentvolumeclaims sandboxes "$(claim_of bigu)" | jq_py 'd["spec"]["resources"]["requests"]["storage"]')" = 83886080
check "non-root pod: fsGroup as for /workspace, the home chowned only on a mismatch" test "$(obj pods sandboxes "sbx-$(sbx_of b-1)" | jq_py '(d["spec"]["securityContext"]["fsGroup"], d["spec"]["securityContext"]["fsGroupChangePolicy"], d["spec"]["containers"][0]["securityContext"]["runAsNonRoot"])')" = "(65532, 'OnRootMismatch', True)"
check "non-root pod mounts the home too" test "$(home_mount "sbx-$(sbx_of b-1)")" = "$(claim_of bigu) /home/user $(hash_of bigu)"

# --- GET / DELETE while in use ---
j=$(orch_rest GET /v1/users/alice/home)
check "GET /v1/users/alice/home answers on kubernetes" test "$(jq_py '(d["exists"], d["size_bytes"], d["in_use"], d["sessions"], d["used_bytes"])' <<<"$j")" = "(True, 67108864, True, 2, 0)"
check "GET: last_used_ms is recent" test $(( $(date +%s%3N) - $(jq_py 'int(d["last_used_ms"])' <<<"$j") )) -lt 120000
j=$(orch_rest GET /v1/users/nobody-here/home)
check "GET of a user without a home: exists false" test "$(jq_py 'd["exists"]' <<<"$j")" = False
code=$(orch_rest DELETE /v1/users/alice/home -o "$T/del" -w '%{http_code}')
check "DELETE while sessions run: 409 in_use" test "$code" = 409 -a "$(jq_py 'd["error"]["code"]' <"$T/del")" = in_use
check "the claim is still there" test "$(obj persistentvolumeclaims sandboxes "$A" | jq_py 'd is not None')" = True

# --- create_sandbox (re-provisioning) and stop/start keep the home ---
out=$(user_tool a-1 alice create_sandbox '{"fresh_workspace":true}')
pa3=sbx-$(sbx_of a-1)
check "create_sandbox: a new pod" test "$pa3" != "$pa" -a "$pa3" != sbx-
check "create_sandbox: the new pod mounts the home" test "$(home_mount "$pa3")" = "$A /home/user $HA"
code=$(orch_rest POST /v1/sessions/a-2/stop -o /dev/null -w '%{http_code}')
check "stop a-2" test "$code" = 200
gone2() { test "$(obj pods sandboxes "$pa2")" = null; }
check "a-2's pod goes" wait_for 30 gone2
# The runtime still sees the home in use by a-1 only.
check "home still in use (a-1)" test "$(orch_rest GET /v1/users/alice/home | jq_py 'd["in_use"]')" = True
code=$(orch_rest POST /v1/sessions/a-2/start -o /dev/null -w '%{http_code}')
check "start a-2 again" test "$code" = 200
check "the restarted pod mounts the home again" test "$(home_mount "$pa2")" = "$A /home/user $HA"

# --- reconcile of a restarted orchestrator keeps homes (in use or not) ---
out=$(user_tool d-1 dave shell '{"command":"echo dave"}')
D=$(claim_of dave)
user_tool d-1 dave clear_session '{}' >/dev/null
check "clear_session: dave's claim stays" test "$(obj persistentvolumeclaims sandboxes "$D" | jq_py 'd is not None')" = True
k8s_orch_stop
check "restarted orchestrator is ready" k8s_orch_start
sleep 4	# several reconcile intervals (1s)
check "after a restart and reconciles: alice's claim (in use) is kept" test "$(obj persistentvolumeclaims sandboxes "$A" | jq_py 'd is not None')" = True
check "after a restart and reconciles: dave's claim (unused) is kept" test "$(obj persistentvolumeclaims sandboxes "$D" | jq_py 'd is not None')" = True
check "alice's sessions survive the restart with their home" test "$(home_mount "sbx-$(sbx_of a-1)")" = "$A /home/user $HA"

# --- the last use is rewritten once it is a minute old ---
n0=$(npatch)
kapi PATCH "/api/v1/namespaces/sandboxes/persistentvolumeclaims/$A?fieldValidation=Strict" \
    '{"metadata":{"annotations":{"sandbox.dev/home-last-used":"1000"}}}' >/dev/null
out=$(user_tool a-3 alice shell '{"command":"echo third"}')
lu=$(obj persistentvolumeclaims sandboxes "$A" | jq_py 'int(d["metadata"]["annotations"]["sandbox.dev/home-last-used"])')
check "a use with a stale last-use annotation rewrites it (merge patch, validated)" test $(( $(date +%s%3N) - lu )) -lt 120000
check "one last-use write for that use (the test's PATCH and the orchestrator's)" test "$(npatch)" = $((n0 + 2))

# --- clear_session keeps the claim; DELETE once unused ---
for s in a-1 a-2 a-3; do user_tool $s alice clear_session '{}' >/dev/null; done
check "clear_session of every alice session keeps the claim" test "$(obj persistentvolumeclaims sandboxes "$A" | jq_py 'd is not None')" = True
del_ok() { [ "$(orch_rest DELETE /v1/users/alice/home -o "$T/del" -w '%{http_code}')" = 200 ]; }
check "DELETE /v1/users/alice/home once no session uses it: 200" wait_for 30 del_ok
check "DELETE answer" test "$(jq_py '(d["user"], d["deleted"])' <"$T/del")" = "('alice', True)"
check "the claim is gone" test "$(obj persistentvolumeclaims sandboxes "$A")" = null
code=$(orch_rest DELETE /v1/users/alice/home -o /dev/null -w '%{http_code}')
check "DELETE again: 404" test "$code" = 404

# --- hostile user ids ---
U1=$(python3 -c 'print(("Ab9-_.:@+=" * 13)[:128])')
code=$(orch_rest POST /v1/sessions -d "{\"id\":\"h-1\",\"user\":\"$U1\"}" -o "$T/h1" -w '%{http_code}')
check "a 128-character user id of every allowed kind: 201" test "$code" = 201
H1=$(claim_of "$U1")
check "its claim has a valid name and the id in its annotation" test "$(obj persistentvolumeclaims sandboxes "$H1" | jq_py 'd["metadata"]["annotations"]["sandbox.dev/home-user"]')" = "$U1"
check "its pod mounts it" test "$(home_mount "sbx-$(sbx_of h-1)")" = "$H1 /home/user $(hash_of "$U1")"
U2='Alice'
orch_rest POST /v1/sessions -d "{\"id\":\"h-2\",\"user\":\"$U2\"}" -o /dev/null
check "user ids differing in case get different homes" test "$(claim_of Alice)" != "$A" -a "$(obj persistentvolumeclaims sandboxes "$(claim_of Alice)" | jq_py 'd["metadata"]["annotations"]["sandbox.dev/home-user"]')" = Alice
orch_rest POST /v1/sessions -d '{"id":"h-3","user":".."}' -o /dev/null
check "the user id '..' is a name like any other: a valid claim" test "$(obj persistentvolumeclaims sandboxes "$(claim_of ..)" | jq_py 'd["metadata"]["annotations"]["sandbox.dev/home-user"]')" = ..
for bad in 'a/b' 'a%2Fb' "$(printf 'x%.0s' $(seq 129))" 'a b' 'a\u0000b' 'caf\u00e9'; do
	code=$(orch_rest POST /v1/sessions -d "{\"id\":\"h-bad\",\"user\":\"$bad\"}" -o /dev/null -w '%{http_code}')
	check "user id '${bad:0:20}': refused (400), no claim" test "$code" = 400
done
code=$(orch_rest GET "/v1/users/$(printf 'x%.0s' $(seq 129))/home" -o /dev/null -w '%{http_code}')
check "GET of a too-long user id: 400" test "$code" = 400
check "home claims: exactly those of the users seen" test "$(home_claims | jq_py 'len(d)')" = 5

check "k8sctl homes: every home of this instance, by user id" test "$(kctl homes | jq_py 'sorted(h["user"] for h in d)')" = "$(python3 -c 'import json,sys; print(json.dumps(sorted(sys.argv[1:])))' bigu dave "$U1" Alice ..)"
check "k8sctl homes: in use from the pods (bigu runs, dave was cleared)" test "$(kctl homes | jq_py 'sorted((h["user"], h["in_use"]) for h in d if h["user"] in ("bigu", "dave"))')" = '[["bigu", true], ["dave", false]]'
check "k8sctl home-delete of a home a pod mounts: refused (in use)" fails_with "in use" kctl home-delete bigu
check "k8sctl home bigu: still there, its size" test "$(kctl home bigu | jq_py '(d["exists"], d["size_bytes"])')" = "(True, 83886080)"
# The API refusing the home claim: the session fails saying so, no pod made.
fake fail '{"method":"POST","path":"/persistentvolumeclaims$","status":403,"count":1000}' >/dev/null
npods0=$(k8s_pods | jq_py 'len(d)')
out=$(user_tool k-1 kim shell '{"command":"echo kim"}')
fake clear >/dev/null
check "home claim refused by the API: a tool error naming the claim" grep -q "^ERROR: .*home of user kim could not be made ready: create home claim $(claim_of kim)" <<<"$out"
check "and no pod was made for it" test "$(k8s_pods | jq_py 'len(d)')" = "$npods0"
out=$(user_tool k-1 kim shell '{"command":"echo kim-again"}')
check "the next call, with the API answering, works" grep -q kim-again <<<"$out"
user_tool k-1 kim clear_session '{}' >/dev/null
wait_del() { [ "$(orch_rest DELETE /v1/users/kim/home -o /dev/null -w '%{http_code}')" = 404 ]; }
check "kim's home deleted once the session is cleared" wait_for 30 wait_del
# A claim of the home's name that is not that user's (another instance's,
# or not a home) is never used or deleted.
E=$(claim_of eve)
kapi POST /api/v1/namespaces/sandboxes/persistentvolumeclaims?fieldValidation=Strict \
    "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"$E\",\"labels\":{\"app.kubernetes.io/managed-by\":\"sandbox-orchestrator\",\"sandbox.dev/instance\":\"other\",\"sandbox.dev/home\":\"$(hash_of eve)\"},\"annotations\":{\"sandbox.dev/home-user\":\"eve\"}},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}" >/dev/null
out=$(user_tool e-1 eve shell '{"command":"echo eve"}')
check "another instance's claim of that name: the session is refused, saying so" grep -q 'not the home of user eve' <<<"$out"
check "k8sctl homes does not list it" test "$(kctl homes | jq_py 'len([h for h in d if h["user"] == "eve"])')" = 0
code=$(orch_rest DELETE /v1/users/eve/home -o /dev/null -w '%{http_code}')
check "and DELETE leaves it alone" test "$code" != 200 -a "$(obj persistentvolumeclaims sandboxes "$E" | jq_py 'd is not None')" = True

# --- homes.ttl: unused homes purged, in-use ones kept; default class ---
k8s_orch_stop
orch_config "size: 32MiB" "ttl: 3s"
check "orchestrator restarts with homes.ttl 3s (default storage class and mode)" k8s_orch_start
out=$(user_tool f-1 frank shell '{"command":"echo frank"}')
F=$(claim_of frank)
check "new claim: no storageClassName (cluster default), ReadWriteOnce" test "$(obj persistentvolumeclaims sandboxes "$F" | jq_py '(d["spec"].get("storageClassName"), d["spec"]["accessModes"])')" = "(None, ['ReadWriteOnce'])"
check "ReadWriteOnce: the pod must share a node with the pods mounting that home" test "$(obj pods sandboxes "sbx-$(sbx_of f-1)" | jq_py 'd["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]')" = "[{\"labelSelector\": {\"matchLabels\": {\"sandbox.dev/home\": \"$(hash_of frank)\"}}, \"topologyKey\": \"kubernetes.io/hostname\"}]"
dgone() { test "$(obj persistentvolumeclaims sandboxes "$D")" = null; }
check "homes.ttl purges dave's unused home" wait_for 30 dgone
check "the purge is logged" grep -q "home user=dave purged" "$T/orch.log"
sleep 4
check "frank's home, in use, is not purged" test "$(obj persistentvolumeclaims sandboxes "$F" | jq_py 'd is not None')" = True
check "another instance's claim is not purged" test "$(obj persistentvolumeclaims sandboxes "$E" | jq_py 'd is not None')" = True
user_tool f-1 frank clear_session '{}' >/dev/null
fgone() { test "$(obj persistentvolumeclaims sandboxes "$F")" = null; }
check "once frank's session is cleared, his home is purged after homes.ttl" wait_for 30 fgone

# --- ReadWriteOncePod: one pod at a time; a second session waits ---
k8s_orch_stop
orch_config "size: 32MiB" "k8s:" "  access_mode: ReadWriteOncePod"
check "orchestrator restarts with homes.k8s.access_mode ReadWriteOncePod" k8s_orch_start
out=$(user_tool g-1 gina shell '{"command":"echo gina"}')
G=$(claim_of gina)
HG=$(hash_of gina)
check "ReadWriteOncePod claim" test "$(obj persistentvolumeclaims sandboxes "$G" | jq_py 'd["spec"]["accessModes"]')" = '["ReadWriteOncePod"]'
check "ReadWriteOncePod: no pod affinity" test "$(obj pods sandboxes "sbx-$(sbx_of g-1)" | jq_py 'd["spec"].get("affinity")')" = None
orch_rest POST /v1/sessions -d '{"id":"g-2","user":"gina"}' -o "$T/g2" -w '%{http_code}' >"$T/g2.code" &
G2=$!
waiting() { fake_get state | jq_py "len([o for o in d['items'] if o['kind'] == 'Pod' and o['metadata'].get('labels', {}).get('sandbox.dev/home') == '$HG' and any(c.get('reason') == 'Unschedulable' for c in o['status'].get('conditions', []))])" | grep -qx 1; }
check "a second session of the user: its pod waits, Unschedulable (the claim is in use)" wait_for 20 waiting
user_tool g-1 gina clear_session '{}' >/dev/null
wait $G2
check "once the first session's pod is gone, the second starts (201)" test "$(cat "$T/g2.code")" = 201
check "and mounts the home" test "$(home_mount "sbx-$(sbx_of g-2)")" = "$G /home/user $HG"

k8s_orch_stop
check "no sanitizer report in the orchestrator's log (all its runs)" bash -c "! grep -q 'ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer' '$T/orch.log'"
k8s_no_violations
