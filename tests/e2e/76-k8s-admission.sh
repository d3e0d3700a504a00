#!/usr/bin/env bash
# The fence on the orchestrator's writes (deploy/15-admission.yaml): the
# real orchestrator runs against the fake API server (warm-pool claims,
# labels, proxy assignment, proxy labels and deletion costs, a scale-down);
# every pod and claim update it sent, as admission sees it (stored object
# before and after), is run through the policy with tests/k8s/cel_eval.py
# and admitted; it sent none of a sandbox pod or a sandbox's claim (the
# record is the policy's); hostile updates made from those or from a
# stored sandbox pod and claim (image, command, env, volumes,
# securityContext, serviceAccountName, any label or annotation of a sandbox
# pod, a proxy pod's image, owner references) are denied with the policy's
# message. The same for the NetworkPolicy fence
# (deploy/16-admission-netpol.yaml): every policy the orchestrator created,
# rewrote (a claim's one write, an app's ports, with kube-dns egress on) and
# deleted is admitted; hostile ones (open egress, ipBlocks, other ports,
# other pods, every pod, deleting or opening the default-deny) are denied.
# And for sandbox pod creates (deploy/17-admission-pods.yaml): every pod
# the runtime created (warm members, a root and a non-root sandbox) is
# admitted; runc, nodeName, a token, host namespaces, hostPath/projected/
# CSI volumes, privileged or escalating containers, extra capabilities are
# denied.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/k8s/lib.sh"
POLICY=$TOP/deploy/15-admission.yaml
NPPOL=$TOP/deploy/16-admission-netpol.yaml
PODPOL=$TOP/deploy/17-admission-pods.yaml
CEL="python3 $K8S_DIR/cel_eval.py"
CASES="python3 $K8S_DIR/admission_cases.py"

# admitted POLICY CASES.json WHAT MIN: at least MIN cases, every one admitted.
admitted() {
	local n
	$CEL "$1" "$2" >"$2.out"
	n=$(jq length "$2")
	check "$n $3 captured" test "$n" -ge "$4"
	check "every one of them is admitted${n:+ ($n)}" \
	    bash -c "[ \"\$(grep -c '^admit ' '$2.out')\" = '$n' ]" ||
		sed 's/^/#   /' "$2.out" | grep -v '^#   admit ' | head -20
}
# verdicts POLICY CASES.json WHAT PREFIX: each case denied with the message
# it wants, or (no "want") not matched by the policy.
verdicts() {
	local nb i=0 line name want
	$CEL "$1" "$2" >"$2.out"
	nb=$(jq length "$2")
	check "$nb hostile $3 evaluated" test "$(wc -l <"$2.out")" = "$nb"
	while IFS= read -r line; do
		name=$(jq -r ".[$i].name" "$2")
		want=$(jq -r ".[$i].want // empty" "$2")
		if [ -n "$want" ]; then
			check "${4}denied: $name" bash -c "[[ \"\$1\" == 'deny '* ]] && [[ \"\$1\" == *\"\$2\"* ]]" _ "$line" "$want" ||
				echo "#   got: $line (want: $want)"
		else
			check "${4}not matched: $name" bash -c "[[ \"\$1\" == 'skip '* ]]" _ "$line" ||
				echo "#   got: $line"
		fi
		i=$((i + 1))
	done <"$2.out"
}

# weaken POLICY TEXT OUT: POLICY without the validation whose message has TEXT.
weaken() {
	python3 - "$@" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
v = docs[0]["spec"]["validations"]
docs[0]["spec"]["validations"] = [x for x in v if sys.argv[2] not in x["message"]]
assert len(docs[0]["spec"]["validations"]) == len(v) - 1
yaml.safe_dump_all(docs, open(sys.argv[3], "w"))
PY
}

