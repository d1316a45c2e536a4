/* co_server.c -- the network loop; see co_server.h and docs/protocol.md. */
#include "co_server.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <czmq.h>
#include <jansson.h>
#include <zmq.h>

#include "co_auth.h"
#include "co_jobs.h"
#include "co_log.h"
#include "co_query.h"

#define CO_MONITOR_ENDPOINT "inproc://co-server-monitor"
/* Open addressing table of peers: twice the most peers, a power of 2. */
#define CO_PEER_SLOTS (2 * CO_SERVER_MAX_PEERS)
#define CO_RID_MAX 256
/* Beats a peer may miss before it is offline (docs/protocol.md, 6). */
#define CO_MISSED_BEATS 5
/* A reply frame: Ack, Error with a one-line message, Heartbeat, Reply. */
#define CO_REPLY_MAX 8192
/* Global rate limit of handshake-failure log lines. */
#define CO_AUTH_LOG_EVERY_US 1000000

/* One authenticated peer (a host or a client), at most ~1 KiB. */
typedef struct {
    char key[41];                 /* Z85 public key from ZAP */
    uint8_t rid[CO_RID_MAX];      /* routing id of the connection that */
    size_t rid_len;               /*   spoke last */
    bool hello_on_rid;            /* a Hello arrived on that connection */
    bool online;
    int64_t host_id;              /* hosts.id, 0 until a Hello is stored */
    Parity__Envelope *pending_hello; /* Hello not stored yet (db down) */
    int64_t last_heard_us;        /* monotonic */
    int64_t bad_logged_us;        /* last bad_input log line (0: none) */
    uint64_t bad_unlogged;        /* bad input since that line */
    char name[64];                /* claimed agent name, for logs */
} s_peer_t;

struct co_server {
    co_server_config_t cfg;
    co_db_t *db;
    void *ctx;
    void *router;
    void *monitor;
    co_auth_t *auth;
    char endpoint[256];
    char public_key[41];
    s_peer_t *slots[CO_PEER_SLOTS];
    s_peer_t *list[CO_SERVER_MAX_PEERS];
    size_t n_peers;
    co_counters_t c;
    bool db_up;
    int64_t db_retry_at_us;
    int64_t db_backoff_us;
    int64_t next_beat_us;
    int64_t auth_logged_us;
    uint8_t reply[CO_REPLY_MAX];
    /* SampleBatches waiting to be stored in one transaction (group
     * commit); flushed before any other message is handled, so each
     * peer's order is kept. Owned envelopes. */
    struct {
        Parity__Envelope *env;
        s_peer_t *peer;
        uint8_t rid[CO_RID_MAX];
        size_t rid_len;
    } group[CO_DB_GROUP_MAX];
    size_t n_group;
    co_db_batch_item_t items[CO_DB_GROUP_MAX];
    co_jobs_t *jobs;              /* NULL without cfg.conninfo */
    co_query_t *query;
};

