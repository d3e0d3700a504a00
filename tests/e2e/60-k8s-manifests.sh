#!/usr/bin/env bash
# Every manifest in deploy/ and netpol/ passes the real OpenAPI schemas
# (validate.py, strict, k8s 1.35 and 1.30); RBAC is least-privilege; the
# per-sandbox policy the runtime renders matches netpol's example and
# validates too; the docs list every kubernetes.* key.
. "$(dirname "$0")/../lib/common.sh"
K8SCTL=$BIN/orchestrator/k8sctl
python3 "$TOP/tests/k8s/check_manifests.py" | tee "$T/out"
check "manifests checked" grep -q "manifests checked" "$T/out"
check "the admission fence is checked (deploy/15-admission.yaml)" \
    grep -q "^ok deploy/15-admission.yaml: the fence" "$T/out"
check "the NetworkPolicy fence is checked (deploy/16-admission-netpol.yaml)" \
    grep -q "^ok deploy/16-admission-netpol.yaml: the NetworkPolicy fence" "$T/out"
check "the pod-create fence is checked (deploy/17-admission-pods.yaml)" \
    grep -q "^ok deploy/17-admission-pods.yaml: the pod-create fence" "$T/out"
check "every orchestrator RBAC rule names the code that needs it" \
    grep -q "^ok deploy/10-rbac.yaml: every rule names the code" "$T/out"
# The checks bite: altered copies of deploy/ are refused.
mut() {	# mut NAME SED-ON-FILE FILE WANT (FILE under deploy/, or ../docs/...)
	rm -rf "$T/m" && mkdir -p "$T/m" && cp -r "$TOP/deploy" "$TOP/netpol" "$TOP/docs" "$T/m/" &&
	    sed -i "$2" "$T/m/deploy/$3" && ! cmp -s "$TOP/deploy/$3" "$T/m/deploy/$3" || return 1
	! CHECK_TOP=$T/m python3 "$TOP/tests/k8s/check_manifests.py" >"$T/m.out" &&
	    grep -qF -- "$4" "$T/m.out"
}
check "a verb the code does not use is refused (secrets update)" mut verb \
    's/verbs: \["create", "delete"\]/verbs: ["create", "delete", "update"]/' 10-rbac.yaml \
    "['update'] granted, nothing in the code needs it"
check "a proxy pod get is refused" mut get \
    's/verbs: \["list", "watch", "patch"\]/verbs: ["get", "list", "watch", "patch"]/' 10-rbac.yaml \
    "['get'] granted, nothing in the code needs it"
check "a rule without its comment is refused" mut comment \
    '/# The agent-token Secret/,/k8s.c:k8s_destroy. Never/d' 10-rbac.yaml \
    "rule without a comment naming the code"
check "a fence that fails open is refused" mut open \
    's/failurePolicy: Fail/failurePolicy: Ignore/' 15-admission.yaml "failurePolicy must be Fail"
check "a fence that misses proxy pods is refused" mut ns \
    's/values: \["sandboxes", "sandbox-system"\]/values: ["sandboxes"]/' 15-admission.yaml \
    "namespace sandbox-system not matched"
check "a fence that only warns is refused" mut warn \
    's/validationActions: \["Deny"\]/validationActions: ["Warn"]/' 15-admission.yaml "binding must Deny"
check "a NetworkPolicy fence that misses deletes is refused (default-deny could go)" mut npdel \
    's/operations: \["CREATE", "UPDATE", "DELETE"\]/operations: ["CREATE", "UPDATE"]/' \
    16-admission-netpol.yaml "DELETE of networkpolicies not matched"
check "a NetworkPolicy fence that fails open is refused" mut npopen \
    's/failurePolicy: Fail/failurePolicy: Ignore/' 16-admission-netpol.yaml "failurePolicy must be Fail"
check "a pod-create fence that misses sandbox pods is refused" mut podns \
    's/values: \["sandboxes"\]/values: ["sandbox-system"]/' 17-admission-pods.yaml \
    "namespace sandboxes not matched"
check "the kind cluster's sandbox node fits the gvisor RuntimeClass (checked)" \
    grep -q "^ok deploy/kind/kind-config.yaml#0 .*its nodes fit the RuntimeClasses" "$T/out"
check "a kind taint the RuntimeClass does not tolerate is refused" mut kindtaint \
    's/- key: sandbox.dev\/runtime$/- key: sandbox.dev\/runtime-gvisor/' kind/kind-config.yaml \
    "does not tolerate its taint"
check "a kind cluster without the runsc handler is refused" mut kindrunsc \
    's/runtimes.runsc\]/runtimes.runc]/' kind/kind-config.yaml \
    "handler runsc is not registered with containerd"
check "a kind cluster whose sandbox node lacks the RuntimeClass's label is refused" mut kindlabel \
    's/sandbox.dev\/runtime-gvisor: "true"/sandbox.dev\/runtime-gvisor: "yes"/' kind/kind-config.yaml \
    "no node matches the gvisor RuntimeClass"
check "the kind walkthrough makes every Secret and ConfigMap the manifests mount (checked)" \
    grep -q "^ok docs/kubernetes.md: the kind walkthrough creates every Secret" "$T/out"
check "a walkthrough secret without a key the config names is refused" mut wtkey \
    's/--from-literal=agent-key=/--from-literal=agent_key=/' ../docs/kubernetes.md \
    "names /etc/orchestrator/keys/agent-key"
check "a walkthrough without a secret a Deployment mounts is refused" mut wtsecret \
    '/create secret generic app-gateway-control/d' ../docs/kubernetes.md \
    "mounts Secret sandbox-system/app-gateway-control, which the walkthrough does not create"
