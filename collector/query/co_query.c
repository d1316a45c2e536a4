/* co_query.c -- see co_query.h. */
#include "co_query.h"

#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "co_baseline.h"
#include "co_bisect.h"
#include "co_changes.h"
#include "co_confirm.h"
#include "co_dirstamp.h"
#include "co_enroll.h"
#include "co_history.h"
#include "co_kinds.h"
#include "co_selftest.h"
#include "config.h"
#include "pw_clock.h"
#include "pw_err.h"
#include "pw_json.h"
#include "pw_key.h"
#include "pw_results.h"
#include "vd_fleet.h"
#include "vd_metric.h"
#include "vd_verdict.h"

/* Most jobs `jobs` lists, and most rows a `verdicts` answer reads. */
#define S_JOBS_LIMIT_MAX 1000
#define S_VERDICT_ROWS_MAX 100000
/* Longest error line in a Reply. */
#define S_ERR_MAX 512

struct co_query {
    co_jobs_t *jobs;
    co_conn_t *conn;               /* jobs' connection */
    /* --query-db: the read-only commands' connection (NULL: conn), and
     * the one the request being handled uses. */
    co_conn_t *read;
    co_conn_t *cur;
    co_keys_t *keys;               /* co_enroll's decisions; may be NULL */
    int floor_window;
    double parity;                 /* baseline's verdicts */
    char (*admins)[CO_JOBS_KEY_LEN + 1];   /* [CO_QUERY_MAX_ADMINS] */
    size_t n_admins;
    char admin_dir[4096];          /* "" until co_query_load_admins */
    co_dirstamp_t admin_stamp;     /* when admin_dir is read again */
};

co_query_t *
co_query_new(co_jobs_t *jobs, int floor_window, co_keys_t *keys)
{
    co_query_t *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->admins = calloc(CO_QUERY_MAX_ADMINS, sizeof *q->admins);
    if (!q->admins) {
        free(q);
        return NULL;
    }
    q->jobs = jobs;
    q->conn = co_jobs_conn(jobs);
    q->cur = q->conn;
    q->keys = keys;
    q->floor_window = floor_window > 0 ? floor_window : 1000;
    q->parity = VD_DEFAULT_PARITY;
    return q;
}

void
co_query_destroy(co_query_t **qp)
{
    if (!qp || !*qp)
        return;
    free((*qp)->admins);
    free(*qp);
    *qp = NULL;
}

int
co_query_load_admins(co_query_t *q, const char *dir, char *err,
                     size_t errlen)
{
    struct stat st;
    DIR *d = opendir(dir);
    if (!d || fstat(dirfd(d), &st) != 0) {
        pw_err(err, errlen, "opendir %s: %s", dir, strerror(errno));
        if (d)
            closedir(d);
        return -1;
    }
    if (dir != q->admin_dir)
        snprintf(q->admin_dir, sizeof q->admin_dir, "%s", dir);
    struct timespec newest = st.st_mtim;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' ||
            (len > 7 && strcmp(e->d_name + len - 7, "_secret") == 0))
            continue;
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >=
            (int)sizeof path)
            continue;
        struct stat fst;
        if (stat(path, &fst) == 0)
            co_dirstamp_later(&newest, &fst.st_mtim);
        /* zcert_load would read the _secret file beside a public one;
         * only the public key matters here and either file has it. */
        zcert_t *c = zcert_load(path);
        if (!c)
            continue;
        const char *k = zcert_public_txt(c);
        if (k && strlen(k) == CO_JOBS_KEY_LEN && n < CO_QUERY_MAX_ADMINS)
            snprintf(q->admins[n++], CO_JOBS_KEY_LEN + 1, "%s", k);
        zcert_destroy(&c);
    }
    closedir(d);
    co_dirstamp_note(&q->admin_stamp, &st.st_mtim, &newest,
                     pw_clock_mono_ms(), pw_clock_unix_us());
    q->n_admins = n;
    return (int)n;
}

bool
co_query_is_admin(const co_query_t *q, const char *key)
{
    for (size_t i = 0; key && i < q->n_admins; i++)
        if (strcmp(q->admins[i], key) == 0)
            return true;
    return false;
}

size_t
co_query_admin_count(const co_query_t *q)
{
    return q->n_admins;
}

const char *
co_query_admin_key(const co_query_t *q, size_t i)
{
    return i < q->n_admins ? q->admins[i] : NULL;
}

static const char *const s_commands[] = {
    "hosts", "run", "job", "jobs", "cancel", "verdicts", "show",
};

bool
co_query_handles(const char *command)
{
    for (size_t i = 0; command && i < sizeof s_commands / sizeof *s_commands;
         i++)
        if (strcmp(command, s_commands[i]) == 0)
            return true;
    /* history, regressions, report; series, ack, unack; pending,
     * approve, reject, revoke */
    return co_history_handles(command) || co_changes_handles(command)
        || co_enroll_handles(command) || co_baseline_handles(command)
        || co_bisect_handles(command) || co_confirm_handles(command);
}

void
co_query_reply_clear(Parity__Reply *reply)
{
    if (reply->body_json != protobuf_c_empty_string)
        free(reply->body_json);
    if (reply->error != protobuf_c_empty_string)
        free(reply->error);
    reply->body_json = (char *)protobuf_c_empty_string;
    reply->error = (char *)protobuf_c_empty_string;
}

/* ---- small helpers ------------------------------------------------ */

typedef struct {
    int status;
    char err[S_ERR_MAX];
} s_res_t;

/* One statement through co_reply_run, its status and error line landing
 * in res. */
static PGresult *
s_q(co_query_t *q, s_res_t *res, const co_stmt_t *st, const char *const *p)
{
    co_reply_t c = co_reply_begin(q->cur, q->jobs, res->err, sizeof res->err);
    PGresult *r = co_reply_run(&c, st, p);
    res->status = c.status;
    return r;
}

/* ---- hosts -------------------------------------------------------- */

/* Names listed in a host's same_machine, at most (a string for the SQL):
 * agents in containers share their machine's boot id, and a list of
 * every other one for every host grows as the square of them (a few
 * thousand outgrew the 4 MiB frame); same_machine_count has them all. */
#define S_SAME_MACHINE_MAX "16"

static const co_stmt_t s_st_hosts = { "query.hosts",
    "SELECT h.id, h.name, h.public_key, "
    "(extract(epoch FROM h.last_seen) * 1000000)::bigint AS "
    "last_seen_us, h.agent_version, h.tags::text AS tags, "
    "(SELECT e.environment_json FROM environments e WHERE "
    " e.host_id = h.id ORDER BY e.id DESC LIMIT 1) AS env, "
    "(SELECT max(c.taken_at_us) FROM calibrations c WHERE "
    " c.host_id = h.id) AS calibrated_at_us, "
    "(SELECT COALESCE(json_agg(s.name ORDER BY s.name), '[]') FROM "
    " host_suites s WHERE s.host_id = h.id)::text AS suites, "
    /* Live: online, and held by a collector that beats (a host of
     * another collector on this database counts; 011). */
    "(SELECT l.live FROM host_liveness l WHERE l.host_id = h.id) AS "
    "live, COALESCE(h.floor_us, $1::float8) AS floor_us, "
    "COALESCE(h.floor_is_default, true) AS floor_default, "
    "COALESCE(h.floor_samples, 0) AS floor_samples, h.boot_id, "
    "(SELECT COALESCE(json_agg(o.name ORDER BY o.name), '[]') "
    " FROM (SELECT o.name FROM hosts o WHERE h.boot_id <> '' AND "
    " o.boot_id = h.boot_id AND o.id <> h.id ORDER BY o.name LIMIT "
    S_SAME_MACHINE_MAX ") o)::text AS same_machine, "
    /* No host_keys row: approved by a file of --allow. */
    "COALESCE((SELECT k.state FROM host_keys k WHERE "
    " k.public_key = h.public_key), 'approved') AS key_state, "
    "COALESCE(h.collector, '') AS collector, "
    "(SELECT COALESCE(json_object_agg(s.name, s.digest ORDER BY s.name), "
    " '{}') FROM host_suites s WHERE s.host_id = h.id)::text AS "
    "suite_digests, " CO_SELFTEST_SQL("h.id") " AS selftest, "
    "(SELECT count(*) FROM hosts o WHERE h.boot_id <> '' AND "
    " o.boot_id = h.boot_id AND o.id <> h.id) AS same_machine_count, "
    /* What the floor pooled (017). */
    "COALESCE(h.floor_quiet, false) AS floor_quiet, h.floor_oldest_us, "
    "h.floor_newest_us, "
    /* The other metrics' floors (025). */
    "(SELECT COALESCE(json_object_agg(f.metric, json_build_object("
    " 'floor', f.floor, 'default', f.is_default, 'samples', f.samples, "
    " 'resolution', f.resolution, 'source', f.source) ORDER BY "
    " f.metric), '{}') FROM host_floors f WHERE f.host_id = h.id)::text "
    "AS metric_floors FROM hosts h ORDER BY h.name, h.id",
    1, PGRES_TUPLES_OK, false };

