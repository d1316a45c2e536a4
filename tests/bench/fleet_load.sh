#!/bin/sh
# fleet_load.sh BUILD_DIR [options] -- the fleet load benchmark.
# Not a registered test; bounded in time and count; loopback only.
#
# Starts BUILD_DIR/collector/parity-collector with its private PostgreSQL
# in a temp dir holding a year of history, then runs tests/bench/
# fleet_load.c (fleet-load) against it: --agents CURVE agents heartbeating,
# --streamers of them streaming runs, an admin client looping over hosts,
# verdicts, history and regressions, a job every --job-every s; for
# --duration s. Its last line is one JSON object (fields: fleet_load.c's
# header), plus history_samples (count(*) of samples before the load),
# load_s (bulk load), start_s (collector start: its migrations included),
# settle_s (--settle), build, and disk_flush: tests/bench/fsync_probe.py
# beside the load in the cluster's directory (8 KiB and fdatasync every
# 50 ms: p50_ms, p99_ms, max_ms, over_100_ms, the ten worst with wall
# times), the disk's own cost of a durable COMMIT while the load runs,
# which every Ack waits for.
#
#   verdict_p99_ms is RunEnd sent -> its Ack: the collector acks a RunEnd
#   only after the transaction that stored the run's verdicts committed
#   (docs/protocol.md section 4), so the Ack is the moment the verdict is
#   stored.
#
# History: "a year of nightly jobs on 50 hosts" (tests/bench/
# fleet_history.sql), bulk-loaded with psql into the schema of migrations
# 001..005 (the collector before the threaded one): the collector is started once
# on an empty data dir (it makes the cluster), stopped, the schema is
# replaced by 001..005 and loaded, and the collector is started again: a
# newer collector migrates the history on that start as it would a real
# database (partitions, summaries: whatever its migrations do). The 50
# history hosts are the first 50 agents' keys, i.e. streamers with a year
# behind them.
#
# The soft fd limit is raised to the hard limit for the collector and the
# load (1,000 connections do not fit in 1,024 descriptors).
#
# Options:
#   --agents N (1000) --streamers N (100) --duration S (300)
#   --history-samples N (20000000): rounds per history run are chosen to
#       reach at least N (365 nights x 50 hosts x 4 benchmarks x 3 per round)
#   --reuse-db DIR: keep the keys and the loaded cluster (before the
#       collector's first start) in DIR and copy it from there next time
#   --compare OTHER_BUILD_DIR: the same load against OTHER's collector in
#       the same run (after this one); prints BUILD/OTHER ratios and puts
#       OTHER's figures under "compare" and the ratios under "ratio"
#   --tool-build DIR: where fleet-load is built (default BUILD_DIR when its
#       tree has it, else build-bench of this checkout)
#   --heartbeat-ms N (1000) --rounds N (200) --batch-ms N (1000)
#   --batch-samples N (128, at most 512): a streamer sends one batch of N
#       samples every --batch-ms; a run is --rounds x 3 samples (the
#       round's calibration no-op and one sample per arm), then RunEnd
#   --job-every S (60) --keep (keep the temp dirs)
#   --slow-ms N: fleet-load writes each Ack later than N ms to
#       slow_acks.txt in the temp dir (with --keep), to line up with the
#       collector's log; with it go a line per admin answer (query
#       wall= cmd= ms=) and each `stats` answer (stats wall= JSON), so
#       that --slow-ms 1 gives every Ack, every query and the writer's
#       step totals over time
#   --phase run|batch: run (default) starts each streamer at its own point
#       of a run's period, as independent hosts are; batch starts all runs
#       within one batch interval, so 100 RunEnds arrive together every run
#   --queries 0: the admin client asks only stats, run and jobs (no hosts,
#       verdicts, history, regressions loop): ingest and liveness alone
#   --collectors 2: a second collector on the first one's
#       PostgreSQL (--db on its socket, its own --data-dir for the lock,
#       --name c2); agent i connects to collector i % 2, the admin client
#       (hosts, verdicts, jobs) to the first. false_offline counts both
#       collectors' logs and the first's hosts answers (which show every
#       agent, whichever collector holds it); collector_rss_mb is the
#       first's
#   --disk-probe 0|1 (1): run tests/bench/fsync_probe.py beside the load
#       (disk_flush in the JSON); it adds 20 fdatasyncs a second of its own
#   --settle vacuum|none (vacuum): after the collector's start (and its
#       migrations), VACUUM (FREEZE, ANALYZE) the database and sync before
#       the load, as a year-old database would have been by autovacuum
#       long ago; settle_s in the JSON. With none, the first autovacuum
#       of every freshly loaded or migrated table (20 M samples: every
#       page rewritten) runs during the load, and its writes make the
#       WAL's fsync wait up to 300 ms (docs/operations.md, "Upgrading")
set -eu
. "$(dirname "$0")/bench_lib.sh"
bench_root "$0" 2,76 "$@"
BUILD=$(cd "$1" && pwd)
shift
AGENTS=1000 STREAMERS=100 DURATION=300 HIST=20000000 REUSE="" COMPARE=""
TOOL="" HB=1000 ROUNDS=200 BATCH_MS=1000 BATCH_SAMPLES=128 JOB_EVERY=60 KEEP=0 QUERIES=1 SLOW=0 PHASE=run
NCOLL=1 SETTLE=vacuum PROBE_ON=1
take_options fleet_load.sh "--agents=AGENTS --streamers=STREAMERS
    --duration=DURATION --history-samples=HIST --reuse-db=REUSE
    --compare=COMPARE --tool-build=TOOL --heartbeat-ms=HB --rounds=ROUNDS
    --batch-ms=BATCH_MS --batch-samples=BATCH_SAMPLES --job-every=JOB_EVERY
    --queries=QUERIES --settle=SETTLE --disk-probe=PROBE_ON --slow-ms=SLOW
    --phase=PHASE --collectors=NCOLL --keep=KEEP!" "$@"
