/* co_notify.c -- notices of fleet events to webhooks (co_notify.h). */
#include "co_notify.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "co_changes.h"
#include "co_confirm.h"
#include "co_every.h"
#include "co_hook.h"
#include "co_conn.h"
#include "co_log.h"
#include "co_reply.h"
#include "pw_clock.h"
#include "pw_json.h"
#include "pw_out.h"

struct co_notify {
    co_conn_t *conn;           /* the thread's own connection */
    co_hook_t *hooks[CO_NOTIFY_URLS_MAX];
    size_t nhooks;
    int64_t last_id;           /* change points up to it are looked at */
    bool have_last;
    bool warned;               /* a database failure said, none since */
    bool confirm;              /* --confirm: an event's notice waits */
    co_every_t *every;         /* the thread: s_poll every second */
};

/* How far back the members' first runs after the step are looked for: a
 * job waits at most 30 days for an offline host (--expire). */
#define S_MEMBERS_SINCE_US (31LL * 86400 * 1000000)

/* Change points after $1, oldest first: live (neither superseded nor
 * within noise), settled ($2: now), and their first run after the step:
 * its job and tags (what the event's members share) and start. */
static const char S_CANDIDATES_SQL[] =
    "SELECT cp.id, cp.superseded_at_us IS NULL AND NOT cp.within_noise "
    "  AS live, "
    "  CASE WHEN ra.job_id = '' THEN cp.detected_at_us < $2::bigint - "
    "  $3::bigint ELSE cp.detected_at_us < $2::bigint - $4::bigint AND "
    "  NOT EXISTS (SELECT 1 FROM jobs j WHERE j.job_uuid = ra.job_id AND "
    "  (j.state = 'active' OR j.ended_at_us > $2::bigint - $4::bigint)) "
    "  END AS settled, "
    "  CASE WHEN ra.job_id <> '' THEN ra.tags::text WHEN ra.tags ? 'commit' "
    "  THEN jsonb_build_object('commit', ra.tags->'commit')::text ELSE "
    "  ra.tags::text END AS tags, ra.started_at_us "
    "FROM change_points cp JOIN runs ra ON ra.id = cp.after_run "
    "WHERE cp.id > $1::bigint ORDER BY cp.id LIMIT $5::int";
static const co_stmt_t s_st_candidates = { "notify.candidates", S_CANDIDATES_SQL, 5,
    PGRES_TUPLES_OK, false };

/* "Parity: slower on 3 of 4 hosts (h1, h2, h3): suite/bench (new vs
 * old), ratio x1.098 (x1.093 to x1.105), loss, between commit=c24 and
 * commit=c25 (event #17)". */
static void
s_text(char *buf, size_t len, const json_t *e)
{
    char hosts[512] = "", before[256], after[256], range[80] = "",
         bench[300];
    size_t i, at = 0;
    json_t *h;
    json_array_foreach(json_object_get(e, "hosts"), i, h)
        if (at < sizeof hosts)
            at += (size_t)snprintf(hosts + at, sizeof hosts - at, "%s%s",
                                   i ? ", " : "", json_string_value(h));
    pw_out_pairs(before, sizeof before, json_object_get(json_object_get(
        e, "before"), "tags"), "-");
    pw_out_pairs(after, sizeof after, json_object_get(json_object_get(
        e, "after"), "tags"), "-");
    char lo[32], hi[32];
    snprintf(lo, sizeof lo, "x%.3f", json_number_value(json_object_get(
        e, "magnitude_min")));
    snprintf(hi, sizeof hi, "x%.3f", json_number_value(json_object_get(
        e, "magnitude_max")));
    if (strcmp(lo, hi) != 0)        /* a range that reads as one is not */
        snprintf(range, sizeof range, " (%s to %s)", lo, hi);
    snprintf(buf, len, "Parity: %s%s on %" JSON_INTEGER_FORMAT " of %"
             JSON_INTEGER_FORMAT " hosts (%s): %s/%s (%s vs %s), %s x%.3f%s, "
             "%s, between %s and %s (event #%" JSON_INTEGER_FORMAT ")",
             json_is_null(json_object_get(e, "trend")) ? "" : "drifting ",
             pw_out_str(e, "direction", "?"),
             json_integer_value(json_object_get(e, "hosts_with_step")),
             json_integer_value(json_object_get(e, "hosts_total")), hosts,
             pw_out_str(e, "suite", "?"),
             pw_out_bench_metric(bench, sizeof bench, pw_out_str(
                 e, "benchmark", "?"), pw_out_str(e, "quantity", "wall")),
             pw_out_str(e, "subject", "?"), pw_out_str(e, "other", "?"),
             pw_out_str(e, "metric", "?"),
             json_number_value(json_object_get(e, "magnitude")), range,
             pw_out_str(e, "outcome", "?"), before, after,
             json_integer_value(json_object_get(e, "id")));
}

