#!/bin/sh
# deploy/test.sh -- install what is missing, build, and run every test:
# the normal build, then the same tests in an ASan+UBSan build. Ends with
# one line "N passed, N failed[, N skipped]" summed over both builds.
#
#   deploy/test.sh            everything
#   PARITY_TEST_SANITIZE=0    skip the ASan+UBSan pass
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)

deploy/install.sh || { echo "0 passed, 1 failed"; exit 1; }

status=0
passed=0; failed=0; skipped=0

# setup BUILD_DIR [meson options...]: configure once, reconfigure after.
setup() {
    dir=$1; shift
    if [ -f "$dir/build.ninja" ]; then
        meson setup --reconfigure "$dir" "$@" >/dev/null
    else
        meson setup "$dir" "$@" >/dev/null
    fi
}

# run_suite BUILD_DIR: build, test, add the counts from testlog.json.
run_suite() {
    dir=$1
    if ! ninja -C "$dir" >"$dir/ninja.log" 2>&1; then
        cat "$dir/ninja.log"
        echo "test: build in $dir failed"
        failed=$((failed + 1)); status=1
        return
    fi
    meson test -C "$dir" --print-errorlogs --num-processes 2 \
        ${PARITY_TEST_ARGS:-} || status=1
    counts=$(python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line).get("result")
    if r in ("OK", "EXPECTEDFAIL"): p += 1
    elif r == "SKIP": s += 1
    else: f += 1
print(p, f, s)
PY
) || counts="0 1 0"
    set -- $counts
    passed=$((passed + $1)); failed=$((failed + $2)); skipped=$((skipped + $3))
}

setup build || { echo "0 passed, 1 failed"; exit 1; }
run_suite build

if [ "${PARITY_TEST_SANITIZE:-1}" != 0 ]; then
    echo "test: the same tests under ASan+UBSan (build-asan)"
    setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
        -Dbuildtype=debug || { failed=$((failed + 1)); status=1; }
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        run_suite build-asan
fi

[ $failed -gt 0 ] && status=1
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
