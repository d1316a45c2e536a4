/* co_jobs.c -- see co_jobs.h. */
#include "co_jobs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "co_db.h"
#include "co_jobreq.h"
#include "pw_buf.h"
#include "pw_clock.h"
#include "pw_err.h"
#include "pw_limits.h"
#include "pw_wire.h"

/* Longest "{1,2,...}" list of row ids a statement is given: 4,096 ids
 * of up to 20 digits and a comma. */
#define S_IDS_TEXT_MAX (CO_JOBREQ_MAX_HOSTS * 21 + 3)

/* The statements of jobs, their hosts' rows and the collectors' beats. */
enum {
    S_HOST_ID, S_CHECK_END, S_UNCLAIM, S_REPLACE_SUITES_1,
    S_REPLACE_SUITES_2, S_AGENT_ONLINE, S_AGENT_OFFLINE, S_STATUS,
    S_STATUS_COMMIT, S_RUN_END, S_CHECK_RUNNING, S_BEAT, S_TICK_1,
    S_TICK_2, S_OFFER_IDLE, S_PICK_HOSTS, S_INSERT_JOB_1, S_INSERT_JOB_2,
    S_CREATE, S_CANCEL_HERE, S_RESYNC, S_CANCEL_1, S_CANCEL_2, S_CANCEL_3,
    S_CANCEL_4, S_CLAIM, S_DISPATCH, S_LOST_JOB, S_LOST_ALL,
    S_REVISION_PREV, S_REVISION_WARNED
};
static const co_stmt_t s_sql[] = {
    [S_HOST_ID] = { "jobs.host_id",
        "SELECT id FROM hosts WHERE public_key = $1",
        1, PGRES_TUPLES_OK, false },
    [S_CHECK_END] = { "jobs.check_end",
        "UPDATE jobs SET state = 'ended', ended_at_us = $2 WHERE id = $1 "
        "AND state = 'active' AND NOT EXISTS (SELECT 1 FROM job_hosts WHERE "
        "job = $1 AND state IN ('queued', 'running')) RETURNING job_uuid",
        2, PGRES_TUPLES_OK, false },
    [S_UNCLAIM] = { "jobs.unclaim",
        "UPDATE job_hosts h SET state = 'queued', offered_at_us = NULL FROM "
        "unnest($1::bigint[], $2::bigint[]) AS u(job, host_id) WHERE h.job "
        "= u.job AND h.host_id = u.host_id AND h.state = 'running'",
        2, PGRES_COMMAND_OK, false },
    [S_REPLACE_SUITES_1] = { "jobs.replace_suites_1",
        "DELETE FROM host_suites WHERE host_id = $1",
        1, PGRES_COMMAND_OK, false },
    [S_REPLACE_SUITES_2] = { "jobs.replace_suites_2",
        "INSERT INTO host_suites (host_id, name, digest, benchmarks, "
        "revision) SELECT $1, $2, $3, ARRAY(SELECT "
        "json_array_elements_text($4::json)), $5 ON CONFLICT DO NOTHING",
        5, PGRES_COMMAND_OK, false },
    [S_AGENT_ONLINE] = { "jobs.agent_online",
        "SELECT j.job_uuid, j.id FROM job_hosts h JOIN jobs j ON j.id = "
        "h.job WHERE h.host_id = $1 AND h.state = 'running' ORDER BY "
        "h.offered_at_us DESC LIMIT 1",
        1, PGRES_TUPLES_OK, false },
    [S_AGENT_OFFLINE] = { "jobs.agent_offline",
        "SELECT 1 FROM hosts WHERE id = $1 AND collector IS DISTINCT FROM "
        "$2 AND online",
        2, PGRES_TUPLES_OK, false },
    [S_STATUS] = { "jobs.status",
        "WITH cur AS (SELECT h.job, h.host_id, h.state, CASE WHEN $3 = "
        "'done' THEN (SELECT count(*) FROM runs WHERE job_id = $1 AND "
        "host_id = $2 AND status IS NULL) ELSE 0 END AS open FROM job_hosts "
        "h JOIN jobs j ON j.id = h.job WHERE j.job_uuid = $1 AND h.host_id "
        "= $2), upd AS (UPDATE job_hosts t SET state = $4, reason = $5, "
        "run_id = CASE WHEN $6 = '' THEN t.run_id ELSE $6 END, benchmark = "
        "CASE WHEN $7 = '' THEN t.benchmark ELSE $7 END, suite_digest = "
        "CASE WHEN $11 = '' THEN t.suite_digest ELSE $11 END, round = "
        "$8::int, rounds = $9::int, updated_at_us = $10, offered_at_us = "
        "COALESCE(t.offered_at_us, $10), ended_at_us = CASE WHEN $4 = "
        "'running' THEN NULL ELSE $10 END FROM cur WHERE t.job = cur.job "
        "AND t.host_id = cur.host_id AND $4 <> '' AND cur.open = 0 AND "
        "(t.state IN ('queued', 'running') OR ($3 <> '' AND t.state = "
        "'lost')) RETURNING t.job) SELECT cur.state, cur.job, cur.open, "
        "(SELECT count(*) FROM upd) AS moved FROM cur",
        11, PGRES_TUPLES_OK, false },
    [S_STATUS_COMMIT] = { "jobs.status_commit",
        "COMMIT",
        0, PGRES_COMMAND_OK, false },
    [S_RUN_END] = { "jobs.run_end",
        "SELECT j.id FROM runs r JOIN jobs j ON j.job_uuid = r.job_id WHERE "
        "r.run_uuid = $1 AND r.host_id = $2",
        2, PGRES_TUPLES_OK, false },
    [S_CHECK_RUNNING] = { "jobs.check_running",
        "SELECT DISTINCT jh.host_id FROM job_hosts jh JOIN hosts h ON h.id "
        "= jh.host_id JOIN host_liveness l ON l.host_id = jh.host_id WHERE "
        "jh.state = 'running' AND NOT l.live AND h.last_seen < now() - "
        "make_interval(secs => $1::float8)",
        1, PGRES_TUPLES_OK, false },
    [S_BEAT] = { "jobs.beat",
        "INSERT INTO collectors (name, pid, ttl_ms) VALUES ($1, $2::int, "
        "$3::int) ON CONFLICT (name) DO UPDATE SET started_at = CASE WHEN "
        "collectors.pid = EXCLUDED.pid THEN collectors.started_at ELSE "
        "now() END, pid = EXCLUDED.pid, ttl_ms = EXCLUDED.ttl_ms, beat_at = "
        "now()",
        3, PGRES_COMMAND_OK, false },
    [S_TICK_1] = { "jobs.tick_1",
        "UPDATE job_hosts h SET state = 'expired', reason = 'the job "
        "expired before this host could start it', ended_at_us = $1, "
        "updated_at_us = $1 FROM jobs j WHERE j.id = h.job AND h.state = "
        "'queued' AND j.state = 'active' AND j.expires_at_us > 0 AND "
        "j.expires_at_us <= $1::bigint RETURNING j.job_uuid",
        1, PGRES_TUPLES_OK, false },
    [S_TICK_2] = { "jobs.tick_2",
        "UPDATE jobs j SET state = 'ended', ended_at_us = $1 WHERE state = "
        "'active' AND NOT EXISTS (SELECT 1 FROM job_hosts h WHERE h.job = "
        "j.id AND h.state IN ('queued', 'running')) RETURNING job_uuid",
        1, PGRES_TUPLES_OK, false },
    [S_OFFER_IDLE] = { "jobs.offer_idle",
        "SELECT DISTINCT h.host_id FROM job_hosts h JOIN jobs j ON j.id = "
        "h.job WHERE h.state = 'queued' AND j.state = 'active'",
        0, PGRES_TUPLES_OK, false },
    [S_PICK_HOSTS] = { "jobs.pick_hosts",
        "SELECT h.id, h.name, h.tags::text AS tags, s.name IS NOT NULL AS "
        "has_suite, COALESCE(array_to_json(s.benchmarks)::text, '[]') AS "
        "benchmarks, COALESCE(s.revision, '') AS revision FROM hosts h "
        "LEFT JOIN host_suites s ON s.host_id = h.id AND s.name = $1 ORDER "
        "BY h.name, h.id",
        1, PGRES_TUPLES_OK, false },
    [S_INSERT_JOB_1] = { "jobs.insert_job_1",
        "INSERT INTO jobs (job_uuid, suite, vars, runs, only_benchmarks, "
        "tags, label, hosts_spec, requested_by, created_at_us, "
        "expires_at_us, against) VALUES ($1, $2, $3::jsonb, $4::int, "
        "ARRAY(SELECT json_array_elements_text($5::json)), $6::jsonb, $7, "
        "$8, $9, $10, $11, $12::jsonb) RETURNING id",
        12, PGRES_TUPLES_OK, false },
    [S_INSERT_JOB_2] = { "jobs.insert_job_2",
        "INSERT INTO job_hosts (job, host_id, state, queued_at_us, "
        "updated_at_us) SELECT $1, unnest($2::bigint[]), 'queued', $3, $3",
        3, PGRES_COMMAND_OK, false },
    [S_CREATE] = { "jobs.create",
        "SELECT h.name, jh.state FROM job_hosts jh JOIN hosts h ON h.id = "
        "jh.host_id WHERE jh.job = $1 ORDER BY h.name, h.id",
        1, PGRES_TUPLES_OK, false },
    /* The suite's newest job with other variables, while no host says
     * the suite has a revision: variable and the advice was not given. */
    [S_REVISION_PREV] = { "jobs.revision_prev",
        "SELECT (SELECT p.vars::text FROM jobs p WHERE p.suite = $1 AND "
        "p.vars <> $2::jsonb ORDER BY p.id DESC LIMIT 1) AS vars WHERE NOT EXISTS "
        "(SELECT 1 FROM host_suites WHERE name = $1 AND revision <> '') AND "
        "NOT EXISTS (SELECT 1 FROM suite_warnings WHERE suite = $1 AND kind "
        "= 'revision')",
        2, PGRES_TUPLES_OK, false },
    [S_REVISION_WARNED] = { "jobs.revision_warned",
        "INSERT INTO suite_warnings (suite, kind, warned_at_us) VALUES ($1, "
        "'revision', $2) ON CONFLICT DO NOTHING RETURNING suite",
        2, PGRES_TUPLES_OK, false },
    [S_CANCEL_HERE] = { "jobs.cancel_here",
        "SELECT h.host_id FROM job_hosts h JOIN jobs j ON j.id = h.job "
        "WHERE j.job_uuid = $1 AND h.state = 'cancelled' AND "
        "h.offered_at_us IS NOT NULL",
        1, PGRES_TUPLES_OK, false },
    [S_RESYNC] = { "jobs.resync",
        "SELECT job_uuid FROM jobs WHERE state = 'cancelled' AND "
        "ended_at_us > $1::bigint ORDER BY ended_at_us DESC LIMIT 100",
        1, PGRES_TUPLES_OK, false },
    [S_CANCEL_1] = { "jobs.cancel_1",
        "SELECT id, state FROM jobs WHERE job_uuid = $1",
        1, PGRES_TUPLES_OK, false },
    [S_CANCEL_2] = { "jobs.cancel_2",
        "WITH c AS (SELECT host_id, state FROM job_hosts WHERE job = $1 AND "
        "state IN ('queued', 'running') FOR UPDATE) UPDATE job_hosts h SET "
        "state = 'cancelled', reason = 'cancelled by the user', ended_at_us "
        "= $2, updated_at_us = $2 FROM c WHERE h.job = $1 AND h.host_id = "
        "c.host_id RETURNING h.host_id, c.state",
        2, PGRES_TUPLES_OK, false },
    [S_CANCEL_3] = { "jobs.cancel_3",
        "UPDATE jobs SET state = 'cancelled', ended_at_us = $2 WHERE id = $1",
        2, PGRES_COMMAND_OK, false },
    [S_CANCEL_4] = { "jobs.cancel_4",
        "SELECT pg_notify('" CO_JOBS_CHANNEL "', 'cancel ' || $1)",
        1, PGRES_TUPLES_OK, false },
    [S_CLAIM] = { "jobs.claim",
        /* suite_digest: the suite's as the host's Hello listed it;
         * the agent's JobStatus "running" names the file it loaded. */
        "UPDATE job_hosts h SET state = 'running', offered_at_us = $3, "
        "updated_at_us = $3, suite_digest = COALESCE((SELECT s.digest "
        "FROM host_suites s JOIN jobs jj ON jj.id = h.job WHERE "
        "s.host_id = h.host_id AND s.name = jj.suite), '') "
        "FROM (SELECT c.job, c.host_id FROM job_hosts "
        "c JOIN unnest($1::bigint[], $2::bigint[]) AS u(job, host_id) ON "
        "c.job = u.job AND c.host_id = u.host_id WHERE c.state = "
        "'queued' FOR UPDATE OF c SKIP LOCKED) AS k WHERE h.job = k.job "
        "AND h.host_id = k.host_id RETURNING h.job, h.host_id",
        3, PGRES_TUPLES_OK, false },
    [S_DISPATCH] = { "jobs.dispatch",
        /* cand: the hosts asked about and the other agents of their
         * machines (same non-empty boot id). A host that ends a job frees
         * its machine, and the machine's oldest queued job goes next,
         * whichever of its agents it is for: offering only the host that
         * ended would hand it its own next job and starve its siblings
         * for as long as it has work.
         * Busy: the host, or an online host of the same machine, has a
         * running row: two agents of one machine would measure each
         * other. */
        "WITH cand AS (SELECT id FROM hosts WHERE id = ANY($1::bigint[]) "
        " UNION SELECT s.id FROM hosts g JOIN hosts s ON s.boot_id = "
        " g.boot_id WHERE g.id = ANY($1::bigint[]) AND g.boot_id <> ''), "
        "busy AS (SELECT DISTINCT b.host_id, hb.boot_id FROM job_hosts "
        " b JOIN hosts hb ON hb.id = b.host_id JOIN host_liveness lb ON "
        " lb.host_id = b.host_id WHERE b.state = 'running' "
        " AND (lb.live OR b.host_id IN (SELECT id FROM cand))) "
        "SELECT * FROM (SELECT DISTINCT ON (h.host_id) j.id, j.job_uuid, "
        "j.suite, j.vars::text AS vars, j.runs, "
        "array_to_json(j.only_benchmarks)::text AS only_benchmarks, j.tags::text AS "
        "tags, j.label, j.expires_at_us, h.host_id, hh.boot_id, "
        "j.created_at_us, j.against::text AS against "
        "FROM job_hosts h JOIN jobs j ON j.id = h.job "
        "JOIN hosts hh ON hh.id = h.host_id "
        "WHERE h.host_id IN (SELECT id FROM cand) AND h.state = 'queued' "
        "AND j.state = 'active' AND (j.expires_at_us = 0 OR "
        "j.expires_at_us > $2::bigint) AND NOT EXISTS (SELECT 1 FROM busy "
        "WHERE busy.host_id = h.host_id OR (hh.boot_id <> '' AND "
        "busy.boot_id = hh.boot_id)) "
        "ORDER BY h.host_id, j.created_at_us, j.id) q "
        /* Oldest job first: s_machine_taken keeps the first row of each
         * machine. */
        "ORDER BY q.created_at_us, q.id, q.host_id",
        2, PGRES_TUPLES_OK, false },
    /* A host's running row (of one job, or any) lost. */
    [S_LOST_JOB] = { "jobs.lost_job",
        "UPDATE job_hosts SET state = 'lost', reason = $3, ended_at_us = $2, "
        "updated_at_us = $2 WHERE host_id = $1 AND job = $4 AND "
        "state = 'running' RETURNING job",
        4, PGRES_TUPLES_OK, false },
    [S_LOST_ALL] = { "jobs.lost_all",
        "UPDATE job_hosts SET state = 'lost', reason = $3, ended_at_us = $2, "
        "updated_at_us = $2 WHERE host_id = $1 AND state = 'running' "
        "RETURNING job",
        3, PGRES_TUPLES_OK, false },
};

