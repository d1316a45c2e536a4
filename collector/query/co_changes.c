/* co_changes.c -- see co_changes.h. */
#include "co_changes.h"
#include "co_events.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co_reply.h"
#include "pw_clock.h"
#include "pw_json.h"
#include "vd_metric.h"

/* series: runs per series, default and most; series per answer. */
#define S_RUNS_DEFAULT 200
#define S_RUNS_MAX     1000
#define S_SERIES_MAX   2000
/* regressions: change points listed at most (then "truncated"). */
#define S_LIST_MAX     1000
/* ack: the note's length at most. */
#define S_NOTE_MAX     1000
/* Rows one `series` answer reads at most (then "truncated"). */
#define S_SERIES_ROWS_MAX 200000
/* Bytes of series one answer carries at most: under a frame's body
 * (CO_REPLY_MAX_BODY), leaving a tenth for escapes and the rest. */
#define S_SERIES_BYTES_MAX (CO_REPLY_MAX_BODY / 10 * 9)

bool
co_changes_handles(const char *command)
{
    return command && (strcmp(command, "series") == 0 ||
                       strcmp(command, "ack") == 0 ||
                       strcmp(command, "unack") == 0);
}

static double
s_dbl(PGresult *r, int row, int col)
{
    return co_val_f64(r, row, col);
}

/* Significant digits a `series` number keeps: 1 in 10^7 is far below
 * any timer's resolution and any run's noise, and a number of 8 or fewer
 * digits instead of PostgreSQL's 17 made the answer (and the client's
 * parsing of it, 100 benchmarks for a site) a fifth shorter. */
#define S_SERIES_DIGITS 7

static json_t *
s_dbl_or_null(PGresult *r, int row, int col)
{
    if (co_val_null(r, row, col))
        return json_null();
    double x = s_dbl(r, row, col);
    if (x != 0 && isfinite(x)) {
        double scale = pow(10, S_SERIES_DIGITS - ceil(log10(fabs(x))));
        double y = round(x * scale) / scale;
        x = isfinite(y) ? y : x;
    }
    return json_real(x);
}

static json_t *
s_str_or_null(PGresult *r, int row, int col)
{
    return co_val_null(r, row, col) ? json_null()
                                    : json_string(co_val(r, row, col));
}

/* A string argument of at most max bytes; dflt when absent. */
static bool
s_str_arg(co_reply_t *c, const json_t *args, const char *key, size_t max,
          const char *dflt, const char **out)
{
    const json_t *j = json_object_get(args, key);
    if (!j) {
        *out = dflt;
        return true;
    }
    if (!json_is_string(j) || strlen(json_string_value(j)) > max) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"%s\" must be a string of at "
                      "most %zu bytes", key, max);
        return false;
    }
    *out = json_string_value(j);
    return true;
}

/* ---- regressions: the change points -------------------------------- */

/* The same step seen through another metric: `ratio` and `subject` both
 * move when the subject does (one host's noise may hide it from one of
 * them); `other` is the other arm's own. */
#define S_SAME_SIDE \
    "((c2.metric = 'other') = (cp.metric = 'other'))"

/* The newest confirm of change point cp (co_confirm, 024) as the lists
 * show it, with host h's own answer under "host". */
#define S_CONFIRM_COL(cp, h) \
    "(SELECT json_build_object('id', k.id, 'state', k.state, 'reason', " \
    " k.reason, 'before', k.before, 'after', k.after, 'job', k.job_uuid, " \
    " 'confirmed', (k.result->>'confirmed')::int, 'measured', " \
    " (k.result->>'measured')::int, 'host', (SELECT x FROM " \
    " jsonb_array_elements(k.result->'hosts') x WHERE x->>'host' = " h \
    " LIMIT 1)) FROM confirms k WHERE k.members @> ARRAY[" cp "] ORDER BY " \
    " k.id DESC LIMIT 1)::text "

/* Hosts counted with a step: change points of the same series key on
 * other hosts, the same side and direction, whose first run after the
 * step is of the same job, or has the same commit tag (the members of
 * one event, S_EVENT_SQL); and the hosts that ran that job or commit at
 * all. */
