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

#include "pw_conffile.h"
#include "pw_systemd.h"
#include "config.h"
#include "co_hook.h"
#include "co_notify.h"
#include "co_db.h"
#include "co_hosts.h"
#include "co_http.h"
#include "co_log.h"
#include "co_pg.h"
#include "co_qpool.h"
#include "co_server.h"
#include "co_stats.h"
#include "co_tokens.h"
#include "pw_key.h"
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
"                        [--db CONNINFO] [--data-dir DIR] [options]\n"
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
"                       private cluster; several collectors may share one\n"
"  --data-dir DIR       where the private cluster lives (DIR/pg), and\n"
"                       DIR/collector.lock; default $PARITY_DATA_DIR, else\n"
"                       ./parity-data (with --db: only the lock, and only\n"
"                       when given)\n"
"  --name NAME          this collector among those on one database\n"
"                       (default HOSTNAME:PORT of --bind)\n"
"  --query-db CONNINFO  answer the client queries that only read from\n"
"                       this database (a streaming replica of --db)\n"
"  --heartbeat-ms N     heartbeat interval, 10..60000 (default 1000)\n"
"  --floor-window N     calibration samples behind a host's floor,\n"
"                       100..%d (default %d)\n"
"  --parity X           flat tolerance of verdicts, 0..1 (default %.2f)\n"
"  --query-timeout T    longest a client query may run, 1s..1d (default\n"
"                       30s); then the client gets an error\n"
"  --keep-samples T     drop raw samples older than T, e.g. 365d (default:\n"
"                       keep all); summaries and verdicts are kept\n"
"  --query-workers N    threads answering client queries, 1..16 (default %d)\n"
"  --enroll on|off      on (default): an agent whose key is in no directory\n"
"                       may connect and waits as pending until an operator\n"
"                       approves it (parity hosts approve); off: such keys\n"
"                       are refused at the handshake\n"
"  --key-service on|off on (default): serve the collector's public key on\n"
"                       the --bind port + 1, for agents that pin it by its\n"
"                       fingerprint (parity-agent --collector-fingerprint)\n"
"  --notify-url URL     POST a JSON notice (its \"text\" for Slack or\n"
"                       Mattermost) to URL when a fleet change-point event\n"
"                       opens; may repeat, at most %d (config: one URL)\n"
"  --notify-queue N     notices kept per URL while it is down, 1..%d\n"
"                       (default %d); further ones are dropped, logged\n"
"  --confirm on|off     on: confirm every new fleet event (one job on its\n"
"                       hosts, the revisions either side of the step\n"
"                       interleaved) before its notice goes, which then\n"
"                       says the answer; off (default)\n"
"  --http ADDR:PORT     serve the JSON API and /metrics over HTTP there,\n"
"                       e.g. 127.0.0.1:8080 or [::1]:8080; may repeat, at\n"
"                       most %d (docs/http.md); off by default\n"
"  --http-tokens FILE   who may use it: NAME ROLE TOKEN a line, ROLE read or\n"
"                       triage; required for an address other than loopback\n"
"  --http-rate N        requests a second per token (or, without tokens, in\n"
"                       all), 0..%d; 0: no limit (default %d)\n"
"  --fingerprint        print the fingerprint of --key's public key (what\n"
"                       agents pin) and exit\n"
"  --log-level LEVEL    debug, info, warn or error (default info)\n"
"  --config FILE        options from FILE (YAML, KEY: VALUE; the keys are\n"
"                       the options above without --); default\n"
"                       %s/collector.yaml when it exists.\n"
"                       Flags win over the file.\n"
"  --help               this text\n"
"  --version            print the version\n"
"\n"
"Signals: SIGTERM/SIGINT drain and exit 0; SIGUSR1 logs the counters.\n"
"Exit codes: 0 clean stop, 1 runtime failure, 2 usage error.\n",
        CO_DB_FLOOR_WINDOW_MAX, CO_DB_FLOOR_WINDOW, VD_DEFAULT_PARITY,
        CO_QPOOL_WORKERS, CO_NOTIFY_URLS_MAX, CO_HOOK_QUEUE_MAX,
        CO_HOOK_QUEUE_DEFAULT, CO_HTTP_BINDS_MAX, CO_HTTP_RATE_MAX,
        CO_HTTP_RATE_DEFAULT, pw_conffile_dir());
}

