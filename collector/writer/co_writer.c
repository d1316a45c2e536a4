/* co_writer.c -- the writer thread; see co_writer.h. */
#include "co_writer.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <czmq.h>
#include <jansson.h>

#include "co_bisector.h"
#include "co_confirmer.h"
#include "co_cals.h"
#include "co_detect.h"
#include "co_enroll.h"
#include "co_hook.h"
#include "co_hosts.h"
#include "co_ingest.h"
#include "co_jobs.h"
#include "co_log.h"
#include "co_notify.h"
#include "co_out.h"
#include "co_query.h"
#include "co_retain.h"
#include "co_runs.h"
#include "co_seen.h"
#include "co_verdicts.h"
#include "pw_clock.h"
#include "pw_key.h"

/* Hosts whose last_seen is written at the next tick, at most. */
#define S_HEARD_MAX 16384
/* A pending key's Hello is written to the database at most this often
 * (its agent says Hello every 5 s while it waits). */
#define S_ENROLL_NOTE_US (60LL * 1000000)
/* Every key's state is read again this often: a change another
 * collector committed after a later-numbered one would be missed by
 * reading only the versions above the highest seen. */
#define S_KEYS_REREAD_US (60LL * 1000000)

/* What the writer knows of one peer (a host or a client key). */
typedef struct {
    char key[41];
    uint8_t rid[CO_QUEUE_RID_MAX]; /* connection that spoke last */
    size_t rid_len;
    bool hello_on_rid;             /* a Hello arrived on that connection */
    int64_t host_id;               /* hosts.id, 0 until a Hello is stored */
    Parity__Envelope *pending_hello; /* Hello not stored yet (db down) */
    char name[64];                 /* claimed agent name, for logs */
    bool heard;                    /* in heard[] since the last tick */
    int64_t bad_logged_us;         /* last bad_input line (0: none) */
    uint64_t bad_unlogged;         /* bad input since that line */
    int64_t refused_logged_us;     /* the same for `refused` lines */
    uint64_t refused_unlogged;
    unsigned statuses;             /* its JobStatus waiting in st->status */
    int64_t enroll_noted_us;       /* its pending Hello last written */
} s_peer_t;

/* A SampleBatch waiting for the group's commit. */
typedef struct {
    co_queue_item_t *item;
    Parity__Envelope *env;
    s_peer_t *peer;
} s_waiting_t;

/* A message stored (or refused, or found a duplicate) inside the open
 * transaction, waiting for its COMMIT to be answered. Owns item and env. */
typedef struct {
    co_queue_item_t *item;
    Parity__Envelope *env;
    s_peer_t *peer;                /* peers are deleted only between bursts */
    int rc;
    size_t stored;
    unsigned verdicts;
    int64_t run;                   /* a stored RunEnd's runs.id, or 0 */
    char err[256];
} s_pending_t;

struct co_writer {
    co_config_t cfg;
    co_db_t *db;
    void *out;                     /* PUSH to the loop (this thread's) */
    void *ctx;
    co_queue_t *in;
    pthread_t thread;
    bool started;
    atomic_int stop;               /* set by co_writer_destroy */
    zhashx_t *peers;               /* key -> s_peer_t (owned) */
    co_counters_t c;               /* the fields this thread owns */
    pthread_mutex_t snap_lock;
    co_counters_t snap;            /* c as of the last publish */
    bool snap_db_up;
    bool db_up;
    int64_t db_retry_at_us, db_backoff_us;
    int64_t next_tick_us, next_maintain_us;
    s_waiting_t group[CO_INGEST_GROUP_MAX];
    size_t n_group;
    co_ingest_item_t items[CO_INGEST_GROUP_MAX];
    co_jobs_t *jobs;               /* NULL without cfg.conninfo */
    co_conn_t *jobs_conn;          /* its connection */
    co_query_t *query;             /* run and cancel only */
    co_runs_t *runs;               /* samples of runs in progress */
    co_detect_t *detect;           /* change points; NULL without db */
    co_notify_t *notify;           /* webhooks; NULL without --notify-url */
    co_bisector_t *bisector;       /* bisects; NULL without db */
    co_confirmer_t *confirmer;     /* confirms; NULL without db */
    co_keys_t *keys;               /* agents' keys (borrowed) */
    int64_t keys_version;          /* highest host_keys.version read */
    int64_t keys_reread_us;        /* next time keys_version goes to 0 */
    /* The burst's transaction (co_db_begin): what was stored in it is
     * answered only after its COMMIT. */
    bool txn_open;
    s_pending_t pending[CO_WRITER_PENDING_MAX];
    size_t n_pending;
    /* The burst's JobStatus messages: stored together after its COMMIT
     * (co_jobs_status_begin/_commit), one transaction for all. */
    s_pending_t status[CO_JOBS_STATUS_BATCH];
    size_t n_status;
    int64_t *heard;                /* [S_HEARD_MAX] host ids */
    size_t n_heard;
    co_seen_t *seen;               /* their last_seen, off this path */
    int64_t slow_logged_us;        /* last slow_store line */
    uint64_t slow_unlogged;
};

static const char *const s_step_names[CO_STEP_COUNT] = {
    "batches", "run_start", "run_end", "calibration", "job_status",
    "hello", "commit", "request", "offline", "tick", "heard", "maintain",
};

const char *
co_step_name(co_step_t step)
{
    return step < CO_STEP_COUNT ? s_step_names[step] : "unknown";
}

static bool s_may_log(int64_t *logged_us, uint64_t *unlogged);

/* A step of the writer that began at t0 has ended: count its time, and
 * say so when it was slow (an operator's first question when acks are
 * late is what the writer was doing). Lines are rate-limited. */
static void
s_step(co_writer_t *st, co_step_t step, int64_t t0)
{
    int64_t us = pw_clock_mono_us() - t0;
    st->c.step_us[step] += (uint64_t)us;
    if (us < CO_WRITER_SLOW_US)
        return;
    st->c.slow_steps++;
    if (s_may_log(&st->slow_logged_us, &st->slow_unlogged))
    {
        co_log(CO_LOG_WARN, "slow_store", "step=%s ms=%" PRId64
               " not_logged_since=%" PRIu64, co_step_name(step), us / 1000,
               st->slow_unlogged);
        st->slow_unlogged = 0;
    }
}

/* ---- answers to the loop ------------------------------------------------ */

/* Counters for stats: published before every answer, so a peer that
 * asks for stats after an answer sees what led to it. */
static void
s_publish(co_writer_t *st)
{
    pthread_mutex_lock(&st->snap_lock);
    st->snap = st->c;
    st->snap_db_up = st->db_up;
    pthread_mutex_unlock(&st->snap_lock);
}

