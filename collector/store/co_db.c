/* co_db.c -- the writer's connection, transactions, statements and
 * COPY; see co_db.h. */
#include "co_db.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "co_conn.h"
#include "co_migrations.h"
#include "pw_buf.h"
#include "pw_err.h"
#include "pw_json.h"

/* Recently used runs (uuid -> id, host), so that a batch costs no lookup. */
#define S_RUN_CACHE     1024
/* CO_DB_COPY_MAX, the most bytes of one COPY's data: one message needs
 * far less: a batch of 512 samples at most ~190 bytes each plus its
 * error texts (inside the 4 MiB frame), or a Calibration of 65536
 * samples of 62 bytes (4 MiB). A group of batches above it is refused as
 * a whole and then stored one batch at a time (co_ingest_batches). */
/* Benchmark and environment ids held (co_ids): a fleet's suites and
 * hosts' environments in use at once, far more than one burst needs. */
#define S_IDS_SLOTS     512

typedef struct {
    char uuid[CO_DB_UUID_MAX];
    int64_t id;
    int64_t host_id;
    size_t n_arms;                 /* arms stored with its RunStart */
} s_run_ref_t;

struct co_db {
    co_conn_t *cn;                 /* manual: co_db_connect makes it */
    s_run_ref_t runs[S_RUN_CACHE];
    size_t runs_next;              /* round-robin slot to overwrite */
    /* The calibration window of the floor kept on a host's row when a
     * Calibration arrives (co_db_set_floor_window; the last
     * co_verdicts_run_end's otherwise). 1..CO_DB_FLOOR_WINDOW_MAX. */
    int floor_window;
    /* This collector's --name: the holder written on a host's row at its
     * Hello, and the only one whose hosts co_hosts_online(false) and
     * co_hosts_offline touch (011_collectors.sql). */
    char collector[CO_DB_NAME_MAX];
    /* COPY data, reused: at most CO_DB_COPY_MAX bytes, checked on every
     * append (a failed append is sticky; co_db_copy_send reports it). */
    pw_buf_t copy;
    const co_db_run_cache_t *run_cache;  /* next run_end's samples */
    bool outer;                    /* co_db_begin's transaction is open */
    /* Its BEGIN is not sent yet: it goes with the first statement (the
     * first message's SAVEPOINT in the same round trip). */
    bool begin_pending;
    /* The last message's RELEASE SAVEPOINT is not sent yet: it goes with
     * the next message's SAVEPOINT, or the COMMIT releases it (one round
     * trip a message less; the writer's time is mostly round trips). */
    bool release_pending;
    int64_t last_run_end;          /* runs.id of the last RunEnd stored */
    /* The newest calibration rows of the hosts this connection stores
     * for (co_floors.h): a RunEnd's floor without reading them back.
     * Forgotten whenever what this connection wrote may be undone. NULL
     * when out of memory: the floor is then always read. */
    co_floors_t *floors;
    /* Ids of benchmarks and environments by their keys (co_ids.h): a
     * RunStart's two look-ups, mostly. Forgotten with the floors. NULL
     * when out of memory: then always asked. */
    co_ids_t *ids;
    /* The message being stored ("batch R/3", "hello"), set by the store
     * functions while they run: a statement the database refuses for
     * the message's content is reported under this name, never with the
     * statement (peers get the text; it would show them the schema). */
    char what[CO_DB_UUID_MAX + 48];
};

/* What this connection holds about rows it wrote (run ids, calibration
 * windows) is forgotten whenever they may be undone: a failed statement,
 * a rollback, a failed COMMIT, a lost connection. Rows a later COMMIT
 * loses would otherwise be used as if stored. */
static void
s_forget_written(co_db_t *db)
{
    co_floors_clear(db->floors);
    co_ids_clear(db->ids);
    memset(db->runs, 0, sizeof db->runs);
}

/* co_conn's failure of a statement in co_db's terms: data and
 * constraint errors (SQLSTATE classes 22 and 23) are the message's fault
 * and permanent; anything else (lost connection, disk full, shutdown) is
 * the database's and worth a retry. A refusal's text goes back to the
 * peer: it names the message (db->what) and, for a data error (a value
 * out of range, bytes that are not UTF-8), PostgreSQL's one-line reason
 * about the value, never the statement, and not a constraint's name.
 * Content checks before the database are meant to leave this for what
 * they missed. Any other failure is logged only, so err keeps co_conn's
 * text (the statement's name and the server's line). */
