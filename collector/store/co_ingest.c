/* co_ingest.c -- runs, arms, batches and samples; see co_ingest.h. */
#include "co_ingest.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "co_cals.h"
#include "co_hosts.h"
#include "co_ids.h"
#include "pw_buf.h"
#include "pw_err.h"
#include "pw_wire.h"
#include "vd_metric.h"

/* Most bytes of one SQL statement's text built by appending: the arms of
 * a run (64), a few kB. */
#define S_SQL_MAX (1u << 20)

enum {
    S_REFUSAL, S_REFUSED_RUN, S_RUN, S_RUN_START, S_BATCH, S_BATCHES,
    S_REFUSED_BATCH, S_BENCHMARK, S_BENCHMARK_AGAIN, S_ENVIRONMENT,
    S_ENVIRONMENT_AGAIN, S_COPY_SAMPLES
};
/* The arrays of the batches INSERT: three of keys (run, batch_seq,
 * n_samples), eight of calibration samples (s_cal_arrays). */
#define S_BATCH_ARRAYS 11

static const co_stmt_t s_sql[] = {
    [S_REFUSAL] = { "ingest.refusal",
        "INSERT INTO refusals (host_id, run_uuid, batch_seq, reason) SELECT "
        "$1::bigint, $2::text, $3::bigint, $4::text WHERE CASE WHEN "
        "$3::bigint < 0 THEN NOT EXISTS (SELECT 1 FROM runs r WHERE "
        "r.run_uuid = $2) ELSE EXISTS (SELECT 1 FROM runs r WHERE r.run_uuid "
        "= $2 AND r.host_id = $1) END ON CONFLICT DO NOTHING",
        4, PGRES_COMMAND_OK, false },
    [S_REFUSED_RUN] = { "ingest.refused_run",
        "SELECT reason FROM refusals WHERE host_id = $1 AND run_uuid = $2 AND "
        "batch_seq = -1",
        2, PGRES_TUPLES_OK, false },
    [S_RUN] = { "ingest.run",
        "SELECT id, host_id, (SELECT count(*) FROM arms WHERE arms.run = "
        "runs.id) AS arms FROM runs WHERE run_uuid = $1",
        1, PGRES_TUPLES_OK, false },
    [S_RUN_START] = { "ingest.run_start",
        "INSERT INTO runs (run_uuid, host_id, benchmark_id, job_id, label, "
        "tags, runs, warmup, started_at_us, environment, vars, revision, "
        "metrics) "
        "SELECT $1, $2::bigint, $3::bigint, $4, CASE WHEN $5 = '' THEN "
        "COALESCE(j.label, '') ELSE $5 END, COALESCE(j.tags, '{}') || "
        "$6::jsonb || CASE WHEN $11 = '' THEN '{}'::jsonb ELSE "
        "jsonb_build_object($11::text, $12::text) END, $7::int, $8::int, "
        "$9::bigint, $10::bigint, COALESCE(j.vars, '{}') - $11::text, "
        "CASE WHEN $11 = '' THEN '' ELSE $12 END, $13::text[] FROM (VALUES "
        "(1)) AS one (x) LEFT JOIN jobs j ON j.job_uuid = $4 AND $4 <> '' ON "
        "CONFLICT (run_uuid) DO NOTHING RETURNING id",
        13, PGRES_TUPLES_OK, true },
    [S_BATCH] = { "ingest.batch",
        "INSERT INTO batches (run, batch_seq, n_samples) VALUES ($1, $2, $3) "
        "ON CONFLICT (run, batch_seq) DO NOTHING",
        3, PGRES_COMMAND_OK, false },
    [S_BATCHES] = { "ingest.batches",
        "WITH b AS (INSERT INTO batches (run, batch_seq, n_samples) SELECT * "
        "FROM unnest($1::bigint[], $2::integer[], $3::integer[]) ON CONFLICT "
        "(run, batch_seq) DO NOTHING RETURNING run, batch_seq), c AS (INSERT "
        "INTO host_calibration (host_id, taken_at_us, wall_us, cpu_us, "
        "task_clock_us, peak_rss_kb) SELECT u.h, u.t, u.w, u.c, u.k, u.m FROM "
        "unnest($4::bigint[], $5::integer[], $6::bigint[], $7::bigint[], "
        "$8::float8[], $9::float8[], $10::float8[], $11::float8[]) AS u (r, "
        "s, h, t, w, c, k, m) JOIN b ON b.run = u.r AND b.batch_seq = u.s) "
        "SELECT run, batch_seq FROM b",
        S_BATCH_ARRAYS, PGRES_TUPLES_OK, true },
    [S_REFUSED_BATCH] = { "ingest.refused_batch",
        "SELECT f.batch_seq, f.reason FROM refusals f WHERE f.host_id = $1 "
        "AND f.run_uuid = $2 AND f.batch_seq >= 0 AND f.batch_seq < "
        "$3::bigint AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.run = $4 "
        "AND b.batch_seq = f.batch_seq) ORDER BY f.batch_seq LIMIT 1",
        4, PGRES_TUPLES_OK, false },
    /* DO NOTHING, not an upsert that updates: that locks the row until
     * the burst's COMMIT, and every other writer (of this collector or
     * another on the database) storing a run of the benchmark would
     * wait for it, or deadlock with it over two benchmarks. No row means
     * another writer's, committed after the statement began: the second
     * form (again) sees it. */
    [S_BENCHMARK] = { "ingest.benchmark",
        "WITH ins AS (INSERT INTO benchmarks (suite, name) VALUES ($1, $2) "
        "ON CONFLICT (suite, name) DO NOTHING RETURNING id) SELECT id FROM "
        "ins UNION ALL SELECT id FROM benchmarks WHERE suite = $1 AND name "
        "= $2", 2, PGRES_TUPLES_OK, false },
    [S_BENCHMARK_AGAIN] = { "ingest.benchmark_again",
        "SELECT id FROM benchmarks WHERE suite = $1 AND name = $2",
        2, PGRES_TUPLES_OK, false },
    [S_ENVIRONMENT] = { "ingest.environment",
        "WITH ins AS (INSERT INTO environments (host_id, digest, "
        "environment_json) VALUES ($1, md5($2), $2) ON CONFLICT (host_id, "
        "digest) DO NOTHING RETURNING id) SELECT id FROM ins UNION ALL "
        "SELECT id FROM environments WHERE host_id = $1 AND digest = "
        "md5($2)", 2, PGRES_TUPLES_OK, false },
    [S_ENVIRONMENT_AGAIN] = { "ingest.environment_again",
        "SELECT id FROM environments WHERE host_id = $1 AND digest = "
        "md5($2)", 2, PGRES_TUPLES_OK, false },
    [S_COPY_SAMPLES] = { "ingest.copy_samples",
        "COPY samples (run, batch_seq, idx, kind, arm, round, position, "
        "wall_us, user_us, sys_us, maxrss_kb, exit_status, term_signal, cpu, "
        "start_unix_us, error, instructions, cycles, task_clock_ns) FROM "
        "STDIN (FORMAT binary)", 0, PGRES_COPY_IN, false },
};

