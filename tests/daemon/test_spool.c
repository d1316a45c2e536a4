/* test_spool.c -- the agent's outbox: order, restart, bounds, corrupt
 * files. Real files in a fresh temporary directory. */
#include "pw_clock.h"
#include "tap.h"
#include "ag_spool.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A disk that stalls on demand: while s_slow_fsync is set, fsync waits
 * 800 ms before it syncs. ag_spool.c is compiled into this program, so
 * its fsync calls come here rather than to the C library. */
static atomic_int s_slow_fsync, s_in_fsync;

int
fsync(int fd)
{
    if (atomic_load(&s_slow_fsync)) {
        atomic_store(&s_in_fsync, 1);
        struct timespec ts = { 0, 800L * 1000000 };
        nanosleep(&ts, NULL);
    }
    return (int)syscall(SYS_fsync, fd);
}

static char root[256];

static void
s_rmtree(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
}

static int
s_exists(const char *dir, const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

static void
s_write_raw(const char *dir, const char *name, const void *data, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static void
test_order_and_remove(void)
{
    char dir[300], err[512];
    ag_spool_t *sp = NULL;
    snprintf(dir, sizeof dir, "%s/order", root);
    ok(ag_spool_open(dir, NULL, &sp, err, sizeof err) == AG_SPOOL_OK,
       "open a new spool (%s)", sp ? "ok" : err);
    if (!sp)
        return;
    uint64_t seqs[10];
    for (int i = 0; i < 10; i++) {
        char msg[32];
        seqs[i] = ag_spool_take_seq(sp, err, sizeof err);
        int n = snprintf(msg, sizeof msg, "message %d", i);
        ag_spool_append(sp, seqs[i], msg, (size_t)n, false, err, sizeof err);
    }
    ok(seqs[0] == 1, "first seq of a new spool is 1 (got %" PRIu64 ")",
       seqs[0]);
    int increasing = 1;
    for (int i = 1; i < 10; i++)
        increasing &= seqs[i] > seqs[i - 1];
    ok(increasing, "seqs increase");
    ok(ag_spool_count(sp) == 10, "10 messages held");
    ok(ag_spool_bytes(sp) == 9 * 9 + 0 + 9, "payload bytes counted (%"
       PRIu64 ")", ag_spool_bytes(sp));

    uint64_t got[16];
    size_t n = ag_spool_list(sp, 0, got, 16);
    int same = n == 10;
    for (size_t i = 0; same && i < n; i++)
        same = got[i] == seqs[i];
    ok(same, "list returns every seq in order");
    n = ag_spool_list(sp, seqs[4], got, 3);
    ok(n == 3 && got[0] == seqs[5] && got[2] == seqs[7],
       "list after a seq with a bound of 3");

    void *data = NULL;
    size_t len = 0;
    ok(ag_spool_read(sp, seqs[3], &data, &len, err, sizeof err)
       == AG_SPOOL_OK && len == 9 && memcmp(data, "message 3", 9) == 0,
       "read returns the bytes appended");
    free(data);

    ok(ag_spool_remove(sp, seqs[3], err, sizeof err) == AG_SPOOL_OK,
       "remove an acked message");
    ok(ag_spool_remove(sp, seqs[3], err, sizeof err) == AG_SPOOL_NOTFOUND,
       "a duplicate ack is NOTFOUND, not an error");
    n = ag_spool_list(sp, 0, got, 16);
    ok(n == 9 && got[3] == seqs[4], "removed message is gone from the list");
    ok(ag_spool_append(sp, seqs[5], "x", 1, false, err, sizeof err)
       == AG_SPOOL_ERR && strstr(err, "already held"),
       "appending a held seq again is refused: %s", err);
    ok(ag_spool_append(sp, 999999, "x", 1, false, err, sizeof err)
       == AG_SPOOL_ERR && strstr(err, "not taken"),
       "a seq never taken is refused: %s", err);
    ag_spool_t *second = NULL;
    ok(ag_spool_open(dir, NULL, &second, err, sizeof err) == AG_SPOOL_ERR
       && second == NULL && strstr(err, "is in use by another process"),
       "a second open of a spool in use is refused: %s", err);
    ag_spool_destroy(&sp);
    ok(sp == NULL, "destroy clears the pointer");
    ok(ag_spool_open(dir, NULL, &second, err, sizeof err) == AG_SPOOL_OK,
       "after destroy the spool opens again");
    ag_spool_destroy(&second);
    ag_spool_destroy(&sp);
    ag_spool_destroy(NULL);
    ok(second == NULL && sp == NULL, "destroy accepts NULL and a cleared "
       "pointer, and leaves it NULL");
}

static void
test_restart(void)
{
    char dir[300], err[512];
    ag_spool_t *sp = NULL;
    uint64_t last = 0, kept[3];
    snprintf(dir, sizeof dir, "%s/restart", root);
    ag_spool_open(dir, NULL, &sp, err, sizeof err);
    if (!sp) {
        ok(0, "open: %s", err);
        return;
    }
    for (int i = 0; i < 5; i++) {
        last = ag_spool_take_seq(sp, err, sizeof err);
        ag_spool_append(sp, last, "abc", 3, false, err, sizeof err);
        if (i >= 2)
            kept[i - 2] = last;
    }
    uint64_t l[8];
    ag_spool_list(sp, 0, l, 8);
    ag_spool_remove(sp, l[0], err, sizeof err);
    ag_spool_remove(sp, l[1], err, sizeof err);
    ag_spool_destroy(&sp);

    ok(ag_spool_open(dir, NULL, &sp, err, sizeof err) == AG_SPOOL_OK,
       "reopen after close");
    if (!sp)
        return;
    size_t n = ag_spool_list(sp, 0, l, 8);
    ok(n == 3 && l[0] == kept[0] && l[2] == kept[2],
       "the unacked messages survive a restart, in order");
    uint64_t next = ag_spool_take_seq(sp, err, sizeof err);
    ok(next > last, "seq keeps growing across a restart (%" PRIu64 " > %"
       PRIu64 ")", next, last);
    /* Ack everything: the counter file alone must keep the numbers. */
    for (size_t i = 0; i < n; i++)
        ag_spool_remove(sp, l[i], err, sizeof err);
    ag_spool_destroy(&sp);
    ag_spool_open(dir, NULL, &sp, err, sizeof err);
    uint64_t after_empty = sp ? ag_spool_take_seq(sp, err, sizeof err) : 0;
    ok(after_empty > next, "an emptied spool still never reuses a seq (%"
       PRIu64 " > %" PRIu64 ")", after_empty, next);
    ag_spool_destroy(&sp);

    /* Without the counter file the highest message name still counts. */
    char path[400];
    snprintf(path, sizeof path, "%s/next-seq", dir);
    ag_spool_open(dir, NULL, &sp, err, sizeof err);
    uint64_t s1 = ag_spool_take_seq(sp, err, sizeof err);
    ag_spool_append(sp, s1, "z", 1, false, err, sizeof err);
    ag_spool_destroy(&sp);
    unlink(path);
    ag_spool_open(dir, NULL, &sp, err, sizeof err);
    uint64_t s2 = sp ? ag_spool_take_seq(sp, err, sizeof err) : 0;
    ok(s2 > s1, "counter file lost: seq continues after the highest file "
       "(%" PRIu64 " > %" PRIu64 ")", s2, s1);
    ag_spool_destroy(&sp);
}

static void
test_bounds(void)
{
    char dir[300], err[512];
    ag_spool_t *sp = NULL;
    ag_spool_limits_t lim = { .max_bytes = 100, .max_messages = 4 };
    snprintf(dir, sizeof dir, "%s/bounds", root);
    ag_spool_open(dir, &lim, &sp, err, sizeof err);
    if (!sp) {
        ok(0, "open: %s", err);
        return;
    }
    char block[60];
    memset(block, 'b', sizeof block);
    uint64_t s = ag_spool_take_seq(sp, err, sizeof err);
    ok(ag_spool_append(sp, s, block, 60, false, err, sizeof err)
       == AG_SPOOL_OK, "60 bytes fit in 100");
    ok(!ag_spool_has_room(sp, 60), "has_room says 60 more do not fit");
    s = ag_spool_take_seq(sp, err, sizeof err);
    err[0] = 0;
    ok(ag_spool_append(sp, s, block, 60, false, err, sizeof err)
       == AG_SPOOL_FULL, "the byte bound refuses a new message");
    ok(strstr(err, "is full") && strstr(err, "--spool-max"),
       "the error names the bound: %s", err);
    ok(ag_spool_count(sp) == 1, "nothing old was dropped");
    ok(ag_spool_append(sp, s, block, 60, true, err, sizeof err)
       == AG_SPOOL_OK, "a forced append (RunEnd) passes the bound");
    ag_spool_destroy(&sp);

    snprintf(dir, sizeof dir, "%s/bounds-count", root);
    ag_spool_open(dir, &lim, &sp, err, sizeof err);
    int rc = AG_SPOOL_OK, i;
    for (i = 0; i < 10 && rc == AG_SPOOL_OK; i++) {
        s = ag_spool_take_seq(sp, err, sizeof err);
        rc = ag_spool_append(sp, s, "m", 1, false, err, sizeof err);
    }
    ok(rc == AG_SPOOL_FULL && i == 5 && ag_spool_count(sp) == 4,
       "the message bound stops the 5th of 4 (%s)", err);
    uint64_t l[4];
    ag_spool_list(sp, 0, l, 1);
    ag_spool_remove(sp, l[0], err, sizeof err);
    ok(ag_spool_append(sp, s, "m", 1, false, err, sizeof err)
       == AG_SPOOL_OK, "after an ack there is room again");
    ag_spool_destroy(&sp);

    ag_spool_open(dir, NULL, &sp, err, sizeof err);
    char *big = calloc(1, AG_SPOOL_MAX_MESSAGE_BYTES + 1);
    s = sp ? ag_spool_take_seq(sp, err, sizeof err) : 0;
    ok(sp && big && ag_spool_append(sp, s, big, AG_SPOOL_MAX_MESSAGE_BYTES
                                    + 1, true, err, sizeof err)
       == AG_SPOOL_ERR && strstr(err, "above the bound"),
       "a message above 4 MiB is refused even when forced: %s", err);
    free(big);
    ag_spool_destroy(&sp);
}

static void
test_corrupt(void)
{
    char dir[300], err[512];
    ag_spool_t *sp = NULL;
    snprintf(dir, sizeof dir, "%s/corrupt", root);
    ag_spool_open(dir, NULL, &sp, err, sizeof err);
    if (!sp) {
        ok(0, "open: %s", err);
        return;
    }
    uint64_t s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = ag_spool_take_seq(sp, err, sizeof err);
        ag_spool_append(sp, s[i], "payload-data", 12, false, err,
                        sizeof err);
    }
    ag_spool_destroy(&sp);

    char name[64], path[400];
    /* s[0]: truncated in the middle of the payload. */
    snprintf(name, sizeof name, "%020" PRIu64 ".msg", s[0]);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ok(truncate(path, 24 + 5) == 0, "truncate a spool file");
    /* s[1]: one payload byte flipped. */
    snprintf(name, sizeof name, "%020" PRIu64 ".msg", s[1]);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY);
    ok(fd >= 0 && pwrite(fd, "X", 1, 24 + 3) == 1, "flip a payload byte");
    if (fd >= 0)
        close(fd);
    /* Garbage under a message name, an empty one, and a leftover tmp. */
    s_write_raw(dir, "00000000000000000900.msg",
                "garbage garbage garbage garbage!", 32);
    s_write_raw(dir, "00000000000000000901.msg", "", 0);
    s_write_raw(dir, "00000000000000000902.msg.tmp", "half", 4);

    ok(ag_spool_open(dir, NULL, &sp, err, sizeof err) == AG_SPOOL_OK,
       "a spool with bad files still opens");
    if (!sp)
        return;
    uint64_t l[8];
    size_t n = ag_spool_list(sp, 0, l, 8);
    ok(n == 2 && l[0] == s[2] && l[1] == s[3],
       "only the two good messages are held (%zu)", n);
    size_t np = ag_spool_problem_count(sp);
    ok(np == 5, "five problems reported (%zu)", np);
    int trunc = 0, crc = 0, magic = 0, header = 0, tmp = 0;
    for (size_t i = 0; i < np; i++) {
        const char *p = ag_spool_problem(sp, i);
        tap_diag("%s", p);
        snprintf(name, sizeof name, "%020" PRIu64 ".msg: ", s[0]);
        trunc |= strstr(p, name) && strstr(p, "truncated payload");
        snprintf(name, sizeof name, "%020" PRIu64 ".msg: ", s[1]);
        crc |= strstr(p, name) && strstr(p, "checksum mismatch");
        magic |= strstr(p, "900.msg: bad magic") != NULL;
        header |= strstr(p, "901.msg: truncated header") != NULL;
        tmp |= strstr(p, "902.msg.tmp: unfinished write") != NULL;
    }
    ok(trunc, "truncated file reported by name and reason");
    ok(crc, "flipped byte reported as a checksum mismatch");
    ok(magic, "garbage reported as bad magic");
    ok(header, "empty file reported as a truncated header");
    ok(tmp, "leftover tmp file reported and removed");
    snprintf(name, sizeof name, "corrupt/%020" PRIu64 ".msg", s[0]);
    ok(s_exists(dir, name) && s_exists(dir, "corrupt/00000000000000000900.msg")
       && !s_exists(dir, "00000000000000000900.msg")
       && !s_exists(dir, "00000000000000000902.msg.tmp"),
       "bad files moved into corrupt/, tmp removed");
    uint64_t next = ag_spool_take_seq(sp, err, sizeof err);
    ok(next > 901, "a bad file's number is never reused (%" PRIu64 ")", next);

    /* Damage after open: read reports it and moves it aside. */
    snprintf(path, sizeof path, "%s/%020" PRIu64 ".msg", dir, s[2]);
    ok(truncate(path, 10) == 0, "truncate a held file behind the spool");
    void *data = NULL;
    size_t len = 0;
    int rc = ag_spool_read(sp, s[2], &data, &len, err, sizeof err);
    ok(rc == AG_SPOOL_CORRUPT && strstr(err, "truncated header"),
       "read of a damaged file is CORRUPT: %s", err);
    free(data);
    ok(ag_spool_count(sp) == 1, "the damaged file is no longer held");
    ag_spool_destroy(&sp);
}

