/* ag_link.c -- see ag_link.h and docs/protocol.md sections 4 to 6. */
#include "ag_link.h"

#include <czmq.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_clock.h"
#include "pw_monitor.h"

/* Most messages handled in one tick, so a flood of acks cannot starve the
 * caller's own work. */
#define S_RECV_PER_TICK 4096
#define S_HB_BUF        256

struct ag_link {
    ag_link_opts_t opts;
    /* --collector's list (commas become NULs in endpoints), and the one
     * connected to or tried next: a failed or silent collector makes the
     * next reconnect go to the next one (ag_link.h). */
    char *endpoints;
    const char *eps[AG_LINK_MAX_COLLECTORS];
    size_t n_eps, cur;
    const char *endpoint;
    ag_spool_t *spool;
    zcert_t *cert;             /* our key pair */
    char server_key[41];       /* collector's public key, Z85 */
    bool need_key;             /* server_key still to fetch (ag_link.h) */
    char pin_fp[PW_KEY_FP_SIZE]; /* --collector-fingerprint, "" if none */
    char *key_path;            /* --collector-key, NULL if not given */
    zsock_t *sock;             /* NULL while waiting to reconnect */
    /* The socket's monitor: whether TCP got through (then a collector
     * that never answers may have another key than the pinned one) and
     * whether ZAP refused our key at the handshake. */
    zsock_t *mon;
    unsigned mon_count;        /* monitors made: a new endpoint each */
    bool tcp_up;
    bool auth_refused;
    unsigned heartbeat_ms;

    uint8_t *hello;
    size_t hello_len;
    bool ready;                /* Hello acked on this connection */
    bool pending;              /* Error 20 since the last Ack{0} */
    bool denied;               /* Error 21 since the last Ack{0} */
    bool hello_pending;        /* Hello not yet handed to libzmq */
    int64_t hello_sent_ms;

    struct {
        uint64_t seq;
        bool resent;           /* sent again on this connection */
        uint64_t epoch;        /* resend_epoch when first sent */
    } in_flight[AG_LINK_WINDOW];          /* sent, unacked, in seq order */
    size_t in_flight_count;
    uint64_t last_sent;        /* highest seq sent on this connection */
    /* Resends when acks are late (ag_link.h): the next one is due at
     * resend_at_ms; resend_wait_ms is the wait before jitter, doubled by
     * each silent resend; resend_burst is how many of the oldest go. */
    int64_t resend_at_ms;
    unsigned resend_wait_ms;
    size_t resend_burst;
    uint64_t resend_epoch;     /* resends so far on this link */

    int64_t last_heard_ms;
    int64_t next_heartbeat_ms;
    int64_t reconnect_at_ms;
    unsigned backoff_ms;
    uint64_t rng;

    char state[16];
    char job_id[128];

    pthread_mutex_t stats_lock;
    ag_link_stats_t stats;
};

static void
s_log(ag_link_t *l, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
s_log(ag_link_t *l, const char *event, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    if (!l->opts.log)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    l->opts.log(l->opts.ctx, event, buf);
}

/* Random number in [0, 1) from a xorshift64 generator. */
static double
s_random(ag_link_t *l)
{
    l->rng ^= l->rng << 13;
    l->rng ^= l->rng >> 7;
    l->rng ^= l->rng << 17;
    return (double)(l->rng >> 11) / (double)(1ull << 53);
}

/* Random factor in [0.5, 1.5): the reconnect back-off's jitter. */
static double
s_jitter(ag_link_t *l)
{
    return 0.5 + s_random(l);
}

/* The next resend is due resend_wait_ms times [1, 1.5) from now: never
 * sooner than the wait (a collector that acks within 5 s sees no copy),
 * and agents that went silent together do not resend together. */
static void
s_resend_timer(ag_link_t *l, int64_t now)
{
    l->resend_at_ms = now + (int64_t)(l->resend_wait_ms
                                      * (1.0 + 0.5 * s_random(l)));
}

static void
s_stats_update(ag_link_t *l)
{
    pthread_mutex_lock(&l->stats_lock);
    l->stats.ready = l->ready;
    l->stats.in_flight = l->in_flight_count;
    l->stats.pending = l->pending;
    l->stats.denied = l->denied;
    pthread_mutex_unlock(&l->stats_lock);
}

/* The one-line problem for ag_link_stats (and the log line said). */
static void
s_problem(ag_link_t *l, bool mismatch, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
s_problem(ag_link_t *l, bool mismatch, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&l->stats_lock);
    va_start(ap, fmt);
    vsnprintf(l->stats.problem, sizeof l->stats.problem, fmt, ap);
    va_end(ap);
    if (mismatch)
        l->stats.key_mismatch = true;
    pthread_mutex_unlock(&l->stats_lock);
}

#define S_COUNT(l, field) do { \
    pthread_mutex_lock(&(l)->stats_lock); (l)->stats.field++; \
    pthread_mutex_unlock(&(l)->stats_lock); } while (0)

