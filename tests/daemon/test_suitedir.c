/* test_suitedir.c -- the daemon's --suites directory (ag_suitedir: scan,
 * find, digests of the bytes parsed, diff, the inotify watch and its
 * debounce) and recovery of runs left open in a spool (ag_recover).
 * Real files in a fresh temporary directory. */
#include "pw_clock.h"
#include "tap.h"
#include "ag_recover.h"
#include "ag_spool.h"
#include "ag_suitedir.h"
#include "pw_wire.h"

#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char root[256];

static void
s_write(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static const char *
s_suite(const char *name, const char *note)
{
    static char text[512];
    snprintf(text, sizeof text, "suite: %s\n# %s\nbenchmarks:\n  - name: b\n"
             "    arms:\n      - name: x\n        command: [/bin/true]\n"
             "      - name: y\n        command: [/bin/true]\n", name, note);
    return text;
}

static void
s_hex(const char *text, char out[65])
{
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)text, strlen(text));
    for (size_t i = 0; i < sizeof h; i++)
        snprintf(out + 2 * i, 3, "%02x", h[i]);
}

/* Wait (up to limit_ms) for the watch to report; how many reports. */
static int
s_reports(ag_suitedir_watch_t *w, int limit_ms)
{
    int n = 0;
    int64_t end = pw_clock_mono_ms() + limit_ms;
    while (pw_clock_mono_ms() < end)
        n += ag_suitedir_watch_wait(w, 50);
    return n;
}

static void
test_scan(void)
{
    char dir[300], err[512], want[65], why[512];
    snprintf(dir, sizeof dir, "%s/scan", root);
    mkdir(dir, 0755);
    s_write(dir, "b.yaml", s_suite("beta", "1"));
    s_write(dir, "a.yml", s_suite("alpha", "1"));
    s_write(dir, ".hidden.yaml", s_suite("hidden", "1"));
    s_write(dir, "notes.txt", "not a suite");
    s_write(dir, "bad.yaml", "suite: bad\nbenchmarks: 3\n");
    ag_suitedir_t *l = ag_suitedir_scan(dir, err, sizeof err);
    ok(l && l->count == 2, "scan: the two suites that load, not the hidden "
       "one, the .txt or the bad one (%zu)", l ? l->count : 0);
    if (!l)
        return;
    ok(strcmp(l->entries[0].name, "alpha") == 0
       && strcmp(l->entries[1].name, "beta") == 0,
       "scan: in file name order");
    s_hex(s_suite("alpha", "1"), want);
    ok(strcmp(l->entries[0].digest, want) == 0,
       "scan: the digest is the SHA-256 of the file's bytes");
    ok(ag_suitedir_find(l, "a", why, sizeof why) == &l->entries[0],
       "find: by the file's stem");
    ok(ag_suitedir_find(l, "beta", why, sizeof why) == &l->entries[1],
       "find: by the suite's name");
    ok(!ag_suitedir_find(l, "gamma", why, sizeof why)
       && strcmp(why, "unknown suite \"gamma\": not in this agent's "
                 "--suites directory") == 0, "find: unknown: %s", why);
    ok(!ag_suitedir_find(l, "../etc/x", why, sizeof why)
       && strstr(why, "is not a plain suite name"), "find: a path: %s", why);

    ag_suite_t *s = NULL;
    char path[400], hex[65];
    snprintf(path, sizeof path, "%s/b.yaml", dir);
    ok(ag_suitedir_load(path, NULL, 0, NULL, 0, &s, hex, err, sizeof err)
       == AG_SUITE_OK && strcmp(hex, l->entries[1].digest) == 0,
       "load: the same digest as the scan for the same bytes");
    ag_suite_destroy(&s);

    /* What changed, for the log. */
    s_write(dir, "b.yaml", s_suite("beta", "2"));
    unlink(path);
    snprintf(path, sizeof path, "%s/a.yml", dir);
    s_write(dir, "a.yml", s_suite("alpha", "2"));
    s_write(dir, "c.yaml", s_suite("gamma", "1"));
    ag_suitedir_t *m = ag_suitedir_scan(dir, err, sizeof err);
    char text[256];
    ag_suitedir_diff(l, m, text, sizeof text);
    ok(!ag_suitedir_same(l, m) && strcmp(text, "added=gamma removed=beta "
                                         "changed=alpha") == 0,
       "diff: %s", text);
    ag_suitedir_diff(m, m, text, sizeof text);
    ok(ag_suitedir_same(m, m) && strcmp(text, "none") == 0,
       "same list: same, diff none");
    ok(ag_suitedir_same(NULL, NULL) && !ag_suitedir_same(NULL, m),
       "NULL is an empty list");
    ag_suitedir_destroy(&l);
    ag_suitedir_destroy(&m);
    ok(l == NULL, "destroy clears the pointer");
    char missing[320];
    snprintf(missing, sizeof missing, "%s/none", root);
    ok(!ag_suitedir_scan(missing, err, sizeof err)
       && strstr(err, "--suites ") && strstr(err, "opendir: No such file"),
       "scan: a missing directory: %s", err);
}

