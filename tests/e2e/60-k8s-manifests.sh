#!/usr/bin/env bash
# Every manifest in deploy/ and netpol/ passes the real OpenAPI schemas
# (validate.py, strict, k8s 1.35 and 1.30); RBAC is least-privilege; the
# per-sandbox policy the runtime renders matches netpol's example and
# validates too; the docs list every kubernetes.* key.
. "$(dirname "$0")/../lib/common.sh"
K8SCTL=$BIN/orchestrator/k8sctl
python3 "$TOP/tests/k8s/check_manifests.py" | tee "$T/out"
check "manifests checked" grep -q "manifests checked" "$T/out"
"$K8SCTL" render-netpol >"$T/np.json"
check "rendered sandbox policy equals netpol/sandbox-policy.example.json" \
    python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
    "$T/np.json" "$TOP/netpol/sandbox-policy.example.json"
check "rendered policy passes validate.py (1.30)" \
    python3 "$TOP/../shared/k8s/validate.py" --k8s-version 1.30 "$T/np.json"
"$K8SCTL" keys >"$T/keys.md"
missing=
for k in $(sed -n 's/^| `\(kubernetes\.[a-z_.]*\)`.*/\1/p' "$T/keys.md"); do
	grep -qF "\`$k\`" "$TOP/docs/kubernetes.md" || missing="$missing $k"
done
check "docs/kubernetes.md documents every kubernetes.* key${missing:+ (missing:$missing)}" test -z "$missing"
