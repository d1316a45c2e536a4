/* co_pg.c -- the private cluster; see co_pg.h. */
#include "co_pg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "pw_err.h"

/* Longest path we build; the socket path must also fit sun_path (108). */
#define CO_PG_PATH_MAX (PATH_MAX + 32)
/* Seconds pg_ctl waits for start and stop. */
#define CO_PG_WAIT_S "60"

struct co_pg {
    char data_dir[CO_PG_PATH_MAX];   /* absolute */
    char pg_dir[CO_PG_PATH_MAX];     /* data_dir/pg: PGDATA and socket */
    char log_path[CO_PG_PATH_MAX];   /* data_dir/pg.log */
    char bindir[CO_PG_PATH_MAX];
    char conninfo[CO_PG_PATH_MAX + 64];
    bool as_postgres;                /* we are root: run tools as postgres */
    uid_t pg_uid;
    gid_t pg_gid;
    bool running;                    /* started or found running, not stopped */
    int lock_fd;                     /* DATA_DIR/collector.lock, flock'ed */
};

static bool
s_is_exec(const char *dir, const char *name)
{
    char p[CO_PG_PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, X_OK) == 0;
}

/* Newest /usr/lib/postgresql/N/bin with an initdb, else pg_config. */
static int
s_find_bindir(char *out, size_t outlen)
{
    const char *env = getenv("PARITY_PG_BINDIR");
    if (env && *env) {
        snprintf(out, outlen, "%s", env);
        return s_is_exec(out, "initdb") ? 0 : -1;
    }
    int best = -1;
    DIR *d = opendir("/usr/lib/postgresql");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char *end;
            long v = strtol(e->d_name, &end, 10);
            char bin[CO_PG_PATH_MAX];
            if (*end || v <= best || v > 1000)
                continue;
            snprintf(bin, sizeof bin, "/usr/lib/postgresql/%ld/bin", v);
            if (s_is_exec(bin, "initdb")) {
                best = (int)v;
                snprintf(out, outlen, "%s", bin);
            }
        }
        closedir(d);
    }
    if (best >= 0)
        return 0;
    FILE *p = popen("pg_config --bindir 2>/dev/null", "r");
    if (!p)
        return -1;
    if (!fgets(out, (int)outlen, p))
        out[0] = '\0';
    pclose(p);
    out[strcspn(out, "\n")] = '\0';
    return out[0] && s_is_exec(out, "initdb") ? 0 : -1;
}

/* Run bindir/tool with args (NULL-terminated, at most 16) as the cluster's
 * owner, output appended to the log. Returns the exit status, or -1 when
 * it could not run or was killed. */