static void s_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
s_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (!err || !errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int64_t
s_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t
s_unix_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- peers ------------------------------------------------------------ */

static uint32_t
s_hash(const char *key)
{
    uint32_t h = 2166136261u;
    for (; *key; key++)
        h = (h ^ (uint8_t)*key) * 16777619u;
    return h;
}

/* The peer for key, created when create is set and there is room. */
static s_peer_t *
s_peer(co_server_t *srv, const char *key, bool create)
{
    uint32_t i = s_hash(key) & (CO_PEER_SLOTS - 1);
    while (srv->slots[i]) {
        if (strcmp(srv->slots[i]->key, key) == 0)
            return srv->slots[i];
        i = (i + 1) & (CO_PEER_SLOTS - 1);
    }
    if (!create || srv->n_peers >= CO_SERVER_MAX_PEERS)
        return NULL;
    s_peer_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    snprintf(p->key, sizeof p->key, "%s", key);
    srv->slots[i] = p;
    srv->list[srv->n_peers++] = p;
    return p;
}

/* ---- sending ------------------------------------------------------------ */

static void
s_send(co_server_t *srv, const uint8_t *rid, size_t rid_len,
       const uint8_t *buf, size_t len)
{
    /* Never block the loop on one slow peer: a full queue drops the reply
     * and the peer's retry rules recover (docs/protocol.md, 4). */
    if (zmq_send(srv->router, rid, rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0
        || zmq_send(srv->router, buf, len, ZMQ_DONTWAIT) < 0)
        srv->c.sends_dropped++;
}

static void
s_ack(co_server_t *srv, const uint8_t *rid, size_t rid_len, uint64_t seq)
{
    size_t len;
    if (pw_wire_pack_ack(seq, srv->reply, sizeof srv->reply, &len)
        == PW_WIRE_OK) {
        s_send(srv, rid, rid_len, srv->reply, len);
        srv->c.acked++;
    }
}

static void
s_error(co_server_t *srv, const uint8_t *rid, size_t rid_len, int code,
        const char *msg, uint64_t seq)
{
    char line[1024];
    size_t len;
    /* Bound the text so the reply always fits. */
    snprintf(line, sizeof line, "%s", msg);
    if (pw_wire_pack_error(code, line, seq, srv->reply, sizeof srv->reply,
                           &len) == PW_WIRE_OK) {
        s_send(srv, rid, rid_len, srv->reply, len);
        srv->c.errors_sent++;
    }
}

/* ---- bad input ---------------------------------------------------------- */

static void
s_bad(co_server_t *srv, s_peer_t *p, const uint8_t *rid, size_t rid_len,
      int code, const char *why, uint64_t seq)
{
    int64_t now = s_now_us();
    srv->c.bad[-code]++;
    /* One line per peer per 10 s whatever the kind; the line says how
     * many were not logged since the last one. Counters count all. */
    if (p->bad_logged_us != 0
        && now - p->bad_logged_us < CO_SERVER_LOG_EVERY_US) {
        p->bad_unlogged++;
    } else {
        char q[512];
        p->bad_logged_us = now;
        co_log(CO_LOG_WARN, "bad_input",
               "peer=%s kind=%s seq=%" PRIu64 " count=%" PRIu64
               " not_logged_since=%" PRIu64 " why=%s",
               p->key, pw_wire_err_name(code), seq, srv->c.bad[-code],
               p->bad_unlogged, co_log_quote(q, sizeof q, why));
        p->bad_unlogged = 0;
    }
    s_error(srv, rid, rid_len, code, why, seq);
}

/* ---- database state ------------------------------------------------------ */

static void
s_db_lost(co_server_t *srv, const char *why)
{
    char q[512];
    srv->c.db_failures++;
    if (co_db_connected(srv->db))
        return;
    if (srv->db_up)
        co_log(CO_LOG_ERROR, "db_down", "why=%s",
               co_log_quote(q, sizeof q, why));
    srv->db_up = false;
    if (srv->db_backoff_us == 0)
        srv->db_backoff_us = CO_SERVER_DB_RETRY_MIN_US;
    srv->db_retry_at_us = s_now_us() + srv->db_backoff_us;
}

static void
s_db_try(co_server_t *srv)
{
    char err[512], q[600];
    int applied = 0;
    if (srv->db_up || s_now_us() < srv->db_retry_at_us)
        return;
    if (co_db_connect(srv->db, err, sizeof err) == CO_DB_OK
        && co_db_migrate(srv->db, &applied, err, sizeof err) == CO_DB_OK) {
        srv->db_up = true;
        srv->db_backoff_us = 0;
        srv->c.db_reconnects++;
        co_log(CO_LOG_INFO, "db_up", "migrations_applied=%d", applied);
        return;
    }
    co_db_disconnect(srv->db);
    srv->db_backoff_us = srv->db_backoff_us ? srv->db_backoff_us * 2
                                            : CO_SERVER_DB_RETRY_MIN_US;
    if (srv->db_backoff_us > CO_SERVER_DB_RETRY_MAX_US)
        srv->db_backoff_us = CO_SERVER_DB_RETRY_MAX_US;
    srv->db_retry_at_us = s_now_us() + srv->db_backoff_us;
    co_log(CO_LOG_WARN, "db_retry", "in_ms=%" PRId64 " why=%s",
           srv->db_backoff_us / 1000, co_log_quote(q, sizeof q, err));
}

/* ---- jobs (co_jobs, co_query) ---------------------------------------------- */

/* co_jobs' send callback: to the connection the host spoke on last. */
static int
s_jobs_send(void *ctx, const char *key, const Parity__Envelope *env)
{
    co_server_t *srv = ctx;
    s_peer_t *p = s_peer(srv, key, false);
    uint8_t *buf = NULL;
    size_t len;
    if (!p || !p->online || !p->hello_on_rid || p->rid_len == 0)
        return -1;
    if (pw_wire_pack_alloc(env, &buf, &len, NULL, 0) != PW_WIRE_OK)
        return -1;
    uint64_t dropped = srv->c.sends_dropped;
    s_send(srv, p->rid, p->rid_len, buf, len);
    free(buf);
    return srv->c.sends_dropped == dropped ? 0 : -1;
}

static void
s_jobs_log(void *ctx, const char *event, const char *text)
{
    (void)ctx;
    co_log(strcmp(event, "db_error") == 0 ? CO_LOG_WARN : CO_LOG_INFO,
           event, "%s", text);
}

static int
s_jobs_new(co_server_t *srv, char *err, size_t errlen)
{
    if (!srv->cfg.conninfo)
        return 0;
    co_jobs_opts_t o = { srv->cfg.conninfo, srv, s_jobs_send, s_jobs_log,
                         (int64_t)CO_MISSED_BEATS * srv->cfg.heartbeat_ms *
                         1000 };
    srv->jobs = co_jobs_new(&o);
    srv->query = srv->jobs ? co_query_new(srv->jobs, srv->cfg.floor_window)
                           : NULL;
    if (!srv->query) {
        s_err(err, errlen, "co_jobs/co_query: out of memory");
        return -1;
    }
    if (!srv->cfg.admin_dir)
        return 0;
    int n = co_query_load_admins(srv->query, srv->cfg.admin_dir, err, errlen);
    if (n < 0 || co_auth_add_dir(srv->auth, srv->cfg.admin_dir, err,
                                 errlen) != 0)
        return -1;
    co_log(CO_LOG_INFO, "admins", "dir=%s keys=%d", srv->cfg.admin_dir, n);
    return 0;
}

/* A host's Hello is stored: co_jobs offers it work. */
static void
s_jobs_online(co_server_t *srv, s_peer_t *p, const Parity__Hello *h)
{
    char err[512], q[600];
    if (srv->jobs && co_jobs_agent_online(srv->jobs, p->key, h, s_unix_us(),
                                          err, sizeof err) != CO_JOBS_OK)
        co_log(CO_LOG_WARN, "jobs_online_failed", "peer=%s why=%s", p->key,
               co_log_quote(q, sizeof q, err));
}

/* ---- message handlers ------------------------------------------------------ */

/* Store the peer's Hello; true when the host is known afterwards. */
static bool
s_store_hello(co_server_t *srv, s_peer_t *p, const Parity__Hello *h,
              const uint8_t *rid, size_t rid_len)
{
    char err[512], q[600];
    int64_t host_id = 0;
    if (!srv->db_up)
        return false;
    int rc = co_db_hello(srv->db, p->key, h, &host_id, err, sizeof err);
    if (rc == CO_DB_REFUSED) {
        /* Content the database can never take (e.g. a name that is not
         * UTF-8): say so, and treat the connection as not greeted. */
        srv->c.refused++;
        co_log(CO_LOG_WARN, "refused", "peer=%s seq=0 why=%s", p->key,
               co_log_quote(q, sizeof q, err));
        s_error(srv, rid, rid_len, PW_WIRE_EFIELD, err, 0);
        p->hello_on_rid = false;
        pw_wire_free(&p->pending_hello);
        return false;
    }
    if (rc != CO_DB_OK) {
        co_log(CO_LOG_WARN, "hello_not_stored", "peer=%s why=%s", p->key,
               co_log_quote(q, sizeof q, err));
        s_db_lost(srv, err);
        return false;
    }
    p->host_id = host_id;
    return true;
}

static void
s_on_hello(co_server_t *srv, s_peer_t *p, const uint8_t *rid, size_t rid_len,
           Parity__Envelope **envp)
{
    Parity__Hello *h = (*envp)->hello;
    char q[200];
    srv->c.hellos++;
    p->hello_on_rid = true;
    snprintf(p->name, sizeof p->name, "%s", h->agent_name ? h->agent_name
                                                          : "");
    pw_wire_free(&p->pending_hello);
    if (s_store_hello(srv, p, h, rid, rid_len)) {
        co_log(CO_LOG_INFO, "hello", "peer=%s host_id=%" PRId64 " name=%s",
               p->key, p->host_id, co_log_quote(q, sizeof q, p->name));
        s_ack(srv, rid, rid_len, 0);
        s_jobs_online(srv, p, h);
        return;
    }
    /* Keep it until the database is back; the first data message then
     * stores it. Bounded: one Hello per peer, of at most
     * CO_SERVER_PENDING_HELLO_MAX bytes; a bigger one is forgotten and
     * the connection treated as not greeted, so the agent's next data
     * message gets Error 9 and it says Hello again. */
    if (!p->hello_on_rid)
        return;   /* refused for good */
    srv->c.deferred++;
    if (pw_wire_packed_size(*envp) > CO_SERVER_PENDING_HELLO_MAX) {
        p->hello_on_rid = false;
        return;
    }
    p->pending_hello = *envp;
    *envp = NULL;
}

static void s_result(co_server_t *srv, s_peer_t *p, const uint8_t *rid,
                     size_t rid_len, const Parity__Envelope *env, int rc,
                     size_t stored, unsigned verdicts, const char *err);
static void s_group_add(co_server_t *srv, s_peer_t *p, const uint8_t *rid,
                        size_t rid_len, Parity__Envelope **envp);

/* A data message; takes *envp when it keeps it (a SampleBatch waiting for
 * the group's commit). */
static void
s_on_data(co_server_t *srv, s_peer_t *p, const uint8_t *rid, size_t rid_len,
          Parity__Envelope **envp)
{
    const Parity__Envelope *env = *envp;
    char err[512];
    int rc = CO_DB_FAIL;
    size_t stored = 0;
    unsigned verdicts = 0;

    if (!p->hello_on_rid) {
        s_bad(srv, p, rid, rid_len, PW_WIRE_ENOHELLO,
              "data message before Hello on this connection", env->seq);
        return;
    }
    /* A Hello that arrived while the database was down is stored first
     * (also for a host known from an earlier connection: it updates). */
    if (p->pending_hello
        && s_store_hello(srv, p, p->pending_hello->hello, rid, rid_len)) {
        s_ack(srv, rid, rid_len, 0);
        s_jobs_online(srv, p, p->pending_hello->hello);
        pw_wire_free(&p->pending_hello);
    }
    if (!p->hello_on_rid)
        return;   /* its Hello was just refused */
    if (!srv->db_up || p->host_id == 0) {
        srv->c.deferred++;
        return;   /* silence: the agent resends after 5 s */
    }
    err[0] = '\0';
    switch (env->body_case) {
    case PARITY__ENVELOPE__BODY_CALIBRATION:
        rc = co_db_calibration(srv->db, p->host_id, env->calibration, err,
                               sizeof err);
        break;
    case PARITY__ENVELOPE__BODY_RUN_START:
        rc = co_db_run_start(srv->db, p->host_id, env->run_start, err,
                             sizeof err);
        break;
    case PARITY__ENVELOPE__BODY_SAMPLE_BATCH:
        s_group_add(srv, p, rid, rid_len, envp);
        return;
    case PARITY__ENVELOPE__BODY_RUN_END:
        rc = co_db_run_end(srv->db, p->host_id, env->run_end,
                           srv->cfg.floor_window, srv->cfg.parity, &verdicts,
                           err, sizeof err);
        break;
    case PARITY__ENVELOPE__BODY_JOB_STATUS:
        /* co_jobs' codes are co_db's: ack, refuse or stay silent alike. */
        rc = srv->jobs ? co_jobs_status(srv->jobs, p->key, env->job_status,
                                        s_unix_us(), err, sizeof err)
                       : CO_DB_OK;
        break;
    default:
        break;
    }
    s_result(srv, p, rid, rid_len, env, rc, stored, verdicts, err);
}

/* Answer a stored (or not) data message: Ack, Error or silence. */
static void
s_result(co_server_t *srv, s_peer_t *p, const uint8_t *rid, size_t rid_len,
         const Parity__Envelope *env, int rc, size_t stored,
         unsigned verdicts, const char *err)
{
    char q[600];
    switch (rc) {
    case CO_DB_OK:
        srv->c.samples_stored += stored;
        srv->c.verdicts_stored += verdicts;
        s_ack(srv, rid, rid_len, env->seq);
        if (env->body_case == PARITY__ENVELOPE__BODY_RUN_START) {
            co_log(CO_LOG_INFO, "run_start", "peer=%s run=%s", p->key,
                   co_log_quote(q, sizeof q, env->run_start->run_id));
            if (srv->jobs)
                co_jobs_run_start(srv->jobs, p->key, env->run_start);
        }
        else if (env->body_case == PARITY__ENVELOPE__BODY_RUN_END) {
            co_log(CO_LOG_INFO, "run_end", "peer=%s run=%s verdicts=%u",
                   p->key, co_log_quote(q, sizeof q, env->run_end->run_id),
                   verdicts);
            if (srv->jobs)
                co_jobs_run_end(srv->jobs, p->key, env->run_end,
                                s_unix_us());
        }
        break;
    case CO_DB_DUP:
        srv->c.duplicates++;
        s_ack(srv, rid, rid_len, env->seq);
        break;
    case CO_DB_LATER:
        srv->c.deferred++;
        co_log(CO_LOG_DEBUG, "deferred", "peer=%s seq=%" PRIu64 " why=%s",
               p->key, env->seq, co_log_quote(q, sizeof q, err));
        break;
    case CO_DB_REFUSED:
        srv->c.refused++;
        co_log(CO_LOG_WARN, "refused", "peer=%s seq=%" PRIu64 " why=%s",
               p->key, env->seq, co_log_quote(q, sizeof q, err));
        s_error(srv, rid, rid_len, PW_WIRE_EFIELD, err, env->seq);
        break;
    default:
        srv->c.deferred++;
        srv->c.bad[-PW_WIRE_ESTORE]++;
        co_log(CO_LOG_WARN, "store_failed", "peer=%s seq=%" PRIu64 " why=%s",
               p->key, env->seq, co_log_quote(q, sizeof q, err));
        s_db_lost(srv, err);
        break;
    }
}

/* Store every waiting SampleBatch in one transaction, then answer each. */
static void
s_group_flush(co_server_t *srv)
{
    char err[512] = "";
    if (srv->n_group == 0)
        return;
    for (size_t k = 0; k < srv->n_group; k++) {
        srv->items[k].host_id = srv->group[k].peer->host_id;
        srv->items[k].batch = srv->group[k].env->sample_batch;
    }
    co_db_batches(srv->db, srv->items, srv->n_group, err, sizeof err);
    srv->c.groups++;
    for (size_t k = 0; k < srv->n_group; k++) {
        co_db_batch_item_t *it = &srv->items[k];
        s_result(srv, srv->group[k].peer, srv->group[k].rid,
                 srv->group[k].rid_len, srv->group[k].env, it->rc,
                 it->stored, 0, it->err);
        pw_wire_free(&srv->group[k].env);
    }
    srv->n_group = 0;
}

static void
s_group_add(co_server_t *srv, s_peer_t *p, const uint8_t *rid,
            size_t rid_len, Parity__Envelope **envp)
{
    if (srv->n_group == CO_DB_GROUP_MAX)
        s_group_flush(srv);
    size_t k = srv->n_group++;
    srv->group[k].env = *envp;
    srv->group[k].peer = p;
    memcpy(srv->group[k].rid, rid, rid_len);
    srv->group[k].rid_len = rid_len;
    *envp = NULL;
}

static json_t *
s_counters_json(const co_server_t *srv)
{
    const co_counters_t *c = &srv->c;
    json_t *o = json_pack("{sI sI sI sI sI sI sI sI sI sI sI sI sI sI sI sI"
                          " sI sI sI sI sI sI sI}",
        "received", (json_int_t)c->received,
        "acked", (json_int_t)c->acked,
        "duplicates", (json_int_t)c->duplicates,
        "deferred", (json_int_t)c->deferred,
        "refused", (json_int_t)c->refused,
        "samples_stored", (json_int_t)c->samples_stored,
        "groups", (json_int_t)c->groups,
        "verdicts_stored", (json_int_t)c->verdicts_stored,
        "hellos", (json_int_t)c->hellos,
        "heartbeats_in", (json_int_t)c->heartbeats_in,
        "requests", (json_int_t)c->requests,
        "errors_sent", (json_int_t)c->errors_sent,
        "sends_dropped", (json_int_t)c->sends_dropped,
        "offline", (json_int_t)c->offline,
        "accepted", (json_int_t)c->accepted,
        "auth_failed", (json_int_t)c->auth_failed,
        "disconnects", (json_int_t)c->disconnects,
        "db_failures", (json_int_t)c->db_failures,
        "db_reconnects", (json_int_t)c->db_reconnects,
        "frames", (json_int_t)c->frames,
        "unexpected", (json_int_t)c->unexpected,
        "peers", (json_int_t)srv->n_peers,
        "db_up", (json_int_t)srv->db_up);
    for (int k = 1; o && k < PW_WIRE_ECOUNT; k++) {
        char name[48];
        snprintf(name, sizeof name, "bad_%s", pw_wire_err_name(-k));
        json_object_set_new(o, name, json_integer((json_int_t)c->bad[k]));
    }
    return o;
}

/* A jobs/query command (co_query): its Reply may be large, so it is
 * packed into its own buffer. */
static void
s_on_query(co_server_t *srv, const char *key, const uint8_t *rid,
           size_t rid_len, const Parity__Request *req)
{
    Parity__Envelope env;
    Parity__Reply rep;
    uint8_t *buf = NULL;
    size_t len;
    co_query_handle(srv->query, key, req, &rep);
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_REPLY, &rep);
    if (pw_wire_pack_alloc(&env, &buf, &len, NULL, 0) == PW_WIRE_OK)
        s_send(srv, rid, rid_len, buf, len);
    free(buf);
    co_query_reply_clear(&rep);
}

static void
s_on_request(co_server_t *srv, const char *key, const uint8_t *rid,
             size_t rid_len, const Parity__Request *req)
{
    Parity__Envelope env;
    Parity__Reply rep = PARITY__REPLY__INIT;
    char *body = NULL;
    size_t len;

    srv->c.requests++;
    rep.request_id = req->request_id;
    if (srv->query && co_query_handles(req->command)) {
        s_on_query(srv, key, rid, rid_len, req);
        return;
    }
    if (req->command && strcmp(req->command, "ping") == 0) {
        rep.body_json = "{}";
    } else if (req->command && strcmp(req->command, "stats") == 0) {
        json_t *o = s_counters_json(srv);
        body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        rep.body_json = body ? body : "{}";
    } else {
        rep.status = 2;
        rep.error = "unknown command";
    }
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_REPLY, &rep);
    if (pw_wire_pack(&env, srv->reply, sizeof srv->reply, &len, NULL, 0)
        == PW_WIRE_OK)
        s_send(srv, rid, rid_len, srv->reply, len);
    free(body);
}