typedef struct {
    char key[CO_JOBS_KEY_LEN + 1];
    int64_t host_id;
    int64_t last_heard_us;
    /* A running row found at this host's Hello: lost at confirm_by_us
     * unless a Heartbeat names confirm_job first; confirm_by_us 0 when
     * nothing waits. */
    int64_t confirm_by_us;
    char confirm_job[24];          /* the job's uuid */
    char confirm_job_id[24];       /* its jobs.id */
} s_online_t;

struct co_jobs {
    co_conn_t *conn;             /* borrowed */
    void *ctx;
    int (*send)(void *ctx, const char *public_key,
                const Parity__Envelope *env);
    void (*log)(void *ctx, const char *event, const char *text);
    s_online_t *online;          /* [CO_JOBS_MAX_ONLINE] */
    size_t n_online;
    int64_t confirm_us;
    int64_t started_us;          /* first tick: for the restart grace */
    char *collector;             /* NULL: no beat (query workers) */
    int ttl_ms;
    bool listen;                 /* conn LISTENs on CO_JOBS_CHANNEL */
    /* The connection co_jobs_poll saw last (co_conn_generation): a new
     * one may have missed notifications, so it looks at every job once. */
    unsigned generation;
    /* Between co_jobs_status_begin and _commit: the jobs that may have
     * ended and the hosts that became free, acted on after the COMMIT. */
    bool in_batch;
    int64_t end_jobs[CO_JOBS_STATUS_BATCH];
    int64_t free_hosts[CO_JOBS_STATUS_BATCH];
    size_t n_end, n_free;
};

