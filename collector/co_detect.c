/* co_detect.c -- change points as runs are stored; see co_detect.h. */
#include "co_detect.h"

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

#include "co_log.h"
#include "pw_clock.h"

/* Environment fields whose change between two runs is worth a note on a
 * series (ag_env's keys). */
static const char *const s_env_keys[] = {
    "kernel", "cpu_model", "microcode", "governor", "turbo",
    "agent_version", NULL
};

#define S_ANNOT_MAX 16
#define S_ANNOT_LEN 200

struct co_detect {
    char *conninfo;
    double parity;
    bool renice;          /* the private cluster: lower our priority */
    PGconn *conn;
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
    int64_t ring[CO_DETECT_QUEUE];
    size_t head, count;
    co_detect_counters_t c;
};

/* Run sql as the prepared statement name (prepared on this connection
 * the first time: planning the series query took 8 ms, running it
 * 0.2 ms; co_detect_session makes the plan generic). */
static PGresult *
s_q(PGconn *c, const char *name, const char *sql, int n,
    const char *const *p, ExecStatusType want, char *err, size_t errlen)
{
    PGresult *r = PQexecPrepared(c, name, n, p, NULL, NULL, 0);
    const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (st && strcmp(st, "26000") == 0) {   /* not prepared yet */
        PQclear(r);
        r = PQprepare(c, name, sql, n, NULL);
        if (PQresultStatus(r) == PGRES_COMMAND_OK) {
            PQclear(r);
            r = PQexecPrepared(c, name, n, p, NULL, NULL, 0);
        }
    }
    if (PQresultStatus(r) != want) {
        snprintf(err, errlen, "%.60s: %s", sql, PQerrorMessage(c));
        err[strcspn(err, "\n")] = '\0';
        PQclear(r);
        return NULL;
    }
    return r;
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
s_annotations(PGconn *c, int64_t a, int64_t b, char (*notes)[S_ANNOT_LEN],
              size_t *n, char *err, size_t errlen)
{
    char sa[24], sb[24];
    snprintf(sa, sizeof sa, "%" PRId64, a);
    snprintf(sb, sizeof sb, "%" PRId64, b);
    const char *p[] = { sa, sb };
    PGresult *r = s_q(c, "det_env",
        "SELECT (SELECT e.environment_json FROM runs r JOIN "
                      "environments e ON e.id = r.environment WHERE r.id = "
                      "$1), (SELECT e.environment_json FROM runs r JOIN "
                      "environments e ON e.id = r.environment WHERE r.id = "
                      "$2)", 2, p, PGRES_TUPLES_OK, err, errlen);
    if (!r)
        return -1;
    const char *ea = PQgetisnull(r, 0, 0) ? NULL : PQgetvalue(r, 0, 0);
    const char *eb = PQgetisnull(r, 0, 1) ? NULL : PQgetvalue(r, 0, 1);
    for (size_t k = 0; ea && eb && s_env_keys[k]; k++) {
        char va[80], vb[80];
        s_env_text(ea, s_env_keys[k], va, sizeof va);
        s_env_text(eb, s_env_keys[k], vb, sizeof vb);
        if (strcmp(va, vb) != 0)
            s_note(notes, n, "%s %s -> %s", s_env_keys[k],
                   va[0] ? va : "(none)", vb[0] ? vb : "(none)");
    }
    PQclear(r);
    r = s_q(c, "det_arms_diff",
        "SELECT x.name, x.argv::text <> y.argv::text OR x.shell <> "
            "y.shell, x.version_output <> y.version_output FROM arms x JOIN "
            "arms y ON y.run = $2 AND y.name = x.name WHERE x.run = $1 "
            "ORDER BY x.idx", 2, p, PGRES_TUPLES_OK, err, errlen);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r); i++) {
        if (strcmp(PQgetvalue(r, i, 1), "t") == 0)
            s_note(notes, n, "arm %.60s: command changed",
                   PQgetvalue(r, i, 0));
        if (strcmp(PQgetvalue(r, i, 2), "t") == 0)
            s_note(notes, n, "arm %.60s: versions output changed",
                   PQgetvalue(r, i, 0));
    }
    PQclear(r);
    return 0;
}