static void
test_state(void)
{
    char dir[300], err[512];
    ag_spool_t *sp = NULL;
    snprintf(dir, sizeof dir, "%s/state", root);
    ag_spool_open(dir, NULL, &sp, err, sizeof err);
    if (!sp) {
        ok(0, "open: %s", err);
        return;
    }
    ok(ag_spool_state_read(sp, "run") == NULL, "absent state reads NULL");
    ok(ag_spool_state_write(sp, "run", "{\"run_id\":\"x\"}", err, sizeof err)
       == AG_SPOOL_OK, "write a state file");
    ag_spool_destroy(&sp);
    ag_spool_open(dir, NULL, &sp, err, sizeof err);
    char *t = sp ? ag_spool_state_read(sp, "run") : NULL;
    ok_str(t, "{\"run_id\":\"x\"}", "state survives a restart");
    free(t);
    ok(ag_spool_count(sp) == 0, "a state file is not a message");
    ok(ag_spool_state_write(sp, "../x", "y", err, sizeof err) == AG_SPOOL_ERR
       && strstr(err, "bad name"), "a state name with a path is refused");
    ag_spool_state_clear(sp, "run", err, sizeof err);
    ok(ag_spool_state_read(sp, "run") == NULL, "cleared state is gone");
    ag_spool_destroy(&sp);
}

