/* co_db.c -- storage; see co_db.h. */
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

#include <jansson.h>
#include <libpq-fe.h>

#include "co_floors.h"
#include "co_ids.h"
#include "co_migrations.h"
#include "pw_buf.h"
#include "pw_err.h"
#include "pw_json.h"
#include "pw_wire.h"
#include "vd_verdict.h"

/* Recently used runs (uuid -> id, host), so that a batch costs no lookup. */
#define CO_DB_RUN_CACHE 1024
/* Seconds a connect may take unless the conninfo says otherwise: under
 * the 5 heartbeat intervals after which agents give up on a silent
 * collector (2 is the least libpq honours). */
#define CO_DB_UUID_MAX  128
/* Most bytes of one COPY's data. One message needs far less: a batch of
 * 512 samples at most ~190 bytes each plus its error texts (inside the
 * 4 MiB frame), or a Calibration of 65536 samples of 62 bytes (4 MiB).
 * A group of batches above it is refused as a whole and then stored one
 * batch at a time (co_db_batches). */
#define S_COPY_MAX      (64u << 20)
/* Most bytes of one SQL statement's text built by appending: the arms of
 * a run (64) or a run's summaries and verdicts, a few kB each. */
#define S_SQL_MAX       (1u << 20)
/* Benchmark and environment ids held (co_ids): a fleet's suites and
 * hosts' environments in use at once, far more than one burst needs. */
#define S_IDS_SLOTS     512
/* The writer's hot statements of fixed text, prepared once per
 * connection (s_query_p): ten or so. */
#define S_PREPARED_MAX  16

typedef struct {
    char uuid[CO_DB_UUID_MAX];
    int64_t id;
    int64_t host_id;
    size_t n_arms;                 /* arms stored with its RunStart */
} s_run_ref_t;

struct co_db {
    char *conninfo;
    PGconn *conn;
    s_run_ref_t runs[CO_DB_RUN_CACHE];
    size_t runs_next;              /* round-robin slot to overwrite */
    /* The calibration window of the floor kept on a host's row when a
     * Calibration arrives (co_db_set_floor_window; the last
     * co_db_run_end's otherwise). 1..CO_DB_FLOOR_WINDOW_MAX. */
    int floor_window;
    /* This collector's --name: the holder written on a host's row at its
     * Hello, and the only one whose hosts co_db_host_online(false) and
     * co_db_hosts_offline touch (011_collectors.sql). */
    char collector[CO_DB_NAME_MAX];
    /* COPY data, reused: at most S_COPY_MAX bytes, checked on every
     * append (a failed append is sticky; s_copy_send reports it). */
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
    /* The statements prepared on this connection (s_query_p), by the
     * address of their text: string literals only. Emptied with the
     * connection. */
    const char *prepared[S_PREPARED_MAX];
    int n_prepared;
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

/* Classify a failed result: data and constraint errors (SQLSTATE classes
 * 22 and 23) are the message's fault and permanent; anything else (lost
 * connection, disk full, shutdown) is the database's and worth a retry.
 * A refusal's text goes back to the peer: it names the message (db->what)
 * and, for a data error (class 22: a value out of range, bytes that are
 * not UTF-8), PostgreSQL's one-line reason about the value, never the
 * statement, and not a constraint's name (class 23). Content checks
 * before the database are meant to leave this for what they missed.
 * Any other failure is logged only, so it keeps the statement. */
static int
s_fail(co_db_t *db, PGresult *r, const char *what, char *err, size_t errlen)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *why = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
                        : NULL;
    s_forget_written(db);   /* what it wrote is about to be undone */
    if (state && strncmp(state, "22", 2) == 0) {
        pw_err_line(err, errlen, "%s%sthe database refused it: %s (SQLSTATE "
                    "%s)", db->what, db->what[0] ? ": " : "",
                    why ? why : "data error", state);
        return CO_DB_REFUSED;
    }
    if (state && strncmp(state, "23", 2) == 0) {
        pw_err_line(err, errlen, "%s%sthe database refused it: a constraint "
                    "failed (SQLSTATE %s)", db->what, db->what[0] ? ": " : "",
                    state);
        return CO_DB_REFUSED;
    }
    pw_err_line(err, errlen, "%s: %s", what, PQerrorMessage(db->conn));
    return CO_DB_FAIL;
}