/* Send buf (a packed Envelope) to rid through the loop. */
static void
s_out(co_writer_t *st, const uint8_t *rid, size_t rid_len, const void *buf,
      size_t len)
{
    co_out_hdr_t h;
    s_publish(st);
    memset(&h, 0, sizeof h);
    h.flags = CO_OUT_SEND;
    if (co_out_send(st->out, &h, rid, rid_len, buf, len) != 0)
        st->c.sends_dropped++;
}

/* Tell the loop that item is finished (exactly once per item taken). */
static void
s_done(co_writer_t *st, const co_queue_item_t *item)
{
    co_out_hdr_t h;
    s_publish(st);
    co_out_hdr_done(&h, item);
    co_out_send(st->out, &h, NULL, 0, NULL, 0);
}

static void
s_ack(co_writer_t *st, const uint8_t *rid, size_t rid_len, uint64_t seq)
{
    uint8_t buf[64];
    size_t len;
    if (pw_wire_pack_ack(seq, buf, sizeof buf, &len) == PW_WIRE_OK) {
        s_out(st, rid, rid_len, buf, len);
        st->c.acked++;
    }
}

static void
s_error(co_writer_t *st, const uint8_t *rid, size_t rid_len, int code,
        const char *msg, uint64_t seq)
{
    uint8_t buf[2048];
    char line[1024];
    size_t len;
    snprintf(line, sizeof line, "%s", msg);   /* so the reply fits */
    /* Valid UTF-8 whatever the message quotes (an arm name, a cut):
     * a peer's decoder may refuse other text. */
    for (size_t at = 0, n = strlen(line); at < n;) {
        at += pw_wire_utf8_valid(line + at, n - at);
        if (at < n)
            line[at++] = '?';
    }
    if (pw_wire_pack_error(code, line, seq, buf, sizeof buf, &len)
        == PW_WIRE_OK) {
        s_out(st, rid, rid_len, buf, len);
        st->c.errors_sent++;
    }
}

/* Bad input from a peer: counted, answered, and logged at most once
 * per peer per CO_CONFIG_LOG_EVERY_US whatever the kind; the line says
 * how many were not logged since the last one. */
/* True when a warning line of this kind may be written now (then its
 * clock restarts); false counts one more not logged. */
static bool
s_may_log(int64_t *logged_us, uint64_t *unlogged)
{
    int64_t now = pw_clock_mono_us();
    if (*logged_us != 0 && now - *logged_us < CO_CONFIG_LOG_EVERY_US) {
        (*unlogged)++;
        return false;
    }
    *logged_us = now;
    return true;
}

static void
s_bad(co_writer_t *st, s_peer_t *p, int code, const char *why, uint64_t seq)
{
    st->c.bad[-code]++;
    if (s_may_log(&p->bad_logged_us, &p->bad_unlogged)) {
        char q[512];
        co_log(CO_LOG_WARN, "bad_input",
               "peer=%s kind=%s seq=%" PRIu64 " count=%" PRIu64
               " not_logged_since=%" PRIu64 " why=%s",
               p->key, pw_wire_err_name(code), seq, st->c.bad[-code],
               p->bad_unlogged, co_log_quote(q, sizeof q, why));
        p->bad_unlogged = 0;
    }
    /* Out of memory is the collector's trouble, not the message's: an
     * Error naming the seq would make the agent delete it (refused for
     * good). With seq 0 it is only news; the message is resent. */
    s_error(st, p->rid, p->rid_len, code, why,
            code == PW_WIRE_ENOMEM ? 0 : seq);
}

/* ---- peers ---------------------------------------------------------------- */

static void
s_peer_free(void **item)
{
    s_peer_t *p = *item;
    if (!p)
        return;
    pw_wire_free(&p->pending_hello);
    free(p);
    *item = NULL;
}

static s_peer_t *
s_peer(co_writer_t *st, const char *key)
{
    s_peer_t *p = zhashx_lookup(st->peers, key);
    if (p)
        return p;
    p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    snprintf(p->key, sizeof p->key, "%s", key);
    if (zhashx_insert(st->peers, key, p) != 0) {
        free(p);
        return NULL;
    }
    return p;
}

/* ---- database state ---------------------------------------------------- */

static void
s_db_lost(co_writer_t *st, const char *why)
{
    char q[512];
    st->c.db_failures++;
    if (co_db_connected(st->db))
        return;
    if (st->db_up)
        co_log(CO_LOG_ERROR, "db_down", "why=%s",
               co_log_quote(q, sizeof q, why));
    st->db_up = false;
    if (st->db_backoff_us == 0)
        st->db_backoff_us = CO_CONFIG_DB_RETRY_MIN_US;
    st->db_retry_at_us = pw_clock_mono_us() + st->db_backoff_us;
}

static void
s_db_try(co_writer_t *st)
{
    char err[512], q[600];
    int applied = 0;
    if (st->db_up || pw_clock_mono_us() < st->db_retry_at_us)
        return;
    if (co_db_connect(st->db, err, sizeof err) == CO_DB_OK
        && co_db_migrate(st->db, &applied, err, sizeof err) == CO_DB_OK) {
        st->db_up = true;
        st->db_backoff_us = 0;
        st->c.db_reconnects++;
        st->next_maintain_us = 0;
        co_log(CO_LOG_INFO, "db_up", "migrations_applied=%d", applied);
        return;
    }
    co_db_disconnect(st->db);
    st->db_backoff_us = st->db_backoff_us ? st->db_backoff_us * 2
                                          : CO_CONFIG_DB_RETRY_MIN_US;
    if (st->db_backoff_us > CO_CONFIG_DB_RETRY_MAX_US)
        st->db_backoff_us = CO_CONFIG_DB_RETRY_MAX_US;
    st->db_retry_at_us = pw_clock_mono_us() + st->db_backoff_us;
    co_log(CO_LOG_WARN, "db_retry", "in_ms=%" PRId64 " why=%s",
           st->db_backoff_us / 1000, co_log_quote(q, sizeof q, err));
}

/* ---- jobs -------------------------------------------------------------- */

/* co_jobs' send callback: to the connection the host spoke on last. */
static int
s_jobs_send(void *ctx, const char *key, const Parity__Envelope *env)
{
    co_writer_t *st = ctx;
    s_peer_t *p = zhashx_lookup(st->peers, key);
    uint8_t *buf = NULL;
    size_t len;
    if (!p || !p->hello_on_rid || p->rid_len == 0)
        return -1;
    if (pw_wire_pack_alloc(env, &buf, &len, NULL, 0) != PW_WIRE_OK)
        return -1;
    uint64_t dropped = st->c.sends_dropped;
    s_out(st, p->rid, p->rid_len, buf, len);
    free(buf);
    return st->c.sends_dropped == dropped ? 0 : -1;
}

static void
s_jobs_log(void *ctx, const char *event, const char *text)
{
    (void)ctx;
    co_log(strcmp(event, "db_error") == 0 ? CO_LOG_WARN : CO_LOG_INFO,
           event, "%s", text);
}

