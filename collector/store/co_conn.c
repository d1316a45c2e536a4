/* co_conn.c -- a reconnecting PostgreSQL connection and its statement
 * runner; see co_conn.h. */
#include "co_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_err.h"

struct co_conn {
    char *conninfo;
    char *settings;               /* NULL: none */
    char *listen;                 /* NULL: none */
    int timeout_ms;
    bool manual;
    PGconn *pg;
    unsigned generation;
    /* Statements prepared on this connection, by their table entry's
     * address; forgotten with the connection (they live in the server
     * process). */
    const co_stmt_t *prepared[CO_CONN_PREPARED_MAX];
    int n_prepared;
    char state[6];
    char reason[256];
};

static char *
s_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

co_conn_t *
co_conn_new(const co_conn_opts_t *o)
{
    co_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->conninfo = strdup(o->conninfo ? o->conninfo : "");
    c->settings = s_dup(o->settings);
    c->listen = s_dup(o->listen);
    c->timeout_ms = o->statement_timeout_ms > 0 ? o->statement_timeout_ms : 0;
    c->manual = o->manual;
    if (!c->conninfo || (o->settings && !c->settings)
        || (o->listen && !c->listen))
        co_conn_destroy(&c);
    return c;
}

void
co_conn_close(co_conn_t *c)
{
    if (c && c->pg) {
        PQfinish(c->pg);
        c->pg = NULL;
        c->n_prepared = 0;
    }
}

void
co_conn_destroy(co_conn_t **c)
{
    if (!c || !*c)
        return;
    co_conn_close(*c);
    free((*c)->conninfo);
    free((*c)->settings);
    free((*c)->listen);
    free(*c);
    *c = NULL;
}

static void
s_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* libpq's message, first line only, after what. */
static void
s_pq_err(char *err, size_t errlen, const char *what, const char *m)
{
    if (!m || !*m)
        m = "no message";
    pw_err(err, errlen, "%s: %.*s", what, (int)strcspn(m, "\n"), m);
}

/* The session of a new (or reset) connection: jit off (it compiles a
 * history-wide query for seconds before it runs in under 100 ms:
 * measured 2.1 s of JIT for `regressions` over a year), the statement
 * timeout, the options' settings, LISTEN. */
static int
s_session(co_conn_t *c, char *err, size_t errlen)
{
    char sql[160] = "SET jit = off";
    if (c->timeout_ms > 0)
        snprintf(sql, sizeof sql, "SET jit = off; SET statement_timeout = %d",
                 c->timeout_ms);
    PGresult *r = PQexec(c->pg, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (ok && c->settings) {
        r = PQexec(c->pg, c->settings);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
    }
    if (ok && c->listen) {
        char *id = PQescapeIdentifier(c->pg, c->listen, strlen(c->listen));
        snprintf(sql, sizeof sql, "LISTEN %s", id ? id : "");
        PQfreemem(id);
        r = PQexec(c->pg, sql);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
    }
    if (ok) {
        c->generation++;
        c->n_prepared = 0;
        return 0;
    }
    s_pq_err(err, errlen, "settings", PQerrorMessage(c->pg));
    co_conn_close(c);
    return -1;
}

int
co_conn_connect(co_conn_t *c, char *err, size_t errlen)
{
    co_conn_close(c);
    /* A server that takes the TCP connection and never answers would
     * stall the connecting thread (the writer's every Ack) for minutes.
     * connect_timeout comes first so that one in the conninfo wins. */
    const char *const keys[] = { "connect_timeout", "dbname", NULL };
    const char *const vals[] = { CO_CONN_CONNECT_TIMEOUT, c->conninfo, NULL };
    c->pg = PQconnectdbParams(keys, vals, 1);
    if (!c->pg) {
        pw_err(err, errlen, "PQconnectdb: out of memory");
        return -1;
    }
    if (PQstatus(c->pg) != CONNECTION_OK) {
        s_pq_err(err, errlen, "PQconnectdb", PQerrorMessage(c->pg));
        co_conn_close(c);
        return -1;
    }
    /* Quiet NOTICEs ("relation exists, skipping") would go to stderr and
     * break the one-line-per-event log. */
    PQsetNoticeProcessor(c->pg, s_quiet, NULL);
    return s_session(c, err, errlen);
}

PGconn *
co_conn_pg(co_conn_t *c, char *err, size_t errlen)
{
    if (c->pg && PQstatus(c->pg) == CONNECTION_OK)
        return c->pg;
    if (c->manual) {
        pw_err(err, errlen, "not connected");
        return NULL;
    }
    if (c->pg) {
        /* A broken connection: reset it once, then start over. */
        PQreset(c->pg);
        if (PQstatus(c->pg) == CONNECTION_OK)
            return s_session(c, err, errlen) == 0 ? c->pg : NULL;
    }
    return co_conn_connect(c, err, errlen) == 0 ? c->pg : NULL;
}

PGconn *
co_conn_raw(const co_conn_t *c)
{
    return c->pg;
}

bool
co_conn_up(const co_conn_t *c)
{
    return c && c->pg && PQstatus(c->pg) == CONNECTION_OK;
}

void
co_conn_check(co_conn_t *c)
{
    if (c->pg && PQstatus(c->pg) != CONNECTION_OK)
        co_conn_close(c);
}

unsigned
co_conn_generation(const co_conn_t *c)
{
    return c->generation;
}

int
co_conn_timeout_ms(const co_conn_t *c)
{
    return c->timeout_ms;
}

const char *
co_conn_sqlstate(const co_conn_t *c)
{
    return c->state;
}

const char *
co_conn_reason(const co_conn_t *c)
{
    return c->reason;
}

int
co_conn_failed(co_conn_t *c, const PGresult *r, const char *name, char *err,
               size_t errlen)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *why = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
                        : NULL;
    snprintf(c->state, sizeof c->state, "%s", state ? state : "");
    snprintf(c->reason, sizeof c->reason, "%s", why ? why : "");
    const char *m = r ? PQresultErrorMessage(r) : "";
    if (!m[0] && c->pg)
        m = PQerrorMessage(c->pg);
    s_pq_err(err, errlen, name, m);
    int kind = CO_CONN_FAILED;
    if (!c->pg || PQstatus(c->pg) != CONNECTION_OK)
        kind = CO_CONN_DOWN;
    else if (state && strcmp(state, "57014") == 0)
        kind = CO_CONN_TIMEOUT;
    else if (state && strncmp(state, "22", 2) == 0)
        kind = CO_CONN_DATA;
    else if (state && strncmp(state, "23", 2) == 0)
        kind = CO_CONN_CONSTRAINT;
    co_conn_check(c);
    return kind;
}

