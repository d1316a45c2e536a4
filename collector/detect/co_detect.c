/* co_detect.c -- change points as runs are stored; see co_detect.h. */
#include "co_detect.h"
#include "vd_trend.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <jansson.h>

#include "co_db.h"
#include "co_log.h"
#include "co_pg.h"
#include "pw_clock.h"
#include "vd_metric.h"

/* Environment fields whose change between two runs is worth a note on a
 * series (ag_env's keys). */
static const char *const s_env_keys[] = {
    "kernel", "cpu_model", "microcode", "governor", "turbo",
    "agent_version", NULL
};

#define S_ANNOT_MAX 16
#define S_ANNOT_LEN 200

struct co_detect {
    double parity;
    bool renice;          /* the private cluster: lower our priority */
    int niced_pid;        /* the server process reniced last */
    co_conn_t *conn;
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
    int64_t ring[CO_DETECT_QUEUE];
    size_t head, count;
    co_detect_counters_t c;
};

/* The points of a series' runs: columns 1.. of these queries' rows; Q
 * the parameter ("$8") holding the metric. */
#define S_POINT_COLS(Q) \
    "r.id, ss.median AS s_median, ss.min AS s_min, ss.q25 AS s_q25, " \
    "ss.q75 AS s_q75, ss.max AS s_max, ss.n AS s_n, so.median AS o_median, " \
    "so.min AS o_min, so.q25 AS o_q25, so.q75 AS o_q75, so.max AS o_max, " \
    "so.n AS o_n FROM runs r " \
    "JOIN arms a1 ON a1.run = r.id AND a1.name = $4 " \
    "JOIN run_summaries ss ON ss.run = r.id AND ss.arm = a1.idx AND " \
    "ss.metric = " Q " " \
    "LEFT JOIN arms a2 ON a2.run = r.id AND a2.name = $5 " \
    "LEFT JOIN run_summaries so ON so.run = r.id AND so.arm = a2.idx AND " \
    "so.metric = " Q " "

enum {
    S_ENV, S_ARMS_DIFF, S_KNOWN, S_UPDATE, S_INSERT, S_SERIES, S_KEPT, S_POINT, S_KEEP, S_SUPERSEDE, S_RUN, S_RUN_ARMS
};
/* Each one prepared on the connection the first time (planning the
 * series query took 8 ms, running it 0.2 ms; CO_DETECT_SETTINGS make the
 * plan generic). */
static const co_stmt_t s_sql[] = {
    [S_ENV] = { "detect.env",
        "SELECT (SELECT e.environment_json FROM runs r JOIN "
        "environments e ON e.id = r.environment WHERE r.id = "
        "$1) AS env_a, (SELECT e.environment_json FROM runs r JOIN "
        "environments e ON e.id = r.environment WHERE r.id = "
        "$2) AS env_b",
        2, PGRES_TUPLES_OK, true },
    [S_ARMS_DIFF] = { "detect.arms_diff",
        "SELECT x.name, x.argv::text <> y.argv::text OR x.shell <> "
        "y.shell AS command_changed, x.version_output <> y.version_output "
        "AS versions_changed FROM arms x JOIN "
        "arms y ON y.run = $2 AND y.name = x.name WHERE x.run = $1 "
        "ORDER BY x.idx",
        2, PGRES_TUPLES_OK, true },
    [S_KNOWN] = { "detect.known",
        "SELECT id, after_run FROM change_points WHERE benchmark_id = $1 "
        "AND host_id = $2 AND vars = $3::jsonb AND subject = $4 AND other "
        "= $5 AND quantity = $9 AND after_run = ANY($6::bigint[]) ORDER BY "
        "(metric = $7 AND after_run = $8::bigint) DESC, abs(after_run - "
        "$8::bigint), id LIMIT 1",
        9, PGRES_TUPLES_OK, true },
    [S_UPDATE] = { "detect.update",
        "UPDATE change_points SET metric = $1, before_run = $2, "
        "after_run = $3, before_value = $4, after_value = $5, "
        "magnitude = $6, p_value = $7, outcome = $8, within_noise = $9, "
        "regression = $10, annotations = CASE WHEN $11::json IS NULL "
        "THEN annotations ELSE ARRAY(SELECT "
        "json_array_elements_text($11::json)) END, updated_at_us = $12, "
        "ratio_magnitude = $13, subject_magnitude = $14, "
        "other_magnitude = $15, trend_per_run = $16, superseded_at_us = "
        "NULL, quantity = $17 WHERE id = $18::bigint",
        18, PGRES_COMMAND_OK, true },
    [S_INSERT] = { "detect.insert",
        "INSERT INTO change_points (benchmark_id, host_id, vars, "
        "subject, other, metric, before_run, after_run, before_value, "
        "after_value, magnitude, p_value, outcome, within_noise, "
        "regression, annotations, detected_at_us, ratio_magnitude, "
        "subject_magnitude, other_magnitude, trend_per_run, quantity) "
        "VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7, $8, $9, $10, $11, "
        "$12, $13, $14, $15, ARRAY(SELECT json_array_elements_text("
        "$16::json)), $17, $18, $19, $20, $21, $22) ON CONFLICT DO "
        "NOTHING RETURNING id",
        22, PGRES_TUPLES_OK, true },
    [S_SERIES] = { "detect.series",
        "SELECT " S_POINT_COLS("$8")
        "WHERE r.benchmark_id = $1 AND r.host_id = $2 AND r.vars = "
        "$3::jsonb AND r.status = 'complete' AND r.started_at_us <= $6 "
        "AND ss.median IS NOT NULL AND ($5 = '' OR so.median IS NOT NULL) "
        "ORDER BY r.started_at_us DESC LIMIT $7",
        8, PGRES_TUPLES_OK, true },
    [S_KEPT] = { "detect.kept",
        "SELECT w.newest_run, w.points, (SELECT count(*) FROM runs r WHERE "
        "r.benchmark_id = $1 AND r.host_id = $2 AND r.vars = $3::jsonb AND "
        "r.started_at_us > w.newest_started_us AND r.started_at_us <= $6 "
        "AND r.id <> $7::bigint AND r.status = 'complete') AS newer "
        "FROM detect_windows w WHERE w.benchmark_id = $1 AND w.host_id = $2 "
        "AND w.vars = $3::jsonb AND w.subject = $4 AND w.other = $5 "
        "AND w.metric = $8 AND w.newest_started_us <= $6",
        8, PGRES_TUPLES_OK, true },
    [S_POINT] = { "detect.point",
        "SELECT " S_POINT_COLS("$7") "WHERE r.id = "
        "$6::bigint AND r.status = 'complete' AND ss.median IS NOT NULL AND "
        "($5 = '' OR so.median IS NOT NULL) AND r.benchmark_id = $1 AND "
        "r.host_id = $2 AND r.vars = $3::jsonb",
        7, PGRES_TUPLES_OK, true },
    [S_KEEP] = { "detect.keep",
        "INSERT INTO detect_windows (benchmark_id, host_id, vars, subject, "
        "other, newest_run, newest_started_us, points, metric) VALUES ($1, "
        "$2, $3::jsonb, $4, $5, $6, $7, $8, $9) ON CONFLICT (benchmark_id, "
        "host_id, vars, subject, other, metric) DO UPDATE SET newest_run = "
        "EXCLUDED.newest_run,"
        " newest_started_us = EXCLUDED.newest_started_us, points = "
        "EXCLUDED.points",
        9, PGRES_COMMAND_OK, true },
    [S_SUPERSEDE] = { "detect.supersede",
        "UPDATE change_points SET superseded_at_us = $8 WHERE benchmark_id "
        "= $1 AND host_id = $2 AND vars = $3::jsonb AND subject = $4 AND "
        "other = $5 AND quantity = $9 AND superseded_at_us IS NULL AND "
        "after_run = ANY($6::bigint[]) AND NOT id = ANY($7::bigint[])",
        9, PGRES_COMMAND_OK, true },
    [S_RUN] = { "detect.run",
        "SELECT r.benchmark_id, r.host_id, r.vars::text AS vars, "
        "r.started_at_us, h.floor_us, "
        "r.status = 'complete' AS complete, array_to_string(r.metrics, "
        "' ') AS metrics, (SELECT f.floor FROM host_floors f WHERE "
        "f.host_id = r.host_id AND f.metric = 'cpu') AS floor_cpu, "
        "(SELECT f.floor FROM host_floors f WHERE f.host_id "
        "= r.host_id AND f.metric = 'peak_rss') AS floor_peak_rss FROM runs r "
        "JOIN hosts h ON h.id = r.host_id WHERE r.id = $1",
        1, PGRES_TUPLES_OK, true },
    [S_RUN_ARMS] = { "detect.run_arms",
        "SELECT name, subject FROM arms WHERE run = $1 AND instance IS "
        "NULL ORDER BY idx",
        1, PGRES_TUPLES_OK, true },
};