static int
s_run(co_pg_t *pg, const char *tool, const char *const *args)
{
    char path[CO_PG_PATH_MAX + 32];
    const char *argv[24];
    size_t n = 0;

    snprintf(path, sizeof path, "%s/%s", pg->bindir, tool);
    if (pg->as_postgres) {
        argv[n++] = "runuser";
        argv[n++] = "-u";
        argv[n++] = "postgres";
        argv[n++] = "--";
    }
    argv[n++] = path;
    for (size_t i = 0; args[i] && n < 23; i++)
        argv[n++] = args[i];
    argv[n] = NULL;

    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* Own session: a terminal's ^C reaches the collector, which stops
         * the server cleanly, not the server directly. */
        setsid();
        int in = open("/dev/null", O_RDONLY);
        int out = open(pg->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (in >= 0)
            dup2(in, 0);
        if (out >= 0) {
            dup2(out, 1);
            dup2(out, 2);
        }
        /* Nothing of ours (sockets, the log) leaks into the server. */
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        if (chdir("/") != 0)
            _exit(126);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int
s_mkdir(const char *path, mode_t mode, char *err, size_t errlen)
{
    if (mkdir(path, mode) == 0 || errno == EEXIST)
        return 0;
    pw_err(err, errlen, "mkdir %s: %s", path, strerror(errno));
    return -1;
}

/* shared_buffers of a new private cluster, in MiB: a sixteenth of the
 * machine's memory, between PostgreSQL's default (128) and 1,024. With
 * the default, the client queries over a year of history and the
 * writer's inserts took turns evicting each other's pages: under
 * tests/bench/fleet_load.sh every Ack was slower (p50 22 -> 16 ms with
 * 1 GiB, docs/performance.md, "A fleet of 1,000 agents"). */
static long
s_shared_buffers_mb(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    long mb = pages > 0 && size > 0 ? (long)((double)pages * size / 16
                                             / (1024 * 1024)) : 0;
    return mb < 128 ? 128 : mb > 1024 ? 1024 : mb;
}

static int
s_initdb(co_pg_t *pg, char *err, size_t errlen)
{
    char conf[CO_PG_PATH_MAX + 32];
    char ver[CO_PG_PATH_MAX + 32];
    struct stat st;

    snprintf(ver, sizeof ver, "%s/PG_VERSION", pg->pg_dir);
    if (stat(ver, &st) == 0)
        return 0;   /* an existing cluster: reuse it */
    if (s_mkdir(pg->pg_dir, 0700, err, errlen) != 0)
        return -1;
    if (pg->as_postgres && chown(pg->pg_dir, pg->pg_uid, pg->pg_gid) != 0) {
        pw_err(err, errlen, "chown %s postgres: %s", pg->pg_dir,
               strerror(errno));
        return -1;
    }
    const char *args[] = { "-D", pg->pg_dir, "-U", "parity", "-A", "trust",
                           "-E", "UTF8", "--no-instructions", NULL };
    int rc = s_run(pg, "initdb", args);
    if (rc != 0) {
        pw_err(err, errlen, "initdb -D %s failed (status %d), see %s",
               pg->pg_dir, rc, pg->log_path);
        return -1;
    }
    snprintf(conf, sizeof conf, "%s/postgresql.conf", pg->pg_dir);
    FILE *f = fopen(conf, "a");
    if (!f) {
        pw_err(err, errlen, "fopen %s: %s", conf, strerror(errno));
        return -1;
    }
    /* No TCP at all; the socket lives in the data directory, which only
     * the cluster's owner (and root) can enter. */
    fprintf(f, "\n# parity-collector: private cluster\n"
               "listen_addresses = ''\n"
               "unix_socket_directories = '%s'\n"
               "max_connections = 20\n"
               "shared_buffers = %ldMB\n"
               /* The BRIN on samples asks autovacuum to summarise each
                * range of 16 pages it fills (autosummarize); the queue
                * holds 256 and is worked off when autovacuum visits
                * the database. At a fleet's 12,000 samples a second
                * that is ~14 ranges a second: with the default visit
                * once a minute the requests are dropped ("request for
                * BRIN range summarization ... was not recorded", a log
                * line each) and the new runs' ranges stay unsummarised,
                * so every read of a run by the index scans them all. */
               "autovacuum_naptime = 10s\n"
               "logging_collector = off\n", pg->pg_dir,
            s_shared_buffers_mb());
    if (fclose(f) != 0) {
        pw_err(err, errlen, "fclose %s: %s", conf, strerror(errno));
        return -1;
    }
    return 0;
}

static int
s_create_db(co_pg_t *pg, char *err, size_t errlen)
{
    char ci[CO_PG_PATH_MAX + 64];
    int rc = -1;
    PGresult *r = NULL;

    snprintf(ci, sizeof ci, "host=%s dbname=postgres user=parity",
             pg->pg_dir);
    PGconn *c = PQconnectdb(ci);
    if (PQstatus(c) != CONNECTION_OK) {
        pw_err(err, errlen, "connect %s: %s", ci, PQerrorMessage(c));
        goto done;
    }
    r = PQexec(c, "SELECT 1 FROM pg_database WHERE datname = 'parity'");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        pw_err(err, errlen, "select pg_database: %s", PQerrorMessage(c));
        goto done;
    }
    if (PQntuples(r) == 0) {
        PQclear(r);
        r = PQexec(c, "CREATE DATABASE parity");
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            pw_err(err, errlen, "CREATE DATABASE parity: %s",
                   PQerrorMessage(c));
            goto done;
        }
    }
    rc = 0;
done:
    PQclear(r);
    PQfinish(c);
    return rc;
}