/* The name under which st is prepared on this connection, preparing it
 * the first time: false when it is not (no room, or PQprepare failed:
 * the caller then sends the text, whose failure says why). */
static bool
s_prepared(co_conn_t *c, const co_stmt_t *st, char *name, size_t len)
{
    int k = 0;
    while (k < c->n_prepared && c->prepared[k] != st)
        k++;
    snprintf(name, len, "co_p%d", k);
    if (k < c->n_prepared)
        return true;
    if (k == CO_CONN_PREPARED_MAX)
        return false;
    PGresult *r = PQprepare(c->pg, name, st->sql, st->n_params, NULL);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (ok)
        c->prepared[c->n_prepared++] = st;
    return ok;
}

PGresult *
co_conn_run_bin(co_conn_t *c, const co_stmt_t *st, const char *const *params,
                const int *lens, const int *fmts, bool binary, int *kind,
                char *err, size_t errlen)
{
    int k = CO_CONN_OK;
    c->state[0] = c->reason[0] = '\0';
    if (!co_conn_pg(c, err, errlen)) {
        snprintf(c->reason, sizeof c->reason, "database unavailable");
        if (kind)
            *kind = CO_CONN_DOWN;
        return NULL;
    }
    char name[16];
    PGresult *r;
    if (st->prepare && s_prepared(c, st, name, sizeof name))
        r = PQexecPrepared(c->pg, name, st->n_params, params, lens, fmts,
                           binary);
    else
        r = PQexecParams(c->pg, st->sql, st->n_params, NULL, params, lens,
                         fmts, binary);
    if (PQresultStatus(r) != st->want) {
        k = co_conn_failed(c, r, st->name, err, errlen);
        PQclear(r);
        r = NULL;
    }
    if (kind)
        *kind = k;
    return r;
}

PGresult *
co_conn_run(co_conn_t *c, const co_stmt_t *st, const char *const *params,
            int *kind, char *err, size_t errlen)
{
    return co_conn_run_bin(c, st, params, NULL, NULL, false, kind, err,
                           errlen);
}

int
co_conn_exec(co_conn_t *c, const char *name, const char *sql, int *kind,
             char *err, size_t errlen)
{
    co_stmt_t st = { name, sql, 0, PGRES_COMMAND_OK, false };
    PGresult *r = co_conn_run(c, &st, NULL, kind, err, errlen);
    PQclear(r);
    return r ? 0 : -1;
}

void
co_conn_rollback(co_conn_t *c)
{
    if (co_conn_up(c)) {
        PQclear(PQexec(c->pg, "ROLLBACK"));
        co_conn_check(c);
    }
}

int
co_conn_ready(co_conn_t *c, char *err, size_t errlen)
{
    static const co_stmt_t probe = { "probe", "SELECT 1", 0,
                                     PGRES_TUPLES_OK, false };
    for (int attempt = 0; attempt < 2; attempt++) {
        int kind;
        PGresult *r = co_conn_run(c, &probe, NULL, &kind, err, errlen);
        PQclear(r);
        if (r)
            return 0;
        if (kind != CO_CONN_DOWN)
            return -1;
    }
    return -1;
}

/* ---- reading ---------------------------------------------------------- */

int
co_col(const PGresult *r, const char *name)
{
    return r ? PQfnumber(r, name) : -1;
}

void
co_cols(const PGresult *r, const char *const *names, size_t n, int *cols)
{
    for (size_t k = 0; k < n; k++)
        cols[k] = co_col(r, names[k]);
}

const char *
co_cols_missing(const PGresult *r, const char *names)
{
    for (const char *n = names; *n; n += strlen(n) + 1)
        if (co_col(r, n) < 0)
            return n;
    return NULL;
}

bool
co_val_null(const PGresult *r, int row, int col)
{
    return col < 0 || row < 0 || row >= PQntuples(r)
           || PQgetisnull(r, row, col);
}

const char *
co_val(const PGresult *r, int row, int col)
{
    return co_val_null(r, row, col) ? "" : PQgetvalue(r, row, col);
}

const char *
co_val_or_null(const PGresult *r, int row, int col)
{
    return co_val_null(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

int64_t
co_val_i64(const PGresult *r, int row, int col)
{
    return strtoll(co_val(r, row, col), NULL, 10);
}

double
co_val_f64(const PGresult *r, int row, int col)
{
    return strtod(co_val(r, row, col), NULL);
}

bool
co_val_bool(const PGresult *r, int row, int col)
{
    return co_val(r, row, col)[0] == 't';
}