/* HOSTNAME:PORT of the bind endpoint (tcp://0.0.0.0:5555 on bench1 gives
 * bench1:5555): unique among collectors unless two share a machine and a
 * port, which the bind itself forbids. */
static void
s_default_name(const char *bind, char *out, size_t outlen)
{
    char host[64] = "collector";
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "collector");
    host[sizeof host - 1] = '\0';
    const char *port = bind ? strrchr(bind, ':') : NULL;
    snprintf(out, outlen, "%s%s", host, port && port[1] ? port : "");
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

/* What the options set; strings point into argv or the config file. */
typedef struct {
    co_config_t cfg;
    const char *db_conninfo;
    const char *data_dir;
    bool fingerprint;         /* --fingerprint: print it and exit */
    char name[CO_DB_NAME_MAX];  /* --name, or the default one */
    const char *notify_urls[CO_NOTIFY_URLS_MAX];   /* --notify-url */
    const char *http[CO_HTTP_BINDS_MAX];           /* --http */
    size_t nhttp;
    const char *http_tokens;                       /* --http-tokens */
    int http_rate;                                 /* --http-rate */
} s_settings_t;

static const struct option s_opts[] = {
    { "bind", required_argument, NULL, 'b' },
    { "key", required_argument, NULL, 'k' },
    { "allow", required_argument, NULL, 'a' },
    { "admin", required_argument, NULL, 'A' },
    { "db", required_argument, NULL, 'd' },
    { "data-dir", required_argument, NULL, 'D' },
    { "name", required_argument, NULL, 'N' },
    { "query-db", required_argument, NULL, 'Q' },
    { "heartbeat-ms", required_argument, NULL, 'H' },
    { "floor-window", required_argument, NULL, 'F' },
    { "parity", required_argument, NULL, 'P' },
    { "log-level", required_argument, NULL, 'L' },
    { "query-timeout", required_argument, NULL, 'T' },
    { "keep-samples", required_argument, NULL, 'K' },
    { "query-workers", required_argument, NULL, 'W' },
    { "enroll", required_argument, NULL, 'E' },
    { "key-service", required_argument, NULL, 'S' },
    { "fingerprint", no_argument, NULL, 'f' },
    { "notify-url", required_argument, NULL, 'U' },
    { "notify-queue", required_argument, NULL, 'q' },
    { "confirm", required_argument, NULL, 'C' },
    { "http", required_argument, NULL, 'x' },
    { "http-tokens", required_argument, NULL, 'X' },
    { "http-rate", required_argument, NULL, 'R' },
    { "config", required_argument, NULL, 'c' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
};
#define S_NOPTS (sizeof s_opts / sizeof s_opts[0] - 1)

/* One option with its value, from the command line or the config file.
 * Returns 0, or -1 with the option's error in err. */
static int
s_option(int c, const char *arg, s_settings_t *st, char *err, size_t errlen)
{
    co_config_t *cfg = &st->cfg;
    long v;
    switch (c) {
    case 'b': cfg->bind = arg; break;
    case 'k': cfg->key_path = arg; break;
    case 'a': cfg->allow_dir = arg; break;
    case 'A': cfg->admin_dir = arg; break;
    case 'd': st->db_conninfo = arg; break;
    case 'D': st->data_dir = arg; break;
    case 'Q': cfg->query_conninfo = arg; break;
    case 'N':
        if (!*arg || strlen(arg) >= sizeof st->name ||
            strcspn(arg, " \t\r\n\"\\") != strlen(arg))
            goto bad;
        snprintf(st->name, sizeof st->name, "%s", arg);
        break;
    case 'H':
        if (!s_parse_long(arg, 10, 60000, &v))
            goto bad;
        cfg->heartbeat_ms = (int)v;
        break;
    case 'F':
        if (!s_parse_long(arg, VD_FLOOR_MIN_SAMPLES, CO_DB_FLOOR_WINDOW_MAX,
                          &v))
            goto bad;
        cfg->floor_window = (int)v;
        break;
    case 'P': {
        char *end;
        double x = strtod(arg, &end);
        if (end == arg || *end || !(x >= 0 && x <= 1))
            goto bad;
        cfg->parity = x;
        break;
    }
    case 'T': {
        int64_t us;
        if (!s_parse_duration(arg, 1000000, 86400000000LL, &us))
            goto bad;
        cfg->query_timeout_ms = (int)(us / 1000);
        break;
    }
    case 'K':
        if (!s_parse_duration(arg, 86400000000LL, 100LL * 365 * 86400000000LL,
                              &cfg->keep_samples_us))
            goto bad;
        break;
    case 'W':
        if (!s_parse_long(arg, 1, 16, &v))
            goto bad;
        cfg->query_workers = (int)v;
        break;
    case 'U': {
        char why[160];
        if (co_hook_check_url(arg, why, sizeof why) != 0) {
            snprintf(err, errlen, "--notify-url %.200s: %s", arg, why);
            return -1;
        }
        if (cfg->n_notify_urls == CO_NOTIFY_URLS_MAX) {
            snprintf(err, errlen, "--notify-url %.200s: at most %d URLs",
                     arg, CO_NOTIFY_URLS_MAX);
            return -1;
        }
        st->notify_urls[cfg->n_notify_urls++] = arg;
        cfg->notify_urls = st->notify_urls;
        break;
    }
    case 'q':
        if (!s_parse_long(arg, 1, CO_HOOK_QUEUE_MAX, &v))
            goto bad;
        cfg->notify_queue = (size_t)v;
        break;
    case 'x': {
        bool loopback;
        if (co_http_check_bind(arg, &loopback, err, errlen) != 0)
            return -1;
        if (st->nhttp == CO_HTTP_BINDS_MAX) {
            snprintf(err, errlen, "--http %.200s: at most %d addresses", arg,
                     CO_HTTP_BINDS_MAX);
            return -1;
        }
        st->http[st->nhttp++] = arg;
        break;
    }
    case 'X': st->http_tokens = arg; break;
    case 'R':
        if (!s_parse_long(arg, 0, CO_HTTP_RATE_MAX, &v))
            goto bad;
        st->http_rate = (int)v;
        break;
    case 'E':
    case 'S':
    case 'C': {
        bool on = strcmp(arg, "on") == 0;
        if (!on && strcmp(arg, "off") != 0)
            goto bad;
        *(c == 'E' ? &cfg->enroll : c == 'S' ? &cfg->key_service
                   : &cfg->confirm) = on;
        break;
    }
    case 'L':
        if (strcmp(arg, "debug") == 0) co_log_set_level(CO_LOG_DEBUG);
        else if (strcmp(arg, "info") == 0) co_log_set_level(CO_LOG_INFO);
        else if (strcmp(arg, "warn") == 0) co_log_set_level(CO_LOG_WARN);
        else if (strcmp(arg, "error") == 0) co_log_set_level(CO_LOG_ERROR);
        else
            goto bad;
        break;
    default:
        snprintf(err, errlen, "unknown option %c", c);
        return -1;
    }
    return 0;
bad:
    /* The message names what the option wants, the same for a flag and
     * for its key in the config file. */
    switch (c) {
    case 'H': snprintf(err, errlen, "--heartbeat-ms %s: want a whole number "
                       "of ms from 10 to 60000", arg); break;
    case 'F': snprintf(err, errlen, "--floor-window %s: want a whole number "
                       "from 100 to 1000000", arg); break;
    case 'P': snprintf(err, errlen, "--parity %s: want a number from 0 to 1",
                       arg); break;
    case 'T': snprintf(err, errlen, "--query-timeout %s: want a duration "
                       "from 1s to 1d, e.g. 30s or 5m", arg); break;
    case 'K': snprintf(err, errlen, "--keep-samples %s: want a duration "
                       "from 1d to 36500d, e.g. 365d", arg); break;
    case 'W': snprintf(err, errlen, "--query-workers %s: want a whole "
                       "number from 1 to 16", arg); break;
    case 'q': snprintf(err, errlen, "--notify-queue %s: want a whole number "
                       "from 1 to %d", arg, CO_HOOK_QUEUE_MAX); break;
    case 'R': snprintf(err, errlen, "--http-rate %s: want a whole number "
                       "from 0 to %d", arg, CO_HTTP_RATE_MAX); break;
    case 'E': snprintf(err, errlen, "--enroll %s: want on or off", arg);
              break;
    case 'S': snprintf(err, errlen, "--key-service %s: want on or off",
                       arg); break;
    case 'C': snprintf(err, errlen, "--confirm %s: want on or off", arg);
              break;
    case 'N': snprintf(err, errlen, "--name %.200s: want 1 to %d characters "
                       "without spaces or quotes", arg, CO_DB_NAME_MAX - 1);
              break;
    default: snprintf(err, errlen, "--log-level %s: want debug, info, warn "
                      "or error", arg); break;
    }
    return -1;
}

/* The config file's entries for the options the command line did not
 * give (given[] is indexed by the option's letter): flags win over the
 * file. An error is prefixed with FILE:LINE. */
static int
s_config_apply(const pw_conffile_t *conf, const bool given[128],
               s_settings_t *st, char *err, size_t errlen)
{
    for (size_t i = 0; i < pw_conffile_count(conf); i++) {
        const pw_conffile_entry_t *e = pw_conffile_entry(conf, i);
        char where[600], why[600];
        int c = 0;
        for (size_t k = 0; k < S_NOPTS && !c; k++)
            if (strcmp(s_opts[k].name, e->key) == 0)
                c = s_opts[k].val;
        if (given[c & 127])
            continue;
        if (s_option(c, e->value, st, why, sizeof why) != 0) {
            pw_conffile_where(conf, e, where, sizeof where);
            snprintf(err, errlen, "%.400s: %.700s", where, why);
            return -1;
        }
    }
    return 0;
}

/* --fingerprint: the fingerprint of the key file's public key on
 * stdout (pw_key.h), what agents pin with --collector-fingerprint. */
static int
s_print_fingerprint(const char *key_path)
{
    char fp[PW_KEY_FP_SIZE];
    if (!key_path)
        return s_usage_error("%s", "--fingerprint needs --key FILE");
    zcert_t *cert = zcert_load(key_path);
    if (!cert) {
        fprintf(stderr, "parity-collector: --key %s: cannot read a CURVE "
                "certificate (zcert_load failed; make one with `parity "
                "keygen`)\n", key_path);
        return 1;
    }
    pw_key_fingerprint(zcert_public_txt(cert), fp);
    zcert_destroy(&cert);
    printf("%s\n", fp);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "parity-collector: write to stdout failed\n");
        return 1;
    }
    return 0;
}

