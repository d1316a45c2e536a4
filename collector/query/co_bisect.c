/* co_bisect.c -- the bisect requests (co_bisect.h). */
#include "co_bisect.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co_changes.h"
#include "co_jobreq.h"
#include "co_reply.h"
#include "pw_clock.h"
#include "pw_json.h"
#include "pw_limits.h"
#include "vd_bisect.h"

/* A bisect's row and its steps (each with its job's state) as JSON. */
static const char S_LOAD_SQL[] =
    "SELECT json_build_object('id', b.id, 'suite', b.suite, 'benchmark', "
    "  b.benchmark, 'commits', b.commits, 'hosts', b.hosts, 'vars', b.vars, "
    "  'runs', b.runs, 'parity', b.parity, 'state', b.state, 'reason', "
    "  b.reason, 'result', b.result, 'event', b.event, 'requested_by', "
    "  b.requested_by, 'created_at_us', b.created_at_us, 'started_at_us', "
    "  b.started_at_us, 'ended_at_us', b.ended_at_us, 'steps', "
    "  coalesce((SELECT json_agg(json_build_object('seq', st.seq, 'point', "
    "  st.point, 'commit', b.commits[st.point + 1], 'mid', st.mid, "
    "  'mid_commit', b.commits[st.mid + 1], 'try', st.try, "
    "  'rerun', st.rerun, 'runs', st.runs, 'job', st.job_uuid, 'job_state', "
    "  j.state, 'call', st.call, 'reason', st.reason, 'hosts', st.hosts) "
    "  ORDER BY st.seq) FROM bisect_steps st LEFT JOIN jobs j ON "
    "  j.job_uuid = st.job_uuid WHERE st.bisect = b.id), '[]'))::text "
    "AS bisect FROM bisects b WHERE b.id = $1::bigint";
static const co_stmt_t s_st_load = { "bisect.load", S_LOAD_SQL, 1,
    PGRES_TUPLES_OK, false };

json_t *
co_bisect_load(co_reply_t *c, int64_t id)
{
    char ids[24];
    snprintf(ids, sizeof ids, "%" PRId64, id);
    const char *p[] = { ids };
    PGresult *r = co_reply_run(c, &s_st_load, p);
    json_t *b = r && PQntuples(r) == 1 ? json_loads(co_val(r, 0, co_col(
                                         r, "bisect")), 0, NULL) : NULL;
    if (r && PQntuples(r) == 1 && !b)
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
    PQclear(r);
    return b;
}

PGresult *
co_bisect_q_now(co_reply_t *c, const co_stmt_t *st, int64_t id)
{
    char ids[24], now[24];
    snprintf(ids, sizeof ids, "%" PRId64, id);
    snprintf(now, sizeof now, "%" PRId64, pw_clock_unix_us());
    const char *p[] = { ids, now };
    return co_reply_run(c, st, p);
}

vd_bisect_t *
co_bisect_replay(const json_t *b, char *err, size_t errlen)
{
    size_t i, mid, low, high;
    unsigned t;
    json_t *st;
    vd_bisect_t *v = vd_bisect_new(json_array_size(json_object_get(
        b, "commits")), err, errlen);
    json_array_foreach(json_object_get(b, "steps"), i, st) {
        const char *call = json_string_value(json_object_get(st, "call"));
        if (!v || !call || strncmp(call, "ends", 4) == 0)
            continue;
        vd_bisect_call_t k = VD_BISECT_CALL_COUNT;
        for (int x = 0; x < VD_BISECT_CALL_COUNT; x++)
            if (strcmp(vd_bisect_call_name((vd_bisect_call_t)x), call) == 0)
                k = (vd_bisect_call_t)x;
        json_int_t seq = json_integer_value(json_object_get(st, "seq"));
        if (!vd_bisect_next(v, &mid, &low, &high, &t) ||
            (json_int_t)mid != json_integer_value(json_object_get(
                st, "point")) ||
            (json_int_t)t != json_integer_value(json_object_get(st, "try")) ||
            vd_bisect_record(v, mid, k, json_string_value(json_object_get(
                st, "reason")), err, errlen) != VD_OK) {
            snprintf(err, errlen, "its stored steps do not replay (step %"
                     JSON_INTEGER_FORMAT ")", seq);
            vd_bisect_destroy(&v);
        }
    }
    return v;
}

bool
co_bisect_handles(const char *command)
{
    return strcmp(command, "bisect_start") == 0 ||
           strcmp(command, "bisect_status") == 0 ||
           strcmp(command, "bisect_cancel") == 0;
}

