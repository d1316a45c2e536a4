/* co_retain.c -- monthly partitions of samples and retention; see
 * co_retain.h. */
#include "co_retain.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "co_floors.h"
#include "pw_err.h"

/* Seconds a partition change may wait for its lock: it needs samples
 * briefly to itself, and must never queue ingest behind a long query. */
#define S_PARTITION_LOCK_TIMEOUT "'5s'"

enum { S_PARTITION, S_MOVE, S_DROP_SQL, S_OLD_PARTITIONS, S_DEFAULT_OLD,
       S_CALIBRATION_OLD, S_LOCK_TIMEOUT, S_MOVING, S_MOVE_BACK };
static const co_stmt_t s_sql[] = {
    [S_PARTITION] = { "retain.partition",
        "SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = 'samples'::regclass AND c.relname = $1",
        1, PGRES_TUPLES_OK, false },
    [S_MOVE] = { "retain.move",
        "WITH m AS (DELETE FROM samples_default WHERE start_unix_us >= $1 AND "
        "start_unix_us < $2 RETURNING *) INSERT INTO samples_moving SELECT * "
        "FROM m",
        2, PGRES_COMMAND_OK, false },
    [S_DROP_SQL] = { "retain.drop_sql",
        "SELECT format('DROP TABLE %I', $1::text) AS sql",
        1, PGRES_TUPLES_OK, false },
    [S_OLD_PARTITIONS] = { "retain.old_partitions",
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = "
        "i.inhrelid WHERE i.inhparent = 'samples'::regclass AND "
        "pg_get_expr(c.relpartbound, c.oid) LIKE 'FOR VALUES FROM%' AND "
        "substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO "
        "\\(''?(-?[0-9]+)''?\\)')::bigint <= $1::bigint ORDER BY 1",
        1, PGRES_TUPLES_OK, false },
    [S_LOCK_TIMEOUT] = { "retain.lock_timeout",
        "SET LOCAL lock_timeout = " S_PARTITION_LOCK_TIMEOUT,
        0, PGRES_COMMAND_OK, false },
    [S_MOVING] = { "retain.moving",
        "CREATE TEMP TABLE samples_moving (LIKE samples) ON COMMIT DROP",
        0, PGRES_COMMAND_OK, false },
    [S_MOVE_BACK] = { "retain.move_back",
        "INSERT INTO samples SELECT * FROM samples_moving",
        0, PGRES_COMMAND_OK, false },
    [S_DEFAULT_OLD] = { "retain.default_old",
        "DELETE FROM samples_default d USING runs r WHERE r.id = d.run AND "
        "d.start_unix_us < $1 AND r.started_at_us < $1",
        1, PGRES_COMMAND_OK, false },
    [S_CALIBRATION_OLD] = { "retain.calibration_old",
        "DELETE FROM host_calibration WHERE taken_at_us < $1",
        1, PGRES_COMMAND_OK, false },
};

/* A statement of the table without parameters or rows. */
static int
s_exec(co_db_t *db, int stmt, char *err, size_t errlen)
{
    int rc;
    PGresult *r = co_db_run(db, &s_sql[stmt], NULL, &rc, err, errlen);
    PQclear(r);
    return rc;
}

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
    PGresult *r = co_db_run(db, &s_sql[S_PARTITION], pn, &rc, err, errlen);
    if (!r)
        return rc;
    bool exists = PQntuples(r) > 0;
    PQclear(r);
    if (exists)
        return CO_DB_OK;
    if ((rc = co_db_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        return rc;
    if ((rc = s_exec(db, S_LOCK_TIMEOUT, err, errlen)) != CO_DB_OK ||
        (rc = s_exec(db, S_MOVING, err, errlen)) != CO_DB_OK)
        goto end;
    const char *pr[] = { los, his };
    r = co_db_run(db, &s_sql[S_MOVE], pr, &rc, err, errlen);
    if (!r)
        goto end;
    PQclear(r);
    /* Numbers formatted here, not user text: DDL takes no parameters. */
    snprintf(sql, sizeof sql, "CREATE TABLE %s PARTITION OF samples FOR "
             "VALUES FROM (%s) TO (%s)", name, los, his);
    if ((rc = co_db_exec(db, sql, err, errlen)) != CO_DB_OK)
        goto end;
    if ((rc = s_exec(db, S_MOVE_BACK, err, errlen)) != CO_DB_OK)
        goto end;
end:
    return co_db_end(db, rc, err, errlen);
}

int
co_retain_partitions(co_db_t *db, int64_t now_us, int months_ahead,
                     char *err, size_t errlen)
{
    int rc = CO_DB_OK;
    if (months_ahead < 0 || months_ahead > CO_RETAIN_MONTHS_AHEAD_MAX) {
        pw_err_line(err, errlen, "partitions: %d months ahead (0..%d)",
                    months_ahead, CO_RETAIN_MONTHS_AHEAD_MAX);
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
    if ((rc = co_db_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        return rc;
    if ((rc = s_exec(db, S_LOCK_TIMEOUT, err, errlen)) != CO_DB_OK)
        goto end;
    const char *p[] = { name };
    PGresult *r = co_db_run(db, &s_sql[S_DROP_SQL], p, &rc, err, errlen);
    if (!r)
        goto end;
    char sql[256];
    snprintf(sql, sizeof sql, "%s", co_val(r, 0, co_col(r, "sql")));
    PQclear(r);
    if ((rc = co_db_exec(db, sql, err, errlen)) != CO_DB_OK)
        goto end;
end:
    return co_db_end(db, rc, err, errlen);
}

int
co_retain_samples(co_db_t *db, int64_t keep_us, int64_t now_us, int *dropped,
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
    PGresult *r = co_db_run(db, &s_sql[S_OLD_PARTITIONS], p, &rc, err, errlen);
    if (!r)
        return rc;
    int i_name = co_col(r, "relname");
    for (int i = 0; i < PQntuples(r) && rc == CO_DB_OK; i++) {
        rc = s_partition_drop(db, co_val(r, i, i_name), err, errlen);
        if (rc == CO_DB_OK)
            (*dropped)++;
    }
    PQclear(r);
    if (rc != CO_DB_OK)
        return rc;
    /* Rows the default partition holds for old runs (an agent clock far
     * off): a recent run's samples stay, whatever their clock said. */
    r = co_db_run(db, &s_sql[S_DEFAULT_OLD], p, &rc, err, errlen);
    if (!r)
        return rc;
    PQclear(r);
    r = co_db_run(db, &s_sql[S_CALIBRATION_OLD], p, &rc, err, errlen);
    PQclear(r);
    co_floors_clear(co_db_floors(db));
    return rc;
}