int
co_pg_lock_dir(const char *data_dir, char *err, size_t errlen)
{
    if (s_mkdir(data_dir, 0700, err, errlen) != 0)
        return -1;
    char lock[PATH_MAX + 32];
    snprintf(lock, sizeof lock, "%s/collector.lock", data_dir);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        pw_err(err, errlen, "open %s: %s", lock, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        pw_err(err, errlen, "data dir %s is in use by another "
               "parity-collector (pid %s; %s is locked)", data_dir,
               pid[0] ? pid : "?", lock);
        close(fd);
        return -1;
    }
    char mine[32];
    int mlen = snprintf(mine, sizeof mine, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0
        || pwrite(fd, mine, (size_t)mlen, 0) != mlen) {
        pw_err(err, errlen, "write %s: %s", lock, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Running as root: the server runs as the `postgres` user, who must
 * reach the data dir (abs) and write the log. 0, or -1 with err saying
 * which directory is in the way. */
static int
s_as_postgres(co_pg_t *pg, const char *abs, char *err, size_t errlen)
{
    struct stat st;
    struct passwd *pw = getpwnam("postgres");
    if (!pw) {
        pw_err(err, errlen, "running as root needs a `postgres` user for "
               "the server: getpwnam(\"postgres\") found none");
        return -1;
    }
    pg->as_postgres = true;
    pg->pg_uid = pw->pw_uid;
    pg->pg_gid = pw->pw_gid;
    /* The postgres user must be able to reach DATA_DIR/pg. */
    if (stat(abs, &st) == 0 && (st.st_mode & 0001) == 0
        && chmod(abs, (st.st_mode & 07777) | 0011) != 0) {
        pw_err(err, errlen, "chmod o+x %s: %s", abs, strerror(errno));
        return -1;
    }
    /* Every ancestor must let the postgres user through; changing modes
     * above the data dir is not ours to do, so say which. */
    char up[PATH_MAX];
    snprintf(up, sizeof up, "%s", abs);
    char *slash;
    while ((slash = strrchr(up, '/')) != NULL && slash != up) {
        *slash = '\0';
        if (stat(up, &st) == 0 && st.st_uid != pw->pw_uid
            && (st.st_mode & 0001) == 0
            && !(st.st_gid == pw->pw_gid && (st.st_mode & 0010))) {
            pw_err(err, errlen, "data dir %s: the postgres user cannot "
                   "reach it: %s is mode %04o (chmod o+x %s, or choose "
                   "another --data-dir)", abs, up,
                   (unsigned)(st.st_mode & 07777), up);
            return -1;
        }
    }
    /* The log file is written by tools running as postgres. */
    int fd = open(pg->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        int rc = fchown(fd, pg->pg_uid, pg->pg_gid);
        if (rc != 0)
            pw_err(err, errlen, "chown %s: %s", pg->log_path,
                   strerror(errno));
        close(fd);
        return rc != 0 ? -1 : 0;
    }
    return 0;
}

/* Adopt the server of pg_dir when it is up and answers, else start one.
 * 0, or -1 with err. */
static int
s_start(co_pg_t *pg, char *err, size_t errlen)
{
    const char *status_args[] = { "-D", pg->pg_dir, "status", NULL };
    bool up = s_run(pg, "pg_ctl", status_args) == 0;
    /* A server said to be running is adopted once it answers. One that
     * is still dying (its postmaster killed a moment ago, its children
     * not yet gone) never will: wait until it answers or is gone, then
     * start a new one. */
    for (int i = 0; up && i < 10 * atoi(CO_PG_WAIT_S); i++) {
        char ci[CO_PG_PATH_MAX + 64];
        snprintf(ci, sizeof ci, "host=%s dbname=postgres user=parity",
                 pg->pg_dir);
        if (PQping(ci) == PQPING_OK)
            break;
        usleep(100000);
        up = s_run(pg, "pg_ctl", status_args) == 0;
    }
    if (up)
        return 0;
    const char *start_args[] = { "-D", pg->pg_dir, "-l", pg->log_path,
                                 "-w", "-t", CO_PG_WAIT_S, "start", NULL };
    int rc = s_run(pg, "pg_ctl", start_args);
    if (rc != 0) {
        pw_err(err, errlen, "pg_ctl -D %s start failed (status %d), see %s",
               pg->pg_dir, rc, pg->log_path);
        return -1;
    }
    return 0;
}

co_pg_t *
co_pg_new(const char *data_dir, char *err, size_t errlen)
{
    co_pg_t *pg = calloc(1, sizeof *pg);
    char abs[PATH_MAX];

    if (!pg) {
        pw_err(err, errlen, "calloc co_pg: out of memory");
        return NULL;
    }
    /* One collector per data dir: a second one would adopt the running
     * server and stop it under the first one when it exits. */
    if ((pg->lock_fd = co_pg_lock_dir(data_dir, err, errlen)) < 0)
        goto fail;
    if (!realpath(data_dir, abs)) {
        pw_err(err, errlen, "realpath %s: %s", data_dir, strerror(errno));
        goto fail;
    }
    /* ".s.PGSQL.5432" and "pg/" must fit a Unix socket path. */
    if (strlen(abs) > 80) {
        pw_err(err, errlen, "data dir %s: path longer than 80 characters "
               "(the server's socket path would not fit)", abs);
        goto fail;
    }
    snprintf(pg->data_dir, sizeof pg->data_dir, "%s", abs);
    snprintf(pg->pg_dir, sizeof pg->pg_dir, "%s/pg", abs);
    snprintf(pg->log_path, sizeof pg->log_path, "%s/pg.log", abs);
    snprintf(pg->conninfo, sizeof pg->conninfo,
             "host=%s dbname=parity user=parity", pg->pg_dir);
    if (s_find_bindir(pg->bindir, sizeof pg->bindir) != 0) {
        const char *env = getenv("PARITY_PG_BINDIR");
        if (env && *env)
            pw_err(err, errlen, "no PostgreSQL binaries: PARITY_PG_BINDIR=%s "
                   "has no executable initdb", env);
        else
            pw_err(err, errlen, "no PostgreSQL binaries: looked in "
                   "/usr/lib/postgresql/*/bin and pg_config --bindir "
                   "(set PARITY_PG_BINDIR, or use --db)");
        goto fail;
    }
    if ((geteuid() == 0 && s_as_postgres(pg, abs, err, errlen) != 0) ||
        s_initdb(pg, err, errlen) != 0 || s_start(pg, err, errlen) != 0)
        goto fail;
    pg->running = true;
    if (s_create_db(pg, err, errlen) != 0)
        goto fail_stop;
    return pg;
fail_stop:
    co_pg_stop(pg, NULL, 0);
fail:
    if (pg->lock_fd >= 0)
        close(pg->lock_fd);
    free(pg);
    return NULL;
}

const char *
co_pg_conninfo(const co_pg_t *pg)
{
    return pg->conninfo;
}

const char *
co_pg_socket_dir(const co_pg_t *pg)
{
    return pg->pg_dir;
}

int
co_pg_stop(co_pg_t *pg, char *err, size_t errlen)
{
    if (!pg || !pg->running)
        return 0;
    /* Stopped behind our back (pg_ctl stop by hand): nothing to do. */
    const char *status_args[] = { "-D", pg->pg_dir, "status", NULL };
    if (s_run(pg, "pg_ctl", status_args) == 3) {
        pg->running = false;
        return 0;
    }
    const char *args[] = { "-D", pg->pg_dir, "-m", "fast", "-w", "-t",
                           CO_PG_WAIT_S, "stop", NULL };
    int rc = s_run(pg, "pg_ctl", args);
    if (rc != 0) {
        pw_err(err, errlen, "pg_ctl -D %s stop -m fast failed (status %d), "
               "see %s", pg->pg_dir, rc, pg->log_path);
        return -1;
    }
    pg->running = false;
    return 0;
}

void
co_pg_destroy(co_pg_t **pg)
{
    if (!pg || !*pg)
        return;
    if ((*pg)->lock_fd >= 0)
        close((*pg)->lock_fd);   /* releases the flock */
    free(*pg);
    *pg = NULL;
}

int
co_pg_renice_once(int pid, int nice, int *done_pid)
{
    if (pid <= 0 || pid == *done_pid)
        return 0;
    *done_pid = pid;
    if (co_pg_renice(pid, nice) == 0)
        return 1;
    if (errno == EAGAIN)
        *done_pid = 0;
    return -1;
}

int
co_pg_renice(int pid, int nice)
{
    char path[64], text[16];
    if (pid <= 0 || nice < 0 || nice > 19) {
        errno = EINVAL;
        return -1;
    }
    if (setpriority(PRIO_PROCESS, (id_t)pid, nice) != 0)
        return -1;
    snprintf(path, sizeof path, "/proc/%d/autogroup", pid);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;   /* a kernel without autogroup */
    int len = snprintf(text, sizeof text, "%d\n", nice);
    ssize_t n = write(fd, text, (size_t)len);
    int saved = n < 0 ? errno : EIO;
    close(fd);
    if (n == len)
        return 0;
    errno = saved;
    return -1;
}
