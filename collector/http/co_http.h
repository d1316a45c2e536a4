/* co_http.h -- the collector over HTTP: the JSON API, /metrics
 * (docs/http.md), served by libmicrohttpd from threads of its own.
 *
 * Each --http address is one libmicrohttpd daemon with a pool of
 * CO_HTTP_THREADS threads (epoll). A request is answered on the thread
 * that read it: the query runs through co_query_answer on a database
 * connection of the HTTP side's own, one per thread, so HTTP never
 * waits on the ZeroMQ loop or the writer and they never wait on it.
 * /metrics reads what the loop publishes (co_stats).
 *
 * Limits, each checked as the request arrives (docs/http.md "Limits"):
 * CO_HTTP_MAX_CONNECTIONS connections; CO_HTTP_MEMORY bytes of request
 * line and headers a connection (more: libmicrohttpd's own 414 or 431);
 * a target of CO_HTTP_TARGET_MAX bytes (414); a body of CO_API_MAX_BODY
 * (413); a connection idle CO_HTTP_IDLE_S seconds is closed, and a
 * request whose body takes longer than CO_HTTP_REQUEST_MS is refused
 * (408); a client (token name, or address without tokens) may make
 * rate requests a second with a burst of twice that (429); a list of
 * rows is paged at CO_API_PAGE_MAX (co_api.h).
 *
 * Tokens (co_tokens.h): with a tokens file every request needs one, in
 * `Authorization: Bearer`; without, every request is allowed the read
 * role, and only loopback addresses may be bound (co_http_check_bind).
 */
#ifndef CO_HTTP_H
#define CO_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "co_config.h"
#include "co_stats.h"

#define CO_HTTP_BINDS_MAX 4
#define CO_HTTP_THREADS 4
#define CO_HTTP_MAX_CONNECTIONS 1000
#define CO_HTTP_MEMORY (128u * 1024)
#define CO_HTTP_TARGET_MAX 8192
#define CO_HTTP_IDLE_S 10
#define CO_HTTP_REQUEST_MS 10000
#define CO_HTTP_RATE_DEFAULT 50
#define CO_HTTP_RATE_MAX 100000
/* Clients whose rate is kept at once (the least recent is forgotten). */
#define CO_HTTP_RATE_CLIENTS 256
/* The largest answer (a whole `series` or `show`), and /metrics's. */
#define CO_HTTP_BODY_MAX (8u << 20)

typedef struct {
    const char *const *binds;  /* "ADDR:PORT": 127.0.0.1:8080, [::1]:8080 */
    size_t nbinds;
    const char *tokens_path;   /* --http-tokens; NULL: none */
    int rate;                  /* requests a second per client; 0: no limit */
    const co_config_t *cfg;    /* conninfo, query_conninfo, floor_window,
                                  parity, query_timeout_ms, private_db */
    co_stats_t *stats;         /* borrowed: what /metrics shows */
    const char *version;
} co_http_opts_t;

typedef struct co_http co_http_t;

/* Check one --http value: 0 with *loopback set, or -1 with err ("--http
 * x: want ADDR:PORT ..."). */
int co_http_check_bind(const char *bind, bool *loopback, char *err,
                       size_t errlen);

/* Start serving (every string of o copied; o->stats borrowed and must
 * outlive the result). Caller owns it; NULL with err (a bind that
 * failed, a tokens file that does not read, a non-loopback address
 * without tokens). */
co_http_t *co_http_new(const co_http_opts_t *o, char *err, size_t errlen);

/* The i-th address as bound ("http://127.0.0.1:8080", the real port
 * after port 0), i < n of co_http_new; owned by h. */
const char *co_http_url(const co_http_t *h, size_t i);

/* Stop every daemon (requests being answered finish; their statement
 * timeout bounds that), close the connections, free; NULL is fine. */
void co_http_destroy(co_http_t **h);

#endif
