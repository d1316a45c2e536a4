/* ag_calstore.c -- see ag_calstore.h. */
#include "ag_calstore.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vd_verdict.h"
#include "vd_name.h"

#define S_MAGIC "parity-calibration"
/* Longest line read (a version-2 line is at most about 75 bytes). */
#define S_LINE_MAX 160

static void s_say(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
s_say(char *out, size_t len, const char *fmt, ...)
{
    if (!out || len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, len, fmt, ap);
    va_end(ap);
}

/* mkdir -p for the cache's two levels at most ($HOME/.cache/parity). */
static int
s_mkdirs(char *path, char *err, size_t errlen)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int r = mkdir(path, 0700);
        *p = '/';
        if (r != 0 && errno != EEXIST) {
            s_say(err, errlen, "mkdir(%.*s): %s", (int)(p - path), path,
                  strerror(errno));
            return -1;
        }
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        s_say(err, errlen, "mkdir(%s): %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int
ag_calstore_path(const char *dir, char *out, size_t outlen, char *err,
                 size_t errlen)
{
    char base[4096], host[256];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int w;
    if (dir)
        w = snprintf(base, sizeof base, "%s", dir);
    else if (xdg && xdg[0] == '/')
        w = snprintf(base, sizeof base, "%s/parity", xdg);
    else if (home && home[0] == '/')
        w = snprintf(base, sizeof base, "%s/.cache/parity", home);
    else {
        s_say(err, errlen, "no cache directory: neither XDG_CACHE_HOME nor "
              "HOME is an absolute path");
        return AG_CALSTORE_ERR;
    }
    if (w < 0 || (size_t)w >= sizeof base) {
        s_say(err, errlen, "cache directory path too long");
        return AG_CALSTORE_ERR;
    }
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    /* The host name becomes a file name: nothing but [A-Za-z0-9._-]. */
    for (char *p = host; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '.' || *p == '-'))
            *p = '_';
    if (s_mkdirs(base, err, errlen) != 0)
        return AG_CALSTORE_ERR;
    w = snprintf(out, outlen, "%s/calibration-%s", base, host);
    if (w < 0 || (size_t)w >= outlen) {
        s_say(err, errlen, "calibration store path too long");
        return AG_CALSTORE_ERR;
    }
    return AG_CALSTORE_OK;
}

/* The other metrics' fields of a version-2 line after its wall time:
 * " CPU TC RSS", each a number >= 0 and at most AG_CALSTORE_MAX_MORE or
 * "-" (no value: NAN). 0, or -1. */
static int
s_more(const char *p, double more[AG_CALSTORE_MORE])
{
    for (int k = 0; k < AG_CALSTORE_MORE; k++) {
        if (*p++ != ' ')
            return -1;
        if (*p == '-' && (p[1] == ' ' || p[1] == '\0')) {
            more[k] = NAN;
            p++;
            continue;
        }
        char *e;
        errno = 0;
        double x = *p == ' ' || *p == '\0' ? NAN : strtod(p, &e);
        if (isnan(x) || errno || !(x >= 0) || x > AG_CALSTORE_MAX_MORE ||
            (*e != ' ' && *e != '\0'))
            return -1;
        more[k] = x;
        p = e;
    }
    return *p == '\0' ? 0 : -1;
}

/* Parse text[0..len-1]; 0, or -1 with why (line numbers from 1). A
 * version-1 file's runs have no other metrics (NAN). */
static int
s_parse(const char *text, size_t len, double *wall, int64_t *taken,
        double *const *more, size_t *n, char *why, size_t whylen)
{
    size_t count = 0, line = 1;
    const char *p = text, *end = text + len;
    const char *nl = memchr(p, '\n', len);
    char head[64], old[64];
    snprintf(head, sizeof head, "%s %d", S_MAGIC, AG_CALSTORE_VERSION);
    snprintf(old, sizeof old, "%s 1", S_MAGIC);
    int version = 0;
    if (nl && (size_t)(nl - p) == strlen(head) &&
        memcmp(p, head, strlen(head)) == 0)
        version = AG_CALSTORE_VERSION;
    else if (nl && (size_t)(nl - p) == strlen(old) &&
             memcmp(p, old, strlen(old)) == 0)
        version = 1;
    if (!version) {
        s_say(why, whylen, "line 1: expected \"%s\" (or an older \"%s\")",
              head, old);
        return -1;
    }
    if (memchr(text, '\0', len)) {
        s_say(why, whylen, "a NUL byte: not a text file");
        return -1;
    }
    for (p = nl + 1; p < end; p = nl + 1) {
        line++;
        if (!(nl = memchr(p, '\n', (size_t)(end - p)))) {
            s_say(why, whylen, "line %zu: no newline at the end", line);
            return -1;
        }
        if (count >= AG_CALSTORE_MAX) {
            s_say(why, whylen, "more than %d runs", AG_CALSTORE_MAX);
            return -1;
        }
        char buf[S_LINE_MAX], *e1, *e2 = NULL;
        size_t l = (size_t)(nl - p);
        if (l >= sizeof buf) {
            s_say(why, whylen, "line %zu: longer than %zu bytes", line,
                  sizeof buf - 1);
            return -1;
        }
        memcpy(buf, p, l);
        buf[l] = '\0';
        errno = 0;
        long long t = strtoll(buf, &e1, 10);
        double x = e1 != buf && *e1 == ' ' ? strtod(e1 + 1, &e2) : NAN;
        double m[AG_CALSTORE_MORE] = { NAN, NAN, NAN };
        bool tail = e2 && (version == 1 ? !*e2 : s_more(e2, m) == 0);
        if (e1 == buf || *e1 != ' ' || errno || t < 0 || e2 == e1 + 1 ||
            !tail || !isfinite(x) || !(x > 0) ||
            x > AG_CALSTORE_MAX_WALL_US || buf[0] == ' ' || e1[1] == ' ') {
            if (version == 1)
                s_say(why, whylen, "line %zu: expected TAKEN_AT_US WALL_US "
                      "(an integer >= 0, a time > 0 and <= %g us)", line,
                      AG_CALSTORE_MAX_WALL_US);
            else
                s_say(why, whylen, "line %zu: expected TAKEN_AT_US WALL_US "
                      "CPU_US TASK_CLOCK_US PEAK_RSS_KB (an integer >= 0, a "
                      "time > 0 and <= %g us, then three numbers >= 0 or -)",
                      line, AG_CALSTORE_MAX_WALL_US);
            return -1;
        }
        for (int k = 0; k < AG_CALSTORE_MORE; k++)
            more[k][count] = m[k];
        wall[count] = x;
        taken[count] = (int64_t)t;
        count++;
    }
    *n = count;
    return 0;
}

/* Read path (regular file, bounded) and parse it; a bad one is renamed
 * to PATH.bad and said in note. Caller holds the lock. wall and taken
 * hold AG_CALSTORE_MAX. */
static int
s_read(const char *path, double *wall, int64_t *taken, double *const *more,
       size_t *n, char *note, size_t notelen, char *err, size_t errlen)
{
    char *text = NULL, why[256] = "";
    int rc = AG_CALSTORE_ERR;
    struct stat st;
    *n = 0;
    /* O_NONBLOCK: a FIFO put there must not hang us. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT)
            return AG_CALSTORE_OK;
        if (errno != ELOOP) {
            s_say(err, errlen, "calibration store %s: open: %s", path,
                  strerror(errno));
            return AG_CALSTORE_ERR;
        }
        snprintf(why, sizeof why, "a symbolic link, not a file");
    } else if (fstat(fd, &st) != 0) {
        s_say(err, errlen, "calibration store %s: fstat: %s", path,
              strerror(errno));
        goto done;
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(why, sizeof why, "not a regular file");
    } else if (st.st_size > (off_t)AG_CALSTORE_MAX_BYTES) {
        snprintf(why, sizeof why, "%lld bytes, more than the limit of %u",
                 (long long)st.st_size, AG_CALSTORE_MAX_BYTES);
    } else {
        size_t len = 0;
        if (!(text = malloc(AG_CALSTORE_MAX_BYTES + 1))) {
            s_say(err, errlen, "calibration store: out of memory");
            goto done;
        }
        /* Read to EOF, at most the limit plus one byte: a file that grew
         * since fstat is still bounded. */
        for (;;) {
            ssize_t r = read(fd, text + len, AG_CALSTORE_MAX_BYTES + 1 - len);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0) {
                s_say(err, errlen, "calibration store %s: read: %s", path,
                      strerror(errno));
                goto done;
            }
            len += (size_t)r;
            if (r == 0 || len > AG_CALSTORE_MAX_BYTES)
                break;
        }
        if (len > AG_CALSTORE_MAX_BYTES)
            snprintf(why, sizeof why, "more than %u bytes",
                     AG_CALSTORE_MAX_BYTES);
        else if (s_parse(text, len, wall, taken, more, n, why, sizeof why)
                 == 0) {
            rc = AG_CALSTORE_OK;
            goto done;
        }
    }
    *n = 0;
    char bad[4200];
    if (snprintf(bad, sizeof bad, "%s.bad", path) >= (int)sizeof bad ||
        rename(path, bad) != 0) {
        s_say(err, errlen, "calibration store %s: %s, and it cannot be set "
              "aside: %s", path, why, strerror(errno));
        goto done;
    }
    s_say(note, notelen, "calibration store %s: %s; set aside as %s, "
          "starting a new store", path, why, bad);
    rc = AG_CALSTORE_OK;
