/* co_confirmer.h -- the thread that measures confirms (docs/regressions.md
 * "Confirm").
 *
 * Every CO_CONFIRMER_POLL_MS the thread, on its own database connection
 * (co_jobs), takes the lease of every live confirm no other collector
 * holds (confirms.lease_owner, as bisects do), and moves each on:
 *
 * - a queued confirm gets its job (co_jobs_create): the suite, only the
 *   event's benchmark, on the event's hosts, its variables with the
 *   revision variable at the revision after the step, and --against the
 *   revision before it, tagged confirm=ID. The subject runs at both in
 *   the same rounds, so the machine's drift between jobs is no part of
 *   the answer. A job that cannot be made fails the confirm with the
 *   reason (e.g. a host no longer lists the suite);
 * - once that job has ended, each host's stored verdict of the subject
 *   against its instance at the revision before (the rule, the host's
 *   floor, the collector's --parity) is read: the host sees the step
 *   again when the verdict's outcome is the event's direction (loss for
 *   slower, win for faster), not when it is parity or the other way; a
 *   host without a complete run is not measured. The confirm is
 *   confirmed when more than half of the measured hosts see the step,
 *   not reproduced otherwise, and failed when no host was measured;
 * - the end is written once; the collector that writes it sends the
 *   notice: the event's own, with the answer, for a confirm --confirm
 *   started (co_notify_event_body), else one of its own (kind
 *   "confirm").
 *
 * Nothing is kept in memory between passes. The network loop and the
 * writer never wait for it. Nothing here prints; events go to co_log.
 */
#ifndef CO_CONFIRMER_H
#define CO_CONFIRMER_H

#include <stddef.h>

#include "co_notify.h"

/* How often the live confirms are looked at. */
#define CO_CONFIRMER_POLL_MS 1000
/* A confirm's job waits this long for an offline or busy host. */
#define CO_CONFIRMER_JOB_EXPIRE_US (6LL * 3600 * 1000000)

typedef struct co_confirmer co_confirmer_t;

/* The thread on conninfo (copied) as collector owner (copied; NULL or
 * "": host name and pid), posting notices to notify (borrowed, may be
 * NULL; must outlive the result). Caller owns the result; NULL with
 * err. */
co_confirmer_t *co_confirmer_new(const char *conninfo, const char *owner,
                                 co_notify_t *notify, char *err,
                                 size_t errlen);

/* Stop the thread (it finishes its pass), close, free; NULL is fine. */
void co_confirmer_destroy(co_confirmer_t **k);

#endif
