#!/usr/bin/env python3
"""admission_cases.py - the requests tests/e2e/76-k8s-admission.sh runs
deploy/15-admission.yaml over (tests/k8s/cel_eval.py).

  admission_cases.py UPDATES.json good  -> every update the fake API server
      recorded (GET /_fake/admission: what the orchestrator really sent, with
      the stored object before and after), as the orchestrator's requests
  admission_cases.py UPDATES.json bad [SANDBOX_POD.json CLAIM.json]
      -> hostile updates made from those: each starts from a real
      (oldObject, object) pair and changes one more thing; the expected
      verdict's message is in "want". The orchestrator never updates a
      sandbox pod, and a claim only when it is a home: the stored objects
      given (as GET returns them) stand in as the unchanged pair then.
  admission_cases.py UPDATES.json kinds -> which of the code's writes were
      seen (so the test knows the good set covers them all)
  admission_cases.py UPDATES.json np-good [EXAMPLE.json...] -> every
      NetworkPolicy create, update and delete recorded, and each example
      policy (netpol/*.example.json, what netpol.c renders) as a CREATE,
      for deploy/16-admission-netpol.yaml
  admission_cases.py UPDATES.json np-bad DEFAULT_DENY.yaml -> hostile
      policy writes made from a recorded one and from the namespace's
      default-deny, each with the message that must deny it ("want")
  admission_cases.py UPDATES.json np-kinds -> which policy writes were seen
  admission_cases.py UPDATES.json pod-good | pod-bad | pod-kinds -> the same
      for the sandbox pods created (deploy/17-admission-pods.yaml)
"""
import copy
import json
import sys

ORCH = "system:serviceaccount:sandbox-system:sandbox-orchestrator"
PLURAL_TO = {"pods": "Pod", "persistentvolumeclaims": "PersistentVolumeClaim"}

MSG_SPEC = "may not change the spec"
MSG_LABELS = "may change only the labels it owns"
MSG_OWN_NAME = "label must be its own name"
MSG_ANN = "may change only the annotations it owns"
MSG_OWNERS = "may not change owner references or finalizers"
MSG_NP_DELETE = "may delete only a sandbox's own policy"
MSG_NP_SEL = "must select one sandbox's pods"
MSG_NP_TYPES = "must restrict both Ingress and Egress"
MSG_NP_EGRESS = "egress may go only to an egress-proxy pod"
MSG_NP_INGRESS = "ingress may come only from the orchestrator"
NP = "networkpolicies"
MSG_POD_RC = "must run under the gvisor or kata RuntimeClass"
MSG_POD_NODE = "may not name its node"
MSG_POD_SA = "gets no service account token"
MSG_POD_HOST = "may not use the host's namespaces"
MSG_POD_VOL = "volumes may be emptyDir, persistentVolumeClaim"
MSG_POD_EPH = "has no ephemeral containers"
MSG_POD_CTR = "containers must not escalate"


def case(name, u, old, new, user=ORCH, op="UPDATE", sub=""):
    ns = u["namespace"]
    return {"name": name,
            "request": {"operation": op, "namespace": ns, "name": u["name"],
                        "subResource": sub,
                        "userInfo": {"username": user},
                        "resource": {"group": u["resource"]["group"], "version": "v1",
                                     "resource": u["resource"]["resource"]}},
            "namespaceObject": {"metadata": {"name": ns, "labels": {
                "kubernetes.io/metadata.name": ns}}},
            "oldObject": old, "object": new}


