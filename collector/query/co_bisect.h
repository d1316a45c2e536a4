/* co_bisect.h -- the bisect requests (docs/protocol.md 10.17 is the
 * reference of their arguments and bodies; docs/bisect.md the user's
 * view):
 *
 *   bisect_start    store a bisect of one benchmark over a commit list
 *                   (good end first, bad end last) on some hosts: by
 *                   default the hosts of the change-point event between
 *                   the two ends, else every host that lists the suite
 *   bisect_status   one bisect's state, steps and result, or the newest
 *   bisect_cancel   stop one: its jobs still running are cancelled
 *
 * Nothing is measured here: co_bisector's thread drives what is stored
 * (migration 022). co_query checks authorisation and the argument names
 * and reconnects before calling co_bisect_handle, on a query worker;
 * nothing here prints.
 */
#ifndef CO_BISECT_H
#define CO_BISECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "co_jobs.h"
#include "co_reply.h"
#include "vd_bisect.h"

/* Runs per arm of a first look at a commit when the request names none;
 * each retry of an undecided commit doubles them (co_bisector.h). */
#define CO_BISECT_RUNS_DEFAULT 10
/* Most runs a request may ask for a first look (retries double it up to
 * three times, within PW_RUNS_MAX). */
#define CO_BISECT_RUNS_MAX 10000
/* Longest commit id (a SHA-256 object name is 64 hex digits). */
#define CO_BISECT_COMMIT_MAX 128
/* Bisects bisect_status lists without an id. */
#define CO_BISECT_LIST 20

/* True for "bisect_start", "bisect_status", "bisect_cancel". */
bool co_bisect_handles(const char *command);

/* Answer command (args borrowed) on jobs' connection as admin key
 * requested_by; parity is the flat tolerance a new bisect judges with
 * (the collector's --parity). The reply body (caller owns) with *status
 * CO_REPLY_OK, or NULL with *status and a one-line err. */
json_t *co_bisect_handle(co_jobs_t *jobs, const char *requested_by,
                         const char *command, const json_t *args,
                         double parity, int *status, char *err,
                         size_t errlen);

/* Bisect id's row and steps as JSON ({"id", "suite", "benchmark",
 * "commits", "hosts", "vars", "runs", "parity", "state", "reason",
 * "result", "event", "requested_by", "created_at_us", "started_at_us",
 * "ended_at_us", "steps": [{"seq", "point", "commit", "mid",
 * "mid_commit", "try",
 * "rerun", "runs", "job", "job_state", "call", "reason", "hosts"}]});
 * caller owns
 * it. NULL when there is none, or with c's status. co_bisector reads
 * its bisects with it. */
json_t *co_bisect_load(co_reply_t *c, int64_t id);

/* Run st, which changes bisect id: $1 is id, $2 the time now (µs since
 * the epoch, what its *_at_us columns hold). The rows it returns (caller
 * PQclears), or NULL with c's status. */
PGresult *co_bisect_q_now(co_reply_t *c, const co_stmt_t *st, int64_t id);

/* The search of bisect b (co_bisect_load's) replayed from its judged
 * midpoints (their calls, in order); caller owns it. NULL with err when
 * the steps do not replay (or out of memory). */
vd_bisect_t *co_bisect_replay(const json_t *b, char *err, size_t errlen);

#endif