/* --http and its tokens, checked before anything starts: a non-loopback
 * address needs a tokens file (whose reading is s_http_check's). 0, or
 * EXIT_USAGE (said). */
static int
s_http_settings(const s_settings_t *st)
{
    char err[700];
    if (st->http_tokens && !st->nhttp)
        return s_usage_error("%s", "--http-tokens needs --http ADDR:PORT");
    for (size_t i = 0; i < st->nhttp && !st->http_tokens; i++) {
        bool loopback = false;
        co_http_check_bind(st->http[i], &loopback, err, sizeof err);
        if (!loopback)
            return s_usage_error("--http %s: an address other than loopback "
                                 "needs --http-tokens FILE (anyone who "
                                 "reaches it could read the fleet's "
                                 "history)", st->http[i]);
    }
    return 0;
}

/* The tokens file reads, before a cluster is made for nothing: 0, or
 * -1 with err (a runtime failure, as a key file that does not read). */
static int
s_http_check(const s_settings_t *st, char *err, size_t errlen)
{
    char why[700];
    co_tokens_t *t = st->http_tokens ? co_tokens_new(st->http_tokens, why,
                                                     sizeof why) : NULL;
    if (st->http_tokens && !t) {
        snprintf(err, errlen, "--http-tokens %s", why);
        return -1;
    }
    co_tokens_destroy(&t);
    return 0;
}

