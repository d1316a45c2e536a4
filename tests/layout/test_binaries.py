#!/usr/bin/env python3
"""test_binaries.py BUILD_DIR PROGRAM... -- no build or source directory
is compiled into an installed program (TAP).

A path of the tree a binary was built in would make an installed copy
reach into that tree (a stale parity-noop, another version's files).
Each program's read-only data (.rodata, through objcopy) must hold
neither BUILD_DIR nor the source directory; debug information, which
names where it was compiled, is not looked at.
"""
import os
import subprocess
import sys
import tempfile

BUILD = os.path.realpath(sys.argv[1])
SOURCE = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
n = 0
failed = 0


def ok(cond, name, diag=""):
    global n, failed
    n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, name))
    if not cond:
        failed += 1
        for line in str(diag).splitlines()[:10]:
            print("# " + line)


with tempfile.TemporaryDirectory() as tmp:
    for prog in sys.argv[2:]:
        out = os.path.join(tmp, "rodata")
        r = subprocess.run(["objcopy", "-O", "binary", "--only-section=.rodata",
                            prog, out], capture_output=True, text=True)
        if r.returncode != 0:
            ok(False, "%s: objcopy read its .rodata" % os.path.basename(prog),
               r.stderr)
            continue
        with open(out, "rb") as f:
            data = f.read()
        found = [d for d in (BUILD, SOURCE) if d.encode() in data]
        ok(len(data) > 0 and not found,
           "%s: no build or source path in its %d bytes of read-only data"
           % (os.path.basename(prog), len(data)),
           "found: " + ", ".join(found))
print("1..%d" % n)
sys.exit(1 if failed else 0)