check "a walkthrough without the sandboxes' CA ConfigMap is refused" mut wtca \
    's/-n sandboxes create configmap egress-proxy-ca/-n sandbox-system create configmap egress-proxy-ca/' \
    ../docs/kubernetes.md "ca_configmap egress-proxy-ca: the walkthrough does not create it in sandboxes"
check "a walkthrough that does not load an image into kind is refused" mut wtimg \
    's/for i in sandbox-agent sandbox-orchestrator egress-proxy sandbox-default app-gateway/for i in sandbox-agent sandbox-orchestrator egress-proxy app-gateway/' \
    ../docs/kubernetes.md "sandbox-default:latest: the walkthrough does not load it into kind"
check "every Deployment meets its namespace's Pod Security level (checked)" \
    grep -q "^ok deploy/: every Deployment's pods meet their namespace's Pod Security level" "$T/out"
check "a proxy that may escalate privileges is refused (restricted)" mut psaesc \
    '/allowPrivilegeEscalation: false/d' 30-egress-proxy.yaml \
    "egress-proxy (sandbox-system, restricted): allowPrivilegeEscalation: containers egress-proxy not false"
check "an orchestrator without a seccomp profile is refused (restricted)" mut psaseccomp \
    '/seccompProfile:/,+1d' 20-orchestrator.yaml \
    "seccompProfile: containers orchestrator not RuntimeDefault or Localhost"
"$K8SCTL" render-netpol >"$T/np.json"
check "rendered sandbox policy equals netpol/sandbox-policy.example.json" \
    python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
    "$T/np.json" "$TOP/netpol/sandbox-policy.example.json"
check "rendered policy passes validate.py (1.30)" \
    python3 "${K8S_SHARED_DIR:-$TOP/../shared/k8s}/validate.py" --k8s-version 1.30 "$T/np.json"
"$K8SCTL" keys >"$T/keys.md"
missing=
for k in $(sed -n 's/^| `\(kubernetes\.[a-z_.]*\)`.*/\1/p' "$T/keys.md"); do
	grep -qF "\`$k\`" "$TOP/docs/kubernetes.md" || missing="$missing $k"
done
check "docs/kubernetes.md documents every kubernetes.* key${missing:+ (missing:$missing)}" test -z "$missing"

# The agent image's init-container helper and the agent it copies.
AI=$BIN/images/agent/agent-install
check "agent-install is static (runs on scratch)" bash -c "! ldd '$AI' >/dev/null 2>&1"
check "sandbox-agent is static (runs in any image)" bash -c "! ldd '$BIN/agent/sandbox-agent' >/dev/null 2>&1"
mkdir -p "$T/opt"
check "agent-install copies the agent" "$AI" "$BIN/agent/sandbox-agent" "$T/opt/sandbox-agent"
check "copy is identical" cmp -s "$BIN/agent/sandbox-agent" "$T/opt/sandbox-agent"
check "copy is mode 0555" test "$(stat -c %a "$T/opt/sandbox-agent")" = 555
check "no temporary file left" test ! -e "$T/opt/sandbox-agent.tmp"
check "the copy runs" bash -c "'$T/opt/sandbox-agent' --bogus 2>&1 | grep -q usage"
check "missing source: error, exit 1" bash -c "'$AI' /nonexistent '$T/opt/x'; [ \$? -eq 1 ] && [ ! -e '$T/opt/x' ] && [ ! -e '$T/opt/x.tmp' ]"
check "bad usage: exit 2" bash -c "'$AI' only-one; [ \$? -eq 2 ]"
check "unwritable destination: error" bash -c "! '$AI' '$BIN/agent/sandbox-agent' /nonexistent-dir/sandbox-agent 2>/dev/null"

# ---- images/Dockerfile: one build stage, a target per binary, packages from deps/ ----
BIN=$BIN python3 "$TOP/tests/k8s/check_dockerfile.py" >"$T/df.out"; rc=$?
cat "$T/df.out"
check "images/Dockerfile: stages, package lists and COPY sources check out" test $rc -eq 0
dfmut() {	# dfmut SED WANT [deps-file extra-package]: an altered copy is refused
	local tools=1
	[ -z "${3:-}" ] && tools=0	# apt-cache only for the altered list (2 s a run)
	cp "$TOP/images/Dockerfile" "$T/Dockerfile.m" && rm -rf "$T/deps.m" && cp -r "$TOP/deps" "$T/deps.m" &&
	    { [ -z "$1" ] || sed -i "$1" "$T/Dockerfile.m"; } &&
	    { [ -z "${3:-}" ] || echo "$4" >>"$T/deps.m/$3"; } || return 1
	! DOCKERFILE=$T/Dockerfile.m CHECK_DEPS=$T/deps.m BIN=$BIN CHECK_NO_TOOLS=$((1 - tools)) \
	    python3 "$TOP/tests/k8s/check_dockerfile.py" >"$T/dfm.out" && grep -qF -- "$2" "$T/dfm.out"
}
check "a package named in the Dockerfile is refused" dfmut \
    's|\$(sed .s/#\.\*//. /tmp/deps/runtime.txt)|curl &|' "names packages itself"
check "a package apt does not know is refused" dfmut "" "unknown: libnosuchpackage0" \
    runtime.txt libnosuchpackage0
check "a COPY of a missing path is refused" dfmut 's|COPY addons/|COPY addonz/|' "COPY addonz/: in the repository"
check "a COPY of a file the build stage does not make is refused" dfmut \
    's| build/gateway/app-gateway \\$| \\|' "a target its make line builds"
check "a missing target is refused" dfmut 's/AS agent$/AS agent2/' "not ok target agent"