static int
s_jobs_new(co_writer_t *st, char *err, size_t errlen)
{
    if (!st->cfg.conninfo)
        return 0;
    /* co_jobs' connection: queries the writer answers itself run on it
     * too, under --query-timeout. */
    co_conn_opts_t co = { .conninfo = st->cfg.conninfo,
                          .statement_timeout_ms = st->cfg.query_timeout_ms,
                          .listen = CO_JOBS_CHANNEL };
    st->jobs_conn = co_conn_new(&co);
    co_jobs_opts_t o = { st->jobs_conn, st, s_jobs_send, s_jobs_log,
                         (int64_t)CO_CONFIG_MISSED_BEATS *
                         st->cfg.heartbeat_ms * 1000,
                         st->cfg.name,
                         /* ten beats: a slow step is not a death */
                         10 * st->cfg.heartbeat_ms, true };
    st->jobs = st->jobs_conn ? co_jobs_new(&o) : NULL;
    st->query = st->jobs ? co_query_new(st->jobs, st->cfg.floor_window,
                                        st->keys) : NULL;
    if (st->query)
        co_query_set_parity(st->query, st->cfg.parity);
    st->seen = co_seen_new(st->cfg.conninfo);
    if (!st->query || !st->seen) {
        snprintf(err, errlen, "co_jobs/co_query/co_seen: out of memory");
        return -1;
    }
    if (st->cfg.admin_dir
        && co_query_load_admins(st->query, st->cfg.admin_dir, err,
                                errlen) < 0)
        return -1;
    return 0;
}

/* A host's Hello is stored: co_jobs offers it work. */
static void
s_jobs_online(co_writer_t *st, s_peer_t *p, const Parity__Hello *h)
{
    char err[512], q[600];
    if (st->jobs && co_jobs_agent_online(st->jobs, p->key, h,
                                         pw_clock_unix_us(), err, sizeof err)
                    != CO_JOBS_OK)
        co_log(CO_LOG_WARN, "jobs_online_failed", "peer=%s why=%s", p->key,
               co_log_quote(q, sizeof q, err));
}

/* A Hello again on the same connection: only the suites change. */
static void
s_jobs_suites(co_writer_t *st, s_peer_t *p, const Parity__Hello *h)
{
    char err[512], q[600];
    if (st->jobs && co_jobs_agent_suites(st->jobs, p->key, h, err,
                                         sizeof err) != CO_JOBS_OK)
        co_log(CO_LOG_WARN, "jobs_suites_failed", "peer=%s why=%s", p->key,
               co_log_quote(q, sizeof q, err));
}

/* Remember that the host was heard, for the next last_seen write. */
static void
s_heard(co_writer_t *st, s_peer_t *p)
{
    if (p->heard || p->host_id == 0 || st->n_heard >= S_HEARD_MAX)
        return;
    p->heard = true;
    st->heard[st->n_heard++] = p->host_id;
}

/* ---- message handlers ---------------------------------------------------- */

static void s_txn_commit(co_writer_t *st);
static void s_status_flush(co_writer_t *st);

/* Store the peer's Hello; true when the host is known afterwards. */
static bool
s_store_hello(co_writer_t *st, s_peer_t *p, const Parity__Hello *h)
{
    char err[512], q[600];
    int64_t host_id = 0;
    if (!st->db_up)
        return false;
    int rc = co_hosts_hello(st->db, p->key, h, &host_id, err, sizeof err);
    if (rc == CO_DB_REFUSED) {
        /* Content the database can never take (e.g. a name that is not
         * UTF-8): say so, and treat the connection as not greeted. */
        st->c.refused++;
        co_log(CO_LOG_WARN, "refused", "peer=%s seq=0 why=%s", p->key,
               co_log_quote(q, sizeof q, err));
        s_error(st, p->rid, p->rid_len, PW_WIRE_EFIELD, err, 0);
        p->hello_on_rid = false;
        pw_wire_free(&p->pending_hello);
        return false;
    }
    if (rc != CO_DB_OK) {
        co_log(CO_LOG_WARN, "hello_not_stored", "peer=%s why=%s", p->key,
               co_log_quote(q, sizeof q, err));
        s_db_lost(st, err);
        return false;
    }
    p->host_id = host_id;
    return true;
}

/* Keep the Hello of the connection until it can be stored, within
 * CO_CONFIG_PENDING_HELLO_MAX bytes; a bigger one is forgotten and the
 * connection treated as not greeted. */
static void
s_keep_hello(s_peer_t *p, Parity__Envelope **envp)
{
    if (pw_wire_packed_size(*envp) > CO_CONFIG_PENDING_HELLO_MAX) {
        p->hello_on_rid = false;
        return;
    }
    p->pending_hello = *envp;
    *envp = NULL;
}

/* The Hello of a key that is not approved as far as the loop knows
 * (item->key_pending): recorded as pending in the database (co_enroll)
 * and answered Error 20, or Error 21 when it was rejected or revoked.
 * A pending one's Hello is kept: once an operator approves the key, the
 * loop queues the connection's data again, and its first data message
 * stores the Hello first (as after the database was down). Returns true
 * when the database says the key is approved after all (an operator was
 * faster than this collector's copy): then it is an ordinary Hello. */
