/* test_co_lat.c -- co_lat: a quantile is its bucket's upper bound (1-2-5
 * from 10 us), never above the maximum; the maximum and count are the
 * last minute's; a second older than CO_LAT_SECONDS is forgotten, and a
 * slot reused for a new second starts empty. */
#include <string.h>

#include "co_lat.h"
#include "tap.h"

#define SEC 1000000LL

int
main(void)
{
    static co_lat_t l;
    memset(&l, 0, sizeof l);
    int64_t q, mx;
    uint64_t n;
    int64_t t = 1000 * SEC;
    co_lat_read(&l, t, 0.5, &q, &mx, &n);
    ok(q == 0 && mx == 0 && n == 0, "empty: all zero");

    for (int i = 0; i < 90; i++)
        co_lat_add(&l, t, 15);         /* bucket (10, 20] */
    for (int i = 0; i < 9; i++)
        co_lat_add(&l, t, 150);        /* (100, 200] */
    co_lat_add(&l, t, 3000);           /* (2000, 5000] */
    co_lat_read(&l, t, 0.5, &q, &mx, &n);
    ok(q == 20 && mx == 3000 && n == 100,
       "p50 is the upper bound of its bucket (%lld), the max and count exact "
       "(%lld, %llu)", (long long)q, (long long)mx, (unsigned long long)n);
    co_lat_read(&l, t, 0.95, &q, &mx, &n);
    ok(q == 200, "p95: 200 (%lld)", (long long)q);
    co_lat_read(&l, t, 1.0, &q, &mx, &n);
    ok(q == 3000, "p100: the maximum, not the bucket's 5000 (%lld)",
       (long long)q);

    co_lat_add(&l, t + 30 * SEC, 7);   /* another second, (0, 10] */
    co_lat_read(&l, t + 30 * SEC, 0.0, &q, &mx, &n);
    ok(n == 101 && q == 10 && mx == 3000,
       "seconds pool over the minute (n %llu, p0 %lld)",
       (unsigned long long)n, (long long)q);
    co_lat_read(&l, t + 60 * SEC, 0.5, &q, &mx, &n);
    ok(n == 1 && mx == 7, "60 s later the first second is gone (n %llu, "
       "max %lld)", (unsigned long long)n, (long long)mx);

    /* t + 60 s falls in t's slot: it must start empty. */
    co_lat_add(&l, t + 60 * SEC, 400000);
    co_lat_read(&l, t + 60 * SEC, 0.99, &q, &mx, &n);
    ok(n == 2 && mx == 400000 && q == 400000,
       "a reused slot starts empty (n %llu, p99 %lld)",
       (unsigned long long)n, (long long)q);

    co_lat_add(&l, t + 61 * SEC, 9000LL * SEC);   /* past the last bound */
    co_lat_read(&l, t + 61 * SEC, 1.0, &q, &mx, &n);
    ok(q == 9000LL * SEC && mx == q, "a value past 1000 s: the last bucket, "
       "read as the maximum");
    return tap_done();
}