static void
s_log(co_jobs_t *j, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
s_log(co_jobs_t *j, const char *event, const char *fmt, ...)
{
    if (!j->log)
        return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    j->log(j->ctx, event, text);
}

co_jobs_t *
co_jobs_new(const co_jobs_opts_t *opts)
{
    co_jobs_t *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->conn = opts->conn;
    j->online = calloc(CO_JOBS_MAX_ONLINE, sizeof *j->online);
    if (!j->online) {
        co_jobs_destroy(&j);
        return NULL;
    }
    j->ctx = opts->ctx;
    j->send = opts->send;
    j->log = opts->log;
    j->confirm_us = opts->confirm_us > 0 ? opts->confirm_us :
                    CO_JOBS_CONFIRM_US;
    j->listen = opts->listen;
    j->ttl_ms = opts->ttl_ms > CO_JOBS_MIN_TTL_MS ? opts->ttl_ms :
                CO_JOBS_MIN_TTL_MS;
    if (opts->collector && !(j->collector = strdup(opts->collector))) {
        co_jobs_destroy(&j);
        return NULL;
    }
    return j;
}

void
co_jobs_destroy(co_jobs_t **jobs)
{
    if (!jobs || !*jobs)
        return;
    co_jobs_t *j = *jobs;
    free(j->collector);
    free(j->online);
    free(j);
    *jobs = NULL;
}

co_conn_t *
co_jobs_conn(co_jobs_t *j)
{
    return j->conn;
}

/* Run one statement of the table; NULL with err (its name and the
 * server's line) otherwise. Caller PQclears. */
static PGresult *
s_run(co_jobs_t *j, const co_stmt_t *st, const char *const *p, char *err,
      size_t errlen)
{
    return co_conn_run(j->conn, st, p, NULL, err, errlen);
}

static int
s_exec(co_jobs_t *j, const char *sql, char *err, size_t errlen)
{
    return co_conn_exec(j->conn, sql, sql, NULL, err, errlen) == 0
           ? CO_JOBS_OK : CO_JOBS_FAIL;
}

static void
s_rollback(co_jobs_t *j)
{
    co_conn_rollback(j->conn);
}

static s_online_t *
s_online_find(const co_jobs_t *j, const char *key)
{
    for (size_t i = 0; i < j->n_online; i++)
        if (strcmp(j->online[i].key, key) == 0)
            return &j->online[i];
    return NULL;
}

static const char *
s_online_key(const co_jobs_t *j, int64_t host_id)
{
    for (size_t i = 0; i < j->n_online; i++)
        if (j->online[i].host_id == host_id)
            return j->online[i].key;
    return NULL;
}

bool
co_jobs_is_online(const co_jobs_t *j, const char *public_key)
{
    return s_online_find(j, public_key) != NULL;
}

int64_t
co_jobs_last_heard_us(const co_jobs_t *j, const char *public_key)
{
    const s_online_t *o = s_online_find(j, public_key);
    return o ? o->last_heard_us : 0;
}

static int
s_host_id(co_jobs_t *j, const char *key, int64_t *id, char *err,
          size_t errlen)
{
    const char *p[] = { key };
    PGresult *r = s_run(j, &s_sql[S_HOST_ID], p, err, errlen);
    if (!r)
        return CO_JOBS_FAIL;
    if (PQntuples(r) != 1) {
        PQclear(r);
        pw_err(err, errlen, "no stored host has key %.40s", key);
        return CO_JOBS_REFUSED;
    }
    *id = co_val_i64(r, 0, co_col(r, "id"));
    PQclear(r);
    return CO_JOBS_OK;
}

/* End the job when no row is queued or running any more. */
static void
s_check_end(co_jobs_t *j, const char *job_db_id, int64_t now_us)
{
    char now[24], err[256];
    snprintf(now, sizeof now, "%" PRId64, now_us);
    const char *p[] = { job_db_id, now };
    PGresult *r = s_run(j, &s_sql[S_CHECK_END], p, err, sizeof err);
    if (!r) {
        s_log(j, "db_error", "op=job_end error=\"%s\"", err);
        return;
    }
    if (PQntuples(r) == 1)
        s_log(j, "job_ended", "job=%s", co_val(r, 0, co_col(r, "job_uuid")));
    PQclear(r);
}

/* Set the JobOffer's repeated fields from the JSON texts of the job row.
 * Everything allocated goes into the arrays the caller frees. */
typedef struct {
    Parity__JobOffer offer;
    Parity__Var *vars;
    Parity__Var **varp;
    Parity__Var *against;
    Parity__Var **againstp;
    Parity__Tag *tags;
    Parity__Tag **tagp;
    char **only;
    json_t *jvars, *jtags, *jonly, *jagainst;
} s_offer_t;

static void
s_offer_free(s_offer_t *o)
{
    free(o->vars);
    free(o->varp);
    free(o->against);
    free(o->againstp);
    free(o->tags);
    free(o->tagp);
    free(o->only);
    json_decref(o->jvars);
    json_decref(o->jtags);
    json_decref(o->jonly);
    json_decref(o->jagainst);
}

/* Build the offer from row i of a s_dispatch_many result. */
static int
s_offer_build(s_offer_t *o, PGresult *r, int i)
{
    memset(o, 0, sizeof *o);
    parity__job_offer__init(&o->offer);
    o->offer.job_id = (char *)co_val(r, i, co_col(r, "job_uuid"));
    o->offer.suite = (char *)co_val(r, i, co_col(r, "suite"));
    o->offer.runs = (uint32_t)co_val_i64(r, i, co_col(r, "runs"));
    o->offer.label = (char *)co_val(r, i, co_col(r, "label"));
    o->offer.expires_at_us = co_val_i64(r, i, co_col(r, "expires_at_us"));
    o->jvars = json_loads(co_val(r, i, co_col(r, "vars")), 0, NULL);
    o->jonly = json_loads(co_val(r, i, co_col(r, "only_benchmarks")), 0,
                          NULL);
    o->jtags = json_loads(co_val(r, i, co_col(r, "tags")), 0, NULL);
    o->jagainst = json_loads(co_val(r, i, co_col(r, "against")), 0, NULL);
    if (!json_is_object(o->jvars) || !json_is_array(o->jonly) ||
        !json_is_object(o->jtags) || !json_is_array(o->jagainst))
        return -1;
    size_t nv = json_object_size(o->jvars), nt = json_object_size(o->jtags),
           no = json_array_size(o->jonly), na = json_array_size(o->jagainst);
    o->vars = calloc(nv + 1, sizeof *o->vars);
    o->varp = calloc(nv + 1, sizeof *o->varp);
    o->against = calloc(na + 1, sizeof *o->against);
    o->againstp = calloc(na + 1, sizeof *o->againstp);
    if (!o->against || !o->againstp)
        return -1;
    for (size_t a = 0; a < na; a++) {
        const json_t *x = json_array_get(o->jagainst, a);
        const char *name = json_string_value(json_object_get(x, "name"));
        const char *value = json_string_value(json_object_get(x, "value"));
        parity__var__init(&o->against[a]);
        o->against[a].name = (char *)(name ? name : "");
        o->against[a].value = (char *)(value ? value : "");
        o->againstp[a] = &o->against[a];
    }
    o->offer.n_against = na;
    o->offer.against = o->againstp;
    o->tags = calloc(nt + 1, sizeof *o->tags);
    o->tagp = calloc(nt + 1, sizeof *o->tagp);
    o->only = calloc(no + 1, sizeof *o->only);
    if (!o->vars || !o->varp || !o->tags || !o->tagp || !o->only)
        return -1;
    const char *k;
    json_t *v;
    size_t n = 0;
    json_object_foreach(o->jvars, k, v) {
        parity__var__init(&o->vars[n]);
        o->vars[n].name = (char *)k;
        o->vars[n].value = (char *)(json_string_value(v) ?
                                    json_string_value(v) : "");
        o->varp[n] = &o->vars[n];
        n++;
    }
    o->offer.n_vars = n;
    o->offer.vars = o->varp;
    n = 0;
    json_object_foreach(o->jtags, k, v) {
        parity__tag__init(&o->tags[n]);
        o->tags[n].key = (char *)k;
        o->tags[n].value = (char *)(json_string_value(v) ?
                                    json_string_value(v) : "");
        o->tagp[n] = &o->tags[n];
        n++;
    }
    o->offer.n_tags = n;
    o->offer.tags = o->tagp;
    for (n = 0; n < no; n++) {
        const char *s = json_string_value(json_array_get(o->jonly, n));
        o->only[n] = (char *)(s ? s : "");
    }
    o->offer.n_only = no;
    o->offer.only = o->only;
    return 0;
}

/* Append "{a,b,...}", a bigint[] literal of ids, to b. */
static void
s_ids_text(pw_buf_t *b, const int64_t *ids, size_t n)
{
    pw_buf_adds(b, "{");
    for (size_t i = 0; i < n; i++)
        pw_buf_printf(b, "%s%" PRId64, i ? "," : "", ids[i]);
    pw_buf_adds(b, "}");
}

/* True when a row of r before i that was offered in this call
 * (offered[k]) has row i's non-empty boot id: the same machine. */
static bool
s_machine_taken(const PGresult *r, int i, const bool *offered)
{
    int i_boot = co_col(r, "boot_id");
    const char *boot = co_val(r, i, i_boot);
    if (!*boot)
        return false;
    for (int k = 0; k < i; k++)
        if (offered[k] && strcmp(co_val(r, k, i_boot), boot) == 0)
            return true;
    return false;
}

/* Offer each of the hosts its oldest queued job when it is online and
 * idle: one SELECT for all of them, the offers, then one UPDATE (one
 * COMMIT) for every row offered. A job created for 100 hosts, or 100
 * hosts ending a job together, then costs the writer three statements
 * instead of three per host. Queued rows of jobs that expired are left
 * to co_jobs_tick, which marks them within a tick and comes back here. */
/* Rows (jobs[i], hosts[i]) from queued to running, skipping rows another
 * collector holds locked (it is claiming them). A pair not claimed gets
 * its jobs[i] set to 0. 0, or -1 with err. */
static int
s_claim(co_jobs_t *j, int64_t *jobs, const int64_t *hosts, size_t n,
        int64_t now_us, char *err, size_t errlen)
{
    pw_buf_t jt, ht;
    char now[24];
    pw_buf_init(&jt, S_IDS_TEXT_MAX);
    pw_buf_init(&ht, S_IDS_TEXT_MAX);
    s_ids_text(&jt, jobs, n);
    s_ids_text(&ht, hosts, n);
    snprintf(now, sizeof now, "%" PRId64, now_us);
    const char *p[] = { pw_buf_data(&jt), pw_buf_data(&ht), now };
    PGresult *r = NULL;
    if (pw_buf_status(&jt) != PW_BUF_OK || pw_buf_status(&ht) != PW_BUF_OK)
        pw_err(err, errlen, "offered rows: too many");
    else
        r = s_run(j, &s_sql[S_CLAIM], p, err, errlen);
    pw_buf_free(&jt);
    pw_buf_free(&ht);
    if (!r)
        return -1;
    int i_job = co_col(r, "job"), i_host = co_col(r, "host_id");
    for (size_t i = 0; i < n; i++) {
        bool got = false;
        for (int t = 0; !got && t < PQntuples(r); t++)
            got = co_val_i64(r, t, i_job) == jobs[i] &&
                  co_val_i64(r, t, i_host) == hosts[i];
        if (!got)
            jobs[i] = 0;
    }
    PQclear(r);
    return 0;
}

/* Claimed rows whose offer could not be sent go back to queued. */
static int
s_unclaim(co_jobs_t *j, const int64_t *jobs, const int64_t *hosts, size_t n,
          char *err, size_t errlen)
{
    pw_buf_t jt, ht;
    pw_buf_init(&jt, S_IDS_TEXT_MAX);
    pw_buf_init(&ht, S_IDS_TEXT_MAX);
    s_ids_text(&jt, jobs, n);
    s_ids_text(&ht, hosts, n);
    const char *p[] = { pw_buf_data(&jt), pw_buf_data(&ht) };
    PGresult *r = NULL;
    if (pw_buf_status(&jt) != PW_BUF_OK || pw_buf_status(&ht) != PW_BUF_OK)
        pw_err(err, errlen, "offered rows: too many");
    else
        r = s_run(j, &s_sql[S_UNCLAIM], p, err, errlen);
    pw_buf_free(&jt);
    pw_buf_free(&ht);
    PQclear(r);
    return r ? 0 : -1;
}

static void
s_dispatch_many(co_jobs_t *j, const int64_t *host_ids, size_t n,
                int64_t now_us)
{
    if (!j->send || n == 0)
        return;
    int64_t *online = calloc(n, sizeof *online);
    size_t n_online = 0;
    pw_buf_t hosts;
    pw_buf_init(&hosts, S_IDS_TEXT_MAX);
    PGresult *r = NULL;
    bool *offered = NULL;
    int64_t *sent_jobs = NULL, *sent_hosts = NULL;
    char now[24], err[256] = "";
    if (!online) {
        snprintf(err, sizeof err, "out of memory");
        goto db_error;
    }
    for (size_t i = 0; i < n && i < CO_JOBS_MAX_ONLINE; i++)
        if (s_online_key(j, host_ids[i]))
            online[n_online++] = host_ids[i];
    if (n_online == 0)
        goto done;
    s_ids_text(&hosts, online, n_online);
    snprintf(now, sizeof now, "%" PRId64, now_us);
    const char *ps[] = { pw_buf_data(&hosts), now };
    if (pw_buf_status(&hosts) != PW_BUF_OK) {
        snprintf(err, sizeof err, "host list: %s",
                 pw_buf_strerror(pw_buf_status(&hosts)));
        goto db_error;
    }
    r = s_run(j, &s_sql[S_DISPATCH], ps, err, sizeof err);
    if (!r)
        goto db_error;
    offered = calloc((size_t)PQntuples(r) + 1, sizeof *offered);
    sent_jobs = calloc((size_t)PQntuples(r) + 1, sizeof *sent_jobs);
    sent_hosts = calloc((size_t)PQntuples(r) + 1, sizeof *sent_hosts);
    if (!offered || !sent_jobs || !sent_hosts) {
        snprintf(err, sizeof err, "out of memory");
        goto db_error;
    }
    /* Pick a row per machine, claim the picks (queued -> running) in
     * one statement, then offer only what was claimed: another collector
     * holding the host a moment ago (a failover) may claim it too, and
     * the row goes to whichever UPDATE came first. */
    size_t n_sent = 0;
    int *rows = calloc((size_t)PQntuples(r) + 1, sizeof *rows);
    if (!rows) {
        snprintf(err, sizeof err, "out of memory");
        goto db_error;
    }
    int i_id = co_col(r, "id"), i_host = co_col(r, "host_id");
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t host_id = co_val_i64(r, i, i_host);
        /* One agent per machine gets work from this call; its siblings
         * wait until it is idle again. */
        if (s_machine_taken(r, i, offered) || !s_online_key(j, host_id))
            continue;
        offered[i] = true;
        rows[n_sent] = i;
        sent_jobs[n_sent] = co_val_i64(r, i, i_id);
        sent_hosts[n_sent++] = host_id;
    }
    if (n_sent > 0 && s_claim(j, sent_jobs, sent_hosts, n_sent, now_us,
                              err, sizeof err) != 0) {
        free(rows);
        goto db_error;
    }
    size_t n_failed = 0;
    for (size_t k = 0; k < n_sent; k++) {
        if (sent_jobs[k] == 0)
            continue;            /* claimed elsewhere */
        int i = rows[k];
        const char *key = s_online_key(j, sent_hosts[k]);
        s_offer_t o;
        int built = s_offer_build(&o, r, i);
        Parity__Envelope env;
        pw_wire_init(&env, 0);
        pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_JOB_OFFER, &o.offer);
        int ok = key && built == 0 && j->send(j->ctx, key, &env) == 0;
        s_log(j, ok ? "job_offered" : "job_offer_failed",
              "job=%s host_id=%" PRId64 " suite=\"%s\"", o.offer.job_id,
              sent_hosts[k], o.offer.suite);
        s_offer_free(&o);
        if (!ok) {
            sent_jobs[n_failed] = sent_jobs[k];
            sent_hosts[n_failed++] = sent_hosts[k];
        }
    }
    free(rows);
    if (n_failed > 0 && s_unclaim(j, sent_jobs, sent_hosts, n_failed, err,
                                  sizeof err) != 0)
        goto db_error;
    goto done;
