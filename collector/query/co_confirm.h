/* co_confirm.h -- the confirm requests (docs/protocol.md "confirm" is
 * the reference of their arguments and bodies; docs/regressions.md
 * "Confirm" the user's view):
 *
 *   confirm          store a confirm of a change-point event: the
 *                    revision before its step and the one after it,
 *                    measured again in one job on the event's hosts
 *   confirm_status   one confirm's state and result
 *
 * Nothing is measured here: co_confirmer's thread makes the job and
 * judges it (migration 024). co_query checks authorisation and the
 * argument names and reconnects before calling co_confirm_handle, on a
 * query worker; co_notify calls co_confirm_event for a new event under
 * --confirm. Nothing here prints.
 */
#ifndef CO_CONFIRM_H
#define CO_CONFIRM_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "co_reply.h"

/* Most runs a request may ask for (the suite's own when it names none). */
#define CO_CONFIRM_RUNS_MAX 10000

/* True for "confirm" and "confirm_status". */
bool co_confirm_handles(const char *command);

/* Answer command (args borrowed) on c's connection as admin key
 * requested_by: the reply body (caller owns), or NULL with c's status. */
json_t *co_confirm_handle(co_reply_t *c, const char *requested_by,
                          const char *command, const json_t *args);

/* Store a confirm of event (a co_events event, borrowed) with runs per
 * arm (0: the suite's). notify: started for the event's webhook notice
 * (--confirm), which waits for it; at most one such confirm an event,
 * so when another collector stored it first the answer is JSON null.
 * Else the confirm as co_confirm_load says, with "existing": true when
 * one of the event was live already (that one). NULL with c's status
 * (CO_REPLY_BADARGS: the event cannot be confirmed, and why). */
json_t *co_confirm_event(co_reply_t *c, const json_t *event,
                         const char *requested_by, bool notify,
                         json_int_t runs);

/* Confirm id as JSON: {"id", "event", "members", "suite", "benchmark",
 * "direction", "revision", "before", "after", "vars", "hosts", "runs",
 * "job", "job_state", "notify", "state", "reason", "result",
 * "requested_by", "created_at_us", "started_at_us", "ended_at_us"}, and
 * "event_json" when with_event. Caller owns it; NULL when there is none
 * (c's status untouched), or with c's status. */
json_t *co_confirm_load(co_reply_t *c, int64_t id, bool with_event);

#endif
