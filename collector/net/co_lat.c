/* co_lat.c -- see co_lat.h. */
#include "co_lat.h"

#include <string.h>

/* Upper bounds of the buckets, us; the last one takes everything else. */
static const int64_t s_bounds[CO_LAT_BUCKETS] = {
    10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000,
    100000, 200000, 500000, 1000000, 2000000, 5000000, 10000000, 20000000,
    50000000, 100000000, 200000000, 500000000, 1000000000, INT64_MAX,
};

void
co_lat_add(co_lat_t *l, int64_t now_us, int64_t value_us)
{
    int64_t sec = now_us / 1000000;
    int slot = (int)(sec % CO_LAT_SECONDS);
    if (l->second[slot] != sec) {
        l->second[slot] = sec;
        memset(l->hist[slot], 0, sizeof l->hist[slot]);
        l->max_us[slot] = 0;
    }
    int b = 0;
    while (b < CO_LAT_BUCKETS - 1 && value_us > s_bounds[b])
        b++;
    l->hist[slot][b]++;
    if (value_us > l->max_us[slot])
        l->max_us[slot] = value_us;
}

void
co_lat_read(const co_lat_t *l, int64_t now_us, double q, int64_t *q_us,
            int64_t *max_us, uint64_t *count)
{
    uint64_t sum[CO_LAT_BUCKETS] = { 0 }, n = 0;
    int64_t sec = now_us / 1000000, mx = 0;
    for (int s = 0; s < CO_LAT_SECONDS; s++) {
        if (l->second[s] == 0 || sec - l->second[s] >= CO_LAT_SECONDS)
            continue;
        for (int b = 0; b < CO_LAT_BUCKETS; b++) {
            sum[b] += l->hist[s][b];
            n += l->hist[s][b];
        }
        if (l->max_us[s] > mx)
            mx = l->max_us[s];
    }
    *q_us = 0;
    if (n > 0) {
        uint64_t want = (uint64_t)(q * (double)n), seen = 0;
        if (want >= n)
            want = n - 1;
        for (int b = 0; b < CO_LAT_BUCKETS; b++) {
            seen += sum[b];
            if (seen > want) {
                *q_us = b == CO_LAT_BUCKETS - 1 ? mx : s_bounds[b];
                break;
            }
        }
        if (*q_us > mx)
            *q_us = mx;    /* a bucket's bound above the real maximum */
    }
    *max_us = mx;
    *count = n;
}
