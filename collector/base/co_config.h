/* co_config.h -- what the collector's threads share: the configuration
 * parity-collector starts them with (co_config_t, filled by co_main),
 * the counters the network loop and the writer keep (co_counters_t),
 * and the limits both go by. Types and constants only.
 *
 * The network loop (net/co_server) owns the config and the counters; the
 * writer (writer/co_writer) and the query workers (query/co_qpool) get a
 * copy of the config at start and add to the counters through the loop.
 */
#ifndef CO_CONFIG_H
#define CO_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pw_wire.h"

/* Beats a peer may miss before it is offline (docs/protocol.md, 6). */
#define CO_CONFIG_MISSED_BEATS 5
/* Bad input from one peer is logged at most once per kind per this. */
#define CO_CONFIG_LOG_EVERY_US 10000000
/* Largest Hello kept in memory while the database is down (per peer). */
#define CO_CONFIG_PENDING_HELLO_MAX (32u * 1024)
/* Database reconnect back-off, microseconds. */
#define CO_CONFIG_DB_RETRY_MIN_US 250000
#define CO_CONFIG_DB_RETRY_MAX_US 8000000

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
    /* --confirm on: each new fleet event is confirmed (co_confirm) before
     * its notice goes. */
    bool confirm;
} co_config_t;

/* Where the writer's time goes (co_writer), microseconds summed. */
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
    uint64_t slow_steps;       /* steps over CO_WRITER_SLOW_US */
    uint64_t detect_runs;      /* runs looked at for change points */
    uint64_t change_points;    /* change points stored */
    uint64_t detect_dropped;   /* runs not looked at: its ring was full */
    uint64_t detect_failed;
    uint64_t key_pending;      /* frames answered Error 20: key not approved */
    uint64_t key_denied;       /* frames answered Error 21: rejected, revoked */
    uint64_t key_requests;     /* the key service's answers */
    uint64_t kinds_out[32];    /* frames sent by Envelope body case */
    /* Webhook notices (co_notify): queued, delivered, refused by the
     * receiver (a 4xx), dropped (the queue was full). */
    uint64_t notices_queued;
    uint64_t notices_delivered;
    uint64_t notices_refused;
    uint64_t notices_dropped;
} co_counters_t;

#endif
