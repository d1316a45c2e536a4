/* ag_spawn.c -- see ag_spawn.h. */
#include "ag_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

void
ag_spawn_req_init(ag_spawn_req_t *req)
{
    memset(req, 0, sizeof *req);
    req->stdin_fd = -1;
    req->stdout_fd = -1;
    req->stderr_fd = -1;
    req->cancel_fd = -1;
}

static double
s_now_us(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double
s_tv_us(const struct timeval *tv)
{
    return (double)tv->tv_sec * 1e6 + (double)tv->tv_usec;
}

int
ag_capture_open(ag_capture_t *c, char *buf, size_t cap, bool keep_head,
                char *err, size_t errlen)
{
    int fds[2];
    memset(c, 0, sizeof *c);
    c->read_fd = c->write_fd = -1;
    if (!buf || cap == 0) {
        snprintf(err, errlen, "ag_capture_open: no buffer");
        return -1;
    }
    /* O_NONBLOCK on the read end only: pipe2's flag would also make the
     * child's writes fail with EAGAIN when the pipe is full. */
    if (pipe2(fds, O_CLOEXEC) != 0 ||
        fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
        snprintf(err, errlen, "pipe2: %s", strerror(errno));
        return -1;
    }
    c->read_fd = fds[0];
    c->write_fd = fds[1];
    c->keep_head = keep_head;
    c->buf = buf;
    c->cap = cap;
    return 0;
}

void
ag_capture_close(ag_capture_t *c)
{
    if (c->read_fd >= 0)
        close(c->read_fd);
    if (c->write_fd >= 0)
        close(c->write_fd);
    c->read_fd = c->write_fd = -1;
}

/* Keep n more bytes of output: the head until buf is full, or a ring of
 * the last cap bytes (put in order by s_capture_finish). */
static void
s_capture_take(ag_capture_t *c, const char *data, size_t n)
{
    if (c->keep_head) {
        size_t room = c->cap - c->len;
        size_t k = n < room ? n : room;
        memcpy(c->buf + c->len, data, k);
        c->len += k;
        c->total += n;
        return;
    }
    if (n >= c->cap) {
        c->total += n - c->cap;
        data += n - c->cap;
        n = c->cap;
    }
    size_t w = (size_t)(c->total % c->cap);
    size_t first = c->cap - w < n ? c->cap - w : n;
    memcpy(c->buf + w, data, first);
    memcpy(c->buf, data + first, n - first);
    c->total += n;
}

/* Read what the pipe holds now, at most max_reads reads (a descendant
 * that outlived the run may keep writing). keep false: throw it away. */
static void
s_capture_drain(ag_capture_t *c, int max_reads, bool keep)
{
    char chunk[16384];
    for (int i = 0; i < max_reads; i++) {
        ssize_t n = read(c->read_fd, chunk, sizeof chunk);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            return;
        }
        if (keep)
            s_capture_take(c, chunk, (size_t)n);
    }
}

static void
s_reverse(char *p, size_t n)
{
    for (size_t i = 0; i < n / 2; i++) {
        char t = p[i];
        p[i] = p[n - 1 - i];
        p[n - 1 - i] = t;
    }
}

/* Put a tail ring in order: buf[0..len) is the last len bytes. */
static void
s_capture_finish(ag_capture_t *c)
{
    if (c->keep_head)
        return;
    if (c->total <= c->cap) {
        c->len = (size_t)c->total;
        return;
    }
    size_t start = (size_t)(c->total % c->cap);
    s_reverse(c->buf, start);
    s_reverse(c->buf + start, c->cap - start);
    s_reverse(c->buf, c->cap);
    c->len = c->cap;
}

int
ag_spawn_resolve(const char *prog, char *out, size_t outlen)
{
    if (!prog || !*prog || strchr(prog, '/'))
        return -1;
    const char *path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin";   /* glibc's execvp default */
    size_t plen = strlen(prog);
    for (const char *p = path;; ) {
        size_t dlen = strcspn(p, ":");
        /* A relative entry ("" is the working directory) depends on the
         * child's cwd: leave the search to posix_spawnp. */
        if (dlen == 0 || p[0] != '/')
            return -1;
        if (dlen + 1 + plen + 1 <= outlen) {
            struct stat st;
            memcpy(out, p, dlen);
            out[dlen] = '/';
            memcpy(out + dlen + 1, prog, plen + 1);
            if (stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
                access(out, X_OK) == 0)
                return 0;
        }
        if (p[dlen] == '\0')
            return -1;
        p += dlen + 1;
    }
}

