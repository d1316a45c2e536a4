/* co_server.h -- the collector's network loop (docs/protocol.md).
 *
 * One ROUTER socket with CURVE (the collector is the server), a ZAP
 * handler (co_auth, polled in the same loop) admitting only the public
 * certificates in the allow-list directory, and a zmq_poll loop that handles each peer's
 * messages in order, stores them through co_db and acks after commit.
 * Peers are keyed by their authenticated CURVE public key. The loop logs
 * events through co_log (one line each) and keeps the counters below.
 *
 * Single-threaded (libzmq's I/O threads aside). The server borrows the
 * co_db handle (the caller keeps ownership and destroys it after the
 * server).
 */
#ifndef CO_SERVER_H
#define CO_SERVER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "co_db.h"
#include "pw_wire.h"

/* Most peers kept in memory at once; a Hello from one more is dropped. */
#define CO_SERVER_MAX_PEERS 4096
/* High-water marks of the ROUTER, in messages, both directions. */
#define CO_SERVER_HWM 1000
/* Messages handled per wake-up before timers are looked at again. */
#define CO_SERVER_BURST 256
/* Bad input from one peer is logged at most once per kind per this. */
#define CO_SERVER_LOG_EVERY_US 10000000
/* Largest Hello kept in memory while the database is down (per peer). */
#define CO_SERVER_PENDING_HELLO_MAX (32u * 1024)
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
} co_server_config_t;

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
 * the message being handled is finished, its ack sent. */
int co_server_run(co_server_t *srv, volatile sig_atomic_t *stop,
                  volatile sig_atomic_t *dump);

/* Log the counters as one "event=counters" line. */
void co_server_log_counters(const co_server_t *srv, const char *event);

const co_counters_t *co_server_counters(const co_server_t *srv);

/* The endpoint actually bound (after port 0: the real port); owned by
 * srv. */
const char *co_server_endpoint(const co_server_t *srv);

/* Close sockets, stop the ZAP handler, free everything; NULL is fine. */
void co_server_destroy(co_server_t **srv);

#endif