char *
co_notify_event_body(const json_t *e, const json_t *confirm)
{
    char text[1024], said[600];
    s_text(text, sizeof text, e);
    if (confirm) {
        size_t at = strlen(text);
        snprintf(text + at, sizeof text - at, "; %s", pw_out_confirm(
            said, sizeof said, confirm));
    }
    json_t *body = json_pack("{s:s,s:{s:s,s:O}}", "text", text, "parity",
                             "kind", "event", "event", e);
    if (body && confirm && json_object_set(json_object_get(body, "parity"),
                                           "confirm", (json_t *)confirm) != 0)
        json_decref(body), body = NULL;
    char *json = body ? pw_json_dumps(body) : NULL;
    json_decref(body);
    return json;
}

/* The notice thread's database work failed: one line, what is known;
 * once until a poll succeeds again (a database that is down is tried
 * every second, and said once). */
static void
s_db_warn(co_notify_t *n, const char *event, const char *why)
{
    char q[600];
    if (n->warned)
        return;
    n->warned = true;
    co_log(CO_LOG_WARN, "notify_db", "%s%s%swhy=%s", event ? "event=" : "",
           event ? event : "", event ? " " : "", co_log_quote(q, sizeof q,
                                                             why));
}

/* The change point id among the site's lists (open, acked) of l. */
static const json_t *
s_cp(const json_t *l, json_int_t id)
{
    const char *lists[] = { "open", "acked" };
    size_t i;
    json_t *cp;
    for (int k = 0; k < 2; k++)
        json_array_foreach(json_object_get(l, lists[k]), i, cp)
            if (json_integer_value(json_object_get(cp, "id")) == id)
                return cp;
    return NULL;
}

/* The open event of l (a co_changes_list answer) that cp opens: cp is
 * its member and no older member is outside noise. NULL when cp joined
 * an event told already, or its event is acknowledged. */
static const json_t *
s_opened(const json_t *l, json_int_t cp)
{
    size_t i, k;
    json_t *e, *m;
    json_array_foreach(json_object_get(json_object_get(l, "events"), "open"),
                       i, e) {
        bool member = false, older = false;
        json_array_foreach(json_object_get(e, "members"), k, m) {
            json_int_t id = json_integer_value(m);
            member |= id == cp;
            older |= id < cp && !json_is_true(json_object_get(
                s_cp(l, id), "within_noise"));
        }
        if (member)
            return older ? NULL : e;
    }
    return NULL;
}

/* --confirm: a confirm of event e (co_confirm_event), whose notice
 * co_confirmer sends when it ends. An event that cannot be confirmed is
 * told at once, saying why (*json). 0, or -1 (said; looked at again next
 * poll). */