static bool
s_pending_hello(co_writer_t *st, s_peer_t *p, co_queue_item_t *item,
                Parity__Envelope **envp)
{
    const Parity__Hello *h = (*envp)->hello;
    char fp[PW_KEY_FP_SIZE], err[512], msg[640], q[600], qn[200];
    co_key_state_t state = co_keys_get(st->keys, p->key);
    bool created = false;
    int64_t now = pw_clock_mono_us();
    int rc = CO_ENROLL_OK;
    pw_key_fingerprint(p->key, fp);
    p->hello_on_rid = false;
    snprintf(p->name, sizeof p->name, "%s", h->agent_name ? h->agent_name
                                                          : "");
    if (!st->jobs || !st->db_up) {
        st->c.deferred++;    /* silence: its agent says Hello again */
        return false;
    }
    /* A key known to be pending, written lately: nothing new to write. */
    if (state != CO_KEY_PENDING
        || now - p->enroll_noted_us >= S_ENROLL_NOTE_US) {
        const char *addr = zmq_msg_gets(&item->frame, "Peer-Address");
        rc = co_enroll_hello(st->jobs_conn, p->key, h->agent_name,
                             h->agent_version, addr, &state, &created, err,
                             sizeof err);
    }
    if (rc == CO_ENROLL_FAIL) {
        co_log(CO_LOG_WARN, "enroll_failed", "peer=%s why=%s", p->key,
               co_log_quote(q, sizeof q, err));
        st->c.deferred++;
        return false;
    }
    if (rc == CO_ENROLL_REFUSED) {
        st->c.refused++;
        snprintf(msg, sizeof msg, "hello: %s", err);
        s_error(st, p->rid, p->rid_len, PW_WIRE_EFIELD, msg, 0);
        return false;
    }
    if (rc == CO_ENROLL_FULL) {
        snprintf(msg, sizeof msg, "pending: %d keys wait for an operator's "
                 "approval already, so this key (%s) was not recorded; ask "
                 "an operator to approve or reject some (parity hosts "
                 "--pending), then say Hello again", CO_ENROLL_MAX_PENDING,
                 fp);
        s_error(st, p->rid, p->rid_len, PW_WIRE_KEY_PENDING, msg, 0);
        return false;
    }
    co_keys_set(st->keys, p->key, state);
    if (state == CO_KEY_APPROVED)
        return true;
    if (state != CO_KEY_PENDING) {
        snprintf(msg, sizeof msg, "denied: this key (%s) was %s by an "
                 "operator of the collector; nothing is stored, and the "
                 "next connection is refused", fp, co_key_state_name(state));
        s_error(st, p->rid, p->rid_len, PW_WIRE_KEY_DENIED, msg, 0);
        return false;
    }
    if (rc == CO_ENROLL_OK && now - p->enroll_noted_us >= S_ENROLL_NOTE_US)
        p->enroll_noted_us = now;
    if (created)
        co_log(CO_LOG_INFO, "key_pending", "peer=%s fingerprint=%s name=%s "
               "address=%s", p->key, fp, co_log_quote(qn, sizeof qn,
                                                      p->name),
               zmq_msg_gets(&item->frame, "Peer-Address") ?
               zmq_msg_gets(&item->frame, "Peer-Address") : "");
    snprintf(msg, sizeof msg, "pending: this key (%s) waits for an "
             "operator's approval (parity hosts approve %s); nothing is "
             "stored until then: keep your messages, and send Hello again",
             fp, fp);
    s_error(st, p->rid, p->rid_len, PW_WIRE_KEY_PENDING, msg, 0);
    p->hello_on_rid = true;
    s_keep_hello(p, envp);
    return false;
}

static void
s_on_hello(co_writer_t *st, s_peer_t *p, co_queue_item_t *item,
           Parity__Envelope **envp)
{
    Parity__Hello *h = (*envp)->hello;
    char q[200];
    /* A Hello again on a connection whose Hello is stored: the agent's
     * suites changed (docs/protocol.md, Hello). The host is updated; the
     * connection and its jobs stay as they are. */
    bool again = p->hello_on_rid && p->host_id && !p->pending_hello
              && !item->key_pending;
    s_status_flush(st);  /* answered on the connection they came on */
    s_txn_commit(st);    /* co_jobs reads on its own connection */
    st->c.hellos++;
    pw_wire_free(&p->pending_hello);
    if (item->key_pending && !s_pending_hello(st, p, item, envp))
        return;
    p->hello_on_rid = true;
    snprintf(p->name, sizeof p->name, "%s", h->agent_name ? h->agent_name
                                                          : "");
    int64_t t0 = pw_clock_mono_us();
    bool stored = s_store_hello(st, p, h);
    if (stored) {
        co_log(CO_LOG_INFO, "hello", "peer=%s host_id=%" PRId64 " name=%s",
               p->key, p->host_id, co_log_quote(q, sizeof q, p->name));
        s_ack(st, p->rid, p->rid_len, 0);
        if (again)
            s_jobs_suites(st, p, h);
        else
            s_jobs_online(st, p, h);
    }
    s_step(st, CO_STEP_HELLO, t0);
    if (stored)
        return;
    /* Kept until the database is back; the first data message then
     * stores it. Bounded: one Hello per peer, of at most
     * CO_CONFIG_PENDING_HELLO_MAX bytes; a bigger one is forgotten and
     * the connection treated as not greeted, so the agent's next data
     * message gets Error 9 and it says Hello again. */
    if (!p->hello_on_rid)
        return;   /* refused for good */
    st->c.deferred++;
    s_keep_hello(p, envp);
}

/* Answer a stored (or not) data message: Ack, Error or silence. */
static void
s_result(co_writer_t *st, s_peer_t *p, const Parity__Envelope *env, int rc,
         size_t stored, unsigned verdicts, const char *err)
{
    char q[600];
    switch (rc) {
    case CO_DB_OK:
        st->c.samples_stored += stored;
        st->c.verdicts_stored += verdicts;
        s_ack(st, p->rid, p->rid_len, env->seq);
        if (env->body_case == PARITY__ENVELOPE__BODY_RUN_START) {
            co_log(CO_LOG_INFO, "run_start", "peer=%s run=%s", p->key,
                   co_log_quote(q, sizeof q, env->run_start->run_id));
        } else if (env->body_case == PARITY__ENVELOPE__BODY_RUN_END) {
            co_log(CO_LOG_INFO, "run_end", "peer=%s run=%s verdicts=%u",
                   p->key, co_log_quote(q, sizeof q, env->run_end->run_id),
                   verdicts);
            if (st->jobs)
                co_jobs_run_end(st->jobs, p->key, env->run_end,
                                pw_clock_unix_us());
        }
        break;
    case CO_DB_DUP:
        st->c.duplicates++;
        s_ack(st, p->rid, p->rid_len, env->seq);
        break;
    case CO_DB_LATER:
        st->c.deferred++;
        co_log(CO_LOG_DEBUG, "deferred", "peer=%s seq=%" PRIu64 " why=%s",
               p->key, env->seq, co_log_quote(q, sizeof q, err));
        break;
    case CO_DB_REFUSED:
        st->c.refused++;
        /* Counted always, logged at most once per peer per 10 s (with
         * bad_input): a peer sending refusable content in a loop must
         * not fill the log. */
        if (s_may_log(&p->refused_logged_us, &p->refused_unlogged)) {
            co_log(CO_LOG_WARN, "refused", "peer=%s seq=%" PRIu64
                   " count=%" PRIu64 " not_logged_since=%" PRIu64 " why=%s",
                   p->key, env->seq, st->c.refused, p->refused_unlogged,
                   co_log_quote(q, sizeof q, err));
            p->refused_unlogged = 0;
        }
        s_error(st, p->rid, p->rid_len, PW_WIRE_EFIELD, err, env->seq);
        break;
    case CO_DB_DEPENDS:
        /* Refused for good too: what it needs was refused, so silence
         * would have the agent resend it forever. */
        st->c.bad[-PW_WIRE_EDEPEND]++;
        if (s_may_log(&p->refused_logged_us, &p->refused_unlogged)) {
            co_log(CO_LOG_WARN, "refused", "peer=%s seq=%" PRIu64
                   " kind=dependency count=%" PRIu64 " not_logged_since=%"
                   PRIu64 " why=%s", p->key, env->seq,
                   st->c.bad[-PW_WIRE_EDEPEND], p->refused_unlogged,
                   co_log_quote(q, sizeof q, err));
            p->refused_unlogged = 0;
        }
        s_error(st, p->rid, p->rid_len, PW_WIRE_EDEPEND, err, env->seq);
        break;
    default:
        st->c.deferred++;
        st->c.bad[-PW_WIRE_ESTORE]++;
        co_log(CO_LOG_WARN, "store_failed", "peer=%s seq=%" PRIu64 " why=%s",
               p->key, env->seq, co_log_quote(q, sizeof q, err));
        s_db_lost(st, err);
        break;
    }
}

