/* co_history.c -- see co_history.h. */
#include "co_history.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co_changes.h"
#include "co_kinds.h"
#include "co_reply.h"
#include "co_selftest.h"
#include "pw_clock.h"
#include "pw_json.h"
#include "vd_fleet.h"
#include "vd_metric.h"
#include "vd_verdict.h"

/* history: rows (jobs) per arm pair, default and most. */
#define S_LIMIT_DEFAULT 50
#define S_LIMIT_MAX     1000
/* history: most verdicts one answer reads; beyond, "truncated" is true. */
#define S_ROWS_MAX      100000
/* regressions: most newest-jobs window (--jobs) and lookback (--since,
 * 366 days); most compared pairs read (then "truncated"). */
#define S_JOBS_MAX      1000
#define S_SINCE_MAX_US  (366LL * 86400 * 1000000)
#define S_PAIRS_MAX     100000
/* report: most measured samples summarised in one answer (32 MiB of
 * doubles), counting only runs without stored summaries; a larger job
 * is CO_REPLY_TOO_BIG. */
#define S_SAMPLES_MAX   4000000
/* report: most (run, arm) rows; a larger job is CO_REPLY_TOO_BIG too
 * (its answer would not fit in one frame anyway). */
#define S_ARMS_MAX      200000
/* Most tags and hosts one request may filter by. */
#define S_FILTERS_MAX   256

/* The columns of a row holding one host's entry of a comparison. */
typedef struct {
    int host, run, status, json, error;
} s_entry_cols_t;

static void
s_entry_cols(const PGresult *r, s_entry_cols_t *c)
{
    c->host = co_col(r, "host");
    c->run = co_col(r, "run_uuid");
    c->status = co_col(r, "status");
    c->json = co_col(r, "verdict_json");
    c->error = co_col(r, "error");
}

/* One host's entry of a comparison, as `verdicts` writes it: only a
 * complete run's verdict speaks for its host. */
static json_t *
s_entry(PGresult *r, int i, const s_entry_cols_t *c)
{
    const char *status = co_val_or_null(r, i, c->status);
    if (!status)
        status = "running";
    json_t *e = json_pack("{s:s,s:s,s:s}", "host", co_val(r, i, c->host),
                          "run_id", co_val(r, i, c->run),
                          "status", status);
    if (!e)
        return NULL;
    if (strcmp(status, "complete") != 0)
        json_object_set_new(e, "error", json_string(
            "the run did not complete"));
    else if (!co_val_null(r, i, c->json))
        json_object_set_new(e, "verdict", co_reply_json_col(r, i, c->json));
    else
        json_object_set_new(e, "error", json_string(
            co_val_null(r, i, c->error) ? "no verdict" :
            co_val(r, i, c->error)));
    return e;
}

/* ---- history ------------------------------------------------------ */

/* The rows' group: the job, or the run itself when no job asked for it
 * (a prefix keeps a job id from ever equalling a run id). */
#define S_GROUP_SQL \
    "CASE WHEN r.job_id <> '' THEN 'j' || r.job_id ELSE 'r' || " \
    "r.run_uuid END"

static const char s_history_sql[] =
    "WITH v AS ("
    " SELECT b.suite, sa.name AS subject, v.other_name AS other,"
    "  h.name AS host, h.id AS hid, r.id AS rid, v.other_arm, "
    S_GROUP_SQL " AS grp, r.started_at_us, r.tags"
    " FROM benchmarks b JOIN runs r ON r.benchmark_id = b.id"
    " JOIN verdicts v ON v.run = r.id AND v.metric = $9"
    " JOIN hosts h ON h.id = r.host_id"
    " JOIN arms sa ON sa.run = r.id AND sa.idx = v.subject_arm"
    " WHERE b.name = $1 AND ($2 = '' OR b.suite = $2)"
    "  AND ($3 = '' OR v.other_name = $3)"
    "  AND ($4::jsonb = '[]'::jsonb OR h.name IN"
    "       (SELECT jsonb_array_elements_text($4::jsonb)))"
    "  AND r.tags @> $5::jsonb"
    /* An --against instance's verdict is the job's own comparison of two
     * revisions (023), no history of a pair. */
    "  AND NOT EXISTS (SELECT 1 FROM arms oa WHERE oa.run = r.id AND"
    "   oa.idx = v.other_arm AND oa.instance IS NOT NULL)),"
    /* With "by": TAG ($8), a group's place is the creation of the first
     * job whose tags gave TAG its value (a commit re-run later stays in
     * the commit's place); else when its first run started. */
    "g0 AS (SELECT suite, subject, other, grp, min(started_at_us) AS t,"
    " min(tags->>$8) AS tagv FROM v GROUP BY suite, subject, other, grp),"
    "g1 AS (SELECT g0.*, CASE WHEN $8 = '' OR tagv IS NULL THEN t ELSE"
    " COALESCE((SELECT min(j.created_at_us) FROM jobs j WHERE"
    "  j.tags->>$8 = g0.tagv), t) END AS at_us FROM g0),"
    /* The newest $6 groups of each pair; shown oldest first. */
    "g AS (SELECT suite, subject, other, grp, at_us,"
    " row_number() OVER (PARTITION BY suite, subject, other"
    "  ORDER BY at_us DESC, grp DESC) AS rn FROM g1),"
    /* The groups shown, kept apart before the join: joined to v with the
     * rn filter after it, the planner matched v's rows to g's on the
     * pair alone and compared grp row by row: 1.3 M comparisons for the
     * 50 newest groups of a year on 100 hosts, 570 ms in all against
     * 215 ms so (fleet_load's history, EXPLAIN ANALYZE). */
    "sel AS MATERIALIZED (SELECT suite, subject, other, grp, at_us FROM g"
    " WHERE rn <= $6::int) "
    /* The verdicts' text only for the rows shown: v holds every run of
     * the benchmark in the history, a year of a fleet. */
    "SELECT v.suite, v.subject, v.other, v.grp, g.at_us, r.job_id,"
    " r.run_uuid, v.host, v.tags::text AS tags, r.label, r.status,"
    " x.verdict_json, x.error "
    "FROM sel g JOIN v USING (suite, subject, other, grp)"
    " JOIN runs r ON r.id = v.rid"
    " JOIN verdicts x ON x.run = v.rid AND x.other_arm = v.other_arm"
    "  AND x.metric = $9 "
    "ORDER BY v.suite, v.subject, v.other, g.at_us, v.grp, v.host, v.hid,"
    " v.rid LIMIT $7::int";
