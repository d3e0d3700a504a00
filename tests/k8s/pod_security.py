#!/usr/bin/env python3
"""pod_security.py - the Pod Security Standards' baseline and restricted
levels (Kubernetes Pod Security Admission, "latest" as of 1.30-1.35), as a
check of one pod, for the fake API server (which enforces a namespace's
pod-security.kubernetes.io/enforce label on pod creates, as the real
admission plugin does) and tests/k8s/check_manifests.py (the Deployments'
pod templates against their namespace's level).

The controls, from https://kubernetes.io/docs/concepts/security/pod-security-standards/:
  baseline    HostProcess, host namespaces, privileged containers, added
              capabilities beyond the baseline set, hostPath volumes, host
              ports, AppArmor unconfined, SELinux type/user/role, /proc mount
              type, seccomp Unconfined, unsafe sysctls
  restricted  baseline, plus: volume types, allowPrivilegeEscalation false,
              runAsNonRoot true, runAsUser not 0, seccomp RuntimeDefault or
              Localhost, capabilities drop ALL and add at most
              NET_BIND_SERVICE

  violations(pod, level) -> ["control: detail", ...] (empty: allowed)
CLI: pod_security.py LEVEL POD.json  -> one violation a line, exit 1 if any.
"""
import json
import sys

BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL",
                 "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID",
                 "SYS_CHROOT"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
                "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t",
                 "container_engine_t"}
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                      "persistentVolumeClaim", "projected", "secret"}
LEVELS = ("privileged", "baseline", "restricted")


def containers(spec):
    for f in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(f) or []:
            yield f, c


def baseline(pod):
    md, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    psc = spec.get("securityContext") or {}
    out = []
    ctrs = list(containers(spec))
    if (psc.get("windowsOptions") or {}).get("hostProcess") or any(
            ((c.get("securityContext") or {}).get("windowsOptions") or {}).get("hostProcess")
            for _, c in ctrs):
        out.append("hostProcess: true")
    for f in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(f):
            out.append("host namespaces: %s=true" % f)
    for f, c in ctrs:
        sc = c.get("securityContext") or {}
        nm = "%s %s" % (f, c.get("name"))
        if sc.get("privileged"):
            out.append("privileged: %s" % nm)
        bad = [x for x in (sc.get("capabilities") or {}).get("add") or []
               if x not in BASELINE_CAPS]
        if bad:
            out.append("capabilities: %s adds %s" % (nm, ",".join(bad)))
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                out.append("hostPort: %s %d" % (nm, p["hostPort"]))
        ap = (sc.get("appArmorProfile") or {}).get("type")
        if ap is not None and ap not in ("RuntimeDefault", "Localhost"):
            out.append("appArmorProfile: %s %s" % (nm, ap))
        out += selinux(sc, nm)
        if sc.get("procMount", "Default") != "Default":
            out.append("procMount: %s %s" % (nm, sc["procMount"]))
        if (sc.get("seccompProfile") or {}).get("type") == "Unconfined":
            out.append("seccompProfile: %s Unconfined" % nm)
    for v in spec.get("volumes") or []:
        if "hostPath" in v:
            out.append("hostPath volume: %s" % v.get("name"))
    for k, v in (md.get("annotations") or {}).items():
        if k.startswith("container.apparmor.security.beta.kubernetes.io/") and \
                v != "runtime/default" and not v.startswith("localhost/"):
            out.append("appArmor annotation: %s=%s" % (k, v))
    ap = (psc.get("appArmorProfile") or {}).get("type")
    if ap is not None and ap not in ("RuntimeDefault", "Localhost"):
        out.append("appArmorProfile: pod %s" % ap)
    out += selinux(psc, "pod")
    if (psc.get("seccompProfile") or {}).get("type") == "Unconfined":
        out.append("seccompProfile: pod Unconfined")
    for s in psc.get("sysctls") or []:
        if s.get("name") not in SAFE_SYSCTLS:
            out.append("sysctls: %s" % s.get("name"))
    return out


def selinux(sc, nm):
    se = sc.get("seLinuxOptions") or {}
    out = []
    if se.get("type", "") not in SELINUX_TYPES:
        out.append("seLinuxOptions: %s type %s" % (nm, se["type"]))
    for f in ("user", "role"):
        if se.get(f):
            out.append("seLinuxOptions: %s %s set" % (nm, f))
    return out


def restricted(pod):
    spec = pod.get("spec") or {}
    psc = spec.get("securityContext") or {}
    out = baseline(pod)
    for v in spec.get("volumes") or []:
        kinds = [k for k in v if k != "name"]
        if not kinds or any(k not in RESTRICTED_VOLUMES for k in kinds):
            out.append("volume types: %s is %s" % (v.get("name"), ",".join(kinds)))
    pod_nonroot = psc.get("runAsNonRoot") is True
    pod_seccomp = (psc.get("seccompProfile") or {}).get("type") in ("RuntimeDefault",
                                                                   "Localhost")
    if psc.get("runAsNonRoot") is False:
        out.append("runAsNonRoot: pod false")
    if psc.get("runAsUser") == 0:
        out.append("runAsUser: pod 0")
    for f, c in containers(spec):
        sc = c.get("securityContext") or {}
        nm = "%s %s" % (f, c.get("name"))
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append("allowPrivilegeEscalation: %s not false" % nm)
        if sc.get("runAsNonRoot") is False or (not pod_nonroot and
                                               sc.get("runAsNonRoot") is not True):
            out.append("runAsNonRoot: %s not true" % nm)
        if sc.get("runAsUser") == 0:
            out.append("runAsUser: %s 0" % nm)
        st = (sc.get("seccompProfile") or {}).get("type")
        if not (st in ("RuntimeDefault", "Localhost") or (st is None and pod_seccomp)):
            out.append("seccompProfile: %s not RuntimeDefault or Localhost" % nm)
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            out.append("capabilities: %s does not drop ALL" % nm)
        bad = [x for x in caps.get("add") or [] if x != "NET_BIND_SERVICE"]
        if bad:
            out.append("capabilities: %s adds %s" % (nm, ",".join(bad)))
    return out


def violations(pod, level):
    if level not in LEVELS:
        raise ValueError("unknown Pod Security level %r" % level)
    if level == "privileged":
        return []
    return baseline(pod) if level == "baseline" else restricted(pod)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: pod_security.py LEVEL POD.json\n")
        return 2
    v = violations(json.load(open(argv[2])), argv[1])
    for x in v:
        print(x)
    return 1 if v else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
