/* co_confirmer.c -- the thread that measures confirms (co_confirmer.h). */
#include "co_confirmer.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "co_confirm.h"
#include "co_every.h"
#include "co_jobs.h"
#include "co_lease.h"
#include "co_log.h"
#include "co_reply.h"
#include "pw_clock.h"
#include "pw_json.h"
#include "pw_out.h"

struct co_confirmer {
    co_conn_t *conn;           /* the thread's own connection */
    co_jobs_t *jobs;           /* the jobs it asks for, on conn */
    co_notify_t *notify;       /* borrowed; NULL without webhooks */
    char owner[160];
    bool warned;               /* a database failure said, none since */
    co_every_t *every;         /* the thread: s_pass every second */
};

/* Each of the confirm's hosts: its newest run of the benchmark in the
 * confirm's job (a complete one first), the stored verdict of the
 * subject against its instance at the revision before, and what the job
 * says of the host. */
static const char S_HOSTS_SQL[] =
    "SELECT hn AS host, r.status AS run_status, coalesce(r.reason, '') AS "
    "  run_reason, v.outcome, v.ratio, v.tolerance, v.error AS "
    "  verdict_error, jh.state AS job_state, coalesce(jh.reason, '') AS "
    "  job_reason "
    "FROM confirms k CROSS JOIN unnest(k.hosts) hn "
    "LEFT JOIN LATERAL (SELECT r.id, r.status, r.reason FROM runs r JOIN "
    "  hosts h ON h.id = r.host_id JOIN benchmarks bm ON bm.id = "
    "  r.benchmark_id WHERE r.job_id = k.job_uuid AND h.name = hn AND "
    "  bm.suite = k.suite AND bm.name = k.benchmark ORDER BY (r.status = "
    "  'complete') DESC, r.id DESC LIMIT 1) r ON true "
    "LEFT JOIN LATERAL (SELECT v.outcome, v.ratio, v.tolerance, v.error FROM "
    "  verdicts v JOIN arms oa ON oa.run = v.run AND oa.idx = v.other_arm "
    "  WHERE v.run = r.id AND oa.instance = k.before AND v.metric = 'wall' "
    "  ORDER BY v.id LIMIT 1) "
    "  v ON true "
    "LEFT JOIN LATERAL (SELECT jh.state, jh.reason FROM jobs j JOIN job_hosts "
    "  jh ON jh.job = j.id JOIN hosts ho ON ho.id = jh.host_id WHERE "
    "  j.job_uuid = k.job_uuid AND ho.name = hn LIMIT 1) jh ON true "
    "WHERE k.id = $1::bigint ORDER BY hn";
static const co_stmt_t s_st_hosts = { "confirmer.hosts", S_HOSTS_SQL, 1,
    PGRES_TUPLES_OK, false };

static void
s_db_warn(co_confirmer_t *n, int64_t id, const char *why)
{
    char q[600];
    if (n->warned)
        return;
    n->warned = true;
    co_log(CO_LOG_WARN, "confirm_db", "confirm=%" PRId64 " why=%s", id,
           co_log_quote(q, sizeof q, why));
}