[ -z "$COMPARE" ] || COMPARE=$(cd "$COMPARE" && pwd)
case "$NCOLL" in 1|2) ;; *) echo "fleet_load.sh: --collectors 1 or 2" >&2; exit 2 ;; esac
case "$PROBE_ON" in 0|1) ;; *) echo "fleet_load.sh: --disk-probe 0 or 1" >&2; exit 2 ;; esac
case "$SETTLE" in vacuum|none) ;; *) echo "fleet_load.sh: --settle vacuum or none" >&2; exit 2 ;; esac
need_numbers fleet_load.sh "$AGENTS" "$STREAMERS" "$DURATION" "$HIST" "$HB" \
    "$ROUNDS" "$BATCH_MS" "$BATCH_SAMPLES" "$JOB_EVERY" "$QUERIES" "$SLOW"
[ "$DURATION" -le 3600 ] || { echo "fleet_load.sh: --duration <= 3600" >&2; exit 2; }
[ "$HIST" -le 200000000 ] || { echo "fleet_load.sh: --history-samples <= 2e8" >&2; exit 2; }

# The load program: built from this checkout.
if [ -z "$TOOL" ]; then
    if ninja -C "$BUILD" -t query tests/bench/fleet-load >/dev/null 2>&1; then
        TOOL=$BUILD
    else
        TOOL=$ROOT/build-bench
    fi
fi
[ -f "$TOOL/build.ninja" ] || meson setup "$TOOL" >/dev/null
ninja -C "$TOOL" -j1 tests/bench/fleet-load >/dev/null
FL=$TOOL/tests/bench/fleet-load
ninja -C "$BUILD" -j1 collector/parity-collector >/dev/null
[ -z "$COMPARE" ] || ninja -C "$COMPARE" -j1 collector/parity-collector >/dev/null

PGBIN=$(pg_bindir)
AS_PG=$(as_pg)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# Rounds per history run: 365 nights x 50 hosts x 4 benchmarks x 3.
HIST_ROUNDS=$(( (HIST + 218999) / 219000 ))
[ "$HIST_ROUNDS" -ge 2 ] || HIST_ROUNDS=2
NKEYS=$AGENTS
[ "$NKEYS" -ge 50 ] || NKEYS=50

log() { echo "fleet_load: $*"; }

# start_collector EXE DATA KEYS PORT LOG: sets CPID; waits (<= 30 min: a
# migration of 20 M rows) for its "event=listening" line.
start_collector() {
    "$1" --bind "tcp://127.0.0.1:$4" --key "$3/collector_secret" \
        --allow "$3/allow" --admin "$3/admin" --data-dir "$2" \
        --heartbeat-ms "$HB" --log-level info 2>>"$5" &
    CPID=$!
    wait_listening "$5" 18000
}