static const char s_list_sql[] =
    "SELECT cp.id, b.suite, b.name AS benchmark, h.name AS host, "
    "cp.subject, cp.other, cp.vars::text AS vars, cp.metric, cp.magnitude, "
    "cp.p_value, cp.outcome, cp.within_noise, cp.regression, rb.run_uuid "
    "AS before_run, rb.started_at_us AS before_us, rb.tags::text AS "
    "before_tags, ra.run_uuid AS after_run, ra.started_at_us AS after_us, "
    "ra.tags::text AS after_tags, to_json(cp.annotations)::text AS "
    "annotations, cp.ack_note, cp.acked_at_us, "
    /* By the job (runs_job index) when the run has one; by the commit
     * tag among the benchmark's runs otherwise. */
    "CASE WHEN ra.job_id <> '' THEN (SELECT count(DISTINCT c2.host_id) "
    " FROM change_points c2 JOIN runs r2 ON r2.id = c2.after_run WHERE "
    " r2.job_id = ra.job_id AND r2.job_id <> '' AND c2.benchmark_id = "
    " cp.benchmark_id AND "
    " c2.subject = cp.subject AND c2.other = cp.other AND c2.vars = cp.vars "
    " AND c2.quantity = cp.quantity AND " S_SAME_SIDE " AND (c2.magnitude > 1) = (cp.magnitude > 1) AND c2.superseded_at_us IS NULL) "
    " WHEN ra.tags ? 'commit' THEN (SELECT count(DISTINCT c2.host_id) FROM "
    " change_points c2 JOIN runs r2 ON r2.id = c2.after_run WHERE "
    " c2.benchmark_id = cp.benchmark_id AND c2.subject = cp.subject AND "
    " c2.other = cp.other AND c2.vars = cp.vars AND c2.quantity = "
    " cp.quantity AND " S_SAME_SIDE
    " AND (c2.magnitude > 1) = (cp.magnitude > 1) AND c2.superseded_at_us IS NULL AND r2.job_id = '' AND "
    " r2.tags->>'commit' = ra.tags->>'commit') ELSE 1 END AS "
    " hosts_with_step, "
    "CASE WHEN ra.job_id <> '' THEN (SELECT count(DISTINCT r3.host_id) FROM "
    " runs r3 WHERE r3.job_id = ra.job_id AND r3.job_id <> '' AND "
    " r3.benchmark_id = "
    " cp.benchmark_id AND r3.vars = cp.vars) "
    " WHEN ra.tags ? 'commit' THEN (SELECT count(DISTINCT r3.host_id) FROM "
    " runs r3 WHERE r3.benchmark_id = cp.benchmark_id AND r3.vars = cp.vars "
    " AND r3.tags->>'commit' = ra.tags->>'commit') ELSE 1 END AS "
    " hosts_total, cp.ratio_magnitude, cp.subject_magnitude, "
    "cp.other_magnitude, cp.updated_at_us, rb.job_id AS before_job, "
    "ra.job_id AS after_job, cp.superseded_at_us, cp.trend_per_run, "
    S_CONFIRM_COL("cp.id", "h.name") " AS confirm, cp.quantity "
    "FROM change_points cp JOIN benchmarks b ON b.id = cp.benchmark_id "
    "JOIN hosts h ON h.id = cp.host_id JOIN runs rb ON rb.id = "
    "cp.before_run JOIN runs ra ON ra.id = cp.after_run "
    "WHERE ra.tags @> $1::jsonb AND ($2 = '' OR h.name = $2) AND "
    "ra.started_at_us >= $3 "
    "ORDER BY cp.regression DESC, cp.within_noise, abs(ln(greatest("
    "cp.magnitude, 1e-300))) DESC, cp.id LIMIT $4";
static const co_stmt_t s_st_list = { "changes.list", s_list_sql, 4,
    PGRES_TUPLES_OK, false };

/* The columns of s_list_sql's rows, resolved once per result. */
enum { L_ID, L_SUITE, L_BENCH, L_HOST, L_SUBJECT, L_OTHER, L_VARS,
       L_METRIC, L_MAGNITUDE, L_P, L_OUTCOME, L_NOISE, L_REGRESSION,
       L_BEFORE_RUN, L_BEFORE_US, L_BEFORE_TAGS, L_AFTER_RUN, L_AFTER_US,
       L_AFTER_TAGS, L_NOTES, L_ACK_NOTE, L_ACKED, L_WITH_STEP, L_TOTAL,
       L_RATIO_MAG, L_SUBJECT_MAG, L_OTHER_MAG, L_UPDATED, L_BEFORE_JOB,
       L_AFTER_JOB, L_SUPERSEDED, L_TREND, L_CONFIRM, L_QUANTITY, L_COUNT };
static const char *const s_list_cols[L_COUNT] = {
    "id", "suite", "benchmark", "host", "subject", "other", "vars",
    "metric", "magnitude", "p_value", "outcome", "within_noise",
    "regression", "before_run", "before_us", "before_tags", "after_run",
    "after_us", "after_tags", "annotations", "ack_note", "acked_at_us",
    "hosts_with_step", "hosts_total", "ratio_magnitude",
    "subject_magnitude", "other_magnitude", "updated_at_us", "before_job",
    "after_job", "superseded_at_us", "trend_per_run", "confirm",
    "quantity" };

/* A side of a change point: the run at columns run, at_us, tags, job. */
static json_t *
s_side(PGresult *r, int i, int run, int at_us, int tags, int job)
{
    return json_pack("{s:s,s:I,s:o,s:s}", "run", co_val(r, i, run),
                     "time_us", co_reply_int(r, i, at_us),
                     "tags", co_reply_json_col(r, i, tags),
                     "job", co_val(r, i, job));
}

/* A nullable double column: null or its number. */
static json_t *
s_opt_dbl(PGresult *r, int i, int col)
{
    return co_val_null(r, i, col) ? json_null() : json_real(s_dbl(r, i, col));
}

