/* co_runs.h -- the samples of runs in progress, as the writer stored
 * them, so that a RunEnd's verdicts need not read them back (co_db's
 * co_db_run_cache_t says why and when the copy is used).
 *
 * Keyed by (host id, run id). Bounded by a total number of samples: when
 * a batch would pass it, the oldest runs are forgotten (their RunEnd then
 * reads the database, as after a collector restart). One thread.
 */
#ifndef CO_RUNS_H
#define CO_RUNS_H

#include <stddef.h>
#include <stdint.h>

#include "co_db.h"
#include "parity.pb-c.h"

/* Samples kept at most, 13 bytes each (1 M is ~13 MB):
 * room for the runs of ~1,000 agents streaming at once. */
#define CO_RUNS_MAX_SAMPLES (1u << 20)

typedef struct co_runs co_runs_t;

/* Caller owns the result; NULL on out of memory. */
co_runs_t *co_runs_new(size_t max_samples);
void co_runs_destroy(co_runs_t **runs);

/* A batch of host_id's run was stored (committed, not a duplicate):
 * keep its samples. Out of memory or past the bound forgets runs. */
void co_runs_add(co_runs_t *runs, int64_t host_id,
                 const Parity__SampleBatch *b);

/* The run's samples so far, borrowed until the next call; NULL when not
 * kept. */
const co_db_run_cache_t *co_runs_get(co_runs_t *runs, int64_t host_id,
                                     const char *run_id);

/* Forget the run (its RunEnd is stored). */
void co_runs_forget(co_runs_t *runs, int64_t host_id, const char *run_id);

/* Samples kept now. */
size_t co_runs_samples(const co_runs_t *runs);

#endif