# --- the evaluator refuses what it does not implement ---
check "the policy's expressions all parse" python3 -c '
import sys; sys.path.insert(0, sys.argv[1]); import cel_eval
cel_eval.load_policy(sys.argv[2])' "$K8S_DIR" "$POLICY"
check "the NetworkPolicy fence's expressions all parse" python3 -c '
import sys; sys.path.insert(0, sys.argv[1]); import cel_eval
cel_eval.load_policy(sys.argv[2])' "$K8S_DIR" "$NPPOL"
check "the pod-create fence's expressions all parse" python3 -c '
import sys; sys.path.insert(0, sys.argv[1]); import cel_eval
cel_eval.load_policy(sys.argv[2])' "$K8S_DIR" "$PODPOL"
for e in "size(object.spec.containers) == 1" "object.metadata.name.startsWith('x')" \
    "object.spec.x < 2" "object.?spec" "[1].map(x, x)" "1.5 == 1.5"; do
	check "evaluator refuses an unimplemented construct: $e" python3 -c '
import sys; sys.path.insert(0, sys.argv[1]); import cel_eval
try:
    cel_eval.parse(sys.argv[2])
except cel_eval.Unsupported:
    sys.exit(0)
sys.exit(1)' "$K8S_DIR" "$e"
done
sed 's/expression: "object.spec == oldObject.spec"/expression: "size(object.spec) == 1"/' \
    "$POLICY" >"$T/unsupported.yaml"
echo '[]' >"$T/none.json"
check "a policy using an unimplemented function: exit 3, no verdict" \
    bash -c "! cmp -s '$POLICY' '$T/unsupported.yaml' && { $CEL '$T/unsupported.yaml' '$T/none.json' >'$T/u.out'; [ \$? = 3 ]; } && grep -q '^unsupported: function' '$T/u.out'"
check "CEL semantics: a missing field is an error, absorbed by || true, cross-type == false" python3 -c '
import sys; sys.path.insert(0, sys.argv[1]); import cel_eval as c
env = {"o": {"a": 1}}
try:
    c.cel("o.b == 1", env); sys.exit(1)
except c.CelError:
    pass
assert c.cel("o.b == 1 || true", env) is True
assert c.cel("false && o.b", env) is False
assert c.cel("o.a == true", env) is False
assert c.cel("{} == {} && [] == []", env) is True' "$K8S_DIR"

# --- a real run of the orchestrator ---
k8s_setup
k8s_orch_setup 'pool:
  min_idle: 1' 'sandboxes_per_proxy: 1' 'fleet_interval: 1s' 'netpol_dns: true'
k8s_orch_up "orchestrator starts on the kubernetes runtime"
first_ready() { grep -q "warm pool member ready" "$T/orch.log"; }
check "a warm pod is readied" wait_for 60 first_ready
check "session 1 runs a command (a warm claim)" bash -c "grep -q hi-one <<<\"\$(cat)\"" \
    <<<"$(mcp_raw sess-1 shell '{"command":"echo hi-one"}')"
check "session 2 runs a command" bash -c "grep -q hi-two <<<\"\$(cat)\"" \
    <<<"$(mcp_raw sess-2 shell '{"command":"echo hi-two"}')"
fake_get admission >"$T/updates.json"
have() { $CASES "$T/updates.json" kinds >"$T/kinds"; grep -qF "$1" "$T/kinds"; }
costs() { fake_get admission >"$T/updates.json"; have "deletion cost"; }
mcp_raw sess-1 clear_session '{}' >/dev/null
# (deletion costs are written only for a scale-down's victims)
check "the scale-down marks the proxy pod to go (deletion cost)" wait_for 30 costs
sleep 2	# a few more fleet sweeps: re-labels
sb=$(fake_get state | jq_py '[o["metadata"]["name"] for o in d["items"] if o["kind"] == "Pod" and o["metadata"]["namespace"] == "sandboxes"][0]')
check "an app's ports written into a sandbox's policy (k8sctl app-ports)" \
    kctl app-ports "${sb#sbx-}" 3000 8080
kq() { kctl "$@" >/dev/null; }
check "a root sandbox created (k8sctl)" kq create r1
check "a non-root sandbox created (k8sctl)" kq create n1 --non-root
fake_get admission >"$T/updates.json"
obj pods sandboxes "$sb" >"$T/sbxpod.json"
obj persistentvolumeclaims sandboxes "$sb-ws" >"$T/claim.json"
k8s_orch_stop
$CASES "$T/updates.json" kinds >"$T/kinds"
sed 's/^/# seen: /' "$T/kinds"
for k in "proxy pod: own-name label" "proxy pod: deletion cost"; do
	check "captured the orchestrator's write: $k" grep -qF "$k" "$T/kinds"
