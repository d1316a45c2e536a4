/* co_server.h -- the collector's network loop (docs/protocol.md,
 * docs/architecture.md).
 *
 * One ROUTER socket with CURVE (the collector is the server), a ZAP
 * handler (co_auth, polled in the same loop) admitting the public
 * certificates in the allow-list and admin directories, the keys the
 * database approved and, with enrollment on, unknown keys as pending
 * (co_keys holds the database's decisions in memory; a pending key's
 * data and anything of a rejected or revoked key is answered Error 20
 * or 21 here), the key service (the public key on the next port,
 * without CURVE), and a zmq_poll loop that reads sockets and nothing
 * else: it never waits for PostgreSQL. Frames are routed, not decoded (pw_wire_peek): agents'
 * messages go to the writer thread (co_store), client Requests to the
 * query workers (co_qpool; `run` and `cancel` to the writer, which owns
 * jobs), `ping` and `stats` are answered here. Their answers come back
 * over an inproc PULL (co_out) and leave through the ROUTER.
 *
 * The loop owns liveness: a peer's last frame is stamped when it is
 * read, Heartbeats go out every interval (spread over it), and a peer
 * silent for CO_SERVER_MISSED_BEATS intervals is offline (the writer is
 * told).
 * Everything it holds is bounded: peers (idle ones evicted), each peer's
 * frames waiting for the writer (count and bytes), the writer's and the
 * workers' queues. A data frame whose seq is still waiting or being
 * stored is a resend: dropped, not queued twice.
 *
 * The server borrows the co_db handle, which the writer uses (the
 * caller keeps ownership and destroys it after the server).
 */
#ifndef CO_SERVER_H
#define CO_SERVER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co_db.h"
#include "pw_wire.h"

/* Most peers kept in memory at once; a frame from one more is dropped,
 * counted (peers_refused) and logged at most once a second. Offline
 * peers are evicted after CO_SERVER_PEER_IDLE_US. */
#define CO_SERVER_MAX_PEERS 16384
#define CO_SERVER_PEER_IDLE_US (60LL * 1000000)
/* Frames of one peer waiting for (or being stored by) the writer, at
 * most: the agent's window is 64 messages, a frame at most 4 MiB. */
#define CO_SERVER_PEER_INFLIGHT 128
#define CO_SERVER_PEER_BYTES (32u * 1024 * 1024)
/* Beats a peer may miss before it is offline (docs/protocol.md, 6). */
#define CO_SERVER_MISSED_BEATS 5
/* Heartbeats go out in this many slices of the interval, each peer in
 * one of them: a fleet's 1,000 at once kept ZeroMQ's I/O thread
 * encrypting and writing for milliseconds, and every Ack queued behind
 * them waited (docs/performance.md, "A fleet of 1,000
 * agents"). */
#define CO_SERVER_BEAT_SLICES 16
/* Largest Request frame the loop decodes to route it (args_json is at
 * most 64 KiB); a larger one goes to a query worker, which refuses it. */
#define CO_SERVER_ROUTE_DECODE_MAX (128u * 1024)
/* High-water marks of the ROUTER, in messages, both directions. */
#define CO_SERVER_HWM 1000
/* Messages handled per wake-up before timers are looked at again. */
#define CO_SERVER_BURST 256
/* Bad input from one peer is logged at most once per kind per this. */
#define CO_SERVER_LOG_EVERY_US 10000000
/* Largest Hello kept in memory while the database is down (per peer). */
#define CO_SERVER_PENDING_HELLO_MAX (32u * 1024)
/* Longest request the key service reads (it answers the 5 bytes "key"). */
#define CO_SERVER_KEYSVC_MAX 64
/* Database reconnect back-off, microseconds. */
#define CO_SERVER_DB_RETRY_MIN_US 250000
#define CO_SERVER_DB_RETRY_MAX_US 8000000

typedef struct {
    const char *bind;          /* e.g. "tcp://0.0.0.0:5555" */
    const char *key_path;      /* the collector's zcert (secret) file */
    const char *allow_dir;     /* directory of allowed public certs */
    int heartbeat_ms;          /* 1000 by default; peers offline after 5 */
    int floor_window;          /* CO_DB_FLOOR_WINDOW by default */
    double parity;             /* VD_DEFAULT_PARITY by default */
    /* Jobs and client queries (co_jobs, co_query): the database they use
     * (NULL: no jobs, every query command is unknown) and the directory
     * of admin client keys (NULL: nobody may query). ZAP admits the union
     * of allow_dir and admin_dir. */
    const char *conninfo;
    const char *admin_dir;
    /* statement_timeout of the query workers' connections, ms
     * (--query-timeout; 0: none). */
    int query_timeout_ms;
    /* --keep-samples: samples partitions older than this are dropped
     * (0: keep all). */
    int64_t keep_samples_us;
    /* Query worker threads (0: CO_QPOOL_WORKERS). */
    int query_workers;
    /* Enrollment (docs/collector.md): an unknown key may connect and
     * say Hello, and waits as pending for an operator (--enroll on, the
     * default); off: only keys of the directories, or approved, connect.
     * key_service: serve the public key on --bind's port + 1, for agents
     * that pin the collector by fingerprint (--key-service, default on). */
    bool enroll;
    bool key_service;
    /* The database is the collector's private cluster on this machine:
     * the query workers then lower their own and their server
     * processes' CPU priority (co_qpool.h says why). */
    bool private_db;
    /* This collector's name among those on one database (--name; the
     * holder of its hosts, 011_collectors.sql). NULL: no beat. */
    const char *name;
    /* Client queries that only read go to this database (--query-db: a
     * read replica); NULL: conninfo's. */
    const char *query_conninfo;
    /* Webhooks told when a fleet event opens (--notify-url, co_notify):
     * n_notify_urls of them, each with a queue of notify_queue notices
     * (--notify-queue; 0: CO_HOOK_QUEUE_DEFAULT). */
    const char *const *notify_urls;
    size_t n_notify_urls;
    size_t notify_queue;
} co_server_config_t;

