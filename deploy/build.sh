#!/bin/sh
# deploy/build.sh -- configure (once) and build into ./build. Says what it
# does as it goes: configuring, then ninja's progress every tenth of the
# steps ("build: 120 of 480 steps"); ninja's whole output is in
# build/ninja.log, printed on a failure. The binaries end up in
# build/agent, build/collector and build/collector/client.
set -eu
cd "$(dirname "$0")/.."
echo "build: configuring build/ (meson setup)"
if [ -f build/build.ninja ]; then
    meson setup --reconfigure build >/dev/null
else
    meson setup build >/dev/null
fi
echo "build: compiling (ninja; its log is build/ninja.log)"
rm -f build/ninja.status
{ ninja -C build 2>&1 || echo $? >build/ninja.status; } | tee build/ninja.log |
    awk -F'[][/]' '/^\[[0-9]+\/[0-9]+\]/ {
        n = $2 + 0; t = $3 + 0
        if (t > 0 && (n == t || int(n * 10 / t) > int((n - 1) * 10 / t))) {
            printf "build: %d of %d steps\n", n, t; fflush()
        }
    }'
if [ -f build/ninja.status ]; then
    rm -f build/ninja.status
    cat build/ninja.log >&2
    exit 1
fi
echo "build: done"
