# bench_lib.sh -- shell helpers shared by the benchmark scripts that run
# a real parity-collector on its private cluster (fleet_load.sh,
# changes_bench.sh). Sourced, not run, first of all. The caller defines
# log() (its own prefix) before using the ones below take_options, and
# sets:
#   PGBIN  PostgreSQL's bin directory (pg_bindir below gives the default)
#   CPID   set by wait_listening's caller: the collector's pid

# bench_root SCRIPT LINES ARGS...: go to the checkout's top (ROOT); with
# no ARGS, print SCRIPT's usage (its LINES, a sed range such as 2,49)
# and exit 2.
bench_root() {
    _script=$1 _lines=$2
    shift 2
    cd "$(dirname "$_script")/../.."
    ROOT=$(pwd)
    [ $# -ge 1 ] || { sed -n "${_lines}p" "$_script" >&2; exit 2; }
}

# take_options SCRIPT SPECS ARGS...: set the variables SPECS names from
# the options ARGS. SPECS is a list of --option=VAR (takes a value) and
# --flag=VAR! (sets VAR=1). An unknown option or a missing value: a
# message naming SCRIPT, and exit 2.
take_options() {
    _script=$1 _specs=$2
    shift 2
    while [ $# -gt 0 ]; do
        _var=
        for _s in $_specs; do
            [ "${_s%%=*}" = "$1" ] && _var=${_s#*=} && break
        done
        case "$_var" in
        '') echo "$_script: unknown option $1" >&2; exit 2 ;;
        *!) eval "${_var%!}=1"; shift ;;
        *) [ $# -ge 2 ] || { echo "$_script: $1 needs a value" >&2; exit 2; }
           eval "$_var=\$2"; shift 2 ;;
        esac
    done
}

# need_numbers SCRIPT VALUE...: exit 2 with a message naming SCRIPT when
# a value is not a whole number.
need_numbers() {
    _script=$1
    shift
    for _v in "$@"; do
        case "$_v" in ''|*[!0-9]*) echo "$_script: not a number: $_v" >&2
                                  exit 2 ;; esac
    done
}

# pg_bindir: PARITY_PG_BINDIR, else the newest /usr/lib/postgresql/*/bin.
pg_bindir() {
    echo "${PARITY_PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}"
}

# as_pg: the prefix that runs a command as the postgres user when we
# are root (PostgreSQL refuses to run as root), else nothing.
as_pg() {
    [ "$(id -u)" -ne 0 ] || echo "runuser -u postgres --"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_listening LOG TENTHS: waits until collector CPID logs
# "event=listening" in LOG, at most TENTHS tenths of a second; exits the
# script when it dies first or does not listen in time.
wait_listening() {
    i=0
    while ! grep -q "event=listening" "$1" 2>/dev/null; do
        kill -0 "$CPID" 2>/dev/null || { log "collector exited, see $1"; tail -5 "$1"; exit 1; }
        i=$((i + 1))
        [ "$i" -lt "$2" ] || { log "collector not listening after $(($2 / 10)) s"; exit 1; }
        sleep 0.1
    done
}

# stop_collector: SIGTERM (it stops its server too), 120 s, then SIGKILL.
stop_collector() {
    kill -TERM "$CPID" 2>/dev/null || true
    i=0
    while kill -0 "$CPID" 2>/dev/null && [ "$i" -lt 1200 ]; do
        sleep 0.1; i=$((i + 1))
    done
    kill -KILL "$CPID" 2>/dev/null || true
    wait "$CPID" 2>/dev/null || true
}

# psql_q DATA ARGS...: psql on DATA's private cluster.
psql_q() {
    d=$1
    shift
    "$PGBIN/psql" -X -A -t -q -v ON_ERROR_STOP=1 -h "$d/pg" -U parity -d parity "$@"
}

# elapsed T0 [DIGITS]: seconds since T0 (date +%s.%N), DIGITS decimals (1).
elapsed() {
    awk -v a="$1" -v b="$(date +%s.%N)" -v d="${2:-1}" \
        'BEGIN { printf "%.*f", d, b - a }'
}

# adopt_settings FRESH DATA: DATA's cluster, a copy of a cached one,
# takes this build's server settings (what a collector appends to
# postgresql.conf at initdb, written in FRESH by a collector started
# once: it may want more connections than the one that made the cache)
# and its own path as the socket directory; FRESH goes.
adopt_settings() {
    conf=$2/pg/postgresql.conf
    sed -i '/^# parity-collector/,$d' "$conf"
    sed -n '/^# parity-collector/,$p' "$1/pg/postgresql.conf" >> "$conf"
    [ ! -f "$1/pg/postgresql.auto.conf" ] ||
        cp "$1/pg/postgresql.auto.conf" "$2/pg/"
    sed -i "s|^unix_socket_directories = .*|unix_socket_directories = '$2/pg'|" "$conf"
    rm -rf "$1"
}

# from_cache BASE DATA FRESH: DATA becomes a copy of the cached cluster
# BASE with this build's settings (adopt_settings; a collector started
# once made FRESH), and the log says how long the copy took.
from_cache() {
    t0=$(date +%s.%N)
    cp -a "$1" "$2"
    adopt_settings "$3" "$2"
    log "history copied from $1 in $(elapsed "$t0" 3) s"
}

# cache_cluster DATA BASE: keep a copy of DATA as BASE (made whole under
# another name first, so that an interrupted copy is never used); nothing
# when BASE is empty (no --reuse-db).
cache_cluster() {
    [ -n "$2" ] || return 0
    rm -rf "$2.tmp"
    cp -a "$1" "$2.tmp"
    mv "$2.tmp" "$2"
}