/* Where the writer's time goes (co_store), microseconds summed. */
typedef enum {
    CO_STEP_BATCHES, CO_STEP_RUN_START, CO_STEP_RUN_END,
    CO_STEP_CALIBRATION, CO_STEP_JOB_STATUS, CO_STEP_HELLO,
    CO_STEP_COMMIT, CO_STEP_REQUEST, CO_STEP_OFFLINE, CO_STEP_TICK,
    CO_STEP_HEARD, CO_STEP_MAINTAIN, CO_STEP_COUNT
} co_step_t;

/* Counters. Invariant: every frame received is counted once in received
 * and, when it was dropped, once in exactly one bad[] kind. */
typedef struct {
    uint64_t received;         /* body frames from authenticated peers */
    uint64_t bad[PW_WIRE_ECOUNT]; /* indexed by -code; bad[0] unused */
    uint64_t frames;           /* messages with more than one body frame */
    uint64_t unexpected;       /* well-formed but not for the collector */
    uint64_t acked;
    uint64_t duplicates;       /* acked again, nothing changed */
    uint64_t deferred;         /* not acked: db down or dependency missing */
    uint64_t refused;          /* Error with seq: can never be stored */
    uint64_t samples_stored;
    uint64_t groups;           /* transactions of SampleBatches (group commit) */
    uint64_t verdicts_stored;
    uint64_t hellos;
    uint64_t heartbeats_in;
    uint64_t requests;
    uint64_t errors_sent;
    uint64_t sends_dropped;    /* a reply the peer's queue had no room for */
    uint64_t offline;
    uint64_t accepted;         /* TCP connections accepted */
    uint64_t auth_failed;      /* CURVE/ZAP handshakes that failed */
    uint64_t disconnects;
    uint64_t db_failures;
    uint64_t db_reconnects;
    uint64_t dup_dropped;      /* a resend of a frame still being stored */
    uint64_t queue_dropped;    /* a peer's or the writer's bound was full */
    uint64_t busy;             /* Requests answered "busy": queue full */
    uint64_t peers_refused;    /* frames from peers beyond MAX_PEERS */
    uint64_t peers_evicted;
    uint64_t kinds[32];        /* frames by Envelope body case (<32) */
    uint64_t step_us[CO_STEP_COUNT]; /* writer time per step */
    uint64_t slow_steps;       /* steps over CO_STORE_SLOW_US */
    uint64_t detect_runs;      /* runs looked at for change points */
    uint64_t change_points;    /* change points stored */
    uint64_t detect_dropped;   /* runs not looked at: its ring was full */
    uint64_t detect_failed;
    uint64_t key_pending;      /* frames answered Error 20: key not approved */
    uint64_t key_denied;       /* frames answered Error 21: rejected, revoked */
    uint64_t key_requests;     /* the key service's answers */
} co_counters_t;

typedef struct co_server co_server_t;

/* Load the key, start the ZAP handler on allow_dir, bind. Returns a new
 * server the caller owns, or NULL with err naming the failing call and
 * argument. */
co_server_t *co_server_new(const co_server_config_t *cfg, co_db_t *db,
                           char *err, size_t errlen);

/* Check what co_server_new will need before anything slow starts: the
 * key file holds a secret key, the allow-list is a readable directory.
 * Returns 0, or -1 with err naming the option and the problem. */
int co_server_check(const co_server_config_t *cfg, char *err, size_t errlen);

/* Run until *stop is set (by a signal handler). When *dump is set the
 * counters are logged and *dump cleared. Returns 0 after a clean drain:
 * the writer finished the message it was storing and the waiting
 * batches, and their acks were sent; frames still queued are dropped
 * (agents resend them). */
int co_server_run(co_server_t *srv, volatile sig_atomic_t *stop,
                  volatile sig_atomic_t *dump);

/* Log the counters as one "event=counters" line. */
void co_server_log_counters(co_server_t *srv, const char *event);

/* The loop's and the writer's counters added up (a snapshot). */
const co_counters_t *co_server_counters(co_server_t *srv);

/* The endpoint actually bound (after port 0: the real port); owned by
 * srv. */
const char *co_server_endpoint(const co_server_t *srv);

/* The key service's endpoint ("" when off or not bound); owned by srv. */
const char *co_server_key_endpoint(const co_server_t *srv);

/* Close sockets, stop the ZAP handler, free everything; NULL is fine. */
void co_server_destroy(co_server_t **srv);

#endif
