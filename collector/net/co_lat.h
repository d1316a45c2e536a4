/* co_lat.h -- how long things took over the last minute (Redis's
 * latency.c, in one small struct): a histogram per second for 60
 * seconds, so a quantile and the maximum of the last minute cost a fixed
 * amount of memory however many events there were.
 *
 * Buckets follow a 1-2-5 series from 10 us to 100 s; a quantile is
 * reported as the upper bound of its bucket (never below the truth).
 * Not thread-safe: one owner. */
#ifndef CO_LAT_H
#define CO_LAT_H

#include <stdint.h>

#define CO_LAT_SECONDS 60
#define CO_LAT_BUCKETS 26

typedef struct {
    int64_t second[CO_LAT_SECONDS];   /* which second a slot holds */
    uint32_t hist[CO_LAT_SECONDS][CO_LAT_BUCKETS];
    int64_t max_us[CO_LAT_SECONDS];
} co_lat_t;

/* Record one duration (us) at monotonic time now_us. */
void co_lat_add(co_lat_t *l, int64_t now_us, int64_t value_us);

/* Over the last CO_LAT_SECONDS before now_us: the q-quantile (0..1, as a
 * bucket's upper bound), the maximum, and the count; all 0 when empty. */
void co_lat_read(const co_lat_t *l, int64_t now_us, double q, int64_t *q_us,
                 int64_t *max_us, uint64_t *count);

#endif
