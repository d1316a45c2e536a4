/* co_conn.h -- a reconnecting PostgreSQL connection, the one way the
 * collector runs a statement, and the one way it reads a result.
 *
 * Every thread that talks to PostgreSQL holds one co_conn_t of its own
 * (the writer's inside co_db, each query worker, detection, the notice,
 * bisect and confirm threads). A connection is made the same way
 * everywhere: connect_timeout CO_CONN_CONNECT_TIMEOUT unless the conninfo
 * says otherwise, NOTICEs quieted (they would break the one-line log),
 * jit off, the statement timeout and settings of its options, LISTEN on
 * its channel.
 *
 * Error policy:
 * - co_conn_run reconnects first when the connection is gone (once per
 *   call; co_conn_ready probes and retries once, for the first request
 *   after a database restart);
 * - a failed statement leaves err "NAME: the server's first line" (the
 *   statement's name, never its text: errors may reach peers and logs)
 *   and a kind (CO_CONN_*) saying whose fault it was; the connection is
 *   dropped when it broke, so the next call makes a new one;
 * - nothing here prints or retries a statement.
 *
 * Statements live in tables of co_stmt_t, one per module, each with a
 * name. Results are read by column name, resolved once per result
 * (pg_dump's PQfnumber): co_col, then the co_val_* readers.
 *
 * One thread at a time per handle. Strings passed in are copied.
 */
#ifndef CO_CONN_H
#define CO_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

/* Seconds a connect may take unless the conninfo says otherwise (each is
 * made on a thread with other work waiting). */
#define CO_CONN_CONNECT_TIMEOUT "2"
/* Statements prepared on one connection at most (the hot ones). */
#define CO_CONN_PREPARED_MAX 32

/* One statement of a module's table. */
typedef struct {
    const char *name;      /* "jobs.claim": what errors and logs show */
    const char *sql;
    int n_params;
    ExecStatusType want;   /* PGRES_COMMAND_OK or PGRES_TUPLES_OK */
    /* Hot (one per message, or a plan worth keeping): parsed and planned
     * once per connection; the table entry's address names it, so the
     * table must be static. */
    bool prepare;
} co_stmt_t;

/* Whose fault a failure was. */
enum {
    CO_CONN_OK = 0,
    CO_CONN_DOWN,        /* no connection, or it broke: try again later */
    CO_CONN_TIMEOUT,     /* cancelled by the statement timeout (57014) */
    CO_CONN_DATA,        /* a value the database refused (SQLSTATE 22) */
    CO_CONN_CONSTRAINT,  /* a constraint failed (SQLSTATE 23) */
    CO_CONN_FAILED,      /* anything else the server said */
};

typedef struct {
    const char *conninfo;         /* libpq connection string */
    /* Statements run on each new connection after jit off (NULL: none). */
    const char *settings;
    int statement_timeout_ms;     /* 0: the server's default */
    const char *listen;           /* LISTEN on this channel (NULL: none) */
    /* The owner connects (co_conn_connect) and a statement never
     * reconnects on its own: the writer's transaction spans many
     * statements, and one sent on a new connection would run outside
     * it. */
    bool manual;
} co_conn_opts_t;

typedef struct co_conn co_conn_t;

/* A handle; does not connect (the first statement does). Caller owns
 * it. NULL out of memory. */
co_conn_t *co_conn_new(const co_conn_opts_t *opts);
/* Close and free; clears *c. NULL is fine. */
void co_conn_destroy(co_conn_t **c);

/* The connection, made now when there is none or it broke (PQreset once,
 * then a new one); NULL with err "PQconnectdb: ..." or "settings: ..."
 * (libpq's first line, never the conninfo: it may hold a password).
 * Borrowed: for what co_conn_run cannot do (COPY, notifications). */