done
check "it sent no update of a sandbox pod (claims, assignments: one policy write each)" \
    bash -c "! grep -q 'sandbox pod' '$T/kinds'"
check "nor of a claim's labels" bash -c "! grep -q 'claim: labels' '$T/kinds'"
check "stored sandbox pod and claim read for the hostile cases" \
    jq -e '.kind == "Pod"' "$T/sbxpod.json" >/dev/null

# --- good: every update the orchestrator sent is admitted ---
$CASES "$T/updates.json" good >"$T/good.json"
admitted "$POLICY" "$T/good.json" "updates of pods and claims" 2
check "other updates it makes (NetworkPolicies) are not this policy's" \
    jq -e '[.updates[] | select(.resource.resource == "networkpolicies")] | length >= 1' "$T/updates.json" >/dev/null

# --- bad: each hostile change is denied, with the policy's message ---
$CASES "$T/updates.json" bad "$T/sbxpod.json" "$T/claim.json" >"$T/bad.json"
verdicts "$POLICY" "$T/bad.json" "updates" ""

# --- the test can fail: without the spec rule, an image change is admitted ---
grep -v 'expression: "object.spec == oldObject.spec"' "$POLICY" |
    sed '/may not change the spec of pods or claims/,+1d' >"$T/weak.yaml"
$CEL "$T/weak.yaml" "$T/bad.json" >"$T/weak.out"
check "a policy without the spec rule admits the proxy image change (the check bites)" \
    grep -q '^admit proxy pod: image changed' "$T/weak.out"

# --- the NetworkPolicy fence ---
$CASES "$T/updates.json" np-kinds >"$T/npkinds"
sed 's/^/# seen: /' "$T/npkinds"
for k in "policy: create, no egress" "policy: update with the proxy assignment" \
    "policy: delete" "policy: kube-dns egress" "policy: app-gateway ingress"; do
	check "captured the orchestrator's write: $k" grep -qF "$k" "$T/npkinds"
done
$CASES "$T/updates.json" np-good "$TOP"/netpol/sandbox-policy*.example.json >"$T/npgood.json"
admitted "$NPPOL" "$T/npgood.json" "policy writes (and the two examples)" 6
$CASES "$T/updates.json" np-bad "$TOP/netpol/default-deny.yaml" >"$T/npbad.json"
verdicts "$NPPOL" "$T/npbad.json" "policy writes" "policy "
# The check bites: without the egress rule, open egress is admitted.
weaken "$NPPOL" "egress may go" "$T/npweak.yaml"
$CEL "$T/npweak.yaml" "$T/npbad.json" >"$T/npweak.out"
check "a fence without the egress rule admits an allow-all egress rule (the check bites)" \
    grep -q '^admit egress: an allow-all rule' "$T/npweak.out"

# --- the pod-create fence ---
$CASES "$T/updates.json" pod-kinds >"$T/podkinds"
sed 's/^/# seen: /' "$T/podkinds"
for k in "sandbox pod: create" "sandbox pod: root, capabilities added back" \
    "sandbox pod: non-root"; do
	check "captured the runtime's pod: $k" grep -qF "$k" "$T/podkinds"
done
$CASES "$T/updates.json" pod-good >"$T/podgood.json"
admitted "$PODPOL" "$T/podgood.json" "sandbox pod creates" 3
$CASES "$T/updates.json" pod-bad >"$T/podbad.json"
verdicts "$PODPOL" "$T/podbad.json" "pod creates" "pod "
weaken "$PODPOL" "RuntimeClass" "$T/podweak.yaml"
$CEL "$T/podweak.yaml" "$T/podbad.json" >"$T/podweak.out"
check "a fence without the RuntimeClass rule admits a runc pod (the check bites)" \
    grep -q '^admit no RuntimeClass (plain runc)' "$T/podweak.out"
k8s_no_violations
