/* co_lease.c -- leases of live rows (co_lease.h). */
#include "co_lease.h"

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "pw_clock.h"

void
co_lease_owner(char *buf, size_t len, const char *name)
{
    if (name && *name) {
        snprintf(buf, len, "%s", name);
        return;
    }
    char host[64] = "collector";
    gethostname(host, sizeof host - 1);
    snprintf(buf, len, "%s:%ld", host, (long)getpid());
}

PGresult *
co_lease_take(co_reply_t *c, const char *table, const char *owner)
{
    char sql[400], now[24], until[24];
    int64_t t = pw_clock_unix_us();
    snprintf(now, sizeof now, "%" PRId64, t);
    snprintf(until, sizeof until, "%" PRId64, (int64_t)(t + CO_LEASE_US));
    /* table is one of two constants, never input. */
    snprintf(sql, sizeof sql, "WITH l AS (UPDATE %s SET lease_owner = $1, "
             "lease_until_us = $3 WHERE state IN ('queued', 'running') AND "
             "(lease_owner = $1 OR lease_until_us < $2::bigint) RETURNING "
             "id) SELECT id FROM l ORDER BY id", table);
    const char *p[] = { owner, now, until };
    return co_reply_text(c, "lease.take", sql, 3, p);
}

void
co_lease_give_back(co_reply_t *c, const char *table, const char *owner)
{
    char sql[160];
    snprintf(sql, sizeof sql, "UPDATE %s SET lease_until_us = 0 WHERE "
             "lease_owner = $1 RETURNING id", table);
    const char *p[] = { owner };
    PQclear(co_reply_text(c, "lease.give_back", sql, 1, p));
}
