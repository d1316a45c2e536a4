/* co_verdicts.c -- a run's end, summaries and verdicts; see
 * co_verdicts.h. */
#include "co_verdicts.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "co_cals.h"
#include "co_ingest.h"
#include "co_metrics.h"
#include "pw_buf.h"
#include "pw_clock.h"
#include "pw_err.h"
#include "pw_json.h"
#include "vd_verdict.h"

/* Most bytes of one SQL statement's text built by appending: a run's
 * summaries and verdicts (64 arms), a few kB each. */
#define S_SQL_MAX (1u << 20)

enum { S_SAMPLES_PRUNED, S_SAMPLES, S_READY, S_END };
static const co_stmt_t s_sql[] = {
    [S_SAMPLES_PRUNED] = { "verdicts.samples_pruned",
        "SELECT arm, wall_us, kind, instructions FROM samples WHERE run = $1 "
        "AND start_unix_us >= $2 ORDER BY arm, batch_seq, idx",
        2, PGRES_TUPLES_OK, false },
    [S_SAMPLES] = { "verdicts.samples",
        "SELECT arm, wall_us, kind, instructions FROM samples WHERE run = $1 "
        "ORDER BY arm, batch_seq, idx",
        1, PGRES_TUPLES_OK, false },
    [S_READY] = { "verdicts.ready",
        "SELECT status, started_at_us, (SELECT count(*) FROM batches WHERE "
        "run = $1 AND batch_seq < $2) AS batches, (SELECT "
        "COALESCE(sum(n_samples), 0) FROM batches WHERE run = $1) AS "
        "samples, array_to_string(metrics, ' ') AS metrics FROM runs WHERE "
        "id = $1",
        2, PGRES_TUPLES_OK, true },
    [S_END] = { "verdicts.end",
        "WITH u AS (UPDATE runs SET status = $2, reason = $3, batches = $4, "
        "samples = $5, ended_at_us = $6 WHERE id = $1) SELECT idx, name, "
        "subject FROM arms WHERE run = $1 ORDER BY idx",
        6, PGRES_TUPLES_OK, true },
};

static const char *
s_status_name(Parity__RunStatus s)
{
    switch (s) {
    case PARITY__RUN_STATUS__COMPLETE:   return "complete";
    case PARITY__RUN_STATUS__FAILED:     return "failed";
    case PARITY__RUN_STATUS__INCOMPLETE: return "incomplete";
    case PARITY__RUN_STATUS__CANCELLED:  return "cancelled";
    default:                             return NULL;
    }
}


/* One verdicts row's parameters, as text: the strings the row points
 * at live in the struct. */
#define S_VERDICT_COLS 23
typedef struct {
    char sa[24], oa[24], nsub[24], noth[24], fs[16], diag[16], extra[16];
    char ratio[32], best[32], tol[32], noise[32], btol[32], fl[32], par[32];
    /* The verdict's written form, and the instructions comparison
     * beside it (pw_counter_compare_json: 10 fields and its line). */
    char json[PW_VERDICT_TEXT_MAX + 640];
    char error[256];
    const char *p[S_VERDICT_COLS];
} s_verdict_row_t;

/* ins[0..n) when every run counted its instructions, else NULL. */
static const double *
s_counted(const double *ins, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(ins[i] > 0))
            return NULL;
    return n ? ins : NULL;
}

/* v's written form into w->json (pw_verdict_write, as the library
 * writes it), with the instructions comparison added where both arms
 * counted them (ia, ib; NULL: not counted). False when the verdict did
 * not fit; a comparison that does not fit is left out. */
static bool
s_verdict_json(s_verdict_row_t *w, const vd_verdict_t *v, const double *ia,
               size_t na, const double *ib, size_t nb)
{
    int len = pw_verdict_write(w->json, sizeof w->json, v,
                               PW_VERDICT_SUMMARIES);
    if (len < 2)
        return false;
    json_t *o = pw_counter_compare_json("instructions", ia, na, ib, nb, v);
    char *text = o ? pw_json_dumps(o) : NULL;
    size_t at = (size_t)len - 1;          /* the closing brace */
    if (text && w->json[at] == '}' &&
        at + strlen(text) + 18 < sizeof w->json)
        snprintf(w->json + at, sizeof w->json - at, ",\"instructions\":%s}",
                 text);
    free(text);
    json_decref(o);
    return true;
}

