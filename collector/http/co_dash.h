/* co_dash.h -- the live dashboard: the site's pages (co_page) rendered
 * from the database on request (docs/http.md "The dashboard").
 *
 *   GET /                      the overview (reloads itself)
 *   GET /hosts                 the hosts
 *   GET /regressions           open events and change points, and the
 *                              acknowledged ones (reloads itself)
 *   GET /bench/NAME?suite=S    one benchmark: its series' plots
 *   GET /regressions.xml       the Atom feed of regression events
 *   GET /regressions/ID/ack    a triage session's page acknowledging
 *                              open change point (or event) ID, with
 *                              its note (it does not reload itself)
 *
 * Each page asks the protocol's queries through ask (the HTTP thread's
 * own connection) and writes the answer into memory. A link to a
 * benchmark, an event (/regressions#event-ID) or a change point
 * (#cp-ID) stays the same from one answer to the next, so it can be
 * pasted into a bug. Nothing here is HTTP: co_http routes, signs in and
 * sends.
 */
#ifndef CO_DASH_H
#define CO_DASH_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "co_api.h"

/* Seconds between two reloads of the overview and regressions pages. */
#define CO_DASH_REFRESH_S 30
/* Runs of each series drawn on a benchmark's page. */
#define CO_DASH_RUNS 200

/* Run command with args (borrowed): 200 and *body (caller owns), or an
 * HTTP status with msg. */
typedef int (*co_dash_ask_t)(void *ctx, const char *command,
                             const json_t *args, json_t **body, char *msg,
                             size_t msglen);

typedef struct {
    int status;          /* 200, or the error's (404, 503, ...) */
    const char *type;    /* the Content-Type */
    char *body;          /* malloc'd, len bytes */
    size_t len;
} co_dash_page_t;

/* True for the dashboard's paths (GET). */
bool co_dash_handles(const char *path);

/* Render the page of path with its params (n) into *out; csrf not NULL:
 * a triage session's, whose pages acknowledge and reopen (forms posting
 * it; without it an acknowledge page is a 403). max is the
 * largest page (a larger one is a 500). Caller frees out->body. */
void co_dash_render(const char *path, const co_api_param_t *params,
                    size_t n, const char *csrf, co_dash_ask_t ask,
                    void *ctx, size_t max, co_dash_page_t *out);

/* A short HTML page saying message, for status, into *out. */
void co_dash_error(int status, const char *message, co_dash_page_t *out);

#endif
