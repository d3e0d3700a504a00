#!/usr/bin/env python3
"""fake_apiserver.py - a fake kube-apiserver (plus kubelet, deployment
controller and garbage collector) for the kubernetes runtime's tests.

HTTPS on 127.0.0.1 with a test CA; bearer tokens (re-read from a file, so a
test can rotate them) or a client certificate signed by the test CA.
Behaves like the real server for the calls the runtime makes (see
../shared/k8s/API-NOTES.md): create/get/list/delete/PUT/merge-PATCH with
label selectors and pagination, 409 AlreadyExists/Conflict, 404/401/403/415
Status objects, the Deployment scale subresource, RuntimeClass admission,
stringData -> data for Secrets, graceful pod deletion, PVC protection,
ownerReference garbage collection, and pods moving Pending -> Running with
podIP and a Ready condition.

EVERY request body is validated against the real OpenAPI schemas with
../shared/k8s/validate.py (Strict, k8s 1.35 and 1.30); every finding, and
every write sent without fieldValidation=Strict, is recorded as a violation
(--violations FILE, one JSON line each). Tests fail if the file is not empty.

The "kubelet" gives each pod an IP 127.0.0.N. For a sandbox pod
(label sandbox.dev/role=sandbox) it runs the real agent binary (--agent) on
that IP and the agent port, with the token from the pod's Secret and
/workspace backed by a directory per PVC, and reports Ready once the port
accepts (the pod's readiness probe); every claim a pod mounts must exist
and be Bound first (else ContainerCreating), and a pod using a
ReadWriteOncePod claim another scheduled pod uses stays Pending
(PodScheduled False, Unschedulable) until that pod is gone. A PVC with a PersistentVolumeClaim
dataSource starts as a copy of that claim's directory (CSI volume cloning);
without clone support (noclone) it stays Pending and so do its pods. For pods of a Deployment it runs
--pod-cmd (if given) with POD_IP/POD_NAME in the environment.

Test control (no auth, loopback only): POST /_fake/<op> with a JSON body:
  fail     {"method","path","status","count","retry_after"}  inject errors
  delay    {"method","path","seconds","count"}               stall answers
  tokens   {"tokens":[...]}                                  valid tokens
  evict    {"ns","name"} / fail-pod {"ns","name","reason"}   kill a pod
  oom      {"ns","name"}                                     OOMKilled
  badimage {"image"}                                         ImagePullBackOff
  vanish   {"ns","name"}                                     pod deleted now
  restart  {"ns","name","ready"?,"start_after"?}  a Deployment pod's
           process killed and run again in place (restartCount+1); the pod
           stays Ready unless "ready": false (then Ready turns False until
           the probe passes); "start_after": seconds the new process starts
           after the restartCount rises (a proxy slow to listen again)
  hold     {"on":true}                                       pods stay Pending
  noclone  {"on":true}                                       PVC clones stay Pending
Failing starts and scheduling (k8s_tick and k8s_op below):
  node     {"labels":{..},"taints":[{key,value,effect}]}     the one node: pods
           must match its labels and tolerate its taints, else Unschedulable
  stick    {"what","pod"|"claim" (globs),"reason","message","seconds"}
           what: waiting (the container waits in reason), unschedulable,
           sandbox (FailedCreatePodSandBox events), provision (the claim
           stays Pending, ProvisioningFailed events), pull (Pulling events
           for seconds, then Pulled); "unstick" {} drops them all
Core v1 Events are listed with fieldSelector involvedObject.uid/name/kind.
Pod Security Admission (tests/k8s/pod_security.py): a pod created in a
namespace labelled pod-security.kubernetes.io/enforce (deploy/00-namespaces.yaml,
seeded by the tests) that breaks that level is refused with 403 as the real
plugin refuses it; a Deployment's pod that breaks it is a violation; the warn
level's findings are kept (GET /_fake/psa).
RuntimeClass admission merges the class's scheduling (nodeSelector,
tolerations) into the pod, refusing a conflicting nodeSelector.
GET /_fake/state (all objects), GET /_fake/log (requests seen),
GET /_fake/bodies (every write: [method, path, status, body as sent]),
GET /_fake/stalled ({"stalled": answers being delayed now, "delayed": ever}),
GET /_fake/admission (every PATCH/PUT, every create of a pod and every
create and delete of a NetworkPolicy, as admission sees it: operation, resource, namespace, name,
oldObject, object; tests/e2e/76-k8s-admission.sh).
"""
import argparse
import base64
import copy
import datetime
import fnmatch
import http.server
import json
import os
import random
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHARED = os.environ.get("K8S_SHARED_DIR",
                        os.path.join(REPO, "..", "shared", "k8s"))
sys.path.insert(0, SHARED)
import validate  # noqa: E402  (../shared/k8s/validate.py)
import pod_security  # noqa: E402  (tests/k8s/pod_security.py)

VALIDATORS = [validate.Validator("1.35"), validate.Validator("1.30")]

# resource plural -> (group, version, Kind, namespaced)
RES = {
    ("", "pods"): ("v1", "Pod", True),
    ("", "persistentvolumeclaims"): ("v1", "PersistentVolumeClaim", True),
    ("", "secrets"): ("v1", "Secret", True),
    ("", "services"): ("v1", "Service", True),
    ("", "configmaps"): ("v1", "ConfigMap", True),
    ("", "serviceaccounts"): ("v1", "ServiceAccount", True),
    ("", "namespaces"): ("v1", "Namespace", False),
    ("", "events"): ("v1", "Event", True),
    ("networking.k8s.io", "networkpolicies"): ("v1", "NetworkPolicy", True),
    ("apps", "deployments"): ("v1", "Deployment", True),
    ("node.k8s.io", "runtimeclasses"): ("v1", "RuntimeClass", False),
    ("rbac.authorization.k8s.io", "roles"): ("v1", "Role", True),
    ("rbac.authorization.k8s.io", "rolebindings"): ("v1", "RoleBinding", True),
    ("rbac.authorization.k8s.io", "clusterroles"): ("v1", "ClusterRole", False),
}
# Deleting these returns a Status, the others the object (API-NOTES sec 6).
DELETE_RETURNS_STATUS = {"networkpolicies", "deployments", "secrets",
                         "roles", "rolebindings", "configmaps"}

LOCK = threading.RLock()
STORE = {}          # (group, plural, ns, name) -> obj
RV = [1000]
VIOLATIONS = []
LOG = []
BODIES = []         # [method, path, code, body] of every authenticated write
INJECT = []         # dicts: kind fail/delay, method, path(regex), ...
K3 = {"node": None, "sticks": []}   # k8s_op's node and stick rules
STATE = {"hold": False, "noclone": False, "badimages": [], "ips": set(), "stalled": 0,
         "delayed": 0}
ADMISSION = []      # updates as admission sees them (admission_record)
ADMISSION_MAX = 5000
PROCS = {}          # pod key -> Popen
ARGS = None


def now_rfc3339():
    return datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")


def next_rv():
    RV[0] += 1
    return str(RV[0])


PSA_WARNINGS = []   # pods that broke their namespace's warn level (GET /_fake/psa)
PSA_REFUSED = set()  # Deployments whose pods Pod Security refused (said once)


def pod_security_admit(ns, name, pod):
    """Pod Security Admission for a pod created in ns: the namespace's
    pod-security.kubernetes.io/enforce level refuses it (the message the
    real plugin gives, or None: admitted); its warn level's findings are
    kept in PSA_WARNINGS. A namespace the fake does not hold, or one
    without the labels, admits everything (the real default is privileged)."""
    nso = STORE.get(key_of("", "namespaces", None, ns))
    labels = (nso or {}).get("metadata", {}).get("labels") or {}
    pfx = "pod-security.kubernetes.io/"
    warn = labels.get(pfx + "warn")
    if warn:
        v = pod_security.violations(pod, warn)
        if v:
            PSA_WARNINGS.append({"namespace": ns, "name": name, "level": warn,
                                 "violations": v})
    enf = labels.get(pfx + "enforce")
    if enf:
        v = pod_security.violations(pod, enf)
        if v:
            return 'pods "%s" is forbidden: violates PodSecurity "%s:%s": %s' % (
                name, enf, labels.get(pfx + "enforce-version", "latest"),
                ", ".join("%s (%s)" % tuple(x.split(": ", 1)) for x in v))
    return None


def violation(msg, **kw):
    ent = {"msg": msg}
    ent.update(kw)
    with LOCK:
        VIOLATIONS.append(ent)
        if ARGS.violations:
            with open(ARGS.violations, "a") as f:
                f.write(json.dumps(ent) + "\n")
    sys.stderr.write("VIOLATION %s\n" % json.dumps(ent))


