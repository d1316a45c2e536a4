/* co_reply.h -- what the query commands (co_history, co_changes) share:
 * one answer's status and error line, its database round trip, and the
 * parsing of the arguments every command takes the same way.
 *
 * The error line is the reply's; status is co_query.h's CO_QUERY_*.
 * Nothing here prints; the connection is co_jobs' (borrowed).
 */
#ifndef CO_REPLY_H
#define CO_REPLY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "co_jobs.h"

/* Most tags one request may filter by. */
#define CO_REPLY_FILTERS_MAX 256

/* One answer's status and error line. */
typedef struct {
    co_jobs_t *jobs;
    int status;
    char *err;
    size_t errlen;
} co_reply_t;

/* Set c's status and error line. */
void co_reply_fail(co_reply_t *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Run one parameterised query that returns rows; NULL with c's status
 * set (the database is down, timed out or refused it). The caller
 * PQclears the result. */
PGresult *co_reply_q(co_reply_t *c, const char *sql, int n,
                     const char *const *p);

/* Column values: an integer, an integer or null, a JSON text parsed
 * (null when NULL or unparsable; caller owns), and an object's string
 * member ("" when absent; borrowed). */
json_int_t co_reply_int(PGresult *r, int row, int col);
json_t *co_reply_int_or_null(PGresult *r, int row, int col);
json_t *co_reply_json_col(PGresult *r, int row, int col);
const char *co_reply_str(const json_t *o, const char *k);

/* args "tags" as jsonb text for `tags @> $n` ({} when absent; every
 * value a string). Caller frees; NULL with c's status set. */
char *co_reply_tags_arg(co_reply_t *c, const json_t *args);

/* An optional integer argument in lo..hi; dflt when absent. False with
 * c's status set. */
bool co_reply_int_arg(co_reply_t *c, const json_t *args, const char *key,
                      json_int_t lo, json_int_t hi, json_int_t dflt,
                      json_int_t *out);

#endif