/* Non-blocking send of one frame. False when the socket would block (no
 * connection yet, or the high-water mark): the caller tries later. */
static bool
s_send(ag_link_t *l, const void *data, size_t len)
{
    if (!l->sock)
        return false;
    int rc = zmq_send(zsock_resolve(l->sock), data, len, ZMQ_DONTWAIT);
    return rc >= 0;
}

/* Hello goes first on a connection. With ZMQ_IMMEDIATE the send fails
 * until the handshake is done, so it stays pending and every tick tries
 * again; nothing else is sent before it. */
static void
s_send_hello(ag_link_t *l, int64_t now)
{
    l->hello_pending = true;
    if (!l->hello)
        return;
    if (s_send(l, l->hello, l->hello_len)) {
        l->hello_pending = false;
        l->hello_sent_ms = now;
    }
}

static void
s_send_heartbeat(ag_link_t *l)
{
    uint8_t buf[S_HB_BUF];
    size_t len = 0;
    char state[sizeof l->state], job[sizeof l->job_id];
    pthread_mutex_lock(&l->stats_lock);   /* set by the job thread */
    memcpy(state, l->state, sizeof state);
    memcpy(job, l->job_id, sizeof job);
    pthread_mutex_unlock(&l->stats_lock);
    if (pw_wire_pack_heartbeat(pw_clock_unix_us(),
                               (uint32_t)ag_spool_count(l->spool),
                               state, job, buf, sizeof buf, &len)
        == PW_WIRE_OK)
        s_send(l, buf, len);
}

static void
s_close(ag_link_t *l)
{
    if (l->sock && l->mon)
        zmq_socket_monitor(zsock_resolve(l->sock), NULL, 0);
    zsock_destroy(&l->mon);
    zsock_destroy(&l->sock);
    l->ready = false;
    l->in_flight_count = 0;
    l->last_sent = 0;
}

static int
s_connect(ag_link_t *l, int64_t now)
{
    zsock_t *s = zsock_new(ZMQ_DEALER);
    if (!s) {
        s_log(l, "socket_failed", "zsock_new(DEALER): %s",
              zmq_strerror(zmq_errno()));
        return AG_LINK_ERR;
    }
    zsock_set_linger(s, 0);
    zsock_set_sndhwm(s, AG_LINK_SNDHWM);
    zsock_set_rcvhwm(s, AG_LINK_RCVHWM);
    zsock_set_immediate(s, 1);
    zsock_set_maxmsgsize(s, (int)PW_WIRE_MAX_FRAME);
    /* libzmq's own reconnect stays off: this link decides when. */
    zsock_set_reconnect_ivl(s, -1);
    zcert_apply(l->cert, s);
    zsock_set_curve_serverkey(s, l->server_key);
    /* Without a monitor the link works the same, only says less. */
    char mep[96];
    snprintf(mep, sizeof mep, "inproc://ag-link-monitor-%p-%u", (void *)l,
             ++l->mon_count);
    l->tcp_up = false;
    l->auth_refused = false;
    if (zmq_socket_monitor(zsock_resolve(s), mep, ZMQ_EVENT_CONNECTED
                           | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) == 0)
        l->mon = zsock_new_pair(mep);
    else
        l->mon = NULL;
    if (zsock_connect(s, "%s", l->endpoint) != 0) {
        s_log(l, "connect_failed", "zmq_connect(%s): %s", l->endpoint,
              zmq_strerror(zmq_errno()));
        zmq_socket_monitor(zsock_resolve(s), NULL, 0);
        zsock_destroy(&l->mon);
        zsock_destroy(&s);
        return AG_LINK_ERR;
    }
    l->sock = s;
    l->ready = false;
    l->in_flight_count = 0;
    l->last_sent = 0;
    l->last_heard_ms = now;
    l->next_heartbeat_ms = now + l->heartbeat_ms;
    s_log(l, "connect", "connecting to %s", l->endpoint);
    s_send_hello(l, now);
    return AG_LINK_OK;
}

/* The next connect attempt after the back-off (jittered), which then
 * doubles. Returns the wait. */
static unsigned
s_backoff(ag_link_t *l, int64_t now)
{
    unsigned wait = (unsigned)(l->backoff_ms * s_jitter(l));
    l->reconnect_at_ms = now + wait;
    l->backoff_ms = l->backoff_ms * 2 > AG_LINK_BACKOFF_MAX_MS
                  ? AG_LINK_BACKOFF_MAX_MS : l->backoff_ms * 2;
    return wait;
}

/* The peer is gone (or could not be reached): wait and try again. */
static void
s_schedule_reconnect(ag_link_t *l, int64_t now, const char *why)
{
    s_close(l);
    unsigned wait = s_backoff(l, now);
    if (l->n_eps > 1) {
        /* Fail over: collectors of one database share it, so the spool
         * goes on to the next one and natural keys drop duplicates. */
        l->cur = (l->cur + 1) % l->n_eps;
        l->endpoint = l->eps[l->cur];
        s_log(l, "peer_gone", "%s; reconnecting in %u ms to %s", why, wait,
              l->endpoint);
    } else {
        s_log(l, "peer_gone", "%s; reconnecting in %u ms", why, wait);
    }
    S_COUNT(l, reconnects);
}

