/* co_cals.c -- calibrations and floors; see co_cals.h. */
#include "co_cals.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "co_floors.h"
#include "co_metrics.h"
#include "pw_clock.h"
#include "pw_err.h"

enum {
    S_HELD, S_WINDOW, S_HOST_FLOOR, S_CALIBRATION, S_RUN_FLOOR,
    S_COPY_SAMPLES, S_COPY_HOST
};
static const co_stmt_t s_sql[] = {
    [S_HELD] = { "cals.held",
        "SELECT taken_at_us, wall_us, quiet FROM host_calibration WHERE "
        "host_id = $1 ORDER BY taken_at_us DESC LIMIT $2",
        2, PGRES_TUPLES_OK, false },
    [S_WINDOW] = { "cals.window",
        "SELECT taken_at_us, wall_us, quiet FROM host_calibration WHERE "
        "host_id = $1 AND taken_at_us <= $2 ORDER BY taken_at_us DESC LIMIT "
        "$3",
        3, PGRES_TUPLES_OK, false },
    [S_HOST_FLOOR] = { "cals.host_floor",
        "UPDATE hosts SET floor_us = $2, floor_is_default = $3, floor_samples "
        "= $4, floor_at_us = $5, floor_quiet = $6, floor_oldest_us = $7, "
        "floor_newest_us = $8 WHERE id = $1 AND (floor_at_us IS NULL OR "
        "floor_at_us <= $5)",
        8, PGRES_COMMAND_OK, false },
    [S_CALIBRATION] = { "cals.calibration",
        "INSERT INTO calibrations (calibration_id, host_id, taken_at_us, "
        "n_samples, quiet) VALUES ($1, $2, $3, $4, $5) ON CONFLICT "
        "(calibration_id) DO NOTHING RETURNING id",
        5, PGRES_TUPLES_OK, false },
    [S_RUN_FLOOR] = { "cals.run_floor",
        "WITH f AS (INSERT INTO floors (host_id, run, floor_us, is_default, "
        "n_samples, window_size, until_us, quiet, oldest_us, newest_us) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $9, $10, $11) ON CONFLICT (run) "
        "DO NOTHING) UPDATE hosts SET floor_us = $3, floor_is_default = $4, "
        "floor_samples = $5, floor_at_us = $8, floor_quiet = $9, "
        "floor_oldest_us = $10, floor_newest_us = $11 WHERE id = $1 AND "
        "(floor_at_us IS NULL OR floor_at_us <= $8)",
        11, PGRES_COMMAND_OK, true },
    /* Every sample of a Calibration message, as it came. */
    [S_COPY_SAMPLES] = { "cals.copy_samples",
        "COPY calibration_samples (calibration, host_id, idx, taken_at_us, "
        "wall_us, cpu_us, task_clock_us, peak_rss_kb) FROM STDIN (FORMAT "
        "binary)", 0, PGRES_COPY_IN, false },
    /* host_calibration (006): every calibration sample of a host, from
     * Calibration messages and the rounds' CALIBRATION samples. */
    [S_COPY_HOST] = { "cals.copy_host",
        "COPY host_calibration (host_id, taken_at_us, wall_us, quiet, "
        "cpu_us, task_clock_us, peak_rss_kb) FROM STDIN (FORMAT binary)",
        0, PGRES_COPY_IN, false },
};

/* One calibration run's other metrics (025): cpu (rusage), the task
 * clock and peak RSS, each NAN where the run has no value. */
typedef struct {
    double cpu_us, task_clock_us, peak_rss_kb;
} s_cal_more_t;

static void
s_copy_maybe(co_db_t *db, double v)
{
    if (isnan(v))
        co_db_copy_null(db);
    else
        co_db_copy_f64(db, v);
}

/* A batch's CALIBRATION sample's other metrics, as its measured runs'
 * are read (docs/verdict.md "Metrics"): 0 task clock or peak RSS is
 * "not counted". */
static s_cal_more_t
s_sample_more(const Parity__Sample *x)
{
    s_cal_more_t m;
    co_cals_sample_metrics(x, &m.cpu_us, &m.task_clock_us, &m.peak_rss_kb);
    return m;
}

