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
 * messages go to the writer thread (co_writer), client Requests to the
 * query workers (co_qpool; `run` and `cancel` to the writer, which owns
 * jobs), `ping` and `stats` are answered here. Their answers come back
 * over an inproc PULL (co_out) and leave through the ROUTER.
 *
 * The loop owns liveness: a peer's last frame is stamped when it is
 * read, Heartbeats go out every interval (spread over it), and a peer
 * silent for CO_CONFIG_MISSED_BEATS intervals is offline (the writer is
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

#include "co_config.h"
#include "co_db.h"
#include "co_stats.h"

/* Most peers kept in memory at once; a frame from one more is dropped,
 * counted (peers_refused) and logged at most once a second. Offline
 * peers are evicted after CO_SERVER_PEER_IDLE_US. */
#define CO_SERVER_MAX_PEERS 16384
#define CO_SERVER_PEER_IDLE_US (60LL * 1000000)
/* Frames of one peer waiting for (or being stored by) the writer, at
 * most: the agent's window is 64 messages, a frame at most 4 MiB. */
#define CO_SERVER_PEER_INFLIGHT 128
#define CO_SERVER_PEER_BYTES (32u * 1024 * 1024)
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
/* Longest request the key service reads (it answers the 5 bytes "key"). */
#define CO_SERVER_KEYSVC_MAX 64

typedef struct co_server co_server_t;

/* Load the key, start the ZAP handler on allow_dir, bind. Returns a new
 * server the caller owns, or NULL with err naming the failing call and
 * argument. */
co_server_t *co_server_new(const co_config_t *cfg, co_db_t *db,
                           char *err, size_t errlen);

/* Check what co_server_new will need before anything slow starts: the
 * key file holds a secret key, the allow-list is a readable directory.
 * Returns 0, or -1 with err naming the option and the problem. */
int co_server_check(const co_config_t *cfg, char *err, size_t errlen);

/* Run until *stop is set (by a signal handler). When *dump is set the
 * counters are logged and *dump cleared. Returns 0 after a clean drain:
 * the writer finished the message it was storing and the waiting
 * batches, and their acks were sent; frames still queued are dropped
 * (agents resend them). */
int co_server_run(co_server_t *srv, volatile sig_atomic_t *stop,
                  volatile sig_atomic_t *dump);

/* Log the counters as one "event=counters" line. */
void co_server_log_counters(co_server_t *srv, const char *event);

/* Publish the loop's figures into stats (borrowed; it must outlive the
 * loop) every CO_STATS_PUBLISH_MS while co_server_run runs, and once
 * before it returns. NULL: none (the default). */
void co_server_publish_to(co_server_t *srv, co_stats_t *stats);

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
