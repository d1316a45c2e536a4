/* co_baseline.h -- the `baseline` request: a job's runs judged against a
 * baseline's, host by host (docs/protocol.md 10.16 is the reference of
 * its arguments and body; `parity run --baseline` asks it).
 *
 * For every benchmark the job ran on a host (its newest run there), the
 * baseline is the newest complete run of the same suite and benchmark on
 * the same host whose job has ended and carries every asked tag (not the
 * job itself). The subject arm's measured wall times are judged against
 * the baseline run's arm of the same name by the spec's rule, with the
 * floor the job's run was given at its end: each host on its own, as
 * `verdicts` does, and hosts never pool samples. The arms are not
 * interleaved across two jobs, which is why a gate's verdicts are its
 * own request and never stored.
 *
 * co_query checks authorisation and the argument names and reconnects
 * before calling co_baseline_handle, on a query worker; nothing here
 * prints.
 */
#ifndef CO_BASELINE_H
#define CO_BASELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "co_conn.h"

/* Most (benchmark, host) entries one answer judges; a larger job is
 * CO_REPLY_TOO_BIG (its answer would not fit in one frame anyway). */
#define CO_BASELINE_ENTRIES_MAX 20000
/* Most measured samples read for one entry (both runs together). */
#define CO_BASELINE_SAMPLES_MAX 400000

/* True for "baseline". */
bool co_baseline_handles(const char *command);

/* Answer command with args (borrowed, a JSON object) using the database
 * connection conn (borrowed), judging with the flat tolerance parity.
 * Returns the reply body (caller owns it) with *status CO_REPLY_OK, or
 * NULL with *status one of co_reply.h's CO_REPLY_* codes and a one-line
 * reason in err. */
json_t *co_baseline_handle(co_conn_t *conn, const char *command,
                           const json_t *args, double parity, int *status,
                           char *err, size_t errlen);

#endif
