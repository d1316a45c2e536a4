#!/bin/sh
# changepoints.sh BUILD_DIR [changepoints options] -- detection quality of
# the change-point library: BUILD_DIR/tests/bench/changepoints
# on generated series, Parity's defaults against Otava's defaults and a
# verdict against the previous run, in the same run. Bounded: under a
# minute of one core at the defaults (100 step series a cell, 50 noise
# series a row; 20 s at load 2, debugoptimized), and killed after 5. Not
# a registered test; the figures and this command go to
# docs/regressions.md. The last line of its output is one JSON object.
#
#   tests/bench/changepoints.sh build-cp
#   tests/bench/changepoints.sh build-cp --max-p 0.001 --parity-only
set -eu
[ $# -ge 1 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
BUILD=$1
shift
BIN="$BUILD/tests/bench/changepoints"
[ -x "$BIN" ] || { echo "changepoints.sh: no $BIN (ninja -C $BUILD tests/bench/changepoints)" >&2; exit 2; }
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo '?') $(uname -m), load $(cut -d' ' -f1 /proc/loadavg)"
timeout 300 "$BIN" "$@"
echo
QUALITY="$BUILD/tests/bench/changes-quality"
[ -x "$QUALITY" ] || { echo "changepoints.sh: no $QUALITY" >&2; exit 2; }
exec timeout 120 "$QUALITY" 200
