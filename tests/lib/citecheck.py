#!/usr/bin/env python3
"""citecheck.py: every file a source comment or a doc names must exist.

Scans the tracked sources (C, headers, shell, Python, make fragments, Lua)
and the Markdown docs for names that look like files of this repository
(`dir/name.ext` or `name.ext` with a source or doc extension) and prints
each one that no tracked file matches. A bare name matches any tracked file
with that basename; a path matches relative to the repository root, to the
citing file's directory, or as a tail of a tracked path. Exit 1 if any.

    python3 tests/lib/citecheck.py [ROOT]
"""
import os, re, subprocess, sys

root = sys.argv[1] if len(sys.argv) > 1 else '.'
files = subprocess.check_output(['git', '-C', root, 'ls-files'], text=True).split()
tracked = set(files)
bases = {os.path.basename(f) for f in files}
EXT = r'(?:c|h|md|sh|py|mk|lua|mjs|yaml|yml)'
# a name: optional dirs, a basename with a letter, an extension; not part of a URL or a longer word
NAME = re.compile(r'(?<![\w./$@-])((?:[\w.-]+/)*[A-Za-z_][\w.-]*\.' + EXT + r')(?![\w/-])')
# Names that are not repository files on purpose: files the system or
# the run creates (make run's var/*.yaml, a test's temp scripts, example
# config names in prose) and a dotted config key that looks like a C file.
IGNORE = {
    'a.b.c', 'admin.py', 'proxy.yaml', 'conf.yaml', 'CONFIG.yaml',
    'orchestrator.yaml', 'var/egress-proxy.yaml', 'var/orchestrator.yaml',
}
SKIP_DIRS = ('tests/fuzz/corpus/', 'tests/mcp/node_modules/', 'deps/')

def comment_text(path, text):
    """The parts of a source file a reader takes as prose: comments."""
    ext = os.path.splitext(path)[1]
    if ext in ('.c', '.h'):
        return '\n'.join(re.findall(r'/\*.*?\*/|//[^\n]*', text, re.S))
    if ext == '.lua':
        return '\n'.join(re.findall(r'--[^\n]*', text))
    if ext in ('.sh', '.py', '.mk', '.yaml', '.yml') or os.path.basename(path) == 'Makefile':
        return '\n'.join(l for l in text.split('\n') if l.lstrip().startswith('#'))
    return text  # Markdown: all of it

def exists(name, citing):
    if name in IGNORE or name.startswith(('/', 'http')):
        return True
    if name.endswith('.h') and (os.path.exists('/usr/include/' + name) or
                                os.path.exists('/usr/include/x86_64-linux-gnu/' + name)):
        return True  # a system header
    shared = os.environ.get('K8S_SHARED_DIR') or os.path.join(root, '..', 'shared', 'k8s')
    for n in (name, name.replace('../shared/k8s/', '')):
        if os.path.exists(os.path.join(shared, n)):
            return True  # the shared Kubernetes schemas and validator beside the repo
    if '/' not in name:
        return name in bases
    d = os.path.dirname(citing)
    cands = {os.path.normpath(name), os.path.normpath(os.path.join(d, name))}
    if any(c in tracked for c in cands):
        return True
    if any(f.endswith('/' + name) for f in files):
        return True
    # a directory-like path inside the repository (docs name folders too)
    return os.path.exists(os.path.join(root, name)) or os.path.exists(os.path.join(root, d, name))

bad = []
for f in files:
    if f.startswith(SKIP_DIRS):
        continue
    ext = os.path.splitext(f)[1]
    if ext not in ('.c', '.h', '.sh', '.py', '.mk', '.lua', '.md', '.yaml', '.yml') and os.path.basename(f) != 'Makefile':
        continue
    try:
        text = open(os.path.join(root, f), encoding='utf-8', errors='replace').read()
    except OSError:
        continue
    for m in NAME.finditer(comment_text(f, text)):
        name = m.group(1).rstrip('.')
        if not exists(name, f):
            bad.append((f, name))
for f, name in sorted(set(bad)):
    print(f'{f}: cites {name}, which is not in the repository')
sys.exit(1 if bad else 0)