/* Split --collector's comma-separated list into l->eps, each
 * tcp://HOST:PORT. 0, or -1 with err. */
static int
s_endpoints(ag_link_t *l, const char *list, char *err, size_t errlen)
{
    if (!list || !*list || !(l->endpoints = strdup(list))) {
        snprintf(err, errlen, "--collector %s: expected tcp://HOST:PORT",
                 list ? list : "(none)");
        return -1;
    }
    char *save = NULL;
    for (char *t = strtok_r(l->endpoints, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        if (strncmp(t, "tcp://", 6) != 0 || !t[6]) {
            snprintf(err, errlen, "--collector %s: expected tcp://HOST:PORT"
                     "%s", t, l->n_eps || strchr(list, ',') ? " in each "
                     "item of the comma-separated list" : "");
            return -1;
        }
        if (l->n_eps == AG_LINK_MAX_COLLECTORS) {
            snprintf(err, errlen, "--collector: at most %d collectors",
                     AG_LINK_MAX_COLLECTORS);
            return -1;
        }
        l->eps[l->n_eps++] = t;
    }
    if (l->n_eps == 0) {
        snprintf(err, errlen, "--collector %s: expected tcp://HOST:PORT",
                 list);
        return -1;
    }
    l->endpoint = l->eps[0];
    return 0;
}

/* ---- the collector's key ------------------------------------------------ */

int
ag_link_key_endpoint(const char *endpoint, char *out, size_t outlen)
{
    const char *colon = endpoint ? strrchr(endpoint, ':') : NULL;
    char *end = NULL;
    if (!colon || strncmp(endpoint, "tcp://", 6) != 0
        || colon < endpoint + 6)
        return -1;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || port <= 0 || port >= 65535)
        return -1;
    int n = snprintf(out, outlen, "%.*s:%ld", (int)(colon - endpoint),
                     endpoint, port + 1);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* The key the collector's key service offers: a REQ sends "key", the
 * answer is its 40 characters of Z85. 0 with z85 set, or -1 with why.
 * Waits at most AG_LINK_KEY_FETCH_MS. */
static int
s_fetch_key(ag_link_t *l, char z85[41], char *why, size_t whylen)
{
    char ep[300], buf[64];
    int rc = -1;
    if (ag_link_key_endpoint(l->endpoint, ep, sizeof ep) != 0) {
        snprintf(why, whylen, "--collector %s: no port + 1 for the key "
                 "service", l->endpoint);
        return -1;
    }
    zsock_t *s = zsock_new(ZMQ_REQ);
    if (!s) {
        snprintf(why, whylen, "zsock_new(REQ): %s",
                 zmq_strerror(zmq_errno()));
        return -1;
    }
    zsock_set_linger(s, 0);
    zsock_set_maxmsgsize(s, (int)sizeof buf);
    zsock_set_sndtimeo(s, AG_LINK_KEY_FETCH_MS);
    void *raw = zsock_resolve(s);
    zmq_pollitem_t it = { raw, 0, ZMQ_POLLIN, 0 };
    if (zsock_connect(s, "%s", ep) != 0 || zmq_send(raw, "key", 3, 0) != 3) {
        snprintf(why, whylen, "the collector's key service %.200s: %s", ep,
                 zmq_strerror(zmq_errno()));
    } else if (zmq_poll(&it, 1, AG_LINK_KEY_FETCH_MS) != 1) {
        snprintf(why, whylen, "no answer from the collector's key service "
                 "at %.200s within %d ms (is the collector up, with "
                 "--key-service on, and that port open?)", ep,
                 AG_LINK_KEY_FETCH_MS);
    } else {
        int n = zmq_recv(raw, buf, sizeof buf - 1, ZMQ_DONTWAIT);
        buf[n > 0 && n < (int)sizeof buf ? n : 0] = '\0';
        if (n != PW_KEY_Z85_LEN || zsock_rcvmore(s) || !pw_key_is_z85(buf)) {
            snprintf(why, whylen, "the collector's key service at %.200s "
                     "answered something that is not a public key (%d "
                     "bytes)", ep, n);
        } else {
            memcpy(z85, buf, PW_KEY_Z85_LEN + 1);
            rc = 0;
        }
    }
    zsock_destroy(&s);
    return rc;
}

/* Write the collector's public key to path as a public certificate
 * (through path.tmp and rename: never half a file). */
static int
s_save_key(const char *path, const char *z85, char *why, size_t whylen)
{
    uint8_t pub[32], sec[32] = { 0 };
    char tmp[4200];
    zmq_z85_decode(pub, z85);
    zcert_t *c = zcert_new_from(pub, sec);
    if (!c) {
        snprintf(why, whylen, "zcert_new_from: out of memory");
        return -1;
    }
    zcert_set_meta(c, "name", "collector");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int rc = zcert_save_public(c, tmp) == 0 && rename(tmp, path) == 0
             && chmod(path, 0644) == 0 ? 0 : -1;
    if (rc != 0) {
        snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    zcert_destroy(&c);
    return rc;
}

/* Fetch the collector's key and hold it against the pin (or trust it,
 * first use). 0: server_key set (and saved when --collector-key names a
 * file); -1: logged, tried again after the back-off. */
static int
s_get_key(ag_link_t *l, int64_t now)
{
    char z85[41], why[400], fp[PW_KEY_FP_SIZE];
    if (s_fetch_key(l, z85, why, sizeof why) != 0) {
        unsigned wait = s_backoff(l, now);
        s_log(l, "key_fetch_failed", "%s; trying again in %u ms", why, wait);
        return -1;
    }
    pw_key_fingerprint(z85, fp);
    if (l->pin_fp[0] && strcmp(fp, l->pin_fp) != 0) {
        unsigned wait = s_backoff(l, now);
        s_problem(l, true, "the collector at %s offers key %s, but this "
                  "agent pins %s (--collector-fingerprint): refusing to "
                  "talk to it", l->endpoint, fp, l->pin_fp);
        s_log(l, "collector_key_mismatch", "%s; trying again in %u ms",
              l->stats.problem, wait);
        return -1;
    }
    memcpy(l->server_key, z85, sizeof l->server_key);
    l->need_key = false;
    bool kept = l->key_path && s_save_key(l->key_path, z85, why,
                                          sizeof why) == 0;
    s_log(l, "collector_key", "the collector at %s has key %s (%s)%s%s",
          l->endpoint, fp, l->pin_fp[0] ? "the pinned fingerprint"
                                       : "trusted on first use",
          kept ? "; kept in " : "", kept ? l->key_path : "");
    if (l->key_path && !kept)
        s_log(l, "collector_key_not_kept", "%s: the key is used, but the "
              "next start fetches it again", why);
    return 0;
}

/* What the socket's monitor saw since the last call. */
static void
s_drain_monitor(ag_link_t *l)
{
    int event;
    for (int i = 0; l->mon && i < 64
         && (event = pw_monitor_next(zsock_resolve(l->mon))) >= 0; i++) {
        l->tcp_up |= event == ZMQ_EVENT_CONNECTED;
        if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH && !l->auth_refused) {
            l->auth_refused = true;
            pthread_mutex_lock(&l->stats_lock);
            l->stats.auth_refused = true;
            pthread_mutex_unlock(&l->stats_lock);
        }
    }
}

/* No answer on a connection with a pinned key: ask the key service
 * which key the collector has, so that a wrong pin says so. */
static void
s_check_offered(ag_link_t *l)
{
    char z85[41], why[400], fp[PW_KEY_FP_SIZE], pinned[PW_KEY_FP_SIZE];
    if (s_fetch_key(l, z85, why, sizeof why) != 0
        || strcmp(z85, l->server_key) == 0)
        return;
    pw_key_fingerprint(z85, fp);
    pw_key_fingerprint(l->server_key, pinned);
    s_problem(l, true, "the collector at %s offers key %s, but this agent "
              "pins %s (--collector-key %s): refusing to talk to it",
              l->endpoint, fp, pinned, l->key_path ? l->key_path : "");
    s_log(l, "collector_key_mismatch", "%s", l->stats.problem);
}

/* Drop seq from the in-flight window. Returns whether it was there;
 * then *resent says whether it had been sent again, and *stale whether it
 * was first sent before the latest resend, so went through a silence
 * (either may be NULL). */
static bool
s_forget_in_flight(ag_link_t *l, uint64_t seq, bool *resent, bool *stale)
{
    for (size_t i = 0; i < l->in_flight_count; i++) {
        if (l->in_flight[i].seq == seq) {
            if (resent)
                *resent = l->in_flight[i].resent;
            if (stale)
                *stale = l->in_flight[i].epoch != l->resend_epoch;
            memmove(l->in_flight + i, l->in_flight + i + 1,
                    (l->in_flight_count - i - 1) * sizeof l->in_flight[0]);
            l->in_flight_count--;
            return true;
        }
    }
    return false;
}

/* Is anything in flight that went through a silence (see above)? */
static bool
s_any_stale(const ag_link_t *l)
{
    for (size_t i = 0; i < l->in_flight_count; i++)
        if (l->in_flight[i].resent
            || l->in_flight[i].epoch != l->resend_epoch)
            return true;
    return false;
}

static void
s_on_ack(ag_link_t *l, uint64_t seq, int64_t now)
{
    char err[256];
    if (seq == 0) {
        if (!l->ready)
            s_log(l, "hello_acked", "collector acked Hello; %zu messages "
                  "spooled", ag_spool_count(l->spool));
        if (l->pending)
            s_log(l, "approved", "the collector accepts this agent's key "
                  "now; sending the spool");
        pthread_mutex_lock(&l->stats_lock);
        l->stats.auth_refused = false;
        pthread_mutex_unlock(&l->stats_lock);
        l->ready = true;
        l->pending = false;
        l->denied = false;
        l->backoff_ms = AG_LINK_BACKOFF_MIN_MS;
        return;
    }
    /* Any Ack restarts the resend clock. An Ack of a message that had
     * been in flight through a silence, sent once, says the collector
     * answers what it got, only late: the wait is 5 s again, one copy at
     * most next time. An Ack of a resent copy says it stores again what it
     * had been silent about (its database was down): the rest of that may
     * be lost too, so twice as many go after only 1 s of silence. An Ack
     * of a message sent since the latest resend says neither. Once nothing
     * from before the silence is in flight, all is as before it. */
    bool resent = false, stale = false;
    if (s_forget_in_flight(l, seq, &resent, &stale) && resent) {
        l->resend_burst = l->resend_burst * 2 > AG_LINK_WINDOW
                        ? AG_LINK_WINDOW : l->resend_burst * 2;
        l->resend_wait_ms = AG_LINK_RESEND_RESUME_MS;
    } else if (stale || !s_any_stale(l)) {
        l->resend_burst = 1;
        l->resend_wait_ms = AG_LINK_RESEND_MS;
    }
    s_resend_timer(l, now);
    int rc = ag_spool_remove(l->spool, seq, err, sizeof err);
    if (rc == AG_SPOOL_OK)
        S_COUNT(l, acked);
    else if (rc == AG_SPOOL_ERR)
        s_log(l, "spool_error", "%s", err);
    /* NOTFOUND: a duplicate ack of a resend; nothing to do. */
}

/* Error 20: the key waits for approval. Nothing more is sent but a
 * Hello every AG_LINK_RESEND_MS; a refused message stays spooled. */
static void
s_on_pending(ag_link_t *l, const Parity__Error *e)
{
    const char *msg = e->message ? e->message : "";
    if (!l->pending)
        s_log(l, "pending", "%s; %zu messages wait in the spool, Hello "
              "again every %d s", msg, ag_spool_count(l->spool),
              AG_LINK_RESEND_MS / 1000);
    l->pending = true;
    s_problem(l, false, "%s", msg);
    l->ready = false;
    l->in_flight_count = 0;
    l->last_sent = 0;
}

/* Error 21: the key was rejected or revoked. The connection goes; the
 * next ones are refused at the handshake until an operator approves the
 * key again. The owner hears of it (a job should stop). */
static void
s_on_denied(ag_link_t *l, const Parity__Error *e, const Parity__Envelope *env,
            int64_t now)
{
    const char *msg = e->message ? e->message : "";
    s_log(l, "denied", "%s; %zu messages stay in the spool", msg,
          ag_spool_count(l->spool));
    s_problem(l, false, "%s", msg);
    l->denied = true;
    l->pending = false;
    if (l->opts.on_message)
        l->opts.on_message(l->opts.ctx, env);
    s_schedule_reconnect(l, now, "the collector refused this agent's key");
}

static void
s_on_error(ag_link_t *l, const Parity__Error *e, const Parity__Envelope *env,
           int64_t now)
{
    char err[256];
    if (e->code == PW_WIRE_KEY_PENDING) {
        s_on_pending(l, e);
        return;
    }
    if (e->code == PW_WIRE_KEY_DENIED) {
        s_on_denied(l, e, env, now);
        return;
    }
    if (e->seq == 0) {
        s_log(l, "collector_error", "code %u: %s", e->code,
              e->message ? e->message : "");
        if (l->opts.on_message)
            l->opts.on_message(l->opts.ctx, env);
        return;
    }
    if (e->code == (uint32_t)-PW_WIRE_ENOHELLO) {
        /* The collector lost our Hello (e.g. it restarted): say it again
         * and resend everything after its ack. */
        s_log(l, "no_hello", "collector has no Hello for seq %" PRIu64
              "; sending Hello again", e->seq);
        l->ready = false;
        l->in_flight_count = 0;
        l->last_sent = 0;
        s_send_hello(l, now);
        return;
    }
    /* Refused for good (docs/protocol.md section 4): resending cannot
     * succeed, so the message leaves the spool. */
    s_log(l, "refused", "collector refused seq %" PRIu64 " (code %u): %s; "
          "removed from the spool", e->seq, e->code,
          e->message ? e->message : "");
    s_forget_in_flight(l, e->seq, NULL, NULL);
    if (ag_spool_remove(l->spool, e->seq, err, sizeof err) == AG_SPOOL_OK)
        S_COUNT(l, refused);
}

static void
s_receive(ag_link_t *l, int64_t now)
{
    void *raw = zsock_resolve(l->sock);
    for (int i = 0; i < S_RECV_PER_TICK; i++) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, raw, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            return;
        }
        bool more = zmq_msg_more(&msg);
        l->last_heard_ms = now;
        if (more) {
            /* One frame per message: drain and drop the rest. */
            s_log(l, "bad_input", "multi-frame message from collector "
                  "dropped");
            while (more) {
                zmq_msg_close(&msg);
                zmq_msg_init(&msg);
                if (zmq_msg_recv(&msg, raw, ZMQ_DONTWAIT) < 0)
                    break;
                more = zmq_msg_more(&msg);
            }
            zmq_msg_close(&msg);
            continue;
        }
        Parity__Envelope *env = NULL;
        char err[256];
        int rc = pw_wire_unpack(zmq_msg_data(&msg), zmq_msg_size(&msg), 0,
                                &env, NULL, err, sizeof err);
        zmq_msg_close(&msg);
        if (rc != PW_WIRE_OK) {
            s_log(l, "bad_input", "from collector: %s", err);
            continue;
        }
        switch (env->body_case) {
        case PARITY__ENVELOPE__BODY_ACK:
            s_on_ack(l, env->ack->seq, now);
            break;
        case PARITY__ENVELOPE__BODY_HEARTBEAT:
            break;
        case PARITY__ENVELOPE__BODY_ERROR:
            s_on_error(l, env->error, env, now);
            break;
        default:
            if (l->opts.on_message)
                l->opts.on_message(l->opts.ctx, env);
            break;
        }
        pw_wire_free(&env);
        if (!l->sock)
            return;   /* Error 21 closed it */
    }
}

