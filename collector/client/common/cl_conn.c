/* cl_conn.c -- see cl_conn.h. */
#include "cl_conn.h"

#include <czmq.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>
#include <zmq.h>

#include "pw_err.h"
#include "cl_out.h"
#include "pw_out.h"
#include "pw_json.h"
#include "pw_monitor.h"
#include "pw_wire.h"

#define S_PATH_MAX 4096
#define S_VALUE_MAX 4096
/* How long connections may be refused before the collector counts as
 * not there: ZeroMQ retries every 100 ms, so a collector that is just
 * starting gets ten tries, and one that is down is said within 2 s. */
#define S_REFUSED_S 1.0
/* Longest config file read (it holds four lines). */
#define S_CONFIG_MAX (64u * 1024u)

struct cl_conn {
    void *ctx;
    void *sock;
    void *mon;
    char address[S_VALUE_MAX];
    char key_source[S_VALUE_MAX + 64];     /* for error texts */
    char ckey_source[S_VALUE_MAX + 64];
    char public_key[41];
    double timeout_s;
    uint64_t next_id;
    char mon_endpoint[64];
};

/* One setting, as found. */
typedef struct {
    const char *name;          /* "collector address", for messages */
    const char *flag;          /* --collector */
    const char *env;           /* PARITY_COLLECTOR */
    const char *file_key;      /* collector */
    char value[S_VALUE_MAX];
    char raw[S_VALUE_MAX];     /* as written (before a config-relative
                                  path was made absolute) */
    char source[S_VALUE_MAX + 64];
} s_setting_t;

/* The config file, read once when a setting needs it. */
typedef struct {
    bool loaded;
    bool exists;
    char path[S_PATH_MAX];
    char dir[S_PATH_MAX];
    char error[512];           /* a parse error, "" when fine */
    bool unreadable;           /* error says why it cannot be read */
    char collector[S_VALUE_MAX];
    char collector_key[S_VALUE_MAX];
    char key[S_VALUE_MAX];
    char timeout[S_VALUE_MAX];
} s_config_t;

int
cl_conn_take_args(int *argc, char **argv, cl_conn_opts_t *o, char *err,
                  size_t errlen)
{
    static const char *const names[] = { "--collector", "--collector-key",
                                         "--key", "--timeout" };
    const char **slots[] = { &o->collector, &o->collector_key, &o->key,
                             &o->timeout };
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        int hit = -1;
        const char *val = NULL;
        for (int k = 0; k < 4 && hit < 0; k++) {
            size_t n = strlen(names[k]);
            if (strcmp(argv[i], names[k]) == 0) {
                if (i + 1 >= *argc) {
                    pw_err(err, errlen, "%s needs a value", names[k]);
                    return -1;
                }
                hit = k;
                val = argv[++i];
            } else if (strncmp(argv[i], names[k], n) == 0 &&
                       argv[i][n] == '=') {
                hit = k;
                val = argv[i] + n + 1;
            }
        }
        if (hit >= 0)
            *slots[hit] = val;
        else
            argv[out++] = argv[i];
    }
    argv[out] = NULL;
    *argc = out;
    return 0;
}

int
cl_conn_verb_args(const char *verb, int *argc, char **argv,
                  cl_conn_opts_t *o)
{
    char err[512];
    if (cl_conn_take_args(argc, argv, o, err, sizeof err) == 0)
        return 0;
    cl_out_error(verb, "%s", err);
    return -1;
}

int
cl_conn_verb_begin(const char *verb, const char *help, int *argc,
                   char **argv, cl_conn_opts_t *o)
{
    if (cl_out_wants_help(*argc, argv)) {
        printf("%sConnection options as in `parity hosts --help`.\n", help);
        return PW_EXIT_OK;
    }
    return cl_conn_verb_args(verb, argc, argv, o) == 0 ? -1 : PW_EXIT_USAGE;
}

/* ---- config file ---------------------------------------------------- */

static void
s_config_path(s_config_t *c)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(c->dir, sizeof c->dir, "%s/parity", xdg);
    else
        snprintf(c->dir, sizeof c->dir, "%s/.config/parity",
                 home && *home ? home : ".");
    snprintf(c->path, sizeof c->path, "%.4000s/client.yaml", c->dir);
}

/* Read a flat mapping of scalars; unknown keys are an error (a typo
 * should not silently fall back to another setting). */
