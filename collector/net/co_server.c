/* co_server.c -- the network loop; see co_server.h and docs/protocol.md. */
#include "co_server.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <czmq.h>
#include <jansson.h>
#include <zmq.h>

#include "pw_systemd.h"
#include "co_auth.h"
#include "co_keys.h"
#include "co_hist.h"
#include "co_lat.h"
#include "co_log.h"
#include "co_out.h"
#include "co_qpool.h"
#include "co_query.h"
#include "co_writer.h"
#include "pw_clock.h"
#include "pw_err.h"
#include "pw_key.h"
#include "pw_monitor.h"
#include "pw_wire.h"

#define CO_MONITOR_ENDPOINT "inproc://co-server-monitor"
#define CO_RID_MAX CO_QUEUE_RID_MAX
/* A reply frame the loop packs itself: Error, Heartbeat, ping's Reply. */
#define CO_REPLY_MAX 8192
/* Global rate limit of handshake-failure and refusal log lines. */
#define CO_AUTH_LOG_EVERY_US 1000000
/* Results taken from the workers per wake-up before sockets are read
 * again (each is one send). */
#define CO_OUT_BURST 1024

/* What the loop knows of one authenticated peer (a host or a client). */
typedef struct {
    char key[41];                 /* Z85 public key from ZAP */
    uint8_t rid[CO_RID_MAX];      /* routing id of the connection that */
    size_t rid_len;               /*   sent the last non-Request frame */
    bool online;
    int64_t last_heard_us;        /* monotonic, stamped on arrival */
    /* Frames handed to the writer and not finished yet: their count,
     * bytes and seqs (a resend of one of them is dropped). */
    uint32_t inflight;
    size_t inflight_bytes;
    uint64_t seqs[CO_SERVER_PEER_INFLIGHT];
    uint32_t n_seqs;
    bool beat_queued;             /* a Heartbeat of it waits for the writer */
    /* It sent a Hello: an agent, which the collector heartbeats. A
     * client never says Hello and often is gone after its answer, so a
     * Heartbeat to it would only be dropped and counted. */
    bool said_hello;
    unsigned beat_slot;           /* the interval's slice it is beaten in */
    int64_t drop_logged_us;       /* last queue_full line for it */
    /* What its key may send (co_auth_verdict), as of verdict_gen. */
    co_auth_verdict_t verdict;
    uint64_t verdict_gen;
    int64_t key_logged_us;        /* last key_pending/key_denied line */
} s_peer_t;

struct co_server {
    co_config_t cfg;
    co_db_t *db;
    void *ctx;
    void *router;
    void *monitor;
    void *results;                /* PULL of co_out */
    void *keysvc;                 /* the key service; NULL when off */
    co_auth_t *auth;
    co_keys_t *keys;              /* the database's view of keys */
    co_writer_t *store;
    co_qpool_t *pool;             /* NULL without cfg.conninfo */
    char endpoint[256];
    char key_endpoint[256];       /* the key service's, "" when none */
    char public_key[41];
    zhashx_t *peers;              /* key -> s_peer_t (owned) */
    co_counters_t c;              /* the loop's own counters */
    co_counters_t total;          /* c + the writer's, for readers */
    int64_t next_beat_us;         /* the next slice of Heartbeats */
    unsigned beat_slice;          /* which slice that is */
    unsigned beat_slot_next;      /* the slot of the next peer made */
    int64_t auth_logged_us;
    int64_t refuse_logged_us;
    co_lat_t loop_lat;            /* time between two polls, working */
    co_lat_t store_lat;           /* frame read -> writer finished */
    co_lat_t query_lat;           /* Request read -> answered */
    /* The same since start, for /metrics (co_stats). */
    co_hist_t loop_hist, store_hist, query_hist;
    co_stats_t *stats;            /* borrowed; NULL: nobody reads */
    int64_t next_publish_us;
    uint8_t reply[CO_REPLY_MAX];
};

/* ---- peers ------------------------------------------------------------ */

static void
s_peer_free(void **item)
{
    free(*item);
    *item = NULL;
}

/* The peer for key, made when there is room; NULL (counted, logged at
 * most once a second) when the table is full. */
static s_peer_t *
s_peer(co_server_t *srv, const char *key)
{
    s_peer_t *p = zhashx_lookup(srv->peers, key);
    if (p)
        return p;
    if (zhashx_size(srv->peers) >= CO_SERVER_MAX_PEERS
        || !(p = calloc(1, sizeof *p))) {
        int64_t now = pw_clock_mono_us();
        srv->c.peers_refused++;
        if (now - srv->refuse_logged_us >= CO_AUTH_LOG_EVERY_US) {
            srv->refuse_logged_us = now;
            co_log(CO_LOG_WARN, "peer_refused", "peer=%s peers=%zu max=%d "
                   "count=%" PRIu64, key, zhashx_size(srv->peers),
                   CO_SERVER_MAX_PEERS, srv->c.peers_refused);
        }
        return NULL;
    }
    snprintf(p->key, sizeof p->key, "%s", key);
    p->beat_slot = srv->beat_slot_next++ % CO_SERVER_BEAT_SLICES;
    zhashx_insert(srv->peers, key, p);
    return p;
}

/* ---- sending ------------------------------------------------------------ */