/* ---- the burst's transaction ---------------------------------------- */

/* Open the burst's transaction if it is not; false when it cannot be. */
static bool
s_txn_begin(co_writer_t *st)
{
    char err[512];
    if (st->txn_open)
        return true;
    if (co_db_begin(st->db, err, sizeof err) != CO_DB_OK) {
        s_db_lost(st, err);
        return false;
    }
    st->txn_open = true;
    return true;
}

/* COMMIT the burst's transaction, then answer every message stored in
 * it: acks only now, when it is durable; a failed COMMIT stored nothing,
 * so what would have been acked is not (the agents resend). */
static void
s_txn_commit(co_writer_t *st)
{
    char err[512] = "";
    bool ok = true;
    /* Messages may wait without a transaction: its BEGIN failed. */
    if (st->txn_open) {
        int64_t t0 = pw_clock_mono_us();
        st->txn_open = false;
        ok = co_db_commit(st->db, err, sizeof err) == CO_DB_OK;
        s_step(st, CO_STEP_COMMIT, t0);
        if (!ok)
            s_db_lost(st, err);
    }
    for (size_t k = 0; k < st->n_pending; k++) {
        s_pending_t *w = &st->pending[k];
        int rc = w->rc;
        /* A failed COMMIT answers nothing: what it would have acked is
         * not stored, and a refusal it would have remembered (co_db's
         * refusals) is not either; the resend is answered again. */
        if (!ok && rc != CO_DB_LATER && rc != CO_DB_FAIL) {
            rc = CO_DB_FAIL;
            /* Cut to the slot on purpose: the line is logged, no more. */
            snprintf(w->err, sizeof w->err, "%.*s",
                     (int)sizeof w->err - 1, err);
        }
        if (rc == CO_DB_OK && w->env->body_case ==
            PARITY__ENVELOPE__BODY_SAMPLE_BATCH && w->stored > 0)
            co_runs_add(st->runs, w->peer->host_id, w->env->sample_batch);
        if ((rc == CO_DB_OK || rc == CO_DB_DUP || rc == CO_DB_REFUSED
             || rc == CO_DB_DEPENDS)
            && w->env->body_case == PARITY__ENVELOPE__BODY_RUN_END)
            co_runs_forget(st->runs, w->peer->host_id,
                           w->env->run_end->run_id);
        /* Committed: its series may have changed (co_detect). */
        if (rc == CO_DB_OK && w->run)
            co_detect_push(st->detect, w->run);
        /* DONE before the Ack: the loop must not see the agent's resend
         * after an Ack while the seq still counts as being stored (it
         * would drop the resend instead of acking it again). */
        s_done(st, w->item);
        s_result(st, w->peer, w->env, rc, w->stored, w->verdicts, w->err);
        pw_wire_free(&w->env);
        co_queue_item_free(&w->item);
    }
    st->n_pending = 0;
}

/* Keep a message's outcome for the COMMIT; takes *itemp and *envp. */
static void
s_defer(co_writer_t *st, s_peer_t *p, co_queue_item_t **itemp,
        Parity__Envelope **envp, int rc, size_t stored, unsigned verdicts,
        const char *err)
{
    if (st->n_pending == CO_WRITER_PENDING_MAX)
        s_txn_commit(st);    /* cannot happen mid-group: groups are 64 */
    s_pending_t *w = &st->pending[st->n_pending++];
    w->item = *itemp;
    w->env = *envp;
    w->peer = p;
    w->rc = rc;
    w->stored = stored;
    w->verdicts = verdicts;
    w->run = 0;
    snprintf(w->err, sizeof w->err, "%.*s", (int)sizeof w->err - 1,
             err ? err : "");
    *itemp = NULL;
    *envp = NULL;
}

/* Store every waiting SampleBatch (one INSERT, one COPY) inside the
 * burst's transaction; each is answered at its COMMIT. */
static void
s_group_flush(co_writer_t *st)
{
    char err[512] = "";
    if (st->n_group == 0)
        return;
    if (st->n_pending + st->n_group > CO_WRITER_PENDING_MAX)
        s_txn_commit(st);
    for (size_t k = 0; k < st->n_group; k++) {
        st->items[k].host_id = st->group[k].peer->host_id;
        st->items[k].batch = st->group[k].env->sample_batch;
    }
    int64_t t0 = pw_clock_mono_us();
    if (s_txn_begin(st)) {
        co_ingest_batches(st->db, st->items, st->n_group, err, sizeof err);
        s_step(st, CO_STEP_BATCHES, t0);
    } else
        for (size_t k = 0; k < st->n_group; k++) {
            st->items[k].rc = CO_DB_FAIL;
            st->items[k].stored = 0;
            snprintf(st->items[k].err, sizeof st->items[k].err, "%s",
                     "database down");
        }
    st->c.groups++;
    for (size_t k = 0; k < st->n_group; k++) {
        co_ingest_item_t *it = &st->items[k];
        s_defer(st, st->group[k].peer, &st->group[k].item,
                &st->group[k].env, it->rc, it->stored, 0, it->err);
    }
    st->n_group = 0;
}

/* Keep a batch for the group's commit; takes *envp and *itemp. */
static void
s_group_add(co_writer_t *st, s_peer_t *p, co_queue_item_t **itemp,
            Parity__Envelope **envp)
{
    if (st->n_group == CO_INGEST_GROUP_MAX)
        s_group_flush(st);
    s_waiting_t *w = &st->group[st->n_group++];
    w->item = *itemp;
    w->env = *envp;
    w->peer = p;
    *itemp = NULL;
    *envp = NULL;
}

/* Store the burst's JobStatus messages in one co_jobs transaction, after
 * the burst's own COMMIT (co_jobs reads the runs on its own connection,
 * so a `done` must see the RunEnds stored before it), and answer them.
 * A job offered to 100 hosts brings 100 statuses within seconds: one
 * COMMIT each held every Ack behind them. Its codes are co_db's. */
