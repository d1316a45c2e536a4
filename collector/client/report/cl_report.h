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

#endif
