/* ag_calstore.h -- a host's calibration store: its last AG_CALSTORE_MAX
 * no-op runs, pooled across invocations, so that the floor (q90 - q10,
 * vd_floor) holds still from one `parity compare` to the next.
 *
 * `parity compare` and `parity-agent run` keep it under the user's cache
 * ($XDG_CACHE_HOME/parity, else ~/.cache/parity); a streamed run and the
 * daemon under the agent's state directory (its --spool). One file per
 * host name, so a home directory shared by several machines keeps one
 * store each.
 *
 * File format, text, version 2 (docs/verdict.md "The calibration
 * store"):
 *
 *   parity-calibration 2
 *   TAKEN_AT_UNIX_US WALL_US CPU_US TASK_CLOCK_US PEAK_RSS_KB
 *                                     one line a run, oldest first; the
 *                                     other metrics "-" where unknown
 *
 * A version-1 file (two fields a line, wall time alone) is read as well;
 * it is written again as version 2. A read checks everything: the
 * header, the numbers of a line (an integer >= 0, a finite wall time > 0
 * and below AG_CALSTORE_MAX_WALL_US, the others >= 0 and at most
 * AG_CALSTORE_MAX_MORE or "-"), at
 * most AG_CALSTORE_MAX lines, at most AG_CALSTORE_MAX_BYTES in all. A
 * file that fails is renamed to PATH.bad (replacing an older one) and
 * the store starts afresh; the note says why. An update holds an
 * exclusive flock on PATH.lock while it reads, appends and writes
 * (PATH.tmp.PID, fsync, rename), so concurrent invocations neither lose
 * each other's runs nor leave half a file.
 *
 * The floor choice (ag_calstore_floor) is pure: the store's runs and this
 * invocation's, pooled, unless this invocation is much noisier
 * (AG_CALSTORE_NOISY_RATIO) or asked for a fresh floor.
 *
 * Library code: nothing here prints or exits.
 */
#ifndef AG_CALSTORE_H
#define AG_CALSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AG_CALSTORE_OK    0
#define AG_CALSTORE_ERR  -1

#define AG_CALSTORE_VERSION    2
/* The other metrics kept beside each wall time: CPU time (user + sys),
 * the task clock (µs) and peak RSS (KiB), in that order. */
#define AG_CALSTORE_MORE       3
/* Beyond this a value of them is not a no-op run's. */
#define AG_CALSTORE_MAX_MORE   1e9
/* Runs kept: the spec's "up to 1,000". */
#define AG_CALSTORE_MAX        1000
/* A full store is about 36 KiB; anything past this is not ours. */
#define AG_CALSTORE_MAX_BYTES  (128u << 10)
/* A no-op run longer than 10 s is not a measurement. */
#define AG_CALSTORE_MAX_WALL_US 10e6
/* "Much noisier": this invocation's own q90 - q10 (at least
 * VD_FLOOR_MIN_SAMPLES runs) above this many times the store's. Under
 * steady load, single invocations' floors ranged 0.5x to 1.5x of the
 * pooled one (docs/performance.md); 2x is past that ordinary spread. */
#define AG_CALSTORE_NOISY_RATIO 2.0

typedef enum {
    AG_FLOOR_POOLED = 0,   /* the store and this invocation, last 1,000 */
    AG_FLOOR_SESSION,      /* this invocation's runs alone */
    AG_FLOOR_DEFAULT,      /* fewer than 100 runs anywhere: 25 us */
    AG_FLOOR_SOURCE_COUNT  /* sentinel */
} ag_floor_source_t;

typedef enum {
    AG_FLOOR_WHY_STORE = 0, /* pooled as usual */
    AG_FLOOR_WHY_FRESH,     /* --fresh-floor */
    AG_FLOOR_WHY_NOISY,     /* this invocation much noisier than the store */
    AG_FLOOR_WHY_NO_STORE,  /* no store given (none, or unusable) */
    AG_FLOOR_WHY_COUNT      /* sentinel */
} ag_floor_why_t;

/* The floor chosen and everything a reader needs to see why. */
typedef struct {
    double floor_us;
    bool is_default;          /* vd_floor's default (fewer than 100) */
    ag_floor_source_t source;
    ag_floor_why_t why;
    size_t samples;           /* runs the floor was computed from */
    size_t store_n;           /* runs in the store before this one */
    size_t session_n;         /* this invocation's runs */
    double store_floor_us;    /* the store's own q90 - q10; 0 if < 100 */
    double session_floor_us;  /* this invocation's; 0 if < 100 */
} ag_floor_t;

/* The store's path for this host under dir (NULL: the user's cache,
 * $XDG_CACHE_HOME/parity or $HOME/.cache/parity), written to out.
 * Creates the directory (mode 0700) when missing. */
int ag_calstore_path(const char *dir, char *out, size_t outlen, char *err,
                     size_t errlen);

/* Read path's runs into *wall_us (malloc'd, caller frees; NULL when
 * none) and *n. A missing file is an empty store. A file that fails the
 * checks is set aside as PATH.bad: an empty store, and note says so
 * (note[0] is '\0' otherwise). AG_CALSTORE_ERR only when the file
 * cannot be read or set aside at all (err says why). */
int ag_calstore_load(const char *path, double **wall_us, size_t *n,
                     char *note, size_t notelen, char *err, size_t errlen);

/* The store's runs with their other metrics: wall_us and more[k] (each
 * n long, NAN where a run has no value: a version-1 file's, a counter
 * not counted), oldest first. Owned: ag_calstore_runs_free. */
typedef struct {
    double *wall_us;
    double *more[AG_CALSTORE_MORE];   /* cpu_us, task_clock_us, peak_rss_kb */
    size_t n;
} ag_calstore_runs_t;

/* ag_calstore_load with every column. */
int ag_calstore_load_runs(const char *path, ag_calstore_runs_t *out,
                          char *note, size_t notelen, char *err,
                          size_t errlen);
void ag_calstore_runs_free(ag_calstore_runs_t *r);

/* ag_calstore_append with the other metrics' values of the same runs:
 * more[k] NULL or n long, NAN for no value. */
int ag_calstore_append_runs(const char *path, const double *wall_us,
                            const double *const *more, size_t n,
                            int64_t taken_at_us, char *note, size_t notelen,
                            char *err, size_t errlen);

/* Append wall_us[0..n-1], taken at taken_at_us, to path under the lock,
 * keeping the newest AG_CALSTORE_MAX. A bad file found is set aside as
 * in ag_calstore_load (note). Nothing is borrowed past the call. */
int ag_calstore_append(const char *path, const double *wall_us, size_t n,
                       int64_t taken_at_us, char *note, size_t notelen,
                       char *err, size_t errlen);

/* Choose the floor from the store's runs (oldest first, may be NULL/0)
 * and this invocation's (fresh: use these alone). Fails only on a run
 * that is not finite and > 0. */
int ag_calstore_floor(const double *store, size_t store_n,
                      const double *session, size_t session_n, bool fresh,
                      ag_floor_t *out, char *err, size_t errlen);

/* A sentence for the report, e.g. "q90 - q10 of this host's last 1000
 * no-op runs (900 stored, 100 now)". */
void ag_floor_describe(const ag_floor_t *f, char *out, size_t outlen);

/* "pooled", "session", "default"; "?" out of range. */
const char *ag_floor_source_name(ag_floor_source_t s);

/* "store", "fresh", "noisy", "no_store"; "?" out of range. */
const char *ag_floor_why_name(ag_floor_why_t w);

#endif
