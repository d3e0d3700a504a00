#!/usr/bin/env python3
"""netpol_eval.py - who may connect to whom under a set of NetworkPolicies
(networking.k8s.io/v1 semantics, the subset this project writes).

  netpol_eval.py POLICY_FILE... < CHECKS

POLICY_FILE: YAML (multi-document) or JSON; every NetworkPolicy in it
counts, other kinds are skipped. CHECKS: one check a line,
  expect|from|to|port[/proto]|name
with expect "allow" or "deny"; from/to a pod "NS:k=v,k=v" (namespace and
labels) or "ip:A.B.C.D" (outside the cluster). Prints "ok NAME" or
"not ok NAME (...)" per check (tests/run format); exit 1 if any failed.

A connection is allowed when the source's egress and the destination's
ingress both allow it. A pod is isolated for a direction when a policy in
its namespace selects it with that type in policyTypes; then some rule of
such a policy must match: a rule without "to"/"from" matches every peer,
one without "ports" every port; a peer with podSelector only selects pods
of the policy's namespace, with namespaceSelector too (or alone) pods of
the namespaces it selects (namespaces carry kubernetes.io/metadata.name);
ipBlock matches addresses outside the cluster only (cidr minus except).
matchExpressions and endPort are refused (not used here): unknown is an
error, not an allow.
"""
import ipaddress
import json
import sys

import yaml  # python3-yaml (deps/k8s.txt)


def load(paths):
    pols = []
    for p in paths:
        text = open(p).read()
        docs = [json.loads(text)] if p.endswith(".json") else \
            list(yaml.safe_load_all(text))
        for d in docs:
            if d and d.get("kind") == "NetworkPolicy":
                pols.append(d)
    return pols


def sel_match(sel, labels):
    if sel is None:
        return False
    if set(sel) - {"matchLabels"}:
        raise ValueError("unsupported selector %r" % sel)
    return all(labels.get(k) == v for k, v in (sel.get("matchLabels") or {}).items())


def parse_end(s):
    if s.startswith("ip:"):
        return {"ip": s[3:]}
    ns, _, lbl = s.partition(":")
    labels = dict(kv.split("=", 1) for kv in lbl.split(",") if kv)
    return {"ns": ns, "labels": labels}


def peer_match(peer, pol_ns, end):
    if set(peer) - {"podSelector", "namespaceSelector", "ipBlock"}:
        raise ValueError("unsupported peer %r" % peer)
    if "ipBlock" in peer:
        if "ip" not in end:
            return False
        ip = ipaddress.ip_address(end["ip"])
        b = peer["ipBlock"]
        net = ipaddress.ip_network(b["cidr"])
        if ip.version != net.version or ip not in net:
            return False
        return not any(ip.version == ipaddress.ip_network(x).version and
                       ip in ipaddress.ip_network(x) for x in b.get("except", []))
    if "ip" in end:
        return False
    if "namespaceSelector" in peer:
        if not sel_match(peer["namespaceSelector"],
                         {"kubernetes.io/metadata.name": end["ns"]}):
            return False
    elif end["ns"] != pol_ns:
        return False
    if "podSelector" in peer:
        return sel_match(peer["podSelector"], end["labels"])
    return True


def port_match(ports, port, proto):
    if not ports:
        return True
    for p in ports:
        if set(p) - {"protocol", "port"}:
            raise ValueError("unsupported port %r" % p)
        if p.get("protocol", "TCP") == proto and ("port" not in p or p["port"] == port):
            return True
    return False


def allowed(pols, me, other, port, proto, direction):
    """direction "Egress": me -> other; "Ingress": other -> me."""
    if "ip" in me:
        return True  # outside the cluster: no policy applies
    key, peers_key = ("egress", "to") if direction == "Egress" else ("ingress", "from")
    isolated = False
    for p in pols:
        md, spec = p["metadata"], p["spec"]
        if md.get("namespace") != me["ns"] or not sel_match(spec["podSelector"],
                                                           me["labels"]):
            continue
        if direction not in spec.get("policyTypes", ["Ingress"]):
            continue
        isolated = True
        for rule in spec.get(key) or []:
            peers = rule.get(peers_key)
            if peers is not None and not any(peer_match(x, md["namespace"], other)
                                             for x in peers):
                continue
            if port_match(rule.get("ports"), port, proto):
                return True
    return not isolated


def main():
    pols = load(sys.argv[1:])
    bad = 0
    for line in sys.stdin:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        expect, src, dst, pp, name = line.split("|", 4)
        port, _, proto = pp.partition("/")
        a, b = parse_end(src), parse_end(dst)
        eg = allowed(pols, a, b, int(port), proto or "TCP", "Egress")
        ing = allowed(pols, b, a, int(port), proto or "TCP", "Ingress")
        got = "allow" if eg and ing else "deny"
        if got == expect:
            print("ok %s" % name)
        else:
            bad += 1
            print("not ok %s (got %s: egress %s, ingress %s)" % (
                name, got, "allowed" if eg else "denied",
                "allowed" if ing else "denied"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