void
co_cals_sample_metrics(const Parity__Sample *x, double *cpu_us,
                       double *task_clock_us, double *peak_rss_kb)
{
    *cpu_us = x->user_us + x->sys_us;
    *task_clock_us = x->task_clock_ns > 0 ? (double)x->task_clock_ns / 1000.0
                                          : NAN;
    *peak_rss_kb = x->maxrss_kb > 0 ? (double)x->maxrss_kb : NAN;
}

/* Calibration c's run i's other metrics (its columns are all or
 * nothing: s_calibration checked). */
static s_cal_more_t
s_msg_more(const Parity__Calibration *c, size_t i)
{
    return (s_cal_more_t){
        c->n_cpu_us ? c->cpu_us[i] : NAN,
        c->n_task_clock_us ? c->task_clock_us[i] : NAN,
        c->n_peak_rss_kb ? c->peak_rss_kb[i] : NAN };
}

/* One host_calibration row (7 fields). */
static void
s_cal_row(co_db_t *db, int64_t host_id, int64_t taken_at_us, double wall_us,
          bool quiet, s_cal_more_t more)
{
    co_db_copy_row(db, 7);
    co_db_copy_i64(db, host_id);
    co_db_copy_i64(db, taken_at_us);
    co_db_copy_f64(db, wall_us);
    co_db_copy_bool(db, quiet);
    s_copy_maybe(db, more.cpu_us);
    s_copy_maybe(db, more.task_clock_us);
    s_copy_maybe(db, more.peak_rss_kb);
    /* Held from now: a failed COPY or a rollback forgets every host. */
    co_floors_add(co_db_floors(db), host_id, taken_at_us, wall_us, quiet);
}

/* A batch's CALIBRATION samples with wall_us > 0 (those the floor used
 * from `samples` before 006). */
static bool
s_is_cal(const Parity__Sample *x)
{
    return x->kind == PARITY__SAMPLE_KIND__CALIBRATION && x->wall_us > 0;
}

int
co_cals_copy_batch(co_db_t *db, int64_t host_id, const Parity__SampleBatch *b,
                   char *err, size_t errlen)
{
    size_t n = 0;
    co_db_copy_begin(db);
    for (size_t i = 0; i < b->n_samples; i++)
        if (s_is_cal(b->samples[i])) {
            s_cal_row(db, host_id, b->samples[i]->start_unix_us,
                      b->samples[i]->wall_us, false,
                      s_sample_more(b->samples[i]));
            n++;
        }
    return n ? co_db_copy_send(db, s_sql[S_COPY_HOST].sql, err, errlen)
             : CO_DB_OK;
}

void
co_cals_hold(co_db_t *db, int64_t host_id, const Parity__SampleBatch *b)
{
    for (size_t i = 0; i < b->n_samples; i++)
        if (s_is_cal(b->samples[i]))
            co_floors_add(co_db_floors(db), host_id,
                          b->samples[i]->start_unix_us,
                          b->samples[i]->wall_us, false);
}

/* Hold the host's newest rows (co_floors): one read when the host is
 * first needed on this connection, then kept as they are stored. */
static int
s_floor_load(co_db_t *db, int64_t host_id, char *err, size_t errlen)
{
    int rc;
    char host[24], lim[16];
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(lim, sizeof lim, "%d", co_floors_window_size(co_db_floors(db)));
    const char *p[] = { host, lim };
    PGresult *r = co_db_run(db, &s_sql[S_HELD], p, &rc, err, errlen);
    if (!r)
        return rc;
    size_t n = (size_t)PQntuples(r);
    int64_t *t = malloc((n ? n : 1) * sizeof *t);
    double *w = malloc((n ? n : 1) * sizeof *w);
    bool *q = malloc((n ? n : 1) * sizeof *q);
    if (t && w && q) {
        int i_taken = co_col(r, "taken_at_us"), i_wall = co_col(r, "wall_us"),
            i_quiet = co_col(r, "quiet");
        for (size_t i = 0; i < n; i++) {
            t[i] = co_val_i64(r, (int)i, i_taken);
            w[i] = co_val_f64(r, (int)i, i_wall);
            q[i] = co_val_bool(r, (int)i, i_quiet);
        }
        co_floors_load(co_db_floors(db), host_id, t, w, q, n);   /* else: read */
    }
    free(t);
    free(w);
    free(q);
    PQclear(r);
    return CO_DB_OK;
}