done:
    if (fd >= 0)
        close(fd);
    free(text);
    return rc;
}

/* The store's lock, held exclusively; -1 with err. */
static int
s_lock(const char *path, char *err, size_t errlen)
{
    char lock[4200];
    if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock) {
        s_say(err, errlen, "calibration store path too long");
        return -1;
    }
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        s_say(err, errlen, "calibration store lock %s: %s", lock,
              strerror(errno));
        return -1;
    }
    while (flock(fd, LOCK_EX) != 0) {
        if (errno == EINTR)
            continue;
        s_say(err, errlen, "flock(%s): %s", lock, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* The store as read under its lock: room for AG_CALSTORE_MAX runs, n
 * of them read. s_hold takes the lock and reads; s_release frees and
 * unlocks whatever s_hold got, also after it failed. */
typedef struct {
    double *wall;
    int64_t *taken;
    double *more[AG_CALSTORE_MORE];   /* cpu, task clock, peak RSS */
    size_t n;
    int lock;
} s_held_t;

static void
s_release(s_held_t *h)
{
    if (h->lock >= 0)
        close(h->lock);
    free(h->wall);
    free(h->taken);
    for (int k = 0; k < AG_CALSTORE_MORE; k++)
        free(h->more[k]);
    *h = (s_held_t){ .lock = -1 };
}

static int
s_hold(const char *path, s_held_t *h, char *note, size_t notelen, char *err,
       size_t errlen)
{
    h->wall = malloc(AG_CALSTORE_MAX * sizeof *h->wall);
    h->taken = malloc(AG_CALSTORE_MAX * sizeof *h->taken);
    bool have = h->wall && h->taken;
    for (int k = 0; k < AG_CALSTORE_MORE; k++)
        have = (h->more[k] = malloc(AG_CALSTORE_MAX * sizeof *h->more[k]))
               && have;
    h->n = 0;
    h->lock = -1;
    if (note && notelen)
        note[0] = '\0';
    if (!have) {
        s_say(err, errlen, "calibration store: out of memory");
        return -1;
    }
    if ((h->lock = s_lock(path, err, errlen)) < 0)
        return -1;
    return s_read(path, h->wall, h->taken, h->more, &h->n, note, notelen,
                  err, errlen);
}

int
ag_calstore_load(const char *path, double **wall_us, size_t *n, char *note,
                 size_t notelen, char *err, size_t errlen)
{
    s_held_t h;
    int rc = s_hold(path, &h, note, notelen, err, errlen);
    *wall_us = rc == 0 ? h.wall : NULL;
    *n = rc == 0 ? h.n : 0;
    if (rc == 0)
        h.wall = NULL;
    s_release(&h);
    return rc == 0 ? AG_CALSTORE_OK : AG_CALSTORE_ERR;
}

int
ag_calstore_load_runs(const char *path, ag_calstore_runs_t *out, char *note,
                      size_t notelen, char *err, size_t errlen)
{
    s_held_t h;
    int rc = s_hold(path, &h, note, notelen, err, errlen);
    memset(out, 0, sizeof *out);
    if (rc == 0) {
        out->wall_us = h.wall;
        for (int k = 0; k < AG_CALSTORE_MORE; k++) {
            out->more[k] = h.more[k];
            h.more[k] = NULL;
        }
        out->n = h.n;
        h.wall = NULL;
    }
    s_release(&h);
    return rc == 0 ? AG_CALSTORE_OK : AG_CALSTORE_ERR;
}

void
ag_calstore_runs_free(ag_calstore_runs_t *r)
{
    free(r->wall_us);
    for (int k = 0; k < AG_CALSTORE_MORE; k++)
        free(r->more[k]);
    memset(r, 0, sizeof *r);
}

/* A number of the other metrics, or "-" for none. */
static void
s_put_more(FILE *f, double x)
{
    if (isnan(x))
        fputs(" -", f);
    else
        fprintf(f, " %.3f", x);
}

/* Write the runs to path.tmp.PID, fsync, rename over path. */
static int
s_write(const char *path, const double *wall, const int64_t *taken,
        double *const *more, size_t n, char *err, size_t errlen)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                  0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        s_say(err, errlen, "calibration store %s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return AG_CALSTORE_ERR;
    }
    fprintf(f, "%s %d\n", S_MAGIC, AG_CALSTORE_VERSION);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%lld %.3f", (long long)taken[i], wall[i]);
        for (int k = 0; k < AG_CALSTORE_MORE; k++)
            s_put_more(f, more[k][i]);
        fputc('\n', f);
    }
    bool bad = fflush(f) != 0 || ferror(f) || fsync(fd) != 0;
    int saved = errno;
    if (fclose(f) != 0 || bad) {
        s_say(err, errlen, "calibration store %s: write: %s", tmp,
              strerror(bad ? saved : errno));
        unlink(tmp);
        return AG_CALSTORE_ERR;
    }
    if (rename(tmp, path) != 0) {
        s_say(err, errlen, "calibration store: rename(%s, %s): %s", tmp,
              path, strerror(errno));
        unlink(tmp);
        return AG_CALSTORE_ERR;
    }
    return AG_CALSTORE_OK;
}