static const co_stmt_t s_st_history = { "history.history", s_history_sql, 9,
    PGRES_TUPLES_OK, false };

/* Close one history row: its summary. */
static int
s_close_row(json_t *row)
{
    if (!row)
        return 0;
    json_t *s = co_reply_summary(json_object_get(row, "hosts"));
    return s ? json_object_set_new(row, "summary", s) : -1;
}

/* history's "suite", "other", "hosts" and "by": true, or false with c
 * set. */
static bool
s_history_args(co_reply_t *c, const json_t *args)
{
    const json_t *js = json_object_get(args, "suite"),
                 *jo = json_object_get(args, "other"),
                 *jh = json_object_get(args, "hosts");
    if ((js && !json_is_string(js)) || (jo && !json_is_string(jo))) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"suite\" and \"other\" must be "
               "strings");
        return false;
    }
    if (jh && (!json_is_array(jh) ||
               json_array_size(jh) > S_FILTERS_MAX)) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"hosts\" must be an array of at most "
               "%d host names", S_FILTERS_MAX);
        return false;
    }
    size_t hi;
    json_t *hv;
    json_array_foreach(jh, hi, hv)
        if (!json_is_string(hv)) {
            co_reply_fail(c, CO_REPLY_BADARGS, "\"hosts\" must be host names");
            return false;
        }
    const json_t *jb = json_object_get(args, "by");
    const char *by = jb ? json_string_value(jb) : "";
    if (jb && (!by || strlen(by) > 200)) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"by\" must be a tag name of at "
                      "most 200 bytes (\"\": run time)");
        return false;
    }
    const json_t *jm = json_object_get(args, "metric");
    vd_metric_t m;
    if (jm && (!json_is_string(jm) ||
               vd_metric_parse(json_string_value(jm), &m) != 0)) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"metric\" must be wall, cpu or "
                      "peak_rss");
        return false;
    }
    return true;
}

/* history's rows (s_history_sql, n of them) grouped into pairs: one
 * per arm pair, a row per job (or run), an entry per host. 0, or -1
 * out of memory. */
static int
s_history_pairs(PGresult *r, int n, json_t *pairs)
{
    json_t *pair = NULL, *row = NULL;
    s_entry_cols_t ec;
    s_entry_cols(r, &ec);
    int i_suite = co_col(r, "suite"), i_subject = co_col(r, "subject"),
        i_other = co_col(r, "other"), i_grp = co_col(r, "grp"),
        i_at = co_col(r, "at_us"), i_job = co_col(r, "job_id"),
        i_tags = co_col(r, "tags"), i_label = co_col(r, "label");
    for (int i = 0; i < n; i++) {
        const char *su = co_val(r, i, i_suite),
                   *subj = co_val(r, i, i_subject),
                   *oth = co_val(r, i, i_other), *grp = co_val(r, i, i_grp);
        if (!pair || strcmp(co_reply_str(pair, "suite"), su) != 0 ||
            strcmp(co_reply_str(pair, "subject"), subj) != 0 ||
            strcmp(co_reply_str(pair, "other"), oth) != 0) {
            if (s_close_row(row) != 0)
                return -1;
            row = NULL;
            pair = json_pack("{s:s,s:s,s:s,s:[]}", "suite", su, "subject",
                             subj, "other", oth, "rows");
            if (!pair || json_array_append_new(pairs, pair) != 0)
                return -1;
        }
        if (!row || strcmp(co_reply_str(row, "group"), grp) != 0) {
            if (s_close_row(row) != 0)
                return -1;
            const char *job = co_val(r, i, i_job);
            row = json_pack("{s:s,s:s,s:s,s:I,s:o,s:s,s:[]}", "group", grp,
                            "job", job, "run_id", *job ? "" :
                            co_val(r, i, ec.run),
                            "at_us", co_reply_int(r, i, i_at),
                            "tags", co_reply_json_col(r, i, i_tags),
                            "label", co_val(r, i, i_label), "hosts");
            if (!row || json_array_append_new(json_object_get(pair, "rows"),
                                              row) != 0)
                return -1;
        }
        json_t *e = s_entry(r, i, &ec);
        if (!e)
            return -1;
        /* One entry per host: a later run of the same host in the same
         * job replaces the earlier one (rows come in run order). */
        json_t *hl = json_object_get(row, "hosts");
        size_t last = json_array_size(hl);
        if (last > 0 && strcmp(co_reply_str(json_array_get(hl, last - 1), "host"),
                               co_val(r, i, ec.host)) == 0)
            json_array_set_new(hl, last - 1, e);
        else
            json_array_append_new(hl, e);
    }
    if (s_close_row(row) != 0)
        return -1;
    return 0;
}

