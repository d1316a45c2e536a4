/* ag_harness.c -- see ag_harness.h. */
#include "ag_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ag_calstore.h"
#include "ag_env.h"
#include "ag_spawn.h"
#include "config.h"
#include "pw_clock.h"
#include "pw_grow.h"
#include "vd_name.h"

extern char **environ;

struct ag_harness {
    int cancel_fd;               /* eventfd: readable once cancelled */
    int force_fd;                /* eventfd: readable once cancelled
                                    twice; it also stops cleanup */
    atomic_int cancels;          /* ag_harness_cancel() calls */
    int devnull;                 /* /dev/null, opened once: every run's
                                    stdin and discarded stdout */
    atomic_int cancelled;        /* 0, or 1 + the ag_run_status_t asked */
};

/* What one ag_harness_run() call keeps across its benchmarks: every
 * calibration run so far (the stopping rule's floor). */
typedef struct {
    const ag_harness_opts_t *opts;
    double *cal;
    size_t ncal, cal_cap;
    /* Counters opened on the session's thread (the one that spawns),
     * NULL on out of memory: runs then keep wall time alone. */
    ag_counters_t *ctr;
} s_session_t;

/* Everything one benchmark run needs, built before its first spawn. */
typedef struct {
    ag_harness_t *h;
    s_session_t *ss;
    const ag_suite_t *suite;
    const ag_bench_t *b;
    const ag_callbacks_t *cb;
    const char *noop;
    size_t arm_count;
    const char **argv[AG_SUITE_MAX_ARMS];   /* per arm, NULL-terminated */
    const char *shell_argv[AG_SUITE_MAX_ARMS][4];
    char **envp[AG_SUITE_MAX_ARMS];         /* environ + the arm's env */
    char *path[AG_SUITE_MAX_ARMS];  /* argv[0] found in PATH once, so no
                                       run searches it in its window;
                                       NULL: posix_spawnp searches */
    char *versions[AG_SUITE_MAX_ARMS];
    int out_fd;                  /* -1: /dev/null */
    int err_fd;                  /* the user's stderr file, or -1 */
    /* The last AG_HARNESS_STDERR_TAIL bytes of a discarded stderr and of
     * every hook's, however much is written: a pipe drained while the
     * run goes on, not a file that grows. */
    ag_capture_t cap;
    bool cap_ok;
    char cap_buf[AG_HARNESS_STDERR_TAIL];
    ag_run_status_t status;
    char reason[1024];
    char tail[AG_HARNESS_STDERR_TAIL + 1];
    bool have_tail;
    uint64_t samples;
    bool stopped;                /* cancelled or refused by a callback */
    double last_cpu_after_us;    /* thread CPU at the last window's end */
    double between_cpu_us;       /* summed between windows */
    double windows_wall_us;
    /* runs: auto only: each arm's measured wall times so far, room for
     * the cap (the stopping rule compares them at each look). */
    double *meas[AG_SUITE_MAX_ARMS];
    size_t nmeas[AG_SUITE_MAX_ARMS];
} s_run_t;

/* Account one timed window: the CPU since the previous one ended. */
static void
s_account(s_run_t *r, const ag_spawn_result_t *res)
{
    if (r->last_cpu_after_us > 0)
        r->between_cpu_us += res->thread_cpu_before_us -
                             r->last_cpu_after_us;
    r->last_cpu_after_us = res->thread_cpu_after_us;
    r->windows_wall_us += res->wall_us;
}

ag_harness_t *
ag_harness_new(char *err, size_t errlen)
{
    ag_harness_t *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "ag_harness_new: out of memory");
        return NULL;
    }
    h->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (h->cancel_fd < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        free(h);
        return NULL;
    }
    h->force_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    h->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (h->force_fd < 0 || h->devnull < 0) {
        snprintf(err, errlen, "%s: %s", h->force_fd < 0 ? "eventfd"
                 : "open(/dev/null)", strerror(errno));
        close(h->cancel_fd);
        if (h->force_fd >= 0)
            close(h->force_fd);
        free(h);
        return NULL;
    }
    atomic_init(&h->cancelled, 0);
    atomic_init(&h->cancels, 0);
    return h;
}

void
ag_harness_destroy(ag_harness_t **hp)
{
    if (!hp || !*hp)
        return;
    close((*hp)->cancel_fd);
    close((*hp)->force_fd);
    close((*hp)->devnull);
    free(*hp);
    *hp = NULL;
}

void
ag_harness_cancel(ag_harness_t *h, ag_run_status_t status)
{
    /* Only an atomic store and write(2): both async-signal-safe. */
    int want = status == AG_RUN_CANCELLED ? 1 + AG_RUN_CANCELLED
                                          : 1 + AG_RUN_INCOMPLETE;
    int expected = 0;
    atomic_compare_exchange_strong(&h->cancelled, &expected, want);
    uint64_t one = 1;
    ssize_t r = write(h->cancel_fd, &one, sizeof one);
    /* A second cancel (Ctrl-C again) also stops a cleanup that hangs. */
    if (atomic_fetch_add(&h->cancels, 1) >= 1)
        r = write(h->force_fd, &one, sizeof one);
    (void)r;
}

