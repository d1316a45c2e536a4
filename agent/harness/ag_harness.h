/* ag_harness.h -- run one suite's benchmarks: warm-ups, interleaved
 * rounds, calibration, error samples, cancellation.
 *
 * The harness is a library: it never prints, never exits and installs no
 * signal handlers. Everything it measures is streamed to the caller
 * through callbacks, in this order for one ag_harness_run() call:
 *
 *   on_calibration  once, the session-start calibration runs (extra no-op
 *                   runs so that, with one per round, the session holds at
 *                   least AG_HARNESS_CALIBRATION_TARGET)
 *   per selected benchmark:
 *     on_run_start  benchmark, arms (commands, version output), the order
 *                   plan, environment JSON
 *     on_sample     every warm-up, measured, calibration and error sample
 *     on_progress   after each round
 *     on_run_end    status (complete, failed, incomplete, cancelled),
 *                   reason, the failing command's stderr tail
 *
 * Adaptive runs (`runs: auto`): the plan is made for max_runs rounds;
 * at each look (vd_adaptive_next) the subject is compared with every
 * other arm on the rounds so far, and the benchmark ends when all are
 * decisive or at the cap. on_run_end says how many rounds and why.
 *
 * Order: warm-up rounds first (kind WARMUP), then `runs` rounds; round r
 * runs the arms rotated by r (A B C, B C A, C A B ...), then one
 * calibration run of the no-op program at position arm_count, through the
 * same spawn path. The plan is in ag_run_start_t.order before any run.
 *
 * Errors: a run that exits with another status than expect_exit, is
 * killed by a signal or passes its timeout is an ERROR sample; the
 * benchmark stops there and ends FAILED with the reason and stderr tail;
 * the next benchmark still runs.
 *
 * Cancellation: ag_harness_cancel() may be called from another thread or
 * from a signal handler (it only stores an atomic and writes an eventfd).
 * The current run's whole process group is killed, its sample is not
 * reported, the current benchmark ends with the status given to cancel
 * (INCOMPLETE or CANCELLED), remaining benchmarks are not started and
 * ag_harness_run() returns AG_HARNESS_STOPPED.
 *
 * Threads: one ag_harness_run() at a time per harness; callbacks run on
 * the calling thread. CPU pinning (`cpus:`) sets the calling thread's
 * affinity around each spawn only (posix_spawn's child inherits it) and
 * restores it outside the timed window.
 */
#ifndef AG_HARNESS_H
#define AG_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_suite.h"
#include "pw_results.h"
#include "vd_adaptive.h"

#define AG_HARNESS_OK        0
#define AG_HARNESS_ERR      -1   /* could not run at all; err says why */
#define AG_HARNESS_STOPPED   1   /* cancelled, or a callback returned != 0 */

/* Calibration samples a session aims for (the spec's "at least 100"). */
#define AG_HARNESS_CALIBRATION_TARGET  100
/* Bytes of a failing command's stderr kept for the report. */
#define AG_HARNESS_STDERR_TAIL         2048
/* Bytes of `versions` output kept per arm. */
#define AG_HARNESS_VERSION_MAX         16384

/* Same values as parity.proto's RunStatus (asserted at build time by
 * agent/daemon/ag_stream.c, which casts one into the other). */
typedef enum {
    AG_RUN_COMPLETE = 0,
    AG_RUN_FAILED = 1,
    AG_RUN_INCOMPLETE = 2,
    AG_RUN_CANCELLED = 3,
    AG_RUN_STATUS_COUNT          /* sentinel */
} ag_run_status_t;