/* The command line, then the config file (--config FILE, else
 * SYSCONFDIR/parity/collector.yaml when it exists), then the checks.
 * Returns -1 to go on, else the exit code (--help, --version, a usage
 * error, said here). *conf owns the file's strings. */
static int
s_settings(int argc, char **argv, s_settings_t *st, pw_conffile_t **conf)
{
    /* The file's keys: every option that takes a value but --config. */
    const char *keys[S_NOPTS + 1];
    size_t nkeys = 0;
    bool given[128] = { false };
    const char *config = NULL;
    char path[512], err[1200];
    int c;

    for (size_t k = 0; k < S_NOPTS; k++)
        if (s_opts[k].has_arg == required_argument && s_opts[k].val != 'c')
            keys[nkeys++] = s_opts[k].name;
    keys[nkeys] = NULL;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", s_opts, NULL)) != -1) {
        if (c == 'h') {
            s_usage(stdout);
            return 0;
        }
        if (c == 'V') {
            printf("parity-collector %s\n", PARITY_VERSION);
            return 0;
        }
        if (c == 'c') {
            config = optarg;
            continue;
        }
        if (c == 'f') {
            st->fingerprint = true;
            continue;
        }
        if (c == '?' || c == ':')
            return s_usage_error("unknown or incomplete option %s",
                                 argv[optind - 1]);
        if (s_option(c, optarg, st, err, sizeof err) != 0)
            return s_usage_error("%s", err);
        given[c & 127] = true;
    }
    if (optind < argc)
        return s_usage_error("unexpected argument %s", argv[optind]);
    snprintf(path, sizeof path, "%s/collector.yaml", pw_conffile_dir());
    if (pw_conffile_load(config ? config : path, keys, config != NULL, conf,
                       err, sizeof err) != PW_CONFFILE_OK
        || s_config_apply(*conf, given, st, err, sizeof err) != 0)
        return s_usage_error("%s", err);
    if (st->fingerprint)
        return s_print_fingerprint(st->cfg.key_path);
    if (!st->cfg.bind)
        return s_usage_error("%s", "--bind ENDPOINT is required");
    if (!st->cfg.key_path)
        return s_usage_error("%s", "--key FILE is required");
    if (!st->cfg.allow_dir)
        return s_usage_error("%s", "--allow DIR is required");
    if (s_http_settings(st) != 0)
        return EXIT_USAGE;
    if (!st->name[0])
        s_default_name(st->cfg.bind, st->name, sizeof st->name);
    st->cfg.name = st->name;
    if (!st->db_conninfo && !st->data_dir) {
        st->data_dir = getenv("PARITY_DATA_DIR");
        if (!st->data_dir || !*st->data_dir)
            st->data_dir = "parity-data";
    }
    return -1;
}

