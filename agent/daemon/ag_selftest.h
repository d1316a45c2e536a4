/* ag_selftest.h -- the built-in A/A suite `parity-selftest` (docs/
 * verdict.md "The A/A self-test", docs/agent.md).
 *
 * Every daemon knows this suite without a file and lists it in its
 * Hello, so `parity selftest` reaches every host. It is made in memory
 * from the job's variables: `trials` benchmarks aa-001 .. aa-K (K 1 ..
 * PW_SELFTEST_TRIALS_MAX, default 50), each with two arms `a` and
 * `a-again` that run the same command, `/bin/sh -c` of a counting loop
 * of `loops` iterations (default 5000, about 5 to 20 ms of shell
 * arithmetic): real work in a child process, started by the same spawn
 * path as any benchmark, so the A/A measures what a real comparison
 * meets (fork, exec, the scheduler), not a no-op. Any verdict other than
 * parity among them is a false verdict.
 *
 * Ownership: ag_selftest_suite() returns a suite the caller owns (free
 * with ag_suite_destroy). Nothing here prints or exits.
 */
#ifndef AG_SELFTEST_H
#define AG_SELFTEST_H

#include <stdbool.h>
#include <stddef.h>

#include "ag_suite.h"

/* Whether name is the reserved name of the built-in suite. */
bool ag_selftest_is(const char *name);

/* The suite for a job with these variables (borrowed). AG_SUITE_OK, or
 * AG_SUITE_ERR with err saying which variable is wrong: an unknown one,
 * or `trials` / `loops` that is not a whole number in its range. */
int ag_selftest_suite(const ag_var_t *vars, size_t var_count,
                      ag_suite_t **out, char *err, size_t errlen);

#endif
