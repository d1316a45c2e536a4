#!/bin/sh
# update-expected.sh [BUILD_DIR] -- write tests/expected/*.out from what
# the printers print now (every test of the suite `expected`), then show
# what changed: read the diff before committing it.
set -eu
BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
PARITY_UPDATE_EXPECTED=1 meson test -C "$BUILD" --suite expected
git -C "$HERE/.." diff --stat -- tests/expected