/* The host's calibration rows taken up to until_us, at most window:
 * Calibration messages and the rounds' CALIBRATION samples alike, both
 * in host_calibration (006). From the rows held (co_floors) when they
 * can say, else by an index scan of (host_id, taken_at_us) that stops
 * after window rows. *rows is the caller's to free. */
static int
s_host_calibration(co_db_t *db, int64_t host_id, int64_t until_us,
                   int window, co_floors_row_t **rows, size_t *n, char *err,
                   size_t errlen)
{
    int rc;
    char host[24], until[24], lim[16];
    co_floors_t *held = co_db_floors(db);
    co_floors_set_window(held, window);
    if (!co_floors_known(held, host_id)
        && (rc = s_floor_load(db, host_id, err, errlen)) != CO_DB_OK)
        return rc;
    *rows = malloc((size_t)window * sizeof **rows);
    if (*rows && co_floors_window(held, host_id, until_us, *rows, n))
        return CO_DB_OK;
    free(*rows);
    *rows = NULL;
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(until, sizeof until, "%" PRId64, until_us);
    snprintf(lim, sizeof lim, "%d", window);
    const char *p[] = { host, until, lim };
    PGresult *r = co_db_run(db, &s_sql[S_WINDOW], p, &rc, err, errlen);
    if (!r)
        return rc;
    *n = (size_t)PQntuples(r);
    *rows = malloc((*n ? *n : 1) * sizeof **rows);
    int i_taken = co_col(r, "taken_at_us"), i_wall = co_col(r, "wall_us"),
        i_quiet = co_col(r, "quiet");
    for (size_t i = 0; *rows && i < *n; i++)
        (*rows)[i] = (co_floors_row_t){ co_val_i64(r, (int)i, i_taken),
                                        co_val_f64(r, (int)i, i_wall),
                                        co_val_bool(r, (int)i, i_quiet) };
    PQclear(r);
    if (!*rows) {
        pw_err_line(err, errlen, "floor: out of memory");
        return CO_DB_FAIL;
    }
    return CO_DB_OK;
}

/* A floor and what it pooled (017). */
typedef struct {
    double floor_us;
    bool is_default;
    int used;              /* runs it was computed from */
    bool quiet;            /* quiet runs alone (>= 100 in the window) */
    int64_t oldest_us, newest_us;   /* of the runs used; 0 when none */
} s_floor_t;

/* The host's floor from its calibration window ending at until_us: its
 * quiet runs when the window holds at least VD_FLOOR_MIN_SAMPLES of them,
 * else every run of the window (docs/collector.md "The floor"). */
static int
s_host_floor(co_db_t *db, int64_t host_id, int64_t until_us, int window,
             s_floor_t *fl, char *err, size_t errlen)
{
    size_t n = 0, nq = 0;
    co_floors_row_t *rows = NULL;
    memset(fl, 0, sizeof *fl);
    int rc = s_host_calibration(db, host_id, until_us, window, &rows, &n,
                                err, errlen);
    if (rc != CO_DB_OK)
        return rc;
    for (size_t i = 0; i < n; i++)
        nq += rows[i].quiet;
    fl->quiet = nq >= VD_FLOOR_MIN_SAMPLES;
    double *cal = malloc((n ? n : 1) * sizeof *cal);
    if (!cal) {
        free(rows);
        pw_err_line(err, errlen, "floor: out of memory");
        return CO_DB_FAIL;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (fl->quiet && !rows[i].quiet)
            continue;
        cal[m++] = rows[i].wall_us;
        if (!fl->oldest_us || rows[i].taken_us < fl->oldest_us)
            fl->oldest_us = rows[i].taken_us;
        if (rows[i].taken_us > fl->newest_us)
            fl->newest_us = rows[i].taken_us;
    }
    char verr[256];
    if (vd_floor(cal, m, &fl->floor_us, &fl->is_default, verr, sizeof verr)
        != VD_OK) {
        /* A stored bad sample must not block the run: use the default. */
        fl->floor_us = VD_DEFAULT_FLOOR_US;
        fl->is_default = true;
    }
    fl->used = (int)m;
    free(cal);
    free(rows);
    return CO_DB_OK;
}

/* A floor's columns as text, for the statements that store it. */
typedef struct {
    char host[24], floor[32], used[16], lo[24], hi[24];
    const char *is_default, *quiet, *oldest, *newest;
} s_floor_text_t;

