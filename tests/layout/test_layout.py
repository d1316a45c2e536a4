#!/usr/bin/env python3
"""test_layout.py SOURCE_DIR -- the source tree against its picture (TAP).

docs/architecture.md, "Layers", lists the source folders lowest first, one
layer a line (folders on one line are siblings). This test reads that
block and every #include "..." of the C sources under verdict/, proto/,
agent/ and collector/, and checks:

  - every folder holding sources is in the picture, and every folder in
    the picture exists and has a README.md;
  - a file includes headers of its own folder and of the lines above its
    own in the block (the layers below it): never of a line below (a
    layer above it), never of a sibling on its own line;
  - no two modules include each other, directly or through others (no
    cycle in the graph of modules, a module being a .h/.c pair);
  - no text in the tree counts work sessions or stops, or cites an
    issue of a tracker that is not in the repo by its number.

A failure names the file, the line and the header.
"""
import os
import re
import subprocess
import sys

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
TOPS = ("verdict", "proto", "agent", "collector")
# Headers made at build time, and the folder they belong to.
GENERATED = {"parity.pb-c.h": "proto"}

n = 0
failed = 0


def ok(cond, name, diag=()):
    global n, failed
    n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, name))
    if not cond:
        failed += 1
        for line in list(diag)[:30]:
            print("# " + line)
    return cond


def read_layers():
    """The folders of the fenced block under "## Layers", a list of
    lists, lowest layer first."""
    path = os.path.join(SRC, "docs", "architecture.md")
    with open(path) as f:
        text = f.read()
    m = re.search(r"^## Layers\n(.*?)^```\n(.*?)^```", text, re.S | re.M)
    if not m:
        return None
    layers = []
    for line in m.group(2).splitlines():
        words = line.split("--")[0].split()
        if words:
            layers.append([w.rstrip("/") for w in words])
    return layers


def sources():
    """(folder, file name, path) of every .c and .h under TOPS."""
    out = []
    for top in TOPS:
        for root, dirs, files in os.walk(os.path.join(SRC, top)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith((".c", ".h")):
                    folder = os.path.relpath(root, SRC)
                    out.append((folder, name, os.path.join(root, name)))
    return out


def includes(path):
    with open(path, errors="replace") as f:
        for i, line in enumerate(f, 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if m:
                yield i, os.path.basename(m.group(1))


def check_layers(layers, files):
    rank = {}
    for r, line in enumerate(layers):
        for folder in line:
            rank[folder] = r
    folders = sorted({f for f, _, _ in files})
    missing = [f for f in folders if f not in rank]
    ok(not missing, "every folder with sources is in the picture (%d "
       "folders)" % len(folders), ["not in docs/architecture.md: " + f
                                   for f in missing])
    absent = [f for f in rank if not os.path.isdir(os.path.join(SRC, f))]
    ok(not absent, "every folder in the picture exists",
       ["no such folder: " + f for f in absent])
    no_readme = [f for f in rank if os.path.isdir(os.path.join(SRC, f)) and
                 not os.path.isfile(os.path.join(SRC, f, "README.md"))]
    ok(not no_readme, "every folder in the picture has a README.md",
       ["no README.md in " + f for f in no_readme])

    where = dict(GENERATED)
    for folder, name, _ in files:
        where[name] = folder
    bad = []
    for folder, name, path in files:
        for line, header in includes(path):
            to = where.get(header)
            if to is None or to == folder or folder not in rank or \
                    to not in rank:
                continue
            if rank[to] > rank[folder]:
                bad.append("%s/%s:%d includes %s of %s, a layer above" %
                           (folder, name, line, header, to))
            elif rank[to] == rank[folder]:
                bad.append("%s/%s:%d includes %s of its sibling %s" %
                           (folder, name, line, header, to))
    ok(not bad, "every include goes to its own folder or a layer below "
       "(%d files)" % len(files), bad)
    return where


def check_cycles(files, where):
    """Tarjan's strongly connected components over modules."""
    graph = {}
    for folder, name, path in files:
        mod = name.rsplit(".", 1)[0]
        graph.setdefault(mod, set())
        for _, header in includes(path):
            other = header.rsplit(".", 1)[0]
            if other != mod and header in where:
                graph[mod].add(other)
    index, low, stack, on, cycles = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    ok(not cycles, "no modules include each other, directly or in a circle "
       "(%d modules)" % len(graph),
       ["a cycle: " + " <-> ".join(c) for c in cycles])


def tracked():
    """The files git tracks, or every file under SRC outside a checkout."""
    r = subprocess.run(["git", "-C", SRC, "ls-files", "-z"],
                       capture_output=True)
    if r.returncode == 0 and r.stdout:
        return [p for p in r.stdout.decode().split("\0") if p]
    out = []
    for root, dirs, files in os.walk(SRC):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        out += [os.path.relpath(os.path.join(root, f), SRC) for f in files]
    return out


def check_words():
    pattern = re.compile(r"session [0-9]|stop [0-9]|issues? #?[0-9]", re.I)
    hits = []
    for rel in tracked():
        path = os.path.join(SRC, rel)
        if not os.path.isfile(path) or os.path.getsize(path) > 2 << 20:
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue
        for i, line in enumerate(data.decode("utf-8", "replace")
                                 .splitlines(), 1):
            if pattern.search(line):
                hits.append("%s:%d: %s" % (rel, i, line.strip()[:100]))
    ok(not hits, "no text counts work sessions or stops, or cites a "
       "tracker's issue by number (grep -iE "
       "'session [0-9]|stop [0-9]|issues? #?[0-9]')", hits)


def main():
    layers = read_layers()
    if not ok(layers, "docs/architecture.md has the \"Layers\" block"):
        print("1..%d" % n)
        return 1
    files = sources()
    where = check_layers(layers, files)
    check_cycles(files, where)
    check_words()
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