typedef enum {
    S_SENT,
    S_WOULD_BLOCK,   /* try again later */
    S_GONE           /* no longer in the spool: never to be acked */
} s_send_rc_t;

/* Send spooled seq. */
static s_send_rc_t
s_send_seq(ag_link_t *l, uint64_t seq)
{
    void *data = NULL;
    size_t len = 0;
    char err[512];
    int rc = ag_spool_read(l->spool, seq, &data, &len, err, sizeof err);
    if (rc != AG_SPOOL_OK) {
        /* Acked meanwhile (NOTFOUND) or moved aside (CORRUPT). */
        if (rc != AG_SPOOL_NOTFOUND)
            s_log(l, "spool_error", "%s", err);
        return rc == AG_SPOOL_ERR ? S_WOULD_BLOCK : S_GONE;
    }
    bool sent = s_send(l, data, len);
    free(data);
    if (!sent)
        return S_WOULD_BLOCK;
    S_COUNT(l, sent);
    return S_SENT;
}

/* No Ack for the resend wait: resend the resend_burst oldest unacked
 * messages, in order; then double the wait (to AG_LINK_RESEND_MAX_MS) and
 * go back to one copy, since the collector is silent again. */
static void
s_resend(ag_link_t *l, int64_t now)
{
    size_t sent = 0;
    uint64_t first = l->in_flight[0].seq;
    for (size_t i = 0; i < l->in_flight_count && sent < l->resend_burst; ) {
        s_send_rc_t rc = s_send_seq(l, l->in_flight[i].seq);
        if (rc == S_WOULD_BLOCK)
            break;
        if (rc == S_GONE) {
            s_forget_in_flight(l, l->in_flight[i].seq, NULL, NULL);
            continue;
        }
        l->in_flight[i].resent = true;
        S_COUNT(l, resent);
        sent++;
        i++;
    }
    s_log(l, "resend", "no ack for %u ms; resent %zu of %zu unacked from "
          "seq %" PRIu64, l->resend_wait_ms, sent, l->in_flight_count,
          first);
    l->resend_wait_ms = l->resend_wait_ms * 2 > AG_LINK_RESEND_MAX_MS
                      ? AG_LINK_RESEND_MAX_MS : l->resend_wait_ms * 2;
    l->resend_burst = 1;
    l->resend_epoch++;
    s_resend_timer(l, now);
}

