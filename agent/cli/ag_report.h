/* ag_report.h -- a results document for a reader: per benchmark the arms
 * table (n, min, median, max, IQR) and each verdict, then the floor and
 * the environment's warnings. Shared by `parity-agent run` and `parity
 * compare`; uses the pw_out helpers of proto/, which the
 * program linking this must also link (both do).
 *
 * Writes only to the FILE it is given; never exits. doc is borrowed.
 */
#ifndef AG_REPORT_H
#define AG_REPORT_H

#include <stdio.h>
#include <jansson.h>

/* Returns 0, or -1 on a write error. */
int ag_report_print(FILE *f, const json_t *doc);

#endif
