/* vd_change.h -- change points in a series of runs: E-Divisive means
 * (Matteson and James 2014, as Apache Otava runs it) with a significance
 * test, then Parity's own filters: a magnitude that must clear the
 * host's noise and floor, and the verdict rule (vd_compare) of the runs
 * after a change against the runs before it.
 *
 * A series is one (suite, benchmark, subject arm, other arm, host,
 * variables): one point per run, oldest first, each point that run's
 * summary of one arm (or of the ratio subject/other). docs/regressions.md
 * documents every parameter and the measured detection quality.
 *
 * Pure computation: no I/O, no globals, deterministic for the same input
 * and parameters (a permutation test, if any, seeds its own generator
 * from params.seed). Never prints or exits.
 */
#ifndef VD_CHANGE_H
#define VD_CHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vd_verdict.h"

/* One run's point: its summary (vd_summarize of the arm's measured
 * samples; for a ratio series, the ratio of the two arms' medians in
 * median, and min/q25/q75/max as NaN when unknown). vd_change_find reads
 * median and min only. For a ratio series, put the ratio of the arms'
 * minimums (the verdict's best-run ratio) in min: timing modes are then
 * filtered as on an arm's series. With NaN only the quartile filter
 * guards against them, which does not stop sticky spells of one mode
 * (docs/regressions.md: 440 reports against 1). */
typedef struct {
    double median;
    double min, q25, q75, max;
    size_t n;            /* samples behind it (0: unknown) */
} vd_point_t;

typedef struct {
    /* Significance: a split is kept when its p-value is at most this. */
    double max_p_value;
    /* Points looked at, newest last: the detection window. */
    size_t window;
    /* Smallest relative step |after/before - 1| reported at all. */
    double min_relative;
    /* The host's floor (us): a step smaller than this absolute amount is
     * never reported (0: none). For ratio series, 0. */
    double floor_us;
    /* The rule's parameters (parity, ...) for the verdict of after vs
     * before; floor_us above is copied into them. */
    vd_params_t rule;
    /* Permutations of a permutation test, if the implementation uses
     * one (0: its default), and the seed of its generator. */
    unsigned permutations;
    uint64_t seed;
    /* Smallest segment on each side of a change, in points (>= 1): also
     * the fewest runs after a change before it can be reported. */
    size_t min_segment;
    /* Parity's additions to Otava (vd_change_params_default: true):
     * the medians after a change must clear the quartiles of the medians
     * before it (and the other way round); when every point of both
     * sides has a known min, the runs' minimums must step the same way
     * and by at least half as much (the verdict rule's best-run ratio),
     * which is what keeps timing modes, whose medians jump between two
     * clusters while the minimums stay put, from being reported; a bump
     * (a change undone a few runs later) is tested on its own; and a
     * change's p-value is also taken on equal sides next to it, so a
     * step too recent to report cannot erase the ones before it. False:
     * Otava's plain split, t-test and merge. */
    bool robust;
} vd_change_params_t;

/* Upper bound on params.window: the work space is window^2 doubles
 * (8 MiB at 1,000). */
#define VD_CHANGE_MAX_WINDOW 1000

/* Parity's defaults (documented in docs/regressions.md). The significance
 * test is Student's t-test, so permutations and seed are unused (0). */
void vd_change_params_default(vd_change_params_t *p);
/* Apache Otava's defaults (window 50, p 0.001, no magnitude filter),
 * for the comparison in tests/bench. */
void vd_change_params_otava(vd_change_params_t *p);

typedef struct {
    size_t index;        /* the first point after the change */
    double before;       /* median of the segment's medians before it */
    double after;        /* ... and after it */
    double magnitude;    /* after / before */
    double p_value;
    /* vd_compare of the points after (their medians as samples) against
     * the points before, with params.rule: VD_WIN/VD_LOSS/VD_PARITY as
     * the rule says. A change whose outcome is parity is still returned,
     * with within_noise true: kept, but marked. */
    vd_outcome_t outcome;
    bool within_noise;
} vd_change_t;

/* The change points of x[0..n) (only its last params->window points are
 * looked at; indexes are still into x). params NULL: the defaults.
 * Writes at most max_out to out, oldest first, and their count to
 * *n_out; with more than max_out changes the newest max_out are written.
 * Fewer than 2 * min_segment points: no change, VD_OK. Reads median
 * (required: finite and > 0) and min (used when finite and > 0 on every
 * point of both sides of a change; NaN for unknown) of each point; q25,
 * q75, max and n are not read. Neither x nor params is kept. Returns
 * VD_OK, or VD_ERR with *n_out = 0 and err set (bad parameters, a median
 * that is not finite and > 0, out of memory). Cost: O(window^2) per
 * level of splitting; ~0.2 ms at window 200 (docs/regressions.md). */
int vd_change_find(const vd_point_t *x, size_t n,
                   const vd_change_params_t *params, vd_change_t *out,
                   size_t max_out, size_t *n_out, char *err, size_t errlen);

/* Two-sided p-value of Student's t statistic t with df degrees of
 * freedom: 2 P(T > |t|). 0 for an infinite t, NaN for a NaN t or df <= 0.
 * vd_otava's test uses it too. */
double vd_change_student_p(double t, double df);

/* Two segments x[a..c) and x[c..b) (a < c < b): their means and the sums
 * of squared deviations from them, what both t-tests (vd_change's and
 * vd_otava's) start from. */
typedef struct {
    double mean1, mean2;
    double ss1, ss2;
} vd_change_split_t;
void vd_change_split(const double *x, size_t a, size_t c, size_t b,
                     vd_change_split_t *out);

/* E-Divisive's sums of distances over x[s..e), for both detectors: row
 * j - s of pre (stride entries a row), entry t - s + 1, gets the sum of
 * |x[i] - x[j]| over i in [s, t), for t up to j; entry 0 is 0. */
void vd_change_prefix(const double *x, size_t s, size_t e, double *pre,
                      size_t stride);

#endif
