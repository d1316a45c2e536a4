#!/bin/sh
# changes_bench.sh BUILD_DIR [options] -- the performance benchmark of
# regressions over time. Not a registered test;
# bounded in time; loopback only. Run it alone on the machine (under
# `flock /tmp/parity-build.lock` on the shared VM).
#
# Loads a fleet's history (tests/bench/changes_history.sql: --series
# series of --runs complete runs each, two arms, summaries, a verdict per
# run, a job per night and variable set, ~1 % of series with a planted
# step and its change points) into the private cluster that
# BUILD_DIR/collector/parity-collector makes on its first start (the
# schema of every migration it has), starts that collector with keys
# (`parity keygen`: the collector and an admin client), and times:
#
#   regressions      `parity regressions`, 5 times: median and max (target
#                    <= 2 s at 10,000 series x 200 runs); the size of
#                    `parity regressions --json`
#   site             `parity report --site DIR` (target <= 10 s for 100
#                    benchmarks x 10 hosts x 200 runs), and the `series`
#                    request of one benchmark alone (`parity history
#                    BENCH --json`, which asks `history` and `series`)
#   detect           tests/bench/detect-bench: co_detect_run on the
#                    newest run of --detect-runs random series, with the
#                    window its previous run kept, PostgreSQL restarted
#                    in between (target <= 5 ms); and the rebuild of a
#                    window that was not kept
#
# Peers, named beside each figure: regressions against --compare
# OTHER_BUILD_DIR's collector on the same database (default: none; the
# figures in docs/performance.md use the commit before fe94a6c, whose regressions
# is the verdict against the previous job alone); the site against its
# own `series` requests and --compare's client and collector; detection
# against reading the series window run by run and vd_change_find alone,
# what it did per RunEnd before migration 015 (detect_bench.c).
#
# Options:
#   --series N (10000): benchmarks = N / (10 hosts x --varsets)
#   --varsets N (10, 1..100): variable sets per benchmark and host; the
#       site's target shape is --series 1000 --varsets 1 (100 benchmarks x
#       10 hosts)
#   --runs N (200): nights, i.e. complete runs per series (20..1000)
#   --detect-runs N (500)
#   --reuse-db DIR: keep the keys and the loaded cluster (stopped) in DIR
#       (DIR/base-sN-rN) and copy it from there next time
#   --compare OTHER_BUILD_DIR: that build's parity-collector answers
#       `parity regressions` on the same database, after this one, and
#       that build's `parity report --site` is timed against it
#   --keep: keep the temp dir (cluster, logs, site)
#
# The last line is one JSON object with every figure.
set -eu
. "$(dirname "$0")/bench_lib.sh"
bench_root "$0" 2,49 "$@"
BUILD=$(cd "$1" && pwd)
shift
SERIES=10000 VARSETS=10 RUNS=200 DETECT_RUNS=500 REUSE="" COMPARE="" KEEP=0
take_options changes_bench.sh "--series=SERIES --varsets=VARSETS --runs=RUNS
    --detect-runs=DETECT_RUNS --reuse-db=REUSE --compare=COMPARE
    --keep=KEEP!" "$@"
[ -z "$COMPARE" ] || COMPARE=$(cd "$COMPARE" && pwd)
need_numbers changes_bench.sh "$SERIES" "$VARSETS" "$RUNS" "$DETECT_RUNS"
HOSTS=10
[ "$VARSETS" -ge 1 ] && [ "$VARSETS" -le 100 ] ||
    { echo "changes_bench.sh: --varsets 1..100" >&2; exit 2; }
BENCHES=$(( SERIES / (HOSTS * VARSETS) ))
[ "$BENCHES" -ge 1 ] && [ "$BENCHES" -le 1000 ] ||
    { echo "changes_bench.sh: --series 100..100000" >&2; exit 2; }
[ "$RUNS" -ge 20 ] && [ "$RUNS" -le 1000 ] ||
    { echo "changes_bench.sh: --runs 20..1000" >&2; exit 2; }
SERIES=$(( BENCHES * HOSTS * VARSETS ))

ninja -C "$BUILD" -j1 collector/parity-collector collector/client/parity \
    tests/bench/detect-bench >/dev/null
[ -z "$COMPARE" ] || ninja -C "$COMPARE" -j1 collector/parity-collector \
    collector/client/parity >/dev/null
