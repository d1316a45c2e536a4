/* parity-testprog -- a small real program for the harness's tests.
 *
 *   parity-testprog OP [ARGS] [OP [ARGS]]...
 *
 * Operations run left to right:
 *   sleep US          sleep US microseconds
 *   spin US           burn CPU for US microseconds (CLOCK_MONOTONIC)
 *   loop N            N iterations of an empty loop: a fixed amount of
 *                     work, whose time a busy machine stretches (spin's
 *                     does not)
 *   mem MB            allocate MB MiB, touch every page, free it: the
 *                     peak RSS grows by MB
 *   exit CODE         exit with CODE now
 *   signal SIG        kill itself with signal number SIG
 *   print-args        print every remaining argument as "[arg]" lines on
 *                     stdout, then exit 0
 *   append FILE TEXT  append TEXT and a newline to FILE (O_APPEND)
 *   stderr TEXT       write TEXT and a newline to stderr
 *   env NAME          print NAME's value (or "(unset)") on stdout
 *   cpus FILE         append the CPUs it may run on ("0,1") to FILE
 *   hang              wait forever
 *   hang-tree FILE    fork a child that writes its pid to FILE and waits
 *                     forever, then wait forever too
 *   leave-group       move itself into its parent's process group (out
 *                     of the one the harness made for it)
 *   flood BYTES       write BYTES bytes of 'x' (a newline every 64) to
 *                     stderr, ending with "END\n"
 *   flood-out BYTES   the same on stdout
 *
 * Exit status 0 at the end of the operations; 100 on a usage error.
 */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pw_clock.h"

static int
s_usage(const char *why)
{
    fprintf(stderr, "parity-testprog: %s\n", why);
    return 100;
}

static void
s_append(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        return;
    char line[4096];
    int n = snprintf(line, sizeof line, "%s\n", text);
    if (n > 0 && write(fd, line, (size_t)n) < 0)
        perror("write");
    close(fd);
}

int
main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *op = argv[i];
        const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(op, "sleep") == 0 && arg) {
            double us = atof(arg);
            struct timespec ts = { (time_t)(us / 1e6),
                                   (long)((us - (double)(time_t)(us / 1e6) *
                                           1e6) * 1e3) };
            nanosleep(&ts, NULL);
            i++;
        } else if (strcmp(op, "spin") == 0 && arg) {
            double end = (pw_clock_mono_sec() * 1e6) + atof(arg);
            volatile unsigned long x = 0;
            while ((pw_clock_mono_sec() * 1e6) < end)
                x++;
            i++;
        } else if (strcmp(op, "loop") == 0 && arg) {
            /* The counter stays in a register (the empty asm keeps the
             * compiler from removing the loop): a volatile in memory ran
             * in two timing modes 1.7x apart, by where ASLR put the
             * stack. */
            unsigned long n = strtoul(arg, NULL, 10);
            for (unsigned long k = 0; k < n; k++)
                __asm__ volatile("" : "+r"(k));
            i++;
        } else if (strcmp(op, "mem") == 0 && arg) {
            size_t n = (size_t)strtoul(arg, NULL, 10) << 20;
            volatile char *p = malloc(n ? n : 1);
            if (!p)
                return 100;
            for (size_t k = 0; k < n; k += 4096)
                p[k] = (char)k;
            /* The peak stays in ru_maxrss; freed, LeakSanitizer's
             * build has nothing to report at the exit. */
            free((void *)p);
            i++;
        } else if (strcmp(op, "exit") == 0 && arg) {
            return atoi(arg);
        } else if (strcmp(op, "signal") == 0 && arg) {
            signal(atoi(arg), SIG_DFL);
            raise(atoi(arg));
            return 101;
        } else if (strcmp(op, "print-args") == 0) {
            for (int j = i + 1; j < argc; j++)
                printf("[%s]\n", argv[j]);
            return 0;
        } else if (strcmp(op, "append") == 0 && arg && i + 2 < argc) {
            s_append(arg, argv[i + 2]);
            i += 2;
        } else if (strcmp(op, "stderr") == 0 && arg) {
            fprintf(stderr, "%s\n", arg);
            i++;
        } else if (strcmp(op, "env") == 0 && arg) {
            const char *v = getenv(arg);
            printf("%s\n", v ? v : "(unset)");
            i++;
        } else if (strcmp(op, "cpus") == 0 && arg) {
            cpu_set_t set;
            char list[4096] = "";
            size_t len = 0;
            if (sched_getaffinity(0, sizeof set, &set) != 0)
                return s_usage("sched_getaffinity failed");
            for (int c = 0; c < CPU_SETSIZE && len + 8 < sizeof list; c++)
                if (CPU_ISSET(c, &set))
                    len += (size_t)snprintf(list + len, sizeof list - len,
                                            "%s%d", len ? "," : "", c);
            s_append(arg, list);
            i++;
        } else if (strcmp(op, "leave-group") == 0) {
            if (setpgid(0, getpgid(getppid())) != 0)
                return s_usage("setpgid failed");
        } else if ((strcmp(op, "flood") == 0 ||
                    strcmp(op, "flood-out") == 0) && arg) {
            int fd = op[5] ? 1 : 2;
            long long left = atoll(arg);
            char chunk[65536];
            for (size_t k = 0; k < sizeof chunk; k++)
                chunk[k] = k % 64 == 63 ? '\n' : 'x';
            while (left > 0) {
                size_t n = left < (long long)sizeof chunk ? (size_t)left
                                                          : sizeof chunk;
                ssize_t w = write(fd, chunk, n);
                if (w <= 0)
                    return s_usage("write failed");
                left -= w;
            }
            if (write(fd, "END\n", 4) != 4)
                return s_usage("write failed");
            i++;
        } else if (strcmp(op, "hang") == 0) {
            for (;;)
                pause();
        } else if (strcmp(op, "hang-tree") == 0 && arg) {
            pid_t pid = fork();
            if (pid == 0) {
                char buf[32];
                snprintf(buf, sizeof buf, "%d", (int)getpid());
                s_append(arg, buf);
                for (;;)
                    pause();
            }
            for (;;)
                pause();
        } else {
            return s_usage("unknown operation or missing argument");
        }
    }
    return 0;
}