/* Another metric's verdict form: wall time's fields plus "metric" (and
 * cpu's "source"), the spec's written form of other metrics. */
static void
s_metric_json(s_verdict_row_t *w, vd_metric_t m, const char *source,
              int floor_samples, bool floor_default)
{
    size_t len = strlen(w->json);
    if (len < 2 || w->json[len - 1] != '}')
        return;
    snprintf(w->json + len - 1, sizeof w->json - (len - 1),
             ",\"metric\":\"%s\"%s%s%s,\"floor_samples\":%d,"
             "\"floor_default\":%s}", vd_metric_name(m),
             source ? ",\"source\":\"" : "", source ? source : "",
             source ? "\"" : "", floor_samples,
             floor_default ? "true" : "false");
}

static void
s_verdict_row(s_verdict_row_t *w, const char *runid, const char *host,
              size_t subject, size_t other, const char *other_name,
              const double *a, size_t na, const double *b, size_t nb,
              const vd_params_t *vp, int floor_samples, const double *ia,
              const double *ib, vd_metric_t metric, const char *source)
{
    vd_verdict_t v;
    const char *outcome = NULL, *json_p = NULL, *error = NULL;

    snprintf(w->sa, sizeof w->sa, "%zu", subject);
    snprintf(w->oa, sizeof w->oa, "%zu", other);
    snprintf(w->nsub, sizeof w->nsub, "%zu", na);
    snprintf(w->noth, sizeof w->noth, "%zu", nb);
    snprintf(w->fs, sizeof w->fs, "%d", floor_samples);
    co_db_num(w->fl, sizeof w->fl, vp->floor_us);
    co_db_num(w->par, sizeof w->par, vp->parity);
    const char *pr = NULL, *pb = NULL, *pt = NULL, *pn = NULL, *pbt = NULL;
    if (vd_compare(a, na, b, nb, vp, &v, w->error, sizeof w->error)
        == VD_OK) {
        outcome = vd_outcome_name(v.outcome);
        co_db_num(w->ratio, sizeof w->ratio, v.ratio);
        co_db_num(w->best, sizeof w->best, v.best_ratio);
        co_db_num(w->tol, sizeof w->tol, v.tolerance);
        co_db_num(w->noise, sizeof w->noise, v.noise);
        co_db_num(w->btol, sizeof w->btol, v.best_tolerance);
        pr = w->ratio; pb = w->best; pt = w->tol; pn = w->noise;
        pbt = w->btol;
        snprintf(w->diag, sizeof w->diag, "%u", v.diagnostics);
        snprintf(w->extra, sizeof w->extra, "%u", v.extra_runs);
        if (s_verdict_json(w, &v, ia, na, ib, nb)) {
            json_p = w->json;
            if (metric != VD_METRIC_WALL)
                s_metric_json(w, metric, source, floor_samples,
                              vp->floor_is_default);
        }
    } else {
        error = w->error;
        snprintf(w->diag, sizeof w->diag, "0");
        snprintf(w->extra, sizeof w->extra, "0");
    }
    const char *p[S_VERDICT_COLS] = {
        runid, host, w->sa, w->oa, other_name, outcome, pr, pb, pt, pn, pbt,
        w->fl, vp->floor_is_default ? "t" : "f", w->fs, w->par, w->diag,
        w->extra, w->nsub, w->noth, json_p, error, vd_metric_name(metric),
        source };
    memcpy(w->p, p, sizeof p);
}

/* How far before its RunStart's started_at_us a run's samples may start
 * and still be found by the pruned read: the agent's clock stepping back
 * (NTP) during a run. A run whose samples are not all inside is read
 * again without the bound, so the margin only saves time. */
#define S_PRUNE_MARGIN_US (24LL * 3600 * 1000000)