def kind_of(u):
    """Which of the code's writes an update is (by what it changed)."""
    o, n = u["oldObject"]["metadata"], u["object"]["metadata"]
    oa, na = o.get("annotations") or {}, n.get("annotations") or {}
    ol, nl = o.get("labels") or {}, n.get("labels") or {}
    ch = {k for k in set(oa) | set(na) if oa.get(k) != na.get(k)}
    lch = {k for k in set(ol) | set(nl) if ol.get(k) != nl.get(k)}
    res, ns = u["resource"]["resource"], u["namespace"]
    out = []
    if res == "pods" and ns == "sandboxes":
        out.append("sandbox pod: an update (none is written)")
    if res == "pods" and ns == "sandbox-system":
        if "sandbox.dev/proxy-pod" in lch:
            out.append("proxy pod: own-name label (fleet.c:proxy_label)")
        if "controller.kubernetes.io/pod-deletion-cost" in ch:
            out.append("proxy pod: deletion cost (fleet.c:proxy_costs)")
    if res == "persistentvolumeclaims" and "sandbox.dev/labels" in ch:
        out.append("claim: labels annotation (none is written)")
    if res == "persistentvolumeclaims" and "sandbox.dev/home-last-used" in ch:
        out.append("home claim: last use (home.c:claim_touch)")
    return out


def first(ups, pred, stored=None, plural=None):
    for u in ups:
        if pred(u):
            return u
    if stored is not None:
        md = stored["metadata"]
        return {"namespace": md["namespace"], "name": md["name"],
                "resource": {"group": "", "resource": plural},
                "oldObject": stored, "object": stored}
    raise SystemExit("no recorded update for a bad case's base")