/* A name nobody stored is a typo more often than an empty history. */
static const co_stmt_t s_st_history_known = { "history.known",
    "SELECT (SELECT count(*) FROM benchmarks b WHERE b.name = $1 "
    "AND ($2 = '' OR b.suite = $2)) AS benchmarks, (SELECT count(*) "
    "FROM (SELECT 1 FROM benchmarks b JOIN runs r ON r.benchmark_id "
    "= b.id JOIN verdicts v ON v.run = r.id AND v.metric = 'wall' "
    "WHERE b.name = $1 AND "
    "($2 = '' OR b.suite = $2) AND v.other_name = $3 LIMIT 1) x) AS "
    "arms",
    3, PGRES_TUPLES_OK, false };

static json_t *
s_history(co_reply_t *c, const json_t *args)
{
    const char *bench = json_string_value(json_object_get(args,
                                                          "benchmark"));
    const json_t *js = json_object_get(args, "suite"),
                 *jo = json_object_get(args, "other"),
                 *jh = json_object_get(args, "hosts");
    json_int_t limit;
    char *tags = NULL, *hosts = NULL;
    json_t *out = NULL, *pairs = json_array();
    PGresult *r = NULL;
    if (!bench || !*bench) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"benchmark\" (a benchmark's name) is "
               "required");
        goto done;
    }
    if (!s_history_args(c, args))
        goto done;
    const json_t *jb = json_object_get(args, "by");
    const char *by = jb ? json_string_value(jb) : "";
    if (!co_reply_int_arg(c, args, "limit", 1, S_LIMIT_MAX,
                   S_LIMIT_DEFAULT, &limit) ||
        !(tags = co_reply_tags_arg(c, args)))
        goto done;
    hosts = jh ? pw_json_dumps(jh) : strdup("[]");
    if (!hosts || !pairs)
        goto done;
    const char *suite = js ? json_string_value(js) : "";
    const char *other = jo ? json_string_value(jo) : "";

    /* A name nobody stored is a typo more often than an empty history. */
    const char *pb[] = { bench, suite, other };
    r = co_reply_run(c, &s_st_history_known, pb);
    if (!r)
        goto done;
    bool known = co_reply_int(r, 0, co_col(r, "benchmarks")) > 0,
         arm_known = co_reply_int(r, 0, co_col(r, "arms")) > 0;
    PQclear(r);
    r = NULL;
    if (!known) {
        co_reply_fail(c, CO_REPLY_NOTFOUND, "no benchmark \"%.100s\"%s%.100s%s "
               "(parity verdicts lists the benchmarks of a job)", bench,
               *suite ? " in suite \"" : "", suite, *suite ? "\"" : "");
        goto done;
    }
    if (*other && !arm_known) {
        co_reply_fail(c, CO_REPLY_NOTFOUND, "benchmark \"%.100s\" has no verdict "
               "against an arm \"%.100s\"", bench, other);
        goto done;
    }

    char lim[24], rows_max[24];
    snprintf(lim, sizeof lim, "%" JSON_INTEGER_FORMAT, limit);
    snprintf(rows_max, sizeof rows_max, "%d", S_ROWS_MAX);
    const json_t *jm = json_object_get(args, "metric");
    const char *metric = jm ? json_string_value(jm) : "wall";
    const char *p[] = { bench, suite, other, hosts, tags, lim, rows_max,
                        by, metric };
    r = co_reply_run(c, &s_st_history, p);
    if (!r)
        goto done;
    int n = PQntuples(r);
    if (s_history_pairs(r, n, pairs) != 0)
        goto done;
    out = json_pack("{s:s,s:s,s:s,s:s,s:I,s:b,s:O}", "benchmark", bench,
                    "suite", suite, "other", other, "metric", metric,
                    "limit", limit, "truncated", n >= S_ROWS_MAX, "pairs",
                    pairs);
done:
    PQclear(r);
    free(tags);
    free(hosts);
    json_decref(pairs);
    return out;
}

/* ---- regressions -------------------------------------------------- */

/* Outcome order for "worse": a win that becomes parity or a loss, or
 * parity that becomes a loss. */
static int
s_rank(const char *outcome)
{
    vd_outcome_t o;
    if (vd_outcome_parse(outcome, &o) != VD_OK)
        return -1;
    return o == VD_WIN ? 0 : o == VD_PARITY ? 1 : 2;
}