db_error:
    s_log(j, "db_error", "op=dispatch hosts=%zu error=\"%s\"", n_online, err);
done:
    PQclear(r);
    pw_buf_free(&hosts);
    free(online);
    free(offered);
    free(sent_jobs);
    free(sent_hosts);
}

/* Offer one host its oldest queued job (s_dispatch_many of one). */
static void
s_dispatch(co_jobs_t *j, int64_t host_id, int64_t now_us)
{
    s_dispatch_many(j, &host_id, 1, now_us);
}

/* Rows of host in state `from` become lost with reason; jobs that are now
 * complete end. */
static void
s_mark_lost(co_jobs_t *j, int64_t host_id, const char *job_db_id,
            const char *reason, int64_t now_us)
{
    char host[24], now[24], err[256];
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(now, sizeof now, "%" PRId64, now_us);
    const char *p[] = { host, now, reason, job_db_id };
    PGresult *r = s_run(j, &s_sql[job_db_id ? S_LOST_JOB : S_LOST_ALL], p,
                        err, sizeof err);
    if (!r) {
        s_log(j, "db_error", "op=lost host_id=%s error=\"%s\"", host, err);
        return;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        char job[24];
        snprintf(job, sizeof job, "%s", co_val(r, i, co_col(r, "job")));
        s_log(j, "host_lost", "job_row=%s host_id=%s reason=\"%s\"", job,
              host, reason);
        s_check_end(j, job, now_us);
    }
    PQclear(r);
}

/* The suites h lists replace the ones host listed before (one
 * transaction). */