# load_history DATA KEYS: the year of history into a fresh cluster.
load_history() {
    data=$1 keys=$2
    port=$(free_port)
    start_collector "$COLLECTOR" "$data" "$keys" "$port" "$data.first.log"
    stop_collector
    $AS_PG "$PGBIN/pg_ctl" -D "$data/pg" -l "$data/pg.log" -w -t 120 start >/dev/null
    t0=$(date +%s.%N)
    {
        echo "SET client_min_messages = warning;"
        # Every schema the collector made, not only public.
        echo "DO \$\$ DECLARE s text; BEGIN FOR s IN SELECT nspname FROM"
        echo "  pg_namespace WHERE nspname NOT IN ('pg_catalog',"
        echo "  'information_schema') AND nspname NOT LIKE 'pg\\_%' LOOP"
        echo "  EXECUTE format('DROP SCHEMA %I CASCADE', s); END LOOP; END \$\$;"
        echo "CREATE SCHEMA public;"
        for f in "$ROOT"/collector/store/migrations/00[1-5]_*.sql; do cat "$f"; echo; done
        echo "CREATE TABLE schema_version (version integer PRIMARY KEY,"
        echo "  name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());"
        for f in "$ROOT"/collector/store/migrations/00[1-5]_*.sql; do
            b=$(basename "$f")
            echo "INSERT INTO schema_version (version, name) VALUES (${b%%_*}, '$b');"
        done
    } | psql_q "$data" -1 -f - >/dev/null
    psql_q "$data" -v keys="$keys/agent_keys.txt" -v hosts=50 -v days=365 \
        -v benchmarks=4 -v rounds="$HIST_ROUNDS" \
        -f "$ROOT/tests/bench/fleet_history.sql" >/dev/null
    psql_q "$data" -c "VACUUM ANALYZE" >/dev/null
    LOAD_S=$(elapsed "$t0")
    $AS_PG "$PGBIN/pg_ctl" -D "$data/pg" -m fast -w -t 120 stop >/dev/null
}

