/* cl_report.h -- the document of `parity report` (docs/commands/report.md)
 * from the collector's `report` and `verdicts` answers of one job
 * (docs/protocol.md 10.13 and 10.8).
 *
 * Every text from a suite, a host or a user is escaped for the format, so
 * a benchmark named <script> is shown, never run; the HTML is one file
 * with inline CSS and no external resource. Both bodies are borrowed.
 */
#ifndef CL_REPORT_H
#define CL_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

typedef enum {
    CL_REPORT_MARKDOWN = 0,
    CL_REPORT_HTML,
} cl_report_format_t;

/* Write the report of report (the `report` body) and verdicts (the
 * `verdicts` body of the same job) to f. Returns 0, or -1 when writing
 * failed. */
int cl_report_write(FILE *f, cl_report_format_t format, const json_t *report,
                    const json_t *verdicts);

/* One arm of a run's box plot: its five numbers in microseconds, from
 * the run's summary (docs/protocol.md 10.13). name is borrowed. */
typedef struct {
    const char *name;
    bool subject;
    bool has_summary;     /* false: no measured sample, drawn as "none" */
    long n;
    double min_us, q25_us, median_us, q75_us, max_us;
} cl_report_arm_t;

/* One verdict of the run, drawn on a log ratio axis with its tolerance
 * band [1/(1+t), 1+t] (docs/verdict.md). other is borrowed; outcome is
 * "win", "parity", "loss" or NULL (no verdict: nothing is drawn). */
typedef struct {
    const char *other;
    double ratio;
    double tolerance;
    const char *outcome;
} cl_report_ratio_t;

/* Most arms and ratios one box plot draws; more are left out and the
 * plot's caption says so. */
#define CL_REPORT_BOX_ARMS 16

/* Write one inline <svg class="boxplot"> (no namespace URL, no script):
 * a box per arm (min, q25, median, q75, max on one time axis) and a row
 * per ratio with its tolerance band, each with hover text. Colours
 * follow the outcome (win green, parity grey, loss red) and are set as
 * attributes, so the plot needs no style sheet. caption is escaped.
 * Returns 0, or -1 when writing failed. Used by --html and cl_site. */
int cl_report_boxplot(FILE *f, const char *caption,
                      const cl_report_arm_t *arms, size_t narms,
                      const cl_report_ratio_t *ratios, size_t nratios);

/* The colour of an outcome ("win", "parity", "loss"; anything else is
 * "no verdict"), as #rrggbb: one palette for the report and the site. */
const char *cl_report_outcome_colour(const char *outcome);

#endif