static void
s_status_flush(co_writer_t *st)
{
    if (st->n_status == 0)
        return;
    s_group_flush(st);
    s_txn_commit(st);
    int64_t t0 = pw_clock_mono_us(), now = pw_clock_unix_us();
    char err[256] = "";
    bool ok = !st->jobs ||
              co_jobs_status_begin(st->jobs, err, sizeof err) == CO_JOBS_OK;
    for (size_t k = 0; k < st->n_status; k++) {
        s_pending_t *w = &st->status[k];
        w->err[0] = '\0';
        if (!st->jobs)
            w->rc = CO_DB_OK;
        else if (!ok)
            w->rc = CO_DB_FAIL;
        else
            w->rc = co_jobs_status(st->jobs, w->peer->key, w->env->job_status,
                                   now, w->err, sizeof w->err);
    }
    if (st->jobs && ok &&
        co_jobs_status_commit(st->jobs, now, err, sizeof err) != CO_JOBS_OK)
        ok = false;
    s_step(st, CO_STEP_JOB_STATUS, t0);
    for (size_t k = 0; k < st->n_status; k++) {
        s_pending_t *w = &st->status[k];
        if (!ok && w->rc == CO_DB_OK) {
            w->rc = CO_DB_FAIL;
            snprintf(w->err, sizeof w->err, "%s", err);
        }
        w->peer->statuses = 0;
        s_done(st, w->item);
        s_result(st, w->peer, w->env, w->rc, 0, 0, w->err);
        pw_wire_free(&w->env);
        co_queue_item_free(&w->item);
    }
    st->n_status = 0;
}

/* Keep a JobStatus for s_status_flush; takes *itemp and *envp. */
static void
s_status_add(co_writer_t *st, s_peer_t *p, co_queue_item_t **itemp,
             Parity__Envelope **envp)
{
    if (st->n_status == CO_JOBS_STATUS_BATCH)
        s_status_flush(st);
    s_pending_t *w = &st->status[st->n_status++];
    memset(w, 0, sizeof *w);
    w->item = *itemp;
    w->env = *envp;
    w->peer = p;
    p->statuses++;
    *itemp = NULL;
    *envp = NULL;
}

/* A data message. Takes *itemp and *envp when it keeps them (a
 * SampleBatch waiting for the group's commit). */
static void
s_on_data(co_writer_t *st, s_peer_t *p, co_queue_item_t **itemp,
          Parity__Envelope **envp)
{
    const Parity__Envelope *env = *envp;
    char err[512];
    int rc = CO_DB_FAIL;
    unsigned verdicts = 0;
    int64_t t0;

    if (!p->hello_on_rid) {
        s_bad(st, p, PW_WIRE_ENOHELLO,
              "data message before Hello on this connection", env->seq);
        return;
    }
    /* A Hello that arrived while the database was down is stored first
     * (also for a host known from an earlier connection: it updates). */
    if (p->pending_hello) {
        s_status_flush(st);
        s_txn_commit(st);    /* co_jobs reads on its own connection */
        if (s_store_hello(st, p, p->pending_hello->hello)) {
            s_ack(st, p->rid, p->rid_len, 0);
            s_jobs_online(st, p, p->pending_hello->hello);
            pw_wire_free(&p->pending_hello);
        }
    }
    if (!p->hello_on_rid)
        return;   /* its Hello was just refused */
    if (!st->db_up || p->host_id == 0) {
        st->c.deferred++;
        return;   /* silence: the agent resends */
    }
    s_heard(st, p);
    err[0] = '\0';
    switch (env->body_case) {
    case PARITY__ENVELOPE__BODY_SAMPLE_BATCH:
        s_group_add(st, p, itemp, envp);
        return;
    case PARITY__ENVELOPE__BODY_JOB_STATUS:
        s_status_add(st, p, itemp, envp);
        return;
    case PARITY__ENVELOPE__BODY_CALIBRATION:
    case PARITY__ENVELOPE__BODY_RUN_START:
    case PARITY__ENVELOPE__BODY_RUN_END:
        t0 = pw_clock_mono_us();
        if (!s_txn_begin(st)) {
            snprintf(err, sizeof err, "database down");
        } else if (env->body_case == PARITY__ENVELOPE__BODY_CALIBRATION) {
            rc = co_cals_store(st->db, p->host_id, env->calibration,
                                   err, sizeof err);
            s_step(st, CO_STEP_CALIBRATION, t0);
        } else if (env->body_case == PARITY__ENVELOPE__BODY_RUN_START) {
            rc = co_ingest_run_start(st->db, p->host_id, env->run_start, err,
                                 sizeof err);
            s_step(st, CO_STEP_RUN_START, t0);
        } else {
            co_db_set_run_samples(st->db, co_runs_get(st->runs, p->host_id,
                                                      env->run_end->run_id));
            rc = co_verdicts_run_end(st->db, p->host_id, env->run_end,
                               st->cfg.floor_window, st->cfg.parity,
                               &verdicts, err, sizeof err);
            s_step(st, CO_STEP_RUN_END, t0);
            s_defer(st, p, itemp, envp, rc, 0, verdicts, err);
            if (rc == CO_DB_OK)
                st->pending[st->n_pending - 1].run = co_db_last_run_end(st->db);
            return;
        }
        s_defer(st, p, itemp, envp, rc, 0, verdicts, err);
        return;
    default:
        break;
    }
    s_result(st, p, env, rc, 0, verdicts, err);
}

/* A Request the loop gave to the writer (run, cancel): job changes stay
 * on the thread that owns co_jobs. The loop sends these only when there
 * is a database, so st->query exists. */
static void
s_on_request(co_writer_t *st, const co_queue_item_t *item,
             const Parity__Request *req)
{
    Parity__Envelope env;
    Parity__Reply rep;
    uint8_t *buf = NULL;
    size_t len;
    int64_t t0 = pw_clock_mono_us();
    co_query_handle(st->query, item->key, req, &rep);
    s_step(st, CO_STEP_REQUEST, t0);
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_REPLY, &rep);
    if (pw_wire_pack_alloc(&env, &buf, &len, NULL, 0) == PW_WIRE_OK)
        s_out(st, item->rid, item->rid_len, buf, len);
    free(buf);
    co_query_reply_clear(&rep);
}

/* The loop says the peer went silent. */
static void
s_on_offline(co_writer_t *st, const char *key)
{
    char err[256];
    s_peer_t *p = zhashx_lookup(st->peers, key);
    if (!p)
        return;
    int64_t host_id = p->host_id;
    int64_t t0 = pw_clock_mono_us();
    /* Forget the peer: a new connection must say Hello again, and the
     * table stays bounded by the peers that are alive. */
    zhashx_delete(st->peers, key);
    if (st->jobs && host_id)
        co_jobs_agent_offline(st->jobs, key, pw_clock_unix_us());
    if (host_id && st->db_up
        && co_hosts_online(st->db, host_id, false, err, sizeof err)
           == CO_DB_FAIL)
        s_db_lost(st, err);
    s_step(st, CO_STEP_OFFLINE, t0);
}

/* A frame from a peer: decode (within pw_wire's budget) and handle.
 * Takes *itemp when a batch keeps it for the group's commit. */