/* Field 39 of /proc/PID/stat ("processor"): the CPU the task last ran on.
 * Field 2 is "(comm)" and comm may hold spaces or ')', so count from the
 * last ')'. Returns -1 when the file or field is not there. */
static int
s_last_cpu(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* After ')' comes field 3; field 39 is 36 spaces further. */
    int field = 2;
    for (p++; *p && field < 39; p++)
        if (*p == ' ')
            field++;
    if (field != 39)
        return -1;
    char *end;
    long cpu = strtol(p, &end, 10);
    if (end == p || cpu < 0 || cpu > 1 << 20)
        return -1;
    return (int)cpu;
}

/* Set the calling thread's affinity to cpus, saving the old one. */
static int
s_pin(const int *cpus, size_t n, cpu_set_t *saved, char *err, size_t errlen)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    for (size_t i = 0; i < n; i++) {
        if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE) {
            snprintf(err, errlen, "cpu %d: out of range 0..%d", cpus[i],
                     CPU_SETSIZE - 1);
            return -1;
        }
        CPU_SET(cpus[i], &set);
    }
    if (sched_getaffinity(0, sizeof *saved, saved) != 0) {
        snprintf(err, errlen, "sched_getaffinity: %s", strerror(errno));
        return -1;
    }
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        snprintf(err, errlen, "sched_setaffinity(cpus %d...): %s", cpus[0],
                 strerror(errno));
        return -1;
    }
    return 0;
}

/* Wait for the child (pidfd readable), its timeout or a cancel, draining
 * the captures meanwhile. The first poll's timeout is timeout_us itself
 * (no clock read inside the window); later ones count from t0.
 * Returns 0 exited, 1 timed out, 2 cancelled, -1 error (errno). */