/* One query for every host: the floor is the one kept on the host's row
 * (co_db writes it at each Calibration and RunEnd, 006), and online and
 * last_seen are the database's, which the collector keeps current. */
static json_t *
s_hosts(co_query_t *q, const json_t *args, s_res_t *res)
{
    (void)args;
    json_t *out = json_array();
    char dflt[32];
    snprintf(dflt, sizeof dflt, "%.17g", VD_DEFAULT_FLOOR_US);
    const char *p[] = { dflt };
    PGresult *r = s_q(q, res, &s_st_hosts, p);
    if (!r || !out)
        goto fail;
    enum { H_NAME, H_KEY, H_SEEN, H_VERSION, H_TAGS, H_ENV, H_CAL, H_SUITES,
           H_LIVE, H_FLOOR, H_DEFAULT, H_SAMPLES, H_BOOT, H_SAME, H_STATE,
           H_COLLECTOR, H_DIGESTS, H_SELFTEST, H_SAME_N, H_QUIET, H_OLDEST,
           H_NEWEST, H_METRIC_FLOORS, H_COUNT };
    static const char *const names[H_COUNT] = {
        "name", "public_key", "last_seen_us", "agent_version", "tags", "env",
        "calibrated_at_us", "suites", "live", "floor_us", "floor_default",
        "floor_samples", "boot_id", "same_machine", "key_state",
        "collector", "suite_digests", "selftest", "same_machine_count",
        "floor_quiet", "floor_oldest_us", "floor_newest_us",
        "metric_floors" };
    int c[H_COUNT];
    co_cols(r, names, H_COUNT, c);
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *env = co_reply_json_col(r, i, c[H_ENV]);
        json_t *warnings = json_object_get(env, "warnings");
        warnings = json_is_array(warnings) ? json_copy(warnings) :
                   json_array();
        json_t *selftest = co_selftest_json(co_val(r, i, c[H_SELFTEST]));
        if (co_selftest_warn(warnings, selftest) != 0) {
            json_decref(selftest);
            json_decref(warnings);
            json_decref(env);
            goto fail;
        }
        json_t *h = json_pack("{s:s,s:s,s:b,s:I,s:s,s:o,s:f,s:b,s:I,s:o,"
                              "s:o,s:o,s:o,s:o,s:o,s:o,s:s,s:o}",
            "name", co_val(r, i, c[H_NAME]),
            "public_key", co_val(r, i, c[H_KEY]),
            "online", co_val_bool(r, i, c[H_LIVE]),
            "last_seen_us", co_reply_int(r, i, c[H_SEEN]),
            "agent_version", co_val(r, i, c[H_VERSION]),
            "tags", co_reply_json_col(r, i, c[H_TAGS]),
            "floor_us", co_val_f64(r, i, c[H_FLOOR]),
            "floor_default", co_val_bool(r, i, c[H_DEFAULT]),
            "floor_samples", co_reply_int(r, i, c[H_SAMPLES]),
            "calibrated_at_us", co_reply_int_or_null(r, i, c[H_CAL]),
            "cpu_model", co_reply_env_value(env, "cpu_model"),
            "kernel", co_reply_env_value(env, "kernel"),
            "arch", co_reply_env_value(env, "arch"),
            "logical_cpus", co_reply_env_value(env, "logical_cpus"),
            "warnings", warnings,
            "suites", co_reply_json_col(r, i, c[H_SUITES]),
            "boot_id", co_val(r, i, c[H_BOOT]),
            "same_machine", co_reply_json_col(r, i, c[H_SAME]));
        json_decref(env);
        if (!h) {
            json_decref(selftest);
            goto fail;
        }
        char fp[PW_KEY_FP_SIZE];
        pw_key_fingerprint(co_val(r, i, c[H_KEY]), fp);
        json_object_set_new(h, "fingerprint", json_string(fp));
        json_object_set_new(h, "collector",
                            json_string(co_val(r, i, c[H_COLLECTOR])));
        json_object_set_new(h, "key_state",
                            json_string(co_val(r, i, c[H_STATE])));
        json_object_set_new(h, "suite_digests",
                            co_reply_json_col(r, i, c[H_DIGESTS]));
        json_object_set_new(h, "selftest", selftest);
        json_object_set_new(h, "same_machine_count", json_integer(
            co_reply_int(r, i, c[H_SAME_N])));
        json_object_set_new(h, "floor_quiet", json_boolean(
            co_val_bool(r, i, c[H_QUIET])));
        json_object_set_new(h, "floor_oldest_us",
                            co_reply_int_or_null(r, i, c[H_OLDEST]));
        json_object_set_new(h, "floor_newest_us",
                            co_reply_int_or_null(r, i, c[H_NEWEST]));
        json_object_set_new(h, "metric_floors",
                            co_reply_json_col(r, i, c[H_METRIC_FLOORS]));
        json_array_append_new(out, h);
    }
    PQclear(r);
    return json_pack("{s:o}", "hosts", out);
fail:
    PQclear(r);
    json_decref(out);
    if (res->status == CO_REPLY_OK) {
        res->status = CO_REPLY_UNAVAILABLE;
        pw_err(res->err, sizeof res->err, "out of memory");
    }
    return NULL;
}

/* ---- jobs --------------------------------------------------------- */

static const co_stmt_t s_st_job_named = { "query.job_named",
    "SELECT job_uuid FROM jobs WHERE "
    "job_uuid = $1",
    1, PGRES_TUPLES_OK, false };

static const co_stmt_t s_st_job_latest = { "query.job_latest",
    "SELECT job_uuid FROM jobs ORDER BY "
    "created_at_us DESC, id DESC LIMIT 1",
    0, PGRES_TUPLES_OK, false };

/* The job's id named by args {"job": ID}, or the newest job with
 * {"latest": true} or no "job". Fills id; false with res set. */
static bool
s_job_arg(co_query_t *q, const json_t *args, char *id, size_t len,
          s_res_t *res)
{
    const char *job = json_string_value(json_object_get(args, "job"));
    if (job) {
        const char *p[] = { job };
        PGresult *r = s_q(q, res, &s_st_job_named, p);
        if (!r)
            return false;
        bool found = PQntuples(r) == 1;
        PQclear(r);
        if (!found) {
            res->status = CO_REPLY_NOTFOUND;
            pw_err(res->err, sizeof res->err, "no job \"%.40s\" (parity jobs "
                   "lists them)", job);
            return false;
        }
        snprintf(id, len, "%s", job);
        return true;
    }
    if (json_object_get(args, "job")) {
        res->status = CO_REPLY_BADARGS;
        pw_err(res->err, sizeof res->err, "\"job\" must be a string");
        return false;
    }
    const json_t *latest = json_object_get(args, "latest");
    if (latest && !json_is_true(latest)) {
        res->status = CO_REPLY_BADARGS;
        pw_err(res->err, sizeof res->err, "\"latest\" must be true (or "
               "give \"job\")");
        return false;
    }
    PGresult *r = s_q(q, res, &s_st_job_latest, NULL);
    if (!r)
        return false;
    if (PQntuples(r) != 1) {
        PQclear(r);
        res->status = CO_REPLY_NOTFOUND;
        pw_err(res->err, sizeof res->err, "no job yet (parity run starts "
               "one)");
        return false;
    }
    snprintf(id, len, "%s", co_val(r, 0, co_col(r, "job_uuid")));
    PQclear(r);
    return true;
}

