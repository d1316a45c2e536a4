#!/bin/sh
# deploy/package.sh -- build the Debian packages parity, parity-agent and
# parity-collector from this checkout.
#
#   deploy/package.sh [--build-dir DIR] [--stage DIR] [OUTDIR]
#
# It configures (once) and builds a meson build directory for /usr
# (default build-pkg/ in the checkout; reused, so a second run only builds
# what changed), installs it into a staging directory with
# `meson install --destdir --strip`, shares the staged files out between
# the three packages by the lists below, and makes each .deb with
# dpkg-deb into OUTDIR (default build-deb/ in the checkout):
#
#   parity            the client: /usr/bin/parity, the man pages of parity
#                     and its verbs, completions, /usr/share/doc/parity
#                     (docs, examples) and the sysusers.d file of the
#                     `parity` system user when the build installs one
#   parity-agent      /usr/bin/parity-agent, /usr/libexec/parity/parity-noop,
#                     the unit, /etc/parity/agent.yaml (a conffile)
#   parity-collector  /usr/bin/parity-collector, the unit,
#                     /etc/parity/collector.yaml (a conffile); needs
#                     postgresql
#
# Library dependencies come from dpkg-shlibdeps. Both daemons depend on
# `parity` of the same version (it makes their keys: parity keygen).
# Their maintainer scripts create the `parity` system user
# (systemd-sysusers with the shipped sysusers.d file, else adduser) and
# touch services only when PID 1 is systemd: a first install starts
# nothing (the daemon needs its keys and configuration first), an upgrade
# restarts a running daemon, a removal stops and disables it.
#
# A file a package lists that the build did not stage, or a staged file
# no package lists, stops the script with a message naming it. --stage
# DIR packages an existing `meson install --destdir` tree instead of
# building (DIR is copied, not changed). It takes no lock: on a shared
# machine run it under the build lock.
set -eu
umask 022

usage="usage: deploy/package.sh [--build-dir DIR] [--stage DIR] [OUTDIR]"
src=$(cd "$(dirname "$0")/.." && pwd)
build="$src/build-pkg"
out=""
from_stage=""
while [ $# -gt 0 ]; do
    case $1 in
        --build-dir)
            [ $# -ge 2 ] || { echo "package: --build-dir needs a directory" >&2; exit 2; }
            build=$2; shift 2 ;;
        --build-dir=*) build=${1#--build-dir=}; shift ;;
        --stage)
            [ $# -ge 2 ] || { echo "package: --stage needs a directory" >&2; exit 2; }
            [ -d "$2" ] || { echo "package: --stage $2: not a directory" >&2; exit 2; }
            from_stage=$(cd "$2" && pwd); shift 2 ;;
        -h|--help) echo "$usage"; exit 0 ;;
        -*) echo "package: unknown option $1 ($usage)" >&2; exit 2 ;;
        *)
            [ -z "$out" ] || { echo "package: one OUTDIR only ($usage)" >&2; exit 2; }
            out=$1; shift ;;
    esac
done
[ -n "$out" ] || out="$src/build-deb"

for tool in meson ninja dpkg-deb dpkg-shlibdeps dpkg-architecture gzip; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "package: $tool not found: run deploy/install.sh" >&2; exit 1; }
done

start=$(date +%s)
mkdir -p "$out" "$build"
out=$(cd "$out" && pwd)
build=$(cd "$build" && pwd)

version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$src/meson.build" | head -n 1)
[ -n "$version" ] || { echo "package: no version in $src/meson.build" >&2; exit 1; }
debversion="$version-1"
arch=$(dpkg-architecture -qDEB_HOST_ARCH)

# --- build and stage --------------------------------------------------------
stage="$build/stage"
rm -rf "$stage"
if [ -n "$from_stage" ]; then
    cp -a "$from_stage" "$stage"
else
    # A distribution's release build: -O3, warnings shown but not fatal
    # (meson.build's werror=false); tests/packages checks it has none.
    setup_args="--prefix=/usr --buildtype=release -Dtests=false -Db_sanitize=none"
    if [ -f "$build/build.ninja" ]; then
        # shellcheck disable=SC2086
        meson setup --reconfigure $setup_args "$build" "$src" >"$build/package-setup.log" 2>&1 ||
            { cat "$build/package-setup.log" >&2; echo "package: meson setup failed" >&2; exit 1; }
    else
        # shellcheck disable=SC2086
        meson setup $setup_args "$build" "$src" >"$build/package-setup.log" 2>&1 ||
            { cat "$build/package-setup.log" >&2; echo "package: meson setup failed" >&2; exit 1; }
    fi
    ninja -C "$build" >"$build/package-ninja.log" 2>&1 ||
        { tail -n 40 "$build/package-ninja.log" >&2; echo "package: build failed (log: $build/package-ninja.log)" >&2; exit 1; }

    meson install -C "$build" --destdir "$stage" --strip --no-rebuild --quiet \
        >"$build/package-install.log" 2>&1 ||
        { cat "$build/package-install.log" >&2; echo "package: meson install failed" >&2; exit 1; }
