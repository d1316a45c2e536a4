#!/bin/sh
# test_cli.sh PARITY PARITY_COLLECTOR -- `parity keygen` and the collector's
# command line: file modes, refusals, and every usage and configuration
# message a user can hit. TAP on stdout. No PostgreSQL: configuration
# errors are found before the database is touched, and the bind check uses
# an unreachable --db (the collector keeps running without a database).
set -u
PARITY=$1
COLLECTOR=$2
T=$(mktemp -d /tmp/parity-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT
n=0
fails=0

ok() {   # ok COND-EXIT-STATUS DESCRIPTION
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else
        echo "not ok $n - $2"; fails=$((fails + 1)); fi
}

# check DESCRIPTION WANT_STATUS WANT_TEXT FILE -- command already run with
# its status in $st and output in FILE.
check() {
    if [ "$st" -eq "$2" ] && grep -qF -- "$3" "$4"; then r=0; else
        r=1; echo "# status $st (want $2); output:"; sed 's/^/#   /' "$4"
    fi
    ok $r "$1"
}

mode() { stat -c %a "$1"; }

# ---- parity keygen ------------------------------------------------------
"$PARITY" keygen agent1 --dir "$T/keys" >"$T/out" 2>&1; st=$?
check "keygen writes a pair" 0 "wrote $T/keys/agent1 (public) and $T/keys/agent1_secret (secret, 0600)" "$T/out"
ok $([ "$(mode "$T/keys/agent1_secret")" = 600 ]; echo $?) "secret file mode 0600"
ok $([ "$(mode "$T/keys/agent1")" = 644 ]; echo $?) "public file mode 0644"
pub=$(sed -n 's/^ *public-key = "\(.*\)"$/\1/p' "$T/keys/agent1")
ok $(grep -qF "public key $pub" "$T/out"; echo $?) "it prints the public key that is in the file"
ok $(grep -q '^fingerprint SHA256:[A-Za-z0-9+/]\{43\}$' "$T/out"; echo $?) "and its fingerprint (SHA256: and 43 base64 characters)"
ok $(grep -q 'secret-key' "$T/keys/agent1"; [ $? -ne 0 ]; echo $?) "the public file holds no secret key"
ok $(grep -q 'secret-key = "' "$T/keys/agent1_secret"; echo $?) "the secret file holds the secret key"

"$PARITY" keygen agent1 --dir "$T/keys" >"$T/out" 2>&1; st=$?
check "no overwrite without --force" 1 "parity keygen: $T/keys/agent1 exists; not replacing it without --force" "$T/out"
rm "$T/keys/agent1"
"$PARITY" keygen agent1 --dir "$T/keys" >"$T/out" 2>&1; st=$?
check "a lone secret file is not replaced either" 1 "parity keygen: $T/keys/agent1_secret exists; not replacing it without --force" "$T/out"
"$PARITY" keygen agent1 --dir "$T/keys" --force --json >"$T/out" 2>&1; st=$?
check "--force replaces" 0 '"name":"agent1"' "$T/out"
pub2=$(sed -n 's/^ *public-key = "\(.*\)"$/\1/p' "$T/keys/agent1")
ok $([ -n "$pub2" ] && [ "$pub2" != "$pub" ]; echo $?) "a new key after --force"
ok $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["public_key"]==sys.argv[2] and d["secret_file"].endswith("agent1_secret") and d["fingerprint"].startswith("SHA256:") and len(d["fingerprint"]) == 50' "$T/out" "$pub2"; echo $?) "--json: public_key, fingerprint and files"
ok $([ "$(mode "$T/keys/agent1_secret")" = 600 ]; echo $?) "secret still 0600 after --force"

"$PARITY" keygen >"$T/out" 2>&1; st=$?
check "NAME required" 2 "parity keygen: NAME is required (parity keygen --help)" "$T/out"
"$PARITY" keygen a b >"$T/out" 2>&1; st=$?
check "one NAME only" 2 "parity keygen: one NAME only (parity keygen --help)" "$T/out"
"$PARITY" keygen ../evil --dir "$T/keys" >"$T/out" 2>&1; st=$?
check "NAME with a slash refused" 2 "parity keygen: NAME \"../evil\": use letters, digits, '.', '_' or '-' (at most 64, not starting with '.' or '-')" "$T/out"
"$PARITY" keygen x --bogus >"$T/out" 2>&1; st=$?
check "unknown option" 2 "parity keygen: unknown or incomplete option --bogus (parity keygen --help)" "$T/out"
touch "$T/file"
"$PARITY" keygen x --dir "$T/file" >"$T/out" 2>&1; st=$?
check "--dir that is a file" 2 "parity keygen: --dir $T/file: not a directory" "$T/out"
"$PARITY" keygen --help >"$T/out" 2>&1; st=$?
check "keygen --help" 0 "usage: parity keygen NAME [--dir DIR] [--force] [--json]" "$T/out"

# ---- parity-collector usage --------------------------------------------
"$PARITY" keygen coll --dir "$T/keys" >/dev/null 2>&1
mkdir -p "$T/allow"
cp "$T/keys/agent1" "$T/allow/"
K="$T/keys/coll_secret"
A="$T/allow"
"$COLLECTOR" --help >"$T/out" 2>&1; st=$?
check "--help" 0 "usage: parity-collector --bind ENDPOINT --key FILE --allow DIR" "$T/out"
for flag in "--query-timeout T" "--keep-samples T" "--query-workers N" "--notify-url URL" "--notify-queue N"; do
    ok $(grep -q -- "^  $flag  " "$T/out"; echo $?) "--help lists $flag"
done
"$COLLECTOR" --version >"$T/out" 2>&1; st=$?
check "--version" 0 "parity-collector " "$T/out"

usage() {   # usage DESCRIPTION TEXT ARGS...
    d=$1; t=$2; shift 2
    "$COLLECTOR" "$@" >"$T/out" 2>&1; st=$?
    check "$d" 2 "parity-collector: $t" "$T/out"
}
usage "--bind required" "--bind ENDPOINT is required" --key "$K" --allow "$A"
usage "--key required" "--key FILE is required" --bind tcp://127.0.0.1:0 --allow "$A"
usage "--allow required" "--allow DIR is required" --bind tcp://127.0.0.1:0 --key "$K"
usage "--name with a space" "--name a b: want 1 to 127 characters without spaces or quotes" --name "a b"
usage "--name empty" "--name : want 1 to 127 characters without spaces or quotes" --name ""
usage "--heartbeat-ms range" "--heartbeat-ms 5: want a whole number of ms from 10 to 60000" --heartbeat-ms 5
usage "--floor-window range" "--floor-window 99: want a whole number from 100 to 1000000" --floor-window 99
usage "--parity range" "--parity 2: want a number from 0 to 1" --parity 2
usage "--log-level" "--log-level loud: want debug, info, warn or error" --log-level loud
usage "--query-timeout 0" "--query-timeout 0: want a duration from 1s to 1d, e.g. 30s or 5m" --query-timeout 0
usage "--query-timeout unknown unit" "--query-timeout 2x: want a duration from 1s to 1d, e.g. 30s or 5m" --query-timeout 2x
usage "--query-timeout over 1d" "--query-timeout 2d: want a duration from 1s to 1d, e.g. 30s or 5m" --query-timeout 2d
usage "--query-timeout under 1s" "--query-timeout 999ms: want a duration from 1s to 1d, e.g. 30s or 5m" --query-timeout 999ms
usage "--query-timeout negative" "--query-timeout -5s: want a duration from 1s to 1d, e.g. 30s or 5m" --query-timeout -5s
usage "--keep-samples under 1d" "--keep-samples 12h: want a duration from 1d to 36500d, e.g. 365d" --keep-samples 12h
usage "--keep-samples not a number" "--keep-samples abc: want a duration from 1d to 36500d, e.g. 365d" --keep-samples abc
usage "--keep-samples over 36500d" "--keep-samples 36501d: want a duration from 1d to 36500d, e.g. 365d" --keep-samples 36501d
usage "--query-workers 0" "--query-workers 0: want a whole number from 1 to 16" --query-workers 0
usage "--query-workers 17" "--query-workers 17: want a whole number from 1 to 16" --query-workers 17
usage "--notify-url not http" "--notify-url ftp://x/y: want an http:// or https:// URL with a host, at most 2000 bytes, no spaces" --notify-url ftp://x/y
usage "--notify-url no host" "--notify-url http:///y: want an http:// or https:// URL with a host, at most 2000 bytes, no spaces" --notify-url http:///y
usage "--notify-url nine" "--notify-url http://i/9: at most 8 URLs" --notify-url http://a/1 --notify-url http://b/2 --notify-url http://c/3 --notify-url http://d/4 --notify-url http://e/5 --notify-url http://f/6 --notify-url http://g/7 --notify-url http://h/8 --notify-url http://i/9
usage "--notify-queue 0" "--notify-queue 0: want a whole number from 1 to 100000" --notify-queue 0
usage "--notify-queue 100001" "--notify-queue 100001: want a whole number from 1 to 100000" --notify-queue 100001
usage "--enroll maybe" "--enroll maybe: want on or off" --enroll maybe
usage "--key-service yes" "--key-service yes: want on or off" --key-service yes
usage "--confirm maybe" "--confirm maybe: want on or off" --confirm maybe
# The edges are accepted: parsing goes on to the next complaint.
usage "--query-timeout 1s/1d, 86400, 1000ms, --keep-samples 1d/36500d, --query-workers 1/16 accepted" "--bind ENDPOINT is required" --query-timeout 1s --query-timeout 1d --query-timeout 86400 --query-timeout 1000ms --keep-samples 1d --keep-samples 36500d --query-workers 1 --query-workers 16 --key "$K" --allow "$A"
usage "unknown option" "unknown or incomplete option --frobnicate" --frobnicate
usage "option without its value" "unknown or incomplete option --bind" --bind
usage "stray argument" "unexpected argument extra" --bind tcp://127.0.0.1:0 extra

# ---- configuration errors: exit 1, before any database work -------------
cfg() {   # cfg DESCRIPTION TEXT ARGS...
    d=$1; t=$2; shift 2
    "$COLLECTOR" "$@" >"$T/out" 2>&1; st=$?
    check "$d" 1 "$t" "$T/out"
}
NODB="host=$T/nowhere connect_timeout=1"
cfg "missing key file" 'event=config_failed why="--key /nonexistent/k: cannot read a CURVE certificate (zcert_load failed; make one with `parity keygen`)"' --bind tcp://127.0.0.1:0 --key /nonexistent/k --allow "$A" --db "$NODB"
cfg "public-only key" "no secret key in it (give the _secret file that \`parity keygen\` wrote)" --bind tcp://127.0.0.1:0 --key "$A/agent1" --allow "$A" --db "$NODB"
cfg "allow-list missing" 'why="--allow /nonexistent/allow: not a readable directory"' --bind tcp://127.0.0.1:0 --key "$K" --allow /nonexistent/allow --db "$NODB"
cfg "a --bind that is not tcp://HOST:PORT: refused before any database work" 'event=config_failed why="--bind bogus: want tcp://HOST:PORT (e.g. tcp://*:5555)"' --bind bogus --key "$K" --allow "$A" --data-dir "$T/never-made"
ok $([ ! -e "$T/never-made" ]; echo $?) "and no data dir was made for it"
# --db with --data-dir: the data dir holds the lock, one collector each.
mkdir -p "$T/locked"
flock "$T/locked/collector.lock" sleep 20 &
locker=$!
sleep 0.3
cfg "--db with a --data-dir another collector holds" "event=config_failed why=\"data dir $T/locked is in use by another parity-collector (pid ?; $T/locked/collector.lock is locked)\"" --bind tcp://127.0.0.1:0 --key "$K" --allow "$A" --db "$NODB" --data-dir "$T/locked"
kill "$locker" 2>/dev/null; wait "$locker" 2>/dev/null
cfg "bad bind endpoint" 'event=server_failed why="--bind tcp://nonsense:x: zmq_bind: ' --bind tcp://nonsense:x --key "$K" --allow "$A" --db "$NODB"
ok $(grep -q 'event=db_down' "$T/out"; echo $?) "an unreachable --db is a warning, not a failure"
ok $(grep -q "$T/nowhere connect_timeout" "$T/out"; [ $? -ne 0 ]; echo $?) "the conninfo (it may hold a password) is not logged"

# A --db server that takes the connection and never answers: the connect
# gives up after 2 s (the loop must not hang for minutes) and the collector
# listens without its database.
python3 "$(dirname "$0")/mute_server.py" 12 >"$T/mute.port" &
mute=$!
i=0; while [ ! -s "$T/mute.port" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
timeout 7 "$COLLECTOR" --bind tcp://127.0.0.1:0 --key "$K" --allow "$A" --db "host=127.0.0.1 port=$(cat "$T/mute.port") dbname=x" >"$T/out" 2>&1; st=$?
check "a --db server that never answers: db_down after the 2 s connect timeout" 124 'timeout expired' "$T/out"
ok $(grep -q 'event=listening' "$T/out"; echo $?) "and the collector listens without its database"
kill "$mute" 2>/dev/null; wait "$mute" 2>/dev/null

mkdir "$T/empty-allow"
timeout 3 "$COLLECTOR" --bind tcp://127.0.0.1:0 --key "$K" --allow "$T/empty-allow" --db "$NODB" --enroll off >"$T/out" 2>&1; st=$?
check "an empty --allow dir, enrollment off: a warning at start (it keeps running)" 124 'level=warn event=no_keys why="no public certificate in --allow (or --admin): every agent and client is refused until one is added"' "$T/out"

ok $(grep -q 'enroll=off' "$T/out"; echo $?) "the listening line says enroll=off"
# With enrollment on (the default) agents enroll: no such warning.
timeout 3 "$COLLECTOR" --bind tcp://127.0.0.1:0 --key "$K" --allow "$T/empty-allow" --db "$NODB" >"$T/out" 2>&1; st=$?
ok $(grep -q 'event=listening.*enroll=on' "$T/out" && ! grep -q 'event=no_keys' "$T/out"; echo $?) "enrollment on by default: no no_keys warning"

# The key service: the bound port + 1; its failures are warnings.
timeout 3 "$COLLECTOR" --bind tcp://127.0.0.1:65535 --key "$K" --allow "$A" --db "$NODB" >"$T/out" 2>&1; st=$?
check "port 65535 has no port + 1: the key service is off, with a warning" 124 'level=warn event=key_service_failed why="no port + 1 for the key service in the bound endpoint"' "$T/out"
python3 -c 'import socket,sys,time
for _ in range(100):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1))
    except OSError:
        a.close(); continue
    b.listen(); a.close(); print(p, flush=True); time.sleep(10); break' >"$T/kport" &