COLLECTOR=$BUILD/collector/parity-collector
PARITY=$BUILD/collector/client/parity
DETECT=$BUILD/tests/bench/detect-bench

PGBIN=$(pg_bindir)
AS_PG=$(as_pg)

log() { echo "changes_bench: $*"; }

# start_collector EXE DATA PORT LOG: sets CPID; waits (<= 10 min) for
# "event=listening".
start_collector() {
    "$1" --bind "tcp://127.0.0.1:$3" --key "$KEYS/collector_secret" \
        --allow "$KEYS/allow" --admin "$KEYS/admin" --data-dir "$2" \
        --query-timeout 300s --log-level info 2>>"$4" &
    CPID=$!
    wait_listening "$4" 6000
}

# timed FILE CMD...: runs CMD (stdout to FILE), prints its wall seconds;
# exit status 0 or 1 is an answer (regressions exits 1 on an open one).
timed() {
    out=$1
    shift
    t0=$(date +%s.%N)
    rc=0
    "$@" >"$out" 2>"$out.err" || rc=$?
    e=$(elapsed "$t0" 3)
    [ "$rc" -le 1 ] || { log "$* failed ($rc): $(head -c 300 "$out.err")" >&2; echo "fail"; return 0; }
    echo "$e"
}

# stats "a b c": "median max" of the numbers.
stats() {
    echo "$1" | tr ' ' '\n' | grep -v '^$' | sort -g | awk '
        { x[NR] = $1 } END { m = (NR % 2) ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2
                             printf "%.3f %.3f", m, x[NR] }'
}

W=$(mktemp -d /tmp/parity-changes-XXXXXX)
chmod 0755 "$W"   # the postgres user must reach DATA/pg
KEYS=$W/keys
[ -z "$REUSE" ] || { mkdir -p "$REUSE"; chmod 0755 "$REUSE"; KEYS=$REUSE/keys; }
if [ ! -f "$KEYS/collector_secret" ]; then
    mkdir -p "$KEYS/allow" "$KEYS/admin" "$KEYS/client"
    "$PARITY" keygen collector --dir "$KEYS" >/dev/null
    "$PARITY" keygen admin --dir "$KEYS/client" >/dev/null
    cp "$KEYS/client/admin" "$KEYS/admin/"
fi
export PARITY_COLLECTOR_KEY="$KEYS/collector" PARITY_KEY="$KEYS/client/admin"
export PARITY_TIMEOUT=300

echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores; $SERIES series" \
     "($BENCHES benchmarks x $HOSTS hosts x $VARSETS variable sets) x $RUNS runs"
LOAD_S=null
BASE=${REUSE:+$REUSE/base-s$SERIES-v$VARSETS-r$RUNS}
if [ -n "$BASE" ] && [ -d "$BASE/pg" ]; then
    # This build's own server settings replace the cached cluster's (as
    # fleet_load.sh does).
    start_collector "$COLLECTOR" "$W/fresh" "$(free_port)" "$W/fresh.log"
    stop_collector
    from_cache "$BASE" "$W/data" "$W/fresh"
else
    log "bulk-loading history ..."
    # The collector makes the cluster and its schema, then stops.
    start_collector "$COLLECTOR" "$W/data" "$(free_port)" "$W/data.first.log"
    stop_collector
    $AS_PG "$PGBIN/pg_ctl" -D "$W/data/pg" -l "$W/data/pg.log" -w -t 120 start >/dev/null
    t0=$(date +%s.%N)
    psql_q "$W/data" -v benchmarks="$BENCHES" -v hosts="$HOSTS" \
        -v varsets="$VARSETS" -v nights="$RUNS" -v rounds=30 \
        -f "$ROOT/tests/bench/changes_history.sql" >/dev/null
    psql_q "$W/data" -c "VACUUM (ANALYZE)" >/dev/null
    LOAD_S=$(elapsed "$t0" 3)
    $AS_PG "$PGBIN/pg_ctl" -D "$W/data/pg" -m fast -w -t 120 stop >/dev/null
    log "history loaded in $LOAD_S s"
    cache_cluster "$W/data" "$BASE"
fi

