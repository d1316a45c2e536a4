/* ag_load.h -- how busy the rest of the machine is: the CPU time that
 * everything but this process and its children used over a window, in
 * cores (0.5: half of one CPU, on average over the window).
 *
 * A snapshot reads the machine's busy time from /proc/stat (user, nice,
 * system, irq, softirq, steal: a hypervisor's steal is noise here too)
 * and this process's own CPU time and its reaped children's
 * (getrusage). Between two snapshots the others' share is the machine's
 * busy time less ours, over the wall time between them. /proc/stat counts
 * in clock ticks (10 ms), so a window shorter than AG_LOAD_MIN_WINDOW_MS
 * says little; the caller picks its windows.
 *
 * The daemon calibrates only when the others use less than
 * AG_LOAD_QUIET_CORES (docs/agent.md "Calibration").
 *
 * Library code: nothing here prints or exits.
 */
#ifndef AG_LOAD_H
#define AG_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AG_LOAD_OK    0
#define AG_LOAD_ERR  -1

/* The shortest window worth reading: 25 ticks of one CPU. */
#define AG_LOAD_MIN_WINDOW_MS  250
/* Quiet: the rest of the machine used less than a tenth of one CPU.
 * Idle, this 2-core VM reads 0.00 to 0.06 with the collector and its
 * PostgreSQL up; batches taken at 0.13 to 0.16 had runs 1.5 to 3 times
 * the quiet ones' (docs/performance.md "The daemon's floor"). */
#define AG_LOAD_QUIET_CORES    0.1

typedef struct {
    int64_t mono_us;         /* when it was taken (CLOCK_MONOTONIC) */
    double machine_busy_s;   /* every CPU's busy time since boot */
    double own_s;            /* this process's and its reaped children's */
} ag_load_snap_t;

/* The busy time of /proc/stat's first ("cpu ") line, in clock ticks, from
 * TEXT (the file's contents). AG_LOAD_ERR when the line is missing or
 * malformed. Pure; exposed for the tests. */
int ag_load_parse_stat(const char *text, double *busy_ticks);

/* Take a snapshot now. AG_LOAD_ERR with err (the failing call) when
 * /proc/stat cannot be read. */
int ag_load_snap(ag_load_snap_t *s, char *err, size_t errlen);

/* The others' CPU between two snapshots, in cores; never below 0 (our
 * own time is counted more finely than the machine's). 0 when b is not
 * later than a. */
double ag_load_others(const ag_load_snap_t *a, const ag_load_snap_t *b);

#endif
