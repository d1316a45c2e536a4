/* vd_counter.h -- a second comparison on a hardware counter
 * (instructions), shown beside the wall-time verdict and never changing
 * it (docs/verdict.md "Counters beside wall time").
 *
 * The rule is the spec's (vd_compare) on the counts instead of the wall
 * times, with the same parity and a floor of 0: a counter has no
 * process-start noise to absorb. "Decisive" is vd_adaptive's: both ratios
 * leave their tolerances on one side, or both sit inside, by three
 * standard errors. Counts are deterministic enough that a small change
 * can be decisive even inside parity: the diagnostic says so, as
 * CodSpeed's instruction counts do, while the verdict stays wall time's.
 *
 * Pure computation, no I/O, no state.
 */
#ifndef VD_COUNTER_H
#define VD_COUNTER_H

#include <stdbool.h>
#include <stddef.h>

#include "vd_verdict.h"

/* Enough for any text vd_counter_text writes. */
#define VD_COUNTER_TEXT_MAX 160

/* Compare the subject's counts a[0..na) with the other arm's b[0..nb)
 * under parity (the wall-time verdict's; <= 0 for the default) and floor
 * 0. Counts must be > 0 (a run that counted nothing is not a count).
 * VD_ERR with err as vd_compare says. */
int vd_counter_compare(const double *a, size_t na, const double *b,
                       size_t nb, double parity, vd_verdict_t *out,
                       char *err, size_t errlen);

/* The diagnostic line, e.g.
 *   "wall time parity; instructions +3.1 % (parity, decisive)"
 * counter names the counter, wall is the wall-time outcome and cv the
 * counter's verdict: its median change in percent, its outcome and
 * whether it is decisive. Returns what snprintf returns. */
int vd_counter_text(char *buf, size_t len, const char *counter,
                    vd_outcome_t wall, const vd_verdict_t *cv);

#endif
