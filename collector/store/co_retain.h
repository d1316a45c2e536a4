/* co_retain.h -- the monthly partitions of samples, and how long raw
 * samples are kept.
 *
 * Tables: the partitions of samples (samples_pYYYYMM, samples_default)
 * and host_calibration's old rows. Status codes and the handle are
 * co_db's; neither runs inside co_db_begin's transaction. Called on the
 * writer thread, between bursts.
 */
#ifndef CO_RETAIN_H
#define CO_RETAIN_H

#include <stdint.h>

#include "co_db.h"

/* Most months co_retain_partitions makes ahead. */
#define CO_RETAIN_MONTHS_AHEAD_MAX 24

/* Make the monthly partitions of samples (samples_pYYYYMM, UTC months of
 * start_unix_us) for the month of now_us and the months_ahead after it
 * (0..CO_RETAIN_MONTHS_AHEAD_MAX, else CO_DB_REFUSED), each that is
 * missing in its own transaction; one that exists is left alone, so a
 * second call changes nothing. Rows of a new month already in
 * samples_default (an agent clock ahead) move into it. Each creation
 * waits at most 5 s for its lock on samples (CO_DB_FAIL then; call again
 * later). */
int co_retain_partitions(co_db_t *db, int64_t now_us, int months_ahead,
                         char *err, size_t errlen);

/* Retention of raw samples: drop every partition of samples whose upper
 * bound is at or before now_us - keep_us, delete the rows of
 * samples_default older than that of runs started before it, and the
 * host_calibration rows taken before it. Runs, arms, batches,
 * run_summaries, verdicts, floors and calibration_samples are kept.
 * *dropped gets the partitions dropped (also when a later step fails).
 * CO_DB_REFUSED when keep_us or now_us is not > 0. Each drop waits at
 * most 5 s for its lock. */
int co_retain_samples(co_db_t *db, int64_t keep_us, int64_t now_us,
                      int *dropped, char *err, size_t errlen);

#endif
