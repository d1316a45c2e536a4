#!/bin/sh
# http_bench.sh BUILD_DIR [options] -- the HTTP side's benchmark
# (docs/performance.md, "HTTP"). Not a registered test; bounded in time
# and count; loopback only.
#
# Starts BUILD_DIR/collector/parity-collector with its private PostgreSQL
# and --http on 127.0.0.1 (a read token, --http-rate 0), then
# tests/bench/fleet-load (fleet_load.c) with --agents CURVE agents, the
# first --streamers of them streaming runs: --warm s of that first make
# the fleet's hosts and their history. Then --pairs pairs of phases of
# --duration s each, in turn (quiet, http, quiet, http, ...), each a
# fresh fleet-load run with --queries 0 (ingest and liveness alone):
#
#   quiet  fleet-load alone;
#   http   the same with wrk (Debian's) beside it at --rate requests a
#          second in all: GET /api/v1/hosts on one connection and GET /
#          (the dashboard's overview) on another, a tenth of them,
#          paced by wrk's delay() (one request per connection at a time).
#
# Prints per phase the agents' ack p99 (first send to its Ack) and the
# HTTP latencies wrk measured (p50, p99), then the ratio of the ack p99
# with HTTP to the ack p99 without it (the peer is the same collector in
# the same run, a phase apart: the median of the pairs' ratios, and the
# ratio of the two phases' median p99s), and one JSON line.
#
# Options: --agents N (1000) --streamers N (100) --warm S (60)
#   --duration S (60) --pairs N (2) --rate N (50) --keep (the temp dir)
set -eu
. "$(dirname "$0")/bench_lib.sh"
bench_root "$0" 2,27 "$@"
BUILD=$(cd "$1" && pwd)
shift
AGENTS=1000 STREAMERS=100 WARM=60 DURATION=60 PAIRS=2 RATE=50 KEEP=0
take_options http_bench.sh "--agents=AGENTS --streamers=STREAMERS
    --warm=WARM --duration=DURATION --pairs=PAIRS --rate=RATE
    --keep=KEEP!" "$@"
need_numbers http_bench.sh "$AGENTS" "$STREAMERS" "$WARM" "$DURATION" \
    "$PAIRS" "$RATE"
[ "$DURATION" -le 600 ] && [ "$WARM" -le 600 ] && [ "$PAIRS" -le 9 ] &&
    [ "$RATE" -ge 10 ] && [ "$RATE" -le 1000 ] ||
    { echo "http_bench.sh: --duration, --warm <= 600, --pairs <= 9," \
           "--rate 10..1000" >&2; exit 2; }
command -v wrk >/dev/null || { echo "http_bench.sh: wrk is missing" \
    "(Debian's wrk; deploy/install.sh)" >&2; exit 1; }

log() { echo "http_bench: $*"; }
ninja -C "$BUILD" -j1 collector/parity-collector tests/bench/fleet-load \
    >/dev/null
FL=$BUILD/tests/bench/fleet-load
PGBIN=$(pg_bindir)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

W=$(mktemp -d /tmp/parity-http-bench-XXXXXX)
chmod 0755 "$W"   # the postgres user must reach DATA/pg
cleanup() {
    stop_collector 2>/dev/null || true
    [ "$KEEP" = 1 ] && log "kept $W" || rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$FL" keygen "$W/keys" "$AGENTS"
TOKEN=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
( umask 077; echo "bench read $TOKEN" >"$W/tokens" )
PORT=$(free_port)
HPORT=$(free_port)
"$BUILD/collector/parity-collector" --bind "tcp://127.0.0.1:$PORT" \
    --key "$W/keys/collector_secret" --allow "$W/keys/allow" \
    --admin "$W/keys/admin" --data-dir "$W/data" \
    --http "127.0.0.1:$HPORT" --http-tokens "$W/tokens" --http-rate 0 \
    --log-level info 2>>"$W/collector.log" &
CPID=$!
wait_listening "$W/collector.log" 600
i=0
until curl -s -o /dev/null -H "Authorization: Bearer $TOKEN" \
        "http://127.0.0.1:$HPORT/api/v1/hosts"; do
    i=$((i + 1)); [ $i -lt 300 ] || { log "no HTTP answer"; exit 1; }
    sleep 0.1
done

# fleet_run NAME SECONDS: one fleet-load run; its JSON line in W/NAME.json.
fleet_run() {
    "$FL" run --endpoint "tcp://127.0.0.1:$PORT" --keys "$W/keys" \
        --agents "$AGENTS" --streamers "$STREAMERS" --duration "$2" \
        --queries 0 --collector-pid "$CPID" \
        --collector-log "$W/collector.log" >"$W/$1.out" 2>"$W/$1.err"
    tail -n 1 "$W/$1.out" >"$W/$1.json"
}

# The wrk script of one path: the token, and one request every
# 1000 / rate ms on its one connection.
lua() {
    cat >"$W/$1.lua" <<EOF
wrk.headers["Authorization"] = "Bearer $TOKEN"
function delay() return $2 end
EOF
}
HOSTS_RATE=$((RATE - RATE / 10))
PAGE_RATE=$((RATE / 10))

# pace NAME PATH RATE: wrk's delay() waits after each answer, so the
# delay is the period less the answer's mean time, measured for 3 s.
pace() {
    lua "$1" $((1000 / $3))
    wrk -t1 -c1 -d3s -s "$W/$1.lua" "http://127.0.0.1:$HPORT$2" \
        >"$W/$1.pace" 2>&1 || true
    mean=$(python3 -c 'import re, sys
m = re.search(r"Latency\s+([\d.]+)(us|ms|s)", open(sys.argv[1]).read())
print(int(float(m.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3}[m.group(2)])
      if m else 0)' "$W/$1.pace")
    d=$((1000 / $3 - mean))
    [ $d -ge 1 ] || d=1
    lua "$1" "$d"
    log "$2: answered in $mean ms on average: a delay of $d ms"
}

log "warming: $AGENTS agents, $STREAMERS streaming, for $WARM s"
fleet_run warm "$WARM"
pace hosts /api/v1/hosts "$HOSTS_RATE"
pace page / "$PAGE_RATE"
NRUNS=$(psql_q "$W/data" -c "SELECT count(*) FROM runs")
NHOSTS=$(psql_q "$W/data" -c "SELECT count(*) FROM hosts")
log "history: $NHOSTS hosts, $NRUNS runs"

p=1
while [ $p -le "$PAIRS" ]; do
    log "pair $p: quiet, $DURATION s"
    fleet_run "quiet$p" "$DURATION"
    log "pair $p: http at $RATE requests a second, $DURATION s"
    wd=$((DURATION - 10))
    [ $wd -ge 5 ] || wd=5
    ( sleep 5; wrk -t1 -c1 -d"${wd}s" --latency -s "$W/hosts.lua" \
        "http://127.0.0.1:$HPORT/api/v1/hosts" >"$W/hosts$p.wrk" 2>&1 ) &
    w1=$!
    ( sleep 5; wrk -t1 -c1 -d"${wd}s" --latency -s "$W/page.lua" \
        "http://127.0.0.1:$HPORT/" >"$W/page$p.wrk" 2>&1 ) &
    w2=$!
    fleet_run "http$p" "$DURATION"
    wait $w1 $w2 || true
    p=$((p + 1))
done

python3 - "$W" "$PAIRS" "$RATE" "$NHOSTS" "$NRUNS" <<'EOF'
import json, re, statistics, sys
w, pairs, rate, nhosts, nruns = sys.argv[1], int(sys.argv[2]), \
    int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])