/* Run a statement of the table (co_conn prepares it). */
static PGresult *
s_qx(co_conn_t *c, const co_stmt_t *st, const char *const *p,
     const int *lens, const int *fmts, int binary, char *err, size_t errlen)
{
    return co_conn_run_bin(c, st, p, lens, fmts, binary != 0, NULL, err,
                           errlen);
}

static PGresult *
s_q(co_conn_t *c, const co_stmt_t *st, const char *const *p, char *err,
    size_t errlen)
{
    return co_conn_run(c, st, p, NULL, err, errlen);
}

/* ---- annotations ------------------------------------------------------ */

static void
s_note(char (*notes)[S_ANNOT_LEN], size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
s_note(char (*notes)[S_ANNOT_LEN], size_t *n, const char *fmt, ...)
{
    if (*n >= S_ANNOT_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(notes[*n], S_ANNOT_LEN, fmt, ap);
    va_end(ap);
    notes[*n][strcspn(notes[*n], "\n")] = '\0';
    (*n)++;
}

/* A field's value as short text ("" when absent). */
static void
s_env_text(const char *env_json, const char *key, char *out, size_t len)
{
    out[0] = '\0';
    json_t *o = env_json ? json_loads(env_json, 0, NULL) : NULL;
    json_t *f = o ? json_object_get(o, key) : NULL;
    json_t *v = json_is_object(f) ? json_object_get(f, "value") : f;
    if (json_is_string(v))
        snprintf(out, len, "%s", json_string_value(v));
    else if (v && !json_is_null(v)) {
        char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        snprintf(out, len, "%s", d ? d : "");
        free(d);
    }
    json_decref(o);
}

/* What changed between run a (before) and run b (after): the host's
 * environment fields, each arm's command and its `versions` output. */
static int
s_annotations(co_conn_t *c, int64_t a, int64_t b, char (*notes)[S_ANNOT_LEN],
              size_t *n, char *err, size_t errlen)
{
    char sa[24], sb[24];
    snprintf(sa, sizeof sa, "%" PRId64, a);
    snprintf(sb, sizeof sb, "%" PRId64, b);
    const char *p[] = { sa, sb };
    PGresult *r = s_q(c, &s_sql[S_ENV], p, err, errlen);
    if (!r)
        return -1;
    const char *ea = co_val_or_null(r, 0, co_col(r, "env_a"));
    const char *eb = co_val_or_null(r, 0, co_col(r, "env_b"));
    for (size_t k = 0; ea && eb && s_env_keys[k]; k++) {
        char va[80], vb[80];
        s_env_text(ea, s_env_keys[k], va, sizeof va);
        s_env_text(eb, s_env_keys[k], vb, sizeof vb);
        if (strcmp(va, vb) != 0)
            s_note(notes, n, "%s %s -> %s", s_env_keys[k],
                   va[0] ? va : "(none)", vb[0] ? vb : "(none)");
    }
    PQclear(r);
    r = s_q(c, &s_sql[S_ARMS_DIFF], p, err, errlen);
    if (!r)
        return -1;
    int i_name = co_col(r, "name"), i_command = co_col(r, "command_changed"),
        i_versions = co_col(r, "versions_changed");
    for (int i = 0; i < PQntuples(r); i++) {
        if (co_val_bool(r, i, i_command))
            s_note(notes, n, "arm %.60s: command changed",
                   co_val(r, i, i_name));
        if (co_val_bool(r, i, i_versions))
            s_note(notes, n, "arm %.60s: versions output changed",
                   co_val(r, i, i_name));
    }
    PQclear(r);
    return 0;
}

/* ---- one series ------------------------------------------------------- */

typedef struct {
    const char *bench, *host, *vars;   /* as text, for parameters */
    const char *subject, *other;       /* other "" for a one-arm run */
    const char *started;               /* the run's start: the window's end */
    const char *quantity;              /* the metric: wall, cpu, peak_rss */
    double floor_us;                   /* the host's floor of it */
} s_series_t;

void
co_detect_cols(const PGresult *r, const char *prefix, co_detect_cols_t *c)
{
    char name[32];
    int *col[] = { &c->median, &c->min, &c->q25, &c->q75, &c->max, &c->n };
    const char *what[] = { "median", "min", "q25", "q75", "max", "n" };
    for (size_t k = 0; k < sizeof col / sizeof col[0]; k++) {
        snprintf(name, sizeof name, "%s%s", prefix, what[k]);
        *col[k] = co_col(r, name);
    }
}

void
co_detect_point(const PGresult *r, int row, const co_detect_cols_t *c,
                vd_point_t *pt)
{
    pt->median = co_val_f64(r, row, c->median);
    pt->min = co_val_f64(r, row, c->min);
    pt->q25 = co_val_f64(r, row, c->q25);
    pt->q75 = co_val_f64(r, row, c->q75);
    pt->max = co_val_f64(r, row, c->max);
    pt->n = (size_t)co_val_i64(r, row, c->n);
}

/* One step of a series, as stored: the change of the metric that names
 * it (ratio; subject for a one-arm series; other when the other arm
 * moved) and each metric's magnitude where it stepped at the same runs
 * (NaN where not). */
typedef struct {
    const char *metric;
    const vd_change_t *ch;
    double mag[3];        /* ratio, subject, other */
    double trend;         /* a trend's rate a run (vd_trend.h); NaN: a step */
} s_step_t;

static void
s_dbl_text(char *buf, size_t len, double x)
{
    if (isnan(x))
        buf[0] = '\0';   /* NULL: the parameter is sent as NULL */
    else
        snprintf(buf, len, "%.17g", x);
}

/* The annotations between runs a and b as a JSON array text (caller
 * frees), or NULL with err. */
static char *
s_notes_json(co_conn_t *c, int64_t a, int64_t b, char *err, size_t errlen)
{
    char notes[S_ANNOT_MAX][S_ANNOT_LEN];
    size_t nn = 0;
    if (s_annotations(c, a, b, notes, &nn, err, errlen) != 0)
        return NULL;
    json_t *arr = json_array();
    for (size_t k = 0; arr && k < nn; k++)
        json_array_append_new(arr, json_string(notes[k]));
    char *text = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
    json_decref(arr);
    if (!text)
        snprintf(err, errlen, "change point: out of memory");
    return text;
}

/* Store one step: update the series' change point within two runs of it
 * in place (the same step judged again with more runs: its id and ack
 * stay), else insert one. *found counts the inserted. */
static int
s_store(co_conn_t *c, const s_series_t *s, const int64_t *ids, size_t n,
        const s_step_t *st, int *found, int64_t *id_out, char *err,
        size_t errlen)
{
    const vd_change_t *ch = st->ch;
    char near[5 * 24 + 8], before[24], after[24], bv[32], av[32], mag[32];
    char pv[32], at[24], mr[32], ms[32], mo[32], tr[32];
    size_t len = (size_t)snprintf(near, sizeof near, "{");
    for (size_t k = ch->index >= 2 ? ch->index - 2 : 0;
         k <= ch->index + 2 && k < n; k++)
        len += (size_t)snprintf(near + len, sizeof near - len, "%s%" PRId64,
                                len > 1 ? "," : "", ids[k]);
    snprintf(near + len, sizeof near - len, "}");
    snprintf(before, sizeof before, "%" PRId64, ids[ch->index - 1]);
    snprintf(after, sizeof after, "%" PRId64, ids[ch->index]);
    const char *pn[] = { s->bench, s->host, s->vars, s->subject, s->other,
                         near, st->metric, after, s->quantity };
    /* The nearest first: this very (metric, run) when it is there, so
     * that an update never collides with the unique key. */
    PGresult *r = s_q(c, &s_sql[S_KNOWN], pn, err, errlen);
    if (!r)
        return -1;
    char known[24] = "";
    bool moved = true;
    if (PQntuples(r) == 1) {
        snprintf(known, sizeof known, "%s", co_val(r, 0, co_col(r, "id")));
        moved = strcmp(co_val(r, 0, co_col(r, "after_run")), after) != 0;
    }
    PQclear(r);
    char *notes_json = NULL;
    if (moved && !(notes_json = s_notes_json(c, ids[ch->index - 1],
                                             ids[ch->index], err, errlen)))
        return -1;
    snprintf(bv, sizeof bv, "%.17g", ch->before);
    snprintf(av, sizeof av, "%.17g", ch->after);
    snprintf(mag, sizeof mag, "%.17g", ch->magnitude);
    snprintf(pv, sizeof pv, "%.17g", ch->p_value);
    snprintf(at, sizeof at, "%" PRId64, pw_clock_unix_us());
    s_dbl_text(mr, sizeof mr, st->mag[0]);
    s_dbl_text(ms, sizeof ms, st->mag[1]);
    s_dbl_text(mo, sizeof mo, st->mag[2]);
    s_dbl_text(tr, sizeof tr, st->trend);
    /* Slower subject: the ratio or the subject's median went up and the
     * rule says loss beyond the noise. A step of the other arm (with or
     * without the subject's) is the environment's, not the subject's
     * regression. */
    bool regression = strcmp(st->metric, "other") != 0 && !ch->within_noise
                      && ch->outcome == VD_LOSS;
    /* The series' key, then the change point's values, then the id of
     * the one to update: an update reads pi + 5 onwards. */
    const char *pi[] = { s->bench, s->host, s->vars, s->subject, s->other,
                         st->metric, before, after, bv, av, mag, pv,
                         vd_outcome_name(ch->outcome),
                         ch->within_noise ? "t" : "f",
                         regression ? "t" : "f", notes_json, at,
                         mr[0] ? mr : NULL, ms[0] ? ms : NULL,
                         mo[0] ? mo : NULL, tr[0] ? tr : NULL, s->quantity,
                         known };
    if (known[0])
        r = s_q(c, &s_sql[S_UPDATE], pi + 5, err, errlen);
    else
        r = s_q(c, &s_sql[S_INSERT], pi, err, errlen);
    free(notes_json);
    if (!r)
        return -1;
    /* 0: none written (another collector's detection stored the same
     * step first): nothing is superseded on this pass. */
    *id_out = known[0] ? strtoll(known, NULL, 10)
              : PQntuples(r) == 1 ? co_val_i64(r, 0, co_col(r, "id"))
              : 0;
    if (!known[0])
        *found += PQntuples(r);
    PQclear(r);
    return 0;
}

/* The change of list ch[0..n) within two points of index not yet used,
 * nearest first; -1 when none. */
static int
s_near(const vd_change_t *ch, size_t n, const bool *used, size_t index)
{
    int best = -1;
    size_t dist = 3;
    for (size_t k = 0; k < n; k++) {
        size_t d = ch[k].index > index ? ch[k].index - index
                                       : index - ch[k].index;
        if (!used[k] && d < dist) {
            dist = d;
            best = (int)k;
        }
    }
    return best;
}

/* ---- the window ------------------------------------------------------- */

/* A series' newest points, oldest first: run ids and the three metrics
 * (ratio, subject, other). */
typedef struct {
    size_t n, cap;
    int64_t *ids;
    vd_point_t *pt[3];
} s_window_t;

/* detect_windows.points (migration 015): version, window length, then
 * per run its id and both arms' six numbers, each 8 bytes big-endian. */
#define S_PACK_VERSION 1
#define S_PACK_HEAD    5
#define S_PACK_POINT   (13 * 8)

static int
s_window_init(s_window_t *w, size_t cap)
{
    memset(w, 0, sizeof *w);
    w->cap = cap ? cap : 1;
    w->ids = calloc(w->cap, sizeof *w->ids);
    for (int m = 0; m < 3; m++)
        w->pt[m] = calloc(w->cap, sizeof *w->pt[m]);
    return w->ids && w->pt[0] && w->pt[1] && w->pt[2] ? 0 : -1;
}

static void
s_window_free(s_window_t *w)
{
    free(w->ids);
    for (int m = 0; m < 3; m++)
        free(w->pt[m]);
    memset(w, 0, sizeof *w);
}

/* Point i's ratio from its arms. The ratio of the minimums too:
 * vd_change's timing-mode check reads min (NaN there let sticky timing
 * modes of the subject through: 440 reports in 11,430 runs, against 1). */
static void
s_ratio_point(s_window_t *w, size_t i)
{
    const vd_point_t *a = &w->pt[1][i], *b = &w->pt[2][i];
    w->pt[0][i] = (vd_point_t){ a->median / b->median, a->min / b->min,
                                NAN, NAN, NAN, a->n < b->n ? a->n : b->n };
}

static void
s_put64(unsigned char *p, uint64_t v)
{
    for (int k = 7; k >= 0; k--, v >>= 8)
        p[k] = (unsigned char)(v & 0xff);
}

static uint64_t
s_get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int k = 0; k < 8; k++)
        v = v << 8 | p[k];
    return v;
}

