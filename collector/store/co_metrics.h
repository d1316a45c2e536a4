/* co_metrics.h -- the other metrics at the writer: CPU time and peak
 * RSS (shared/spec/verdict-rule.md "Other metrics"; docs/collector.md
 * "Metrics").
 *
 * A host's floor of a metric pools the same calibration window as its
 * wall floor (its newest `window` host_calibration rows taken up to the
 * run's end), using the rows that have the metric's value: the quiet
 * ones when at least VD_FLOOR_MIN_SAMPLES of them are, else all of them.
 * A run's values of a metric are its MEASURED samples' (cpu: the task
 * clock when every measured sample of the run counted it, else rusage's
 * user + sys, for every arm alike; peak_rss: maxrss_kb).
 *
 * Tables: host_calibration and samples (read), host_floors (written).
 * Status codes and the handle are co_db's; called on the writer thread,
 * inside the caller's transaction.
 */
#ifndef CO_METRICS_H
#define CO_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co_db.h"
#include "vd_metric.h"

/* The clock tick rusage's CPU time is counted in: Linux's USER_HZ,
 * which sysconf(_SC_CLK_TCK) gives on every Linux agent. */
#define CO_METRICS_CLK_TCK 100

/* One metric's floor for a host. */
typedef struct {
    vd_metric_t metric;
    vd_cpu_source_t source;   /* cpu's; VD_CPU_RUSAGE for peak_rss */
    double floor;             /* in the metric's unit */
    double resolution;
    bool is_default;          /* fewer than VD_METRIC_FLOOR_MIN values */
    int samples;              /* values pooled */
    bool quiet;               /* quiet runs alone */
} co_metrics_floor_t;

/* Every floor one window gives: cpu from each source, and peak_rss. */
typedef struct {
    co_metrics_floor_t cpu[VD_CPU_SOURCE_COUNT];
    co_metrics_floor_t peak_rss;
} co_metrics_floors_t;

/* The host's floors from its window of `window` rows taken up to
 * until_us. CO_DB_OK or a co_db code with err. */
int co_metrics_floors(co_db_t *db, int64_t host_id, int64_t until_us,
                      int window, co_metrics_floors_t *out, char *err,
                      size_t errlen);

/* Keep f as the host's current floor of its metric (host_floors),
 * unless the one kept was computed for a later window end (at_us). */
int co_metrics_floor_save(co_db_t *db, int64_t host_id,
                          const co_metrics_floor_t *f, int64_t at_us,
                          char *err, size_t errlen);

/* After a Calibration: the host's cpu floor (from the task clock when
 * the window has as many task-clock values as rusage ones, else from
 * rusage) and peak_rss floor, kept as co_metrics_floor_save keeps them. */
int co_metrics_refresh(co_db_t *db, int64_t host_id, int64_t until_us,
                       int window, char *err, size_t errlen);

/* A run's MEASURED samples' other metrics, in the stored order of each
 * arm (arms ascending). Owned arrays: co_metrics_run_free. */
typedef struct {
    size_t *arm;
    double *cpu_us;           /* user + sys */
    double *task_clock_us;    /* 0: not counted */
    double *peak_rss_kb;      /* 0: none */
    size_t n;
} co_metrics_run_t;

/* Read them for run runid (runs.id as text) whose samples start at or
 * after started_at_us less a day (partition pruning; read again without
 * the bound when that finds fewer than measured rows). */
int co_metrics_run_read(co_db_t *db, const char *runid,
                        int64_t started_at_us, size_t measured,
                        co_metrics_run_t *out, char *err, size_t errlen);
void co_metrics_run_free(co_metrics_run_t *r);

/* cpu's source for the run: the task clock when every sample has one. */
vd_cpu_source_t co_metrics_cpu_source(const co_metrics_run_t *r);

/* Arm arm's values of metric m (cpu from src) into out (r->n slots), in
 * order; their count. A sample without the metric's value is left out
 * (never counted as 0). */
size_t co_metrics_arm_values(const co_metrics_run_t *r, size_t arm,
                             vd_metric_t m, vd_cpu_source_t src,
                             double *out);

#endif
