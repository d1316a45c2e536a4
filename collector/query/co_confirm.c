/* co_confirm.c -- the confirm requests (co_confirm.h). */
#include "co_confirm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co_changes.h"
#include "co_reply.h"
#include "pw_clock.h"
#include "pw_json.h"
#include "pw_limits.h"

/* How far back an event's members are looked for (co_notify's bound: a
 * job waits at most 30 days for an offline host). */
#define S_MEMBERS_SINCE_US (31LL * 86400 * 1000000)
/* Longest revision name or value read back (a variable's value is
 * bounded far below it by the suite loader). */
#define S_TEXT_MAX 1024

static const char S_LOAD_SQL[] =
    "SELECT json_build_object('id', k.id, 'event', k.event, 'members', "
    "  k.members, 'suite', k.suite, 'benchmark', k.benchmark, 'direction', "
    "  k.direction, 'revision', k.revision, 'before', k.before, 'after', "
    "  k.after, 'vars', k.vars, 'hosts', k.hosts, 'runs', k.runs, 'job', "
    "  k.job_uuid, 'job_state', j.state, 'notify', k.notify, 'state', "
    "  k.state, 'reason', k.reason, 'result', k.result, 'requested_by', "
    "  k.requested_by, 'created_at_us', k.created_at_us, 'started_at_us', "
    "  k.started_at_us, 'ended_at_us', k.ended_at_us)::text AS confirm, "
    "  k.event_json::text AS event_json "
    "FROM confirms k LEFT JOIN jobs j ON j.job_uuid = k.job_uuid "
    "WHERE k.id = $1::bigint";
static const co_stmt_t s_st_load = { "confirm.load", S_LOAD_SQL, 1,
    PGRES_TUPLES_OK, false };

json_t *
co_confirm_load(co_reply_t *c, int64_t id, bool with_event)
{
    char ids[24];
    snprintf(ids, sizeof ids, "%" PRId64, id);
    const char *p[] = { ids };
    PGresult *r = co_reply_run(c, &s_st_load, p);
    if (!r || PQntuples(r) != 1) {
        PQclear(r);
        return NULL;
    }
    json_t *k = json_loads(PQgetvalue(r, 0, PQfnumber(r, "confirm")), 0,
                           NULL);
    if (k && with_event && json_object_set_new(k, "event_json",
            co_reply_json_col(r, 0, PQfnumber(r, "event_json"))) != 0)
        json_decref(k), k = NULL;
    if (!k)
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
    PQclear(r);
    return k;
}

bool
co_confirm_handles(const char *command)
{
    return strcmp(command, "confirm") == 0 ||
           strcmp(command, "confirm_status") == 0;
}

/* ---- the event ----------------------------------------------------- */

static const co_stmt_t s_st_event_key = { "confirm.event_key",
    "SELECT CASE WHEN ra.job_id <> '' THEN "
    "ra.tags::text WHEN ra.tags ? 'commit' THEN jsonb_build_object("
    "'commit', ra.tags->'commit')::text ELSE ra.tags::text END AS tags, "
    "ra.started_at_us AS at_us FROM change_points cp JOIN runs ra ON "
    "ra.id = cp.after_run WHERE cp.id = $1::bigint",
    1, PGRES_TUPLES_OK, false };

/* The tags that find change point id's event among co_changes_list's
 * (its first run after the step: the job's tags, or the commit tag), and
 * that run's start. False with c's status (CO_REPLY_NOTFOUND: no such
 * change point). */
static bool
s_event_key(co_reply_t *c, json_int_t id, char **tags, int64_t *after_us)
{
    char ids[24];
    snprintf(ids, sizeof ids, "%" JSON_INTEGER_FORMAT, id);
    const char *p[] = { ids };
    PGresult *r = co_reply_run(c, &s_st_event_key, p);
    if (!r)
        return false;
    if (PQntuples(r) != 1) {
        co_reply_fail(c, CO_REPLY_NOTFOUND, "no change point %s (parity "
                      "regressions lists them)", ids);
        PQclear(r);
        return false;
    }
    *tags = strdup(PQgetvalue(r, 0, PQfnumber(r, "tags")));
    *after_us = co_val_i64(r, 0, co_col(r, "at_us"));
    PQclear(r);
    if (!*tags)
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
    return *tags != NULL;
}

/* The event (open or acked) change point id is a member of, as
 * `regressions` groups it; a new reference, or NULL with c's status. */
