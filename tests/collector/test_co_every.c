/* test_co_every.c -- co_every: the function runs at once, then a period
 * after each call returned (a slow call is never overlapped nor piled up
 * behind), and destroy waits for the call in progress, which sees
 * co_every_stopping and ends early. */
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "co_every.h"
#include "pw_clock.h"
#include "tap.h"

typedef struct {
    atomic_int calls, inside, overlapped;
    atomic_llong first_ms, started_ms;
    int sleep_ms;           /* each call's length */
    atomic_bool saw_stop;
} s_state_t;

static void
s_fn(void *arg, co_every_t *e)
{
    s_state_t *s = arg;
    if (atomic_fetch_add(&s->inside, 1) > 0)
        atomic_fetch_add(&s->overlapped, 1);
    atomic_store(&s->started_ms, pw_clock_mono_ms());
    if (atomic_fetch_add(&s->calls, 1) == 0)
        atomic_store(&s->first_ms, pw_clock_mono_ms());
    for (int t = 0; t < s->sleep_ms / 10; t++) {
        if (co_every_stopping(e)) {
            atomic_store(&s->saw_stop, true);
            break;
        }
        usleep(10000);
    }
    atomic_fetch_sub(&s->inside, 1);
}

int
main(void)
{
    char err[256];
    /* Every 5 s: the first call must come long before the first period
     * ends (a loaded machine may start the thread late). */
    static s_state_t lazy;
    int64_t t0 = pw_clock_mono_ms();
    co_every_t *e = co_every_new("lazy", 5000, s_fn, &lazy, err, sizeof err);
    while (atomic_load(&lazy.calls) == 0 && pw_clock_mono_ms() - t0 < 4000)
        usleep(2000);
    ok(atomic_load(&lazy.calls) == 1 && atomic_load(&lazy.first_ms) - t0
       < 2500, "the first call at once, not a period later (%lld ms)",
       (long long)(atomic_load(&lazy.first_ms) - t0));
    co_every_destroy(&e);

    static s_state_t fast;
    e = co_every_new("fast", 100, s_fn, &fast, err, sizeof err);
    ok(e != NULL, "a thread every 100 ms (%s)", e ? "" : err);
    usleep(550000);
    int n = atomic_load(&fast.calls);
    ok(n >= 2 && n <= 7, "about one call a period: %d in 550 ms", n);
    co_every_destroy(&e);
    ok(e == NULL, "destroy stops, joins and clears");
    int after = atomic_load(&fast.calls);
    usleep(250000);
    ok(atomic_load(&fast.calls) == after, "and no call after it");

    static s_state_t slow = { .sleep_ms = 300 };
    e = co_every_new("slow", 50, s_fn, &slow, err, sizeof err);
    usleep(1000000);
    n = atomic_load(&slow.calls);
    ok(n >= 2 && n <= 3 && atomic_load(&slow.overlapped) == 0,
       "a call of 300 ms every 50 ms: the period counts from its end, "
       "never overlapped (%d calls in 1 s)", n);
    /* Inside a call with most of its 300 ms to go. */
    while (atomic_load(&slow.inside) == 0
           || pw_clock_mono_ms() - atomic_load(&slow.started_ms) > 100)
        usleep(2000);
    t0 = pw_clock_mono_ms();
    co_every_destroy(&e);
    int64_t took = pw_clock_mono_ms() - t0;
    ok(atomic_load(&slow.saw_stop) && took < 250,
       "destroy during a long call: the call sees co_every_stopping and "
       "ends early (%lld ms)", (long long)took);
    co_every_destroy(&e);
    return tap_done();
}