static void
s_floor_text(s_floor_text_t *t, int64_t host_id, const s_floor_t *fl)
{
    snprintf(t->host, sizeof t->host, "%" PRId64, host_id);
    co_db_num(t->floor, sizeof t->floor, fl->floor_us);
    snprintf(t->used, sizeof t->used, "%d", fl->used);
    snprintf(t->lo, sizeof t->lo, "%" PRId64, fl->oldest_us);
    snprintf(t->hi, sizeof t->hi, "%" PRId64, fl->newest_us);
    t->is_default = fl->is_default ? "t" : "f";
    t->quiet = fl->quiet ? "t" : "f";
    t->oldest = fl->used ? t->lo : NULL;
    t->newest = fl->used ? t->hi : NULL;
}

/* Keep a floor on the host's row (what `parity hosts` shows), unless the
 * row holds one whose window ends later (a RunEnd resent from a spool
 * must not put an old floor back). */
static int
s_host_floor_save(co_db_t *db, int64_t host_id, const s_floor_t *fl,
                  int64_t at_us, char *err, size_t errlen)
{
    int rc;
    char at[24];
    s_floor_text_t t;
    s_floor_text(&t, host_id, fl);
    snprintf(at, sizeof at, "%" PRId64, at_us);
    const char *p[] = { t.host, t.floor, t.is_default, t.used, at, t.quiet,
                        t.oldest, t.newest };
    PGresult *r = co_db_run(db, &s_sql[S_HOST_FLOOR], p, &rc, err, errlen);
    PQclear(r);
    return rc;
}

static int
s_host_floor_refresh(co_db_t *db, int64_t host_id, int64_t until_us,
                     int window, char *err, size_t errlen)
{
    s_floor_t fl;
    int rc = s_host_floor(db, host_id, until_us, window, &fl, err, errlen);
    if (rc != CO_DB_OK)
        return rc;
    return s_host_floor_save(db, host_id, &fl, until_us, err, errlen);
}


/* The other metrics' columns of c: each empty or as long as wall_us,
 * its values finite and >= 0. -1 with err. */
static int
s_check_more(const Parity__Calibration *c, char *err, size_t errlen)
{
    const struct {
        const char *name;
        size_t n;
        const double *v;
    } col[] = { { "cpu_us", c->n_cpu_us, c->cpu_us },
                { "task_clock_us", c->n_task_clock_us, c->task_clock_us },
                { "peak_rss_kb", c->n_peak_rss_kb, c->peak_rss_kb } };
    for (size_t k = 0; k < sizeof col / sizeof *col; k++) {
        if (col[k].n && col[k].n != c->n_wall_us) {
            pw_err_line(err, errlen, "calibration %s: %zu %s values for %zu "
                        "wall times (want none or one each)",
                        c->calibration_id, col[k].n, col[k].name,
                        c->n_wall_us);
            return -1;
        }
        for (size_t i = 0; i < col[k].n; i++)
            if (!isfinite(col[k].v[i]) || col[k].v[i] < 0) {
                pw_err_line(err, errlen, "calibration %s: %s %zu is %g (must "
                            "be finite and >= 0)", c->calibration_id,
                            col[k].name, i, col[k].v[i]);
                return -1;
            }
    }
    return 0;
}