static const co_stmt_t s_st_job = { "query.job",
    "SELECT job_uuid, suite, state, label, tags::text AS tags, "
    "vars::text AS vars, runs, array_to_json(only_benchmarks)::text AS "
    "only_benchmarks, created_at_us, expires_at_us, ended_at_us, "
    "hosts_spec FROM jobs WHERE job_uuid = $1",
    1, PGRES_TUPLES_OK, false };

static const co_stmt_t s_st_job_hosts = { "query.job_hosts",
    "SELECT h.name, jh.state, jh.reason, jh.run_id, jh.benchmark, "
    "jh.round, jh.rounds, jh.updated_at_us, "
    "(SELECT count(*) FROM runs r WHERE r.job_id = j.job_uuid AND "
    " r.host_id = h.id AND r.status IS NOT NULL) AS runs_ended, "
    /* Progress from what is stored: the latest run's benchmark and
     * its measured rounds so far (batches arrive every second). */
    "(SELECT json_build_object('benchmark', b.name, 'run_id', "
    "  r.run_uuid, 'rounds', r.runs, 'round', COALESCE((SELECT "
    "  max(s.round) + 1 FROM samples s WHERE s.run = r.id AND "
    "  s.kind = " CO_SQL_MEASURED "), 0)) FROM runs r JOIN benchmarks b ON "
    "  b.id = r.benchmark_id WHERE r.job_id = j.job_uuid AND "
    "  r.host_id = h.id ORDER BY r.id DESC LIMIT 1)::text AS progress, "
    "(SELECT CASE WHEN cardinality(j.only_benchmarks) > 0 THEN "
    "  cardinality(j.only_benchmarks) ELSE cardinality(s.benchmarks) "
    "  END FROM host_suites s WHERE s.host_id = h.id AND "
    "  s.name = j.suite) AS benchmarks, (SELECT l.live FROM "
    "  host_liveness l WHERE l.host_id = h.id) AS live "
    "FROM job_hosts jh JOIN jobs j ON j.id = jh.job JOIN hosts h ON "
    "h.id = jh.host_id WHERE j.job_uuid = $1 ORDER BY h.name, h.id",
    1, PGRES_TUPLES_OK, false };

static const co_stmt_t s_st_job_runs = { "query.job_runs",
    "SELECT r.run_uuid AS run_id, h.name AS host, b.name AS benchmark, "
    "COALESCE(r.status, 'running') AS status, r.started_at_us, "
    "r.ended_at_us FROM runs r JOIN hosts h ON "
    "h.id = r.host_id JOIN benchmarks b ON b.id = r.benchmark_id WHERE "
    "r.job_id = $1 ORDER BY h.name, r.id",
    1, PGRES_TUPLES_OK, false };

static json_t *
s_job(co_query_t *q, const json_t *args, s_res_t *res)
{
    char id[64];
    if (!json_object_get(args, "job")) {
        res->status = CO_REPLY_BADARGS;
        pw_err(res->err, sizeof res->err, "\"job\" (a job id) is required");
        return NULL;
    }
    if (!s_job_arg(q, args, id, sizeof id, res))
        return NULL;
    const char *p[] = { id };
    json_t *hosts = json_array(), *runs = json_array(), *job = NULL;
    PGresult *r = s_q(q, res, &s_st_job, p);
    if (!r || PQntuples(r) != 1)
        goto fail;
    job = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:I,s:o,s:I,s:I,s:o,s:o}",
        "job", co_val(r, 0, co_col(r, "job_uuid")),
        "suite", co_val(r, 0, co_col(r, "suite")),
        "state", co_val(r, 0, co_col(r, "state")),
        "label", co_val(r, 0, co_col(r, "label")),
        "tags", co_reply_json_col(r, 0, co_col(r, "tags")),
        "vars", co_reply_json_col(r, 0, co_col(r, "vars")),
        "runs", co_reply_int(r, 0, co_col(r, "runs")),
        "only", co_reply_json_col(r, 0, co_col(r, "only_benchmarks")),
        "created_at_us", co_reply_int(r, 0, co_col(r, "created_at_us")),
        "expires_at_us", co_reply_int(r, 0, co_col(r, "expires_at_us")),
        "ended_at_us", co_reply_int_or_null(r, 0, co_col(r, "ended_at_us")),
        "hosts_spec", co_reply_json_col(r, 0, co_col(r, "hosts_spec")));
    PQclear(r);
    r = s_q(q, res, &s_st_job_hosts, p);
    if (!r || !job)
        goto fail;
    enum { J_NAME, J_STATE, J_REASON, J_RUN, J_BENCH, J_ROUND, J_ROUNDS,
           J_UPDATED, J_ENDED, J_PROGRESS, J_BENCHMARKS, J_LIVE, J_COUNT };
    static const char *const names[J_COUNT] = {
        "name", "state", "reason", "run_id", "benchmark", "round", "rounds",
        "updated_at_us", "runs_ended", "progress", "benchmarks", "live" };
    int c[J_COUNT];
    co_cols(r, names, J_COUNT, c);
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(hosts, json_pack(
            "{s:s,s:s,s:b,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:o,s:o}",
            "host", co_val(r, i, c[J_NAME]),
            "state", co_val(r, i, c[J_STATE]),
            "online", co_val_bool(r, i, c[J_LIVE]),
            "reason", co_val(r, i, c[J_REASON]),
            "run_id", co_val(r, i, c[J_RUN]),
            "benchmark", co_val(r, i, c[J_BENCH]),
            "round", co_reply_int(r, i, c[J_ROUND]),
            "rounds", co_reply_int(r, i, c[J_ROUNDS]),
            "updated_at_us", co_reply_int(r, i, c[J_UPDATED]),
            "runs_ended", co_reply_int(r, i, c[J_ENDED]),
            "progress", co_reply_json_col(r, i, c[J_PROGRESS]),
            "benchmarks", co_reply_int_or_null(r, i, c[J_BENCHMARKS])));
    PQclear(r);
    r = s_q(q, res, &s_st_job_runs, p);
    if (!r)
        goto fail;
    static const co_reply_col_t run_cols[] = {
        { "run_id", CO_REPLY_COL_STR }, { "host", CO_REPLY_COL_STR },
        { "benchmark", CO_REPLY_COL_STR }, { "status", CO_REPLY_COL_STR },
        { "started_at_us", CO_REPLY_COL_INT },
        { "ended_at_us", CO_REPLY_COL_INT_NULL },
    };
    json_decref(runs);
    runs = co_reply_rows(r, run_cols, sizeof run_cols / sizeof run_cols[0]);
    PQclear(r);
    json_object_set_new(job, "hosts", hosts);
    json_object_set_new(job, "run_list", runs);
    return job;
fail:
    PQclear(r);
    json_decref(hosts);
    json_decref(runs);
    json_decref(job);
    if (res->status == CO_REPLY_OK) {
        res->status = CO_REPLY_UNAVAILABLE;
        pw_err(res->err, sizeof res->err, "out of memory");
    }
    return NULL;
}

static const co_stmt_t s_st_jobs = { "query.jobs",
    "SELECT j.job_uuid AS job, j.suite, j.state, j.label, j.tags::text "
    "AS tags, j.created_at_us, j.ended_at_us, "
    "(SELECT COALESCE(json_object_agg(s.state, s.n ORDER BY s.state), "
    " '{}') FROM (SELECT state, count(*) AS n FROM job_hosts WHERE "
    " job = j.id GROUP BY state) s)::text AS hosts "
    "FROM jobs j WHERE $1 = 'f' OR j.state = 'active' "
    "ORDER BY j.created_at_us DESC, j.id DESC LIMIT $2::int",
    2, PGRES_TUPLES_OK, false };

