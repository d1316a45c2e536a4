/* cl_confirm.h -- `parity regressions confirm ID [--runs N] [--wait]
 * [--json]`: measure an event's step again, the revision before it and
 * the one after it interleaved in one job on its hosts (the collector's
 * `confirm` and `confirm_status`, docs/protocol.md "confirm";
 * docs/regressions.md "Confirm").
 */
#ifndef CL_CONFIRM_H
#define CL_CONFIRM_H

#include "cl_conn.h"

/* Exit status: 0 asked (or, with --wait, not reproduced), 1 confirmed
 * (with --wait: the step is real, as `regressions` exits 1 while one is
 * open), 2 usage, 3 no answer or --wait interrupted, 4 the collector
 * refused it or the confirm failed. argv[0] is "confirm"; co holds the
 * connection options already taken out of argv. */
int cl_confirm_main(int argc, char **argv, cl_conn_opts_t *co);

#endif