static void
s_put_dbl(unsigned char **p, double x)
{
    uint64_t v;
    memcpy(&v, &x, sizeof v);
    s_put64(*p, v);
    *p += 8;
}

static double
s_get_dbl(const unsigned char **p)
{
    uint64_t v = s_get64(*p);
    double x;
    memcpy(&x, &v, sizeof x);
    *p += 8;
    return x;
}

/* Both arms' points of w as detect_windows.points; caller frees. */
static unsigned char *
s_pack(const s_window_t *w, size_t window, size_t *len)
{
    *len = S_PACK_HEAD + w->n * S_PACK_POINT;
    unsigned char *buf = malloc(*len), *p = buf;
    if (!buf)
        return NULL;
    *p++ = S_PACK_VERSION;
    for (int k = 3; k >= 0; k--)
        *p++ = (unsigned char)(window >> (8 * k));
    for (size_t i = 0; i < w->n; i++) {
        s_put64(p, (uint64_t)w->ids[i]);
        p += 8;
        for (int m = 1; m < 3; m++) {
            const vd_point_t *x = &w->pt[m][i];
            s_put_dbl(&p, x->median);
            s_put_dbl(&p, x->min);
            s_put_dbl(&p, x->q25);
            s_put_dbl(&p, x->q75);
            s_put_dbl(&p, x->max);
            s_put_dbl(&p, (double)x->n);
        }
    }
    return buf;
}