int
ag_calstore_append(const char *path, const double *wall_us, size_t n,
                   int64_t taken_at_us, char *note, size_t notelen,
                   char *err, size_t errlen)
{
    const double *none[AG_CALSTORE_MORE] = { NULL, NULL, NULL };
    return ag_calstore_append_runs(path, wall_us, none, n, taken_at_us, note,
                                   notelen, err, errlen);
}

int
ag_calstore_append_runs(const char *path, const double *wall_us,
                        const double *const *more, size_t n,
                        int64_t taken_at_us, char *note, size_t notelen,
                        char *err, size_t errlen)
{
    if (note && notelen)
        note[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(wall_us[i]) || !(wall_us[i] > 0) ||
            wall_us[i] > AG_CALSTORE_MAX_WALL_US) {
            s_say(err, errlen, "calibration run %zu is %g: not a time in "
                  "(0, %g] us", i, wall_us[i], AG_CALSTORE_MAX_WALL_US);
            return AG_CALSTORE_ERR;
        }
        for (int k = 0; k < AG_CALSTORE_MORE; k++)
            if (more[k] && !isnan(more[k][i]) && !(more[k][i] >= 0 &&
                                                   more[k][i] <=
                                                   AG_CALSTORE_MAX_MORE)) {
                s_say(err, errlen, "calibration run %zu: %s is %g: not in "
                      "[0, %g]", i, k == 0 ? "cpu_us" : k == 1 ?
                      "task_clock_us" : "peak_rss_kb", more[k][i],
                      AG_CALSTORE_MAX_MORE);
                return AG_CALSTORE_ERR;
            }
    }
    s_held_t h;
    int rc = AG_CALSTORE_ERR;
    if (s_hold(path, &h, note, notelen, err, errlen) == 0) {
        /* Keep the newest AG_CALSTORE_MAX of the old runs and the new. */
        size_t keep_new = n < AG_CALSTORE_MAX ? n : AG_CALSTORE_MAX;
        size_t keep_old = h.n + keep_new > AG_CALSTORE_MAX
                          ? AG_CALSTORE_MAX - keep_new : h.n;
        memmove(h.wall, h.wall + (h.n - keep_old), keep_old * sizeof *h.wall);
        memmove(h.taken, h.taken + (h.n - keep_old),
                keep_old * sizeof *h.taken);
        for (int k = 0; k < AG_CALSTORE_MORE; k++)
            memmove(h.more[k], h.more[k] + (h.n - keep_old),
                    keep_old * sizeof *h.more[k]);
        for (size_t i = 0; i < keep_new; i++) {
            size_t from = n - keep_new + i;
            h.wall[keep_old + i] = wall_us[from];
            h.taken[keep_old + i] = taken_at_us;
            for (int k = 0; k < AG_CALSTORE_MORE; k++)
                h.more[k][keep_old + i] = more[k] ? more[k][from] : NAN;
        }
        rc = s_write(path, h.wall, h.taken, h.more, keep_old + keep_new, err,
                     errlen);
    }
    s_release(&h);
    return rc;
}