# regressions_of LABEL: 5 timed `parity regressions`, then --json; sets
# REG_MED REG_MAX REG_JSON_BYTES REG_JSON_S and leaves the body in
# $W/LABEL.json.
regressions_of() {
    times=""
    for k in 1 2 3 4 5; do
        t=$(timed "$W/$1.txt" "$PARITY" regressions)
        [ "$t" != fail ] || { times=fail; break; }
        times="$times $t"
    done
    if [ "$times" = fail ]; then
        REG_MED=null REG_MAX=null
    else
        set -- "$1" $(stats "$times")
        REG_MED=$2 REG_MAX=$3
    fi
    log "$1: parity regressions x5 (s):$times"
    REG_JSON_S=$(timed "$W/$1.json" "$PARITY" regressions --json)
    REG_JSON_BYTES=$(wc -c <"$W/$1.json")
}

port=$(free_port)
export PARITY_COLLECTOR="tcp://127.0.0.1:$port"
t0=$(date +%s.%N)
start_collector "$COLLECTOR" "$W/data" "$port" "$W/collector.log"
START_S=$(elapsed "$t0" 3)
NRUNS=$(psql_q "$W/data" -c "SELECT count(*) FROM runs")
NCP=$(psql_q "$W/data" -c "SELECT count(*) FROM change_points")
DBSIZE=$(psql_q "$W/data" -c "SELECT pg_database_size('parity') / 1048576")
log "$COLLECTOR listening after $START_S s: $NRUNS runs, $NCP change points, $DBSIZE MiB"

regressions_of this
R_MED=$REG_MED R_MAX=$REG_MAX R_JSON_BYTES=$REG_JSON_BYTES R_JSON_S=$REG_JSON_S
log "regressions: median $R_MED s, max $R_MAX s; --json $R_JSON_BYTES bytes in $R_JSON_S s"

# The site, then one benchmark's series alone (what the site asks per
# benchmark, with the history request beside it).
rm -rf "$W/site"
SITE_S=$(timed "$W/site.txt" "$PARITY" report --site "$W/site")
SITE_PAGES=$(ls "$W/site" 2>/dev/null | grep -c '^bench-' || true)
SITE_BYTES=$(du -sb "$W/site" 2>/dev/null | cut -f1 || echo 0)
SITE_ERR=$(head -c 300 "$W/site.txt.err" | tr '\n"' ' .')
log "site: $SITE_S s, $SITE_PAGES benchmark pages, ${SITE_BYTES:-0} bytes ${SITE_ERR:+($SITE_ERR)}"
SER_TIMES=""
for b in bench0000 "bench$(printf %04d $((BENCHES / 2)))" "bench$(printf %04d $((BENCHES - 1)))"; do
    t=$(timed "$W/history-$b.json" "$PARITY" history "$b" --json)
    SER_TIMES="$SER_TIMES $t"
done
SER_BYTES=$(wc -c <"$W/history-bench0000.json")
SER_ERR=$(head -c 300 "$W/history-bench0000.json.err" | tr '\n"' ' .')
case "$SER_TIMES" in *fail*) SER_MED=null SER_MAX=null ;;
    *) set -- $(stats "$SER_TIMES"); SER_MED=$1 SER_MAX=$2 ;; esac
log "history BENCH --json (history + series of one benchmark) x3 (s):$SER_TIMES;" \
    "$SER_BYTES bytes ${SER_ERR:+($SER_ERR)}"

stop_collector
# Detection, last: it may store change points. On the cluster alone
# (started here as for the bulk load), so that detect-bench can restart
# it between keeping each series' window and timing the RunEnds: those
# then read from the OS's page cache, not from shared buffers.
$AS_PG "$PGBIN/pg_ctl" -D "$W/data/pg" -l "$W/data/pg.log" -w -t 120 start >/dev/null
"$DETECT" "host=$W/data/pg dbname=parity user=parity" --runs "$DETECT_RUNS" \
    --between "$AS_PG $PGBIN/pg_ctl -D $W/data/pg -l $W/data/pg.log -m fast -w -t 120 restart >/dev/null" \
    | tee "$W/detect.txt"
$AS_PG "$PGBIN/pg_ctl" -D "$W/data/pg" -m fast -w -t 120 stop >/dev/null