static json_t *
s_find_event(co_reply_t *c, json_int_t id)
{
    char *tags = NULL;
    int64_t after_us = 0;
    if (!s_event_key(c, id, &tags, &after_us))
        return NULL;
    json_t *l = co_changes_list(c, tags, "", after_us - S_MEMBERS_SINCE_US);
    free(tags);
    if (!l)
        return NULL;
    const char *lists[] = { "open", "acked" };
    json_t *found = NULL, *e, *m;
    size_t i, k;
    for (int x = 0; !found && x < 2; x++)
        json_array_foreach(json_object_get(json_object_get(l, "events"),
                                           lists[x]), i, e)
            json_array_foreach(json_object_get(e, "members"), k, m)
                if (!found && json_integer_value(m) == id)
                    found = json_incref(e);
    if (!found)
        co_reply_fail(c, CO_REPLY_BADARGS, "change point %" JSON_INTEGER_FORMAT
                      " was superseded by a later one of its series (parity "
                      "regressions lists the current ones)", id);
    json_decref(l);
    return found;
}

static const co_stmt_t s_st_revisions = { "confirm.revisions",
    "SELECT rb.revision AS before, ra.revision "
    "AS after, coalesce((SELECT hs.revision FROM host_suites hs WHERE "
    "hs.host_id = ra.host_id AND hs.name = $3), '') AS name FROM runs "
    "rb, runs ra WHERE rb.run_uuid = $1 AND ra.run_uuid = $2",
    3, PGRES_TUPLES_OK, false };

/* The revision variable of the event's suite and the revisions of the
 * runs either side of its step: false with c's status (CO_REPLY_BADARGS
 * when there is none to measure). */
static bool
s_revisions(co_reply_t *c, const json_t *e, char *name, char *before,
            char *after, size_t len)
{
    json_int_t id = json_integer_value(json_object_get(e, "id"));
    const char *p[] = {
        co_reply_str(json_object_get(e, "before"), "run"),
        co_reply_str(json_object_get(e, "after"), "run"),
        co_reply_str(e, "suite") };
    PGresult *r = co_reply_run(c, &s_st_revisions, p);
    if (!r)
        return false;
    bool good = PQntuples(r) == 1;
    if (good) {
        snprintf(name, len, "%s", PQgetvalue(r, 0, PQfnumber(r, "name")));
        snprintf(before, len, "%s", PQgetvalue(r, 0, PQfnumber(r, "before")));
        snprintf(after, len, "%s", PQgetvalue(r, 0, PQfnumber(r, "after")));
    }
    PQclear(r);
    if (!good || !*before || !*after || !*name)
        co_reply_fail(c, CO_REPLY_BADARGS, "event %" JSON_INTEGER_FORMAT
                      ": suite \"%s\" names no revision variable, so the "
                      "runs either side of its step have no revision to "
                      "measure again (docs/suites.md \"Revision\")", id,
                      co_reply_str(e, "suite"));
    else if (strcmp(before, after) == 0)
        co_reply_fail(c, CO_REPLY_BADARGS, "event %" JSON_INTEGER_FORMAT
                      ": the runs either side of its step are both of %s "
                      "%s: there is no other revision to measure it "
                      "against", id, name, after);
    else
        return true;
    return false;
}

static const co_stmt_t s_st_live = { "confirm.live",
    "SELECT id FROM confirms WHERE event = "
    "$1::bigint AND state IN ('queued', 'running') ORDER BY id LIMIT 1",
    1, PGRES_TUPLES_OK, false };

/* The live confirm of event id (queued or running), 0 when none; -1 with
 * c's status. */
static int64_t
s_live(co_reply_t *c, json_int_t id)
{
    char ids[24];
    snprintf(ids, sizeof ids, "%" JSON_INTEGER_FORMAT, id);
    const char *p[] = { ids };
    PGresult *r = co_reply_run(c, &s_st_live, p);
    int64_t live = !r ? -1 : PQntuples(r) ? co_val_i64(r, 0, co_col(r, "id"))
                                          : 0;
    PQclear(r);
    return live;
}

static const co_stmt_t s_st_event = { "confirm.event",
    "INSERT INTO confirms (event, members, suite, benchmark, "
    "direction, revision, before, after, vars, hosts, runs, notify, "
    "event_json, requested_by, created_at_us) VALUES ($1::bigint, "
    "ARRAY(SELECT json_array_elements_text($2::json)::bigint), $3, $4, "
    "$5, $6, $7, $8, $9::jsonb, ARRAY(SELECT json_array_elements_text("
    "$10::json)), $11::int, $12::boolean, $13::jsonb, $14, $15::bigint) "
    "ON CONFLICT (event) WHERE notify DO NOTHING RETURNING id",
    15, PGRES_TUPLES_OK, false };

