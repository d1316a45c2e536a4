#!/bin/sh
# ingest_bench.sh [BUILD_DIR] [extra ingest-load options] -- the collector's
# ingest benchmark. Builds ingest-load and parity-collector, then
# runs ingest-load: 8 CURVE agents on 127.0.0.1 through parity-collector
# into its private PostgreSQL, against plain binary COPY of the same rows
# into the same table in the same run, and the collector's memory per
# connected idle agent. Targets: >= 200,000 samples/s stored and acked,
# >= 60 % of COPY, < 64 KiB per agent. Not a registered test.
set -eu
cd "$(dirname "$0")/../.."
B=${1:-build}
[ $# -gt 0 ] && shift
ninja -C "$B" tests/bench/ingest-load collector/parity-collector >/dev/null
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
"$B/tests/bench/ingest-load" "$(pwd)/$B/collector/parity-collector" "$@" \
    | tee /tmp/parity-ingest-last.txt
python3 - /tmp/parity-ingest-last.txt <<'PY'
import json, sys
d = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
def mark(ok): return "met" if ok else "NOT met"
print("target >= 200,000 samples/s: %.0f  %s" % (d["ingest_per_s"], mark(d["ingest_per_s"] >= 200000)))
print("target >= 60 %% of COPY: %.1f %%  %s" % (100 * d["ratio"], mark(d["ratio"] >= 0.6)))
print("target < 64 KiB per agent: %.1f KiB  %s" % (d["kib_per_agent"], mark(d["kib_per_agent"] < 64)))
PY