P_MED=null P_MAX=null P_JSON_BYTES=null P_SITE_S=null P_SITE_BYTES=0
if [ -n "$COMPARE" ]; then
    start_collector "$COMPARE/collector/parity-collector" "$W/data" "$port" \
        "$W/compare.log"
    regressions_of compare
    P_MED=$REG_MED P_MAX=$REG_MAX P_JSON_BYTES=$REG_JSON_BYTES
    log "regressions of $COMPARE: median $P_MED s, max $P_MAX s;" \
        "--json $P_JSON_BYTES bytes"
    # The site by that build's client and collector, on the same database
    # after this build's (whose detection above kept windows it ignores).
    rm -rf "$W/site-compare"
    P_SITE_S=$(timed "$W/site-compare.txt" "$COMPARE/collector/client/parity" \
        report --site "$W/site-compare")
    P_SITE_BYTES=$(du -sb "$W/site-compare" 2>/dev/null | cut -f1 || echo 0)
    log "site of $COMPARE: $P_SITE_S s, ${P_SITE_BYTES:-0} bytes"
    stop_collector
fi

python3 - "$W" "$BUILD" "$COMPARE" <<PY
import json, sys
w, build, compare = sys.argv[1], sys.argv[2], sys.argv[3]
def num(s):
    try: return float(s)
    except ValueError: return None
def ratio(a, b):
    return round(a / b, 2) if a is not None and b else None
body = {}
try: body = json.load(open(w + "/this.json"))
except Exception: pass
cps = body.get("change_points", {})
detect = {}
lines = [l for l in open(w + "/detect.txt") if l.startswith("{")]
if lines: detect = json.loads(lines[-1])
d = {
  "build": build, "series": $SERIES, "runs_per_series": $RUNS,
  "runs": $NRUNS, "change_points": $NCP, "db_mib": $DBSIZE,
  "load_s": None if "$LOAD_S" == "null" else float("$LOAD_S"),
  "start_s": float("$START_S"),
  "regressions_s": num("$R_MED"), "regressions_max_s": num("$R_MAX"),
  "regressions_json_bytes": int("$R_JSON_BYTES"),
  "regressions_open": len(cps.get("open", [])),
  "regressions_acked": len(cps.get("acked", [])),
  "regressions_pairs_worse": len(body.get("regressions", [])),
  "site_s": num("$SITE_S"), "site_pages": int("$SITE_PAGES" or 0),
  "site_bytes": int("${SITE_BYTES:-0}" or 0), "site_error": "$SITE_ERR" or None,
  "history_one_benchmark_s": num("$SER_MED"),
  "history_one_benchmark_max_s": num("$SER_MAX"),
  "history_one_benchmark_bytes": int("$SER_BYTES"),
  "history_error": "$SER_ERR" or None,
  "detect_ms": detect.get("detect_ms"), "detect_peer_ms": detect.get("peer_ms"),
  "detect_ratio": detect.get("ratio_median"),
  "detect_rebuild_ms": detect.get("rebuild_ms"),
}
if compare:
  d["compare"] = {"build": compare, "regressions_s": num("$P_MED"),
                  "regressions_max_s": num("$P_MAX"),
                  "regressions_json_bytes": num("$P_JSON_BYTES"),
                  "site_s": num("$P_SITE_S"),
                  "site_bytes": int("${P_SITE_BYTES:-0}" or 0)}
  d["ratio_regressions"] = ratio(d["regressions_s"], d["compare"]["regressions_s"])
  print("ratio regressions this / %s (medians): %s" % (compare, d["ratio_regressions"]))
  d["ratio_site"] = ratio(d["site_s"], d["compare"]["site_s"])
  print("ratio site this / %s: %s" % (compare, d["ratio_site"]))
if d["site_s"] is not None and d["history_one_benchmark_s"]:
  print("ratio site / one benchmark's history+series: %s (%d pages)"
        % (ratio(d["site_s"], d["history_one_benchmark_s"]), d["site_pages"]))
dm = (detect.get("detect_ms") or {}).get("p99")
targets = [("regressions_s", d["regressions_max_s"], 2.0),
           ("site_s", d["site_s"] if d["site_pages"] else None, 10.0),
           ("detect_p99_ms", dm, 5.0)]
for k, v, t in targets:
    print("target %s <= %s: %s  %s" % (k, t, v,
          "met" if v is not None and v <= t else "NOT met"))
print(json.dumps(d))
PY
if [ "$KEEP" = 1 ]; then log "kept $W"; else rm -rf "$W"; fi