/* w (capacity >= window) from points written with this window; -1 when
 * the row is of another version or window, or malformed. */
static int
s_unpack(const unsigned char *p, size_t len, size_t window, bool other,
         s_window_t *w)
{
    if (len < S_PACK_HEAD || p[0] != S_PACK_VERSION ||
        (len - S_PACK_HEAD) % S_PACK_POINT != 0)
        return -1;
    size_t stored = (size_t)p[1] << 24 | (size_t)p[2] << 16 |
                    (size_t)p[3] << 8 | p[4];
    size_t n = (len - S_PACK_HEAD) / S_PACK_POINT;
    if (stored != window || n > window || n > w->cap)
        return -1;
    p += S_PACK_HEAD;
    for (size_t i = 0; i < n; i++) {
        w->ids[i] = (int64_t)s_get64(p);
        p += 8;
        for (int m = 1; m < 3; m++) {
            vd_point_t *x = &w->pt[m][i];
            x->median = s_get_dbl(&p);
            x->min = s_get_dbl(&p);
            x->q25 = s_get_dbl(&p);
            x->q75 = s_get_dbl(&p);
            x->max = s_get_dbl(&p);
            x->n = (size_t)s_get_dbl(&p);
        }
        if (other)
            s_ratio_point(w, i);
    }
    w->n = n;
    return 0;
}