def bad_cases(ups, sbx_pod=None, claim=None):
    sp = first(ups, lambda u: u["resource"]["resource"] == "pods" and
               u["namespace"] == "sandboxes", sbx_pod, "pods")
    pp = first(ups, lambda u: u["resource"]["resource"] == "pods" and
               u["namespace"] == "sandbox-system")
    pvc = first(ups, lambda u: u["resource"]["resource"] == "persistentvolumeclaims",
                claim, "persistentvolumeclaims")
    out = []

    def mk(name, u, fn, want, **kw):
        old, new = copy.deepcopy(u["oldObject"]), copy.deepcopy(u["object"])
        fn(new)
        c = case(name, u, old, new, **kw)
        c["want"] = want
        out.append(c)

    def ctr(o):
        return o["spec"]["containers"][0]

    def md(o, f):
        return o["metadata"].setdefault(f, {})
    mk("sandbox pod: image changed", sp,
       lambda o: ctr(o).__setitem__("image", "evil.example/agent:latest"), MSG_SPEC)
    mk("sandbox pod: command changed", sp,
       lambda o: ctr(o).__setitem__("command", ["/bin/sh", "-c", "curl evil"]), MSG_SPEC)
    mk("sandbox pod: env added", sp,
       lambda o: ctr(o).setdefault("env", []).append({"name": "X", "value": "1"}), MSG_SPEC)
    mk("sandbox pod: volume added", sp,
       lambda o: o["spec"].setdefault("volumes", []).append(
           {"name": "loot", "secret": {"secretName": "github-app"}}), MSG_SPEC)
    mk("sandbox pod: securityContext changed", sp,
       lambda o: ctr(o).__setitem__("securityContext", {"privileged": True}), MSG_SPEC)
    mk("sandbox pod: serviceAccountName changed", sp,
       lambda o: o["spec"].__setitem__("serviceAccountName", "egress-proxy"), MSG_SPEC)
    mk("sandbox pod: toleration added", sp,
       lambda o: o["spec"].setdefault("tolerations", []).append(
           {"key": "x", "operator": "Exists"}), MSG_SPEC)
    mk("sandbox pod: another label added", sp,
       lambda o: md(o, "labels").__setitem__("sandbox.dev/role", "proxy"), MSG_LABELS)
    mk("sandbox pod: a label it does not own removed", sp,
       lambda o: md(o, "labels").pop("sandbox.dev/id", None), MSG_LABELS)
    mk("sandbox pod: the proxy-pod label (proxy pods only)", sp,
       lambda o: md(o, "labels").__setitem__("sandbox.dev/proxy-pod", o["metadata"]["name"]),
       MSG_LABELS)
    mk("sandbox pod: the labels annotation (the record is the policy's)", sp,
       lambda o: md(o, "annotations").__setitem__("sandbox.dev/labels", "{}"), MSG_ANN)
    mk("sandbox pod: a proxy assignment (the policy's)", sp,
       lambda o: md(o, "annotations").__setitem__("sandbox.dev/proxy-pod", "x"), MSG_ANN)
    mk("sandbox pod: another annotation", sp,
       lambda o: md(o, "annotations").__setitem__("sandbox.dev/spec", "{}"), MSG_ANN)
    mk("sandbox pod: deletion cost (proxy pods only)", sp,
       lambda o: md(o, "annotations").__setitem__(
           "controller.kubernetes.io/pod-deletion-cost", "5"), MSG_ANN)
    mk("sandbox pod: finalizer added", sp,
       lambda o: o["metadata"].setdefault("finalizers", []).append("example.com/keep"),
       MSG_OWNERS)
    mk("proxy pod: image changed", pp,
       lambda o: ctr(o).__setitem__("image", "evil.example/proxy:latest"), MSG_SPEC)
    mk("proxy pod: credential volume remounted", pp,
       lambda o: ctr(o).setdefault("volumeMounts", []).append(
           {"name": "x", "mountPath": "/x"}), MSG_SPEC)
    mk("proxy pod: other label changed", pp,
       lambda o: md(o, "labels").__setitem__("app.kubernetes.io/name", "x"), MSG_LABELS)
    mk("proxy pod: proxy-pod label names another pod", pp,
       lambda o: md(o, "labels").__setitem__("sandbox.dev/proxy-pod", "egress-proxy-other"),
       MSG_OWN_NAME)
    mk("proxy pod: sandbox annotation (sandbox pods only)", pp,
       lambda o: md(o, "annotations").__setitem__("sandbox.dev/proxy-ip", "10.0.0.1"), MSG_ANN)
    mk("proxy pod: owner reference removed", pp,
       lambda o: o["metadata"].__setitem__("ownerReferences", []), MSG_OWNERS)
    mk("claim: storage request grown", pvc,
       lambda o: o["spec"].setdefault("resources", {}).setdefault(
           "requests", {}).__setitem__("storage", "100Ti"), MSG_SPEC)
    mk("claim: the labels annotation (written at create only)", pvc,
       lambda o: md(o, "annotations").__setitem__("sandbox.dev/labels", "{}"), MSG_ANN)
    mk("claim: another annotation", pvc,
       lambda o: md(o, "annotations").__setitem__("sandbox.dev/proxy-pod", "x"), MSG_ANN)
    # Not the orchestrator, or not an update: the policy does not apply.
    mk("another user's image change is not this policy's business", pp,
       lambda o: ctr(o).__setitem__("image", "registry.example/proxy:2"), None,
       user="system:serviceaccount:kube-system:replicaset-controller")
    mk("a CREATE is not matched", sp, lambda o: None, None, op="CREATE")
    return out


def np_kind(u):
    """Which of the code's policy writes u is."""
    if u["operation"] == "DELETE":
        return ["policy: delete (k8s.c:k8s_destroy)"]
    sp = u["object"]["spec"]
    ann = u["object"]["metadata"].get("annotations") or {}
    out = []
    if u["operation"] == "CREATE":
        out.append("policy: create, no egress (fleet.c:fleet_netpol_new)"
                   if not any("sandbox.dev/proxy-pod" in str(r) for r in sp.get("egress", []))
                   else "policy: create with egress")
    elif "sandbox.dev/proxy-pod" in ann:
        out.append("policy: update with the proxy assignment (fleet.c:np_write)")
    else:
        out.append("policy: update")
    if any("kube-dns" in str(r) for r in sp.get("egress", [])):
        out.append("policy: kube-dns egress (kubernetes.netpol_dns)")
    if len(sp.get("ingress", [])) > 1:
        out.append("policy: app-gateway ingress (k8s.c app_ports)")
    return out