static int
s_replace_suites(co_jobs_t *j, const char *host, const Parity__Hello *h,
                 char *err, size_t errlen)
{
    int rc = s_exec(j, "BEGIN", err, errlen);
    if (rc != CO_JOBS_OK)
        return rc;
    const char *pd[] = { host };
    PGresult *r = s_run(j, &s_sql[S_REPLACE_SUITES_1], pd, err, errlen);
    if (!r)
        goto fail;
    PQclear(r);
    for (size_t i = 0; h && i < h->n_suites; i++) {
        const Parity__SuiteInfo *s = h->suites[i];
        if (!s || !s->name || !*s->name)
            continue;
        json_t *b = json_array();
        for (size_t k = 0; b && k < s->n_benchmarks; k++)
            json_array_append_new(b, json_string(s->benchmarks[k] ?
                                                 s->benchmarks[k] : ""));
        char *bt = b ? json_dumps(b, JSON_COMPACT) : NULL;
        json_decref(b);
        if (!bt) {
            pw_err(err, errlen, "hello: suites to JSON: out of memory");
            goto fail;
        }
        const char *pi[] = { host, s->name, s->digest ? s->digest : "", bt,
                             s->revision ? s->revision : "" };
        r = s_run(j, &s_sql[S_REPLACE_SUITES_2], pi, err, errlen);
        free(bt);
        if (!r)
            goto fail;
        PQclear(r);
    }
    return s_exec(j, "COMMIT", err, errlen);
fail:
    s_rollback(j);
    return CO_JOBS_FAIL;
}

int
co_jobs_agent_suites(co_jobs_t *j, const char *public_key,
                     const Parity__Hello *h, char *err, size_t errlen)
{
    int64_t host_id;
    char host[24];
    int rc = s_host_id(j, public_key, &host_id, err, errlen);
    if (rc != CO_JOBS_OK)
        return rc;
    snprintf(host, sizeof host, "%" PRId64, host_id);
    if ((rc = s_replace_suites(j, host, h, err, errlen)) != CO_JOBS_OK)
        return rc;
    s_log(j, "host_suites", "host_id=%s suites=%zu (Hello again on its "
          "connection)", host, h ? h->n_suites : (size_t)0);
    return CO_JOBS_OK;
}

int
co_jobs_agent_online(co_jobs_t *j, const char *public_key,
                     const Parity__Hello *h, int64_t now_us, char *err,
                     size_t errlen)
{
    int64_t host_id;
    int rc = s_host_id(j, public_key, &host_id, err, errlen);
    if (rc != CO_JOBS_OK)
        return rc;
    char host[24];
    snprintf(host, sizeof host, "%" PRId64, host_id);

    if ((rc = s_replace_suites(j, host, h, err, errlen)) != CO_JOBS_OK)
        return rc;
    const char *pd[] = { host };

    s_online_t *o = s_online_find(j, public_key);
    if (!o && j->n_online < CO_JOBS_MAX_ONLINE) {
        o = &j->online[j->n_online++];
        snprintf(o->key, sizeof o->key, "%s", public_key);
    }
    if (o) {
        o->host_id = host_id;
        o->last_heard_us = now_us;
        o->confirm_by_us = 0;
    }
    /* A Hello is a new connection: a job it was running may be gone with
     * the old process, or still running (the collector restarted, the
     * network was cut). A Heartbeat naming the job keeps the row; none
     * within confirm_us makes it lost (co_jobs_tick). */
    PGresult *r = s_run(j, &s_sql[S_AGENT_ONLINE], pd, err, errlen);
    if (!r)
        return CO_JOBS_FAIL;
    bool running = PQntuples(r) == 1;
    if (running && o) {
        snprintf(o->confirm_job, sizeof o->confirm_job, "%s",
                 co_val(r, 0, co_col(r, "job_uuid")));
        snprintf(o->confirm_job_id, sizeof o->confirm_job_id, "%s",
                 co_val(r, 0, co_col(r, "id")));
        o->confirm_by_us = now_us + j->confirm_us;
    }
    PQclear(r);
    if (running && !o)
        s_mark_lost(j, host_id, NULL, "the agent connected again "
                    "(restarted?) during the job", now_us);
    if (!running)
        s_dispatch(j, host_id, now_us);
    return CO_JOBS_OK;
}

void
co_jobs_heartbeat(co_jobs_t *j, const char *public_key,
                  const Parity__Heartbeat *hb, int64_t now_us)
{
    s_online_t *o = s_online_find(j, public_key);
    if (!o)
        return;
    o->last_heard_us = now_us;
    if (o->confirm_by_us && hb && hb->state && hb->job_id &&
        strcmp(hb->state, "running") == 0 &&
        strcmp(hb->job_id, o->confirm_job) == 0) {
        o->confirm_by_us = 0;
        s_log(j, "job_confirmed", "job=%s host_id=%" PRId64 " (the agent "
              "still runs it on its new connection)", o->confirm_job,
              o->host_id);
    }
}

void
co_jobs_agent_offline(co_jobs_t *j, const char *public_key, int64_t now_us)
{
    s_online_t *o = s_online_find(j, public_key);
    int64_t host_id;
    char err[256];
    if (o) {
        host_id = o->host_id;
        *o = j->online[--j->n_online];
    } else if (s_host_id(j, public_key, &host_id, err, sizeof err) !=
               CO_JOBS_OK) {
        return;
    }
    if (j->collector) {
        /* Failed over: the collector it went to carries its job on. */
        char id[24];
        snprintf(id, sizeof id, "%" PRId64, host_id);
        const char *p[] = { id, j->collector };
        PGresult *r = s_run(j, &s_sql[S_AGENT_OFFLINE], p, err, sizeof err);
        bool moved = r && PQntuples(r) == 1;
        PQclear(r);
        if (moved) {
            s_log(j, "host_moved", "host_id=%s (held by another collector "
                  "now; its job goes on there)", id);
            return;
        }
    }
    s_mark_lost(j, host_id, NULL, "the agent went offline during the job",
                now_us);
}

/* Final state for an agent's JobStatus.state, NULL when not final. */
static const char *
s_final_of(const char *state)
{
    if (strcmp(state, "done") == 0)
        return "done";
    if (strcmp(state, "failed") == 0 || strcmp(state, "refused") == 0)
        return "failed";
    if (strcmp(state, "cancelled") == 0)
        return "cancelled";
    return NULL;
}

/* Add id to set (of at most CO_JOBS_STATUS_BATCH) unless it is there. */
static void
s_set_add(int64_t *set, size_t *n, int64_t id)
{
    for (size_t i = 0; i < *n; i++)
        if (set[i] == id)
            return;
    if (*n < CO_JOBS_STATUS_BATCH)
        set[(*n)++] = id;
}

/* A host's id: from the online table when it is there (no query). */
static int
s_host_of(co_jobs_t *j, const char *key, int64_t *id, char *err,
          size_t errlen)
{
    const s_online_t *o = s_online_find(j, key);
    if (o && o->host_id > 0) {
        *id = o->host_id;
        return CO_JOBS_OK;
    }
    return s_host_id(j, key, id, err, errlen);
}

int
co_jobs_status(co_jobs_t *j, const char *public_key,
               const Parity__JobStatus *st, int64_t now_us, char *err,
               size_t errlen)
{
    int64_t host_id;
    int rc = s_host_of(j, public_key, &host_id, err, errlen);
    if (rc != CO_JOBS_OK)
        return rc;
    const char *state = st->state ? st->state : "";
    const char *final = s_final_of(state);
    if (!final && strcmp(state, "running") != 0 &&
        strcmp(state, "queued") != 0) {
        pw_err(err, errlen, "job_status: unknown state \"%.40s\"", state);
        return CO_JOBS_REFUSED;
    }
    char host[24], now[24], round[16], rounds[16];
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(now, sizeof now, "%" PRId64, now_us);
    snprintf(round, sizeof round, "%u", st->round);
    snprintf(rounds, sizeof rounds, "%u", st->rounds);
    /* queued/running may still move, and lost to a final state (late
     * results); progress never revives a lost row: it may be a stale
     * message of a dead process, resent from its spool. The other final
     * states stay. A `done` waits while a run of the job on this host
     * has no RunEnd stored. The row as it was, the count of open runs
     * and the move: one round trip, since a job for 100 hosts brings
     * 200 statuses within seconds and the RunEnds queue behind them.
     * The move re-checks the state on the row it updates (another
     * collector may have moved it since the snapshot). */
    bool moves = strcmp(state, "queued") != 0;
    const char *p[] = { st->job_id ? st->job_id : "", host,
                        final ? final : "", moves ? (final ? final :
                        "running") : "", st->reason ? st->reason : "",
                        st->run_id ? st->run_id : "",
                        st->benchmark ? st->benchmark : "", round, rounds,
                        now, st->suite_digest ? st->suite_digest : "" };
    /* suite_digest: the agent's word for the file it runs wins over the
     * one its Hello listed when the job was offered. */
    PGresult *r = s_run(j, &s_sql[S_STATUS], p, err, errlen);
    if (!r)
        return CO_JOBS_FAIL;
    if (PQntuples(r) != 1) {
        PQclear(r);
        pw_err(err, errlen, "job_status: job \"%.40s\" was not given to this "
               "host", p[0]);
        return CO_JOBS_REFUSED;
    }
    char cur[16], job[24];
    snprintf(cur, sizeof cur, "%s", co_val(r, 0, co_col(r, "state")));
    snprintf(job, sizeof job, "%s", co_val(r, 0, co_col(r, "job")));
    long open = (long)co_val_i64(r, 0, co_col(r, "open"));
    bool moved = co_val_i64(r, 0, co_col(r, "moved")) > 0;
    PQclear(r);
    bool open_row = strcmp(cur, "queued") == 0 || strcmp(cur, "running") == 0;
    bool movable = open_row || (final && strcmp(cur, "lost") == 0);
    if (!movable || !moves)
        return CO_JOBS_OK;
    if (open > 0) {
        pw_err(err, errlen, "job_status done: %ld run(s) of job %.40s "
               "have no RunEnd stored yet", open, p[0]);
        return CO_JOBS_LATER;
    }
    if (!moved)
        return CO_JOBS_OK;   /* another collector moved it first */
    if (final) {
        s_log(j, "host_final", "job=%s host_id=%s state=%s", p[0], host,
              final);
        if (j->in_batch) {
            s_set_add(j->end_jobs, &j->n_end, strtoll(job, NULL, 10));
            s_set_add(j->free_hosts, &j->n_free, host_id);
        } else {
            s_check_end(j, job, now_us);
            s_dispatch(j, host_id, now_us);
        }
    }
    return CO_JOBS_OK;
}

