/* cl_aa.h -- a host's last A/A self-test in words, shared by
 * `parity selftest`, `parity hosts`, `parity verdicts` and `parity
 * report` (A/A: the self-test compares a command with itself). Apart from
 * the verb cl_selftest.c so that a program that prints verdicts needs no
 * connection code.
 *
 * selftest is the collector's object of docs/protocol.md 10.7 ({"job",
 * "at_us", "trials", "false_verdicts", "rate", "floor_us"}, or json
 * null for a host that has none); borrowed.
 */
#ifndef CL_AA_H
#define CL_AA_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

/* "0 false verdicts in 50 A/A trials", "1 false verdict in 5 A/A trials
 * (20.0 %, above 2 %)", "no self-test yet", "its last self-test gave no
 * verdict". */
void cl_aa_text(char *buf, size_t len, const json_t *selftest);

/* When it ended, "2026-12-03 11:52Z" (UTC), or "" without a date. */
void cl_aa_when(char *buf, size_t len, const json_t *selftest);

/* True when its rate is above PW_SELFTEST_WARN_RATE (2 %). */
bool cl_aa_warns(const json_t *selftest);

#endif
