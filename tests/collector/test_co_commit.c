/* test_co_commit.c -- co_db_commit trusts only a COMMIT that committed.
 * PostgreSQL answers COMMIT of a transaction in which a
 * statement failed with the command tag ROLLBACK and no error; the
 * collector took that for success and acked a burst's messages that were
 * gone (a SampleBatch whose run_id was not UTF-8 failed its look-up
 * outside any savepoint, and a RunStart stored earlier in the burst was
 * acked but not stored; collector-hostile pins that end to end).
 *
 * co_db runs against tests/fuzz/fz_pq.c (an in-memory libpq) with
 * PQcmdStatus wrapped (-Wl,--wrap) to answer ROLLBACK for COMMIT. */
#include "tap.h"

#include <libpq-fe.h>
#include <stdbool.h>

#include "co_db.h"
#include "co_ingest.h"
#include "fz_pq.h"

char *__real_PQcmdStatus(PGresult *res);
char *__wrap_PQcmdStatus(PGresult *res);

static bool s_rolled_back;   /* COMMIT answers ROLLBACK */

char *
__wrap_PQcmdStatus(PGresult *res)
{
    char *tag = __real_PQcmdStatus(res);
    return s_rolled_back && strcmp(tag, "COMMIT") == 0 ? "ROLLBACK" : tag;
}

/* A RunStart of two arms inside the burst's transaction, then COMMIT. */
static int
s_burst(co_db_t *db, const char *run, int *stored, char *err, size_t errlen)
{
    Parity__Arm a = PARITY__ARM__INIT, b = PARITY__ARM__INIT;
    Parity__Arm *arms[] = { &a, &b };
    Parity__RunStart rs = PARITY__RUN_START__INIT;
    a.name = "new";
    a.subject = true;
    b.name = "old";
    rs.run_id = (char *)run;
    rs.suite = "s";
    rs.benchmark = "b";
    rs.arms = arms;
    rs.n_arms = 2;
    if (co_db_begin(db, err, errlen) != CO_DB_OK)
        return CO_DB_FAIL;
    *stored = co_ingest_run_start(db, 1, &rs, err, errlen);
    return co_db_commit(db, err, errlen);
}

int
main(void)
{
    char err[512] = "";
    int stored = -9;
    co_db_t *db = co_db_new("test");
    fz_pq_reset();
    ok(db && co_db_connect(db, err, sizeof err) == CO_DB_OK,
       "connects to the in-memory libpq");
    ok(s_burst(db, "run-1", &stored, err, sizeof err) == CO_DB_OK
       && stored == CO_DB_OK, "a burst whose COMMIT commits: CO_DB_OK");

    s_rolled_back = true;
    int rc = s_burst(db, "run-2", &stored, err, sizeof err);
    ok(stored == CO_DB_OK && rc == CO_DB_FAIL,
       "COMMIT answered ROLLBACK: co_db_commit says CO_DB_FAIL (%d), "
       "though the RunStart in it said CO_DB_OK", rc);
    ok_str(err, "COMMIT: the transaction had failed and was rolled back "
           "(ROLLBACK)", "err says what happened");
    co_db_destroy(&db);
    return tap_done();
}
