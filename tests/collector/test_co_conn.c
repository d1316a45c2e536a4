/* test_co_conn.c -- co_conn against a real PostgreSQL (a private cluster
 * in a temporary directory, made by co_pg as the collector makes its
 * own): results read by column name, the kind and text of each failure,
 * reconnecting after the server dropped the connection (and not, for a
 * manual connection), prepared statements across a reconnect, the
 * session's settings, LISTEN, and a server that is not there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "co_conn.h"
#include "co_pg.h"
#include "tap.h"

static const co_stmt_t s_row = { "test.row",
    "SELECT 42 AS answer, 2.5::float8 AS half, true AS yes, NULL::text AS "
    "nothing, $1::text AS echo", 1, PGRES_TUPLES_OK, false };
static const co_stmt_t s_bad_int = { "test.bad_int",
    "SELECT $1::int AS n", 1, PGRES_TUPLES_OK, false };
static const co_stmt_t s_syntax = { "test.syntax",
    "SELEKT 1", 0, PGRES_TUPLES_OK, false };
static const co_stmt_t s_sleep = { "test.sleep",
    "SELECT pg_sleep(2)", 0, PGRES_TUPLES_OK, false };
static const co_stmt_t s_pid = { "test.pid",
    "SELECT pg_backend_pid() AS pid", 0, PGRES_TUPLES_OK, true };
static const co_stmt_t s_setting = { "test.setting",
    "SELECT current_setting($1) AS value", 1, PGRES_TUPLES_OK, false };
static const co_stmt_t s_unique = { "test.unique",
    "INSERT INTO conn_test (k) VALUES ($1::int)", 1, PGRES_COMMAND_OK,
    false };

/* Terminate the server process of c from another connection. */
static void
s_kill(PGconn *other, co_conn_t *c)
{
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%d)",
             PQbackendPID(co_conn_raw(c)));
    PQclear(PQexec(other, sql));
    usleep(200000);
}

static void
s_reading(co_conn_t *c)
{
    char err[256];
    int kind = -1;
    const char *p[] = { "hello" };
    PGresult *r = co_conn_run(c, &s_row, p, &kind, err, sizeof err);
    ok(r && kind == CO_CONN_OK, "a statement runs on first use (%s)",
       r ? "ok" : err);
    int i_answer = co_col(r, "answer"), i_half = co_col(r, "half"),
        i_yes = co_col(r, "yes"), i_nothing = co_col(r, "nothing"),
        i_echo = co_col(r, "echo");
    ok(i_answer == 0 && i_echo == 4, "columns resolve by name");
    ok(co_val_i64(r, 0, i_answer) == 42 && co_val_f64(r, 0, i_half) == 2.5
       && co_val_bool(r, 0, i_yes), "integer, double and boolean readers");
    ok(strcmp(co_val(r, 0, i_echo), "hello") == 0, "text reader");
    ok(co_val_null(r, 0, i_nothing) && strcmp(co_val(r, 0, i_nothing), "")
       == 0 && co_val_or_null(r, 0, i_nothing) == NULL,
       "a NULL reads as \"\" and as NULL");
    int missing = co_col(r, "no_such_column");
    ok(missing == -1 && co_val_null(r, 0, missing)
       && co_val_i64(r, 0, missing) == 0 && strcmp(co_val(r, 0, missing), "")
       == 0, "a column the result lacks is -1 and reads as NULL");
    ok(co_val_null(r, 1, i_answer), "a row past the end reads as NULL");
    const char *lacks = co_cols_missing(r, "answer\0echo\0gone\0");
    ok(lacks && strcmp(lacks, "gone") == 0,
       "co_cols_missing names the first column the result lacks");
    ok(co_cols_missing(r, "answer\0half\0") == NULL,
       "and none when it has them all");
    static const char *const names[] = { "echo", "gone", "answer" };
    int cols[3];
    co_cols(r, names, 3, cols);
    ok(cols[0] == 4 && cols[1] == -1 && cols[2] == 0,
       "co_cols resolves a list of names");
    PQclear(r);
}