/* A run's MEASURED samples as run_end needs them, grouped by arm in arm
 * order: arm_of[i] is x[i]'s arm, ins[i] its instructions (0: not
 * counted). The three arrays are owned (s_samples_free). */
typedef struct {
    double *x;
    double *ins;
    size_t *arm_of;
    size_t n;
} s_samples_t;

static void
s_samples_free(s_samples_t *s)
{
    free(s->x);
    free(s->ins);
    free(s->arm_of);
    memset(s, 0, sizeof *s);
}

/* Room for n samples in s; false on out of memory (s freed). */
static bool
s_samples_alloc(s_samples_t *s, size_t n)
{
    s->x = malloc((n ? n : 1) * sizeof *s->x);
    s->ins = malloc((n ? n : 1) * sizeof *s->ins);
    s->arm_of = malloc((n ? n : 1) * sizeof *s->arm_of);
    if (s->x && s->ins && s->arm_of)
        return true;
    s_samples_free(s);
    return false;
}

/* s_run_samples from the writer's copy (co_db_set_run_samples): false
 * when it cannot stand for the stored rows. A counting sort by arm keeps
 * each arm's samples in their stored order. */
static bool
s_run_samples_cached(co_db_t *db, long long expected, size_t narms,
                     s_samples_t *out, int64_t *errors)
{
    const co_db_run_cache_t *c = co_db_run_samples(db);
    if (!c || expected < 0 || c->n != (size_t)expected)
        return false;
    size_t *start = calloc(narms + 1, sizeof *start), m = 0;
    if (!start)
        return false;
    for (size_t i = 0; i < c->n; i++) {
        if (c->kind[i] != PARITY__SAMPLE_KIND__MEASURED)
            continue;
        if (c->arm[i] < 0 || (size_t)c->arm[i] >= narms) {
            free(start);
            return false;
        }
        start[c->arm[i] + 1]++;
        m++;
    }
    for (size_t a = 0; a < narms; a++)
        start[a + 1] += start[a];
    if (!s_samples_alloc(out, m)) {
        free(start);
        return false;
    }
    for (size_t i = 0; i < c->n; i++) {
        size_t arm = (size_t)c->arm[i];
        if (c->kind[i] == PARITY__SAMPLE_KIND__ERROR && arm < narms)
            errors[arm]++;
        if (c->kind[i] != PARITY__SAMPLE_KIND__MEASURED)
            continue;
        out->x[start[arm]] = c->wall_us[i];
        out->ins[start[arm]] = c->instructions ? c->instructions[i] : 0;
        out->arm_of[start[arm]++] = arm;
    }
    out->n = m;
    free(start);
    return true;
}

/* The run's samples (s_samples_t) and its ERROR counts per arm (errors
 * has narms slots). Partitions before the run's start are pruned when
 * every sample of its batches (expected) is found that way. */
static int
s_run_samples(co_db_t *db, const char *runid, int64_t started_at_us,
              long long expected, size_t narms, s_samples_t *out,
              int64_t *errors, char *err, size_t errlen)
{
    int rc;
    if (s_run_samples_cached(db, expected, narms, out, errors))
        return CO_DB_OK;
    char lo[24];
    int64_t bound = started_at_us > INT64_MIN + S_PRUNE_MARGIN_US ?
                    started_at_us - S_PRUNE_MARGIN_US : INT64_MIN;
    snprintf(lo, sizeof lo, "%" PRId64, bound);
    const char *p[] = { runid, lo };
    PGresult *r = co_db_run(db, &s_sql[S_SAMPLES_PRUNED], p, &rc, err, errlen);
    if (r && PQntuples(r) != expected) {
        PQclear(r);
        r = co_db_run(db, &s_sql[S_SAMPLES], p, &rc, err, errlen);
    }
    if (!r)
        return rc;
    size_t rows = (size_t)PQntuples(r), k = 0;
    if (!s_samples_alloc(out, rows)) {
        pw_err_line(err, errlen, "run_end: out of memory for %zu samples",
                    rows);
        PQclear(r);
        return CO_DB_FAIL;
    }
    int i_arm = co_col(r, "arm"), i_wall = co_col(r, "wall_us"),
        i_kind = co_col(r, "kind"), i_ins = co_col(r, "instructions");
    for (size_t i = 0; i < rows; i++) {
        int kind = (int)co_val_i64(r, (int)i, i_kind);
        size_t arm = (size_t)co_val_i64(r, (int)i, i_arm);
        if (kind == PARITY__SAMPLE_KIND__ERROR && arm < narms)
            errors[arm]++;
        if (kind != PARITY__SAMPLE_KIND__MEASURED)
            continue;
        out->x[k] = co_val_f64(r, (int)i, i_wall);
        /* NULL (not counted) reads as 0. */
        out->ins[k] = co_val_f64(r, (int)i, i_ins);
        out->arm_of[k++] = arm;
    }
    out->n = k;
    PQclear(r);
    return CO_DB_OK;
}

