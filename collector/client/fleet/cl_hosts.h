/* cl_hosts.h -- the table of `parity hosts` (docs/commands/hosts.md).
 *
 * cl_hosts_print writes the hosts answer (docs/protocol.md 10.7, the
 * body borrowed) as the table, then the machines several hosts share and
 * the self-test warnings, to f; "last seen" and "calibrated" are ages
 * before now_us (0: the clock's now), so a test can print the same table
 * twice. PW_EXIT_OK, or PW_EXIT_SYSTEM when the table could not be
 * made or written.
 */
#ifndef CL_HOSTS_H
#define CL_HOSTS_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

int cl_hosts_print(FILE *f, const json_t *body, int64_t now_us);

#endif