static void
s_pump(ag_link_t *l, int64_t now)
{
    if (!l->ready)
        return;
    if (l->in_flight_count > 0 && now >= l->resend_at_ms)
        s_resend(l, now);
    while (l->in_flight_count < AG_LINK_WINDOW) {
        uint64_t seqs[AG_LINK_WINDOW];
        size_t n = ag_spool_list(l->spool, l->last_sent, seqs,
                                 AG_LINK_WINDOW - l->in_flight_count);
        if (n == 0)
            break;
        for (size_t i = 0; i < n; i++) {
            s_send_rc_t rc = s_send_seq(l, seqs[i]);
            if (rc == S_WOULD_BLOCK)
                return;
            l->last_sent = seqs[i];
            if (rc == S_GONE)
                continue;   /* never in flight: no ack will come */
            if (l->in_flight_count == 0) {
                /* The resend clock starts, from the first wait. */
                l->resend_wait_ms = AG_LINK_RESEND_MS;
                l->resend_burst = 1;
                s_resend_timer(l, now);
            }
            l->in_flight[l->in_flight_count].seq = seqs[i];
            l->in_flight[l->in_flight_count].epoch = l->resend_epoch;
            l->in_flight[l->in_flight_count++].resent = false;
        }
    }
}

/* The collector's key: from --collector-key when that file exists (and
 * matches --collector-fingerprint), else fetched at the first connect
 * when a fingerprint pins it or trust on first use was asked for. */
