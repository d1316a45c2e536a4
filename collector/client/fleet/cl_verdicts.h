/* cl_verdicts.h -- printing the collector's `verdicts` answer, shared by
 * `parity verdicts` and `parity run --wait`.
 *
 * The body is docs/protocol.md 10.8: {"job", "suite", "hosts": [...],
 * "comparisons": [{"benchmark", "subject", "other", "hosts": [{"host",
 * "run_id", "verdict" | "error"}], "summary": {...}}]}. Borrowed.
 */
#ifndef CL_VERDICTS_H
#define CL_VERDICTS_H

#include <stdio.h>
#include <jansson.h>

typedef enum {
    CL_VERDICTS_TABLE = 0,
    CL_VERDICTS_JSON,
    CL_VERDICTS_CSV,
    CL_VERDICTS_MARKDOWN,
} cl_verdicts_format_t;

/* Print body in format to f. Returns 0, or -1 on a write error. */
int cl_verdicts_print(FILE *f, const json_t *body,
                      cl_verdicts_format_t format);

#endif