/* Name the message being stored (see co_db.what); NULL clears it. */
static void s_what(co_db_t *db, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
s_what(co_db_t *db, const char *fmt, ...)
{
    va_list ap;
    db->what[0] = '\0';
    if (!fmt)
        return;
    va_start(ap, fmt);
    vsnprintf(db->what, sizeof db->what, fmt, ap);
    va_end(ap);
}

static void
s_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

co_db_t *
co_db_new(const char *conninfo)
{
    co_db_t *db = calloc(1, sizeof *db);
    if (!db)
        return NULL;
    db->conninfo = strdup(conninfo ? conninfo : "");
    if (!db->conninfo) {
        free(db);
        return NULL;
    }
    db->floor_window = CO_DB_FLOOR_WINDOW;
    db->floors = co_floors_new(CO_DB_FLOOR_WINDOW);
    db->ids = co_ids_new(S_IDS_SLOTS);
    pw_buf_init(&db->copy, S_COPY_MAX);
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


static int64_t
s_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void
co_db_disconnect(co_db_t *db)
{
    if (db && db->conn) {
        PQfinish(db->conn);
        db->conn = NULL;
    }
    if (db) {
        db->outer = false;
        db->begin_pending = false;
        db->release_pending = false;
        db->n_prepared = 0;     /* they lived in the server process */
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
    free((*db)->conninfo);
    pw_buf_free(&(*db)->copy);
    free(*db);
    *db = NULL;
}

bool
co_db_connected(const co_db_t *db)
{
    return db->conn && PQstatus(db->conn) == CONNECTION_OK;
}

PGconn *
co_db_open(const char *conninfo, const char *settings, char *err,
           size_t errlen)
{
    /* A server that takes the TCP connection and never answers would
     * stall the thread connecting (the writer's every Ack) for minutes.
     * connect_timeout comes first so that one in the user's conninfo
     * wins. */
    const char *const keys[] = { "connect_timeout", "dbname", NULL };
    const char *const vals[] = { CO_DB_CONNECT_TIMEOUT, conninfo, NULL };
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    const char *what = "PQconnectdb";
    if (c && PQstatus(c) == CONNECTION_OK) {
        /* Quiet NOTICEs (e.g. "relation exists, skipping") would go to
         * stderr and break the one-line-per-event log. */
        PQsetNoticeProcessor(c, s_quiet, NULL);
        if (!settings)
            return c;
        PGresult *r = PQexec(c, settings);
        bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (ok)
            return c;
        what = "settings";
    }
    const char *m = c ? PQerrorMessage(c) : "out of memory";
    pw_err(err, errlen, "%s: %.*s", what, (int)strcspn(m, "\n"), m);
    PQfinish(c);
    return NULL;
}

int
co_db_connect(co_db_t *db, char *err, size_t errlen)
{
    co_db_disconnect(db);
    memset(db->runs, 0, sizeof db->runs);
    /* jit off: co_jobs says why. */
    db->conn = co_db_open(db->conninfo, "SET synchronous_commit = on; "
                          "SET jit = off", err, errlen);
    return db->conn ? CO_DB_OK : CO_DB_FAIL;
}

/* Send co_db_begin's BEGIN if it is still waiting for a statement. */
static int
s_begin_flush(co_db_t *db, char *err, size_t errlen)
{
    if (!db->begin_pending)
        return CO_DB_OK;
    db->begin_pending = false;
    PGresult *r = PQexec(db->conn, "BEGIN");
    int rc = PQresultStatus(r) == PGRES_COMMAND_OK
             ? CO_DB_OK : s_fail(db, r, "BEGIN", err, errlen);
    PQclear(r);
    if (rc != CO_DB_OK)
        db->outer = false;
    return rc;
}

static int
s_exec(co_db_t *db, const char *sql, char *err, size_t errlen)
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
    PGresult *r = PQexec(db->conn, sql);
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

static void
s_rollback(co_db_t *db)
{
    s_forget_written(db);   /* rows held may be undone */
    if (!db->conn || PQstatus(db->conn) != CONNECTION_OK)
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
        PQclear(PQexec(db->conn, "ROLLBACK TO SAVEPOINT co_msg; "
                       "RELEASE SAVEPOINT co_msg"));
    } else {
        PQclear(PQexec(db->conn, "ROLLBACK"));
    }
}

int
co_db_begin(co_db_t *db, char *err, size_t errlen)
{
    if (db->outer)
        return CO_DB_OK;
    if (!db->conn || PQstatus(db->conn) != CONNECTION_OK) {
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
    int rc = s_exec(db, "COMMIT", err, errlen);
    if (rc != CO_DB_OK)
        s_rollback(db);
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
    s_rollback(db);
}

/* Parameterised statement; returns the result (caller clears) or NULL
 * with *rc and err set. want is PGRES_COMMAND_OK or PGRES_TUPLES_OK. */
static PGresult *
s_query(co_db_t *db, const char *sql, int n, const char *const *params,
        ExecStatusType want, int *rc, char *err, size_t errlen)
{
    if ((*rc = s_begin_flush(db, err, errlen)) != CO_DB_OK)
        return NULL;
    PGresult *r = PQexecParams(db->conn, sql, n, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != want) {
        *rc = s_fail(db, r, sql, err, errlen);
        PQclear(r);
        return NULL;
    }
    *rc = CO_DB_OK;
    return r;
}

/* The name under which sql is prepared on this connection, preparing it
 * the first time: false when it is not (no room, or PQprepare failed:
 * the caller then sends the text, whose failure says why). A statement
 * prepared is not undone by a rollback. */
static bool
s_prepared(co_db_t *db, const char *sql, int n, char *name, size_t len)
{
    int k = 0;
    while (k < db->n_prepared && db->prepared[k] != sql)
        k++;
    snprintf(name, len, "co_p%d", k);
    if (k < db->n_prepared)
        return true;
    if (k == S_PREPARED_MAX)
        return false;
    PGresult *r = PQprepare(db->conn, name, sql, n, NULL);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (ok)
        db->prepared[db->n_prepared++] = sql;
    return ok;
}

/* s_query for the hot statements of fixed text (a string literal: it is
 * known by its address): parsed and planned once per connection, not
 * at every message. Under a fleet's load the writer's server process
 * waits for a CPU about as long as it runs (docs/performance.md,
 * "A fleet of 1,000 agents"), so its CPU is the writer's time. */
static PGresult *
s_query_p(co_db_t *db, const char *sql, int n, const char *const *params,
          ExecStatusType want, int *rc, char *err, size_t errlen)
{
    char name[16];
    if ((*rc = s_begin_flush(db, err, errlen)) != CO_DB_OK)
        return NULL;
    if (!s_prepared(db, sql, n, name, sizeof name))
        return s_query(db, sql, n, params, want, rc, err, errlen);
    PGresult *r = PQexecPrepared(db->conn, name, n, params, NULL, NULL, 0);
    if (PQresultStatus(r) != want) {
        *rc = s_fail(db, r, sql, err, errlen);
        PQclear(r);
        return NULL;
    }
    *rc = CO_DB_OK;
    return r;
}

/* ---- migrations ---------------------------------------------------- */

int
co_db_schema_version(co_db_t *db, int *version, char *err, size_t errlen)
{
    int rc;
    *version = 0;
    PGresult *r = s_query(db, "SELECT coalesce(max(version), 0) FROM "
                          "schema_version", 0, NULL, PGRES_TUPLES_OK, &rc,
                          err, errlen);
    if (!r)
        return rc;
    *version = atoi(PQgetvalue(r, 0, 0));
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
    rc = s_exec(db, "CREATE TABLE IF NOT EXISTS schema_version ("
                "version integer PRIMARY KEY, name text NOT NULL, "
                "applied_at timestamptz NOT NULL DEFAULT now())",
                err, errlen);
    if (rc != CO_DB_OK)
        return rc;
    /* Two collectors on one database must not both migrate: the advisory
     * lock serialises them for the session. */
    if ((rc = s_exec(db, "SELECT pg_advisory_lock(7041)", err, errlen))
        != CO_DB_OK)
        return rc;
    if ((rc = co_db_schema_version(db, &version, err, errlen)) != CO_DB_OK)
        goto unlock;
    for (size_t i = 0; i < co_migrations_count; i++) {
        const co_migration_t *m = &co_migrations[i];
        if (m->version <= version)
            continue;
        if ((rc = s_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
            goto unlock;
        PGresult *r = PQexec(db->conn, m->sql);
        if (PQresultStatus(r) != PGRES_COMMAND_OK
            && PQresultStatus(r) != PGRES_TUPLES_OK) {
            pw_err_line(err, errlen, "migration %s: %s", m->name,
                        PQerrorMessage(db->conn));
            PQclear(r);
            s_rollback(db);
            rc = CO_DB_FAIL;
            goto unlock;
        }
        PQclear(r);
        snprintf(num, sizeof num, "%d", m->version);
        const char *p[] = { num, m->name };
        r = s_query(db, "INSERT INTO schema_version (version, name) "
                    "VALUES ($1, $2)", 2, p, PGRES_COMMAND_OK, &rc, err,
                    errlen);
        if (!r) {
            s_rollback(db);
            goto unlock;
        }
        PQclear(r);
        if ((rc = s_exec(db, "COMMIT", err, errlen)) != CO_DB_OK)
            goto unlock;
        count++;
    }
    if (applied)
        *applied = count;
    rc = CO_DB_OK;
unlock:
    if (co_db_connected(db))
        PQclear(PQexec(db->conn, "SELECT pg_advisory_unlock(7041)"));
    return rc;
}

/* ---- hosts --------------------------------------------------------- */

static char *
s_tags_json(Parity__Tag **tags, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++)
        json_object_set_new(o, tags[i]->key ? tags[i]->key : "",
                            json_string(tags[i]->value ? tags[i]->value
                                                       : ""));
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

static const char *
s_str(const char *s)
{
    return s ? s : "";
}

/* environment_json is empty or the text of one JSON object (readers such
 * as the hosts and show requests parse it). Returns 0, or -1 with err. */
static int
s_check_environment(const char *what, const char *text, char *err,
                    size_t errlen)
{
    json_error_t je;
    if (!text || !text[0])
        return 0;
    json_t *j = json_loads(text, 0, &je);
    bool object = json_is_object(j);
    json_decref(j);
    if (!object) {
        pw_err_line(err, errlen, "%s: environment_json is not a JSON object "
                    "(%s)", what, j ? "another JSON value" : je.text);
        return -1;
    }
    return 0;
}

static int
s_hello(co_db_t *db, const char *public_key, const Parity__Hello *h,
        int64_t *host_id, char *err, size_t errlen)
{
    int rc;
    char id[24];
    char *tags = s_tags_json(h->tags, h->n_tags);
    PGresult *r = NULL;

    *host_id = 0;
    if (!tags) {
        pw_err_line(err, errlen, "hello: tags to JSON: out of memory");
        return CO_DB_FAIL;
    }
    if (s_check_environment("hello", h->environment_json, err, errlen)
        != 0) {
        free(tags);
        return CO_DB_REFUSED;
    }
    if ((rc = s_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        goto done;
    const char *p[] = { public_key, s_str(h->agent_name),
                        s_str(h->agent_version), s_str(h->key_fingerprint),
                        s_str(h->boot_id), tags, db->collector };
    r = s_query(db,
        "INSERT INTO hosts (public_key, name, agent_version, key_claimed, "
        "boot_id, tags, online, collector) VALUES ($1, $2, $3, $4, $5, "
        "$6::jsonb, true, NULLIF($7, '')) "
        "ON CONFLICT (public_key) DO UPDATE SET name = EXCLUDED.name, "
        "agent_version = EXCLUDED.agent_version, key_claimed = "
        "EXCLUDED.key_claimed, boot_id = EXCLUDED.boot_id, tags = "
        "EXCLUDED.tags, online = true, collector = EXCLUDED.collector, "
        "last_hello = now(), last_seen = now() "
        "RETURNING id", 7, p, PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r)
        goto rollback;
    *host_id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    snprintf(id, sizeof id, "%" PRId64, *host_id);
    PQclear(r);
    if (h->environment_json && h->environment_json[0]) {
        const char *pe[] = { id, h->environment_json };
        r = s_query(db, "INSERT INTO environments (host_id, digest, "
                    "environment_json) VALUES ($1, md5($2), $2) "
                    "ON CONFLICT (host_id, digest) DO NOTHING", 2, pe,
                    PGRES_COMMAND_OK, &rc, err, errlen);
        if (!r)
            goto rollback;
        PQclear(r);
    }
    for (size_t i = 0; i < h->n_suites; i++) {
        const Parity__SuiteInfo *s = h->suites[i];
        json_t *a = json_array();
        for (size_t k = 0; a && k < s->n_benchmarks; k++)
            json_array_append_new(a, json_string(s_str(s->benchmarks[k])));
        char *benches = a ? json_dumps(a, JSON_COMPACT) : NULL;
        json_decref(a);
        if (!benches) {
            pw_err_line(err, errlen, "hello: suites to JSON: out of memory");
            rc = CO_DB_FAIL;
            goto rollback;
        }
        const char *ps[] = { id, s_str(s->name), s_str(s->digest), benches };
        r = s_query(db, "INSERT INTO suites (host_id, name, digest, "
                    "benchmarks) VALUES ($1, $2, $3, ARRAY(SELECT "
                    "json_array_elements_text($4::json))) ON CONFLICT "
                    "(host_id, name, digest) DO NOTHING", 4, ps,
                    PGRES_COMMAND_OK, &rc, err, errlen);
        free(benches);
        if (!r)
            goto rollback;
        PQclear(r);
    }
    rc = s_exec(db, "COMMIT", err, errlen);
    if (rc != CO_DB_OK)
        *host_id = 0;
    /* Its calibration rows may have been stored through another
     * collector since this one held them. */
    co_floors_forget(db->floors, *host_id);
    goto done;
rollback:
    *host_id = 0;
    s_rollback(db);
done:
    free(tags);
    return rc;
}

int
co_db_host_online(co_db_t *db, int64_t host_id, bool online, char *err,
                  size_t errlen)
{
    int rc;
    char id[24];
    snprintf(id, sizeof id, "%" PRId64, host_id);
    const char *p[] = { id, online ? "true" : "false", db->collector };
    co_floors_forget(db->floors, host_id);   /* co_db_hello says why */
    /* Offline only while this collector still holds the host: after a
     * failover the host's row belongs to the collector it went to. */
    PGresult *r = s_query(db, "UPDATE hosts SET online = $2::boolean, "
                          "last_seen = now() WHERE id = $1 AND ($2::boolean "
                          "OR collector IS NOT DISTINCT FROM NULLIF($3, ''))",
                          3, p, PGRES_COMMAND_OK, &rc, err, errlen);
    PQclear(r);
    return rc;
}

int
co_db_hosts_offline(co_db_t *db, char *err, size_t errlen)
{
    int rc;
    const char *p[] = { db->collector };
    PGresult *r = s_query(db, "UPDATE hosts SET online = false WHERE online "
                          "AND (collector IS NULL OR collector = $1)", 1, p,
                          PGRES_COMMAND_OK, &rc, err, errlen);
    PQclear(r);
    return rc;
}

/* ---- binary COPY ----------------------------------------------------- */

/* Append to the COPY data. A failure (above S_COPY_MAX, or out of
 * memory) sticks to the buffer and s_copy_send reports it. */
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

/* One field: length then value, in COPY BINARY's big-endian layout. */
static void
s_field_i16(co_db_t *db, int16_t v) { s_put_i32(db, 2); s_put_i16(db, v); }
static void
s_field_i32(co_db_t *db, int32_t v) { s_put_i32(db, 4); s_put_i32(db, v); }
static void
s_field_i64(co_db_t *db, int64_t v) { s_put_i32(db, 8); s_put_u64(db, (uint64_t)v); }

static void
s_field_bool(co_db_t *db, bool v)
{
    uint8_t b = v ? 1 : 0;
    s_put_i32(db, 1);
    s_put(db, &b, 1);
}

static void
s_field_f64(co_db_t *db, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    s_put_i32(db, 8);
    s_put_u64(db, bits);
}

static void
s_field_text(co_db_t *db, const char *s, size_t n)
{
    s_put_i32(db, (int32_t)n);
    s_put(db, s, n);
}

static void
s_copy_begin(co_db_t *db)
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
    while ((r = PQgetResult(db->conn)) != NULL) {
        ExecStatusType st = PQresultStatus(r);
        if (st != PGRES_COMMAND_OK && rc == CO_DB_OK)
            rc = st == PGRES_COPY_IN ? CO_DB_FAIL
                                     : s_fail(db, r, sql, err, errlen);
        PQclear(r);
        if (st == PGRES_COPY_IN)
            (void)PQputCopyEnd(db->conn, "parity: COPY abandoned");
        if (++n >= S_COPY_RESULTS_MAX) {
            pw_err_line(err, errlen, "%s: the server did not end the COPY",
                        sql);
            co_db_disconnect(db);
            return CO_DB_FAIL;
        }
    }
    return rc;
}

/* Run a COPY ... FROM STDIN (FORMAT binary) with the buffer built. */
static int
s_copy_send(co_db_t *db, const char *sql, char *err, size_t errlen)
{
    s_put_i16(db, -1);   /* trailer */
    int bst = pw_buf_status(&db->copy);
    if (bst != PW_BUF_OK) {
        /* Nothing was sent. Too big is the message's size (a group is
         * then stored one batch at a time); out of memory may pass. */
        pw_err_line(err, errlen, "COPY data: %s (at most %u bytes)",
                    pw_buf_strerror(bst), S_COPY_MAX);
        return bst == PW_BUF_TOOBIG ? CO_DB_REFUSED : CO_DB_FAIL;
    }
    int brc = s_begin_flush(db, err, errlen);
    if (brc != CO_DB_OK)
        return brc;
    PGresult *r = PQexec(db->conn, sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        int rc = s_fail(db, r, sql, err, errlen);
        PQclear(r);
        return rc;
    }
    PQclear(r);
    if (PQputCopyData(db->conn, pw_buf_data(&db->copy),
                      (int)db->copy.len) != 1) {
        pw_err_line(err, errlen, "PQputCopyData: %s",
                    PQerrorMessage(db->conn));
        s_forget_written(db);
        /* The server stays in COPY-IN until the copy ends: end it as
         * failed (it rolls the rows back), then collect the results. */
        (void)PQputCopyEnd(db->conn, "parity: COPY data not sent");
        return s_copy_results(db, sql, CO_DB_FAIL, NULL, 0);
    }
    if (PQputCopyEnd(db->conn, NULL) != 1) {
        pw_err_line(err, errlen, "PQputCopyEnd: %s", PQerrorMessage(db->conn));
        s_forget_written(db);
        return s_copy_results(db, sql, CO_DB_FAIL, NULL, 0);
    }
    return s_copy_results(db, sql, CO_DB_OK, err, errlen);
}

/* ---- calibrations ------------------------------------------------------ */

/* host_calibration (006): every calibration sample of a host, from
 * Calibration messages and the rounds' CALIBRATION samples, read by the
 * floor through its (host_id, taken_at_us) index. */
static const char s_copy_cal_sql[] =
    "COPY host_calibration (host_id, taken_at_us, wall_us, quiet) FROM "
    "STDIN (FORMAT binary)";

/* One host_calibration row (4 fields, 43 bytes: callers reserve more). */
static void
s_cal_row(co_db_t *db, int64_t host_id, int64_t taken_at_us, double wall_us,
          bool quiet)
{
    s_put_i16(db, 4);
    s_field_i64(db, host_id);
    s_field_i64(db, taken_at_us);
    s_field_f64(db, wall_us);
    s_field_bool(db, quiet);
    /* Held from now: a failed COPY or a rollback forgets every host. */
    co_floors_add(db->floors, host_id, taken_at_us, wall_us, quiet);
}

/* Append a batch's CALIBRATION samples with wall_us > 0 (those the floor
 * used from `samples` before 006) as host_calibration rows; returns how
 * many. They fit in the space reserved for the batch's sample rows. */
static size_t
s_copy_cal_rows(co_db_t *db, int64_t host_id, const Parity__SampleBatch *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->n_samples; i++) {
        const Parity__Sample *x = b->samples[i];
        if (x->kind != PARITY__SAMPLE_KIND__CALIBRATION || !(x->wall_us > 0))
            continue;
        s_cal_row(db, host_id, x->start_unix_us, x->wall_us, false);
        n++;
    }
    return n;
}

static int s_host_floor_refresh(co_db_t *db, int64_t host_id,
                                int64_t until_us, int window, char *err,
                                size_t errlen);

int
co_db_hello(co_db_t *db, const char *public_key, const Parity__Hello *h,
            int64_t *host_id, char *err, size_t errlen)
{
    s_what(db, "hello");
    int rc = s_hello(db, public_key, h, host_id, err, errlen);
    s_what(db, NULL);
    return rc;
}

static int
s_calibration(co_db_t *db, int64_t host_id, const Parity__Calibration *c,
              char *err, size_t errlen)
{
    int rc;
    char host[24], taken[24], n[24];
    PGresult *r;

    if (c->n_wall_us == 0) {
        pw_err_line(err, errlen, "calibration %s: no samples",
                    c->calibration_id);
        return CO_DB_REFUSED;
    }
    for (size_t i = 0; i < c->n_wall_us; i++)
        if (!isfinite(c->wall_us[i]) || c->wall_us[i] <= 0) {
            pw_err_line(err, errlen, "calibration %s: sample %zu is %g (must "
                        "be finite and > 0)", c->calibration_id, i,
                        c->wall_us[i]);
            return CO_DB_REFUSED;
        }
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(taken, sizeof taken, "%" PRId64, c->taken_at_us);
    snprintf(n, sizeof n, "%zu", c->n_wall_us);
    if ((rc = s_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        return rc;
    const char *p[] = { c->calibration_id, host, taken, n,
                        c->quiet ? "t" : "f" };
    r = s_query(db, "INSERT INTO calibrations (calibration_id, host_id, "
                "taken_at_us, n_samples, quiet) VALUES ($1, $2, $3, $4, $5) "
                "ON CONFLICT (calibration_id) DO NOTHING RETURNING id", 5, p,
                PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r)
        goto rollback;
    if (PQntuples(r) == 0) {
        PQclear(r);
        s_rollback(db);
        return CO_DB_DUP;
    }
    int64_t cal = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    s_copy_begin(db);
    for (size_t i = 0; i < c->n_wall_us; i++) {
        s_put_i16(db, 5);
        s_field_i64(db, cal);
        s_field_i64(db, host_id);
        s_field_i32(db, (int32_t)i);
        s_field_i64(db, c->taken_at_us);
        s_field_f64(db, c->wall_us[i]);
    }
    rc = s_copy_send(db, "COPY calibration_samples (calibration, host_id, "
                     "idx, taken_at_us, wall_us) FROM STDIN (FORMAT binary)",
                     err, errlen);
    if (rc != CO_DB_OK)
        goto rollback;
    /* The same samples where the floor reads them (006). */
    s_copy_begin(db);
    for (size_t i = 0; i < c->n_wall_us; i++)
        s_cal_row(db, host_id, c->taken_at_us, c->wall_us[i], c->quiet);
    if ((rc = s_copy_send(db, s_copy_cal_sql, err, errlen)) != CO_DB_OK)
        goto rollback;
    /* The host's row shows the floor from its window ending now (or at
     * this calibration, when the agent's clock is ahead). */
    int64_t until = s_now_us();
    if (c->taken_at_us > until)
        until = c->taken_at_us;
    if ((rc = s_host_floor_refresh(db, host_id, until, db->floor_window,
                                   err, errlen)) != CO_DB_OK)
        goto rollback;
    return s_exec(db, "COMMIT", err, errlen);
rollback:
    s_rollback(db);
    return rc;
}

int
co_db_calibration(co_db_t *db, int64_t host_id, const Parity__Calibration *c,
                  char *err, size_t errlen)
{
    s_what(db, "calibration %.*s", CO_DB_UUID_MAX, c->calibration_id);
    int rc = s_calibration(db, host_id, c, err, errlen);
    s_what(db, NULL);
    return rc;
}

/* ---- runs ------------------------------------------------------------ */

/* Remember a stored run's id (s_forget_written drops them all). */
static void
s_run_ref_keep(co_db_t *db, const char *uuid, int64_t id, int64_t host_id,
               size_t n_arms)
{
    size_t len = strlen(uuid);
    if (len >= CO_DB_UUID_MAX)
        return;
    s_run_ref_t *slot = &db->runs[db->runs_next++ % CO_DB_RUN_CACHE];
    memcpy(slot->uuid, uuid, len + 1);
    slot->id = id;
    slot->host_id = host_id;
    slot->n_arms = n_arms;
}

/* s_run_lookup from the remembered runs only: CO_DB_LATER when the run
 * is not remembered (it may still be stored). */
static int
s_run_cached(co_db_t *db, int64_t host_id, const char *uuid, int64_t *run,
             char *err, size_t errlen)
{
    for (size_t i = 0; i < CO_DB_RUN_CACHE; i++)
        if (db->runs[i].id && strcmp(db->runs[i].uuid, uuid) == 0) {
            if (db->runs[i].host_id != host_id) {
                pw_err_line(err, errlen, "run %s belongs to another host",
                            uuid);
                return CO_DB_REFUSED;
            }
            *run = db->runs[i].id;
            return CO_DB_OK;
        }
    return CO_DB_LATER;
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
    if (s_exec(db, "BEGIN", e, sizeof e) != CO_DB_OK)
        return;
    const char *p[] = { host, uuid, seq, why };
    PGresult *r = s_query(db, "INSERT INTO refusals (host_id, run_uuid, "
                          "batch_seq, reason) SELECT $1::bigint, $2::text, "
                          "$3::bigint, $4::text WHERE CASE WHEN $3::bigint "
                          "< 0 THEN NOT EXISTS (SELECT 1 FROM runs r WHERE "
                          "r.run_uuid = $2) ELSE EXISTS (SELECT 1 FROM runs "
                          "r WHERE r.run_uuid = $2 AND r.host_id = $1) END "
                          "ON CONFLICT DO NOTHING", 4, p, PGRES_COMMAND_OK,
                          &rc, e, sizeof e);
    if (!r) {
        s_rollback(db);
        return;
    }
    PQclear(r);
    (void)s_exec(db, "COMMIT", e, sizeof e);
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
    PGresult *r = s_query(db, "SELECT reason FROM refusals WHERE host_id = "
                          "$1 AND run_uuid = $2 AND batch_seq = -1", 2, p,
                          PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r)
        return rc;
    rc = CO_DB_LATER;
    if (PQntuples(r) == 1) {
        pw_err_line(err, errlen, "%s depends on run_start %s, which was "
                    "refused: %s", what, uuid, PQgetvalue(r, 0, 0));
        rc = CO_DB_DEPENDS;
    }
    PQclear(r);
    return rc;
}

/* The run with this uuid: CO_DB_OK with *run set when it is this host's,
 * CO_DB_LATER when unknown, CO_DB_REFUSED when another host's,
 * CO_DB_DEPENDS (err naming what: "batch R/3") when this host's RunStart
 * of it was refused. */
static int
s_run_lookup(co_db_t *db, int64_t host_id, const char *uuid, int64_t *run,
             size_t *n_arms, const char *what, char *err, size_t errlen)
{
    int rc;

    for (size_t i = 0; i < CO_DB_RUN_CACHE; i++)
        if (db->runs[i].id && strcmp(db->runs[i].uuid, uuid) == 0) {
            if (db->runs[i].host_id != host_id)
                goto other;
            *run = db->runs[i].id;
            if (n_arms)
                *n_arms = db->runs[i].n_arms;
            return CO_DB_OK;
        }
    const char *p[] = { uuid };
    PGresult *r = s_query(db, "SELECT id, host_id, (SELECT count(*) FROM "
                          "arms WHERE arms.run = runs.id) FROM runs WHERE "
                          "run_uuid = $1", 1, p, PGRES_TUPLES_OK, &rc, err,
                          errlen);
    if (!r)
        return rc;
    if (PQntuples(r) == 0) {
        PQclear(r);
        rc = s_refused_run(db, host_id, uuid, what, err, errlen);
        if (rc == CO_DB_LATER)
            pw_err_line(err, errlen, "run %s: no RunStart stored yet", uuid);
        return rc;
    }
    int64_t id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    int64_t owner = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    size_t arms = (size_t)strtoull(PQgetvalue(r, 0, 2), NULL, 10);
    PQclear(r);
    s_run_ref_keep(db, uuid, id, owner, arms);
    if (owner != host_id)
        goto other;
    *run = id;
    if (n_arms)
        *n_arms = arms;
    return CO_DB_OK;
other:
    pw_err_line(err, errlen, "run %s belongs to another host", uuid);
    return CO_DB_REFUSED;
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
s_id_of(co_db_t *db, char *key, size_t klen, const char *sql,
        const char *again, const char *const *params, bool required,
        char *out, size_t len, char *err, size_t errlen)
{
    int rc = CO_DB_OK;
    int64_t id;
    out[0] = '\0';
    if (key && co_ids_get(db->ids, key, klen, &id)) {
        snprintf(out, len, "%" PRId64, id);
        free(key);
        return CO_DB_OK;
    }
    PGresult *r = s_query(db, sql, 2, params, PGRES_TUPLES_OK, &rc, err,
                          errlen);
    if (r && PQntuples(r) == 0) {
        PQclear(r);
        r = s_query(db, again, 2, params, PGRES_TUPLES_OK, &rc, err, errlen);
    }
    if (r && PQntuples(r) > 0) {
        snprintf(out, len, "%s", PQgetvalue(r, 0, 0));
        if (key)
            co_ids_put(db->ids, key, klen, strtoll(out, NULL, 10));
    } else if (r && required) {
        rc = CO_DB_FAIL;
        pw_err_line(err, errlen, "%s: %.64s/%.64s neither stored nor found",
                    db->what, params[0], params[1]);
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
    const char *pb[] = { s_str(rs->suite), s_str(rs->benchmark) };
    char *key = s_ids_key('b', pb[0], strlen(pb[0]), pb[1], &klen);
    /* DO NOTHING, not an upsert that updates: that locks the row until
     * the burst's COMMIT, and every other writer (of this collector or
     * another on the database) storing a run of the benchmark would
     * wait for it, or deadlock with it over two benchmarks. */
    return s_id_of(db, key, klen, "WITH ins AS (INSERT INTO benchmarks "
                   "(suite, name) VALUES ($1, $2) ON CONFLICT (suite, name) "
                   "DO NOTHING RETURNING id) SELECT id FROM ins UNION ALL "
                   "SELECT id FROM benchmarks WHERE suite = $1 AND name = $2",
                   "SELECT id FROM benchmarks WHERE suite = $1 AND name = $2",
                   pb, true, bench, len, err, errlen);
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
    return s_id_of(db, key, klen, "WITH ins AS (INSERT INTO environments "
                   "(host_id, digest, environment_json) VALUES ($1, md5($2), "
                   "$2) ON CONFLICT (host_id, digest) DO NOTHING RETURNING "
                   "id) SELECT id FROM ins UNION ALL SELECT id FROM "
                   "environments WHERE host_id = $1 AND digest = md5($2)",
                   "SELECT id FROM environments WHERE host_id = $1 AND "
                   "digest = md5($2)", pe, false, envid, len, err, errlen);
}

/* Every arm of a run in one INSERT (a statement per arm was a round trip
 * per arm for each run). Arms are at most PW_WIRE_MAX_ARMS. */
static int
s_run_arms(co_db_t *db, const char *runid, const Parity__RunStart *rs,
           char *err, size_t errlen)
{
    enum { COLS = 7 };
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
                "shell, version_output) VALUES ");
    for (size_t i = 0; i < n; i++) {
        const Parity__Arm *a = rs->arms[i];
        json_t *argv = json_array();
        for (size_t k = 0; argv && k < a->n_argv; k++)
            json_array_append_new(argv, json_string(s_str(a->argv[k])));
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
                                  s_str(a->shell), s_str(a->version_output) };
        memcpy(&p[i * COLS], row, sizeof row);
        size_t b = i * COLS;
        pw_buf_printf(&sql, "%s($%zu, $%zu, $%zu, $%zu, ARRAY(SELECT "
                      "json_array_elements_text($%zu::json)), $%zu, $%zu)",
                      i ? ", " : "", b + 1, b + 2, b + 3, b + 4, b + 5,
                      b + 6, b + 7);
    }
    if (pw_buf_status(&sql) != PW_BUF_OK) {
        pw_err_line(err, errlen, "run_start: arms statement: %s",
                    pw_buf_strerror(pw_buf_status(&sql)));
        goto done;
    }
    PGresult *r = s_query(db, pw_buf_data(&sql), (int)(n * COLS), p,
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

static int
s_run_start(co_db_t *db, int64_t host_id, const Parity__RunStart *rs,
            char *err, size_t errlen)
{
    int rc;
    int64_t run = 0;
    char host[24], runs[16], warmup[16], started[24], runid[24], bench[24];
    char envid[24] = "";
    char *tags = NULL;
    PGresult *r;

    /* A resend of a run this connection stored; others are found by the
     * INSERT's conflict below, which saves a look-up per new run. */
    rc = s_run_cached(db, host_id, rs->run_id, &run, err, errlen);
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
    if (s_check_environment("run_start", rs->environment_json, err,
                            errlen) != 0)
        return CO_DB_REFUSED;
    if (!(tags = s_tags_json(rs->tags, rs->n_tags))) {
        pw_err_line(err, errlen, "run_start: tags to JSON: out of memory");
        return CO_DB_FAIL;
    }
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(runs, sizeof runs, "%u", rs->runs);
    snprintf(warmup, sizeof warmup, "%u", rs->warmup);
    snprintf(started, sizeof started, "%" PRId64, rs->started_at_us);
    if ((rc = s_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        goto done;
    if ((rc = s_benchmark_id(db, rs, bench, sizeof bench, err, errlen))
        != CO_DB_OK)
        goto rollback;
    if (rs->environment_json && rs->environment_json[0] &&
        (rc = s_environment_id(db, host_id, rs->environment_json, envid,
                               sizeof envid, err, errlen)) != CO_DB_OK)
        goto rollback;
    const char *p[] = { rs->run_id, host, bench, s_str(rs->job_id),
                        s_str(rs->label), tags, runs, warmup, started,
                        envid[0] ? envid : NULL };
    /* A job's run takes the job's variables (they make its series,
     * 007), its tags under the run's own (which win) and its label when
     * the run has none: in the same statement, whatever the agent sent. */
    r = s_query_p(db, "INSERT INTO runs (run_uuid, host_id, benchmark_id, "
                "job_id, label, tags, runs, warmup, started_at_us, "
                "environment, vars) SELECT $1, $2::bigint, $3::bigint, $4, "
                "CASE WHEN $5 = '' THEN COALESCE(j.label, '') ELSE $5 END, "
                "COALESCE(j.tags, '{}') || $6::jsonb, $7::int, $8::int, "
                "$9::bigint, $10::bigint, COALESCE(j.vars, '{}') FROM "
                "(VALUES (1)) AS one (x) LEFT JOIN jobs j ON j.job_uuid = $4 "
                "AND $4 <> '' ON CONFLICT (run_uuid) DO NOTHING RETURNING id",
                10, p, PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r)
        goto rollback;
    if (PQntuples(r) == 0) {
        /* Stored before: a resend (this host's) or another host's id. */
        PQclear(r);
        s_rollback(db);
        rc = s_run_lookup(db, host_id, rs->run_id, &run, NULL, "run_start",
                          err, errlen);
        rc = rc == CO_DB_OK ? CO_DB_DUP : rc;
        goto done;
    }
    snprintf(runid, sizeof runid, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    if ((rc = s_run_arms(db, runid, rs, err, errlen)) != CO_DB_OK)
        goto rollback;
    rc = s_exec(db, "COMMIT", err, errlen);
    /* Its batches need not look the run up (the first one did). */
    if (rc == CO_DB_OK)
        s_run_ref_keep(db, rs->run_id, strtoll(runid, NULL, 10), host_id,
                       rs->n_arms);
    goto done;
rollback:
    s_rollback(db);
done:
    free(tags);
    return rc;
}

int
co_db_run_start(co_db_t *db, int64_t host_id, const Parity__RunStart *rs,
                char *err, size_t errlen)
{
    s_what(db, "run_start %.*s", CO_DB_UUID_MAX, rs->run_id);
    int rc = s_run_start(db, host_id, rs, err, errlen);
    s_what(db, NULL);
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
        const char *e = s_str(s->error);
        s_put_i16(db, 19);
        s_field_i64(db, run);
        s_field_i32(db, (int32_t)b->batch_seq);
        s_field_i32(db, (int32_t)i);
        s_field_i16(db, (int16_t)s->kind);
        s_field_i32(db, (int32_t)s->arm);
        s_field_i32(db, (int32_t)s->round);
        s_field_i32(db, (int32_t)s->position);
        s_field_f64(db, s->wall_us);
        s_field_f64(db, s->user_us);
        s_field_f64(db, s->sys_us);
        s_field_i64(db, s->maxrss_kb);
        s_field_i32(db, s->exit_status);
        s_field_i32(db, s->term_signal);
        s_field_i32(db, s->cpu);
        s_field_i64(db, s->start_unix_us);
        s_field_text(db, e, strlen(e));
        /* Counters: NULL where the host did not count (0). */
        const int64_t ctr[3] = { s->instructions, s->cycles,
                                 s->task_clock_ns };
        for (int k = 0; k < 3; k++) {
            if (ctr[k] > 0)
                s_field_i64(db, ctr[k]);
            else
                s_put_i32(db, -1);
        }
    }
}

static const char s_copy_samples_sql[] =
    "COPY samples (run, batch_seq, idx, kind, arm, round, position, "
    "wall_us, user_us, sys_us, maxrss_kb, exit_status, term_signal, cpu, "
    "start_unix_us, error, instructions, cycles, task_clock_ns) FROM STDIN "
    "(FORMAT binary)";

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
    rc = s_run_lookup(db, host_id, b->run_id, &run, &n_arms, what, err,
                      errlen);
    if (rc != CO_DB_OK)
        return rc;
    if (s_check_samples(b, n_arms, err, errlen) != 0)
        return CO_DB_REFUSED;
    snprintf(runs, sizeof runs, "%" PRId64, run);
    snprintf(seq, sizeof seq, "%u", b->batch_seq);
    snprintf(n, sizeof n, "%zu", b->n_samples);
    if ((rc = s_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        return rc;
    const char *p[] = { runs, seq, n };
    r = s_query(db, "INSERT INTO batches (run, batch_seq, n_samples) VALUES "
                "($1, $2, $3) ON CONFLICT (run, batch_seq) DO NOTHING", 3, p,
                PGRES_COMMAND_OK, &rc, err, errlen);
    if (!r)
        goto rollback;
    if (strcmp(PQcmdTuples(r), "0") == 0) {
        PQclear(r);
        s_rollback(db);
        return CO_DB_DUP;
    }
    PQclear(r);
    if (b->n_samples > 0) {
        s_copy_begin(db);
        s_copy_rows(db, run, b);
        rc = s_copy_send(db, s_copy_samples_sql, err, errlen);
        if (rc != CO_DB_OK)
            goto rollback;
        s_copy_begin(db);
        if (s_copy_cal_rows(db, host_id, b) > 0 &&
            (rc = s_copy_send(db, s_copy_cal_sql, err, errlen)) != CO_DB_OK)
            goto rollback;
    }
    rc = s_exec(db, "COMMIT", err, errlen);
    if (rc == CO_DB_OK)
        *stored = b->n_samples;
    return rc;
rollback:
    s_rollback(db);
    return rc;
}


int
co_db_batch(co_db_t *db, int64_t host_id, const Parity__SampleBatch *b,
            size_t *stored, char *err, size_t errlen)
{
    s_what(db, "batch %.*s/%u", CO_DB_UUID_MAX, b->run_id, b->batch_seq);
    int rc = s_batch(db, host_id, b, stored, err, errlen);
    s_what(db, NULL);
    if (rc == CO_DB_REFUSED)
        s_refusal_keep(db, host_id, b->run_id, b->batch_seq, err);
    return rc;
}

/* The group's calibration samples (those with wall_us > 0, as
 * s_copy_cal_rows takes them) as five array texts for the batches
 * INSERT (run, batch_seq, host_id, taken_at_us, wall_us), so that they
 * go into host_calibration in that statement, joined to the batches it
 * stored: no COPY of their own (two round trips a group fewer). Only
 * the first item of a key: a second one in the group is a duplicate
 * that the INSERT skips. The texts' limit is the COPY's. */
static void
s_cal_arrays(const co_db_batch_item_t *items, size_t n, const int64_t *runs,
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
        }
    }
    for (int a = 0; a < 5; a++)
        (void)pw_buf_adds(&cal[a], cal[a].len ? "}" : "{}");
}

/* The fresh batches' calibration samples, stored by the INSERT, into
 * the rows held for the floor (co_floors), as s_cal_row does. */
static void
s_cal_hold(co_db_t *db, const co_db_batch_item_t *items, size_t n,
           const bool *fresh)
{
    for (size_t k = 0; k < n; k++) {
        const Parity__SampleBatch *b = items[k].batch;
        for (size_t i = 0; fresh[k] && i < b->n_samples; i++) {
            const Parity__Sample *x = b->samples[i];
            if (x->kind == PARITY__SAMPLE_KIND__CALIBRATION && x->wall_us > 0)
                co_floors_add(db->floors, items[k].host_id, x->start_unix_us,
                              x->wall_us, false);
        }
    }
}

/* Look each batch's run up and check its samples: want[k] for those to
 * store (their run ids in runs[k], their keys appended to keys' three
 * array texts), the others' rc set (refused, unknown run). The number
 * wanted, or -1 (CO_DB_FAIL: the database failed) with err. */
static int
s_batch_candidates(co_db_t *db, co_db_batch_item_t *items, size_t n,
                   int64_t *runs, bool *want, pw_buf_t *keys, char *err,
                   size_t errlen)
{
    int cand = 0;
    for (size_t k = 0; k < n; k++) {
        co_db_batch_item_t *it = &items[k];
        const Parity__SampleBatch *b = it->batch;
        size_t n_arms = 0;
        char what[CO_DB_UUID_MAX + 32];
        snprintf(what, sizeof what, "batch %.*s/%u", CO_DB_UUID_MAX,
                 b->run_id, b->batch_seq);
        it->rc = s_run_lookup(db, it->host_id, b->run_id, &runs[k], &n_arms,
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
s_batches_fresh(PGresult *r, const co_db_batch_item_t *items, size_t n,
                const int64_t *runs, const bool *want, bool *fresh)
{
    for (int row = 0; row < PQntuples(r); row++) {
        int64_t run = strtoll(PQgetvalue(r, row, 0), NULL, 10);
        unsigned seq = (unsigned)strtoul(PQgetvalue(r, row, 1), NULL, 10);
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
s_batches_one_by_one(co_db_t *db, co_db_batch_item_t *items, size_t n,
                     const bool *want, char *err, size_t errlen)
{
    for (size_t k = 0; k < n; k++) {
        if (!want[k])
            continue;
        items[k].rc = co_db_batch(db, items[k].host_id, items[k].batch,
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

/* The arrays of the batches INSERT: three of keys (run, batch_seq,
 * n_samples), five of calibration samples (s_cal_arrays). */
#define S_BATCH_ARRAYS 8

/* co_db_batches with the INSERT's array texts in keys[0..7] (empty
 * buffers), which the caller frees. */
static int
s_batches(co_db_t *db, co_db_batch_item_t *items, size_t n,
          pw_buf_t *keys, char *err, size_t errlen)
{
    int64_t runs[CO_DB_GROUP_MAX];
    bool want[CO_DB_GROUP_MAX] = { false };
    size_t cand = 0;
    int rc;

    if (n > CO_DB_GROUP_MAX) {
        pw_err_line(err, errlen, "co_db_batches: %zu batches (at most %d)", n,
                    CO_DB_GROUP_MAX);
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
    if ((rc = s_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        goto fail_all;
    const char *p[S_BATCH_ARRAYS];
    for (int a = 0; a < S_BATCH_ARRAYS; a++)
        p[a] = pw_buf_data(&keys[a]);
    /* The calibration samples of the batches this INSERT stores (not of
     * those stored before) go into host_calibration with it. */
    PGresult *r = s_query_p(db, "WITH b AS (INSERT INTO batches (run, "
                          "batch_seq, n_samples) SELECT * FROM "
                          "unnest($1::bigint[], $2::integer[], "
                          "$3::integer[]) ON CONFLICT (run, batch_seq) DO "
                          "NOTHING RETURNING run, batch_seq), c AS (INSERT "
                          "INTO host_calibration (host_id, taken_at_us, "
                          "wall_us) SELECT u.h, u.t, u.w FROM "
                          "unnest($4::bigint[], $5::integer[], "
                          "$6::bigint[], $7::bigint[], $8::float8[]) AS u "
                          "(r, s, h, t, w) JOIN b ON b.run = u.r AND "
                          "b.batch_seq = u.s) SELECT run, batch_seq FROM b",
                          S_BATCH_ARRAYS, p, PGRES_TUPLES_OK, &rc, err,
                          errlen);
    if (!r)
        goto rollback;
    bool fresh[CO_DB_GROUP_MAX] = { false };
    s_batches_fresh(r, items, n, runs, want, fresh);
    PQclear(r);
    s_copy_begin(db);
    size_t rows = 0;
    for (size_t k = 0; k < n; k++)
        if (fresh[k]) {
            s_copy_rows(db, runs[k], items[k].batch);
            rows += items[k].batch->n_samples;
        }
    if (rows > 0) {
        rc = s_copy_send(db, s_copy_samples_sql, err, errlen);
        if (rc != CO_DB_OK)
            goto rollback;
        s_cal_hold(db, items, n, fresh);
    }
    if ((rc = s_exec(db, "COMMIT", err, errlen)) != CO_DB_OK)
        goto rollback;
    for (size_t k = 0; k < n; k++) {
        if (!want[k])
            continue;
        items[k].rc = fresh[k] ? CO_DB_OK : CO_DB_DUP;
        items[k].stored = fresh[k] ? items[k].batch->n_samples : 0;
    }
    return CO_DB_OK;
rollback:
    s_rollback(db);
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
co_db_batches(co_db_t *db, co_db_batch_item_t *items, size_t n, char *err,
              size_t errlen)
{
    /* The keys: at most 64 numbers of 20 digits and a comma each, per
     * array; the calibration samples' five: the COPY's limit. */
    pw_buf_t keys[S_BATCH_ARRAYS];
    for (int a = 0; a < S_BATCH_ARRAYS; a++)
        pw_buf_init(&keys[a], a < 3 ? CO_DB_GROUP_MAX * 21 + 3 : S_COPY_MAX);
    /* A refusal of the group is not sent: its batches are then stored
     * one by one, each under its own name. */
    s_what(db, "batches");
    int rc = s_batches(db, items, n, keys, err, errlen);
    s_what(db, NULL);
    for (int a = 0; a < S_BATCH_ARRAYS; a++)
        pw_buf_free(&keys[a]);
    return rc;
}

/* ---- run end and verdicts --------------------------------------------- */

static const char *
s_status_name(Parity__RunStatus s)
{
    switch (s) {
    case PARITY__RUN_STATUS__COMPLETE:   return "complete";
    case PARITY__RUN_STATUS__FAILED:     return "failed";
    case PARITY__RUN_STATUS__INCOMPLETE: return "incomplete";
    case PARITY__RUN_STATUS__CANCELLED:  return "cancelled";
    default:                             return NULL;
    }
}

/* Hold the host's newest rows (co_floors): one read when the host is
 * first needed on this connection, then kept as they are stored. */
static int
s_floor_load(co_db_t *db, int64_t host_id, char *err, size_t errlen)
{
    int rc;
    char host[24], lim[16];
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(lim, sizeof lim, "%d", co_floors_window_size(db->floors));
    const char *p[] = { host, lim };
    PGresult *r = s_query(db,
        "SELECT taken_at_us, wall_us, quiet FROM host_calibration WHERE "
        "host_id = $1 ORDER BY taken_at_us DESC LIMIT $2", 2, p,
        PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r)
        return rc;
    size_t n = (size_t)PQntuples(r);
    int64_t *t = malloc((n ? n : 1) * sizeof *t);
    double *w = malloc((n ? n : 1) * sizeof *w);
    bool *q = malloc((n ? n : 1) * sizeof *q);
    if (t && w && q) {
        for (size_t i = 0; i < n; i++) {
            t[i] = strtoll(PQgetvalue(r, (int)i, 0), NULL, 10);
            w[i] = strtod(PQgetvalue(r, (int)i, 1), NULL);
            q[i] = PQgetvalue(r, (int)i, 2)[0] == 't';
        }
        co_floors_load(db->floors, host_id, t, w, q, n);   /* else: read */
    }
    free(t);
    free(w);
    free(q);
    PQclear(r);
    return CO_DB_OK;
}

/* The host's calibration rows taken up to until_us, at most window:
 * Calibration messages and the rounds' CALIBRATION samples alike, both
 * in host_calibration (006). From the rows held (co_floors) when they
 * can say, else by an index scan of (host_id, taken_at_us) that stops
 * after window rows. *rows is the caller's to free. */
static int
s_host_calibration(co_db_t *db, int64_t host_id, int64_t until_us,
                   int window, co_floors_row_t **rows, size_t *n, char *err,
                   size_t errlen)
{
    int rc;
    char host[24], until[24], lim[16];
    *rows = NULL;
    if (db->floors) {
        co_floors_set_window(db->floors, window);
        if (!co_floors_known(db->floors, host_id)
            && (rc = s_floor_load(db, host_id, err, errlen)) != CO_DB_OK)
            return rc;
        *rows = malloc((size_t)window * sizeof **rows);
        if (*rows && co_floors_window(db->floors, host_id, until_us, *rows,
                                      n))
            return CO_DB_OK;
        free(*rows);
        *rows = NULL;
    }
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(until, sizeof until, "%" PRId64, until_us);
    snprintf(lim, sizeof lim, "%d", window);
    const char *p[] = { host, until, lim };
    PGresult *r = s_query(db,
        "SELECT taken_at_us, wall_us, quiet FROM host_calibration WHERE "
        "host_id = $1 AND taken_at_us <= $2 ORDER BY taken_at_us DESC "
        "LIMIT $3", 3, p, PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r)
        return rc;
    *n = (size_t)PQntuples(r);
    *rows = malloc((*n ? *n : 1) * sizeof **rows);
    for (size_t i = 0; *rows && i < *n; i++)
        (*rows)[i] = (co_floors_row_t){
            strtoll(PQgetvalue(r, (int)i, 0), NULL, 10),
            strtod(PQgetvalue(r, (int)i, 1), NULL),
            PQgetvalue(r, (int)i, 2)[0] == 't' };
    PQclear(r);
    if (!*rows) {
        pw_err_line(err, errlen, "floor: out of memory");
        return CO_DB_FAIL;
    }
    return CO_DB_OK;
}

/* A floor and what it pooled (017). */
typedef struct {
    double floor_us;
    bool is_default;
    int used;              /* runs it was computed from */
    bool quiet;            /* quiet runs alone (>= 100 in the window) */
    int64_t oldest_us, newest_us;   /* of the runs used; 0 when none */
} s_floor_t;

/* The host's floor from its calibration window ending at until_us: its
 * quiet runs when the window holds at least VD_FLOOR_MIN_SAMPLES of them,
 * else every run of the window (docs/collector.md "The floor"). */
static int
s_host_floor(co_db_t *db, int64_t host_id, int64_t until_us, int window,
             s_floor_t *fl, char *err, size_t errlen)
{
    size_t n = 0, nq = 0;
    co_floors_row_t *rows = NULL;
    memset(fl, 0, sizeof *fl);
    int rc = s_host_calibration(db, host_id, until_us, window, &rows, &n,
                                err, errlen);
    if (rc != CO_DB_OK)
        return rc;
    for (size_t i = 0; i < n; i++)
        nq += rows[i].quiet;
    fl->quiet = nq >= VD_FLOOR_MIN_SAMPLES;
    double *cal = malloc((n ? n : 1) * sizeof *cal);
    if (!cal) {
        free(rows);
        pw_err_line(err, errlen, "floor: out of memory");
        return CO_DB_FAIL;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (fl->quiet && !rows[i].quiet)
            continue;
        cal[m++] = rows[i].wall_us;
        if (!fl->oldest_us || rows[i].taken_us < fl->oldest_us)
            fl->oldest_us = rows[i].taken_us;
        if (rows[i].taken_us > fl->newest_us)
            fl->newest_us = rows[i].taken_us;
    }
    char verr[256];
    if (vd_floor(cal, m, &fl->floor_us, &fl->is_default, verr, sizeof verr)
        != VD_OK) {
        /* A stored bad sample must not block the run: use the default. */
        fl->floor_us = VD_DEFAULT_FLOOR_US;
        fl->is_default = true;
    }
    fl->used = (int)m;
    free(cal);
    free(rows);
    return CO_DB_OK;
}

static void s_num(char *buf, size_t len, double x);

/* Keep a floor on the host's row (what `parity hosts` shows), unless the
 * row holds one whose window ends later (a RunEnd resent from a spool
 * must not put an old floor back). */
static int
s_host_floor_save(co_db_t *db, int64_t host_id, const s_floor_t *fl,
                  int64_t at_us, char *err, size_t errlen)
{
    int rc;
    char host[24], fv[32], nused[16], at[24], lo[24], hi[24];
    snprintf(host, sizeof host, "%" PRId64, host_id);
    s_num(fv, sizeof fv, fl->floor_us);
    snprintf(nused, sizeof nused, "%d", fl->used);
    snprintf(at, sizeof at, "%" PRId64, at_us);
    snprintf(lo, sizeof lo, "%" PRId64, fl->oldest_us);
    snprintf(hi, sizeof hi, "%" PRId64, fl->newest_us);
    const char *p[] = { host, fv, fl->is_default ? "t" : "f", nused, at,
                        fl->quiet ? "t" : "f", fl->used ? lo : NULL,
                        fl->used ? hi : NULL };
    PGresult *r = s_query(db, "UPDATE hosts SET floor_us = $2, "
                          "floor_is_default = $3, floor_samples = $4, "
                          "floor_at_us = $5, floor_quiet = $6, "
                          "floor_oldest_us = $7, floor_newest_us = $8 "
                          "WHERE id = $1 AND (floor_at_us IS NULL OR "
                          "floor_at_us <= $5)", 8, p, PGRES_COMMAND_OK, &rc,
                          err, errlen);
    PQclear(r);
    return rc;
}

static int
s_host_floor_refresh(co_db_t *db, int64_t host_id, int64_t until_us,
                     int window, char *err, size_t errlen)
{
    s_floor_t fl;
    int rc = s_host_floor(db, host_id, until_us, window, &fl, err, errlen);
    if (rc != CO_DB_OK)
        return rc;
    return s_host_floor_save(db, host_id, &fl, until_us, err, errlen);
}

static void
s_num(char *buf, size_t len, double x)
{
    if (pw_format_double(buf, len, x) < 0)
        snprintf(buf, len, "%.17g", x);
}

/* One verdicts row's parameters, as text: the strings the row points
 * at live in the struct. */
#define S_VERDICT_COLS 21
typedef struct {
    char sa[24], oa[24], nsub[24], noth[24], fs[16], diag[16], extra[16];
    char ratio[32], best[32], tol[32], noise[32], btol[32], fl[32], par[32];
    /* The verdict's written form, and the instructions comparison
     * beside it (pw_counter_compare_json: 10 fields and its line). */
    char json[PW_VERDICT_TEXT_MAX + 640];
    char error[256];
    const char *p[S_VERDICT_COLS];
} s_verdict_row_t;

/* ins[0..n) when every run counted its instructions, else NULL. */
static const double *
s_counted(const double *ins, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(ins[i] > 0))
            return NULL;
    return n ? ins : NULL;
}

/* v's written form into w->json (pw_verdict_write, as the library
 * writes it), with the instructions comparison added where both arms
 * counted them (ia, ib; NULL: not counted). False when the verdict did
 * not fit; a comparison that does not fit is left out. */
static bool
s_verdict_json(s_verdict_row_t *w, const vd_verdict_t *v, const double *ia,
               size_t na, const double *ib, size_t nb)
{
    int len = pw_verdict_write(w->json, sizeof w->json, v,
                               PW_VERDICT_SUMMARIES);
    if (len < 2)
        return false;
    json_t *o = pw_counter_compare_json("instructions", ia, na, ib, nb, v);
    char *text = o ? pw_json_dumps(o) : NULL;
    size_t at = (size_t)len - 1;          /* the closing brace */
    if (text && w->json[at] == '}' &&
        at + strlen(text) + 18 < sizeof w->json)
        snprintf(w->json + at, sizeof w->json - at, ",\"instructions\":%s}",
                 text);
    free(text);
    json_decref(o);
    return true;
}

static void
s_verdict_row(s_verdict_row_t *w, const char *runid, const char *host,
              size_t subject, size_t other, const char *other_name,
              const double *a, size_t na, const double *b, size_t nb,
              const vd_params_t *vp, int floor_samples, const double *ia,
              const double *ib)
{
    vd_verdict_t v;
    const char *outcome = NULL, *json_p = NULL, *error = NULL;

    snprintf(w->sa, sizeof w->sa, "%zu", subject);
    snprintf(w->oa, sizeof w->oa, "%zu", other);
    snprintf(w->nsub, sizeof w->nsub, "%zu", na);
    snprintf(w->noth, sizeof w->noth, "%zu", nb);
    snprintf(w->fs, sizeof w->fs, "%d", floor_samples);
    s_num(w->fl, sizeof w->fl, vp->floor_us);
    s_num(w->par, sizeof w->par, vp->parity);
    const char *pr = NULL, *pb = NULL, *pt = NULL, *pn = NULL, *pbt = NULL;
    if (vd_compare(a, na, b, nb, vp, &v, w->error, sizeof w->error)
        == VD_OK) {
        outcome = vd_outcome_name(v.outcome);
        s_num(w->ratio, sizeof w->ratio, v.ratio);
        s_num(w->best, sizeof w->best, v.best_ratio);
        s_num(w->tol, sizeof w->tol, v.tolerance);
        s_num(w->noise, sizeof w->noise, v.noise);
        s_num(w->btol, sizeof w->btol, v.best_tolerance);
        pr = w->ratio; pb = w->best; pt = w->tol; pn = w->noise;
        pbt = w->btol;
        snprintf(w->diag, sizeof w->diag, "%u", v.diagnostics);
        snprintf(w->extra, sizeof w->extra, "%u", v.extra_runs);
        if (s_verdict_json(w, &v, ia, na, ib, nb))
            json_p = w->json;
    } else {
        error = w->error;
        snprintf(w->diag, sizeof w->diag, "0");
        snprintf(w->extra, sizeof w->extra, "0");
    }
    const char *p[S_VERDICT_COLS] = {
        runid, host, w->sa, w->oa, other_name, outcome, pr, pb, pt, pn, pbt,
        w->fl, vp->floor_is_default ? "t" : "f", w->fs, w->par, w->diag,
        w->extra, w->nsub, w->noth, json_p, error };
    memcpy(w->p, p, sizeof p);
}

/* How far before its RunStart's started_at_us a run's samples may start
 * and still be found by the pruned read: the agent's clock stepping back
 * (NTP) during a run. A run whose samples are not all inside is read
 * again without the bound, so the margin only saves time. */
#define S_PRUNE_MARGIN_US (24LL * 3600 * 1000000)

void
co_db_set_run_samples(co_db_t *db, const co_db_run_cache_t *cache)
{
    db->run_cache = cache;
}

/* A run's MEASURED samples as run_end needs them, grouped by arm in arm
 * order: arm_of[i] is x[i]'s arm, ins[i] its instructions (0: not
 * counted). The three arrays are owned (s_samples_free). */
typedef struct {
    double *x;
    double *ins;
    size_t *arm_of;
    size_t n;
} s_samples_t;

static void
s_samples_free(s_samples_t *s)
{
    free(s->x);
    free(s->ins);
    free(s->arm_of);
    memset(s, 0, sizeof *s);
}

/* Room for n samples in s; false on out of memory (s freed). */
static bool
s_samples_alloc(s_samples_t *s, size_t n)
{
    s->x = malloc((n ? n : 1) * sizeof *s->x);
    s->ins = malloc((n ? n : 1) * sizeof *s->ins);
    s->arm_of = malloc((n ? n : 1) * sizeof *s->arm_of);
    if (s->x && s->ins && s->arm_of)
        return true;
    s_samples_free(s);
    return false;
}

/* s_run_samples from the writer's copy (co_db_set_run_samples): false
 * when it cannot stand for the stored rows. A counting sort by arm keeps
 * each arm's samples in their stored order. */
static bool
s_run_samples_cached(co_db_t *db, long long expected, size_t narms,
                     s_samples_t *out, int64_t *errors)
{
    const co_db_run_cache_t *c = db->run_cache;
    if (!c || expected < 0 || c->n != (size_t)expected)
        return false;
    size_t *start = calloc(narms + 1, sizeof *start), m = 0;
    if (!start)
        return false;
    for (size_t i = 0; i < c->n; i++) {
        if (c->kind[i] != PARITY__SAMPLE_KIND__MEASURED)
            continue;
        if (c->arm[i] < 0 || (size_t)c->arm[i] >= narms) {
            free(start);
            return false;
        }
        start[c->arm[i] + 1]++;
        m++;
    }
    for (size_t a = 0; a < narms; a++)
        start[a + 1] += start[a];
    if (!s_samples_alloc(out, m)) {
        free(start);
        return false;
    }
    for (size_t i = 0; i < c->n; i++) {
        size_t arm = (size_t)c->arm[i];
        if (c->kind[i] == PARITY__SAMPLE_KIND__ERROR && arm < narms)
            errors[arm]++;
        if (c->kind[i] != PARITY__SAMPLE_KIND__MEASURED)
            continue;
        out->x[start[arm]] = c->wall_us[i];
        out->ins[start[arm]] = c->instructions ? c->instructions[i] : 0;
        out->arm_of[start[arm]++] = arm;
    }
    out->n = m;
    free(start);
    return true;
}

/* The run's samples (s_samples_t) and its ERROR counts per arm (errors
 * has narms slots). Partitions before the run's start are pruned when
 * every sample of its batches (expected) is found that way. */
static int
s_run_samples(co_db_t *db, const char *runid, int64_t started_at_us,
              long long expected, size_t narms, s_samples_t *out,
              int64_t *errors, char *err, size_t errlen)
{
    int rc;
    if (s_run_samples_cached(db, expected, narms, out, errors))
        return CO_DB_OK;
    char lo[24];
    int64_t bound = started_at_us > INT64_MIN + S_PRUNE_MARGIN_US ?
                    started_at_us - S_PRUNE_MARGIN_US : INT64_MIN;
    snprintf(lo, sizeof lo, "%" PRId64, bound);
    const char *p[] = { runid, lo };
    PGresult *r = s_query(db, "SELECT arm, wall_us, kind, instructions "
                          "FROM samples WHERE run = $1 AND start_unix_us >= "
                          "$2 ORDER BY arm, batch_seq, idx", 2, p,
                          PGRES_TUPLES_OK, &rc, err, errlen);
    if (r && PQntuples(r) != expected) {
        PQclear(r);
        r = s_query(db, "SELECT arm, wall_us, kind, instructions FROM "
                    "samples WHERE run = $1 ORDER BY arm, batch_seq, idx", 1,
                    p, PGRES_TUPLES_OK, &rc, err, errlen);
    }
    if (!r)
        return rc;
    size_t rows = (size_t)PQntuples(r), k = 0;
    if (!s_samples_alloc(out, rows)) {
        pw_err_line(err, errlen, "run_end: out of memory for %zu samples",
                    rows);
        PQclear(r);
        return CO_DB_FAIL;
    }
    for (size_t i = 0; i < rows; i++) {
        int kind = atoi(PQgetvalue(r, (int)i, 2));
        size_t arm = strtoul(PQgetvalue(r, (int)i, 0), NULL, 10);
        if (kind == PARITY__SAMPLE_KIND__ERROR && arm < narms)
            errors[arm]++;
        if (kind != PARITY__SAMPLE_KIND__MEASURED)
            continue;
        out->x[k] = strtod(PQgetvalue(r, (int)i, 1), NULL);
        /* NULL (not counted) reads as "": 0. */
        out->ins[k] = strtod(PQgetvalue(r, (int)i, 3), NULL);
        out->arm_of[k++] = arm;
    }
    out->n = k;
    PQclear(r);
    return CO_DB_OK;
}

/* The run's summary of one arm (run_summaries, 006): vd_summarize of its
 * MEASURED samples with wall_us > 0 (x[off..off+len)), NULLs when there
 * are none or too many; errors its ERROR samples. buf has len slots. */
#define S_SUMMARY_COLS 11
typedef struct {
    char a[24], nn[24], ne[24], v[7][32];
    const char *p[S_SUMMARY_COLS];
} s_summary_row_t;

static void
s_summary_row(s_summary_row_t *w, const char *runid, size_t arm,
              const double *x, size_t len, int64_t errors, double *buf)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (x[i] > 0)
            buf[n++] = x[i];
    vd_summary_t sum;
    char verr[128];
    bool have = n > 0 && vd_summarize(buf, n, &sum, verr, sizeof verr) ==
                VD_OK;
    snprintf(w->a, sizeof w->a, "%zu", arm);
    snprintf(w->nn, sizeof w->nn, "%zu", n);
    snprintf(w->ne, sizeof w->ne, "%" PRId64, errors);
    if (have) {
        const double vals[7] = { sum.min, sum.q25, sum.median, sum.q75,
                                 sum.max, sum.iqr, sum.mean };
        for (int i = 0; i < 7; i++)
            s_num(w->v[i], sizeof w->v[i], vals[i]);
    }
    const char *p[S_SUMMARY_COLS] = {
        runid, w->a, w->nn, have ? w->v[0] : NULL, have ? w->v[1] : NULL,
        have ? w->v[2] : NULL, have ? w->v[3] : NULL, have ? w->v[4] : NULL,
        have ? w->v[5] : NULL, have ? w->v[6] : NULL, w->ne };
    memcpy(w->p, p, sizeof p);
}

/* "($k, ..., $k+cols-1)" for row i of a multi-row VALUES. */
static void
s_values_row(pw_buf_t *sql, size_t i, size_t first, size_t cols)
{
    pw_buf_adds(sql, i ? ", (" : "(");
    for (size_t c = 0; c < cols; c++)
        pw_buf_printf(sql, "%s$%zu", c ? ", " : "", first + c + 1);
    pw_buf_adds(sql, ")");
}

/* Every summary and every verdict of a run in one statement (one round
 * trip, where a statement per row was one each). */
static int
s_store_results(co_db_t *db, s_summary_row_t *sum, size_t ns,
                s_verdict_row_t *ver, size_t nv, char *err, size_t errlen)
{
    int rc = CO_DB_FAIL;
    size_t np = ns * S_SUMMARY_COLS + nv * S_VERDICT_COLS;
    const char **p = malloc((np ? np : 1) * sizeof *p);
    pw_buf_t sql;
    pw_buf_init(&sql, S_SQL_MAX);
    if (!p) {
        pw_err_line(err, errlen, "run_end: out of memory for %zu results", np);
        goto done;
    }
    size_t k = 0;
    pw_buf_adds(&sql, nv ? "WITH s AS (" : "");
    pw_buf_adds(&sql, "INSERT INTO run_summaries (run, arm, "
        "n, min, q25, median, q75, max, iqr, mean, errors) VALUES ");
    for (size_t i = 0; i < ns; i++, k += S_SUMMARY_COLS) {
        s_values_row(&sql, i, k, S_SUMMARY_COLS);
        memcpy(&p[k], sum[i].p, sizeof sum[i].p);
    }
    pw_buf_adds(&sql, " ON CONFLICT (run, arm) DO UPDATE "
        "SET n = EXCLUDED.n, min = EXCLUDED.min, q25 = EXCLUDED.q25, median "
        "= EXCLUDED.median, q75 = EXCLUDED.q75, max = EXCLUDED.max, iqr = "
        "EXCLUDED.iqr, mean = EXCLUDED.mean, errors = EXCLUDED.errors");
    if (nv) {
        pw_buf_adds(&sql, "), v AS (INSERT INTO verdicts (run, "
            "host_id, subject_arm, other_arm, other_name, outcome, ratio, "
            "best_ratio, tolerance, noise, best_tolerance, floor_us, "
            "floor_is_default, floor_samples, parity, diagnostics, "
            "extra_runs, n_subject, n_other, verdict_json, error) VALUES ");
        for (size_t i = 0; i < nv; i++, k += S_VERDICT_COLS) {
            s_values_row(&sql, i, k, S_VERDICT_COLS);
            memcpy(&p[k], ver[i].p, sizeof ver[i].p);
        }
        /* The verdicts' series (008), for `regressions`: added once. */
        pw_buf_adds(&sql, " ON CONFLICT (run, other_arm) DO NOTHING "
            "RETURNING run, subject_arm, other_name) INSERT INTO series "
            "(benchmark_id, host_id, vars, subject, other) SELECT "
            "r.benchmark_id, r.host_id, r.vars, sa.name, v.other_name FROM v "
            "JOIN runs r ON r.id = v.run JOIN arms sa ON sa.run = v.run AND "
            "sa.idx = v.subject_arm ON CONFLICT DO NOTHING");
    }
    if (pw_buf_status(&sql) != PW_BUF_OK) {
        pw_err_line(err, errlen, "run_end: results statement: %s",
                    pw_buf_strerror(pw_buf_status(&sql)));
        goto done;
    }
    PGresult *r = s_query(db, pw_buf_data(&sql), (int)np, p,
                          PGRES_COMMAND_OK, &rc, err, errlen);
    PQclear(r);
done:
    free(p);
    pw_buf_free(&sql);
    return rc;
}

/* The floor of a run's verdicts: from the host's window ending at the
 * run's end, recorded in floors and (when newer) on the host's row. */
static int
s_run_floor(co_db_t *db, int64_t host_id, const char *runid, int64_t until,
            int floor_window, vd_params_t *vp, int *used, char *err,
            size_t errlen)
{
    int rc;
    s_floor_t fl;
    rc = s_host_floor(db, host_id, until, floor_window, &fl, err, errlen);
    if (rc != CO_DB_OK)
        return rc;
    *used = fl.used;
    vp->floor_us = fl.floor_us;
    vp->floor_is_default = fl.is_default;
    char host[24], fv[32], nused[16], win[16], until_s[24], lo[24], hi[24];
    snprintf(host, sizeof host, "%" PRId64, host_id);
    s_num(fv, sizeof fv, fl.floor_us);
    snprintf(nused, sizeof nused, "%d", *used);
    snprintf(win, sizeof win, "%d", floor_window);
    snprintf(until_s, sizeof until_s, "%" PRId64, until);
    snprintf(lo, sizeof lo, "%" PRId64, fl.oldest_us);
    snprintf(hi, sizeof hi, "%" PRId64, fl.newest_us);
    /* A run without an end time has until INT64_MAX: the row's window
     * ends now, so that a later calibration still replaces it. */
    int64_t now = s_now_us();
    char at[24];
    snprintf(at, sizeof at, "%" PRId64, until < now ? until : now);
    const char *pf[] = { host, runid, fv, fl.is_default ? "t" : "f", nused,
                         win, until_s, at, fl.quiet ? "t" : "f",
                         fl.used ? lo : NULL, fl.used ? hi : NULL };
    /* The run's floor, and the host's row (s_host_floor_save's rule), in
     * one round trip. */
    PGresult *r = s_query_p(db, "WITH f AS (INSERT INTO floors (host_id, run, "
                          "floor_us, is_default, n_samples, window_size, "
                          "until_us, quiet, oldest_us, newest_us) VALUES ($1, "
                          "$2, $3, $4, $5, $6, $7, $9, $10, $11) ON "
                          "CONFLICT (run) DO NOTHING) UPDATE hosts SET "
                          "floor_us = $3, floor_is_default = $4, "
                          "floor_samples = $5, floor_at_us = $8, floor_quiet "
                          "= $9, floor_oldest_us = $10, floor_newest_us = $11 "
                          "WHERE id = $1 AND (floor_at_us IS NULL OR "
                          "floor_at_us <= $8)",
                          11, pf, PGRES_COMMAND_OK, &rc, err, errlen);
    PQclear(r);
    return rc;
}

/* Verdicts of every non-subject arm against the subject, and every arm's
 * summary, from the run's samples x (grouped by arm, see s_run_samples). */
static int
s_run_verdicts(co_db_t *db, const char *runid, const char *host,
               PGresult *arms, size_t subject, const s_samples_t *sm,
               const int64_t *errors, const vd_params_t *vp, int used,
               unsigned *verdicts, char *err, size_t errlen)
{
    const double *x = sm->x;
    const size_t *arm_of = sm->arm_of;
    size_t n = sm->n;
    size_t narms = (size_t)PQntuples(arms);
    size_t a_off = 0, a_n = 0, nv = 0;
    int rc = CO_DB_FAIL;
    double *buf = malloc((n ? n : 1) * sizeof *buf);
    s_summary_row_t *sum = calloc(narms ? narms : 1, sizeof *sum);
    s_verdict_row_t *ver = calloc(narms ? narms : 1, sizeof *ver);
    if (!buf || !sum || !ver) {
        pw_err_line(err, errlen, "run_end: out of memory for %zu samples", n);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        if (arm_of[i] == subject) {
            if (a_n == 0)
                a_off = i;
            a_n++;
        }
    for (size_t k = 0; k < narms; k++) {
        /* Rows are ordered by arm: each arm is one contiguous slice. */
        size_t b_off = 0, b_n = 0;
        for (size_t i = 0; i < n; i++)
            if (arm_of[i] == k) {
                if (b_n == 0)
                    b_off = i;
                b_n++;
            }
        s_summary_row(&sum[k], runid, k, x + b_off, b_n, errors[k], buf);
        if (k != subject)
            s_verdict_row(&ver[nv++], runid, host, subject, k,
                          PQgetvalue(arms, (int)k, 1), x + a_off, a_n,
                          x + b_off, b_n, vp, used,
                          s_counted(sm->ins + a_off, a_n),
                          s_counted(sm->ins + b_off, b_n));
    }
    rc = narms ? s_store_results(db, sum, narms, ver, nv, err, errlen)
               : CO_DB_OK;
    if (rc == CO_DB_OK)
        *verdicts = (unsigned)nv;
done:
    free(buf);
    free(sum);
    free(ver);
    return rc;
}

/* CO_DB_DEPENDS naming the first of batches 0..re->batches-1 of the run
 * (runs.id runid) that this host had refused and that was not stored
 * since, else CO_DB_LATER (or CO_DB_FAIL). */
static int
s_refused_batch(co_db_t *db, int64_t host_id, const Parity__RunEnd *re,
                const char *runid, const char *batches, char *err,
                size_t errlen)
{
    int rc;
    char host[24];
    snprintf(host, sizeof host, "%" PRId64, host_id);
    const char *p[] = { host, re->run_id, batches, runid };
    PGresult *r = s_query(db, "SELECT f.batch_seq, f.reason FROM refusals f "
                          "WHERE f.host_id = $1 AND f.run_uuid = $2 AND "
                          "f.batch_seq >= 0 AND f.batch_seq < $3::bigint AND "
                          "NOT EXISTS (SELECT 1 FROM batches b WHERE b.run = "
                          "$4 AND b.batch_seq = f.batch_seq) ORDER BY "
                          "f.batch_seq LIMIT 1", 4, p, PGRES_TUPLES_OK, &rc,
                          err, errlen);
    if (!r)
        return rc;
    rc = CO_DB_LATER;
    if (PQntuples(r) == 1) {
        pw_err_line(err, errlen, "run_end %s counts batch %s, which was "
                    "refused: %s", re->run_id, PQgetvalue(r, 0, 0),
                    PQgetvalue(r, 0, 1));
        rc = CO_DB_DEPENDS;
    }
    PQclear(r);
    return rc;
}

/* Inside run_end's transaction: CO_DB_OK when the run has not ended yet
 * and batches 0..re->batches-1 are stored (else CO_DB_DUP, CO_DB_LATER,
 * CO_DB_DEPENDS when a missing one was refused, or CO_DB_FAIL). *started
 * gets its started_at_us, *expected the samples of all its batches: what
 * the pruned read must find. */
static int
s_run_end_ready(co_db_t *db, int64_t host_id, const Parity__RunEnd *re,
                const char *runid, const char *batches, int64_t *started,
                long long *expected, char *err, size_t errlen)
{
    int rc;
    const char *pc[] = { runid, batches };
    PGresult *r = s_query_p(db, "SELECT status, started_at_us, (SELECT "
                          "count(*) FROM batches WHERE run = $1 AND "
                          "batch_seq < $2), (SELECT COALESCE(sum(n_samples), "
                          "0) FROM batches WHERE run = $1) FROM runs WHERE "
                          "id = $1", 2, pc, PGRES_TUPLES_OK, &rc, err,
                          errlen);
    if (!r)
        return rc;
    if (PQntuples(r) != 1) {   /* deleted behind the run cache's back */
        PQclear(r);
        pw_err_line(err, errlen, "run %s: no RunStart stored", re->run_id);
        return CO_DB_LATER;
    }
    bool ended_before = !PQgetisnull(r, 0, 0);
    *started = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    long have = strtol(PQgetvalue(r, 0, 2), NULL, 10);
    *expected = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
    PQclear(r);
    if (ended_before)
        return CO_DB_DUP;
    if (have < (long)re->batches) {
        rc = s_refused_batch(db, host_id, re, runid, batches, err, errlen);
        if (rc == CO_DB_LATER)
            pw_err_line(err, errlen, "run_end %s: %ld of %u batches stored",
                        re->run_id, have, re->batches);
        return rc;
    }
    return CO_DB_OK;
}

static int
s_run_end(co_db_t *db, int64_t host_id, const Parity__RunEnd *re,
          int floor_window, double parity, unsigned *verdicts, char *err,
          size_t errlen)
{
    int rc;
    int64_t run = 0;
    char runid[24], host[24], batches[16], samples[24], ended[24];
    const char *status = s_status_name(re->status);
    PGresult *arms = NULL;
    s_samples_t sm = { 0 };
    int64_t *errors = NULL;

    *verdicts = 0;
    if (!status) {
        pw_err_line(err, errlen, "run_end %s: unknown status %d", re->run_id,
                    (int)re->status);
        return CO_DB_REFUSED;
    }
    co_db_set_floor_window(db, floor_window);
    char what[CO_DB_UUID_MAX + 16];
    snprintf(what, sizeof what, "run_end %.*s", CO_DB_UUID_MAX, re->run_id);
    rc = s_run_lookup(db, host_id, re->run_id, &run, NULL, what, err,
                      errlen);
    if (rc != CO_DB_OK)
        return rc;
    snprintf(runid, sizeof runid, "%" PRId64, run);
    snprintf(host, sizeof host, "%" PRId64, host_id);
    snprintf(batches, sizeof batches, "%u", re->batches);
    snprintf(samples, sizeof samples, "%" PRIu64, re->samples);
    snprintf(ended, sizeof ended, "%" PRId64, re->ended_at_us);

    if ((rc = s_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        return rc;
    int64_t started = 0;
    long long expected = 0;
    rc = s_run_end_ready(db, host_id, re, runid, batches, &started,
                         &expected, err, errlen);
    if (rc != CO_DB_OK) {
        s_rollback(db);
        return rc;
    }
    /* The run's end, and its arms read in the same statement (one round
     * trip): the subject is the arm flagged so, else arm 0. */
    const char *pu[] = { runid, status, s_str(re->reason), batches, samples,
                         ended };
    arms = s_query_p(db, "WITH u AS (UPDATE runs SET status = $2, reason = "
                     "$3, batches = $4, samples = $5, ended_at_us = $6 WHERE "
                     "id = $1) SELECT idx, name, subject FROM arms WHERE run "
                     "= $1 ORDER BY idx", 6, pu, PGRES_TUPLES_OK, &rc, err,
                     errlen);
    if (!arms)
        goto rollback;
    size_t narms = (size_t)PQntuples(arms), subject = 0;
    for (size_t i = 0; i < narms; i++)
        if (strcmp(PQgetvalue(arms, (int)i, 2), "t") == 0) {
            subject = i;
            break;
        }

    vd_params_t vp;
    vd_params_default(&vp);
    vp.parity = parity;
    int used = 0;
    int64_t until = re->ended_at_us > 0 ? re->ended_at_us : INT64_MAX;
    rc = s_run_floor(db, host_id, runid, until, floor_window, &vp, &used,
                     err, errlen);
    if (rc != CO_DB_OK)
        goto rollback;
    if (!(errors = calloc(narms ? narms : 1, sizeof *errors))) {
        pw_err_line(err, errlen, "run_end: out of memory");
        rc = CO_DB_FAIL;
        goto rollback;
    }
    rc = s_run_samples(db, runid, started, expected, narms, &sm, errors, err,
                       errlen);
    if (rc != CO_DB_OK)
        goto rollback;
    rc = s_run_verdicts(db, runid, host, arms, subject, &sm, errors, &vp,
                        used, verdicts, err, errlen);
    if (rc != CO_DB_OK)
        goto rollback;
    rc = s_exec(db, "COMMIT", err, errlen);
    if (rc != CO_DB_OK)
        *verdicts = 0;
    goto done;
rollback:
    *verdicts = 0;
    s_rollback(db);
done:
    PQclear(arms);
    s_samples_free(&sm);
    free(errors);
    return rc;
}

int64_t
co_db_last_run_end(const co_db_t *db)
{
    return db->last_run_end;
}

int
co_db_run_end(co_db_t *db, int64_t host_id, const Parity__RunEnd *re,
              int floor_window, double parity, unsigned *verdicts,
              char *err, size_t errlen)
{
    int64_t run = 0;
    db->last_run_end = 0;
    s_what(db, "run_end %.*s", CO_DB_UUID_MAX, re->run_id);
    int rc = s_run_end(db, host_id, re, floor_window, parity, verdicts, err,
                       errlen);
    s_what(db, NULL);
    if (rc == CO_DB_OK
        && s_run_cached(db, host_id, re->run_id, &run, NULL, 0) == CO_DB_OK)
        db->last_run_end = run;
    db->run_cache = NULL;
    return rc;
}

/* ---- partitions and retention ----------------------------------------- */

/* Seconds a partition change may wait for its lock: it needs samples
 * briefly to itself, and must never queue ingest behind a long query. */
#define S_PARTITION_LOCK_TIMEOUT "'5s'"

/* The first microsecond of the UTC month holding t_us, moved by
 * months; *year and *month (1..12) name it. */
static int64_t
s_month_start(int64_t t_us, int months, int *year, int *month)
{
    time_t t = (time_t)(t_us / 1000000 - (t_us % 1000000 < 0 ? 1 : 0));
    struct tm tm;
    gmtime_r(&t, &tm);
    long m = (long)tm.tm_year * 12 + tm.tm_mon + months;
    struct tm first = { .tm_year = (int)(m / 12), .tm_mon = (int)(m % 12),
                        .tm_mday = 1 };
    *year = first.tm_year + 1900;
    *month = first.tm_mon + 1;
    return (int64_t)timegm(&first) * 1000000;
}

/* Make samples_pYYYYMM for [lo, hi) unless it exists. Rows of that range
 * in samples_default (an agent whose clock ran ahead) would make CREATE
 * fail, so they move into the new partition in the same transaction. */
static int
s_partition_make(co_db_t *db, int year, int month, int64_t lo, int64_t hi,
                 char *err, size_t errlen)
{
    int rc;
    char name[32], los[24], his[24], sql[256];
    snprintf(name, sizeof name, "samples_p%04d%02d", year, month);
    snprintf(los, sizeof los, "%" PRId64, lo);
    snprintf(his, sizeof his, "%" PRId64, hi);
    const char *pn[] = { name };
    PGresult *r = s_query(db, "SELECT 1 FROM pg_inherits i JOIN pg_class c "
                          "ON c.oid = i.inhrelid WHERE i.inhparent = "
                          "'samples'::regclass AND c.relname = $1", 1, pn,
                          PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r)
        return rc;
    bool exists = PQntuples(r) > 0;
    PQclear(r);
    if (exists)
        return CO_DB_OK;
    if ((rc = s_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        return rc;
    if ((rc = s_exec(db, "SET LOCAL lock_timeout = " S_PARTITION_LOCK_TIMEOUT,
                     err, errlen)) != CO_DB_OK)
        goto rollback;
    if ((rc = s_exec(db, "CREATE TEMP TABLE samples_moving (LIKE samples) "
                     "ON COMMIT DROP", err, errlen)) != CO_DB_OK)
        goto rollback;
    const char *pr[] = { los, his };
    r = s_query(db, "WITH m AS (DELETE FROM samples_default WHERE "
                "start_unix_us >= $1 AND start_unix_us < $2 RETURNING *) "
                "INSERT INTO samples_moving SELECT * FROM m", 2, pr,
                PGRES_COMMAND_OK, &rc, err, errlen);
    if (!r)
        goto rollback;
    PQclear(r);
    /* Numbers formatted here, not user text: DDL takes no parameters. */
    snprintf(sql, sizeof sql, "CREATE TABLE %s PARTITION OF samples FOR "
             "VALUES FROM (%s) TO (%s)", name, los, his);
    if ((rc = s_exec(db, sql, err, errlen)) != CO_DB_OK)
        goto rollback;
    if ((rc = s_exec(db, "INSERT INTO samples SELECT * FROM samples_moving",
                     err, errlen)) != CO_DB_OK)
        goto rollback;
    return s_exec(db, "COMMIT", err, errlen);
rollback:
    s_rollback(db);
    return rc;
}

int
co_db_partitions_ensure(co_db_t *db, int64_t now_us, int months_ahead,
                        char *err, size_t errlen)
{
    int rc = CO_DB_OK;
    if (months_ahead < 0 || months_ahead > CO_DB_MONTHS_AHEAD_MAX) {
        pw_err_line(err, errlen, "partitions: %d months ahead (0..%d)",
                    months_ahead, CO_DB_MONTHS_AHEAD_MAX);
        return CO_DB_REFUSED;
    }
    if (!co_db_connected(db)) {
        pw_err_line(err, errlen, "partitions: not connected");
        return CO_DB_FAIL;
    }
    for (int k = 0; k <= months_ahead && rc == CO_DB_OK; k++) {
        int year, month, y2, m2;
        int64_t lo = s_month_start(now_us, k, &year, &month);
        int64_t hi = s_month_start(now_us, k + 1, &y2, &m2);
        rc = s_partition_make(db, year, month, lo, hi, err, errlen);
    }
    return rc;
}

/* Drop one partition (its name from the catalogue, quoted by the server). */
static int
s_partition_drop(co_db_t *db, const char *name, char *err, size_t errlen)
{
    int rc;
    if ((rc = s_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        return rc;
    if ((rc = s_exec(db, "SET LOCAL lock_timeout = " S_PARTITION_LOCK_TIMEOUT,
                     err, errlen)) != CO_DB_OK)
        goto rollback;
    const char *p[] = { name };
    PGresult *r = s_query(db, "SELECT format('DROP TABLE %I', $1::text)", 1,
                          p, PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r)
        goto rollback;
    char sql[256];
    snprintf(sql, sizeof sql, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    if ((rc = s_exec(db, sql, err, errlen)) != CO_DB_OK)
        goto rollback;
    return s_exec(db, "COMMIT", err, errlen);
rollback:
    s_rollback(db);
    return rc;
}

int
co_db_retention(co_db_t *db, int64_t keep_us, int64_t now_us, int *dropped,
                char *err, size_t errlen)
{
    int rc;
    char cut[24];
    *dropped = 0;
    if (keep_us <= 0 || now_us <= 0) {
        pw_err_line(err, errlen, "retention: keep %" PRId64 " µs and now %"
                    PRId64 " µs must be > 0", keep_us, now_us);
        return CO_DB_REFUSED;
    }
    if (!co_db_connected(db)) {
        pw_err_line(err, errlen, "retention: not connected");
        return CO_DB_FAIL;
    }
    int64_t cutoff = now_us > INT64_MIN + keep_us ? now_us - keep_us :
                     INT64_MIN;
    snprintf(cut, sizeof cut, "%" PRId64, cutoff);
    /* The upper bound is the partition's own (the catalogue's), not its
     * name: a partition made by hand is judged by what it may hold. */
    const char *p[] = { cut };
    PGresult *r = s_query(db,
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = "
        "i.inhrelid WHERE i.inhparent = 'samples'::regclass AND "
        "pg_get_expr(c.relpartbound, c.oid) LIKE 'FOR VALUES FROM%' AND "
        "substring(pg_get_expr(c.relpartbound, c.oid) FROM "
        "'TO \\(''?(-?[0-9]+)''?\\)')::bigint <= $1::bigint ORDER BY 1", 1,
        p, PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r)
        return rc;
    for (int i = 0; i < PQntuples(r) && rc == CO_DB_OK; i++) {
        rc = s_partition_drop(db, PQgetvalue(r, i, 0), err, errlen);
        if (rc == CO_DB_OK)
            (*dropped)++;
    }
    PQclear(r);
    if (rc != CO_DB_OK)
        return rc;
    /* Rows the default partition holds for old runs (an agent clock far
     * off): a recent run's samples stay, whatever their clock said. */
    r = s_query(db, "DELETE FROM samples_default d USING runs r WHERE "
                "r.id = d.run AND d.start_unix_us < $1 AND r.started_at_us "
                "< $1", 1, p, PGRES_COMMAND_OK, &rc, err, errlen);
    if (!r)
        return rc;
    PQclear(r);
    r = s_query(db, "DELETE FROM host_calibration WHERE taken_at_us < $1", 1,
                p, PGRES_COMMAND_OK, &rc, err, errlen);
    PQclear(r);
    co_floors_clear(db->floors);
    return rc;
}