/* Each series' (008) newest verdict run and the newest of an earlier
 * job (group), each through runs_series: a read per series, not a window
 * over every verdict in the history. A host's newest run of a pair
 * within one job speaks for that job. $2 keeps the series whose newest
 * job is one of the suite's $2 newest among the series' newest jobs. */
#define S_SIDE_SQL(extra) \
    " SELECT r.id AS rid, r.run_uuid, r.job_id, " S_GROUP_SQL " AS grp," \
    "  r.started_at_us, r.tags, v.outcome, v.ratio, v.best_ratio" \
    " FROM runs r JOIN verdicts v ON v.run = r.id AND v.other_name = s.other" \
    "  AND v.metric = 'wall'" \
    " JOIN arms sa ON sa.run = r.id AND sa.idx = v.subject_arm" \
    "  AND sa.name = s.subject" \
    " WHERE r.benchmark_id = s.benchmark_id AND r.host_id = s.host_id" \
    "  AND r.vars = s.vars AND r.status = 'complete'" \
    "  AND v.outcome IS NOT NULL AND r.tags @> $1::jsonb" extra \
    " ORDER BY r.started_at_us DESC, r.id DESC LIMIT 1"

static const char s_regressions_sql[] =
    "WITH s AS ("
    " SELECT se.*, b.suite, b.name AS benchmark, h.name AS host"
    " FROM series se JOIN benchmarks b ON b.id = se.benchmark_id"
    " JOIN hosts h ON h.id = se.host_id"
    " WHERE $5::text = '' OR h.name = $5),"
    "n AS (SELECT s.*, t.* FROM s CROSS JOIN LATERAL (" S_SIDE_SQL("") ") t"
    " WHERE t.started_at_us >= $3::bigint),"
    "j AS (SELECT suite, grp, row_number() OVER (PARTITION BY suite"
    " ORDER BY min(started_at_us) DESC, grp DESC) AS k"
    " FROM n GROUP BY suite, grp),"
    "o AS (SELECT n.* FROM n JOIN j ON j.suite = n.suite AND j.grp = n.grp"
    " WHERE $2::int = 0 OR j.k <= $2::int ORDER BY n.suite, n.benchmark,"
    " n.subject, n.other, n.host, n.host_id, n.vars::text LIMIT $4::int),"
    "p AS (SELECT o.suite, o.benchmark, o.subject, o.other, o.host,"
    " o.host_id, 1 AS rn, o.job_id, o.run_uuid, o.started_at_us,"
    " o.tags::text AS tags, o.outcome, o.ratio, o.best_ratio,"
    " o.vars::text AS vars FROM o UNION ALL"
    " SELECT s.suite, s.benchmark, s.subject, s.other, s.host, s.host_id, 2,"
    " t.job_id, t.run_uuid, t.started_at_us, t.tags::text, t.outcome,"
    " t.ratio, t.best_ratio, s.vars::text FROM o s CROSS JOIN LATERAL ("
    S_SIDE_SQL(" AND " S_GROUP_SQL " <> s.grp") ") t) "
    "SELECT * FROM p ORDER BY suite, benchmark, subject, other, host,"
    " host_id, vars, rn";
static const co_stmt_t s_st_regressions = { "history.regressions", s_regressions_sql, 5,
    PGRES_TUPLES_OK, false };

/* The columns of s_regressions_sql's rows. */
enum { G_SUITE, G_BENCH, G_SUBJECT, G_OTHER, G_HOST, G_HOST_ID, G_RN,
       G_JOB, G_RUN, G_STARTED, G_TAGS, G_OUTCOME, G_RATIO, G_BEST, G_VARS,
       G_COUNT };
static const char *const s_regression_cols[G_COUNT] = {
    "suite", "benchmark", "subject", "other", "host", "host_id", "rn",
    "job_id", "run_uuid", "started_at_us", "tags", "outcome", "ratio",
    "best_ratio", "vars" };

static json_t *
s_side(PGresult *r, const int *c, int i)
{
    return json_pack("{s:s,s:s,s:I,s:o,s:s,s:f,s:f}",
        "job", co_val(r, i, c[G_JOB]), "run_id", co_val(r, i, c[G_RUN]),
        "started_at_us", co_reply_int(r, i, c[G_STARTED]),
        "tags", co_reply_json_col(r, i, c[G_TAGS]),
        "outcome", co_val(r, i, c[G_OUTCOME]),
        "ratio", co_val_f64(r, i, c[G_RATIO]),
        "best_ratio", co_val_f64(r, i, c[G_BEST]));
}

static bool
s_same_pair(PGresult *r, const int *c, int a, int b)
{
    static const int key[] = { G_SUITE, G_BENCH, G_SUBJECT, G_OTHER,
                               G_HOST_ID, G_VARS };
    for (size_t k = 0; k < sizeof key / sizeof *key; k++)
        if (strcmp(co_val(r, a, c[key[k]]), co_val(r, b, c[key[k]])) != 0)
            return false;
    return true;
}