def status(code, reason, message, details=None):
    st = {"kind": "Status", "apiVersion": "v1", "metadata": {},
          "status": "Failure", "message": message, "reason": reason}
    if details:
        st["details"] = details
    st["code"] = code
    return code, st


def gr_str(group, plural):
    return plural + ("." + group if group else "")


def not_found(group, plural, name):
    d = {"name": name, "kind": plural}
    if group:
        d = {"name": name, "group": group, "kind": plural}
    return status(404, "NotFound", '%s "%s" not found' %
                  (gr_str(group, plural), name), d)


# ---- label selectors (full syntax) ----

def split_top(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


KEY = r"[A-Za-z0-9./_-]+"


def parse_selector(s):
    reqs = []
    for part in split_top(s):
        p = part.strip()
        m = re.fullmatch(r"(%s)\s+(in|notin)\s+\(([^)]*)\)" % KEY, p)
        if m:
            vals = [v.strip() for v in m.group(3).split(",") if v.strip()]
            reqs.append((m.group(1), m.group(2), vals))
            continue
        m = re.fullmatch(r"(%s)\s*(==|!=|=)\s*([A-Za-z0-9._-]*)" % KEY, p)
        if m:
            reqs.append((m.group(1), {"==": "=", "=": "=", "!=": "!="}[m.group(2)],
                         [m.group(3)]))
            continue
        m = re.fullmatch(r"(!?)(%s)" % KEY, p)
        if m:
            reqs.append((m.group(2), "!exists" if m.group(1) else "exists", []))
            continue
        raise ValueError("unable to parse requirement: %r" % p)
    return reqs


def sel_match(reqs, labels):
    labels = labels or {}
    for k, op, vals in reqs:
        has = k in labels
        v = labels.get(k)
        if op == "=" and not (has and v == vals[0]):
            return False
        if op == "!=" and has and v == vals[0]:
            return False
        if op == "in" and not (has and v in vals):
            return False
        if op == "notin" and has and v in vals:
            return False
        if op == "exists" and not has:
            return False
        if op == "!exists" and has:
            return False
    return True


# ---- validation ----

def check_body(obj, kind, group, version, name, write_params, method, path):
    if write_params.get("fieldValidation") != ["Strict"]:
        violation("write without fieldValidation=Strict", method=method,
                  path=path)
    worst = None
    for v in VALIDATORS:
        f = v.validate(copy.deepcopy(obj), kind=kind,
                       api_version=(group + "/" + version) if group else version)
        errs = [x for x in f if x.severity == "error"]
        for x in errs:
            violation("schema", k8s=v.version, kind=kind, path=path,
                      field=x.path, message=x.message)
        warns = [x for x in f if x.severity != "error"]
        for x in warns:
            violation("schema-warning", k8s=v.version, kind=kind, path=path,
                      field=x.path, message=x.message)
        if errs and worst is None:
            worst = validate.status_for(f, kind, group, version, name)
    return worst


# ---- objects ----

def key_of(group, plural, ns, name):
    return (group, plural, ns or "", name)


def meta(o):
    return o.setdefault("metadata", {})


def finish_create(group, plural, ns, obj):
    md = meta(obj)
    md["namespace"] = ns if ns else md.get("namespace")
    if not ns:
        md.pop("namespace", None)
    md["uid"] = str(uuid.uuid4())
    md["resourceVersion"] = next_rv()
    md["creationTimestamp"] = now_rfc3339()
    md.setdefault("generation", 1)
    if plural == "pods":
        spec = obj.setdefault("spec", {})
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("serviceAccountName", "default")
        obj["status"] = {"phase": "Pending", "qosClass": "Burstable",
                         "conditions": [{"type": "PodScheduled",
                                         "status": "True",
                                         "lastTransitionTime": now_rfc3339()}]}
        md["_created_at"] = time.time()
    elif plural == "persistentvolumeclaims":
        obj["status"] = {"phase": "Bound", "accessModes":
                         obj.get("spec", {}).get("accessModes", []),
                         "capacity": obj.get("spec", {}).get("resources", {})
                         .get("requests", {})}
        d = os.path.join(ARGS.workdir, "pvc", ns, md["name"])
        src = obj.get("spec", {}).get("dataSource") or {}
        if src.get("kind") == "PersistentVolumeClaim" and not STATE["noclone"]:
            # CSI volume cloning: the new volume starts as a copy
            sd = os.path.join(ARGS.workdir, "pvc", ns, src.get("name", ""))
            if key_of("", "persistentvolumeclaims", ns, src.get("name", "")) \
                    in STORE and os.path.isdir(sd):
                shutil.copytree(sd, d, symlinks=True, dirs_exist_ok=True)
            else:
                obj["status"] = {"phase": "Pending"}
        elif src:
            obj["status"] = {"phase": "Pending"}	# no clone support
        os.makedirs(d, exist_ok=True)
    elif plural == "secrets":
        sd = obj.pop("stringData", None) or {}
        data = obj.setdefault("data", {})
        for k, v in sd.items():
            data[k] = base64.b64encode(v.encode()).decode()
    elif plural == "deployments":
        obj.setdefault("spec", {}).setdefault("replicas", 1)  # API default
        obj["status"] = {"replicas": 0, "readyReplicas": 0,
                         "observedGeneration": 1}
    return obj


def public(obj):
    o = copy.deepcopy(obj)
    o.get("metadata", {}).pop("_created_at", None)
    o.get("metadata", {}).pop("_gone_at", None)
    o.get("metadata", {}).pop("_probed", None)
    o.get("metadata", {}).pop("_pull_at", None)
    o.get("metadata", {}).pop("_pulled", None)
    return o


def list_objs(group, plural, ns):
    return [o for (g, p, n, _), o in sorted(STORE.items())
            if g == group and p == plural and (ns is None or n == ns)]


def pod_uses_claim(ns, claim):
    for o in list_objs("", "pods", ns):
        for v in o.get("spec", {}).get("volumes", []) or []:
            pvc = v.get("persistentVolumeClaim")
            if pvc and pvc.get("claimName") == claim:
                return True
    return False


def really_delete(k):
    obj = STORE.pop(k, None)
    watch_tombstone(k, obj)
    if obj is not None and k[1] == "pods":
        stop_proc(k)
        ip = obj.get("status", {}).get("podIP")
        STATE["ips"].discard(ip)
    return obj


# Creates and deletes kept for admission as well (updates: of everything).
ADMISSION_CREATES = {("networking.k8s.io", "networkpolicies"), ("", "pods")}


def admission_record(group, plural, ns, name, old, new, op="UPDATE"):
    """Keeps one write as a validating admission policy sees it: an update
    (a PATCH or PUT) of anything, a CREATE or DELETE of ADMISSION_CREATES;
    the stored object before (oldObject; null for a CREATE) and the object
    the write makes (object; null for a DELETE), in their public form.
    tests/k8s/cel_eval.py runs deploy/15-admission.yaml and
    16-admission-netpol.yaml over these. The first ADMISSION_MAX are kept
    (a benchmark's thousands of pods must not grow the fake without end)."""
    if len(ADMISSION) >= ADMISSION_MAX:
        return
    if op != "UPDATE" and (group, plural) not in ADMISSION_CREATES:
        return
    ADMISSION.append({"operation": op,
                      "resource": {"group": group, "resource": plural},
                      "namespace": ns, "name": name,
                      "oldObject": public(old) if old is not None else None,
                      "object": public(new) if new is not None else None})


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = copy.deepcopy(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# ---- kubelet / controllers ----

def alloc_ip():
    for n in range(2, 250):
        ip = "127.0.0.%d" % (n + ARGS.ip_offset)
        if ip not in STATE["ips"]:
            STATE["ips"].add(ip)
            return ip
    raise RuntimeError("out of pod IPs")


def stop_proc(k):
    p = PROCS.pop(k, None)
    if p is not None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            p.wait(timeout=5)
        except Exception:
            pass


def port_open(ip, port):
    try:
        with socket.create_connection((str(ip), int(port)), timeout=0.2):
            return True
    except OSError as e:
        if ARGS.verbose:
            sys.stderr.write("port_open %s:%s: %r\n" % (ip, port, e))
        return False


def start_sandbox_agent(k, pod, ip):
    ns = k[2]
    spec = pod["spec"]
    c = spec["containers"][0]
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    secret = vols.get(mounts.get("/run/agent-token"), {}).get("secret", {})
    sobj = STORE.get(key_of("", "secrets", ns, secret.get("secretName", "")))
    if sobj is None:
        return "CreateContainerConfigError", 'secret "%s" not found' % \
            secret.get("secretName")
    claim = vols.get(mounts.get("/workspace"), {}) \
        .get("persistentVolumeClaim", {}).get("claimName", "")
    # Every claim the pod mounts (/workspace, a home) must be there and
    # bound, as the kubelet waits for each volume before the containers.
    for v in spec.get("volumes", []) or []:
        cn = (v.get("persistentVolumeClaim") or {}).get("claimName")
        if cn is None:
            continue
        if key_of("", "persistentvolumeclaims", ns, cn) not in STORE:
            return "ContainerCreating", 'persistentvolumeclaim "%s" not found' \
                % cn
        if STORE[key_of("", "persistentvolumeclaims", ns, cn)] \
                .get("status", {}).get("phase") != "Bound":
            return "ContainerCreating", 'persistentvolumeclaim "%s" is not ' \
                'bound' % cn
    pdir = os.path.join(ARGS.workdir, "pods", ns, k[3])
    os.makedirs(os.path.join(pdir, "state"), exist_ok=True)
    tok = base64.b64decode(sobj["data"]["token"]).decode()
    with open(os.path.join(pdir, "token"), "w") as f:
        f.write(tok)
    if not ARGS.agent or not os.access(ARGS.agent, os.X_OK):
        return None, None
    port = [p for p in c.get("ports", []) if p.get("name") == "agent"]
    port = port[0]["containerPort"] if port else 7070
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": pdir}
    for e in c.get("env", []) or []:
        if "value" in e:
            env[e["name"]] = e["value"]
    env["HOME"] = pdir
    wdir = os.path.join(ARGS.workdir, "pvc", ns, claim)
    cmd = [ARGS.agent, "--listen", "tcp:%s:%d" % (ip, port), "--token-file",
           os.path.join(pdir, "token"), "--state", os.path.join(pdir, "state"),
           "--workdir", wdir]
    log = open(os.path.join(pdir, "agent.log"), "a")
    PROCS[k] = subprocess.Popen(cmd, env=env, cwd=wdir, stdout=log,
                                stderr=subprocess.STDOUT,
                                start_new_session=True)
    return None, None


def start_pod_cmd(k, pod, ip):
    if not ARGS.pod_cmd:
        return
    env = dict(os.environ)
    env["POD_IP"] = ip
    env["POD_NAME"] = k[3]
    env["POD_NAMESPACE"] = k[2]
    log = open(os.path.join(ARGS.workdir, "podcmd-%s.log" % k[3]), "a")
    PROCS[k] = subprocess.Popen(ARGS.pod_cmd, shell=True, env=env, stdout=log,
                                stderr=subprocess.STDOUT,
                                start_new_session=True)


def set_waiting(pod, name, reason, msg):
    st = pod["status"]
    key = "initContainerStatuses" if name == "install-agent" else \
        "containerStatuses"
    new = [{"name": name, "ready": False, "restartCount": 0,
            "image": "x", "imageID": "",
            "state": {"waiting": {"reason": reason, "message": msg}}}]
    if st.get(key) != new:
        st[key] = new
        # a status change is a new version, as on a real server (watches
        # see it: the orchestrator's cache reads pods from them)
        pod["metadata"]["resourceVersion"] = next_rv()


RWOP_MSG = ("0/1 nodes are available: 1 node has pod using "
            "PersistentVolumeClaim with the same name and ReadWriteOncePod "
            "access mode. preemption: 0/1 nodes are available: 1 No "
            "preemption victims found for incoming pod.")


def rwop_taken(k, pod):
    """The scheduler's ReadWriteOncePod rule: a pod using such a claim is
    not scheduled while another scheduled pod (one with an IP, terminating
    ones included) uses it."""
    ns = k[2]
    for v in pod["spec"].get("volumes", []) or []:
        cn = (v.get("persistentVolumeClaim") or {}).get("claimName")
        c = STORE.get(key_of("", "persistentvolumeclaims", ns, cn)) if cn else None
        if c is None or "ReadWriteOncePod" not in \
                (c.get("spec", {}).get("accessModes") or []):
            continue
        for k2, o in STORE.items():
            if k2 == k or k2[1] != "pods" or k2[2] != ns or \
                    "podIP" not in o.get("status", {}):
                continue
            if any((x.get("persistentVolumeClaim") or {}).get("claimName") == cn
                   for x in o["spec"].get("volumes", []) or []):
                return True
    return False


def set_scheduled(pod, ok):
    conds = pod["status"].setdefault("conditions", [])
    c = [x for x in conds if x.get("type") == "PodScheduled"]
    if not c:
        c = [{"type": "PodScheduled"}]
        conds.append(c[0])
    want = {"status": "True"} if ok else \
        {"status": "False", "reason": "Unschedulable", "message": RWOP_MSG}
    if any(c[0].get(f) != v for f, v in want.items()) or \
            (ok and "reason" in c[0]):
        c[0].pop("reason", None)
        c[0].pop("message", None)
        c[0].update(want)
        c[0]["lastTransitionTime"] = now_rfc3339()
        pod["metadata"]["resourceVersion"] = next_rv()


def kubelet_tick():
    t = time.time()
    with LOCK:
        for k, pod in list(STORE.items()):
            if k[1] != "pods" or k in SYNTHETIC:
                continue
            md = pod["metadata"]
            st = pod["status"]
            if md.get("deletionTimestamp"):
                if t >= md.get("_gone_at", 0):
                    really_delete(k)
                continue
            if st.get("phase") != "Pending" or STATE["hold"]:
                if st.get("phase") == "Running":
                    check_running(k, pod)
                continue
            if t - md.get("_created_at", t) < ARGS.pending_delay:
                continue
            if "podIP" not in st:
                if rwop_taken(k, pod):
                    set_scheduled(pod, False)
                    continue
                if k8s_tick(k, pod):
                    continue
                set_scheduled(pod, True)
            img = pod["spec"]["containers"][0].get("image", "")
            bad = [b for b in STATE["badimages"] if fnmatch.fnmatch(img, b)]
            if bad:
                set_waiting(pod, "sandbox", "ImagePullBackOff",
                            'Back-off pulling image "%s"' % img)
                continue
            if "podIP" not in st:
                ip = alloc_ip()
                st["podIP"] = ip
                st["podIPs"] = [{"ip": ip}]
                st["hostIP"] = "127.0.0.1"
                st["startTime"] = now_rfc3339()
                if md.get("labels", {}).get("sandbox.dev/role") == "sandbox":
                    reason, msg = start_sandbox_agent(k, pod, ip)
                    if reason:
                        set_waiting(pod, "sandbox", reason, msg)
                        st.pop("podIP")
                        st.pop("podIPs")
                        STATE["ips"].discard(ip)
                        continue
                else:
                    start_pod_cmd(k, pod, ip)
            st["phase"] = "Running"
            st["containerStatuses"] = [{
                "name": c["name"], "ready": False, "restartCount": 0,
                "image": c.get("image", ""), "imageID": "",
                "started": True,
                "state": {"running": {"startedAt": now_rfc3339()}}}
                for c in pod["spec"]["containers"]]
            md["resourceVersion"] = next_rv()
        deployment_controller()
        gc()


def check_running(k, pod):
    if ARGS.verbose: sys.stderr.write("check_running %s\n" % (k,))
    st = pod["status"]
    ready = True
    proc = PROCS.get(k)
    if proc is not None and proc.poll() is not None:
        # The agent (the container's process) exited: restartPolicy Never.
        st["phase"] = "Failed"
        st["containerStatuses"][0]["state"] = {"terminated": {
            "exitCode": proc.returncode or 1, "reason": "Error"}}
        set_ready(pod, False)
        PROCS.pop(k, None)
        return
    last = pod["metadata"].get("_probed", 0)
    if time.time() - last < 1.0 and any(
            x["type"] == "Ready" and x["status"] == "True"
            for x in st.get("conditions", [])):
        return
    pod["metadata"]["_probed"] = time.time()
    c = pod["spec"]["containers"][0]
    probe = c.get("readinessProbe", {}).get("tcpSocket")
    if probe is not None and ARGS.agent and \
            pod["metadata"].get("labels", {}).get("sandbox.dev/role") == "sandbox":
        ready = port_open(st["podIP"], probe["port"])
        if ARGS.verbose: sys.stderr.write("probe %s %s -> %s\n" % (st["podIP"], probe["port"], ready))
    elif ARGS.pod_cmd_port and k in PROCS:
        ready = port_open(st["podIP"], ARGS.pod_cmd_port)
    set_ready(pod, ready)


def set_ready(pod, ready):
    st = pod["status"]
    s = "True" if ready else "False"
    conds = [c for c in st.get("conditions", []) if c["type"] not in
             ("Initialized", "ContainersReady", "Ready",
              "PodReadyToStartContainers")]
    cur = [c for c in st.get("conditions", []) if c["type"] == "Ready"]
    if cur and cur[0]["status"] == s:
        return
    conds += [{"type": "PodReadyToStartContainers", "status": "True",
               "lastTransitionTime": now_rfc3339()},
              {"type": "Initialized", "status": "True",
               "lastTransitionTime": now_rfc3339()},
              {"type": "ContainersReady", "status": s,
               "lastTransitionTime": now_rfc3339()},
              {"type": "Ready", "status": s,
               "lastTransitionTime": now_rfc3339()}]
    st["conditions"] = conds
    for cs in st.get("containerStatuses", []):
        cs["ready"] = ready
    pod["metadata"]["resourceVersion"] = next_rv()


def restart_in_place(k, pod, body):
    """/_fake/restart: the container of a Deployment's pod (--pod-cmd)
    exits and the kubelet runs it again, same pod, same IP: what a crash
    or an OOM kill of the proxy looks like when the restart is quicker
    than the readiness probe. Returns (code, reply)."""
    if pod is None or k not in PROCS or \
            pod["metadata"].get("deletionTimestamp") or \
            pod.get("status", {}).get("phase") != "Running":
        return 404, {"error": "no running Deployment pod of that name"}
    stop_proc(k)
    delay = float(body.get("start_after", 0))
    if delay > 0:
        def late(ip=pod["status"]["podIP"]):
            with LOCK:
                if STORE.get(k) is pod and k not in PROCS:
                    start_pod_cmd(k, pod, ip)
        threading.Timer(delay, late).start()
    else:
        start_pod_cmd(k, pod, pod["status"]["podIP"])
    for cs in pod["status"].get("containerStatuses", []):
        cs["restartCount"] = cs.get("restartCount", 0) + 1
        cs["state"] = {"running": {"startedAt": now_rfc3339()}}
    if body.get("ready") is False:
        set_ready(pod, False)
        pod["metadata"]["_probed"] = 0
    pod["metadata"]["resourceVersion"] = next_rv()
    return 200, {"ok": True}


def deployment_controller():
    for (g, p, ns, name), d in list(STORE.items()):
        if (g, p) != ("apps", "deployments"):
            continue
        want = d.get("spec", {}).get("replicas", 1)
        tmpl = d["spec"]["template"]
        sel = d["spec"]["selector"].get("matchLabels", {})
        mine = [o for o in list_objs("", "pods", ns)
                if all(o["metadata"].get("labels", {}).get(a) == b
                       for a, b in sel.items())
                and not o["metadata"].get("deletionTimestamp")]
        while len(mine) < want:
            pn = "%s-7d9c5-%s" % (name, "".join(random.choice(
                "bcdfghjklmnpqrstvwxz2456789") for _ in range(5)))
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": pn, "namespace": ns,
                                "labels": dict(tmpl["metadata"].get("labels", {})),
                                "ownerReferences": [{
                                    "apiVersion": "apps/v1", "kind": "ReplicaSet",
                                    "name": name + "-7d9c5", "uid": d["metadata"]["uid"],
                                    "controller": True}]},
                   "spec": copy.deepcopy(tmpl["spec"])}
            refused = pod_security_admit(ns, pn, pod)
            if refused:
                # The ReplicaSet controller's FailedCreate: no pod, and the
                # manifest is wrong, so the test fails.
                if name not in PSA_REFUSED:
                    PSA_REFUSED.add(name)
                    violation("deployment pod refused by Pod Security",
                              deployment=name, message=refused)
                break
            finish_create("", "pods", ns, pod)
            STORE[key_of("", "pods", ns, pn)] = pod
            mine.append(pod)
        if len(mine) > want:
            # Lowest pod-deletion-cost first, like the ReplicaSet controller.
            def cost(o):
                a = o["metadata"].get("annotations", {})
                try:
                    return int(a.get("controller.kubernetes.io/pod-deletion-cost", "0"))
                except ValueError:
                    return 0
            for o in sorted(mine, key=cost)[:len(mine) - want]:
                o["metadata"]["deletionTimestamp"] = now_rfc3339()
                o["metadata"]["_gone_at"] = time.time() + 0.2
        ready = sum(1 for o in mine if any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in o.get("status", {}).get("conditions", [])))
        d["status"] = {"observedGeneration": d["metadata"].get("generation", 1),
                       "replicas": min(len(mine), want),
                       "readyReplicas": ready, "availableReplicas": ready}


