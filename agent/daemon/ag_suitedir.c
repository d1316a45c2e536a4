/* ag_suitedir.c -- see ag_suitedir.h. */
#include "ag_suitedir.h"

#include "ag_against.h"
#include "ag_log.h"
#include "ag_suite.h"
#include "pw_clock.h"
#include "pw_limits.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define S_ERR 512

static void
s_sha256_hex(const char *data, size_t len, char hex[65])
{
    unsigned char out[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(out, (const unsigned char *)data, len);
    for (size_t i = 0; i < sizeof out; i++)
        snprintf(hex + 2 * i, 3, "%02x", out[i]);
}

int
ag_suitedir_load(const char *path, const ag_var_t *vars, size_t nvars,
                 const ag_var_t *against, size_t nagainst, ag_suite_t **out,
                 char hex[65], char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    if (ag_suite_read(path, &text, &len, err, errlen) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    s_sha256_hex(text, len, hex);
    int rc = ag_suite_load_buffer(path, text, len, vars, nvars, out, err,
                                  errlen);
    if (rc == AG_SUITE_OK && nagainst &&
        ag_against_add(*out, text, len, vars, nvars, against, nagainst, err,
                       errlen) != 0) {
        ag_suite_destroy(out);
        rc = AG_SUITE_ERR;
    }
    free(text);
    return rc;
}

void
ag_suitedir_destroy(ag_suitedir_t **lp)
{
    if (!lp || !*lp)
        return;
    ag_suitedir_t *l = *lp;
    for (size_t i = 0; i < l->count; i++) {
        ag_suite_entry_t *s = &l->entries[i];
        free(s->name);
        free(s->stem);
        free(s->path);
        free(s->revision);
        for (size_t b = 0; b < s->benchmark_count; b++)
            free(s->benchmarks[b]);
        free(s->benchmarks);
    }
    free(l->entries);
    free(l);
    *lp = NULL;
}

static int
s_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether a file name is one a scan reads. */
static bool
s_suite_file(const char *name)
{
    size_t l = strlen(name);
    if (name[0] == '.')
        return false;
    return (l > 5 && strcmp(name + l - 5, ".yaml") == 0)
        || (l > 4 && strcmp(name + l - 4, ".yml") == 0);
}

/* The suite files' names in dir, sorted; at most AG_SUITEDIR_MAX. */
static int
s_list_files(const char *dir, char **names, size_t *count, char *err,
             size_t errlen)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t nn = 0;
    if (!d) {
        snprintf(err, errlen, "--suites %s: opendir: %s", dir,
                 strerror(errno));
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        if (!s_suite_file(de->d_name))
            continue;
        if (nn == AG_SUITEDIR_MAX) {
            ag_logf("suite_invalid", "%s: more than %u suite files; %s and "
                    "the rest are not offered", dir, AG_SUITEDIR_MAX,
                    de->d_name);
            break;
        }
        names[nn++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof names[0], s_name_cmp);
    *count = nn;
    return 0;
}

/* Load dir/file into *si; false (logged) when it is not offered. */
static bool
s_load_entry(const char *dir, const char *file, ag_suite_entry_t *si)
{
    char path[4096], e[S_ERR];
    ag_suite_t *suite = NULL;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (ag_suitedir_load(path, NULL, 0, NULL, 0, &suite, si->digest, e,
                         sizeof e)
        != AG_SUITE_OK) {
        ag_logf("suite_invalid", "%s (not offered)", e);
        return false;
    }
    if (strcmp(suite->name, PW_SELFTEST_SUITE) == 0) {
        ag_logf("suite_invalid", "%s: the suite name \"%s\" is reserved "
                "for the built-in A/A self-test (not offered)", path,
                PW_SELFTEST_SUITE);
        ag_suite_destroy(&suite);
        return false;
    }
    si->name = strdup(suite->name);
    si->path = strdup(path);
    si->stem = strdup(file);
    char *dot = si->stem ? strrchr(si->stem, '.') : NULL;
    if (dot)
        *dot = 0;
    si->revision = suite->revision ? strdup(suite->revision) : NULL;
    si->benchmarks = calloc(suite->benchmark_count + 1, sizeof(char *));
    for (size_t b = 0; si->benchmarks && b < suite->benchmark_count; b++)
        si->benchmarks[si->benchmark_count++] =
            strdup(suite->benchmarks[b].name);
    ag_suite_destroy(&suite);
    return true;
}

ag_suitedir_t *
ag_suitedir_scan(const char *dir, char *err, size_t errlen)
{
    char *names[AG_SUITEDIR_MAX];
    size_t nn = 0;
    if (s_list_files(dir, names, &nn, err, errlen) != 0)
        return NULL;
    ag_suitedir_t *l = calloc(1, sizeof *l);
    if (l)
        l->entries = calloc(nn ? nn : 1, sizeof *l->entries);
    if (!l || !l->entries) {
        snprintf(err, errlen, "calloc: out of memory");
        free(l);
        l = NULL;
    }
    for (size_t i = 0; i < nn; i++) {
        if (l && names[i] && s_load_entry(dir, names[i],
                                          &l->entries[l->count]))
            l->count++;
        free(names[i]);
    }
    return l;
}

const ag_suite_entry_t *
ag_suitedir_find(const ag_suitedir_t *l, const char *name, char *why,
                 size_t whylen)
{
    size_t len = name ? strlen(name) : 0;
    bool plain = len > 0 && len <= 128 && name[0] != '.';
    for (size_t i = 0; plain && i < len; i++) {
        char c = name[i];
        plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    }
    if (!plain) {
        snprintf(why, whylen, "suite \"%.128s\" is not a plain suite name "
                 "(letters, digits, '_', '-', '.'; no paths)",
                 name ? name : "");
        return NULL;
    }
    for (size_t i = 0; l && i < l->count; i++)
        if (strcmp(l->entries[i].name, name) == 0
            || strcmp(l->entries[i].stem, name) == 0)
            return &l->entries[i];
    snprintf(why, whylen, "unknown suite \"%s\": not in this agent's "
             "--suites directory", name);
    return NULL;
}

static bool
s_entry_same(const ag_suite_entry_t *a, const ag_suite_entry_t *b)
{
    if (strcmp(a->name, b->name) != 0 || strcmp(a->path, b->path) != 0
        || strcmp(a->digest, b->digest) != 0
        || a->benchmark_count != b->benchmark_count
        || !a->revision != !b->revision
        || (a->revision && strcmp(a->revision, b->revision) != 0))
        return false;
    for (size_t i = 0; i < a->benchmark_count; i++)
        if (strcmp(a->benchmarks[i], b->benchmarks[i]) != 0)
            return false;
    return true;
}

bool
ag_suitedir_same(const ag_suitedir_t *a, const ag_suitedir_t *b)
{
    size_t na = a ? a->count : 0, nb = b ? b->count : 0;
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (!s_entry_same(&a->entries[i], &b->entries[i]))
            return false;
    return true;
}

/* The entry of l named name, NULL when none. */
static const ag_suite_entry_t *
s_by_name(const ag_suitedir_t *l, const char *name)
{
    for (size_t i = 0; l && i < l->count; i++)
        if (strcmp(l->entries[i].name, name) == 0)
            return &l->entries[i];
    return NULL;
}

/* Append " KEY=NAME" (the first of its kind) or ",NAME" to text. */
static void
s_diff_add(char *text, size_t textlen, const char *key, bool *first,
           const char *name)
{
    size_t at = strlen(text);
    if (at + 1 >= textlen)
        return;
    if (*first)
        snprintf(text + at, textlen - at, "%s%s%s", at ? " " : "", key,
                 name);
    else
        snprintf(text + at, textlen - at, ",%s", name);
    *first = false;
}

void
ag_suitedir_diff(const ag_suitedir_t *a, const ag_suitedir_t *b,
                 char *text, size_t textlen)
{
    bool fa = true, fr = true, fc = true;
    text[0] = 0;
    for (size_t i = 0; b && i < b->count; i++)
        if (!s_by_name(a, b->entries[i].name))
            s_diff_add(text, textlen, "added=", &fa, b->entries[i].name);
    for (size_t i = 0; a && i < a->count; i++)
        if (!s_by_name(b, a->entries[i].name))
            s_diff_add(text, textlen, "removed=", &fr, a->entries[i].name);
    for (size_t i = 0; b && i < b->count; i++) {
        const ag_suite_entry_t *old = s_by_name(a, b->entries[i].name);
        if (old && !s_entry_same(old, &b->entries[i]))
            s_diff_add(text, textlen, "changed=", &fc, b->entries[i].name);
    }
    if (!text[0])
        snprintf(text, textlen, "none");
}

/* ---------------------------------------------------------------- watch */

/* What makes a change: a suite file written and closed, created,
 * renamed in or out, deleted, or its mode changed (it may have become
 * unreadable); the directory itself removed or moved. IN_MODIFY is left
 * out: a write in progress ends with IN_CLOSE_WRITE. */
#define S_WATCH_MASK (IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO \
                      | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB \
                      | IN_DELETE_SELF | IN_MOVE_SELF)

struct ag_suitedir_watch {
    char *dir;
    int fd;                  /* inotify instance */
    int wd;                  /* the directory's watch; -1 while it is gone */
    bool dirty;              /* events seen, not yet reported */
    int64_t first_ms;        /* the burst's first event */
    int64_t last_ms;         /* its latest */
    int64_t rewatch_ms;      /* when to look for a vanished directory */
    int wake_fd;             /* readable: return at once; -1 none */
};

ag_suitedir_watch_t *
ag_suitedir_watch_new(const char *dir, char *err, size_t errlen)
{
    ag_suitedir_watch_t *w = calloc(1, sizeof *w);
    if (w)
        w->wake_fd = -1;
    if (!w || !(w->dir = strdup(dir))) {
        snprintf(err, errlen, "calloc: out of memory");
        free(w);
        return NULL;
    }
    w->wd = -1;
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd < 0) {
        snprintf(err, errlen, "--suites %s: inotify_init1: %s", dir,
                 strerror(errno));
        goto fail;
    }
    w->wd = inotify_add_watch(w->fd, dir, S_WATCH_MASK | IN_ONLYDIR);
    if (w->wd < 0) {
        snprintf(err, errlen, "--suites %s: inotify_add_watch: %s", dir,
                 strerror(errno));
        goto fail;
    }
    return w;
fail:
    ag_suitedir_watch_destroy(&w);
    return NULL;
}