/* Our handlers, not CZMQ's: SIGTERM must drain, not just interrupt. */
static void
s_signals(void)
{
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
}

/* Connect and migrate. Our own cluster (own) not answering is a
 * failure (NULL); somebody else's database being down is something to
 * wait out (a handle that is not connected; the writer reconnects).
 * NULL also when out of memory. Caller owns the handle. */
static co_db_t *
s_db_up(const char *conninfo, const char *name, bool own)
{
    char err[1024], q[1100];
    int applied = 0;
    co_db_t *db = co_db_new(conninfo);
    if (!db) {
        co_log(CO_LOG_ERROR, "db_failed", "why=\"co_db_new: out of memory\"");
        return NULL;
    }
    co_db_set_collector(db, name);
    if (co_db_connect(db, err, sizeof err) != CO_DB_OK
        || co_db_migrate(db, &applied, err, sizeof err) != CO_DB_OK) {
        co_log(own ? CO_LOG_ERROR : CO_LOG_WARN, "db_down", "why=%s",
               co_log_quote(q, sizeof q, err));
        co_db_disconnect(db);
        if (own)
            co_db_destroy(&db);
        return db;
    }
    int version = 0;
    co_db_schema_version(db, &version, err, sizeof err);
    /* Whoever was online when we stopped is not connected now. */
    co_hosts_offline(db, err, sizeof err);
    co_log(CO_LOG_INFO, "db_up", "migrations_applied=%d schema_version=%d",
           applied, version);
    return db;
}

/* The HTTP side (co_http), reading what srv publishes. 0, or -1
 * (logged). */
