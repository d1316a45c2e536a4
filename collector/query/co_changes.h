/* co_changes.h -- the collector's answers about change points
 * (docs/protocol.md 10.12, 10.14-10.16 are the reference of arguments and
 * bodies):
 *
 *   series   per (suite, benchmark, host, variables, subject, other):
 *            the newest runs (each arm's summary, the run's verdict),
 *            the change points found in them, and what changed on the
 *            host between consecutive runs (environment, arms, agent)
 *   ack      mark a change point as known, with a note
 *   unack    undo that
 *
 * and the change-point half of `regressions` (co_changes_list), which
 * co_history adds to its answer. Change points are found by co_detect as
 * runs are stored; nothing here computes them. Every answer is bounded;
 * every query is parameterised (the bounds are at the top of
 * co_changes.c, and in the protocol); nothing here prints.
 */
#ifndef CO_CHANGES_H
#define CO_CHANGES_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "co_reply.h"

/* True for "series", "ack" and "unack" (co_query checks their
 * argument names). */
bool co_changes_handles(const char *command);

/* Answer command (args borrowed) on c's connection: the reply body
 * (caller owns), or NULL with c's status and error line (or out of
 * memory, which co_reply_end says). */
json_t *co_changes_handle(co_reply_t *c, const char *command,
                          const json_t *args);

/* The change points of runs whose tags contain tags_json, on host (""
 * for all), whose first run after the change started at or after
 * since_us: {"open": [...], "acked": [...], "truncated": bool}, open
 * ones regressions first and worst first. NULL with c's status set. */
json_t *co_changes_list(co_reply_t *c, const char *tags_json,
                        const char *host, int64_t since_us);

#endif
