#!/bin/sh
# deploy/quickstart.sh -- the README's first command: install what is
# missing, build, and run Parity's main job on this machine.
set -eu
cd "$(dirname "$0")/.."
deploy/install.sh
deploy/build.sh
PARITY=build/collector/client/parity

echo
echo "== parity verdict on the seed paper's edit_distance samples (us)"
$PARITY verdict --names prismio,cpp \
    --a 566,568,576,690,722 --b 587,700,712,718,725
