#!/bin/sh
# deploy/build.sh -- configure (once) and build into ./build. Prints only
# errors; the binaries end up in build/agent, build/collector and
# build/collector/client.
set -eu
cd "$(dirname "$0")/.."
if [ -f build/build.ninja ]; then
    meson setup --reconfigure build >/dev/null
else
    meson setup build >/dev/null
fi
ninja -C build >build/ninja.log 2>&1 || { cat build/ninja.log >&2; exit 1; }