static int
s_wait(int pidfd, int cancel_fd, ag_capture_t *const caps[2], double t0,
       double timeout_us)
{
    struct pollfd fds[4];
    ag_capture_t *owner[4] = { NULL };
    nfds_t nfds = 0;
    fds[nfds++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
    int cancel_at = -1;
    if (cancel_fd >= 0) {
        cancel_at = (int)nfds;
        fds[nfds++] = (struct pollfd){ .fd = cancel_fd, .events = POLLIN };
    }
    for (int i = 0; i < 2; i++)
        if (caps[i] && (i == 0 || caps[1] != caps[0])) {
            owner[nfds] = caps[i];
            fds[nfds++] = (struct pollfd){ .fd = caps[i]->read_fd,
                                           .events = POLLIN };
        }
    bool first = true;
    for (;;) {
        int timeout_ms = -1;
        if (timeout_us > 0) {
            double left = first ? timeout_us
                                : t0 + timeout_us - s_now_us(CLOCK_MONOTONIC);
            if (left <= 0)
                return 1;
            /* Round up so the poll never wakes before the deadline. */
            timeout_ms = left > 2e9 ? 2000000000 : (int)(left / 1e3) + 1;
        }
        first = false;
        int r = poll(fds, nfds, timeout_ms);
        if (r < 0) {
            if (errno == EINTR)
                continue;   /* a signal handler may have set cancel_fd */
            return -1;
        }
        if (fds[0].revents)
            return 0;
        if (cancel_at >= 0 && fds[cancel_at].revents)
            return 2;
        for (nfds_t i = 0; i < nfds; i++)
            if (owner[i] && fds[i].revents)
                s_capture_drain(owner[i], 4, true);
    }
}

/* Say why posix_spawn failed, with what errno alone does not tell: a
 * missing or non-directory cwd (glibc reports the child's failed chdir
 * as the spawn's own error), a directory or non-executable program. */
static void
s_spawn_error(const ag_spawn_req_t *req, const char *call, const char *prog,
              int e, char *err, size_t errlen)
{
    struct stat st;
    if (req->cwd) {
        int ce = 0;
        if (stat(req->cwd, &st) != 0)
            ce = errno;
        else if (!S_ISDIR(st.st_mode))
            ce = ENOTDIR;
        else if (access(req->cwd, X_OK) != 0)
            ce = errno;
        if (ce) {
            snprintf(err, errlen, "%s(%s): chdir(%s): %s", call, prog,
                     req->cwd, strerror(ce));
            return;
        }
    }
    const char *what = NULL;
    if (e == EACCES && strchr(prog, '/') && (!req->cwd || prog[0] == '/') &&
        stat(prog, &st) == 0)
        what = S_ISDIR(st.st_mode) ? "is a directory"
             : !S_ISREG(st.st_mode) ? "is not a regular file"
             : "is not executable";
    if (e == ENOEXEC)
        snprintf(err, errlen, "%s(%s): %s (neither a program for this "
                 "machine nor a script starting with #!)", call, prog,
                 strerror(e));
    else if (what)
        snprintf(err, errlen, "%s(%s): %s (%s %s)", call, prog, strerror(e),
                 prog, what);
    else
        snprintf(err, errlen, "%s(%s): %s", call, prog, strerror(e));
}

/* Without pidfd_open (ENOSYS: Linux before 5.3, or valgrind 3.19, which
 * does not know the call), a thread waits for the child instead: it
 * blocks in waitid(WNOWAIT), which leaves the child for wait4 to reap,
 * and then writes an eventfd that s_wait polls in the pidfd's place. It
 * wakes when the child exits, as a poll on a pidfd does. */
typedef struct {
    pid_t pid;
    int efd;
    pthread_t thread;
    bool started;
} s_waiter_t;

static void *
s_waiter_main(void *arg)
{
    s_waiter_t *w = arg;
    siginfo_t si;
    /* ECHILD: the child was already reaped (a timeout or cancel killed
     * it): nothing to wait for. */
    while (waitid(P_PID, (id_t)w->pid, &si, WEXITED | WNOWAIT) < 0
           && errno == EINTR)
        ;
    uint64_t one = 1;
    ssize_t n = write(w->efd, &one, sizeof one);
    (void)n;
    return NULL;
}

/* 0 with w->efd to poll, or -1 with errno. */
static int
s_waiter_start(s_waiter_t *w, pid_t pid)
{
    w->pid = pid;
    w->started = false;
    w->efd = eventfd(0, EFD_CLOEXEC);
    if (w->efd < 0)
        return -1;
    int e = pthread_create(&w->thread, NULL, s_waiter_main, w);
    if (e != 0) {
        close(w->efd);
        w->efd = -1;
        errno = e;
        return -1;
    }
    w->started = true;
    return 0;
}

/* Once the child has exited or been reaped (the thread then returns). */
static void
s_waiter_stop(s_waiter_t *w)
{
    if (w->started)
        pthread_join(w->thread, NULL);
    w->started = false;
    if (w->efd >= 0)
        close(w->efd);
    w->efd = -1;
}

/* SIGKILL the child itself (through its pidfd: also when it left its
 * process group) and its group. */
static void
s_kill_all(int pidfd, pid_t pid)
{
    if (pidfd >= 0)
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    else
        kill(pid, SIGKILL);
    kill(-pid, SIGKILL);
}

/* The child's stdin, stdout and stderr (a capture's pipe, the caller's
 * fd, or /dev/null, opened into *devnull here, outside the timed window,
 * so the child only dup2()s before exec) and its working directory, into
 * fa; captures start empty. 0, or -1 with err. */
static int
s_file_actions(const ag_spawn_req_t *req, posix_spawn_file_actions_t *fa,
               ag_capture_t *const caps[2], int *devnull, char *err,
               size_t errlen)
{
    int e;
    if (req->stdin_fd < 0 || (req->stdout_fd < 0 && !req->stdout_capture) ||
        (req->stderr_fd < 0 && !req->stderr_capture)) {
        *devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (*devnull < 0) {
            snprintf(err, errlen, "open(/dev/null): %s", strerror(errno));
            return -1;
        }
    }
    int fds[3] = { req->stdin_fd, req->stdout_fd, req->stderr_fd };
    for (int i = 0; i < 2; i++)
        if (caps[i]) {
            fds[i + 1] = caps[i]->write_fd;
            /* Start empty: drop what an escaped descendant of an earlier
             * run may have written since. */
            if (i == 0 || caps[1] != caps[0]) {
                s_capture_drain(caps[i], 64, false);
                caps[i]->len = 0;
                caps[i]->total = 0;
            }
        }
    for (int i = 0; i < 3; i++) {
        e = posix_spawn_file_actions_adddup2(fa, fds[i] >= 0 ? fds[i]
                                                             : *devnull, i);
        if (e != 0) {
            snprintf(err, errlen, "posix_spawn_file_actions fd %d: %s", i,
                     strerror(e));
            return -1;
        }
    }
    if (req->cwd &&
        (e = posix_spawn_file_actions_addchdir_np(fa, req->cwd)) != 0) {
        snprintf(err, errlen, "posix_spawn_file_actions_addchdir_np(%s): %s",
                 req->cwd, strerror(e));
        return -1;
    }
    return 0;
}

/* Own process group, so a timeout or cancel can kill everything the
 * command started and the terminal's Ctrl-C reaches only the agent.
 * Signals the agent blocks are unblocked, and those a program like the
 * daemon may ignore are reset (handled ones reset at exec). */
static void
s_spawn_attr(posix_spawnattr_t *attr)
{
    sigset_t none, all;
    sigemptyset(&none);
    sigemptyset(&all);
    static const int reset[] = { SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP,
                                 SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM };
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++)
        sigaddset(&all, reset[i]);
    posix_spawnattr_setpgroup(attr, 0);
    posix_spawnattr_setsigmask(attr, &none);
    posix_spawnattr_setsigdefault(attr, &all);
    posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP |
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}