/* More bad files than AG_SPOOL_MAX_PROBLEMS: the first 64 problems are
 * kept (ag_spool.h: pointers handed out stay valid), every file is still
 * moved aside. */
static void
test_problem_bound(void)
{
    char dir[300], err[512], name[64];
    ag_spool_t *sp = NULL;
    snprintf(dir, sizeof dir, "%s/many-bad", root);
    ok(mkdir(dir, 0700) == 0, "a spool directory for 70 bad files");
    for (int i = 0; i < 70; i++) {
        snprintf(name, sizeof name, "%020d.msg", 1000 + i);
        s_write_raw(dir, name, "garbage garbage garbage garbage!", 32);
    }
    ok(ag_spool_open(dir, NULL, &sp, err, sizeof err) == AG_SPOOL_OK,
       "it opens");
    if (!sp)
        return;
    size_t np = ag_spool_problem_count(sp);
    ok(np == AG_SPOOL_MAX_PROBLEMS && np == 64, "64 problems kept (%zu)",
       np);
    const char *first = ag_spool_problem(sp, 0);
    ok(first && strstr(first, "bad magic"), "the first one stays (%s)",
       first ? first : "(null)");
    ok(ag_spool_problem(sp, 64) == NULL, "no 65th");
    int moved = 0;
    for (int i = 0; i < 70; i++) {
        char rel[80];
        snprintf(rel, sizeof rel, "corrupt/%020d.msg", 1000 + i);
        moved += s_exists(dir, rel);
    }
    ok(moved == 70, "all 70 files moved aside (%d)", moved);
    ag_spool_destroy(&sp);
}