static int
s_confirm(co_notify_t *n, co_reply_t *c, const json_t *e, char **json)
{
    char q[600];
    json_t *k = co_confirm_event(c, e, "collector --confirm", true, 0);
    if (k && json_is_object(k))
        co_log(CO_LOG_INFO, "notify_confirm", "event=%" JSON_INTEGER_FORMAT
               " confirm=%" JSON_INTEGER_FORMAT, json_integer_value(
                   json_object_get(e, "id")), json_integer_value(
                   json_object_get(k, "id")));
    if (k) {
        json_decref(k);     /* null: another collector's --confirm has it */
        return 0;
    }
    if (c->status != CO_REPLY_BADARGS) {
        s_db_warn(n, NULL, c->err);
        return -1;
    }
    co_log(CO_LOG_INFO, "notify_unconfirmed", "event=%" JSON_INTEGER_FORMAT
           " why=%s", json_integer_value(json_object_get(e, "id")),
           co_log_quote(q, sizeof q, c->err));
    json_t *said = json_pack("{s:s,s:s}", "state", "not possible", "reason",
                             c->err);
    c->status = CO_REPLY_OK;
    *json = said ? co_notify_event_body(e, said) : NULL;
    json_decref(said);
    return *json ? 0 : -1;
}

static const co_stmt_t s_st_tell = { "notify.tell",
    "INSERT INTO notices (kind, ref, body, "
    "created_at_us) VALUES ('event', $1, $2, $3) ON CONFLICT DO NOTHING "
    "RETURNING id",
    3, PGRES_TUPLES_OK, false };

/* Tell of the event change point cp opens, its members found as
 * `regressions` finds them (co_changes_list, co_events): claim it in
 * notices, then queue it on every hook. 0, or -1 (said; looked at again
 * next poll). */
static int
s_tell(co_notify_t *n, int64_t cp, const char *tags, int64_t after_us)
{
    char err[512], id[24], at[24];
    co_reply_t c = co_reply_begin(n->conn, NULL, err, sizeof err);
    json_t *l = co_changes_list(&c, tags, "", after_us - S_MEMBERS_SINCE_US);
    if (!l) {
        s_db_warn(n, NULL, err);
        return -1;
    }
    const json_t *e = s_opened(l, cp);
    char *json = NULL;
    int rc = 0;
    if (e) {
        /* e lives in l: what is needed of it is taken before l goes. */
        snprintf(id, sizeof id, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(e, "id")));
        if (n->confirm)
            rc = s_confirm(n, &c, e, &json);
        else
            rc = (json = co_notify_event_body(e, NULL)) ? 0 : -1;
    }
    json_decref(l);
    if (!json)
        return rc;
    snprintf(at, sizeof at, "%" PRId64, pw_clock_unix_us());
    const char *pc[] = { id, json, at };
    PGresult *r = co_reply_run(&c, &s_st_tell, pc);
    if (!r) {
        s_db_warn(n, id, err);
        rc = -1;
    } else if (PQntuples(r) == 1) {
        /* Ours to send: no other collector claimed it. */
        co_log(CO_LOG_INFO, "notify_event", "event=%s hooks=%zu", id,
               n->nhooks);
        for (size_t i = 0; i < n->nhooks; i++)
            co_hook_post(n->hooks[i], json);
    }
    PQclear(r);
    free(json);
    return rc;
}

static const co_stmt_t s_st_poll = { "notify.poll",
    "SELECT coalesce(max(id), 0) AS id "
    "FROM change_points",
    0, PGRES_TUPLES_OK, false };