/* ---- one series ------------------------------------------------------- */

typedef struct {
    const char *bench, *host, *vars;   /* as text, for parameters */
    const char *subject, *other;       /* other "" for a one-arm run */
    const char *started;               /* the run's start: the window's end */
    double floor_us;
} s_series_t;

static void
s_point(PGresult *r, int row, int col, vd_point_t *pt)
{
    pt->median = strtod(PQgetvalue(r, row, col), NULL);
    pt->min = strtod(PQgetvalue(r, row, col + 1), NULL);
    pt->q25 = strtod(PQgetvalue(r, row, col + 2), NULL);
    pt->q75 = strtod(PQgetvalue(r, row, col + 3), NULL);
    pt->max = strtod(PQgetvalue(r, row, col + 4), NULL);
    pt->n = (size_t)strtoull(PQgetvalue(r, row, col + 5), NULL, 10);
}

/* Store one change point unless the series has one within two runs of
 * it already (a change found again as the window moves). */
static int
s_store(PGconn *c, const s_series_t *s, const char *metric,
        const int64_t *ids, size_t n, const vd_change_t *ch, int *found,
        char *err, size_t errlen)
{
    char near[5 * 24 + 8], before[24], after[24], bv[32], av[32], mag[32];
    char pv[32], at[24];
    size_t len = (size_t)snprintf(near, sizeof near, "{");
    for (size_t k = ch->index >= 2 ? ch->index - 2 : 0;
         k <= ch->index + 2 && k < n; k++)
        len += (size_t)snprintf(near + len, sizeof near - len, "%s%" PRId64,
                                len > 1 ? "," : "", ids[k]);
    snprintf(near + len, sizeof near - len, "}");
    const char *pn[] = { s->bench, s->host, s->vars, s->subject, s->other,
                         metric, near };
    PGresult *r = s_q(c, "det_known",
        "SELECT 1 FROM change_points WHERE benchmark_id = "
                      "$1 AND host_id = $2 AND vars = $3::jsonb AND subject "
                      "= $4 AND other = $5 AND metric = $6 AND after_run = "
                      "ANY($7::bigint[])", 7, pn, PGRES_TUPLES_OK, err,
                      errlen);
    if (!r)
        return -1;
    bool known = PQntuples(r) > 0;
    PQclear(r);
    if (known)
        return 0;
    char notes[S_ANNOT_MAX][S_ANNOT_LEN];
    size_t nn = 0;
    if (s_annotations(c, ids[ch->index - 1], ids[ch->index], notes, &nn, err,
                      errlen) != 0)
        return -1;
    json_t *arr = json_array();
    for (size_t k = 0; arr && k < nn; k++)
        json_array_append_new(arr, json_string(notes[k]));
    char *notes_json = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
    json_decref(arr);
    if (!notes_json) {
        snprintf(err, errlen, "change point: out of memory");
        return -1;
    }
    snprintf(before, sizeof before, "%" PRId64, ids[ch->index - 1]);
    snprintf(after, sizeof after, "%" PRId64, ids[ch->index]);
    snprintf(bv, sizeof bv, "%.17g", ch->before);
    snprintf(av, sizeof av, "%.17g", ch->after);
    snprintf(mag, sizeof mag, "%.17g", ch->magnitude);
    snprintf(pv, sizeof pv, "%.17g", ch->p_value);
    snprintf(at, sizeof at, "%" PRId64, pw_clock_unix_us());
    /* Slower subject: the ratio or the subject's median went up and the
     * rule says loss beyond the noise. The other arm's own steps are
     * kept and shown, but are not the subject's regression. */
    bool regression = strcmp(metric, "other") != 0 && !ch->within_noise &&
                      ch->outcome == VD_LOSS;
    const char *pi[] = { s->bench, s->host, s->vars, s->subject, s->other,
                         metric, before, after, bv, av, mag, pv,
                         vd_outcome_name(ch->outcome),
                         ch->within_noise ? "t" : "f",
                         regression ? "t" : "f", notes_json, at };
    r = s_q(c, "det_insert",
        "INSERT INTO change_points (benchmark_id, host_id, vars, "
            "subject, other, metric, before_run, after_run, before_value, "
            "after_value, magnitude, p_value, outcome, within_noise, "
            "regression, annotations, detected_at_us) VALUES ($1, $2, "
            "$3::jsonb, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, "
            "ARRAY(SELECT json_array_elements_text($16::json)), $17) ON "
            "CONFLICT DO NOTHING", 17, pi, PGRES_COMMAND_OK, err, errlen);
    free(notes_json);
    if (!r)
        return -1;
    *found += atoi(PQcmdTuples(r));
    PQclear(r);
    return 0;
}