static json_t *
s_change_point(PGresult *r, const int *c, int i)
{
    json_t *ack = co_val_null(r, i, c[L_ACKED]) ? json_null() :
        json_pack("{s:s,s:I}", "note", co_val(r, i, c[L_ACK_NOTE]),
                  "at_us", co_reply_int(r, i, c[L_ACKED]));
    json_t *notes = co_reply_json_col(r, i, c[L_NOTES]);
    json_t *mags = json_pack("{s:o,s:o,s:o}",
                             "ratio", s_opt_dbl(r, i, c[L_RATIO_MAG]),
                             "subject", s_opt_dbl(r, i, c[L_SUBJECT_MAG]),
                             "other", s_opt_dbl(r, i, c[L_OTHER_MAG]));
    return json_pack("{s:I,s:s,s:s,s:s,s:s,s:s,s:o,s:s,s:f,s:o,s:f,s:s,"
                     "s:b,s:b,s:o,s:o,s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:s}",
        "id", co_reply_int(r, i, c[L_ID]),
        "suite", co_val(r, i, c[L_SUITE]),
        "benchmark", co_val(r, i, c[L_BENCH]),
        "host", co_val(r, i, c[L_HOST]),
        "subject", co_val(r, i, c[L_SUBJECT]),
        "other", co_val(r, i, c[L_OTHER]),
        "vars", co_reply_json_col(r, i, c[L_VARS]),
        "metric", co_val(r, i, c[L_METRIC]),
        "magnitude", s_dbl(r, i, c[L_MAGNITUDE]), "magnitudes", mags,
        "p_value", s_dbl(r, i, c[L_P]),
        "outcome", co_val(r, i, c[L_OUTCOME]),
        "within_noise", co_val_bool(r, i, c[L_NOISE]),
        "regression", co_val_bool(r, i, c[L_REGRESSION]),
        "before", s_side(r, i, c[L_BEFORE_RUN], c[L_BEFORE_US],
                         c[L_BEFORE_TAGS], c[L_BEFORE_JOB]),
        "after", s_side(r, i, c[L_AFTER_RUN], c[L_AFTER_US],
                        c[L_AFTER_TAGS], c[L_AFTER_JOB]),
        "hosts_with_step", co_reply_int(r, i, c[L_WITH_STEP]),
        "hosts_total", co_reply_int(r, i, c[L_TOTAL]),
        "annotations", json_is_array(notes) ? notes : json_array(),
        "ack", ack, "updated_at_us",
        co_reply_int_or_null(r, i, c[L_UPDATED]),
        "trend", co_val_null(r, i, c[L_TREND]) ? json_null()
        : json_pack("{s:f}", "per_run", s_dbl(r, i, c[L_TREND])),
        "confirm", co_reply_json_col(r, i, c[L_CONFIRM]),
        "quantity", co_val(r, i, c[L_QUANTITY]));
}

/* The newest bisect of each event (docs/bisect.md): one started for
 * it (bisects.event), or of its suite and benchmark whose bad end is the
 * commit of its first run after the step. $1: [{"id", "suite", "bench",
 * "bad"}]. */
static const char S_BISECTS_SQL[] =
    "SELECT e.id, (SELECT json_build_object('id', b.id, 'state', b.state, "
    "  'reason', b.reason, 'culprits', coalesce((SELECT json_agg(x->>"
    "  'commit') FROM jsonb_array_elements(b.result->'culprits') x), "
    "  '[]'::json)) FROM bisects b WHERE b.event = e.id OR (b.suite = "
    "  e.suite AND b.benchmark = e.bench AND b.commits[array_length("
    "  b.commits, 1)] = e.bad) ORDER BY b.id DESC LIMIT 1)::text AS "
    "  bisect FROM json_to_recordset($1::json) AS e(id bigint, suite text, bench "
    "  text, bad text)";
static const co_stmt_t s_st_bisects = { "changes.bisects", S_BISECTS_SQL, 1,
    PGRES_TUPLES_OK, false };

/* Each event of events ({"open", "acked"}) gets "bisect": its newest
 * bisect ({"id", "state", "reason", "culprits": [commits]}) or null.
 * False with c's status. */
static bool
s_link_bisects(co_reply_t *c, json_t *events)
{
    const char *lists[] = { "open", "acked" };
    json_t *keys = json_array(), *e;
    size_t i;
    for (int k = 0; keys && k < 2; k++)
        json_array_foreach(json_object_get(events, lists[k]), i, e) {
            const char *bad = json_string_value(json_object_get(
                json_object_get(json_object_get(e, "after"), "tags"),
                "commit"));
            json_object_set_new(e, "bisect", json_null());
            json_array_append_new(keys, json_pack("{s:O,s:s,s:s,s:s?}", "id",
                json_object_get(e, "id"), "suite", co_reply_str(e, "suite"),
                "bench", co_reply_str(e, "benchmark"), "bad", bad));
        }
    char *t = keys && json_array_size(keys) ? pw_json_dumps(keys) : NULL;
    json_decref(keys);
    if (!t)
        return keys != NULL;
    const char *p[] = { t };
    PGresult *r = co_reply_run(c, &s_st_bisects, p);
    free(t);
    int i_id = co_col(r, "id"), i_bisect = co_col(r, "bisect");
    for (int row = 0; r && row < PQntuples(r); row++) {
        if (co_val_null(r, row, i_bisect))
            continue;
        json_int_t id = co_reply_int(r, row, i_id);
        for (int k = 0; k < 2; k++)
            json_array_foreach(json_object_get(events, lists[k]), i, e)
                if (json_integer_value(json_object_get(e, "id")) == id)
                    json_object_set_new(e, "bisect",
                                        co_reply_json_col(r, row,
                                                          i_bisect));
    }
    PQclear(r);
    return r != NULL;
}