/* q90 - q10 of x[0..n-1] through vd_floor (the spec's statistic); 0
 * when fewer than VD_FLOOR_MIN_SAMPLES. */
static int
s_floor_of(const double *x, size_t n, double *floor_us, char *err,
           size_t errlen)
{
    bool dflt;
    *floor_us = 0;
    if (n < VD_FLOOR_MIN_SAMPLES)
        return 0;
    if (vd_floor(x, n, floor_us, &dflt, err, errlen) != VD_OK)
        return -1;
    return 0;
}

int
ag_calstore_floor(const double *store, size_t store_n, const double *session,
                  size_t session_n, bool fresh, ag_floor_t *out, char *err,
                  size_t errlen)
{
    ag_floor_t f = { .store_n = store_n, .session_n = session_n };
    double *pool = NULL;
    int rc = AG_CALSTORE_ERR;
    if (s_floor_of(store, store_n, &f.store_floor_us, err, errlen) != 0 ||
        s_floor_of(session, session_n, &f.session_floor_us, err,
                   errlen) != 0)
        return AG_CALSTORE_ERR;
    f.why = fresh ? AG_FLOOR_WHY_FRESH
          : store_n == 0 ? AG_FLOOR_WHY_NO_STORE
          : f.store_floor_us > 0 && f.session_floor_us >
                AG_CALSTORE_NOISY_RATIO * f.store_floor_us
              ? AG_FLOOR_WHY_NOISY : AG_FLOOR_WHY_STORE;
    const double *use = session;
    size_t n = session_n;
    if (f.why == AG_FLOOR_WHY_STORE) {
        /* The newest AG_CALSTORE_MAX of the store then this session. */
        size_t from_session = session_n < AG_CALSTORE_MAX
                              ? session_n : AG_CALSTORE_MAX;
        size_t from_store = store_n + from_session > AG_CALSTORE_MAX
                            ? AG_CALSTORE_MAX - from_session : store_n;
        n = from_store + from_session;
        if (!(pool = malloc((n ? n : 1) * sizeof *pool))) {
            s_say(err, errlen, "floor: out of memory");
            return AG_CALSTORE_ERR;
        }
        /* Either side may be empty, and then NULL: memcpy wants a
         * pointer even for 0 bytes. */
        if (from_store)
            memcpy(pool, store + (store_n - from_store),
                   from_store * sizeof *pool);
        if (from_session)
            memcpy(pool + from_store,
                   session + (session_n - from_session),
                   from_session * sizeof *pool);
        use = pool;
    }
    if (vd_floor(use, n, &f.floor_us, &f.is_default, err, errlen) != VD_OK)
        goto done;
    f.samples = n;
    f.source = f.is_default ? AG_FLOOR_DEFAULT
             : f.why == AG_FLOOR_WHY_STORE ? AG_FLOOR_POOLED
                                           : AG_FLOOR_SESSION;
    *out = f;
    rc = AG_CALSTORE_OK;
done:
    free(pool);
    return rc;
}

