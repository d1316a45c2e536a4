/* ag_topup.c -- see ag_topup.h. */
#include "ag_topup.h"

#include "ag_counters.h"
#include "ag_load.h"
#include "ag_spawn.h"
#include "pw_clock.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void
ag_topup_init(ag_topup_t *t, unsigned every_s, int64_t now_ms)
{
    memset(t, 0, sizeof *t);
    t->every_s = every_s;
    t->next_ms = now_ms + AG_TOPUP_SETTLE_MS;
}

int64_t
ag_topup_next_ms(const ag_topup_t *t)
{
    return t->every_s ? t->next_ms : INT64_MAX;
}

void
ag_topup_postpone(ag_topup_t *t, int64_t now_ms)
{
    if (t->next_ms < now_ms + AG_TOPUP_SETTLE_MS)
        t->next_ms = now_ms + AG_TOPUP_SETTLE_MS;
}

/* The batch's runs, the lock held. */
static int
s_batch(const char *noop, const _Atomic int *stop, ag_topup_batch_t *b,
        char *err, size_t errlen)
{
    const char *argv[] = { noop, NULL };
    /* Counted as a job's runs are, so that cpu's floor has the no-op's
     * task clock; made on this thread, as the counters must be. */
    ag_counters_t *ctr = ag_counters_new();
    int rc = AG_TOPUP_DONE;
    b->n = 0;
    for (int i = 0; i < AG_TOPUP_WARMUP + AG_TOPUP_BATCH; i++) {
        ag_spawn_req_t req;
        ag_spawn_result_t res;
        if (stop && *stop) {
            rc = AG_TOPUP_LATER;
            break;
        }
        ag_spawn_req_init(&req);
        req.argv = argv;
        req.timeout_us = 10e6;
        req.counters = ctr;
        if (ag_spawn_run(&req, &res, err, errlen) != AG_SPAWN_OK) {
            rc = AG_TOPUP_ERR;
            break;
        }
        if (i < AG_TOPUP_WARMUP)
            continue;
        if (b->n == 0)
            b->from_us = res.start_unix_us;
        b->to_us = res.start_unix_us + (int64_t)res.wall_us;
        b->cpu_us[b->n] = res.user_us + res.sys_us;
        b->task_clock_us[b->n] = res.counters[AG_CTR_TASK_CLOCK] > 0
            ? (double)res.counters[AG_CTR_TASK_CLOCK] / 1000.0 : 0;
        b->peak_rss_kb[b->n] = (double)res.maxrss_kb;
        b->wall_us[b->n++] = res.wall_us;
    }
    ag_counters_destroy(&ctr);
    return rc;
}

int
ag_topup_try(ag_topup_t *t, ag_machine_t *m, const char *noop,
             const _Atomic int *stop, int64_t now_ms,
             ag_topup_batch_t *b, char *err, size_t errlen)
{
    ag_load_snap_t s0, s1;
    memset(b, 0, sizeof *b);
    t->next_ms = now_ms + AG_TOPUP_RETRY_MS;
    int rc = ag_machine_take(m, false, stop, NULL, err, errlen);
    if (rc == AG_MACHINE_BUSY)
        return AG_TOPUP_LATER;
    if (rc != AG_MACHINE_OK)
        return AG_TOPUP_ERR;
    if (ag_load_snap(&s0, err, errlen) != AG_LOAD_OK) {
        rc = AG_TOPUP_ERR;
        goto out;
    }
    struct timespec ts = { 0, AG_LOAD_MIN_WINDOW_MS * 1000000L };
    nanosleep(&ts, NULL);
    if (ag_load_snap(&s1, err, errlen) != AG_LOAD_OK) {
        rc = AG_TOPUP_ERR;
        goto out;
    }
    double look = ag_load_others(&s0, &s1);
    int64_t now = pw_clock_mono_ms();
    if (look >= AG_LOAD_QUIET_CORES) {
        if (!t->unquiet_since_ms)
            t->unquiet_since_ms = now;
        if (now - t->unquiet_since_ms < AG_TOPUP_PATIENCE_MS) {
            rc = AG_TOPUP_LATER;
            goto out;
        }
    }
    rc = s_batch(noop, stop, b, err, errlen);
    if (rc != AG_TOPUP_DONE)
        goto out;
    if (ag_load_snap(&s1, err, errlen) != AG_LOAD_OK) {
        rc = AG_TOPUP_ERR;
        goto out;
    }
    b->load = ag_load_others(&s0, &s1);
    b->busy = b->load >= AG_LOAD_QUIET_CORES;
    if (!b->busy)
        t->quiet_runs += b->n;
    t->unquiet_since_ms = 0;
    t->next_ms = pw_clock_mono_ms()
               + (t->quiet_runs < AG_TOPUP_FILL ? AG_TOPUP_FAST_MS
                                                : (int64_t)t->every_s * 1000);
out:
    ag_machine_release(m);
    return rc;
}
