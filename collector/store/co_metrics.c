/* co_metrics.c -- the other metrics' floors and values; see
 * co_metrics.h. */
#include "co_metrics.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "co_kinds.h"
#include "pw_err.h"
#include "vd_verdict.h"

/* How far before its RunStart a run's samples may start and still be
 * found by the pruned read (as co_verdicts' S_PRUNE_MARGIN_US). */
#define S_PRUNE_MARGIN_US (24LL * 3600 * 1000000)

enum { S_WINDOW, S_SAVE, S_RUN_PRUNED, S_RUN };
static const co_stmt_t s_sql[] = {
    [S_WINDOW] = { "metrics.window",
        "SELECT quiet, cpu_us, task_clock_us, peak_rss_kb FROM "
        "host_calibration WHERE host_id = $1 AND taken_at_us <= $2 ORDER BY "
        "taken_at_us DESC LIMIT $3",
        3, PGRES_TUPLES_OK, false },
    [S_SAVE] = { "metrics.save",
        "INSERT INTO host_floors (host_id, metric, source, floor, "
        "is_default, samples, resolution, at_us) VALUES ($1, $2, $3, $4, $5, "
        "$6, $7, $8) ON CONFLICT (host_id, metric) DO UPDATE SET source = "
        "EXCLUDED.source, floor = EXCLUDED.floor, is_default = "
        "EXCLUDED.is_default, samples = EXCLUDED.samples, resolution = "
        "EXCLUDED.resolution, at_us = EXCLUDED.at_us WHERE host_floors.at_us "
        "<= EXCLUDED.at_us",
        8, PGRES_COMMAND_OK, false },
    [S_RUN_PRUNED] = { "metrics.run_pruned",
        "SELECT arm, user_us + sys_us AS cpu_us, COALESCE(task_clock_ns, 0) "
        "AS task_clock_ns, maxrss_kb FROM samples WHERE run = $1 AND kind = " CO_SQL_MEASURED " AND "
        "start_unix_us >= $2 ORDER BY arm, batch_seq, idx",
        2, PGRES_TUPLES_OK, false },
    [S_RUN] = { "metrics.run",
        "SELECT arm, user_us + sys_us AS cpu_us, COALESCE(task_clock_ns, 0) "
        "AS task_clock_ns, maxrss_kb FROM samples WHERE run = $1 AND kind = " CO_SQL_MEASURED " ORDER BY arm, "
        "batch_seq, idx",
        1, PGRES_TUPLES_OK, false },
};

/* One floor from the column named name of the window's rows (NULLs
 * skipped). */
static void
s_floor(PGresult *r, const char *name, vd_metric_t m, vd_cpu_source_t src,
        double *buf, co_metrics_floor_t *f)
{
    int rows = PQntuples(r), quiet = 0, col = co_col(r, name),
        i_quiet = co_col(r, "quiet");
    for (int i = 0; i < rows; i++)
        quiet += !co_val_null(r, i, col) && co_val_bool(r, i, i_quiet);
    memset(f, 0, sizeof *f);
    f->metric = m;
    f->source = src;
    f->quiet = quiet >= VD_FLOOR_MIN_SAMPLES;
    f->resolution = vd_metric_resolution(m, src, CO_METRICS_CLK_TCK);
    size_t n = 0;
    for (int i = 0; i < rows; i++) {
        if (co_val_null(r, i, col) || (f->quiet && !co_val_bool(r, i, i_quiet)))
            continue;
        double v = co_val_f64(r, i, col);
        if (isfinite(v) && v >= 0)
            buf[n++] = v;
    }
    char verr[256];
    if (vd_metric_floor(buf, n, f->resolution, &f->floor, &f->is_default,
                        verr, sizeof verr) != VD_OK) {
        /* A stored bad value must not block the run: the resolution. */
        f->floor = f->resolution;
        f->is_default = true;
    }
    f->samples = (int)n;
}

int
co_metrics_floors(co_db_t *db, int64_t host_id, int64_t until_us,
                  int window, co_metrics_floors_t *out, char *err,
                  size_t errlen)
{
    int rc;
    char host[24], until[24], lim[16];
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(until, sizeof until, "%" PRId64, until_us);
    snprintf(lim, sizeof lim, "%d", window);
    const char *p[] = { host, until, lim };
    PGresult *r = co_db_run(db, &s_sql[S_WINDOW], p, &rc, err, errlen);
    if (!r)
        return rc;
    int rows = PQntuples(r);
    double *buf = malloc((size_t)(rows ? rows : 1) * sizeof *buf);
    if (!buf) {
        PQclear(r);
        pw_err_line(err, errlen, "metric floors: out of memory");
        return CO_DB_FAIL;
    }
    s_floor(r, "task_clock_us", VD_METRIC_CPU, VD_CPU_TASK_CLOCK, buf,
            &out->cpu[VD_CPU_TASK_CLOCK]);
    s_floor(r, "cpu_us", VD_METRIC_CPU, VD_CPU_RUSAGE, buf,
            &out->cpu[VD_CPU_RUSAGE]);
    s_floor(r, "peak_rss_kb", VD_METRIC_PEAK_RSS, VD_CPU_RUSAGE, buf,
            &out->peak_rss);
    free(buf);
    PQclear(r);
    return CO_DB_OK;
}

