/* vd_metric.c -- the metrics a verdict is judged on (vd_metric.h). */
#include "vd_metric.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vd_name.h"
#include "vd_verdict.h"

static const char *const s_names[VD_METRIC_COUNT] = {
    [VD_METRIC_WALL] = "wall", [VD_METRIC_CPU] = "cpu",
    [VD_METRIC_PEAK_RSS] = "peak_rss",
};
static const char *const s_sources[VD_CPU_SOURCE_COUNT] = {
    [VD_CPU_TASK_CLOCK] = "task_clock", [VD_CPU_RUSAGE] = "rusage",
};

VD_NAME_FN(vd_metric_name, vd_metric_t, s_names, VD_METRIC_COUNT)
VD_PARSE_FN(vd_metric_parse, vd_metric_t, s_names, VD_METRIC_COUNT)
VD_NAME_FN(vd_cpu_source_name, vd_cpu_source_t, s_sources,
           VD_CPU_SOURCE_COUNT)

const char *
vd_metric_unit(vd_metric_t m)
{
    return m == VD_METRIC_PEAK_RSS ? "KiB" : "us";
}

double
vd_metric_resolution(vd_metric_t m, vd_cpu_source_t src, long clk_tck)
{
    if (m == VD_METRIC_PEAK_RSS)
        return VD_PEAK_RSS_RESOLUTION_KIB;
    if (m == VD_METRIC_CPU && src == VD_CPU_RUSAGE && clk_tck > 0)
        return 1e6 / (double)clk_tck;
    return 1.0;
}

static int
s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int
vd_metric_floor(const double *cal, size_t n, double resolution,
                double *floor, bool *is_default, char *err, size_t errlen)
{
    if (n > VD_MAX_SAMPLES) {
        vd_errf(err, errlen, "%zu calibration values, more than the limit "
                "of %u", n, VD_MAX_SAMPLES);
        return VD_ERR;
    }
    /* A CPU time or a peak RSS may be 0 (a no-op that ran under one
     * tick); never negative or not a number. */
    for (size_t i = 0; i < n; i++)
        if (!isfinite(cal[i]) || cal[i] < 0) {
            vd_errf(err, errlen, "calibration value %zu is %g: values must "
                    "be finite and >= 0", i + 1, cal[i]);
            return VD_ERR;
        }
    *floor = resolution;
    *is_default = n < VD_METRIC_FLOOR_MIN;
    if (*is_default)
        return VD_OK;
    double *s = malloc(n * sizeof *s);
    if (!s) {
        vd_errf(err, errlen, "out of memory for %zu values", n);
        return VD_ERR;
    }
    memcpy(s, cal, n * sizeof *s);
    qsort(s, n, sizeof *s, s_cmp);
    double spread = vd_quantile_sorted(s, n, 0.9) -
                    vd_quantile_sorted(s, n, 0.1);
    free(s);
    if (spread > resolution)
        *floor = spread;
    return VD_OK;
}