static void
test_watch(void)
{
    char dir[300], err[512], away[320];
    snprintf(dir, sizeof dir, "%s/watch", root);
    mkdir(dir, 0755);
    ag_suitedir_watch_t *w = ag_suitedir_watch_new(dir, err, sizeof err);
    ok(w != NULL, "watch: new (%s)", w ? "ok" : err);
    if (!w)
        return;
    ok(s_reports(w, 400) == 0, "watch: nothing happens, nothing reported");
    for (int i = 0; i < 30; i++)
        s_write(dir, "a.yaml", s_suite("alpha", "burst"));
    ok(s_reports(w, 1200) == 1, "watch: 30 saves in a burst are one change");
    s_write(dir, ".a.yaml.swp", "x");
    s_write(dir, "a.yaml~", "x");
    s_write(dir, "4913", "x");
    ok(s_reports(w, 600) == 0, "watch: an editor's swap, backup and probe "
       "files are not a change");
    snprintf(away, sizeof away, "%s/watch.old", root);
    ok(rename(dir, away) == 0 && s_reports(w, 600) == 1,
       "watch: the directory moved away is a change");
    ok(rename(away, dir) == 0 && s_reports(w, 3000) == 1,
       "watch: back in place, watched again (a change)");
    s_write(dir, "b.yaml", s_suite("beta", "1"));
    ok(s_reports(w, 800) == 1, "watch: and it sees the next save");
    /* A wake fd ends a long wait at once: the daemon's watcher sleeps
     * with no timer and is woken this way at a signal or its end. */
    int efd = eventfd(0, EFD_CLOEXEC);
    ag_suitedir_watch_set_wake(w, efd);
    uint64_t one = 1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool wrote = write(efd, &one, sizeof one) == sizeof one;
    bool rep = ag_suitedir_watch_wait(w, 60000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3
              + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    ok(wrote && !rep && ms < 1000, "watch: a readable wake fd ends a 60 s "
       "wait at once, reporting nothing (%.1f ms)", ms);
    s_write(dir, "c.yaml", s_suite("gamma", "1"));
    ag_suitedir_watch_set_wake(w, -1);
    ok(s_reports(w, 800) == 1, "watch: without it, changes are seen as "
       "before");
    close(efd);
    ag_suitedir_watch_destroy(&w);
    ok(w == NULL, "watch: destroy clears the pointer");
    char missing[320];
    snprintf(missing, sizeof missing, "%s/none", root);
    ok(!ag_suitedir_watch_new(missing, err, sizeof err)
       && strstr(err, "inotify_add_watch: No such file"),
       "watch: a missing directory: %s", err);
}

/* Spool env (a RunStart, SampleBatch or RunEnd) as the stream would. */
static void
s_spool(ag_spool_t *sp, Parity__Envelope *env)
{
    char err[256];
    uint8_t *buf = NULL;
    size_t len = 0;
    env->seq = ag_spool_take_seq(sp, err, sizeof err);
    if (pw_wire_pack_alloc(env, &buf, &len, err, sizeof err) == PW_WIRE_OK)
        ag_spool_append(sp, env->seq, buf, len, true, err, sizeof err);
    free(buf);
}

/* Spool one message of run: a RunStart, a SampleBatch (its seq and n
 * empty samples, n <= 4) or a RunEnd, chosen by body. */
static void
s_message(ag_spool_t *sp, Parity__Envelope__BodyCase body, const char *run,
          uint32_t seq, size_t n)
{
    Parity__Envelope env;
    Parity__RunStart rs = PARITY__RUN_START__INIT;
    Parity__RunEnd re = PARITY__RUN_END__INIT;
    Parity__SampleBatch b = PARITY__SAMPLE_BATCH__INIT;
    Parity__Sample s[4], *ps[4];
    for (size_t i = 0; i < n && i < 4; i++) {
        parity__sample__init(&s[i]);
        ps[i] = &s[i];
    }
    rs.run_id = re.run_id = b.run_id = (char *)run;
    b.batch_seq = seq;
    b.samples = ps;
    b.n_samples = n < 4 ? n : 4;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, body, body == PARITY__ENVELOPE__BODY_RUN_START ?
                     (void *)&rs : body == PARITY__ENVELOPE__BODY_RUN_END ?
                     (void *)&re : (void *)&b);
    s_spool(sp, &env);
}