static int
s_http_up(const s_settings_t *st, const co_config_t *cfg, co_server_t *srv,
          co_stats_t **stats, co_http_t **http)
{
    char err[1024], q[1100];
    if (!(*stats = co_stats_new())) {
        co_log(CO_LOG_ERROR, "http_failed", "why=\"out of memory\"");
        return -1;
    }
    co_server_publish_to(srv, *stats);
    co_http_opts_t o = { .binds = st->http, .nbinds = st->nhttp,
                         .tokens_path = st->http_tokens,
                         .rate = st->http_rate, .cfg = cfg, .stats = *stats,
                         .version = PARITY_VERSION };
    if (!(*http = co_http_new(&o, err, sizeof err))) {
        co_log(CO_LOG_ERROR, "http_failed", "why=%s",
               co_log_quote(q, sizeof q, err));
        return -1;
    }
    for (size_t i = 0; i < st->nhttp; i++)
        co_log(CO_LOG_INFO, "http_listening", "url=%s tokens=%s",
               co_http_url(*http, i), st->http_tokens ? st->http_tokens
                                                      : "none");
    return 0;
}

int
main(int argc, char **argv)
{
    s_settings_t st = { .cfg = {
        .heartbeat_ms = 1000,
        .floor_window = CO_DB_FLOOR_WINDOW,
        .parity = VD_DEFAULT_PARITY,
        .query_timeout_ms = 30000,
        .enroll = true,
        .key_service = true,
    }, .http_rate = CO_HTTP_RATE_DEFAULT };
    co_config_t cfg;
    const char *db_conninfo, *data_dir;
    char err[1024], q[1100];
    int status = 1;
    pw_conffile_t *conf = NULL;
    co_pg_t *pg = NULL;
    co_db_t *db = NULL;
    co_server_t *srv = NULL;
    co_stats_t *stats = NULL;
    co_http_t *http = NULL;
    int lock_fd = -1;

    int early = s_settings(argc, argv, &st, &conf);
    if (early >= 0) {
        pw_conffile_destroy(&conf);
        return early;
    }
    cfg = st.cfg;
    db_conninfo = st.db_conninfo;
    data_dir = st.data_dir;

    s_signals();
    co_log(CO_LOG_INFO, "start", "version=%s pid=%ld name=%s", PARITY_VERSION,
           (long)getpid(), cfg.name);
    s_raise_fd_limit();
    /* Fail on a bad key or allow-list before a cluster is created. */
    if (co_server_check(&cfg, err, sizeof err) != 0 ||
        s_http_check(&st, err, sizeof err) != 0) {
        co_log(CO_LOG_ERROR, "config_failed", "why=%s",
               co_log_quote(q, sizeof q, err));
        goto done;
    }
    if (db_conninfo && data_dir &&
        (lock_fd = co_pg_lock_dir(data_dir, err, sizeof err)) < 0) {
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
    db = s_db_up(db_conninfo, cfg.name, pg != NULL);
    if (!db)
        goto done;
    cfg.conninfo = db_conninfo;   /* co_jobs/co_query's own connection */
    srv = co_server_new(&cfg, db, err, sizeof err);
    if (!srv) {
        co_log(CO_LOG_ERROR, "server_failed", "why=%s",
               co_log_quote(q, sizeof q, err));
        goto done;
    }
    if (st.nhttp && s_http_up(&st, &cfg, srv, &stats, &http) != 0)
        goto done;
    /* Bound, and the writer started: ready. co_server_run's loop sends
     * STATUS=, the watchdog's pings and STOPPING=1 (pw_systemd.h). */
    if (pw_systemd_ready("listening on %s", co_server_endpoint(srv)) < 0)
        co_log(CO_LOG_WARN, "notify_failed", "why=\"READY=1 could not be "
               "sent to NOTIFY_SOCKET\"");
    if (co_server_run(srv, &s_stop, &s_dump) == 0)
        status = 0;
    co_server_log_counters(srv, "final_counters");
done:
    co_http_destroy(&http);      /* first: its threads query the database */
    co_server_destroy(&srv);
    co_stats_destroy(&stats);
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
    if (lock_fd >= 0)
        close(lock_fd);    /* releases the flock */
    pw_conffile_destroy(&conf);
    co_log(CO_LOG_INFO, "exit", "status=%d", status);
    return status;
}
