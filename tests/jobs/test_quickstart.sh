#!/bin/sh
# test_quickstart.sh BUILD_DIR [root|user] -- deploy/quickstart.sh end to
# end (TAP). root (the default): twice in a row on one temp var dir (the
# second reuses keys, data and port, and runs with --keep and a relative
# build dir, then --stop), then the refusals (a var dir postgres cannot
# reach, a kept port in use). user: as root, once as the ordinary user
# nobody. Each checks what it prints and that it leaves nothing running.
# Two meson tests, one per mode, so that they run side by side.
set -u
BUILD=$(cd "$1" && pwd)
MODE=${2:-root}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
VAR=$(mktemp -d /tmp/parity-quickstart-XXXXXX)
chmod 755 "$VAR"   # the ordinary-user pass lives below it
n=0; failed=0
ok() {   # ok STATUS DESCRIPTION
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else
        echo "not ok $n - $2"; failed=$((failed + 1)); fi
}
has() { grep -q -- "$1" "$VAR/out.txt"; }

# After the --keep pass (its build dir relative to the caller's
# directory): what it says, what it left running, the client.yaml it
# wrote; then --stop twice: what each says, and nothing left running.
check_keep() {
    has "quickstart: still running. To use them from this shell:"
    ok $? "--keep says they are still running"
    has "parity run example --wait --var input=example-input.txt$"
    ok $? "--keep prints a run command that works with both agents on one machine"
    has "^Stop everything with: PARITY_QUICKSTART_VAR=$VAR $SRC/deploy/quickstart.sh --stop$"
    ok $? "--keep's stop command names this var dir"
    left=$(pgrep -f -- "--data-dir $VAR/collector|--spool $VAR/agents" | wc -l)
    [ "$left" -eq 3 ]; ok $? "--keep left the collector and both agents running ($left)"
    # The settings file alone (no PARITY_* in the environment) reaches it.
    mkdir -p "$VAR/xdg/parity" && ln -sf "$VAR/client.yaml" "$VAR/xdg/parity/client.yaml"
    env -u PARITY_COLLECTOR -u PARITY_COLLECTOR_KEY -u PARITY_KEY \
        XDG_CONFIG_HOME="$VAR/xdg" "$BUILD/collector/client/parity" hosts \
        >"$VAR/hosts.txt" 2>&1 && grep -q "alpha .*online" "$VAR/hosts.txt"
    ok $? "parity with the client.yaml the quickstart wrote, and nothing else, lists the hosts"
    # The dashboard's login link signs in (a session cookie, on to the
    # overview), and the read token of var/http-tokens reads the API.
    url=$(cat "$VAR/http-url")
    curl -s -i -m 20 "$url" >"$VAR/login.txt" 2>&1
    grep -q "^HTTP/1.1 303" "$VAR/login.txt" &&
        grep -qi "^Set-Cookie: parity_session=[0-9a-f]*; HttpOnly; SameSite=Strict" "$VAR/login.txt"
    ok $? "--keep: the login link of var/http-url signs in: 303 and an HttpOnly, SameSite=Strict cookie"
    viewer=$(awk '$1 == "viewer" { print $3 }' "$VAR/http-tokens")
    curl -s -m 20 -H "Authorization: Bearer $viewer" "${url%%/login*}/api/v1/hosts" >"$VAR/api.txt" 2>&1
    grep -q '"name":"alpha"' "$VAR/api.txt" && grep -q '"name":"beta"' "$VAR/api.txt"
    ok $? "--keep: GET /api/v1/hosts with the viewer token lists both agents"
    [ "$(stat -c %a "$VAR/http-tokens")" = 600 ]; ok $? "var/http-tokens is mode 600"
    PARITY_QUICKSTART_VAR=$VAR "$SRC/deploy/quickstart.sh" --stop >"$VAR/out.txt" 2>&1
    [ "$(cat "$VAR/out.txt")" = "quickstart: stopped the collector, its PostgreSQL and both agents under $VAR" ]
    ok $? "--stop says what it stopped: $(cat "$VAR/out.txt")"
    left=$(pgrep -f -- "--data-dir $VAR/collector|--spool $VAR/agents" | wc -l)
    [ "$left" -eq 0 ] && [ ! -f "$VAR/collector/pg/postmaster.pid" ]
    ok $? "--stop: nothing left running, PostgreSQL stopped ($left)"
    PARITY_QUICKSTART_VAR=$VAR "$SRC/deploy/quickstart.sh" --stop >"$VAR/out.txt" 2>&1
    has "^quickstart: nothing was running under $VAR (set PARITY_QUICKSTART_VAR to the var dir given to --keep)$"
    ok $? "--stop again: nothing was running, says so"
}

