#!/bin/sh
# test_quickstart.sh BUILD_DIR -- deploy/quickstart.sh end to end (TAP):
# twice in a row on one temp var dir (the second reuses keys and data),
# checking what it prints and that it leaves nothing running.
set -u
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
VAR=$(mktemp -d /tmp/parity-quickstart-XXXXXX)
n=0; failed=0
ok() {   # ok STATUS DESCRIPTION
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else
        echo "not ok $n - $2"; failed=$((failed + 1)); fi
}
has() { grep -q -- "$1" "$VAR/out.txt"; }

for pass in first second; do
    start=$(date +%s)
    PARITY_QUICKSTART_VAR=$VAR PARITY_QUICKSTART_BUILD=$BUILD \
        timeout 170 "$SRC/deploy/quickstart.sh" >"$VAR/out.txt" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    ok $rc "$pass run exits 0 in ${took} s"
    [ $rc -eq 0 ] || sed 's/^/# /' "$VAR/out.txt" | tail -40
    has "alpha .*online" && has "beta .*online"; ok $? "$pass: both agents online in parity hosts"
    has "running .*compress"; ok $? "$pass: progress lines name host and benchmark"
    has "^job [0-9a-f]*  suite example  ended  tags source=quickstart"; ok $? "$pass: the verdict table's header"
    grep -E "^compress +gzip-1 vs gzip-9 +(win|loss) [0-9.]+ +(win|loss) [0-9.]+ " "$VAR/out.txt" >/dev/null
    ok $? "$pass: compress is a clear win or loss on both hosts"
    grep -E "^same +md5sum-a vs md5sum-b +parity [0-9.]+ +parity [0-9.]+ .*parity on all 2 hosts" "$VAR/out.txt" >/dev/null
    ok $? "$pass: same program twice is parity on both hosts"
    grep -E "^startup +true vs echo +parity [0-9.]+ +parity [0-9.]+ " "$VAR/out.txt" >/dev/null
    ok $? "$pass: the floor-decided startup is parity"
    has "quickstart: stopped the collector, its PostgreSQL and both agents"; ok $? "$pass: says everything stopped"
    left=$(pgrep -f -- "--data-dir $VAR/collector|--spool $VAR/agents" | wc -l)
    [ "$left" -eq 0 ]; ok $? "$pass: no collector or agent left running ($left)"
    [ ! -f "$VAR/collector/pg/postmaster.pid" ]; ok $? "$pass: PostgreSQL stopped"
done
[ -f "$VAR/keys/admin_secret" ] && [ -d "$VAR/collector/pg" ]
ok $? "keys and data kept in the var dir for the next run"
echo "1..$n"
if [ $failed -eq 0 ]; then rm -rf "$VAR"; else echo "# kept $VAR"; fi
[ $failed -eq 0 ]