static int
s_collector_key(ag_link_t *l, const ag_link_opts_t *o, char *err,
                size_t errlen)
{
    const char *path = o->collector_key_path;
    char fp[PW_KEY_FP_SIZE];
    struct stat st;
    if (o->collector_fingerprint
        && !pw_key_is_fingerprint(o->collector_fingerprint)) {
        snprintf(err, errlen, "--collector-fingerprint %.80s: want SHA256: "
                 "and 43 base64 characters, as `parity-collector "
                 "--fingerprint` prints it", o->collector_fingerprint);
        return -1;
    }
    if (o->collector_fingerprint)
        snprintf(l->pin_fp, sizeof l->pin_fp, "%s", o->collector_fingerprint);
    if (o->trust_first_use && !path) {
        snprintf(err, errlen, "--trust-first-use needs --collector-key FILE: "
                 "where the collector's key seen first is kept and pinned");
        return -1;
    }
    if (path && !(l->key_path = strdup(path))) {
        snprintf(err, errlen, "strdup: out of memory");
        return -1;
    }
    bool fetch = l->pin_fp[0] || o->trust_first_use;
    if (fetch && (!path || stat(path, &st) != 0)) {
        l->need_key = true;
        return 0;
    }
    zcert_t *server = zcert_load(path ? path : "");
    if (!server) {
        snprintf(err, errlen, "--collector-key %s: zcert_load failed (no "
                 "such certificate, or not one written by `parity keygen`)",
                 path ? path : "(none)");
        return -1;
    }
    snprintf(l->server_key, sizeof l->server_key, "%s",
             zcert_public_txt(server));
    zcert_destroy(&server);
    pw_key_fingerprint(l->server_key, fp);
    if (l->pin_fp[0] && strcmp(fp, l->pin_fp) != 0) {
        snprintf(err, errlen, "--collector-key %s holds key %s, but "
                 "--collector-fingerprint pins %s: they name different "
                 "collectors (`parity-collector --fingerprint` on the "
                 "collector says which one is right)", path, fp, l->pin_fp);
        return -1;
    }
    return 0;
}