void
ag_floor_describe(const ag_floor_t *f, char *out, size_t outlen)
{
    char tail[200] = "";
    if (f->why == AG_FLOOR_WHY_NOISY)
        snprintf(tail, sizeof tail, "; this invocation's runs are much "
                 "noisier than the store's (q90 - q10 %.0f us against "
                 "%.0f us, over %.0fx), so they are not pooled",
                 f->session_floor_us, f->store_floor_us,
                 AG_CALSTORE_NOISY_RATIO);
    else if (f->why == AG_FLOOR_WHY_FRESH)
        snprintf(tail, sizeof tail, "; --fresh-floor: the store (%zu runs) "
                 "is not used", f->store_n);
    else if (f->why == AG_FLOOR_WHY_NO_STORE)
        snprintf(tail, sizeof tail, "; no calibration store yet");
    if (f->source == AG_FLOOR_DEFAULT)
        snprintf(out, outlen, "the default: fewer than %d calibration runs "
                 "(%zu)%s", VD_FLOOR_MIN_SAMPLES, f->samples, tail);
    else if (f->source == AG_FLOOR_POOLED)
        snprintf(out, outlen, "q90 - q10 of this host's last %zu no-op runs "
                 "(%zu from the calibration store, %zu now)", f->samples,
                 f->samples - (f->session_n < f->samples ? f->session_n
                                                          : f->samples),
                 f->session_n < f->samples ? f->session_n : f->samples);
    else
        snprintf(out, outlen, "q90 - q10 of this invocation's %zu no-op "
                 "runs alone%s", f->samples, tail);
}

static const char *const s_source_names[AG_FLOOR_SOURCE_COUNT] = {
    "pooled", "session", "default" };
VD_NAME_FN(ag_floor_source_name, ag_floor_source_t, s_source_names,
           AG_FLOOR_SOURCE_COUNT)

static const char *const s_why_names[AG_FLOOR_WHY_COUNT] = {
    "store", "fresh", "noisy", "no_store" };
VD_NAME_FN(ag_floor_why_name, ag_floor_why_t, s_why_names, AG_FLOOR_WHY_COUNT)