/* The series' newest points (oldest first) and change points of each
 * metric. */
static int
s_series(PGconn *c, const s_series_t *s, const vd_change_params_t *params,
         int *found, char *err, size_t errlen)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%zu", params->window);
    const char *p[] = { s->bench, s->host, s->vars, s->subject, s->other,
                        s->started, lim };
    PGresult *r = s_q(c, "det_series",
        "SELECT r.id, ss.median, ss.min, ss.q25, ss.q75, ss.max, ss.n, "
        "so.median, so.min, so.q25, so.q75, so.max, so.n FROM runs r "
        "JOIN arms a1 ON a1.run = r.id AND a1.name = $4 "
        "JOIN run_summaries ss ON ss.run = r.id AND ss.arm = a1.idx "
        "LEFT JOIN arms a2 ON a2.run = r.id AND a2.name = $5 "
        "LEFT JOIN run_summaries so ON so.run = r.id AND so.arm = a2.idx "
        "WHERE r.benchmark_id = $1 AND r.host_id = $2 AND r.vars = "
        "$3::jsonb AND r.status = 'complete' AND r.started_at_us <= $6 "
        "AND ss.median IS NOT NULL AND ($5 = '' OR so.median IS NOT NULL) "
        "ORDER BY r.started_at_us DESC LIMIT $7", 7, p, PGRES_TUPLES_OK,
        err, errlen);
    if (!r)
        return -1;
    size_t n = (size_t)PQntuples(r);
    int rc = 0;
    int64_t *ids = calloc(n ? n : 1, sizeof *ids);
    vd_point_t *pt[3];
    vd_change_t ch[16];
    for (int m = 0; m < 3; m++)
        pt[m] = calloc(n ? n : 1, sizeof *pt[m]);
    if (!ids || !pt[0] || !pt[1] || !pt[2]) {
        snprintf(err, errlen, "series: out of memory for %zu points", n);
        rc = -1;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        int row = (int)(n - 1 - i);    /* oldest first */
        ids[i] = strtoll(PQgetvalue(r, row, 0), NULL, 10);
        s_point(r, row, 1, &pt[1][i]);
        if (s->other[0]) {
            s_point(r, row, 7, &pt[2][i]);
            /* The ratio of the minimums too: vd_change's timing-mode
             * check reads min (NaN there let sticky timing modes of the
             * subject through: 440 reports in 11,430 runs, against 1). */
            pt[0][i] = (vd_point_t){ pt[1][i].median / pt[2][i].median,
                                     pt[1][i].min / pt[2][i].min,
                                     NAN, NAN, NAN,
                                     pt[1][i].n < pt[2][i].n ? pt[1][i].n
                                                             : pt[2][i].n };
        }
    }
    static const char *const metric[3] = { "ratio", "subject", "other" };
    for (int m = 0; m < 3 && rc == 0 && n >= 2; m++) {
        if (m != 1 && !s->other[0])
            continue;
        vd_change_params_t mp = *params;
        mp.floor_us = m == 0 ? 0.0 : s->floor_us;
        size_t nch = 0;
        if (vd_change_find(pt[m], n, &mp, ch, 16, &nch, err, errlen) != VD_OK) {
            rc = -1;
            break;
        }
        for (size_t k = 0; k < nch && rc == 0; k++)
            if (ch[k].index >= 1 && ch[k].index < n)
                rc = s_store(c, s, metric[m], ids, n, &ch[k], found, err,
                             errlen);
    }