static json_t *
s_regressions(co_reply_t *c, const json_t *args)
{
    json_int_t jobs = 0, since_us = 0;
    char *tags = NULL;
    json_t *out = NULL, *worse = json_array(), *better = json_array();
    json_t *cps = NULL;
    const char *host = json_string_value(json_object_get(args, "host"));
    PGresult *r = NULL;
    if (json_object_get(args, "host") && (!host || strlen(host) > 200)) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"host\" must be a host name "
                      "of at most 200 bytes");
        goto done;
    }
    if (json_object_get(args, "jobs") && json_object_get(args, "since_us")) {
        co_reply_fail(c, CO_REPLY_BADARGS, "give \"jobs\" or \"since_us\", not "
               "both");
        goto done;
    }
    if (!co_reply_int_arg(c, args, "since_us", 1, S_SINCE_MAX_US, 0,
                   &since_us) ||
        !co_reply_int_arg(c, args, "jobs", 1, S_JOBS_MAX,
                   since_us ? 0 : 1, &jobs) ||
        !(tags = co_reply_tags_arg(c, args)))
        goto done;
    if (!worse || !better)
        goto done;
    char pj[24], ps[24], pl[24];
    snprintf(pj, sizeof pj, "%" JSON_INTEGER_FORMAT, jobs);
    snprintf(ps, sizeof ps, "%" PRId64, since_us ?
             pw_clock_unix_us() - (int64_t)since_us : INT64_MIN);
    snprintf(pl, sizeof pl, "%d", S_PAIRS_MAX);
    const char *p[] = { tags, pj, ps, pl, host ? host : "" };
    r = co_reply_run(c, &s_st_regressions, p);
    if (!r)
        goto done;
    int n = PQntuples(r), col[G_COUNT];
    co_cols(r, s_regression_cols, G_COUNT, col);
    json_int_t unchanged = 0, first = 0, pairs = 0;
    for (int i = 0; i < n; i++) {
        pairs++;
        /* Rows come per pair and host: rn 1 (newest), then rn 2. */
        if (i + 1 >= n || !s_same_pair(r, col, i, i + 1) ||
            co_val_i64(r, i + 1, col[G_RN]) != 2) {
            first++;
            continue;
        }
        int now_rank = s_rank(co_val(r, i, col[G_OUTCOME])),
            was_rank = s_rank(co_val(r, i + 1, col[G_OUTCOME]));
        if (now_rank == was_rank || now_rank < 0 || was_rank < 0) {
            unchanged++;
            i++;
            continue;
        }
        json_t *e = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:s,s:o,s:o}",
            "suite", co_val(r, i, col[G_SUITE]),
            "benchmark", co_val(r, i, col[G_BENCH]),
            "subject", co_val(r, i, col[G_SUBJECT]),
            "other", co_val(r, i, col[G_OTHER]),
            "host", co_val(r, i, col[G_HOST]),
            "vars", co_reply_json_col(r, i, col[G_VARS]),
            "change", now_rank > was_rank ? "worse" : "better",
            "before", s_side(r, col, i + 1), "after", s_side(r, col, i));
        if (!e || json_array_append_new(now_rank > was_rank ? worse : better,
                                        e) != 0)
            goto done;
        i++;
    }
    /* The change points (co_detect) of the same runs: what the exit
     * status and the first table of `parity regressions` are about. */
    cps = co_changes_list(c, tags, host, since_us ? pw_clock_unix_us() -
                          (int64_t)since_us : INT64_MIN);
    if (!cps)
        goto done;
    json_t *jt = json_loads(tags, 0, NULL);
    out = json_pack("{s:o,s:o,s:o,s:O,s:O,s:I,s:I,s:b,s:O}",
                    "tags", jt ? jt : json_object(),
                    "jobs", jobs ? json_integer(jobs) : json_null(),
                    "since_us", since_us ? json_integer(since_us) :
                    json_null(),
                    "regressions", worse, "improvements", better,
                    "unchanged", unchanged, "first", first,
                    "truncated", pairs >= S_PAIRS_MAX,
                    "change_points", cps);
done:
    PQclear(r);
    free(tags);
    json_decref(worse);
    json_decref(better);
    json_decref(cps);
    return out;
}

/* ---- report ------------------------------------------------------- */

/* The job of args {"job": ID}, or the newest with {"latest": true} or
 * neither: one row of the job's fields, or NULL with c set. */
static PGresult *
s_job_row(co_reply_t *c, const json_t *args)
{
    const json_t *jj = json_object_get(args, "job"),
                 *jl = json_object_get(args, "latest");
    if ((jj && !json_is_string(jj)) || (jl && !json_is_boolean(jl))) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"job\" must be a string and "
               "\"latest\" true or false");
        return NULL;
    }
    if (jj && json_is_true(jl)) {
        co_reply_fail(c, CO_REPLY_BADARGS, "give \"job\" or \"latest\", not both");
        return NULL;
    }
    static const char cols[] =
        "SELECT job_uuid, suite, state, label, tags::text AS tags,"
        " vars::text AS vars, runs, created_at_us, ended_at_us FROM jobs ";
    char sql[512];
    const char *p[] = { json_string_value(jj) };
    snprintf(sql, sizeof sql, "%s%s", cols, jj ? "WHERE job_uuid = $1" :
             "ORDER BY created_at_us DESC, id DESC LIMIT 1");
    PGresult *r = co_reply_text(c, "history.job_row", sql, jj ? 1 : 0,
                                jj ? p : NULL);
    if (r && PQntuples(r) != 1) {
        if (jj)
            co_reply_fail(c, CO_REPLY_NOTFOUND, "no job \"%.40s\" (parity jobs "
                   "lists them)", p[0]);
        else
            co_reply_fail(c, CO_REPLY_NOTFOUND, "no job yet (parity run starts "
                   "one)");
        PQclear(r);
        return NULL;
    }
    return r;
}

