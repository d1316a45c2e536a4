/* test_co_copy.c -- co_db's COPY error path: when the COPY
 * data cannot be sent, the copy is ended as failed (PQputCopyEnd with a
 * message) before results are collected, and a server that stays in
 * COPY-IN is not spun on.
 *
 * co_db runs against tests/fuzz/fz_pq.c (an in-memory libpq), with
 * PQputCopyData, PQputCopyEnd, PQgetResult, PQresultStatus and PQclear
 * wrapped (-Wl,--wrap) to play a connection that fails mid-COPY. Like
 * libpq, PQgetResult answers PGRES_COPY_IN for as long as the copy has
 * not been ended. */
#include "tap.h"

#include <libpq-fe.h>
#include <stdbool.h>

#include "co_cals.h"
#include "co_db.h"
#include "fz_pq.h"

PGresult *__real_PQgetResult(PGconn *conn);
int __real_PQputCopyData(PGconn *conn, const char *buffer, int nbytes);
int __real_PQputCopyEnd(PGconn *conn, const char *errormsg);
ExecStatusType __real_PQresultStatus(const PGresult *res);
void __real_PQclear(PGresult *res);
PGresult *__wrap_PQgetResult(PGconn *conn);
int __wrap_PQputCopyData(PGconn *conn, const char *buffer, int nbytes);
int __wrap_PQputCopyEnd(PGconn *conn, const char *errormsg);
ExecStatusType __wrap_PQresultStatus(const PGresult *res);
void __wrap_PQclear(PGresult *res);

/* More PQgetResult calls than this in one COPY is a spin: the wrapper
 * then answers NULL so that the test ends and says so. */
#define SPIN 1000

static struct {
    bool fail_data;        /* PQputCopyData fails */
    bool stuck;            /* the server never leaves COPY-IN */
    bool failed;           /* a PQputCopyData failed */
    bool ended;            /* PQputCopyEnd was called after it */
    char end_msg[128];     /* its error message ("" for none) */
    int results;           /* PQgetResult calls since the failure */
} s;

/* Stands for libpq's PGRES_COPY_IN result (fz_pq has no such). */
static char s_copy_in_result;

int
__wrap_PQputCopyData(PGconn *conn, const char *buffer, int nbytes)
{
    if (!s.fail_data)
        return __real_PQputCopyData(conn, buffer, nbytes);
    s.failed = true;
    return -1;
}

int
__wrap_PQputCopyEnd(PGconn *conn, const char *errormsg)
{
    if (!s.failed)
        return __real_PQputCopyEnd(conn, errormsg);
    if (!s.ended) {
        s.ended = true;
        snprintf(s.end_msg, sizeof s.end_msg, "%s",
                 errormsg ? errormsg : "");
        return __real_PQputCopyEnd(conn, "x");   /* leaves fz_pq's copy */
    }
    return 1;
}

PGresult *
__wrap_PQgetResult(PGconn *conn)
{
    if (!s.failed)
        return __real_PQgetResult(conn);
    if (++s.results > SPIN)
        return NULL;
    if (!s.ended || s.stuck)
        return (PGresult *)&s_copy_in_result;
    return __real_PQgetResult(conn);
}

ExecStatusType
__wrap_PQresultStatus(const PGresult *res)
{
    if (res == (const PGresult *)&s_copy_in_result)
        return PGRES_COPY_IN;
    return __real_PQresultStatus(res);
}

void
__wrap_PQclear(PGresult *res)
{
    if (res != (PGresult *)&s_copy_in_result)
        __real_PQclear(res);
}

/* One Calibration through co_db: BEGIN, INSERT, then the COPY. */
static int
s_calibrate(co_db_t *db, char *err, size_t errlen)
{
    double wall[3] = { 100, 101, 102 };
    Parity__Calibration c = PARITY__CALIBRATION__INIT;
    c.calibration_id = "cal-1";
    c.taken_at_us = 1000;
    c.n_wall_us = 3;
    c.wall_us = wall;
    return co_cals_store(db, 1, &c, err, errlen);
}

int
main(void)
{
    char err[512] = "";
    co_db_t *db = co_db_new("test");
    fz_pq_reset();
    ok(db && co_db_connect(db, err, sizeof err) == CO_DB_OK,
       "connects to the in-memory libpq");
    ok(s_calibrate(db, err, sizeof err) == CO_DB_OK,
       "a calibration is stored when the COPY goes through");

    memset(&s, 0, sizeof s);
    s.fail_data = true;
    int rc = s_calibrate(db, err, sizeof err);
    ok(rc == CO_DB_FAIL, "PQputCopyData failing: CO_DB_FAIL (%d)", rc);
    ok(s.ended, "the copy was ended before results were collected");
    ok_str(s.end_msg, "parity: COPY data not sent",
           "with an error message, so the server rolls the COPY back");
    ok(s.results < SPIN, "no spin on PGRES_COPY_IN (%d results)",
       s.results);
    ok(strstr(err, "PQputCopyData") != NULL, "err names the call: %s", err);

    /* A server that stays in COPY-IN even after the end. */
    fz_pq_reset();
    co_db_disconnect(db);
    ok(co_db_connect(db, err, sizeof err) == CO_DB_OK, "reconnects");
    memset(&s, 0, sizeof s);
    s.fail_data = true;
    s.stuck = true;
    rc = s_calibrate(db, err, sizeof err);
    ok(rc == CO_DB_FAIL, "stuck in COPY-IN: CO_DB_FAIL (%d)", rc);
    ok(s.results <= 8, "gives up after a bound (%d results)", s.results);
    ok(!co_db_connected(db), "and closes the connection");
    ok(strstr(err, "PQputCopyData") != NULL, "err keeps the cause: %s",
       err);
    co_db_destroy(&db);
    return tap_done();
}
