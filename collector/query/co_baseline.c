/* co_baseline.c -- a job's runs against a baseline's (co_baseline.h). */
#include "co_baseline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co_kinds.h"
#include "co_reply.h"
#include "pw_json.h"
#include "vd_verdict.h"

/* The job's newest run of each benchmark on each host, its subject arm
 * (the arm flagged so, else arm 0), the floor its verdicts were given,
 * and the baseline run: the newest complete run of the same benchmark
 * on the same host in an ended job whose tags contain $2. Benchmarks in
 * the order they ran, hosts by name. */
static const char S_ENTRIES_SQL[] =
    "WITH cur AS (SELECT DISTINCT ON (r.host_id, r.benchmark_id) r.id, "
    "  r.run_uuid, r.host_id, r.benchmark_id, r.status, r.reason, "
    "  h.name AS host, b.name AS bench FROM runs r "
    "  JOIN hosts h ON h.id = r.host_id "
    "  JOIN benchmarks b ON b.id = r.benchmark_id "
    "  WHERE r.job_id = $1 ORDER BY r.host_id, r.benchmark_id, r.id DESC) "
    "SELECT c.bench, c.host, c.run_uuid, c.status, c.reason, sa.name AS "
    "  arm, f.floor_us, f.is_default, f.n_samples AS pool_runs, f.quiet AS "
    "  pool_quiet, f.oldest_us AS pool_oldest_us, f.newest_us AS "
    "  pool_newest_us, c.id, base.id AS base_id, base.run_uuid AS "
    "  base_run, base.job_id AS base_job, base.started_at_us AS "
    "  base_started_at_us, base.tags::text AS base_tags, "
    "  EXISTS (SELECT 1 FROM arms WHERE run = base.id AND name = sa.name) "
    "  AS base_has_arm "
    "FROM cur c "
    "LEFT JOIN LATERAL (SELECT name FROM arms WHERE run = c.id "
    "  ORDER BY subject DESC, idx LIMIT 1) sa ON true "
    "LEFT JOIN floors f ON f.run = c.id "
    "LEFT JOIN LATERAL (SELECT r2.id, r2.run_uuid, r2.job_id, "
    "  r2.started_at_us, r2.tags FROM runs r2 "
    "  JOIN jobs j2 ON j2.job_uuid = r2.job_id "
    "  WHERE r2.benchmark_id = c.benchmark_id AND r2.host_id = c.host_id "
    "  AND r2.status = 'complete' AND r2.job_id <> $1 "
    "  AND j2.state = 'ended' AND j2.tags @> $2::jsonb "
    "  ORDER BY r2.started_at_us DESC, r2.id DESC LIMIT 1) base ON true "
    "ORDER BY min(c.id) OVER (PARTITION BY c.bench), c.bench, c.host, "
    "  c.host_id LIMIT $3::int";
static const co_stmt_t s_st_entries = { "baseline.entries", S_ENTRIES_SQL, 3,
    PGRES_TUPLES_OK, false };

/* Columns of S_ENTRIES_SQL, by name, and its result with them resolved
 * (once per result). */
enum { C_BENCH, C_HOST, C_RUN, C_STATUS, C_REASON, C_ARM, C_FLOOR,
       C_FLOOR_DEFAULT, C_RUN_ID, C_BASE_ID, C_BASE_RUN, C_BASE_JOB,
       C_BASE_STARTED, C_BASE_TAGS, C_BASE_HAS_ARM, C_COUNT };
static const char *const s_entry_cols[C_COUNT] = {
    [C_BENCH] = "bench", [C_HOST] = "host", [C_RUN] = "run_uuid",
    [C_STATUS] = "status", [C_REASON] = "reason", [C_ARM] = "arm",
    [C_FLOOR] = "floor_us", [C_FLOOR_DEFAULT] = "is_default",
    [C_RUN_ID] = "id", [C_BASE_ID] = "base_id", [C_BASE_RUN] = "base_run",
    [C_BASE_JOB] = "base_job", [C_BASE_STARTED] = "base_started_at_us",
    [C_BASE_TAGS] = "base_tags", [C_BASE_HAS_ARM] = "base_has_arm",
};
typedef struct {
    PGresult *r;
    int c[C_COUNT];
    co_reply_pool_cols_t pool;
} s_entries_t;

