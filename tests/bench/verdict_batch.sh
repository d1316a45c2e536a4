#!/bin/sh
# verdict_batch.sh -- `parity verdict --batch` lines per second, against
# peers that read and write the same JSON Lines in the same run:
# `jq -c .` (parse and re-print, no arithmetic) and a Python json
# round trip. The target is >= 300,000 lines/s.
#
#   tests/bench/verdict_batch.sh [PARITY_BINARY] [LINES]
#
# Defaults: $PARITY or build/collector/client/parity, 300000 lines of two
# 7-sample arms. Each program runs 3 times on the same file; the best
# wall time counts. Not a test: record the figures in docs/performance.md.
set -eu
cd "$(dirname "$0")/../.."
PARITY=${1:-${PARITY:-build/collector/client/parity}}
LINES=${2:-300000}
[ -x "$PARITY" ] || { echo "verdict_batch: no parity binary at $PARITY" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

python3 - "$LINES" >"$tmp/in.jsonl" <<'PY'
import random, sys
rng = random.Random(2)
for i in range(int(sys.argv[1])):
    c = rng.choice([60.0, 600.0, 6000.0])
    s = rng.choice([1.0, 1.16, 0.85])
    a = ",".join("%.1f" % (c * s * (1 + rng.uniform(0, 0.02))) for _ in range(7))
    b = ",".join("%.1f" % (c * (1 + rng.uniform(0, 0.02))) for _ in range(7))
    print('{"a":[%s],"b":[%s]}' % (a, b))
PY

# Time every program in one Python process: best of 3 wall times each,
# stdin the same file, stdout kept for the checks on parity's answers.
python3 - "$tmp/in.jsonl" "$LINES" "$PARITY" "$(nproc)" <<'PY'
import shutil, subprocess, sys, time
path, n, parity, cores = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def best_of(cmd):
    best, out = None, b""
    for _ in range(3):
        with open(path, "rb") as f:
            t0 = time.perf_counter()
            p = subprocess.run(cmd, stdin=f, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
            t = time.perf_counter() - t0
        best, out = (t, p.stdout) if best is None or t < best else (best, out)
    return best, out

tp, out = best_of([parity, "verdict", "--batch"])
lines = out.splitlines()
if len(lines) != n or any(b'"error"' in x for x in lines):
    sys.exit("verdict_batch: parity gave %d answers (or errors) for %d lines"
             % (len(lines), n))
ty, _ = best_of(["python3", "-c", """
import json, sys
w = sys.stdout.write
for line in sys.stdin:
    w(json.dumps(json.loads(line), separators=(",", ":")) + "\\n")"""])
tj = best_of(["jq", "-c", "."])[0] if shutil.which("jq") else None

print("input: %d lines, two 7-sample arms each (%s cores)" % (n, cores))
print("parity verdict --batch:        %9.0f lines/s  (%.3f s)" % (n / tp, tp))
if tj:
    print("peer: jq -c .                  %9.0f lines/s  (%.3f s)" % (n / tj, tj))
print("peer: python3 json round trip  %9.0f lines/s  (%.3f s)" % (n / ty, ty))
if tj:
    print("ratio parity / jq:             %9.2f" % (tj / tp))
print("ratio parity / python3:        %9.2f" % (ty / tp))
print("target >= 300000 lines/s:      %s" % ("met" if n / tp >= 300000 else "NOT met"))
PY
