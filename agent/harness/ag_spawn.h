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
 * Inside the window there is only what a bare posix_spawn+wait4 loop
 * does plus pidfd_open and poll: the program is looked up in PATH before
 * (ag_spawn_resolve, req.path), every descriptor is opened before.
 *
 * Killing: at a timeout or cancel the child itself (through its pidfd,
 * so also when it moved to another process group) and its whole process
 * group get SIGKILL; after a normal exit the group does. A descendant
 * that made its own session or group (setsid, setpgid) is out of reach.
 *
 * Output capture (ag_capture_t): a pipe the parent drains while it
 * waits, keeping at most cap bytes (the last ones, for an error's stderr
 * tail, or the first ones, for `versions`), whatever the child writes.
 *
 * Nothing here prints or exits; nothing is allocated that outlives a call.
 */
#ifndef AG_SPAWN_H
#define AG_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_counters.h"

#define AG_SPAWN_OK         0
#define AG_SPAWN_ERR       -1   /* could not start; err says which call */
#define AG_SPAWN_CANCELLED  1   /* cancel_fd became readable; group killed */

/* A bounded capture of a child's output. Open once, use for many runs;
 * each ag_spawn_run() that names it starts it empty. */
typedef struct {
    int read_fd;               /* non-blocking read end */
    int write_fd;              /* the child's stdout/stderr */
    bool keep_head;            /* true: the first cap bytes; false: the
                                  last cap bytes (a tail) */
    char *buf;                 /* cap bytes, the caller's */
    size_t cap;
    size_t len;                /* bytes in buf after a run, in order */
    uint64_t total;            /* bytes the run wrote in all */
} ag_capture_t;

/* Make c's pipe; buf (cap bytes, cap > 0) stays the caller's. 0, or -1
 * with err naming the call. */
int ag_capture_open(ag_capture_t *c, char *buf, size_t cap, bool keep_head,
                    char *err, size_t errlen);

/* Close c's pipe. Accepts a capture that failed to open or was closed. */
void ag_capture_close(ag_capture_t *c);

typedef struct {
    const char *const *argv;   /* NULL-terminated; argv[0] looked up in
                                  PATH like execvp, unless path is set.
                                  Borrowed. */
    const char *path;          /* the program, from ag_spawn_resolve();
                                  NULL: posix_spawnp looks argv[0] up in
                                  PATH in the child (inside the window) */
    char *const *envp;         /* NULL: the caller's environment */
    const char *cwd;           /* NULL: the caller's working directory */
    int stdin_fd;              /* -1: /dev/null */
    int stdout_fd;             /* -1: /dev/null */
    int stderr_fd;             /* -1: /dev/null */
    ag_capture_t *stdout_capture; /* not NULL: stdout into it (over
                                     stdout_fd) */
    ag_capture_t *stderr_capture; /* not NULL: stderr into it (may be
                                     the same capture as stdout's) */
    const int *cpus;           /* CPUs the child may run on; NULL: any */
    size_t cpu_count;
    double timeout_us;         /* <= 0: none */
    int cancel_fd;             /* -1: none; readable means stop now */
    /* Counters made on this thread (ag_counters.h): the run's counts go
     * to res.counters. NULL: none (all -1). Borrowed. */
    ag_counters_t *counters;
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
    /* Instructions, cycles and task-clock ns of the command and its
     * children (AG_CTR_*), -1 where not counted. */
    int64_t counters[AG_CTR_COUNT];
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

/* Look prog up in PATH (of the calling process) as execvp would, once,
 * so the spawn need not. Returns 0 with the absolute path in out, or -1
 * when prog has a '/', is not found, or PATH has a relative entry before
 * it: then leave req.path NULL and posix_spawnp decides. */
int ag_spawn_resolve(const char *prog, char *out, size_t outlen);

/* Parse a CPU list ("0-3,6") into cpus[0..cap-1]; *n set to the count.
 * CPU numbers must be below max_cpu. */
int ag_cpulist_parse(const char *s, int *cpus, size_t cap, size_t *n,
                     int max_cpu, char *err, size_t errlen);

#endif
