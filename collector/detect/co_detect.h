/* co_detect.h -- change points found as runs are stored
 * (docs/regressions.md).
 *
 * After the writer commits a RunEnd it hands the run's id here. A
 * thread with its own database connection then looks at each series the
 * run belongs to -- (benchmark, subject arm, other arm, host, the job's
 * variables), metrics 'ratio', 'subject' and 'other' -- reads the
 * series' newest points (run_summaries, never samples), runs
 * vd_change_find on them, and stores what it finds in change_points with
 * its annotations (environment, arm definition and versions changes
 * between the runs on each side). Incremental: one series' window per
 * stored run, never a recompute of history.
 *
 * The writer never waits for it: co_detect_push drops the id when the
 * queue is full (counted); the series is looked at again with its next
 * run. co_detect_series is the work itself, for tests and benchmarks.
 */
#ifndef CO_DETECT_H
#define CO_DETECT_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "co_conn.h"
#include "vd_change.h"

/* Runs waiting at most; points read per series (the window). */
#define CO_DETECT_QUEUE 4096
#define CO_DETECT_WINDOW_MAX 1000
/* Runs at either end of a window where it cannot place a change (the
 * minimum segment, vd_change_params_default): a stored change point
 * there is neither confirmed nor superseded by it. */
#define CO_DETECT_EDGE 3

typedef struct co_detect co_detect_t;

typedef struct {
    uint64_t runs;        /* runs looked at */
    uint64_t found;       /* change points stored */
    uint64_t dropped;     /* runs not looked at: the queue was full */
    uint64_t failed;      /* database errors (logged) */
} co_detect_counters_t;

/* The thread's and its server process's nice value when the database
 * is the collector's private cluster: detection is the least urgent
 * work there is (query workers run at 10). */
#define CO_DETECT_NICE 15

/* Connect to conninfo (copied) and start the thread; parity is the
 * verdict rule's parity; renice: lower the thread's and its server
 * process's priority (the private cluster). Caller owns the result;
 * NULL with err. */
co_detect_t *co_detect_new(const char *conninfo, double parity, bool renice,
                           char *err, size_t errlen);

/* Look at run's series soon. Never blocks. */
void co_detect_push(co_detect_t *d, int64_t run);

void co_detect_counters(co_detect_t *d, co_detect_counters_t *out);

/* Stop the thread (runs still queued are dropped), close, free; NULL is
 * fine. */
void co_detect_destroy(co_detect_t **d);

/* The session of a connection co_detect_run uses (co_conn_opts_t): a
 * statement timeout (10 s: it must never hold locks long), generic plans
 * for its prepared statements (planning the series query costs 40 times
 * running it), and commits that do not wait for the WAL's flush: what it
 * writes is the detect_windows cache (read in full again when lost) and
 * change points, which a crash within the WAL writer's delay would lose
 * until the series' next run finds the step again (it is still in the
 * window). Waiting for fsync beside a busy disk was most of the p99 of
 * co_detect_run once it kept windows. */
#define CO_DETECT_SETTINGS "SET plan_cache_mode = force_generic_plan; " \
    "SET synchronous_commit = off"
#define CO_DETECT_TIMEOUT_MS 10000

/* Where a result holds one arm's summary: the columns PREFIXmedian,
 * PREFIXmin, PREFIXq25, PREFIXq75, PREFIXmax and PREFIXn (-1: absent),
 * resolved once per result. */
typedef struct {
    int median, min, q25, q75, max, n;
} co_detect_cols_t;
void co_detect_cols(const PGresult *r, const char *prefix,
                    co_detect_cols_t *c);
/* One point of a series from row of r, at the columns c. */
void co_detect_point(const PGresult *r, int row, const co_detect_cols_t *c,
                     vd_point_t *pt);

/* The work for one run on connection c: every series it is in. *found
 * gets the change points stored. Returns 0, or -1 with err. */
int co_detect_run(co_conn_t *c, int64_t run, const vd_change_params_t *params,
                  int *found, char *err, size_t errlen);

#endif