static int
s_failed(co_db_t *db, int kind, char *err, size_t errlen)
{
    s_forget_written(db);   /* what it wrote is about to be undone */
    const char *state = co_conn_sqlstate(db->cn);
    if (kind == CO_CONN_DATA) {
        const char *why = co_conn_reason(db->cn);
        pw_err_line(err, errlen, "%s%sthe database refused it: %s (SQLSTATE "
                    "%s)", db->what, db->what[0] ? ": " : "",
                    why[0] ? why : "data error", state);
        return CO_DB_REFUSED;
    }
    if (kind == CO_CONN_CONSTRAINT) {
        pw_err_line(err, errlen, "%s%sthe database refused it: a constraint "
                    "failed (SQLSTATE %s)", db->what, db->what[0] ? ": " : "",
                    state);
        return CO_DB_REFUSED;
    }
    return CO_DB_FAIL;
}

/* s_failed of a result of the raw connection (r may be NULL). */
static int
s_fail(co_db_t *db, PGresult *r, const char *what, char *err, size_t errlen)
{
    return s_failed(db, co_conn_failed(db->cn, r, what, err, errlen), err,
                    errlen);
}

void
co_db_what(co_db_t *db, const char *fmt, ...)
{
    va_list ap;
    db->what[0] = '\0';
    if (!fmt)
        return;
    va_start(ap, fmt);
    vsnprintf(db->what, sizeof db->what, fmt, ap);
    va_end(ap);
}

const char *
co_db_what_text(const co_db_t *db)
{
    return db->what;
}

co_db_t *
co_db_new(const char *conninfo)
{
    co_db_t *db = calloc(1, sizeof *db);
    if (db) {
        db->floor_window = CO_DB_FLOOR_WINDOW;
        pw_buf_init(&db->copy, CO_DB_COPY_MAX);
        /* Each COMMIT waits for its WAL flush: an Ack follows it. */
        co_conn_opts_t o = { .conninfo = conninfo,
                             .settings = "SET synchronous_commit = on",
                             .manual = true };
        db->cn = co_conn_new(&o);
        db->floors = co_floors_new(CO_DB_FLOOR_WINDOW);
        db->ids = co_ids_new(S_IDS_SLOTS);
        if (!db->cn || !db->floors || !db->ids)
            co_db_destroy(&db);
    }
    return db;
}

void
co_db_set_collector(co_db_t *db, const char *name)
{
    snprintf(db->collector, sizeof db->collector, "%s", name ? name : "");
}

void
co_db_set_floor_window(co_db_t *db, int window)
{
    if (window >= 1 && window <= CO_DB_FLOOR_WINDOW_MAX)
        db->floor_window = window;
}

void
co_db_disconnect(co_db_t *db)
{
    if (db) {
        co_conn_close(db->cn);
        db->outer = false;
        db->begin_pending = false;
        db->release_pending = false;
        s_forget_written(db);
    }
}

void
co_db_destroy(co_db_t **db)
{
    if (!db || !*db)
        return;
    co_db_disconnect(*db);
    co_floors_destroy(&(*db)->floors);
    co_ids_destroy(&(*db)->ids);
    co_conn_destroy(&(*db)->cn);
    pw_buf_free(&(*db)->copy);
    free(*db);
    *db = NULL;
}

bool
co_db_connected(const co_db_t *db)
{
    return co_conn_up(db->cn);
}

int
co_db_connect(co_db_t *db, char *err, size_t errlen)
{
    co_db_disconnect(db);
    memset(db->runs, 0, sizeof db->runs);
    if (co_conn_connect(db->cn, err, errlen) != 0)
        return CO_DB_FAIL;
    return CO_DB_OK;
}