ag_link_t *
ag_link_new(const ag_link_opts_t *opts, ag_spool_t *spool, char *err,
            size_t errlen)
{
    ag_link_t *l = calloc(1, sizeof *l);
    char path[4096];
    if (!l) {
        snprintf(err, errlen, "calloc: out of memory");
        return NULL;
    }
    pthread_mutex_init(&l->stats_lock, NULL);
    l->opts = *opts;
    l->spool = spool;
    l->heartbeat_ms = opts->heartbeat_ms ? opts->heartbeat_ms
                                         : AG_LINK_DEFAULT_HEARTBEAT_MS;
    l->backoff_ms = AG_LINK_BACKOFF_MIN_MS;
    l->resend_wait_ms = AG_LINK_RESEND_MS;
    l->resend_burst = 1;
    l->rng = (uint64_t)pw_clock_unix_us() ^ ((uint64_t)getpid() << 32)
             ^ 0x9E37u;
    snprintf(l->state, sizeof l->state, "idle");
    if (s_endpoints(l, opts->endpoint, err, errlen) != 0)
        goto fail;
    l->opts.endpoint = l->endpoint;

    /* zcert_load takes the public file's name and finds NAME_secret
     * beside it; accept either name from the user. */
    snprintf(path, sizeof path, "%s", opts->key_path ? opts->key_path : "");
    size_t n = strlen(path);
    if (n > 7 && strcmp(path + n - 7, "_secret") == 0)
        path[n - 7] = 0;
    l->cert = zcert_load(path);
    if (!l->cert) {
        snprintf(err, errlen, "--key %s: zcert_load failed (no such "
                 "certificate, or not one written by `parity keygen`)",
                 opts->key_path ? opts->key_path : "(none)");
        goto fail;
    }
    static const char zero_key[41] =
        "0000000000000000000000000000000000000000";
    if (strcmp(zcert_secret_txt(l->cert), zero_key) == 0) {
        snprintf(err, errlen, "--key %s: no secret key (expected %s_secret "
                 "beside it)", opts->key_path, path);
        goto fail;
    }
    if (s_collector_key(l, opts, err, errlen) != 0)
        goto fail;
    if (!l->need_key && s_connect(l, pw_clock_mono_ms()) != AG_LINK_OK) {
        snprintf(err, errlen, "zmq_connect(%s): %s", l->endpoint,
                 zmq_strerror(zmq_errno()));
        goto fail;
    }
    return l;
fail:
    ag_link_destroy(&l);
    return NULL;
}