static void
s_send(co_server_t *srv, const uint8_t *rid, size_t rid_len,
       const void *buf, size_t len)
{
    /* Never block the loop on one slow peer: a full queue drops the reply
     * and the peer's retry rules recover (docs/protocol.md, 4). */
    if (zmq_send(srv->router, rid, rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0
        || zmq_send(srv->router, buf, len, ZMQ_DONTWAIT) < 0) {
        srv->c.sends_dropped++;
        return;
    }
    int body_case = 0;
    uint64_t seq;
    pw_wire_peek(buf, len, &body_case, &seq);
    srv->c.kinds_out[body_case > 0 && body_case < 32 ? body_case : 0]++;
}

static void
s_error(co_server_t *srv, const uint8_t *rid, size_t rid_len, int code,
        const char *msg, uint64_t seq)
{
    size_t len;
    if (pw_wire_pack_error(code, msg, seq, srv->reply, sizeof srv->reply,
                           &len) == PW_WIRE_OK) {
        s_send(srv, rid, rid_len, srv->reply, len);
        srv->c.errors_sent++;
    }
}

/* ---- keys not approved ---------------------------------------------------- */

/* What p's key may send now: co_auth's verdict, derived again only when
 * a directory or a key's state changed since. */
static co_auth_verdict_t
s_verdict(co_server_t *srv, s_peer_t *p)
{
    uint64_t gen = co_auth_generation(srv->auth);
    if (!p->verdict || p->verdict_gen != gen) {
        p->verdict = co_auth_verdict(srv->auth, p->key);
        p->verdict_gen = gen;
    }
    return p->verdict;
}

/* A frame of a key that is pending (data) or denied (anything): Error
 * code with the frame's seq, nothing stored; logged at most once per
 * peer per CO_CONFIG_LOG_EVERY_US. */
static void
s_key_refused(co_server_t *srv, s_peer_t *p, const uint8_t *rid,
              size_t rlen, zmq_msg_t *body, int code, int64_t now)
{
    char fp[PW_KEY_FP_SIZE], msg[400];
    int body_case = 0;
    uint64_t seq = 0;
    bool denied = code == PW_WIRE_KEY_DENIED;
    pw_wire_peek(zmq_msg_data(body), zmq_msg_size(body), &body_case, &seq);
    pw_key_fingerprint(p->key, fp);
    if (denied)
        snprintf(msg, sizeof msg, "denied: this key (%s) was rejected or "
                 "revoked by an operator of the collector; nothing is "
                 "stored, and the next connection is refused", fp);
    else
        snprintf(msg, sizeof msg, "pending: this key (%s) waits for an "
                 "operator's approval (parity hosts approve %s); nothing "
                 "was stored: keep the message, and send Hello again", fp,
                 fp);
    if (denied)
        srv->c.key_denied++;
    else
        srv->c.key_pending++;
    if (now - p->key_logged_us >= CO_CONFIG_LOG_EVERY_US) {
        p->key_logged_us = now;
        co_log(CO_LOG_INFO, "key_refused", "peer=%s fingerprint=%s "
               "state=%s kind=%s count=%" PRIu64, p->key, fp,
               denied ? "denied" : "pending",
               pw_wire_body_name((Parity__Envelope__BodyCase)body_case),
               denied ? srv->c.key_denied : srv->c.key_pending);
    }
    s_error(srv, rid, rlen, code, msg, seq);
}

/* ---- routing frames ------------------------------------------------------ */

static bool
s_seq_waiting(const s_peer_t *p, uint64_t seq)
{
    for (uint32_t i = 0; i < p->n_seqs; i++)
        if (p->seqs[i] == seq)
            return true;
    return false;
}

/* A frame from p that the writer must see (Hello, data, Heartbeat):
 * queue it within the peer's and the writer's bounds. */
static void
s_to_store(co_server_t *srv, s_peer_t *p, const uint8_t *rid, size_t rlen,
           zmq_msg_t *body, int body_case, uint64_t seq, bool key_pending,
           int64_t now)
{
    size_t size = zmq_msg_size(body);
    bool beat = body_case == PARITY__ENVELOPE__BODY_HEARTBEAT;
    /* Its liveness is already stamped: a second Heartbeat while one
     * still waits tells the writer nothing new, unless it is of another
     * protocol version, which the writer answers with an Error. */
    uint32_t version = 0;
    if (beat && p->beat_queued &&
        pw_wire_peek_version(zmq_msg_data(body), size, &version)
        == PW_WIRE_OK && version == PW_WIRE_VERSION)
        return;
    /* Still waiting or being stored: an agent's resend after a slow
     * ack. Storing it twice would change nothing but the queue's size. */
    if (seq != 0 && !beat && s_seq_waiting(p, seq)) {
        srv->c.dup_dropped++;
        return;
    }
    co_queue_item_t *it = NULL;
    if (p->inflight < CO_SERVER_PEER_INFLIGHT
        && p->inflight_bytes + size <= CO_SERVER_PEER_BYTES)
        it = co_queue_item_new(CO_ITEM_FRAME);
    if (it) {
        snprintf(it->key, sizeof it->key, "%s", p->key);
        memcpy(it->rid, rid, rlen);
        it->rid_len = rlen;
        zmq_msg_move(&it->frame, body);
        it->body_case = body_case;
        it->seq = seq;
        it->arrived_us = now;
        it->bytes = size;
        it->key_pending = key_pending;
        if (co_writer_push(srv->store, &it) == 0) {
            p->inflight++;
            p->inflight_bytes += size;
            if (beat)
                p->beat_queued = true;
            else if (seq != 0 && p->n_seqs < CO_SERVER_PEER_INFLIGHT)
                p->seqs[p->n_seqs++] = seq;
            return;
        }
        co_queue_item_free(&it);
    }
    /* Dropped: the agent resends what is not acked (with back-off). */
    srv->c.queue_dropped++;
    if (now - p->drop_logged_us >= CO_CONFIG_LOG_EVERY_US) {
        p->drop_logged_us = now;
        co_log(CO_LOG_WARN, "queue_full", "peer=%s inflight=%u bytes=%zu "
               "count=%" PRIu64, p->key, p->inflight, p->inflight_bytes,
               srv->c.queue_dropped);
    }
}

/* `ping` and `stats` are the loop's own; everything else a worker's. */
static json_t *s_stats_json(co_server_t *srv);

static void
s_reply_here(co_server_t *srv, const uint8_t *rid, size_t rlen,
             const Parity__Request *req)
{
    Parity__Envelope env;
    Parity__Reply rep = PARITY__REPLY__INIT;
    char *body = NULL;
    uint8_t *buf = NULL;
    size_t len;
    rep.request_id = req->request_id;
    if (strcmp(req->command, "ping") == 0) {
        rep.body_json = "{}";
    } else {
        json_t *o = s_stats_json(srv);
        body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        rep.body_json = body ? body : "{}";
    }
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_REPLY, &rep);
    if (pw_wire_pack_alloc(&env, &buf, &len, NULL, 0) == PW_WIRE_OK)
        s_send(srv, rid, rlen, buf, len);
    free(buf);
    free(body);
}