static json_int_t
s_int(const json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

/* ---- the end ------------------------------------------------------- */

/* What a list, a notice and `regressions` show of confirm k ended with
 * state, reason and result (borrowed, may be NULL). */
static json_t *
s_summary(const json_t *k, const char *state, const char *reason,
          const json_t *result)
{
    json_t *s = json_pack("{s:O,s:s,s:s,s:O,s:O,s:O,s:O,s:O}", "id",
        json_object_get(k, "id"), "state", state, "reason", reason, "before",
        json_object_get(k, "before"), "after", json_object_get(k, "after"),
        "job", json_object_get(k, "job"), "confirmed",
        json_object_get(result, "confirmed") ? json_object_get(result,
        "confirmed") : json_null(), "measured", json_object_get(result,
        "measured") ? json_object_get(result, "measured") : json_null());
    if (s && result && json_object_set(s, "hosts", json_object_get(
            result, "hosts")) != 0)
        json_decref(s), s = NULL;
    return s;
}

/* The notice of confirm k's end: the event's own for a --confirm one
 * (its kind "event" row claimed), else one of kind "confirm". The body
 * (caller frees) and the claim's kind and ref in kind[16], ref[24]. */
static char *
s_notice(const json_t *k, const json_t *summary, char *kind, char *ref)
{
    const json_t *e = json_object_get(k, "event_json");
    if (json_is_true(json_object_get(k, "notify")) && json_is_object(e)) {
        snprintf(kind, 16, "event");
        snprintf(ref, 24, "%" JSON_INTEGER_FORMAT, s_int(k, "event"));
        return co_notify_event_body(e, summary);
    }
    char text[1024], said[700];
    snprintf(kind, 16, "confirm");
    snprintf(ref, 24, "%" JSON_INTEGER_FORMAT, s_int(k, "id"));
    snprintf(text, sizeof text, "Parity: event #%" JSON_INTEGER_FORMAT
             " of %s/%s: %s", s_int(k, "event"), co_reply_str(k, "suite"),
             co_reply_str(k, "benchmark"), pw_out_confirm(said, sizeof said,
                                                          summary));
    json_t *body = json_pack("{s:s,s:{s:s,s:O,s:O}}", "text", text,
                             "parity", "kind", "confirm", "event",
                             json_object_get(k, "event"), "confirm", summary);
    char *t = body ? pw_json_dumps(body) : NULL;
    json_decref(body);
    return t;
}

static const co_stmt_t s_st_finish = { "confirmer.finish",
    "UPDATE confirms SET state = $2, reason = $3, "
    "result = $4::jsonb, ended_at_us = $5 WHERE id = $1::bigint AND "
    "state IN ('queued', 'running') RETURNING id",
    5, PGRES_TUPLES_OK, false };

static const co_stmt_t s_st_notice = { "confirmer.notice",
    "INSERT INTO notices (kind, ref, "
    "body, created_at_us) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING "
    "RETURNING id",
    4, PGRES_TUPLES_OK, false };

/* End confirm k (state confirmed, "not reproduced" or failed) with
 * reason and result (borrowed; may be NULL): written once, by the
 * collector whose UPDATE finds it live; that one logs and tells. False
 * with c's status. */
static bool
s_finish(co_confirmer_t *n, co_reply_t *c, const json_t *k, const char *state,
         const char *reason, const json_t *result)
{
    char id[24], now[24], q[600];
    snprintf(id, sizeof id, "%" JSON_INTEGER_FORMAT, s_int(k, "id"));
    snprintf(now, sizeof now, "%" PRId64, pw_clock_unix_us());
    char *res = result ? pw_json_dumps(result) : NULL;
    const char *p[] = { id, state, reason, res, now };
    PGresult *r = co_reply_run(c, &s_st_finish, p);
    free(res);
    bool ours = r && PQntuples(r) == 1;
    PQclear(r);
    if (!ours)
        return r != NULL;
    co_log(strcmp(state, "failed") ? CO_LOG_INFO : CO_LOG_WARN,
           strcmp(state, "failed") ? "confirm_done" : "confirm_failed",
           "confirm=%s event=%" JSON_INTEGER_FORMAT " state=\"%s\" why=%s",
           id, s_int(k, "event"), state, co_log_quote(q, sizeof q, reason));
    json_t *summary = s_summary(k, state, reason, result);
    char kind[16], ref[24];
    char *body = summary ? s_notice(k, summary, kind, ref) : NULL;
    json_decref(summary);
    const char *pn[] = { kind, ref, body, now };
    PGresult *t = body ? co_reply_run(c, &s_st_notice, pn) : NULL;
    if (t && PQntuples(t) == 1)
        co_notify_post(n->notify, body);
    PQclear(t);
    free(body);
    return true;
}

/* ---- the job ------------------------------------------------------- */

static const co_stmt_t s_st_start = { "confirmer.start",
    "UPDATE confirms SET state = 'running', "
    "job_uuid = $2, started_at_us = $3 WHERE id = $1::bigint AND state = "
    "'queued' RETURNING id",
    3, PGRES_TUPLES_OK, false };

/* Make confirm k's job and mark it running. False with c's status (tried
 * again next pass); a job that can never be made ends the confirm. */
static bool
s_start(co_confirmer_t *n, co_reply_t *c, const json_t *k)
{
    char err[512], tag[24];
    snprintf(tag, sizeof tag, "%" JSON_INTEGER_FORMAT, s_int(k, "id"));
    const char *rev = co_reply_str(k, "revision");
    json_t *vars = json_deep_copy(json_object_get(k, "vars"));
    if (vars)
        json_object_set_new(vars, rev, json_string(co_reply_str(k, "after")));
    json_t *args = vars ? json_pack("{s:s,s:O,s:[s],s:o,s:[{s:s,s:s}],"
        "s:{s:s},s:s,s:I}", "suite", co_reply_str(k, "suite"), "hosts",
        json_object_get(k, "hosts"), "only", co_reply_str(k, "benchmark"),
        "vars", vars, "against", "name", rev, "value", co_reply_str(
            k, "before"), "tags", "confirm", tag, "label", "confirm",
        "expire_us", (json_int_t)CO_CONFIRMER_JOB_EXPIRE_US) : NULL;
    if (args && s_int(k, "runs") > 0)
        json_object_set_new(args, "runs", json_integer(s_int(k, "runs")));
    json_t *reply = NULL;
    int rc = args ? co_jobs_create(c->jobs, co_reply_str(k, "requested_by"),
                                   args, pw_clock_unix_us(), &reply, err,
                                   sizeof err) : CO_JOBS_FAIL;
    json_decref(args);
    if (rc == CO_JOBS_BADARGS) {
        char why[700];
        snprintf(why, sizeof why, "its job could not be made: %s", err);
        return s_finish(n, c, k, "failed", why, NULL);
    }
    if (rc != CO_JOBS_OK) {
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "%s", args ? err :
                      "out of memory");
        return false;
    }
    char now[24];
    snprintf(now, sizeof now, "%" PRId64, pw_clock_unix_us());
    const char *p[] = { tag, co_reply_str(reply, "job"), now };
    PGresult *r = co_reply_run(c, &s_st_start, p);
    if (r)
        co_log(CO_LOG_INFO, "confirm_job", "confirm=%s event=%"
               JSON_INTEGER_FORMAT " after=%s before=%s job=%s", tag,
               s_int(k, "event"), co_reply_str(k, "after"),
               co_reply_str(k, "before"), co_reply_str(reply, "job"));
    PQclear(r);
    json_decref(reply);
    return r != NULL;
}

