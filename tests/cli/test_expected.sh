#!/bin/sh
# test_expected.sh PARITY SOURCE_DIR -- `parity compare`'s summary (the
# per-arm table, CPU time and peak RSS, the verdict block: what `parity
# import hyperfine` prints through the same code) on hyperfine's exports
# in examples/, compared whole with tests/expected/NAME.out (TAP).
# PARITY_UPDATE_EXPECTED=1 writes the files instead
# (tests/update-expected.sh).
set -u
PARITY=$1
SRC=$2
DIR=${PARITY_EXPECTED_DIR:-$SRC/tests/expected}
n=0; failed=0
tmp=$(mktemp -d /tmp/parity-expected-XXXXXX)
for name in hyperfine-modes hyperfine-spawn; do
    n=$((n + 1))
    "$PARITY" import hyperfine "$SRC/examples/$name.json" >"$tmp/out" 2>&1
    echo "exit $?" >>"$tmp/out"
    if [ "${PARITY_UPDATE_EXPECTED:-0}" = 1 ]; then
        cp "$tmp/out" "$DIR/compare-$name.out"
        echo "ok $n - compare-$name.out written # from parity import hyperfine"
    elif cmp -s "$tmp/out" "$DIR/compare-$name.out"; then
        echo "ok $n - parity import hyperfine examples/$name.json prints tests/expected/compare-$name.out, whole"
    else
        echo "not ok $n - parity import hyperfine examples/$name.json prints tests/expected/compare-$name.out, whole"
        diff -u "$DIR/compare-$name.out" "$tmp/out" | head -30 | sed 's/^/# /'
        failed=$((failed + 1))
    fi
done
rm -rf "$tmp"
echo "1..$n"
[ $failed -eq 0 ]