static void
s_failures(co_conn_t *c)
{
    char err[256];
    int kind = -1;
    const char *p[] = { "twelve" };
    PGresult *r = co_conn_run(c, &s_bad_int, p, &kind, err, sizeof err);
    ok(!r && kind == CO_CONN_DATA, "a value the server refuses: DATA");
    ok(strncmp(err, "test.bad_int: ", 14) == 0 && !strchr(err, '\n')
       && !strstr(err, "SELECT"), "err names the statement, never its text, "
       "on one line (%s)", err);
    ok(strcmp(co_conn_sqlstate(c), "22P02") == 0
       && strstr(co_conn_reason(c), "twelve"),
       "the SQLSTATE and the server's reason are kept (%s: %s)",
       co_conn_sqlstate(c), co_conn_reason(c));
    ok(co_conn_up(c), "and the connection stays up");

    r = co_conn_run(c, &s_syntax, NULL, &kind, err, sizeof err);
    ok(!r && kind == CO_CONN_FAILED && strstr(err, "syntax error"),
       "a syntax error: FAILED (%s)", err);

    ok(co_conn_exec(c, "test.table", "CREATE TEMP TABLE conn_test (k int "
                    "UNIQUE)", &kind, err, sizeof err) == 0,
       "co_conn_exec runs a command");
    const char *k[] = { "1" };
    r = co_conn_run(c, &s_unique, k, &kind, err, sizeof err);
    PQclear(r);
    r = co_conn_run(c, &s_unique, k, &kind, err, sizeof err);
    ok(!r && kind == CO_CONN_CONSTRAINT
       && strncmp(co_conn_sqlstate(c), "23", 2) == 0,
       "a duplicate key: CONSTRAINT (%s)", co_conn_sqlstate(c));
    r = co_conn_run(c, &s_row, p, &kind, err, sizeof err);
    ok(r && kind == CO_CONN_OK && co_conn_sqlstate(c)[0] == '\0',
       "a success clears the last failure");
    PQclear(r);
}

static void
s_timeout(const char *conninfo)
{
    char err[256];
    int kind = -1;
    co_conn_opts_t o = { .conninfo = conninfo, .statement_timeout_ms = 100 };
    co_conn_t *c = co_conn_new(&o);
    ok(co_conn_timeout_ms(c) == 100, "the statement timeout is kept");
    PGresult *r = co_conn_run(c, &s_sleep, NULL, &kind, err, sizeof err);
    ok(!r && kind == CO_CONN_TIMEOUT
       && strcmp(co_conn_sqlstate(c), "57014") == 0,
       "a statement past the timeout: TIMEOUT (%s)", err);
    const char *p[] = { "jit" };
    r = co_conn_run(c, &s_setting, p, &kind, err, sizeof err);
    ok(r && strcmp(co_val(r, 0, co_col(r, "value")), "off") == 0,
       "every connection runs with jit off");
    PQclear(r);
    co_conn_destroy(&c);
}

static void
s_reconnect(const char *conninfo, PGconn *other)
{
    char err[256];
    int kind = -1;
    co_conn_opts_t o = { .conninfo = conninfo,
                         .settings = "SET application_name = 'conn-test'" };
    co_conn_t *c = co_conn_new(&o);
    PGresult *r = co_conn_run(c, &s_pid, NULL, &kind, err, sizeof err);
    int pid1 = r ? (int)co_val_i64(r, 0, co_col(r, "pid")) : 0;
    PQclear(r);
    unsigned gen = co_conn_generation(c);
    ok(pid1 > 0 && gen == 1, "a prepared statement on the first "
       "connection (generation %u)", gen);
    const char *p[] = { "application_name" };
    r = co_conn_run(c, &s_setting, p, &kind, err, sizeof err);
    ok(r && strcmp(co_val(r, 0, co_col(r, "value")), "conn-test") == 0,
       "the options' settings are applied");
    PQclear(r);

    s_kill(other, c);
    ok(co_conn_ready(c, err, sizeof err) == 0,
       "co_conn_ready after the server dropped the connection: it "
       "reconnects (%s)", err);
    r = co_conn_run(c, &s_pid, NULL, &kind, err, sizeof err);
    int pid2 = r ? (int)co_val_i64(r, 0, co_col(r, "pid")) : 0;
    PQclear(r);
    ok(pid2 > 0 && pid2 != pid1 && co_conn_generation(c) == gen + 1,
       "the prepared statement runs on the new connection (pid %d, then "
       "%d)", pid1, pid2);

    s_kill(other, c);
    r = co_conn_run(c, &s_pid, NULL, &kind, err, sizeof err);
    ok(!r && kind == CO_CONN_DOWN && !co_conn_up(c),
       "a statement on a connection the server dropped: DOWN (%s)", err);
    r = co_conn_run(c, &s_pid, NULL, &kind, err, sizeof err);
    ok(r && co_conn_generation(c) == gen + 2,
       "and the next statement connects again");
    PQclear(r);
    co_conn_destroy(&c);
    ok(c == NULL, "destroy clears the handle");
    co_conn_destroy(&c);
}