/* One host's row of S_HOSTS_SQL as the result shows it; *seen: it sees
 * the step again, *measured: it has a verdict. */
static json_t *
s_host(PGresult *r, int i, const char *want, bool *seen, bool *measured)
{
    const char *host = PQgetvalue(r, i, PQfnumber(r, "host"));
    int outcome = PQfnumber(r, "outcome");
    *seen = *measured = false;
    if (!PQgetisnull(r, i, outcome)) {
        *measured = true;
        *seen = strcmp(PQgetvalue(r, i, outcome), want) == 0;
        return json_pack("{s:s,s:s,s:s,s:f,s:f}", "host", host, "state",
            *seen ? "confirmed" : "not reproduced", "outcome",
            PQgetvalue(r, i, outcome), "ratio", strtod(PQgetvalue(
                r, i, PQfnumber(r, "ratio")), NULL), "tolerance", strtod(
                PQgetvalue(r, i, PQfnumber(r, "tolerance")), NULL));
    }
    char why[600];
    int rs = PQfnumber(r, "run_status"), js = PQfnumber(r, "job_state");
    const char *verr = PQgetvalue(r, i, PQfnumber(r, "verdict_error"));
    if (*verr)
        snprintf(why, sizeof why, "its verdict: %.500s", verr);
    else if (!PQgetisnull(r, i, rs))
        snprintf(why, sizeof why, "its run: %.40s%s%.500s", PQgetvalue(
                 r, i, rs), *PQgetvalue(r, i, PQfnumber(r, "run_reason")) ?
                 ": " : "", PQgetvalue(r, i, PQfnumber(r, "run_reason")));
    else if (!PQgetisnull(r, i, js))
        snprintf(why, sizeof why, "its job: %.40s%s%.500s", PQgetvalue(
                 r, i, js), *PQgetvalue(r, i, PQfnumber(r, "job_reason")) ?
                 ": " : "", PQgetvalue(r, i, PQfnumber(r, "job_reason")));
    else
        snprintf(why, sizeof why, "not given the job");
    return json_pack("{s:s,s:s,s:s}", "host", host, "state", "not measured",
                     "reason", why);
}

/* Judge confirm k from its ended job's verdicts, and end it. False with
 * c's status. */