/* A Reply the loop makes itself when a Request cannot be queued. */
static void
s_reply_status(co_server_t *srv, const uint8_t *rid, size_t rlen,
               uint64_t request_id, int status, const char *error)
{
    Parity__Envelope env;
    Parity__Reply rep = PARITY__REPLY__INIT;
    size_t len;
    rep.request_id = request_id;
    rep.status = status;
    rep.error = (char *)error;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_REPLY, &rep);
    if (pw_wire_pack(&env, srv->reply, sizeof srv->reply, &len, NULL, 0)
        == PW_WIRE_OK)
        s_send(srv, rid, rlen, srv->reply, len);
}

/* A Request: decoded here only to read its command (small frames), then
 * answered here, by the writer (jobs) or by a query worker. */
static void
s_on_request(co_server_t *srv, const char *key, const uint8_t *rid,
             size_t rlen, zmq_msg_t *body, int64_t now)
{
    Parity__Envelope *env = NULL;
    uint64_t seq = 0, request_id = 0;
    char err[256];
    const char *cmd = "";
    srv->c.requests++;
    if (zmq_msg_size(body) <= CO_SERVER_ROUTE_DECODE_MAX) {
        int rc = pw_wire_unpack(zmq_msg_data(body), zmq_msg_size(body),
                                PW_WIRE_MAX_FRAME, &env, &seq, err,
                                sizeof err);
        if (rc != PW_WIRE_OK) {
            srv->c.bad[-rc]++;   /* counted per kind, as the writer does */
            s_error(srv, rid, rlen, rc, err, seq);
            return;
        }
        cmd = env->request->command ? env->request->command : "";
        request_id = env->request->request_id;
        if (strcmp(cmd, "ping") == 0 || strcmp(cmd, "stats") == 0) {
            s_reply_here(srv, rid, rlen, env->request);
            pw_wire_free(&env);
            return;
        }
    }
    bool jobs = strcmp(cmd, "run") == 0 || strcmp(cmd, "cancel") == 0;
    bool known = co_query_handles(cmd) || !env;   /* !env: not decoded */
    pw_wire_free(&env);
    if (!srv->pool || !known) {
        s_reply_status(srv, rid, rlen, request_id, CO_REPLY_UNKNOWN,
                       "unknown command");
        return;
    }
    co_queue_item_t *it = co_queue_item_new(CO_ITEM_REQUEST);
    if (it) {
        snprintf(it->key, sizeof it->key, "%s", key);
        memcpy(it->rid, rid, rlen);
        it->rid_len = rlen;
        zmq_msg_move(&it->frame, body);
        it->arrived_us = now;
        it->bytes = zmq_msg_size(&it->frame);
        it->seq = request_id;
        if ((jobs ? co_writer_push(srv->store, &it)
                  : co_qpool_push(srv->pool, &it)) == 0)
            return;
        co_queue_item_free(&it);
    }
    srv->c.busy++;
    s_reply_status(srv, rid, rlen, request_id, CO_REPLY_UNAVAILABLE,
                   "collector busy: too many requests waiting; try again");
}

/* One message [rid][body] from the ROUTER. */
static void
s_handle(co_server_t *srv, zmq_msg_t *rid, zmq_msg_t *body, bool extra)
{
    const char *key = zmq_msg_gets(body, "User-Id");
    const uint8_t *r = zmq_msg_data(rid);
    size_t rlen = zmq_msg_size(rid);
    int body_case = 0;
    uint64_t seq = 0;
    int64_t now = pw_clock_mono_us();

    /* No User-Id means ZAP did not vouch for the peer: cannot happen with
     * CURVE and our handler; drop without a word if it ever does. */
    if (!key || strlen(key) != 40 || rlen > CO_RID_MAX)
        return;
    srv->c.received++;
    s_peer_t *p = s_peer(srv, key);
    if (!p)
        return;
    /* A key rejected or revoked while connected: refused before it
     * counts as alive, so that it goes offline like a silent one. */
    if (s_verdict(srv, p) == CO_AUTH_DENIED) {
        s_key_refused(srv, p, r, rlen, body, PW_WIRE_KEY_DENIED, now);
        return;
    }
    p->last_heard_us = now;
    if (!p->online) {
        p->online = true;
        co_log(CO_LOG_INFO, "online", "peer=%s", p->key);
    }
    if (extra) {
        srv->c.frames++;
        srv->c.bad[-PW_WIRE_EPARSE]++;
        s_error(srv, r, rlen, PW_WIRE_EPARSE,
                "more than one frame in a message", 0);
        return;
    }
    /* A frame that does not scan goes to the writer, whose decode says
     * what is wrong with it. */
    if (pw_wire_peek(zmq_msg_data(body), zmq_msg_size(body), &body_case,
                     &seq) != PW_WIRE_OK)
        body_case = 0;
    srv->c.kinds[body_case >= 0 && body_case < 32 ? body_case : 0]++;
    if (body_case == PARITY__ENVELOPE__BODY_REQUEST) {
        /* A client using this key too is answered on its own connection
         * and leaves the agent's alone. */
        s_on_request(srv, key, r, rlen, body, now);
        return;
    }
    /* A key not approved may say Hello (the writer records it as
     * pending) and nothing else: its data is answered Error 20 here,
     * without a word to the database, and stays in the agent's spool. */
    bool pending = p->verdict == CO_AUTH_PENDING;
    if (pending && body_case == PARITY__ENVELOPE__BODY_HEARTBEAT)
        return;
    if (pending && pw_wire_is_data((Parity__Envelope__BodyCase)body_case)) {
        s_key_refused(srv, p, r, rlen, body, PW_WIRE_KEY_PENDING, now);
        return;
    }
    /* What only a collector sends (Ack, Error, JobOffer, Reply...) is
     * well-formed but not for us: counted and ignored here. */
    if (body_case == PARITY__ENVELOPE__BODY_ACK
        || body_case == PARITY__ENVELOPE__BODY_ERROR
        || body_case == PARITY__ENVELOPE__BODY_JOB_OFFER
        || body_case == PARITY__ENVELOPE__BODY_JOB_CANCEL
        || body_case == PARITY__ENVELOPE__BODY_REPLY) {
        srv->c.unexpected++;
        return;
    }
    memcpy(p->rid, r, rlen);
    p->rid_len = rlen;
    if (body_case == PARITY__ENVELOPE__BODY_HELLO)
        p->said_hello = true;
    if (body_case == PARITY__ENVELOPE__BODY_HEARTBEAT)
        srv->c.heartbeats_in++;
    s_to_store(srv, p, r, rlen, body, body_case, seq, pending, now);
}

