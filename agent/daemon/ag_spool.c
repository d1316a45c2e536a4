/* ag_spool.c -- see ag_spool.h and docs/spool.md. */
#include "ag_spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_err.h"
#include "pw_grow.h"
#include "pw_locked.h"

/* File layout: a 24-byte header, then the payload.
 *   0  8  magic "PSPOOL1\n"
 *   8  8  seq, little endian (must equal the number in the file name)
 *  16  4  payload length, little endian (must equal file size - 24)
 *  20  4  CRC-32 (IEEE) of the payload, little endian */
#define S_MAGIC       "PSPOOL1\n"
#define S_HEADER      24u
#define S_SEQ_FILE    "next-seq"
#define S_LOCK_FILE   "lock"
#define S_CORRUPT_DIR "corrupt"
#define S_PATH_MAX    4096u
#define S_SEQ_DIGITS  20

typedef struct {
    uint64_t seq;
    uint32_t len;
} s_entry_t;

struct ag_spool {
    /* Guards the index below, never held across a write to the disk: the
     * agent's network thread asks it for counts at every Heartbeat, and
     * a durable append's fsyncs can take a second on a busy disk. */
    pthread_mutex_t lock;
    /* Serialises the state files' writes and removals (tmp, fsync,
     * rename), which must not interleave; the index stays free. */
    pthread_mutex_t state_lock;
    char *dir;
    int dir_fd;
    int lock_fd;               /* flock'd: one process per spool */
    uint64_t max_bytes;
    uint32_t max_messages;
    s_entry_t *entries;        /* sorted by seq */
    size_t count;
    size_t cap;
    uint64_t bytes;
    size_t writing;            /* appends between their check and insert */
    uint64_t writing_bytes;
    uint64_t next_seq;         /* next number to hand out */
    uint64_t leased_to;        /* counter file says numbers < this are used */
    char *problems[AG_SPOOL_MAX_PROBLEMS];
    size_t problem_count;
};

static uint32_t
s_crc32(const unsigned char *p, size_t n)
{
    static uint32_t table[256];
    static int ready;   /* benign race: every thread computes the same */
    if (!ready) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        ready = 1;
    }
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++)
        c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* The header's numbers: n bytes, little-endian. */
