/* vd_adaptive.h -- when `runs: auto` stops adding rounds.
 *
 * The verdict of a given set of samples is the spec's rule (vd_verdict.h)
 * and nothing here changes it. This module only decides, after a number
 * of rounds, whether to look again later: rounds are added in steps
 * (looks at 10, 20, 30, 45, 67, 100, ... runs) until every verdict is
 * decisive or the cap is reached.
 *
 * Decisive: both ratios leave their tolerances on the same side, or both
 * sit inside, each by at least a margin in log space that shrinks as
 * runs grow (as Pinpoint's threshold does):
 *
 *   r_X    = max(iqr(X)/med(X), VD_ADAPTIVE_FLOOR_IQR * floor/med(X))
 *   margin = VD_ADAPTIVE_Z * sqrt(0.8630 * (r_A^2 + r_B^2) / n)
 *
 * sqrt(0.8630 (r_A^2 + r_B^2) / n) is the normal-theory standard error of
 * log(med(A)/med(B)) with spreads given as IQRs (the same estimate as
 * extra_runs, docs/verdict.md). Stopping at the first look where a ratio
 * merely crossed its edge would be repeated testing (benchstat's
 * warning): each look is a new chance for noise to cross. With a margin
 * of 3 standard errors, a look stops on a win or loss only when noise
 * alone would cross by that much at most about 0.1 % of the time, and
 * the verdict written is still the rule's on every sample taken. At the
 * cap the rule decides with no margin, as it does for fixed runs.
 *
 * Pure computation, no I/O, no state: safe from any thread.
 */
#ifndef VD_ADAPTIVE_H
#define VD_ADAPTIVE_H

#include <stdbool.h>

#include "vd_verdict.h"

/* The first look: auto never decides on fewer runs than the fixed
 * default of 10 (unless the cap is lower). */
#define VD_ADAPTIVE_FIRST      10
/* Each step adds max(VD_ADAPTIVE_STEP_MIN, runs / 2) rounds: few looks
 * (6 up to 100), so few chances for noise to cross. */
#define VD_ADAPTIVE_STEP_MIN   10
/* Standard errors a ratio must clear an edge by, either way. */
#define VD_ADAPTIVE_Z          3.0
/* The floor as an IQR: q90 - q10 of a normal spread is 2.563 sigma and
 * its IQR 1.349 sigma, so a floor of F is an IQR of 0.526 F. A quiet
 * arm's own IQR can be below its run-to-run jitter by chance. */
#define VD_ADAPTIVE_FLOOR_IQR  0.526

typedef enum {
    VD_STOP_MORE = 0,   /* not decisive and under the cap: add a step */
    VD_STOP_DECISIVE,   /* every verdict is decisive */
    VD_STOP_CAP,        /* the cap is reached, not decisive */
    VD_STOP_COUNT       /* sentinel */
} vd_stop_t;

/* The look after taken runs (0: the first look), at most max_runs:
 * VD_ADAPTIVE_FIRST, then taken + max(VD_ADAPTIVE_STEP_MIN, taken / 2).
 * max_runs below the first look makes it the only look. Returns
 * max_runs once taken >= max_runs. */
unsigned vd_adaptive_next(unsigned taken, unsigned max_runs);

/* The margin (log space) for verdict v, from its summaries' spreads, its
 * floor and n = the smaller arm's count. */
double vd_adaptive_margin(const vd_verdict_t *v);

/* True when v is decisive: both ratios leave their tolerances by the
 * margin on the same side, or both sit inside by it. */
bool vd_adaptive_decisive(const vd_verdict_t *v);

/* "more", "decisive", "cap"; "?" out of range. */
const char *vd_stop_name(vd_stop_t s);

#endif
