/* ag_counters.h -- hardware counters beside wall time: instructions,
 * cycles and task-clock of a measured command and its children, and
 * nothing of the harness (docs/verdict.md "Counters").
 *
 * How: each counter is a perf_event_open(2) event on the calling thread
 * (pid 0, any CPU), opened disabled with enable_on_exec and inherit,
 * user space only (exclude_kernel, exclude_hv: what a
 * perf_event_paranoid of 2 allows an unprivileged process for its own
 * children). posix_spawn's child inherits a copy; the copy turns on at
 * the child's exec, so the spawn path before exec is not counted, and
 * the harness's own event never turns on (the harness never execs).
 * When the child and its descendants exit, their counts are added to
 * the harness's event: ag_counters_reset opens each event afresh before
 * a spawn and ag_counters_read gives what it gained after the reap.
 * Counts are scaled by time enabled / time running when the kernel
 * multiplexed them.
 *
 * Threads: a set counts only children spawned by the thread that made
 * it (inherit follows the task, not the process).
 *
 * Where a counter cannot be opened (no PMU in a VM: ENOENT or
 * EOPNOTSUPP; perf_event_paranoid 3 or a seccomp filter: EACCES or
 * EPERM), it is missing: reads give -1, and ag_counters_missing says
 * which and why, once, for the environment warnings.
 *
 * Ownership: ag_counters_new returns a set the caller owns
 * (ag_counters_destroy). Nothing here prints or exits.
 */
#ifndef AG_COUNTERS_H
#define AG_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    AG_CTR_INSTRUCTIONS,
    AG_CTR_CYCLES,
    AG_CTR_TASK_CLOCK,          /* nanoseconds */
    AG_CTR_COUNT
} ag_ctr_t;

typedef struct ag_counters ag_counters_t;

/* Open every counter that can be opened, on the calling thread. NULL
 * only on out of memory; a set with none open is fine (all missing). */
ag_counters_t *ag_counters_new(void);
void ag_counters_destroy(ag_counters_t **c);

/* The counter's name in files and messages: "instructions", "cycles",
 * "task_clock_ns". */
const char *ag_counters_name(ag_ctr_t which);

/* True when that counter is open. */
bool ag_counters_has(const ag_counters_t *c, ag_ctr_t which);

/* True when at least one counter is open. */
bool ag_counters_any(const ag_counters_t *c);

/* "" when all are open, else one line naming the missing counters and
 * the reason, e.g. "instructions, cycles: not supported by this CPU or
 * VM (perf_event_open: No such file or directory)". Owned by c. */
const char *ag_counters_missing(const ag_counters_t *c);

/* Just before a spawn: open every counter afresh and note where it
 * stands. Afresh, because an event kept across spawns stopped counting:
 * on Linux 6.1 (this project's VM) the first two children were counted
 * and every later one gave 0 (the cause in the kernel was not pinned
 * down; tests/agent/test_counters.c checks runs after the second).
 * Three perf_event_open calls, outside the timed window. */
void ag_counters_reset(ag_counters_t *c);

/* What the runs since the last reset counted, per counter, -1 where the
 * counter is missing or the read failed. */
void ag_counters_read(const ag_counters_t *c, int64_t out[AG_CTR_COUNT]);

#endif
