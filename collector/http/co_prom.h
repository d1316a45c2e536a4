/* co_prom.h -- /metrics: the collector's figures in the Prometheus text
 * exposition format, version 0.0.4 (docs/http.md "Metrics").
 *
 * Names follow Prometheus's conventions: `parity_` first, base units
 * (`_seconds`, `_bytes`), `_total` on counters. Counters only grow from
 * the collector's start. Pure: it formats what it is given.
 */
#ifndef CO_PROM_H
#define CO_PROM_H

#include <stdint.h>

#include "co_stats.h"
#include "pw_buf.h"

/* HTTP statuses counted (100..599), indexed by the status. */
#define CO_PROM_STATUS_MAX 600

/* The HTTP side's own figures. */
typedef struct {
    uint64_t requests[CO_PROM_STATUS_MAX];  /* answered, by status */
    uint64_t connections;        /* accepted */
    int64_t open;                /* connections open now */
} co_prom_http_t;

/* Append the exposition of s and h to b (its limit checked on every
 * append): PW_BUF_OK or b's failure. version is the collector's. */
int co_prom_render(pw_buf_t *b, const co_stats_snap_t *s,
                   const co_prom_http_t *h, const char *version);

/* The Content-Type of the answer. */
#define CO_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