#define S_START   PARITY__ENVELOPE__BODY_RUN_START
#define S_BATCH   PARITY__ENVELOPE__BODY_SAMPLE_BATCH
#define S_END     PARITY__ENVELOPE__BODY_RUN_END

static void
test_recover(void)
{
    char dir[300], err[512];
    ag_spool_t *sp = NULL;
    ag_open_run_t runs[AG_RECOVER_MAX_RUNS];
    bool seen = true;
    snprintf(dir, sizeof dir, "%s/spool", root);
    ok(ag_spool_open(dir, NULL, &sp, err, sizeof err) == AG_SPOOL_OK,
       "recover: a spool (%s)", sp ? "ok" : err);
    if (!sp)
        return;
    ok(ag_recover_open_runs(sp, runs, AG_RECOVER_MAX_RUNS, &seen) == 0
       && !seen, "recover: an empty spool has no run");
    /* "closed": started and ended. "open": started, two batches, no end.
     * "acked-start": its RunStart acked long ago (not in the spool), the
     * state file names it with 1 batch, a later batch is spooled.
     * "orphan": batches only (its RunEnd was acked). */
    s_message(sp, S_START, "closed", 0, 0);
    s_message(sp, S_BATCH, "closed", 0, 2);
    s_message(sp, S_END, "closed", 0, 0);
    s_message(sp, S_START, "open", 0, 0);
    s_message(sp, S_BATCH, "open", 0, 3);
    s_message(sp, S_BATCH, "open", 1, 2);
    s_message(sp, S_BATCH, "acked-start", 1, 4);
    s_message(sp, S_BATCH, "orphan", 0, 1);
    ok(ag_spool_state_write(sp, AG_RECOVER_RUN_STATE, "acked-start 1 5\n",
                            err, sizeof err) == AG_SPOOL_OK,
       "recover: the state file written");
    size_t n = ag_recover_open_runs(sp, runs, AG_RECOVER_MAX_RUNS, &seen);
    ok(n == 2 && seen, "recover: two runs are open (%zu)", n);
    bool a = false, o = false;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(runs[i].run_id, "acked-start") == 0)
            a = runs[i].batches == 2 && runs[i].samples == 9;
        if (strcmp(runs[i].run_id, "open") == 0)
            o = runs[i].batches == 2 && runs[i].samples == 5;
    }
    ok(a, "recover: the state file's run, with the batch spooled after its "
       "last update counted (2 batches, 9 samples)");
    ok(o, "recover: a spooled RunStart without RunEnd (2 batches, 5 "
       "samples)");
    ok(ag_spool_state_write(sp, AG_RECOVER_RUN_STATE, "garbage\n", err,
                            sizeof err) == AG_SPOOL_OK
       && ag_recover_open_runs(sp, runs, AG_RECOVER_MAX_RUNS, NULL) == 1,
       "recover: an unreadable state file is ignored (logged)");
    ag_spool_destroy(&sp);
}

int
main(void)
{
    if (sodium_init() < 0)
        return 1;
    snprintf(root, sizeof root, "/tmp/parity-suitedir-XXXXXX");
    if (!mkdtemp(root)) {
        printf("Bail out! mkdtemp failed\n");
        return 1;
    }
    test_scan();
    test_watch();
    test_recover();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", root);
    return tap_done();
}