# As root, the user mode runs it as the ordinary user nobody (packages
# already installed, no sudo) in a var dir of its own.
passes="first second"
if [ "$MODE" = user ]; then
    if [ "$(id -u)" -ne 0 ] || ! command -v runuser >/dev/null 2>&1 ||
       ! runuser -u nobody -- test -x "$BUILD/collector/client/parity"; then
        echo "1..0 # SKIP the ordinary-user pass needs root, runuser and a build the user nobody can run"
        rm -rf "$VAR"
        exit 0
    fi
    passes="ordinary-user"
fi
for pass in $passes; do
    start=$(date +%s)
    qvar=$VAR
    as=""
    cwd=/tmp qbuild=$BUILD keep=""
    if [ "$pass" = ordinary-user ]; then
        qvar=$VAR/user-var
        mkdir -p "$qvar" && chown nobody "$qvar"
        as="runuser -u nobody --"
    fi
    if [ "$pass" = second ]; then   # --keep, the build named from its parent
        cwd=$BUILD/.. qbuild=$(basename "$BUILD") keep=--keep
    fi
    (cd "$cwd" && $as env PARITY_QUICKSTART_VAR=$qvar \
        PARITY_QUICKSTART_BUILD=$qbuild \
        timeout 170 "$SRC/deploy/quickstart.sh" $keep) >"$VAR/out.txt" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    ok $rc "$pass run${keep:+ with --keep and a relative build dir} exits 0 in ${took} s"
    case $pass in
        first) port1=$(cat "$VAR/port" 2>/dev/null) ;;
        second) [ -n "$port1" ] && [ "$(cat "$VAR/port")" = "$port1" ]
                ok $? "second run reuses the first run's port ($port1)"
                grep -qx "collector: tcp://127.0.0.1:$port1" "$VAR/client.yaml"
                ok $? "client.yaml names that port" ;;
    esac
    [ $rc -eq 0 ] || sed 's/^/# /' "$VAR/out.txt" | tail -40
    has "alpha .*online" && has "beta .*online"; ok $? "$pass: both agents online in parity hosts"
    has "running .*compress"; ok $? "$pass: progress lines name host and benchmark"
    has "alpha .*startup: complete" && has "beta .*startup: complete"
    ok $? "$pass: --wait tells the end of the short startup benchmark on both hosts"
    # The first screen has no error that is not the user's: no line of
    # the shell's own (a redirect of a log not made yet, on a fresh var).
    ! grep -E "quickstart\.sh: [0-9]+: |No such file or directory" \
        "$VAR/out.txt" >"$VAR/shell-errors.txt"
    ok $? "$pass: no shell error on the screen$(head -c 200 "$VAR/shell-errors.txt" | tr '\n' ' ')"
    grep -Eq "^quickstart: the dashboard: http://127\.0\.0\.1:[0-9]+/login\?token=[0-9a-f]{32} \(also in $qvar/http-url\)$" "$VAR/out.txt"
    ok $? "$pass: prints the dashboard's login link and where it is kept"
    has "^quickstart: checking the Debian packages" &&
        has "^quickstart: using the build in $BUILD$"
    ok $? "$pass: says what it does before the packages and the build"
    case $pass in
        first|ordinary-user) has "^quickstart: making the admin key pair in $qvar/keys$" ;;
        *) ! has "making the" ;;
    esac
    ok $? "$pass: says when it makes keys (not when it reuses them)"
    has "^job [0-9a-f]*  suite example  ended  tags source=quickstart"; ok $? "$pass: the verdict table's header"
    # A cell: outcome, ratio and the tolerance, "win 0.202 (tol. 0.040)".
    cell="[0-9.]+ \\(tol\\. [0-9.]+\\)"
    grep -E "^compress +gzip-1 vs gzip-9 +(win|loss) $cell +(win|loss) $cell " "$VAR/out.txt" >/dev/null
    rc=$?
    ok $rc "$pass: compress is a clear win or loss on both hosts"
    # Kept for a failure of the rows: the table as printed.
    [ $rc -eq 0 ] || grep -A12 "^job [0-9a-f]*  suite example" "$VAR/out.txt" | sed 's/^/# /'
    cp "$VAR/out.txt" "$VAR/out-$pass.txt"
    grep -E "^same +md5sum-a vs md5sum-b +parity $cell +parity $cell .*parity on all 2 hosts" "$VAR/out.txt" >/dev/null
    ok $? "$pass: same program twice is parity on both hosts"
    # Floor-decided: parity on a noisy host, not promised on a quiet one.
    grep -E "^startup +true vs echo +(win|parity|loss) $cell +(win|parity|loss) $cell " "$VAR/out.txt" >/dev/null
    ok $? "$pass: the startup row has both hosts' verdicts"
    if [ -n "$keep" ]; then
        check_keep
        continue
    fi
    has "quickstart: stopped the collector, its PostgreSQL and both agents"; ok $? "$pass: says everything stopped"
    left=$(pgrep -f -- "--data-dir $qvar/collector|--spool $qvar/agents" | wc -l)
    [ "$left" -eq 0 ]; ok $? "$pass: no collector or agent left running ($left)"
    [ ! -f "$qvar/collector/pg/postmaster.pid" ]; ok $? "$pass: PostgreSQL stopped"
