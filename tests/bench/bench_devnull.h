/* bench_devnull.h -- what the bare spawn loops of the overhead
 * benchmarks (overhead_bare.c, overhead_inproc.c) give the program they
 * start: stdin, stdout and stderr on /dev/null, as ag_spawn does.
 * Header-only; the descriptor stays open for the benchmark's life.
 */
#ifndef BENCH_DEVNULL_H
#define BENCH_DEVNULL_H

#include <fcntl.h>
#include <spawn.h>

static inline void
bench_devnull(posix_spawn_file_actions_t *fa)
{
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    posix_spawn_file_actions_init(fa);
    for (int i = 0; i < 3; i++)
        posix_spawn_file_actions_adddup2(fa, devnull, i);
}

#endif