/* The measured wall times of arm (by name) in the job's run ($1) and the
 * baseline run ($2): the job's first, each run's in ascending order. */
static const char S_SAMPLES_SQL[] =
    "SELECT s.run = $1::bigint AS mine, s.wall_us FROM samples s "
    "JOIN arms a ON a.run = s.run AND a.idx = s.arm "
    "WHERE s.run IN ($1::bigint, $2::bigint) AND s.kind = " CO_SQL_MEASURED " "
    "AND a.name = $3 ORDER BY 1 DESC, 2 LIMIT $4::int";
static const co_stmt_t s_st_samples = { "baseline.samples", S_SAMPLES_SQL, 4,
    PGRES_TUPLES_OK, false };

/* Both runs' samples of one entry: the job's (a) and the baseline's (b),
 * slices of one buffer. */
typedef struct {
    double *x;
    size_t na, nb;
} s_pair_t;

/* Read entry row i's samples into p. False with c's status set. */
static bool
s_samples(co_reply_t *c, const s_entries_t *e, int i, s_pair_t *p)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", CO_BASELINE_SAMPLES_MAX + 1);
    const char *pv[] = { co_val(e->r, i, e->c[C_RUN_ID]),
                         co_val(e->r, i, e->c[C_BASE_ID]),
                         co_val(e->r, i, e->c[C_ARM]), lim };
    PGresult *r = co_reply_run(c, &s_st_samples, pv);
    if (!r)
        return false;
    int n = PQntuples(r);
    if (n > CO_BASELINE_SAMPLES_MAX) {
        PQclear(r);
        co_reply_fail(c, CO_REPLY_TOO_BIG, "%s on %s: more than %d measured "
                      "samples in the run and its baseline",
                      co_val(e->r, i, e->c[C_BENCH]), co_val(e->r, i, e->c[C_HOST]),
                      CO_BASELINE_SAMPLES_MAX);
        return false;
    }
    p->x = malloc((n ? (size_t)n : 1) * sizeof *p->x);
    if (!p->x) {
        PQclear(r);
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
        return false;
    }
    p->na = p->nb = 0;
    int i_mine = co_col(r, "mine"), i_wall = co_col(r, "wall_us");
    for (int k = 0; k < n; k++) {
        p->x[k] = co_val_f64(r, k, i_wall);
        if (co_val_bool(r, k, i_mine))
            p->na++;
        else
            p->nb++;
    }
    PQclear(r);
    return true;
}

/* The verdict of entry row i, or its reason for having none, into
 * entry. False with c's status set (database, memory). */