/* Does this frame's Envelope hold a Request (field 30)? Only its
 * top-level field tags are read, nothing is unpacked; a frame that does
 * not scan is not one. As in unpacking, the last body field wins. */
static bool
s_is_request(const uint8_t *d, size_t len)
{
    size_t i = 0;
    bool request = false;
    while (i < len) {
        uint64_t tag = 0, v = 0;
        for (int sh = 0; i < len && sh < 64; sh += 7) {
            tag |= (uint64_t)(d[i] & 0x7f) << sh;
            if (!(d[i++] & 0x80))
                break;
        }
        if ((tag >> 3) >= PARITY__ENVELOPE__BODY_HELLO)
            request = (tag >> 3) == PARITY__ENVELOPE__BODY_REQUEST &&
                      (tag & 7) == 2;
        switch (tag & 7) {
        case 0:
            while (i < len && (d[i++] & 0x80))
                ;
            break;
        case 1: i += 8; break;
        case 5: i += 4; break;
        case 2:
            for (int sh = 0; i < len && sh < 64; sh += 7) {
                v |= (uint64_t)(d[i] & 0x7f) << sh;
                if (!(d[i++] & 0x80))
                    break;
            }
            if (v > len - i)
                return false;
            i += (size_t)v;
            break;
        default:
            return false;
        }
    }
    return request;
}