/* The columns of report's arms query: the run and arm, then its
 * run_summaries row: a flag (the row exists), then n, min, q25, median,
 * q75, max, iqr, mean. */
enum { A_RUN, A_UUID, A_HOST, A_BENCH, A_STATUS, A_REASON, A_RUNS,
       A_WARMUP, A_IDX, A_NAME, A_SUBJECT, A_ERRORS, A_SUMMARY, A_N, A_MIN,
       A_Q25, A_MEDIAN, A_Q75, A_MAX, A_IQR, A_MEAN, A_COUNT };
static const char *const s_arm_cols[A_COUNT] = {
    "id", "run_uuid", "host", "benchmark", "status", "reason", "runs",
    "warmup", "idx", "name", "subject", "errors", "summarised", "n", "min",
    "q25", "median", "q75", "max", "iqr", "mean" };

/* The arm's summary from its run_summaries row (006: written at RunEnd
 * with vd_summarize, the same statistic as below); 1 when the run has
 * none (not ended), 0 when set, -1 out of memory. */
static int
s_arm_stored_summary(json_t *arm, PGresult *r, const int *c, int i)
{
    if (!co_val_bool(r, i, c[A_SUMMARY]))
        return 1;
    if (co_val_null(r, i, c[A_MIN]))
        return json_object_set_new(arm, "summary", json_null());
    double v[7];
    for (int k = 0; k < 7; k++)
        v[k] = co_val_f64(r, i, c[A_MIN + k]);
    vd_summary_t sum = { .n = (size_t)co_reply_int(r, i, c[A_N]),
                         .min = v[0], .q25 = v[1], .median = v[2],
                         .q75 = v[3], .max = v[4], .iqr = v[5],
                         .mean = v[6] };
    json_t *j = pw_summary_to_json(&sum);
    return j ? json_object_set_new(arm, "summary", j) : -1;
}

/* Summaries of one arm's measured samples into arm; the samples are
 * the rows [from, to) of s. For runs without stored summaries. */
static int
s_arm_summary(json_t *arm, PGresult *s, int from, int to, double *buf)
{
    size_t n = 0;
    int i_wall = co_col(s, "wall_us");
    for (int i = from; i < to; i++)
        buf[n++] = co_val_f64(s, i, i_wall);
    vd_summary_t sum;
    char e[256];
    if (n == 0 || vd_summarize(buf, n, &sum, e, sizeof e) != VD_OK)
        return json_object_set_new(arm, "summary", json_null());
    json_t *j = pw_summary_to_json(&sum);
    return j ? json_object_set_new(arm, "summary", j) : -1;
}

static const co_stmt_t s_st_report_hosts = { "history.report_hosts",
    "SELECT h.name AS host, jh.state, jh.reason,"
    " COALESCE((SELECT e.environment_json FROM runs r JOIN environments"
    "  e ON e.id = r.environment WHERE r.job_id = j.job_uuid AND"
    "  r.host_id = h.id ORDER BY r.id DESC LIMIT 1),"
    "  (SELECT e.environment_json FROM environments e WHERE"
    "  e.host_id = h.id ORDER BY e.id DESC LIMIT 1)) AS env,"
    " (SELECT json_build_object('floor_us', v.floor_us, 'floor_default',"
    "  v.floor_is_default, 'floor_samples', v.floor_samples) FROM"
    "  verdicts v JOIN runs r ON r.id = v.run WHERE r.job_id ="
    "  j.job_uuid AND r.host_id = h.id AND v.metric = 'wall' ORDER BY"
    "  v.id DESC LIMIT 1)::text AS floor,"
    " " CO_SELFTEST_SQL("h.id") " AS selftest"
    " FROM job_hosts jh JOIN jobs j ON j.id = jh.job JOIN hosts h ON"
    " h.id = jh.host_id WHERE j.job_uuid = $1 ORDER BY h.name, h.id",
    1, PGRES_TUPLES_OK, false };

/* report's hosts: each job host's state, environment and floor into
 * hosts. 0, or -1 with c set. */