/* One sample, mirroring parity.proto's Sample. */
typedef struct {
    pw_sample_kind_t kind;   /* CALIBRATION: arm is 0 and meaningless;
                                ERROR: never averaged in */
    unsigned arm;            /* index into the benchmark's arms */
    unsigned round;          /* warm-ups and measured rounds each from 0 */
    unsigned position;       /* place in the round's order, from 0;
                                calibration: arm_count */
    double wall_us;          /* CLOCK_MONOTONIC, before spawn to reaped */
    double user_us;          /* wait4 rusage */
    double sys_us;
    int64_t maxrss_kb;
    int exit_status;         /* -1 when killed by a signal */
    int term_signal;         /* 0 when it exited */
    int cpu;                 /* CPU it ended on, -1 unknown */
    int64_t start_unix_us;   /* CLOCK_REALTIME at the start */
    const char *error;       /* ERROR only: the reason; NULL otherwise.
                                Borrowed, valid during the callback. */
    /* The command's and its children's counters (ag_counters.h), user
     * space only; 0 where this host does not count them. */
    int64_t instructions;
    int64_t cycles;
    int64_t task_clock_ns;
} ag_sample_t;

/* An arm as it is run (after variables), for on_run_start. */
typedef struct {
    const char *name;
    bool subject;
    const char *const *argv; /* NULL-terminated; NULL for a shell arm */
    const char *shell;       /* NULL for an argv arm */
    const char *version_output; /* "" when the arm has no `versions` */
    const char *instance;    /* an --against instance's revision value
                                (ag_against.h); NULL for the suite's own */
} ag_arm_info_t;

/* All pointers are borrowed, valid during the callback only. */
typedef struct {
    const char *suite;
    const char *benchmark;
    size_t benchmark_index;  /* in the suite */
    const ag_bench_t *bench; /* the full definition */
    const ag_arm_info_t *arms;
    size_t arm_count;
    size_t subject;          /* index of the subject arm */
    unsigned runs;           /* measured rounds, after the override;
                                with runs_auto the cap */
    bool runs_auto;          /* rounds stop once the verdicts are
                                decisive (vd_adaptive.h) */
    unsigned warmup;         /* warm-up rounds, after the override */
    /* order[r * arm_count + p] = arm at position p of measured round r,
     * for r < runs. Warm-up round w uses row w % runs. */
    const unsigned *order;
    const char *environment_json;  /* ag_env object, serialised */
    int64_t started_at_us;   /* unix time */
    const char *revision;    /* the suite's revision: variable, or NULL */
    const char *revision_value;    /* its value in this run */
} ag_run_start_t;

typedef struct {
    const char *benchmark;
    bool warmup;             /* a warm-up round just ended */
    unsigned round;          /* rounds done, 1 .. rounds */
    unsigned rounds;         /* warm-up or measured rounds in all; with
                                runs: auto the next look's */
    double elapsed_us;       /* since this benchmark started */
    double eta_us;           /* estimated time left for this benchmark */
} ag_progress_t;

typedef struct {
    const char *benchmark;
    ag_run_status_t status;
    const char *reason;      /* NULL when complete */
    const char *stderr_tail; /* the failing command's; NULL if none */
    uint64_t samples;        /* how many on_sample calls this run made */
    unsigned rounds;         /* measured rounds taken */
    bool runs_auto;          /* runs: auto; then max_runs and stop */
    unsigned max_runs;
    vd_stop_t stop;          /* DECISIVE or CAP; MORE when it ended
                                otherwise (failed, interrupted) */
    int64_t ended_at_us;     /* unix time */
    /* The harness's own CPU (its thread's) between the end of one timed
     * window and the start of the next, summed over the run, against the
     * wall time of the timed windows: the overhead the harness adds. */
    double between_cpu_us;
    double windows_wall_us;
} ag_run_end_t;

/* Calibration no-op runs, n values in each column (docs/verdict.md
 * "Metrics"): wall time; CPU time as rusage's user + sys; the task
 * clock in µs, 0 where it was not counted; ru_maxrss in KiB. Borrowed. */
typedef struct {
    const double *wall_us;
    const double *cpu_us;
    const double *task_clock_us;
    const double *peak_rss_kb;
    size_t n;
    int64_t taken_at_us;       /* unix µs, the first run's start */
} ag_cal_batch_t;

