/* vd_metric.h -- the metrics a verdict is judged on
 * (shared/spec/verdict-rule.md "Other metrics"; docs/verdict.md
 * "Metrics"): wall time (the seed's, the default), CPU time and peak
 * resident memory. The rule is the same for each (vd_compare on the
 * metric's per-run values, with the metric's floor); this module names
 * them and makes a metric's floor from its calibration values. Pure
 * computation: nothing here allocates beyond the call, prints or exits.
 */
#ifndef VD_METRIC_H
#define VD_METRIC_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    VD_METRIC_WALL = 0,     /* wall time of the run, µs */
    VD_METRIC_CPU,          /* CPU time of the run's processes, µs */
    VD_METRIC_PEAK_RSS,     /* largest peak RSS of one process, KiB */
    VD_METRIC_COUNT
} vd_metric_t;

/* Where a run's CPU time came from. */
typedef enum {
    VD_CPU_TASK_CLOCK = 0,  /* perf's task clock of the process tree */
    VD_CPU_RUSAGE,          /* ru_utime + ru_stime of the waited child */
    VD_CPU_SOURCE_COUNT
} vd_cpu_source_t;

/* Fewest calibration values a metric's floor is measured from; fewer:
 * the metric's resolution, marked default (as wall time's floor). */
#define VD_METRIC_FLOOR_MIN 100
/* peak_rss's resolution: one page. */
#define VD_PEAK_RSS_RESOLUTION_KIB 4.0

/* "wall", "cpu", "peak_rss"; "?" out of range. */
const char *vd_metric_name(vd_metric_t m);
/* 0 with *m for one of those names, -1 otherwise. */
int vd_metric_parse(const char *s, vd_metric_t *m);
/* The unit its values are in: "us" or "KiB". */
const char *vd_metric_unit(vd_metric_t m);
/* "task_clock", "rusage". */
const char *vd_cpu_source_name(vd_cpu_source_t s);

/* The smallest difference metric m can show: 1 µs for wall and for cpu
 * from the task clock, one clock tick (clk_tck ticks a second) for cpu
 * from rusage, 4 KiB for peak_rss. */
double vd_metric_resolution(vd_metric_t m, vd_cpu_source_t src,
                            long clk_tck);

/* The floor of metric m from its calibration values cal[0..n) (each
 * finite, >= 0): q(0.9) - q(0.1), at least resolution; with fewer than
 * VD_METRIC_FLOOR_MIN values, resolution and *is_default. VD_OK, or
 * VD_ERR with err (a bad value, too many, out of memory). */
int vd_metric_floor(const double *cal, size_t n, double resolution,
                    double *floor, bool *is_default, char *err,
                    size_t errlen);

#endif