static bool
s_judge(co_reply_t *c, const s_entries_t *e, int i, double parity, json_t *entry)
{
    const char *why = NULL;
    char text[512];
    if (co_val_null(e->r, i, e->c[C_STATUS]) ||
        strcmp(co_val(e->r, i, e->c[C_STATUS]), "complete") != 0) {
        snprintf(text, sizeof text, "the run did not complete (%s%s%.200s)",
                 co_val_null(e->r, i, e->c[C_STATUS]) ? "running" :
                 co_val(e->r, i, e->c[C_STATUS]),
                 co_val_null(e->r, i, e->c[C_REASON]) ||
                 !*co_val(e->r, i, e->c[C_REASON]) ? "" : ": ",
                 co_val_null(e->r, i, e->c[C_REASON]) ? "" :
                 co_val(e->r, i, e->c[C_REASON]));
        why = text;
    } else if (co_val_null(e->r, i, e->c[C_BASE_ID])) {
        why = "no baseline: no complete run of this benchmark on this host "
              "in an ended job with the baseline's tags";
    } else if (co_val_null(e->r, i, e->c[C_FLOOR]) || co_val_null(e->r, i, e->c[C_ARM])) {
        why = "the run has no stored floor or arm";
    } else if (!co_val_bool(e->r, i, e->c[C_BASE_HAS_ARM])) {
        snprintf(text, sizeof text, "the baseline run has no arm \"%.100s\"",
                 co_val(e->r, i, e->c[C_ARM]));
        why = text;
    }
    if (why)
        return json_object_set_new(entry, "error", json_string(why)) == 0;

    s_pair_t p = { 0 };
    if (!s_samples(c, e, i, &p))
        return false;
    bool ok = false;
    vd_params_t vp;
    vd_params_default(&vp);
    vp.parity = parity;
    vp.floor_us = co_val_f64(e->r, i, e->c[C_FLOOR]);
    vp.floor_is_default = co_val_bool(e->r, i, e->c[C_FLOOR_DEFAULT]);
    vd_verdict_t v;
    char verr[256];
    if (vd_compare(p.x, p.na, p.x + p.na, p.nb, &vp, &v, verr,
                   sizeof verr) != VD_OK) {
        ok = json_object_set_new(entry, "error", json_string(verr)) == 0;
        goto done;
    }
    json_t *vj = pw_verdict_to_json(&v, PW_VERDICT_SUMMARIES);
    ok = vj && json_object_set_new(entry, "verdict", vj) == 0;
done:
    free(p.x);
    if (!ok)
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
    return ok;
}

/* Entry row i as the answer's host entry (no verdict yet). */
static json_t *
s_entry(const s_entries_t *e, int i)
{
    json_t *base = json_null();
    if (!co_val_null(e->r, i, e->c[C_BASE_ID]))
        base = json_pack("{s:s,s:s,s:I,s:o}",
            "job", co_val(e->r, i, e->c[C_BASE_JOB]),
            "run_id", co_val(e->r, i, e->c[C_BASE_RUN]),
            "started_at_us", co_reply_int(e->r, i, e->c[C_BASE_STARTED]),
            "tags", co_reply_json_col(e->r, i, e->c[C_BASE_TAGS]));
    json_t *entry = json_pack("{s:s,s:s,s:s,s:o}",
        "host", co_val(e->r, i, e->c[C_HOST]),
        "run_id", co_val(e->r, i, e->c[C_RUN]),
        "status", co_val_null(e->r, i, e->c[C_STATUS]) ? "running" :
                  co_val(e->r, i, e->c[C_STATUS]),
        "baseline", base ? base : json_null());
    if (entry && !co_val_null(e->r, i, e->pool.runs))
        json_object_set_new(entry, "floor_pool",
                            co_reply_floor_pool(e->r, i, &e->pool));
    return entry;
}

/* The comparisons of the entries: one per benchmark (its subject arm
 * against the same arm in the baseline), hosts in row order. */
static json_t *
s_comparisons(co_reply_t *c, const s_entries_t *e, double parity)
{
    json_t *cmps = json_array(), *cur = NULL;
    if (!cmps)
        return NULL;
    for (int i = 0; i < PQntuples(e->r); i++) {
        const char *bench = co_val(e->r, i, e->c[C_BENCH]);
        const char *arm = co_val(e->r, i, e->c[C_ARM]);
        if (!cur || strcmp(co_reply_str(cur, "benchmark"), bench) != 0) {
            if (cur && json_object_set_new(cur, "summary", co_reply_summary(
                    json_object_get(cur, "hosts"))) != 0)
                goto fail;
            cur = json_pack("{s:s,s:s,s:s,s:[]}", "benchmark", bench,
                            "subject", arm, "other", arm, "hosts");
            if (!cur || json_array_append_new(cmps, cur) != 0)
                goto fail;
        }
        json_t *entry = s_entry(e, i);
        if (!entry ||
            json_array_append_new(json_object_get(cur, "hosts"), entry) != 0)
            goto fail;
        if (!s_judge(c, e, i, parity, entry))
            goto fail_said;
    }
    if (cur && json_object_set_new(cur, "summary", co_reply_summary(
            json_object_get(cur, "hosts"))) != 0)
        goto fail;
    return cmps;
fail:
    co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
fail_said:
    json_decref(cmps);
    return NULL;
}

