#!/usr/bin/env python3
"""check_manifests.py - every manifest in deploy/ and netpol/ against the
real OpenAPI schemas (../shared/k8s/validate.py, Strict, k8s 1.35 and 1.30).

RBAC (Role, RoleBinding) gets the schemas plus a strict shape check and the
least-privilege rules docs/kubernetes.md promises: the orchestrator's Roles
grant exactly the verbs in ORCH_GRANTS (each needed by the code named
there), and every rule is preceded by a comment naming that code. The
admission fence (deploy/15-admission.yaml) gets the schemas plus its own
checks (check_admission). Non-API files (the kind Cluster config, the
seccomp profile) get a shape check. Prints "ok NAME" / "not ok NAME" lines
for tests/run.
"""
import glob
import json
import re
import os
import sys

import yaml  # python3-yaml (deps/k8s.txt)

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_DEFAULT = os.path.join(TOP, "..", "shared", "k8s")
# CHECK_TOP: check the deploy/ and netpol/ of another tree (test 60 checks
# altered copies, to show each check refuses what it should).
TOP = os.environ.get("CHECK_TOP", TOP)
sys.path.insert(0, os.environ.get("K8S_SHARED_DIR", SHARED_DEFAULT))
import validate  # noqa: E402
import pod_security  # noqa: E402  (tests/k8s/pod_security.py)

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


# What the orchestrator's Roles may grant: (namespace, apiGroup, resource,
# resourceNames) -> verbs; the code that needs each is named in
# deploy/10-rbac.yaml. A verb granted beyond these fails the check.
# ("watch" is the watch cache's, cache.c: sandbox pods, claims, policies
# and proxy pods.)
ORCH_ROLES = {"sandbox-orchestrator", "sandbox-orchestrator-fleet"}
ORCH_GRANTS = {
    ("sandboxes", "", "pods", ()): {"create", "get", "list", "watch", "delete"},
    ("sandboxes", "", "persistentvolumeclaims", ()): {"create", "get", "list",
                                                      "watch", "delete", "patch"},
    ("sandboxes", "", "secrets", ()): {"create", "delete"},
    ("sandboxes", "networking.k8s.io", "networkpolicies", ()): {
        "create", "get", "list", "watch", "update", "delete"},
    ("sandboxes", "", "events", ()): {"list"},
    ("sandbox-system", "apps", "deployments/scale", ("egress-proxy",)): {"get", "patch"},
    ("sandbox-system", "", "pods", ()): {"list", "watch", "patch"},
}
# Resources the orchestrator may update only through the admission fence.
FENCED = {("sandboxes", "pods"), ("sandboxes", "persistentvolumeclaims"),
          ("sandbox-system", "pods")}


def role_grants(d):
    """{(ns, group, resource, names): verbs} of one Role."""
    out = {}
    ns = d.get("metadata", {}).get("namespace")
    for r in d.get("rules", []):
        for g in r.get("apiGroups", []):
            for res in r.get("resources", []):
                k = (ns, g, res, tuple(sorted(r.get("resourceNames", []))))
                out.setdefault(k, set()).update(r.get("verbs", []))
    return out


def check_orch_role(d):
    errs = []
    for k, verbs in sorted(role_grants(d).items()):
        extra = verbs - ORCH_GRANTS.get(k, set())
        if extra:
            errs.append("%s: %s granted, nothing in the code needs it" %
                        ("/".join(x if isinstance(x, str) else ",".join(x)
                                  for x in k), sorted(extra)))
    return errs


def rule_comments(text):
    """Each '- apiGroups:' of a Role's rules must follow a comment naming
    the code that needs the rule (FILE.c:function)."""
    errs, lines = [], text.splitlines()
    for i, ln in enumerate(lines):
        if ln.strip().startswith("- apiGroups:") and ln.startswith("  - "):
            j = i - 1
            block = []
            while j >= 0 and lines[j].strip().startswith("#"):
                block.append(lines[j])
                j -= 1
            if not any(".c:" in b for b in block):
                errs.append("line %d: rule without a comment naming the code "
                            "(FILE.c:function) that needs it" % (i + 1))
    return errs


# What the NetworkPolicy fence must match: (namespace, resource, operations).
NP_FENCED = ("sandboxes", "networkpolicies", ("CREATE", "UPDATE", "DELETE"))
POD_FENCED = ("sandboxes", "pods", ("CREATE",))


