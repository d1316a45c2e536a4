/* co_ingest.h -- runs and their samples: a RunStart's run and arms, the
 * batches of samples, and the refusals that answer what depends on a
 * refused message.
 *
 * Tables: runs, arms, benchmarks, environments (a run's), batches,
 * samples, refusals (010), and host_calibration for a batch's
 * CALIBRATION samples (through co_cals). Status codes and the handle are
 * co_db's; called on the writer thread.
 */
#ifndef CO_INGEST_H
#define CO_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "co_db.h"
#include "parity.pb-c.h"

/* CO_DB_REFUSED for another host's run id, no arms, an arm without a
 * name or with an earlier arm's name, an environment that is not a JSON
 * object; CO_DB_DUP for this host's run id stored before (unchanged).
 * A refusal of a run id no host stored is remembered (010_refusals), so
 * that the run's batches and RunEnd get CO_DB_DEPENDS. */
int co_ingest_run_start(co_db_t *db, int64_t host_id,
                        const Parity__RunStart *rs, char *err, size_t errlen);

/* Store a batch; *stored gets the samples written (0 for a duplicate).
 * CO_DB_REFUSED (nothing stored) when a sample has a time that is not
 * finite or is negative, an unknown kind, an arm the run does not have
 * (CALIBRATION samples excepted), or round/position above INT32_MAX;
 * such a refusal is remembered, so that a RunEnd counting the batch gets
 * CO_DB_DEPENDS. CO_DB_DEPENDS when the run's RunStart was refused. */
int co_ingest_batch(co_db_t *db, int64_t host_id,
                    const Parity__SampleBatch *b, size_t *stored, char *err,
                    size_t errlen);

/* Many batches (from any hosts) in one transaction: one INSERT of their
 * (run, batch_seq) records and one COPY of the new ones' samples, so that
 * a burst costs one commit. Each item gets its own status in rc (CO_DB_OK,
 * CO_DB_DUP, CO_DB_LATER, CO_DB_REFUSED with err, or CO_DB_FAIL) and
 * stored; a data error inside the group makes it fall back to one
 * transaction per batch, so only the bad batch is refused. */
#define CO_INGEST_GROUP_MAX 64
typedef struct {
    int64_t host_id;
    const Parity__SampleBatch *batch;   /* borrowed */
    int rc;
    size_t stored;
    char err[256];
} co_ingest_item_t;

/* Returns CO_DB_FAIL when the database failed (then every item not
 * settled before is CO_DB_FAIL), else CO_DB_OK. n <= CO_INGEST_GROUP_MAX. */
int co_ingest_batches(co_db_t *db, co_ingest_item_t *items, size_t n,
                      char *err, size_t errlen);

/* The run with this uuid: CO_DB_OK with *run (runs.id) and *n_arms (may
 * be NULL) set when it is this host's, CO_DB_LATER when unknown,
 * CO_DB_REFUSED when another host's, CO_DB_DEPENDS (err naming what:
 * "batch R/3") when this host's RunStart of it was refused. */
int co_ingest_run_lookup(co_db_t *db, int64_t host_id, const char *uuid,
                         int64_t *run, size_t *n_arms, const char *what,
                         char *err, size_t errlen);

/* CO_DB_DEPENDS naming the first of batches 0..re->batches-1 of the run
 * (runs.id runid; batches: re->batches as text) that this host had
 * refused and that was not stored since, else CO_DB_LATER (or
 * CO_DB_FAIL). */
int co_ingest_refused_batch(co_db_t *db, int64_t host_id,
                            const Parity__RunEnd *re, const char *runid,
                            const char *batches, char *err, size_t errlen);

#endif
