/* co_stats.h -- the network loop's figures, published for other
 * threads to read (the HTTP threads' /metrics).
 *
 * The loop owns its counters and histograms and never takes a lock to
 * add to them; every CO_STATS_PUBLISH_MS it copies them here under a
 * mutex, and a reader copies them out. A reader therefore sees figures
 * at most that old, and never a half-written set.
 */
#ifndef CO_STATS_H
#define CO_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co_config.h"
#include "co_hist.h"

#define CO_STATS_PUBLISH_MS 500

typedef struct {
    bool set;                  /* published at least once */
    int64_t published_us;      /* unix time of the copy */
    co_counters_t total;       /* the loop's and the writer's */
    bool db_up;
    size_t peers;              /* peers the loop holds (agents, clients) */
    size_t peers_online;       /* of them, agents that said Hello */
    size_t store_items, store_bytes;   /* the writer's queue */
    int64_t writer_lag_us;     /* age of its oldest frame waiting */
    size_t query_waiting;      /* Requests waiting for a query worker */
    int query_busy;            /* workers answering one */
    co_hist_t ack;             /* frame read -> stored (its Ack sent) */
    co_hist_t loop_gap;        /* one pass of the loop, working */
    co_hist_t query;           /* Request read -> answered */
} co_stats_snap_t;

typedef struct co_stats co_stats_t;

/* Caller owns the result; NULL on out of memory. */
co_stats_t *co_stats_new(void);
void co_stats_destroy(co_stats_t **s);

/* Replace the published copy with *snap (copied). */
void co_stats_publish(co_stats_t *s, const co_stats_snap_t *snap);

/* A copy of the published figures (out->set false: none yet). */
void co_stats_read(co_stats_t *s, co_stats_snap_t *out);

#endif