json_t *
co_changes_list(co_reply_t *c, const char *tags_json, const char *host,
                int64_t since_us)
{
    char since[24], lim[16];
    snprintf(since, sizeof since, "%" PRId64, since_us);
    snprintf(lim, sizeof lim, "%d", S_LIST_MAX + 1);
    const char *p[] = { tags_json, host ? host : "", since, lim };
    PGresult *r = co_reply_run(c, &s_st_list, p);
    if (!r)
        return NULL;
    json_t *open = json_array(), *acked = json_array(), *out = NULL;
    json_t *gone = json_array();
    int n = PQntuples(r), col[L_COUNT];
    co_cols(r, s_list_cols, L_COUNT, col);
    for (int i = 0; open && acked && gone && i < n &&
                    i < S_LIST_MAX; i++) {
        json_t *cp = s_change_point(r, col, i);
        bool superseded = !co_val_null(r, i, col[L_SUPERSEDED]);
        json_t *to = superseded ? gone
                     : co_val_null(r, i, col[L_ACKED]) ? open : acked;
        if (!cp || (superseded && json_object_set_new(cp,
                "superseded_at_us", json_integer(co_reply_int(
                r, i, col[L_SUPERSEDED])))) ||
            json_array_append_new(to, cp) != 0)
            goto done;
    }
    json_t *events = co_events_group(open, acked);
    if (events && !s_link_bisects(c, events)) {
        json_decref(events);
        goto failed;
    }
    out = events ? json_pack("{s:O,s:O,s:O,s:o,s:b}", "open", open, "acked",
                             acked, "superseded", gone, "events", events,
                             "truncated", n > S_LIST_MAX) : NULL;
done:
    if (!out)
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
failed:
    json_decref(open);
    json_decref(acked);
    json_decref(gone);
    PQclear(r);
    return out;
}

/* ---- ack, unack ----------------------------------------------------- */

/* m: the members of change point $1's event (co_events.h): the same
 * series key but the host, side and direction, whose first run after it
 * is of the same job, or (outside jobs) has the same commit tag. */
#define S_EVENT_SQL \
    "WITH t AS (SELECT cp.id, cp.benchmark_id, cp.subject, cp.other, " \
    " cp.vars, cp.quantity, cp.metric = 'other' AS env, cp.magnitude > 1 " \
    " AS up, " \
    " ra.tags->>'commit' AS ac, ra.job_id AS aj FROM change_points cp " \
    " JOIN runs ra ON ra.id = cp.after_run WHERE cp.id = $1), " \
    "m AS (SELECT c.id FROM t, change_points c JOIN runs ra ON ra.id = " \
    " c.after_run WHERE c.id = t.id OR (c.benchmark_id = t.benchmark_id " \
    " AND c.subject = t.subject AND c.other = t.other AND c.vars = t.vars " \
    " AND c.quantity = t.quantity AND (c.metric = 'other') = t.env AND " \
    " (c.magnitude > 1) = t.up AND " \
    " c.superseded_at_us IS NULL AND " \
    " CASE WHEN t.aj <> '' THEN ra.job_id = t.aj WHEN t.ac IS NOT NULL " \
    " THEN ra.tags->>'commit' = t.ac AND ra.job_id = '' ELSE false END)) "

static const co_stmt_t s_st_ack = { "changes.ack",
    S_EVENT_SQL ", u AS (UPDATE change_points cp SET ack_note = "
    "$2, acked_at_us = $3 FROM m WHERE cp.id = m.id "
    "RETURNING cp.id, (SELECT name FROM hosts h WHERE h.id "
    "= cp.host_id) AS host) SELECT * FROM u ORDER BY host, "
    "id",
    3, PGRES_TUPLES_OK, false };

static const co_stmt_t s_st_unack = { "changes.unack",
    S_EVENT_SQL ", u AS (UPDATE change_points cp SET ack_note = "
    "NULL, acked_at_us = NULL FROM m WHERE cp.id = m.id "
    "RETURNING cp.id, (SELECT name FROM hosts h WHERE h.id "
    "= cp.host_id) AS host) SELECT * FROM u ORDER BY host, "
    "id",
    1, PGRES_TUPLES_OK, false };

static json_t *
s_ack(co_reply_t *c, const json_t *args, bool ack)
{
    json_int_t id = 0;
    const char *note = NULL;
    char sid[24], at[24];
    if (!json_object_get(args, "id")) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"id\" is required: a change "
                      "point's id (parity regressions lists them)");
        return NULL;
    }
    if (!co_reply_int_arg(c, args, "id", 1, INT64_MAX, 0, &id))
        return NULL;
    if (ack && (!s_str_arg(c, args, "note", S_NOTE_MAX, "", &note)
                || !note[0])) {
        if (c->status == CO_REPLY_OK)
            co_reply_fail(c, CO_REPLY_BADARGS, "\"note\" is required: say "
                          "why the change is known");
        return NULL;
    }
    snprintf(sid, sizeof sid, "%" JSON_INTEGER_FORMAT, id);
    snprintf(at, sizeof at, "%" PRId64, pw_clock_unix_us());
    const char *p[] = { sid, note, at };
    PGresult *r = ack
        ? co_reply_run(c, &s_st_ack, p)
        : co_reply_run(c, &s_st_unack, p);
    if (!r)
        return NULL;
    int n = PQntuples(r);
    json_t *members = json_array(), *hosts = json_array(), *out = NULL;
    int i_id = co_col(r, "id"), i_host = co_col(r, "host");
    for (int i = 0; members && hosts && i < n; i++)
        if (json_array_append_new(members, json_integer(co_reply_int(r, i,
                                                                     i_id))) ||
            json_array_append_new(hosts, json_string(co_val(r, i, i_host))))
            goto done;
    if (n == 0) {
        co_reply_fail(c, CO_REPLY_NOTFOUND, "no change point %s", sid);
        goto done;
    }
    out = json_pack("{s:I,s:b,s:o,s:O,s:O}", "id", id, "acked", ack, "note",
                    ack ? json_string(note) : json_null(), "members", members,
                    "hosts", hosts);
done:
    json_decref(members);
    json_decref(hosts);
    PQclear(r);
    return out;
}

/* ---- series --------------------------------------------------------- */