static int
s_calibration(co_db_t *db, int64_t host_id, const Parity__Calibration *c,
              char *err, size_t errlen)
{
    int rc;
    char host[24], taken[24], n[24];
    PGresult *r;

    if (c->n_wall_us == 0) {
        pw_err_line(err, errlen, "calibration %s: no samples",
                    c->calibration_id);
        return CO_DB_REFUSED;
    }
    for (size_t i = 0; i < c->n_wall_us; i++)
        if (!isfinite(c->wall_us[i]) || c->wall_us[i] <= 0) {
            pw_err_line(err, errlen, "calibration %s: sample %zu is %g (must "
                        "be finite and > 0)", c->calibration_id, i,
                        c->wall_us[i]);
            return CO_DB_REFUSED;
        }
    if (s_check_more(c, err, errlen) != 0)
        return CO_DB_REFUSED;
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(taken, sizeof taken, "%" PRId64, c->taken_at_us);
    snprintf(n, sizeof n, "%zu", c->n_wall_us);
    if ((rc = co_db_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        return rc;
    const char *p[] = { c->calibration_id, host, taken, n,
                        c->quiet ? "t" : "f" };
    r = co_db_run(db, &s_sql[S_CALIBRATION], p, &rc, err, errlen);
    if (!r)
        goto end;
    if (PQntuples(r) == 0) {
        PQclear(r);
        co_db_rollback(db);
        return CO_DB_DUP;
    }
    int64_t cal = co_val_i64(r, 0, co_col(r, "id"));
    PQclear(r);
    co_db_copy_begin(db);
    for (size_t i = 0; i < c->n_wall_us; i++) {
        s_cal_more_t more = s_msg_more(c, i);
        co_db_copy_row(db, 8);
        co_db_copy_i64(db, cal);
        co_db_copy_i64(db, host_id);
        co_db_copy_i32(db, (int32_t)i);
        co_db_copy_i64(db, c->taken_at_us);
        co_db_copy_f64(db, c->wall_us[i]);
        s_copy_maybe(db, more.cpu_us);
        s_copy_maybe(db, more.task_clock_us);
        s_copy_maybe(db, more.peak_rss_kb);
    }
    rc = co_db_copy_send(db, s_sql[S_COPY_SAMPLES].sql, err, errlen);
    if (rc != CO_DB_OK)
        goto end;
    /* The same samples where the floor reads them (006). */
    co_db_copy_begin(db);
    for (size_t i = 0; i < c->n_wall_us; i++)
        s_cal_row(db, host_id, c->taken_at_us, c->wall_us[i], c->quiet,
                  s_msg_more(c, i));
    if ((rc = co_db_copy_send(db, s_sql[S_COPY_HOST].sql, err, errlen))
        != CO_DB_OK)
        goto end;
    /* The host's row shows the floor from its window ending now (or at
     * this calibration, when the agent's clock is ahead). */
    int64_t until = pw_clock_unix_us();
    if (c->taken_at_us > until)
        until = c->taken_at_us;
    if ((rc = s_host_floor_refresh(db, host_id, until, co_db_floor_window(db),
                                   err, errlen)) != CO_DB_OK)
        goto end;
    /* And the other metrics' floors (025), from the same window. */
    rc = co_metrics_refresh(db, host_id, until, co_db_floor_window(db), err,
                            errlen);
end:
    return co_db_end(db, rc, err, errlen);
}

int
co_cals_store(co_db_t *db, int64_t host_id, const Parity__Calibration *c,
              char *err, size_t errlen)
{
    co_db_what(db, "calibration %.*s", CO_DB_UUID_MAX, c->calibration_id);
    int rc = s_calibration(db, host_id, c, err, errlen);
    co_db_what(db, NULL);
    return rc;
}

/* The floor of a run's verdicts: from the host's window ending at the
 * run's end, recorded in floors and (when newer) on the host's row. */
int
co_cals_run_floor(co_db_t *db, int64_t host_id, const char *runid,
                  int64_t until, int floor_window, vd_params_t *vp, int *used,
                  char *err, size_t errlen)
{
    int rc;
    s_floor_t fl;
    rc = s_host_floor(db, host_id, until, floor_window, &fl, err, errlen);
    if (rc != CO_DB_OK)
        return rc;
    *used = fl.used;
    vp->floor_us = fl.floor_us;
    vp->floor_is_default = fl.is_default;
    char win[16], until_s[24];
    s_floor_text_t t;
    s_floor_text(&t, host_id, &fl);
    snprintf(win, sizeof win, "%d", floor_window);
    snprintf(until_s, sizeof until_s, "%" PRId64, until);
    /* A run without an end time has until INT64_MAX: the row's window
     * ends now, so that a later calibration still replaces it. */
    int64_t now = pw_clock_unix_us();
    char at[24];
    snprintf(at, sizeof at, "%" PRId64, until < now ? until : now);
    const char *pf[] = { t.host, runid, t.floor, t.is_default, t.used, win,
                         until_s, at, t.quiet, t.oldest, t.newest };
    /* The run's floor, and the host's row (s_host_floor_save's rule), in
     * one round trip. */
    PGresult *r = co_db_run(db, &s_sql[S_RUN_FLOOR], pf, &rc, err, errlen);
    PQclear(r);
    return rc;
}