def np_base(u):
    """A (oldObject, object) pair for a hostile write: a recorded update's,
    or a create's object standing in as both."""
    return {"namespace": u["namespace"], "name": u["name"],
            "resource": u["resource"],
            "oldObject": u["oldObject"] or u["object"], "object": u["object"]}


def np_bad_cases(nps, deny):
    base = [u for u in nps if u["operation"] == "UPDATE" and
            "sandbox.dev/proxy-pod" in (u["object"]["metadata"].get("annotations") or {})]
    if not base:
        raise SystemExit("no recorded policy update with a proxy assignment")
    b = np_base(base[0])
    out = []

    def mk(name, fn, want, u=b, op="UPDATE", **kw):
        old, new = copy.deepcopy(u["oldObject"]), copy.deepcopy(u["object"])
        fn(new)
        c = case(name, u, None if op == "CREATE" else old,
                 None if op == "DELETE" else new, op=op, **kw)
        c["want"] = want
        out.append(c)

    def eg(o):
        return o["spec"].setdefault("egress", [])

    def ing(o):
        return o["spec"].setdefault("ingress", [])

    def proxy_rule(o):
        return [r for r in eg(o) if "sandbox.dev/proxy-pod" in str(r)][0]

    def peer(ns, labels):
        return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                "podSelector": {"matchLabels": labels}}
    tcp = lambda p: {"protocol": "TCP", "port": p}
    mk("egress: an allow-all rule ({})", lambda o: eg(o).append({}), MSG_NP_EGRESS)
    mk("egress: to anywhere on 443 (no peers)",
       lambda o: eg(o).append({"ports": [tcp(443)]}), MSG_NP_EGRESS)
    mk("egress: an empty peer list (everywhere) on the proxy port",
       lambda o: eg(o).append({"to": [], "ports": [tcp(3128)]}), MSG_NP_EGRESS)
    mk("egress: to the proxy pod on every port (no ports)",
       lambda o: proxy_rule(o).pop("ports"), MSG_NP_EGRESS)
    mk("egress: to the proxy pod on port 22",
       lambda o: proxy_rule(o).__setitem__("ports", [tcp(22)]), MSG_NP_EGRESS)
    mk("egress: to the proxy pod, a port without a number (every port)",
       lambda o: proxy_rule(o).__setitem__("ports", [{"protocol": "TCP"}]), MSG_NP_EGRESS)
    mk("egress: to the proxy pod over UDP",
       lambda o: proxy_rule(o).__setitem__("ports", [{"protocol": "UDP", "port": 3128}]),
       MSG_NP_EGRESS)
    mk("egress: a port range from the proxy port",
       lambda o: proxy_rule(o)["ports"][0].__setitem__("endPort", 65535), MSG_NP_EGRESS)
    mk("egress: an ipBlock 0.0.0.0/0",
       lambda o: eg(o).append({"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}],
                               "ports": [tcp(443)]}), MSG_NP_EGRESS)
    mk("egress: an ipBlock beside the proxy peer",
       lambda o: proxy_rule(o)["to"].append({"ipBlock": {"cidr": "169.254.169.254/32"}}),
       MSG_NP_EGRESS)
    mk("egress: pods labelled as proxies in the sandboxes namespace (no namespaceSelector)",
       lambda o: eg(o).append({"to": [{"podSelector": {"matchLabels": {
           "app.kubernetes.io/name": "egress-proxy", "sandbox.dev/proxy-pod": "x"}}}],
           "ports": [tcp(3128)]}), MSG_NP_EGRESS)
    mk("egress: proxy-labelled pods in another namespace",
       lambda o: eg(o).append({"to": [peer("attacker", {
           "app.kubernetes.io/name": "egress-proxy", "sandbox.dev/proxy-pod": "x"})],
           "ports": [tcp(3128)]}), MSG_NP_EGRESS)
    mk("egress: every pod of sandbox-system (not only proxies)",
       lambda o: eg(o).append({"to": [{"namespaceSelector": {"matchLabels": {
           "kubernetes.io/metadata.name": "sandbox-system"}}}], "ports": [tcp(3128)]}),
       MSG_NP_EGRESS)
    mk("egress: kube-dns on 443 (not a DNS port)",
       lambda o: eg(o).append({"to": [peer("kube-system", {"k8s-app": "kube-dns"})],
                               "ports": [tcp(443)]}), MSG_NP_EGRESS)
    mk("egress: the orchestrator's pods",
       lambda o: eg(o).append({"to": [peer("sandbox-system", {
           "app.kubernetes.io/name": "sandbox-orchestrator"})], "ports": [tcp(7443)]}),
       MSG_NP_EGRESS)
    mk("policyTypes: Ingress only (egress left to the default-deny)",
       lambda o: o["spec"].__setitem__("policyTypes", ["Ingress"]), MSG_NP_TYPES)
    mk("policyTypes: missing",
       lambda o: o["spec"].pop("policyTypes"), MSG_NP_TYPES)
    mk("podSelector: every pod of the namespace ({})",
       lambda o: o["spec"].__setitem__("podSelector", {}), MSG_NP_SEL)
    mk("podSelector: every sandbox (no id)",
       lambda o: o["spec"]["podSelector"]["matchLabels"].pop("sandbox.dev/id"), MSG_NP_SEL)
    mk("podSelector: not sandbox pods (role changed)",
       lambda o: o["spec"]["podSelector"]["matchLabels"].__setitem__(
           "sandbox.dev/role", "proxy"), MSG_NP_SEL)
    mk("podSelector: an update moves the policy to another sandbox",
       lambda o: o["spec"]["podSelector"]["matchLabels"].__setitem__(
           "sandbox.dev/id", "0000other"), MSG_NP_SEL)
    mk("ingress: from anywhere (no peers)",
       lambda o: ing(o).append({"ports": [tcp(7070)]}), MSG_NP_INGRESS)
    mk("ingress: an empty peer list",
       lambda o: ing(o).append({"from": [], "ports": [tcp(7070)]}), MSG_NP_INGRESS)
    mk("ingress: from an ipBlock",
       lambda o: ing(o).append({"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}],
                                "ports": [tcp(7070)]}), MSG_NP_INGRESS)
    mk("ingress: from the other sandboxes",
       lambda o: ing(o).append({"from": [peer("sandboxes", {"sandbox.dev/role": "sandbox"})],
                                "ports": [tcp(7070)]}), MSG_NP_INGRESS)
    mk("ingress: the orchestrator on every port (no ports)",
       lambda o: ing(o)[0].pop("ports"), MSG_NP_INGRESS)
    mk("ingress: a port range",
       lambda o: ing(o)[0]["ports"][0].__setitem__("endPort", 65535), MSG_NP_INGRESS)
    mk("create: a new allow-all policy for every pod",
       lambda o: (o["metadata"].__setitem__("name", "allow-all"),
                  o["spec"].__setitem__("podSelector", {}),
                  o["spec"].__setitem__("egress", [{}])), MSG_NP_SEL, op="CREATE")
    mk("create: a sandbox policy with open egress",
       lambda o: eg(o).append({}), MSG_NP_EGRESS, op="CREATE")
    dd = {"namespace": deny["metadata"]["namespace"], "name": deny["metadata"]["name"],
          "resource": b["resource"], "oldObject": deny, "object": deny}
    mk("default-deny: deleted", lambda o: None, MSG_NP_DELETE, u=dd, op="DELETE")
    mk("default-deny: rewritten to allow all egress",
       lambda o: o["spec"].__setitem__("egress", [{}]), MSG_NP_SEL, u=dd)
    # Not the orchestrator, or not its namespace: the policy does not apply.
    mk("another user's allow-all is not this policy's business",
       lambda o: eg(o).append({}), None,
       user="system:serviceaccount:kube-system:cluster-admin-tool")
    other = dict(b, namespace="sandbox-system")
    mk("a policy in sandbox-system is not matched", lambda o: eg(o).append({}), None,
       u=other)
    return out


