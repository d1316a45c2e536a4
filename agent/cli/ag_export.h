/* ag_export.h -- a results document (proto/pw_results.h) as the tables
 * hyperfine users know: --export-markdown and --export-csv of `parity
 * compare` and `parity-agent run`.
 *
 * Markdown: per benchmark a table of every arm (median, min, max, IQR
 * in one unit chosen for the table, n) and the subject's verdict
 * against that arm ("win 0.8201 (tol. 0.0400)"); a heading per
 * benchmark when there are several, and why a benchmark stopped.
 * CSV: one row per arm, hyperfine's columns first (command, mean,
 * stddev, median, user, system, min, max in seconds, then
 * parameter_NAME), then Parity's (benchmark, subject, n, iqr, outcome,
 * ratio, tolerance). docs/commands/compare.md shows both.
 *
 * doc is borrowed. Writes only to f; returns 0, or -1 on a write error.
 * Uses the pw_out helpers, as ag_report does.
 */
#ifndef AG_EXPORT_H
#define AG_EXPORT_H

#include <stdio.h>
#include <jansson.h>

int ag_export_markdown(FILE *f, const json_t *doc);

int ag_export_csv(FILE *f, const json_t *doc);

#endif