static void
s_manual(const char *conninfo, PGconn *other)
{
    char err[256];
    int kind = -1;
    co_conn_opts_t o = { .conninfo = conninfo, .manual = true };
    co_conn_t *c = co_conn_new(&o);
    PGresult *r = co_conn_run(c, &s_pid, NULL, &kind, err, sizeof err);
    ok(!r && kind == CO_CONN_DOWN && strcmp(err, "not connected") == 0,
       "manual: no statement before co_conn_connect (%s)", err);
    ok(co_conn_connect(c, err, sizeof err) == 0, "co_conn_connect");
    r = co_conn_run(c, &s_pid, NULL, &kind, err, sizeof err);
    ok(r != NULL, "then statements run");
    PQclear(r);
    s_kill(other, c);
    r = co_conn_run(c, &s_pid, NULL, &kind, err, sizeof err);
    PQclear(r);
    r = co_conn_run(c, &s_pid, NULL, &kind, err, sizeof err);
    ok(!r && kind == CO_CONN_DOWN && co_conn_generation(c) == 1,
       "a dropped manual connection is not made again behind its owner");
    co_conn_destroy(&c);
}

static void
s_listen(const char *conninfo, PGconn *other)
{
    char err[256];
    co_conn_opts_t o = { .conninfo = conninfo, .listen = "conn_test" };
    co_conn_t *c = co_conn_new(&o);
    PGconn *pg = co_conn_pg(c, err, sizeof err);
    PQclear(PQexec(other, "NOTIFY conn_test, 'hi'"));
    usleep(100000);
    PGnotify *n = NULL;
    for (int i = 0; pg && i < 20 && !n; i++) {
        PQconsumeInput(pg);
        if (!(n = PQnotifies(pg)))
            usleep(50000);
    }
    ok(n && strcmp(n->relname, "conn_test") == 0 && strcmp(n->extra, "hi")
       == 0, "a connection with .listen hears its channel");
    PQfreemem(n);
    co_conn_destroy(&c);
}

static void
s_nowhere(void)
{
    char err[256];
    int kind = -1;
    co_conn_opts_t o = { .conninfo = "host=127.0.0.1 port=1 user=x "
                                     "password=sekret" };
    co_conn_t *c = co_conn_new(&o);
    ok(co_conn_pg(c, err, sizeof err) == NULL
       && strncmp(err, "PQconnectdb: ", 13) == 0 && !strchr(err, '\n'),
       "no server: PQconnectdb's first line (%s)", err);
    ok(!strstr(err, "sekret"), "never the conninfo's password");
    PGresult *r = co_conn_run(c, &s_pid, NULL, &kind, err, sizeof err);
    ok(!r && kind == CO_CONN_DOWN, "a statement: DOWN");
    ok(co_conn_ready(c, err, sizeof err) == -1, "co_conn_ready: -1");
    co_conn_destroy(&c);
}

int
main(void)
{
    char dir[] = "/tmp/parity-co-conn-XXXXXX", err[512];
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp failed\n");
        return 1;
    }
    co_pg_t *pg = co_pg_new(dir, err, sizeof err);
    if (!pg) {
        printf("Bail out! no private cluster: %s\n", err);
        return 1;
    }
    const char *conninfo = co_pg_conninfo(pg);
    PGconn *other = PQconnectdb(conninfo);
    ok(PQstatus(other) == CONNECTION_OK, "a private cluster to test on");

    co_conn_opts_t o = { .conninfo = conninfo };
    co_conn_t *c = co_conn_new(&o);
    ok(c && !co_conn_up(c) && co_conn_generation(c) == 0,
       "a new handle has not connected");
    s_reading(c);
    s_failures(c);
    co_conn_destroy(&c);
    s_timeout(conninfo);
    s_reconnect(conninfo, other);
    s_manual(conninfo, other);
    s_listen(conninfo, other);
    s_nowhere();

    PQfinish(other);
    co_pg_stop(pg, err, sizeof err);
    co_pg_destroy(&pg);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
    return tap_done();
}