/* Reap pid (retrying EINTR) into res: CPU times, peak RSS, the counters
 * (req->counters), exit status or signal. 0, or -1 with err. */
static int
s_reap(const ag_spawn_req_t *req, pid_t pid, ag_spawn_result_t *res,
       char *err, size_t errlen)
{
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            snprintf(err, errlen, "wait4(%d): %s", (int)pid, strerror(errno));
            return -1;
        }
    }
    /* Reaped: the child's counts (and its children's) are in ours. */
    if (req->counters)
        ag_counters_read(req->counters, res->counters);
    res->user_us = s_tv_us(&ru.ru_utime);
    res->sys_us = s_tv_us(&ru.ru_stime);
    res->maxrss_kb = ru.ru_maxrss;
    if (WIFEXITED(status)) {
        res->exit_status = WEXITSTATUS(status);
        res->term_signal = 0;
    } else {
        res->exit_status = -1;
        res->term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
    return 0;
}

/* After the wait (w: 0 exited, 1 timed out, else cancelled): the CPU
 * the child ended on, then nothing of its process group left running,
 * and the captures' last bytes. Returns ag_spawn_run's code. */
static int
s_settle(const ag_spawn_req_t *req, ag_spawn_result_t *res, int w,
         pid_t pid, int pidfd, ag_capture_t *const caps[2])
{
    int rc;
    if (w == 0) {
        /* Pinned to one CPU, that is where it ended; otherwise read it
         * (about 25 µs of /proc work per run on the development VM). A
         * readable pidfd means the child has exited and, not reaped yet,
         * is a zombie whose stat still holds its last CPU. */
        if (req->cpu_count == 1)
            res->cpu = req->cpus[0];
        else
            res->cpu = s_last_cpu(pid);
        rc = AG_SPAWN_OK;
    } else if (w == 1) {
        res->timed_out = true;
        rc = AG_SPAWN_OK;
    } else {
        rc = AG_SPAWN_CANCELLED;
    }
    /* Whatever the command left running in its group goes too: it would
     * otherwise load the machine during the next run. The leader is not
     * reaped yet, so the group id cannot have been reused. At a timeout
     * or cancel the child itself is killed through its pidfd as well: a
     * child that moved to another group would otherwise never end. */
    if (w == 0)
        kill(-pid, SIGKILL);
    else
        s_kill_all(pidfd, pid);
    for (int i = 0; i < 2; i++)
        if (caps[i] && (i == 0 || caps[1] != caps[0])) {
            s_capture_drain(caps[i], 64, true);
            s_capture_finish(caps[i]);
        }
    return rc;
}