/* Read what waits on the ROUTER, at most CO_SERVER_BURST messages. */
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
}

/* Answers from the writer and the workers: send, and settle the bounds. */
static void
s_drain_results(co_server_t *srv, int burst)
{
    for (int i = 0; i < burst; i++) {
        co_out_hdr_t h;
        zmq_msg_t rid, body;
        int rc = co_out_recv(srv->results, &h, &rid, &body);
        if (rc == 0 && (h.flags & CO_OUT_SEND) && zmq_msg_size(&rid) > 0)
            s_send(srv, zmq_msg_data(&rid), zmq_msg_size(&rid),
                   zmq_msg_data(&body), zmq_msg_size(&body));
        if (rc == 0 && (h.flags & CO_OUT_DONE)) {
            h.key[sizeof h.key - 1] = '\0';
            s_peer_t *p = zhashx_lookup(srv->peers, h.key);
            int64_t now = pw_clock_mono_us();
            bool request = h.kind == CO_ITEM_REQUEST;
            co_lat_add(request ? &srv->query_lat : &srv->store_lat, now,
                       now - h.arrived_us);
            co_hist_add(request ? &srv->query_hist : &srv->store_hist,
                        now - h.arrived_us);
            if (!request && p && p->inflight > 0
                && h.bytes <= p->inflight_bytes) {
                p->inflight--;
                p->inflight_bytes -= h.bytes;
                if (h.body_case == PARITY__ENVELOPE__BODY_HEARTBEAT)
                    p->beat_queued = false;
                else
                    for (uint32_t k = 0; k < p->n_seqs; k++)
                        if (p->seqs[k] == h.seq) {
                            p->seqs[k] = p->seqs[--p->n_seqs];
                            break;
                        }
            }
        }
        zmq_msg_close(&rid);
        zmq_msg_close(&body);
        if (rc != 0)
            return;
    }
}
static void
s_drain_monitor(co_server_t *srv)
{
    int event;
    while ((event = pw_monitor_next(srv->monitor)) >= 0) {
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
            int64_t now = pw_clock_mono_us();
            srv->c.auth_failed++;
            if (now - srv->auth_logged_us >= CO_AUTH_LOG_EVERY_US) {
                srv->auth_logged_us = now;
                co_log(CO_LOG_WARN, "handshake_failed",
                       "event=%d count=%" PRIu64, event, srv->c.auth_failed);
            }
            break;
        }
        default:
            break;
        }
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
            int64_t now = pw_clock_mono_us();
            if (now - srv->auth_logged_us >= CO_AUTH_LOG_EVERY_US) {
                srv->auth_logged_us = now;
                co_log(CO_LOG_WARN, "auth_denied", "why=%s",
                       co_log_quote(q, sizeof q, why));
            }
        }
    }
}

/* The key service (docs/protocol.md 1, "Keys and fingerprints"): a REQ
 * sends the 3 bytes "key" and gets the 40 characters of the public key.
 * Not secret, no CURVE; an agent compares it with the fingerprint it
 * pins. Anything else is dropped unanswered. */