/* Each series (008) within the filters, its newest $6 runs read through
 * runs_series: a window over every run of the fleet was 1.5 s for the
 * site's first pass (2 runs of every series) at 1,000 series. */
static const char s_series_sql[] =
    "WITH s AS (SELECT se.*, b.suite, b.name AS bname, h.name AS hname "
    " FROM series se JOIN benchmarks b ON b.id = se.benchmark_id "
    " JOIN hosts h ON h.id = se.host_id "
    " WHERE ($1 = '' OR b.suite = $1) AND ($2 = '' OR b.name = $2) AND "
    " ($3 = '' OR h.name = $3)), "
    "p AS (SELECT s.suite, s.bname, s.hname, s.benchmark_id, s.host_id, "
    " s.vars, s.subject, s.other, t.* FROM s CROSS JOIN LATERAL ("
    " SELECT r.id, r.run_uuid, r.job_id, r.tags, r.started_at_us, "
    "  r.environment, v.ratio, v.outcome, v.tolerance, v.subject_arm, "
    "  v.other_arm, md5(sa.argv::text || sa.shell || oa.argv::text || "
    "  oa.shell) AS def, md5(sa.version_output || oa.version_output) AS ver, "
    "  array_to_string(r.metrics, ' ') AS tracked "
    " FROM runs r JOIN verdicts v ON v.run = r.id AND v.other_name = s.other "
    "  AND v.metric = $8 "
    " JOIN arms sa ON sa.run = r.id AND sa.idx = v.subject_arm "
    "  AND sa.name = s.subject "
    " JOIN arms oa ON oa.run = r.id AND oa.idx = v.other_arm "
    " WHERE r.benchmark_id = s.benchmark_id AND r.host_id = s.host_id "
    "  AND r.vars = s.vars AND r.status = 'complete' "
    "  AND r.tags @> $4::jsonb AND r.started_at_us >= $5 "
    " ORDER BY r.started_at_us DESC, r.id DESC LIMIT $6) t) "
    "SELECT p.suite, p.bname AS benchmark, p.hname AS host, p.vars::text "
    " AS vars, p.subject, p.other, p.run_uuid, p.started_at_us, p.job_id, "
    " p.tags::text AS tags, ss.n AS s_n, ss.min AS s_min, ss.q25 AS s_q25, "
    " ss.median AS s_median, ss.q75 AS s_q75, ss.max AS s_max, so.n AS "
    " o_n, so.min AS o_min, so.q25 AS o_q25, so.median AS o_median, so.q75 "
    " AS o_q75, so.max AS o_max, "
    " p.ratio, p.outcome, p.tolerance, p.environment, p.def, p.ver, "
    /* The snapshot's text only beside a change of environment, where
     * s_annotations reads it: it is kilobytes a run otherwise. */
    " CASE WHEN p.environment IS DISTINCT FROM lag(p.environment) OVER w "
    "  OR p.environment IS DISTINCT FROM lead(p.environment) OVER w "
    "  THEN e.environment_json END AS env_json, p.tracked "
    "FROM p "
    "LEFT JOIN run_summaries ss ON ss.run = p.id AND ss.arm = p.subject_arm "
    "AND ss.metric = $8 "
    "LEFT JOIN run_summaries so ON so.run = p.id AND so.arm = p.other_arm "
    "AND so.metric = $8 "
    "LEFT JOIN environments e ON e.id = p.environment "
    "WINDOW w AS (PARTITION BY p.benchmark_id, p.host_id, p.vars, "
    " p.subject, p.other ORDER BY p.started_at_us, p.id) "
    "ORDER BY p.suite, p.bname, p.hname, p.vars::text, p.subject, p.other, "
    " p.started_at_us, p.id LIMIT $7";
static const co_stmt_t s_st_series = { "changes.series", s_series_sql, 8,
    PGRES_TUPLES_OK, false };

/* The metrics besides wall time that the benchmark's newest run tracks
 * (025), space-separated. */
static const char s_tracked_sql[] =
    "SELECT array_to_string(array_remove(x.metrics, 'wall'), ' ') AS "
    "tracked FROM "
    "benchmarks b CROSS JOIN LATERAL (SELECT r.metrics FROM runs r WHERE "
    "r.benchmark_id = b.id ORDER BY r.started_at_us DESC LIMIT 1) x WHERE "
    "b.name = $2 AND ($1 = '' OR b.suite = $1) LIMIT 1";
static const co_stmt_t s_st_tracked = { "changes.tracked", s_tracked_sql, 2,
    PGRES_TUPLES_OK, false };

static const char s_series_cp_sql[] =
    "SELECT b.suite, b.name AS benchmark, h.name AS host, cp.vars::text AS "
    " vars, cp.subject, cp.other, ra.run_uuid, cp.id, cp.metric, "
    " cp.magnitude, cp.outcome, "
    " cp.within_noise, cp.regression, "
    /* The newest bisect of its benchmark that ends at its commit (the
     * same link as an event's "bisect"). */
    " (SELECT json_build_object('id', bi.id, 'state', bi.state, 'reason', "
    "  bi.reason, 'culprits', coalesce((SELECT json_agg(x->>'commit') FROM "
    "  jsonb_array_elements(bi.result->'culprits') x), '[]'::json)) FROM "
    "  bisects bi WHERE bi.suite = b.suite AND bi.benchmark = b.name AND "
    "  bi.commits[array_length(bi.commits, 1)] = ra.tags->>'commit' ORDER "
    "  BY bi.id DESC LIMIT 1)::text AS bisect, "
    S_CONFIRM_COL("cp.id", "h.name") " AS confirm "
    "FROM change_points cp JOIN benchmarks b ON b.id = cp.benchmark_id "
    "JOIN hosts h ON h.id = cp.host_id JOIN runs ra ON ra.id = cp.after_run "
    "WHERE ($1 = '' OR b.suite = $1) AND ($2 = '' OR b.name = $2) AND "
    " ($3 = '' OR h.name = $3) AND ra.started_at_us >= $4 AND "
    " cp.superseded_at_us IS NULL AND cp.quantity = $5 "
    "ORDER BY cp.id LIMIT 20000";