/* The run's summary of one arm (run_summaries, 006): vd_summarize of its
 * MEASURED samples with wall_us > 0 (x[off..off+len)), NULLs when there
 * are none or too many; errors its ERROR samples. buf has len slots. */
#define S_SUMMARY_COLS 12
typedef struct {
    char a[24], nn[24], ne[24], v[7][32];
    const char *p[S_SUMMARY_COLS];
} s_summary_row_t;

static void
s_summary_row(s_summary_row_t *w, const char *runid, size_t arm,
              const double *x, size_t len, int64_t errors, double *buf,
              vd_metric_t metric)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (x[i] > 0)
            buf[n++] = x[i];
    vd_summary_t sum;
    char verr[128];
    bool have = n > 0 && vd_summarize(buf, n, &sum, verr, sizeof verr) ==
                VD_OK;
    snprintf(w->a, sizeof w->a, "%zu", arm);
    snprintf(w->nn, sizeof w->nn, "%zu", n);
    snprintf(w->ne, sizeof w->ne, "%" PRId64, errors);
    if (have) {
        const double vals[7] = { sum.min, sum.q25, sum.median, sum.q75,
                                 sum.max, sum.iqr, sum.mean };
        for (int i = 0; i < 7; i++)
            co_db_num(w->v[i], sizeof w->v[i], vals[i]);
    }
    const char *p[S_SUMMARY_COLS] = {
        runid, w->a, w->nn, have ? w->v[0] : NULL, have ? w->v[1] : NULL,
        have ? w->v[2] : NULL, have ? w->v[3] : NULL, have ? w->v[4] : NULL,
        have ? w->v[5] : NULL, have ? w->v[6] : NULL, w->ne,
        vd_metric_name(metric) };
    memcpy(w->p, p, sizeof p);
}

/* head, then the placeholders of rows rows of cols parameters each, the
 * first numbered from + 1: "($from+1, ..., $from+cols), (...)", then
 * tail; all appended to sql. */
static void
s_values(pw_buf_t *sql, const char *head, size_t from, size_t rows,
         size_t cols, const char *tail)
{
    pw_buf_adds(sql, head);
    for (size_t i = 0; i < rows; i++)
        for (size_t c = 0; c < cols; c++)
            pw_buf_printf(sql, "%s$%zu%s", c ? ", " : i ? ", (" : "(",
                          from + i * cols + c + 1, c + 1 < cols ? "" : ")");
    pw_buf_adds(sql, tail);
}

/* Every summary and every verdict of a run in one statement (one round
 * trip, where a statement per row was one each). */
