/* ag_topup.h -- the daemon's calibration: small batches of no-op runs
 * taken while the agent is idle and the machine is quiet, under the
 * machine lock (docs/agent.md "Calibration").
 *
 * A daemon that calibrated 100 runs at start measured its start: the
 * other agents of the machine calibrating, the collector and its
 * PostgreSQL starting. Every start added 100 such runs to the host's
 * pool, and the floor came out 9 times that of a local run on the same
 * machine (docs/performance.md "The daemon's floor"). Here the first
 * batch waits AG_TOPUP_SETTLE_MS after start; each batch holds the
 * machine lock, looks AG_LOAD_MIN_WINDOW_MS at what the rest of the
 * machine uses (ag_load) and measures only below AG_LOAD_QUIET_CORES,
 * after AG_TOPUP_WARMUP runs it does not keep.
 * A machine that stays busy for AG_TOPUP_PATIENCE_MS is measured anyway
 * and the batch says busy, so that a host always gets a floor. Batches
 * come every AG_TOPUP_FAST_MS until AG_TOPUP_FILL quiet runs were taken
 * since the start (the collector's floor pools quiet runs alone once it
 * has that many), then every `every_s` seconds.
 *
 * Library code: nothing here prints or exits.
 */
#ifndef AG_TOPUP_H
#define AG_TOPUP_H

#include "ag_machine.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AG_TOPUP_DONE    0    /* a batch was measured */
#define AG_TOPUP_LATER   1    /* not now (lock held, machine busy) */
#define AG_TOPUP_ERR    -1

#define AG_TOPUP_BATCH         20      /* runs a batch: ~25 ms here */
/* Runs before them, not kept: after the look the CPU was idle, and the
 * first runs are slow while it wakes (here the first run's median was
 * 2.1 ms, the fifth's 1.4, the tenth's and later 1.1-1.2; the per-round
 * runs of a job come after its runs, warm). */
#define AG_TOPUP_WARMUP         10
#define AG_TOPUP_SETTLE_MS     2000    /* none sooner after start */
/* Quiet runs since start: fast until then. The collector's floor needs
 * 100, but q90 - q10 of 100 runs moved by a third between two readings
 * on one quiet VM; 200 halve the first pool's spread for 5 s more. */
#define AG_TOPUP_FILL          200
#define AG_TOPUP_FAST_MS       1000
#define AG_TOPUP_RETRY_MS      1000    /* lock held or machine busy */
#define AG_TOPUP_PATIENCE_MS   10000   /* then measure anyway, busy */
#define AG_TOPUP_EVERY_DEFAULT 60      /* seconds, once filled */
#define AG_TOPUP_EVERY_MAX     86400

typedef struct {
    unsigned every_s;          /* 0: no batches at all */
    int64_t next_ms;           /* monotonic ms of the next try */
    int64_t unquiet_since_ms;  /* first busy look of this batch, or 0 */
    size_t quiet_runs;         /* taken quiet since the start */
} ag_topup_t;

typedef struct {
    double wall_us[AG_TOPUP_BATCH];
    /* The other metrics' values of the same runs (ag_cal_batch_t's). */
    double cpu_us[AG_TOPUP_BATCH];
    double task_clock_us[AG_TOPUP_BATCH];
    double peak_rss_kb[AG_TOPUP_BATCH];
    size_t n;
    int64_t from_us, to_us;    /* unix us: first run's start, last's end */
    double load;               /* others' cores, the look and the batch */
    bool busy;                 /* load >= AG_LOAD_QUIET_CORES */
} ag_topup_batch_t;

/* Start the schedule: the first try AG_TOPUP_SETTLE_MS after now_ms. */
void ag_topup_init(ag_topup_t *t, unsigned every_s, int64_t now_ms);

/* Monotonic ms of the next try; INT64_MAX when every_s is 0. */
int64_t ag_topup_next_ms(const ag_topup_t *t);

/* A job just ended: no batch sooner than AG_TOPUP_SETTLE_MS from now_ms
 * (the machine is still warm from it, and the machine's other agents
 * may have a job waiting for the lock). */
void ag_topup_postpone(ag_topup_t *t, int64_t now_ms);

/* Try a batch now (the caller is idle): take the machine lock without
 * waiting, look at the machine, run AG_TOPUP_BATCH no-op runs of NOOP
 * through ag_spawn, release the lock. AG_TOPUP_DONE with *b; AG_TOPUP_LATER
 * when another agent holds the lock, the machine is busy (within the
 * patience) or *stop was set; AG_TOPUP_ERR with err (a run failed). */
int ag_topup_try(ag_topup_t *t, ag_machine_t *m, const char *noop,
                 const _Atomic int *stop, int64_t now_ms,
                 ag_topup_batch_t *b, char *err, size_t errlen);

#endif