/* One message [rid][body] from the ROUTER. */
static void
s_handle(co_server_t *srv, zmq_msg_t *rid, zmq_msg_t *body, bool extra)
{
    char err[512];
    const char *key = zmq_msg_gets(body, "User-Id");
    const uint8_t *r = zmq_msg_data(rid);
    size_t rlen = zmq_msg_size(rid);
    Parity__Envelope *env = NULL;
    uint64_t seq = 0;

    /* No User-Id means ZAP did not vouch for the peer: cannot happen with
     * CURVE and our handler; drop without a word if it ever does. */
    if (!key || strlen(key) != 40 || rlen > CO_RID_MAX)
        return;
    srv->c.received++;
    s_peer_t *p = s_peer(srv, key, true);
    if (!p)
        return;   /* more peers than CO_SERVER_MAX_PEERS: ignored */
    /* A new connection must say Hello again; a Request (a client using
     * this key too) is answered on its own connection and leaves the
     * agent's alone. */
    bool is_request = !extra && s_is_request(zmq_msg_data(body),
                                             zmq_msg_size(body));
    if (!is_request && (p->rid_len != rlen || memcmp(p->rid, r, rlen) != 0)) {
        memcpy(p->rid, r, rlen);
        p->rid_len = rlen;
        p->hello_on_rid = false;
    }
    p->last_heard_us = s_now_us();
    if (!p->online) {
        p->online = true;
        co_log(CO_LOG_INFO, "online", "peer=%s", p->key);
    }
    if (extra) {
        srv->c.frames++;
        s_bad(srv, p, r, rlen, PW_WIRE_EPARSE,
              "more than one frame in a message", 0);
        return;
    }
    int rc = pw_wire_unpack(zmq_msg_data(body), zmq_msg_size(body),
                            PW_WIRE_MAX_FRAME, &env, &seq, err, sizeof err);
    if (rc != PW_WIRE_OK) {
        s_bad(srv, p, r, rlen, rc, err, seq);
        return;
    }
    /* Anything but a batch or a beat may depend on the waiting batches
     * (a RunEnd) or report on them (stats): store them first. */
    if (env->body_case != PARITY__ENVELOPE__BODY_SAMPLE_BATCH
        && env->body_case != PARITY__ENVELOPE__BODY_HEARTBEAT)
        s_group_flush(srv);
    switch (env->body_case) {
    case PARITY__ENVELOPE__BODY_HELLO:
        s_on_hello(srv, p, r, rlen, &env);
        break;
    case PARITY__ENVELOPE__BODY_HEARTBEAT:
        srv->c.heartbeats_in++;
        if (srv->jobs && p->hello_on_rid && p->host_id)
            co_jobs_heartbeat(srv->jobs, p->key, env->heartbeat,
                              s_unix_us());
        break;
    case PARITY__ENVELOPE__BODY_REQUEST:
        s_on_request(srv, key, r, rlen, env->request);
        break;
    default:
        if (pw_wire_is_data(env->body_case))
            s_on_data(srv, p, r, rlen, &env);
        else
            srv->c.unexpected++;
        break;
    }
    pw_wire_free(&env);
}