/* ---- bisect_start ------------------------------------------------- */

/* A commit id: 1..CO_BISECT_COMMIT_MAX printable bytes, no space. */
static bool
s_commit_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > CO_BISECT_COMMIT_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isgraph((unsigned char)s[i]))
            return false;
    return true;
}

/* The arguments' shapes: false with c's status. */
static bool
s_start_args(co_reply_t *c, const json_t *args, json_int_t *runs)
{
    const char *names[] = { "suite", "benchmark" };
    for (int k = 0; k < 2; k++) {
        const char *s = json_string_value(json_object_get(args, names[k]));
        if (!s || !*s || strlen(s) > CO_JOBREQ_MAX_TEXT) {
            co_reply_fail(c, CO_REPLY_BADARGS, "\"%s\" must be a non-empty "
                          "string of at most %d bytes", names[k],
                          CO_JOBREQ_MAX_TEXT);
            return false;
        }
    }
    const json_t *cm = json_object_get(args, "commits");
    size_t n = json_array_size(cm);
    if (!json_is_array(cm) || n < 2 || n > VD_BISECT_POINTS_MAX) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"commits\" must be a list of 2 "
                      "to %d commit ids, the good end first and the bad end "
                      "last", VD_BISECT_POINTS_MAX);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(cm, i));
        if (!s_commit_ok(s)) {
            co_reply_fail(c, CO_REPLY_BADARGS, "commit %zu of \"commits\" "
                          "must be 1 to %d printable bytes without spaces",
                          i + 1, CO_BISECT_COMMIT_MAX);
            return false;
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(json_string_value(json_array_get(cm, k)), s) == 0) {
                co_reply_fail(c, CO_REPLY_BADARGS, "commit \"%s\" is listed "
                              "twice in \"commits\"", s);
                return false;
            }
    }
    const json_t *hosts = json_object_get(args, "hosts");
    size_t i;
    json_t *h;
    if (hosts && (!json_is_array(hosts) || json_array_size(hosts) == 0 ||
                  json_array_size(hosts) > CO_JOBREQ_MAX_HOSTS)) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"hosts\" must be a list of 1 "
                      "to %d host names", CO_JOBREQ_MAX_HOSTS);
        return false;
    }
    json_array_foreach(hosts, i, h)
        if (!json_is_string(h) || !json_string_length(h) ||
            json_string_length(h) > CO_JOBREQ_MAX_TEXT) {
            co_reply_fail(c, CO_REPLY_BADARGS, "\"hosts\" must be a list of "
                          "host names");
            return false;
        }
    const json_t *vars = json_object_get(args, "vars");
    const char *k;
    json_t *v;
    if (vars && !json_is_object(vars)) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"vars\" must be an object of "
                      "strings");
        return false;
    }
    json_object_foreach((json_t *)vars, k, v)
        if (!json_is_string(v) || strcmp(k, "commit") == 0) {
            co_reply_fail(c, CO_REPLY_BADARGS, strcmp(k, "commit") == 0 ?
                          "\"vars\" must not set \"commit\": each step sets "
                          "it to the commit it measures" :
                          "\"vars\" must be an object of strings");
            return false;
        }
    return co_reply_int_arg(c, args, "runs", PW_RUNS_MIN, CO_BISECT_RUNS_MAX,
                            CO_BISECT_RUNS_DEFAULT, runs);
}

/* The change-point event of suite/benchmark whose first run after the
 * step is of the bad commit (a new reference), or NULL (also on failure:
 * c's status says). */
static json_t *
s_event(co_reply_t *c, const char *suite, const char *bench, const char *bad)
{
    json_t *tags = json_pack("{s:s}", "commit", bad);
    char *t = tags ? pw_json_dumps(tags) : NULL;
    json_decref(tags);
    json_t *l = t ? co_changes_list(c, t, "", 0) : NULL;
    free(t);
    json_t *found = NULL;
    const char *lists[] = { "open", "acked" };
    size_t i;
    json_t *e;
    for (int k = 0; l && !found && k < 2; k++)
        json_array_foreach(json_object_get(json_object_get(l, "events"),
                                           lists[k]), i, e) {
            const char *after = json_string_value(json_object_get(
                json_object_get(json_object_get(e, "after"), "tags"),
                "commit"));
            if (strcmp(co_reply_str(e, "suite"), suite) == 0 &&
                strcmp(co_reply_str(e, "benchmark"), bench) == 0 && after &&
                strcmp(after, bad) == 0) {
                found = json_incref(e);
                break;
            }
        }
    json_decref(l);
    return found;
}