static const co_stmt_t s_st_series_cp = { "changes.series_cp", s_series_cp_sql, 5,
    PGRES_TUPLES_OK, false };

/* The columns of s_series_sql's rows (the two arms' summaries at
 * prefixes s_ and o_), resolved once per result. */
enum { E_SUITE, E_BENCH, E_HOST, E_VARS, E_SUBJECT, E_OTHER, E_RUN,
       E_AT, E_JOB, E_TAGS, E_SN, E_SMIN, E_SQ25, E_SMEDIAN, E_SQ75,
       E_SMAX, E_ON, E_OMIN, E_OQ25, E_OMEDIAN, E_OQ75, E_OMAX, E_RATIO,
       E_OUTCOME, E_TOLERANCE, E_ENV_ID, E_DEF, E_VER, E_ENV, E_TRACKED,
       E_COUNT };
static const char *const s_series_cols[E_COUNT] = {
    "suite", "benchmark", "host", "vars", "subject", "other", "run_uuid",
    "started_at_us", "job_id", "tags", "s_n", "s_min", "s_q25", "s_median",
    "s_q75", "s_max", "o_n", "o_min", "o_q25", "o_median", "o_q75",
    "o_max", "ratio", "outcome", "tolerance", "environment", "def", "ver",
    "env_json", "tracked" };

/* One arm's summary from the six columns from c[at] (n, min, q25,
 * median, q75, max, in the enum's order). */
static json_t *
s_summary(PGresult *r, int i, const int *c, int at)
{
    if (co_val_null(r, i, c[at + 3]))
        return json_null();
    return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o}",
                     "n", co_reply_int(r, i, c[at]),
                     "min", s_dbl_or_null(r, i, c[at + 1]),
                     "q25", s_dbl_or_null(r, i, c[at + 2]),
                     "median", s_dbl_or_null(r, i, c[at + 3]),
                     "q75", s_dbl_or_null(r, i, c[at + 4]),
                     "max", s_dbl_or_null(r, i, c[at + 5]));
}

/* The fields of a host's environment whose change is worth a note, and
 * the kind of note: the agent's version is the agent's, the rest the
 * host's. */
static const struct {
    const char *key, *kind;
} s_env_fields[] = {
    { "kernel", "environment" }, { "cpu_model", "environment" },
    { "microcode", "environment" }, { "governor", "environment" },
    { "turbo", "environment" }, { "agent_version", "agent" },
};

static void
s_env_field(const json_t *env, const char *key, char *out, size_t len)
{
    const json_t *f = json_object_get(env, key);
    const json_t *v = json_is_object(f) ? json_object_get(f, "value") : f;
    out[0] = '\0';
    if (json_is_string(v)) {
        snprintf(out, len, "%s", json_string_value(v));
    } else if (v && !json_is_null(v)) {
        char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        snprintf(out, len, "%s", d ? d : "");
        free(d);
    }
}

static int
s_annotate(json_t *notes, json_int_t index, const char *kind,
           const char *text)
{
    return json_array_append_new(notes, json_pack("{s:I,s:s,s:s}", "index",
                                                  index, "kind", kind,
                                                  "text", text));
}

/* What changed between row i-1 and row i of one series. */
static int
s_annotations(PGresult *r, const int *c, int i, json_int_t index,
              json_t *notes)
{
    if (strcmp(co_val(r, i, c[E_DEF]), co_val(r, i - 1, c[E_DEF])) != 0
        && s_annotate(notes, index, "arm", "the arms' commands changed"))
        return -1;
    if (strcmp(co_val(r, i, c[E_VER]), co_val(r, i - 1, c[E_VER])) != 0
        && s_annotate(notes, index, "arm", "the arms' versions output "
                      "changed"))
        return -1;
    if (strcmp(co_val(r, i, c[E_ENV_ID]), co_val(r, i - 1, c[E_ENV_ID])) == 0
        || co_val_null(r, i, c[E_ENV]) || co_val_null(r, i - 1, c[E_ENV]))
        return 0;
    json_t *a = json_loads(co_val(r, i - 1, c[E_ENV]), 0, NULL);
    json_t *b = json_loads(co_val(r, i, c[E_ENV]), 0, NULL);
    int rc = 0;
    for (size_t k = 0; a && b && rc == 0 &&
         k < sizeof s_env_fields / sizeof *s_env_fields; k++) {
        char va[80], vb[80], text[200];
        s_env_field(a, s_env_fields[k].key, va, sizeof va);
        s_env_field(b, s_env_fields[k].key, vb, sizeof vb);
        if (strcmp(va, vb) == 0)
            continue;
        snprintf(text, sizeof text, "%s %s -> %s", s_env_fields[k].key,
                 va[0] ? va : "(none)", vb[0] ? vb : "(none)");
        rc = s_annotate(notes, index, s_env_fields[k].kind, text);
    }
    json_decref(a);
    json_decref(b);
    return rc;
}