/* Read everything waiting on the ROUTER, at most CO_SERVER_BURST. */
static void
s_drain_router(co_server_t *srv)
{
    for (int i = 0; i < CO_SERVER_BURST; i++) {
        zmq_msg_t rid, body;
        int more = 0;
        size_t ml = sizeof more;
        bool extra = false;
        zmq_msg_init(&rid);
        if (zmq_msg_recv(&rid, srv->router, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&rid);
            break;
        }
        zmq_msg_init(&body);
        zmq_getsockopt(srv->router, ZMQ_RCVMORE, &more, &ml);
        if (!more || zmq_msg_recv(&body, srv->router, 0) < 0) {
            zmq_msg_close(&rid);
            zmq_msg_close(&body);
            continue;
        }
        zmq_getsockopt(srv->router, ZMQ_RCVMORE, &more, &ml);
        while (more) {
            zmq_msg_t junk;
            zmq_msg_init(&junk);
            zmq_msg_recv(&junk, srv->router, 0);
            zmq_msg_close(&junk);
            extra = true;
            zmq_getsockopt(srv->router, ZMQ_RCVMORE, &more, &ml);
        }
        s_handle(srv, &rid, &body, extra);
        zmq_msg_close(&rid);
        zmq_msg_close(&body);
    }
    s_group_flush(srv);
}

