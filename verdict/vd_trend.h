/* vd_trend.h -- a drift told from a step (docs/regressions.md, "What a
 * change point is"): a series whose level moves a little at almost every
 * run comes out of vd_change_find as a staircase of small changes, one
 * every few runs, all one way. A user wants one report: where it
 * started, its rate per run, and the total so far. vd_trend_find folds
 * such a staircase into one trend; the collector (co_detect) and
 * `parity changes` both use it, so they say the same.
 *
 * A staircase: at least VD_TREND_MIN_STEPS consecutive changes in one
 * direction, each at most VD_TREND_MAX_STEP (relative), with at most
 * VD_TREND_MAX_GAP points from one to the next. Larger steps are steps:
 * two 10 % regressions 8 runs apart stay two.
 *
 * Pure computation: no I/O, no globals. Never prints or exits.
 */
#ifndef VD_TREND_H
#define VD_TREND_H

#include <stdbool.h>
#include <stddef.h>

#include "vd_change.h"

#define VD_TREND_MIN_STEPS 3
#define VD_TREND_MAX_STEP  0.08
#define VD_TREND_MAX_GAP   20

typedef struct {
    size_t first, last;   /* the changes it folds: ch[first..last] */
    size_t start;         /* its first change's index: where it began */
    size_t end;           /* its last change's index */
    double before;        /* the level before it (its first change's) */
    double now;           /* the level after its last change */
    double total;         /* now / before */
    double per_point;     /* rate a point: exp(slope of ln median) - 1
                             over [start, end] */
    /* The rule (rule, floor_us as given) of the points after its last
     * change against the points before its first: parity is within
     * noise. */
    vd_outcome_t outcome;
    bool within_noise;
} vd_trend_t;

/* The trends among ch[0..nch) (vd_change_find's answer on x[0..n),
 * oldest first). At most max_out to out, their count in *n_out. rule:
 * the verdict's parameters (NULL: the defaults). Returns VD_OK, or
 * VD_ERR with err (a change index outside x, out of memory). */
int vd_trend_find(const vd_point_t *x, size_t n, const vd_change_t *ch,
                  size_t nch, const vd_params_t *rule, vd_trend_t *out,
                  size_t max_out, size_t *n_out, char *err, size_t errlen);

#endif