int
co_jobs_status_begin(co_jobs_t *j, char *err, size_t errlen)
{
    j->n_end = j->n_free = 0;
    int rc = s_exec(j, "BEGIN", err, errlen);
    j->in_batch = rc == CO_JOBS_OK;
    return rc;
}

int
co_jobs_status_commit(co_jobs_t *j, int64_t now_us, char *err,
                      size_t errlen)
{
    if (!j->in_batch) {
        pw_err(err, errlen, "co_jobs_status_commit: no batch is open");
        return CO_JOBS_FAIL;
    }
    j->in_batch = false;
    /* COMMIT of a transaction a failed statement aborted answers
     * ROLLBACK, not an error: nothing of the batch was stored. */
    PGresult *r = s_run(j, &s_sql[S_STATUS_COMMIT], NULL, err, errlen);
    if (!r)
        return CO_JOBS_FAIL;
    bool rolled_back = strcmp(PQcmdStatus(r), "ROLLBACK") == 0;
    PQclear(r);
    if (rolled_back) {
        pw_err(err, errlen, "job statuses rolled back after a failed "
               "statement");
        return CO_JOBS_FAIL;
    }
    for (size_t i = 0; i < j->n_end; i++) {
        char job[24];
        snprintf(job, sizeof job, "%" PRId64, j->end_jobs[i]);
        s_check_end(j, job, now_us);
    }
    s_dispatch_many(j, j->free_hosts, j->n_free, now_us);
    j->n_end = j->n_free = 0;
    return CO_JOBS_OK;
}

void
co_jobs_run_end(co_jobs_t *j, const char *public_key,
                const Parity__RunEnd *re, int64_t now_us)
{
    if (re->status != PARITY__RUN_STATUS__INCOMPLETE || !re->run_id)
        return;
    int64_t host_id;
    char err[256];
    if (s_host_id(j, public_key, &host_id, err, sizeof err) != CO_JOBS_OK)
        return;
    char host[24];
    snprintf(host, sizeof host, "%" PRId64, host_id);
    const char *p[] = { re->run_id, host };
    PGresult *r = s_run(j, &s_sql[S_RUN_END], p, err, sizeof err);
    if (!r) {
        s_log(j, "db_error", "op=run_end error=\"%s\"", err);
        return;
    }
    if (PQntuples(r) == 1) {
        char job[24], reason[512];
        snprintf(job, sizeof job, "%s", co_val(r, 0, co_col(r, "id")));
        snprintf(reason, sizeof reason, "run %s ended incomplete: %s",
                 re->run_id, re->reason ? re->reason : "");
        s_mark_lost(j, host_id, job, reason, now_us);
        s_dispatch(j, host_id, now_us);
    }
    PQclear(r);
}

/* Running rows whose Hello found them and no Heartbeat confirmed in time
 * become lost; after the restart grace, so do running rows of hosts that
 * are not online at all. */
static void
s_check_running(co_jobs_t *j, int64_t now_us)
{
    for (size_t i = 0; i < j->n_online; i++) {
        s_online_t *o = &j->online[i];
        if (!o->confirm_by_us || now_us < o->confirm_by_us)
            continue;
        o->confirm_by_us = 0;
        s_mark_lost(j, o->host_id, o->confirm_job_id, "the agent connected "
                    "again and no longer runs the job (restarted?)", now_us);
        s_dispatch(j, o->host_id, now_us);
    }
    if (!j->started_us)
        j->started_us = now_us;
    if (now_us - j->started_us < CO_JOBS_RESTART_GRACE_US)
        return;
    /* Not live anywhere (no collector holds it, or the one that did
     * stopped beating) and silent for the grace too: an agent failing
     * over from a killed collector is still on its way. */
    char err[256], grace[24];
    snprintf(grace, sizeof grace, "%.3f", CO_JOBS_RESTART_GRACE_US / 1e6);
    const char *pg[] = { grace };
    PGresult *r = s_run(j, &s_sql[S_CHECK_RUNNING], pg, err, sizeof err);
    if (!r) {
        s_log(j, "db_error", "op=tick error=\"%s\"", err);
        return;
    }
    int i_host = co_col(r, "host_id");
    for (int i = 0; i < PQntuples(r) && i < CO_JOBREQ_MAX_HOSTS; i++) {
        int64_t id = co_val_i64(r, i, i_host);
        if (!s_online_key(j, id))
            s_mark_lost(j, id, NULL, "the agent went offline during the job "
                        "(or did not come back after a collector restart)",
                        now_us);
    }
    PQclear(r);
}

static void s_offer_idle(co_jobs_t *j, int64_t now_us);

/* This collector is alive: its hosts are live to every other collector
 * for ttl_ms from now (011_collectors.sql). */
static void
s_beat(co_jobs_t *j)
{
    if (!j->collector)
        return;
    char pid[16], ttl[16], err[256];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    snprintf(ttl, sizeof ttl, "%d", j->ttl_ms);
    const char *p[] = { j->collector, pid, ttl };
    PGresult *r = s_run(j, &s_sql[S_BEAT], p, err, sizeof err);
    if (!r)
        s_log(j, "db_error", "op=beat error=\"%s\"", err);
    PQclear(r);
}

void
co_jobs_tick(co_jobs_t *j, int64_t now_us)
{
    s_beat(j);
    char now[24], err[256];
    snprintf(now, sizeof now, "%" PRId64, now_us);
    const char *p[] = { now };
    s_check_running(j, now_us);
    PGresult *r = s_run(j, &s_sql[S_TICK_1], p, err, sizeof err);
    if (!r) {
        s_log(j, "db_error", "op=tick error=\"%s\"", err);
        return;
    }
    int i_uuid = co_col(r, "job_uuid");
    for (int i = 0; i < PQntuples(r); i++)
        s_log(j, "job_expired", "job=%s", co_val(r, i, i_uuid));
    PQclear(r);
    /* Every job with no open row ends (also ones missed while the
     * database was away). */
    r = s_run(j, &s_sql[S_TICK_2], p, err, sizeof err);
    if (!r) {
        s_log(j, "db_error", "op=tick error=\"%s\"", err);
        return;
    }
    i_uuid = co_col(r, "job_uuid");
    for (int i = 0; i < PQntuples(r); i++)
        s_log(j, "job_ended", "job=%s", co_val(r, i, i_uuid));
    PQclear(r);
    s_offer_idle(j, now_us);
}

/* Idle online hosts with queued work get it now. */
static void
s_offer_idle(co_jobs_t *j, int64_t now_us)
{
    char err[256];
    PGresult *r = s_run(j, &s_sql[S_OFFER_IDLE], NULL, err, sizeof err);
    if (!r)
        return;
    int64_t ids[256];
    size_t n = 0;
    int i_host = co_col(r, "host_id");
    for (int i = 0; i < PQntuples(r) && i < CO_JOBS_MAX_ONLINE; i++) {
        int64_t id = co_val_i64(r, i, i_host);
        if (!s_online_key(j, id))
            continue;
        ids[n++] = id;
        if (n == sizeof ids / sizeof ids[0]) {
            s_dispatch_many(j, ids, n, now_us);
            n = 0;
        }
    }
    PQclear(r);
    s_dispatch_many(j, ids, n, now_us);
}

/* ---- creating and cancelling ------------------------------------- */

/* The hosts the job goes to: their ids into *ids (caller frees; *n of
 * them, at least one), those picked but unable to run it into skipped.
 * CO_JOBS_OK, CO_JOBS_BADARGS (a named host cannot, no host can) or
 * CO_JOBS_FAIL, with err. */