def gc():
    uids = {o["metadata"]["uid"] for o in STORE.values()}
    for k, o in list(STORE.items()):
        md = o["metadata"]
        refs = md.get("ownerReferences") or []
        if refs and all(r.get("uid") not in uids for r in refs):
            if k[1] == "pods":
                md.setdefault("deletionTimestamp", now_rfc3339())
                md.setdefault("_gone_at", time.time())
            else:
                really_delete(k)
        # PVC protection: a claim marked for deletion goes once unused.
        if k[1] == "persistentvolumeclaims" and md.get("deletionTimestamp") \
                and not pod_uses_claim(k[2], k[3]):
            really_delete(k)


# ---- scheduling and failing starts (the kubernetes runtime's fail-fast) ----

def field_match(q, o):
    """A fieldSelector of k=v pairs (involvedObject.*, metadata.name)."""
    fs = q.get("fieldSelector", [""])[0]
    for term in [t for t in fs.split(",") if t]:
        f, _, v = term.partition("=")
        cur = o
        for part in f.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        if cur != v:
            return False
    return True


def runtimeclass_merge(name, pod):
    """The RuntimeClass admission plugin: the class's scheduling.nodeSelector
    and tolerations are merged into the pod; a conflicting key is refused."""
    rc = pod.get("spec", {}).get("runtimeClassName")
    c = STORE.get(key_of("node.k8s.io", "runtimeclasses", None, rc)) if rc else None
    sch = (c or {}).get("scheduling") or {}
    spec = pod["spec"]
    for k, v in (sch.get("nodeSelector") or {}).items():
        have = spec.get("nodeSelector", {}).get(k)
        if have is not None and have != v:
            return status(403, "Forbidden", 'pods "%s" is forbidden: pod '
                          'rejected: conflict with RuntimeClass nodeSelector '
                          '%s' % (name, k), {"name": name, "kind": "pods"})
        spec.setdefault("nodeSelector", {})[k] = v
    for t in sch.get("tolerations") or []:
        if t not in spec.setdefault("tolerations", []):
            spec["tolerations"].append(t)
    return None