def pod_kind(u):
    sp = u["object"]["spec"]
    out = ["sandbox pod: create (k8s.c:pod_create)"]
    add = sp["containers"][0].get("securityContext", {}).get("capabilities", {}).get("add")
    if add:
        out.append("sandbox pod: root, capabilities added back")
    else:
        out.append("sandbox pod: non-root")
    if any("persistentVolumeClaim" in v and v["name"] == "home" for v in sp.get("volumes", [])):
        out.append("sandbox pod: with a home")
    return out


def pod_bad_cases(pods):
    roots = [u for u in pods if len(pod_kind(u)) > 1 and "root" in pod_kind(u)[1]]
    b = roots[0] if roots else pods[0]
    out = []

    def mk(name, fn, want, **kw):
        new = copy.deepcopy(b["object"])
        fn(new)
        c = case(name, b, None, new, op="CREATE", **kw)
        c["want"] = want
        out.append(c)

    def ctr(o):
        return o["spec"]["containers"][0]

    def sc(o):
        return ctr(o)["securityContext"]

    def init_sc(o):
        return o["spec"]["initContainers"][0]["securityContext"]
    mk("no RuntimeClass (plain runc)", lambda o: o["spec"].pop("runtimeClassName"), MSG_POD_RC)
    mk("RuntimeClass runc", lambda o: o["spec"].__setitem__("runtimeClassName", "runc"),
       MSG_POD_RC)
    mk("nodeName: a system node", lambda o: o["spec"].__setitem__("nodeName", "system-1"),
       MSG_POD_NODE)
    mk("the service account token mounted",
       lambda o: o["spec"].__setitem__("automountServiceAccountToken", True), MSG_POD_SA)
    mk("automountServiceAccountToken left out (the default mounts it)",
       lambda o: o["spec"].pop("automountServiceAccountToken"), MSG_POD_SA)
    mk("another service account",
       lambda o: o["spec"].__setitem__("serviceAccountName", "sandbox-orchestrator"),
       MSG_POD_SA)
    mk("hostNetwork", lambda o: o["spec"].__setitem__("hostNetwork", True), MSG_POD_HOST)
    mk("hostPID", lambda o: o["spec"].__setitem__("hostPID", True), MSG_POD_HOST)
    mk("a hostPath volume", lambda o: o["spec"]["volumes"].append(
        {"name": "root", "hostPath": {"path": "/"}}), MSG_POD_VOL)
    mk("a projected service-account token volume", lambda o: o["spec"]["volumes"].append(
        {"name": "tok", "projected": {"sources": [{"serviceAccountToken": {
            "path": "token"}}]}}), MSG_POD_VOL)
    mk("a CSI inline volume", lambda o: o["spec"]["volumes"].append(
        {"name": "c", "csi": {"driver": "secrets-store.csi.k8s.io"}}), MSG_POD_VOL)
    mk("an ephemeral container", lambda o: o["spec"].__setitem__("ephemeralContainers", [
        {"name": "debug", "image": "busybox"}]), MSG_POD_EPH)
    mk("privileged", lambda o: sc(o).__setitem__("privileged", True), MSG_POD_CTR)
    mk("privilege escalation allowed",
       lambda o: sc(o).__setitem__("allowPrivilegeEscalation", True), MSG_POD_CTR)
    mk("no securityContext", lambda o: ctr(o).pop("securityContext"), MSG_POD_CTR)
    mk("capabilities: ALL not dropped",
       lambda o: sc(o)["capabilities"].__setitem__("drop", ["NET_RAW"]), MSG_POD_CTR)
    mk("capabilities: SYS_ADMIN added",
       lambda o: sc(o)["capabilities"].setdefault("add", []).append("SYS_ADMIN"), MSG_POD_CTR)
    mk("capabilities: NET_RAW added",
       lambda o: sc(o)["capabilities"].setdefault("add", []).append("NET_RAW"), MSG_POD_CTR)
    mk("a second container, privileged", lambda o: o["spec"]["containers"].append(
        {"name": "x", "image": "evil.example/x", "securityContext": {"privileged": True}}),
       MSG_POD_CTR)
    mk("init container: privileged", lambda o: init_sc(o).__setitem__("privileged", True),
       MSG_POD_CTR)
    mk("init container: capabilities added",
       lambda o: init_sc(o)["capabilities"].__setitem__("add", ["CHOWN"]), MSG_POD_CTR)
    mk("another user's runc pod is not this policy's business",
       lambda o: o["spec"].pop("runtimeClassName"), None,
       user="system:serviceaccount:kube-system:job-controller")
    other = dict(b, namespace="sandbox-system")
    out.append(dict(case("a pod in sandbox-system is not matched", other, None,
                         b["object"], op="CREATE"), want=None))
    return out