def check_admission(docs, sa_user, fenced=None):
    """The fence: one policy and its binding, Fail closed, Deny, matching
    the orchestrator's service account and every resource it may patch
    (fenced: [(namespace, resource, operations)]; default: FENCED's
    updates)."""
    if fenced is None:
        fenced = [(ns, res, ("UPDATE",)) for ns, res in sorted(FENCED)]
    errs = []
    pol = [d for d in docs if d.get("kind") == "ValidatingAdmissionPolicy"]
    bnd = [d for d in docs if d.get("kind") == "ValidatingAdmissionPolicyBinding"]
    if len(pol) != 1 or len(bnd) != 1:
        return ["want one ValidatingAdmissionPolicy and one binding"]
    ps, bs = pol[0]["spec"], bnd[0]["spec"]
    if bs.get("policyName") != pol[0]["metadata"]["name"]:
        errs.append("binding names another policy")
    if "Deny" not in bs.get("validationActions", []):
        errs.append("binding must Deny")
    if ps.get("failurePolicy") != "Fail":
        errs.append("failurePolicy must be Fail (closed)")
    if not any(sa_user in m.get("expression", "") for m in ps.get("matchConditions", [])):
        errs.append("no matchCondition names %s" % sa_user)
    mc = ps.get("matchConstraints", {})
    nss = [v for e in mc.get("namespaceSelector", {}).get("matchExpressions", [])
           if e.get("key") == "kubernetes.io/metadata.name" and e.get("operator") == "In"
           for v in e.get("values", [])]
    for ns, res, ops in fenced:
        if ns not in nss:
            errs.append("namespace %s not matched" % ns)
        for op in ops:
            if not any(res in r.get("resources", []) and op in r.get("operations", [])
                       for r in mc.get("resourceRules", [])):
                errs.append("%s of %s not matched" % (op, res))
    if not ps.get("validations"):
        errs.append("no validations")
    return errs


def tolerates(tols, taint):
    """Does one of the tolerations tolerate the taint (core/v1 semantics)?"""
    for t in tols:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator", "Equal") == "Exists":
            if not t.get("key") or t["key"] == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and \
                t.get("value", "") == taint.get("value", ""):
            return True
    return False


def check_kind(d):
    """The kind walkthrough's cluster fits the shipped RuntimeClasses: every
    tainted node's taints are tolerated by a RuntimeClass whose nodeSelector
    the node's labels match (so sandbox pods land there and only they do),
    the gvisor class has a node, its handler is registered with containerd,
    an untainted worker is left for the system pods, and mounted host paths
    exist."""
    errs = []
    rcs = [x for x in yaml.safe_load_all(open(os.path.join(TOP, "deploy",
                                                         "40-runtimeclasses.yaml"))) if x]
    rcs = {x["metadata"]["name"]: x for x in rcs if x.get("kind") == "RuntimeClass"}
    plain_worker, placed = False, set()
    for i, n in enumerate(d.get("nodes", [])):
        taints = []
        for patch in n.get("kubeadmConfigPatches", []):
            pd = yaml.safe_load(patch) or {}
            if pd.get("kind") not in ("JoinConfiguration", "InitConfiguration"):
                errs.append("node %d: a kubeadm patch of kind %r" % (i, pd.get("kind")))
                continue
            for t in (pd.get("nodeRegistration") or {}).get("taints") or []:
                if t.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                    errs.append("node %d: taint %r: bad effect" % (i, t))
                taints.append(t)
        labels = n.get("labels") or {}
        for name, rc in sorted(rcs.items()):
            sch = rc.get("scheduling") or {}
            sel = sch.get("nodeSelector") or {}
            if sel and all(labels.get(k) == v for k, v in sel.items()):
                placed.add(name)
                for t in taints:
                    if not tolerates(sch.get("tolerations") or [], t):
                        errs.append("node %d: RuntimeClass %s selects it but does not "
                                    "tolerate its taint %s=%s:%s (sandbox pods would "
                                    "be Unschedulable)" % (i, name, t.get("key"),
                                                           t.get("value"), t.get("effect")))
        if taints and not any(
                all(labels.get(k) == v for k, v in
                    ((rc.get("scheduling") or {}).get("nodeSelector") or {}).items())
                and (rc.get("scheduling") or {}).get("nodeSelector")
                for rc in rcs.values()):
            errs.append("node %d: tainted, but no RuntimeClass selects it" % i)
        if n.get("role") == "worker" and not taints:
            plain_worker = True
        for m in n.get("extraMounts") or []:
            hp = m.get("hostPath", "")
            if hp.startswith("./") and not os.path.exists(os.path.join(TOP, hp[2:])):
                errs.append("node %d: extraMounts hostPath %s does not exist" % (i, hp))
    if "gvisor" in rcs and "gvisor" not in placed:
        errs.append("no node matches the gvisor RuntimeClass's nodeSelector")
    if not plain_worker:
        errs.append("no untainted worker for the system pods")
    cd = "\n".join(d.get("containerdConfigPatches") or [])
    for name in placed:
        h = rcs[name].get("handler")
        if 'containerd.runtimes.%s]' % h not in cd:
            errs.append("RuntimeClass %s's handler %s is not registered with containerd"
                        % (name, h))
    return errs