def tolerates(tols, taint):
    for t in tols or []:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t["key"] == taint["key"]:
                return True
        elif t.get("key") == taint["key"] and \
                t.get("value", "") == taint.get("value", ""):
            return True
    return False


def set_unschedulable(pod, msg):
    conds = pod["status"].setdefault("conditions", [])
    c = [x for x in conds if x.get("type") == "PodScheduled"]
    if not c:
        c = [{"type": "PodScheduled"}]
        conds.append(c[0])
    if c[0].get("status") != "False" or c[0].get("message") != msg:
        c[0].update({"status": "False", "reason": "Unschedulable",
                     "message": msg, "lastTransitionTime": now_rfc3339()})
        pod["metadata"]["resourceVersion"] = next_rv()


def add_event(obj, kind, etype, reason, msg, component):
    """A core/v1 Event on obj (counted up when it repeats)."""
    md = obj["metadata"]
    ns = md.get("namespace", "")
    for (g, p, n, nm), e in STORE.items():
        if p == "events" and n == ns and e["reason"] == reason and \
                e["involvedObject"].get("uid") == md["uid"]:
            e["count"] += 1
            e["lastTimestamp"] = now_rfc3339()
            e["message"] = msg
            e["metadata"]["resourceVersion"] = next_rv()
            return
    name = "%s.%016x" % (md["name"], random.getrandbits(64))
    ev = {"apiVersion": "v1", "kind": "Event",
          "metadata": {"name": name, "namespace": ns},
          "involvedObject": {"apiVersion": "v1", "kind": kind, "namespace": ns,
                             "name": md["name"], "uid": md["uid"]},
          "reason": reason, "message": msg, "type": etype, "count": 1,
          "firstTimestamp": now_rfc3339(), "lastTimestamp": now_rfc3339(),
          "source": {"component": component},
          "reportingComponent": component}
    finish_create("", "events", ns, ev)
    STORE[key_of("", "events", ns, name)] = ev


