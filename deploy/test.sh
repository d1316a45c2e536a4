#!/bin/sh
# deploy/test.sh -- install what is missing, build, and run every test:
# the normal build, then the same tests in an ASan+UBSan build. Ends with
# one line "N passed, N failed, N skipped" counting TAP checks over
# both builds.
#
#   deploy/test.sh            everything
#   PARITY_TEST_SANITIZE=0    skip the ASan+UBSan pass
#   PARITY_TEST_TSAN=0        skip the TSan pass (suite `threads`)
#   PARITY_TEST_FUZZ=0        skip the libFuzzer pass (tests/fuzz)
#   PARITY_FUZZ_SECONDS=N     seconds per fuzz target (default 10)
#   PARITY_TEST_JOBS=N        tests at a time (default 4; ASan 3, TSan 2)
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)

deploy/install.sh || { echo "0 passed, 1 failed"; exit 1; }

status=0
passed=0; failed=0; skipped=0

# setup BUILD_DIR [meson options...]: configure once, reconfigure after.
# Warnings are errors in every build made here (meson.build's default is
# off, for users' and packagers' builds).
setup() {
    dir=$1; shift
    if [ -f "$dir/build.ninja" ]; then
        meson setup --reconfigure "$dir" -Dwerror=true "$@" >/dev/null
    else
        meson setup "$dir" -Dwerror=true "$@" >/dev/null
    fi
}

# run_suite BUILD_DIR JOBS: build, test JOBS at a time, add the counts
# from testlog.json.
run_suite() {
    dir=$1 jobs=$2
    if ! ninja -C "$dir" >"$dir/ninja.log" 2>&1; then
        cat "$dir/ninja.log"
        echo "test: build in $dir failed"
        failed=$((failed + 1)); status=1
        return
    fi
    meson test -C "$dir" --print-errorlogs \
        --num-processes "$jobs" \
        ${PARITY_TEST_ARGS:-} || status=1
    counts=$(python3 - "$dir/meson-logs/testlog.json" <<'PY'
# Count TAP checks, not programs: a program that fails without printing
# a "not ok" line (a crash, a timeout) still counts as one failure.
import json, re, sys
p = f = s = 0
for line in open(sys.argv[1]):
    t = json.loads(line)
    out = t.get("stdout") or ""
    oks = len(re.findall(r"^ok\b(?!.*# *SKIP)", out, re.M))
    skips = len(re.findall(r"^ok\b.*# *SKIP", out, re.M | re.I))
    bad = len(re.findall(r"^not ok\b", out, re.M))
    r = t.get("result")
    if r == "SKIP":
        s += max(1, skips)
        continue
    p += oks if (oks or bad or skips) else (1 if r == "OK" else 0)
    s += skips
    if r not in ("OK", "EXPECTEDFAIL"):
        f += max(1, bad)
    else:
        f += bad
print(p, f, s)
PY
) || counts="0 1 0"
    set -- $counts
    passed=$((passed + $1)); failed=$((failed + $2)); skipped=$((skipped + $3))
}

# Most system tests wait (for a cluster's start, heartbeats, timeouts)
# rather than compute: on 2 CPUs four at a time keep both busy. Fewer in
# the sanitized builds, whose tests compute more.
setup build || { echo "0 passed, 1 failed"; exit 1; }
run_suite build "${PARITY_TEST_JOBS:-4}"

if [ "${PARITY_TEST_SANITIZE:-1}" != 0 ]; then
    echo "test: the same tests under ASan+UBSan (build-asan)"
    setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
        -Dbuildtype=debug || { failed=$((failed + 1)); status=1; }
    # Suite `slow` (restarts, a stopped database, the quickstart's job,
    # detection's waits, netns alone: their time is waiting) runs in the
    # normal build only.
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    PARITY_TEST_ARGS="${PARITY_TEST_ARGS:-} --no-suite slow" \
        run_suite build-asan "${PARITY_TEST_JOBS:-3}"
fi

# The collector (network loop, writer, query workers) and the agent
# daemon (network thread, harness, signals, spool lock) are threaded: the
# tests that drive them run once more under ThreadSanitizer. A data race
# makes the daemon exit 66, which those tests see.
if [ "${PARITY_TEST_TSAN:-1}" != 0 ]; then
    echo "test: the collector's and the agent's thread tests under TSan (build-tsan)"
    setup build-tsan -Db_sanitize=thread -Db_lundef=false \
        || { failed=$((failed + 1)); status=1; }
    TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$ROOT/tests/tsan.supp" \
    PARITY_TEST_ARGS="--suite threads" \
        run_suite build-tsan "${PARITY_TEST_JOBS:-2}"
fi

# Fuzzing: every libFuzzer target of tests/fuzz for
# PARITY_FUZZ_SECONDS (20) in a clang build of the targets alone; each
# target is one check (tests/fuzz/run.sh prints TAP).
if [ "${PARITY_TEST_FUZZ:-1}" != 0 ]; then
    echo "test: libFuzzer targets, ${PARITY_FUZZ_SECONDS:-10} s each (build-fuzz)"
    if (export CC=clang; setup build-fuzz -Dfuzz=true) \
        && ninja -C build-fuzz fuzz >build-fuzz/ninja.log 2>&1; then
        # Two targets at a time, one per CPU: each still fuzzes its
        # full time.
        FUZZ_TARGETS="frame import batch" tests/fuzz/run.sh build-fuzz \
            "${PARITY_FUZZ_SECONDS:-10}" >build-fuzz/fuzz-a.tap &
        FUZZ_TARGETS="suite results reply" tests/fuzz/run.sh build-fuzz \
            "${PARITY_FUZZ_SECONDS:-10}" >build-fuzz/fuzz-b.tap
        wait
        cat build-fuzz/fuzz-a.tap build-fuzz/fuzz-b.tap \
            | tee build-fuzz/fuzz.tap
        p=$(grep -c '^ok ' build-fuzz/fuzz.tap)
        f=$(grep -c '^not ok ' build-fuzz/fuzz.tap)
        plan=$(sed -n 's/^1\.\.//p' build-fuzz/fuzz.tap \
               | awk '{ n += $1 } END { print n + 0 }')
        # run.sh cut short (no plan, or fewer lines than it): one failure.
        [ "$(grep -c '^1\.\.' build-fuzz/fuzz.tap)" -eq 2 ] \
            && [ $((p + f)) -eq "$plan" ] || f=$((f + 1))
        passed=$((passed + p)); failed=$((failed + f))
        [ "$f" -eq 0 ] || status=1
    else
        [ -f build-fuzz/ninja.log ] && cat build-fuzz/ninja.log
        echo "test: the fuzz build (build-fuzz) failed"
        failed=$((failed + 1)); status=1
    fi
fi

[ $failed -gt 0 ] && status=1
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