/* The columns of a point query (S_POINT_COLS). */
typedef struct {
    int id;
    co_detect_cols_t subject, other;
} s_point_cols_t;

static void
s_point_cols(const PGresult *r, s_point_cols_t *c)
{
    c->id = co_col(r, "id");
    co_detect_cols(r, "s_", &c->subject);
    co_detect_cols(r, "o_", &c->other);
}

/* Row `row` of a point query as point i of w. */
static void
s_take_row(const PGresult *r, const s_point_cols_t *c, int row, bool other,
           s_window_t *w, size_t i)
{
    w->ids[i] = co_val_i64(r, row, c->id);
    co_detect_point(r, row, &c->subject, &w->pt[1][i]);
    if (other) {
        co_detect_point(r, row, &c->other, &w->pt[2][i]);
        s_ratio_point(w, i);
    }
}

/* The whole window: the series' newest `window` points up to s->started,
 * read run by run (the cost detect_windows saves). */
static int
s_read_full(co_conn_t *c, const s_series_t *s, size_t window, s_window_t *w,
            char *err, size_t errlen)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%zu", window);
    const char *p[] = { s->bench, s->host, s->vars, s->subject, s->other,
                        s->started, lim, s->quantity };
    PGresult *r = s_q(c, &s_sql[S_SERIES], p, err, errlen);
    if (!r)
        return -1;
    size_t n = (size_t)PQntuples(r);
    s_point_cols_t cols;
    s_point_cols(r, &cols);
    for (size_t i = 0; i < n && i < w->cap; i++)
        s_take_row(r, &cols, (int)(n - 1 - i), s->other[0] != '\0', w, i);
    w->n = n < w->cap ? n : w->cap;
    PQclear(r);
    return 0;
}

/* The window from the series' detect_windows row and run's own point,
 * when the row ends just before run: 1 with w filled, 2 with w filled
 * when the row ends with run already (nothing to keep), 0 when the
 * window must be read in full, -1 with err. */
static int
s_read_kept(co_conn_t *c, const s_series_t *s, const char *run, size_t window,
            s_window_t *w, char *err, size_t errlen)
{
    const char *p[] = { s->bench, s->host, s->vars, s->subject, s->other,
                        s->started, run, s->quantity };
    /* Binary results: the points are bytea; the rest int8. */
    PGresult *r = s_qx(c, &s_sql[S_KEPT], p, NULL, NULL,
        1, err, errlen);
    if (!r)
        return -1;
    int64_t run_id = strtoll(run, NULL, 10);
    int i_newest = co_col(r, "newest_run"), i_points = co_col(r, "points"),
        i_newer = co_col(r, "newer");
    bool usable = PQntuples(r) == 1 && i_newest >= 0 && i_points >= 0 &&
                  i_newer >= 0 && PQgetlength(r, 0, i_newest) == 8 &&
                  PQgetlength(r, 0, i_newer) == 8 &&
                  s_get64((const unsigned char *)
                          PQgetvalue(r, 0, i_newer)) == 0 &&
                  s_unpack((const unsigned char *)PQgetvalue(r, 0, i_points),
                           (size_t)PQgetlength(r, 0, i_points), window,
                           s->other[0] != '\0', w) == 0;
    bool same = usable && (int64_t)s_get64((const unsigned char *)
                              PQgetvalue(r, 0, i_newest)) == run_id;
    PQclear(r);
    if (!usable)
        return 0;
    if (same)
        return 2;                /* the run is the row's newest already */
    r = s_q(c, &s_sql[S_POINT], (const char *const[]){
        s->bench, s->host, s->vars, s->subject, s->other, run, s->quantity }, err, errlen);
    if (!r)
        return -1;
    int rc = 0;
    if (PQntuples(r) == 1) {
        if (w->n == window) {      /* the oldest leaves the window */
            memmove(w->ids, w->ids + 1, (w->n - 1) * sizeof *w->ids);
            for (int m = 0; m < 3; m++)
                memmove(w->pt[m], w->pt[m] + 1, (w->n - 1) *
                        sizeof *w->pt[m]);
            w->n--;
        }
        s_point_cols_t cols;
        s_point_cols(r, &cols);
        s_take_row(r, &cols, 0, s->other[0] != '\0', w, w->n++);
        rc = 1;
    }
    PQclear(r);
    return rc;
}