def pod_claims(k, pod):
    out = []
    for v in pod["spec"].get("volumes", []) or []:
        cn = (v.get("persistentVolumeClaim") or {}).get("claimName")
        c = STORE.get(key_of("", "persistentvolumeclaims", k[2], cn)) if cn else None
        if c is not None:
            out.append(c)
    return out


def k8s_tick(k, pod):
    """Before a pending pod is scheduled: the node's labels and taints, then
    the stick rules. True: the pod stays Pending this tick."""
    node = K3["node"]
    spec = pod["spec"]
    if node is not None:
        labels = node.get("labels") or {}
        miss = [a for a, b in (spec.get("nodeSelector") or {}).items()
                if labels.get(a) != b]
        taints = [t for t in node.get("taints") or []
                  if t.get("effect") in ("NoSchedule", "NoExecute")
                  and not tolerates(spec.get("tolerations"), t)]
        if miss or taints:
            why = "1 node(s) didn't match Pod's node affinity/selector" if miss \
                else "1 node(s) had untolerated taint {%s: %s}" % (
                    taints[0]["key"], taints[0].get("value", ""))
            set_unschedulable(pod, "0/1 nodes are available: %s. preemption: "
                              "0/1 nodes are available: 1 Preemption is not "
                              "helpful for scheduling." % why)
            return True
    name = k[3]
    for r in K3["sticks"]:
        what = r.get("what")
        if what == "provision":
            bad = [c for c in pod_claims(k, pod)
                   if fnmatch.fnmatch(c["metadata"]["name"], r.get("claim", ""))]
            if not bad:
                continue
            for c in bad:
                if c["status"].get("phase") != "Pending":
                    c["status"] = {"phase": "Pending"}
                    c["metadata"]["resourceVersion"] = next_rv()
                add_event(c, "PersistentVolumeClaim", "Warning",
                          "ProvisioningFailed", r.get("message") or
                          "failed to provision volume with StorageClass "
                          '"standard": rpc error: code = ResourceExhausted '
                          "desc = quota exceeded", "persistentvolume-controller")
            set_unschedulable(pod, "0/1 nodes are available: pod has unbound "
                              "immediate PersistentVolumeClaims. preemption: "
                              "0/1 nodes are available: 1 Preemption is not "
                              "helpful for scheduling.")
            return True
        if not fnmatch.fnmatch(name, r.get("pod", "")):
            continue
        if what == "unschedulable":
            set_unschedulable(pod, r.get("message") or
                              "0/1 nodes are available: 1 Insufficient cpu.")
            return True
        set_scheduled(pod, True)
        if what == "waiting":
            set_waiting(pod, "sandbox", r.get("reason", "ErrImagePull"),
                        r.get("message") or "waiting")
            return True
        if what == "sandbox":
            set_waiting(pod, "sandbox", "ContainerCreating", "")
            add_event(pod, "Pod", "Warning", "FailedCreatePodSandBox",
                      r.get("message") or "Failed to create pod sandbox: rpc "
                      "error: code = Unknown desc = failed to get sandbox "
                      'runtime: no runtime for "runsc" is configured', "kubelet")
            return True
        if what == "pull":
            md = pod["metadata"]
            img = spec["containers"][0].get("image", "")
            if "_pull_at" not in md:
                md["_pull_at"] = time.time()
                add_event(pod, "Pod", "Normal", "Pulling",
                          'Pulling image "%s"' % img, "kubelet")
            if time.time() - md["_pull_at"] < float(r.get("seconds", 5)):
                set_waiting(pod, "sandbox", "ContainerCreating", "")
                return True
            if not md.get("_pulled"):
                md["_pulled"] = True
                add_event(pod, "Pod", "Normal", "Pulled",
                          'Successfully pulled image "%s"' % img, "kubelet")
    return False


def k8s_op(op, body):
    if op == "node":
        K3["node"] = body if body.get("labels") is not None or \
            body.get("taints") is not None else None
        return 200, {"ok": True}
    if op == "unstick":
        K3["sticks"] = []
        return 200, {"ok": True}
    if body.get("what") not in ("waiting", "unschedulable", "sandbox",
                                "provision", "pull"):
        return 400, {"error": "stick: unknown what"}
    K3["sticks"].append(body)
    return 200, {"ok": True}


def kubelet_loop():
    while True:
        try:
            kubelet_tick()
        except Exception as e:  # keep the fake alive, but say so
            sys.stderr.write("kubelet error: %r\n" % (e,))
        time.sleep(0.1)


# ---- HTTP ----

