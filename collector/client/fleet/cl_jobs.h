/* cl_jobs.h -- the table of `parity jobs` (docs/commands/jobs.md).
 *
 * cl_jobs_print writes the jobs answer (docs/protocol.md 10.5, borrowed)
 * as its table to f, and a line saying there is none when the list is
 * empty (active: the answer to --active). PW_EXIT_OK, or PW_EXIT_SYSTEM
 * when the table could not be made or written.
 */
#ifndef CL_JOBS_H
#define CL_JOBS_H

#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>

int cl_jobs_print(FILE *f, const json_t *body, bool active);

#endif