static void
s_on_frame(co_writer_t *st, s_peer_t *p, co_queue_item_t **itemp)
{
    co_queue_item_t *item = *itemp;
    Parity__Envelope *env = NULL;
    uint64_t seq = 0;
    char err[512];

    /* A new connection must say Hello again. */
    if (p->rid_len != item->rid_len
        || memcmp(p->rid, item->rid, item->rid_len) != 0) {
        memcpy(p->rid, item->rid, item->rid_len);
        p->rid_len = item->rid_len;
        p->hello_on_rid = false;
    }
    int rc = pw_wire_unpack(zmq_msg_data(&item->frame),
                            zmq_msg_size(&item->frame), PW_WIRE_MAX_FRAME,
                            &env, &seq, err, sizeof err);
    if (rc != PW_WIRE_OK) {
        s_bad(st, p, rc, err, seq);
        return;
    }
    /* Acks go out in the order of a connection's messages: one behind
     * this peer's waiting JobStatus is stored after it. */
    if (p->statuses && env->body_case != PARITY__ENVELOPE__BODY_HEARTBEAT
        && env->body_case != PARITY__ENVELOPE__BODY_JOB_STATUS)
        s_status_flush(st);
    /* Anything but a batch or a beat may depend on the waiting batches
     * (a RunEnd): store them first. */
    if (env->body_case != PARITY__ENVELOPE__BODY_SAMPLE_BATCH
        && env->body_case != PARITY__ENVELOPE__BODY_HEARTBEAT)
        s_group_flush(st);
    switch (env->body_case) {
    case PARITY__ENVELOPE__BODY_HELLO:
        s_on_hello(st, p, item, &env);
        break;
    case PARITY__ENVELOPE__BODY_HEARTBEAT:
        if (st->jobs && p->hello_on_rid && p->host_id)
            co_jobs_heartbeat(st->jobs, p->key, env->heartbeat,
                              pw_clock_unix_us());
        s_heard(st, p);
        break;
    default:
        if (pw_wire_is_data(env->body_case))
            s_on_data(st, p, itemp, &env);
        else
            st->c.unexpected++;
        break;
    }
    pw_wire_free(&env);
}

/* One item from the loop; frees it, or the group keeps it. */
static void
s_handle(co_writer_t *st, co_queue_item_t **itemp)
{
    co_queue_item_t *item = *itemp;
    if (item->kind == CO_ITEM_OFFLINE) {
        s_status_flush(st);    /* before the peer may be forgotten */
        s_group_flush(st);     /* its batches first, in order */
        s_txn_commit(st);      /* then the peer may be forgotten */
        s_on_offline(st, item->key);
        co_queue_item_free(itemp);
        return;
    }
    if (item->kind == CO_ITEM_REQUEST) {
        Parity__Envelope *env = NULL;
        s_status_flush(st);
        s_group_flush(st);
        s_txn_commit(st);      /* co_jobs works on its own connection */
        uint64_t seq;
        char err[256];
        if (pw_wire_unpack(zmq_msg_data(&item->frame),
                           zmq_msg_size(&item->frame), PW_WIRE_MAX_FRAME,
                           &env, &seq, err, sizeof err) == PW_WIRE_OK
            && env->body_case == PARITY__ENVELOPE__BODY_REQUEST)
            s_on_request(st, item, env->request);
        pw_wire_free(&env);
    } else {
        s_peer_t *p = s_peer(st, item->key);
        if (p)
            s_on_frame(st, p, itemp);
    }
    if (*itemp) {
        s_done(st, *itemp);
        co_queue_item_free(itemp);
    }
}

/* Write last_seen of the hosts heard since the last tick: one statement
 * however many, so 1,000 agents' heartbeats cost one UPDATE a second,
 * sent by co_seen on its own connection and never waited for here. */
static void
s_flush_heard(co_writer_t *st)
{
    if (st->n_heard == 0 || !st->jobs)
        return;
    co_seen_add(st->seen, st->heard, st->n_heard, pw_clock_mono_us());
    st->n_heard = 0;
    for (s_peer_t *p = zhashx_first(st->peers); p;
         p = zhashx_next(st->peers))
        p->heard = false;
}

/* Partitions ahead of time, and retention (--keep-samples): hourly,
 * and at once after a (re)connect. A failure is logged and tried again
 * at the next hour; ingest goes on (the default partition takes rows). */
static void
s_maintain(co_writer_t *st, int64_t now)
{
    char err[512], q[600];
    int dropped = 0;
    if (!st->db_up || now < st->next_maintain_us)
        return;
    st->next_maintain_us = now + CO_WRITER_MAINTAIN_EVERY_US;
    int rc = co_retain_partitions(st->db, pw_clock_unix_us(),
                                     CO_WRITER_MONTHS_AHEAD, err, sizeof err);
    if (rc != CO_DB_OK) {
        co_log(CO_LOG_WARN, "partitions_failed", "why=%s",
               co_log_quote(q, sizeof q, err));
        if (rc == CO_DB_FAIL)
            s_db_lost(st, err);
        return;
    }
    if (st->cfg.keep_samples_us <= 0)
        return;
    rc = co_retain_samples(st->db, st->cfg.keep_samples_us, pw_clock_unix_us(),
                         &dropped, err, sizeof err);
    if (rc != CO_DB_OK) {
        co_log(CO_LOG_WARN, "retention_failed", "why=%s",
               co_log_quote(q, sizeof q, err));
        if (rc == CO_DB_FAIL)
            s_db_lost(st, err);
    } else if (dropped > 0) {
        co_log(CO_LOG_INFO, "retention", "partitions_dropped=%d keep_days="
               "%" PRId64, dropped, (int64_t)(st->cfg.keep_samples_us / 86400000000LL));
    }
}

/* The database's changes of agents' keys (co_enroll_poll), and now and
 * then all of them again (S_KEYS_REREAD_US says why). */
static void
s_keys_poll(co_writer_t *st, int64_t now)
{
    char err[512], q[600];
    if (!st->jobs || !st->keys || !st->db_up)
        return;
    if (now >= st->keys_reread_us) {
        st->keys_version = 0;
        st->keys_reread_us = now + S_KEYS_REREAD_US;
    }
    if (co_enroll_poll(st->jobs_conn, st->keys, &st->keys_version, err,
                       sizeof err) < 0)
        co_log(CO_LOG_WARN, "keys_poll_failed", "why=%s",
               co_log_quote(q, sizeof q, err));
}

/* The periodic work: job tick and last_seen every heartbeat interval. */
static void
s_timers(co_writer_t *st)
{
    int64_t now = pw_clock_mono_us();
    if (st->db_up && now >= st->next_maintain_us) {
        s_maintain(st, now);
        s_step(st, CO_STEP_MAINTAIN, now);
    }
    if (now < st->next_tick_us)
        return;
    st->next_tick_us = now + (int64_t)st->cfg.heartbeat_ms * 1000;
    if (!st->db_up)
        return;
    if (st->jobs)
        co_jobs_tick(st->jobs, pw_clock_unix_us());   /* expiry, job ends */
    s_keys_poll(st, now);
    s_step(st, CO_STEP_TICK, now);
    now = pw_clock_mono_us();
    s_flush_heard(st);
    s_step(st, CO_STEP_HEARD, now);
}

