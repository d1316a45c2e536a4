/* ag_spawn.h -- run one command and time it: posix_spawn, own process
 * group, CLOCK_MONOTONIC from just before the spawn to the exit, wait4
 * rusage, a timeout and a cancel descriptor that kill the whole group.
 *
 * Why posix_spawn: glibc implements it with clone(CLONE_VM|CLONE_VFORK),
 * so the cost of starting a run does not grow with the harness's memory
 * as fork's page-table copy would.
 *
 * The timed window ends when the child's pidfd becomes readable (the
 * child has exited and, not yet reaped, is a zombie); reading the CPU it
 * ended on (/proc/PID/stat field 39 of the zombie), killing what is left
 * of its process group and reaping it with wait4 all happen after the
 * window. The caller must not set SIGCHLD to SIG_IGN (children would be
 * reaped by the kernel and wait4 would fail).
 *
 * CPU pinning: the calling thread's affinity is set to the requested CPUs
 * just before the start timestamp (the child inherits it through
 * posix_spawn) and restored after the end timestamp, so no one else's
 * threads are affected and nothing is added to the timed window.
 *
 * Nothing here prints or exits; nothing is allocated that outlives a call.
 */
#ifndef AG_SPAWN_H
#define AG_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AG_SPAWN_OK         0
#define AG_SPAWN_ERR       -1   /* could not start; err says which call */
#define AG_SPAWN_CANCELLED  1   /* cancel_fd became readable; group killed */

typedef struct {
    const char *const *argv;   /* NULL-terminated; argv[0] looked up in
                                  PATH like execvp. Borrowed. */
    char *const *envp;         /* NULL: the caller's environment */
    const char *cwd;           /* NULL: the caller's working directory */
    int stdin_fd;              /* -1: /dev/null */
    int stdout_fd;             /* -1: /dev/null */
    int stderr_fd;             /* -1: /dev/null */
    const int *cpus;           /* CPUs the child may run on; NULL: any */
    size_t cpu_count;
    double timeout_us;         /* <= 0: none */
    int cancel_fd;             /* -1: none; readable means stop now */
} ag_spawn_req_t;

typedef struct {
    double wall_us;
    double user_us;
    double sys_us;
    int64_t maxrss_kb;
    int exit_status;           /* -1 when killed by a signal */
    int term_signal;           /* 0 when it exited */
    int cpu;                   /* CPU it ended on; -1 unknown */
    int64_t start_unix_us;
    bool timed_out;            /* killed (SIGKILL) at timeout_us */
    /* The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) just before
     * and just after the timed window: the harness sums what it spends
     * between one run's "after" and the next run's "before". */
    double thread_cpu_before_us;
    double thread_cpu_after_us;
} ag_spawn_result_t;

/* Fill req with the defaults: fds -1, no CPUs, no timeout, no cancel. */
void ag_spawn_req_init(ag_spawn_req_t *req);

/* Run req->argv to its end (or timeout, or cancel) and fill *res.
 * Returns AG_SPAWN_OK (res filled, whatever the exit status),
 * AG_SPAWN_CANCELLED (child killed and reaped, res partly filled) or
 * AG_SPAWN_ERR with err naming the failing call and argument, e.g.
 * "posix_spawnp(nosuch): No such file or directory". */
int ag_spawn_run(const ag_spawn_req_t *req, ag_spawn_result_t *res,
                 char *err, size_t errlen);

/* Parse a CPU list ("0-3,6") into cpus[0..cap-1]; *n set to the count.
 * CPU numbers must be below max_cpu. */
int ag_cpulist_parse(const char *s, int *cpus, size_t cap, size_t *n,
                     int max_cpu, char *err, size_t errlen);

#endif