static const co_stmt_t s_st_hosts = { "bisect.hosts",
    "SELECT n.name, count(h.id) AS keys, "
    "bool_or(s.name IS NOT NULL) AS has_suite, bool_or($2 = "
    "ANY(s.benchmarks)) AS has_benchmark FROM (SELECT "
    "DISTINCT json_array_elements_text($3::json) AS name UNION SELECT "
    "h.name FROM hosts h JOIN host_suites s ON s.host_id = h.id AND "
    "s.name = $1 WHERE $3::json::text = '[]' AND $2 = ANY(s.benchmarks)) "
    "n LEFT JOIN hosts h ON h.name = n.name LEFT JOIN host_suites s ON "
    "s.host_id = h.id AND s.name = $1 GROUP BY n.name ORDER BY n.name",
    3, PGRES_TUPLES_OK, false };

/* The hosts: the named ones, each checked; or every host listing the
 * suite with the benchmark. A new array, or NULL with c's status. */
static json_t *
s_hosts(co_reply_t *c, const char *suite, const char *bench,
        const json_t *named)
{
    char *nm = named ? pw_json_dumps(named) : NULL;
    const char *p[] = { suite, bench, nm ? nm : "[]" };
    PGresult *r = co_reply_run(c, &s_st_hosts, p);
    free(nm);
    if (!r)
        return NULL;
    json_t *out = json_array();
    int i_name = co_col(r, "name"), i_keys = co_col(r, "keys"),
        i_suite = co_col(r, "has_suite"), i_bench = co_col(r, "has_benchmark");
    for (int i = 0; out && i < PQntuples(r); i++) {
        const char *name = co_val(r, i, i_name);
        int64_t keys = co_val_i64(r, i, i_keys);
        bool bad = true;
        if (keys == 0)
            co_reply_fail(c, CO_REPLY_BADARGS, "no host is named \"%s\" "
                          "(parity hosts lists them)", name);
        else if (keys != 1)
            co_reply_fail(c, CO_REPLY_BADARGS, "host name \"%s\" is claimed "
                          "by several hosts with different keys (parity "
                          "hosts lists them)", name);
        else if (!co_val_bool(r, i, i_suite))
            co_reply_fail(c, CO_REPLY_BADARGS, "host \"%s\" did not list "
                          "suite \"%s\" in its last Hello", name, suite);
        else if (!co_val_bool(r, i, i_bench))
            co_reply_fail(c, CO_REPLY_BADARGS, "host \"%s\": its suite "
                          "\"%s\" has no benchmark \"%s\"", name, suite,
                          bench);
        else
            bad = false;
        if (bad) {
            json_decref(out);
            PQclear(r);
            return NULL;
        }
        json_array_append_new(out, json_string(name));
    }
    PQclear(r);
    if (out && json_array_size(out) == 0) {
        co_reply_fail(c, CO_REPLY_BADARGS, "no host lists suite \"%s\" with "
                      "benchmark \"%s\" (parity hosts shows what each "
                      "listed)", suite, bench);
        json_decref(out);
        return NULL;
    }
    return out;
}

static const co_stmt_t s_st_start = { "bisect.start",
    "INSERT INTO bisects "
    "(suite, benchmark, commits, hosts, vars, runs, parity, event, "
    "requested_by, created_at_us) VALUES ($1, $2, ARRAY(SELECT "
    "json_array_elements_text($3::json)), ARRAY(SELECT "
    "json_array_elements_text($4::json)), $5::jsonb, $6::int, "
    "$7::float8, $8::bigint, $9, $10::bigint) RETURNING id",
    10, PGRES_TUPLES_OK, false };

