/* co_qpool.h -- the collector's query workers: client Requests answered
 * off the network loop, each worker with its own database connection.
 *
 * The loop hands a Request frame over (co_qpool_push); the first idle
 * worker decodes it, answers it with co_query (which runs co_history's
 * commands too) under the statement timeout, and sends the Reply back
 * through co_out with CO_OUT_DONE. A long query holds one worker; the
 * others, and the writer (co_writer), go on.
 *
 * `run` and `cancel` are not for the pool: they change jobs, which the
 * writer owns. The pool's co_jobs instances are only connections.
 *
 * Priority: acks are latency, queries are throughput. With the private
 * cluster (cfg.private_db) each worker thread and the server process
 * serving its connection run at nice CO_QPOOL_NICE, so that on a small
 * machine a history-wide query takes the CPU the writer leaves rather
 * than delaying acks (measured in docs/performance.md). An external
 * database's processes are never touched.
 */
#ifndef CO_QPOOL_H
#define CO_QPOOL_H

#include <stddef.h>

#include "co_config.h"
#include "co_keys.h"
#include "co_queue.h"

/* Workers, and Requests waiting for one at most (a client sends one at
 * a time; more waiting than this is a flood, answered "busy"). */
#define CO_QPOOL_WORKERS 2
#define CO_QPOOL_NICE 10
#define CO_QPOOL_QUEUE_ITEMS 256
#define CO_QPOOL_QUEUE_BYTES (16u * 1024 * 1024)

typedef struct co_qpool co_qpool_t;

/* Start n workers for cfg (copied; conninfo, admin_dir, floor_window,
 * query_timeout_ms are read) with sockets of ctx; an operator's decision
 * on a key (co_enroll) is also set in keys (borrowed, may be NULL; it
 * must outlive the pool). Caller owns the pool; NULL with err. */
co_qpool_t *co_qpool_new(const co_config_t *cfg, void *ctx, int n,
                         co_keys_t *keys, char *err, size_t errlen);

/* Hand over a CO_ITEM_REQUEST item: 0 and *item NULL, or -1 when the
 * queue is full (the caller keeps *item and answers "busy"). */
int co_qpool_push(co_qpool_t *pool, co_queue_item_t **item);

/* Requests waiting, and how many workers are answering one now. */
void co_qpool_depth(co_qpool_t *pool, size_t *waiting, int *busy);

/* Stop: each worker finishes the Request it is answering (bounded by
 * the statement timeout); waiting ones are dropped. NULL is fine. */
void co_qpool_destroy(co_qpool_t **pool);

#endif
