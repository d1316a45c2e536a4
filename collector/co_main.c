/* co_main.c -- parity-collector: options, signals, start and drain.
 *
 * Exit codes (docs/collector.md): 0 clean stop (SIGTERM/SIGINT), 1 a
 * runtime failure (key, allow-list, bind, the private PostgreSQL), 2 a
 * usage error. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <czmq.h>

#include "config.h"
#include "co_db.h"
#include "co_log.h"
#include "co_pg.h"
#include "co_qpool.h"
#include "co_server.h"
#include "vd_verdict.h"

#define EXIT_USAGE 2

static volatile sig_atomic_t s_stop;
static volatile sig_atomic_t s_dump;

static void
s_on_stop(int sig)
{
    (void)sig;
    s_stop = 1;
}

static void
s_on_dump(int sig)
{
    (void)sig;
    s_dump = 1;
}

static void
s_usage(FILE *f)
{
    fprintf(f,
"usage: parity-collector --bind ENDPOINT --key FILE --allow DIR\n"
"                        [--db CONNINFO | --data-dir DIR] [options]\n"
"\n"
"Receives samples from parity agents over ZeroMQ with CURVE, stores them in\n"
"PostgreSQL and computes per-host verdicts. See docs/collector.md.\n"
"\n"
"  --bind ENDPOINT      ZeroMQ endpoint to bind, e.g. tcp://*:5555\n"
"  --key FILE           the collector's CURVE certificate (secret file from\n"
"                       `parity keygen`)\n"
"  --allow DIR          directory of public certificates allowed to connect\n"
"  --admin DIR          directory of client public certificates allowed to\n"
"                       query and run jobs (also allowed to connect)\n"
"  --db CONNINFO        use this PostgreSQL (libpq conninfo) instead of a\n"
"                       private cluster\n"
"  --data-dir DIR       where the private cluster lives (DIR/pg); default\n"
"                       $PARITY_DATA_DIR, else ./parity-data\n"
"  --heartbeat-ms N     heartbeat interval, 10..60000 (default 1000)\n"
"  --floor-window N     calibration samples behind a host's floor,\n"
"                       100..%d (default %d)\n"
"  --parity X           flat tolerance of verdicts, 0..1 (default %.2f)\n"
"  --query-timeout T    longest a client query may run, 1s..1d (default\n"
"                       30s); then the client gets an error\n"
"  --keep-samples T     drop raw samples older than T, e.g. 365d (default:\n"
"                       keep all); summaries and verdicts are kept\n"
"  --query-workers N    threads answering client queries, 1..16 (default %d)\n"
"  --log-level LEVEL    debug, info, warn or error (default info)\n"
"  --help               this text\n"
"  --version            print the version\n"
"\n"
"Signals: SIGTERM/SIGINT drain and exit 0; SIGUSR1 logs the counters.\n"
"Exit codes: 0 clean stop, 1 runtime failure, 2 usage error.\n",
        CO_DB_FLOOR_WINDOW_MAX, CO_DB_FLOOR_WINDOW, VD_DEFAULT_PARITY,
        CO_QPOOL_WORKERS);
}

static int s_usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static int
s_usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "parity-collector: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'parity-collector --help'.\n");
    return EXIT_USAGE;
}

static bool
s_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* A duration: a whole number with a unit, ms, s, m, h or d (a bare
 * number is seconds), between lo_us and hi_us. */
static bool
s_parse_duration(const char *s, int64_t lo_us, int64_t hi_us, int64_t *out)
{
    static const struct { const char *unit; int64_t us; } units[] = {
        { "ms", 1000 }, { "s", 1000000 }, { "", 1000000 },
        { "m", 60000000 }, { "h", 3600000000LL }, { "d", 86400000000LL },
    };
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0 || *s == '-' || *s == '+')
        return false;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        if (strcmp(end, units[i].unit) != 0)
            continue;
        if (v > hi_us / units[i].us)
            return false;
        int64_t us = (int64_t)v * units[i].us;
        if (us < lo_us)
            return false;
        *out = us;
        return true;
    }
    return false;
}

/* Many agents mean many sockets: take the hard limit of open files
 * (1,100 idle TCP connections exhausted a soft limit of 1,024). */
