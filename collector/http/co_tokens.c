/* co_tokens.c -- the HTTP side's tokens file (co_tokens.h). */
#include "co_tokens.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "pw_err.h"

#define S_HASH 32

typedef struct {
    char name[CO_TOKENS_NAME_MAX + 1];
    co_role_t role;
    uint8_t hash[S_HASH];
} s_entry_t;

struct co_tokens {
    pthread_mutex_t lock;
    char *path;
    s_entry_t *e;
    size_t n;
    struct stat st;          /* the file as last read (or tried) */
    int64_t checked_ms;
};

const char *
co_role_name(co_role_t role)
{
    return role == CO_ROLE_READ ? "read" : role == CO_ROLE_TRIAGE ? "triage"
                                                                  : "none";
}

static void
s_hash(const char *token, size_t len, uint8_t out[S_HASH])
{
    crypto_generichash(out, S_HASH, (const unsigned char *)token, len,
                       NULL, 0);
}

/* The next word of [*p, end) on this line: its start and length, *p
 * after it; 0 length at the line's end. */
static size_t
s_word(const char **p, const char *end, const char **w)
{
    while (*p < end && (**p == ' ' || **p == '\t'))
        (*p)++;
    *w = *p;
    while (*p < end && **p != ' ' && **p != '\t')
        (*p)++;
    return (size_t)(*p - *w);
}

static bool
s_name_ok(const char *w, size_t n)
{
    if (n == 0 || n > CO_TOKENS_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((w[i] >= 'a' && w[i] <= 'z') || (w[i] >= 'A' && w[i] <= 'Z')
              || (w[i] >= '0' && w[i] <= '9') || w[i] == '.' || w[i] == '_'
              || w[i] == '-'))
            return false;
    return true;
}

/* One line of the file into *e: 0 (also for a blank or comment line:
 * *used false), or -1 with why. */
static int
s_line(const char *p, const char *end, s_entry_t *e, bool *used,
       char *why, size_t whylen)
{
    const char *w[4];
    size_t n[4];
    *used = false;
    for (int i = 0; i < 4; i++)
        n[i] = s_word(&p, end, &w[i]);
    if (n[0] == 0 || w[0][0] == '#')
        return 0;
    if (n[1] == 0 || n[2] == 0) {
        pw_err(why, whylen, "want NAME ROLE TOKEN");
        return -1;
    }
    if (n[3] != 0) {
        pw_err(why, whylen, "want NAME ROLE TOKEN, and nothing after the "
               "token");
        return -1;
    }
    if (!s_name_ok(w[0], n[0])) {
        pw_err(why, whylen, "name \"%.*s\": want 1 to %d letters, digits, "
               "'.', '_' or '-'", (int)(n[0] > 64 ? 64 : n[0]), w[0],
               CO_TOKENS_NAME_MAX);
        return -1;
    }
    memcpy(e->name, w[0], n[0]);
    e->name[n[0]] = '\0';
    if (n[1] == 4 && memcmp(w[1], "read", 4) == 0)
        e->role = CO_ROLE_READ;
    else if (n[1] == 6 && memcmp(w[1], "triage", 6) == 0)
        e->role = CO_ROLE_TRIAGE;
    else {
        pw_err(why, whylen, "role \"%.*s\" of %s: want read or triage",
               (int)(n[1] > 32 ? 32 : n[1]), w[1], e->name);
        return -1;
    }
    if (n[2] < CO_TOKENS_TOKEN_MIN || n[2] > CO_TOKENS_TOKEN_MAX) {
        pw_err(why, whylen, "the token of %s has %zu characters: want %d "
               "to %d", e->name, n[2], CO_TOKENS_TOKEN_MIN,
               CO_TOKENS_TOKEN_MAX);
        return -1;
    }
    for (size_t i = 0; i < n[2]; i++)
        if (w[2][i] < 0x21 || w[2][i] > 0x7e) {
            pw_err(why, whylen, "the token of %s: want printable ASCII "
                   "characters without spaces", e->name);
            return -1;
        }
    s_hash(w[2], n[2], e->hash);
    *used = true;
    return 0;
}

/* Parse into *out (malloc'd, *nout entries). */
static int
s_parse(const char *path, const char *text, size_t len, s_entry_t **out,
        size_t *nout, char *err, size_t errlen)
{
    s_entry_t *e = NULL;
    size_t n = 0, line = 0;
    const char *p = text, *end = text + len;
    char why[200];
    if (memchr(text, '\0', len)) {
        pw_err(err, errlen, "%s: a NUL byte: not a tokens file", path);
        return -1;
    }
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le > p && le[-1] == '\r')
            le--;
        line++;
        s_entry_t one;
        bool used;
        if (s_line(p, le, &one, &used, why, sizeof why) != 0)
            goto bad;
        for (size_t i = 0; used && i < n; i++) {
            if (strcmp(e[i].name, one.name) == 0) {
                pw_err(why, sizeof why, "name %s given twice", one.name);
                goto bad;
            }
            if (sodium_memcmp(e[i].hash, one.hash, S_HASH) == 0) {
                pw_err(why, sizeof why, "the token of %s is also %s's",
                       one.name, e[i].name);
                goto bad;
            }
        }
        if (used) {
            if (n == CO_TOKENS_MAX) {
                pw_err(why, sizeof why, "more than %d tokens", CO_TOKENS_MAX);
                goto bad;
            }
            s_entry_t *g = realloc(e, (n + 1) * sizeof *e);
            if (!g) {
                pw_err(why, sizeof why, "out of memory");
                goto bad;
            }
            e = g;
            e[n++] = one;
        }
        p = nl ? nl + 1 : end;
    }
    *out = e;
    *nout = n;
    return 0;
