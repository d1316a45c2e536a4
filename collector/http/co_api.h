/* co_api.h -- the JSON API's routes: a request's method, path and
 * parameters turned into one of the protocol's admin queries
 * (docs/http.md "The API", docs/protocol.md section 10).
 *
 *   GET  /api/v1/hosts                    hosts      (?limit ?offset)
 *   GET  /api/v1/jobs                     jobs       (?active ?limit)
 *   GET  /api/v1/jobs/ID                  job
 *   GET  /api/v1/verdicts                 verdicts   (?job | ?latest, ?metric)
 *   GET  /api/v1/history/BENCHMARK        history    (?suite ?other ?host...
 *                                                     ?tag... ?limit ?by
 *                                                     ?metric)
 *   GET  /api/v1/series                   series     (?suite ?benchmark ?host
 *                                                     ?tag... ?since_us ?runs
 *                                                     ?metric)
 *   GET  /api/v1/regressions              regressions (?tag... ?jobs
 *                                                     ?since_us ?host)
 *   GET  /api/v1/changes                  regressions, its change_points
 *   GET  /api/v1/bisect/ID                bisect_status
 *   GET  /api/v1/runs/ID/export           show
 *   POST /api/v1/regressions/ID/ack       ack (triage; body {"note": ...})
 *   POST /api/v1/regressions/ID/unack     unack (triage)
 *
 * Pure: no I/O, no database. The caller has decoded the path (and
 * refused NUL bytes and `..` in it) and the query string.
 */
#ifndef CO_API_H
#define CO_API_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "co_tokens.h"

#define CO_API_PREFIX "/api/v1/"
/* Parameters of one request at most, and the largest ack body. */
#define CO_API_MAX_PARAMS 64
#define CO_API_MAX_BODY 65536
/* Rows of a paged list (hosts) per answer at most, and by default. */
#define CO_API_PAGE_MAX 1000

typedef struct {
    const char *key;      /* decoded, NUL-terminated */
    const char *value;
} co_api_param_t;

typedef struct {
    /* An error: the HTTP status (400, 404, 405, 413), the code and the
     * message of {"error": {"code", "message"}}; 0 when routed. */
    int status;
    const char *code;
    char message[400];
    const char *allow;        /* 405: the Allow header's value */
    /* Routed: the query and its arguments (owned: json_decref). */
    const char *command;
    json_t *args;
    co_role_t role;           /* what the token must have at least */
    const char *list;         /* the body's array to page, or NULL */
    const char *part;         /* answer only this member of the body */
    size_t offset, limit;     /* paging of list */
} co_api_call_t;

/* Route method and path with params (n of them) and body (the request's,
 * body_len bytes; POST only) into *call: 0, or -1 with call's error set.
 * Either way the caller calls co_api_call_clear(call). */
int co_api_route(const char *method, const char *path,
                 const co_api_param_t *params, size_t n, const char *body,
                 size_t body_len, co_api_call_t *call);

void co_api_call_clear(co_api_call_t *call);

/* The HTTP status and error code of a Reply's status (CO_REPLY_*):
 * 200, or 400 bad_parameter, 404 not_found, 503 unavailable, 504
 * timeout, 500 too_large / internal. */
int co_api_http_status(int reply_status, const char **code);

/* Apply call's paging to body (owned by the caller, changed in place):
 * keep list's rows [offset, offset + limit) and set "next" to the next
 * page's offset, or null. */
void co_api_page(const co_api_call_t *call, json_t *body);

#endif
