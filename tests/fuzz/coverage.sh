#!/bin/sh
# tests/fuzz/coverage.sh BUILD_DIR CORPUS_DIR [TARGET...] -- what each
# target's corpus reaches: the corpus CORPUS_DIR/TARGET (as left by
# FUZZ_CORPUS_DIR=CORPUS_DIR tests/fuzz/run.sh) is run once, without
# fuzzing, with -print_coverage=1, and the edges reached are summed per
# source file of the project:
#
#   frame  collector/store/co_db.c  812/1650 edges  41/77 functions
#
# Only the code compiled into the target is instrumented: protobuf-c,
# jansson, libyaml and czmq from Debian are not, so they do not appear.
# docs/testing.md ("Fuzzing") has the figures of the last long run.
set -u
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR CORPUS_DIR [TARGET...]" >&2; exit 2; }
BUILD=$1; CORPUS=$2; shift 2
TARGETS=${*:-"frame suite import batch results reply"}
for t in $TARGETS; do
    "$BUILD/tests/fuzz/fuzz-$t" -runs=0 -print_coverage=1 -close_fd_mask=2 \
        "$CORPUS/$t" 2>&1 | python3 -c '
import re, sys
target = sys.argv[1]
files = {}
total = None
for line in sys.stdin:
    m = re.match(r"(UN)?COVERED_FUNC: hits: \d+ edges: (\d+)/(\d+) \S+ (\S+):\d+", line)
    if m:
        f = re.sub(r"^.*?/(agent|collector|proto|verdict|tests)/", r"\1/", m.group(4))
        c = files.setdefault(f, [0, 0, 0, 0])
        c[0] += int(m.group(2)); c[1] += int(m.group(3))
        c[2] += 0 if m.group(1) else 1; c[3] += 1
    m = re.search(r"cov: (\d+) ft: (\d+)", line)
    if m:
        total = m.group(0)
for f in sorted(files):
    e, n, fc, fn = files[f]
    print("%-8s %-36s %5d/%-5d edges %4d/%-4d functions" % (target, f, e, n, fc, fn))
print("%-8s %s" % (target, total or "no coverage line"))
' "$t"
done