/* Keep w, whose newest run is run, as the series' detect_windows row. */
static int
s_keep(co_conn_t *c, const s_series_t *s, const char *run, const s_window_t *w,
       size_t window, char *err, size_t errlen)
{
    size_t len;
    unsigned char *buf = s_pack(w, window, &len);
    if (!buf) {
        snprintf(err, errlen, "window: out of memory");
        return -1;
    }
    const char *p[] = { s->bench, s->host, s->vars, s->subject, s->other,
                        run, s->started, (const char *)buf, s->quantity };
    int lens[9] = { 0, 0, 0, 0, 0, 0, 0, (int)len, 0 };
    int fmts[9] = { 0, 0, 0, 0, 0, 0, 0, 1, 0 };
    PGresult *r = s_qx(c, &s_sql[S_KEEP], p, lens, fmts, 0, err, errlen);
    free(buf);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

/* "{1,2,3}" of ids[0..n) into buf (len >= 24 * n + 3). */
static void
s_id_array(char *buf, size_t len, const int64_t *ids, size_t n)
{
    size_t at = (size_t)snprintf(buf, len, "{");
    for (size_t k = 0; k < n && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, "%s%" PRId64, k ? "," : "",
                               ids[k]);
    if (at < len)
        snprintf(buf + at, len - at, "}");
}

/* The series' change points whose first run after lies where this
 * window could place one (CO_DETECT_EDGE runs from either end) and that
 * no step of it matched (kept: the ids written now) are superseded: the
 * runs since showed them to be noise, or placed them better (019). */
static int
s_supersede(co_conn_t *c, const s_series_t *s, const s_window_t *w,
            const int64_t *kept, size_t nkept, char *err, size_t errlen)
{
    char *zone, keep[(3 * 16 + 8) * 24 + 3], at[24];
    if (w->n <= 2 * CO_DETECT_EDGE)
        return 0;
    size_t nz = w->n - 2 * CO_DETECT_EDGE, zlen = 24 * nz + 3;
    if (!(zone = malloc(zlen))) {
        snprintf(err, errlen, "supersede: out of memory");
        return -1;
    }
    s_id_array(zone, zlen, w->ids + CO_DETECT_EDGE, nz);
    s_id_array(keep, sizeof keep, kept, nkept);
    snprintf(at, sizeof at, "%" PRId64, pw_clock_unix_us());
    const char *p[] = { s->bench, s->host, s->vars, s->subject, s->other,
                        zone, keep, at, s->quantity };
    PGresult *r = s_q(c, &s_sql[S_SUPERSEDE], p, err, errlen);
    free(zone);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

/* The steps of a window from each metric's changes (ch[m][0..nch[m]),
 * m: ratio, subject, other): a ratio change with the arms' changes at the
 * same runs; a subject change the ratio did not show, under "other" when
 * the other arm moved with it; the other arm's own. Each is stored once
 * (s_store). */
/* Drifts: each metric's staircase (vd_trend.h) among the changes not
 * used yet, stored as one change point; its folded changes and the
 * other metrics' near them marked used. The ratio's first: a drift of
 * the subject shows there, unless the other arm's noise hides it. */
static int
s_trends(co_conn_t *c, const s_series_t *s, const s_window_t *w,
         const vd_change_params_t *params, vd_change_t (*ch)[16],
         const size_t *nch, bool (*used)[16], int *found, int64_t *kept,
         size_t *nkept, bool *whole, char *err, size_t errlen)
{
    static const char *const name[3] = { "ratio", "subject", "other" };
    for (int p = 0; p < 3; p++) {
        vd_change_t free_ch[16];
        size_t map[16], nf = 0, ntr = 0;
        vd_trend_t tr[8];
        if (p != 1 && !s->other[0])
            continue;
        for (size_t k = 0; k < nch[p]; k++)
            if (!used[p][k]) {
                map[nf] = k;
                free_ch[nf++] = ch[p][k];
            }
        vd_params_t rule = params->rule;
        rule.floor_us = p == 0 ? 0.0 : s->floor_us;
        if (vd_trend_find(w->pt[p], w->n, free_ch, nf, &rule, tr, 8, &ntr,
                          err, errlen) != VD_OK)
            return -1;
        for (size_t t = 0; t < ntr; t++) {
            double pmin = 1.0;
            for (size_t f = tr[t].first; f <= tr[t].last; f++) {
                used[p][map[f]] = true;
                pmin = free_ch[f].p_value < pmin ? free_ch[f].p_value : pmin;
            }
            /* The other metrics' changes the same way within its span
             * are the same drift seen through them. */
            bool up = tr[t].total > 1.0;
            for (int o = 0; o < 3; o++)
                for (size_t k = 0; o != p && k < nch[o]; k++)
                    if (ch[o][k].index + 2 >= tr[t].start &&
                        ch[o][k].index <= tr[t].end + 2 &&
                        (ch[o][k].magnitude > 1.0) == up)
                        used[o][k] = true;
            vd_change_t one = { tr[t].start, tr[t].before, tr[t].now,
                                tr[t].total, pmin, tr[t].outcome,
                                tr[t].within_noise };
            s_step_t st = { name[p], &one, { NAN, NAN, NAN },
                            tr[t].per_point };
            st.mag[p] = tr[t].total;
            if (s_store(c, s, w->ids, w->n, &st, found, &kept[*nkept], err,
                        errlen) != 0)
                return -1;
            *whole = *whole && kept[*nkept] != 0;
            (*nkept)++;
        }
    }
    return 0;
}

static int
s_steps(co_conn_t *c, const s_series_t *s, const s_window_t *w,
        const vd_change_params_t *params, vd_change_t (*ch)[16],
        const size_t *nch, int *found, char *err, size_t errlen)
{
    bool used[3][16] = { { false } };
    int64_t kept[3 * 16 + 8];   /* the change points written, by id */
    size_t nkept = 0;
    bool whole = true;
    int rc = s_trends(c, s, w, params, ch, nch, used, found, kept, &nkept,
                      &whole, err, errlen);
    for (int m = 0; m < 3 && rc == 0; m++)
        for (size_t k = 0; k < nch[m] && rc == 0; k++) {
            const vd_change_t *x = &ch[m][k];
            if (used[m][k] || x->index < 1 || x->index >= w->n)
                continue;
            used[m][k] = true;
            s_step_t st = { m == 0 ? "ratio" : m == 1 ? "subject" : "other",
                            x, { NAN, NAN, NAN }, NAN };
            st.mag[m] = x->magnitude;
            for (int o = m + 1; o < 3; o++) {
                int j = s_near(ch[o], nch[o], used[o], x->index);
                if (j >= 0) {
                    used[o][j] = true;
                    st.mag[o] = ch[o][j].magnitude;
                    /* Both arms moved and the ratio did not: the
                     * environment changed, named by the other arm. */
                    if (m == 1 && o == 2) {
                        st.metric = "other";
                        st.ch = &ch[o][j];
                    }
                }
            }
            rc = s_store(c, s, w->ids, w->n, &st, found, &kept[nkept],
                         err, errlen);
            whole = whole && kept[nkept] != 0;
            nkept++;
        }
    return rc == 0 && whole ? s_supersede(c, s, w, kept, nkept, err, errlen)
                            : rc;
}

/* A series' window up to run (kept row, or read in full and kept), and
 * the change points of each metric in it. */
static int
s_series(co_conn_t *c, const s_series_t *s, const char *run,
         const vd_change_params_t *params, int *found, char *err,
         size_t errlen)
{
    s_window_t w;
    vd_change_t ch[3][16];
    size_t nch[3] = { 0, 0, 0 };
    int rc = -1;
    if (s_window_init(&w, params->window) != 0) {
        snprintf(err, errlen, "series: out of memory for %zu points",
                 params->window);
        goto done;
    }
    int kept = s_read_kept(c, s, run, params->window, &w, err, errlen);
    if (kept < 0 || (kept == 0 && s_read_full(c, s, params->window, &w, err,
                                              errlen) != 0))
        goto done;
    /* A window that ends with the run is worth keeping (unless the row
     * holds it already); one that does not (the run has no summary) is
     * read in full next time. */
    if (kept != 2 && w.n > 0 && w.ids[w.n - 1] == strtoll(run, NULL, 10) &&
        s_keep(c, s, run, &w, params->window, err, errlen) != 0)
        goto done;
    rc = 0;
    for (int m = 0; m < 3 && rc == 0 && w.n >= 2; m++) {
        nch[m] = 0;
        if (m != 1 && !s->other[0])
            continue;
        vd_change_params_t mp = *params;
        mp.floor_us = m == 0 ? 0.0 : s->floor_us;
        if (vd_change_find(w.pt[m], w.n, &mp, ch[m], 16, &nch[m], err,
                           errlen) != VD_OK)
            rc = -1;
    }
    if (rc == 0 && w.n >= 2)
        rc = s_steps(c, s, &w, params, ch, nch, found, err, errlen);
done:
    s_window_free(&w);
    return rc;
}

/* True when the space-separated list names metric. */
static bool
s_tracks(const char *list, const char *metric)
{
    size_t n = strlen(metric);
    for (const char *p = list; (p = strstr(p, metric)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

int
co_detect_run(co_conn_t *c, int64_t run, const vd_change_params_t *params,
              int *found, char *err, size_t errlen)
{
    char id[24];
    snprintf(id, sizeof id, "%" PRId64, run);
    const char *p[] = { id };
    *found = 0;
    /* The metrics the run tracks besides wall time (whose history every
     * run has), each with the host's floor of it (025). */
    PGresult *info = s_q(c, &s_sql[S_RUN], p, err, errlen);
    if (!info)
        return -1;
    if (PQntuples(info) != 1
        || !co_val_bool(info, 0, co_col(info, "complete"))) {
        PQclear(info);
        return 0;   /* gone, or not a complete run: nothing to look at */
    }
    /* An --against instance is no series (023): its verdict compares
     * two revisions inside the job. */
    PGresult *arms = s_q(c, &s_sql[S_RUN_ARMS], p, err, errlen);
    if (!arms) {
        PQclear(info);
        return -1;
    }
    int narms = PQntuples(arms), subject = 0, rc = 0,
        i_name = co_col(arms, "name"), i_subject = co_col(arms, "subject");
    for (int i = 0; i < narms; i++)
        if (co_val_bool(arms, i, i_subject)) {
            subject = i;
            break;
        }
    int i_floor = co_col(info, "floor_us");
    s_series_t s = { co_val(info, 0, co_col(info, "benchmark_id")),
                     co_val(info, 0, co_col(info, "host_id")),
                     co_val(info, 0, co_col(info, "vars")), NULL, "",
                     co_val(info, 0, co_col(info, "started_at_us")), "wall",
                     /* A host without a floor yet: the rule's default. */
                     co_val_null(info, 0, i_floor) ? VD_DEFAULT_FLOOR_US
                     : co_val_f64(info, 0, i_floor) };
    if (narms > 0)
        s.subject = co_val(arms, subject, i_name);
    const char *tracked = co_val(info, 0, co_col(info, "metrics"));
    for (int m = 0; m < VD_METRIC_COUNT && rc == 0; m++) {
        if (m != VD_METRIC_WALL) {
            if (!s_tracks(tracked, vd_metric_name((vd_metric_t)m)))
                continue;
            char fname[32];
            s.quantity = vd_metric_name((vd_metric_t)m);
            snprintf(fname, sizeof fname, "floor_%s", s.quantity);
            int col = co_col(info, fname);
            /* No floor kept yet: the metric's resolution (rusage's tick
             * is the larger for cpu). */
            s.floor_us = !co_val_null(info, 0, col)
                ? co_val_f64(info, 0, col)
                : vd_metric_resolution((vd_metric_t)m, VD_CPU_RUSAGE, 100);
        }
        for (int k = 0; k < narms && rc == 0; k++) {
            if (k == subject && narms > 1)
                continue;
            s.other = narms > 1 ? co_val(arms, k, i_name) : "";
            rc = s_series(c, &s, id, params, found, err, errlen);
        }
    }
    PQclear(arms);
    PQclear(info);
    return rc;
}

/* ---- the thread ------------------------------------------------------- */

/* The server process of the connection at CO_DETECT_NICE, once per
 * connection (co_pg_renice_once), as co_qpool's workers do. */
static void
s_renice_backend(co_detect_t *d)
{
    int pid = PQbackendPID(co_conn_raw(d->conn));
    if (d->renice && co_pg_renice_once(pid, CO_DETECT_NICE,
                                       &d->niced_pid) < 0)
        co_log(CO_LOG_DEBUG, "renice_failed", "pid=%d errno=%d", pid, errno);
}

static bool
s_connect(co_detect_t *d)
{
    char err[512];
    if (!co_conn_pg(d->conn, err, sizeof err)) {
        co_log(CO_LOG_WARN, "detect_db", "why=\"%s\"", err);
        return false;
    }
    /* Detection is background work: on the private cluster its server
     * process yields the CPU to the writer's and to queries (as
     * co_qpool's do, further). */
    s_renice_backend(d);
    return true;
}

static void *
s_thread(void *arg)
{
    co_detect_t *d = arg;
    if (d->renice)
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), CO_DETECT_NICE);
    vd_change_params_t params;
    vd_change_params_default(&params);
    params.rule.parity = d->parity;
    if (params.window > CO_DETECT_WINDOW_MAX)
        params.window = CO_DETECT_WINDOW_MAX;
    pthread_mutex_lock(&d->lock);
    while (!d->stop) {
        if (d->count == 0) {
            pthread_cond_wait(&d->wake, &d->lock);
            continue;
        }
        int64_t run = d->ring[d->head];
        d->head = (d->head + 1) % CO_DETECT_QUEUE;
        d->count--;
        pthread_mutex_unlock(&d->lock);
        char err[512] = "";
        int found = 0, rc = -1;
        if (s_connect(d))
            rc = co_detect_run(d->conn, run, &params, &found, err,
                               sizeof err);
        if (rc != 0 && err[0])
            co_log(CO_LOG_WARN, "detect_failed", "run=%" PRId64 " why=\"%s\"",
                   run, err);
        if (found > 0)
            co_log(CO_LOG_INFO, "change_points", "run=%" PRId64 " found=%d",
                   run, found);
        pthread_mutex_lock(&d->lock);
        d->c.runs++;
        d->c.found += (uint64_t)found;
        if (rc != 0)
            d->c.failed++;
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

co_detect_t *
co_detect_new(const char *conninfo, double parity, bool renice, char *err,
              size_t errlen)
{
    co_detect_t *d = calloc(1, sizeof *d);
    co_conn_opts_t o = { .conninfo = conninfo,
                         .settings = CO_DETECT_SETTINGS,
                         .statement_timeout_ms = CO_DETECT_TIMEOUT_MS };
    if (!d || !(d->conn = co_conn_new(&o))) {
        snprintf(err, errlen, "co_detect: out of memory");
        free(d);
        return NULL;
    }
    d->parity = parity;
    d->renice = renice;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->wake, NULL);
    if (pthread_create(&d->thread, NULL, s_thread, d) != 0) {
        snprintf(err, errlen, "pthread_create(detect) failed");
        co_detect_destroy(&d);
        return NULL;
    }
    d->started = true;
    return d;
}

void
co_detect_push(co_detect_t *d, int64_t run)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->lock);
    if (d->count == CO_DETECT_QUEUE) {
        d->c.dropped++;
    } else {
        d->ring[(d->head + d->count) % CO_DETECT_QUEUE] = run;
        d->count++;
        pthread_cond_signal(&d->wake);
    }
    pthread_mutex_unlock(&d->lock);
}

void
co_detect_counters(co_detect_t *d, co_detect_counters_t *out)
{
    memset(out, 0, sizeof *out);
    if (!d)
        return;
    pthread_mutex_lock(&d->lock);
    *out = d->c;
    pthread_mutex_unlock(&d->lock);
}

void
co_detect_destroy(co_detect_t **dp)
{
    if (!dp || !*dp)
        return;
    co_detect_t *d = *dp;
    if (d->started) {
        pthread_mutex_lock(&d->lock);
        d->stop = true;
        pthread_cond_signal(&d->wake);
        pthread_mutex_unlock(&d->lock);
        pthread_join(d->thread, NULL);
    }
    co_conn_destroy(&d->conn);
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->wake);
    free(d);
    *dp = NULL;
}
