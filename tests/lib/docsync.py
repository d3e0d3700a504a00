#!/usr/bin/env python3
"""docsync.py BIN DOC [PREFIX]: the configuration table in DOC (the first
Markdown table whose header starts '| key | type | default') must match
`BIN --print-docs` row for row. With PREFIX, only the keys starting with it
are compared (a document that covers one section of a larger table).
Prints the differing rows and exits 1 when they differ."""
import subprocess
import sys


def doc_table(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("| key | type | default"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            return lines[i + 2:j]
    return []


def main():
    binary, doc = sys.argv[1], sys.argv[2]
    prefix = "| `" + sys.argv[3] if len(sys.argv) > 3 else "| `"
    out = subprocess.run([binary, "--print-docs"], capture_output=True,
                         text=True, check=True).stdout.split("\n")
    ref = [l for l in out[2:] if l.startswith(prefix)]
    have = [l for l in doc_table(doc) if l.startswith(prefix)]
    bad = 0
    for l in have:
        if l not in ref:
            print("stale in %s: %s" % (doc, l[:160]))
            bad = 1
    for l in ref:
        if l not in have:
            print("missing from %s: %s" % (doc, l[:160]))
            bad = 1
    if not ref:
        print("%s --print-docs printed no rows" % binary)
        bad = 1
    sys.exit(bad)


if __name__ == "__main__":
    main()