void
ag_suitedir_watch_destroy(ag_suitedir_watch_t **wp)
{
    if (!wp || !*wp)
        return;
    ag_suitedir_watch_t *w = *wp;
    if (w->fd >= 0)
        close(w->fd);
    free(w->dir);
    free(w);
    *wp = NULL;
}

static void
s_watch_event(ag_suitedir_watch_t *w, int64_t now)
{
    if (!w->dirty)
        w->first_ms = now;
    w->dirty = true;
    w->last_ms = now;
}

/* Read every queued event; note the ones that count. */
static void
s_watch_read(ag_suitedir_watch_t *w, int64_t now)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(w->fd, buf, sizeof buf);
        if (n <= 0)
            return;   /* EAGAIN: all read */
        for (char *at = buf; at < buf + n;) {
            const struct inotify_event *ev = (const void *)at;
            at += sizeof *ev + ev->len;
            if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
                /* The directory went: scan (it fails, nothing is
                 * offered) and look for it again. */
                if (w->wd >= 0)
                    inotify_rm_watch(w->fd, w->wd);
                w->wd = -1;
                w->rewatch_ms = now + AG_SUITEDIR_REWATCH_MS;
                s_watch_event(w, now);
            } else if (ev->mask & IN_Q_OVERFLOW) {
                s_watch_event(w, now);   /* events lost: scan anyway */
            } else if (ev->len > 0 && s_suite_file(ev->name)) {
                s_watch_event(w, now);
            }
        }
    }
}