static void
s_drain_monitor(co_server_t *srv)
{
    for (;;) {
        zmq_msg_t ev, addr;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, srv->monitor, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            return;
        }
        zmq_msg_init(&addr);
        zmq_msg_recv(&addr, srv->monitor, 0);
        uint16_t event = 0;
        if (zmq_msg_size(&ev) >= 2)
            memcpy(&event, zmq_msg_data(&ev), 2);
        switch (event) {
        case ZMQ_EVENT_ACCEPTED:
            srv->c.accepted++;
            break;
        case ZMQ_EVENT_DISCONNECTED:
            srv->c.disconnects++;
            break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: {
            int64_t now = s_now_us();
            srv->c.auth_failed++;
            if (now - srv->auth_logged_us >= CO_AUTH_LOG_EVERY_US) {
                srv->auth_logged_us = now;
                co_log(CO_LOG_WARN, "handshake_failed",
                       "event=%u count=%" PRIu64, event, srv->c.auth_failed);
            }
            break;
        }
        default:
            break;
        }
        zmq_msg_close(&ev);
        zmq_msg_close(&addr);
    }
}

static void
s_drain_auth(co_server_t *srv)
{
    for (int i = 0; i < CO_SERVER_BURST; i++) {
        char key[41], why[256], q[300];
        int rc = co_auth_handle(srv->auth, key, why, sizeof why);
        if (rc < 0)
            return;
        if (rc == 0) {
            int64_t now = s_now_us();
            if (now - srv->auth_logged_us >= CO_AUTH_LOG_EVERY_US) {
                srv->auth_logged_us = now;
                co_log(CO_LOG_WARN, "auth_denied", "why=%s",
                       co_log_quote(q, sizeof q, why));
            }
        }
    }
}

/* Heartbeat every peer heard recently; mark silent ones offline. */
static void
s_beat(co_server_t *srv)
{
    int64_t now = s_now_us();
    int64_t interval = (int64_t)srv->cfg.heartbeat_ms * 1000;
    size_t len;
    if (now < srv->next_beat_us)
        return;
    srv->next_beat_us = now + interval;
    if (srv->jobs && srv->db_up)
        co_jobs_tick(srv->jobs, s_unix_us());   /* expiry, job ends */
    if (pw_wire_pack_heartbeat(s_unix_us(), 0, "idle", "", srv->reply,
                               sizeof srv->reply, &len) != PW_WIRE_OK)
        return;
    for (size_t i = 0; i < srv->n_peers; i++) {
        s_peer_t *p = srv->list[i];
        if (!p->online)
            continue;
        if (now - p->last_heard_us > CO_MISSED_BEATS * interval) {
            char err[256], q[200];
            p->online = false;
            p->hello_on_rid = false;
            p->rid_len = 0;
            pw_wire_free(&p->pending_hello);
            srv->c.offline++;
            co_log(CO_LOG_INFO, "offline", "peer=%s name=%s", p->key,
                   co_log_quote(q, sizeof q, p->name));
            if (srv->jobs && p->host_id)
                co_jobs_agent_offline(srv->jobs, p->key, s_unix_us());
            if (p->host_id && srv->db_up
                && co_db_host_online(srv->db, p->host_id, false, err,
                                     sizeof err) == CO_DB_FAIL)
                s_db_lost(srv, err);
            continue;
        }
        s_send(srv, p->rid, p->rid_len, srv->reply, len);
    }
}

