/* co_reply.h -- what the query commands (co_query, co_history,
 * co_changes, co_enroll) share: the Reply's status codes, one answer's
 * status and error line, its database round trip, the parsing of the
 * arguments every command takes the same way, and the cross-host summary
 * of one comparison. It sits below all of them: co_query dispatches to
 * co_history and co_changes, and none of them includes co_query.h.
 *
 * The error line is the reply's; status is one of CO_REPLY_*.
 * Nothing here prints; the connection is the caller's (borrowed).
 */
#ifndef CO_REPLY_H
#define CO_REPLY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "co_jobs.h"

/* Reply.status values (docs/protocol.md 10.1). */
enum {
    CO_REPLY_OK = 0,
    CO_REPLY_BADARGS = 1,      /* args_json or an argument is wrong */
    CO_REPLY_UNKNOWN = 2,      /* no such command */
    CO_REPLY_FORBIDDEN = 3,    /* the key is not an admin key */
    CO_REPLY_NOTFOUND = 4,     /* no such job or run */
    CO_REPLY_UNAVAILABLE = 5,  /* the database is down: try again */
    CO_REPLY_TOO_BIG = 6,      /* the answer does not fit in one frame */
    CO_REPLY_TIMEOUT = 7,      /* ran past --query-timeout: cancelled */
};

/* The error line of a query cancelled by the statement timeout. */
#define CO_REPLY_TIMEOUT_FMT "query timed out: it ran longer than the " \
    "collector's --query-timeout of %.3g s and was cancelled (ask for " \
    "less, or raise --query-timeout)"

/* A body larger than this is refused with CO_REPLY_TOO_BIG (the frame
 * bound is 4 MiB; the rest is room for the envelope). */
#define CO_REPLY_MAX_BODY   (4000u * 1024u)

/* Most tags one request may filter by. */
#define CO_REPLY_FILTERS_MAX 256

/* One answer's status and error line. */
typedef struct {
    co_conn_t *conn;
    co_jobs_t *jobs;   /* for a command that makes or cancels jobs */
    int status;
    char *err;
    size_t errlen;
} co_reply_t;

/* A command handler's reply on conn: status OK and an empty error line,
 * in err (errlen bytes, may be 0). jobs (may be NULL) is for commands
 * that make or cancel jobs. Both borrowed. */
co_reply_t co_reply_begin(co_conn_t *conn, co_jobs_t *jobs, char *err,
                          size_t errlen);

/* A command handler's end: body, its *status c's. A NULL body with no
 * failure said yet is out of memory (CO_REPLY_UNAVAILABLE), so every
 * handler answers something. */
json_t *co_reply_end(co_reply_t *c, json_t *body, int *status);

/* Set c's status and error line. */
void co_reply_fail(co_reply_t *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Run one statement (co_conn_run); NULL with c's status set: the
 * database is down or refused it (CO_REPLY_UNAVAILABLE), or it timed out
 * (CO_REPLY_TIMEOUT). The caller PQclears the result. */
PGresult *co_reply_run(co_reply_t *c, const co_stmt_t *st,
                       const char *const *p);
/* co_reply_run of a statement returning rows whose text is built at run
 * time (a table's name, a rule's columns), under name. */
PGresult *co_reply_text(co_reply_t *c, const char *name, const char *sql,
                        int n, const char *const *p);

/* Column values: an integer, an integer or null, a JSON text parsed
 * (null when NULL or unparsable; caller owns), and an object's string
 * member ("" when absent; borrowed). */
json_int_t co_reply_int(PGresult *r, int row, int col);
json_t *co_reply_int_or_null(PGresult *r, int row, int col);
json_t *co_reply_json_col(PGresult *r, int row, int col);
const char *co_reply_str(const json_t *o, const char *k);
/* A column of a row read into an answer's object: its key, and how its
 * text becomes the value. */
typedef enum {
    CO_REPLY_COL_STR,        /* the text */
    CO_REPLY_COL_INT,        /* co_reply_int */
    CO_REPLY_COL_INT_NULL,   /* co_reply_int_or_null */
    CO_REPLY_COL_JSON,       /* co_reply_json_col */
} co_reply_col_kind_t;
typedef struct {
    const char *key;
    co_reply_col_kind_t kind;
} co_reply_col_t;

/* Every row of r as an object of the n columns cols (the column named
 * cols[k].key under that key, in that order), in a new array; a row
 * whose object could not be made (out of memory, text that is not UTF-8)
 * is left out. NULL out of memory, or with more than
 * CO_REPLY_ROWS_COLS_MAX columns. Caller owns it. */
#define CO_REPLY_ROWS_COLS_MAX 32
json_t *co_reply_rows(PGresult *r, const co_reply_col_t *cols, size_t n);

/* An environment field's value (ag_env's {"value", "source"} shape, or
 * the bare value); a new reference, null when absent. */
json_t *co_reply_env_value(const json_t *env, const char *key);

/* What a verdict's floor pooled (docs/protocol.md 10.8 "floor_pool"),
 * from the columns pool_runs, pool_quiet, pool_oldest_us and
 * pool_newest_us (floors.n_samples, quiet, oldest_us, newest_us; nulls
 * for a run stored before 017), resolved once per result by
 * co_reply_pool_cols. Caller owns it; NULL on out of memory. */
typedef struct {
    int runs, quiet, oldest_us, newest_us;
} co_reply_pool_cols_t;
void co_reply_pool_cols(const PGresult *r, co_reply_pool_cols_t *c);
json_t *co_reply_floor_pool(PGresult *r, int row,
                            const co_reply_pool_cols_t *c);

/* args "tags" as jsonb text for `tags @> $n` ({} when absent; every
 * value a string). Caller frees; NULL with c's status set. */
char *co_reply_tags_arg(co_reply_t *c, const json_t *args);

/* An optional integer argument in lo..hi; dflt when absent. False with
 * c's status set. */
bool co_reply_int_arg(co_reply_t *c, const json_t *args, const char *key,
                      json_int_t lo, json_int_t hi, json_int_t dflt,
                      json_int_t *out);

/* The cross-host summary of one comparison's entries, each
 * {"verdict": {written form}, ...} or {"error": ...}: only entries with a
 * verdict count. {"hosts", "win", "parity", "loss", "geomean_ratio",
 * "geomean_best_ratio", "consensus"} from vd_fleet. entries is borrowed;
 * the caller owns the result; NULL on out of memory. */
json_t *co_reply_summary(const json_t *entries);

#endif