static int
s_report_hosts(co_reply_t *c, const char *id, json_t *hosts)
{
    const char *p[] = { id };
    PGresult *r;
    /* Each host's environment as its runs of this job saw it (the
     * host's latest snapshot when it stored no run), and the floor its
     * verdicts of this job used. */
    r = co_reply_run(c, &s_st_report_hosts, p);
    if (!r)
        return -1;
    int i_host = co_col(r, "host"), i_state = co_col(r, "state"),
        i_reason = co_col(r, "reason"), i_env = co_col(r, "env"),
        i_floor = co_col(r, "floor"), i_selftest = co_col(r, "selftest");
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *env = co_reply_json_col(r, i, i_env);
        json_t *floor = co_reply_json_col(r, i, i_floor);
        json_t *warnings = json_object_get(env, "warnings");
        warnings = json_is_array(warnings) ? json_copy(warnings) :
                   json_array();
        json_t *selftest = co_selftest_json(co_val(r, i, i_selftest));
        if (co_selftest_warn(warnings, selftest) != 0) {
            json_decref(selftest);
            json_decref(warnings);
            json_decref(env);
            json_decref(floor);
            PQclear(r);
            co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
            return -1;
        }
        json_t *h = json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:O,s:O,s:O,"
                              "s:o,s:o}",
            "host", co_val(r, i, i_host), "state", co_val(r, i, i_state),
            "reason", co_val(r, i, i_reason),
            "cpu_model", co_reply_env_value(env, "cpu_model"),
            "kernel", co_reply_env_value(env, "kernel"),
            "arch", co_reply_env_value(env, "arch"),
            "logical_cpus", co_reply_env_value(env, "logical_cpus"),
            "floor_us", json_object_get(floor, "floor_us") ?
                json_object_get(floor, "floor_us") : json_null(),
            "floor_default", json_object_get(floor, "floor_default") ?
                json_object_get(floor, "floor_default") : json_null(),
            "floor_samples", json_object_get(floor, "floor_samples") ?
                json_object_get(floor, "floor_samples") : json_null(),
            "warnings", warnings, "selftest", selftest);
        json_decref(env);
        json_decref(floor);
        if (!h || json_array_append_new(hosts, h) != 0) {
            PQclear(r);
            co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
            return -1;
        }
    }
    PQclear(r);
    return 0;
}

static const co_stmt_t s_st_report_arms = { "history.report_arms",
    "SELECT r.id, r.run_uuid, h.name AS host, b.name AS benchmark,"
    " COALESCE(r.status, 'running') AS status, COALESCE(r.reason, '')"
    " AS reason, r.runs, r.warmup, a.idx, a.name, a.subject,"
    " COALESCE(rs.errors, (SELECT count(*) FROM samples s WHERE s.run ="
    " r.id AND s.kind = " CO_SQL_ERROR " AND s.arm = a.idx)) AS errors,"
    " rs.run IS NOT NULL AS summarised, rs.n, rs.min, rs.q25, rs.median,"
    " rs.q75, rs.max, rs.iqr, rs.mean"
    " FROM runs r JOIN hosts h ON h.id = r.host_id JOIN benchmarks b ON"
    " b.id = r.benchmark_id JOIN arms a ON a.run = r.id"
    " LEFT JOIN run_summaries rs ON rs.run = r.id AND rs.arm = a.idx"
    "  AND rs.metric = 'wall'"
    " WHERE r.job_id = $1 ORDER BY r.id, a.idx LIMIT $2::int",
    2, PGRES_TUPLES_OK, false };

static const co_stmt_t s_st_report_samples = { "history.report_samples",
    "SELECT s.run, s.arm, s.wall_us FROM runs r JOIN samples s ON"
    " s.run = r.id WHERE r.job_id = $1 AND s.kind = " CO_SQL_MEASURED " AND s.wall_us > 0"
    " AND NOT EXISTS (SELECT 1 FROM run_summaries x WHERE x.run = r.id)"
    " ORDER BY s.run, s.arm LIMIT $2::int",
    2, PGRES_TUPLES_OK, false };

/* report's runs: every run of job id with its arms' summaries into
 * runs. 0, or -1 with c set (CO_REPLY_TOO_BIG past the bounds). */
static int
s_report_runs(co_reply_t *c, const char *id, json_t *runs)
{
    PGresult *r = NULL, *s = NULL;
    double *buf = NULL;
    int rc = -1;
    /* Every run's arms with their stored summaries, then the measured
     * samples of the runs that have none yet (still running, or never
     * ended), both in run order: one pass merges them. The raw samples
     * of an ended run may be gone (retention); its summary never is. */
    char arms_lim[24];
    snprintf(arms_lim, sizeof arms_lim, "%d", S_ARMS_MAX + 1);
    const char *pa[] = { id, arms_lim };
    r = co_reply_run(c, &s_st_report_arms, pa);
    if (!r)
        goto fail;
    if (PQntuples(r) > S_ARMS_MAX) {
        co_reply_fail(c, CO_REPLY_TOO_BIG, "job %.40s has more than %d runs and "
               "arms: parity export gives them all", id, S_ARMS_MAX);
        goto fail;
    }
    char lim[24];
    snprintf(lim, sizeof lim, "%d", S_SAMPLES_MAX + 1);
    const char *ps[] = { id, lim };
    s = co_reply_run(c, &s_st_report_samples, ps);
    if (!s)
        goto fail;
    int ns = PQntuples(s);
    if (ns > S_SAMPLES_MAX) {
        co_reply_fail(c, CO_REPLY_TOO_BIG, "job %.40s has more than %d measured "
               "samples: parity export gives them all", id,
               S_SAMPLES_MAX);
        goto fail;
    }
    buf = malloc(((size_t)ns + 1) * sizeof *buf);
    if (!buf)
        goto oom;
    json_t *run = NULL;
    int si = 0, col[A_COUNT], i_srun = co_col(s, "run"),
        i_sarm = co_col(s, "arm");
    co_cols(r, s_arm_cols, A_COUNT, col);
    for (int i = 0; i < PQntuples(r); i++) {
        long long rid = co_val_i64(r, i, col[A_RUN]);
        int idx = (int)co_val_i64(r, i, col[A_IDX]);
        const char *uuid = co_val(r, i, col[A_UUID]);
        if (!run || strcmp(co_reply_str(run, "run_id"), uuid) != 0) {
            run = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:[]}",
                "run_id", uuid, "host", co_val(r, i, col[A_HOST]),
                "benchmark", co_val(r, i, col[A_BENCH]),
                "status", co_val(r, i, col[A_STATUS]),
                "reason", co_val(r, i, col[A_REASON]),
                "runs", co_reply_int(r, i, col[A_RUNS]),
                "warmup", co_reply_int(r, i, col[A_WARMUP]), "arms");
            if (!run || json_array_append_new(runs, run) != 0)
                goto oom;
        }
        /* Skip samples of runs or arms that have no arms row. */
        while (si < ns && (co_val_i64(s, si, i_srun) < rid ||
               (co_val_i64(s, si, i_srun) == rid &&
                co_val_i64(s, si, i_sarm) < idx)))
            si++;
        int from = si;
        while (si < ns && co_val_i64(s, si, i_srun) == rid &&
               co_val_i64(s, si, i_sarm) == idx)
            si++;
        json_t *arm = json_pack("{s:s,s:b,s:I}",
                                "name", co_val(r, i, col[A_NAME]),
                                "subject", co_val_bool(r, i, col[A_SUBJECT]),
                                "errors", co_reply_int(r, i, col[A_ERRORS]));
        if (!arm || json_array_append_new(json_object_get(run, "arms"),
                                          arm) != 0)
            goto oom;
        int stored = s_arm_stored_summary(arm, r, col, i);
        if (stored < 0 || (stored > 0 &&
                           s_arm_summary(arm, s, from, si, buf) != 0))
            goto oom;
    }
    rc = 0;
    goto done;