fi
# Debian's man pages are gzipped (-n: no name or time, the same bytes
# every build).
if [ -d "$stage/usr/share/man" ]; then
    find "$stage/usr/share/man" -type f -name '*.[1-9]' -exec gzip -9nf {} +
fi

# --- share the staged files out ------------------------------------------------
# Package roots live in $debdir/debian/NAME, where dpkg-shlibdeps expects
# them.
debdir="$build/deb"
rm -rf "$debdir"
mkdir -p "$debdir/debian"

# take PKG required|optional PATTERN...: move the staged files matching
# any PATTERN (a glob relative to the staging root; alternatives for one
# file, e.g. the unit in lib/ or usr/lib/) into PKG's root. A required
# list that matches nothing is an error.
take() {
    pkg=$1; need=$2; shift 2
    found=0
    for pat in "$@"; do
        for f in "$stage"/$pat; do
            [ -e "$f" ] || [ -L "$f" ] || continue
            rel=${f#"$stage"/}
            mkdir -p "$debdir/debian/$pkg/$(dirname "$rel")"
            mv "$f" "$debdir/debian/$pkg/$rel"
            found=1
        done
    done
    if [ "$need" = required ] && [ "$found" -eq 0 ]; then
        echo "package: $pkg: $* is not in the meson install staging dir $stage (not installed by the build?)" >&2
        exit 1
    fi
}

# The two daemons' packages hold the same kinds of file.
for d in agent collector; do
    take parity-$d required usr/bin/parity-$d
    take parity-$d required usr/share/man/man1/parity-$d.1.gz
    take parity-$d optional usr/share/bash-completion/completions/parity-$d
    take parity-$d required lib/systemd/system/parity-$d.service \
                            usr/lib/systemd/system/parity-$d.service
    take parity-$d optional "lib/systemd/system/parity-$d*" \
                            "usr/lib/systemd/system/parity-$d*"
    take parity-$d required etc/parity/$d.yaml
done
take parity-agent required usr/libexec/parity/parity-noop

take parity required usr/bin/parity
take parity required usr/share/man/man1/parity.1.gz
take parity required 'usr/share/man/man1/parity-*.1.gz'
take parity required usr/share/bash-completion/completions/parity
take parity required usr/share/zsh/vendor-completions/_parity
take parity required usr/share/doc/parity
take parity optional 'usr/lib/sysusers.d/*' 'lib/sysusers.d/*'
take parity optional 'usr/lib/tmpfiles.d/*' 'lib/tmpfiles.d/*'

left=$(cd "$stage" && find . ! -type d | sed 's|^\./||' | sort)
if [ -n "$left" ]; then
    echo "package: staged but in no package (add them to deploy/package.sh):" >&2
    echo "$left" | sed 's/^/  /' >&2
    exit 1
fi

# The sysusers.d file that defines the parity user, if the build has one.
sysusers=""
for f in "$debdir/debian/parity"/usr/lib/sysusers.d/* "$debdir/debian/parity"/lib/sysusers.d/*; do
    [ -f "$f" ] && sysusers="/${f#"$debdir/debian/parity"/}"
done

# --- control files --------------------------------------------------------------
printf 'Source: parity\n\nPackage: parity\nArchitecture: any\n\nPackage: parity-agent\nArchitecture: any\n\nPackage: parity-collector\nArchitecture: any\n' \
    >"$debdir/debian/control"

# shlibdeps PKG BINARY...: the library packages BINARY needs.
shlibdeps() {
    pkg=$1; shift
    args=""
    for b in "$@"; do args="$args -e$debdir/debian/$pkg/$b"; done
    # shellcheck disable=SC2086
    deps=$(cd "$debdir" && dpkg-shlibdeps -O $args 2>"$build/shlibdeps.log") ||
        { cat "$build/shlibdeps.log" >&2; echo "package: dpkg-shlibdeps failed for $pkg" >&2; exit 1; }
    echo "${deps#shlibs:Depends=}"
}

maintainer="Parity developers <parity@invalid>"

# control PKG SECTION DEPENDS SUMMARY DESCRIPTION: DEBIAN/control, and
# DEBIAN/conffiles for what PKG has under /etc.
control() {
    root="$debdir/debian/$1"
    mkdir -p "$root/DEBIAN" "$root/usr/share/doc/$1"
    cp "$src/LICENSE" "$root/usr/share/doc/$1/copyright"
    size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
    {
        echo "Package: $1"
        echo "Version: $debversion"
        echo "Architecture: $arch"
        echo "Maintainer: $maintainer"
        echo "Installed-Size: $size"
        echo "Depends: $3"
        echo "Section: $2"
        echo "Priority: optional"
        echo "Description: $4"
        echo "$5" | fold -s -w 72 | sed 's/ *$//; s/^/ /'
    } >"$root/DEBIAN/control"
    if [ -d "$root/etc" ]; then
        (cd "$root" && find etc -type f | sed 's|^|/|' | sort) >"$root/DEBIAN/conffiles"
    fi
    (cd "$root" && find . -type f ! -path './DEBIAN/*' | sed 's|^\./||' | sort |
        xargs md5sum) >"$root/DEBIAN/md5sums"
}

# How postinst makes the parity user: systemd-sysusers with the shipped
# sysusers.d file when there is one, else (or without systemd-sysusers)
# adduser.
add_user='adduser --system --group --quiet --home /nonexistent --no-create-home parity'
if [ -n "$sysusers" ]; then
    make_user="if [ -f $sysusers ] && command -v systemd-sysusers >/dev/null 2>&1; then
        systemd-sysusers $sysusers
    elif ! getent passwd parity >/dev/null; then
        $add_user
    fi"
else
    make_user="if ! getent passwd parity >/dev/null; then
        $add_user
    fi"
fi

# scripts PKG UNIT: the daemon's postinst, prerm and postrm.
scripts() {
    root="$debdir/debian/$1"
    cat >"$root/DEBIAN/postinst" <<EOF
#!/bin/sh
# postinst of $1 (deploy/package.sh)
set -eu
if [ "\${1:-}" = configure ]; then
    # The system user the unit runs as.
    $make_user
    # Services only under systemd as PID 1. A first install starts
    # nothing: the daemon needs its keys and /etc/parity first
    # (docs/operations.md); an upgrade restarts it if it was running.
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload || true
        if [ -n "\${2:-}" ]; then
            systemctl try-restart $2 || true
        fi
    fi
fi
exit 0
EOF
    cat >"$root/DEBIAN/prerm" <<EOF
#!/bin/sh
# prerm of $1 (deploy/package.sh)
set -eu
case "\${1:-}" in
    remove|deconfigure)
        if [ -d /run/systemd/system ]; then
            systemctl stop $2 >/dev/null 2>&1 || true
        fi
        if command -v systemctl >/dev/null 2>&1; then
            systemctl disable $2 >/dev/null 2>&1 || true
        fi
        ;;
esac
exit 0
EOF
    cat >"$root/DEBIAN/postrm" <<EOF
#!/bin/sh
# postrm of $1 (deploy/package.sh). The parity user and what the
# daemon keeps in /var/lib (spool, keys, the collector's database) are
# kept, even on purge.
set -eu
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
EOF
    chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"
}

client_deps=$(shlibdeps parity usr/bin/parity)
agent_deps=$(shlibdeps parity-agent usr/bin/parity-agent)
collector_deps=$(shlibdeps parity-collector usr/bin/parity-collector)

control parity utils "$client_deps" \
    "benchmark verdicts that tell a real difference from noise (client)" \
    "Parity runs interleaved comparisons of whole commands on dedicated benchmark hosts and judges each host's result as win, parity or loss against that host's own noise floor. This package has parity, the user's command: local verdicts, imports and comparisons, keys, and the queries and jobs of a collector; with the man pages, the documentation and the examples."
control parity-agent utils "$agent_deps, parity (= $debversion), adduser" \
    "benchmark verdicts that tell a real difference from noise (agent)" \
    "Parity runs interleaved comparisons of whole commands on dedicated benchmark hosts and judges each host's result as win, parity or loss against that host's own noise floor. This package has parity-agent, which runs suites on a benchmark host, alone or for a collector (the parity-agent systemd unit), and its calibration program in /usr/libexec/parity."
control parity-collector utils "$collector_deps, parity (= $debversion), postgresql, adduser" \
    "benchmark verdicts that tell a real difference from noise (collector)" \
    "Parity runs interleaved comparisons of whole commands on dedicated benchmark hosts and judges each host's result as win, parity or loss against that host's own noise floor. This package has parity-collector, which stores what agents measure in PostgreSQL and computes every host's verdicts (the parity-collector systemd unit)."
scripts parity-agent parity-agent.service
scripts parity-collector parity-collector.service

for pkg in parity parity-agent parity-collector; do
    rm -f "$out/${pkg}_${debversion}_$arch.deb"
    dpkg-deb --root-owner-group -Zxz --build "$debdir/debian/$pkg" \
        "$out/${pkg}_${debversion}_$arch.deb" >/dev/null
    echo "package: $out/${pkg}_${debversion}_$arch.deb"
done
echo "package: done in $(($(date +%s) - start)) s"