void
ag_suitedir_watch_set_wake(ag_suitedir_watch_t *w, int fd)
{
    w->wake_fd = fd;
}

bool
ag_suitedir_watch_wait(ag_suitedir_watch_t *w, int wait_ms)
{
    int64_t now = pw_clock_mono_ms();
    if (w->wd < 0 && now >= w->rewatch_ms) {
        w->wd = inotify_add_watch(w->fd, w->dir, S_WATCH_MASK | IN_ONLYDIR);
        if (w->wd >= 0)
            s_watch_event(w, now);   /* back: scan what is there now */
        else
            w->rewatch_ms = now + AG_SUITEDIR_REWATCH_MS;
    }
    int64_t due = now + (wait_ms < 0 ? 0 : wait_ms);
    if (w->dirty) {
        int64_t quiet = w->last_ms + AG_SUITEDIR_QUIET_MS;
        int64_t settle = w->first_ms + AG_SUITEDIR_SETTLE_MAX_MS;
        due = quiet < due ? quiet : due;
        due = settle < due ? settle : due;
    }
    if (w->wd < 0 && w->rewatch_ms < due)
        due = w->rewatch_ms;
    struct pollfd pfd[2] = { { .fd = w->fd, .events = POLLIN },
                             { .fd = w->wake_fd, .events = POLLIN } };
    int timeout = due > now ? (int)(due - now) : 0;
    if (poll(pfd, w->wake_fd >= 0 ? 2 : 1, timeout) > 0
        && (pfd[0].revents & POLLIN))
        s_watch_read(w, pw_clock_mono_ms());
    now = pw_clock_mono_ms();
    if (w->dirty && (now - w->last_ms >= AG_SUITEDIR_QUIET_MS
                     || now - w->first_ms >= AG_SUITEDIR_SETTLE_MAX_MS)) {
        w->dirty = false;
        return true;
    }
    return false;
}