/* A directory made by open is fsync'd into its parent: the parent is
 * found for a relative name and one with a trailing slash too. */
static void
test_mkdir_names(void)
{
    char err[512], cwd[4096];
    ag_spool_t *sp = NULL;
    if (!getcwd(cwd, sizeof cwd) || chdir(root) != 0) {
        ok(0, "chdir %s", root);
        return;
    }
    ok(ag_spool_open("relative-spool", NULL, &sp, err, sizeof err) ==
       AG_SPOOL_OK, "a relative directory name (%s)", sp ? "" : err);
    ag_spool_destroy(&sp);
    ok(ag_spool_open("trailing-spool/", NULL, &sp, err, sizeof err) ==
       AG_SPOOL_OK, "a name with a trailing slash (%s)", sp ? "" : err);
    ag_spool_destroy(&sp);
    ok(chdir(cwd) == 0, "back to %s", cwd);
}

static void
test_open_errors(void)
{
    char err[512];
    ag_spool_t *sp = NULL;
    ok(ag_spool_open("/proc/parity-no/spool", NULL, &sp, err, sizeof err)
       == AG_SPOOL_ERR && sp == NULL && strstr(err, "mkdir /proc/parity-no"),
       "an impossible directory fails with the call and path: %s", err);
    char file[300];
    snprintf(file, sizeof file, "%s/plainfile", root);
    s_write_raw(root, "plainfile", "x", 1);
    ok(ag_spool_open(file, NULL, &sp, err, sizeof err) == AG_SPOOL_ERR
       && strstr(err, "plainfile"), "a plain file is not a spool: %s", err);
}

