/* co_bisector.h -- the thread that drives bisects (docs/bisect.md, "How
 * a bisect runs").
 *
 * Every CO_BISECTOR_POLL_MS the thread, on its own database connection
 * (co_jobs), takes the lease of every live bisect no other collector
 * holds (bisects.lease_owner, renewed each pass, co_lease),
 * and moves each one step on:
 *
 * - a queued bisect starts once no older live bisect of its suite shares
 *   one of its hosts (two bisects never interleave on one machine);
 * - the two ends are measured first, in one job (co_jobs_create: the
 *   suite, only the benchmark, vars + commit=BAD, --against commit=GOOD,
 *   tag bisect=ID); the bisect goes on when one host at least sees a
 *   decisive step between them, runs that job again with twice the runs
 *   when no host is decisive (up to VD_BISECT_TRIES_MAX tries), and
 *   fails when every host sees parity;
 * - then the search (vd_bisect) is replayed from the calls stored in
 *   bisect_steps, and its next midpoint is measured beside its
 *   interval's ends in one job (commit=MID, --against LOW and HIGH), or
 *   judged once that job has ended: on each host by the rule against the
 *   interval's ends, from that job's samples alone, with the floor of
 *   the host's newest run; an undecided midpoint's job runs again with
 *   twice the runs, judged on its own: the machine's drift between jobs
 *   minutes apart is never read as a step;
 * - a host whose run of a step did not complete (its agent died: the
 *   job's row is lost) gets the step once more on that host alone; when
 *   that also fails the bisect fails, naming the host, the commit and
 *   what its job said;
 * - the end (done with the first bad commit of each step, or failed with
 *   the reason) is written once; the collector that writes it posts a
 *   notice (co_notify_post) when webhooks are configured.
 *
 * Nothing is kept in memory between passes, so a restart, or another
 * collector taking the lease, carries on from the database. The network
 * loop and the writer never wait for it. Nothing here prints; events go
 * to co_log.
 */
#ifndef CO_BISECTOR_H
#define CO_BISECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "co_notify.h"

/* How often the live bisects are looked at. */
#define CO_BISECTOR_POLL_MS 1000
/* A step's job waits this long for an offline or busy host; then the
 * host's row expires (a rerun, then a failure). */
#define CO_BISECTOR_JOB_EXPIRE_US (6LL * 3600 * 1000000)
/* Reruns of one step on the hosts whose run did not complete. */
#define CO_BISECTOR_RERUNS 1

typedef struct co_bisector co_bisector_t;

/* The thread on conninfo (copied) as collector owner (copied; NULL or
 * "": a name made of the host name and pid), posting end notices to
 * notify (borrowed, may be NULL; must outlive the result). Caller owns
 * the result; NULL with err. */
co_bisector_t *co_bisector_new(const char *conninfo, const char *owner,
                               co_notify_t *notify, char *err,
                               size_t errlen);

/* Stop the thread (it finishes its pass), close, free; NULL is fine. */
void co_bisector_destroy(co_bisector_t **b);

#endif