void
ag_harness_reset(ag_harness_t *h)
{
    uint64_t v;
    while (read(h->cancel_fd, &v, sizeof v) > 0)
        ;
    while (read(h->force_fd, &v, sizeof v) > 0)
        ;
    atomic_store(&h->cancelled, 0);
    atomic_store(&h->cancels, 0);
}

static const char *const s_status_names[AG_RUN_STATUS_COUNT] = {
    "complete", "failed", "incomplete", "cancelled" };

VD_NAME_FN(ag_run_status_name, ag_run_status_t, s_status_names,
           AG_RUN_STATUS_COUNT)

static char s_noop[4096 + 64];
static pthread_once_t s_noop_once = PTHREAD_ONCE_INIT;

static bool
s_noop_at(const char *path)
{
    if (strlen(path) >= sizeof s_noop || access(path, X_OK) != 0)
        return false;
    snprintf(s_noop, sizeof s_noop, "%s", path);
    return true;
}

/* A program running from a build tree finds that tree's parity-noop by
 * where it is (beside it, or agent/ seen from collector/client/ or
 * a folder of tests/), so tests never calibrate with an installed copy of another
 * version; an installed program takes PARITY_LIBEXEC_DIR's
 * (/usr/libexec/parity). No build directory is compiled in: an installed
 * binary never looks into the tree it was made in. */
static void
s_find_noop(void)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *dir = dirname(exe);
        /* Beside the program (a copied or relocated build); from
         * collector/client/ or tests/ in a moved build tree. */
        const char *cands[] = { "/parity-noop", "/../../agent/parity-noop",
                                "/../agent/parity-noop" };
        for (size_t i = 0; i < 3; i++) {
            char path[4096 + 64];
            snprintf(path, sizeof path, "%s%s", dir, cands[i]);
            if (s_noop_at(path))
                return;
        }
    }
    if (s_noop_at(PARITY_LIBEXEC_DIR "/parity-noop"))
        return;
    snprintf(s_noop, sizeof s_noop, "/bin/true");
}

const char *
ag_harness_default_noop(void)
{
    pthread_once(&s_noop_once, s_find_noop);
    return s_noop;
}

static bool
s_cancelled(ag_harness_t *h)
{
    return atomic_load(&h->cancelled) != 0;
}

static ag_run_status_t
s_cancel_status(ag_harness_t *h)
{
    int c = atomic_load(&h->cancelled);
    return c ? (ag_run_status_t)(c - 1) : AG_RUN_INCOMPLETE;
}

/* environ with the arm's KEY=VALUE entries replacing or adding. The
 * strings are borrowed from environ and the arm. */
static char **
s_envp(char **arm_env, size_t arm_count)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **e = calloc(n + arm_count + 1, sizeof *e);
    if (!e)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t klen = strcspn(environ[i], "=");
        bool shadowed = false;
        for (size_t j = 0; j < arm_count; j++)
            if (strncmp(arm_env[j], environ[i], klen) == 0 &&
                arm_env[j][klen] == '=')
                shadowed = true;
        if (!shadowed)
            e[k++] = environ[i];
    }
    for (size_t j = 0; j < arm_count; j++)
        e[k++] = arm_env[j];
    return e;
}

/* The last bytes written to fd since offset from, NUL-terminated. */
static bool
s_read_tail(int fd, off_t from, char *out, size_t cap)
{
    off_t end = lseek(fd, 0, SEEK_END);
    if (end < 0 || end <= from)
        return false;
    off_t start = end - from > (off_t)(cap - 1) ? end - (off_t)(cap - 1)
                                                : from;
    ssize_t r = pread(fd, out, (size_t)(end - start), start);
    if (r <= 0)
        return false;
    out[r] = '\0';
    /* A NUL inside would cut the text; show it as a '.'. */
    for (ssize_t i = 0; i < r; i++)
        if (out[i] == '\0')
            out[i] = '.';
    return true;
}

/* Where the run's stderr starts in the user's stderr file. */
static off_t
s_err_mark(s_run_t *r)
{
    if (r->err_fd < 0)
        return 0;
    off_t o = lseek(r->err_fd, 0, SEEK_END);
    return o < 0 ? 0 : o;
}