static int
s_pick_hosts(co_jobs_t *j, const co_jobreq_t *c, json_t *skipped,
             int64_t **ids, size_t *n, char *err, size_t errlen)
{
    int rc = CO_JOBS_FAIL;
    json_t *named = co_jobreq_named(c);   /* name -> matched count */
    const char *ps[] = { c->suite };
    PGresult *r = NULL;
    *ids = NULL;
    *n = 0;
    if (!named)
        pw_err(err, errlen, "out of memory");
    else
        r = s_run(j, &s_sql[S_PICK_HOSTS], ps, err, errlen);
    int nh = r ? PQntuples(r) : 0;
    if (r && !(*ids = calloc((size_t)nh + 1, sizeof **ids)))
        pw_err(err, errlen, "out of memory");
    if (!*ids)
        goto done;
    int i_id = co_col(r, "id"), i_name = co_col(r, "name"),
        i_tags = co_col(r, "tags"), i_has = co_col(r, "has_suite"),
        i_benchmarks = co_col(r, "benchmarks"),
        i_revision = co_col(r, "revision");
    for (int i = 0; i < nh; i++) {
        const char *name = co_val(r, i, i_name);
        bool nm = json_object_get(named, name) != NULL;
        if (!co_jobreq_picks(c, named, name, co_val(r, i, i_tags)))
            continue;
        char why[CO_JOBREQ_WHY_MAX];
        bool has = co_val_bool(r, i, i_has);
        if (has && co_jobreq_against_ok(c, co_val(r, i, i_revision), why,
                                        sizeof why) != 0) {
            pw_err(err, errlen, "host \"%s\": %s", name, why);
            rc = CO_JOBS_BADARGS;
            goto done;
        }
        co_jobreq_cannot_run(c, has, co_val(r, i, i_benchmarks), why,
                             sizeof why);
        if (*why && nm && !c->all) {
            pw_err(err, errlen, "host \"%s\": %s", name, why);
            rc = CO_JOBS_BADARGS;
            goto done;
        }
        if (*why)
            json_array_append_new(skipped, json_pack("{s:s,s:s}", "host",
                                                     name, "reason", why));
        else
            (*ids)[(*n)++] = co_val_i64(r, i, i_id);
    }
    rc = co_jobreq_names_known(named, err, errlen) == 0 ? CO_JOBS_OK
                                                        : CO_JOBS_BADARGS;
    if (rc != CO_JOBS_OK)
        goto done;
    if (*n == 0) {
        const json_t *first = json_array_get(skipped, 0);
        if (first)
            pw_err(err, errlen, "no host can run suite \"%s\": %s %s "
                   "(%zu host%s skipped; parity hosts shows what each "
                   "listed)", c->suite,
                   json_string_value(json_object_get(first, "host")),
                   json_string_value(json_object_get(first, "reason")),
                   json_array_size(skipped),
                   json_array_size(skipped) == 1 ? "" : "s");
        else
            pw_err(err, errlen, "no host can run suite \"%s\": %s", c->suite,
                   nh == 0 ? "no agent has said Hello yet" :
                   "no host matches");
        rc = CO_JOBS_BADARGS;
    }
done:
    if (rc != CO_JOBS_OK) {
        free(*ids);
        *ids = NULL;
    }
    PQclear(r);
    json_decref(named);
    return rc;
}

/* The job's row and its hosts' rows in one transaction; uuid is the
 * new job's, job gets its row id. CO_JOBS_OK or CO_JOBS_FAIL (rolled
 * back) with err. */
static int
s_insert_job(co_jobs_t *j, const co_jobreq_t *c, const char *requested_by,
             const char *uuid, int64_t now_us, const int64_t *ids, size_t n,
             char *job, size_t joblen, char *err, size_t errlen)
{
    json_t *empty_obj = json_object(), *empty_arr = json_array();
    char *tags_txt = json_dumps(c->tags ? c->tags : empty_obj, JSON_COMPACT);
    char *vars_txt = json_dumps(c->vars ? c->vars : empty_obj, JSON_COMPACT);
    char *only_txt = json_dumps(c->only ? c->only : empty_arr, JSON_COMPACT);
    char *spec_txt = json_dumps(c->sel ? c->sel : empty_arr, JSON_COMPACT);
    char *against_txt = json_dumps(c->against ? c->against : empty_arr,
                                   JSON_COMPACT);
    json_decref(empty_obj);
    json_decref(empty_arr);
    int rc = CO_JOBS_FAIL;
    PGresult *r = NULL;
    pw_buf_t idt;
    pw_buf_init(&idt, S_IDS_TEXT_MAX);
    if (!tags_txt || !vars_txt || !only_txt || !spec_txt || !against_txt) {
        pw_err(err, errlen, "out of memory");
        goto done;
    }
    char now[24], runs[16], expires[24];
    snprintf(now, sizeof now, "%" PRId64, now_us);
    snprintf(runs, sizeof runs, "%" JSON_INTEGER_FORMAT,
             c->runs_auto ? (json_int_t)PW_RUNS_AUTO
                          : json_integer_value(c->runs));
    json_int_t exp_us = json_integer_value(c->expire);
    snprintf(expires, sizeof expires, "%" PRId64,
             exp_us > 0 ? now_us + (int64_t)exp_us : (int64_t)0);
    if ((rc = s_exec(j, "BEGIN", err, errlen)) != CO_JOBS_OK)
        goto done;
    rc = CO_JOBS_FAIL;
    const char *pj[] = { uuid, c->suite, vars_txt, runs, only_txt, tags_txt,
                         c->label ? json_string_value(c->label) : "",
                         spec_txt, requested_by, now, expires, against_txt };
    r = s_run(j, &s_sql[S_INSERT_JOB_1], pj, err, errlen);
    if (!r)
        goto rollback;
    snprintf(job, joblen, "%s", co_val(r, 0, co_col(r, "id")));
    PQclear(r);
    /* Every host's row in one statement: a job for 1,000 hosts must
     * not cost the writer 1,000 round trips. */
    s_ids_text(&idt, ids, n);
    const char *ph[] = { job, pw_buf_data(&idt), now };
    r = pw_buf_status(&idt) != PW_BUF_OK ? NULL :
        s_run(j, &s_sql[S_INSERT_JOB_2], ph, err, errlen);
    if (!r && pw_buf_status(&idt) != PW_BUF_OK)
        pw_err(err, errlen, "job hosts: %s",
               pw_buf_strerror(pw_buf_status(&idt)));
    if (!r)
        goto rollback;
    PQclear(r);
    r = NULL;
    /* Other collectors on the database offer it to their hosts at once
     * (co_jobs_poll); delivered at COMMIT, never before. */
    if (s_exec(j, "NOTIFY " CO_JOBS_CHANNEL ", 'job'", err, errlen)
        != CO_JOBS_OK)
        goto rollback;
    rc = s_exec(j, "COMMIT", err, errlen);
    goto done;
rollback:
    s_rollback(j);
done:
    PQclear(r);
    pw_buf_free(&idt);
    free(tags_txt);
    free(vars_txt);
    free(only_txt);
    free(spec_txt);
    free(against_txt);
    return rc;
}

/* The advice of docs/suites.md "Revision", once per suite, into
 * warnings: a suite that names no revision variable, whose new job
 * differs from its last other one in one variable's value alone, makes
 * a series per value, which history never compares. Advice only: a
 * failure here is logged and the job stands. */
static void
s_revision_advice(co_jobs_t *j, const co_jobreq_t *c, int64_t now_us,
                  json_t *warnings)
{
    char err[256], now[24], *vars = c->vars ? json_dumps(c->vars,
                                                         JSON_COMPACT) : NULL;
    const char *pp[] = { c->suite, vars ? vars : "{}" };
    PGresult *r = s_run(j, &s_sql[S_REVISION_PREV], pp, err, sizeof err);
    int i_vars = co_col(r, "vars");
    json_t *prev = r && PQntuples(r) == 1 && !co_val_null(r, 0, i_vars)
                   ? json_loads(co_val(r, 0, i_vars), 0, NULL) : NULL;
    const char *name = co_jobreq_revision_hint(c->vars, prev);
    PQclear(r);
    r = NULL;
    snprintf(now, sizeof now, "%" PRId64, now_us);
    const char *pw[] = { c->suite, now };
    if (name && (r = s_run(j, &s_sql[S_REVISION_WARNED], pw, err,
                           sizeof err)) && PQntuples(r) == 1) {
        char text[3 * CO_JOBREQ_MAX_TEXT + 512];
        snprintf(text, sizeof text, "suite \"%s\" names no revision "
                 "variable and its jobs differ only in %s (%s here, %s "
                 "before): each value of %s is a series of its own, which "
                 "history and regressions never compare; add \"revision: "
                 "%s\" to the suite (docs/suites.md \"Revision\")",
                 c->suite, name,
                 json_string_value(json_object_get(c->vars, name)),
                 json_string_value(json_object_get(prev, name)), name, name);
        json_array_append_new(warnings, json_string(text));
        s_log(j, "suite_revision", "%s", text);
    } else if (name && !r) {
        s_log(j, "suite_revision", "suite \"%s\": %s", c->suite, err);
    }
    PQclear(r);
    json_decref(prev);
    free(vars);
}