oom:
    co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
fail:
done:
    PQclear(r);
    PQclear(s);
    free(buf);
    return rc;
}

static json_t *
s_report(co_reply_t *c, const json_t *args)
{
    json_t *out = NULL, *hosts = json_array(), *runs = json_array();
    PGresult *j = s_job_row(c, args);
    if (!j)
        goto done;
    const char *id = co_val(j, 0, co_col(j, "job_uuid"));
    if (!hosts || !runs || s_report_hosts(c, id, hosts) != 0 ||
        s_report_runs(c, id, runs) != 0)
        goto done;
    out = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:I,s:I,s:o,s:O,s:O}",
        "job", id, "suite", co_val(j, 0, co_col(j, "suite")),
        "state", co_val(j, 0, co_col(j, "state")),
        "label", co_val(j, 0, co_col(j, "label")),
        "tags", co_reply_json_col(j, 0, co_col(j, "tags")),
        "vars", co_reply_json_col(j, 0, co_col(j, "vars")),
        "runs", co_reply_int(j, 0, co_col(j, "runs")),
        "created_at_us", co_reply_int(j, 0, co_col(j, "created_at_us")),
        "ended_at_us", co_reply_int_or_null(j, 0, co_col(j, "ended_at_us")),
        "hosts", hosts, "run_list", runs);
done:
    PQclear(j);
    json_decref(hosts);
    json_decref(runs);
    return out;
}

/* ---- dispatch ----------------------------------------------------- */

/* The arguments each command reads: any other is a typo the client
 * should hear about (as co_query does for its commands). */
static const struct {
    const char *command;
    const char *const known[9];
} s_known[] = {
    { "history", { "benchmark", "suite", "other", "hosts", "tags", "limit",
                   "by", "metric", NULL } },
    { "regressions", { "tags", "jobs", "since_us", "host", NULL } },
    { "report", { "job", "latest", NULL } },
};

static bool
s_args_known(co_reply_t *c, const char *command, const json_t *args)
{
    for (size_t i = 0; i < sizeof s_known / sizeof *s_known; i++) {
        if (strcmp(command, s_known[i].command) != 0)
            continue;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)args, k, v) {
            size_t a = 0;
            while (s_known[i].known[a] && strcmp(s_known[i].known[a], k) != 0)
                a++;
            if (s_known[i].known[a])
                continue;
            char list[256] = "";
            for (a = 0; s_known[i].known[a]; a++) {
                size_t used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s%s",
                         a ? " " : "", s_known[i].known[a]);
            }
            co_reply_fail(c, CO_REPLY_BADARGS, "unknown argument \"%.60s\" for %s "
                   "(known: %s)", k, command, list);
            return false;
        }
    }
    return true;
}

bool
co_history_handles(const char *command)
{
    return command && (strcmp(command, "history") == 0 ||
                       strcmp(command, "regressions") == 0 ||
                       strcmp(command, "report") == 0);
}

json_t *
co_history_handle(co_reply_t *c, const char *command, const json_t *args)
{
    if (!s_args_known(c, command, args))
        return NULL;
    if (strcmp(command, "history") == 0)
        return s_history(c, args);
    if (strcmp(command, "regressions") == 0)
        return s_regressions(c, args);
    if (strcmp(command, "report") == 0)
        return s_report(c, args);
    co_reply_fail(c, CO_REPLY_UNKNOWN, "unknown command \"%.40s\"", command);
    return NULL;
}