static void
s_put_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t
s_get_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void
s_problem(ag_spool_t *sp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
s_problem(ag_spool_t *sp, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (sp->problem_count == AG_SPOOL_MAX_PROBLEMS)
        return;   /* bounded; the first ones say the most */
    sp->problems[sp->problem_count] = strdup(buf);
    if (sp->problems[sp->problem_count])
        sp->problem_count++;
}

static void
s_msg_name(char *buf, size_t len, uint64_t seq)
{
    snprintf(buf, len, "%0*" PRIu64 ".msg", S_SEQ_DIGITS, seq);
}

/* Parse "00000000000000000042.msg"; false for any other name. */
static bool
s_parse_msg_name(const char *name, uint64_t *seq)
{
    size_t n = strlen(name);
    if (n != S_SEQ_DIGITS + 4 || strcmp(name + S_SEQ_DIGITS, ".msg") != 0)
        return false;
    uint64_t v = 0;
    for (int i = 0; i < S_SEQ_DIGITS; i++) {
        if (name[i] < '0' || name[i] > '9')
            return false;
        uint64_t d = (uint64_t)(name[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *seq = v;
    return v > 0;
}

static bool
s_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Write buf to dir/name atomically and durably: tmp, fsync, rename,
 * fsync dir. */
static int
s_write_file(ag_spool_t *sp, const char *name, const void *head,
             size_t head_len, const void *body, size_t body_len,
             char *err, size_t errlen)
{
    char tmp[256], path[S_PATH_MAX], tmp_path[S_PATH_MAX];
    int fd = -1, rc = AG_SPOOL_ERR;
    snprintf(tmp, sizeof tmp, "%s.tmp", name);
    snprintf(tmp_path, sizeof tmp_path, "%s/%s", sp->dir, tmp);
    snprintf(path, sizeof path, "%s/%s", sp->dir, name);

    fd = openat(sp->dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                0600);
    if (fd < 0) {
        pw_err(err, errlen, "open %s: %s", tmp_path, strerror(errno));
        goto out;
    }
    const void *parts[2] = { head, body };
    size_t lens[2] = { head_len, body_len };
    for (int i = 0; i < 2; i++) {
        const char *p = parts[i];
        size_t left = lens[i];
        while (left > 0) {
            ssize_t w = write(fd, p, left);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                pw_err(err, errlen, "write %s: %s", tmp_path,
                       strerror(errno));
                goto out_unlink;
            }
            p += w;
            left -= (size_t)w;
        }
    }
    if (fsync(fd) != 0) {
        pw_err(err, errlen, "fsync %s: %s", tmp_path, strerror(errno));
        goto out_unlink;
    }
    if (close(fd) != 0) {
        fd = -1;
        pw_err(err, errlen, "close %s: %s", tmp_path, strerror(errno));
        goto out_unlink;
    }
    fd = -1;
    if (renameat(sp->dir_fd, tmp, sp->dir_fd, name) != 0) {
        pw_err(err, errlen, "rename %s to %s: %s", tmp_path, path,
               strerror(errno));
        goto out_unlink;
    }
    if (fsync(sp->dir_fd) != 0) {
        pw_err(err, errlen, "fsync %s: %s", sp->dir, strerror(errno));
        goto out;
    }
    rc = AG_SPOOL_OK;
    goto out;
out_unlink:
    unlinkat(sp->dir_fd, tmp, 0);
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Read all of dir/name (at most max bytes) into a new buffer. */
static int
s_read_file(ag_spool_t *sp, const char *name, size_t max,
            unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    int fd = openat(sp->dir_fd, name, O_RDONLY | O_CLOEXEC);
    unsigned char *buf = NULL;
    struct stat st;
    int rc = AG_SPOOL_ERR;
    if (fd < 0) {
        rc = errno == ENOENT ? AG_SPOOL_NOTFOUND : AG_SPOOL_ERR;
        pw_err(err, errlen, "open %s/%s: %s", sp->dir, name, strerror(errno));
        return rc;
    }
    if (fstat(fd, &st) != 0) {
        pw_err(err, errlen, "fstat %s/%s: %s", sp->dir, name, strerror(errno));
        goto out;
    }
    if ((uint64_t)st.st_size > max) {
        pw_err(err, errlen, "%s/%s: %lld bytes, more than the bound of %zu",
               sp->dir, name, (long long)st.st_size, max);
        rc = AG_SPOOL_CORRUPT;
        goto out;
    }
    size_t n = (size_t)st.st_size;
    buf = malloc(n + 1);
    if (!buf) {
        pw_err(err, errlen, "malloc %zu: out of memory", n + 1);
        goto out;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            pw_err(err, errlen, "read %s/%s: %s", sp->dir, name,
                   strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    buf[got] = 0;
    *out = buf;
    *out_len = got;
    buf = NULL;
    rc = AG_SPOOL_OK;
out:
    free(buf);
    close(fd);
    return rc;
}

/* Check a message file's bytes; NULL when good, else the reason. */
static const char *
s_check(const unsigned char *buf, size_t n, uint64_t seq, uint32_t *len)
{
    if (n < S_HEADER)
        return "truncated header";
    if (memcmp(buf, S_MAGIC, 8) != 0)
        return "bad magic";
    if (s_get_le(buf + 8, 8) != seq)
        return "seq in header differs from file name";
    uint32_t plen = (uint32_t)s_get_le(buf + 16, 4);
    if (plen > AG_SPOOL_MAX_MESSAGE_BYTES)
        return "length above the message bound";
    if ((size_t)plen != n - S_HEADER)
        return n - S_HEADER < plen ? "truncated payload"
                                   : "trailing bytes after payload";
    if (s_crc32(buf + S_HEADER, plen) != (uint32_t)s_get_le(buf + 20, 4))
        return "checksum mismatch";
    *len = plen;
    return NULL;
}

/* fsync the directory holding dir, so a directory just made survives a
 * power cut: the messages fsync'd into it would be lost with it. */
static int
s_fsync_parent(const char *dir, char *err, size_t errlen)
{
    char parent[S_PATH_MAX];
    snprintf(parent, sizeof parent, "%s", dir);
    size_t len = strlen(parent);
    while (len > 1 && parent[len - 1] == '/')
        parent[--len] = '\0';
    char *slash = strrchr(parent, '/');
    if (!slash)
        snprintf(parent, sizeof parent, ".");
    else
        slash[slash == parent ? 1 : 0] = '\0';
    int rc = AG_SPOOL_ERR;
    int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        pw_err(err, errlen, "open %s: %s", parent, strerror(errno));
    else if (fsync(fd) != 0)
        pw_err(err, errlen, "fsync %s: %s", parent, strerror(errno));
    else
        rc = AG_SPOOL_OK;
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Move a bad file into DIR/corrupt/ and remember why. */
static void
s_quarantine(ag_spool_t *sp, const char *name, const char *reason)
{
    char dst[S_PATH_MAX];
    mkdirat(sp->dir_fd, S_CORRUPT_DIR, 0700);
    snprintf(dst, sizeof dst, "%s/%s", S_CORRUPT_DIR, name);
    if (renameat(sp->dir_fd, name, sp->dir_fd, dst) == 0) {
        fsync(sp->dir_fd);
        s_problem(sp, "%s/%s: %s; moved to %s/%s", sp->dir, name, reason,
                  sp->dir, dst);
    } else {
        s_problem(sp, "%s/%s: %s; could not move it aside: %s", sp->dir,
                  name, reason, strerror(errno));
    }
}

static size_t
s_find(const ag_spool_t *sp, uint64_t seq)   /* first index with >= seq */
{
    size_t lo = 0, hi = sp->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sp->entries[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int
s_insert(ag_spool_t *sp, uint64_t seq, uint32_t len)
{
    if (!pw_grow(&sp->entries, &sp->cap, sp->count, sizeof *sp->entries,
                 256, SIZE_MAX))
        return AG_SPOOL_ERR;
    size_t at = s_find(sp, seq);
    memmove(sp->entries + at + 1, sp->entries + at,
            (sp->count - at) * sizeof *sp->entries);
    sp->entries[at].seq = seq;
    sp->entries[at].len = len;
    sp->count++;
    sp->bytes += len;
    return AG_SPOOL_OK;
}

static void
s_drop(ag_spool_t *sp, size_t at)
{
    sp->bytes -= sp->entries[at].len;
    memmove(sp->entries + at, sp->entries + at + 1,
            (sp->count - at - 1) * sizeof *sp->entries);
    sp->count--;
}

static int
s_write_counter(ag_spool_t *sp, uint64_t value, char *err, size_t errlen)
{
    char text[32];
    int n = snprintf(text, sizeof text, "%" PRIu64 "\n", value);
    return s_write_file(sp, S_SEQ_FILE, text, (size_t)n, NULL, 0, err,
                        errlen);
}

static int
s_scan(ag_spool_t *sp, char *err, size_t errlen)
{
    int dfd = dup(sp->dir_fd);
    DIR *d;
    struct dirent *de;
    uint64_t highest = 0;
    if (dfd < 0 || !(d = fdopendir(dfd))) {
        pw_err(err, errlen, "opendir %s: %s", sp->dir, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        return AG_SPOOL_ERR;
    }
    while ((de = readdir(d)) != NULL) {
        uint64_t seq;
        if (s_ends_with(de->d_name, ".tmp")) {
            /* An append that never returned: never sent, never acked. */
            unlinkat(sp->dir_fd, de->d_name, 0);
            s_problem(sp, "%s/%s: unfinished write from an earlier run; "
                      "removed", sp->dir, de->d_name);
            continue;
        }
        if (!s_parse_msg_name(de->d_name, &seq))
            continue;
        unsigned char *buf = NULL;
        size_t n = 0;
        char rerr[256];
        int r = s_read_file(sp, de->d_name, S_HEADER +
                            AG_SPOOL_MAX_MESSAGE_BYTES, &buf, &n, rerr,
                            sizeof rerr);
        uint32_t len = 0;
        const char *why = r == AG_SPOOL_OK ? s_check(buf, n, seq, &len)
                        : r == AG_SPOOL_CORRUPT ? "larger than the bound"
                        : NULL;
        free(buf);
        if (r == AG_SPOOL_ERR) {
            s_problem(sp, "%s", rerr);
            continue;
        }
        if (seq > highest)
            highest = seq;   /* even a bad file's number stays used */
        if (why) {
            s_quarantine(sp, de->d_name, why);
            continue;
        }
        if (s_insert(sp, seq, len) != AG_SPOOL_OK) {
            closedir(d);
            pw_err(err, errlen, "malloc: out of memory indexing %s", sp->dir);
            return AG_SPOOL_ERR;
        }
    }
    closedir(d);

    /* The counter file holds the end of the last lease. */
    unsigned char *text = NULL;
    size_t tlen = 0;
    uint64_t leased = 0;
    if (s_read_file(sp, S_SEQ_FILE, 64, &text, &tlen, NULL, 0)
        == AG_SPOOL_OK) {
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull((char *)text, &end, 10);
        if (errno || end == (char *)text || (*end && *end != '\n'))
            s_problem(sp, "%s/%s: not a number; using the highest message "
                      "file instead", sp->dir, S_SEQ_FILE);
        else
            leased = v;
        free(text);
    }
    sp->next_seq = leased > highest ? leased : highest + 1;
    if (sp->next_seq == 0)
        sp->next_seq = 1;
    sp->leased_to = sp->next_seq;   /* nothing of the new lease taken */
    return AG_SPOOL_OK;
}

int
ag_spool_open(const char *dir, const ag_spool_limits_t *limits,
              ag_spool_t **out, char *err, size_t errlen)
{
    ag_spool_t *sp = NULL;
    *out = NULL;
    if (!dir || !*dir) {
        pw_err(err, errlen, "spool: empty directory name");
        return AG_SPOOL_ERR;
    }
    if (strlen(dir) > S_PATH_MAX - 64) {
        pw_err(err, errlen, "spool: directory name longer than %u bytes",
               S_PATH_MAX - 64);
        return AG_SPOOL_ERR;
    }
    if (mkdir(dir, 0700) == 0) {
        if (s_fsync_parent(dir, err, errlen) != AG_SPOOL_OK)
            return AG_SPOOL_ERR;
    } else if (errno != EEXIST) {
        pw_err(err, errlen, "mkdir %s: %s", dir, strerror(errno));
        return AG_SPOOL_ERR;
    }
    sp = calloc(1, sizeof *sp);
    if (!sp) {
        pw_err(err, errlen, "calloc: out of memory");
        return AG_SPOOL_ERR;
    }
    pthread_mutex_init(&sp->lock, NULL);
    pthread_mutex_init(&sp->state_lock, NULL);
    sp->dir_fd = -1;
    sp->lock_fd = -1;
    sp->dir = strdup(dir);
    if (!sp->dir) {
        pw_err(err, errlen, "strdup: out of memory");
        goto fail;
    }
    sp->max_bytes = limits && limits->max_bytes ? limits->max_bytes
                                                : AG_SPOOL_DEFAULT_MAX_BYTES;
    sp->max_messages = limits && limits->max_messages
                       ? limits->max_messages : AG_SPOOL_DEFAULT_MAX_MESSAGES;
    sp->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sp->dir_fd < 0) {
        pw_err(err, errlen, "open %s: %s", dir, strerror(errno));
        goto fail;
    }
    /* Two processes on one spool would hand out the same seqs and delete
     * each other's messages. */
    sp->lock_fd = openat(sp->dir_fd, S_LOCK_FILE, O_RDWR | O_CREAT |
                         O_CLOEXEC, 0600);
    if (sp->lock_fd < 0) {
        pw_err(err, errlen, "open %s/%s: %s", dir, S_LOCK_FILE,
               strerror(errno));
        goto fail;
    }
    if (flock(sp->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        pw_err(err, errlen, "spool %s is in use by another process "
               "(flock %s/%s: %s)", dir, dir, S_LOCK_FILE, strerror(errno));
        goto fail;
    }
    if (s_scan(sp, err, errlen) != AG_SPOOL_OK)
        goto fail;
    *out = sp;
    return AG_SPOOL_OK;
fail:
    ag_spool_destroy(&sp);
    return AG_SPOOL_ERR;
}

void
ag_spool_destroy(ag_spool_t **spp)
{
    if (!spp || !*spp)
        return;
    ag_spool_t *sp = *spp;
    if (sp->lock_fd >= 0)
        close(sp->lock_fd);   /* releases the flock */
    if (sp->dir_fd >= 0)
        close(sp->dir_fd);
    for (size_t i = 0; i < sp->problem_count; i++)
        free(sp->problems[i]);
    free(sp->entries);
    free(sp->dir);
    pthread_mutex_destroy(&sp->lock);
    pthread_mutex_destroy(&sp->state_lock);
    free(sp);
    *spp = NULL;
}

uint64_t
ag_spool_take_seq(ag_spool_t *sp, char *err, size_t errlen)
{
    uint64_t seq = 0;
    pthread_mutex_lock(&sp->lock);
    if (sp->next_seq >= sp->leased_to) {
        /* Persist the end of a new lease before using any of it, so a
         * crash can never hand out a number twice. */
        uint64_t to = sp->next_seq + AG_SPOOL_SEQ_LEASE;
        if (s_write_counter(sp, to, err, errlen) != AG_SPOOL_OK)
            goto out;
        sp->leased_to = to;
    }
    seq = sp->next_seq++;
out:
    pthread_mutex_unlock(&sp->lock);
    return seq;
}

/* The checks of an append, under the index lock: a seq taken and not
 * held, and room counting the appends still being written. */
static int
s_append_check(ag_spool_t *sp, uint64_t seq, size_t len, bool force,
               char *err, size_t errlen)
{
    if (seq == 0 || seq >= sp->next_seq) {
        pw_err(err, errlen, "spool append: seq %" PRIu64 " was not taken "
               "with ag_spool_take_seq", seq);
        return AG_SPOOL_ERR;
    }
    if (len > AG_SPOOL_MAX_MESSAGE_BYTES) {
        pw_err(err, errlen, "spool append: message of %zu bytes is above "
               "the bound of %u bytes", len, AG_SPOOL_MAX_MESSAGE_BYTES);
        return AG_SPOOL_ERR;
    }
    size_t at = s_find(sp, seq);
    if (at < sp->count && sp->entries[at].seq == seq) {
        pw_err(err, errlen, "spool append: seq %" PRIu64 " already held",
               seq);
        return AG_SPOOL_ERR;
    }
    if (!force && (sp->count + sp->writing + 1 > sp->max_messages
                   || sp->bytes + sp->writing_bytes + len > sp->max_bytes)) {
        pw_err(err, errlen, "spool %s is full: %zu messages, %" PRIu64
               " bytes held (bounds %" PRIu32 " messages, %" PRIu64
               " bytes; --spool-max); waiting for the collector to ack",
               sp->dir, sp->count, sp->bytes, sp->max_messages,
               sp->max_bytes);
        return AG_SPOOL_FULL;
    }
    return AG_SPOOL_OK;
}

int
ag_spool_append(ag_spool_t *sp, uint64_t seq, const void *data, size_t len,
                bool force, char *err, size_t errlen)
{
    char name[64];
    unsigned char head[S_HEADER];
    pthread_mutex_lock(&sp->lock);
    int rc = s_append_check(sp, seq, len, force, err, errlen);
    if (rc == AG_SPOOL_OK) {
        sp->writing++;
        sp->writing_bytes += len;
    }
    pthread_mutex_unlock(&sp->lock);
    if (rc != AG_SPOOL_OK)
        return rc;
    /* The file is written and made durable without the lock (each seq
     * has its own file); only then does the index hold it. */
    memcpy(head, S_MAGIC, 8);
    s_put_le(head + 8, seq, 8);
    s_put_le(head + 16, (uint32_t)len, 4);
    s_put_le(head + 20, s_crc32(data, len), 4);
    s_msg_name(name, sizeof name, seq);
    rc = s_write_file(sp, name, head, sizeof head, data, len, err, errlen);
    pthread_mutex_lock(&sp->lock);
    sp->writing--;
    sp->writing_bytes -= len;
    if (rc == AG_SPOOL_OK && s_insert(sp, seq, (uint32_t)len) != AG_SPOOL_OK) {
        pw_err(err, errlen, "malloc: out of memory indexing %s", sp->dir);
        unlinkat(sp->dir_fd, name, 0);
        rc = AG_SPOOL_ERR;
    }
    pthread_mutex_unlock(&sp->lock);
    return rc;
}

/* Under the lock: the index of the message seq, and its file's name;
 * sp->count, with err, when it is not held. */
static size_t
s_held(ag_spool_t *sp, uint64_t seq, char *name, size_t len, char *err,
       size_t errlen)
{
    size_t at = s_find(sp, seq);
    if (at == sp->count || sp->entries[at].seq != seq) {
        pw_err(err, errlen, "spool: seq %" PRIu64 " not held", seq);
        return sp->count;
    }
    s_msg_name(name, len, seq);
    return at;
}

int
ag_spool_read(ag_spool_t *sp, uint64_t seq, void **data, size_t *len,
              char *err, size_t errlen)
{
    int rc;
    char name[64];
    unsigned char *buf = NULL;
    size_t n = 0;
    uint32_t plen = 0;
    *data = NULL;
    *len = 0;
    pthread_mutex_lock(&sp->lock);
    size_t at = s_held(sp, seq, name, sizeof name, err, errlen);
    if (at == sp->count) {
        rc = AG_SPOOL_NOTFOUND;
        goto out;
    }
    rc = s_read_file(sp, name, S_HEADER + AG_SPOOL_MAX_MESSAGE_BYTES, &buf,
                     &n, err, errlen);
    const char *why = rc == AG_SPOOL_OK ? s_check(buf, n, seq, &plen)
                    : rc == AG_SPOOL_CORRUPT ? "larger than the bound"
                    : rc == AG_SPOOL_NOTFOUND ? "file vanished" : NULL;
    if (why) {
        if (rc != AG_SPOOL_NOTFOUND)
            s_quarantine(sp, name, why);
        else
            s_problem(sp, "%s/%s: %s", sp->dir, name, why);
        pw_err(err, errlen, "%s/%s: %s", sp->dir, name, why);
        s_drop(sp, at);
        rc = AG_SPOOL_CORRUPT;
        goto out;
    }
    if (rc != AG_SPOOL_OK)
        goto out;
    memmove(buf, buf + S_HEADER, plen);
    *data = buf;
    *len = plen;
    buf = NULL;
out:
    free(buf);
    pthread_mutex_unlock(&sp->lock);
    return rc;
}

int
ag_spool_remove(ag_spool_t *sp, uint64_t seq, char *err, size_t errlen)
{
    int rc = AG_SPOOL_OK;
    char name[64];
    pthread_mutex_lock(&sp->lock);
    size_t at = s_held(sp, seq, name, sizeof name, err, errlen);
    if (at == sp->count) {
        rc = AG_SPOOL_NOTFOUND;
        goto out;
    }
    if (unlinkat(sp->dir_fd, name, 0) != 0 && errno != ENOENT) {
        pw_err(err, errlen, "unlink %s/%s: %s", sp->dir, name,
               strerror(errno));
        rc = AG_SPOOL_ERR;
        goto out;
    }
    /* No fsync of the directory: a removal lost in a power cut only
     * resends an acked message, which the collector ignores. */
    s_drop(sp, at);
out:
    pthread_mutex_unlock(&sp->lock);
    return rc;
}

size_t
ag_spool_list(ag_spool_t *sp, uint64_t after, uint64_t *seqs, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&sp->lock);
    for (size_t i = s_find(sp, after + 1); i < sp->count && n < max; i++)
        seqs[n++] = sp->entries[i].seq;
    pthread_mutex_unlock(&sp->lock);
    return n;
}

size_t
ag_spool_count(ag_spool_t *sp)
{
    return PW_LOCKED(&sp->lock, size_t, sp->count);
}

uint64_t
ag_spool_bytes(ag_spool_t *sp)
{
    return PW_LOCKED(&sp->lock, uint64_t, sp->bytes);
}

bool
ag_spool_has_room(ag_spool_t *sp, size_t len)
{
    return PW_LOCKED(&sp->lock, bool,
                     sp->count + sp->writing + 1 <= sp->max_messages &&
                     sp->bytes + sp->writing_bytes + len <= sp->max_bytes);
}

const char *
ag_spool_problem(ag_spool_t *sp, size_t i)
{
    return PW_LOCKED(&sp->lock, const char *,
                     i < sp->problem_count ? sp->problems[i] : NULL);
}

size_t
ag_spool_problem_count(ag_spool_t *sp)
{
    return PW_LOCKED(&sp->lock, size_t, sp->problem_count);
}

const char *
ag_spool_dir(const ag_spool_t *sp)
{
    return sp->dir;
}

static bool
s_state_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64 || s_ends_with(name, ".msg")
        || s_ends_with(name, ".tmp") || strcmp(name, S_SEQ_FILE) == 0
        || strcmp(name, S_LOCK_FILE) == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z')
              || (name[i] >= '0' && name[i] <= '9') || name[i] == '-'))
            return false;
    return true;
}

int
ag_spool_state_write(ag_spool_t *sp, const char *name, const char *text,
                     char *err, size_t errlen)
{
    if (!s_state_name_ok(name)) {
        pw_err(err, errlen, "spool state: bad name \"%s\"", name);
        return AG_SPOOL_ERR;
    }
    pthread_mutex_lock(&sp->state_lock);
    int rc = s_write_file(sp, name, text, strlen(text), NULL, 0, err,
                          errlen);
    pthread_mutex_unlock(&sp->state_lock);
    return rc;
}

char *
ag_spool_state_read(ag_spool_t *sp, const char *name)
{
    unsigned char *buf = NULL;
    size_t n = 0;
    if (!s_state_name_ok(name))
        return NULL;
    pthread_mutex_lock(&sp->state_lock);
    if (s_read_file(sp, name, 1u << 20, &buf, &n, NULL, 0) != AG_SPOOL_OK)
        buf = NULL;
    pthread_mutex_unlock(&sp->state_lock);
    return (char *)buf;
}

int
ag_spool_state_clear(ag_spool_t *sp, const char *name, char *err,
                     size_t errlen)
{
    int rc = AG_SPOOL_OK;
    if (!s_state_name_ok(name)) {
        pw_err(err, errlen, "spool state: bad name \"%s\"", name);
        return AG_SPOOL_ERR;
    }
    pthread_mutex_lock(&sp->state_lock);
    if (unlinkat(sp->dir_fd, name, 0) != 0 && errno != ENOENT) {
        pw_err(err, errlen, "unlink %s/%s: %s", sp->dir, name,
               strerror(errno));
        rc = AG_SPOOL_ERR;
    } else {
        fsync(sp->dir_fd);
    }
    pthread_mutex_unlock(&sp->state_lock);
    return rc;
}
