#!/bin/sh
# deploy/install.sh -- install every Debian package that Parity's build,
# tests, benchmarks and quickstart need. Idempotent: it asks apt only for
# what dpkg says is missing, so a second run (or an ordinary user with
# everything present) installs nothing and needs no privileges. chromium
# is for tests/cli/test_site.py, which renders `parity report --site` in
# it headless (the test is skipped without it).
# pandoc makes the man pages from docs/ at build time; dpkg-dev
# (dpkg-shlibdeps), man-db, bash-completion and zsh are for
# deploy/package.sh and its test (tests/packages).
# clang and libclang-rt-14-dev (libFuzzer, the sanitizer runtimes) build
# tests/fuzz; llvm puts llvm-symbolizer on PATH for the findings' stacks.
# systemd (systemd-analyze, systemd-sysusers) and strace are for
# tests/systemd, which checks the units and the collector's syscalls.
# valgrind runs both daemons under memcheck in tests/daemon (the
# daemon-valgrind test, skipped without it).
# libcurl4-openssl-dev: the collector's webhook notices (--notify-url).
# python3-yaml reads docs/ci.md's CI examples and tests/cli's cases;
# libxml2-utils (xmllint) validates `parity run --junit` in
# tests/jobs/test_gate.py.
# git: `parity bisect --git DIR` runs git rev-list (tests/history).
# binutils (objcopy): tests/layout reads each program's read-only data.
# libmicrohttpd-dev: the collector's HTTP side (--http); curl and
# prometheus (promtool) for tests/http, which checks /metrics with
# `promtool check metrics`; wrk for tests/bench's HTTP benchmark.
set -eu

PACKAGES="
gcc
binutils
libc6-dev
meson
ninja-build
pkg-config
libzmq3-dev
libsodium-dev
libczmq-dev
libprotobuf-c-dev
protobuf-c-compiler
libpq-dev
postgresql
libjansson-dev
libyaml-dev
libcurl4-openssl-dev
libmicrohttpd-dev
curl
prometheus
wrk
libsystemd-dev
systemd
strace
valgrind
hyperfine
jq
iproute2
procps
util-linux
python3
python3-yaml
libxml2-utils
git
chromium
pandoc
dpkg-dev
man-db
bash-completion
zsh
clang
libclang-rt-14-dev
llvm
"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "install: all $(echo $PACKAGES | wc -w) packages present"
    exit 0
fi

echo "install: missing:$missing"
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install: not root and no sudo: install these as root:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists; update once, quietly.
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install: done"
