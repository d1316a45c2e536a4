#!/bin/sh
# soak.sh BUILD_DIR [--duration S] [--agents N] [--kill-every S]
#         [--pg-stop-at S] [--pg-stop-for S] [--job-every S] [--keep]
# The soak: 10 minutes of repeated jobs on 20 real
# parity-agent daemons, the collector killed -9 and restarted every 2
# minutes, PostgreSQL stopped for 20 s once; then every sample is checked
# against the agents' own RunEnd counts, none duplicated. Loopback only,
# bounded (drain <= 300 s). Not a registered test. The work is in
# tests/bench/fleet_soak.py (its docstring has the details); the last
# line is one JSON object: runs, samples_expected, samples_stored,
# duplicates, missing, kills, pg_stops, ok (and more). Exit 0 when ok.
set -eu
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
B=$1
shift
ninja -C "$B" -j1 agent/parity-agent collector/parity-collector \
    collector/client/parity >/dev/null
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
exec python3 tests/bench/fleet_soak.py "$B" "$@"
