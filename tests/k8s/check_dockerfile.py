#!/usr/bin/env python3
"""check_dockerfile.py - images/Dockerfile without a container engine.

The stages: a build stage, a target per binary (orchestrator, egress-proxy,
gateway, agent), each FROM an image or an earlier stage. The packages:
every apt-get install installs only a list under deps/ (the install
script's, scripts/install-deps.sh), copied in by the same stage, never a
name written in the Dockerfile; every package in those lists is known to
apt. Every COPY source exists: a path of the repository, or with --from a
file the named earlier stage builds (a target of its make line, which the
Makefile knows and this tree has built under BIN). The four old per-image
Dockerfiles are gone. Prints "ok ..." / "not ok ..." lines; exit 1 if any
check failed.
Environment: DOCKERFILE and CHECK_DEPS (an altered copy of the Dockerfile
or of deps/: test 60 shows each check refuses what it should), BIN (the
build directory, default TOP/build), CHECK_NO_TOOLS=1 (skips the apt-cache
and make calls: test 60's altered copies that do not aim at them).
"""
import os
import re
import shlex
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPS = os.environ.get("CHECK_DEPS", os.path.join(TOP, "deps"))
TOOLS = os.environ.get("CHECK_NO_TOOLS") != "1"
BIN = os.environ.get("BIN", os.path.join(TOP, "build"))
TARGETS = ("orchestrator", "egress-proxy", "gateway", "agent")
LIST_RE = re.compile(r"^\$\(sed 's/#\.\*//' (/tmp/deps/[A-Za-z0-9_-]+\.txt)\)$")
nfail = 0


def ok(cond, what, why=""):
    global nfail
    if cond:
        print("ok " + what)
    else:
        nfail += 1
        print("not ok " + what + (" -- " + why if why else ""))


def instructions(path):
    """(line number, KEYWORD, argument text) with continuations joined."""
    out, buf, start = [], "", 0
    with open(path) as f:
        for n, line in enumerate(f, 1):
            s = line.rstrip("\n")
            if not buf and (not s.strip() or s.lstrip().startswith("#")):
                continue
            if buf and s.lstrip().startswith("#"):
                continue
            if not buf:
                start = n
            if s.endswith("\\"):
                buf += s[:-1] + " "
                continue
            buf += s
            kw, _, rest = buf.strip().partition(" ")
            out.append((start, kw.upper(), rest.strip()))
            buf = ""
    return out


def apt_unknown(pkgs):
    """The packages of pkgs apt has no candidate for (one apt-cache call)."""
    out = subprocess.run(["apt-cache", "policy"] + pkgs, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    known, name = set(), None
    for line in out.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            name = line[:-1]
        elif name and line.strip().startswith("Candidate:") and "(none)" not in line:
            known.add(name)
    return [p for p in pkgs if p not in known]


def list_packages(path):
    with open(path) as f:
        return [p for line in f for p in line.split("#", 1)[0].split()]


def main():
    path = os.environ.get("DOCKERFILE", os.path.join(TOP, "images", "Dockerfile"))
    if not os.path.exists(path):
        ok(False, "images/Dockerfile exists")
        return 1
    stages = []     # dicts: name, base, line, copies (dst -> src), make targets, workdir
    cur = None
    for n, kw, arg in instructions(path):
        if kw == "FROM":
            m = re.match(r"^(\S+)(?:\s+AS\s+(\S+))?$", arg, re.I)
            if not m:
                ok(False, "line %d: FROM parses" % n, arg)
                continue
            base, name = m.group(1), m.group(2) or ""
            names = [s["name"] for s in stages]
            ok(name not in names, "line %d: stage name %s is new" % (n, name or "(none)"))
            ok(base in names or base == "scratch" or ":" in base,
               "line %d: FROM %s is an earlier stage or a tagged image" % (n, base))
            cur = {"name": name, "base": base, "line": n, "files": set(), "make": [],
                   "ctx": False, "workdir": "/"}
            if base in names:
                prev = next(s for s in stages if s["name"] == base)
                cur["files"] |= prev["files"]
            stages.append(cur)
            continue
        if cur is None:
            ok(False, "line %d: %s before any FROM" % (n, kw))
            continue
        if kw == "WORKDIR":
            cur["workdir"] = arg
        elif kw == "COPY":
            words = shlex.split(arg)
            frm = None
            if words and words[0].startswith("--from="):
                frm = words.pop(0)[len("--from="):]
            srcs, dst = words[:-1], words[-1]
            for src in srcs:
                if frm is None:
                    if src == ".":
                        cur["ctx"] = True
                        continue
                    where = os.path.join(DEPS, src[len("deps/"):]) if src.startswith("deps/") \
                        else os.path.join(TOP, src)
                    ok(os.path.exists(where),
                       "line %d: COPY %s: in the repository" % (n, src))
                    cur["files"].add(dst if not dst.endswith("/") else dst + os.path.basename(src))
                    continue
                st = next((s for s in stages[:-1] if s["name"] == frm), None)
                ok(st is not None, "line %d: COPY --from=%s: an earlier stage" % (n, frm))
                if st is None:
                    continue
                rel = os.path.relpath(src, st["workdir"]) if src.startswith("/") else src
                built = rel in st["make"]
                ok(built, "line %d: COPY --from=%s %s: a target its make line builds" % (n, frm, src),
                   "targets: " + " ".join(st["make"]))
                if built:
                    ok(os.path.exists(os.path.join(BIN, os.path.relpath(rel, "build"))),
                       "line %d: %s: built by this tree's make" % (n, rel))
        elif kw == "RUN":
            if "apt-get install" in arg:
                tail = arg.split("apt-get install", 1)[1].split("&&", 1)[0].split()
                words = [w for w in tail if not w.startswith("-")]
                joined = " ".join(words)
                m = LIST_RE.match(joined)
                ok(m is not None, "line %d: apt-get installs a deps/ list only" % n,
                   "names packages itself: " + joined)
                if m:
                    lst = m.group(1)
                    ok(lst in cur["files"], "line %d: %s copied in from deps/ by this stage" % (n, lst))
                    repo = os.path.join(DEPS, os.path.basename(lst))
                    if os.path.exists(repo) and TOOLS:
                        pk = list_packages(repo)
                        bad = apt_unknown(pk) if pk else []
                        ok(pk and not bad, "line %d: deps/%s: %d packages, all known to apt" %
                           (n, os.path.basename(lst), len(pk)), "unknown: " + " ".join(bad))
            m = re.search(r"\bmake\b(.*?)(?:&&|$)", arg)
            if m and cur["ctx"]:
                targets = [w for w in m.group(1).split() if w.startswith("build/")]
                cur["make"] += targets
                for t in targets if TOOLS else []:
                    r = subprocess.run(["make", "-C", TOP, "-n", "B=build", t],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    ok(r.returncode == 0, "line %d: make knows %s" % (n, t))
    names = [s["name"] for s in stages]
    for t in TARGETS:
        ok(t in names, "target %s" % t)
    for old in TARGETS:
        d = "gateway" if old == "gateway" else old
        ok(not os.path.exists(os.path.join(TOP, "images", d, "Dockerfile")),
           "images/%s/Dockerfile is gone (one Dockerfile)" % d)
    print("dockerfile checked: %d stages" % len(stages))
    return 1 if nfail else 0


sys.exit(main())