static json_t *
s_start(co_reply_t *c, const char *requested_by, const json_t *args,
        double parity)
{
    json_int_t runs;
    if (!s_start_args(c, args, &runs))
        return NULL;
    const char *suite = co_reply_str(args, "suite");
    const char *bench = co_reply_str(args, "benchmark");
    const json_t *cm = json_object_get(args, "commits");
    const char *bad = json_string_value(json_array_get(
        cm, json_array_size(cm) - 1));
    json_t *event = s_event(c, suite, bench, bad), *hosts = NULL, *out = NULL;
    if (c->status != CO_REPLY_OK)
        goto done;
    const json_t *named = json_object_get(args, "hosts");
    if (!named && event)
        named = json_object_get(event, "hosts");
    if (!(hosts = s_hosts(c, suite, bench, named)))
        goto done;
    char *cms = pw_json_dumps(cm), *hs = pw_json_dumps(hosts);
    json_t *empty = json_object();
    char *vs = pw_json_dumps(json_object_get(args, "vars") ?
                             json_object_get(args, "vars") : empty);
    json_decref(empty);
    char rn[24], par[32], ev[24], now[24];
    snprintf(rn, sizeof rn, "%" JSON_INTEGER_FORMAT, runs);
    snprintf(par, sizeof par, "%.17g", parity);
    snprintf(ev, sizeof ev, "%" JSON_INTEGER_FORMAT,
             json_integer_value(json_object_get(event, "id")));
    snprintf(now, sizeof now, "%" PRId64, pw_clock_unix_us());
    const char *p[] = { suite, bench, cms, hs, vs, rn, par, event ? ev : NULL,
                        requested_by ? requested_by : "", now };
    PGresult *r = cms && hs && vs ? co_reply_run(c, &s_st_start, p)
        : NULL;
    if (!cms || !hs || !vs)
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
    free(cms);
    free(hs);
    free(vs);
    if (r)
        out = json_pack("{s:I,s:s,s:s,s:s,s:s,s:I,s:O,s:I,s:O}", "bisect",
                        (json_int_t)co_val_i64(r, 0, co_col(r, "id")),
                        "suite", suite, "benchmark", bench, "good",
                        json_string_value(json_array_get(cm, 0)), "bad", bad,
                        "commits", (json_int_t)json_array_size(cm), "hosts",
                        hosts, "runs", runs, "event", event ? json_object_get(
                            event, "id") : json_null());
    PQclear(r);
done:
    json_decref(event);
    json_decref(hosts);
    return out;
}

/* ---- bisect_status / bisect_cancel --------------------------------- */

/* args "bisect": a positive integer; false with c's status. */
static bool
s_id_arg(co_reply_t *c, const json_t *args, bool required, int64_t *id)
{
    const json_t *v = json_object_get(args, "bisect");
    *id = 0;
    if (!v && !required)
        return true;
    if (!json_is_integer(v) || json_integer_value(v) < 1) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"bisect\" (a bisect id, a "
                      "positive integer) is %s", v ? "wrong" : "required");
        return false;
    }
    *id = (int64_t)json_integer_value(v);
    return true;
}

/* One bisect: its row, steps and where the search stands ("searching":
 * the commit measured now and the interval it splits). */
static json_t *
s_status_one(co_reply_t *c, int64_t id)
{
    json_t *b = co_bisect_load(c, id);
    if (!b) {
        if (c->status == CO_REPLY_OK)
            co_reply_fail(c, CO_REPLY_NOTFOUND, "no bisect %" PRId64 " (parity "
                          "bisect status lists them)", id);
        return NULL;
    }
    json_object_set_new(b, "good", json_incref(json_array_get(
        json_object_get(b, "commits"), 0)));
    size_t n = json_array_size(json_object_get(b, "commits"));
    json_object_set_new(b, "bad", json_incref(json_array_get(
        json_object_get(b, "commits"), n - 1)));
    bool ends = false;
    size_t i, mid, low, high;
    unsigned t;
    json_t *st;
    json_array_foreach(json_object_get(b, "steps"), i, st)
        ends |= strcmp(co_reply_str(st, "call"), "ends") == 0;
    char err[256];
    vd_bisect_t *v = ends ? co_bisect_replay(b, err, sizeof err) : NULL;
    if (v && strcmp(co_reply_str(b, "state"), "running") == 0 &&
        vd_bisect_next(v, &mid, &low, &high, &t)) {
        const json_t *cm = json_object_get(b, "commits");
        json_object_set_new(b, "searching", json_pack("{s:O,s:O,s:O,s:I,s:I}",
            "commit", json_array_get(cm, mid), "good", json_array_get(cm,
            low), "bad", json_array_get(cm, high), "try", (json_int_t)t,
            "commits_left", (json_int_t)(high - low - 1)));
    }
    if (v)
        json_object_set_new(b, "rounds", json_integer(
            (json_int_t)vd_bisect_rounds(v)));
    vd_bisect_destroy(&v);
    /* The full list is what the user gave; the answer keeps its size. */
    json_object_set_new(b, "commits", json_integer((json_int_t)n));
    return b;
}

