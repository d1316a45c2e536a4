/* co_events.h -- one fleet event per step (docs/regressions.md, "What a
 * change point is"): the change points of one series key but the host
 * (suite, benchmark, subject and other arm, variables), on the same side
 * (the subject's: ratio or subject; the environment's: other), in the
 * same direction, whose first run after the step has the same commit
 * tag, or is of the same job (one without either is an event alone).
 * The same rule as the collector's hosts_with_step and ack (co_changes),
 * so the host count is the same in every view.
 *
 * An event's id is its smallest member's: acking it acks every member.
 * Pure JSON work on a `regressions` answer's change points; nothing
 * here touches the database, prints or exits.
 */
#ifndef CO_EVENTS_H
#define CO_EVENTS_H

#include <jansson.h>

/* The events of the change points in open and acked (borrowed; each a
 * co_changes_list CP): {"open": [EVENT...], "acked": [EVENT...]}, an
 * event open while any member is, regressions first, then the largest
 * steps. EVENT = {"id", "suite", "benchmark", "subject", "other", "vars",
 * "metric", "direction": "slower" | "faster", "before", "after",
 * "hosts": [names], "hosts_with_step", "hosts_total", "magnitude" (the
 * members' median), "magnitude_min", "magnitude_max", "outcome",
 * "regression", "within_noise", "members": [ids], "confirm": the
 * members' newest confirm (co_confirm) less its "host", or null}. NULL on out of
 * memory; the caller owns the result. */
json_t *co_events_group(const json_t *open, const json_t *acked);

#endif