static json_t *
s_jobs(co_query_t *q, const json_t *args, s_res_t *res)
{
    const json_t *jl = json_object_get(args, "limit");
    const json_t *ja = json_object_get(args, "active");
    json_int_t limit = json_is_integer(jl) ? json_integer_value(jl) : 50;
    if (ja && !json_is_boolean(ja)) {
        res->status = CO_REPLY_BADARGS;
        pw_err(res->err, sizeof res->err, "\"active\" must be true or false");
        return NULL;
    }
    if ((jl && !json_is_integer(jl)) || limit < 1 ||
        limit > S_JOBS_LIMIT_MAX) {
        res->status = CO_REPLY_BADARGS;
        pw_err(res->err, sizeof res->err, "\"limit\" must be 1..%d",
               S_JOBS_LIMIT_MAX);
        return NULL;
    }
    char lim[24];
    snprintf(lim, sizeof lim, "%" JSON_INTEGER_FORMAT, limit);
    const char *p[] = { json_is_true(json_object_get(args, "active")) ?
                        "t" : "f", lim };
    PGresult *r = s_q(q, res, &s_st_jobs, p);
    if (!r)
        return NULL;
    static const co_reply_col_t cols[] = {
        { "job", CO_REPLY_COL_STR }, { "suite", CO_REPLY_COL_STR },
        { "state", CO_REPLY_COL_STR }, { "label", CO_REPLY_COL_STR },
        { "tags", CO_REPLY_COL_JSON }, { "created_at_us", CO_REPLY_COL_INT },
        { "ended_at_us", CO_REPLY_COL_INT_NULL },
        { "hosts", CO_REPLY_COL_JSON },
    };
    json_t *out = co_reply_rows(r, cols, sizeof cols / sizeof cols[0]);
    PQclear(r);
    return json_pack("{s:o}", "jobs", out ? out : json_array());
}

/* ---- verdicts ----------------------------------------------------- */

/* Close one comparison: the vd_fleet summary of its hosts' verdicts. */
static int
s_summarize(json_t *cmp)
{
    json_t *s = co_reply_summary(json_object_get(cmp, "hosts"));
    if (!s)
        return -1;
    json_object_set_new(cmp, "summary", s);
    return 0;
}

/* Which version of the suite each host ran: "suite_digests" in out,
 * [{"digest", "hosts": [...]}], the digest most hosts ran first (a tie:
 * the smaller digest), and "suite_differs" on each host entry whose
 * known digest is not that first one. Hosts with no digest ('' : the
 * agent never said) are in no group and never flagged. */
static int
s_suite_digests(json_t *out, json_t *hosts)
{
    json_t *groups = json_object(), *list = json_array();
    size_t i;
    json_t *h;
    if (!groups || !list)
        goto fail;
    json_array_foreach(hosts, i, h) {
        const char *d = json_string_value(json_object_get(h,
                                                          "suite_digest"));
        if (!d || !*d)
            continue;
        json_t *g = json_object_get(groups, d);
        if (!g) {
            g = json_pack("{s:s,s:[]}", "digest", d, "hosts");
            if (!g || json_object_set_new(groups, d, g) != 0
                || json_array_append(list, g) != 0)
                goto fail;
        }
        json_array_append_new(json_object_get(g, "hosts"),
                              json_incref(json_object_get(h, "host")));
    }
    /* Most hosts first; a tie: the smaller digest (a stable answer). */
    size_t n = json_array_size(list);
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0; b--) {
            json_t *x = json_array_get(list, b - 1), *y = json_array_get(list,
                                                                         b);
            size_t nx = json_array_size(json_object_get(x, "hosts"));
            size_t ny = json_array_size(json_object_get(y, "hosts"));
            if (ny < nx || (ny == nx && strcmp(json_string_value(
                json_object_get(y, "digest")), json_string_value(
                json_object_get(x, "digest"))) > 0))
                break;
            json_incref(x);
            json_array_set(list, b - 1, y);
            json_array_set_new(list, b, x);
        }
    const char *first = n ? json_string_value(json_object_get(
        json_array_get(list, 0), "digest")) : "";
    json_array_foreach(hosts, i, h) {
        const char *d = json_string_value(json_object_get(h,
                                                          "suite_digest"));
        json_object_set_new(h, "suite_differs", json_boolean(
            d && *d && strcmp(d, first) != 0));
    }
    json_decref(groups);
    return json_object_set_new(out, "suite_digests", list);
fail:
    json_decref(groups);
    json_decref(list);
    return -1;
}

static const co_stmt_t s_st_verdicts_hosts = { "query.verdicts_hosts",
    "SELECT h.name AS host, jh.state, jh.reason, j.suite, j.state AS "
    "job_state, j.tags::text AS tags, j.label, jh.suite_digest, "
    CO_SELFTEST_SQL("h.id") " AS selftest, j.vars::text AS vars, "
    "j.against::text AS against FROM "
    "job_hosts jh JOIN jobs j ON j.id = jh.job JOIN hosts h ON "
    "h.id = jh.host_id WHERE "
    "j.job_uuid = $1 ORDER BY h.name, h.id",
    1, PGRES_TUPLES_OK, false };

static const co_stmt_t s_st_verdicts_rows = { "query.verdicts_rows",
    "SELECT b.name AS benchmark, sa.name AS subject, v.other_name, "
    "h.name AS host, r.run_uuid, v.verdict_json, v.error, r.status, "
    "f.n_samples AS pool_runs, f.quiet AS pool_quiet, f.oldest_us AS "
    "pool_oldest_us, f.newest_us AS pool_newest_us, oa.instance, "
    "r.revision, v.metric, r.metrics @> ARRAY[v.metric] AS tracked "
    "FROM runs r JOIN benchmarks b ON b.id = r.benchmark_id "
    "JOIN hosts h ON h.id = r.host_id JOIN verdicts v ON v.run = r.id "
    "JOIN arms sa ON sa.run = r.id AND sa.idx = v.subject_arm "
    "LEFT JOIN arms oa ON oa.run = r.id AND oa.idx = v.other_arm "
    "LEFT JOIN floors f ON f.run = r.id AND v.metric = 'wall' "
    "WHERE r.job_id = $1 AND ($3 = 'all' OR v.metric = $3) "
    "ORDER BY min(r.id) OVER (PARTITION BY b.name), b.name, "
    "array_position(ARRAY['wall', 'cpu', 'peak_rss'], v.metric), "
    "v.other_arm, h.name, h.id, r.id LIMIT $2::int",
    3, PGRES_TUPLES_OK, false };

