/* co_cals.h -- calibrations and the floors made of them.
 *
 * A Calibration message's samples, and the rounds' CALIBRATION samples
 * of batches, are every calibration sample of a host: kept in
 * host_calibration (006), read by the floor through its (host_id,
 * taken_at_us) index, or from the rows the handle holds (co_floors). A
 * host's floor pools its last `window` samples (the quiet ones when the
 * window holds at least VD_FLOOR_MIN_SAMPLES of them: docs/collector.md,
 * "The floor"); it is kept on the host's row (what `parity hosts` shows)
 * and, for each run, in floors (017).
 *
 * Tables: calibrations, calibration_samples, host_calibration, floors,
 * and the floor columns of hosts. Status codes and the handle are
 * co_db's; called on the writer thread.
 */
#ifndef CO_CALS_H
#define CO_CALS_H

#include <stddef.h>
#include <stdint.h>

#include "co_db.h"
#include "parity.pb-c.h"
#include "vd_verdict.h"

/* Store a Calibration and refresh the floor on the host's row.
 * CO_DB_REFUSED without samples or with one that is not finite and > 0;
 * CO_DB_DUP for a calibration id stored before. */
int co_cals_store(co_db_t *db, int64_t host_id, const Parity__Calibration *c,
                  char *err, size_t errlen);

/* Inside a batch's transaction: its CALIBRATION samples with wall_us > 0
 * into host_calibration (one COPY; none sends nothing). */
int co_cals_copy_batch(co_db_t *db, int64_t host_id,
                       const Parity__SampleBatch *b, char *err,
                       size_t errlen);

/* A CALIBRATION sample's other metrics as host_calibration keeps them
 * (025): cpu_us = user + sys, task_clock_us and peak_rss_kb, each NAN
 * where the sample has none (0 task clock or peak RSS: not counted). */
void co_cals_sample_metrics(const Parity__Sample *x, double *cpu_us,
                            double *task_clock_us, double *peak_rss_kb);

/* The batch's CALIBRATION samples with wall_us > 0, stored by the
 * caller's own statement, into the rows the handle holds. */
void co_cals_hold(co_db_t *db, int64_t host_id, const Parity__SampleBatch *b);

/* Inside a RunEnd's transaction: the floor of the run's verdicts, from
 * the host's window ending at until (microseconds; INT64_MAX: no end),
 * into vp->floor_us and vp->floor_is_default, *used the samples pooled.
 * Recorded in floors and (when its window ends later than the one kept)
 * on the host's row. */
int co_cals_run_floor(co_db_t *db, int64_t host_id, const char *runid,
                      int64_t until, int window, vd_params_t *vp, int *used,
                      char *err, size_t errlen);

#endif