int
ag_spawn_run(const ag_spawn_req_t *req, ag_spawn_result_t *res,
             char *err, size_t errlen)
{
    int rc = AG_SPAWN_ERR;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    bool fa_ok = false, attr_ok = false, pinned = false;
    cpu_set_t saved_affinity;
    int pidfd = -1, devnull = -1;
    s_waiter_t waiter = { .efd = -1 };
    pid_t pid = -1;
    int e;

    memset(res, 0, sizeof *res);
    res->cpu = -1;
    for (int i = 0; i < AG_CTR_COUNT; i++)
        res->counters[i] = -1;
    if (!req->argv || !req->argv[0]) {
        snprintf(err, errlen, "ag_spawn_run: empty argv");
        return AG_SPAWN_ERR;
    }

    if ((e = posix_spawn_file_actions_init(&fa)) != 0) {
        snprintf(err, errlen, "posix_spawn_file_actions_init: %s",
                 strerror(e));
        goto done;
    }
    fa_ok = true;
    ag_capture_t *const caps[2] = { req->stdout_capture,
                                    req->stderr_capture };
    if (s_file_actions(req, &fa, caps, &devnull, err, errlen) != 0)
        goto done;

    if ((e = posix_spawnattr_init(&attr)) != 0) {
        snprintf(err, errlen, "posix_spawnattr_init: %s", strerror(e));
        goto done;
    }
    attr_ok = true;
    s_spawn_attr(&attr);

    if (req->cpu_count > 0) {
        if (s_pin(req->cpus, req->cpu_count, &saved_affinity, err,
                  errlen) != 0)
            goto done;
        pinned = true;
    }

    char *const *envp = req->envp ? req->envp : environ;
    ag_counters_reset(req->counters);   /* outside the window: reads */
    res->start_unix_us = (int64_t)s_now_us(CLOCK_REALTIME);
    res->thread_cpu_before_us = s_now_us(CLOCK_THREAD_CPUTIME_ID);
    double t0 = s_now_us(CLOCK_MONOTONIC);
    if (req->path)
        e = posix_spawn(&pid, req->path, &fa, &attr,
                        (char *const *)req->argv, envp);
    else
        e = posix_spawnp(&pid, req->argv[0], &fa, &attr,
                         (char *const *)req->argv, envp);
    /* The child has inherited the pinning: give the CPU back now, or this
     * thread competes with the benchmark on it all through the timed
     * window (it polls and drains the child's stderr there). The one
     * syscall falls inside every run's wall time, calibration's too. */
    if (pinned) {
        sched_setaffinity(0, sizeof saved_affinity, &saved_affinity);
        pinned = false;
    }
    if (e != 0) {
        pid = -1;
        s_spawn_error(req, req->path ? "posix_spawn" : "posix_spawnp",
                      req->path ? req->path : req->argv[0], e, err, errlen);
        goto done;
    }
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int exit_fd = pidfd;   /* readable once the child has exited */
    if (pidfd < 0 && errno == ENOSYS && s_waiter_start(&waiter, pid) == 0)
        exit_fd = waiter.efd;
    if (exit_fd < 0) {
        snprintf(err, errlen, "pidfd_open(%d): %s", (int)pid,
                 strerror(errno));
        s_kill_all(-1, pid);
        goto reap;
    }
    int w = s_wait(exit_fd, req->cancel_fd, caps, t0, req->timeout_us);
    double t1 = s_now_us(CLOCK_MONOTONIC);
    res->thread_cpu_after_us = s_now_us(CLOCK_THREAD_CPUTIME_ID);
    res->wall_us = t1 - t0;

    if (w < 0) {
        snprintf(err, errlen, "poll(pidfd %d): %s", (int)pid,
                 strerror(errno));
        s_kill_all(pidfd, pid);
        goto reap;
    }
    rc = s_settle(req, res, w, pid, pidfd, caps);
reap:
    if (s_reap(req, pid, res, err, errlen) != 0)
        rc = AG_SPAWN_ERR;

done:
    s_waiter_stop(&waiter);   /* the child is reaped, or was never made */
    if (pinned)
        sched_setaffinity(0, sizeof saved_affinity, &saved_affinity);
    if (pidfd >= 0)
        close(pidfd);
    if (devnull >= 0)
        close(devnull);
    if (attr_ok)
        posix_spawnattr_destroy(&attr);
    if (fa_ok)
        posix_spawn_file_actions_destroy(&fa);
    return rc;
}

int
ag_cpulist_parse(const char *s, int *cpus, size_t cap, size_t *n,
                 int max_cpu, char *err, size_t errlen)
{
    size_t count = 0;
    const char *p = s;
    *n = 0;
    while (*p) {
        char *end;
        errno = 0;
        long lo = strtol(p, &end, 10);
        if (end == p || errno || lo < 0) {
            snprintf(err, errlen, "cpu list \"%s\": expected a CPU number "
                     "at \"%s\"", s, p);
            return -1;
        }
        long hi = lo;
        p = end;
        if (*p == '-') {
            p++;
            hi = strtol(p, &end, 10);
            if (end == p || errno || hi < lo) {
                snprintf(err, errlen, "cpu list \"%s\": expected a range "
                         "end >= %ld", s, lo);
                return -1;
            }
            p = end;
        }
        if (hi >= max_cpu) {
            snprintf(err, errlen, "cpu list \"%s\": CPU %ld is not below %d",
                     s, hi, max_cpu);
            return -1;
        }
        for (long c = lo; c <= hi; c++) {
            if (count >= cap) {
                snprintf(err, errlen, "cpu list \"%s\": more than %zu CPUs",
                         s, cap);
                return -1;
            }
            cpus[count++] = (int)c;
        }
        if (*p == ',')
            p++;
        else if (*p == '\n' || *p == '\0')
            break;
        else {
            snprintf(err, errlen, "cpu list \"%s\": unexpected '%c'", s, *p);
            return -1;
        }
    }
    *n = count;
    return 0;
}