int
co_metrics_floor_save(co_db_t *db, int64_t host_id,
                      const co_metrics_floor_t *f, int64_t at_us, char *err,
                      size_t errlen)
{
    int rc;
    char host[24], floor[32], samples[16], res[32], at[24];
    snprintf(host, sizeof host, "%" PRId64, host_id);
    co_db_num(floor, sizeof floor, f->floor);
    snprintf(samples, sizeof samples, "%d", f->samples);
    co_db_num(res, sizeof res, f->resolution);
    snprintf(at, sizeof at, "%" PRId64, at_us);
    const char *p[] = { host, vd_metric_name(f->metric),
                        f->metric == VD_METRIC_CPU
                            ? vd_cpu_source_name(f->source) : NULL,
                        floor, f->is_default ? "t" : "f", samples, res, at };
    PGresult *r = co_db_run(db, &s_sql[S_SAVE], p, &rc, err, errlen);
    PQclear(r);
    return rc;
}

int
co_metrics_refresh(co_db_t *db, int64_t host_id, int64_t until_us,
                   int window, char *err, size_t errlen)
{
    co_metrics_floors_t fl;
    int rc = co_metrics_floors(db, host_id, until_us, window, &fl, err,
                               errlen);
    if (rc != CO_DB_OK)
        return rc;
    const co_metrics_floor_t *cpu =
        fl.cpu[VD_CPU_TASK_CLOCK].samples >= fl.cpu[VD_CPU_RUSAGE].samples
        ? &fl.cpu[VD_CPU_TASK_CLOCK] : &fl.cpu[VD_CPU_RUSAGE];
    rc = co_metrics_floor_save(db, host_id, cpu, until_us, err, errlen);
    if (rc == CO_DB_OK)
        rc = co_metrics_floor_save(db, host_id, &fl.peak_rss, until_us, err,
                                   errlen);
    return rc;
}

void
co_metrics_run_free(co_metrics_run_t *r)
{
    free(r->arm);
    free(r->cpu_us);
    free(r->task_clock_us);
    free(r->peak_rss_kb);
    memset(r, 0, sizeof *r);
}

int
co_metrics_run_read(co_db_t *db, const char *runid, int64_t started_at_us,
                    size_t measured, co_metrics_run_t *out, char *err,
                    size_t errlen)
{
    int rc;
    char lo[24];
    int64_t bound = started_at_us > INT64_MIN + S_PRUNE_MARGIN_US
                    ? started_at_us - S_PRUNE_MARGIN_US : INT64_MIN;
    snprintf(lo, sizeof lo, "%" PRId64, bound);
    const char *p[] = { runid, lo };
    memset(out, 0, sizeof *out);
    PGresult *r = co_db_run(db, &s_sql[S_RUN_PRUNED], p, &rc, err, errlen);
    if (r && (size_t)PQntuples(r) < measured) {
        PQclear(r);
        r = co_db_run(db, &s_sql[S_RUN], p, &rc, err, errlen);
    }
    if (!r)
        return rc;
    size_t n = (size_t)PQntuples(r), k = n ? n : 1;
    out->arm = malloc(k * sizeof *out->arm);
    out->cpu_us = malloc(k * sizeof *out->cpu_us);
    out->task_clock_us = malloc(k * sizeof *out->task_clock_us);
    out->peak_rss_kb = malloc(k * sizeof *out->peak_rss_kb);
    if (!out->arm || !out->cpu_us || !out->task_clock_us ||
        !out->peak_rss_kb) {
        PQclear(r);
        co_metrics_run_free(out);
        pw_err_line(err, errlen, "metrics: out of memory for %zu samples",
                    n);
        return CO_DB_FAIL;
    }
    int i_arm = co_col(r, "arm"), i_cpu = co_col(r, "cpu_us"),
        i_tc = co_col(r, "task_clock_ns"), i_rss = co_col(r, "maxrss_kb");
    for (size_t i = 0; i < n; i++) {
        out->arm[i] = (size_t)co_val_i64(r, (int)i, i_arm);
        out->cpu_us[i] = co_val_f64(r, (int)i, i_cpu);
        out->task_clock_us[i] = co_val_f64(r, (int)i, i_tc) / 1000.0;
        out->peak_rss_kb[i] = co_val_f64(r, (int)i, i_rss);
    }
    out->n = n;
    PQclear(r);
    return CO_DB_OK;
}

vd_cpu_source_t
co_metrics_cpu_source(const co_metrics_run_t *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (!(r->task_clock_us[i] > 0))
            return VD_CPU_RUSAGE;
    return r->n ? VD_CPU_TASK_CLOCK : VD_CPU_RUSAGE;
}

size_t
co_metrics_arm_values(const co_metrics_run_t *r, size_t arm, vd_metric_t m,
                      vd_cpu_source_t src, double *out)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->arm[i] != arm)
            continue;
        double v = m == VD_METRIC_PEAK_RSS ? r->peak_rss_kb[i]
                 : src == VD_CPU_TASK_CLOCK ? r->task_clock_us[i]
                 : r->cpu_us[i];
        bool have = m == VD_METRIC_CPU && src == VD_CPU_RUSAGE ? v >= 0
                                                               : v > 0;
        if (have && isfinite(v))
            out[n++] = v;
    }
    return n;
}