static void
s_drain_keysvc(co_server_t *srv)
{
    for (int i = 0; i < CO_SERVER_BURST; i++) {
        uint8_t part[3][CO_SERVER_KEYSVC_MAX];
        int len[3] = { 0, 0, 0 }, n = 0, more = 1;
        size_t ml = sizeof more;
        while (more) {
            int rc = zmq_recv(srv->keysvc, n < 3 ? part[n] : part[2],
                              CO_SERVER_KEYSVC_MAX,
                              n == 0 ? ZMQ_DONTWAIT : 0);
            if (rc < 0) {
                if (n == 0)
                    return;
                break;
            }
            if (n < 3)
                len[n] = rc;
            n++;
            zmq_getsockopt(srv->keysvc, ZMQ_RCVMORE, &more, &ml);
        }
        /* [routing id][empty delimiter]["key"] */
        if (n != 3 || len[0] > CO_SERVER_KEYSVC_MAX || len[1] != 0
            || len[2] != 3 || memcmp(part[2], "key", 3) != 0)
            continue;
        if (zmq_send(srv->keysvc, part[0], (size_t)len[0],
                     ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0
            || zmq_send(srv->keysvc, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0
            || zmq_send(srv->keysvc, srv->public_key, 40, ZMQ_DONTWAIT) < 0)
            srv->c.sends_dropped++;
        else
            srv->c.key_requests++;
    }
}

/* The time between two slices of Heartbeats (CO_SERVER_BEAT_SLICES). */
static int64_t
s_beat_slice_us(const co_server_t *srv)
{
    int64_t us = (int64_t)srv->cfg.heartbeat_ms * 1000
                 / CO_SERVER_BEAT_SLICES;
    return us > 0 ? us : 1;
}

/* Heartbeat the peers of this slice of the interval; tell the writer
 * about silent ones; forget peers idle for long. */
static void
s_beat(co_server_t *srv)
{
    int64_t now = pw_clock_mono_us();
    int64_t interval = (int64_t)srv->cfg.heartbeat_ms * 1000;
    size_t len;
    if (now < srv->next_beat_us)
        return;
    srv->next_beat_us = now + s_beat_slice_us(srv);
    unsigned slice = srv->beat_slice;
    srv->beat_slice = (slice + 1) % CO_SERVER_BEAT_SLICES;
    /* A key file added or removed counts for peers connected already. */
    if (slice == 0)
        co_auth_refresh(srv->auth);
    if (pw_wire_pack_heartbeat(pw_clock_unix_us(), 0, "idle", "", srv->reply,
                               sizeof srv->reply, &len) != PW_WIRE_OK)
        return;
    zlistx_t *evict = NULL;
    for (s_peer_t *p = zhashx_first(srv->peers); p;
         p = zhashx_next(srv->peers)) {
        if (!p->online) {
            if (p->inflight == 0
                && now - p->last_heard_us > CO_SERVER_PEER_IDLE_US) {
                if (!evict)
                    evict = zlistx_new();
                if (evict)
                    zlistx_add_end(evict, p->key);
            }
            continue;
        }
        if (now - p->last_heard_us > CO_CONFIG_MISSED_BEATS * interval) {
            p->online = false;
            p->rid_len = 0;
            srv->c.offline++;
            co_log(CO_LOG_INFO, "offline", "peer=%s", p->key);
            co_queue_item_t *it = co_queue_item_new(CO_ITEM_OFFLINE);
            if (it) {
                snprintf(it->key, sizeof it->key, "%s", p->key);
                if (co_writer_push(srv->store, &it) != 0)
                    co_queue_item_free(&it);
            }
            continue;
        }
        if (p->rid_len > 0 && p->said_hello && p->beat_slot == slice)
            s_send(srv, p->rid, p->rid_len, srv->reply, len);
    }
    /* zlistx_add_end copied nothing: the keys live in the peers, which
     * are deleted only here, after the walk. */
    for (char *k = evict ? zlistx_first(evict) : NULL; k;
         k = zlistx_next(evict)) {
        zhashx_delete(srv->peers, k);
        srv->c.peers_evicted++;
    }
    zlistx_destroy(&evict);
}

/* STATUS= for `systemctl status` (pw_systemd.h), every few seconds:
 * walking the peers is fine at that pace. */
static void
s_notify_status(co_server_t *srv)
{
    size_t online = 0, items = 0, bytes = 0, waiting = 0;
    int busy = 0;
    for (s_peer_t *p = zhashx_first(srv->peers); p;
         p = zhashx_next(srv->peers))
        online += p->online;
    co_writer_depth(srv->store, &items, &bytes);
    if (srv->pool)
        co_qpool_depth(srv->pool, &waiting, &busy);
    pw_systemd_status("%zu peers online, store queue %zu (%zu KiB), "
                     "query queue %zu", online, items, bytes / 1024,
                     waiting);
}

/* ---- stats ---------------------------------------------------------------- */

static void
s_total(co_server_t *srv, bool *db_up)
{
    co_counters_t w;
    co_writer_counters(srv->store, &w, db_up);   /* also once stopped */
    const uint64_t *a = (const uint64_t *)&srv->c;
    const uint64_t *b = (const uint64_t *)&w;
    uint64_t *t = (uint64_t *)&srv->total;
    /* Every field is a uint64_t and each is counted by one side only,
     * so the sum is each side's value. */
    for (size_t i = 0; i < sizeof srv->total / sizeof *t; i++)
        t[i] = a[i] + b[i];
}

static size_t
s_fds_open(void)
{
    size_t n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n > 3 ? n - 3 : 0;   /* ".", ".." and the DIR's own */
}

static void
s_lat_json(json_t *o, const char *name, const co_lat_t *l, int64_t now)
{
    int64_t q, mx;
    uint64_t n;
    char k[64];
    co_lat_read(l, now, 0.99, &q, &mx, &n);
    snprintf(k, sizeof k, "%s_p99_ms", name);
    json_object_set_new(o, k, json_real((double)q / 1000.0));
    snprintf(k, sizeof k, "%s_max_ms", name);
    json_object_set_new(o, k, json_real((double)mx / 1000.0));
    snprintf(k, sizeof k, "%s_count", name);
    json_object_set_new(o, k, json_integer((json_int_t)n));
}

static json_t *
s_counters_json(co_server_t *srv)
{
    bool db_up = false;
    s_total(srv, &db_up);
    const co_counters_t *c = &srv->total;
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
        "peers", (json_int_t)zhashx_size(srv->peers),
        "db_up", (json_int_t)db_up);
    if (!o)
        return NULL;
    json_object_set_new(o, "dup_dropped", json_integer((json_int_t)c->dup_dropped));
    json_object_set_new(o, "queue_dropped", json_integer((json_int_t)c->queue_dropped));
    json_object_set_new(o, "busy", json_integer((json_int_t)c->busy));
    json_object_set_new(o, "peers_refused", json_integer((json_int_t)c->peers_refused));
    json_object_set_new(o, "peers_evicted", json_integer((json_int_t)c->peers_evicted));
    for (int k = 1; k < PW_WIRE_ECOUNT; k++) {
        char name[48];
        snprintf(name, sizeof name, "bad_%s", pw_wire_err_name(-k));
        json_object_set_new(o, name, json_integer((json_int_t)c->bad[k]));
    }
    /* Where the writer's time went: the first thing to look at when
     * acks are late. */
    for (int k = 0; k < CO_STEP_COUNT; k++) {
        char name[48];
        snprintf(name, sizeof name, "store_%s_ms", co_step_name((co_step_t)k));
        json_object_set_new(o, name,
                            json_integer((json_int_t)(c->step_us[k] / 1000)));
    }
    json_object_set_new(o, "slow_steps", json_integer((json_int_t)c->slow_steps));
    json_object_set_new(o, "detect_runs", json_integer((json_int_t)c->detect_runs));
    json_object_set_new(o, "change_points", json_integer((json_int_t)c->change_points));
    json_object_set_new(o, "detect_dropped", json_integer((json_int_t)c->detect_dropped));
    json_object_set_new(o, "detect_failed", json_integer((json_int_t)c->detect_failed));
    json_object_set_new(o, "key_pending", json_integer((json_int_t)c->key_pending));
    json_object_set_new(o, "key_denied", json_integer((json_int_t)c->key_denied));
    json_object_set_new(o, "key_requests", json_integer((json_int_t)c->key_requests));
    return o;
}

/* stats: the counters, and how the loop and its queues are doing. */
static json_t *
s_stats_json(co_server_t *srv)
{
    json_t *o = s_counters_json(srv);
    if (!o)
        return NULL;
    int64_t now = pw_clock_mono_us();
    size_t items = 0, bytes = 0, waiting = 0;
    int busy = 0;
    struct rlimit rl;
    s_lat_json(o, "loop", &srv->loop_lat, now);
    s_lat_json(o, "store", &srv->store_lat, now);
    s_lat_json(o, "query", &srv->query_lat, now);
    co_writer_depth(srv->store, &items, &bytes);
    json_object_set_new(o, "store_queue", json_integer((json_int_t)items));
    json_object_set_new(o, "store_queue_bytes", json_integer((json_int_t)bytes));
    if (srv->pool)
        co_qpool_depth(srv->pool, &waiting, &busy);
    json_object_set_new(o, "query_queue", json_integer((json_int_t)waiting));
    json_object_set_new(o, "query_busy", json_integer(busy));
    json_object_set_new(o, "fds_open", json_integer((json_int_t)s_fds_open()));
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        json_object_set_new(o, "fds_limit", json_integer(
            rl.rlim_cur == RLIM_INFINITY ? -1 : (json_int_t)rl.rlim_cur));
    json_t *kinds = json_object();
    for (int k = 0; kinds && k < 32; k++) {
        const char *name = k ? pw_wire_body_name((Parity__Envelope__BodyCase)k)
                              : "unknown";
        if (srv->total.kinds[k] && name)
            json_object_set_new(kinds, name,
                                json_integer((json_int_t)srv->total.kinds[k]));
    }
    json_object_set_new(o, "kinds", kinds);
    return o;
}

/* What /metrics shows, copied for the HTTP threads (co_stats.h). */
static void
s_publish(co_server_t *srv)
{
    co_stats_snap_t *s = calloc(1, sizeof *s);
    if (!s)
        return;       /* the last copy stays; the next pass tries again */
    s_total(srv, &s->db_up);
    s->published_us = pw_clock_unix_us();
    s->total = srv->total;
    s->peers = zhashx_size(srv->peers);
    for (s_peer_t *p = zhashx_first(srv->peers); p;
         p = zhashx_next(srv->peers))
        s->peers_online += p->said_hello;
    co_writer_depth(srv->store, &s->store_items, &s->store_bytes);
    s->writer_lag_us = co_writer_lag_us(srv->store, pw_clock_mono_us());
    if (srv->pool)
        co_qpool_depth(srv->pool, &s->query_waiting, &s->query_busy);
    s->ack = srv->store_hist;
    s->loop_gap = srv->loop_hist;
    s->query = srv->query_hist;
    co_stats_publish(srv->stats, s);
    free(s);
}

void
co_server_publish_to(co_server_t *srv, co_stats_t *stats)
{
    srv->stats = stats;
}

/* ---- life cycle --------------------------------------------------------- */

/* The results socket first (workers connect to it), then the writer
 * and the query workers; admin keys are admitted at the handshake. */
static int
s_workers_new(co_server_t *srv, char *err, size_t errlen)
{
    int hwm = CO_OUT_HWM, linger = 0;
    srv->results = zmq_socket(srv->ctx, ZMQ_PULL);
    if (!srv->results
        || zmq_setsockopt(srv->results, ZMQ_RCVHWM, &hwm, sizeof hwm)
        || zmq_setsockopt(srv->results, ZMQ_LINGER, &linger, sizeof linger)
        || zmq_bind(srv->results, CO_OUT_ENDPOINT) != 0) {
        pw_err(err, errlen, "zmq_bind(%s): %s", CO_OUT_ENDPOINT,
               zmq_strerror(errno));
        return -1;
    }
    srv->store = co_writer_new(&srv->cfg, srv->db, srv->ctx, srv->keys, err,
                              errlen);
    if (!srv->store)
        return -1;
    if (srv->cfg.conninfo) {
        int n = srv->cfg.query_workers > 0 ? srv->cfg.query_workers
                                           : CO_QPOOL_WORKERS;
        srv->pool = co_qpool_new(&srv->cfg, srv->ctx, n, srv->keys, err,
                                 errlen);
        if (!srv->pool)
            return -1;
    }
    if (!srv->cfg.admin_dir)
        return 0;
    size_t before = co_auth_key_count(srv->auth);
    if (co_auth_add_dir(srv->auth, srv->cfg.admin_dir, err, errlen) != 0)
        return -1;
    co_log(CO_LOG_INFO, "admins", "dir=%s keys=%zu", srv->cfg.admin_dir,
           co_auth_key_count(srv->auth) - before);
    return 0;
}

/* The key service on the bound endpoint's port + 1. Not binding it is
 * logged and survived: agents given the collector's key file do not
 * need it. */
static void
s_keysvc_bind(co_server_t *srv)
{
    char ep[sizeof srv->endpoint], q[300];
    snprintf(ep, sizeof ep, "%s", srv->endpoint);
    char *colon = strrchr(ep, ':');
    long port = colon ? strtol(colon + 1, NULL, 10) : 0;
    int linger = 0, hwm = CO_SERVER_HWM;
    int64_t maxmsg = CO_SERVER_KEYSVC_MAX;
    if (!colon || port <= 0 || port >= 65535) {
        co_log(CO_LOG_WARN, "key_service_failed", "why=%s",
               co_log_quote(q, sizeof q, "no port + 1 for the key service "
                            "in the bound endpoint"));
        return;
    }
    snprintf(colon + 1, sizeof ep - (size_t)(colon + 1 - ep), "%ld",
             port + 1);
    srv->keysvc = zmq_socket(srv->ctx, ZMQ_ROUTER);
    /* NULL mechanism and no ZAP domain: libzmq asks no ZAP handler. */
    if (!srv->keysvc
        || zmq_setsockopt(srv->keysvc, ZMQ_LINGER, &linger, sizeof linger)
        || zmq_setsockopt(srv->keysvc, ZMQ_SNDHWM, &hwm, sizeof hwm)
        || zmq_setsockopt(srv->keysvc, ZMQ_MAXMSGSIZE, &maxmsg,
                          sizeof maxmsg)
        || zmq_bind(srv->keysvc, ep) != 0) {
        char why[400];
        snprintf(why, sizeof why, "zmq_bind(%s): %s (agents given only "
                 "the collector's fingerprint cannot fetch its key; give "
                 "them its key file, or free the port)", ep,
                 zmq_strerror(errno));
        co_log(CO_LOG_WARN, "key_service_failed", "why=%s",
               co_log_quote(q, sizeof q, why));
        if (srv->keysvc)
            zmq_close(srv->keysvc);
        srv->keysvc = NULL;
        return;
    }
    snprintf(srv->key_endpoint, sizeof srv->key_endpoint, "%s", ep);
}

co_server_t *
co_server_new(const co_config_t *cfg, co_db_t *db, char *err,
              size_t errlen)
{
    co_server_t *srv = calloc(1, sizeof *srv);
    zcert_t *cert = NULL;

    if (!srv) {
        pw_err(err, errlen, "calloc co_server: out of memory");
        return NULL;
    }
    srv->cfg = *cfg;
    if (srv->cfg.heartbeat_ms <= 0)
        srv->cfg.heartbeat_ms = 1000;
    if (srv->cfg.floor_window <= 0)
        srv->cfg.floor_window = CO_DB_FLOOR_WINDOW;
    srv->db = db;
    srv->peers = zhashx_new();
    if (!srv->peers) {
        pw_err(err, errlen, "zhashx_new: out of memory");
        goto fail;
    }
    zhashx_set_destructor(srv->peers, s_peer_free);

    cert = zcert_load(cfg->key_path);
    if (!cert) {
        pw_err(err, errlen, "--key %s: cannot read a CURVE certificate "
               "(zcert_load failed; make one with `parity keygen`)",
               cfg->key_path);
        goto fail;
    }
    /* A public-only certificate has an all-zero secret key. */
    if (strcmp(zcert_secret_txt(cert),
               "0000000000000000000000000000000000000000") == 0) {
        pw_err(err, errlen, "--key %s: no secret key in it (give the "
               "_secret file that `parity keygen` wrote)", cfg->key_path);
        goto fail;
    }
    snprintf(srv->public_key, sizeof srv->public_key, "%s",
             zcert_public_txt(cert));

    srv->ctx = zmq_ctx_new();
    if (!srv->ctx) {
        pw_err(err, errlen, "zmq_ctx_new: %s", zmq_strerror(errno));
        goto fail;
    }
    srv->auth = co_auth_new(srv->ctx, cfg->allow_dir, err, errlen);
    if (!srv->auth)
        goto fail;
    srv->keys = co_keys_new();
    if (!srv->keys) {
        pw_err(err, errlen, "co_keys_new: out of memory");
        goto fail;
    }
    co_auth_set_keys(srv->auth, srv->keys, cfg->enroll);
    if (s_workers_new(srv, err, errlen) != 0)
        goto fail;

    srv->router = zmq_socket(srv->ctx, ZMQ_ROUTER);
    if (!srv->router) {
        pw_err(err, errlen, "zmq_socket(ZMQ_ROUTER): %s", zmq_strerror(errno));
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
        pw_err(err, errlen, "zmq_setsockopt(ROUTER): %s", zmq_strerror(errno));
        goto fail;
    }
    if (zmq_socket_monitor(srv->router, CO_MONITOR_ENDPOINT,
                           ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED
                           | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
                           | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                           | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0) {
        pw_err(err, errlen, "zmq_socket_monitor: %s", zmq_strerror(errno));
        goto fail;
    }
    srv->monitor = zmq_socket(srv->ctx, ZMQ_PAIR);
    if (!srv->monitor
        || zmq_setsockopt(srv->monitor, ZMQ_LINGER, &linger, sizeof linger)
        || zmq_connect(srv->monitor, CO_MONITOR_ENDPOINT) != 0) {
        pw_err(err, errlen, "zmq_connect(%s): %s", CO_MONITOR_ENDPOINT,
               zmq_strerror(errno));
        goto fail;
    }
    if (zmq_bind(srv->router, cfg->bind) != 0) {
        pw_err(err, errlen, "--bind %s: zmq_bind: %s", cfg->bind,
               zmq_strerror(errno));
        goto fail;
    }
    size_t elen = sizeof srv->endpoint;
    if (zmq_getsockopt(srv->router, ZMQ_LAST_ENDPOINT, srv->endpoint, &elen))
        snprintf(srv->endpoint, sizeof srv->endpoint, "%s", cfg->bind);
    if (cfg->key_service)
        s_keysvc_bind(srv);
    zcert_destroy(&cert);
    return srv;
fail:
    zcert_destroy(&cert);
    co_server_destroy(&srv);
    return NULL;
}

int
co_server_check(const co_config_t *cfg, char *err, size_t errlen)
{
    struct stat st;
    /* Only the form: whether the address binds is known at bind time,
     * but a typo should not wait for a new cluster's initdb to be told. */
    if (!cfg->bind || strncmp(cfg->bind, "tcp://", 6) != 0
        || !strchr(cfg->bind + 6, ':')) {
        pw_err(err, errlen, "--bind %s: want tcp://HOST:PORT (e.g. "
               "tcp://*:5555)", cfg->bind ? cfg->bind : "");
        return -1;
    }
    zcert_t *cert = zcert_load(cfg->key_path);
    if (!cert) {
        pw_err(err, errlen, "--key %s: cannot read a CURVE certificate "
               "(zcert_load failed; make one with `parity keygen`)",
               cfg->key_path);
        return -1;
    }
    bool no_secret = strcmp(zcert_secret_txt(cert),
                            "0000000000000000000000000000000000000000") == 0;
    zcert_destroy(&cert);
    if (no_secret) {
        pw_err(err, errlen, "--key %s: no secret key in it (give the "
               "_secret file that `parity keygen` wrote)", cfg->key_path);
        return -1;
    }
    if (stat(cfg->allow_dir, &st) != 0 || !S_ISDIR(st.st_mode)
        || access(cfg->allow_dir, R_OK | X_OK) != 0) {
        pw_err(err, errlen, "--allow %s: not a readable directory",
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

const char *
co_server_key_endpoint(const co_server_t *srv)
{
    return srv->key_endpoint;
}

const co_counters_t *
co_server_counters(co_server_t *srv)
{
    s_total(srv, NULL);
    return &srv->total;
}

void
co_server_log_counters(co_server_t *srv, const char *event)
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

/* Stop the writer and the workers, then send what they answered last. */
static void
s_drain_workers(co_server_t *srv)
{
    if (srv->store)
        co_writer_stop(srv->store);
    co_qpool_destroy(&srv->pool);
    if (srv->results)
        s_drain_results(srv, INT32_MAX);
}

int
co_server_run(co_server_t *srv, volatile sig_atomic_t *stop,
              volatile sig_atomic_t *dump)
{
    char fp[PW_KEY_FP_SIZE];
    pw_key_fingerprint(srv->public_key, fp);
    co_log(CO_LOG_INFO, "listening", "endpoint=%s public_key=%s "
           "fingerprint=%s key_service=%s enroll=%s allowed_keys=%zu "
           "heartbeat_ms=%d db_up=%d",
           srv->endpoint, srv->public_key, fp,
           srv->key_endpoint[0] ? srv->key_endpoint : "off",
           srv->cfg.enroll ? "on" : "off", co_auth_key_count(srv->auth),
           srv->cfg.heartbeat_ms, co_db_connected(srv->db));
    if (co_auth_key_count(srv->auth) == 0 && !srv->cfg.enroll) {
        char q[600];
        co_log(CO_LOG_WARN, "no_keys", "why=%s",
               co_log_quote(q, sizeof q, "no public certificate in --allow "
                            "(or --admin): every agent and client is "
                            "refused until one is added"));
    }
    srv->next_beat_us = pw_clock_mono_us() + s_beat_slice_us(srv);
    while (!*stop) {
        zmq_pollitem_t items[] = {
            { srv->router, 0, ZMQ_POLLIN, 0 },
            { co_auth_socket(srv->auth), 0, ZMQ_POLLIN, 0 },
            { srv->monitor, 0, ZMQ_POLLIN, 0 },
            { srv->results, 0, ZMQ_POLLIN, 0 },
            { srv->keysvc, 0, ZMQ_POLLIN, 0 },
        };
        int64_t wait = srv->next_beat_us - pw_clock_mono_us();
        if (wait < 0)
            wait = 0;
        /* Poll at least every 100 ms so a signal is seen promptly even if
         * it arrived just before zmq_poll started. */
        long ms = (long)(wait / 1000);
        if (ms > 100)
            ms = 100;
        int rc = zmq_poll(items, srv->keysvc ? 5 : 4, ms);
        int64_t woke = pw_clock_mono_us();
        if (rc < 0 && errno != EINTR) {
            co_log(CO_LOG_ERROR, "poll_failed", "errno=%d", errno);
            s_drain_workers(srv);
            return -1;
        }
        if (dump && *dump) {
            *dump = 0;
            co_server_log_counters(srv, "counters");
        }
        if (rc > 0) {
            /* Handshakes first: a new agent never waits behind frames. */
            if (items[1].revents & ZMQ_POLLIN)
                s_drain_auth(srv);
            if (items[2].revents & ZMQ_POLLIN)
                s_drain_monitor(srv);
            if (items[3].revents & ZMQ_POLLIN)
                s_drain_results(srv, CO_OUT_BURST);
            if (items[0].revents & ZMQ_POLLIN)
                s_drain_router(srv);
            if (srv->keysvc && (items[4].revents & ZMQ_POLLIN))
                s_drain_keysvc(srv);
        }
        s_beat(srv);
        if (pw_systemd_tick())   /* systemd: watchdog ping, STATUS= */
            s_notify_status(srv);
        int64_t done = pw_clock_mono_us();
        co_lat_add(&srv->loop_lat, done, done - woke);
        co_hist_add(&srv->loop_hist, done - woke);
        if (srv->stats && done >= srv->next_publish_us) {
            srv->next_publish_us = done + CO_STATS_PUBLISH_MS * 1000;
            s_publish(srv);
        }
    }
    pw_systemd_stopping("stopping: storing what the writer holds");
    s_drain_workers(srv);
    if (srv->stats)
        s_publish(srv);
    return 0;
}

void
co_server_destroy(co_server_t **srvp)
{
    if (!srvp || !*srvp)
        return;
    co_server_t *srv = *srvp;
    s_drain_workers(srv);
    if (srv->router) {
        /* Give acks already queued a moment to leave (drain). */
        int linger = 1000;
        zmq_setsockopt(srv->router, ZMQ_LINGER, &linger, sizeof linger);
        zmq_socket_monitor(srv->router, NULL, 0);
        zmq_close(srv->router);
    }
    if (srv->monitor)
        zmq_close(srv->monitor);
    if (srv->keysvc)
        zmq_close(srv->keysvc);
    if (srv->results)
        zmq_close(srv->results);
    co_auth_destroy(&srv->auth);
    co_writer_destroy(&srv->store);
    co_keys_destroy(&srv->keys);   /* the workers are gone */
    if (srv->ctx)
        zmq_ctx_term(srv->ctx);
    zhashx_destroy(&srv->peers);
    free(srv);
    *srvp = NULL;
}