/* One look at the change points stored since the last (co_every). */
static void
s_poll(void *arg, co_every_t *e)
{
    co_notify_t *n = arg;
    (void)e;
    char err[512], last[24], now[24], settle[24], settle_job[24], lim[16];
    co_reply_t c = co_reply_begin(n->conn, NULL, err, sizeof err);
    if (!n->have_last) {
        PGresult *r = co_reply_run(&c, &s_st_poll, NULL);
        if (!r) {
            s_db_warn(n, NULL, err);
            return;
        }
        n->last_id = co_val_i64(r, 0, co_col(r, "id"));
        n->have_last = true;
        PQclear(r);
        return;
    }
    snprintf(last, sizeof last, "%" PRId64, n->last_id);
    snprintf(now, sizeof now, "%" PRId64, pw_clock_unix_us());
    snprintf(settle, sizeof settle, "%lld", (long long)CO_NOTIFY_SETTLE_US);
    snprintf(settle_job, sizeof settle_job, "%lld",
             (long long)CO_NOTIFY_SETTLE_JOB_US);
    snprintf(lim, sizeof lim, "%d", CO_NOTIFY_BATCH);
    const char *p[] = { last, now, settle, settle_job, lim };
    PGresult *r = co_reply_run(&c, &s_st_candidates, p);
    if (!r) {
        s_db_warn(n, NULL, err);
        return;
    }
    int i_id = co_col(r, "id"), i_live = co_col(r, "live"),
        i_settled = co_col(r, "settled"), i_tags = co_col(r, "tags"),
        i_started = co_col(r, "started_at_us");
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t id = co_val_i64(r, i, i_id);
        bool live = co_val_bool(r, i, i_live);
        if (live && !co_val_bool(r, i, i_settled))
            break;              /* not settled: looked at again next time */
        if (live && s_tell(n, id, co_val(r, i, i_tags),
                           co_val_i64(r, i, i_started)) != 0) {
            PQclear(r);
            return;             /* said; tried again next time */
        }
        n->last_id = id;
    }
    PQclear(r);
    n->warned = false;
}

co_notify_t *
co_notify_new(const char *conninfo, const char *const *urls, size_t nurls,
              size_t queue_max, bool confirm, char *err, size_t errlen)
{
    if (nurls > CO_NOTIFY_URLS_MAX) {
        snprintf(err, errlen, "more than %d --notify-url",
                 CO_NOTIFY_URLS_MAX);
        return NULL;
    }
    /* Its own connection (made when needed and again after a
     * failure), with the detection thread's statement timeout. */
    co_conn_opts_t o = { .conninfo = conninfo,
                         .statement_timeout_ms = 10000 };
    co_notify_t *n = calloc(1, sizeof *n);
    if (!n || !(n->conn = co_conn_new(&o))) {
        snprintf(err, errlen, "co_notify: out of memory");
        free(n);
        return NULL;
    }
    n->confirm = confirm;
    for (; n->nhooks < nurls; n->nhooks++)
        if (!(n->hooks[n->nhooks] = co_hook_new(urls[n->nhooks], queue_max,
                                                err, errlen)))
            goto fail;
    if (!(n->every = co_every_new("notify", CO_NOTIFY_POLL_MS, s_poll, n,
                                  err, errlen)))
        goto fail;
    for (size_t i = 0; i < nurls; i++) {
        char q[300];
        co_log(CO_LOG_INFO, "notify_url", "url=%s queue=%zu",
               co_log_quote(q, sizeof q, urls[i]), queue_max);
    }
    return n;
fail:
    co_notify_destroy(&n);
    return NULL;
}

void
co_notify_post(co_notify_t *n, const char *body)
{
    /* The hooks are fixed from co_notify_new on, and co_hook_post takes
     * each hook's own lock. */
    for (size_t i = 0; n && i < n->nhooks; i++)
        co_hook_post(n->hooks[i], body);
}

void
co_notify_destroy(co_notify_t **np)
{
    co_notify_t *n = np ? *np : NULL;
    if (!n)
        return;
    *np = NULL;
    co_every_destroy(&n->every);    /* first: it posts to the hooks */
    for (size_t i = 0; i < n->nhooks; i++)
        co_hook_destroy(&n->hooks[i]);
    co_conn_destroy(&n->conn);
    free(n);
}

void
co_notify_counters(co_notify_t *n, co_hook_counters_t *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; n && i < n->nhooks; i++) {
        co_hook_counters_t c;
        co_hook_counters(n->hooks[i], &c);   /* the hook's own lock */
        out->queued += c.queued;
        out->delivered += c.delivered;
        out->attempts += c.attempts;
        out->refused += c.refused;
        out->dropped += c.dropped;
    }
}
