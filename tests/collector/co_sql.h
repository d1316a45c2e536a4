/* co_sql.h -- what the collector's C tests read back from its database
 * (they link libpq; co_client.h is for those that only speak the wire).
 * Include after tap.h. */
#ifndef CO_SQL_H
#define CO_SQL_H

#include <stdlib.h>
#include <libpq-fe.h>

/* The one integer sql returns on pg, or -1 (said with tap_diag). */
static inline long
cc_sql_long(PGconn *pg, const char *sql)
{
    PGresult *r = PQexec(pg, sql);
    long v = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        v = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    else
        tap_diag("sql %s: %s", sql, PQerrorMessage(pg));
    PQclear(r);
    return v;
}

#endif