/* The captured stderr as the failure's tail (a NUL shown as '.'). */
static void
s_tail_from_capture(s_run_t *r)
{
    size_t n = r->cap.len < sizeof r->tail - 1 ? r->cap.len
                                               : sizeof r->tail - 1;
    memcpy(r->tail, r->cap.buf, n);
    r->tail[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (r->tail[i] == '\0')
            r->tail[i] = '.';
    r->have_tail = n > 0;
}

static void
s_fail(s_run_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
s_fail(s_run_t *r, const char *fmt, ...)
{
    if (r->status != AG_RUN_COMPLETE)
        return;     /* the first failure is the reason */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
    r->status = AG_RUN_FAILED;
}

static void
s_stop(s_run_t *r, ag_run_status_t status, const char *reason)
{
    r->stopped = true;
    r->status = status;
    snprintf(r->reason, sizeof r->reason, "%s", reason);
}

static int
s_emit(s_run_t *r, const ag_sample_t *s)
{
    r->samples++;
    if (r->cb->on_sample && r->cb->on_sample(r->cb->ctx, s) != 0) {
        s_stop(r, AG_RUN_INCOMPLETE, "stopped by the caller (on_sample)");
        return -1;
    }
    return 0;
}

/* Describe a finished run that is an error, or return false. */
static bool
s_run_error(const ag_spawn_result_t *res, int expect_exit, double timeout_s,
            char *why, size_t len)
{
    if (res->timed_out) {
        snprintf(why, len, "timed out after %g s (process group killed)",
                 timeout_s);
        return true;
    }
    if (res->term_signal) {
        const char *abbrev = sigabbrev_np(res->term_signal);
        snprintf(why, len, "killed by signal %d (SIG%s)", res->term_signal,
                 abbrev ? abbrev : "?");
        return true;
    }
    if (res->exit_status != expect_exit) {
        snprintf(why, len, "exited with status %d, expected %d",
                 res->exit_status, expect_exit);
        return true;
    }
    return false;
}

/* Run a setup/cleanup/prepare/conclude/versions command for arm a (its
 * cwd and environment). stdout goes to out_fd (-1: /dev/null), stderr to
 * the scratch file so a failure can show it. Returns 0, or -1 with the
 * benchmark failed (or stopped). */
static int
s_hook(s_run_t *r, size_t a, const ag_cmd_t *cmd, const char *what,
       int out_fd, bool cancellable)
{
    if (!cmd->argv && !cmd->shell)
        return 0;
    const char *sh[4] = { "/bin/sh", "-c", cmd->shell, NULL };
    ag_spawn_req_t req;
    ag_spawn_result_t res;
    char err[512], why[256];
    ag_spawn_req_init(&req);
    req.argv = cmd->argv ? (const char *const *)cmd->argv : sh;
    req.envp = r->envp[a];
    req.cwd = r->b->arms[a].cwd;
    req.stdin_fd = r->h->devnull;
    req.stdout_fd = out_fd >= 0 ? out_fd : r->h->devnull;
    req.stderr_fd = r->h->devnull;
    req.stderr_capture = r->cap_ok ? &r->cap : NULL;
    req.timeout_us = r->b->timeout_s * 1e6;
    req.cancel_fd = cancellable ? r->h->cancel_fd : r->h->force_fd;
    int rc = ag_spawn_run(&req, &res, err, sizeof err);
    if (rc == AG_SPAWN_CANCELLED) {
        s_stop(r, s_cancel_status(r->h), "interrupted");
        return -1;
    }
    if (rc != AG_SPAWN_OK) {
        s_fail(r, "%s of arm \"%s\": %s", what, r->b->arms[a].name, err);
        return -1;
    }
    if (s_run_error(&res, 0, r->b->timeout_s, why, sizeof why)) {
        if (r->cap_ok)
            s_tail_from_capture(r);
        s_fail(r, "%s of arm \"%s\": %s", what, r->b->arms[a].name, why);
        return -1;
    }
    return 0;
}

static void
s_fill(ag_sample_t *s, const ag_spawn_result_t *res)
{
    s->wall_us = res->wall_us;
    s->user_us = res->user_us;
    s->sys_us = res->sys_us;
    s->maxrss_kb = res->maxrss_kb;
    s->exit_status = res->exit_status;
    s->term_signal = res->term_signal;
    s->cpu = res->cpu;
    s->start_unix_us = res->start_unix_us;
    /* -1: not counted on this host, which the sample says with 0. */
    s->instructions = res->counters[AG_CTR_INSTRUCTIONS] > 0
                      ? res->counters[AG_CTR_INSTRUCTIONS] : 0;
    s->cycles = res->counters[AG_CTR_CYCLES] > 0
                ? res->counters[AG_CTR_CYCLES] : 0;
    s->task_clock_ns = res->counters[AG_CTR_TASK_CLOCK] > 0
                       ? res->counters[AG_CTR_TASK_CLOCK] : 0;
}

/* One timed run of arm a (prepare and conclude around it, untimed). */
static int
s_measure(s_run_t *r, size_t a, pw_sample_kind_t kind, unsigned round,
          unsigned position)
{
    const ag_arm_t *arm = &r->b->arms[a];
    ag_spawn_req_t req;
    ag_spawn_result_t res;
    ag_sample_t s;
    char err[512], why[600];

    if (s_hook(r, a, &arm->prepare, "prepare", -1, true) != 0)
        return -1;
    ag_spawn_req_init(&req);
    req.argv = r->argv[a];
    req.path = r->path[a];
    req.envp = r->envp[a];
    req.cwd = arm->cwd;
    req.stdin_fd = r->h->devnull;
    req.stdout_fd = r->out_fd >= 0 ? r->out_fd : r->h->devnull;
    req.stderr_fd = r->err_fd >= 0 ? r->err_fd : r->h->devnull;
    if (r->err_fd < 0 && r->cap_ok)
        req.stderr_capture = &r->cap;
    req.cpus = r->b->cpus;
    req.cpu_count = r->b->cpu_count;
    req.timeout_us = r->b->timeout_s * 1e6;
    req.cancel_fd = r->h->cancel_fd;
    req.counters = r->ss->ctr;
    off_t mark = s_err_mark(r);
    int rc = ag_spawn_run(&req, &res, err, sizeof err);
    if (rc == AG_SPAWN_CANCELLED) {
        /* The interrupted run measured nothing: it is not reported. */
        s_stop(r, s_cancel_status(r->h), "interrupted");
        return -1;
    }
    if (rc == AG_SPAWN_OK)
        s_account(r, &res);
    memset(&s, 0, sizeof s);
    s.kind = kind;
    s.arm = (unsigned)a;
    s.round = round;
    s.position = position;
    s.cpu = -1;
    if (rc != AG_SPAWN_OK) {
        s.kind = PW_SAMPLE_ERROR;
        s.exit_status = -1;
        s.start_unix_us = pw_clock_unix_us();
        snprintf(why, sizeof why, "%s", err);
    } else {
        s_fill(&s, &res);
        if (s_run_error(&res, r->b->expect_exit, r->b->timeout_s, why,
                        sizeof why)) {
            s.kind = PW_SAMPLE_ERROR;
            if (r->err_fd >= 0)
                r->have_tail = s_read_tail(r->err_fd, mark, r->tail,
                                           sizeof r->tail);
            else if (req.stderr_capture)
                s_tail_from_capture(r);
        }
    }
    if (s.kind == PW_SAMPLE_ERROR) {
        s.error = why;
        s_fail(r, "arm \"%s\" %s %u: %s", arm->name,
               kind == PW_SAMPLE_WARMUP ? "warm-up" : "round", round, why);
        s_emit(r, &s);
        return -1;
    }
    if (s_emit(r, &s) != 0)
        return -1;
    if (kind == PW_SAMPLE_MEASURED && r->meas[a])
        r->meas[a][r->nmeas[a]++] = s.wall_us;
    return s_hook(r, a, &arm->conclude, "conclude", -1, true);
}

/* One calibration run of the no-op program, same path as s_measure. */
static int
s_calibrate_once(ag_harness_t *h, const char *noop, const int *cpus,
                 size_t ncpus, ag_counters_t *ctr, ag_spawn_result_t *res,
                 char *err, size_t errlen)
{
    const char *argv[2] = { noop, NULL };
    ag_spawn_req_t req;
    ag_spawn_req_init(&req);
    req.argv = argv;
    /* Counted as the measured runs are: cpu's floor from the task clock
     * needs the no-op's task clock (docs/verdict.md "Metrics"). */
    req.counters = ctr;
    req.stdin_fd = req.stdout_fd = req.stderr_fd = h->devnull;
    req.cpus = cpus;
    req.cpu_count = ncpus;
    req.timeout_us = 10e6;
    req.cancel_fd = h->cancel_fd;
    int rc = ag_spawn_run(&req, res, err, errlen);
    if (rc == AG_SPAWN_OK && (res->exit_status != 0 || res->term_signal ||
                              res->timed_out)) {
        snprintf(err, errlen, "calibration program %s exited with status %d "
                 "(signal %d)", noop, res->exit_status, res->term_signal);
        return AG_SPAWN_ERR;
    }
    return rc;
}

static void
s_run_free(s_run_t *r)
{
    for (size_t i = 0; i < AG_SUITE_MAX_ARMS; i++) {
        free(r->envp[i]);
        free(r->path[i]);
        free(r->versions[i]);
        free(r->meas[i]);
    }
    if (r->cap_ok)
        ag_capture_close(&r->cap);
    if (r->out_fd >= 0)
        close(r->out_fd);
    if (r->err_fd >= 0)
        close(r->err_fd);
}

/* The arm's `versions` output: each command's stdout and stderr, the
 * first AG_HARNESS_VERSION_MAX bytes of them all. Read through a pipe
 * that keeps only those, so `versions: [yes]` costs 16 KiB, not memory
 * for 30 s of output. */
static char *
s_versions(s_run_t *r, size_t a)
{
    const ag_arm_t *arm = &r->b->arms[a];
    size_t cap = AG_HARNESS_VERSION_MAX + 1, len = 0;
    char *out = calloc(1, cap);
    char err[512];
    if (!out || arm->version_count == 0)
        return out;
    ag_capture_t c;
    if (ag_capture_open(&c, out, cap - 1, true, err, sizeof err) != 0) {
        snprintf(out, cap, "(%s)", err);
        return out;
    }
    for (size_t v = 0; v < arm->version_count && len + 1 < cap; v++) {
        const ag_cmd_t *cmd = &arm->versions[v];
        const char *sh[4] = { "/bin/sh", "-c", cmd->shell, NULL };
        ag_spawn_req_t req;
        ag_spawn_result_t res;
        snprintf(err, sizeof err, "interrupted");
        ag_spawn_req_init(&req);
        req.argv = cmd->argv ? (const char *const *)cmd->argv : sh;
        req.envp = r->envp[a];
        req.cwd = arm->cwd;
        req.stdin_fd = r->h->devnull;
        req.stdout_capture = req.stderr_capture = &c;
        c.buf = out + len;
        c.cap = cap - 1 - len;
        /* The benchmark's timeout, at most 30 s: a version is quick. */
        req.timeout_us = r->b->timeout_s < 30 ? r->b->timeout_s * 1e6 : 30e6;
        req.cancel_fd = r->h->cancel_fd;
        if (ag_spawn_run(&req, &res, err, sizeof err) == AG_SPAWN_OK) {
            len += c.len;
            if (res.timed_out && len + 1 < cap)
                len += (size_t)snprintf(out + len, cap - len,
                                        "(timed out after %g s)\n",
                                        req.timeout_us / 1e6);
        } else
            len += (size_t)snprintf(out + len, cap - len, "(%s)\n", err);
        if (len >= cap)
            len = cap - 1;
    }
    ag_capture_close(&c);
    out[len] = '\0';
    for (size_t i = 0; i < len; i++)
        if (out[i] == '\0')
            out[i] = '.';
    return out;
}

/* Every CPU of cpus: must be one this process may run on, or the first
 * run would fail with sched_setaffinity's bare EINVAL. */
static int
s_check_cpus(const ag_bench_t *b, char *why, size_t len)
{
    cpu_set_t allowed;
    if (b->cpu_count == 0 || sched_getaffinity(0, sizeof allowed,
                                               &allowed) != 0)
        return 0;
    for (size_t i = 0; i < b->cpu_count; i++) {
        if (b->cpus[i] < CPU_SETSIZE && CPU_ISSET(b->cpus[i], &allowed))
            continue;
        char list[256] = "";
        size_t used = 0;
        for (int c = 0; c < CPU_SETSIZE && used + 16 < sizeof list; c++) {
            if (!CPU_ISSET(c, &allowed))
                continue;
            int e = c;
            while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &allowed))
                e++;
            used += (size_t)(e > c ? snprintf(list + used, sizeof list - used,
                                              "%s%d-%d", used ? "," : "", c, e)
                                   : snprintf(list + used, sizeof list - used,
                                              "%s%d", used ? "," : "", c));
            c = e;
        }
        snprintf(why, len, "cpus: CPU %d is not one this agent may run on "
                 "(it may use %s)", b->cpus[i], list);
        return -1;
    }
    return 0;
}