/* A callback returning non-zero stops the session as if cancelled with
 * AG_RUN_INCOMPLETE (e.g. the daemon's spool is full). Any may be NULL. */
typedef struct {
    void *ctx;
    int (*on_calibration)(void *ctx, const ag_cal_batch_t *cal);
    int (*on_run_start)(void *ctx, const ag_run_start_t *start);
    int (*on_sample)(void *ctx, const ag_sample_t *sample);
    void (*on_progress)(void *ctx, const ag_progress_t *progress);
    int (*on_run_end)(void *ctx, const ag_run_end_t *end);
} ag_callbacks_t;

typedef struct {
    unsigned runs;               /* 0: each benchmark's own */
    int warmup;                  /* < 0: each benchmark's own */
    const char *const *only;     /* benchmark names to run; NULL: all */
    size_t only_count;
    const char *noop_path;       /* NULL: ag_harness_default_noop() */
    const char *environment_json;/* NULL: collected with ag_env */
    /* Calibration samples the session aims for; 0 means
     * AG_HARNESS_CALIBRATION_TARGET. */
    unsigned calibration_target;
    /* `--runs auto`: every selected benchmark adds rounds in steps until
     * its verdicts are decisive (vd_adaptive.h) or it has max_runs;
     * false: runs, else each benchmark's own (its runs_auto). */
    bool runs_auto;
    unsigned max_runs;           /* the cap; 0: each benchmark's own */
    double parity;               /* the stopping rule's flat tolerance;
                                    0: VD_DEFAULT_PARITY */
    /* The stopping rule's floor: the host's calibration store (oldest
     * first; NULL, 0: none) pooled with this session's calibration runs
     * as ag_calstore_floor() does, or with fresh_floor the session's
     * alone. Borrowed for the call. */
    const double *store_us;
    size_t store_n;
    bool fresh_floor;
} ag_harness_opts_t;

typedef struct ag_harness ag_harness_t;

/* A new harness. Caller owns it; free with ag_harness_destroy(). NULL
 * with err filled when the eventfd cannot be made. */
ag_harness_t *ag_harness_new(char *err, size_t errlen);

/* Free h and set *h to NULL. Accepts NULL. */
void ag_harness_destroy(ag_harness_t **h);

/* Run suite's benchmarks (opts may be NULL for the defaults). suite, opts
 * and cb are borrowed for the call. Returns AG_HARNESS_OK when every
 * selected benchmark ran to its end (complete or failed),
 * AG_HARNESS_STOPPED when cancelled or stopped by a callback, and
 * AG_HARNESS_ERR when nothing could run (an --only name that the suite
 * lacks, no no-op program): err says why. */
int ag_harness_run(ag_harness_t *h, const ag_suite_t *suite,
                   const ag_harness_opts_t *opts, const ag_callbacks_t *cb,
                   char *err, size_t errlen);

/* Ask the running (or next) ag_harness_run() to stop; status is
 * AG_RUN_INCOMPLETE (interrupted, e.g. Ctrl-C) or AG_RUN_CANCELLED (a
 * job cancel). Cleanup hooks still run after the first call; a second
 * call kills a running cleanup too. Async-signal-safe and thread-safe. */
void ag_harness_cancel(ag_harness_t *h, ag_run_status_t status);

/* Clear a previous cancel so h can run again. Not signal-safe. */
void ag_harness_reset(ag_harness_t *h);

/* The no-op program used for calibration: parity-noop beside the
 * running executable (or a build tree's agent/ seen from collector/client/
 * or tests/), else the installed PARITY_LIBEXEC_DIR/parity-noop
 * (/usr/libexec/parity), else /bin/true. The returned string is
 * static. */
const char *ag_harness_default_noop(void);

/* "complete", "failed", "incomplete", "cancelled"; "?" out of range. */
const char *ag_run_status_name(ag_run_status_t s);

#endif
