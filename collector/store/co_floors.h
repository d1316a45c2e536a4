/* co_floors.h -- the newest calibration samples of the hosts a writer
 * is storing for, held in memory so that a RunEnd's floor is not read
 * back from host_calibration (a 1,000-row index scan, ~5 ms under load
 * and the largest part of a RunEnd; docs/performance.md).
 *
 * For each host it holds its newest `window` rows (taken_at_us, wall_us,
 * quiet) as host_calibration has them: loaded once from the database, then
 * added to as the same connection stores more. The floor's window is
 * "the newest `window` rows taken at or before a run's end"; the held
 * rows answer that exactly when none of them is newer than the run's end
 * or when they are all the host's rows (co_floors_window says false
 * otherwise, and the caller reads the database).
 *
 * It is only right while every row of a held host goes through the
 * owner's connection: the owner (co_db) forgets a host when it says
 * Hello or goes offline (it may have been stored by another collector
 * meanwhile), and forgets everything on a rollback, a failed statement,
 * a lost connection or retention. Rows with the same taken_at_us at the
 * window's edge are equally "newest"; which of them is held is not
 * defined, as in the database's ORDER BY ... LIMIT.
 *
 * Bounded: at most CO_FLOORS_MAX_HOSTS hosts of `window` rows (16 bytes
 * each); the least recently used host is forgotten for a new one. One
 * thread.
 */
#ifndef CO_FLOORS_H
#define CO_FLOORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CO_FLOORS_MAX_HOSTS 2048

/* One held row, as host_calibration has it. */
typedef struct {
    int64_t taken_us;
    double wall_us;
    bool quiet;
} co_floors_row_t;

typedef struct co_floors co_floors_t;

/* Rows held per host at most: window (1..). Caller owns the result;
 * NULL on out of memory. */
co_floors_t *co_floors_new(int window);
void co_floors_destroy(co_floors_t **f);

/* The window; a new one forgets every host. */
int co_floors_window_size(const co_floors_t *f);
void co_floors_set_window(co_floors_t *f, int window);

/* Forget one host, or all of them. */
void co_floors_forget(co_floors_t *f, int64_t host_id);
void co_floors_clear(co_floors_t *f);

/* True when the host's rows are held. */
bool co_floors_known(const co_floors_t *f, int64_t host_id);

/* Hold the host's newest rows as the database gave them (n <= window,
 * any order; quiet NULL: none is): all of its rows when n < window.
 * False on out of memory (the host is then not held). */
bool co_floors_load(co_floors_t *f, int64_t host_id, const int64_t *taken_us,
                    const double *wall_us, const bool *quiet, size_t n);

/* One more row stored for the host; nothing when it is not held. */
void co_floors_add(co_floors_t *f, int64_t host_id, int64_t taken_us,
                   double wall_us, bool quiet);

/* The host's newest rows (at most window) taken at or before until_us
 * into out (window slots), oldest first, their count in *n. False when
 * the host is not held or the held rows cannot say (some are newer than
 * until_us and older ones were not kept). */
bool co_floors_window(co_floors_t *f, int64_t host_id, int64_t until_us,
                      co_floors_row_t *out, size_t *n);

#endif