static const co_stmt_t s_st_status = { "bisect.status",
    "SELECT coalesce(json_agg(json_build_object("
    "'id', id, 'suite', suite, 'benchmark', benchmark, 'state', state, "
    "'reason', reason, 'good', commits[1], 'bad', commits["
    "array_length(commits, 1)], 'commits', array_length(commits, 1), "
    "'hosts', hosts, 'event', event, 'created_at_us', created_at_us, "
    "'ended_at_us', ended_at_us, 'result', result) ORDER BY id DESC), "
    "'[]')::text AS bisects FROM (SELECT * FROM bisects ORDER BY id "
    "DESC LIMIT $1::int) b",
    1, PGRES_TUPLES_OK, false };

static json_t *
s_status(co_reply_t *c, const json_t *args)
{
    int64_t id;
    if (!s_id_arg(c, args, false, &id))
        return NULL;
    if (id)
        return s_status_one(c, id);
    char lim[16];
    snprintf(lim, sizeof lim, "%d", CO_BISECT_LIST);
    const char *p[] = { lim };
    PGresult *r = co_reply_run(c, &s_st_status, p);
    json_t *l = r ? json_loads(co_val(r, 0, co_col(r, "bisects")), 0, NULL)
                  : NULL;
    PQclear(r);
    return l ? json_pack("{s:o}", "bisects", l) : NULL;
}

static const co_stmt_t s_st_cancel_jobs = { "bisect.cancel_jobs",
    "SELECT DISTINCT st.job_uuid FROM bisect_steps st JOIN jobs j "
    "ON j.job_uuid = st.job_uuid WHERE st.bisect = $1::bigint "
    "AND j.state = 'active'",
    1, PGRES_TUPLES_OK, false };

static const co_stmt_t s_st_cancel = { "bisect.cancel",
    "WITH x AS (UPDATE bisects SET state = 'cancelled', reason = "
    "'cancelled', ended_at_us = $2::bigint WHERE id = $1::bigint AND state "
    "IN ('queued', 'running') RETURNING id) SELECT (SELECT count(*) FROM x) "
    "AS cancelled, (SELECT state FROM bisects WHERE id = $1::bigint) AS "
    "state",
    2, PGRES_TUPLES_OK, false };

static json_t *
s_cancel(co_reply_t *c, const json_t *args)
{
    int64_t id;
    if (!s_id_arg(c, args, true, &id))
        return NULL;
    PGresult *r = co_bisect_q_now(c, &s_st_cancel, id);
    if (!r)
        return NULL;
    bool cancelled = co_val_i64(r, 0, co_col(r, "cancelled")) == 1;
    int i_state = co_col(r, "state");
    if (!cancelled && co_val_null(r, 0, i_state))
        co_reply_fail(c, CO_REPLY_NOTFOUND, "no bisect %" PRId64 " (parity "
                      "bisect status lists them)", id);
    else if (!cancelled)
        co_reply_fail(c, CO_REPLY_BADARGS, "bisect %" PRId64 " has already "
                      "ended (%s)", id, co_val(r, 0, i_state));
    PQclear(r);
    if (!cancelled)
        return NULL;
    /* Its measurements still queued or running stop too. */
    char ids[24];
    snprintf(ids, sizeof ids, "%" PRId64, id);
    const char *p[] = { ids };
    /* DISTINCT: a job measures each point of its group (a step each). */
    r = co_reply_run(c, &s_st_cancel_jobs, p);
    json_int_t jobs = 0;
    int i_job = co_col(r, "job_uuid");
    for (int i = 0; r && i < PQntuples(r); i++) {
        json_t *reply = NULL;
        char err[256];
        if (co_jobs_cancel(c->jobs, co_val(r, i, i_job),
                           pw_clock_unix_us(),
                           &reply, err, sizeof err) == CO_JOBS_OK)
            jobs++;
        json_decref(reply);
    }
    PQclear(r);
    return json_pack("{s:I,s:s,s:I}", "bisect", (json_int_t)id, "state",
                     "cancelled", "jobs_cancelled", jobs);
}

json_t *
co_bisect_handle(co_jobs_t *jobs, const char *requested_by,
                 const char *command, const json_t *args, double parity,
                 int *status, char *err, size_t errlen)
{
    co_reply_t c = co_reply_begin(co_jobs_conn(jobs), jobs, err, errlen);
    json_t *body = NULL;
    if (strcmp(command, "bisect_start") == 0)
        body = s_start(&c, requested_by, args, parity);
    else if (strcmp(command, "bisect_status") == 0)
        body = s_status(&c, args);
    else
        body = s_cancel(&c, args);
    return co_reply_end(&c, body, status);
}
