/* co_notify.c -- notices of fleet events to webhooks (co_notify.h). */
#include "co_notify.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "co_db.h"
#include "co_hook.h"
#include "co_log.h"
#include "pw_clock.h"
#include "pw_json.h"
#include "pw_out.h"

struct co_notify {
    char *conninfo;
    PGconn *conn;
    co_hook_t *hooks[CO_NOTIFY_URLS_MAX];
    size_t nhooks;
    int64_t last_id;           /* change points up to it are looked at */
    bool have_last, stop, started;
    bool warned;               /* a database failure said, none since */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
};

/* o (with its after run oa) is in the event of cp (with its after run
 * ra): docs/protocol.md 10.12, as co_events groups them. */
#define S_SAME_EVENT \
    "o.superseded_at_us IS NULL AND NOT o.within_noise " \
    "AND o.benchmark_id = cp.benchmark_id AND o.vars = cp.vars " \
    "AND o.subject = cp.subject AND o.other = cp.other " \
    "AND (o.metric = 'other') = (cp.metric = 'other') " \
    "AND (o.magnitude > 1) = (cp.magnitude > 1) " \
    "AND ((ra.job_id <> '' AND oa.job_id = ra.job_id) OR (ra.job_id = '' " \
    "AND oa.job_id = '' AND ra.tags ? 'commit' " \
    "AND oa.tags->>'commit' = ra.tags->>'commit'))"

/* Change points after $1, oldest first: live (neither superseded nor
 * within noise), settled ($2: now), and whether one opens its event. */
static const char S_CANDIDATES_SQL[] =
    "SELECT cp.id, cp.superseded_at_us IS NULL AND NOT cp.within_noise, "
    "  CASE WHEN ra.job_id = '' THEN cp.detected_at_us < $2::bigint - "
    "  $3::bigint ELSE cp.detected_at_us < $2::bigint - $4::bigint AND "
    "  NOT EXISTS (SELECT 1 FROM jobs j WHERE j.job_uuid = ra.job_id AND "
    "  (j.state = 'active' OR j.ended_at_us > $2::bigint - $4::bigint)) "
    "  END, "
    "  NOT EXISTS (SELECT 1 FROM change_points o JOIN runs oa ON "
    "  oa.id = o.after_run WHERE o.id < cp.id AND " S_SAME_EVENT ") "
    "FROM change_points cp JOIN runs ra ON ra.id = cp.after_run "
    "WHERE cp.id > $1::bigint ORDER BY cp.id LIMIT $5::int";

/* The members of the event cp ($1) opens, by host name. */
static const char S_MEMBERS_SQL[] =
    "SELECT h.name, o.magnitude, o.outcome, o.regression, o.metric, "
    "  b.suite, b.name, o.subject, o.other, o.vars::text, rb.tags::text, "
    "  oa.tags::text, oa.job_id, o.trend_per_run, "
    "  (SELECT count(DISTINCT t.host_id) FROM runs t WHERE "
    "   t.benchmark_id = cp.benchmark_id AND CASE WHEN ra.job_id <> '' "
    "   THEN t.job_id = ra.job_id ELSE t.job_id = '' AND "
    "   t.tags->>'commit' = ra.tags->>'commit' END) "
    "FROM change_points cp JOIN runs ra ON ra.id = cp.after_run "
    "JOIN change_points o ON o.id = cp.id OR (o.id > cp.id AND "
    "  EXISTS (SELECT 1 FROM runs oa WHERE oa.id = o.after_run AND "
    S_SAME_EVENT ")) "
    "JOIN runs oa ON oa.id = o.after_run JOIN runs rb ON rb.id = o.before_run "
    "JOIN hosts h ON h.id = o.host_id JOIN benchmarks b ON "
    "b.id = o.benchmark_id WHERE cp.id = $1::bigint ORDER BY h.name, o.id";

enum { M_HOST, M_MAG, M_OUTCOME, M_REGRESSION, M_METRIC, M_SUITE, M_BENCH,
       M_SUBJECT, M_OTHER, M_VARS, M_BEFORE, M_AFTER, M_JOB, M_TREND,
       M_TOTAL };

/* A JSON text column, parsed (an empty object when it does not parse). */
static json_t *
s_json(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    return j ? j : json_object();
}

