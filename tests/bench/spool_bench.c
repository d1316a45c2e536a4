/* spool_bench.c -- how fast the agent's spool takes durable messages,
 * against a named peer measured in the same run.
 *
 *   spool-bench [DIR] [N]
 *
 * spool:  ag_spool_take_seq + ag_spool_append (tmp file, fsync, rename,
 *         fsync dir) + ag_spool_remove, as the daemon does per message.
 * peer "bare-fsync": open a new file, write the same bytes, fsync, close,
 *         unlink: the least a crash-safe one-file-per-message outbox costs.
 * Sizes: a full SampleBatch (512 samples, ~40 KiB packed) and a small
 * message (RunEnd-sized, 64 B). Prints messages/s, samples/s for the
 * batch size, and the ratio spool / peer. */
#include "ag_spool.h"
#include "pw_clock.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double
s_bench_spool(const char *dir, const void *buf, size_t len, int n)
{
    char err[512];
    ag_spool_t *sp = NULL;
    if (ag_spool_open(dir, NULL, &sp, err, sizeof err) != AG_SPOOL_OK) {
        fprintf(stderr, "spool-bench: %s\n", err);
        exit(1);
    }
    double t0 = pw_clock_mono_sec();
    for (int i = 0; i < n; i++) {
        uint64_t seq = ag_spool_take_seq(sp, err, sizeof err);
        if (ag_spool_append(sp, seq, buf, len, false, err, sizeof err)
            != AG_SPOOL_OK || ag_spool_remove(sp, seq, err, sizeof err)
            != AG_SPOOL_OK) {
            fprintf(stderr, "spool-bench: %s\n", err);
            exit(1);
        }
    }
    double t = pw_clock_mono_sec() - t0;
    ag_spool_destroy(&sp);
    return n / t;
}

static double
s_bench_bare(const char *dir, const void *buf, size_t len, int n)
{
    char path[4096];
    double t0 = pw_clock_mono_sec();
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/bare-%d", dir, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || write(fd, buf, len) != (ssize_t)len || fsync(fd)) {
            perror("spool-bench: bare");
            exit(1);
        }
        close(fd);
        unlink(path);
    }
    return n / (pw_clock_mono_sec() - t0);
}

int
main(int argc, char **argv)
{
    char tmpl[] = "/tmp/parity-spool-bench-XXXXXX";
    const char *dir = argc > 1 ? argv[1] : mkdtemp(tmpl);
    int n = argc > 2 ? atoi(argv[2]) : 500;
    static const struct { const char *name; size_t len; int samples; }
    sizes[] = { { "batch-512", 40u << 10, 512 }, { "small-64B", 64, 0 } };
    if (!dir || n <= 0) {
        fprintf(stderr, "usage: spool-bench [DIR] [N]\n");
        return 2;
    }
    printf("spool-bench: %d messages each, in %s\n", n, dir);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        char *buf = malloc(sizes[k].len);
        memset(buf, 0x5a, sizes[k].len);
        double bare = s_bench_bare(dir, buf, sizes[k].len, n);
        double spool = s_bench_spool(dir, buf, sizes[k].len, n);
        printf("%-10s spool %8.0f msg/s", sizes[k].name, spool);
        if (sizes[k].samples)
            printf(" (%9.0f samples/s)", spool * sizes[k].samples);
        printf("   peer bare-fsync %8.0f msg/s   ratio %.2f\n", bare,
               spool / bare);
        free(buf);
    }
    if (argc <= 1) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "spool-bench: could not remove %s\n", dir);
    }
    return 0;
}
