/* cl_history.h -- printing the collector's `history` answer (`parity
 * history`; docs/protocol.md 10.11, docs/commands/history.md).
 *
 * The body is {"benchmark", "truncated", "pairs": [{"suite", "subject",
 * "other", "rows": [{"job", "run_id", "at_us", "tags", "label", "hosts":
 * [{"host", "run_id", "status", "verdict" | "error"}], "summary"}]}]}.
 * Borrowed; nothing is kept.
 */
#ifndef CL_HISTORY_H
#define CL_HISTORY_H

#include <stdio.h>
#include <jansson.h>

typedef enum {
    CL_HISTORY_TABLE = 0,   /* one table per pair, a column per host */
    CL_HISTORY_CSV,         /* one line per job and host */
    CL_HISTORY_JSON,        /* the answer itself */
} cl_history_format_t;

/* Print body in format to f. Returns 0, or -1 on a write error or out of
 * memory. */
int cl_history_print(FILE *f, const json_t *body, cl_history_format_t format);

#endif