done
if [ "$MODE" = user ]; then
    echo "1..$n"
    if [ $failed -eq 0 ]; then rm -rf "$VAR"; else echo "# kept $VAR"; fi
    [ $failed -eq 0 ]
    exit
fi
if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
    # A var dir the postgres user cannot reach is named, not a PostgreSQL
    # error from deep inside the collector.
    mkdir -m 700 "$VAR/private"
    PARITY_QUICKSTART_VAR=$VAR/private/var PARITY_QUICKSTART_BUILD=$BUILD \
        timeout 60 "$SRC/deploy/quickstart.sh" >"$VAR/out.txt" 2>&1
    rc=$?
    [ $rc -ne 0 ] && has "the postgres user cannot reach $VAR/private/var"
    ok $? "a var dir postgres cannot reach is refused with a clear message"
fi
[ -f "$VAR/keys/admin_secret" ] && [ -d "$VAR/collector/pg" ]
ok $? "keys and data kept in the var dir for the next run"

# The kept port taken by something else: named, with what to do.
port=$(cat "$VAR/port")
python3 -c 'import socket, sys, time; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(30)' "$port" &
holder=$!
sleep 0.5
PARITY_QUICKSTART_VAR=$VAR PARITY_QUICKSTART_BUILD=$BUILD     timeout 60 "$SRC/deploy/quickstart.sh" >"$VAR/out.txt" 2>&1
rc=$?
kill $holder 2>/dev/null; wait $holder 2>/dev/null
[ $rc -ne 0 ] && has "^quickstart: port $port on 127.0.0.1 is in use (kept in $VAR/port from an earlier run): stop what listens there, or remove $VAR/port to pick another$"
ok $? "a kept port in use is refused, naming the port and what to do"
echo "1..$n"
if [ $failed -eq 0 ]; then rm -rf "$VAR"; else echo "# kept $VAR"; fi
[ $failed -eq 0 ]