static int
s_store_results(co_db_t *db, s_summary_row_t *sum, size_t ns,
                s_verdict_row_t *ver, size_t nv, char *err, size_t errlen)
{
    int rc = CO_DB_FAIL;
    size_t nsp = ns * S_SUMMARY_COLS, np = nsp + nv * S_VERDICT_COLS;
    const char **p = malloc((np ? np : 1) * sizeof *p);
    pw_buf_t sql;
    pw_buf_init(&sql, S_SQL_MAX);
    if (!p) {
        pw_err_line(err, errlen, "run_end: out of memory for %zu results", np);
        goto done;
    }
    for (size_t i = 0; i < ns; i++)
        memcpy(p + i * S_SUMMARY_COLS, sum[i].p, sizeof sum[i].p);
    for (size_t i = 0; i < nv; i++)
        memcpy(p + nsp + i * S_VERDICT_COLS, ver[i].p, sizeof ver[i].p);
    pw_buf_adds(&sql, nv ? "WITH s AS (" : "");
    s_values(&sql, "INSERT INTO run_summaries (run, arm, n, min, q25, "
        "median, q75, max, iqr, mean, errors, metric) VALUES ", 0, ns,
        S_SUMMARY_COLS,
        " ON CONFLICT (run, arm, metric) DO UPDATE SET n = EXCLUDED.n, min = "
        "EXCLUDED.min, q25 = EXCLUDED.q25, median = EXCLUDED.median, q75 = "
        "EXCLUDED.q75, max = EXCLUDED.max, iqr = EXCLUDED.iqr, mean = "
        "EXCLUDED.mean, errors = EXCLUDED.errors");
    /* The verdicts' series (008), for `regressions`: added once. */
    if (nv)
        s_values(&sql, "), v AS (INSERT INTO verdicts (run, host_id, "
            "subject_arm, other_arm, other_name, outcome, ratio, best_ratio, "
            "tolerance, noise, best_tolerance, floor_us, floor_is_default, "
            "floor_samples, parity, diagnostics, extra_runs, n_subject, "
            "n_other, verdict_json, error, metric, metric_source) VALUES ",
            nsp, nv, S_VERDICT_COLS,
            " ON CONFLICT (run, other_arm, metric) DO NOTHING RETURNING run, "
            "subject_arm, other_name, metric) INSERT INTO series "
            "(benchmark_id, host_id, vars, subject, other) SELECT "
            "r.benchmark_id, r.host_id, r.vars, sa.name, v.other_name FROM v "
            "JOIN runs r ON r.id = v.run JOIN arms sa ON sa.run = v.run AND "
            "sa.idx = v.subject_arm "
            /* An --against instance's verdict (023) compares two
             * revisions of one job: no series of its own. */
            "WHERE v.metric = 'wall' AND NOT EXISTS (SELECT 1 FROM arms oa "
            "WHERE oa.run = v.run "
            "AND oa.name = v.other_name AND oa.instance IS NOT NULL) ON "
            "CONFLICT DO NOTHING");
    if (pw_buf_status(&sql) != PW_BUF_OK) {
        pw_err_line(err, errlen, "run_end: results statement: %s",
                    pw_buf_strerror(pw_buf_status(&sql)));
        goto done;
    }
    PGresult *r = co_db_run_text(db, pw_buf_data(&sql), (int)np, p,
                          PGRES_COMMAND_OK, &rc, err, errlen);
    PQclear(r);
done:
    free(p);
    pw_buf_free(&sql);
    return rc;
}


/* Another metric the run is judged on (runs.metrics): its source and the
 * host's floor of it. */
typedef struct {
    vd_metric_t metric;
    vd_cpu_source_t source;
    co_metrics_floor_t floor;
} s_extra_t;

/* The run's verdicts on the other metrics ex[0..nex) into ver (from
 * *nv on), one per non-subject arm each, from mr's values. */
static bool
s_extra_verdicts(const char *runid, const char *host, PGresult *arms,
                 size_t subject, const co_metrics_run_t *mr,
                 const s_extra_t *ex, size_t nex, const vd_params_t *vp,
                 s_verdict_row_t *ver, size_t *nv, s_summary_row_t *sum,
                 size_t *ns)
{
    size_t narms = (size_t)PQntuples(arms), k1 = mr->n ? mr->n : 1;
    double *a = malloc(k1 * sizeof *a), *b = malloc(k1 * sizeof *b),
           *buf = malloc(k1 * sizeof *buf);
    if (!a || !b || !buf) {
        free(a);
        free(b);
        free(buf);
        return false;
    }
    for (size_t e = 0; e < nex; e++) {
        vd_params_t p = *vp;
        p.floor_us = ex[e].floor.floor;
        p.floor_is_default = ex[e].floor.is_default;
        const char *src = ex[e].metric == VD_METRIC_CPU
                          ? vd_cpu_source_name(ex[e].source) : NULL;
        size_t na = co_metrics_arm_values(mr, subject, ex[e].metric,
                                          ex[e].source, a);
        for (size_t k = 0; k < narms; k++) {
            size_t nb = co_metrics_arm_values(mr, k, ex[e].metric,
                                              ex[e].source, b);
            /* Each arm's summary of the metric: its history (026). */
            s_summary_row(&sum[(*ns)++], runid, k, b, nb, 0, buf,
                          ex[e].metric);
            if (k == subject)
                continue;
            s_verdict_row(&ver[(*nv)++], runid, host, subject, k,
                          co_val(arms, (int)k, co_col(arms, "name")), a,
                          na, b, nb, &p,
                          ex[e].floor.samples, NULL, NULL, ex[e].metric,
                          src);
        }
    }
    free(a);
    free(b);
    free(buf);
    return true;
}