static void
s_raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
        co_log(CO_LOG_INFO, "fd_limit", "soft=%llu was=%llu",
               (unsigned long long)rl.rlim_cur, (unsigned long long)was);
}

int
main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "bind", required_argument, NULL, 'b' },
        { "key", required_argument, NULL, 'k' },
        { "allow", required_argument, NULL, 'a' },
        { "admin", required_argument, NULL, 'A' },
        { "db", required_argument, NULL, 'd' },
        { "data-dir", required_argument, NULL, 'D' },
        { "heartbeat-ms", required_argument, NULL, 'H' },
        { "floor-window", required_argument, NULL, 'F' },
        { "parity", required_argument, NULL, 'P' },
        { "log-level", required_argument, NULL, 'L' },
        { "query-timeout", required_argument, NULL, 'T' },
        { "keep-samples", required_argument, NULL, 'K' },
        { "query-workers", required_argument, NULL, 'W' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    co_server_config_t cfg = { 0 };
    const char *db_conninfo = NULL, *data_dir = NULL;
    char err[1024], q[1100];
    int c, status = 1;
    long v;
    co_pg_t *pg = NULL;
    co_db_t *db = NULL;
    co_server_t *srv = NULL;

    cfg.heartbeat_ms = 1000;
    cfg.floor_window = CO_DB_FLOOR_WINDOW;
    cfg.parity = VD_DEFAULT_PARITY;
    cfg.query_timeout_ms = 30000;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'b': cfg.bind = optarg; break;
        case 'k': cfg.key_path = optarg; break;
        case 'a': cfg.allow_dir = optarg; break;
        case 'A': cfg.admin_dir = optarg; break;
        case 'd': db_conninfo = optarg; break;
        case 'D': data_dir = optarg; break;
        case 'H':
            if (!s_parse_long(optarg, 10, 60000, &v))
                return s_usage_error("--heartbeat-ms %s: want a whole "
                                     "number of ms from 10 to 60000", optarg);
            cfg.heartbeat_ms = (int)v;
            break;
        case 'F':
            if (!s_parse_long(optarg, VD_FLOOR_MIN_SAMPLES,
                              CO_DB_FLOOR_WINDOW_MAX, &v))
                return s_usage_error("--floor-window %s: want a whole "
                                     "number from 100 to 1000000", optarg);
            cfg.floor_window = (int)v;
            break;
        case 'P': {
            char *end;
            double x = strtod(optarg, &end);
            if (end == optarg || *end || !(x >= 0 && x <= 1))
                return s_usage_error("--parity %s: want a number from 0 "
                                     "to 1", optarg);
            cfg.parity = x;
            break;
        }
        case 'T': {
            int64_t us;
            if (!s_parse_duration(optarg, 1000000, 86400000000LL, &us))
                return s_usage_error("--query-timeout %s: want a duration "
                                     "from 1s to 1d, e.g. 30s or 5m", optarg);
            cfg.query_timeout_ms = (int)(us / 1000);
            break;
        }
        case 'K':
            if (!s_parse_duration(optarg, 86400000000LL,
                                  100LL * 365 * 86400000000LL,
                                  &cfg.keep_samples_us))
                return s_usage_error("--keep-samples %s: want a duration "
                                     "from 1d to 36500d, e.g. 365d", optarg);
            break;
        case 'W':
            if (!s_parse_long(optarg, 1, 16, &v))
                return s_usage_error("--query-workers %s: want a whole "
                                     "number from 1 to 16", optarg);
            cfg.query_workers = (int)v;
            break;
        case 'L':
            if (strcmp(optarg, "debug") == 0) co_log_set_level(CO_LOG_DEBUG);
            else if (strcmp(optarg, "info") == 0) co_log_set_level(CO_LOG_INFO);
            else if (strcmp(optarg, "warn") == 0) co_log_set_level(CO_LOG_WARN);
            else if (strcmp(optarg, "error") == 0) co_log_set_level(CO_LOG_ERROR);
            else
                return s_usage_error("--log-level %s: want debug, info, "
                                     "warn or error", optarg);
            break;
        case 'h':
            s_usage(stdout);
            return 0;
        case 'V':
            printf("parity-collector %s\n", PARITY_VERSION);
            return 0;
        default:
            return s_usage_error("unknown or incomplete option %s",
                                 argv[optind - 1]);
        }
    }
    if (optind < argc)
        return s_usage_error("unexpected argument %s", argv[optind]);
    if (!cfg.bind)
        return s_usage_error("%s", "--bind ENDPOINT is required");
    if (!cfg.key_path)
        return s_usage_error("%s", "--key FILE is required");
    if (!cfg.allow_dir)
        return s_usage_error("%s", "--allow DIR is required");
    if (db_conninfo && data_dir)
        return s_usage_error("%s", "--db and --data-dir exclude each other");
    if (!db_conninfo && !data_dir) {
        data_dir = getenv("PARITY_DATA_DIR");
        if (!data_dir || !*data_dir)
            data_dir = "parity-data";
    }

    /* Our handlers, not CZMQ's: SIGTERM must drain, not just interrupt. */
    zsys_handler_set(NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = s_on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = s_on_dump;
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    co_log(CO_LOG_INFO, "start", "version=%s pid=%ld", PARITY_VERSION,
           (long)getpid());
    s_raise_fd_limit();
    /* Fail on a bad key or allow-list before a cluster is created. */
    if (co_server_check(&cfg, err, sizeof err) != 0) {
        co_log(CO_LOG_ERROR, "config_failed", "why=%s",
               co_log_quote(q, sizeof q, err));
        goto done;
    }
    if (!db_conninfo) {
        pg = co_pg_new(data_dir, err, sizeof err);
        if (!pg) {
            co_log(CO_LOG_ERROR, "pg_failed", "why=%s",
                   co_log_quote(q, sizeof q, err));
            goto done;
        }
        co_log(CO_LOG_INFO, "pg_ready", "data_dir=%s socket_dir=%s",
               data_dir, co_pg_socket_dir(pg));
        db_conninfo = co_pg_conninfo(pg);
        cfg.private_db = true;
    }
    db = co_db_new(db_conninfo);
    if (!db) {
        co_log(CO_LOG_ERROR, "db_failed", "why=\"co_db_new: out of memory\"");
        goto done;
    }
    int applied = 0;
    if (co_db_connect(db, err, sizeof err) != CO_DB_OK
        || co_db_migrate(db, &applied, err, sizeof err) != CO_DB_OK) {
        /* Our own cluster not answering is a failure; somebody else's
         * database being down is something to wait out. */
        co_log(pg ? CO_LOG_ERROR : CO_LOG_WARN, "db_down", "why=%s",
               co_log_quote(q, sizeof q, err));
        co_db_disconnect(db);
        if (pg)
            goto done;
    } else {
        int version = 0;
        co_db_schema_version(db, &version, err, sizeof err);
        /* Whoever was online when we stopped is not connected now. */
        co_db_hosts_offline(db, err, sizeof err);
        co_log(CO_LOG_INFO, "db_up", "migrations_applied=%d "
               "schema_version=%d", applied, version);
    }
    cfg.conninfo = db_conninfo;   /* co_jobs/co_query's own connection */
    srv = co_server_new(&cfg, db, err, sizeof err);
    if (!srv) {
        co_log(CO_LOG_ERROR, "server_failed", "why=%s",
               co_log_quote(q, sizeof q, err));
        goto done;
    }
    if (co_server_run(srv, &s_stop, &s_dump) == 0)
        status = 0;
    co_server_log_counters(srv, "final_counters");
done:
    co_server_destroy(&srv);
    co_db_destroy(&db);
    if (pg) {
        if (co_pg_stop(pg, err, sizeof err) != 0) {
            co_log(CO_LOG_ERROR, "pg_stop_failed", "why=%s",
                   co_log_quote(q, sizeof q, err));
            status = 1;
        } else {
            co_log(CO_LOG_INFO, "pg_stopped", "data_dir=%s", data_dir);
        }
    }
    co_pg_destroy(&pg);
    co_log(CO_LOG_INFO, "exit", "status=%d", status);
    return status;
}