PATH_RE = re.compile(
    r"^/(?:api/(?P<cv>v1)|apis/(?P<g>[a-z0-9.-]+)/(?P<v>v1))"
    r"(?:/namespaces/(?P<ns>[a-z0-9-]+))?/(?P<res>[a-z]+)"
    r"(?:/(?P<name>[a-z0-9.-]+))?(?:/(?P<sub>scale|status))?/?$")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"

    def log_message(self, fmt, *a):
        if ARGS.verbose:
            sys.stderr.write("fake-api: " + (fmt % a) + "\n")

    def send_json(self, code, obj, headers=None):
        body = json.dumps(obj).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        return len(body)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > 4 * 1024 * 1024:
            return None
        return self.rfile.read(n) if n else b""

    def authed(self):
        cert = None
        try:
            cert = self.connection.getpeercert()
        except Exception:
            cert = None
        if cert:
            return "cert"
        h = self.headers.get("Authorization", "")
        if not h.startswith("Bearer "):
            return None
        tok = h[7:]
        try:
            with open(ARGS.tokens) as f:
                good = [x.strip() for x in f if x.strip()]
        except OSError:
            good = []
        return "token" if tok in good else None

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def handle_any(self, method):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
        raw = self.read_body()
        if u.path.startswith("/_fake/"):
            return self.control(method, u.path[7:], raw)
        # injected faults
        with LOCK:
            for inj in INJECT:
                if inj["count"] == 0:
                    continue
                if inj.get("method") not in (None, method):
                    continue
                if not re.search(inj.get("path", ""), u.path):
                    continue
                inj["count"] -= 1
                if inj["kind"] == "delay":
                    d = inj["seconds"]
                    break
                code = inj["status"]
                reason = {429: "TooManyRequests", 500: "InternalError",
                          503: "ServiceUnavailable", 403: "Forbidden",
                          422: "Invalid"}.get(code, "InternalError")
                msg = inj.get("message") or {
                    429: "Too many requests, please try again later.",
                    500: "Internal error occurred: etcdserver: request timed out",
                    503: "the server is currently unable to handle the request",
                    403: 'pods is forbidden: User "system:serviceaccount:'
                    'sandbox-system:sandbox-orchestrator" cannot create resource '
                    '"pods" in API group "" in the namespace "sandboxes"'}.get(code, "error")
                det = {"retryAfterSeconds": inj.get("retry_after", 1)} \
                    if code == 429 else None
                LOG.append([method, self.path, code, "injected"])
                hdr = {"Retry-After": str(inj.get("retry_after", 1))} \
                    if code == 429 else None
                c, st = status(code, reason, msg, det)
                return self.send_json(c, st, hdr)
            else:
                d = 0
        if d:
            with LOCK:
                STATE["stalled"] += 1
                STATE["delayed"] += 1
            try:
                time.sleep(d)
            finally:
                with LOCK:
                    STATE["stalled"] -= 1
        who = self.authed()
        if who is None:
            LOG.append([method, self.path, 401])
            return self.send_json(*status(401, "Unauthorized", "Unauthorized"))
        if method == "GET" and q.get("watch", [""])[0] in ("1", "true"):
            return watch_stream(self, u.path, q)
        code, obj = self.api(method, u.path, q, raw)
        with LOCK:
            LOG.append([method, self.path, code])
            if method in ("POST", "PUT", "PATCH"):
                try:
                    sent = json.loads(raw) if raw else None
                except ValueError:
                    sent = raw.decode("utf-8", "replace")
                BODIES.append([method, u.path, code, sent])
        count_api(self.send_json(code, obj))

    def control(self, method, op, raw):
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self.send_json(400, {"error": "bad json"})
        with LOCK:
            if op == "state":
                out = [public(o) for _, o in sorted(STORE.items())]
                return self.send_json(200, {"items": out})
            if op == "log":
                return self.send_json(200, {"log": LOG})
            if op == "bodies":
                return self.send_json(200, {"bodies": BODIES})
            if op == "admission":
                return self.send_json(200, {"updates": ADMISSION})
            if op == "stalled":
                return self.send_json(200, {"stalled": STATE["stalled"],
                                            "delayed": STATE["delayed"]})
            if op == "psa":
                return self.send_json(200, {"warnings": PSA_WARNINGS})
            if op == "violations":
                return self.send_json(200, {"violations": VIOLATIONS})
            if op in WATCH_OPS:
                return self.send_json(*WATCH_OPS[op](body))
            if op in ("fail", "delay"):
                body["kind"] = op
                body.setdefault("count", 1)
                INJECT.append(body)
                return self.send_json(200, {"ok": True})
            if op == "clear":
                INJECT.clear()
                STATE["badimages"] = []
                return self.send_json(200, {"ok": True})
            if op == "hold":
                STATE["hold"] = bool(body.get("on"))
                return self.send_json(200, {"ok": True})
            if op == "noclone":
                STATE["noclone"] = bool(body.get("on"))
                return self.send_json(200, {"ok": True})
            if op == "badimage":
                STATE["badimages"].append(body["image"])
                return self.send_json(200, {"ok": True})
            if op in ("node", "stick", "unstick"):
                return self.send_json(*k8s_op(op, body))
            k = key_of("", "pods", body.get("ns", ""), body.get("name", ""))
            pod = STORE.get(k)
            if op == "restart":
                return self.send_json(*restart_in_place(k, pod, body))
            if op in ("evict", "fail-pod", "oom", "vanish"):
                if pod is None:
                    return self.send_json(404, {"error": "no such pod"})
                if op == "vanish":
                    really_delete(k)
                    return self.send_json(200, {"ok": True})
                stop_proc(k)
                st = pod["status"]
                st["phase"] = "Failed"
                if op == "evict":
                    st["reason"] = "Evicted"
                    st["message"] = ("The node was low on resource: memory. "
                                     "Threshold quantity: 100Mi.")
                elif op == "oom":
                    for cs in st.get("containerStatuses", []):
                        cs["state"] = {"terminated": {"exitCode": 137,
                                                      "reason": "OOMKilled"}}
                else:
                    st["reason"] = body.get("reason", "Error")
                set_ready(pod, False)
                pod["metadata"]["resourceVersion"] = next_rv()
                return self.send_json(200, {"ok": True})
        return self.send_json(404, {"error": "unknown control op"})

    # -- the API proper --
    def api(self, method, path, q, raw):
        m = PATH_RE.match(path)
        if not m:
            return status(404, "NotFound", "the server could not find the "
                          "requested resource")
        group = m.group("g") or ""
        version = m.group("cv") or m.group("v")
        ns, plural, name, sub = m.group("ns"), m.group("res"), \
            m.group("name"), m.group("sub")
        if (group, plural) not in RES:
            return status(404, "NotFound", "the server could not find the "
                          "requested resource")
        _, kind, namespaced = RES[(group, plural)]
        if namespaced != (ns is not None):
            return status(404, "NotFound", "the server could not find the "
                          "requested resource")
        verb = {"GET": "get" if name else "list", "POST": "create",
                "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
        # RBAC of deploy/10-rbac.yaml: Secrets may be created and deleted by
        # the orchestrator, never read.
        if plural == "secrets" and verb in ("get", "list"):
            return status(403, "Forbidden",
                          '%s is forbidden: User "system:serviceaccount:'
                          'sandbox-system:sandbox-orchestrator" cannot %s '
                          'resource "secrets" in API group "" in the '
                          'namespace "%s"' % (plural, verb, ns),
                          {"kind": "secrets"})
        body = None
        if raw:
            try:
                body = validate.loads(raw.decode())
            except ValueError as e:
                violation("invalid JSON body", path=path, error=str(e))
                return status(400, "BadRequest", "invalid JSON: %s" % e)
        with LOCK:
            if sub == "scale":
                return self.scale(method, ns, name, q, body, raw)
            if method == "GET" and name is None:
                return self.list(group, plural, kind, ns, q)
            if method == "GET":
                o = STORE.get(key_of(group, plural, ns, name))
                if o is None:
                    return not_found(group, plural, name)
                return 200, public(o)
            if method == "POST" and name is None:
                return self.create(group, version, plural, kind, ns, q, body,
                                   path)
            if method == "PUT" and name:
                return self.replace(group, version, plural, kind, ns, name, q,
                                    body, path)
            if method == "PATCH" and name:
                return self.patch(group, version, plural, kind, ns, name, q,
                                  body, path)
            if method == "DELETE" and name:
                if body is not None:
                    f = VALIDATORS[0].validate(copy.deepcopy(body),
                                               kind="DeleteOptions")
                    for x in f:
                        violation("schema", kind="DeleteOptions",
                                  field=x.path, message=x.message)
                return self.delete(group, plural, ns, name, q)
        return status(405, "MethodNotAllowed", "the server does not allow "
                      "this method on the requested resource")

    def list(self, group, plural, kind, ns, q):
        try:
            reqs = parse_selector(q.get("labelSelector", [""])[0])
        except ValueError as e:
            return status(400, "BadRequest", str(e))
        items = [public(o) for o in list_objs(group, plural, ns)
                 if sel_match(reqs, o["metadata"].get("labels"))
                 and field_match(q, o)]
        for it in items:
            it.pop("apiVersion", None)
            it.pop("kind", None)
        start = 0
        if q.get("continue", [""])[0]:
            try:
                start = int(base64.b64decode(q["continue"][0]).decode())
            except Exception:
                return status(400, "BadRequest", "invalid continue token")
        limit = int(q.get("limit", ["0"])[0] or 0)
        limit = min(limit, ARGS.page) if limit else ARGS.page
        page = items[start:start + limit]
        md = {"resourceVersion": str(RV[0])}
        if start + limit < len(items):
            md["continue"] = base64.b64encode(
                str(start + limit).encode()).decode()
            md["remainingItemCount"] = len(items) - start - limit
        _, kind0, _ = RES[(group, plural)]
        av = (group + "/v1") if group else "v1"
        return 200, {"kind": kind0 + "List", "apiVersion": av,
                     "metadata": md, "items": page}

    def create(self, group, version, plural, kind, ns, q, body, path):
        if not isinstance(body, dict):
            violation("create without a body", path=path)
            return status(400, "BadRequest", "empty body")
        name = body.get("metadata", {}).get("name")
        bad = check_body(body, kind, group, version, name, q, "POST", path)
        if bad:
            return bad["code"], bad
        if body.get("metadata", {}).get("namespace") not in (None, ns):
            violation("namespace mismatch", path=path)
            return status(400, "BadRequest", "the namespace of the object "
                          "(%s) does not match the namespace on the request "
                          "(%s)" % (body["metadata"]["namespace"], ns))
        k = key_of(group, plural, ns, name)
        if k in STORE:
            d = {"name": name, "kind": plural}
            if group:
                d = {"name": name, "group": group, "kind": plural}
            return status(409, "AlreadyExists", '%s "%s" already exists' %
                          (gr_str(group, plural), name), d)
        if plural == "pods":
            rc = body.get("spec", {}).get("runtimeClassName")
            if rc and key_of("node.k8s.io", "runtimeclasses", None, rc) not in STORE:
                return status(403, "Forbidden", 'pods "%s" is forbidden: pod '
                              'rejected: RuntimeClass "%s" not found' % (name, rc),
                              {"name": name, "kind": "pods"})
            body = copy.deepcopy(body)
            bad = runtimeclass_merge(name, body)
            if bad:
                return bad
            refused = pod_security_admit(ns, name, body)
            if refused:
                return status(403, "Forbidden", refused, {"name": name, "kind": "pods"})
        obj = finish_create(group, plural, ns, copy.deepcopy(body))
        admission_record(group, plural, ns, name, None, obj, "CREATE")
        STORE[k] = obj
        return 201, public(obj)

    def replace(self, group, version, plural, kind, ns, name, q, body, path):
        if not isinstance(body, dict):
            return status(400, "BadRequest", "empty body")
        bad = check_body(body, kind, group, version, name, q, "PUT", path)
        if bad:
            return bad["code"], bad
        if body.get("metadata", {}).get("name") != name:
            violation("name mismatch on PUT", path=path)
            return status(400, "BadRequest", "the name of the object (%s) "
                          "does not match the name on the URL (%s)" %
                          (body.get("metadata", {}).get("name"), name))
        k = key_of(group, plural, ns, name)
        cur = STORE.get(k)
        if cur is None:
            return not_found(group, plural, name)
        rv = body.get("metadata", {}).get("resourceVersion")
        if rv and rv != cur["metadata"]["resourceVersion"]:
            return self.conflict(group, plural, name)
        new = copy.deepcopy(body)
        for f in ("uid", "creationTimestamp"):
            new["metadata"][f] = cur["metadata"][f]
        new["metadata"]["resourceVersion"] = next_rv()
        if "status" in cur:
            new["status"] = cur["status"]
        admission_record(group, plural, ns, name, cur, new)
        STORE[k] = new
        return 200, public(new)

    def conflict(self, group, plural, name):
        d = {"name": name, "kind": plural}
        if group:
            d = {"name": name, "group": group, "kind": plural}
        return status(409, "Conflict", 'Operation cannot be fulfilled on %s '
                      '"%s": the object has been modified; please apply your '
                      'changes to the latest version and try again' %
                      (gr_str(group, plural), name), d)

    def patch(self, group, version, plural, kind, ns, name, q, body, path):
        ct = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if ct != "application/merge-patch+json":
            if ct not in ("application/json-patch+json",
                          "application/strategic-merge-patch+json",
                          "application/apply-patch+yaml"):
                return status(415, "UnsupportedMediaType", "the body of the "
                              "request was in an unknown format - accepted "
                              "media types include: application/json-patch+json, "
                              "application/merge-patch+json, "
                              "application/apply-patch+yaml")
            violation("patch type not implemented by the fake", ct=ct)
            return status(415, "UnsupportedMediaType", "fake: only merge patch")
        if q.get("fieldValidation") != ["Strict"]:
            violation("write without fieldValidation=Strict", method="PATCH",
                      path=path)
        k = key_of(group, plural, ns, name)
        cur = STORE.get(k)
        if cur is None:
            return not_found(group, plural, name)
        new = merge_patch(public(cur), body)
        if "status" in (body or {}):
            violation("patch touches status", path=path)
        chk = copy.deepcopy(new)
        chk.pop("status", None)
        bad = check_body(chk, kind, group, version, name,
                         {"fieldValidation": ["Strict"]}, "PATCH", path)
        if bad:
            return bad["code"], bad
        if new["metadata"].get("name") != name:
            return status(400, "BadRequest", "name cannot change")
        for f in ("_created_at", "_gone_at", "_probed"):
            if f in cur["metadata"]:
                new["metadata"][f] = cur["metadata"][f]
        new["metadata"]["resourceVersion"] = next_rv()
        admission_record(group, plural, ns, name, cur, new)
        STORE[k] = new
        return 200, public(new)

    def delete(self, group, plural, ns, name, q):
        k = key_of(group, plural, ns, name)
        cur = STORE.get(k)
        if cur is None:
            return not_found(group, plural, name)
        md = cur["metadata"]
        if plural == "pods":
            g = q.get("gracePeriodSeconds", [None])[0]
            g = int(g) if g not in (None, "") else \
                cur["spec"].get("terminationGracePeriodSeconds", 30)
            if g == 0:
                really_delete(k)
                return 200, public(cur)
            if not md.get("deletionTimestamp"):
                md["deletionTimestamp"] = now_rfc3339()
                md["deletionGracePeriodSeconds"] = g
                md["_gone_at"] = time.time() + min(g, ARGS.grace_cap)
                md["resourceVersion"] = next_rv()
                stop_proc(k)
            return 200, public(cur)
        if plural == "persistentvolumeclaims" and pod_uses_claim(ns, name):
            md["deletionTimestamp"] = now_rfc3339()
            md["finalizers"] = ["kubernetes.io/pvc-protection"]
            md["resourceVersion"] = next_rv()
            return 200, public(cur)
        admission_record(group, plural, ns, name, cur, None, "DELETE")
        really_delete(k)
        if plural in DELETE_RETURNS_STATUS:
            d = {"name": name, "kind": plural, "uid": md["uid"]}
            if group:
                d = {"name": name, "group": group, "kind": plural,
                     "uid": md["uid"]}
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Success", "details": d}
        return 200, public(cur)

    def scale(self, method, ns, name, q, body, raw):
        k = key_of("apps", "deployments", ns, name)
        d = STORE.get(k)
        if d is None:
            return not_found("apps", "deployments", name)
        if method == "PATCH":
            ct = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if ct != "application/merge-patch+json":
                return status(415, "UnsupportedMediaType", "the body of the "
                              "request was in an unknown format - accepted "
                              "media types include: application/json-patch+json, "
                              "application/merge-patch+json, "
                              "application/apply-patch+yaml")
            if q.get("fieldValidation") != ["Strict"]:
                violation("write without fieldValidation=Strict",
                          method="PATCH", path=self.path)
            cur = self.scale_obj(d)
            new = merge_patch(cur, body)
            new.pop("status", None)
            bad = check_body(new, "Scale", "autoscaling", "v1", name,
                             {"fieldValidation": ["Strict"]}, "PATCH", self.path)
            if bad:
                return bad["code"], bad
            d["spec"]["replicas"] = new.get("spec", {}).get("replicas", 0)
            d["metadata"]["resourceVersion"] = next_rv()
        elif method == "PUT":
            bad = check_body(body, "Scale", "autoscaling", "v1", name, q, "PUT",
                             self.path)
            if bad:
                return bad["code"], bad
            rv = body.get("metadata", {}).get("resourceVersion")
            if rv and rv != d["metadata"]["resourceVersion"]:
                return self.conflict("apps", "deployments", name)
            d["spec"]["replicas"] = body.get("spec", {}).get("replicas", 0)
            d["metadata"]["resourceVersion"] = next_rv()
        elif method != "GET":
            return status(405, "MethodNotAllowed", "not allowed")
        return 200, self.scale_obj(d)

    @staticmethod
    def scale_obj(d):
        md = d["metadata"]
        sel = ",".join("%s=%s" % kv for kv in
                       sorted(d["spec"]["selector"].get("matchLabels", {}).items()))
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {k: md[k] for k in ("name", "namespace", "uid",
                                                "resourceVersion",
                                                "creationTimestamp")},
                "spec": {"replicas": d["spec"].get("replicas", 1)},
                "status": {"replicas": d.get("status", {}).get("replicas", 0),
                           "selector": sel}}