json_t *
co_confirm_event(co_reply_t *c, const json_t *e, const char *requested_by,
                 bool notify, json_int_t runs)
{
    char name[S_TEXT_MAX], before[S_TEXT_MAX], after[S_TEXT_MAX];
    json_int_t id = json_integer_value(json_object_get(e, "id"));
    if (strcmp(co_reply_str(e, "metric"), "other") == 0) {
        co_reply_fail(c, CO_REPLY_BADARGS, "event %" JSON_INTEGER_FORMAT
                      " is a step of the other arm (%s), not of the "
                      "subject: confirm measures the subject at two "
                      "revisions", id, co_reply_str(e, "other"));
        return NULL;
    }
    if (!s_revisions(c, e, name, before, after, sizeof name))
        return NULL;
    int64_t live = notify ? 0 : s_live(c, id);
    if (live < 0)
        return NULL;
    if (live > 0) {
        json_t *k = co_confirm_load(c, live, false);
        if (k)
            json_object_set_new(k, "existing", json_true());
        return k;
    }
    char ids[24], rn[24], now[24];
    snprintf(ids, sizeof ids, "%" JSON_INTEGER_FORMAT, id);
    snprintf(rn, sizeof rn, "%" JSON_INTEGER_FORMAT, runs);
    snprintf(now, sizeof now, "%" PRId64, pw_clock_unix_us());
    char *members = pw_json_dumps(json_object_get(e, "members"));
    char *hosts = pw_json_dumps(json_object_get(e, "hosts"));
    char *vars = pw_json_dumps(json_object_get(e, "vars"));
    char *ev = notify ? pw_json_dumps(e) : NULL;
    const char *p[] = { ids, members, co_reply_str(e, "suite"),
                        co_reply_str(e, "benchmark"),
                        co_reply_str(e, "direction"), name, before, after,
                        vars, hosts, runs ? rn : NULL, notify ? "t" : "f", ev,
                        requested_by ? requested_by : "", now };
    PGresult *r = members && hosts && vars && (ev || !notify) ? co_reply_run(c, &s_st_event, p)
        : NULL;
    if (!members || !hosts || !vars || (notify && !ev))
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
    free(members);
    free(hosts);
    free(vars);
    free(ev);
    json_t *out = NULL;
    if (r && PQntuples(r) == 0)
        out = json_null();      /* another collector's --confirm has it */
    else if (r && (out = co_confirm_load(c, co_val_i64(r, 0, co_col(r, "id")),
                                         false)))
        json_object_set_new(out, "existing", json_false());
    PQclear(r);
    return out;
}

/* ---- the requests -------------------------------------------------- */

static json_t *
s_confirm(co_reply_t *c, const char *requested_by, const json_t *args)
{
    json_int_t id = 0, runs = 0;
    if (!json_object_get(args, "id")) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"id\" is required: an event's "
                      "or change point's id (parity regressions lists them)");
        return NULL;
    }
    if (!co_reply_int_arg(c, args, "id", 1, INT64_MAX, 0, &id) ||
        !co_reply_int_arg(c, args, "runs", PW_RUNS_MIN, CO_CONFIRM_RUNS_MAX, 0,
                          &runs))
        return NULL;
    json_t *e = s_find_event(c, id);
    json_t *out = e ? co_confirm_event(c, e, requested_by, false, runs) : NULL;
    json_decref(e);
    return out;
}

static json_t *
s_status(co_reply_t *c, const json_t *args)
{
    json_int_t id = 0;
    if (!json_object_get(args, "confirm")) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"confirm\" is required: a "
                      "confirm's id");
        return NULL;
    }
    if (!co_reply_int_arg(c, args, "confirm", 1, INT64_MAX, 0, &id))
        return NULL;
    json_t *k = co_confirm_load(c, id, false);
    if (!k && c->status == CO_REPLY_OK)
        co_reply_fail(c, CO_REPLY_NOTFOUND, "no confirm %" JSON_INTEGER_FORMAT,
                      id);
    return k;
}

json_t *
co_confirm_handle(co_reply_t *c, const char *requested_by,
                  const char *command, const json_t *args)
{
    return strcmp(command, "confirm") == 0 ? s_confirm(c, requested_by, args)
                                           : s_status(c, args);
}