/* Rows i and j are of one series: the same suite, benchmark, host,
 * vars, subject and other (the first six columns of the enum). */
static bool
s_same_series(PGresult *r, const int *c, int i, int j)
{
    for (int k = E_SUITE; k <= E_OTHER; k++)
        if (strcmp(co_val(r, i, c[k]), co_val(r, j, c[k])) != 0)
            return false;
    return true;
}

static json_t *
s_run(PGresult *r, const int *c, int i)
{
    return json_pack("{s:s,s:I,s:s,s:o,s:o,s:o,s:o,s:o,s:o}",
                     "run", co_val(r, i, c[E_RUN]),
                     "time_us", co_reply_int(r, i, c[E_AT]),
                     "job", co_val(r, i, c[E_JOB]),
                     "tags", co_reply_json_col(r, i, c[E_TAGS]),
                     "subject", s_summary(r, i, c, E_SN),
                     "other", s_summary(r, i, c, E_ON),
                     "ratio", s_dbl_or_null(r, i, c[E_RATIO]),
                     "outcome", s_str_or_null(r, i, c[E_OUTCOME]),
                     "tolerance", s_dbl_or_null(r, i, c[E_TOLERANCE]));
}

/* Put each change point (cps rows) on its series: "index" is the
 * position of its first run after the change. */
static int
s_place_change_points(json_t *series, PGresult *cps)
{
    size_t k;
    json_t *s;
    enum { P_SUITE, P_BENCH, P_HOST, P_VARS, P_SUBJECT, P_OTHER, P_RUN,
           P_ID, P_METRIC, P_MAGNITUDE, P_OUTCOME, P_NOISE, P_REGRESSION,
           P_BISECT, P_CONFIRM, P_COUNT };
    static const char *const names[P_COUNT] = {
        "suite", "benchmark", "host", "vars", "subject", "other",
        "run_uuid", "id", "metric", "magnitude", "outcome", "within_noise",
        "regression", "bisect", "confirm" };
    int c[P_COUNT];
    co_cols(cps, names, P_COUNT, c);
    json_array_foreach(series, k, s) {
        json_t *runs = json_object_get(s, "runs"), *list = json_array();
        if (!list || json_object_set_new(s, "change_points", list) != 0)
            return -1;
        for (int i = 0; i < PQntuples(cps); i++) {
            if (strcmp(co_val(cps, i, c[P_SUITE]), co_reply_str(s, "suite")) ||
                strcmp(co_val(cps, i, c[P_BENCH]),
                       co_reply_str(s, "benchmark")) ||
                strcmp(co_val(cps, i, c[P_HOST]), co_reply_str(s, "host")) ||
                strcmp(co_val(cps, i, c[P_VARS]),
                       co_reply_str(s, "vars_key")) ||
                strcmp(co_val(cps, i, c[P_SUBJECT]),
                       co_reply_str(s, "subject")) ||
                strcmp(co_val(cps, i, c[P_OTHER]), co_reply_str(s, "other")))
                continue;
            size_t at;
            json_t *run;
            json_array_foreach(runs, at, run) {
                if (strcmp(co_reply_str(run, "run"),
                           co_val(cps, i, c[P_RUN])))
                    continue;
                if (json_array_append_new(list, json_pack(
                        "{s:I,s:I,s:s,s:f,s:s,s:b,s:b,s:o,s:o}", "index",
                        (json_int_t)at, "id", co_reply_int(cps, i, c[P_ID]),
                        "metric", co_val(cps, i, c[P_METRIC]),
                        "magnitude", s_dbl(cps, i, c[P_MAGNITUDE]),
                        "outcome", co_val(cps, i, c[P_OUTCOME]),
                        "within_noise", co_val_bool(cps, i, c[P_NOISE]),
                        "regression", co_val_bool(cps, i, c[P_REGRESSION]),
                        "bisect", co_reply_json_col(cps, i, c[P_BISECT]),
                        "confirm", co_reply_json_col(cps, i, c[P_CONFIRM]))))
                    return -1;
                break;
            }
        }
        json_object_del(s, "vars_key");
    }
    return 0;
}

/* The series of rows r, grouped (rows come ordered by series, oldest
 * run first). */
static json_t *
s_series_list(PGresult *r, const char *metric)
{
    json_t *list = json_array(), *cur = NULL;
    int n = PQntuples(r), c[E_COUNT];
    co_cols(r, s_series_cols, E_COUNT, c);
    for (int i = 0; list && i < n && i < S_SERIES_ROWS_MAX; i++) {
        if (!cur || !s_same_series(r, c, i, i - 1)) {
            if (json_array_size(list) >= S_SERIES_MAX)
                break;
            cur = json_pack("{s:s,s:s,s:s,s:o,s:s,s:s,s:s,s:[],s:[]}",
                            "suite", co_val(r, i, c[E_SUITE]),
                            "benchmark", co_val(r, i, c[E_BENCH]),
                            "host", co_val(r, i, c[E_HOST]),
                            "vars", co_reply_json_col(r, i, c[E_VARS]),
                            "vars_key", co_val(r, i, c[E_VARS]),
                            "subject", co_val(r, i, c[E_SUBJECT]),
                            "other", co_val(r, i, c[E_OTHER]),
                            "runs", "annotations");
            if (!cur || json_array_append_new(list, cur) != 0 ||
                json_object_set_new(cur, "metric", json_string(metric)))
                goto oom;
        }
        /* The metrics its newest run tracks (runs are oldest first). */
        json_t *tracked = json_array();
        char names[64], *save = NULL;
        snprintf(names, sizeof names, "%s", co_val(r, i, c[E_TRACKED]));
        for (char *t = strtok_r(names, " ", &save); tracked && t;
             t = strtok_r(NULL, " ", &save))
            json_array_append_new(tracked, json_string(t));
        if (!tracked || json_object_set_new(cur, "metrics", tracked) != 0)
            goto oom;
        json_t *runs = json_object_get(cur, "runs");
        json_int_t index = (json_int_t)json_array_size(runs);
        if (json_array_append_new(runs, s_run(r, c, i)) != 0)
            goto oom;
        if (index > 0 && s_annotations(r, c, i, index, json_object_get(
                cur, "annotations")) != 0)
            goto oom;
    }
    return list;
oom:
    json_decref(list);
    return NULL;
}