int
co_jobs_create(co_jobs_t *j, const char *requested_by, const json_t *args,
               int64_t now_us, json_t **reply, char *err, size_t errlen)
{
    co_jobreq_t c;
    *reply = NULL;
    if (co_jobreq_parse(args, &c, err, errlen) != 0)
        return CO_JOBS_BADARGS;
    int rc;
    json_t *hosts = json_array(), *skipped = json_array();
    PGresult *r = NULL;
    int64_t *ids = NULL;
    size_t n_ids = 0;
    char uuid[16], job[24];
    rc = CO_JOBS_FAIL;
    if (!hosts || !skipped) {
        pw_err(err, errlen, "out of memory");
        goto done;
    }
    if ((rc = s_pick_hosts(j, &c, skipped, &ids, &n_ids, err, errlen))
        != CO_JOBS_OK)
        goto done;
    co_jobreq_uuid(uuid, sizeof uuid);
    if ((rc = s_insert_job(j, &c, requested_by, uuid, now_us, ids, n_ids,
                           job, sizeof job, err, errlen)) != CO_JOBS_OK)
        goto done;
    s_log(j, "job_created", "job=%s suite=\"%s\" hosts=%zu", uuid, c.suite,
          n_ids);
    s_dispatch_many(j, ids, n_ids, now_us);

    const char *pr[] = { job };
    rc = CO_JOBS_FAIL;
    r = s_run(j, &s_sql[S_CREATE], pr, err, errlen);
    if (!r)
        goto done;
    int i_name = co_col(r, "name"), i_state = co_col(r, "state");
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(hosts, json_pack("{s:s,s:s}", "host",
                              co_val(r, i, i_name), "state",
                              co_val(r, i, i_state)));
    json_t *warnings = json_array();
    if (warnings)
        s_revision_advice(j, &c, now_us, warnings);
    *reply = json_pack("{s:s,s:O,s:O,s:o}", "job", uuid, "hosts", hosts,
                       "skipped", skipped, "warnings", warnings);
    rc = *reply ? CO_JOBS_OK : CO_JOBS_FAIL;
done:
    PQclear(r);
    free(ids);
    json_decref(hosts);
    json_decref(skipped);
    return rc;
}

/* JobCancel to the host when it is online here. */
static void
s_send_cancel(co_jobs_t *j, int64_t host_id, const char *job_uuid)
{
    const char *key = s_online_key(j, host_id);
    if (!key || !j->send)
        return;
    Parity__JobCancel jc;
    parity__job_cancel__init(&jc);
    jc.job_id = (char *)job_uuid;
    Parity__Envelope env;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_JOB_CANCEL, &jc);
    j->send(j->ctx, key, &env);
}

/* Another collector cancelled job_uuid: the hosts held here that had
 * been offered it get JobCancel, and their next job. */
static void
s_cancel_here(co_jobs_t *j, const char *job_uuid, int64_t now_us)
{
    char err[256];
    const char *p[] = { job_uuid };
    PGresult *r = s_run(j, &s_sql[S_CANCEL_HERE], p, err, sizeof err);
    if (!r) {
        s_log(j, "db_error", "op=cancel_notify error=\"%s\"", err);
        return;
    }
    int sent = 0, i_host = co_col(r, "host_id");
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t id = co_val_i64(r, i, i_host);
        if (!s_online_key(j, id))
            continue;
        s_send_cancel(j, id, job_uuid);
        s_dispatch(j, id, now_us);
        sent++;
    }
    PQclear(r);
    if (sent > 0)
        s_log(j, "job_cancelled", "job=%s hosts=%d (cancelled through "
              "another collector)", job_uuid, sent);
}

/* After a reconnect: the jobs cancelled in the last S_RESYNC_US, in case
 * their notification came while this connection was away. */
#define S_RESYNC_US (600LL * 1000000)
static void
s_resync(co_jobs_t *j, int64_t now_us)
{
    char since[24], err[256];
    snprintf(since, sizeof since, "%" PRId64, now_us - (int64_t)S_RESYNC_US);
    const char *p[] = { since };
    PGresult *r = s_run(j, &s_sql[S_RESYNC], p, err, sizeof err);
    if (!r)
        return;
    int i_uuid = co_col(r, "job_uuid");
    for (int i = 0; i < PQntuples(r); i++) {
        char uuid[64];
        snprintf(uuid, sizeof uuid, "%s", co_val(r, i, i_uuid));
        s_cancel_here(j, uuid, now_us);
    }
    PQclear(r);
}

void
co_jobs_poll(co_jobs_t *j, int64_t now_us)
{
    if (!j->listen || !co_conn_up(j->conn))
        return;      /* the tick reconnects */
    bool offer = false;
    if (j->generation != co_conn_generation(j->conn)) {
        /* Connected anew: notifications may have been missed. */
        j->generation = co_conn_generation(j->conn);
        offer = true;
        s_resync(j, now_us);
        if (!co_conn_up(j->conn))
            return;
    }
    /* Reads what the socket has, never waits for more. The statements a
     * notification makes may reconnect: the connection is read again
     * each time, and a new one (another session) ends the pass. */
    PGconn *pg = co_conn_raw(j->conn);
    if (!PQconsumeInput(pg)) {
        co_conn_check(j->conn);
        return;
    }
    unsigned gen = co_conn_generation(j->conn);
    int me = PQbackendPID(pg), seen = 0;
    PGnotify *n;
    while (co_conn_up(j->conn) && co_conn_generation(j->conn) == gen
           && (n = PQnotifies(co_conn_raw(j->conn))) != NULL) {
        /* Our own NOTIFYs come back too; what they asked is done. A
         * flood is cut at 1,000 per pass (the rest is read next pass). */
        if (n->be_pid != me && n->extra) {
            if (strcmp(n->extra, "job") == 0)
                offer = true;
            else if (strncmp(n->extra, "cancel ", 7) == 0 &&
                     strlen(n->extra + 7) < 64)
                s_cancel_here(j, n->extra + 7, now_us);
        }
        PQfreemem(n);
        if (++seen >= 1000)
            break;
    }
    if (offer)
        s_offer_idle(j, now_us);
}

int
co_jobs_cancel(co_jobs_t *j, const char *job_id, int64_t now_us,
               json_t **reply, char *err, size_t errlen)
{
    *reply = NULL;
    char now[24];
    snprintf(now, sizeof now, "%" PRId64, now_us);
    const char *pf[] = { job_id };
    PGresult *r = s_run(j, &s_sql[S_CANCEL_1], pf, err, errlen);
    if (!r)
        return CO_JOBS_FAIL;
    if (PQntuples(r) != 1) {
        PQclear(r);
        pw_err(err, errlen, "no job \"%.40s\" (parity jobs lists them)",
               job_id);
        return CO_JOBS_NOTFOUND;
    }
    char job[24], state[16];
    snprintf(job, sizeof job, "%s", co_val(r, 0, co_col(r, "id")));
    snprintf(state, sizeof state, "%s", co_val(r, 0, co_col(r, "state")));
    PQclear(r);
    if (strcmp(state, "active") != 0) {
        *reply = json_pack("{s:s,s:i,s:s}", "job", job_id, "cancelled", 0,
                           "state", state);
        return *reply ? CO_JOBS_OK : CO_JOBS_FAIL;
    }
    int rc;
    if ((rc = s_exec(j, "BEGIN", err, errlen)) != CO_JOBS_OK)
        return rc;
    const char *pc[] = { job, now };
    r = s_run(j, &s_sql[S_CANCEL_2], pc, err, errlen);
    if (!r)
        goto rollback;
    PGresult *u = s_run(j, &s_sql[S_CANCEL_3], pc, err, errlen);
    if (!u)
        goto rollback;
    PQclear(u);
    /* Hosts held by other collectors hear of it from them (co_jobs_poll);
     * delivered at COMMIT. */
    const char *pn[] = { job_id };
    u = s_run(j, &s_sql[S_CANCEL_4], pn, err, errlen);
    if (!u)
        goto rollback;
    PQclear(u);
    if (s_exec(j, "COMMIT", err, errlen) != CO_JOBS_OK) {
        PQclear(r);
        return CO_JOBS_FAIL;
    }
    int n = PQntuples(r), i_host = co_col(r, "host_id"),
        i_state = co_col(r, "state");
    for (int i = 0; i < n; i++) {
        if (strcmp(co_val(r, i, i_state), "running") != 0)
            continue;
        int64_t id = co_val_i64(r, i, i_host);
        s_send_cancel(j, id, job_id);
        s_dispatch(j, id, now_us);
    }
    PQclear(r);
    s_log(j, "job_cancelled", "job=%s hosts=%d", job_id, n);
    *reply = json_pack("{s:s,s:i,s:s}", "job", job_id, "cancelled", n,
                       "state", "cancelled");
    return *reply ? CO_JOBS_OK : CO_JOBS_FAIL;
rollback:
    PQclear(r);
    s_rollback(j);
    return CO_JOBS_FAIL;
}
