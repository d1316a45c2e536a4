/* co_history.h -- the collector's answers about verdicts over time.
 *
 * Three Request commands (docs/protocol.md 10.11-10.13 are the reference
 * of their arguments and bodies):
 *
 *   history      one benchmark's stored verdicts, one row per job (or
 *                per run without a job), oldest first, per arm pair,
 *                each row with every host's own verdict and the
 *                vd_fleet summary of that row
 *   regressions  per benchmark, arm pair and host: the newest verdict
 *                against the one before it (same suite, the runs' tags
 *                containing the asked tags), the pairs whose outcome got
 *                worse or better
 *   report       what `parity report` adds to `verdicts`: the job, each
 *                host's environment and floor, and every run's arm
 *                summaries (vd_summarize of its measured samples: the
 *                run_summaries row written at RunEnd, from the samples
 *                themselves only for a run that has none yet)
 *
 * Hosts never pool samples: every verdict here is one host's as stored.
 * Every answer is bounded (limits below, documented in the protocol);
 * every query is parameterised. co_query checks authorisation and the
 * args object before calling co_history_handle; nothing here prints.
 */
#ifndef CO_HISTORY_H
#define CO_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "co_jobs.h"

/* history: rows (jobs) per arm pair, default and most. */
#define CO_HISTORY_LIMIT_DEFAULT 50
#define CO_HISTORY_LIMIT_MAX     1000
/* history: most verdicts one answer reads; beyond, "truncated" is true. */
#define CO_HISTORY_ROWS_MAX      100000
/* regressions: most newest-jobs window (--jobs) and lookback (--since,
 * 366 days); most compared pairs read (then "truncated"). */
#define CO_HISTORY_JOBS_MAX      1000
#define CO_HISTORY_SINCE_MAX_US  (366LL * 86400 * 1000000)
#define CO_HISTORY_PAIRS_MAX     100000
/* report: most measured samples summarised in one answer (32 MiB of
 * doubles), counting only runs without stored summaries; a larger job
 * is CO_REPLY_TOO_BIG. */
#define CO_HISTORY_SAMPLES_MAX   4000000
/* report: most (run, arm) rows; a larger job is CO_REPLY_TOO_BIG too
 * (its answer would not fit in one frame anyway). */
#define CO_HISTORY_ARMS_MAX      200000
/* Most tags and hosts one request may filter by. */
#define CO_HISTORY_FILTERS_MAX   256

/* True for "history", "regressions" and "report". */
bool co_history_handles(const char *command);

/* Answer command with args (borrowed, a JSON object) using the database
 * connection of jobs (borrowed). Returns the reply body (caller owns it)
 * with *status CO_REPLY_OK, or NULL with *status one of co_reply.h's
 * CO_REPLY_* codes and a one-line reason in err. */
json_t *co_history_handle(co_jobs_t *jobs, const char *command,
                          const json_t *args, int *status, char *err,
                          size_t errlen);

#endif