static void *
s_thread(void *arg)
{
    co_writer_t *st = arg;
    while (!st->stop) {
        int64_t now = pw_clock_mono_us();
        int64_t wait = st->next_tick_us - now;
        if (!st->db_up && st->db_retry_at_us - now < wait)
            wait = st->db_retry_at_us - now;
        if (wait > 100000)
            wait = 100000;
        if (wait < 0)
            wait = 0;
        co_queue_item_t *it = co_queue_pop(st->in, wait);
        int64_t burst_us = pw_clock_mono_us();
        for (int n = 0; it; ) {
            s_handle(st, &it);
            if (++n >= CO_WRITER_BURST || st->stop)
                break;
            /* What the burst stored waits for its COMMIT: a long one
             * would make every Ack in it late. */
            if (pw_clock_mono_us() - burst_us >= CO_WRITER_TXN_US)
                break;
            it = co_queue_pop(st->in, 0);
        }
        s_group_flush(st);
        s_txn_commit(st);
        s_status_flush(st);
        s_db_try(st);
        s_timers(st);
        /* Other collectors' new and cancelled jobs, within one pass
         * (at most 100 ms) of their COMMIT. */
        if (st->jobs && st->db_up)
            co_jobs_poll(st->jobs, pw_clock_unix_us());
        co_seen_poll(st->seen, pw_clock_mono_us());
        s_publish(st);
    }
    s_group_flush(st);
    s_txn_commit(st);
    s_status_flush(st);
    s_publish(st);
    return NULL;
}

/* ---- life cycle --------------------------------------------------------- */

co_writer_t *
co_writer_new(const co_config_t *cfg, co_db_t *db, void *ctx,
             co_keys_t *keys, char *err, size_t errlen)
{
    co_writer_t *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "calloc co_writer: out of memory");
        return NULL;
    }
    st->cfg = *cfg;
    st->db = db;
    st->ctx = ctx;
    st->keys = keys;
    st->db_up = co_db_connected(db);
    co_db_set_floor_window(db, cfg->floor_window);
    pthread_mutex_init(&st->snap_lock, NULL);
    st->in = co_queue_new(CO_WRITER_QUEUE_ITEMS, CO_WRITER_QUEUE_BYTES);
    st->peers = zhashx_new();
    st->heard = calloc(S_HEARD_MAX, sizeof *st->heard);
    st->runs = co_runs_new(CO_RUNS_MAX_SAMPLES);
    if (!st->in || !st->peers || !st->heard || !st->runs) {
        snprintf(err, errlen, "co_writer: out of memory");
        goto fail;
    }
    zhashx_set_destructor(st->peers, s_peer_free);
    if (s_jobs_new(st, err, errlen) != 0)
        goto fail;
    if (cfg->conninfo && cfg->conninfo[0]
        && !(st->detect = co_detect_new(cfg->conninfo, cfg->parity,
                                        cfg->private_db, err, errlen)))
        goto fail;
    if (cfg->conninfo && cfg->conninfo[0] && (cfg->n_notify_urls ||
                                              cfg->confirm)
        && !(st->notify = co_notify_new(cfg->conninfo, cfg->notify_urls,
                                        cfg->n_notify_urls, cfg->notify_queue
                                        ? cfg->notify_queue :
                                        CO_HOOK_QUEUE_DEFAULT, cfg->confirm,
                                        err, errlen)))
        goto fail;
    if (cfg->conninfo && cfg->conninfo[0]
        && !(st->bisector = co_bisector_new(cfg->conninfo, cfg->name,
                                            st->notify, err, errlen)))
        goto fail;
    if (cfg->conninfo && cfg->conninfo[0]
        && !(st->confirmer = co_confirmer_new(cfg->conninfo, cfg->name,
                                              st->notify, err, errlen)))
        goto fail;
    st->out = co_out_connect(ctx, err, errlen);
    if (!st->out)
        goto fail;
    s_publish(st);
    if (pthread_create(&st->thread, NULL, s_thread, st) != 0) {
        snprintf(err, errlen, "pthread_create(writer): %s", strerror(errno));
        goto fail;
    }
    st->started = true;
    return st;
fail:
    co_writer_destroy(&st);
    return NULL;
}

int
co_writer_push(co_writer_t *st, co_queue_item_t **item)
{
    return co_queue_push(st->in, item, (*item)->kind == CO_ITEM_OFFLINE);
}

void
co_writer_depth(co_writer_t *st, size_t *items, size_t *bytes)
{
    co_queue_depth(st->in, items, bytes);
}

int64_t
co_writer_lag_us(co_writer_t *st, int64_t now_us)
{
    int64_t t = co_queue_oldest_us(st->in);
    return t > 0 && now_us > t ? now_us - t : 0;
}

void
co_writer_counters(co_writer_t *st, co_counters_t *out, bool *db_up)
{
    co_detect_counters_t d;
    pthread_mutex_lock(&st->snap_lock);
    *out = st->snap;
    if (db_up)
        *db_up = st->snap_db_up;
    pthread_mutex_unlock(&st->snap_lock);
    co_detect_counters(st->detect, &d);   /* its own lock */
    out->detect_runs = d.runs;
    out->change_points = d.found;
    out->detect_dropped = d.dropped;
    out->detect_failed = d.failed;
    co_hook_counters_t h;
    co_notify_counters(st->notify, &h);
    out->notices_queued = h.queued;
    out->notices_delivered = h.delivered;
    out->notices_refused = h.refused;
    out->notices_dropped = h.dropped;
}

void
co_writer_stop(co_writer_t *st)
{
    if (!st->started)
        return;
    st->stop = 1;
    co_queue_close(st->in);
    pthread_join(st->thread, NULL);
    st->started = false;
}

void
co_writer_destroy(co_writer_t **stp)
{
    if (!stp || !*stp)
        return;
    co_writer_t *st = *stp;
    co_writer_stop(st);
    co_detect_destroy(&st->detect);
    co_bisector_destroy(&st->bisector);   /* it posts to notify */
    co_confirmer_destroy(&st->confirmer); /* so does it */
    co_notify_destroy(&st->notify);
    if (st->out)
        zmq_close(st->out);
    co_query_destroy(&st->query);
    co_jobs_destroy(&st->jobs);
    co_conn_destroy(&st->jobs_conn);
    co_seen_destroy(&st->seen);
    zhashx_destroy(&st->peers);
    co_queue_destroy(&st->in);
    free(st->heard);
    co_runs_destroy(&st->runs);
    pthread_mutex_destroy(&st->snap_lock);
    free(st);
    *stp = NULL;
}