/* Verdicts of every non-subject arm against the subject, and every arm's
 * summary, from the run's samples x (grouped by arm, see s_run_samples);
 * then the other metrics' verdicts (ex, from mr). */
static int
s_run_verdicts(co_db_t *db, const char *runid, const char *host,
               PGresult *arms, size_t subject, const s_samples_t *sm,
               const int64_t *errors, const vd_params_t *vp, int used,
               const co_metrics_run_t *mr, const s_extra_t *ex, size_t nex,
               unsigned *verdicts, char *err, size_t errlen)
{
    const double *x = sm->x;
    const size_t *arm_of = sm->arm_of;
    size_t n = sm->n;
    size_t narms = (size_t)PQntuples(arms);
    size_t a_off = 0, a_n = 0, nv = 0;
    int rc = CO_DB_FAIL;
    double *buf = malloc((n ? n : 1) * sizeof *buf);
    s_summary_row_t *sum = calloc((narms ? narms : 1) * (1 + nex),
                                  sizeof *sum);
    size_t ns = narms;
    s_verdict_row_t *ver = calloc((narms ? narms : 1) * (1 + nex),
                                  sizeof *ver);
    if (!buf || !sum || !ver) {
        pw_err_line(err, errlen, "run_end: out of memory for %zu samples", n);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        if (arm_of[i] == subject) {
            if (a_n == 0)
                a_off = i;
            a_n++;
        }
    for (size_t k = 0; k < narms; k++) {
        /* Rows are ordered by arm: each arm is one contiguous slice. */
        size_t b_off = 0, b_n = 0;
        for (size_t i = 0; i < n; i++)
            if (arm_of[i] == k) {
                if (b_n == 0)
                    b_off = i;
                b_n++;
            }
        s_summary_row(&sum[k], runid, k, x + b_off, b_n, errors[k], buf,
                      VD_METRIC_WALL);
        if (k != subject)
            s_verdict_row(&ver[nv++], runid, host, subject, k,
                          co_val(arms, (int)k, co_col(arms, "name")),
                          x + a_off, a_n,
                          x + b_off, b_n, vp, used,
                          s_counted(sm->ins + a_off, a_n),
                          s_counted(sm->ins + b_off, b_n), VD_METRIC_WALL,
                          NULL);
    }
    if (nex && !s_extra_verdicts(runid, host, arms, subject, mr, ex, nex,
                                 vp, ver, &nv, sum, &ns)) {
        pw_err_line(err, errlen, "run_end: out of memory for metrics");
        goto done;
    }
    rc = narms ? s_store_results(db, sum, ns, ver, nv, err, errlen)
               : CO_DB_OK;
    if (rc == CO_DB_OK)
        *verdicts = (unsigned)nv;
done:
    free(buf);
    free(sum);
    free(ver);
    return rc;
}


/* Inside run_end's transaction: CO_DB_OK when the run has not ended yet
 * and batches 0..re->batches-1 are stored (else CO_DB_DUP, CO_DB_LATER,
 * CO_DB_DEPENDS when a missing one was refused, or CO_DB_FAIL). *started
 * gets its started_at_us, *expected the samples of all its batches: what
 * the pruned read must find. */
static int
s_run_end_ready(co_db_t *db, int64_t host_id, const Parity__RunEnd *re,
                const char *runid, const char *batches, int64_t *started,
                long long *expected, char *metrics, size_t mlen, char *err,
                size_t errlen)
{
    int rc;
    const char *pc[] = { runid, batches };
    PGresult *r = co_db_run(db, &s_sql[S_READY], pc, &rc, err, errlen);
    if (!r)
        return rc;
    if (PQntuples(r) != 1) {   /* deleted behind the run cache's back */
        PQclear(r);
        pw_err_line(err, errlen, "run %s: no RunStart stored", re->run_id);
        return CO_DB_LATER;
    }
    bool ended_before = !co_val_null(r, 0, co_col(r, "status"));
    *started = co_val_i64(r, 0, co_col(r, "started_at_us"));
    long have = (long)co_val_i64(r, 0, co_col(r, "batches"));
    *expected = co_val_i64(r, 0, co_col(r, "samples"));
    snprintf(metrics, mlen, "%s", co_val(r, 0, co_col(r, "metrics")));
    PQclear(r);
    if (ended_before)
        return CO_DB_DUP;
    if (have < (long)re->batches) {
        rc = co_ingest_refused_batch(db, host_id, re, runid, batches, err, errlen);
        if (rc == CO_DB_LATER)
            pw_err_line(err, errlen, "run_end %s: %ld of %u batches stored",
                        re->run_id, have, re->batches);
        return rc;
    }
    return CO_DB_OK;
}

/* The other metrics the run is judged on (metrics: runs.metrics, names
 * separated by spaces): their values into *mr, and each one's source and
 * host floor into ex (*nex of them), the floor kept on the host's row as
 * the wall floor is. None for a run of wall alone. */
static int
s_extras(co_db_t *db, int64_t host_id, const char *runid, int64_t started,
         int64_t until, int window, const char *metrics, size_t measured,
         co_metrics_run_t *mr, s_extra_t *ex, size_t *nex, char *err,
         size_t errlen)
{
    char names[64], *save = NULL;
    snprintf(names, sizeof names, "%s", metrics);
    *nex = 0;
    for (char *t = strtok_r(names, " ", &save); t;
         t = strtok_r(NULL, " ", &save)) {
        vd_metric_t m;
        if (vd_metric_parse(t, &m) == 0 && m != VD_METRIC_WALL &&
            *nex < VD_METRIC_COUNT)
            ex[(*nex)++].metric = m;
    }
    if (*nex == 0)
        return CO_DB_OK;
    co_metrics_floors_t fl;
    int rc = co_metrics_run_read(db, runid, started, measured, mr, err,
                                 errlen);
    if (rc == CO_DB_OK)
        rc = co_metrics_floors(db, host_id, until, window, &fl, err, errlen);
    int64_t now = pw_clock_unix_us(), at = until < now ? until : now;
    for (size_t i = 0; rc == CO_DB_OK && i < *nex; i++) {
        ex[i].source = ex[i].metric == VD_METRIC_CPU
                       ? co_metrics_cpu_source(mr) : VD_CPU_RUSAGE;
        ex[i].floor = ex[i].metric == VD_METRIC_CPU ? fl.cpu[ex[i].source]
                                                    : fl.peak_rss;
        rc = co_metrics_floor_save(db, host_id, &ex[i].floor, at, err,
                                   errlen);
    }
    return rc;
}

static int
s_run_end(co_db_t *db, int64_t host_id, const Parity__RunEnd *re,
          int floor_window, double parity, unsigned *verdicts, char *err,
          size_t errlen)
{
    int rc;
    int64_t run = 0;
    char runid[24], host[24], batches[16], samples[24], ended[24];
    const char *status = s_status_name(re->status);
    PGresult *arms = NULL;
    s_samples_t sm = { 0 };
    co_metrics_run_t mr = { 0 };
    int64_t *errors = NULL;

    *verdicts = 0;
    if (!status) {
        pw_err_line(err, errlen, "run_end %s: unknown status %d", re->run_id,
                    (int)re->status);
        return CO_DB_REFUSED;
    }
    co_db_set_floor_window(db, floor_window);
    char what[CO_DB_UUID_MAX + 16];
    snprintf(what, sizeof what, "run_end %.*s", CO_DB_UUID_MAX, re->run_id);
    rc = co_ingest_run_lookup(db, host_id, re->run_id, &run, NULL, what, err,
                      errlen);
    if (rc != CO_DB_OK)
        return rc;
    snprintf(runid, sizeof runid, "%" PRId64, run);
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(batches, sizeof batches, "%u", re->batches);
    snprintf(samples, sizeof samples, "%" PRIu64, re->samples);
    snprintf(ended, sizeof ended, "%" PRId64, re->ended_at_us);

    if ((rc = co_db_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        return rc;
    int64_t started = 0;
    long long expected = 0;
    char metrics[64];
    rc = s_run_end_ready(db, host_id, re, runid, batches, &started,
                         &expected, metrics, sizeof metrics, err, errlen);
    if (rc != CO_DB_OK) {
        co_db_rollback(db);
        return rc;
    }
    /* The run's end, and its arms read in the same statement (one round
     * trip): the subject is the arm flagged so, else arm 0. */
    const char *pu[] = { runid, status, co_db_str(re->reason), batches, samples,
                         ended };
    arms = co_db_run(db, &s_sql[S_END], pu, &rc, err, errlen);
    if (!arms)
        goto rollback;
    size_t narms = (size_t)PQntuples(arms), subject = 0;
    int i_subject = co_col(arms, "subject");
    for (size_t i = 0; i < narms; i++)
        if (co_val_bool(arms, (int)i, i_subject)) {
            subject = i;
            break;
        }

    vd_params_t vp;
    vd_params_default(&vp);
    vp.parity = parity;
    int used = 0;
    int64_t until = re->ended_at_us > 0 ? re->ended_at_us : INT64_MAX;
    rc = co_cals_run_floor(db, host_id, runid, until, floor_window, &vp, &used,
                     err, errlen);
    if (rc != CO_DB_OK)
        goto rollback;
    if (!(errors = calloc(narms ? narms : 1, sizeof *errors))) {
        pw_err_line(err, errlen, "run_end: out of memory");
        rc = CO_DB_FAIL;
        goto rollback;
    }
    rc = s_run_samples(db, runid, started, expected, narms, &sm, errors, err,
                       errlen);
    if (rc != CO_DB_OK)
        goto rollback;
    s_extra_t ex[VD_METRIC_COUNT];
    size_t nex = 0;
    rc = s_extras(db, host_id, runid, started, until, floor_window, metrics,
                  sm.n, &mr, ex, &nex, err, errlen);
    if (rc != CO_DB_OK)
        goto rollback;
    rc = s_run_verdicts(db, runid, host, arms, subject, &sm, errors, &vp,
                        used, &mr, ex, nex, verdicts, err, errlen);
    if (rc != CO_DB_OK)
        goto rollback;
    rc = co_db_exec(db, "COMMIT", err, errlen);
    if (rc != CO_DB_OK)
        *verdicts = 0;
    goto done;
rollback:
    *verdicts = 0;
    co_db_rollback(db);
done:
    PQclear(arms);
    s_samples_free(&sm);
    co_metrics_run_free(&mr);
    free(errors);
    return rc;
}


int
co_verdicts_run_end(co_db_t *db, int64_t host_id, const Parity__RunEnd *re,
                    int floor_window, double parity, unsigned *verdicts,
                    char *err, size_t errlen)
{
    int64_t run = 0, owner = 0;
    co_db_set_last_run_end(db, 0);
    co_db_what(db, "run_end %.*s", CO_DB_UUID_MAX, re->run_id);
    int rc = s_run_end(db, host_id, re, floor_window, parity, verdicts, err,
                       errlen);
    co_db_what(db, NULL);
    if (rc == CO_DB_OK
        && co_db_run_find(db, re->run_id, &run, &owner, NULL)
        && owner == host_id)
        co_db_set_last_run_end(db, run);
    co_db_set_run_samples(db, NULL);
    return rc;
}

