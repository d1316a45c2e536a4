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
 * Every answer is bounded (limits at the top of co_history.c, documented
 * in the protocol); every query is parameterised. co_query checks authorisation and the
 * args object before calling co_history_handle; nothing here prints.
 */
#ifndef CO_HISTORY_H
#define CO_HISTORY_H

#include <stdbool.h>
#include <jansson.h>

#include "co_reply.h"

/* True for "history", "regressions" and "report". */
bool co_history_handles(const char *command);

/* Answer command with args (borrowed, a JSON object) on the connection
 * of c: the reply body (caller owns it), or NULL with c's status (one of
 * co_reply.h's CO_REPLY_* codes) and a one-line reason in its error line
 * (or out of memory, which co_reply_end says). */
json_t *co_history_handle(co_reply_t *c, const char *command,
                          const json_t *args);

#endif