static json_t *
s_verdicts(co_query_t *q, const json_t *args, s_res_t *res)
{
    char id[64];
    const json_t *mj = json_object_get(args, "metric");
    const char *metric = mj ? json_string_value(mj) : "wall";
    vd_metric_t m;
    if (!metric || (strcmp(metric, "all") != 0 &&
                    vd_metric_parse(metric, &m) != 0)) {
        res->status = CO_REPLY_BADARGS;
        pw_err(res->err, sizeof res->err, "\"metric\" must be wall, cpu, "
               "peak_rss or all");
        return NULL;
    }
    if (!s_job_arg(q, args, id, sizeof id, res))
        return NULL;
    const char *p[] = { id };
    json_t *cmps = json_array(), *hosts = json_array(), *cur = NULL;
    json_t *out = NULL;
    PGresult *r = s_q(q, res, &s_st_verdicts_hosts, p);
    if (!r || !cmps || !hosts)
        goto fail;
    bool any = PQntuples(r) > 0;
    out = json_pack("{s:s,s:s,s:s,s:o,s:s,s:o,s:o}", "job", id,
                    "suite", co_val(r, 0, co_col(r, "suite")),
                    "state", co_val(r, 0, co_col(r, "job_state")),
                    "tags", any ? co_reply_json_col(r, 0, co_col(r, "tags"))
                    : json_object(),
                    "label", co_val(r, 0, co_col(r, "label")),
                    "vars", any ? co_reply_json_col(r, 0, co_col(r, "vars"))
                    : json_object(),
                    "against", any ? co_reply_json_col(r, 0, co_col(
                    r, "against")) : json_array());
    /* The variable the job's --against values are of (one, co_jobreq). */
    const char *against_name = json_string_value(json_object_get(
        json_array_get(json_object_get(out, "against"), 0), "name"));
    int i_host = co_col(r, "host"), i_state = co_col(r, "state"),
        i_reason = co_col(r, "reason"), i_digest = co_col(r, "suite_digest"),
        i_selftest = co_col(r, "selftest");
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(hosts, json_pack("{s:s,s:s,s:s,s:s,s:o}",
            "host", co_val(r, i, i_host), "state", co_val(r, i, i_state),
            "reason", co_val(r, i, i_reason), "suite_digest",
            co_val(r, i, i_digest),
            "selftest", co_selftest_json(co_val(r, i, i_selftest))));
    PQclear(r);
    if (out && s_suite_digests(out, hosts) != 0)
        goto fail;
    char lim[16];
    snprintf(lim, sizeof lim, "%d", S_VERDICT_ROWS_MAX);
    const char *pv[] = { id, lim, metric };
    /* Each metric's comparisons after wall time's, in vd_metric's order;
     * "tracked": the suite judges and tracks the benchmark on it (025). A
     * wall floor's pool (floors) is wall time's alone. */
    r = s_q(q, res, &s_st_verdicts_rows, pv);
    if (!r || !out)
        goto fail;
    enum { V_BENCH, V_SUBJECT, V_OTHER, V_HOST, V_RUN, V_VERDICT, V_ERROR,
           V_STATUS, V_INSTANCE, V_REVISION, V_METRIC, V_TRACKED, V_COUNT };
    static const char *const vnames[V_COUNT] = {
        "benchmark", "subject", "other_name", "host", "run_uuid",
        "verdict_json", "error", "status", "instance", "revision", "metric",
        "tracked" };
    int c[V_COUNT];
    co_cols(r, vnames, V_COUNT, c);
    co_reply_pool_cols_t pool;
    co_reply_pool_cols(r, &pool);
    for (int i = 0; i < PQntuples(r); i++) {
        const char *bench = co_val(r, i, c[V_BENCH]),
                   *subj = co_val(r, i, c[V_SUBJECT]),
                   *other = co_val(r, i, c[V_OTHER]),
                   *host = co_val(r, i, c[V_HOST]),
                   *met = co_val(r, i, c[V_METRIC]);
        bool tracked = co_val_bool(r, i, c[V_TRACKED]);
        if (!cur ||
            strcmp(json_string_value(json_object_get(cur, "benchmark")),
                   bench) != 0 ||
            strcmp(json_string_value(json_object_get(cur, "subject")),
                   subj) != 0 ||
            strcmp(json_string_value(json_object_get(cur, "other")),
                   other) != 0 ||
            strcmp(json_string_value(json_object_get(cur, "metric")),
                   met) != 0) {
            if (cur && s_summarize(cur) != 0)
                goto fail;
            cur = json_pack("{s:s,s:s,s:s,s:s,s:b,s:[]}", "benchmark", bench,
                            "subject", subj, "other", other, "metric", met,
                            "tracked", tracked, "hosts");
            if (!cur)
                goto fail;
            /* subject@HEAD against an --against instance of it (023). */
            if (!co_val_null(r, i, c[V_INSTANCE]) && against_name)
                json_object_set_new(cur, "against", json_pack(
                    "{s:s,s:s,s:s}", "name", against_name, "value",
                    co_val(r, i, c[V_INSTANCE]), "subject_value",
                    co_val(r, i, c[V_REVISION])));
            json_array_append_new(cmps, cur);
        }
        const char *status = co_val_or_null(r, i, c[V_STATUS]);
        json_t *entry = json_pack("{s:s,s:s,s:s}", "host", host, "run_id",
                                  co_val(r, i, c[V_RUN]), "status",
                                  status ? status : "running");
        if (!entry)
            goto fail;
        /* What its floor pooled (017; null parts for an older run). */
        if (!co_val_null(r, i, pool.runs))
            json_object_set_new(entry, "floor_pool",
                                co_reply_floor_pool(r, i, &pool));
        bool complete = status && strcmp(status, "complete") == 0;
        /* Only a complete run's verdict speaks for its host: a run cut
         * short (lost agent, cancel) is listed but never counted. */
        if (!complete)
            json_object_set_new(entry, "error", json_string(
                "the run did not complete"));
        else if (!co_val_null(r, i, c[V_VERDICT]))
            json_object_set_new(entry, "verdict",
                                co_reply_json_col(r, i, c[V_VERDICT]));
        else
            json_object_set_new(entry, "error", json_string(
                co_val_null(r, i, c[V_ERROR]) ? "no verdict"
                : co_val(r, i, c[V_ERROR])));
        /* One entry per host: a later run of the same host replaces an
         * earlier one (rows are in start order). */
        json_t *hl = json_object_get(cur, "hosts");
        size_t last = json_array_size(hl);
        if (last > 0 && strcmp(json_string_value(json_object_get(
                json_array_get(hl, last - 1), "host")), host) == 0)
            json_array_set_new(hl, last - 1, entry);
        else
            json_array_append_new(hl, entry);
    }
    if (cur && s_summarize(cur) != 0)
        goto fail;
    PQclear(r);
    json_object_set_new(out, "hosts", hosts);
    json_object_set_new(out, "comparisons", cmps);
    return out;
fail:
    PQclear(r);
    json_decref(cmps);
    json_decref(hosts);
    json_decref(out);
    if (res->status == CO_REPLY_OK) {
        res->status = CO_REPLY_UNAVAILABLE;
        pw_err(res->err, sizeof res->err, "out of memory or bad stored "
               "verdict");
    }
    return NULL;
}

/* ---- show --------------------------------------------------------- */

/* The run's arms (rows of arms: idx, name, subject, argv, shell,
 * version_output, instance) into bench; their names by idx into by_idx,
 * for the samples. 0, or -1 out of memory. */
static int
s_show_arms(json_t *bench, PGresult *a, json_t *by_idx)
{
    int i_name = co_col(a, "name"), i_subject = co_col(a, "subject"),
        i_argv = co_col(a, "argv"), i_shell = co_col(a, "shell"),
        i_version = co_col(a, "version_output"),
        i_instance = co_col(a, "instance");
    for (int i = 0; i < PQntuples(a); i++) {
        json_t *argv = co_reply_json_col(a, i, i_argv);
        size_t n = json_array_size(argv);
        const char **vv = calloc(n + 1, sizeof *vv);
        if (!vv) {
            json_decref(argv);
            return -1;
        }
        for (size_t k = 0; k < n; k++)
            vv[k] = json_string_value(json_array_get(argv, k));
        const char *shell = co_val(a, i, i_shell);
        int rc = pw_results_add_arm(bench, co_val(a, i, i_name),
                                    co_val_bool(a, i, i_subject),
                                    *shell ? NULL : vv, *shell ? shell : NULL,
                                    co_val(a, i, i_version));
        free(vv);
        json_decref(argv);
        if (rc == PW_RESULTS_OK && !co_val_null(a, i, i_instance))
            rc = pw_results_arm_instance(bench, co_val(a, i, i_instance));
        if (rc != PW_RESULTS_OK)
            return -1;
        json_array_append_new(by_idx, json_string(co_val(a, i, i_name)));
    }
    return 0;
}

/* The run's samples (rows of samples in batch order) into bench; a row
 * of an unknown kind or arm is skipped. 0, or -1 out of memory. */