typedef struct {
    ag_spool_t *sp;
    uint64_t seq;
    int rc;
} s_append_arg_t;

static void *
s_append_thread(void *arg)
{
    s_append_arg_t *a = arg;
    char err[512];
    a->rc = ag_spool_append(a->sp, a->seq, "slow", 4, false, err, sizeof err);
    return NULL;
}

/* The network thread asks the spool for its count at every Heartbeat: an
 * append's fsyncs on a stalled disk must not hold it (a collector with a
 * 1 s timeout called an agent offline during a 1 s stall), and the room
 * an append in flight takes still counts against the bounds. */
static void
test_append_off_lock(void)
{
    char dir[300], err[512];
    ag_spool_t *sp = NULL;
    ag_spool_limits_t lim = { .max_bytes = 1 << 20, .max_messages = 2 };
    snprintf(dir, sizeof dir, "%s/offlock", root);
    if (ag_spool_open(dir, &lim, &sp, err, sizeof err) != AG_SPOOL_OK) {
        ok(0, "open: %s", err);
        return;
    }
    uint64_t s1 = ag_spool_take_seq(sp, err, sizeof err);
    ok(ag_spool_append(sp, s1, "one", 3, false, err, sizeof err) ==
       AG_SPOOL_OK, "a first message");
    s_append_arg_t a = { sp, ag_spool_take_seq(sp, err, sizeof err), -1 };
    uint64_t s3 = ag_spool_take_seq(sp, err, sizeof err);
    pthread_t t;
    atomic_store(&s_in_fsync, 0);
    atomic_store(&s_slow_fsync, 1);
    if (pthread_create(&t, NULL, s_append_thread, &a) != 0) {
        atomic_store(&s_slow_fsync, 0);
        ok(0, "pthread_create");
        ag_spool_destroy(&sp);
        return;
    }
    while (!atomic_load(&s_in_fsync))
        usleep(1000);
    double t0 = (pw_clock_mono_sec() * 1e3);
    size_t n = ag_spool_count(sp);
    bool room = ag_spool_has_room(sp, 1);
    int full = ag_spool_append(sp, s3, "three", 5, false, err, sizeof err);
    double took = (pw_clock_mono_sec() * 1e3) - t0;
    pthread_join(t, NULL);
    atomic_store(&s_slow_fsync, 0);
    ok(took < 200, "count, has_room and a refused append answer while an "
       "append waits 800 ms in fsync (%.1f ms)", took);
    ok(n == 1, "the message being written is not counted yet (%zu)", n);
    ok(!room && full == AG_SPOOL_FULL, "its room counts: the bound of 2 "
       "messages is reached (room %d, append %d)", room, full);
    ok(a.rc == AG_SPOOL_OK && ag_spool_count(sp) == 2,
       "the slow append is held once done (rc %d, count %zu)", a.rc,
       ag_spool_count(sp));
    ag_spool_destroy(&sp);
}

int
main(void)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(root, sizeof root, "%s/parity-spool-XXXXXX", base);
    if (!mkdtemp(root)) {
        printf("Bail out! mkdtemp %s\n", root);
        return 1;
    }
    test_order_and_remove();
    test_restart();
    test_bounds();
    test_corrupt();
    test_state();
    test_problem_bound();
    test_mkdir_names();
    test_open_errors();
    test_append_off_lock();
    s_rmtree(root);
    return tap_done();
}