def walkthrough_objects(md):
    """{(namespace, kind, name): keys, or None for "any key" (made from a
    directory)} of the Secrets and ConfigMaps the kind walkthrough in
    docs/kubernetes.md creates with kubectl."""
    text = re.sub(r"\\\n\s*", " ", md)
    out = {}
    for m in re.finditer(r"kubectl -n (\S+) create (secret generic|configmap) (\S+)([^\n]*)",
                         text):
        ns, kind, name, rest = m.groups()
        keys, anykey = set(), False
        for f in re.finditer(r"--from-(literal|file)=(\S+)", rest):
            v = f.group(2)
            if f.group(1) == "literal" or "=" in v:
                keys.add(v.split("=", 1)[0])
            elif v.endswith("/"):
                anykey = True
            else:
                keys.add(os.path.basename(v))
        out[(ns, "Secret" if kind.startswith("secret") else "ConfigMap", name)] = \
            None if anykey else keys
    return out


def check_walkthrough(manifests, made):
    """Every Secret and ConfigMap a Deployment of deploy/ mounts is either in
    the manifests or made by the walkthrough, and every file its config
    names under such a mount is one of the keys the walkthrough gives it;
    every image they use is built and loaded into kind."""
    errs = []
    cms = {(d["metadata"].get("namespace"), d["metadata"]["name"]): d
           for d in manifests if d.get("kind") == "ConfigMap"}
    for d in manifests:
        if d.get("kind") != "Deployment":
            continue
        ns = d["metadata"].get("namespace")
        pod = d["spec"]["template"]["spec"]
        conf = "\n".join(v for (cns, _), c in cms.items() if cns == ns
                         for v in (c.get("data") or {}).values())
        for v in pod.get("volumes", []):
            if "secret" in v:
                kind, name, opt = "Secret", v["secret"]["secretName"], v["secret"].get("optional")
            elif "configMap" in v:
                kind, name, opt = "ConfigMap", v["configMap"]["name"], v["configMap"].get("optional")
            else:
                continue
            if kind == "ConfigMap" and (ns, name) in cms:
                continue
            if (ns, kind, name) not in made:
                if not opt:
                    errs.append("%s/%s mounts %s %s/%s, which the walkthrough does not "
                                "create" % (ns, d["metadata"]["name"], kind, ns, name))
                continue
            keys = made[(ns, kind, name)]
            for c in pod.get("containers", []) + pod.get("initContainers", []):
                for vm in c.get("volumeMounts", []):
                    if vm["name"] != v["name"] or vm.get("subPath") or keys is None:
                        continue
                    for f in re.findall(re.escape(vm["mountPath"].rstrip("/")) +
                                        r"/([A-Za-z0-9_.-]+)", conf):
                        if f not in keys:
                            errs.append("%s/%s's config names %s/%s, but the walkthrough's "
                                        "%s %s has only %s" % (ns, d["metadata"]["name"],
                                                               vm["mountPath"], f, kind,
                                                               name, sorted(keys)))
    # The images: each one a manifest or the orchestrator's config names is
    # built (docker build -t) and loaded into the kind nodes.
    md = open(os.path.join(TOP, "docs", "kubernetes.md")).read()
    built = set(re.findall(r"docker build [^\n]*-t (\S+)", md))
    loads = " ".join(re.findall(r"[^\n]*kind load docker-image[^\n]*", md) +
                     re.findall(r"for i in ([^;]*); do\s*\n\s*kind load", md))
    used = set()
    for d in manifests:
        if d.get("kind") == "Deployment":
            for c in d["spec"]["template"]["spec"].get("containers", []):
                used.add(c["image"])
        if d.get("kind") == "ConfigMap":
            for val in (d.get("data") or {}).values():
                used.update(re.findall(r"\b(?:agent_)?image:\s*(\S+/\S+)", val))
    for img in sorted(used):
        if img not in built:
            errs.append("image %s: the walkthrough does not build it" % img)
        elif img.rsplit("/", 1)[-1].split(":")[0] not in loads:
            errs.append("image %s: the walkthrough does not load it into kind" % img)
    # The CA the sandbox pods mount (kubernetes.proxy.ca_configmap).
    for (cns, _), c in cms.items():
        for val in (c.get("data") or {}).values():
            for m in re.finditer(r"ca_configmap:\s*(\S+)", val):
                sbx = re.search(r"\n\s*namespace:\s*(\S+)", val)
                sns = sbx.group(1) if sbx else cns
                if (sns, "ConfigMap", m.group(1)) not in made:
                    errs.append("ca_configmap %s: the walkthrough does not create it in %s"
                                % (m.group(1), sns))
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
                else:
                    errs = check_kind(d)
                report(name + " (kind config, not an API object: its nodes fit "
                       "the RuntimeClasses)", errs)
                continue
            if d.get("kind") in RBAC_KEYS:
                errs = check_rbac(d)
                for v in VALS:
                    for x in v.validate(json.loads(json.dumps(d))):
                        errs.append("k8s %s: %s" % (v.version, x.text()))
                if d["kind"] == "Role" and d["metadata"].get("name") in ORCH_ROLES:
                    errs += check_orch_role(d)
                report(name + " (RBAC: schemas, shape, least privilege)", errs)
                continue
            errs = []
            for v in VALS:
                for x in v.validate(json.loads(json.dumps(d))):
                    errs.append("k8s %s: %s" % (v.version, x.text()))
            report(name, errs)
    # The orchestrator's Roles: each rule says what needs it.
    rb = os.path.join(TOP, "deploy", "10-rbac.yaml")
    report("deploy/10-rbac.yaml: every rule names the code that needs it",
           rule_comments(open(rb).read()))
    # The admission fence, bound to the service account 10-rbac.yaml binds.
    subj = [s for d in yaml.safe_load_all(open(rb)) if d and d.get("kind") == "RoleBinding"
            for s in d.get("subjects", [])]
    users = {"system:serviceaccount:%s:%s" % (s["namespace"], s["name"]) for s in subj}
    ad = os.path.join(TOP, "deploy", "15-admission.yaml")
    if len(users) != 1:
        report("deploy/15-admission.yaml: the fence", ["want one bound service account"])
    elif not os.path.exists(ad):
        report("deploy/15-admission.yaml: the fence", ["missing"])
    else:
        report("deploy/15-admission.yaml: the fence (Fail closed, Deny, the "
               "orchestrator's account, every resource it patches)",
               check_admission([d for d in yaml.safe_load_all(open(ad)) if d],
                               users.pop()))
    # The NetworkPolicy and pod-create fences, of the same account.
    for f, what, fenced in (
            ("16-admission-netpol.yaml", "the NetworkPolicy fence (Fail closed, Deny, "
             "the orchestrator's account, its policy creates, updates and deletes)",
             [NP_FENCED]),
            ("17-admission-pods.yaml", "the pod-create fence (Fail closed, Deny, "
             "the orchestrator's account, its sandbox pod creates)", [POD_FENCED])):
        path = os.path.join(TOP, "deploy", f)
        if not os.path.exists(path):
            report("deploy/%s: %s" % (f, what.split(" (")[0]), ["missing"])
            continue
        report("deploy/%s: %s" % (f, what),
               check_admission([d for d in yaml.safe_load_all(open(path)) if d],
                               "system:serviceaccount:sandbox-system:sandbox-orchestrator",
                               fenced))
    # Pod Security: every Deployment's pods meet their namespace's enforce
    # level (deploy/00-namespaces.yaml), or the ReplicaSet makes none.
    levels = {d["metadata"]["name"]: (d["metadata"].get("labels") or {}).get(
        "pod-security.kubernetes.io/enforce")
        for d in yaml.safe_load_all(open(os.path.join(TOP, "deploy", "00-namespaces.yaml")))
        if d and d.get("kind") == "Namespace"}
    errs = []
    for f in sorted(glob.glob(os.path.join(TOP, "deploy", "*.yaml"))):
        for d in yaml.safe_load_all(open(f)):
            if not d or d.get("kind") != "Deployment":
                continue
            ns = d["metadata"].get("namespace")
            lvl = levels.get(ns)
            if lvl is None:
                errs.append("%s: namespace %s has no enforce level" % (d["metadata"]["name"], ns))
                continue
            for v in pod_security.violations(d["spec"]["template"], lvl):
                errs.append("%s (%s, %s): %s" % (d["metadata"]["name"], ns, lvl, v))
    report("deploy/: every Deployment's pods meet their namespace's Pod Security level", errs)
    # The kind walkthrough makes what the manifests mount, with the keys
    # their configs name.
    every = [d for f in sorted(glob.glob(os.path.join(TOP, "deploy", "*.yaml")))
             for d in yaml.safe_load_all(open(f)) if d]
    made = walkthrough_objects(open(os.path.join(TOP, "docs", "kubernetes.md")).read())
    report("docs/kubernetes.md: the kind walkthrough creates every Secret and "
           "ConfigMap the manifests mount, with the keys their configs name, and "
           "builds and loads every image they use (%d made)"
           % len(made), check_walkthrough(every, made) if made else ["no kubectl create found"])
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