static int
s_show_samples(json_t *bench, PGresult *s, const json_t *by_idx)
{
    enum { S_KIND, S_ARM, S_ROUND, S_POSITION, S_WALL, S_USER, S_SYS,
           S_RSS, S_EXIT, S_SIGNAL, S_CPU, S_START, S_ERROR, S_INS,
           S_CYCLES, S_TASK, S_COUNT };
    static const char *const names[S_COUNT] = {
        "kind", "arm", "round", "position", "wall_us", "user_us", "sys_us",
        "maxrss_kb", "exit_status", "term_signal", "cpu", "start_unix_us",
        "error", "instructions", "cycles", "task_clock_ns" };
    int c[S_COUNT];
    co_cols(s, names, S_COUNT, c);
    for (int i = 0; i < PQntuples(s); i++) {
        pw_sample_t x;
        memset(&x, 0, sizeof x);
        x.kind = (pw_sample_kind_t)co_val_i64(s, i, c[S_KIND]);
        if (x.kind >= PW_SAMPLE_KIND_COUNT)
            continue;
        x.arm = x.kind == PW_SAMPLE_CALIBRATION ? NULL :
                json_string_value(json_array_get(by_idx,
                    (size_t)co_val_i64(s, i, c[S_ARM])));
        if (x.kind != PW_SAMPLE_CALIBRATION && !x.arm)
            continue;
        x.round = (unsigned)co_val_i64(s, i, c[S_ROUND]);
        x.position = (unsigned)co_val_i64(s, i, c[S_POSITION]);
        x.wall_us = co_val_f64(s, i, c[S_WALL]);
        x.user_us = co_val_f64(s, i, c[S_USER]);
        x.sys_us = co_val_f64(s, i, c[S_SYS]);
        x.maxrss_kb = co_val_i64(s, i, c[S_RSS]);
        x.exit_status = (int)co_val_i64(s, i, c[S_EXIT]);
        x.term_signal = (int)co_val_i64(s, i, c[S_SIGNAL]);
        x.cpu = (int)co_val_i64(s, i, c[S_CPU]);
        x.start_unix_us = co_val_i64(s, i, c[S_START]);
        x.error = x.kind == PW_SAMPLE_ERROR ? co_val(s, i, c[S_ERROR]) : NULL;
        /* NULL (not counted) reads as 0: not written. */
        x.instructions = co_val_i64(s, i, c[S_INS]);
        x.cycles = co_val_i64(s, i, c[S_CYCLES]);
        x.task_clock_ns = co_val_i64(s, i, c[S_TASK]);
        if (pw_results_add_sample(bench, &x) != PW_RESULTS_OK)
            return -1;
    }
    return 0;
}

/* The columns of show's verdict rows, resolved once per result. */
enum { SV_OTHER, SV_VERDICT, SV_ERROR, SV_FLOOR, SV_DEFAULT, SV_SAMPLES,
       SV_PARITY, SV_METRIC, SV_SOURCE, SV_COUNT };
static const char *const s_show_vcols[SV_COUNT] = {
    "other_name", "verdict_json", "error", "floor_us", "floor_is_default",
    "floor_samples", "parity", "metric", "metric_source" };

/* Another metric's verdict row i of v (columns c) into bench's "metrics"
 * as a results file holds it (docs/verdict.md "Metrics"): {METRIC:
 * {"unit", "source" (cpu), "floor": {"value", "default", "samples"},
 * "verdict": {OTHER: ...}, "verdict_error"}}; its name into the
 * document's "metrics". */
static void
s_show_metric(json_t *doc, json_t *bench, PGresult *v, const int *c, int i)
{
    const char *name = co_val(v, i, c[SV_METRIC]);
    vd_metric_t m;
    if (vd_metric_parse(name, &m) != 0)
        return;
    json_t *all = json_object_get(bench, "metrics");
    if (!all) {
        json_object_set_new(bench, "metrics", json_object());
        all = json_object_get(bench, "metrics");
    }
    json_t *one = json_object_get(all, name);
    if (!one) {
        one = json_pack("{s:s,s:{s:f,s:b,s:I},s:{},s:n}", "unit",
                        vd_metric_unit(m), "floor", "value",
                        co_val_f64(v, i, c[SV_FLOOR]), "default",
                        co_val_bool(v, i, c[SV_DEFAULT]), "samples",
                        (json_int_t)co_val_i64(v, i, c[SV_SAMPLES]),
                        "verdict", "verdict_error");
        if (one && !co_val_null(v, i, c[SV_SOURCE]))
            json_object_set_new(one, "source",
                                json_string(co_val(v, i, c[SV_SOURCE])));
        json_object_set_new(all, name, one);
        /* The document lists its metrics once another one is there:
         * wall time's verdict is every run's. */
        if (!json_object_get(doc, "metrics"))
            json_object_set_new(doc, "metrics", json_pack("[s]", "wall"));
        json_array_append_new(json_object_get(doc, "metrics"),
                              json_string(name));
    }
    if (!co_val_null(v, i, c[SV_VERDICT]))
        json_object_set_new(json_object_get(one, "verdict"),
                            co_val(v, i, c[SV_OTHER]),
                            co_reply_json_col(v, i, c[SV_VERDICT]));
    else if (!co_val_null(v, i, c[SV_ERROR]))
        json_object_set_new(one, "verdict_error",
                            json_string(co_val(v, i, c[SV_ERROR])));
}

/* The stored verdicts (rows of verdicts: other_name, verdict_json,
 * error, the floor and parity) into bench, and the first row's floor
 * into doc: the ones computed with the host's calibration window. */
static void
s_show_verdicts(json_t *doc, json_t *bench, PGresult *v)
{
    json_t *verdict = json_object();
    json_t *verr = json_null();
    int c[SV_COUNT];
    co_cols(v, s_show_vcols, SV_COUNT, c);
    co_reply_pool_cols_t pool;
    co_reply_pool_cols(v, &pool);
    for (int i = 0; i < PQntuples(v); i++) {
        if (strcmp(co_val(v, i, c[SV_METRIC]), "wall") != 0) {
            s_show_metric(doc, bench, v, c, i);
            continue;
        }
        if (!co_val_null(v, i, c[SV_VERDICT]))
            json_object_set_new(verdict, co_val(v, i, c[SV_OTHER]),
                                co_reply_json_col(v, i, c[SV_VERDICT]));
        else if (!co_val_null(v, i, c[SV_ERROR])) {
            json_decref(verr);
            verr = json_string(co_val(v, i, c[SV_ERROR]));
        }
        if (i == 0) {
            json_t *fl = json_pack(
                "{s:f,s:b,s:I,s:f}",
                "floor_us", co_val_f64(v, i, c[SV_FLOOR]),
                "default", co_val_bool(v, i, c[SV_DEFAULT]),
                "calibration_samples",
                (json_int_t)co_val_i64(v, i, c[SV_SAMPLES]),
                "parity", co_val_f64(v, i, c[SV_PARITY]));
            if (fl && !co_val_null(v, i, pool.runs))
                json_object_set_new(fl, "pool",
                                    co_reply_floor_pool(v, i, &pool));
            json_object_set_new(doc, "floor", fl);
        }
    }
    if (PQntuples(v) > 0) {
        json_object_set_new(bench, "verdict", verdict);
        json_object_set_new(bench, "verdict_error", verr);
    } else {
        json_decref(verdict);
        json_decref(verr);
    }
}

static const co_stmt_t s_st_show_run = { "query.show_run",
    "SELECT r.id, b.suite, b.name AS benchmark, r.runs, r.warmup, "
    "r.started_at_us, r.ended_at_us, r.status, r.reason, r.job_id, "
    "r.label, r.tags::text AS tags, h.name AS host, e.environment_json "
    "FROM runs r JOIN benchmarks b ON "
    "b.id = r.benchmark_id JOIN hosts h ON h.id = r.host_id LEFT JOIN "
    "environments e ON e.id = r.environment WHERE r.run_uuid = $1",
    1, PGRES_TUPLES_OK, false };

