/* vd_otava.h -- Apache Otava's change-point method as Otava runs it, for
 * `parity changes --otava`: its answers on its own published series, so
 * that a user moving from Otava can compare like with like, and the
 * quality benchmark can show what Parity's filters (vd_change.h) buy.
 *
 * otava.analysis.compute_change_points(series, window_len, max_pvalue,
 * min_magnitude), step by step:
 *  - split: E-Divisive means (q-hat of absolute differences, power 1) on
 *    sliding windows series[start : start + window_len], start advancing
 *    by window_len / 2 or to the newest point found; within a window,
 *    the best split over all intervals is kept while Student's t-test
 *    between its sides (numpy's population deviations, pooled variance)
 *    has p <= a looser first-pass level (10x max_pvalue below 0.05, 2x
 *    below 0.5, else max_pvalue); the union of every window's points;
 *  - merge: while a point has p > max_pvalue drop the weakest (highest
 *    p), else drop the smallest relative change of the means while it is
 *    <= min_magnitude; after each drop the two points that follow it are
 *    judged again against their new neighbours (Otava does not judge the
 *    one before it again; neither does this).
 * Indexes are Otava's: a point's index is the first point of the new
 * regime. docs/regressions.md ("parity changes") compares the two.
 *
 * Pure computation: no I/O, no globals, deterministic. Never prints or
 * exits.
 */
#ifndef VD_OTAVA_H
#define VD_OTAVA_H

#include <stddef.h>

/* Most points in a sliding window (its work space is window^2 doubles). */
#define VD_OTAVA_MAX_WINDOW 1000
#define VD_OTAVA_DEFAULT_WINDOW 50
#define VD_OTAVA_DEFAULT_MAX_P 0.001

typedef struct {
    size_t index;        /* the first point after the change */
    double mean_before;  /* mean of the points since the previous change */
    double mean_after;   /* ... and up to the next */
    double std_before, std_after;   /* population deviations (ddof 0) */
    double p_value;      /* t-test of the two sides; NaN as Otava's */
} vd_otava_cp_t;

/* The change points of x[0..n), oldest first: at most max_out to out
 * (the oldest ones when there are more), their count in *n_out (all of
 * them, even beyond max_out). window_len 2..VD_OTAVA_MAX_WINDOW, max_p in
 * (0, 1], min_magnitude >= 0, every x finite. Returns 0, or -1 with err
 * set and *n_out 0 (bad arguments, out of memory). */
int vd_otava_find(const double *x, size_t n, size_t window_len, double max_p,
                  double min_magnitude, vd_otava_cp_t *out, size_t max_out,
                  size_t *n_out, char *err, size_t errlen);

#endif
