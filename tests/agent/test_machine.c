/* test_machine.c -- the machine lock (ag_machine.h): two agents' handles
 * on one file exclude each other, a wait ends at the holder's release or
 * at a stop, the file is made 0644 whatever the umask; and the machine's
 * load (ag_load.h): /proc/stat's line parsed, a child's CPU counted as
 * the others' until it is reaped and as ours after. */
#include "ag_load.h"
#include "ag_machine.h"
#include "../tap.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void
s_sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

typedef struct {
    ag_machine_t *m;
    long hold_ms;
} s_holder_t;

static void *
s_hold_then_release(void *arg)
{
    s_holder_t *h = arg;
    s_sleep_ms(h->hold_ms);
    ag_machine_release(h->m);
    return NULL;
}

static void
s_lock_tests(const char *dir)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/machine.lock", dir);
    mode_t old = umask(077);
    ag_machine_t *a = ag_machine_new(path, err, sizeof err);
    ag_machine_t *b = ag_machine_new(path, err, sizeof err);
    umask(old);
    struct stat st = { 0 };
    int srd = stat(path, &st);
    ok(a && b && srd == 0 && (st.st_mode & 0777) == 0644,
       "two handles on one lock file, made 0644 under umask 077 (%o)",
       (unsigned)(st.st_mode & 0777));
    if (!a || !b)
        return;
    ok(strcmp(ag_machine_path(a), path) == 0, "the path it names");
    ok(ag_machine_take(a, false, NULL, NULL, err, sizeof err)
       == AG_MACHINE_OK, "the first agent takes it");
    ok(ag_machine_take(a, false, NULL, NULL, err, sizeof err)
       == AG_MACHINE_ERR && strstr(err, "already held"),
       "taking it twice is an error: %s", err);
    ok(ag_machine_take(b, false, NULL, NULL, err, sizeof err)
       == AG_MACHINE_BUSY, "the second, not waiting: busy");
    _Atomic int stop = 1;
    ok(ag_machine_take(b, true, &stop, NULL, err, sizeof err)
       == AG_MACHINE_STOPPED, "waiting with the stop flag set: stopped");
    s_holder_t h = { a, 300 };
    pthread_t t;
    long waited = -1;
    stop = 0;
    pthread_create(&t, NULL, s_hold_then_release, &h);
    int rc = ag_machine_take(b, true, &stop, &waited, err, sizeof err);
    pthread_join(t, NULL);
    ok(rc == AG_MACHINE_OK && waited >= 250 && waited < 5000,
       "waiting: it is ours once the holder releases it (%ld ms)", waited);
    ok(ag_machine_take(a, false, NULL, NULL, err, sizeof err)
       == AG_MACHINE_BUSY, "now the first agent finds it busy");
    ag_machine_destroy(&b);
    ok(b == NULL && ag_machine_take(a, false, NULL, NULL, err, sizeof err)
       == AG_MACHINE_OK, "a destroyed handle releases it");
    ag_machine_destroy(&a);
    ag_machine_destroy(&a);   /* NULL: nothing */

    snprintf(path, sizeof path, "%s/no/such/dir/m.lock", dir);
    a = ag_machine_new(path, err, sizeof err);
    char want[700];
    snprintf(want, sizeof want, "machine lock %s: open: No such file or "
             "directory", path);
    ok(!a && strcmp(err, want) == 0, "a lock in a missing directory: %s",
       err);
    snprintf(path, sizeof path, "%s/env.lock", dir);
    setenv("PARITY_MACHINE_LOCK", path, 1);
    a = ag_machine_new(NULL, err, sizeof err);
    ok(a && strcmp(ag_machine_path(a), path) == 0,
       "no path given: $PARITY_MACHINE_LOCK");
    ag_machine_destroy(&a);
}

/* Spin for ms of CPU time, then exit. */
static void
s_spin(long ms)
{
    struct timespec ts;
    for (;;) {
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        if (ts.tv_sec * 1000 + ts.tv_nsec / 1000000 >= ms)
            _exit(0);
    }
}

static void
s_load_tests(void)
{
    double busy = -1;
    int prc = ag_load_parse_stat("cpu  10 2 30 400 5 6 7 8 9 10\ncpu0 1 "
                                 "2 3\n", &busy);
    ok(prc == AG_LOAD_OK && busy == 10 + 2 + 30 + 6 + 7 + 8,
       "/proc/stat: busy is user nice system irq softirq steal (%.0f)",
       busy);
    const char *bad[] = { "", "cpu0 1 2 3 4 5 6 7 8", "cpu  1 2 3",
                          "cpu  1 2 x 4 5 6 7 8", "intr 1 2 3", NULL };
    int refused = 0;
    for (int i = 0; bad[i]; i++)
        refused += ag_load_parse_stat(bad[i], &busy) == AG_LOAD_ERR;
    ok(refused == 5 && ag_load_parse_stat(NULL, &busy) == AG_LOAD_ERR,
       "a missing or short \"cpu \" line is refused (%d of 5)", refused);

    char err[256];
    ag_load_snap_t s0, s1, s2;
    ok(ag_load_snap(&s0, err, sizeof err) == AG_LOAD_OK, "a snapshot");
    pid_t pid = fork();
    if (pid == 0)
        s_spin(400);
    siginfo_t si;
    waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT);   /* not reaped */
    ag_load_snap(&s1, err, sizeof err);
    double others = ag_load_others(&s0, &s1);
    double wall = (double)(s1.mono_us - s0.mono_us) / 1e6;
    ok(others * wall >= 0.33, "a child not yet reaped is the others': "
       "%.2f cores over %.2f s (it spun 0.4 s)", others, wall);
    waitpid(pid, NULL, 0);
    ag_load_snap(&s2, err, sizeof err);
    double mine = s2.own_s - s1.own_s;
    ok(mine >= 0.35, "reaped, its CPU is ours (%.2f s more)", mine);
    ok(ag_load_others(&s1, &s0) == 0, "a window backwards is 0");
}

int
main(void)
{
    char dir[] = "/tmp/parity-machine-XXXXXX";
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    s_lock_tests(dir);
    s_load_tests();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
    return tap_done();
}