holder=$!
i=0; while [ ! -s "$T/kport" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
KP=$(cat "$T/kport")
timeout 3 "$COLLECTOR" --bind "tcp://127.0.0.1:$KP" --key "$K" --allow "$A" --db "$NODB" >"$T/out" 2>&1; st=$?
check "port + 1 taken: a warning naming it, and the collector listens" 124 "level=warn event=key_service_failed why=\"zmq_bind(tcp://127.0.0.1:$((KP + 1))): Address already in use (agents given only the collector's fingerprint cannot fetch its key; give them its key file, or free the port)\"" "$T/out"
ok $(grep -q "event=listening.*key_service=off" "$T/out"; echo $?) "and its listening line says key_service=off"
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
timeout 3 "$COLLECTOR" --bind tcp://127.0.0.1:0 --key "$K" --allow "$A" --db "$NODB" --key-service off >"$T/out" 2>&1; st=$?
ok $(grep -q "event=listening.*key_service=off" "$T/out"; echo $?) "--key-service off: no key service"

# --fingerprint: what agents pin, the same as `parity keygen` printed.
"$PARITY" keygen fp --dir "$T/fpkeys" >"$T/keygen.out" 2>&1
"$COLLECTOR" --fingerprint --key "$T/fpkeys/fp_secret" >"$T/out" 2>&1; st=$?
check "--fingerprint prints the key's fingerprint" 0 "$(sed -n 's/^fingerprint //p' "$T/keygen.out")" "$T/out"
ok $([ "$(wc -l <"$T/out")" -eq 1 ] && grep -q '^SHA256:[A-Za-z0-9+/]\{43\}$' "$T/out"; echo $?) "one line, SHA256: and 43 base64 characters"
"$COLLECTOR" --fingerprint >"$T/out" 2>&1; st=$?
check "--fingerprint without --key" 2 "parity-collector: --fingerprint needs --key FILE" "$T/out"
"$COLLECTOR" --fingerprint --key /nonexistent/k >"$T/out" 2>&1; st=$?
check "--fingerprint of a missing key" 1 "parity-collector: --key /nonexistent/k: cannot read a CURVE certificate (zcert_load failed; make one with \`parity keygen\`)" "$T/out"

LONG="$T/$(printf 'd%.0s' $(seq 1 90))"
cfg "a data dir too long for the server's socket" "path longer than 80 characters (the server's socket path would not fit)" --bind tcp://127.0.0.1:0 --key "$K" --allow "$A" --data-dir "$LONG"
PARITY_PG_BINDIR=/nonexistent/bin "$COLLECTOR" --bind tcp://127.0.0.1:0 --key "$K" --allow "$A" --data-dir "$T/data-nobin" >"$T/out" 2>&1; st=$?
check "PARITY_PG_BINDIR without PostgreSQL" 1 'why="no PostgreSQL binaries: PARITY_PG_BINDIR=/nonexistent/bin has no executable initdb"' "$T/out"

if [ "$(id -u)" -eq 0 ]; then
    mkdir -m 0700 "$T/closed"
    cfg "as root, a data dir the postgres user cannot reach" "the postgres user cannot reach it: $T/closed is mode 0700 (chmod o+x $T/closed, or choose another --data-dir)" --bind tcp://127.0.0.1:0 --key "$K" --allow "$A" --data-dir "$T/closed/data"
fi

echo "1..$n"
[ $fails -eq 0 ]
