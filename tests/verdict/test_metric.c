/* test_metric.c -- the metrics' names and floors (vd_metric.h;
 * shared/spec/verdict-rule.md "Other metrics"). */
#include "vd_metric.h"
#include "vd_verdict.h"
#include "../tap.h"

#include <stdio.h>
#include <string.h>

int
main(void)
{
    char err[256];
    vd_metric_t m = VD_METRIC_COUNT;
    double floor = -1, cal[200];
    bool def = false;

    ok(vd_metric_parse("peak_rss", &m) == 0 && m == VD_METRIC_PEAK_RSS,
       "peak_rss parses");
    ok(vd_metric_parse("cpu", &m) == 0 && m == VD_METRIC_CPU &&
       vd_metric_parse("wall", &m) == 0 && m == VD_METRIC_WALL,
       "cpu and wall parse");
    m = VD_METRIC_CPU;
    ok(vd_metric_parse("rss", &m) == -1 && m == VD_METRIC_CPU &&
       vd_metric_parse(NULL, &m) == -1, "rss and NULL do not, untouched");
    ok_str(vd_metric_name(VD_METRIC_PEAK_RSS), "peak_rss", "its name");
    ok_str(vd_metric_name((vd_metric_t)7), "?", "out of range: ?");
    ok_str(vd_metric_unit(VD_METRIC_PEAK_RSS), "KiB", "peak_rss in KiB");
    ok_str(vd_metric_unit(VD_METRIC_CPU), "us", "cpu in us");
    ok_str(vd_cpu_source_name(VD_CPU_RUSAGE), "rusage", "a cpu source");

    ok(vd_metric_resolution(VD_METRIC_CPU, VD_CPU_RUSAGE, 100) == 10000.0,
       "cpu from rusage: one tick of 100 Hz is 10 ms");
    ok(vd_metric_resolution(VD_METRIC_CPU, VD_CPU_TASK_CLOCK, 100) == 1.0,
       "cpu from the task clock: 1 us");
    ok(vd_metric_resolution(VD_METRIC_PEAK_RSS, VD_CPU_RUSAGE, 100) == 4.0,
       "peak_rss: 4 KiB");

    /* 200 no-op peaks of 1000..1199 KiB: q90 - q10 = 179.1 - 19.9. */
    for (int i = 0; i < 200; i++)
        cal[i] = 1000.0 + i;
    ok(vd_metric_floor(cal, 200, 4.0, &floor, &def, err, sizeof err) ==
       VD_OK && !def && floor > 159.0 && floor < 160.0,
       "200 values: q90 - q10 (%g)", floor);
    /* All alike: the spread is 0, the floor the resolution. */
    for (int i = 0; i < 200; i++)
        cal[i] = 1024.0;
    ok(vd_metric_floor(cal, 200, 4.0, &floor, &def, err, sizeof err) ==
       VD_OK && !def && floor == 4.0, "no spread: at least the resolution "
       "(%g)", floor);
    ok(vd_metric_floor(cal, 99, 10000.0, &floor, &def, err, sizeof err) ==
       VD_OK && def && floor == 10000.0, "99 values: the resolution, "
       "default");
    cal[3] = 0.0;
    ok(vd_metric_floor(cal, 150, 1.0, &floor, &def, err, sizeof err) ==
       VD_OK, "a zero (a no-op under one tick) is a value");
    cal[5] = -1.0;
    ok(vd_metric_floor(cal, 150, 1.0, &floor, &def, err, sizeof err) ==
       VD_ERR, "a negative one is refused");
    ok_str(err, "calibration value 6 is -1: values must be finite and >= 0",
           "and says which");
    return tap_done();
}