done:
    PQclear(r);
    free(ids);
    for (int m = 0; m < 3; m++)
        free(pt[m]);
    return rc;
}

void
co_detect_session(PGconn *c)
{
    PQclear(PQexec(c, "SET statement_timeout = '10s'; SET jit = off; "
                   "SET plan_cache_mode = force_generic_plan"));
}

int
co_detect_run(PGconn *c, int64_t run, const vd_change_params_t *params,
              int *found, char *err, size_t errlen)
{
    char id[24];
    snprintf(id, sizeof id, "%" PRId64, run);
    const char *p[] = { id };
    *found = 0;
    PGresult *info = s_q(c, "det_run",
        "SELECT r.benchmark_id, r.host_id, r.vars::text, "
                         "r.started_at_us, h.floor_us, "
                         "r.status = 'complete' FROM runs r JOIN hosts h ON "
                         "h.id = r.host_id WHERE r.id = $1", 1, p,
                         PGRES_TUPLES_OK, err, errlen);
    if (!info)
        return -1;
    if (PQntuples(info) != 1 || strcmp(PQgetvalue(info, 0, 5), "t") != 0) {
        PQclear(info);
        return 0;   /* gone, or not a complete run: nothing to look at */
    }
    PGresult *arms = s_q(c, "det_run_arms",
        "SELECT name, subject FROM arms WHERE run = $1 "
                         "ORDER BY idx", 1, p, PGRES_TUPLES_OK, err, errlen);
    if (!arms) {
        PQclear(info);
        return -1;
    }
    int narms = PQntuples(arms), subject = 0, rc = 0;
    for (int i = 0; i < narms; i++)
        if (strcmp(PQgetvalue(arms, i, 1), "t") == 0) {
            subject = i;
            break;
        }
    s_series_t s = { PQgetvalue(info, 0, 0), PQgetvalue(info, 0, 1),
                     PQgetvalue(info, 0, 2), NULL, "",
                     PQgetvalue(info, 0, 3),
                     /* A host without a floor yet: the rule's default. */
                     PQgetisnull(info, 0, 4) ? VD_DEFAULT_FLOOR_US
                     : strtod(PQgetvalue(info, 0, 4), NULL) };
    if (narms > 0)
        s.subject = PQgetvalue(arms, subject, 0);
    for (int k = 0; k < narms && rc == 0; k++) {
        if (k == subject && narms > 1)
            continue;
        s.other = narms > 1 ? PQgetvalue(arms, k, 0) : "";
        rc = s_series(c, &s, params, found, err, errlen);
    }
    PQclear(arms);
    PQclear(info);
    return rc;
}

/* ---- the thread ------------------------------------------------------- */

static bool
s_connect(co_detect_t *d)
{
    char err[512];
    if (d->conn && PQstatus(d->conn) == CONNECTION_OK)
        return true;
    PQfinish(d->conn);
    d->conn = PQconnectdb(d->conninfo);
    if (PQstatus(d->conn) != CONNECTION_OK) {
        snprintf(err, sizeof err, "%s", PQerrorMessage(d->conn));
        err[strcspn(err, "\n")] = '\0';
        co_log(CO_LOG_WARN, "detect_db", "why=\"%s\"", err);
        PQfinish(d->conn);
        d->conn = NULL;
        return false;
    }
    /* Detection is background work: it must never hold locks long, and
     * on the private cluster its server process yields the CPU to the
     * writer's and to queries (as co_qpool's do, further). */
    co_detect_session(d->conn);
    if (d->renice && PQbackendPID(d->conn) > 0)
        setpriority(PRIO_PROCESS, (id_t)PQbackendPID(d->conn),
                    CO_DETECT_NICE);
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
    if (!d || !(d->conninfo = strdup(conninfo ? conninfo : ""))) {
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
    PQfinish(d->conn);
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->wake);
    free(d->conninfo);
    free(d);
    *dp = NULL;
}