/* ---- life cycle --------------------------------------------------------- */

co_server_t *
co_server_new(const co_server_config_t *cfg, co_db_t *db, char *err,
              size_t errlen)
{
    co_server_t *srv = calloc(1, sizeof *srv);
    zcert_t *cert = NULL;

    if (!srv) {
        s_err(err, errlen, "calloc co_server: out of memory");
        return NULL;
    }
    srv->cfg = *cfg;
    if (srv->cfg.heartbeat_ms <= 0)
        srv->cfg.heartbeat_ms = 1000;
    if (srv->cfg.floor_window <= 0)
        srv->cfg.floor_window = CO_DB_FLOOR_WINDOW;
    srv->db = db;
    srv->db_up = co_db_connected(db);

    cert = zcert_load(cfg->key_path);
    if (!cert) {
        s_err(err, errlen, "--key %s: cannot read a CURVE certificate "
              "(zcert_load failed; make one with `parity keygen`)",
              cfg->key_path);
        goto fail;
    }
    /* A public-only certificate has an all-zero secret key. */
    if (strcmp(zcert_secret_txt(cert),
               "0000000000000000000000000000000000000000") == 0) {
        s_err(err, errlen, "--key %s: no secret key in it (give the "
              "_secret file that `parity keygen` wrote)", cfg->key_path);
        goto fail;
    }
    snprintf(srv->public_key, sizeof srv->public_key, "%s",
             zcert_public_txt(cert));

    srv->ctx = zmq_ctx_new();
    if (!srv->ctx) {
        s_err(err, errlen, "zmq_ctx_new: %s", zmq_strerror(errno));
        goto fail;
    }
    srv->auth = co_auth_new(srv->ctx, cfg->allow_dir, err, errlen);
    if (!srv->auth)
        goto fail;
    if (s_jobs_new(srv, err, errlen) != 0)
        goto fail;

    srv->router = zmq_socket(srv->ctx, ZMQ_ROUTER);
    if (!srv->router) {
        s_err(err, errlen, "zmq_socket(ZMQ_ROUTER): %s", zmq_strerror(errno));
        goto fail;
    }
    int one = 1, hwm = CO_SERVER_HWM, linger = 0;
    int64_t maxmsg = PW_WIRE_MAX_FRAME;
    if (zmq_setsockopt(srv->router, ZMQ_CURVE_SERVER, &one, sizeof one)
        || zmq_setsockopt(srv->router, ZMQ_CURVE_SECRETKEY,
                          zcert_secret_key(cert), 32)
        || zmq_setsockopt(srv->router, ZMQ_CURVE_PUBLICKEY,
                          zcert_public_key(cert), 32)
        || zmq_setsockopt(srv->router, ZMQ_ZAP_DOMAIN, "parity", 6)
        || zmq_setsockopt(srv->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg)
        || zmq_setsockopt(srv->router, ZMQ_SNDHWM, &hwm, sizeof hwm)
        || zmq_setsockopt(srv->router, ZMQ_RCVHWM, &hwm, sizeof hwm)
        || zmq_setsockopt(srv->router, ZMQ_ROUTER_MANDATORY, &one, sizeof one)
        || zmq_setsockopt(srv->router, ZMQ_LINGER, &linger, sizeof linger)) {
        s_err(err, errlen, "zmq_setsockopt(ROUTER): %s", zmq_strerror(errno));
        goto fail;
    }
    if (zmq_socket_monitor(srv->router, CO_MONITOR_ENDPOINT,
                           ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED
                           | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
                           | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                           | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0) {
        s_err(err, errlen, "zmq_socket_monitor: %s", zmq_strerror(errno));
        goto fail;
    }
    srv->monitor = zmq_socket(srv->ctx, ZMQ_PAIR);
    if (!srv->monitor
        || zmq_setsockopt(srv->monitor, ZMQ_LINGER, &linger, sizeof linger)
        || zmq_connect(srv->monitor, CO_MONITOR_ENDPOINT) != 0) {
        s_err(err, errlen, "zmq_connect(%s): %s", CO_MONITOR_ENDPOINT,
              zmq_strerror(errno));
        goto fail;
    }
    if (zmq_bind(srv->router, cfg->bind) != 0) {
        s_err(err, errlen, "--bind %s: zmq_bind: %s", cfg->bind,
              zmq_strerror(errno));
        goto fail;
    }
    size_t elen = sizeof srv->endpoint;
    if (zmq_getsockopt(srv->router, ZMQ_LAST_ENDPOINT, srv->endpoint, &elen))
        snprintf(srv->endpoint, sizeof srv->endpoint, "%s", cfg->bind);
    zcert_destroy(&cert);
    return srv;
fail:
    zcert_destroy(&cert);
    co_server_destroy(&srv);
    return NULL;
}

int
co_server_check(const co_server_config_t *cfg, char *err, size_t errlen)
{
    struct stat st;
    /* Only the form: whether the address binds is known at bind time,
     * but a typo should not wait for a new cluster's initdb to be told. */
    if (!cfg->bind || strncmp(cfg->bind, "tcp://", 6) != 0
        || !strchr(cfg->bind + 6, ':')) {
        s_err(err, errlen, "--bind %s: want tcp://HOST:PORT (e.g. "
              "tcp://*:5555)", cfg->bind ? cfg->bind : "");
        return -1;
    }
    zcert_t *cert = zcert_load(cfg->key_path);
    if (!cert) {
        s_err(err, errlen, "--key %s: cannot read a CURVE certificate "
              "(zcert_load failed; make one with `parity keygen`)",
              cfg->key_path);
        return -1;
    }
    bool no_secret = strcmp(zcert_secret_txt(cert),
                            "0000000000000000000000000000000000000000") == 0;
    zcert_destroy(&cert);
    if (no_secret) {
        s_err(err, errlen, "--key %s: no secret key in it (give the "
              "_secret file that `parity keygen` wrote)", cfg->key_path);
        return -1;
    }
    if (stat(cfg->allow_dir, &st) != 0 || !S_ISDIR(st.st_mode)
        || access(cfg->allow_dir, R_OK | X_OK) != 0) {
        s_err(err, errlen, "--allow %s: not a readable directory",
              cfg->allow_dir);
        return -1;
    }
    return 0;
}

const char *
co_server_endpoint(const co_server_t *srv)
{
    return srv->endpoint;
}

const co_counters_t *
co_server_counters(const co_server_t *srv)
{
    return &srv->c;
}

void
co_server_log_counters(const co_server_t *srv, const char *event)
{
    json_t *o = s_counters_json(srv);
    char line[CO_LOG_LINE_MAX - 128];
    size_t n = 0;
    const char *k;
    json_t *v;
    line[0] = '\0';
    json_object_foreach(o, k, v) {
        int w = snprintf(line + n, sizeof line - n, "%s%s=%" JSON_INTEGER_FORMAT,
                         n ? " " : "", k, json_integer_value(v));
        if (w < 0 || (size_t)w >= sizeof line - n)
            break;
        n += (size_t)w;
    }
    json_decref(o);
    co_log(CO_LOG_INFO, event, "%s", line);
}

int
co_server_run(co_server_t *srv, volatile sig_atomic_t *stop,
              volatile sig_atomic_t *dump)
{
    co_log(CO_LOG_INFO, "listening", "endpoint=%s public_key=%s "
           "allowed_keys=%zu heartbeat_ms=%d db_up=%d",
           srv->endpoint, srv->public_key, co_auth_key_count(srv->auth),
           srv->cfg.heartbeat_ms, srv->db_up);
    if (co_auth_key_count(srv->auth) == 0) {
        char q[600];
        co_log(CO_LOG_WARN, "no_keys", "why=%s",
               co_log_quote(q, sizeof q, "no public certificate in --allow "
                            "(or --admin): every agent and client is "
                            "refused until one is added"));
    }
    srv->next_beat_us = s_now_us() + (int64_t)srv->cfg.heartbeat_ms * 1000;
    while (!*stop) {
        zmq_pollitem_t items[] = {
            { srv->router, 0, ZMQ_POLLIN, 0 },
            { co_auth_socket(srv->auth), 0, ZMQ_POLLIN, 0 },
            { srv->monitor, 0, ZMQ_POLLIN, 0 },
        };
        int64_t now = s_now_us();
        int64_t wait = srv->next_beat_us - now;
        if (!srv->db_up && srv->db_retry_at_us - now < wait)
            wait = srv->db_retry_at_us - now;
        if (wait < 0)
            wait = 0;
        /* Poll at least every 100 ms so a signal is seen promptly even if
         * it arrived just before zmq_poll started. */
        long ms = (long)(wait / 1000);
        if (ms > 100)
            ms = 100;
        int rc = zmq_poll(items, 3, ms);
        if (rc < 0 && errno != EINTR) {
            co_log(CO_LOG_ERROR, "poll_failed", "errno=%d", errno);
            return -1;
        }
        if (dump && *dump) {
            *dump = 0;
            co_server_log_counters(srv, "counters");
        }
        if (rc > 0) {
            if (items[1].revents & ZMQ_POLLIN)
                s_drain_auth(srv);
            if (items[2].revents & ZMQ_POLLIN)
                s_drain_monitor(srv);
            if (items[0].revents & ZMQ_POLLIN)
                s_drain_router(srv);
        }
        s_db_try(srv);
        s_beat(srv);
    }
    return 0;
}

void
co_server_destroy(co_server_t **srvp)
{
    if (!srvp || !*srvp)
        return;
    co_server_t *srv = *srvp;
    if (srv->router) {
        /* Give acks already queued a moment to leave (drain). */
        int linger = 1000;
        zmq_setsockopt(srv->router, ZMQ_LINGER, &linger, sizeof linger);
        zmq_socket_monitor(srv->router, NULL, 0);
        zmq_close(srv->router);
    }
    if (srv->monitor)
        zmq_close(srv->monitor);
    co_auth_destroy(&srv->auth);
    co_query_destroy(&srv->query);
    co_jobs_destroy(&srv->jobs);
    if (srv->ctx)
        zmq_ctx_term(srv->ctx);
    for (size_t k = 0; k < srv->n_group; k++)
        pw_wire_free(&srv->group[k].env);
    for (size_t i = 0; i < srv->n_peers; i++) {
        pw_wire_free(&srv->list[i]->pending_hello);
        free(srv->list[i]);
    }
    free(srv);
    *srvp = NULL;
}