/* Send co_db_begin's BEGIN if it is still waiting for a statement. */
static int
s_begin_flush(co_db_t *db, char *err, size_t errlen)
{
    if (!db->begin_pending)
        return CO_DB_OK;
    db->begin_pending = false;
    PGresult *r = PQexec(co_conn_raw(db->cn), "BEGIN");
    int rc = PQresultStatus(r) == PGRES_COMMAND_OK
             ? CO_DB_OK : s_fail(db, r, "BEGIN", err, errlen);
    PQclear(r);
    if (rc != CO_DB_OK)
        db->outer = false;
    return rc;
}

int
co_db_exec(co_db_t *db, const char *sql, char *err, size_t errlen)
{
    /* Inside co_db_begin's transaction each store function's own
     * transaction is a savepoint: a refused message is undone alone, and
     * the whole burst costs one COMMIT. */
    if (db->outer && strcmp(sql, "BEGIN") == 0) {
        sql = db->begin_pending ? "BEGIN; SAVEPOINT co_msg"
              : db->release_pending ? "RELEASE SAVEPOINT co_msg; "
                                      "SAVEPOINT co_msg"
              : "SAVEPOINT co_msg";
        db->begin_pending = false;
        db->release_pending = false;
    } else if (db->outer && strcmp(sql, "COMMIT") == 0) {
        db->release_pending = true;
        return CO_DB_OK;
    } else if (s_begin_flush(db, err, errlen) != CO_DB_OK) {
        return CO_DB_FAIL;
    }
    PGresult *r = PQexec(co_conn_raw(db->cn), sql);
    int rc = CO_DB_OK;
    if (PQresultStatus(r) != PGRES_COMMAND_OK
        && PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = s_fail(db, r, sql, err, errlen);
    else if (strcmp(sql, "COMMIT") == 0
             && strcmp(PQcmdStatus(r), "COMMIT") != 0) {
        /* PostgreSQL answers COMMIT of a transaction in which a
         * statement failed with ROLLBACK, and no error: what it held is
         * gone and must not be acked. */
        pw_err_line(err, errlen, "COMMIT: the transaction had failed and was "
                    "rolled back (%s)", PQcmdStatus(r));
        s_forget_written(db);
        rc = CO_DB_FAIL;
    }
    PQclear(r);
    return rc;
}

void
co_db_rollback(co_db_t *db)
{
    s_forget_written(db);   /* rows held may be undone */
    if (!co_conn_up(db->cn))
        return;
    if (db->outer && db->begin_pending)
        return;   /* nothing was sent */
    /* No message's savepoint is open: the one still held is the last
     * message's, stored and about to be acked, and must not be undone.
     * A statement that failed here has failed the whole transaction,
     * which its COMMIT then reports (ROLLBACK), acking nothing. */
    if (db->outer && db->release_pending)
        return;
    if (db->outer) {
        PQclear(PQexec(co_conn_raw(db->cn), "ROLLBACK TO SAVEPOINT co_msg; "
                       "RELEASE SAVEPOINT co_msg"));
    } else {
        PQclear(PQexec(co_conn_raw(db->cn), "ROLLBACK"));
    }
}

int
co_db_end(co_db_t *db, int rc, char *err, size_t errlen)
{
    if (rc == CO_DB_OK)
        return co_db_exec(db, "COMMIT", err, errlen);
    co_db_rollback(db);
    return rc;
}

int
co_db_begin(co_db_t *db, char *err, size_t errlen)
{
    if (db->outer)
        return CO_DB_OK;
    if (!co_conn_up(db->cn)) {
        pw_err_line(err, errlen, "BEGIN: not connected");
        return CO_DB_FAIL;
    }
    db->outer = true;
    db->begin_pending = true;
    return CO_DB_OK;
}

int
co_db_commit(co_db_t *db, char *err, size_t errlen)
{
    if (!db->outer)
        return CO_DB_OK;
    db->outer = false;
    db->release_pending = false;     /* COMMIT releases it */
    if (db->begin_pending) {
        db->begin_pending = false;   /* nothing was sent */
        return CO_DB_OK;
    }
    int rc = co_db_exec(db, "COMMIT", err, errlen);
    if (rc != CO_DB_OK)
        co_db_rollback(db);
    return rc;
}

void
co_db_abort(co_db_t *db)
{
    if (!db->outer)
        return;
    db->outer = false;
    db->release_pending = false;     /* ROLLBACK undoes it all */
    if (db->begin_pending) {
        db->begin_pending = false;   /* nothing was sent */
        s_forget_written(db);
        return;
    }
    co_db_rollback(db);
}

PGresult *
co_db_run_text(co_db_t *db, const char *sql, int n, const char *const *params,
               ExecStatusType want, int *rc, char *err, size_t errlen)
{
    co_stmt_t st = { sql, sql, n, want, false };
    return co_db_run(db, &st, params, rc, err, errlen);
}

/* The hot statements are parsed and planned once per connection, not at
 * every message (co_conn prepares a table entry with prepare set): under
 * a fleet's load the writer's server process waits for a CPU about as
 * long as it runs (docs/performance.md, "A fleet of 1,000 agents"), so
 * its CPU is the writer's time. */
PGresult *
co_db_run(co_db_t *db, const co_stmt_t *st, const char *const *params,
          int *rc, char *err, size_t errlen)
{
    if ((*rc = s_begin_flush(db, err, errlen)) != CO_DB_OK)
        return NULL;
    int kind;
    PGresult *r = co_conn_run(db->cn, st, params, &kind, err, errlen);
    *rc = r ? CO_DB_OK : s_failed(db, kind, err, errlen);
    return r;
}

/* ---- migrations ---------------------------------------------------- */

enum { S_VERSION, S_VERSION_ADD };
static const co_stmt_t s_sql[] = {
    [S_VERSION] = { "db.version", "SELECT coalesce(max(version), 0) AS version FROM "
                    "schema_version",
                    0, PGRES_TUPLES_OK, false },
    [S_VERSION_ADD] = { "db.version_add", "INSERT INTO schema_version (version, name) VALUES "
                        "($1, $2)", 2, PGRES_COMMAND_OK, false },
};

int
co_db_schema_version(co_db_t *db, int *version, char *err, size_t errlen)
{
    int rc;
    *version = 0;
    PGresult *r = co_db_run(db, &s_sql[S_VERSION], NULL, &rc, err, errlen);
    if (!r)
        return rc;
    *version = (int)co_val_i64(r, 0, co_col(r, "version"));
    PQclear(r);
    return CO_DB_OK;
}

int
co_db_migrate(co_db_t *db, int *applied, char *err, size_t errlen)
{
    int rc, version = 0, count = 0;
    char num[16];

    if (applied)
        *applied = 0;
    if (!co_db_connected(db)) {
        pw_err_line(err, errlen, "migrate: not connected");
        return CO_DB_FAIL;
    }
    rc = co_db_exec(db, "CREATE TABLE IF NOT EXISTS schema_version ("
                "version integer PRIMARY KEY, name text NOT NULL, "
                "applied_at timestamptz NOT NULL DEFAULT now())",
                err, errlen);
    if (rc != CO_DB_OK)
        return rc;
    /* Two collectors on one database must not both migrate: the advisory
     * lock serialises them for the session. */
    if ((rc = co_db_exec(db, "SELECT pg_advisory_lock(7041)", err, errlen))
        != CO_DB_OK)
        return rc;
    if ((rc = co_db_schema_version(db, &version, err, errlen)) != CO_DB_OK)
        goto unlock;
    for (size_t i = 0; i < co_migrations_count; i++) {
        const co_migration_t *m = &co_migrations[i];
        if (m->version <= version)
            continue;
        if ((rc = co_db_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
            goto unlock;
        PGresult *r = PQexec(co_conn_raw(db->cn), m->sql);
        if (PQresultStatus(r) != PGRES_COMMAND_OK
            && PQresultStatus(r) != PGRES_TUPLES_OK) {
            pw_err_line(err, errlen, "migration %s: %s", m->name,
                        PQerrorMessage(co_conn_raw(db->cn)));
            PQclear(r);
            co_db_rollback(db);
            rc = CO_DB_FAIL;
            goto unlock;
        }
        PQclear(r);
        snprintf(num, sizeof num, "%d", m->version);
        const char *p[] = { num, m->name };
        r = co_db_run(db, &s_sql[S_VERSION_ADD], p, &rc, err, errlen);
        if (!r) {
            co_db_rollback(db);
            goto unlock;
        }
        PQclear(r);
        if ((rc = co_db_exec(db, "COMMIT", err, errlen)) != CO_DB_OK)
            goto unlock;
        count++;
    }
    if (applied)
        *applied = count;
    rc = CO_DB_OK;
unlock:
    if (co_db_connected(db))
        PQclear(PQexec(co_conn_raw(db->cn), "SELECT pg_advisory_unlock(7041)"));
    return rc;
}

/* ---- binary COPY ----------------------------------------------------- */

/* Append to the COPY data. A failure (above CO_DB_COPY_MAX, or out of
 * memory) sticks to the buffer and co_db_copy_send reports it. */
static void
s_put(co_db_t *db, const void *p, size_t n)
{
    (void)pw_buf_add(&db->copy, p, n);
}

static void
s_put_i16(co_db_t *db, int16_t v)
{
    uint16_t be = htons((uint16_t)v);
    s_put(db, &be, 2);
}

static void
s_put_i32(co_db_t *db, int32_t v)
{
    uint32_t be = htonl((uint32_t)v);
    s_put(db, &be, 4);
}

static void
s_put_u64(co_db_t *db, uint64_t v)
{
    uint32_t hi = htonl((uint32_t)(v >> 32)), lo = htonl((uint32_t)v);
    s_put(db, &hi, 4);
    s_put(db, &lo, 4);
}

/* A row, then each field: length then value, in COPY BINARY's big-endian
 * layout. */
void
co_db_copy_row(co_db_t *db, int16_t fields)
{
    s_put_i16(db, fields);
}

void
co_db_copy_i16(co_db_t *db, int16_t v)
{
    s_put_i32(db, 2);
    s_put_i16(db, v);
}

void
co_db_copy_i32(co_db_t *db, int32_t v)
{
    s_put_i32(db, 4);
    s_put_i32(db, v);
}

void
co_db_copy_i64(co_db_t *db, int64_t v)
{
    s_put_i32(db, 8);
    s_put_u64(db, (uint64_t)v);
}

void
co_db_copy_bool(co_db_t *db, bool v)
{
    uint8_t b = v ? 1 : 0;
    s_put_i32(db, 1);
    s_put(db, &b, 1);
}

void
co_db_copy_f64(co_db_t *db, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    s_put_i32(db, 8);
    s_put_u64(db, bits);
}

void
co_db_copy_text(co_db_t *db, const char *s, size_t n)
{
    s_put_i32(db, (int32_t)n);
    s_put(db, s, n);
}

void
co_db_copy_null(co_db_t *db)
{
    s_put_i32(db, -1);
}

void
co_db_copy_begin(co_db_t *db)
{
    static const char sig[] = "PGCOPY\n\377\r\n";
    pw_buf_reset(&db->copy);
    s_put(db, sig, 11);
    s_put_i32(db, 0);   /* flags */
    s_put_i32(db, 0);   /* header extension length */
}

/* Most results collected after a COPY: one is expected. */
#define S_COPY_RESULTS_MAX 8

/* Collect the results after a COPY was ended, so that the connection is
 * usable again; the first failure goes to rc (when rc is CO_DB_OK). A
 * server still in COPY-IN answers PGRES_COPY_IN again and again: it is
 * told once more that the copy failed, and after S_COPY_RESULTS_MAX
 * results the connection is closed rather than spun on. */
static int
s_copy_results(co_db_t *db, const char *sql, int rc, char *err,
               size_t errlen)
{
    PGresult *r;
    int n = 0;
    while ((r = PQgetResult(co_conn_raw(db->cn))) != NULL) {
        ExecStatusType st = PQresultStatus(r);
        if (st != PGRES_COMMAND_OK && rc == CO_DB_OK)
            rc = st == PGRES_COPY_IN ? CO_DB_FAIL
                                     : s_fail(db, r, sql, err, errlen);
        PQclear(r);
        if (st == PGRES_COPY_IN)
            (void)PQputCopyEnd(co_conn_raw(db->cn), "parity: COPY abandoned");
        if (++n >= S_COPY_RESULTS_MAX) {
            pw_err_line(err, errlen, "%s: the server did not end the COPY",
                        sql);
            co_db_disconnect(db);
            return CO_DB_FAIL;
        }
    }
    return rc;
}

int
co_db_copy_send(co_db_t *db, const char *sql, char *err, size_t errlen)
{
    s_put_i16(db, -1);   /* trailer */
    int bst = pw_buf_status(&db->copy);
    if (bst != PW_BUF_OK) {
        /* Nothing was sent. Too big is the message's size (a group is
         * then stored one batch at a time); out of memory may pass. */
        pw_err_line(err, errlen, "COPY data: %s (at most %u bytes)",
                    pw_buf_strerror(bst), CO_DB_COPY_MAX);
        return bst == PW_BUF_TOOBIG ? CO_DB_REFUSED : CO_DB_FAIL;
    }
    int brc = s_begin_flush(db, err, errlen);
    if (brc != CO_DB_OK)
        return brc;
    PGresult *r = PQexec(co_conn_raw(db->cn), sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        int rc = s_fail(db, r, sql, err, errlen);
        PQclear(r);
        return rc;
    }
    PQclear(r);
    if (PQputCopyData(co_conn_raw(db->cn), pw_buf_data(&db->copy),
                      (int)db->copy.len) != 1) {
        pw_err_line(err, errlen, "PQputCopyData: %s",
                    PQerrorMessage(co_conn_raw(db->cn)));
        s_forget_written(db);
        /* The server stays in COPY-IN until the copy ends: end it as
         * failed (it rolls the rows back), then collect the results. */
        (void)PQputCopyEnd(co_conn_raw(db->cn), "parity: COPY data not sent");
        return s_copy_results(db, sql, CO_DB_FAIL, NULL, 0);
    }
    if (PQputCopyEnd(co_conn_raw(db->cn), NULL) != 1) {
        pw_err_line(err, errlen, "PQputCopyEnd: %s", PQerrorMessage(co_conn_raw(db->cn)));
        s_forget_written(db);
        return s_copy_results(db, sql, CO_DB_FAIL, NULL, 0);
    }
    return s_copy_results(db, sql, CO_DB_OK, err, errlen);
}

/* ---- what the handle holds -------------------------------------------- */

co_floors_t *
co_db_floors(co_db_t *db)
{
    return db->floors;
}

co_ids_t *
co_db_ids(co_db_t *db)
{
    return db->ids;
}

const char *
co_db_collector(const co_db_t *db)
{
    return db->collector;
}

int
co_db_floor_window(const co_db_t *db)
{
    return db->floor_window;
}

void
co_db_set_run_samples(co_db_t *db, const co_db_run_cache_t *cache)
{
    db->run_cache = cache;
}

const co_db_run_cache_t *
co_db_run_samples(const co_db_t *db)
{
    return db->run_cache;
}

int64_t
co_db_last_run_end(const co_db_t *db)
{
    return db->last_run_end;
}

void
co_db_set_last_run_end(co_db_t *db, int64_t run)
{
    db->last_run_end = run;
}

void
co_db_run_keep(co_db_t *db, const char *uuid, int64_t id, int64_t host_id,
               size_t n_arms)
{
    size_t len = strlen(uuid);
    if (len >= CO_DB_UUID_MAX)
        return;
    s_run_ref_t *slot = &db->runs[db->runs_next++ % S_RUN_CACHE];
    memcpy(slot->uuid, uuid, len + 1);
    slot->id = id;
    slot->host_id = host_id;
    slot->n_arms = n_arms;
}

bool
co_db_run_find(const co_db_t *db, const char *uuid, int64_t *id,
               int64_t *host_id, size_t *n_arms)
{
    for (size_t i = 0; i < S_RUN_CACHE; i++)
        if (db->runs[i].id && strcmp(db->runs[i].uuid, uuid) == 0) {
            *id = db->runs[i].id;
            *host_id = db->runs[i].host_id;
            if (n_arms)
                *n_arms = db->runs[i].n_arms;
            return true;
        }
    return false;
}

void
co_db_num(char *buf, size_t len, double x)
{
    if (pw_format_double(buf, len, x) < 0)
        snprintf(buf, len, "%.17g", x);
}
