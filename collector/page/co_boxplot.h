/* co_boxplot.h -- a run's box plot, drawn as one inline SVG: its arms'
 * five numbers on a time axis and its verdicts on a log ratio axis with
 * their tolerance bands. Drawn by `parity report --html` (cl_report) and
 * the site's benchmark pages (cl_site). Nothing is kept; names are
 * borrowed for the call.
 */
#ifndef CO_BOXPLOT_H
#define CO_BOXPLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One arm of a run's box plot: its five numbers in microseconds, from
 * the run's summary (docs/protocol.md 10.13). name is borrowed. */
typedef struct {
    const char *name;
    bool subject;
    bool has_summary;     /* false: no measured sample, drawn as "none" */
    long n;
    double min_us, q25_us, median_us, q75_us, max_us;
} co_boxplot_arm_t;

/* One verdict of the run, drawn on a log ratio axis with its tolerance
 * band [1/(1+t), 1+t] (docs/verdict.md). other is borrowed; outcome is
 * "win", "parity", "loss" or NULL (no verdict: nothing is drawn). */
typedef struct {
    const char *other;
    double ratio;
    double tolerance;
    const char *outcome;
} co_boxplot_ratio_t;

/* Most arms and ratios one box plot draws; more are left out and the
 * plot's caption says so. */
#define CO_BOXPLOT_ARMS 16

/* Write one inline <svg class="boxplot"> (no namespace URL, no script):
 * a box per arm (min, q25, median, q75, max on one time axis) and a row
 * per ratio with its tolerance band, each with hover text. Colours
 * follow the outcome (win green, parity grey, loss red) and are set as
 * attributes, so the plot needs no style sheet. caption is escaped.
 * Returns 0, or -1 when writing failed. Used by --html and cl_site. */
int co_boxplot_write(FILE *f, const char *caption,
                     const co_boxplot_arm_t *arms, size_t narms,
                     const co_boxplot_ratio_t *ratios, size_t nratios);

#endif