PGconn *co_conn_pg(co_conn_t *c, char *err, size_t errlen);
/* The connection as it is (NULL: none), without connecting. */
PGconn *co_conn_raw(const co_conn_t *c);
/* Drop any connection and make a new one now: 0, or -1 with err. */
int co_conn_connect(co_conn_t *c, char *err, size_t errlen);
/* Drop the connection (the next statement connects again). */
void co_conn_close(co_conn_t *c);
/* Connected, and the connection was fine at its last use. */
bool co_conn_up(const co_conn_t *c);
/* Drop the connection when it broke (after a caller's own libpq call). */
void co_conn_check(co_conn_t *c);
/* The connection works now (SELECT 1), reconnecting once when the server
 * went away since its last use: 0, or -1 with err. */
int co_conn_ready(co_conn_t *c, char *err, size_t errlen);
/* How many connections this handle has made: a caller that keeps state
 * per server session (LISTEN, temporary tables) sees it change. */
unsigned co_conn_generation(const co_conn_t *c);
/* Its options' statement timeout (ms; 0: none). */
int co_conn_timeout_ms(const co_conn_t *c);

/* Run st with st->n_params params (text, NULL for SQL NULL): the result
 * (caller PQclears) or NULL with err and *kind (may be NULL) set. */
PGresult *co_conn_run(co_conn_t *c, const co_stmt_t *st,
                      const char *const *params, int *kind, char *err,
                      size_t errlen);
/* co_conn_run with binary parameters where fmts[i] is 1 (lens[i] bytes)
 * and, when binary, the result in binary. */
PGresult *co_conn_run_bin(co_conn_t *c, const co_stmt_t *st,
                          const char *const *params, const int *lens,
                          const int *fmts, bool binary, int *kind,
                          char *err, size_t errlen);
/* A statement without parameters expecting PGRES_COMMAND_OK (BEGIN,
 * COMMIT, ROLLBACK, SET): 0, or -1 with err and *kind (may be NULL). */
int co_conn_exec(co_conn_t *c, const char *name, const char *sql, int *kind,
                 char *err, size_t errlen);
/* ROLLBACK when connected; a failure only drops a broken connection. */
void co_conn_rollback(co_conn_t *c);

/* Record the failure of a statement sent on the raw connection (COPY,
 * a transaction's own statements): err "NAME: message", the kind as
 * co_conn_run says it, the connection dropped when it broke. r may be
 * NULL; it is not cleared. */
int co_conn_failed(co_conn_t *c, const PGresult *r, const char *name,
                   char *err, size_t errlen);

/* The SQLSTATE and the server's primary message of the last failure of
 * co_conn_run / co_conn_exec ("" when none): a caller that tells a
 * refusal's reason to a peer uses these, never the statement. */
const char *co_conn_sqlstate(const co_conn_t *c);
const char *co_conn_reason(const co_conn_t *c);

/* ---- reading a result by column name ---------------------------------
 * Resolve each column once per result, then read rows by that index:
 *     int i_id = co_col(r, "id"), i_name = co_col(r, "name");
 *     for (int i = 0; i < PQntuples(r); i++)
 *         use(co_val_i64(r, i, i_id), co_val(r, i, i_name));
 * A name the result does not have is -1, which every reader treats as a
 * NULL column ("" or 0), and co_cols_missing reports. */
int co_col(const PGresult *r, const char *name);
/* cols[k] = co_col(r, names[k]) for each of the n names: a result read
 * through an enum of its columns (cols[C_NAME]), resolved once. */
void co_cols(const PGresult *r, const char *const *names, size_t n,
             int *cols);
/* The first of the NUL-separated names ("a\0b\0", ending with an empty
 * one) that r lacks, or NULL when it has them all: a statement whose
 * SELECT list lost a column is an error its test names. */
const char *co_cols_missing(const PGresult *r, const char *names);

bool co_val_null(const PGresult *r, int row, int col);
/* The text ("" when NULL or no such column); borrowed from r. */
const char *co_val(const PGresult *r, int row, int col);
/* The text, or NULL when the value is NULL. */
const char *co_val_or_null(const PGresult *r, int row, int col);
int64_t co_val_i64(const PGresult *r, int row, int col);
double co_val_f64(const PGresult *r, int row, int col);
/* PostgreSQL's boolean text: true for "t". */
bool co_val_bool(const PGresult *r, int row, int col);

#endif