def seed(path):
    """Loads objects (JSON or multi-doc YAML) as if created, validated."""
    text = open(path).read()
    docs = []
    if path.endswith(".json"):
        d = json.loads(text)
        docs = d.get("items", [d]) if d.get("kind", "").endswith("List") else [d]
    else:
        import yaml  # python3-yaml (deps/k8s.txt)
        docs = [d for d in yaml.safe_load_all(text) if d]
    for d in docs:
        av = d.get("apiVersion", "v1")
        group = av.split("/")[0] if "/" in av else ""
        plural = [p for (g, p), (_, k, _) in RES.items()
                  if g == group and k == d.get("kind")]
        if not plural:
            continue
        plural = plural[0]
        ns = d.get("metadata", {}).get("namespace") if RES[(group, plural)][2] \
            else None
        if RES[(group, plural)][2] and not ns:
            ns = "default"
        bad = check_body(d, d["kind"], group, "v1", d["metadata"].get("name"),
                         {"fieldValidation": ["Strict"]}, "SEED", path)
        if bad:
            continue
        with LOCK:
            obj = finish_create(group, plural, ns, copy.deepcopy(d))
            STORE[key_of(group, plural, ns, d["metadata"]["name"])] = obj


# ---- watch (list-then-watch clients), request counting, bulk objects ----
# GET <collection>?watch=1[&resourceVersion=RV][&allowWatchBookmarks=true]
# [&timeoutSeconds=N][&labelSelector=...] streams (chunked) one JSON event
# a line: ADDED/MODIFIED/DELETED {"type","object"}, BOOKMARK (object holds
# only metadata.resourceVersion), and for a resourceVersion older than the
# compaction floor a single ERROR event with a 410 Expired Status, as the
# real server does. Events are found by comparing resourceVersions in the
# store every WATCH_TICK s (deletions through a tombstone list), so every
# write path of this server is covered without hooks in each.
# Control: watch-drop {} closes every open watch; compact {} makes every
# resourceVersion seen so far too old (410); counts {"reset":bool}: API
# requests and response bytes since the last reset (watch streams count
# one request and every byte sent); bulk {"ns","pod","count"} copies a
# sandbox pod and its claim count times (new ids, sessions, IPs) as
# synthetic objects the kubelet leaves alone (a scale benchmark).
WATCH = {"floor": 0, "gen": 0, "open": 0}
WATCH_TICK = 0.05
TOMBS = []          # [delete rv, key, last object] (bounded)
COUNTS = {"requests": 0, "bytes": 0, "watches": 0}
SYNTHETIC = set()   # pod keys the kubelet leaves alone


