#!/usr/bin/env python3
"""layerck.py: the edges tests/lib/layers.sh cannot see in symbols alone.

    python3 tests/lib/layerck.py RULE ROOT BUILD PART...

RULE is one of
  includes  no #include of a header of a higher or peer folder, and no call
            (an undefined symbol of an object) into one; the folders and
            their order are the "#layer" lines of orchestrator/module.mk
            (lowest first; folders on one line are peers)
  private   a private header (*_int.h) is included only from its own folder
  threads   no _Thread_local, thread_local or __thread (call state goes in
            an argument; a thread-local carries it past every signature)
  names     every exported symbol of an object starts with its file's base
            name and "_" (or is that name), or with the short form the
            allow list gives that file
PART is a folder of the repository (orchestrator, common, gateway, ...);
every .c/.h under it (and every BUILD/PART/**.o for calls and names) is
checked. Exceptions, each with its reason: tests/lib/layers.allow (or
$LAYERS_ALLOW), lines "RULE PATH VALUE # reason":
  include  FILE HEADER   FILE may include HEADER (a repository path)
  call     OBJ SYMBOL    the object of OBJ (its .c path) may call SYMBOL
  private  FILE HEADER   FILE may include the private HEADER
  thread   FILE -        FILE may hold thread-locals
  prefix   FILE SHORT    FILE's names may start with SHORT (a glob FILE:
                         a folder's short form, "orchestrator/runtime/local/*")
  name     FILE SYMBOL   FILE may export SYMBOL
Prints one line per violation ("INCLUDE: a.c includes b.h (layer above)"),
exits 1 if there is one, 2 on bad use.
"""
import fnmatch, os, re, subprocess, sys

RULES = ('includes', 'private', 'threads', 'names')
if len(sys.argv) < 5 or sys.argv[1] not in RULES:
    sys.stderr.write(__doc__)
    sys.exit(2)
rule, root, build, parts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
root = os.path.abspath(root)
allow_path = os.environ.get('LAYERS_ALLOW', os.path.join(root, 'tests/lib/layers.allow'))

allow = []
if os.path.exists(allow_path):
    for ln in open(allow_path):
        ln = ln.split('#', 1)[0].split()
        if len(ln) == 3:
            allow.append(tuple(ln))


def allowed(kind, path, value):
    return any(k == kind and fnmatch.fnmatch(path, p) and
               fnmatch.fnmatch(value, v) for k, p, v in allow)


def sources():
    for part in parts:
        top = os.path.join(root, part)
        if not os.path.isdir(top):
            sys.stderr.write('layerck: %s: no such folder\n' % part)
            sys.exit(2)
        for d, _, fs in os.walk(top):
            for f in sorted(fs):
                if f.endswith(('.c', '.h')):
                    yield os.path.relpath(os.path.join(d, f), root)


def live(o):
    # An object whose source is gone (a file moved or removed since the
    # last build) would speak for code that no longer exists.
    rel = os.path.relpath(o, build)
    return os.path.exists(os.path.join(root, rel[:-2] + '.c'))


def objects():
    for part in parts:
        for d, _, fs in os.walk(os.path.join(build, part)):
            for f in sorted(fs):
                if f.endswith('.o') and live(os.path.join(d, f)):
                    yield os.path.join(d, f)


def nm(args, objs):
    """{object: its symbols in nm's order} for every object of objs, from
    one nm run (-A: each line names its object; one nm per object took
    most of the check's time)."""
    objs = list(objs)
    syms = {o: [] for o in objs}
    if not objs:
        return syms
    out = subprocess.run(['nm', '-A'] + args + objs, capture_output=True,
                         text=True, check=True).stdout
    for ln in out.splitlines():
        if not ln.strip():
            continue
        o, _, rest = ln.partition(':')
        if o not in syms or not rest.strip():
            sys.stderr.write('layerck: nm: unexpected line %r\n' % ln)
            sys.exit(2)
        syms[o].append(rest.split()[-1])
    return syms


INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# -I folders the makefiles give, in their order.
IDIRS = ('orchestrator', 'common', 'netpol')


def resolve(src, name):
    """The repository path an #include "name" of src reads, or None."""
    for d in [os.path.dirname(src)] + list(IDIRS):
        p = os.path.normpath(os.path.join(d, name))
        if os.path.exists(os.path.join(root, p)):
            return p
    return None


def strip_comments(text):
    return re.sub(r'/\*.*?\*/|//[^\n]*', ' ', text, flags=re.S)


bad = []
if rule in ('includes', 'private'):
    rank = {}
    mk = open(os.path.join(root, 'orchestrator/module.mk')).read()
    for i, ln in enumerate(re.findall(r'^#layer\s+(.*)$', mk, re.M)):
        for d in ln.split():
            rank[d] = i
    for src in sources():
        text = strip_comments(open(os.path.join(root, src)).read())
        for name in INC.findall(text):
            hdr = resolve(src, name)
            if hdr is None:
                continue
            me, it = os.path.dirname(src), os.path.dirname(hdr)
            if rule == 'private':
                if (hdr.endswith('_int.h') and it != me
                        and not allowed('private', src, hdr)):
                    bad.append('PRIVATE: %s includes %s (private to %s/)'
                               % (src, hdr, it))
                continue
            if me == it or me not in rank or it not in rank:
                continue
            if rank[it] >= rank[me] and not allowed('include', src, hdr):
                bad.append('INCLUDE: %s includes %s (%s)' % (
                    src, hdr, 'a layer above' if rank[it] > rank[me]
                    else 'a peer folder'))
    if rule == 'includes':
        # Calls: an object's undefined symbol defined in a higher or peer
        # folder's object.
        objs = list(objects())
        for d in IDIRS:
            if d not in parts:
                objs += [os.path.join(dd, f) for dd, _, fs in
                         os.walk(os.path.join(build, d)) for f in fs
                         if f.endswith('.o') and
                         live(os.path.join(dd, f))]
        folder = {o: os.path.dirname(os.path.relpath(o, build)) for o in objs}
        defs = {}
        dsyms = nm(['--defined-only', '-g'], objs)
        usyms = nm(['-u'], objs)
        for o in objs:
            for s in dsyms[o]:
                defs.setdefault(s, o)
        for o in objs:
            if folder[o] not in rank:
                continue
            for s in usyms[o]:
                d = defs.get(s)
                if d is None or folder[d] == folder[o] or folder[d] not in rank:
                    continue
                if (rank[folder[d]] >= rank[folder[o]] and not
                        allowed('call', os.path.relpath(o, build)[:-2] + '.c', s)):
                    bad.append('CALL: %s calls %s of %s (%s)' % (
                        os.path.relpath(o, build), s, os.path.relpath(d, build),
                        'a layer above' if rank[folder[d]] > rank[folder[o]]
                        else 'a peer folder'))
elif rule == 'threads':
    TL = re.compile(r'\b(_Thread_local|thread_local|__thread)\b')
    for src in sources():
        text = strip_comments(open(os.path.join(root, src)).read())
        if TL.search(text) and not allowed('thread', src, '-'):
            n = text[:TL.search(text).start()].count('\n') + 1
            bad.append('THREAD: %s:%d holds a thread-local' % (src, n))
elif rule == 'names':
    objs = list(objects())
    dsyms = nm(['--defined-only', '-g'], objs)
    for o in objs:
        rel = os.path.relpath(o, build)
        src = rel[:-2] + '.c'
        base = os.path.basename(rel)[:-2]
        for s in dsyms[o]:
            if s == 'main' or s == base or s.startswith(base + '_'):
                continue
            if any(k == 'prefix' and fnmatch.fnmatch(src, p) and
                   s.startswith(v) for k, p, v in allow):
                continue
            if allowed('name', src, s):
                continue
            bad.append('NAME: %s exports %s (not %s_*)' % (src, s, base))
for b in sorted(set(bad)):
    print(b)
sys.exit(1 if bad else 0)