def wrk(path):
    """p50, p99 (ms) and the request count of wrk --latency's output."""
    text = open(path).read()
    q = {}
    for pct, v, unit in re.findall(
            r"^\s+(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s)\b", text, re.M):
        q[pct] = float(v) * {"us": 1e-3, "ms": 1, "s": 1e3}[unit]
    n = re.search(r"(\d+) requests in ([\d.]+)s", text)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return {"p50_ms": q.get("50"), "p99_ms": q.get("99"),
            "requests": int(n.group(1)) if n else 0,
            "per_s": int(n.group(1)) / float(n.group(2)) if n else 0,
            "non_2xx": int(non2xx.group(1)) if non2xx else 0}

out = {"hosts": nhosts, "runs": nruns, "rate": rate, "pairs": []}
ratios = []
for p in range(1, pairs + 1):
    quiet = json.load(open("%s/quiet%d.json" % (w, p)))
    http = json.load(open("%s/http%d.json" % (w, p)))
    one = {"quiet_ack_p99_ms": quiet["ack_p99_ms"],
           "http_ack_p99_ms": http["ack_p99_ms"],
           "quiet_ack_p50_ms": quiet["ack_p50_ms"],
           "http_ack_p50_ms": http["ack_p50_ms"],
           "api_hosts": wrk("%s/hosts%d.wrk" % (w, p)),
           "overview": wrk("%s/page%d.wrk" % (w, p))}
    one["ack_p99_ratio"] = one["http_ack_p99_ms"] / one["quiet_ack_p99_ms"]
    ratios.append(one["ack_p99_ratio"])
    out["pairs"].append(one)
    print("pair %d: ack p99 %.2f ms quiet, %.2f ms with HTTP (x%.3f); "
          "GET /api/v1/hosts p50 %.1f ms p99 %.1f ms (%.1f a second, %d "
          "not 2xx); GET / p50 %.1f ms p99 %.1f ms (%.1f a second)"
          % (p, one["quiet_ack_p99_ms"], one["http_ack_p99_ms"],
             one["ack_p99_ratio"], one["api_hosts"]["p50_ms"] or -1,
             one["api_hosts"]["p99_ms"] or -1, one["api_hosts"]["per_s"],
             one["api_hosts"]["non_2xx"], one["overview"]["p50_ms"] or -1,
             one["overview"]["p99_ms"] or -1, one["overview"]["per_s"]))
out["ack_p99_ratio_median"] = statistics.median(ratios)
q = statistics.median(x["quiet_ack_p99_ms"] for x in out["pairs"])
h = statistics.median(x["http_ack_p99_ms"] for x in out["pairs"])
out["quiet_ack_p99_median_ms"], out["http_ack_p99_median_ms"] = q, h
out["ack_p99_ratio_of_medians"] = h / q
print("ack p99 with HTTP / without: the median of %d pairs' ratios x%.3f; "
      "the medians' ratio %.2f / %.2f ms = x%.3f"
      % (pairs, out["ack_p99_ratio_median"], h, q, h / q))
print(json.dumps(out))
EOF
