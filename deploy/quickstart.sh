#!/bin/sh
# deploy/quickstart.sh -- the README's first command: Parity's main job on
# this machine, end to end.
#
#   install what is missing, build, make keys (collector, agents alpha and
#   beta, an admin client) under ./var/keys, start parity-collector with
#   its own PostgreSQL under ./var/collector, start the two agents with
#   the bundled suites (examples/suites), run the example suite on both
#   through `parity run example --wait`, print the verdict table, and stop
#   everything again. A second run reuses keys and data. The collector
#   also serves its dashboard and JSON API on 127.0.0.1 (docs/http.md),
#   with a read and a triage token in ./var/http-tokens; the login link
#   (the triage token's) is printed and kept in ./var/http-url.
#
#   deploy/quickstart.sh          all of that
#   deploy/quickstart.sh --keep   leave collector and agents running and
#                                 say how to use and stop them
#   deploy/quickstart.sh --stop   stop what --keep left running
#
# Environment: PARITY_QUICKSTART_VAR (default ./var), PARITY_QUICKSTART_PORT
# (default: the port of the last run, kept in VAR/port, or a free one; the
# client's settings for it are in VAR/client.yaml), PARITY_QUICKSTART_BUILD (an existing meson build
# dir: skip deploy/build.sh; the tests use it).
set -eu
CALLER=$(pwd)
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VAR=${PARITY_QUICKSTART_VAR:-$ROOT/var}
case $VAR in
    /*) ;;
    *) VAR=$CALLER/$VAR ;;   # the agents start from their own directories
esac
KEEP=0
case "${1:-}" in
    --keep) KEEP=1 ;;
    --stop) ;;
    "") ;;
    *) echo "usage: deploy/quickstart.sh [--keep | --stop]" >&2; exit 2 ;;
esac

# stop_pid FILE: SIGTERM the process in FILE, wait up to 30 s for it.
# STOPPED counts the processes that were still running.
STOPPED=0
stop_pid() {
    [ -f "$1" ] || return 0
    pid=$(cat "$1")
    if kill -0 "$pid" 2>/dev/null; then
        STOPPED=$((STOPPED + 1))
        kill -TERM "$pid" 2>/dev/null || true
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do
            sleep 0.1; i=$((i + 1))
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$1"
}

stop_all() {
    stop_pid "$VAR/agents/alpha/agent.pid"
    stop_pid "$VAR/agents/beta/agent.pid"
    # The collector stops its PostgreSQL on SIGTERM.
    stop_pid "$VAR/collector.pid"
}

# How to name this var dir again in a command we print.
if [ -n "${PARITY_QUICKSTART_VAR:-}" ]; then
    AGAIN="PARITY_QUICKSTART_VAR=$VAR $ROOT/deploy/quickstart.sh"
else
    AGAIN="$ROOT/deploy/quickstart.sh"
fi

if [ "${1:-}" = "--stop" ]; then
    stop_all
    if [ "$STOPPED" -eq 0 ]; then
        echo "quickstart: nothing was running under $VAR (set" \
             "PARITY_QUICKSTART_VAR to the var dir given to --keep)"
    else
        echo "quickstart: stopped the collector, its PostgreSQL and both" \
             "agents under $VAR"
    fi
    exit 0
fi

echo "quickstart: checking the Debian packages Parity needs" \
     "(deploy/install.sh asks apt only for missing ones)"
deploy/install.sh
if [ -n "${PARITY_QUICKSTART_BUILD:-}" ]; then
    # Absolute: the agents start from their own directories.
    BUILD=$(cd "$CALLER" && cd "$PARITY_QUICKSTART_BUILD" && pwd) || {
        echo "quickstart: PARITY_QUICKSTART_BUILD=$PARITY_QUICKSTART_BUILD" \
             "is not a directory" >&2; exit 1; }
    echo "quickstart: using the build in $BUILD"
else
    echo "quickstart: building parity, parity-collector and parity-agent" \
         "into $ROOT/build (meson and ninja; the first build takes a few" \
         "minutes, a later one seconds)"
    deploy/build.sh
    BUILD=$ROOT/build
fi
PARITY=$BUILD/collector/client/parity
COLLECTOR=$BUILD/collector/parity-collector
AGENT=$BUILD/agent/parity-agent
for exe in "$PARITY" "$COLLECTOR" "$AGENT"; do
    [ -x "$exe" ] || { echo "quickstart: $exe was not built" >&2; exit 1; }
done

# A run left over from --keep (or a crash) would hold the data directory.
stop_all

mkdir -p "$VAR/keys" "$VAR/allow" "$VAR/admin" "$VAR/agents/alpha" \
         "$VAR/agents/beta"
# The postgres user (when we are root) must be able to reach var/collector.
chmod 755 "$VAR"
if [ "$(id -u)" -eq 0 ] && command -v runuser >/dev/null 2>&1 &&
   id postgres >/dev/null 2>&1 && ! runuser -u postgres -- test -x "$VAR"; then
    echo "quickstart: the postgres user cannot reach $VAR (a parent directory" \
         "is not world-searchable); run with PARITY_QUICKSTART_VAR=/var/tmp/parity-quickstart" >&2
    exit 1
fi
for name in collector alpha beta admin; do
    if [ ! -f "$VAR/keys/${name}_secret" ]; then
        echo "quickstart: making the $name key pair in $VAR/keys"
        "$PARITY" keygen "$name" --dir "$VAR/keys" --force >/dev/null
    fi
done
cp "$VAR/keys/alpha" "$VAR/keys/beta" "$VAR/allow/"
cp "$VAR/keys/admin" "$VAR/admin/"

# One port per var dir: the first run picks a free one and keeps it in
# $VAR/port, so that the settings it prints, and $VAR/client.yaml, stay
# valid from one run to the next.
if [ -n "${PARITY_QUICKSTART_PORT:-}" ]; then
    PORT=$PARITY_QUICKSTART_PORT
elif [ -s "$VAR/port" ]; then
    PORT=$(cat "$VAR/port")
else
    PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
case $PORT in
    ''|*[!0-9]*) echo "quickstart: port \"$PORT\" (from ${PARITY_QUICKSTART_PORT:+PARITY_QUICKSTART_PORT}${PARITY_QUICKSTART_PORT:-$VAR/port}) is not a number" >&2
                 exit 1 ;;
esac
if ! python3 -c 'import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1])))' "$PORT" 2>/dev/null; then
    echo "quickstart: port $PORT on 127.0.0.1 is in use (kept in $VAR/port from an earlier run): stop what listens there, or remove $VAR/port to pick another" >&2
    exit 1
fi
echo "$PORT" >"$VAR/port"
ENDPOINT=tcp://127.0.0.1:$PORT
# The dashboard and the JSON API (docs/http.md) on loopback, on a port
# kept in $VAR/http-port as the other is, with a tokens file of a read
# token and a triage token made at the first run.
if [ -s "$VAR/http-port" ]; then
    HTTP_PORT=$(cat "$VAR/http-port")
else
    HTTP_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
case $HTTP_PORT in
    ''|*[!0-9]*) echo "quickstart: port \"$HTTP_PORT\" (from $VAR/http-port) is not a number" >&2
                 exit 1 ;;
esac
echo "$HTTP_PORT" >"$VAR/http-port"
if [ ! -s "$VAR/http-tokens" ]; then
    ( umask 077
      python3 -c 'import secrets
print("# NAME ROLE TOKEN (docs/http.md, \"Tokens\"); written by deploy/quickstart.sh")
print("viewer read", secrets.token_hex(16))
print("quickstart triage", secrets.token_hex(16))' >"$VAR/http-tokens" )
fi
chmod 600 "$VAR/http-tokens"
TRIAGE_TOKEN=$(awk '$1 == "quickstart" { print $3 }' "$VAR/http-tokens")
HTTP_URL=http://127.0.0.1:$HTTP_PORT
# The client's settings, for `parity` from any shell: copy or link it to
# ~/.config/parity/client.yaml (absolute paths: a relative one would be
# read relative to the link's directory).
cat >"$VAR/client.yaml" <<EOF
# Written by deploy/quickstart.sh: the collector it starts and its admin key.
collector: $ENDPOINT
collector_key: $VAR/keys/collector
key: $VAR/keys/admin
EOF

if [ $KEEP = 0 ]; then
    trap 'stop_all; echo "quickstart: stopped the collector, its PostgreSQL and both agents (data kept in $VAR; run again to reuse it)"' EXIT
    trap 'exit 130' INT TERM
fi

echo "quickstart: starting parity-collector on $ENDPOINT (PostgreSQL under $VAR/collector)"
: >"$VAR/collector.log"
"$COLLECTOR" --bind "$ENDPOINT" --key "$VAR/keys/collector_secret" \
    --allow "$VAR/allow" --admin "$VAR/admin" --data-dir "$VAR/collector" \
    --http "127.0.0.1:$HTTP_PORT" --http-tokens "$VAR/http-tokens" \
    >>"$VAR/collector.log" 2>&1 &
echo $! >"$VAR/collector.pid"
i=0
until grep -q "event=listening" "$VAR/collector.log"; do
    if ! kill -0 "$(cat "$VAR/collector.pid")" 2>/dev/null || [ $i -ge 600 ]; then
        echo "quickstart: the collector did not start; its log:" >&2
        tail -n 20 "$VAR/collector.log" >&2
        exit 1
    fi
    sleep 0.1; i=$((i + 1))
done
# The login link signs a browser in with the triage token (a session
# cookie); it stays the same from run to run.
echo "$HTTP_URL/login?token=$TRIAGE_TOKEN" >"$VAR/http-url"
echo "quickstart: the dashboard: $(cat "$VAR/http-url") (also in $VAR/http-url)"

# Where this start's lines begin in each agent's log (they append).
for host in alpha beta; do
    if [ -f "$VAR/agents/$host/agent.log" ]; then
        wc -l <"$VAR/agents/$host/agent.log" >"$VAR/agents/$host/log.start"
    else
        echo 0 >"$VAR/agents/$host/log.start"   # the first start
    fi
done
for host in alpha beta; do
    dir=$VAR/agents/$host
    # Each agent in its own directory: the example suite's input file is a
    # relative path (--var input=... below), so the two never share it.
    (cd "$dir" && exec "$AGENT" --collector "$ENDPOINT" \
        --collector-key "$VAR/keys/collector" --key "$VAR/keys/$host" \
        --suites "$ROOT/examples/suites" --spool "$dir/spool" \
        --name "$host" >>"$dir/agent.log" 2>&1) &
    echo $! >"$dir/agent.pid"
done
echo "quickstart: started agents alpha and beta (suites from examples/suites)"

PARITY_COLLECTOR=$ENDPOINT
PARITY_COLLECTOR_KEY=$VAR/keys/collector
PARITY_KEY=$VAR/keys/admin
export PARITY_COLLECTOR PARITY_COLLECTOR_KEY PARITY_KEY

# Both agents online (their Hello stored) and calibrated: 200 quiet no-op
# runs taken since this start, and a floor of quiet runs. An agent
# calibrates once idle, in batches of 20 taken when the machine is quiet
# (docs/agent.md "Calibration"), about 12 s for both: the job's verdicts
# then use a floor of this minute, not one of the last run.
filled() {
    for host in alpha beta; do
        tail -n +"$(( $(cat "$VAR/agents/$host/log.start") + 1 ))" \
            "$VAR/agents/$host/agent.log" | awk '
            match($0, /quiet_since_start=[0-9]+/) {
                n = substr($0, RSTART + 18, RLENGTH - 18) + 0
                if (n >= 200) ok = 1
            }
            END { exit ok ? 0 : 1 }' || return 1
    done
}
hosts_ready() {
    "$PARITY" hosts --json 2>/dev/null | python3 -c '
import json, sys
h = {x["name"]: x for x in json.load(sys.stdin)["hosts"]}
want = sys.argv[1]
# calibrated: a floor from 100 quiet runs (an older collector, which
# does not say, from any 100)
ok = all(h.get(n, {}).get("online") and
         (want == "online" or h[n].get("floor_quiet",
                                       not h[n].get("floor_default", True)))
         for n in ("alpha", "beta"))
sys.exit(0 if ok else 1)' "$1"
}
i=0
until hosts_ready online; do
    if [ $i -ge 60 ]; then
        echo "quickstart: the agents did not come online; their logs:" >&2
        tail -n 5 "$VAR/agents/alpha/agent.log" "$VAR/agents/beta/agent.log" >&2
        exit 1
    fi
    sleep 0.5; i=$((i + 1))
done
echo "quickstart: the agents are online; waiting for them to calibrate" \
     "(batches of no-op runs while the machine is quiet)"
i=0
# Asked once a second: each question is work the agents' look at the
# machine sees.
until { filled && hosts_ready calibrated; } || [ $i -ge 60 ]; do
    sleep 1; i=$((i + 1))
done
{ filled && hosts_ready calibrated; } ||
    echo "quickstart: fewer than 200 quiet calibration runs after 60 s" \
         "(a busy machine): the floors pool busy runs too"
echo
"$PARITY" hosts
echo
echo "quickstart: parity run example --wait"
status=0
"$PARITY" run example --wait --var input=example-input.txt \
    --tag source=quickstart || status=$?

if [ $KEEP = 1 ]; then
    cat <<EOF

quickstart: still running. To use them from this shell:
  export PARITY_COLLECTOR=$ENDPOINT
  export PARITY_COLLECTOR_KEY=$VAR/keys/collector
  export PARITY_KEY=$VAR/keys/admin
  $PARITY verdicts --latest
  $PARITY run example --wait --var input=example-input.txt
(both agents run on this machine: --var input=example-input.txt gives each
its own input file in its directory; the suite's default is one shared path)
The dashboard (open the link once: it signs the browser in):
  $(cat "$VAR/http-url")
and the JSON API, with the read token of $VAR/http-tokens:
  curl -H "Authorization: Bearer \$(awk '\$1 == "viewer" { print \$3 }' $VAR/http-tokens)" $HTTP_URL/api/v1/hosts
or, from any shell, with the settings file this run wrote (the same port
and keys every run):
  mkdir -p ~/.config/parity && ln -sf $VAR/client.yaml ~/.config/parity/client.yaml
Stop everything with: $AGAIN --stop
EOF
fi
exit $status
