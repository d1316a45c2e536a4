/* co_svg.h -- the history plot of one series for `parity report --site`
 * (docs/commands/report.md), written as inline SVG by the program: no
 * script, no library, no namespace URL, nothing loaded at view time.
 *
 * A series is the object of the collector's `series` answer: runs oldest
 * first, each with both arms' five numbers (microseconds), the ratio, the
 * outcome and the tolerance of its verdict; change points and annotations
 * name a run by its index. The plot has two panels on one run axis:
 *   - times: per arm a min-max band, a median line and one point per run;
 *   - ratio: the tolerance band of each run's verdict around 1 and one
 *     point per run coloured by its outcome (win, parity, loss);
 * change points are vertical lines coloured by their outcome (dashed when
 * within noise), annotations dotted lines, each with hover text. Each
 * run's column (rect.hit, both panels high) holds its hover text: time,
 * run, job, tags, both arms' numbers and the verdict.
 *
 * Every element a reader counts has a class: circle.pt.subject,
 * circle.pt.other, circle.pt.ratio, rect.hit, line.cp, line.ann; the <svg>
 * carries data-runs (runs in the series) and data-shown (runs drawn).
 * Text from a host, suite or user is escaped.
 */
#ifndef CO_SVG_H
#define CO_SVG_H

#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

/* Most runs one history plot draws: the newest ones. Beyond it a plot
 * would be a smear of points and a page of 100 series megabytes. */
#define CO_SVG_MAX_POINTS 200

/* The colour of an outcome ("win", "parity", "loss"; anything else is
 * "no verdict"), as #rrggbb: one palette for the report and the site. */
/* An outcome as a CSS class: "win", "parity", "loss", or "none" for
 * anything else (no verdict). */
const char *co_svg_outcome_class(const char *outcome);

const char *co_svg_outcome_colour(const char *outcome);

/* Write text escaped for HTML, SVG and XML, line breaks as spaces:
 * pw_out_xml(f, s, true). NULL writes nothing. */
void co_svg_text(FILE *f, const char *s);

/* Write the history plot of series (borrowed), drawing its newest
 * max_points runs (1..CO_SVG_MAX_POINTS; 0 means the maximum). *shown,
 * when not NULL, is set to the number of runs drawn. Returns 0, or -1
 * when writing failed. */
int co_svg_history(FILE *f, const json_t *series, size_t max_points,
                   size_t *shown);

#endif
