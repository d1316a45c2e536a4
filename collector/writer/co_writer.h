/* co_writer.h -- the collector's writer: everything agents send that
 * touches PostgreSQL, on its own thread (docs/architecture.md).
 *
 * The network loop (co_server) reads frames and hands them over through
 * a bounded co_queue; this thread decodes each (within pw_wire's
 * budget), stores it through co_db on its own connection (SampleBatches
 * of many peers in one transaction: group commit), and hands the Ack,
 * Error or JobOffer back through co_out. An Ack still follows COMMIT.
 * It also owns co_jobs (jobs and per-host job states, on a second
 * connection), answers the job-changing Requests (`run`, `cancel`), runs
 * the periodic work (job tick, hosts' last_seen, partitions, retention,
 * the database's changes of agents' keys), records the Hello of a key
 * that is not approved as pending (co_enroll) and reconnects with back-off when the database goes away. Every item
 * taken from the queue is answered with CO_OUT_DONE, whatever happened
 * to it.
 *
 * Per peer, messages are handled in the order the loop queued them.
 * Liveness is not decided here: the loop sends CO_ITEM_OFFLINE.
 *
 * The store borrows the co_db handle (connected or not; the caller
 * keeps ownership and destroys it after co_writer_destroy) and the ZeroMQ
 * context. co_writer_counters is safe from any thread.
 */
#ifndef CO_WRITER_H
#define CO_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co_config.h"
#include "co_db.h"
#include "co_keys.h"
#include "co_queue.h"

/* Items waiting for the writer at most, and their bytes (frames are at
 * most 4 MiB; a full window of 64 batches from each of 1,000 agents is
 * ~2 GB, so the bound is on bytes, and agents resend what was dropped). */
#define CO_WRITER_QUEUE_ITEMS 65536
#define CO_WRITER_QUEUE_BYTES (256u * 1024 * 1024)
/* Messages answered after one COMMIT at most (the burst's transaction). */
#define CO_WRITER_PENDING_MAX 512
/* Items handled before timers are looked at again. */
#define CO_WRITER_BURST 256
/* Partitions made ahead, and how often partitions and retention are
 * looked at. */
#define CO_WRITER_MONTHS_AHEAD 2
#define CO_WRITER_MAINTAIN_EVERY_US (3600LL * 1000000)

/* A step of the writer slower than this is logged (event=slow_store). */
#define CO_WRITER_SLOW_US 250000
/* A burst ends (its batches are stored and its transaction committed)
 * once it has taken this long: what it stored waits for that COMMIT to
 * be acked, so this bounds the latency that grouping adds (a COMMIT per
 * message is slower still). */
#define CO_WRITER_TXN_US 20000

typedef struct co_writer co_writer_t;

/* The step's name in stats and logs ("run_end"). */
const char *co_step_name(co_step_t step);

/* A new writer for cfg (copied; only conninfo, admin_dir, heartbeat_ms,
 * floor_window, parity, keep_samples_us are read), borrowing db, ctx and
 * keys (the database's view of agents' keys, which the writer keeps
 * current: co_enroll_poll every heartbeat interval, and what each Hello
 * of a key that is not approved teaches it). Starts its thread. Caller
 * owns it; NULL with err. */
co_writer_t *co_writer_new(const co_config_t *cfg, co_db_t *db,
                         void *ctx, co_keys_t *keys, char *err,
                         size_t errlen);

/* Hand over *item (CO_ITEM_FRAME, CO_ITEM_OFFLINE or a CO_ITEM_REQUEST
 * for run/cancel). 0 and *item NULL, or -1 when the queue is full (the
 * caller keeps *item). OFFLINE items are always taken. */
int co_writer_push(co_writer_t *st, co_queue_item_t **item);

/* Items and bytes waiting. */
void co_writer_depth(co_writer_t *st, size_t *items, size_t *bytes);

/* Microseconds the oldest frame waiting for the writer has waited at
 * monotonic now_us (0: none waits). */
int64_t co_writer_lag_us(co_writer_t *st, int64_t now_us);

/* A copy of the writer's counters (the fields it owns; the others 0). */
void co_writer_counters(co_writer_t *st, co_counters_t *out, bool *db_up);

/* Stop the thread: the item being handled is finished (its Ack sent),
 * the waiting batches stored; items still queued are dropped (agents
 * resend them). co_writer_counters still answers afterwards. Idempotent. */
void co_writer_stop(co_writer_t *st);

/* co_writer_stop, then free; NULL is fine. */
void co_writer_destroy(co_writer_t **st);

#endif
