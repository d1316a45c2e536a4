/* overhead_inproc.c -- ag_spawn_run against a bare posix_spawn+wait4,
 * alternated run by run in one process, so machine drift (the other
 * programs on a shared host) falls on both equally. The bare side stops
 * its clock after wait4 (reaping included); ag_spawn_run stops when the
 * pidfd is readable. A third side is ag_spawn_run with the counters on
 * (ag_counters.h: what the harness does), against the
 * same call without them. Prints min, q25 and median of each and the
 * ratios, then the harness's own CPU a run (CLOCK_THREAD_CPUTIME_ID
 * around the whole call: the spawn, the reap, /proc and, with them, the
 * counters' reset and read) with and without the counters.
 *
 *   overhead-inproc RUNS [PROG]      PROG defaults to /bin/true
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ag_spawn.h"
#include "bench_devnull.h"
#include "pw_clock.h"

extern char **environ;

static double
s_thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int
s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
    long runs = argc > 1 ? atol(argv[1]) : 0;
    const char *prog = argc > 2 ? argv[2] : "/bin/true";
    if (runs < 10 || runs > 1000000) {
        fprintf(stderr, "usage: overhead-inproc RUNS(10..1000000) [PROG]\n");
        return 2;
    }
    const char *av[] = { prog, NULL };
    posix_spawn_file_actions_t fa;
    bench_devnull(&fa);
    double *bare = malloc((size_t)runs * sizeof *bare);
    double *ag = malloc((size_t)runs * sizeof *ag);
    double *ctr = malloc((size_t)runs * sizeof *ctr);
    double *cpu_ag = malloc((size_t)runs * sizeof *cpu_ag);
    double *cpu_ctr = malloc((size_t)runs * sizeof *cpu_ctr);
    ag_counters_t *set = ag_counters_new();
    if (!bare || !ag || !ctr || !cpu_ag || !cpu_ctr || !set)
        return 3;
    char err[512];
    for (long r = 0; r < runs; r++) {
        pid_t pid;
        int status;
        struct rusage ru;
        double t0 = (pw_clock_mono_sec() * 1e6);
        if (posix_spawnp(&pid, prog, &fa, NULL, (char *const *)av,
                         environ) != 0 || wait4(pid, &status, 0, &ru) < 0) {
            perror("bare spawn");
            return 1;
        }
        bare[r] = (pw_clock_mono_sec() * 1e6) - t0;
        ag_spawn_req_t req;
        ag_spawn_result_t res;
        ag_spawn_req_init(&req);
        req.argv = av;
        req.timeout_us = 300e6;
        double c0 = s_thread_cpu_us();
        if (ag_spawn_run(&req, &res, err, sizeof err) != AG_SPAWN_OK) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        cpu_ag[r] = s_thread_cpu_us() - c0;
        ag[r] = res.wall_us;
        req.counters = set;
        c0 = s_thread_cpu_us();
        if (ag_spawn_run(&req, &res, err, sizeof err) != AG_SPAWN_OK) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        cpu_ctr[r] = s_thread_cpu_us() - c0;
        ctr[r] = res.wall_us;
    }
    qsort(bare, (size_t)runs, sizeof *bare, s_cmp);
    qsort(ag, (size_t)runs, sizeof *ag, s_cmp);
    qsort(ctr, (size_t)runs, sizeof *ctr, s_cmp);
    qsort(cpu_ag, (size_t)runs, sizeof *cpu_ag, s_cmp);
    qsort(cpu_ctr, (size_t)runs, sizeof *cpu_ctr, s_cmp);
    printf("%s, %ld runs each, alternated\n", prog, runs);
    printf("bare posix_spawn+wait4  min %.1f  q25 %.1f  median %.1f us\n",
           bare[0], bare[runs / 4], bare[runs / 2]);
    printf("ag_spawn_run            min %.1f  q25 %.1f  median %.1f us\n",
           ag[0], ag[runs / 4], ag[runs / 2]);
    printf("ratio ag/bare           min %.3f  q25 %.3f  median %.3f "
           "(limit 1.03)\n", ag[0] / bare[0], ag[runs / 4] / bare[runs / 4],
           ag[runs / 2] / bare[runs / 2]);
    printf("ag_spawn_run, counters  min %.1f  q25 %.1f  median %.1f us "
           "(open: %s)\n", ctr[0], ctr[runs / 4], ctr[runs / 2],
           *ag_counters_missing(set) ? ag_counters_missing(set) : "all");
    printf("ratio counters/ag       min %.3f  q25 %.3f  median %.3f\n",
           ctr[0] / ag[0], ctr[runs / 4] / ag[runs / 4],
           ctr[runs / 2] / ag[runs / 2]);
    printf("harness CPU a run       q25 %.1f  median %.1f us without "
           "counters, q25 %.1f  median %.1f us with them\n", cpu_ag[runs / 4],
           cpu_ag[runs / 2], cpu_ctr[runs / 4], cpu_ctr[runs / 2]);
    printf("ratio counters/without  q25 %.3f  median %.3f (+%.1f us a run)\n",
           cpu_ctr[runs / 4] / cpu_ag[runs / 4],
           cpu_ctr[runs / 2] / cpu_ag[runs / 2],
           cpu_ctr[runs / 2] - cpu_ag[runs / 2]);
    ag_counters_destroy(&set);
    free(cpu_ag);
    free(cpu_ctr);
    free(bare);
    free(ag);
    free(ctr);
    return 0;
}
