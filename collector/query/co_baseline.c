/* co_baseline.c -- a job's runs against a baseline's (co_baseline.h). */
#include "co_baseline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    "SELECT c.bench, c.host, c.run_uuid, c.status, c.reason, sa.name, "
    "  f.floor_us, f.is_default, f.n_samples, f.quiet, f.oldest_us, "
    "  f.newest_us, c.id, base.id, base.run_uuid, base.job_id, "
    "  base.started_at_us, base.tags::text, "
    "  EXISTS (SELECT 1 FROM arms WHERE run = base.id AND name = sa.name) "
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

/* Columns of S_ENTRIES_SQL. */
enum { C_BENCH, C_HOST, C_RUN, C_STATUS, C_REASON, C_ARM, C_FLOOR,
       C_FLOOR_DEFAULT, C_FLOOR_N, C_FLOOR_QUIET, C_FLOOR_OLDEST,
       C_FLOOR_NEWEST, C_RUN_ID, C_BASE_ID, C_BASE_RUN, C_BASE_JOB,
       C_BASE_STARTED, C_BASE_TAGS, C_BASE_HAS_ARM };

/* The measured wall times of arm (by name) in the job's run ($1) and the
 * baseline run ($2): the job's first, each run's in ascending order. */
static const char S_SAMPLES_SQL[] =
    "SELECT s.run = $1::bigint, s.wall_us FROM samples s "
    "JOIN arms a ON a.run = s.run AND a.idx = s.arm "
    "WHERE s.run IN ($1::bigint, $2::bigint) AND s.kind = 0 "
    "AND a.name = $3 ORDER BY 1 DESC, 2 LIMIT $4::int";

/* Both runs' samples of one entry: the job's (a) and the baseline's (b),
 * slices of one buffer. */
typedef struct {
    double *x;
    size_t na, nb;
} s_pair_t;

/* Read entry row i's samples into p. False with c's status set. */
static bool
s_samples(co_reply_t *c, PGresult *e, int i, s_pair_t *p)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", CO_BASELINE_SAMPLES_MAX + 1);
    const char *pv[] = { PQgetvalue(e, i, C_RUN_ID),
                         PQgetvalue(e, i, C_BASE_ID),
                         PQgetvalue(e, i, C_ARM), lim };
    PGresult *r = co_reply_q(c, S_SAMPLES_SQL, 4, pv);
    if (!r)
        return false;
    int n = PQntuples(r);
    if (n > CO_BASELINE_SAMPLES_MAX) {
        PQclear(r);
        co_reply_fail(c, CO_REPLY_TOO_BIG, "%s on %s: more than %d measured "
                      "samples in the run and its baseline",
                      PQgetvalue(e, i, C_BENCH), PQgetvalue(e, i, C_HOST),
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
    for (int k = 0; k < n; k++) {
        p->x[k] = strtod(PQgetvalue(r, k, 1), NULL);
        if (PQgetvalue(r, k, 0)[0] == 't')
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
s_judge(co_reply_t *c, PGresult *e, int i, double parity, json_t *entry)
{
    const char *why = NULL;
    char text[512];
    if (PQgetisnull(e, i, C_STATUS) ||
        strcmp(PQgetvalue(e, i, C_STATUS), "complete") != 0) {
        snprintf(text, sizeof text, "the run did not complete (%s%s%.200s)",
                 PQgetisnull(e, i, C_STATUS) ? "running" :
                 PQgetvalue(e, i, C_STATUS),
                 PQgetisnull(e, i, C_REASON) ||
                 !*PQgetvalue(e, i, C_REASON) ? "" : ": ",
                 PQgetisnull(e, i, C_REASON) ? "" :
                 PQgetvalue(e, i, C_REASON));
        why = text;
    } else if (PQgetisnull(e, i, C_BASE_ID)) {
        why = "no baseline: no complete run of this benchmark on this host "
              "in an ended job with the baseline's tags";
    } else if (PQgetisnull(e, i, C_FLOOR) || PQgetisnull(e, i, C_ARM)) {
        why = "the run has no stored floor or arm";
    } else if (PQgetvalue(e, i, C_BASE_HAS_ARM)[0] != 't') {
        snprintf(text, sizeof text, "the baseline run has no arm \"%.100s\"",
                 PQgetvalue(e, i, C_ARM));
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
    vp.floor_us = strtod(PQgetvalue(e, i, C_FLOOR), NULL);
    vp.floor_is_default = PQgetvalue(e, i, C_FLOOR_DEFAULT)[0] == 't';
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
s_entry(PGresult *e, int i)
{
    json_t *base = json_null();
    if (!PQgetisnull(e, i, C_BASE_ID))
        base = json_pack("{s:s,s:s,s:I,s:o}",
            "job", PQgetvalue(e, i, C_BASE_JOB),
            "run_id", PQgetvalue(e, i, C_BASE_RUN),
            "started_at_us", co_reply_int(e, i, C_BASE_STARTED),
            "tags", co_reply_json_col(e, i, C_BASE_TAGS));
    json_t *entry = json_pack("{s:s,s:s,s:s,s:o}",
        "host", PQgetvalue(e, i, C_HOST),
        "run_id", PQgetvalue(e, i, C_RUN),
        "status", PQgetisnull(e, i, C_STATUS) ? "running" :
                  PQgetvalue(e, i, C_STATUS),
        "baseline", base ? base : json_null());
    if (entry && !PQgetisnull(e, i, C_FLOOR_N))
        json_object_set_new(entry, "floor_pool",
                            co_reply_floor_pool(e, i, C_FLOOR_N));
    return entry;
}

/* The comparisons of the entries: one per benchmark (its subject arm
 * against the same arm in the baseline), hosts in row order. */
static json_t *
s_comparisons(co_reply_t *c, PGresult *e, double parity)
{
    json_t *cmps = json_array(), *cur = NULL;
    if (!cmps)
        return NULL;
    for (int i = 0; i < PQntuples(e); i++) {
        const char *bench = PQgetvalue(e, i, C_BENCH);
        const char *arm = PQgetvalue(e, i, C_ARM);
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
    j = co_reply_q(c, "SELECT suite, state, tags::text, label FROM jobs "
                   "WHERE job_uuid = $1", 1, pj);
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
    e = co_reply_q(c, S_ENTRIES_SQL, 3, pe);
    if (!e)
        goto done;
    if (PQntuples(e) > CO_BASELINE_ENTRIES_MAX) {
        co_reply_fail(c, CO_REPLY_TOO_BIG, "job %.40s has more than %d "
                      "benchmark runs to judge", job, CO_BASELINE_ENTRIES_MAX);
        goto done;
    }
    json_t *cmps = s_comparisons(c, e, parity);
    if (!cmps)
        goto done;
    out = json_pack("{s:s,s:s,s:s,s:o,s:s,s:O,s:o}", "job", job,
                    "suite", PQgetvalue(j, 0, 0), "state",
                    PQgetvalue(j, 0, 1), "tags", co_reply_json_col(j, 0, 2),
                    "label", PQgetvalue(j, 0, 3), "baseline",
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