/* co_ingest_run_lookup from the runs the handle holds only: CO_DB_LATER
 * when the run is not held (it may still be stored). */
static int
s_run_held(co_db_t *db, int64_t host_id, const char *uuid, int64_t *run,
           size_t *n_arms, char *err, size_t errlen)
{
    int64_t id, owner;
    if (!co_db_run_find(db, uuid, &id, &owner, n_arms))
        return CO_DB_LATER;
    if (owner != host_id) {
        pw_err_line(err, errlen, "run %s belongs to another host", uuid);
        return CO_DB_REFUSED;
    }
    *run = id;
    return CO_DB_OK;
}

/* ---- refusals (010) ---------------------------------------------------
 * A message refused for good is remembered, so that the messages that
 * depend on it (a batch or RunEnd of a refused RunStart, a RunEnd that
 * counts a refused batch) are answered CO_DB_DEPENDS instead of waited
 * for: an agent that resends what is not answered would resend them
 * forever (docs/protocol.md section 4). */

/* The longest reason kept: an Error that quotes it must stay one line of
 * reasonable length. */
#define S_REFUSAL_REASON_MAX 200

/* Copy at most max bytes of src to dst (max + 1 bytes), not cutting a
 * UTF-8 sequence in two. */
static void
s_utf8_cut(char *dst, const char *src, size_t max)
{
    size_t n = strlen(src);
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
            n--;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Remember that this host's RunStart of uuid (batch_seq -1), or its
 * batch batch_seq, was refused with reason. A RunStart's refusal is kept
 * only when no host stored that run (another host's run is found in runs
 * itself), a batch's only when the run is this host's. Its own
 * transaction (a savepoint inside co_db_begin's): when it fails (a run id
 * that is not UTF-8) nothing else is undone, and the dependents stay
 * unanswered as before. */
static void
s_refusal_keep(co_db_t *db, int64_t host_id, const char *uuid,
               int64_t batch_seq, const char *reason)
{
    char host[24], seq[24], why[S_REFUSAL_REASON_MAX + 1], e[256];
    int rc;
    if (!co_db_connected(db) || !uuid || strlen(uuid) >= CO_DB_UUID_MAX)
        return;
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(seq, sizeof seq, "%" PRId64, batch_seq);
    s_utf8_cut(why, reason ? reason : "", S_REFUSAL_REASON_MAX);
    if (co_db_exec(db, "BEGIN", e, sizeof e) != CO_DB_OK)
        return;
    const char *p[] = { host, uuid, seq, why };
    PGresult *r = co_db_run(db, &s_sql[S_REFUSAL], p, &rc, e, sizeof e);
    if (!r) {
        co_db_rollback(db);
        return;
    }
    PQclear(r);
    (void)co_db_exec(db, "COMMIT", e, sizeof e);
}

/* CO_DB_DEPENDS with err "WHAT depends on run_start UUID, which was
 * refused: REASON" when this host's RunStart of uuid was refused, else
 * CO_DB_LATER (or CO_DB_FAIL). */
static int
s_refused_run(co_db_t *db, int64_t host_id, const char *uuid,
              const char *what, char *err, size_t errlen)
{
    int rc;
    char host[24];
    snprintf(host, sizeof host, "%" PRId64, host_id);
    const char *p[] = { host, uuid };
    PGresult *r = co_db_run(db, &s_sql[S_REFUSED_RUN], p, &rc, err, errlen);
    if (!r)
        return rc;
    rc = CO_DB_LATER;
    if (PQntuples(r) == 1) {
        pw_err_line(err, errlen, "%s depends on run_start %s, which was "
                    "refused: %s", what, uuid, co_val(r, 0, co_col(r, "reason")));
        rc = CO_DB_DEPENDS;
    }
    PQclear(r);
    return rc;
}

int
co_ingest_run_lookup(co_db_t *db, int64_t host_id, const char *uuid,
                     int64_t *run, size_t *n_arms, const char *what,
                     char *err, size_t errlen)
{
    int rc = s_run_held(db, host_id, uuid, run, n_arms, err, errlen);
    if (rc != CO_DB_LATER)
        return rc;
    const char *p[] = { uuid };
    PGresult *r = co_db_run(db, &s_sql[S_RUN], p, &rc, err, errlen);
    if (!r)
        return rc;
    if (PQntuples(r) == 0) {
        PQclear(r);
        rc = s_refused_run(db, host_id, uuid, what, err, errlen);
        if (rc == CO_DB_LATER)
            pw_err_line(err, errlen, "run %s: no RunStart stored yet", uuid);
        return rc;
    }
    int64_t id = co_val_i64(r, 0, co_col(r, "id"));
    int64_t owner = co_val_i64(r, 0, co_col(r, "host_id"));
    size_t arms = (size_t)co_val_i64(r, 0, co_col(r, "arms"));
    PQclear(r);
    co_db_run_keep(db, uuid, id, owner, arms);
    return s_run_held(db, host_id, uuid, run, n_arms, err, errlen);
}

/* A key of co_ids: a tag byte, then parts each followed by a NUL (so
 * that "ab"+"c" and "a"+"bc" differ). Caller frees; NULL out of memory. */
static char *
s_ids_key(char tag, const char *a, size_t alen, const char *b, size_t *len)
{
    size_t blen = strlen(b);
    char *k = malloc(alen + blen + 3);
    if (!k)
        return NULL;
    k[0] = tag;
    memcpy(k + 1, a, alen);
    k[alen + 1] = '\0';
    memcpy(k + alen + 2, b, blen);
    k[alen + blen + 2] = '\0';
    *len = alen + blen + 3;
    return k;
}

/* The id of a row by its natural key, as text in out: held (co_ids)
 * after the first time, else from sql ($1, $2: params), which stores the
 * row if new and returns its id. No row means another writer's, committed
 * after the statement began: a new statement (again) sees it. Still none
 * is a failure when required, else out stays empty. Takes key (NULL when
 * out of memory: not held). */
static int
s_id_of(co_db_t *db, char *key, size_t klen, const co_stmt_t *sql,
        const co_stmt_t *again, const char *const *params, bool required,
        char *out, size_t len, char *err, size_t errlen)
{
    int rc = CO_DB_OK;
    int64_t id;
    out[0] = '\0';
    if (key && co_ids_get(co_db_ids(db), key, klen, &id)) {
        snprintf(out, len, "%" PRId64, id);
        free(key);
        return CO_DB_OK;
    }
    PGresult *r = co_db_run(db, sql, params, &rc, err, errlen);
    if (r && PQntuples(r) == 0) {
        PQclear(r);
        r = co_db_run(db, again, params, &rc, err, errlen);
    }
    if (r && PQntuples(r) > 0) {
        snprintf(out, len, "%s", co_val(r, 0, co_col(r, "id")));
        if (key)
            co_ids_put(co_db_ids(db), key, klen, strtoll(out, NULL, 10));
    } else if (r && required) {
        rc = CO_DB_FAIL;
        pw_err_line(err, errlen, "%s: %.64s/%.64s neither stored nor found",
                    co_db_what_text(db), params[0], params[1]);
    }
    PQclear(r);
    free(key);
    return rc;
}

/* The id of the RunStart's benchmark, stored if new, as text in bench. */
static int
s_benchmark_id(co_db_t *db, const Parity__RunStart *rs, char *bench,
               size_t len, char *err, size_t errlen)
{
    size_t klen = 0;
    const char *pb[] = { co_db_str(rs->suite), co_db_str(rs->benchmark) };
    char *key = s_ids_key('b', pb[0], strlen(pb[0]), pb[1], &klen);
    return s_id_of(db, key, klen, &s_sql[S_BENCHMARK],
                   &s_sql[S_BENCHMARK_AGAIN], pb, true, bench, len, err,
                   errlen);
}

/* The id of the host's environment json, stored if new, as text in
 * envid (empty when neither). */
static int
s_environment_id(co_db_t *db, int64_t host_id, const char *json,
                 char *envid, size_t len, char *err, size_t errlen)
{
    size_t klen = 0;
    char host[24];
    snprintf(host, sizeof host, "%" PRId64, host_id);
    const char *pe[] = { host, json };
    char *key = s_ids_key('e', host, strlen(host), json, &klen);
    return s_id_of(db, key, klen, &s_sql[S_ENVIRONMENT],
                   &s_sql[S_ENVIRONMENT_AGAIN], pe, false, envid, len, err,
                   errlen);
}

/* Every arm of a run in one INSERT (a statement per arm was a round trip
 * per arm for each run). Arms are at most PW_WIRE_MAX_ARMS. */
static int
s_run_arms(co_db_t *db, const char *runid, const Parity__RunStart *rs,
           char *err, size_t errlen)
{
    enum { COLS = 8 };
    size_t n = rs->n_arms;
    int rc = CO_DB_FAIL;
    const char **p = calloc(n * COLS, sizeof *p);
    char **argv_s = calloc(n, sizeof *argv_s);
    char (*idx)[24] = calloc(n, sizeof *idx);
    pw_buf_t sql;
    pw_buf_init(&sql, S_SQL_MAX);
    if (!p || !argv_s || !idx) {
        pw_err_line(err, errlen, "run_start: out of memory for %zu arms", n);
        goto done;
    }
    pw_buf_adds(&sql, "INSERT INTO arms (run, idx, name, subject, argv, "
                "shell, version_output, instance) VALUES ");
    for (size_t i = 0; i < n; i++) {
        const Parity__Arm *a = rs->arms[i];
        json_t *argv = json_array();
        for (size_t k = 0; argv && k < a->n_argv; k++)
            json_array_append_new(argv, json_string(co_db_str(a->argv[k])));
        argv_s[i] = argv ? json_dumps(argv, JSON_COMPACT) : NULL;
        json_decref(argv);
        if (!argv_s[i]) {
            pw_err_line(err, errlen, "run_start: argv to JSON: out of memory "
                        "or not UTF-8");
            rc = CO_DB_REFUSED;
            goto done;
        }
        snprintf(idx[i], sizeof idx[i], "%zu", i);
        const char *row[COLS] = { runid, idx[i], a->name,
                                  a->subject ? "t" : "f", argv_s[i],
                                  co_db_str(a->shell), co_db_str(a->version_output),
                                  a->instance && *a->instance ? a->instance
                                                              : NULL };
        memcpy(&p[i * COLS], row, sizeof row);
        size_t b = i * COLS;
        pw_buf_printf(&sql, "%s($%zu, $%zu, $%zu, $%zu, ARRAY(SELECT "
                      "json_array_elements_text($%zu::json)), $%zu, $%zu, "
                      "$%zu)", i ? ", " : "", b + 1, b + 2, b + 3, b + 4,
                      b + 5, b + 6, b + 7, b + 8);
    }
    if (pw_buf_status(&sql) != PW_BUF_OK) {
        pw_err_line(err, errlen, "run_start: arms statement: %s",
                    pw_buf_strerror(pw_buf_status(&sql)));
        goto done;
    }
    PGresult *r = co_db_run_text(db, pw_buf_data(&sql), (int)(n * COLS), p,
                          PGRES_COMMAND_OK, &rc, err, errlen);
    PQclear(r);
done:
    for (size_t i = 0; argv_s && i < n; i++)
        free(argv_s[i]);
    free(argv_s);
    free(p);
    free(idx);
    pw_buf_free(&sql);
    return rc;
}

/* The run's metrics (docs/suites.md "Metrics") as an array literal
 * such as "{wall,peak_rss}" into out: known names, each once; none is
 * wall alone. -1 with err for a RunStart to refuse. */
static int
s_run_metrics(const Parity__RunStart *rs, char *out, size_t outlen,
              char *err, size_t errlen)
{
    bool seen[VD_METRIC_COUNT] = { false };
    size_t at = (size_t)snprintf(out, outlen, "{%s",
                                 rs->n_metrics ? "" : "wall");
    if (rs->n_metrics > VD_METRIC_COUNT) {
        pw_err_line(err, errlen, "run_start %s: %zu metrics (at most %d)",
                    rs->run_id, rs->n_metrics, VD_METRIC_COUNT);
        return -1;
    }
    for (size_t i = 0; i < rs->n_metrics; i++) {
        vd_metric_t m;
        if (vd_metric_parse(rs->metrics[i], &m) != 0) {
            pw_err_line(err, errlen, "run_start %s: unknown metric \"%.40s\" "
                        "(want wall, cpu or peak_rss)", rs->run_id,
                        rs->metrics[i]);
            return -1;
        }
        if (seen[m]) {
            pw_err_line(err, errlen, "run_start %s: metric %s given twice",
                        rs->run_id, rs->metrics[i]);
            return -1;
        }
        seen[m] = true;
        at += (size_t)snprintf(out + at, outlen - at, "%s%s", i ? "," : "",
                               vd_metric_name(m));
    }
    snprintf(out + at, outlen - at, "}");
    return 0;
}

static int
s_run_start(co_db_t *db, int64_t host_id, const Parity__RunStart *rs,
            char *err, size_t errlen)
{
    char metrics[64];
    int rc;
    int64_t run = 0;
    char host[24], runs[16], warmup[16], started[24], runid[24], bench[24];
    char envid[24] = "";
    char *tags = NULL;
    PGresult *r;

    /* A resend of a run this connection stored; others are found by the
     * INSERT's conflict below, which saves a look-up per new run. */
    rc = s_run_held(db, host_id, rs->run_id, &run, NULL, err, errlen);
    if (rc == CO_DB_OK)
        return CO_DB_DUP;
    if (rc != CO_DB_LATER)
        return rc;
    if (rs->n_arms < 1) {
        pw_err_line(err, errlen, "run_start %s: no arms", rs->run_id);
        return CO_DB_REFUSED;
    }
    for (size_t i = 0; i < rs->n_arms; i++) {
        if (!rs->arms[i]->name || !rs->arms[i]->name[0]) {
            pw_err_line(err, errlen, "run_start %s: arm %zu has no name",
                        rs->run_id, i);
            return CO_DB_REFUSED;
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(rs->arms[k]->name, rs->arms[i]->name) == 0) {
                pw_err_line(err, errlen, "run_start %s: arms %zu and %zu are "
                            "both named \"%.64s\"", rs->run_id, k, i,
                            rs->arms[i]->name);
                return CO_DB_REFUSED;
            }
    }
    if (co_hosts_check_environment("run_start", rs->environment_json, err,
                            errlen) != 0)
        return CO_DB_REFUSED;
    if (s_run_metrics(rs, metrics, sizeof metrics, err, errlen) != 0)
        return CO_DB_REFUSED;
    if (!(tags = co_hosts_tags_json(rs->tags, rs->n_tags))) {
        pw_err_line(err, errlen, "run_start: tags to JSON: out of memory");
        return CO_DB_FAIL;
    }
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(runs, sizeof runs, "%u", rs->runs);
    snprintf(warmup, sizeof warmup, "%u", rs->warmup);
    snprintf(started, sizeof started, "%" PRId64, rs->started_at_us);
    if ((rc = co_db_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        goto done;
    if ((rc = s_benchmark_id(db, rs, bench, sizeof bench, err, errlen))
        != CO_DB_OK)
        goto end;
    if (rs->environment_json && rs->environment_json[0] &&
        (rc = s_environment_id(db, host_id, rs->environment_json, envid,
                               sizeof envid, err, errlen)) != CO_DB_OK)
        goto end;
    const Parity__Var *rev = rs->revision;
    const char *p[] = { rs->run_id, host, bench, co_db_str(rs->job_id),
                        co_db_str(rs->label), tags, runs, warmup, started,
                        envid[0] ? envid : NULL,
                        co_db_str(rev ? rev->name : NULL),
                        co_db_str(rev ? rev->value : NULL), metrics };
    /* A job's run takes the job's variables (they make its series,
     * 007) less the suite's revision variable (023: the revision is no
     * part of the series), its tags under the run's own (which win), the
     * revision as the tag NAME=VALUE over both (it is what ran) and its
     * label when the run has none: in the same statement, whatever the
     * agent sent. */
    r = co_db_run(db, &s_sql[S_RUN_START], p, &rc, err, errlen);
    if (!r)
        goto end;
    if (PQntuples(r) == 0) {
        /* Stored before: a resend (this host's) or another host's id. */
        PQclear(r);
        co_db_rollback(db);
        rc = co_ingest_run_lookup(db, host_id, rs->run_id, &run, NULL, "run_start",
                          err, errlen);
        rc = rc == CO_DB_OK ? CO_DB_DUP : rc;
        goto done;
    }
    snprintf(runid, sizeof runid, "%s", co_val(r, 0, co_col(r, "id")));
    PQclear(r);
    if ((rc = s_run_arms(db, runid, rs, err, errlen)) != CO_DB_OK)
        goto end;
end:
    /* Its batches need not look the run up (the first one did). */
    if ((rc = co_db_end(db, rc, err, errlen)) == CO_DB_OK)
        co_db_run_keep(db, rs->run_id, strtoll(runid, NULL, 10), host_id,
                       rs->n_arms);
done:
    free(tags);
    return rc;
}

int
co_ingest_run_start(co_db_t *db, int64_t host_id, const Parity__RunStart *rs,
                char *err, size_t errlen)
{
    co_db_what(db, "run_start %.*s", CO_DB_UUID_MAX, rs->run_id);
    int rc = s_run_start(db, host_id, rs, err, errlen);
    co_db_what(db, NULL);
    if (rc == CO_DB_REFUSED)
        s_refusal_keep(db, host_id, rs->run_id, -1, err);
    return rc;
}

/* A batch's samples can be stored as they are: times finite and not
 * negative, a known kind, an arm of the run (any for CALIBRATION, whose
 * arm is meaningless), round and position that fit the int columns.
 * Returns 0, or -1 with err naming the first bad sample. */
static int
s_check_samples(const Parity__SampleBatch *b, size_t n_arms, char *err,
                size_t errlen)
{
    if (b->batch_seq > INT32_MAX) {
        pw_err_line(err, errlen, "batch %s/%u: batch_seq is above %d",
                    b->run_id, b->batch_seq, INT32_MAX);
        return -1;
    }
    for (size_t i = 0; i < b->n_samples; i++) {
        const Parity__Sample *s = b->samples[i];
        const char *const names[] = { "wall_us", "user_us", "sys_us" };
        const double times[] = { s->wall_us, s->user_us, s->sys_us };
        for (int t = 0; t < 3; t++) {
            if (!isfinite(times[t])) {
                pw_err_line(err, errlen, "batch %s/%u: sample %zu has a %s "
                            "that is not finite", b->run_id, b->batch_seq, i,
                            names[t]);
                return -1;
            }
            if (times[t] < 0) {
                pw_err_line(err, errlen, "batch %s/%u: sample %zu has a "
                            "negative %s", b->run_id, b->batch_seq, i,
                            names[t]);
                return -1;
            }
        }
        if ((int)s->kind < 0 || (int)s->kind > PARITY__SAMPLE_KIND__ERROR) {
            pw_err_line(err, errlen, "batch %s/%u: sample %zu has unknown "
                        "kind %d", b->run_id, b->batch_seq, i, (int)s->kind);
            return -1;
        }
        if (s->kind != PARITY__SAMPLE_KIND__CALIBRATION && s->arm >= n_arms) {
            pw_err_line(err, errlen, "batch %s/%u: sample %zu names arm %u "
                        "(the run has %zu arms)", b->run_id, b->batch_seq, i,
                        s->arm, n_arms);
            return -1;
        }
        if (s->instructions < 0 || s->cycles < 0 || s->task_clock_ns < 0) {
            pw_err_line(err, errlen, "batch %s/%u: sample %zu has a "
                        "negative %s", b->run_id, b->batch_seq, i,
                        s->instructions < 0 ? "instructions" :
                        s->cycles < 0 ? "cycles" : "task_clock_ns");
            return -1;
        }
        if (s->round > INT32_MAX || s->position > INT32_MAX) {
            pw_err_line(err, errlen, "batch %s/%u: sample %zu has a %s above "
                        "%d", b->run_id, b->batch_seq, i,
                        s->round > INT32_MAX ? "round" : "position",
                        INT32_MAX);
            return -1;
        }
        /* The one text of a sample (a program's exit or stderr, which an
         * agent may have cut inside a character). */
        size_t elen = s->error ? strlen(s->error) : 0;
        size_t good = elen ? pw_wire_utf8_valid(s->error, elen) : 0;
        if (good < elen) {
            pw_err_line(err, errlen, "batch %s/%u: sample %zu has an error "
                        "that is not UTF-8 (byte %zu)", b->run_id,
                        b->batch_seq, i, good);
            return -1;
        }
    }
    return 0;
}

/* Append one batch's samples as COPY rows. */
static void
s_copy_rows(co_db_t *db, int64_t run, const Parity__SampleBatch *b)
{
    for (size_t i = 0; i < b->n_samples; i++) {
        const Parity__Sample *s = b->samples[i];
        const char *e = co_db_str(s->error);
        co_db_copy_row(db, 19);
        co_db_copy_i64(db, run);
        co_db_copy_i32(db, (int32_t)b->batch_seq);
        co_db_copy_i32(db, (int32_t)i);
        co_db_copy_i16(db, (int16_t)s->kind);
        co_db_copy_i32(db, (int32_t)s->arm);
        co_db_copy_i32(db, (int32_t)s->round);
        co_db_copy_i32(db, (int32_t)s->position);
        co_db_copy_f64(db, s->wall_us);
        co_db_copy_f64(db, s->user_us);
        co_db_copy_f64(db, s->sys_us);
        co_db_copy_i64(db, s->maxrss_kb);
        co_db_copy_i32(db, s->exit_status);
        co_db_copy_i32(db, s->term_signal);
        co_db_copy_i32(db, s->cpu);
        co_db_copy_i64(db, s->start_unix_us);
        co_db_copy_text(db, e, strlen(e));
        /* Counters: NULL where the host did not count (0). */
        const int64_t ctr[3] = { s->instructions, s->cycles,
                                 s->task_clock_ns };
        for (int k = 0; k < 3; k++) {
            if (ctr[k] > 0)
                co_db_copy_i64(db, ctr[k]);
            else
                co_db_copy_null(db);
        }
    }
}


static int
s_batch(co_db_t *db, int64_t host_id, const Parity__SampleBatch *b,
        size_t *stored, char *err, size_t errlen)
{
    int rc;
    int64_t run = 0;
    char runs[24], seq[16], n[16], what[CO_DB_UUID_MAX + 32];
    PGresult *r;

    *stored = 0;
    size_t n_arms = 0;
    snprintf(what, sizeof what, "batch %.*s/%u", CO_DB_UUID_MAX, b->run_id,
             b->batch_seq);
    rc = co_ingest_run_lookup(db, host_id, b->run_id, &run, &n_arms, what, err,
                      errlen);
    if (rc != CO_DB_OK)
        return rc;
    if (s_check_samples(b, n_arms, err, errlen) != 0)
        return CO_DB_REFUSED;
    snprintf(runs, sizeof runs, "%" PRId64, run);
    snprintf(seq, sizeof seq, "%u", b->batch_seq);
    snprintf(n, sizeof n, "%zu", b->n_samples);
    if ((rc = co_db_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        return rc;
    const char *p[] = { runs, seq, n };
    r = co_db_run(db, &s_sql[S_BATCH], p, &rc, err, errlen);
    if (!r)
        goto end;
    if (strcmp(PQcmdTuples(r), "0") == 0) {
        PQclear(r);
        co_db_rollback(db);
        return CO_DB_DUP;
    }
    PQclear(r);
    if (b->n_samples > 0) {
        co_db_copy_begin(db);
        s_copy_rows(db, run, b);
        rc = co_db_copy_send(db, s_sql[S_COPY_SAMPLES].sql, err, errlen);
        if (rc != CO_DB_OK)
            goto end;
        if ((rc = co_cals_copy_batch(db, host_id, b, err, errlen))
            != CO_DB_OK)
            goto end;
    }
end:
    rc = co_db_end(db, rc, err, errlen);
    if (rc == CO_DB_OK)
        *stored = b->n_samples;
    return rc;
}


int
co_ingest_batch(co_db_t *db, int64_t host_id, const Parity__SampleBatch *b,
            size_t *stored, char *err, size_t errlen)
{
    co_db_what(db, "batch %.*s/%u", CO_DB_UUID_MAX, b->run_id, b->batch_seq);
    int rc = s_batch(db, host_id, b, stored, err, errlen);
    co_db_what(db, NULL);
    if (rc == CO_DB_REFUSED)
        s_refusal_keep(db, host_id, b->run_id, b->batch_seq, err);
    return rc;
}

/* The group's calibration samples (those with wall_us > 0, as
 * co_cals_copy_batch takes them) as eight array texts for the batches
 * INSERT (run, batch_seq, host_id, taken_at_us, wall_us, cpu_us,
 * task_clock_us, peak_rss_kb), so that they
 * go into host_calibration in that statement, joined to the batches it
 * stored: no COPY of their own (two round trips a group fewer). Only
 * the first item of a key: a second one in the group is a duplicate
 * that the INSERT skips. The texts' limit is the COPY's. */
static void
s_cal_arrays(const co_ingest_item_t *items, size_t n, const int64_t *runs,
             const bool *want, pw_buf_t *cal)
{
    for (size_t k = 0; k < n; k++) {
        if (!want[k])
            continue;
        bool first = true;
        for (size_t j = 0; j < k && first; j++)
            first = !(want[j] && runs[j] == runs[k] &&
                      items[j].batch->batch_seq == items[k].batch->batch_seq);
        const Parity__SampleBatch *b = items[k].batch;
        for (size_t i = 0; first && i < b->n_samples; i++) {
            const Parity__Sample *x = b->samples[i];
            if (x->kind != PARITY__SAMPLE_KIND__CALIBRATION ||
                !(x->wall_us > 0))
                continue;
            const char *sep = cal[0].len ? "," : "{";
            pw_buf_printf(&cal[0], "%s%" PRId64, sep, runs[k]);
            pw_buf_printf(&cal[1], "%s%u", sep, b->batch_seq);
            pw_buf_printf(&cal[2], "%s%" PRId64, sep, items[k].host_id);
            pw_buf_printf(&cal[3], "%s%" PRId64, sep, x->start_unix_us);
            pw_buf_printf(&cal[4], "%s%.17g", sep, x->wall_us);
            /* The other metrics (025), NULL where the sample has none. */
            double more[3];
            co_cals_sample_metrics(x, &more[0], &more[1], &more[2]);
            for (int m = 0; m < 3; m++) {
                if (isnan(more[m]))
                    pw_buf_printf(&cal[5 + m], "%sNULL", sep);
                else
                    pw_buf_printf(&cal[5 + m], "%s%.17g", sep, more[m]);
            }
        }
    }
    for (int a = 0; a < 8; a++)
        (void)pw_buf_adds(&cal[a], cal[a].len ? "}" : "{}");
}

/* Look each batch's run up and check its samples: want[k] for those to
 * store (their run ids in runs[k], their keys appended to keys' three
 * array texts), the others' rc set (refused, unknown run). The number
 * wanted, or -1 (CO_DB_FAIL: the database failed) with err. */
static int
s_batch_candidates(co_db_t *db, co_ingest_item_t *items, size_t n,
                   int64_t *runs, bool *want, pw_buf_t *keys, char *err,
                   size_t errlen)
{
    int cand = 0;
    for (size_t k = 0; k < n; k++) {
        co_ingest_item_t *it = &items[k];
        const Parity__SampleBatch *b = it->batch;
        size_t n_arms = 0;
        char what[CO_DB_UUID_MAX + 32];
        snprintf(what, sizeof what, "batch %.*s/%u", CO_DB_UUID_MAX,
                 b->run_id, b->batch_seq);
        it->rc = co_ingest_run_lookup(db, it->host_id, b->run_id, &runs[k], &n_arms,
                              what, it->err, sizeof it->err);
        if (it->rc == CO_DB_FAIL) {
            pw_err_line(err, errlen, "%s", it->err);
            return -1;
        }
        if (it->rc != CO_DB_OK)
            continue;
        if (s_check_samples(b, n_arms, it->err, sizeof it->err) != 0) {
            it->rc = CO_DB_REFUSED;
            s_refusal_keep(db, it->host_id, b->run_id, b->batch_seq,
                           it->err);
            continue;
        }
        want[k] = true;
        cand++;
        /* "{1,2,3" until closed below; a failure sticks to the text. */
        pw_buf_printf(&keys[0], "%s%" PRId64, keys[0].len ? "," : "{",
                      runs[k]);
        pw_buf_printf(&keys[1], "%s%u", keys[1].len ? "," : "{",
                      b->batch_seq);
        pw_buf_printf(&keys[2], "%s%zu", keys[2].len ? "," : "{",
                      b->n_samples);
    }
    return cand;
}

/* Which wanted batches the INSERT's RETURNING rows (run, batch_seq) say
 * are new, into fresh: each row claims the first unclaimed item with its
 * key; the rest (stored before, or twice in this group) are duplicates. */
static void
s_batches_fresh(PGresult *r, const co_ingest_item_t *items, size_t n,
                const int64_t *runs, const bool *want, bool *fresh)
{
    int i_run = co_col(r, "run"), i_seq = co_col(r, "batch_seq");
    for (int row = 0; row < PQntuples(r); row++) {
        int64_t run = co_val_i64(r, row, i_run);
        unsigned seq = (unsigned)co_val_i64(r, row, i_seq);
        for (size_t k = 0; k < n; k++)
            if (want[k] && !fresh[k] && runs[k] == run
                && items[k].batch->batch_seq == seq) {
                fresh[k] = true;
                break;
            }
    }
}

/* After a group refused as a whole: one batch at a time, so one bad
 * batch does not sink the others. CO_DB_OK, or CO_DB_FAIL with err when
 * the database failed (those stored before stay stored, and acked). */
static int
s_batches_one_by_one(co_db_t *db, co_ingest_item_t *items, size_t n,
                     const bool *want, char *err, size_t errlen)
{
    for (size_t k = 0; k < n; k++) {
        if (!want[k])
            continue;
        items[k].rc = co_ingest_batch(db, items[k].host_id, items[k].batch,
                                  &items[k].stored, items[k].err,
                                  sizeof items[k].err);
        if (items[k].rc == CO_DB_FAIL) {
            for (size_t j = k + 1; j < n; j++)
                if (want[j])
                    items[j].rc = CO_DB_FAIL;
            pw_err_line(err, errlen, "%s", items[k].err);
            return CO_DB_FAIL;
        }
    }
    return CO_DB_OK;
}

/* co_ingest_batches with the INSERT's array texts in keys[0..7] (empty
 * buffers), which the caller frees. */
static int
s_batches(co_db_t *db, co_ingest_item_t *items, size_t n,
          pw_buf_t *keys, char *err, size_t errlen)
{
    int64_t runs[CO_INGEST_GROUP_MAX];
    bool want[CO_INGEST_GROUP_MAX] = { false };
    size_t cand = 0;
    int rc;

    if (n > CO_INGEST_GROUP_MAX) {
        pw_err_line(err, errlen, "co_ingest_batches: %zu batches (at most %d)", n,
                    CO_INGEST_GROUP_MAX);
        return CO_DB_FAIL;
    }
    for (size_t k = 0; k < n; k++) {
        items[k].rc = CO_DB_FAIL;
        items[k].stored = 0;
        items[k].err[0] = '\0';
    }
    int got = s_batch_candidates(db, items, n, runs, want, keys, err,
                                 errlen);
    if (got < 0)
        goto fail_all;
    cand = (size_t)got;
    if (cand == 0)
        return CO_DB_OK;
    for (int a = 0; a < 3; a++)
        (void)pw_buf_adds(&keys[a], "}");
    s_cal_arrays(items, n, runs, want, &keys[3]);
    for (int a = 0; a < S_BATCH_ARRAYS; a++)
        if (pw_buf_status(&keys[a]) != PW_BUF_OK) {
            pw_err_line(err, errlen, "batches: %s: %s",
                        a < 3 ? "keys" : "calibration samples",
                        pw_buf_strerror(pw_buf_status(&keys[a])));
            /* Too big for one statement: one batch at a time. */
            if (pw_buf_status(&keys[a]) == PW_BUF_TOOBIG && a >= 3)
                return s_batches_one_by_one(db, items, n, want, err, errlen);
            goto fail_all;
        }
    if ((rc = co_db_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        goto fail_all;
    const char *p[S_BATCH_ARRAYS];
    for (int a = 0; a < S_BATCH_ARRAYS; a++)
        p[a] = pw_buf_data(&keys[a]);
    /* The calibration samples of the batches this INSERT stores (not of
     * those stored before) go into host_calibration with it. */
    PGresult *r = co_db_run(db, &s_sql[S_BATCHES], p, &rc, err, errlen);
    if (!r)
        goto rollback;
    bool fresh[CO_INGEST_GROUP_MAX] = { false };
    s_batches_fresh(r, items, n, runs, want, fresh);
    PQclear(r);
    co_db_copy_begin(db);
    size_t rows = 0;
    for (size_t k = 0; k < n; k++)
        if (fresh[k]) {
            s_copy_rows(db, runs[k], items[k].batch);
            rows += items[k].batch->n_samples;
        }
    if (rows > 0) {
        rc = co_db_copy_send(db, s_sql[S_COPY_SAMPLES].sql, err, errlen);
        if (rc != CO_DB_OK)
            goto rollback;
        for (size_t k = 0; k < n; k++)
            if (fresh[k])
                co_cals_hold(db, items[k].host_id, items[k].batch);
    }
    if ((rc = co_db_exec(db, "COMMIT", err, errlen)) != CO_DB_OK)
        goto rollback;
    for (size_t k = 0; k < n; k++) {
        if (!want[k])
            continue;
        items[k].rc = fresh[k] ? CO_DB_OK : CO_DB_DUP;
        items[k].stored = fresh[k] ? items[k].batch->n_samples : 0;
    }
    return CO_DB_OK;
rollback:
    co_db_rollback(db);
    if (rc == CO_DB_REFUSED && co_db_connected(db))
        return s_batches_one_by_one(db, items, n, want, err, errlen);
fail_all:
    for (size_t k = 0; k < n; k++)
        if (items[k].rc == CO_DB_OK || want[k]) {
            items[k].rc = CO_DB_FAIL;
            items[k].stored = 0;
            snprintf(items[k].err, sizeof items[k].err, "%s",
                     err ? err : "");
        }
    return CO_DB_FAIL;
}

int
co_ingest_batches(co_db_t *db, co_ingest_item_t *items, size_t n, char *err,
                  size_t errlen)
{
    /* The keys: at most 64 numbers of 20 digits and a comma each, per
     * array; the calibration samples' five: the COPY's limit. */
    pw_buf_t keys[S_BATCH_ARRAYS];
    for (int a = 0; a < S_BATCH_ARRAYS; a++)
        pw_buf_init(&keys[a], a < 3 ? CO_INGEST_GROUP_MAX * 21 + 3 : CO_DB_COPY_MAX);
    /* A refusal of the group is not sent: its batches are then stored
     * one by one, each under its own name. */
    co_db_what(db, "batches");
    int rc = s_batches(db, items, n, keys, err, errlen);
    co_db_what(db, NULL);
    for (int a = 0; a < S_BATCH_ARRAYS; a++)
        pw_buf_free(&keys[a]);
    return rc;
}


int
co_ingest_refused_batch(co_db_t *db, int64_t host_id,
                        const Parity__RunEnd *re, const char *runid,
                        const char *batches, char *err, size_t errlen)
{
    int rc;
    char host[24];
    snprintf(host, sizeof host, "%" PRId64, host_id);
    const char *p[] = { host, re->run_id, batches, runid };
    PGresult *r = co_db_run(db, &s_sql[S_REFUSED_BATCH], p, &rc, err, errlen);
    if (!r)
        return rc;
    rc = CO_DB_LATER;
    if (PQntuples(r) == 1) {
        pw_err_line(err, errlen, "run_end %s counts batch %s, which was "
                    "refused: %s", re->run_id,
                    co_val(r, 0, co_col(r, "batch_seq")),
                    co_val(r, 0, co_col(r, "reason")));
        rc = CO_DB_DEPENDS;
    }
    PQclear(r);
    return rc;
}

