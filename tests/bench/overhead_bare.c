/* overhead_bare.c -- the named peer of tests/bench/overhead_spawn.py: the
 * least a harness can do to time a command. posix_spawn with stdio on
 * /dev/null, wait4, CLOCK_MONOTONIC around the two; no pidfd, no process
 * group, no rusage bookkeeping.
 *
 *   overhead-bare RUNS PROG [ARGS...]   prints one wall time (us) a line
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_devnull.h"
#include "pw_clock.h"

extern char **environ;

int
main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: overhead-bare RUNS PROG [ARGS...]\n");
        return 2;
    }
    long runs = atol(argv[1]);
    if (runs < 1 || runs > 1000000) {
        fprintf(stderr, "overhead-bare: RUNS must be 1..1000000\n");
        return 2;
    }
    posix_spawn_file_actions_t fa;
    bench_devnull(&fa);
    double *wall = malloc((size_t)runs * sizeof *wall);
    if (!wall)
        return 3;
    for (long r = 0; r < runs; r++) {
        pid_t pid;
        int status;
        struct rusage ru;
        double t0 = (pw_clock_mono_sec() * 1e6);
        if (posix_spawnp(&pid, argv[2], &fa, NULL, argv + 2, environ) != 0) {
            perror("posix_spawnp");
            return 1;
        }
        if (wait4(pid, &status, 0, &ru) < 0) {
            perror("wait4");
            return 1;
        }
        wall[r] = (pw_clock_mono_sec() * 1e6) - t0;
    }
    for (long r = 0; r < runs; r++)
        printf("%.3f\n", wall[r]);
    /* Its own CPU, for comparison with the harness's harness_cpu. */
    struct rusage self;
    getrusage(RUSAGE_SELF, &self);
    fprintf(stderr, "overhead-bare: own cpu user %ld us sys %ld us\n",
            (long)(self.ru_utime.tv_sec * 1000000 + self.ru_utime.tv_usec),
            (long)(self.ru_stime.tv_sec * 1000000 + self.ru_stime.tv_usec));
    free(wall);
    return 0;
}
