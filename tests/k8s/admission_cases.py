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


def main():
    ups = [u for u in json.load(open(sys.argv[1]))["updates"]
           if u["resource"]["resource"] in PLURAL_TO]
    what = sys.argv[2]
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