static bool
s_judge(co_confirmer_t *n, co_reply_t *c, const json_t *k)
{
    char id[24];
    snprintf(id, sizeof id, "%" JSON_INTEGER_FORMAT, s_int(k, "id"));
    const char *p[] = { id };
    PGresult *r = co_reply_run(c, &s_st_hosts, p);
    if (!r)
        return false;
    const char *want = strcmp(co_reply_str(k, "direction"), "faster") == 0
                       ? "win" : "loss";
    json_t *hosts = json_array();
    int seen_n = 0, measured_n = 0;
    char said[900] = "";
    size_t at = 0;
    for (int i = 0; hosts && i < PQntuples(r); i++) {
        bool seen, measured;
        json_t *h = s_host(r, i, want, &seen, &measured);
        seen_n += seen;
        measured_n += measured;
        if (at < sizeof said && measured)
            at += (size_t)snprintf(said + at, sizeof said - at, "%s%s x%.3f "
                "%s (tolerance %.1f %%)", at ? ", " : "", co_reply_str(h,
                "host"), json_number_value(json_object_get(h, "ratio")),
                co_reply_str(h, "outcome"), 100 * json_number_value(
                    json_object_get(h, "tolerance")));
        else if (at < sizeof said)
            at += (size_t)snprintf(said + at, sizeof said - at, "%s%s not "
                "measured (%s)", at ? ", " : "", co_reply_str(h, "host"),
                co_reply_str(h, "reason"));
        if (!h || json_array_append_new(hosts, h) != 0)
            json_decref(hosts), hosts = NULL;
    }
    PQclear(r);
    json_t *result = hosts ? json_pack("{s:o,s:i,s:i}", "hosts", hosts,
                                       "confirmed", seen_n, "measured",
                                       measured_n) : NULL;
    if (!result) {
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
        return false;
    }
    char reason[1100];
    const char *state = measured_n == 0 ? "failed" : 2 * seen_n > measured_n
                        ? "confirmed" : "not reproduced";
    if (measured_n == 0)
        snprintf(reason, sizeof reason, "no host measured it: %s", said);
    else
        snprintf(reason, sizeof reason, "%d of %d host%s see%s the step "
                 "again (%s): %s", seen_n, measured_n, measured_n == 1 ? "" :
                 "s", seen_n == 1 ? "s" : "", want, said);
    bool done = s_finish(n, c, k, state, reason, result);
    json_decref(result);
    return done;
}

/* ---- the pass ------------------------------------------------------ */

/* Move confirm id on. False when the database failed (said). */
static bool
s_advance(co_confirmer_t *n, int64_t id)
{
    char err[1024];
    co_reply_t c = co_reply_begin(n->conn, n->jobs, err, sizeof err);
    json_t *k = co_confirm_load(&c, id, true);
    const char *state = co_reply_str(k, "state");
    if (k && strcmp(state, "queued") == 0)
        s_start(n, &c, k);
    else if (k && strcmp(state, "running") == 0 &&
             strcmp(co_reply_str(k, "job_state"), "active") != 0)
        s_judge(n, &c, k);
    json_decref(k);
    if (c.status != CO_REPLY_OK)
        s_db_warn(n, id, err);
    return c.status == CO_REPLY_OK;
}

/* Take (or keep) the lease of every live confirm no other collector
 * holds, and move each on, oldest first (co_every). */
static void
s_pass(void *arg, co_every_t *e)
{
    co_confirmer_t *n = arg;
    char err[512];
    co_reply_t c = co_reply_begin(n->conn, n->jobs, err, sizeof err);
    PGresult *r = co_lease_take(&c, "confirms", n->owner);
    if (!r) {
        s_db_warn(n, 0, err);
        return;
    }
    bool ok = true;
    int i_id = co_col(r, "id");
    for (int i = 0; i < PQntuples(r) && !co_every_stopping(e); i++)
        ok &= s_advance(n, co_val_i64(r, i, i_id));
    PQclear(r);
    if (ok)
        n->warned = false;      /* said again at the next failure */
}

co_confirmer_t *
co_confirmer_new(const char *conninfo, const char *owner,
                 co_notify_t *notify, char *err, size_t errlen)
{
    /* Its own connection, with the detection thread's statement
     * timeout: a pass must never hang on one query. */
    co_conn_opts_t co = { .conninfo = conninfo,
                          .statement_timeout_ms = 10000 };
    co_confirmer_t *n = calloc(1, sizeof *n);
    if (n && (n->conn = co_conn_new(&co))) {
        co_jobs_opts_t o = { .conn = n->conn };
        n->jobs = co_jobs_new(&o);
    }
    if (!n || !n->jobs) {
        if (n)
            co_conn_destroy(&n->conn);
        snprintf(err, errlen, "co_confirmer: out of memory");
        free(n);
        return NULL;
    }
    n->notify = notify;
    co_lease_owner(n->owner, sizeof n->owner, owner);
    if (!(n->every = co_every_new("confirmer", CO_CONFIRMER_POLL_MS, s_pass,
                                  n, err, errlen)))
        co_confirmer_destroy(&n);
    return n;
}

void
co_confirmer_destroy(co_confirmer_t **np)
{
    co_confirmer_t *n = np ? *np : NULL;
    if (!n)
        return;
    *np = NULL;
    if (n->every) {
        co_every_destroy(&n->every);
        /* Give the leases back: another collector carries on at once. */
        char err[256];
        co_reply_t c = co_reply_begin(n->conn, n->jobs, err, sizeof err);
        co_lease_give_back(&c, "confirms", n->owner);
    }
    co_jobs_destroy(&n->jobs);
    co_conn_destroy(&n->conn);
    free(n);
}