static int
s_open_out(const ag_out_t *o, int *fd, char *why, size_t len)
{
    *fd = -1;
    if (o->kind != AG_OUT_FILE)
        return 0;
    *fd = open(o->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (*fd < 0) {
        snprintf(why, len, "open(%s): %s", o->path, strerror(errno));
        return -1;
    }
    return 0;
}

/* The rounds planned for b under o: true for runs: auto (*runs is then
 * the cap). --runs N overrides a suite's auto, --runs auto its N. */
static bool
s_plan(const ag_harness_opts_t *o, const ag_bench_t *b, unsigned *runs)
{
    bool autorun = o->runs_auto || (!o->runs && b->runs_auto);
    if (autorun)
        *runs = o->max_runs ? o->max_runs
              : b->max_runs ? b->max_runs : AG_SUITE_DEFAULT_MAX_RUNS;
    else
        *runs = o->runs ? o->runs : b->runs;
    return autorun;
}

/* Keep a calibration run for the stopping rule's floor; false when out
 * of memory (the floor then has the runs kept so far). */
static bool
s_keep_cal(s_session_t *ss, double wall_us)
{
    if (!pw_grow(&ss->cal, &ss->cal_cap, ss->ncal, sizeof *ss->cal, 256,
                 SIZE_MAX))
        return false;
    ss->cal[ss->ncal++] = wall_us;
    return true;
}

/* runs: auto, at a look after done rounds: DECISIVE when the subject's
 * verdict against every other arm is decisive, else CAP at the cap and
 * MORE before it. The floor is the one the results will be judged with
 * as known now: the store pooled with this session's calibration. */
static vd_stop_t
s_look(const s_run_t *r, unsigned done, unsigned cap)
{
    const ag_harness_opts_t *o = r->ss->opts;
    vd_stop_t more = done >= cap ? VD_STOP_CAP : VD_STOP_MORE;
    ag_floor_t f;
    vd_params_t p;
    char err[256];
    if (ag_calstore_floor(o->store_us, o->store_n, r->ss->cal, r->ss->ncal,
                          o->fresh_floor, &f, err, sizeof err) != 0)
        return more;
    p.parity = o->parity > 0 ? o->parity : VD_DEFAULT_PARITY;
    p.floor_us = f.floor_us;
    p.floor_is_default = f.is_default;
    size_t sub = r->b->subject;
    for (size_t a = 0; a < r->arm_count; a++) {
        vd_verdict_t v;
        if (a == sub)
            continue;
        if (vd_compare(r->meas[sub], r->nmeas[sub], r->meas[a], r->nmeas[a],
                       &p, &v, err, sizeof err) != VD_OK ||
            !vd_adaptive_decisive(&v))
            return more;
    }
    return VD_STOP_DECISIVE;
}

/* Before a benchmark's first spawn: each arm's argv (its program found
 * in PATH once), environment and `versions` output, the output files and
 * the stderr capture, and info for on_run_start. A failure fails the
 * benchmark (r->status); nothing is spawned then. */
static void
s_prepare(s_run_t *r, ag_arm_info_t *info, unsigned runs, bool autorun)
{
    const ag_bench_t *b = r->b;
    size_t n = b->arm_count;
    char why[600];

    for (size_t a = 0; autorun && a < n; a++)
        if (!(r->meas[a] = calloc(runs, sizeof *r->meas[a])))
            s_fail(r, "out of memory for %u rounds of runs: auto", runs);
    for (size_t a = 0; a < n; a++) {
        const ag_arm_t *arm = &b->arms[a];
        if (arm->cmd.argv) {
            r->argv[a] = (const char **)arm->cmd.argv;
            char found[4096];
            if (ag_spawn_resolve(arm->cmd.argv[0], found, sizeof found) == 0)
                r->path[a] = strdup(found);   /* NULL: posix_spawnp then */
        } else {
            r->shell_argv[a][0] = "/bin/sh";
            r->shell_argv[a][1] = "-c";
            r->shell_argv[a][2] = arm->cmd.shell;
            r->shell_argv[a][3] = NULL;
            r->argv[a] = r->shell_argv[a];
        }
        r->envp[a] = s_envp(arm->env, arm->env_count);
        if (!r->envp[a])
            s_fail(r, "out of memory for the environment of arm \"%s\"",
                   arm->name);
    }
    if (r->status == AG_RUN_COMPLETE &&
        s_check_cpus(b, why, sizeof why) != 0)
        s_fail(r, "%s", why);
    if (r->status == AG_RUN_COMPLETE) {
        if (s_open_out(&b->out, &r->out_fd, why, sizeof why) != 0)
            s_fail(r, "stdout: %s", why);
        else if (s_open_out(&b->err, &r->err_fd, why, sizeof why) != 0)
            s_fail(r, "stderr: %s", why);
        else if (ag_capture_open(&r->cap, r->cap_buf, sizeof r->cap_buf,
                                 false, why, sizeof why) != 0)
            s_fail(r, "%s", why);
        else
            r->cap_ok = true;
    }
    for (size_t a = 0; a < n; a++) {
        r->versions[a] = r->status == AG_RUN_COMPLETE ? s_versions(r, a)
                                                     : NULL;
        info[a].name = b->arms[a].name;
        info[a].subject = b->arms[a].subject;
        info[a].argv = b->arms[a].cmd.argv ?
                       (const char *const *)b->arms[a].cmd.argv : NULL;
        info[a].shell = b->arms[a].cmd.shell;
        info[a].version_output = r->versions[a] ? r->versions[a] : "";
        info[a].instance = b->arms[a].instance;
    }
}

/* The no-op run after measured round rd (the spec's calibration per
 * round): kept for the stopping rule's floor and emitted. 0, or -1 with
 * the benchmark stopped or failed. */
static int
s_round_calibration(s_run_t *r, unsigned rd)
{
    ag_spawn_result_t res;
    char err[512];
    int c = s_calibrate_once(r->h, r->noop, r->b->cpus, r->b->cpu_count,
                             r->ss->ctr, &res, err, sizeof err);
    if (c == AG_SPAWN_CANCELLED) {
        s_stop(r, s_cancel_status(r->h), "interrupted");
        return -1;
    }
    if (c != AG_SPAWN_OK) {
        s_fail(r, "%s", err);
        return -1;
    }
    s_account(r, &res);
    s_keep_cal(r->ss, res.wall_us);
    ag_sample_t s;
    memset(&s, 0, sizeof s);
    s.kind = PW_SAMPLE_CALIBRATION;
    s.round = rd;
    s.position = (unsigned)r->arm_count;
    s_fill(&s, &res);
    return s_emit(r, &s);
}

static int
s_run_bench(ag_harness_t *h, const ag_suite_t *suite, size_t bi,
            s_session_t *ss, const char *env_json,
            const ag_callbacks_t *cb, const char *noop)
{
    const ag_harness_opts_t *opts = ss->opts;
    const ag_bench_t *b = &suite->benchmarks[bi];
    s_run_t r;
    unsigned *order = NULL;
    ag_arm_info_t info[AG_SUITE_MAX_ARMS];
    int rc = AG_HARNESS_OK;

    memset(&r, 0, sizeof r);
    r.h = h;
    r.ss = ss;
    r.suite = suite;
    r.b = b;
    r.cb = cb;
    r.noop = noop;
    r.arm_count = b->arm_count;
    r.out_fd = r.err_fd = -1;
    r.status = AG_RUN_COMPLETE;
    unsigned runs;
    bool autorun = s_plan(opts, b, &runs);
    unsigned cap = runs;
    unsigned look = autorun ? vd_adaptive_next(0, cap) : runs;
    vd_stop_t stop = VD_STOP_MORE;
    unsigned warmup = opts->warmup >= 0 ? (unsigned)opts->warmup : b->warmup;
    size_t n = b->arm_count;
    int64_t started = pw_clock_unix_us();
    double t0 = (double)pw_clock_mono_us();

    order = calloc((size_t)runs * n, sizeof *order);
    if (!order) {
        s_fail(&r, "out of memory for the order of %u rounds", runs);
        runs = 0;
    }
    /* Round r starts at arm r mod n: A B C, B C A, C A B ... */
    for (unsigned rd = 0; order && rd < runs; rd++)
        for (size_t p = 0; p < n; p++)
            order[(size_t)rd * n + p] = (unsigned)((rd + p) % n);

    s_prepare(&r, info, runs, autorun);
    ag_run_start_t start = {
        .suite = suite->name, .benchmark = b->name, .benchmark_index = bi,
        .bench = b, .arms = info, .arm_count = n, .subject = b->subject,
        .runs = runs, .runs_auto = autorun, .warmup = warmup, .order = order,
        .environment_json = env_json, .started_at_us = started,
        .revision = suite->revision, .revision_value = suite->revision_value,
    };
    if (cb->on_run_start && cb->on_run_start(cb->ctx, &start) != 0)
        s_stop(&r, AG_RUN_INCOMPLETE, "stopped by the caller (on_run_start)");
    if (s_cancelled(h))
        s_stop(&r, s_cancel_status(h), "interrupted");

    size_t setup_done = 0;
    for (size_t a = 0; a < n && r.status == AG_RUN_COMPLETE; a++) {
        if (s_hook(&r, a, &b->arms[a].setup, "setup", -1, true) != 0)
            break;
        setup_done = a + 1;
    }

    unsigned total = warmup + look, done = 0, taken = 0;
    for (unsigned w = 0; w < warmup && r.status == AG_RUN_COMPLETE; w++) {
        for (size_t p = 0; p < n && r.status == AG_RUN_COMPLETE; p++)
            s_measure(&r, order[(size_t)(w % runs) * n + p],
                      PW_SAMPLE_WARMUP, w, (unsigned)p);
        if (r.status != AG_RUN_COMPLETE)
            break;
        done++;
        if (cb->on_progress) {
            double el = (double)pw_clock_mono_us() - t0;
            ag_progress_t pg = { b->name, true, w + 1, warmup, el,
                                 el / done * (total - done) };
            cb->on_progress(cb->ctx, &pg);
        }
    }
    for (unsigned rd = 0; rd < runs && r.status == AG_RUN_COMPLETE; rd++) {
        for (size_t p = 0; p < n && r.status == AG_RUN_COMPLETE; p++)
            s_measure(&r, order[(size_t)rd * n + p], PW_SAMPLE_MEASURED, rd,
                      (unsigned)p);
        if (r.status != AG_RUN_COMPLETE)
            break;
        if (s_round_calibration(&r, rd) != 0)
            break;
        done++;
        taken = rd + 1;
        if (autorun && taken == look) {
            stop = s_look(&r, taken, cap);
            if (stop == VD_STOP_MORE)
                look = vd_adaptive_next(taken, cap);
        }
        if (cb->on_progress) {
            double el = (double)pw_clock_mono_us() - t0;
            unsigned of = warmup + look;
            ag_progress_t pg = { b->name, false, rd + 1, look, el,
                                 el / done * (of > done ? of - done : 0) };
            cb->on_progress(cb->ctx, &pg);
        }
        if (stop != VD_STOP_MORE)
            break;
    }
    /* Cleanup runs even after a failure or a Ctrl-C, and the first
     * cancel does not stop it: it is what leaves the machine as it was.
     * A second cancel does (s_hook with cancellable false). */
    for (size_t a = 0; a < setup_done && atomic_load(&h->cancels) < 2; a++)
        s_hook(&r, a, &b->arms[a].cleanup, "cleanup", -1, false);

    ag_run_end_t end = {
        .benchmark = b->name, .status = r.status,
        .reason = r.status == AG_RUN_COMPLETE ? NULL : r.reason,
        .stderr_tail = r.have_tail ? r.tail : NULL,
        .samples = r.samples, .ended_at_us = pw_clock_unix_us(),
        .rounds = taken, .runs_auto = autorun, .max_runs = cap,
        .stop = r.status == AG_RUN_COMPLETE ? stop : VD_STOP_MORE,
        .between_cpu_us = r.between_cpu_us,
        .windows_wall_us = r.windows_wall_us,
    };
    if (cb->on_run_end && cb->on_run_end(cb->ctx, &end) != 0)
        r.stopped = true;
    if (r.stopped || s_cancelled(h))
        rc = AG_HARNESS_STOPPED;
    free(order);
    s_run_free(&r);
    return rc;
}

/* The rounds a benchmark surely takes: its runs, or with runs: auto
 * its first look's (the session-start calibration tops these up to the
 * target, so the first look already has a full floor). */
static unsigned
s_first_rounds(const ag_harness_opts_t *o, const ag_bench_t *b)
{
    unsigned runs;
    return s_plan(o, b, &runs) ? vd_adaptive_next(0, runs) : runs;
}

int
ag_harness_run(ag_harness_t *h, const ag_suite_t *suite,
               const ag_harness_opts_t *opts_in, const ag_callbacks_t *cb_in,
               char *err, size_t errlen)
{
    ag_harness_opts_t opts = { .warmup = -1 };
    s_session_t ss = { .opts = &opts };
    ag_callbacks_t cb = { 0 };
    char *env_json = NULL;
    double *cal = NULL;
    bool *selected = NULL;
    int rc = AG_HARNESS_ERR;

    if (opts_in)
        opts = *opts_in;
    if (cb_in)
        cb = *cb_in;
    if (opts.runs > AG_SUITE_MAX_RUNS || opts.max_runs > AG_SUITE_MAX_RUNS ||
        (opts.warmup >= 0 && opts.warmup > AG_SUITE_MAX_WARMUP)) {
        snprintf(err, errlen, "runs and max_runs must be at most %d and "
                 "warmup 0..%d", AG_SUITE_MAX_RUNS, AG_SUITE_MAX_WARMUP);
        return AG_HARNESS_ERR;
    }
    selected = calloc(suite->benchmark_count + 1, sizeof *selected);
    ss.ctr = ag_counters_new();
    if (!selected || !ss.ctr) {
        snprintf(err, errlen, "ag_harness_run: out of memory");
        goto done;
    }
    for (size_t i = 0; i < opts.only_count; i++) {
        const ag_bench_t *b = ag_suite_find(suite, opts.only[i]);
        if (!b) {
            char names[512] = "";
            size_t used = 0;
            for (size_t j = 0; j < suite->benchmark_count &&
                 used < sizeof names; j++)
                used += (size_t)snprintf(names + used, sizeof names - used,
                                         "%s%s", j ? ", " : "",
                                         suite->benchmarks[j].name);
            snprintf(err, errlen, "--only %s: suite \"%s\" has no such "
                     "benchmark (it has: %s)", opts.only[i], suite->name,
                     names);
            goto done;
        }
        selected[b - suite->benchmarks] = true;
    }
    unsigned long total_rounds = 0;
    for (size_t i = 0; i < suite->benchmark_count; i++) {
        if (opts.only_count == 0)
            selected[i] = true;
        if (selected[i])
            total_rounds += s_first_rounds(&opts, &suite->benchmarks[i]);
    }

    const char *noop = opts.noop_path ? opts.noop_path
                                      : ag_harness_default_noop();
    if (access(noop, X_OK) != 0) {
        snprintf(err, errlen, "calibration program %s: %s", noop,
                 strerror(errno));
        goto done;
    }
    if (opts.environment_json) {
        env_json = strdup(opts.environment_json);
    } else {
        json_t *env = ag_env_collect(NULL, 0, err, errlen);
        if (!env)
            goto done;
        env_json = json_dumps(env, JSON_COMPACT);
        json_decref(env);
    }
    if (!env_json) {
        snprintf(err, errlen, "ag_harness_run: out of memory");
        goto done;
    }

    /* Session-start calibration: enough runs that, with one per round,
     * the session reaches the target. */
    unsigned target = opts.calibration_target ? opts.calibration_target
                                              : AG_HARNESS_CALIBRATION_TARGET;
    size_t extra = total_rounds < target ? target - total_rounds : 0;
    cal = calloc(4 * (extra + 1), sizeof *cal);
    if (!cal) {
        snprintf(err, errlen, "ag_harness_run: out of memory");
        goto done;
    }
    /* One allocation, four columns of extra + 1 values each. */
    double *cal_cpu = cal + (extra + 1), *cal_tc = cal_cpu + (extra + 1),
           *cal_rss = cal_tc + (extra + 1);
    int64_t taken = pw_clock_unix_us();
    size_t got = 0;
    for (; got < extra; got++) {
        ag_spawn_result_t res;
        int c = s_calibrate_once(h, noop, NULL, 0, ss.ctr, &res, err,
                                 errlen);
        if (c == AG_SPAWN_CANCELLED)
            break;
        if (c != AG_SPAWN_OK)
            goto done;
        cal[got] = res.wall_us;
        cal_cpu[got] = res.user_us + res.sys_us;
        cal_tc[got] = res.counters[AG_CTR_TASK_CLOCK] > 0
                      ? (double)res.counters[AG_CTR_TASK_CLOCK] / 1000.0 : 0;
        cal_rss[got] = (double)res.maxrss_kb;
        s_keep_cal(&ss, res.wall_us);
    }
    ag_cal_batch_t batch = { .wall_us = cal, .cpu_us = cal_cpu,
                             .task_clock_us = cal_tc, .peak_rss_kb = cal_rss,
                             .n = got, .taken_at_us = taken };
    if (cb.on_calibration && cb.on_calibration(cb.ctx, &batch) != 0) {
        rc = AG_HARNESS_STOPPED;
        goto done;
    }
    rc = AG_HARNESS_OK;
    for (size_t i = 0; i < suite->benchmark_count; i++) {
        if (!selected[i])
            continue;
        if (s_cancelled(h)) {
            rc = AG_HARNESS_STOPPED;
            break;
        }
        if (s_run_bench(h, suite, i, &ss, env_json, &cb, noop) ==
            AG_HARNESS_STOPPED) {
            rc = AG_HARNESS_STOPPED;
            break;
        }
    }
done:
    free(selected);
    free(env_json);
    free(cal);
    free(ss.cal);
    ag_counters_destroy(&ss.ctr);
    return rc;
}
