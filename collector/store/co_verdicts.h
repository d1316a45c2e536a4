/* co_verdicts.h -- a run's end: its status, each arm's summary and one
 * verdict per arm against the subject arm (the spec's rule, vd_compare),
 * with the host's floor at the run's end (co_cals).
 *
 * Tables: runs (their end), run_summaries, verdicts, series (008), and
 * floors through co_cals. Status codes and the handle are co_db's;
 * called on the writer thread.
 */
#ifndef CO_VERDICTS_H
#define CO_VERDICTS_H

#include <stddef.h>
#include <stdint.h>

#include "co_db.h"
#include "parity.pb-c.h"

/* Store the RunEnd and, in the same transaction, one verdict per
 * non-subject arm: vd_compare of its MEASURED samples against the subject
 * arm's, with the host's floor from its last floor_window calibration
 * samples taken up to the run's end, and parity. The run's samples come
 * from co_db_set_run_samples's copy when it holds them all, else from
 * the database. CO_DB_LATER while some of batches 0..re->batches-1 are
 * not stored, CO_DB_DEPENDS when one of them (and no later copy) or the
 * run's RunStart was refused. *verdicts gets the count. Afterwards
 * co_db_last_run_end names the run stored. */
int co_verdicts_run_end(co_db_t *db, int64_t host_id,
                        const Parity__RunEnd *re, int floor_window,
                        double parity, unsigned *verdicts, char *err,
                        size_t errlen);

#endif