bad:
    pw_err(err, errlen, "%s:%zu: %s", path, line, why);
    sodium_memzero(e, n * sizeof *e);
    free(e);
    return -1;
}

int
co_tokens_parse(const char *path, const char *text, size_t len, size_t *n,
                char *err, size_t errlen)
{
    s_entry_t *e = NULL;
    if (s_parse(path, text, len, &e, n, err, errlen) != 0)
        return -1;
    free(e);
    return 0;
}

/* Read the file into a new set; its stat in *st. */
static int
s_load(const char *path, struct stat *st, s_entry_t **e, size_t *n,
       char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *buf = NULL;
    int rc = -1;
    if (fd < 0 || fstat(fd, st) != 0) {
        pw_err(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st->st_mode)) {
        pw_err(err, errlen, "%s: not a regular file", path);
        goto out;
    }
    if (st->st_mode & S_IROTH) {
        pw_err(err, errlen, "%s: others may read it (its tokens are "
               "secrets): chmod o-r %s", path, path);
        goto out;
    }
    if (st->st_size > CO_TOKENS_FILE_MAX) {
        pw_err(err, errlen, "%s: larger than %d bytes", path,
               CO_TOKENS_FILE_MAX);
        goto out;
    }
    size_t len = (size_t)st->st_size, got = 0;
    if (!(buf = malloc(len + 1))) {
        pw_err(err, errlen, "%s: out of memory", path);
        goto out;
    }
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            pw_err(err, errlen, "%s: %s", path, r < 0 ? strerror(errno)
                                                     : "cut short");
            goto out;
        }
        got += (size_t)r;
    }
    rc = s_parse(path, buf, len, e, n, err, errlen);
out:
    if (buf) {
        sodium_memzero(buf, (size_t)st->st_size);
        free(buf);
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

co_tokens_t *
co_tokens_new(const char *path, char *err, size_t errlen)
{
    if (sodium_init() < 0) {
        pw_err(err, errlen, "libsodium could not start");
        return NULL;
    }
    co_tokens_t *t = calloc(1, sizeof *t);
    if (!t || !(t->path = strdup(path))
        || pthread_mutex_init(&t->lock, NULL) != 0) {
        if (t)
            free(t->path);
        free(t);
        pw_err(err, errlen, "co_tokens: out of memory");
        return NULL;
    }
    if (s_load(path, &t->st, &t->e, &t->n, err, errlen) != 0) {
        pthread_mutex_destroy(&t->lock);
        free(t->path);
        free(t);
        return NULL;
    }
    return t;
}

void
co_tokens_destroy(co_tokens_t **tp)
{
    if (!tp || !*tp)
        return;
    co_tokens_t *t = *tp;
    pthread_mutex_destroy(&t->lock);
    sodium_memzero(t->e, t->n * sizeof *t->e);
    free(t->e);
    free(t->path);
    free(t);
    *tp = NULL;
}

static bool
s_changed(const struct stat *a, const struct stat *b)
{
    return a->st_ino != b->st_ino || a->st_dev != b->st_dev
        || a->st_size != b->st_size
        || a->st_mtim.tv_sec != b->st_mtim.tv_sec
        || a->st_mtim.tv_nsec != b->st_mtim.tv_nsec;
}

/* Under the lock: read the file again when it changed. */
static void
s_maybe_reload(co_tokens_t *t, int64_t now_ms, char *err, size_t errlen)
{
    struct stat st;
    if (now_ms - t->checked_ms < CO_TOKENS_RECHECK_MS)
        return;
    t->checked_ms = now_ms;
    if (stat(t->path, &st) != 0 || !s_changed(&st, &t->st))
        return;
    s_entry_t *e = NULL;
    size_t n = 0;
    char why[600];
    if (s_load(t->path, &st, &e, &n, why, sizeof why) != 0) {
        t->st = st;            /* said once; the old set stays */
        if (err)
            pw_err(err, errlen, "%s", why);
        return;
    }
    sodium_memzero(t->e, t->n * sizeof *t->e);
    free(t->e);
    t->e = e;
    t->n = n;
    t->st = st;
}

co_role_t
co_tokens_check(co_tokens_t *t, const char *token, size_t len,
                int64_t now_ms, char *name, char *reload_err,
                size_t reload_errlen)
{
    uint8_t h[S_HASH];
    co_role_t role = CO_ROLE_NONE;
    if (reload_err && reload_errlen)
        reload_err[0] = '\0';
    s_hash(token, len, h);
    pthread_mutex_lock(&t->lock);
    s_maybe_reload(t, now_ms, reload_err, reload_errlen);
    name[0] = '\0';
    /* Every entry is compared, found or not: the time taken says
     * nothing of where, or whether, the token is. */
    for (size_t i = 0; i < t->n; i++) {
        bool same = sodium_memcmp(t->e[i].hash, h, S_HASH) == 0;
        if (same && role == CO_ROLE_NONE) {
            role = t->e[i].role;
            memcpy(name, t->e[i].name, sizeof t->e[i].name);
        }
    }
    pthread_mutex_unlock(&t->lock);
    if (len < CO_TOKENS_TOKEN_MIN || len > CO_TOKENS_TOKEN_MAX) {
        name[0] = '\0';
        return CO_ROLE_NONE;
    }
    return role;
}

size_t
co_tokens_count(co_tokens_t *t)
{
    pthread_mutex_lock(&t->lock);
    size_t n = t->n;
    pthread_mutex_unlock(&t->lock);
    return n;
}