static int
s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* "Parity: slower on 3 of 4 hosts (h1, h2, h3): suite/bench (new vs
 * old), ratio x1.098 (x1.093 to x1.105), loss, between commit=c24 and
 * commit=c25 (event #17)". */
static void
s_text(char *buf, size_t len, const json_t *e)
{
    char hosts[512] = "", before[256], after[256], range[80] = "";
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
             pw_out_str(e, "suite", "?"), pw_out_str(e, "benchmark", "?"),
             pw_out_str(e, "subject", "?"), pw_out_str(e, "other", "?"),
             pw_out_str(e, "metric", "?"),
             json_number_value(json_object_get(e, "magnitude")), range,
             pw_out_str(e, "outcome", "?"), before, after,
             json_integer_value(json_object_get(e, "id")));
}

/* The event cp opens, from its members' rows m: the shape of
 * docs/protocol.md 10.12's EVENT, with "text". NULL on out of memory. */
static json_t *
s_event(int64_t cp, PGresult *m)
{
    int n = PQntuples(m);
    double *mag = calloc((size_t)n, sizeof *mag);
    json_t *hosts = json_array(), *e = NULL;
    bool regression = false;
    if (!mag || !hosts)
        goto done;
    for (int i = 0; i < n; i++) {
        mag[i] = strtod(PQgetvalue(m, i, M_MAG), NULL);
        regression |= PQgetvalue(m, i, M_REGRESSION)[0] == 't';
        if (i == 0 || strcmp(PQgetvalue(m, i, M_HOST),
                             PQgetvalue(m, i - 1, M_HOST)) != 0)
            json_array_append_new(hosts, json_string(PQgetvalue(m, i,
                                                                M_HOST)));
    }
    qsort(mag, (size_t)n, sizeof *mag, s_cmp_double);
    double med = n % 2 ? mag[n / 2] : (mag[n / 2 - 1] + mag[n / 2]) / 2;
    e = json_pack("{s:I,s:s,s:s,s:s,s:s,s:o,s:s,s:s,s:f,s:f,s:f,s:s,s:b,"
                  "s:O,s:I,s:I,s:{s:o},s:{s:o,s:s},s:o}",
        "id", (json_int_t)cp, "suite", PQgetvalue(m, 0, M_SUITE),
        "benchmark", PQgetvalue(m, 0, M_BENCH),
        "subject", PQgetvalue(m, 0, M_SUBJECT),
        "other", PQgetvalue(m, 0, M_OTHER),
        "vars", s_json(PQgetvalue(m, 0, M_VARS)),
        "metric", PQgetvalue(m, 0, M_METRIC),
        "direction", med > 1 ? "slower" : "faster",
        "magnitude", med, "magnitude_min", mag[0],
        "magnitude_max", mag[n - 1],
        "outcome", regression ? "loss" : PQgetvalue(m, 0, M_OUTCOME),
        "regression", regression, "hosts", hosts,
        "hosts_with_step", (json_int_t)json_array_size(hosts),
        "hosts_total", (json_int_t)strtoll(PQgetvalue(m, 0, M_TOTAL), NULL,
                                           10),
        "before", "tags", s_json(PQgetvalue(m, 0, M_BEFORE)),
        "after", "tags", s_json(PQgetvalue(m, 0, M_AFTER)),
        "job", PQgetvalue(m, 0, M_JOB),
        "trend", PQgetisnull(m, 0, M_TREND) ? json_null() :
                 json_pack("{s:f}", "per_run",
                           strtod(PQgetvalue(m, 0, M_TREND), NULL)));
done:
    free(mag);
    json_decref(hosts);
    return e;
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

/* Tell of the event change point cp opens: claim it in notices, then
 * queue it on every hook. 0, or -1 (a database error: looked at again
 * next poll). */
static int
s_tell(co_notify_t *n, int64_t cp)
{
    char id[24], at[24], text[1024];
    snprintf(id, sizeof id, "%" PRId64, cp);
    const char *p[] = { id };
    PGresult *m = PQexecParams(n->conn, S_MEMBERS_SQL, 1, NULL, p, NULL,
                               NULL, 0);
    if (PQresultStatus(m) != PGRES_TUPLES_OK || PQntuples(m) == 0) {
        s_db_warn(n, id, PQresultStatus(m) == PGRES_TUPLES_OK ? "no members" :
                  PQresultErrorMessage(m));
        PQclear(m);
        return -1;
    }
    json_t *e = s_event(cp, m);
    PQclear(m);
    if (e)
        s_text(text, sizeof text, e);
    json_t *body = e ? json_pack("{s:s,s:{s:s,s:o}}", "text", text,
                                 "parity", "kind", "event", "event", e)
                     : NULL;
    char *json = body ? pw_json_dumps(body) : NULL;
    json_decref(body);
    if (!json)
        return -1;
    snprintf(at, sizeof at, "%" PRId64, pw_clock_unix_us());
    const char *pc[] = { id, json, at };
    PGresult *r = PQexecParams(n->conn, "INSERT INTO notices (kind, ref, "
        "body, created_at_us) VALUES ('event', $1, $2, $3) ON CONFLICT DO "
        "NOTHING RETURNING id", 3, NULL, pc, NULL, NULL, 0);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : -1;
    if (rc != 0)
        s_db_warn(n, id, PQresultErrorMessage(r));
    else if (PQntuples(r) == 1) {
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

/* One look at the change points stored since the last. */
static void
s_poll(co_notify_t *n)
{
    char last[24], now[24], settle[24], settle_job[24], lim[16];
    if (!n->have_last) {
        PGresult *r = PQexec(n->conn, "SELECT coalesce(max(id), 0) FROM "
                             "change_points");
        if (PQresultStatus(r) == PGRES_TUPLES_OK) {
            n->last_id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
            n->have_last = true;
        }
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
    PGresult *r = PQexecParams(n->conn, S_CANDIDATES_SQL, 5, NULL, p, NULL,
                               NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        s_db_warn(n, NULL, PQresultErrorMessage(r));
        PQclear(r);
        return;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        bool live = PQgetvalue(r, i, 1)[0] == 't';
        bool ready = PQgetvalue(r, i, 2)[0] == 't';
        bool opens = PQgetvalue(r, i, 3)[0] == 't';
        if (live && opens && !ready)
            break;              /* looked at again next time */
        if (live && opens && s_tell(n, id) != 0) {
            PQclear(r);
            return;             /* said; tried again next time */
        }
        n->last_id = id;
    }
    PQclear(r);
    n->warned = false;
}

static void *
s_thread(void *arg)
{
    co_notify_t *n = arg;
    pthread_mutex_lock(&n->lock);
    while (!n->stop) {
        pthread_mutex_unlock(&n->lock);
        char err[512];
        if (!n->conn || PQstatus(n->conn) != CONNECTION_OK) {
            PQfinish(n->conn);
            n->conn = co_db_open(n->conninfo, "SET statement_timeout = "
                                 "'10s'", err, sizeof err);
            if (!n->conn)
                s_db_warn(n, NULL, err);
        }
        if (n->conn)
            s_poll(n);
        pthread_mutex_lock(&n->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += CO_NOTIFY_POLL_MS / 1000;
        until.tv_nsec += (CO_NOTIFY_POLL_MS % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        if (!n->stop)
            pthread_cond_timedwait(&n->wake, &n->lock, &until);
    }
    pthread_mutex_unlock(&n->lock);
    return NULL;
}

co_notify_t *
co_notify_new(const char *conninfo, const char *const *urls, size_t nurls,
              size_t queue_max, char *err, size_t errlen)
{
    if (nurls > CO_NOTIFY_URLS_MAX) {
        snprintf(err, errlen, "more than %d --notify-url",
                 CO_NOTIFY_URLS_MAX);
        return NULL;
    }
    co_notify_t *n = calloc(1, sizeof *n);
    if (!n || !(n->conninfo = strdup(conninfo ? conninfo : ""))) {
        snprintf(err, errlen, "co_notify: out of memory");
        free(n);
        return NULL;
    }
    pthread_mutex_init(&n->lock, NULL);
    pthread_cond_init(&n->wake, NULL);
    for (; n->nhooks < nurls; n->nhooks++)
        if (!(n->hooks[n->nhooks] = co_hook_new(urls[n->nhooks], queue_max,
                                                err, errlen)))
            goto fail;
    if (pthread_create(&n->thread, NULL, s_thread, n) != 0) {
        snprintf(err, errlen, "pthread_create(notify) failed");
        goto fail;
    }
    n->started = true;
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
co_notify_destroy(co_notify_t **np)
{
    co_notify_t *n = np ? *np : NULL;
    if (!n)
        return;
    *np = NULL;
    if (n->started) {
        pthread_mutex_lock(&n->lock);
        n->stop = true;
        pthread_cond_signal(&n->wake);
        pthread_mutex_unlock(&n->lock);
        pthread_join(n->thread, NULL);
    }
    for (size_t i = 0; i < n->nhooks; i++)
        co_hook_destroy(&n->hooks[i]);
    PQfinish(n->conn);
    pthread_mutex_destroy(&n->lock);
    pthread_cond_destroy(&n->wake);
    free(n->conninfo);
    free(n);
}
