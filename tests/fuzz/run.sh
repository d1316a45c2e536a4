#!/bin/sh
# tests/fuzz/run.sh BUILD_DIR [SECONDS] -- run every libFuzzer target of
# BUILD_DIR (configured with CC=clang -Dfuzz=true) for SECONDS each
# (default 30), one after the other. Prints TAP, one check per target
# ("ok N - frame: 30 s, 412345 execs, cov 1234 of 6789 edges, ft 5678"),
# and exits 1 when a target found something (a crash, a leak, UB, a
# timeout, an out-of-memory) or a saved regression input fails again.
#
# Each target first replays tests/fuzz/regressions/TARGET/* (every past
# finding), then fuzzes from its seeds (corpus/TARGET) with its
# dictionary (TARGET.dict) into a scratch corpus, so the repo's corpus
# stays as committed. A finding is saved as BUILD_DIR/fuzz-findings/
# TARGET/crash-... (or leak-, timeout-, oom-); its log is printed.
#
#   FUZZ_TARGETS="frame suite"   only these targets
#   FUZZ_CORPUS_DIR=DIR          keep the grown corpora in DIR/TARGET
#                                (and start from what is there)
#   FUZZ_ARGS="-jobs=2 ..."      more libFuzzer flags
#
# docs/testing.md ("Fuzzing") has the long run and what each target
# reaches.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [SECONDS]" >&2; exit 2; }
BUILD=$(cd "$1" && pwd) || exit 2
SECONDS_EACH=${2:-30}
TARGETS=${FUZZ_TARGETS:-"frame suite import batch results reply"}
FINDINGS="$BUILD/fuzz-findings"
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/parity-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$SCRATCH"' EXIT INT TERM

# Sanitizer settings: UB aborts with a stack; lsan.supp lists known
# leaks by function, each with its issue (none today).
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export LSAN_OPTIONS="suppressions=$HERE/lsan.supp:print_suppressions=0"

n=0; failed=0
for t in $TARGETS; do
    n=$((n + 1))
    exe="$BUILD/tests/fuzz/fuzz-$t"
    log="$SCRATCH/$t.log"
    if [ ! -x "$exe" ]; then
        echo "not ok $n - $t: $exe is not built (ninja -C $BUILD fuzz)"
        failed=$((failed + 1)); continue
    fi
    mkdir -p "$FINDINGS/$t"
    # Past findings first: each must now pass.
    regs=$(ls "$HERE/regressions/$t" 2>/dev/null | head -1)
    if [ -n "$regs" ] && ! "$exe" -close_fd_mask=2 \
            "$HERE/regressions/$t"/* >"$log" 2>&1; then
        cat "$log"
        echo "not ok $n - $t: a saved regression input fails again"
        failed=$((failed + 1)); continue
    fi
    if [ -n "${FUZZ_CORPUS_DIR:-}" ]; then
        work="$FUZZ_CORPUS_DIR/$t"
    else
        work="$SCRATCH/corpus-$t"
    fi
    mkdir -p "$work"
    # The import verb writes its errors to stderr: -close_fd_mask=2 there
    # (libFuzzer keeps its own output and the sanitizers' reports). The
    # other targets keep stderr for their own reason for aborting.
    quiet=""
    [ "$t" = import ] && quiet="-close_fd_mask=2"
    # shellcheck disable=SC2086
    "$exe" "$work" "$HERE/corpus/$t" -dict="$HERE/$t.dict" \
        -max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=2048 \
        $quiet -print_final_stats=1 \
        -artifact_prefix="$FINDINGS/$t/" ${FUZZ_ARGS:-} >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    # cov: edges reached, of the edges instrumented (the target's own
    # compiled code; the Debian libraries under it are not counted).
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 |
          sed 's/cov: \([0-9]*\) ft: \([0-9]*\)/cov \1 ft \2/')
    edges=$(sed -n 's/.*(\([0-9]*\) inline 8-bit counters).*/\1/p' "$log" |
            head -1)
    [ -n "$cov" ] && [ -n "$edges" ] && cov="${cov% ft*} of $edges edges, ft ${cov#* ft }"
    what="$t: $SECONDS_EACH s, ${execs:-?} execs, ${cov:-no coverage line}"
    if [ $rc -ne 0 ]; then
        grep -v '^#[0-9]' "$log" | tail -60
        echo "not ok $n - $what: finding (exit $rc) in $FINDINGS/$t/"
        failed=$((failed + 1))
    else
        echo "ok $n - $what"
    fi
done
echo "1..$n"
[ $failed -eq 0 ]