static const co_stmt_t s_st_show_arms = { "query.show_arms",
    "SELECT idx, name, subject, array_to_json(argv)::text "
    "AS argv, shell, version_output, instance FROM arms WHERE run = $1 ORDER "
    "BY idx",
    1, PGRES_TUPLES_OK, false };

static const co_stmt_t s_st_show_samples = { "query.show_samples",
    "SELECT kind, arm, round, position, wall_us, user_us, "
    "sys_us, maxrss_kb, exit_status, term_signal, cpu, "
    "start_unix_us, error, instructions, cycles, task_clock_ns "
    "FROM samples WHERE run = $1 ORDER BY batch_seq, idx",
    1, PGRES_TUPLES_OK, false };

static const co_stmt_t s_st_show_verdicts = { "query.show_verdicts",
    "SELECT v.other_name, v.verdict_json, v.error, "
    "v.floor_us, v.floor_is_default, v.floor_samples, v.parity, "
    "f.n_samples AS pool_runs, f.quiet AS pool_quiet, f.oldest_us "
    "AS pool_oldest_us, f.newest_us AS pool_newest_us, v.metric, "
    "v.metric_source FROM verdicts v LEFT JOIN floors f ON f.run = "
    "v.run WHERE v.run = $1 ORDER BY array_position(ARRAY['wall', "
    "'cpu', 'peak_rss'], v.metric), v.other_arm",
    1, PGRES_TUPLES_OK, false };

static json_t *
s_show(co_query_t *q, const json_t *args, s_res_t *res)
{
    const char *run = json_string_value(json_object_get(args, "run"));
    if (!run) {
        res->status = CO_REPLY_BADARGS;
        pw_err(res->err, sizeof res->err, "\"run\" (a run id, a string) is "
               "required");
        return NULL;
    }
    const char *p[] = { run };
    json_t *doc = NULL, *env = NULL, *arms_by_idx = json_array();
    PGresult *a = NULL, *s = NULL, *v = NULL;
    PGresult *r = s_q(q, res, &s_st_show_run, p);
    if (!r)
        goto fail;
    if (PQntuples(r) != 1) {
        res->status = CO_REPLY_NOTFOUND;
        pw_err(res->err, sizeof res->err, "no run \"%.60s\" (parity verdicts "
               "--json names them)", run);
        goto fail;
    }
    const char *pid[] = { co_val(r, 0, co_col(r, "id")) };
    int64_t started = co_val_i64(r, 0, co_col(r, "started_at_us"));
    int64_t ended = co_val_i64(r, 0, co_col(r, "ended_at_us"));
    env = co_reply_json_col(r, 0, co_col(r, "environment_json"));
    doc = pw_results_new("parity-collector", PARITY_VERSION,
                         co_val(r, 0, co_col(r, "suite")), "",
                         json_is_object(env) ? env : NULL, started);
    json_t *bench = doc ? pw_results_add_benchmark(doc,
        co_val(r, 0, co_col(r, "benchmark")),
        (unsigned)co_val_i64(r, 0, co_col(r, "runs")),
        (unsigned)co_val_i64(r, 0, co_col(r, "warmup")), started) : NULL;
    if (!bench)
        goto oom;
    json_object_set_new(doc, "run_id", json_string(run));
    json_object_set_new(doc, "host",
                        json_string(co_val(r, 0, co_col(r, "host"))));
    json_object_set_new(doc, "job_id",
                        json_string(co_val(r, 0, co_col(r, "job_id"))));
    json_object_set_new(doc, "label",
                        json_string(co_val(r, 0, co_col(r, "label"))));
    json_object_set_new(doc, "tags",
                        co_reply_json_col(r, 0, co_col(r, "tags")));

    a = s_q(q, res, &s_st_show_arms, pid);
    if (!a)
        goto fail;
    if (s_show_arms(bench, a, arms_by_idx) != 0)
        goto oom;
    s = s_q(q, res, &s_st_show_samples, pid);
    if (!s)
        goto fail;
    if (s_show_samples(bench, s, arms_by_idx) != 0)
        goto oom;
    const char *status = co_val_or_null(r, 0, co_col(r, "status"));
    if (!status)
        status = "incomplete";
    if (pw_results_end_benchmark(bench, status,
                                 co_val_or_null(r, 0, co_col(r, "reason")),
                                 NULL, ended) !=
        PW_RESULTS_OK)
        goto oom;
    /* Summaries from the samples; the verdicts and floor are then the
     * stored ones, computed with the host's calibration window. */
    char e[256];
    if (pw_results_finish(doc, VD_DEFAULT_PARITY,
                          strcmp(status, "complete") == 0, ended, e,
                          sizeof e) != PW_RESULTS_OK) {
        res->status = CO_REPLY_UNAVAILABLE;
        pw_err(res->err, sizeof res->err, "results: %s", e);
        goto fail;
    }
    v = s_q(q, res, &s_st_show_verdicts, pid);
    if (!v)
        goto fail;
    s_show_verdicts(doc, bench, v);
    PQclear(r);
    PQclear(a);
    PQclear(s);
    PQclear(v);
    json_decref(env);
    json_decref(arms_by_idx);
    return doc;
oom:
    res->status = CO_REPLY_UNAVAILABLE;
    pw_err(res->err, sizeof res->err, "out of memory building the results");
fail:
    PQclear(r);
    PQclear(a);
    PQclear(s);
    PQclear(v);
    json_decref(env);
    json_decref(doc);
    json_decref(arms_by_idx);
    return NULL;
}

/* ---- run / cancel via co_jobs ------------------------------------- */

static int
s_jobs_status(int rc)
{
    switch (rc) {
    case CO_JOBS_OK: return CO_REPLY_OK;
    case CO_JOBS_BADARGS: return CO_REPLY_BADARGS;
    case CO_JOBS_NOTFOUND: return CO_REPLY_NOTFOUND;
    default: return CO_REPLY_UNAVAILABLE;
    }
}

/* co_jobs' CO_JOBS_FAIL is the database (or memory): say so. */
static void
s_jobs_result(int rc, const char *err, s_res_t *res)
{
    res->status = s_jobs_status(rc);
    if (res->status == CO_REPLY_UNAVAILABLE)
        pw_err(res->err, sizeof res->err, "database unavailable: %.400s", err);
    else
        pw_err(res->err, sizeof res->err, "%s", err);
}

static json_t *
s_run(co_query_t *q, const char *key, const json_t *args, s_res_t *res)
{
    json_t *reply = NULL;
    char err[S_ERR_MAX] = "";
    int rc = co_jobs_create(q->jobs, key, args, pw_clock_unix_us(), &reply,
                            err, sizeof err);
    s_jobs_result(rc, err, res);
    return reply;
}

static json_t *
s_cancel(co_query_t *q, const json_t *args, s_res_t *res)
{
    const char *job = json_string_value(json_object_get(args, "job"));
    if (!job) {
        res->status = CO_REPLY_BADARGS;
        pw_err(res->err, sizeof res->err, "\"job\" (a job id, a string) is "
               "required");
        return NULL;
    }
    json_t *reply = NULL;
    char err[S_ERR_MAX] = "";
    int rc = co_jobs_cancel(q->jobs, job, pw_clock_unix_us(), &reply, err,
                            sizeof err);
    s_jobs_result(rc, err, res);
    return reply;
}

/* ---- dispatch ----------------------------------------------------- */

/* An error line for the Reply: one line (libpq's messages have several),
 * no tabs, no trailing space. NULL-safe copy; never NULL. */
static char *
s_dup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        return (char *)protobuf_c_empty_string;
    size_t o = 0;
    for (size_t i = 0; d[i]; i++) {
        char ch = d[i] == '\n' || d[i] == '\t' || d[i] == '\r' ? ' ' : d[i];
        if (ch == ' ' && (o == 0 || d[o - 1] == ' '))
            continue;
        d[o++] = ch;
    }
    while (o > 0 && d[o - 1] == ' ')
        o--;
    d[o] = '\0';
    return d;
}

