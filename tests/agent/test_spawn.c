/* test_spawn.c -- ag_spawn against real processes (parity-testprog):
 * timing, rusage, exit and signal, timeout killing the group, cancel,
 * pinning, stdout to a file, errors naming the call.
 *
 *   test-agent-spawn PATH/TO/parity-testprog */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ag_spawn.h"
#include "pw_clock.h"
#include "tap.h"

static const char *s_prog;

static int
s_run(const char *const *argv, double timeout_us, ag_spawn_result_t *res,
      char *err, size_t errlen)
{
    ag_spawn_req_t req;
    ag_spawn_req_init(&req);
    req.argv = argv;
    req.timeout_us = timeout_us;
    return ag_spawn_run(&req, res, err, errlen);
}

static int
s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median wall time of n runs of /bin/true through ag_spawn_run. */
static double
s_median_spawn(int n)
{
    double t[64];
    const char *av[] = { "/bin/true", NULL };
    char err[256];
    for (int i = 0; i < n && i < 64; i++) {
        ag_spawn_result_t res;
        s_run(av, 0, &res, err, sizeof err);
        t[i] = res.wall_us;
    }
    qsort(t, (size_t)n, sizeof *t, s_cmp);
    return t[n / 2];
}

/* The same with fork + exec, the method the harness must not use. */
static double
s_median_fork(int n)
{
    double t[64];
    for (int i = 0; i < n && i < 64; i++) {
        double t0 = (pw_clock_mono_sec() * 1e6);
        pid_t pid = fork();
        if (pid == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int st;
        waitpid(pid, &st, 0);
        t[i] = (pw_clock_mono_sec() * 1e6) - t0;
    }
    qsort(t, (size_t)n, sizeof *t, s_cmp);
    return t[n / 2];
}

/* A harness thread: runs a pinned /bin/sleep 0.5, after saying its tid. */
typedef struct {
    int cpu;
    volatile pid_t tid;
    int rc;
} s_pinned_t;

static void *
s_pinned_run(void *arg)
{
    s_pinned_t *p = arg;
    const char *argv[] = { "/bin/sleep", "0.5", NULL };
    ag_spawn_req_t req;
    ag_spawn_result_t res;
    char err[256];
    ag_spawn_req_init(&req);
    req.argv = argv;
    req.cpus = &p->cpu;
    req.cpu_count = 1;
    __atomic_store_n(&p->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
    p->rc = ag_spawn_run(&req, &res, err, sizeof err);
    return NULL;
}

static void *
s_cancel_later(void *arg)
{
    int fd = *(int *)arg;
    struct timespec ts = { 0, 200 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    uint64_t one = 1;
    ssize_t w = write(fd, &one, sizeof one);
    (void)w;
    return NULL;
}

int
main(int argc, char **argv)
{
    ag_spawn_result_t res;
    char err[512];
    int rc;
    if (argc < 2) {
        printf("Bail out! usage: test-agent-spawn PARITY_TESTPROG\n");
        return 1;
    }
    /* Absolute: the cwd check below would resolve a relative path
     * against the new working directory, as exec does. */
    static char prog[4096];
    if (!realpath(argv[1], prog)) {
        printf("Bail out! realpath(%s): %s\n", argv[1], strerror(errno));
        return 1;
    }
    s_prog = prog;

    /* The program's first start pays page faults and (under ASan) the
     * shadow mappings once: start it unmeasured, so that the two runs
     * compared below both start warm. */
    const char *warm[] = { s_prog, "sleep", "1", NULL };
    (void)s_run(warm, 0, &res, err, sizeof err);
    const char *sleep50[] = { s_prog, "sleep", "200000", NULL };
    ok(s_run(sleep50, 0, &res, err, sizeof err) == AG_SPAWN_OK,
       "sleep 200 ms runs");
    /* The upper bound is loose: a loaded host wakes sleepers late. */
    ok(res.wall_us >= 200000 && res.wall_us < 200000 + 1e6,
       "wall time covers the sleep (%.0f us)", res.wall_us);
    double sleep_cpu = res.user_us + res.sys_us;
    ok(res.exit_status == 0 && res.term_signal == 0 && !res.timed_out,
       "exit 0");
    ok(res.maxrss_kb > 0, "max RSS from wait4 (%lld kB)",
       (long long)res.maxrss_kb);
    ok(res.cpu >= 0 && res.cpu < 1024, "the CPU it ended on (%d)", res.cpu);
    ok(res.start_unix_us > 1600000000000000LL, "start is a unix time in us");
    ok(res.thread_cpu_after_us >= res.thread_cpu_before_us,
       "thread CPU read around the window");
    /* A spinning sleeper would use ~200 ms. The program's own start-up
     * (about 50 ms of CPU in the ASan build) is measured, not guessed:
     * the same program asked for 1 us of sleep. */
    const char *sleep0[] = { s_prog, "sleep", "1", NULL };
    rc = s_run(sleep0, 0, &res, err, sizeof err);
    double start_cpu = res.user_us + res.sys_us;
    ok(rc == AG_SPAWN_OK && sleep_cpu < start_cpu + 20000,
       "sleeping costs little CPU (%.0f us; start-up alone %.0f us)",
       sleep_cpu, start_cpu);

    /* On a loaded VM a spinning child may get much less CPU than wall
     * time (steal), so the bound is loose: a tenth. */
    const char *spin[] = { s_prog, "spin", "100000", NULL };
    rc = s_run(spin, 0, &res, err, sizeof err);
    ok(rc == AG_SPAWN_OK &&
       res.user_us + res.sys_us > 10000 && res.wall_us >= 100000,
       "spin 100 ms: CPU time recorded (%.0f us user, %.0f us sys)",
       res.user_us, res.sys_us);

    const char *ex[] = { s_prog, "exit", "7", NULL };
    ok(s_run(ex, 0, &res, err, sizeof err) == AG_SPAWN_OK &&
       res.exit_status == 7 && res.term_signal == 0, "exit status 7");

    const char *sig[] = { s_prog, "signal", "15", NULL };
    ok(s_run(sig, 0, &res, err, sizeof err) == AG_SPAWN_OK &&
       res.exit_status == -1 && res.term_signal == 15, "killed by SIGTERM");

    /* A hung tree: the timeout must kill the child's own child too. */
    char pidfile[] = "/tmp/parity-spawn-XXXXXX";
    int pf = mkstemp(pidfile);
    close(pf);
    const char *tree[] = { s_prog, "hang-tree", pidfile, NULL };
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ok(s_run(tree, 200000, &res, err, sizeof err) == AG_SPAWN_OK &&
       res.timed_out && res.term_signal == SIGKILL,
       "timeout kills with SIGKILL");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ok(took >= 0.2 && took < 5.0, "after the 0.2 s timeout (%.2f s)", took);
    FILE *f = fopen(pidfile, "r");
    int child = 0;
    if (f) {
        if (fscanf(f, "%d", &child) != 1)
            child = 0;
        fclose(f);
    }
    struct timespec ms = { 0, 50 * 1000 * 1000 };
    nanosleep(&ms, NULL);
    /* The grandchild was reparented; gone or a zombie means killed. */
    char statpath[64], state = 'X';
    snprintf(statpath, sizeof statpath, "/proc/%d/stat", child);
    f = fopen(statpath, "r");
    if (f) {
        char buf[512];
        if (fgets(buf, sizeof buf, f)) {
            char *p = strrchr(buf, ')');
            if (p && p[1])
                state = p[2];
        }
        fclose(f);
    }
    ok(child > 0 && (state == 'X' || state == 'Z'),
       "the command's child died with its process group (state %c)", state);
    unlink(pidfile);

    /* Cancel from another thread. */
    int efd = eventfd(0, EFD_CLOEXEC);
    pthread_t th;
    const char *hang[] = { s_prog, "hang", NULL };
    ag_spawn_req_t req;
    ag_spawn_req_init(&req);
    req.argv = hang;
    req.cancel_fd = efd;
    pthread_create(&th, NULL, s_cancel_later, &efd);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = ag_spawn_run(&req, &res, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(th, NULL);
    took = (double)(t1.tv_sec - t0.tv_sec) +
           (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ok(rc == AG_SPAWN_CANCELLED && took < 5.0,
       "a cancel from another thread stops a hung run (%.2f s)", took);
    close(efd);

    /* stdout to a file. */
    char outfile[] = "/tmp/parity-spawn-out-XXXXXX";
    int ofd = mkstemp(outfile);
    const char *pa[] = { s_prog, "print-args", "a b", "; rm -rf /", NULL };
    ag_spawn_req_init(&req);
    req.argv = pa;
    req.stdout_fd = ofd;
    ok(ag_spawn_run(&req, &res, err, sizeof err) == AG_SPAWN_OK,
       "print-args to a file");
    char buf[256] = "";
    ssize_t n = pread(ofd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    ok_str(buf, "[a b]\n[; rm -rf /]\n", "argv reaches the program as is");
    close(ofd);
    unlink(outfile);

    /* Environment and working directory. */
    char *envp[] = { "PARITY_VAR_X=hello world", NULL };
    char envfile[] = "/tmp/parity-spawn-env-XXXXXX";
    int efile = mkstemp(envfile);
    const char *pe[] = { s_prog, "env", "PARITY_VAR_X", NULL };
    ag_spawn_req_init(&req);
    req.argv = pe;
    req.envp = envp;
    req.cwd = "/";
    req.stdout_fd = efile;
    ok(ag_spawn_run(&req, &res, err, sizeof err) == AG_SPAWN_OK,
       "envp and cwd");
    n = pread(efile, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    ok_str(buf, "hello world\n", "the environment given is the child's");
    close(efile);
    unlink(envfile);

    /* Pinning. */
    cpu_set_t mine;
    sched_getaffinity(0, sizeof mine, &mine);
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mine))
            last = c;
    int cpus[1] = { last };
    char cpufile[] = "/tmp/parity-spawn-cpus-XXXXXX";
    close(mkstemp(cpufile));
    const char *sp[] = { s_prog, "cpus", cpufile, NULL };
    ag_spawn_req_init(&req);
    req.argv = sp;
    req.cpus = cpus;
    req.cpu_count = 1;
    rc = ag_spawn_run(&req, &res, err, sizeof err);
    f = fopen(cpufile, "r");
    char allowed[64] = "";
    if (f) {
        if (!fgets(allowed, sizeof allowed, f))
            allowed[0] = '\0';
        fclose(f);
    }
    unlink(cpufile);
    char want_cpus[32];
    snprintf(want_cpus, sizeof want_cpus, "%d\n", last);
    ok(rc == AG_SPAWN_OK && res.cpu == last, "pinned to CPU %d, ended on %d",
       last, res.cpu);
    ok_str(allowed, want_cpus, "the child itself may run only there");
    cpu_set_t after;
    sched_getaffinity(0, sizeof after, &after);
    ok(CPU_EQUAL(&mine, &after), "the caller's affinity is restored");
    /* The child inherits the pinning at posix_spawn, so the
     * harness thread gives the CPU back right then, not after the timed
     * window in which it drains stderr and polls. */
    s_pinned_t pin = { .cpu = last };
    pthread_t pth;
    pthread_create(&pth, NULL, s_pinned_run, &pin);
    usleep(250000);
    cpu_set_t during;
    CPU_ZERO(&during);
    pid_t tid = __atomic_load_n(&pin.tid, __ATOMIC_SEQ_CST);
    int got = tid > 0 ? sched_getaffinity(tid, sizeof during, &during) : -1;
    pthread_join(pth, NULL);
    ok(pin.rc == AG_SPAWN_OK && got == 0 && CPU_EQUAL(&mine, &during),
       "while a pinned child runs, the harness thread may run on all %d "
       "CPUs again (%d)", CPU_COUNT(&mine), CPU_COUNT(&during));
    int bad[1] = { 5000 };
    req.cpus = bad;
    ok(ag_spawn_run(&req, &res, err, sizeof err) == AG_SPAWN_ERR,
       "a CPU out of range is refused");
    ok_str(err, "cpu 5000: out of range 0..1023", "and named");

    /* Errors name the call. */
    const char *none[] = { "/nonexistent/prog", NULL };
    ok(s_run(none, 0, &res, err, sizeof err) == AG_SPAWN_ERR, "no program");
    ok_str(err, "posix_spawnp(/nonexistent/prog): No such file or directory",
           "posix_spawnp error message");
    ag_spawn_req_init(&req);
    req.argv = sleep50;
    req.cwd = "/nonexistent-dir";
    ok(ag_spawn_run(&req, &res, err, sizeof err) == AG_SPAWN_ERR,
       "a missing cwd fails the spawn");
    char want[600];
    snprintf(want, sizeof want, "posix_spawnp(%s): chdir(/nonexistent-dir): "
             "No such file or directory", s_prog);
    ok_str(err, want, "and names the directory");

    /* Clearer errors where errno alone is ambiguous. */
    const char *dir[] = { "/tmp", NULL };
    ok(s_run(dir, 0, &res, err, sizeof err) == AG_SPAWN_ERR, "a directory");
    ok_str(err, "posix_spawnp(/tmp): Permission denied (/tmp is a "
           "directory)", "is named a directory");
    char plain[] = "/tmp/parity-spawn-plain-XXXXXX";
    close(mkstemp(plain));
    const char *nox[] = { plain, NULL };
    ok(s_run(nox, 0, &res, err, sizeof err) == AG_SPAWN_ERR,
       "a file without x");
    snprintf(want, sizeof want, "posix_spawnp(%s): Permission denied (%s is "
             "not executable)", plain, plain);
    ok_str(err, want, "is named not executable");
    FILE *sf = fopen(plain, "w");
    if (sf) {
        fputs("echo no shebang\n", sf);
        fclose(sf);
    }
    chmod(plain, 0755);
    ok(s_run(nox, 0, &res, err, sizeof err) == AG_SPAWN_ERR,
       "a script without #!");
    snprintf(want, sizeof want, "posix_spawnp(%s): Exec format error "
             "(neither a program for this machine nor a script starting "
             "with #!)", plain);
    ok_str(err, want, "says what exec wants");
    ag_spawn_req_init(&req);
    req.argv = sleep50;
    req.cwd = plain;
    ok(ag_spawn_run(&req, &res, err, sizeof err) == AG_SPAWN_ERR,
       "a cwd that is a file fails the spawn");
    snprintf(want, sizeof want, "posix_spawnp(%s): chdir(%s): Not a "
             "directory", s_prog, plain);
    ok_str(err, want, "and says it is not a directory");
    unlink(plain);

    /* PATH is searched once, before: the spawn gets the path. */
    char found[4096];
    ok(ag_spawn_resolve("sh", found, sizeof found) == 0 && found[0] == '/' &&
       access(found, X_OK) == 0, "sh resolves in PATH (%s)", found);
    ok(ag_spawn_resolve("./x", found, sizeof found) != 0 &&
       ag_spawn_resolve("parity-no-such-program", found, sizeof found) != 0,
       "a path with '/' or a missing program is left to posix_spawnp");
    char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    setenv("PATH", "bin:/usr/bin:/bin", 1);
    ok(ag_spawn_resolve("sh", found, sizeof found) != 0,
       "a relative PATH entry first is left to posix_spawnp");
    setenv("PATH", "/tmp:/usr/bin:/bin", 1);   /* /tmp/sh is no file */
    ok(ag_spawn_resolve("sh", found, sizeof found) == 0 &&
       strncmp(found, "/tmp/", 5) != 0, "directories and misses skipped");
    if (old_path) {
        setenv("PATH", old_path, 1);
        free(old_path);
    }
    ag_spawn_req_init(&req);
    req.argv = ex;
    req.path = s_prog;
    ok(ag_spawn_run(&req, &res, err, sizeof err) == AG_SPAWN_OK &&
       res.exit_status == 7, "req.path is what runs");

    /* A child that leaves its process group is still killed at the
     * timeout (through its pidfd); before, wait4 waited for ever. */
    const char *leave[] = { s_prog, "leave-group", "hang", NULL };
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ok(s_run(leave, 200000, &res, err, sizeof err) == AG_SPAWN_OK &&
       res.timed_out && res.term_signal == SIGKILL,
       "a child out of its group is killed at the timeout");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    took = (double)(t1.tv_sec - t0.tv_sec) +
           (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ok(took < 5.0, "and the run ends (%.2f s)", took);

    /* Captures are bounded: 50 MB of stderr leaves the last 100 bytes. */
    char tailbuf[100], headbuf[100];
    ag_capture_t cap;
    ok(ag_capture_open(&cap, tailbuf, sizeof tailbuf, false, err,
                       sizeof err) == 0, "a tail capture opens");
    const char *flood[] = { s_prog, "flood", "50000000", "exit", "1", NULL };
    ag_spawn_req_init(&req);
    req.argv = flood;
    req.stderr_capture = &cap;
    ok(ag_spawn_run(&req, &res, err, sizeof err) == AG_SPAWN_OK &&
       res.exit_status == 1, "50 MB of stderr");
    ok(cap.total == 50000004 && cap.len == sizeof tailbuf,
       "all read (%llu), 100 kept (%zu)", (unsigned long long)cap.total,
       cap.len);
    ok(memcmp(tailbuf + 96, "END\n", 4) == 0 && tailbuf[95] == '\n' &&
       tailbuf[94] == 'x', "the kept bytes are the last ones");
    const char *small[] = { s_prog, "stderr", "short", NULL };
    req.argv = small;
    ok(ag_spawn_run(&req, &res, err, sizeof err) == AG_SPAWN_OK &&
       cap.len == 6 && memcmp(tailbuf, "short\n", 6) == 0,
       "the next run starts empty");
    ag_capture_close(&cap);
    ag_capture_close(&cap);
    ok(ag_capture_open(&cap, headbuf, sizeof headbuf, true, err,
                       sizeof err) == 0, "a head capture opens");
    const char *fl_out[] = { s_prog, "flood-out", "5000000", NULL };
    ag_spawn_req_init(&req);
    req.argv = fl_out;
    req.stdout_capture = req.stderr_capture = &cap;
    ok(ag_spawn_run(&req, &res, err, sizeof err) == AG_SPAWN_OK &&
       cap.len == sizeof headbuf && cap.total == 5000004 &&
       headbuf[0] == 'x' && headbuf[63] == '\n',
       "stdout and stderr: the first 100 bytes kept of 5 MB");
    ag_capture_close(&cap);

    /* posix_spawn, not fork: a harness holding 512 MiB of touched memory
     * must start a run as fast as before. fork has to copy the page
     * tables of that memory; it shows the check can fail. */
    /* Each side is the lower of two medians of 31 runs: the load of a
     * shared host moves one median by tens of percent. */
    double spawn_before = s_median_spawn(31);
    double fork_before = s_median_fork(11);
    double again = s_median_spawn(31);
    if (again < spawn_before)
        spawn_before = again;
    /* Small pages (no THP, no large folios), so fork has 131072 page
     * table entries to copy. */
    size_t big_len = (size_t)1 << 29;
    char *big = mmap(NULL, big_len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (big == MAP_FAILED)
        big = NULL;
    if (big) {
        madvise(big, big_len, MADV_NOHUGEPAGE);
        for (size_t off = 0; off < big_len; off += 4096)
            big[off] = 1;
        double spawn_after = s_median_spawn(31);
        double fork_after = s_median_fork(11);
        again = s_median_spawn(31);
        if (again < spawn_after)
            spawn_after = again;
        double rs = spawn_after / spawn_before, rf = fork_after / fork_before;
        /* On a quiet host rs is 1.0 +- 0.1; a loaded one has moved it to
         * 3 while fork's went to 20..100, so the bound is relative. The
         * 2-core VM has given rf 5.0 (rs 0.98) quiet and 1.8 to 2.7 (rs
         * 0.46 to 0.97) with a CI run and three builds beside it, where
         * fork's own "before" is slowed too: fork must slow twice as much
         * as posix_spawn. A harness that forked would give rf = rs. */
        tap_diag("512 MiB in the harness: spawn median %.0f -> %.0f us "
                 "(x%.2f), fork+exec %.0f -> %.0f us (x%.2f)", spawn_before,
                 spawn_after, rs, fork_before, fork_after, rf);
        ok(rf > 2 * rs && rf > 1.5, "fork+exec slows with the harness's memory "
           "(x%.1f), posix_spawn does not (x%.2f)", rf, rs);
        munmap(big, big_len);
    } else {
        ok(1, "# SKIP no 512 MiB to allocate");
    }

    /* CPU lists. */
    int list[16];
    size_t nl;
    ok(ag_cpulist_parse("0-2,5", list, 16, &nl, 64, err, sizeof err) == 0 &&
       nl == 4 && list[3] == 5, "cpu list 0-2,5");
    ok(ag_cpulist_parse("0-20", list, 16, &nl, 64, err, sizeof err) != 0,
       "more CPUs than room");
    ok_str(err, "cpu list \"0-20\": more than 16 CPUs", "room message");
    return tap_done();
}
