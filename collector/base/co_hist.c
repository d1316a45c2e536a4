/* co_hist.c -- a cumulative histogram of durations (co_hist.h). */
#include "co_hist.h"

const double co_hist_bounds_s[CO_HIST_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

void
co_hist_add(co_hist_t *h, int64_t us)
{
    double s = us > 0 ? (double)us / 1e6 : 0;
    h->count++;
    h->sum_s += s;
    for (int i = 0; i < CO_HIST_BUCKETS; i++)
        if (s <= co_hist_bounds_s[i]) {
            h->bucket[i]++;
            return;
        }
}

uint64_t
co_hist_cumulative(const co_hist_t *h, int i)
{
    uint64_t n = 0;
    for (int k = 0; k <= i && k < CO_HIST_BUCKETS; k++)
        n += h->bucket[k];
    return n;
}