/* The arguments each command of this module knows (space-separated); an
 * unknown one is refused, so a typo ("tag" for "tags") never silently
 * drops what the user asked for. */
static const struct {
    const char *command;
    const char *known;
} s_known_args[] = {
    { "hosts", "" },
    { "run", "suite hosts tags vars against runs only label expire_us" },
    { "job", "job" },
    { "jobs", "active limit" },
    { "cancel", "job" },
    { "verdicts", "job latest metric" },
    { "show", "run" },
    { "baseline", "job tags" },
    { "bisect_start", "suite benchmark commits hosts vars runs" },
    { "bisect_status", "bisect" },
    { "bisect_cancel", "bisect" },
    { "confirm", "id runs" },
    { "confirm_status", "confirm" },
    { "series", "suite benchmark host tags since_us runs metric" },
    { "ack", "id note" },
    { "unack", "id" },
    { "pending", "" },
    { "approve", "fingerprint name" },
    { "reject", "fingerprint name" },
    { "revoke", "fingerprint name" },
};

static bool
s_args_known(const char *cmd, const json_t *args, s_res_t *res)
{
    const char *known = NULL;
    for (size_t i = 0; i < sizeof s_known_args / sizeof *s_known_args; i++)
        if (strcmp(cmd, s_known_args[i].command) == 0)
            known = s_known_args[i].known;
    if (!known)
        return true;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)args, k, v) {
        size_t n = strlen(k);
        const char *p = known;
        bool found = false;
        while (!found && n > 0 && (p = strstr(p, k)) != NULL) {
            found = (p == known || p[-1] == ' ') &&
                    (p[n] == ' ' || p[n] == '\0');
            p += n;
        }
        if (!found) {
            res->status = CO_REPLY_BADARGS;
            pw_err(res->err, sizeof res->err, "unknown argument \"%.60s\" "
                   "for %s (known: %s)", k, cmd, *known ? known : "none");
            return false;
        }
    }
    return true;
}

void
co_query_set_reader(co_query_t *q, co_conn_t *read)
{
    q->read = read;
}

void
co_query_set_parity(co_query_t *q, double parity)
{
    q->parity = parity;
}

/* Commands that never write: they may go to a read replica. */
static bool
s_reads_only(const char *cmd)
{
    return strcmp(cmd, "hosts") == 0 || strcmp(cmd, "job") == 0 ||
           strcmp(cmd, "jobs") == 0 || strcmp(cmd, "verdicts") == 0 ||
           strcmp(cmd, "show") == 0 || co_history_handles(cmd) ||
           co_baseline_handles(cmd);
}

void
co_query_handle(co_query_t *q, const char *key, const Parity__Request *req,
                Parity__Reply *reply)
{
    /* Keys added to or removed from --admin count from the next request,
     * as they do for the handshake (co_auth). */
    struct stat st;
    char lerr[256];
    const char *cmd = req->command ? req->command : "";
    if (co_query_handles(cmd) && q->admin_dir[0] &&
        stat(q->admin_dir, &st) == 0 &&
        co_dirstamp_due(&q->admin_stamp, &st.st_mtim, pw_clock_mono_ms(),
                        !co_query_is_admin(q, key)))
        co_query_load_admins(q, q->admin_dir, lerr, sizeof lerr);
    if (!co_query_handles(cmd) || co_query_is_admin(q, key)) {
        co_query_answer(q, key, req, reply);
        return;
    }
    parity__reply__init(reply);
    reply->request_id = req->request_id;
    reply->status = CO_REPLY_FORBIDDEN;
    reply->error = s_dup(q->admin_dir[0] ?
        "forbidden: this client's key is not in the collector's --admin "
        "directory" : "forbidden: the collector was started without "
        "--admin, so no client may query or run jobs");
}

void
co_query_answer(co_query_t *q, const char *key, const Parity__Request *req,
                Parity__Reply *reply)
{
    parity__reply__init(reply);
    reply->request_id = req->request_id;
    s_res_t res = { CO_REPLY_OK, "" };
    json_t *args = NULL, *body = NULL;
    const char *cmd = req->command ? req->command : "";

    if (!co_query_handles(cmd)) {
        res.status = CO_REPLY_UNKNOWN;
        pw_err(res.err, sizeof res.err, "unknown command \"%.40s\"", cmd);
        goto out;
    }
    const char *text = req->args_json && *req->args_json ? req->args_json :
                       "{}";
    json_error_t je;
    if (strlen(text) > CO_QUERY_MAX_ARGS ||
        !(args = json_loads(text, 0, &je)) || !json_is_object(args)) {
        res.status = CO_REPLY_BADARGS;
        pw_err(res.err, sizeof res.err, "args_json must be a JSON object of "
               "at most %d bytes", CO_QUERY_MAX_ARGS);
        goto out;
    }
    if (!s_args_known(cmd, args, &res))
        goto out;
    /* A database restarted since the last request: reconnect now rather
     * than fail this one. */
    char derr[S_ERR_MAX - 64];
    q->cur = q->read && s_reads_only(cmd) ? q->read : q->conn;
    if (co_conn_ready(q->cur, derr, sizeof derr) != 0) {
        res.status = CO_REPLY_UNAVAILABLE;
        pw_err(res.err, sizeof res.err, "database unavailable: %s", derr);
        goto out;
    }
    if (strcmp(cmd, "hosts") == 0)
        body = s_hosts(q, args, &res);
    else if (strcmp(cmd, "run") == 0)
        body = s_run(q, key, args, &res);
    else if (strcmp(cmd, "job") == 0)
        body = s_job(q, args, &res);
    else if (strcmp(cmd, "jobs") == 0)
        body = s_jobs(q, args, &res);
    else if (strcmp(cmd, "cancel") == 0)
        body = s_cancel(q, args, &res);
    else if (strcmp(cmd, "verdicts") == 0)
        body = s_verdicts(q, args, &res);
    else if (strcmp(cmd, "show") == 0)
        body = s_show(q, args, &res);
    else if (co_history_handles(cmd) || co_changes_handles(cmd)) {
        co_reply_t c = co_reply_begin(q->cur, NULL, res.err, sizeof res.err);
        body = co_reply_end(&c, co_history_handles(cmd) ?
                            co_history_handle(&c, cmd, args) :
                            co_changes_handle(&c, cmd, args), &res.status);
    }
    else if (co_baseline_handles(cmd))
        body = co_baseline_handle(q->cur, cmd, args, q->parity, &res.status,
                                  res.err, sizeof res.err);
    else if (co_bisect_handles(cmd))
        body = co_bisect_handle(q->jobs, key, cmd, args, q->parity,
                                &res.status, res.err, sizeof res.err);
    else if (co_confirm_handles(cmd)) {
        co_reply_t c = co_reply_begin(q->conn, q->jobs, res.err,
                                      sizeof res.err);
        body = co_reply_end(&c, co_confirm_handle(&c, key, cmd, args),
                            &res.status);
    }
    else if (co_enroll_handles(cmd))
        body = co_enroll_handle(q->conn, q->keys, key, cmd, args,
                                &res.status, res.err, sizeof res.err);
    if (res.status == CO_REPLY_OK && !body) {
        res.status = CO_REPLY_UNAVAILABLE;
        pw_err(res.err, sizeof res.err, "out of memory");
    }
out:
    reply->status = res.status;
    if (res.status == CO_REPLY_OK) {
        char *t = pw_json_dumps(body);
        if (!t) {
            reply->status = CO_REPLY_UNAVAILABLE;
            reply->error = s_dup("out of memory writing the reply");
        } else if (strlen(t) > CO_REPLY_MAX_BODY) {
            free(t);
            reply->status = CO_REPLY_TOO_BIG;
            reply->error = s_dup("the answer is larger than one frame");
        } else {
            reply->body_json = t;
        }
    } else {
        reply->error = s_dup(res.err);
    }
    json_decref(args);
    json_decref(body);
}