void
ag_link_destroy(ag_link_t **lp)
{
    if (!lp || !*lp)
        return;
    ag_link_t *l = *lp;
    s_close(l);
    zcert_destroy(&l->cert);
    free(l->hello);
    free(l->endpoints);
    free(l->key_path);
    pthread_mutex_destroy(&l->stats_lock);
    free(l);
    *lp = NULL;
}

int
ag_link_set_hello(ag_link_t *l, const uint8_t *env, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return AG_LINK_ERR;
    memcpy(copy, env, len);
    free(l->hello);
    l->hello = copy;
    l->hello_len = len;
    /* A connection that sent its Hello already says the new one at the
     * next tick: the collector replaces what it knows of the host and
     * the connection stays as it is (ready stays ready). */
    if (l->sock)
        l->hello_pending = true;
    return AG_LINK_OK;
}

void
ag_link_set_state(ag_link_t *l, const char *state, const char *job_id)
{
    pthread_mutex_lock(&l->stats_lock);
    snprintf(l->state, sizeof l->state, "%s", state ? state : "idle");
    snprintf(l->job_id, sizeof l->job_id, "%s", job_id ? job_id : "");
    pthread_mutex_unlock(&l->stats_lock);
}

int
ag_link_tick(ag_link_t *l, int wait_ms, int wake_fd, bool *woken)
{
    int64_t now = pw_clock_mono_ms();
    if (woken)
        *woken = false;
    if (!l->sock && now >= l->reconnect_at_ms) {
        /* A key to fetch first: its failure is logged, and waits. */
        if ((!l->need_key || s_get_key(l, now) == 0)
            && s_connect(l, now) != AG_LINK_OK)
            s_schedule_reconnect(l, now, "connect failed");
    }
    /* Sleep no longer than the next timer. */
    int64_t due = now + (wait_ms < 0 ? 0 : wait_ms);
    if (l->sock) {
        if (l->hello_pending && l->hello && now + 20 < due)
            due = now + 20;   /* the handshake is short: try again soon */
        if (l->next_heartbeat_ms < due)
            due = l->next_heartbeat_ms;
        int64_t gone = l->last_heard_ms
                     + (int64_t)AG_LINK_LIVENESS * l->heartbeat_ms;
        if (gone < due)
            due = gone;
        if (l->ready && l->in_flight_count > 0 && l->resend_at_ms < due)
            due = l->resend_at_ms;
    } else if (l->reconnect_at_ms < due) {
        due = l->reconnect_at_ms;
    }
    int timeout = due > now ? (int)(due - now) : 0;

    zmq_pollitem_t items[2];
    int n = 0, wake_index = -1, sock_index = -1;
    if (l->sock) {
        items[n] = (zmq_pollitem_t){ zsock_resolve(l->sock), 0, ZMQ_POLLIN,
                                     0 };
        sock_index = n++;
    }
    if (wake_fd >= 0) {
        items[n] = (zmq_pollitem_t){ NULL, wake_fd, ZMQ_POLLIN, 0 };
        wake_index = n++;
    }
    int rc = zmq_poll(items, n, timeout);
    now = pw_clock_mono_ms();
    if (rc > 0 && wake_index >= 0 && (items[wake_index].revents & ZMQ_POLLIN)
        && woken)
        *woken = true;
    (void)sock_index;
    /* Receive whether or not poll said so: it is non-blocking and cheap,
     * and ZMQ's edge-triggered readiness can hide a queued message. */
    if (l->sock) {
        s_receive(l, now);
        if (l->sock)
            s_drain_monitor(l);
    }

    if (l->sock) {
        if (now - l->last_heard_ms
            >= (int64_t)AG_LINK_LIVENESS * l->heartbeat_ms) {
            /* Reached but never answered: a pinned key the collector
             * does not have is worth saying, with both fingerprints. */
            if (!l->ready && !l->pending && !l->auth_refused && l->tcp_up)
                s_check_offered(l);
            s_schedule_reconnect(l, now, l->ready
                                 ? "collector silent for 5 heartbeats"
                                 : l->denied || l->auth_refused
                                 ? "the collector refuses this agent's key "
                                   "at the handshake (not in its --allow, "
                                   "rejected or revoked by an operator)"
                                 : "no answer from the collector (down, or "
                                   "its key is not the pinned one)");
        } else {
            if (l->hello_pending || (!l->ready && now - l->hello_sent_ms
                                     >= AG_LINK_RESEND_MS))
                s_send_hello(l, now);
            if (!l->hello_pending && now >= l->next_heartbeat_ms) {
                s_send_heartbeat(l);
                l->next_heartbeat_ms = now + l->heartbeat_ms;
            }
            s_pump(l, now);
        }
    }
    s_stats_update(l);
    return AG_LINK_OK;
}

void
ag_link_stats(ag_link_t *l, ag_link_stats_t *out)
{
    pthread_mutex_lock(&l->stats_lock);
    *out = l->stats;
    pthread_mutex_unlock(&l->stats_lock);
}

const char *
ag_link_public_key(const ag_link_t *l)
{
    return zcert_public_txt(l->cert);
}
