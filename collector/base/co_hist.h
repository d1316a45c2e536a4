/* co_hist.h -- a cumulative histogram of durations since start, as
 * Prometheus reads one (`_bucket{le=...}`, `_sum`, `_count`).
 *
 * co_lat keeps the last minute for `stats` and the log; a scraper wants
 * counts that only grow, so that rate() over any window works. The
 * bounds are fixed (CO_HIST_BOUNDS_S), from 100 us to 10 s, the span of
 * an ack, a loop pass and a query.
 *
 * A value, no allocation. One owner: not thread-safe (the loop adds,
 * and publishes copies through co_stats).
 */
#ifndef CO_HIST_H
#define CO_HIST_H

#include <stdint.h>

#define CO_HIST_BUCKETS 16

/* Upper bounds of the buckets, seconds, ascending. */
extern const double co_hist_bounds_s[CO_HIST_BUCKETS];

typedef struct {
    uint64_t bucket[CO_HIST_BUCKETS];  /* per bucket, not cumulative */
    uint64_t count;                    /* all, those above 10 s too */
    double sum_s;
} co_hist_t;

/* Record one duration in microseconds (a negative one counts as 0). */
void co_hist_add(co_hist_t *h, int64_t us);

/* Observations at or below bucket i's bound (i < CO_HIST_BUCKETS). */
uint64_t co_hist_cumulative(const co_hist_t *h, int i);

#endif