def main():
    allw = json.load(open(sys.argv[1]))["updates"]
    ups = [u for u in allw if u["resource"]["resource"] in PLURAL_TO and
           u["operation"] == "UPDATE"]
    nps = [u for u in allw if u["resource"]["resource"] == NP and
           u["namespace"] == "sandboxes"]
    pods = [u for u in allw if u["resource"]["resource"] == "pods" and
            u["operation"] == "CREATE" and u["namespace"] == "sandboxes"]
    what = sys.argv[2]
    if what == "pod-good":
        json.dump([case("#%d %s: %s" % (i, u["name"], "; ".join(pod_kind(u))), u, None,
                        u["object"], op="CREATE") for i, u in enumerate(pods)], sys.stdout)
        return 0
    if what == "pod-bad":
        json.dump(pod_bad_cases(pods), sys.stdout)
        return 0
    if what == "pod-kinds":
        print("\n".join(sorted({k for u in pods for k in pod_kind(u)})))
        return 0
    if what == "np-good":
        cases = [case("#%d %s %s: %s" % (i, u["operation"], u["name"], "; ".join(np_kind(u))),
                      u, u["oldObject"], u["object"], op=u["operation"])
                 for i, u in enumerate(nps)]
        for f in sys.argv[3:]:
            o = json.load(open(f))
            u = {"namespace": o["metadata"]["namespace"], "name": o["metadata"]["name"],
                 "resource": {"group": "networking.k8s.io", "resource": NP}}
            cases.append(case("%s as a CREATE" % f.rsplit("/", 1)[-1], u, None, o,
                              op="CREATE"))
        json.dump(cases, sys.stdout)
        return 0
    if what == "np-bad":
        import yaml  # python3-yaml (deps/k8s.txt)
        json.dump(np_bad_cases(nps, yaml.safe_load(open(sys.argv[3]))), sys.stdout)
        return 0
    if what == "np-kinds":
        print("\n".join(sorted({k for u in nps for k in np_kind(u)})))
        return 0
    if what == "good":
        cases = []
        for i, u in enumerate(ups):
            k = kind_of(u) or ["other"]
            cases.append(case("#%d %s %s/%s: %s" % (i, u["resource"]["resource"],
                                                      u["namespace"], u["name"],
                                                      "; ".join(k)),
                              u, u["oldObject"], u["object"]))
        json.dump(cases, sys.stdout)
    elif what == "bad":
        extra = [json.load(open(f)) for f in sys.argv[3:5]]
        json.dump(bad_cases(ups, *extra), sys.stdout)
    elif what == "kinds":
        seen = sorted({k for u in ups for k in kind_of(u)})
        print("\n".join(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