def count_api(n, requests=1):
    with LOCK:
        COUNTS["requests"] += requests
        COUNTS["bytes"] += n


def watch_tombstone(k, obj):
    if obj is None:
        return
    TOMBS.append([int(next_rv()), k, public(obj)])
    del TOMBS[:-20000]


def op_watch_drop(body):
    WATCH["gen"] += 1
    return 200, {"ok": True, "open": WATCH["open"]}


def op_compact(body):
    WATCH["floor"] = RV[0] + 1
    return 200, {"ok": True, "floor": WATCH["floor"]}


def op_counts(body):
    out = dict(COUNTS)
    out["open_watches"] = WATCH["open"]
    if body.get("reset"):
        COUNTS.update(requests=0, bytes=0, watches=0)
    return 200, out


def op_bulk(body):
    ns, name, n = body.get("ns", ""), body.get("pod", ""), int(body.get("count", 0))
    pod = STORE.get(key_of("", "pods", ns, name))
    if pod is None:
        return 404, {"error": "no such pod"}
    sid = pod["metadata"].get("labels", {}).get("sandbox.dev/id", "")
    if len(sid) < 8:
        return 400, {"error": "pod has no sandbox id"}
    # Its claims and its policy (the record) go with it.
    pvcs = [(k, o) for k, o in STORE.items()
            if k[1] in ("persistentvolumeclaims", "networkpolicies")
            and k[2] == ns and o["metadata"].get("labels", {})
            .get("sandbox.dev/id") == sid]
    made = 0
    for i in range(n):
        nid = sid[:-7] + "b%06d" % i
        for k, o in [(key_of("", "pods", ns, name), pod)] + pvcs:
            txt = json.dumps(o).replace(sid, nid)
            c = json.loads(txt)
            md = c["metadata"]
            md["uid"] = str(uuid.uuid4())
            md["resourceVersion"] = next_rv()
            ann = md.get("annotations", {})
            lab = ann.get("sandbox.dev/labels")
            if lab:
                ann["sandbox.dev/labels"] = re.sub(
                    r'("session":")[^"]*', r"\g<1>bulk-%06d" % i, lab)
            nk = key_of(k[0], k[1], ns, md["name"])
            if nk in STORE:
                continue
            if k[1] == "pods":
                ip = "127.%d.%d.%d" % (100 + i // 65536, (i // 256) % 256, i % 256)
                c["status"]["podIP"] = ip
                c["status"]["podIPs"] = [{"ip": ip}]
                SYNTHETIC.add(nk)
            STORE[nk] = c
            made += 1
    return 200, {"ok": True, "made": made}


WATCH_OPS = {"watch-drop": op_watch_drop, "compact": op_compact,
             "counts": op_counts, "bulk": op_bulk}


def watch_match(k, o, group, plural, ns, reqs):
    return k[0] == group and k[1] == plural and (ns is None or k[2] == ns) \
        and sel_match(reqs, o.get("metadata", {}).get("labels"))


def watch_event(typ, o):
    return (json.dumps({"type": typ, "object": o}) + "\n").encode()


def watch_stream(h, path, q):
    m = PATH_RE.match(path)
    if not m or m.group("name") or m.group("sub") or \
            (m.group("g") or "", m.group("res")) not in RES:
        return count_api(h.send_json(*status(404, "NotFound", "the server "
                         "could not find the requested resource")))
    group, plural, ns = m.group("g") or "", m.group("res"), m.group("ns")
    try:
        reqs = parse_selector(q.get("labelSelector", [""])[0])
        rv = int(q.get("resourceVersion", ["0"])[0] or 0)
        tmo = float(q.get("timeoutSeconds", ["300"])[0] or 300)
    except ValueError as e:
        return count_api(h.send_json(*status(400, "BadRequest", str(e))))
    bookmarks = q.get("allowWatchBookmarks", [""])[0] == "true"
    kind = RES[(group, plural)][1]
    av = (group + "/v1") if group else "v1"
    with LOCK:
        LOG.append(["GET", h.path, 200, "watch"])
        COUNTS["watches"] += 1
        WATCH["open"] += 1
        gen = WATCH["gen"]
    sent = 0
    try:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

        def emit(data):
            h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            h.wfile.flush()
            return len(data)
        with LOCK:
            if rv and rv < WATCH["floor"]:
                _, st = status(410, "Expired", "too old resource version: "
                               "%d (%d)" % (rv, WATCH["floor"]))
                out = [watch_event("ERROR", st)]
                known, end = None, 0
            else:
                known, out = {}, []
                for k, o in STORE.items():
                    if not watch_match(k, o, group, plural, ns, reqs):
                        continue
                    orv = int(o["metadata"].get("resourceVersion", "0"))
                    if rv and orv <= rv:
                        known[k] = (orv, public(o))
                for drv, k, o in TOMBS:
                    if rv and drv > rv and watch_match(k, o, group, plural,
                                                       ns, reqs):
                        o = dict(o, kind=kind, apiVersion=av)
                        out.append(watch_event("DELETED", o))
                end = time.time() + max(0.0, min(tmo, 3600))
        for data in out:
            sent += emit(data)
        last_bm = time.time()
        while known is not None and time.time() < end and \
                WATCH["gen"] == gen:
            out = []
            with LOCK:
                seen = set()
                for k, o in STORE.items():
                    if not watch_match(k, o, group, plural, ns, reqs):
                        continue
                    seen.add(k)
                    orv = int(o["metadata"].get("resourceVersion", "0"))
                    was = known.get(k)
                    if was is None or was[0] != orv:
                        po = public(o)
                        po.setdefault("kind", kind)
                        po.setdefault("apiVersion", av)
                        known[k] = (orv, po)
                        out.append(watch_event("ADDED" if was is None
                                               else "MODIFIED", po))
                for k in [k for k in known if k not in seen]:
                    po = known.pop(k)[1]
                    po.setdefault("kind", kind)
                    po.setdefault("apiVersion", av)
                    po["metadata"]["resourceVersion"] = str(RV[0])
                    out.append(watch_event("DELETED", po))
                if bookmarks and time.time() - last_bm >= 1.0:
                    last_bm = time.time()
                    out.append(watch_event("BOOKMARK", {
                        "kind": kind, "apiVersion": av,
                        "metadata": {"resourceVersion": str(RV[0])}}))
            for data in out:
                sent += emit(data)
            time.sleep(WATCH_TICK)
        if WATCH["gen"] != gen:
            # dropped: no terminating chunk, the connection just goes
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        else:
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
    except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
        h.close_connection = True
    finally:
        with LOCK:
            WATCH["open"] -= 1
        count_api(sent)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--ca", required=True, help="verifies client certificates")
    ap.add_argument("--tokens", required=True, help="file of valid tokens")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--violations", required=True)
    ap.add_argument("--agent", help="sandbox agent binary for sandbox pods")
    ap.add_argument("--pod-cmd", help="command run for Deployment pods")
    ap.add_argument("--pod-cmd-port", type=int, default=0,
                    help="Deployment pods are Ready when this port accepts")
    ap.add_argument("--seed", action="append", default=[])
    ap.add_argument("--pending-delay", type=float, default=0.2)
    ap.add_argument("--grace-cap", type=float, default=0.3)
    ap.add_argument("--ip-offset", type=int, default=0)
    ap.add_argument("--page", type=int, default=500,
                    help="largest page a list returns (tests pagination)")
    ap.add_argument("-v", "--verbose", action="store_true")
    ARGS = ap.parse_args()
    os.makedirs(ARGS.workdir, exist_ok=True)
    open(ARGS.violations, "a").close()
    for s in ARGS.seed:
        seed(s)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(ARGS.cert, ARGS.key)
    ctx.load_verify_locations(ARGS.ca)
    ctx.verify_mode = ssl.CERT_OPTIONAL
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    srv.daemon_threads = True
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=kubelet_loop, daemon=True).start()

    def bye(*_):
        for k in list(PROCS):
            stop_proc(k)
        os._exit(0)
    signal.signal(signal.SIGTERM, bye)
    signal.signal(signal.SIGINT, bye)
    sys.stderr.write("fake-apiserver listening on 127.0.0.1:%d\n" % ARGS.port)
    srv.serve_forever()


if __name__ == "__main__":
    main()