static void
s_config_load(s_config_t *c)
{
    if (c->loaded)
        return;
    c->loaded = true;
    s_config_path(c);
    struct stat st;
    if (stat(c->path, &st) != 0 && errno == ENOENT)
        return;
    c->exists = true;
    if (stat(c->path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(c->error, sizeof c->error, "is a directory");
        c->unreadable = true;
        return;
    }
    FILE *f = fopen(c->path, "rb");
    if (!f) {
        snprintf(c->error, sizeof c->error, "cannot be read: %s",
                 strerror(errno));
        c->unreadable = true;
        return;
    }
    yaml_parser_t p;
    yaml_event_t ev;
    if (!yaml_parser_initialize(&p)) {
        snprintf(c->error, sizeof c->error, "out of memory");
        fclose(f);
        return;
    }
    yaml_parser_set_input_file(&p, f);
    int depth = 0;
    char key[256] = "";
    bool want_key = true, done = false;
    size_t events = 0;
    while (!done && !c->error[0]) {
        if (!yaml_parser_parse(&p, &ev)) {
            snprintf(c->error, sizeof c->error, "line %zu: %s",
                     p.problem_mark.line + 1,
                     p.problem ? p.problem : "YAML error");
            break;
        }
        if (++events > 10000)
            snprintf(c->error, sizeof c->error, "too many YAML events");
        switch (ev.type) {
        case YAML_MAPPING_START_EVENT:
            if (++depth > 1)
                snprintf(c->error, sizeof c->error, "line %zu: values must "
                         "be plain strings", ev.start_mark.line + 1);
            break;
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_SEQUENCE_START_EVENT:
            snprintf(c->error, sizeof c->error, "line %zu: values must be "
                     "plain strings", ev.start_mark.line + 1);
            break;
        case YAML_SCALAR_EVENT: {
            const char *v = (const char *)ev.data.scalar.value;
            if (depth != 1) {
                snprintf(c->error, sizeof c->error, "line %zu: want a "
                         "mapping of collector, collector_key, key, "
                         "timeout", ev.start_mark.line + 1);
            } else if (want_key) {
                snprintf(key, sizeof key, "%s", v);
                want_key = false;
            } else {
                char *dst = strcmp(key, "collector") == 0 ? c->collector :
                            strcmp(key, "collector_key") == 0 ?
                            c->collector_key :
                            strcmp(key, "key") == 0 ? c->key :
                            strcmp(key, "timeout") == 0 ? c->timeout : NULL;
                if (!dst)
                    snprintf(c->error, sizeof c->error, "line %zu: unknown "
                             "key \"%.60s\" (known: collector, "
                             "collector_key, key, timeout)",
                             ev.start_mark.line + 1, key);
                else
                    snprintf(dst, S_VALUE_MAX, "%s", v);
                want_key = true;
            }
            break;
        }
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    fclose(f);
}

/* Find a setting: flag, environment, config file. Returns 0 with
 * s->value/source, or -1 with an error naming every place looked at. */
static int
s_resolve(s_setting_t *s, const char *flag_value, s_config_t *cfg,
          bool is_path, char *err, size_t errlen)
{
    if (flag_value && *flag_value) {
        snprintf(s->value, sizeof s->value, "%s", flag_value);
        snprintf(s->raw, sizeof s->raw, "%s", flag_value);
        snprintf(s->source, sizeof s->source, "%s", s->flag);
        return 0;
    }
    const char *e = getenv(s->env);
    if (e && *e) {
        snprintf(s->value, sizeof s->value, "%s", e);
        snprintf(s->raw, sizeof s->raw, "%s", e);
        snprintf(s->source, sizeof s->source, "$%s", s->env);
        return 0;
    }
    s_config_load(cfg);
    const char *v = strcmp(s->file_key, "collector") == 0 ? cfg->collector :
                    strcmp(s->file_key, "collector_key") == 0 ?
                    cfg->collector_key : cfg->key;
    if (cfg->exists && !cfg->error[0] && *v) {
        snprintf(s->raw, sizeof s->raw, "%s", v);
        if (is_path && v[0] != '/')
            snprintf(s->value, sizeof s->value, "%.2000s/%.2000s", cfg->dir, v);
        else
            snprintf(s->value, sizeof s->value, "%s", v);
        snprintf(s->source, sizeof s->source, "%s (%s)", cfg->path,
                 s->file_key);
        return 0;
    }
    char why[700];
    if (!cfg->exists)
        snprintf(why, sizeof why, "%.600s does not exist", cfg->path);
    else if (cfg->unreadable)
        snprintf(why, sizeof why, "%.300s %.300s", cfg->path, cfg->error);
    else if (cfg->error[0])
        snprintf(why, sizeof why, "%.300s is not valid: %.300s", cfg->path,
                 cfg->error);
    else
        snprintf(why, sizeof why, "%.600s has no \"%s:\"", cfg->path,
                 s->file_key);
    pw_err(err, errlen, "no %s: not given by %s, $%s is not set, and %s "
           "(see docs/client.md)", s->name, s->flag, s->env, why);
    return -1;
}

/* ---- keys ----------------------------------------------------------- */

static bool
s_all_zero(const byte *k)
{
    for (int i = 0; i < 32; i++)
        if (k[i])
            return false;
    return true;
}

/* The collector's public key: a zcert file or, when no such file exists,
 * the 40-character Z85 text of the key itself. */
static int
s_load_collector_key(const s_setting_t *s, uint8_t out[32], char *err,
                     size_t errlen)
{
    if (access(s->value, F_OK) != 0 && strlen(s->raw) == 40 &&
        zmq_z85_decode(out, s->raw))
        return 0;
    if (access(s->value, R_OK) != 0) {
        pw_err(err, errlen, "collector key from %s: %s: %s", s->source,
               s->value, strerror(errno));
        return -1;
    }
    zcert_t *c = zcert_load(s->value);
    if (!c || s_all_zero(zcert_public_key(c))) {
        zcert_destroy(&c);
        pw_err(err, errlen, "collector key from %s: %s is not a CURVE "
               "certificate (want the collector's public file from `parity "
               "keygen`)", s->source, s->value);
        return -1;
    }
    memcpy(out, zcert_public_key(c), 32);
    zcert_destroy(&c);
    return 0;
}

static int
s_load_own_key(const s_setting_t *s, uint8_t pub[32], uint8_t sec[32],
               char *pub_txt, char *err, size_t errlen)
{
    if (access(s->value, R_OK) != 0) {
        pw_err(err, errlen, "own key from %s: %s: %s", s->source, s->value,
               strerror(errno));
        return -1;
    }
    /* zcert_load reads FILE_secret when it exists beside FILE. */
    zcert_t *c = zcert_load(s->value);
    if (!c || s_all_zero(zcert_public_key(c))) {
        zcert_destroy(&c);
        pw_err(err, errlen, "own key from %s: %s is not a CURVE certificate "
               "(make one with `parity keygen NAME`)", s->source, s->value);
        return -1;
    }
    if (s_all_zero(zcert_secret_key(c))) {
        zcert_destroy(&c);
        pw_err(err, errlen, "own key from %s: %s has no secret key, and no "
               "%s_secret is beside it (give the _secret file `parity "
               "keygen` wrote)", s->source, s->value, s->value);
        return -1;
    }
    memcpy(pub, zcert_public_key(c), 32);
    memcpy(sec, zcert_secret_key(c), 32);
    snprintf(pub_txt, 41, "%s", zcert_public_txt(c));
    zcert_destroy(&c);
    return 0;
}

/* tcp://HOST:PORT, or HOST:PORT made into it. */
static int
s_address(const s_setting_t *s, char *out, size_t len, char *err,
          size_t errlen)
{
    const char *v = s->value;
    char buf[S_VALUE_MAX + 8];
    if (strncmp(v, "tcp://", 6) != 0 && !strstr(v, "://")) {
        snprintf(buf, sizeof buf, "tcp://%s", v);
        v = buf;
    }
    const char *colon = strrchr(v + 6, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (strncmp(v, "tcp://", 6) != 0 || !colon || colon == v + 6 ||
        !end || *end || port < 1 || port > 65535) {
        pw_err(err, errlen, "collector address from %s: \"%.200s\" is not "
               "tcp://HOST:PORT", s->source, s->value);
        return -1;
    }
    snprintf(out, len, "%.4000s", v);
    return 0;
}

/* ---- connection ------------------------------------------------------ */

cl_conn_t *
cl_conn_open(const cl_conn_opts_t *o, int *code, char *err, size_t errlen)
{
    s_config_t *cfg = calloc(1, sizeof *cfg);
    s_setting_t *set = calloc(3, sizeof *set);
    cl_conn_t *c = calloc(1, sizeof *c);
    uint8_t server[32], pub[32], sec[32];
    int rc = CL_CONN_SYSTEM;
    if (!cfg || !set || !c) {
        pw_err(err, errlen, "out of memory");
        goto fail;
    }
    set[0] = (s_setting_t){ .name = "collector address",
                            .flag = "--collector", .env = "PARITY_COLLECTOR",
                            .file_key = "collector" };
    set[1] = (s_setting_t){ .name = "collector key",
                            .flag = "--collector-key",
                            .env = "PARITY_COLLECTOR_KEY",
                            .file_key = "collector_key" };
    set[2] = (s_setting_t){ .name = "own key", .flag = "--key",
                            .env = "PARITY_KEY", .file_key = "key" };
    rc = CL_CONN_CONFIG;
    if (s_resolve(&set[0], o->collector, cfg, false, err, errlen) ||
        s_resolve(&set[1], o->collector_key, cfg, true, err, errlen) ||
        s_resolve(&set[2], o->key, cfg, true, err, errlen))
        goto fail;
    if (s_address(&set[0], c->address, sizeof c->address, err, errlen) ||
        s_load_collector_key(&set[1], server, err, errlen) ||
        s_load_own_key(&set[2], pub, sec, c->public_key, err, errlen))
        goto fail;
    snprintf(c->key_source, sizeof c->key_source, "%s", set[2].source);
    snprintf(c->ckey_source, sizeof c->ckey_source, "%s", set[1].source);

    /* --timeout, $PARITY_TIMEOUT, then client.yaml's timeout:. */
    const char *t = o->timeout;
    char tsrc[S_PATH_MAX + 16] = "--timeout";
    if (!t || !*t) {
        t = getenv("PARITY_TIMEOUT");
        snprintf(tsrc, sizeof tsrc, "$PARITY_TIMEOUT");
    }
    if (!t || !*t) {
        s_config_load(cfg);
        t = cfg->exists && !cfg->error[0] ? cfg->timeout : NULL;
        snprintf(tsrc, sizeof tsrc, "%.4000s (timeout)", cfg->path);
    }
    c->timeout_s = CL_CONN_DEFAULT_TIMEOUT_S;
    if (t && *t && (cl_out_parse_double(t, &c->timeout_s) != 0 ||
                    !(c->timeout_s > 0) ||
                    c->timeout_s > CL_CONN_MAX_TIMEOUT_S)) {
        pw_err(err, errlen, "%s \"%.40s\": want seconds, more than 0 and at "
               "most %.0f", tsrc, t, CL_CONN_MAX_TIMEOUT_S);
        goto fail;
    }

    rc = CL_CONN_SYSTEM;
    if (getrandom(&c->next_id, sizeof c->next_id, 0) != sizeof c->next_id)
        c->next_id = (uint64_t)time(NULL) << 20;
    c->next_id = (c->next_id >> 1) | 1;
    c->ctx = zmq_ctx_new();
    c->sock = c->ctx ? zmq_socket(c->ctx, ZMQ_DEALER) : NULL;
    if (!c->sock) {
        pw_err(err, errlen, "zmq_socket(DEALER): %s", zmq_strerror(errno));
        goto fail;
    }
    int linger = 0;
    int64_t maxmsg = (int64_t)CL_CONN_MAX_REPLY + 4096;
    if (zmq_setsockopt(c->sock, ZMQ_CURVE_SERVERKEY, server, 32) ||
        zmq_setsockopt(c->sock, ZMQ_CURVE_PUBLICKEY, pub, 32) ||
        zmq_setsockopt(c->sock, ZMQ_CURVE_SECRETKEY, sec, 32) ||
        zmq_setsockopt(c->sock, ZMQ_LINGER, &linger, sizeof linger) ||
        zmq_setsockopt(c->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg)) {
        pw_err(err, errlen, "zmq_setsockopt(CURVE): %s", zmq_strerror(errno));
        goto fail;
    }
    snprintf(c->mon_endpoint, sizeof c->mon_endpoint,
             "inproc://cl-conn-monitor-%p", (void *)c);
    if (zmq_socket_monitor(c->sock, c->mon_endpoint, ZMQ_EVENT_ALL) != 0 ||
        !(c->mon = zmq_socket(c->ctx, ZMQ_PAIR)) ||
        zmq_setsockopt(c->mon, ZMQ_LINGER, &linger, sizeof linger) ||
        zmq_connect(c->mon, c->mon_endpoint) != 0) {
        pw_err(err, errlen, "zmq_socket_monitor: %s", zmq_strerror(errno));
        goto fail;
    }
    if (zmq_connect(c->sock, c->address) != 0) {
        rc = CL_CONN_CONFIG;
        pw_err(err, errlen, "collector address from %s: zmq_connect(%s): %s",
               set[0].source, c->address, zmq_strerror(errno));
        goto fail;
    }
    free(cfg);
    free(set);
    if (code)
        *code = CL_CONN_OK;
    return c;
fail:
    if (code)
        *code = rc;
    free(cfg);
    free(set);
    cl_conn_destroy(&c);
    return NULL;
}

void
cl_conn_destroy(cl_conn_t **cp)
{
    if (!cp || !*cp)
        return;
    cl_conn_t *c = *cp;
    if (c->sock) {
        zmq_socket_monitor(c->sock, NULL, 0);
        zmq_close(c->sock);
    }
    if (c->mon)
        zmq_close(c->mon);
    if (c->ctx)
        zmq_ctx_term(c->ctx);
    free(c);
    *cp = NULL;
}

const char *
cl_conn_address(const cl_conn_t *c)
{
    return c->address;
}

static double
s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* What the monitor has shown so far. */
typedef struct {
    bool connected, handshake_ok, auth_failed, handshake_failed;
    bool disconnected;
    bool refused;          /* a TCP connect failed (ZeroMQ retries it) */
} s_seen_t;

static void
s_drain_monitor(cl_conn_t *c, s_seen_t *seen)
{
    int event;
    while ((event = pw_monitor_next(c->mon)) >= 0) {
        switch (event) {
        case ZMQ_EVENT_CONNECTED: seen->connected = true; break;
        case ZMQ_EVENT_CONNECT_RETRIED: seen->refused = true; break;
        case ZMQ_EVENT_DISCONNECTED: seen->disconnected = true; break;
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: seen->handshake_ok = true; break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: seen->auth_failed = true; break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
            seen->handshake_failed = true;
            break;
        default:
            break;
        }
    }
}

static void
s_no_answer(const cl_conn_t *c, const s_seen_t *seen, char *err,
            size_t errlen)
{
    if (seen->auth_failed)
        pw_err(err, errlen, "the collector at %s refused this client's key "
               "%s (own key from %s): it is not in the collector's --allow "
               "or --admin directory, or an operator revoked or rejected it "
               "(parity hosts)", c->address, c->public_key, c->key_source);
    else if (seen->handshake_failed ||
             (seen->connected && seen->disconnected && !seen->handshake_ok))
        pw_err(err, errlen, "the CURVE handshake with %s failed: is the "
               "collector key (from %s) the collector's public key?",
               c->address, c->ckey_source);
    else if (seen->handshake_ok)
        pw_err(err, errlen, "no answer from the collector at %s within "
               "%.1f s: it accepted the connection but did not answer (an "
               "older collector, or overloaded)", c->address, c->timeout_s);
    else if (seen->connected)
        pw_err(err, errlen, "no answer from %s within %.1f s: the connection "
               "was made but its handshake never finished (is it "
               "parity-collector that listens there?)", c->address,
               c->timeout_s);
    else if (seen->refused)
        pw_err(err, errlen, "cannot connect to the collector at %s: the "
               "connection is refused (is parity-collector running and "
               "listening there?)", c->address);
    else
        pw_err(err, errlen, "no answer from the collector at %s within "
               "%.1f s: no connection was made (a host that is down, or a "
               "firewall dropping it?)", c->address, c->timeout_s);
}

int
cl_conn_send(cl_conn_t *c, const char *command, const json_t *args,
             uint64_t *id_out, char *err, size_t errlen)
{
    char *args_txt = args ? pw_json_dumps(args) : strdup("{}");
    if (!args_txt) {
        pw_err(err, errlen, "out of memory");
        return CL_CONN_SYSTEM;
    }
    Parity__Request req;
    parity__request__init(&req);
    uint64_t id = c->next_id++;
    req.request_id = id;
    req.command = (char *)command;
    req.args_json = args_txt;
    Parity__Envelope env;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_REQUEST, &req);
    uint8_t *buf = NULL;
    size_t len;
    int rc = pw_wire_pack_alloc(&env, &buf, &len, err, errlen);
    free(args_txt);
    if (rc != PW_WIRE_OK)
        return CL_CONN_SYSTEM;
    rc = zmq_send(c->sock, buf, len, ZMQ_DONTWAIT);
    free(buf);
    if (rc < 0) {
        pw_err(err, errlen, "zmq_send to %s: %s", c->address,
               zmq_strerror(errno));
        return CL_CONN_SYSTEM;
    }
    *id_out = id;
    return CL_CONN_OK;
}

int
cl_conn_wait(cl_conn_t *c, uint64_t id, json_t **body, int *status,
             char *err, size_t errlen)
{
    *body = NULL;
    if (status)
        *status = 0;
    s_seen_t seen = { 0 };
    double start = s_now(), deadline = start + c->timeout_s;
    for (;;) {
        double left = deadline - s_now();
        /* Refused for S_REFUSED_S without one connection: nothing
         * listens there, whatever the timeout (a collector that is
         * still starting gets that long). */
        bool refused = seen.refused && !seen.connected &&
                       s_now() - start >= S_REFUSED_S;
        if (left <= 0 || seen.auth_failed || seen.handshake_failed ||
            refused) {
            s_drain_monitor(c, &seen);
            s_no_answer(c, &seen, err, errlen);
            return CL_CONN_NOANSWER;
        }
        zmq_pollitem_t items[] = { { c->sock, 0, ZMQ_POLLIN, 0 },
                                   { c->mon, 0, ZMQ_POLLIN, 0 } };
        long ms = (long)(left * 1000) + 1;
        if (zmq_poll(items, 2, ms > 200 ? 200 : ms) < 0 && errno != EINTR) {
            pw_err(err, errlen, "zmq_poll: %s", zmq_strerror(errno));
            return CL_CONN_SYSTEM;
        }
        if (items[1].revents & ZMQ_POLLIN)
            s_drain_monitor(c, &seen);
        if (!(items[0].revents & ZMQ_POLLIN))
            continue;
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, c->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            continue;
        }
        Parity__Envelope *in = NULL;
        char werr[256];
        int wrc = pw_wire_unpack(zmq_msg_data(&m), zmq_msg_size(&m),
                                 CL_CONN_MAX_REPLY + 4096, &in, NULL, werr,
                                 sizeof werr);
        zmq_msg_close(&m);
        if (wrc != PW_WIRE_OK)
            continue;   /* not for us to judge; keep waiting */
        if (in->body_case == PARITY__ENVELOPE__BODY_ERROR) {
            pw_err(err, errlen, "the collector refused the request: %s",
                   in->error->message ? in->error->message : "");
            pw_wire_free(&in);
            if (status)
                *status = -1;
            return CL_CONN_REPLY;
        }
        if (in->body_case != PARITY__ENVELOPE__BODY_REPLY ||
            in->reply->request_id != id) {
            pw_wire_free(&in);   /* heartbeat, or an older answer */
            continue;
        }
        Parity__Reply *r = in->reply;
        if (r->status != 0) {
            if (status)
                *status = r->status;
            pw_err(err, errlen, "%s", r->error && *r->error ? r->error :
                   "the collector answered with an error");
            pw_wire_free(&in);
            return CL_CONN_REPLY;
        }
        json_error_t je;
        *body = json_loads(r->body_json ? r->body_json : "", JSON_DECODE_ANY,
                           &je);
        pw_wire_free(&in);
        if (!*body) {
            pw_err(err, errlen, "the collector's reply is not JSON: %s",
                   je.text);
            return CL_CONN_REPLY;
        }
        return CL_CONN_OK;
    }
}

int
cl_conn_request(cl_conn_t *c, const char *command, const json_t *args,
                json_t **body, int *status, char *err, size_t errlen)
{
    uint64_t id;
    *body = NULL;
    if (status)
        *status = 0;
    int rc = cl_conn_send(c, command, args, &id, err, errlen);
    return rc == CL_CONN_OK ? cl_conn_wait(c, id, body, status, err, errlen)
                            : rc;
}

int
cl_conn_exit_code(int status)
{
    switch (status) {
    case CL_CONN_OK: return PW_EXIT_OK;
    case CL_CONN_CONFIG: return PW_EXIT_USAGE;
    case CL_CONN_REPLY: return PW_EXIT_DATA;
    default: return PW_EXIT_SYSTEM;
    }
}

int
cl_conn_ask(const char *verb, const cl_conn_opts_t *o, const char *command,
            const json_t *args, json_t **body)
{
    char err[2048];
    int code;
    *body = NULL;
    cl_conn_t *c = cl_conn_open(o, &code, err, sizeof err);
    if (!c) {
        cl_out_error(verb, "%s", err);
        return cl_conn_exit_code(code);
    }
    int rc = cl_conn_request(c, command, args, body, NULL, err, sizeof err);
    cl_conn_destroy(&c);
    if (rc != CL_CONN_OK) {
        cl_out_error(verb, "%s", err);
        return cl_conn_exit_code(rc);
    }
    return PW_EXIT_OK;
}