# run_one BUILD_DIR OUT_JSON: one whole measurement.
run_one() {
    COLLECTOR=$1/collector/parity-collector
    W=$(mktemp -d /tmp/parity-fleet-XXXXXX)
    chmod 0755 "$W"   # the postgres user must reach DATA/pg
    KEYS=$W/keys
    [ -z "$REUSE" ] || { mkdir -p "$REUSE"; chmod 0755 "$REUSE"; KEYS=$REUSE/keys; }
    "$FL" keygen "$KEYS" "$NKEYS"
    LOAD_S=null
    BASE=${REUSE:+$REUSE/base-r$HIST_ROUNDS}
    if [ -n "$BASE" ] && [ -d "$BASE/pg" ]; then
        # This build's own server settings (what it appends to
        # postgresql.conf at initdb) replace the cached cluster's: a
        # collector may want more connections than the one that made it.
        start_collector "$COLLECTOR" "$W/fresh" "$KEYS" "$(free_port)" "$W/fresh.log"
        stop_collector
        from_cache "$BASE" "$W/data" "$W/fresh"
    else
        log "bulk-loading history ($HIST_ROUNDS rounds per run) ..."
        load_history "$W/data" "$KEYS"
        log "history loaded in $LOAD_S s"
        cache_cluster "$W/data" "$BASE"
    fi
    port=$(free_port)
    clog=$W/collector.log
    t0=$(date +%s.%N)
    start_collector "$COLLECTOR" "$W/data" "$KEYS" "$port" "$clog"
    START_S=$(elapsed "$t0")
    NSAMPLES=$(psql_q "$W/data" -c "SELECT count(*) FROM samples")
    log "$COLLECTOR: listening after $START_S s, $NSAMPLES history samples"
    SETTLE_S=null
    if [ "$SETTLE" = vacuum ]; then
        t0=$(date +%s.%N)
        psql_q "$W/data" -c "VACUUM (FREEZE, ANALYZE)"
        sync
        SETTLE_S=$(elapsed "$t0")
        log "VACUUM (FREEZE, ANALYZE) and sync in $SETTLE_S s"
    fi
    ENDPOINTS=tcp://127.0.0.1:$port
    C2LOG=""
    if [ "$NCOLL" = 2 ]; then
        C2LOG=$W/collector2.log
        C1PID=$CPID
        port2=$(free_port)
        "$COLLECTOR" --bind "tcp://127.0.0.1:$port2" \
            --key "$KEYS/collector_secret" --allow "$KEYS/allow" \
            --admin "$KEYS/admin" --db "host=$W/data/pg user=parity dbname=parity" \
            --data-dir "$W/data2" --name c2 --heartbeat-ms "$HB" \
            --log-level info 2>>"$W/collector2.log" &
        C2PID=$!
        i=0
        until grep -q "event=listening" "$W/collector2.log" 2>/dev/null; do
            kill -0 "$C2PID" 2>/dev/null || { log "collector 2 exited"; tail -5 "$W/collector2.log"; exit 1; }
            i=$((i + 1)); [ "$i" -lt 600 ] || { log "collector 2 not listening"; exit 1; }
            sleep 0.1
        done
        ENDPOINTS=$ENDPOINTS,tcp://127.0.0.1:$port2
        CPID=$C1PID
        log "collector 2 (--db on the first one's cluster) on port $port2"
    fi
    # The disk's own COMMIT cost beside the load (fsync_probe.py): the
    # floor under every Ack, since an Ack follows its COMMIT.
    PROBE=""
    if [ "$PROBE_ON" = 1 ]; then
        python3 "$ROOT/tests/bench/fsync_probe.py" "$W" "$((DURATION + 60))" \
            > "$W/fsync.json" &
        PROBE=$!
    fi
    set +e
    "$FL" run --endpoint "$ENDPOINTS" --keys "$KEYS" \
        --agents "$AGENTS" --streamers "$STREAMERS" --duration "$DURATION" \
        --heartbeat-ms "$HB" --rounds "$ROUNDS" --batch-ms "$BATCH_MS" \
        --batch-samples "$BATCH_SAMPLES" \
        --job-every "$JOB_EVERY" --queries "$QUERIES" --collector-pid "$CPID" \
        --phase "$PHASE" --slow-ms "$SLOW" --slow-log "$W/slow_acks.txt" \
        --collector-log "$clog" ${C2LOG:+--collector-log2 "$C2LOG"} \
        | tee "$W/out.txt"
    set -e
    if [ -n "$PROBE" ]; then
        kill -TERM "$PROBE" 2>/dev/null || true
        wait "$PROBE" || true
    fi
    if [ "$NCOLL" = 2 ]; then
        CPID=$C2PID
        stop_collector
        CPID=$C1PID
    fi
    stop_collector
    python3 - "$W/out.txt" "$2" "$NSAMPLES" "$LOAD_S" "$START_S" "$1" "$NCOLL" "$SETTLE_S" "$W/fsync.json" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
d = json.loads(lines[-1]) if lines else {"error": "fleet-load printed no JSON"}
d["collectors"] = int(sys.argv[7])
d["history_samples"] = int(sys.argv[3])
d["load_s"] = None if sys.argv[4] == "null" else round(float(sys.argv[4]), 1)
d["start_s"] = round(float(sys.argv[5]), 1)
d["settle_s"] = None if sys.argv[8] == "null" else round(float(sys.argv[8]), 1)
try:
    f = json.load(open(sys.argv[9]))
    d["disk_flush"] = f
    sys.stderr.write("fleet_load: the disk beside the load (fsync_probe.py, "
                     "8 KiB + fdatasync every 50 ms): p50 %s ms, p99 %s ms, "
                     "max %s ms, %d over 100 ms\n" % (f["p50_ms"], f["p99_ms"],
                     f["max_ms"], f["over_100_ms"]))
except (OSError, ValueError, KeyError):
    d["disk_flush"] = None
d["build"] = sys.argv[6]
json.dump(d, open(sys.argv[2], "w"))
PY
    if [ "$KEEP" = 1 ]; then log "kept $W"; else rm -rf "$W"; fi
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
OUT=$(mktemp /tmp/parity-fleet-result-XXXXXX)
run_one "$BUILD" "$OUT.a"
if [ -n "$COMPARE" ]; then
    run_one "$COMPARE" "$OUT.b"
else
    echo '{}' > "$OUT.b"
fi
python3 - "$OUT.a" "$OUT.b" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
if b:
    ratio = {}
    for k, v in a.items():
        w = b.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) \
                and isinstance(w, (int, float)) and w:
            ratio[k] = round(v / w, 3)
    print("ratio %s / %s: %s" % (a["build"], b["build"], " ".join(
        "%s=%s" % (k, ratio[k]) for k in ("ack_p50_ms", "ack_p99_ms",
        "ack_max_ms", "verdict_p99_ms", "hosts_ms", "regressions_ms",
        "history_ms", "verdicts_ms", "collector_rss_mb", "reconnects",
        "heartbeats_missed", "samples_per_s") if k in ratio)))
    a["compare"] = b
    a["ratio"] = ratio
targets = [("false_offline", 0, "=="), ("lost_jobs", 0, "=="),
           ("ack_p99_ms", 100, "<="), ("ack_max_ms", 1000, "<="),
           ("verdict_p99_ms", 50, "<="), ("hosts_ms", 100, "<="),
           ("regressions_ms", 2000, "<="), ("loop_max_ms", 100, "<=")]
for k, t, op in targets:
    v = a.get(k)
    ok = v is not None and (v == t if op == "==" else v <= t)
    print("target %s %s %s: %s  %s" % (k, op, t, v, "met" if ok else "NOT met"))
print(json.dumps(a))
PY
rm -f "$OUT" "$OUT.a" "$OUT.b"
