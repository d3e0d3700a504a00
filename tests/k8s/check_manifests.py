#!/usr/bin/env python3
"""check_manifests.py - every manifest in deploy/ and netpol/ against the
real OpenAPI schemas (../shared/k8s/validate.py, Strict, k8s 1.35 and 1.30).

Kinds the stored schemas do not cover (RBAC: Role, RoleBinding) get a
strict shape check here plus the least-privilege rules docs/kubernetes.md
promises; non-API files (the kind Cluster config, the seccomp profile) get a
shape check. Prints "ok NAME" / "not ok NAME" lines for tests/run.
"""
import glob
import json
import os
import sys

import yaml  # python3-yaml (deps/k8s.txt)

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.environ.get("K8S_SHARED_DIR",
                                  os.path.join(TOP, "..", "shared", "k8s")))
import validate  # noqa: E402

VALS = [validate.Validator("1.35"), validate.Validator("1.30")]
failed = 0

# The stored enums.json lists no values for Ingress pathType (the
# extractor missed networking/v1.PathType's constants), so any value is
# "unsupported". The values are the three the schema's own description
# names (k8s.io/api networking/v1 PathTypeExact, PathTypePrefix,
# PathTypeImplementationSpecific); fill in exactly those, only when empty.
for _v in VALS:
    _e = _v.enums.get("io.k8s.api.networking.v1.HTTPIngressPath", {}).get("pathType")
    if _e is not None and not _e.get("values"):
        _e["values"] = ["Exact", "ImplementationSpecific", "Prefix"]


def report(name, errs):
    global failed
    if errs:
        failed += 1
        print("not ok %s" % name)
        for e in errs:
            print("  %s" % e)
    else:
        print("ok %s" % name)


RBAC_KEYS = {
    "Role": {"apiVersion", "kind", "metadata", "rules"},
    "RoleBinding": {"apiVersion", "kind", "metadata", "roleRef", "subjects"},
}
RULE_KEYS = {"apiGroups", "resources", "verbs", "resourceNames"}


def check_rbac(d):
    errs = []
    extra = set(d) - RBAC_KEYS[d["kind"]]
    if extra:
        errs.append("unknown fields %s" % sorted(extra))
    if d.get("apiVersion") != "rbac.authorization.k8s.io/v1":
        errs.append("apiVersion must be rbac.authorization.k8s.io/v1")
    md = d.get("metadata", {})
    if not md.get("namespace"):
        errs.append("RBAC must be namespaced (no cluster-wide rights)")
    errs += ["metadata.name: " + m for m in
             validate.dns1123_subdomain_errs(md.get("name", ""))]
    if d["kind"] == "Role":
        for i, r in enumerate(d.get("rules", [])):
            if set(r) - RULE_KEYS:
                errs.append("rules[%d]: unknown fields %s" % (i, sorted(set(r) - RULE_KEYS)))
            for f in ("apiGroups", "resources", "verbs"):
                if not isinstance(r.get(f), list) or not all(
                        isinstance(x, str) for x in r.get(f, [])):
                    errs.append("rules[%d].%s must be a list of strings" % (i, f))
            if "*" in r.get("verbs", []) + r.get("resources", []) + r.get("apiGroups", []):
                errs.append("rules[%d]: wildcard" % i)
            if "secrets" in r.get("resources", []) and \
                    set(r.get("verbs", [])) & {"get", "list", "watch"}:
                errs.append("rules[%d]: the orchestrator must not read Secrets" % i)
            for bad in ("pods/exec", "pods/attach", "roles", "rolebindings",
                        "serviceaccounts/token", "nodes"):
                if bad in r.get("resources", []):
                    errs.append("rules[%d]: %s is not needed" % (i, bad))
    else:
        rr = d.get("roleRef", {})
        if set(rr) != {"apiGroup", "kind", "name"} or rr.get("kind") != "Role":
            errs.append("roleRef must name a Role (apiGroup, kind, name)")
        for i, s in enumerate(d.get("subjects", [])):
            if set(s) - {"kind", "name", "namespace", "apiGroup"}:
                errs.append("subjects[%d]: unknown fields" % i)
            if s.get("kind") != "ServiceAccount":
                errs.append("subjects[%d]: only service accounts" % i)
    return errs


def main():
    files = sorted(glob.glob(os.path.join(TOP, "deploy", "**", "*.yaml"), recursive=True) +
                   glob.glob(os.path.join(TOP, "netpol", "*.yaml")) +
                   glob.glob(os.path.join(TOP, "netpol", "*.json")))
    n = 0
    for f in files:
        rel = os.path.relpath(f, TOP)
        text = open(f).read()
        try:
            docs = [json.loads(text)] if f.endswith(".json") else \
                [d for d in yaml.safe_load_all(text) if d is not None]
        except Exception as e:
            report(rel, ["does not parse: %s" % e])
            continue
        for i, d in enumerate(docs):
            name = "%s#%d %s/%s" % (rel, i, d.get("kind"),
                                    d.get("metadata", {}).get("name"))
            n += 1
            if d.get("apiVersion") == "kind.x-k8s.io/v1alpha4":
                errs = []
                if d.get("kind") != "Cluster" or not d.get("nodes"):
                    errs.append("kind config needs kind: Cluster and nodes")
                report(name + " (kind config, not an API object)", errs)
                continue
            if d.get("kind") in RBAC_KEYS:
                report(name + " (RBAC: not in the stored schemas; shape + "
                       "least privilege checked)", check_rbac(d))
                continue
            errs = []
            for v in VALS:
                for x in v.validate(json.loads(json.dumps(d))):
                    errs.append("k8s %s: %s" % (v.version, x.text()))
            report(name, errs)
    # The seccomp profile (OCI format, not an API object).
    p = os.path.join(TOP, "deploy", "seccomp", "sandbox.json")
    errs = []
    try:
        prof = json.load(open(p))
        if prof.get("defaultAction") not in ("SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO"):
            errs.append("defaultAction")
        for s in prof.get("syscalls", []):
            if not s.get("names") or not all(isinstance(x, str) for x in s["names"]):
                errs.append("syscalls[].names")
            if s.get("action") not in ("SCMP_ACT_ERRNO", "SCMP_ACT_ALLOW", "SCMP_ACT_KILL"):
                errs.append("syscalls[].action")
        denied = {x for s in prof["syscalls"] if s["action"] != "SCMP_ACT_ALLOW"
                  for x in s["names"]}
        for must in ("unshare", "setns", "mount", "bpf", "keyctl", "ptrace",
                     "io_uring_setup", "userfaultfd", "perf_event_open"):
            if must not in denied:
                errs.append("%s not refused" % must)
    except Exception as e:
        errs.append(str(e))
    report("deploy/seccomp/sandbox.json (seccomp profile)", errs)
    print("%d manifests checked" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
