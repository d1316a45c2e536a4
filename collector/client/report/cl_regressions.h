/* cl_regressions.h -- `parity regressions`' printer, apart from the verb
 * so that tests can print canned answers (docs/protocol.md 10.12).
 */
#ifndef CL_REGRESSIONS_H
#define CL_REGRESSIONS_H

#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>

/* The regressions answer body (borrowed) as tables on f: the events,
 * open and acked change points, the pairs whose verdict got worse or
 * better than the previous job's (both runs' ids and tags), and the
 * summary line. Without all, events and change points within noise are
 * left out and counted in the summary (`--all` shows them). Returns 0,
 * or -1 on a write error. */
int cl_regressions_print(FILE *f, const json_t *body, bool all);

#endif