/* Whole series from the front while the answer fits one frame (with
 * room for the reply's own fields and escapes): a request that asks for
 * too much gets "truncated", not an error. True when some were cut. */
static bool
s_fit_frame(json_t *list)
{
    size_t total = 0, i, n = json_array_size(list);
    for (i = 0; i < n; i++) {
        /* The reply's own encoder (jansson's prints reals with %.17g,
         * which was most of this request's time). */
        char *t = pw_json_dumps(json_array_get(list, i));
        size_t one = t ? strlen(t) + 1 : S_SERIES_BYTES_MAX + 1;
        free(t);
        if (total + one > S_SERIES_BYTES_MAX)
            break;
        total += one;
    }
    for (size_t k = n; k > i; k--)
        json_array_remove(list, k - 1);
    return i < n;
}

static json_t *
s_series(co_reply_t *c, const json_t *args)
{
    const char *suite, *bench, *host, *metric;
    json_int_t since = 0, runs = 0;
    char *tags = NULL;
    json_t *out = NULL, *list = NULL;
    PGresult *r = NULL, *cps = NULL;
    vd_metric_t m;
    if (!s_str_arg(c, args, "metric", 16, "wall", &metric))
        goto done;
    if (strcmp(metric, "all") != 0 && vd_metric_parse(metric, &m) != 0) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"metric\" must be wall, cpu, "
                      "peak_rss or all");
        goto done;
    }
    if (!s_str_arg(c, args, "suite", 200, "", &suite) ||
        !s_str_arg(c, args, "benchmark", 200, "", &bench) ||
        !s_str_arg(c, args, "host", 200, "", &host) ||
        !co_reply_int_arg(c, args, "since_us", 1, INT64_MAX / 2, 0, &since) ||
        !co_reply_int_arg(c, args, "runs", 2, S_RUNS_MAX,
                          S_RUNS_DEFAULT, &runs) ||
        !(tags = co_reply_tags_arg(c, args)))
        goto done;
    char ps[24], pr[16], pl[16];
    snprintf(ps, sizeof ps, "%" PRId64, since ? pw_clock_unix_us() -
             (int64_t)since : INT64_MIN);
    snprintf(pr, sizeof pr, "%" JSON_INTEGER_FORMAT, runs);
    snprintf(pl, sizeof pl, "%d", S_SERIES_ROWS_MAX + 1);
    /* "all": wall time's series, then those of each other metric the
     * benchmark's newest run tracks (asking every metric of a benchmark
     * that tracks none would walk each series' whole history). */
    char tracked[64] = "wall";
    if (strcmp(metric, "all") == 0) {
        const char *pt[] = { suite, bench };
        PGresult *t = co_reply_run(c, &s_st_tracked, pt);
        if (!t)
            goto done;
        if (PQntuples(t) == 1)
            snprintf(tracked, sizeof tracked, "wall %s",
                     co_val(t, 0, co_col(t, "tracked")));
        PQclear(t);
    } else {
        snprintf(tracked, sizeof tracked, "%s", metric);
    }
    if (!(list = json_array()))
        goto done;
    bool cut = false;
    char *save = NULL;
    for (char *one = strtok_r(tracked, " ", &save); one;
         one = strtok_r(NULL, " ", &save)) {
        if (json_array_size(list) && strcmp(one, "wall") == 0)
            continue;          /* the newest run tracks wall too */
        const char *p[] = { suite, bench, host, tags, ps, pr, pl, one };
        const char *pc[] = { suite, bench, host, ps, one };
        json_t *part = NULL;
        PQclear(r);
        PQclear(cps);
        cps = NULL;
        if (!(r = co_reply_run(c, &s_st_series, p)) ||
            !(cps = co_reply_run(c, &s_st_series_cp, pc)))
            goto done;
        if (!(part = s_series_list(r, one)) ||
            s_place_change_points(part, cps) != 0 ||
            json_array_extend(list, part) != 0) {
            json_decref(part);
            goto done;
        }
        json_decref(part);
        cut = cut || PQntuples(r) > S_SERIES_ROWS_MAX;
    }
    cut = s_fit_frame(list) || cut;
    out = json_pack("{s:O,s:b}", "series", list, "truncated",
                    cut || json_array_size(list) >= S_SERIES_MAX);
done:
    PQclear(r);
    PQclear(cps);
    free(tags);
    json_decref(list);
    return out;
}

json_t *
co_changes_handle(co_reply_t *c, const char *command, const json_t *args)
{
    if (strcmp(command, "series") == 0)
        return s_series(c, args);
    if (strcmp(command, "ack") == 0 || strcmp(command, "unack") == 0)
        return s_ack(c, args, command[0] == 'a');
    co_reply_fail(c, CO_REPLY_UNKNOWN, "unknown command \"%.40s\"", command);
    return NULL;
}