/* args: {"job": ID, "tags": {non-empty}} (co_query refuses other
 * names). */
static bool
s_args(co_reply_t *c, const json_t *args, const char **job)
{
    *job = json_string_value(json_object_get(args, "job"));
    if (!*job) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"job\" (a job id, a string) is "
                      "required");
        return false;
    }
    const json_t *t = json_object_get(args, "tags");
    if (!json_is_object(t) || json_object_size(t) == 0) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"tags\" (an object of at least "
                      "one tag, e.g. {\"branch\": \"main\"}) is required: it "
                      "names the baseline's jobs");
        return false;
    }
    return true;
}

static const co_stmt_t s_st_baseline = { "baseline.baseline",
    "SELECT suite, state, tags::text AS tags, label FROM jobs "
    "WHERE job_uuid = $1",
    1, PGRES_TUPLES_OK, false };

static json_t *
s_baseline(co_reply_t *c, const json_t *args, double parity)
{
    const char *job;
    char *tags = NULL;
    json_t *out = NULL;
    PGresult *j = NULL, *e = NULL;
    if (!s_args(c, args, &job) || !(tags = co_reply_tags_arg(c, args)))
        goto done;
    const char *pj[] = { job };
    j = co_reply_run(c, &s_st_baseline, pj);
    if (!j)
        goto done;
    if (PQntuples(j) != 1) {
        co_reply_fail(c, CO_REPLY_NOTFOUND, "no job \"%.40s\" (parity jobs "
                      "lists them)", job);
        goto done;
    }
    char lim[16];
    snprintf(lim, sizeof lim, "%d", CO_BASELINE_ENTRIES_MAX + 1);
    const char *pe[] = { job, tags, lim };
    e = co_reply_run(c, &s_st_entries, pe);
    if (!e)
        goto done;
    if (PQntuples(e) > CO_BASELINE_ENTRIES_MAX) {
        co_reply_fail(c, CO_REPLY_TOO_BIG, "job %.40s has more than %d "
                      "benchmark runs to judge", job, CO_BASELINE_ENTRIES_MAX);
        goto done;
    }
    s_entries_t es = { .r = e };
    co_cols(e, s_entry_cols, C_COUNT, es.c);
    co_reply_pool_cols(e, &es.pool);
    json_t *cmps = s_comparisons(c, &es, parity);
    if (!cmps)
        goto done;
    out = json_pack("{s:s,s:s,s:s,s:o,s:s,s:O,s:o}", "job", job,
                    "suite", co_val(j, 0, co_col(j, "suite")), "state",
                    co_val(j, 0, co_col(j, "state")), "tags",
                    co_reply_json_col(j, 0, co_col(j, "tags")),
                    "label", co_val(j, 0, co_col(j, "label")), "baseline",
                    json_object_get(args, "tags"), "comparisons", cmps);
done:
    PQclear(j);
    PQclear(e);
    free(tags);
    return out;
}

bool
co_baseline_handles(const char *command)
{
    return command && strcmp(command, "baseline") == 0;
}

json_t *
co_baseline_handle(co_conn_t *conn, const char *command, const json_t *args,
                   double parity, int *status, char *err, size_t errlen)
{
    co_reply_t c = co_reply_begin(conn, NULL, err, errlen);
    json_t *body = NULL;
    if (co_baseline_handles(command))
        body = s_baseline(&c, args, parity);
    else
        co_reply_fail(&c, CO_REPLY_UNKNOWN, "unknown command \"%.40s\"",
                      command);
    return co_reply_end(&c, body, status);
}
