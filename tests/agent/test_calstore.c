/* test_calstore.c -- the calibration store (ag_calstore.h): its path,
 * reads and appends, every kind of bad file set aside with its reason,
 * concurrent appends that lose nothing, and the floor choice (pooled,
 * fresh, much noisier, no store, default). */
#include "ag_calstore.h"
#include "../tap.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char s_dir[256];

static void
s_write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fwrite(text, 1, len, f);
        fclose(f);
    }
}

static bool
s_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void
test_path(void)
{
    char path[4096], err[512] = "", want[600];
    char host[256];
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    for (char *p = host; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '.' || *p == '-'))
            *p = '_';
    char dir[300];
    snprintf(dir, sizeof dir, "%s/state/deeper", s_dir);
    ok(ag_calstore_path(dir, path, sizeof path, err, sizeof err) == 0,
       "a path under a given directory (%s)", err);
    snprintf(want, sizeof want, "%s/calibration-%s", dir, host);
    ok_str(path, want, "DIR/calibration-HOST");
    ok(s_exists(dir), "the directory is made");

    char xdg[300];
    snprintf(xdg, sizeof xdg, "%s/xdg", s_dir);
    setenv("XDG_CACHE_HOME", xdg, 1);
    ok(ag_calstore_path(NULL, path, sizeof path, err, sizeof err) == 0,
       "the user's cache (%s)", err);
    snprintf(want, sizeof want, "%s/xdg/parity/calibration-%s", s_dir, host);
    ok_str(path, want, "$XDG_CACHE_HOME/parity/calibration-HOST");
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("XDG_CACHE_HOME", "relative", 1);
    setenv("HOME", s_dir, 1);
    ok(ag_calstore_path(NULL, path, sizeof path, err, sizeof err) == 0,
       "a relative XDG_CACHE_HOME is ignored (%s)", err);
    snprintf(want, sizeof want, "%s/.cache/parity/calibration-%s", s_dir,
             host);
    ok_str(path, want, "then $HOME/.cache/parity");
    unsetenv("HOME");
    ok(ag_calstore_path(NULL, path, sizeof path, err, sizeof err) != 0,
       "no absolute cache directory: an error");
    ok_str(err, "no cache directory: neither XDG_CACHE_HOME nor HOME is an "
           "absolute path", "its message");
    if (home)
        setenv("HOME", home, 1);
    free(home);
    unsetenv("XDG_CACHE_HOME");
}

static void
test_round_trip(void)
{
    char path[300], err[512] = "", note[1024] = "x";
    double run[1200], *got = NULL;
    size_t n = 99;
    snprintf(path, sizeof path, "%s/store", s_dir);
    ok(ag_calstore_load(path, &got, &n, note, sizeof note, err,
                        sizeof err) == 0 && n == 0 && note[0] == '\0',
       "a missing store is empty (%s)", err);
    free(got);
    for (int i = 0; i < 1200; i++)
        run[i] = 400.0 + i * 0.25;
    ok(ag_calstore_append(path, run, 150, 1700000000000000, note,
                          sizeof note, err, sizeof err) == 0,
       "150 runs appended (%s)", err);
    ok(ag_calstore_load(path, &got, &n, note, sizeof note, err,
                        sizeof err) == 0 && n == 150 && got &&
       got[0] == 400.0 && got[149] == run[149], "150 runs read back");
    free(got);
    ok(ag_calstore_append(path, run + 150, 1050, 1700000000000001, note,
                          sizeof note, err, sizeof err) == 0,
       "1050 more appended (%s)", err);
    ok(ag_calstore_load(path, &got, &n, note, sizeof note, err,
                        sizeof err) == 0 && n == AG_CALSTORE_MAX && got &&
       got[0] == run[200] && got[999] == run[1199],
       "the newest 1000 are kept, oldest first");
    free(got);
    struct stat st;
    ok(stat(path, &st) == 0 && st.st_size < (off_t)AG_CALSTORE_MAX_BYTES &&
       (st.st_mode & 0777) == 0600, "a full store is small and private "
       "(%lld bytes)", (long long)st.st_size);
    double bad = 0.0;
    ok(ag_calstore_append(path, &bad, 1, 1, note, sizeof note, err,
                          sizeof err) != 0, "a run of 0 is refused");
    ok_str(err, "calibration run 0 is 0: not a time in (0, 1e+07] us",
           "its message");
}

/* Write text at the store's path, load, and check it was set aside with
 * why. */
static void
s_bad(const char *name, const char *text, size_t len, const char *why)
{
    char path[300], badp[320], err[512] = "", note[1024] = "", want[1200];
    double *got = NULL;
    size_t n = 99;
    snprintf(path, sizeof path, "%s/bad", s_dir);
    snprintf(badp, sizeof badp, "%s.bad", path);
    unlink(path);
    s_write_file(path, text, len);
    int rc = ag_calstore_load(path, &got, &n, note, sizeof note, err,
                              sizeof err);
    free(got);
    ok(rc == 0 && n == 0 && !s_exists(path) && s_exists(badp),
       "%s: set aside (%s)", name, err);
    snprintf(want, sizeof want, "calibration store %s: %s; set aside as %s, "
             "starting a new store", path, why, badp);
    ok_str(note, want, "%s: the note says why", name);
}

/* Version 2 keeps each run's other metrics ("-": none); a version-1
 * file is read (no other metrics) and written again as version 2. */
static void
test_metrics(void)
{
    char path[300], err[512] = "", note[1024] = "";
    double wall[3] = { 400, 410, 420 }, cpu[3] = { 100, 101.5, 102 };
    double rss[3] = { 8072, 8076, 8072 };
    const double *more[AG_CALSTORE_MORE] = { cpu, NULL, rss };
    ag_calstore_runs_t r;
    snprintf(path, sizeof path, "%s/metrics", s_dir);
    s_write_file(path, "parity-calibration 1\n1 300\n2 310\n", 33);
    ok(ag_calstore_load_runs(path, &r, note, sizeof note, err, sizeof err)
       == 0 && r.n == 2 && r.wall_us[1] == 310 && isnan(r.more[0][0]) &&
       isnan(r.more[2][1]) && note[0] == '\0',
       "a version-1 store is read: wall times, no other metrics (%s)", note);
    ag_calstore_runs_free(&r);
    ok(ag_calstore_append_runs(path, wall, more, 3, 5, note, sizeof note, err,
                               sizeof err) == 0, "3 runs appended with CPU "
       "time and peak RSS (%s)", err);
    FILE *f = fopen(path, "r");
    char text[400] = "";
    size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[got] = '\0';
    ok_str(text, "parity-calibration 2\n1 300.000 - - -\n2 310.000 - - -\n"
           "5 400.000 100.000 - 8072.000\n5 410.000 101.500 - 8076.000\n"
           "5 420.000 102.000 - 8072.000\n", "written as version 2, \"-\" "
           "where a run has no value");
    ok(ag_calstore_load_runs(path, &r, note, sizeof note, err, sizeof err)
       == 0 && r.n == 5 && r.more[0][4] == 102 && isnan(r.more[1][4]) &&
       r.more[2][3] == 8076 && isnan(r.more[0][0]), "read back, each "
       "column where it was");
    ag_calstore_runs_free(&r);
    double bad[3] = { 1, -1, 1 };
    const double *worse[AG_CALSTORE_MORE] = { NULL, NULL, bad };
    ok(ag_calstore_append_runs(path, wall, worse, 3, 6, note, sizeof note,
                               err, sizeof err) != 0, "a peak RSS of -1 is "
       "refused");
    ok_str(err, "calibration run 1: peak_rss_kb is -1: not in [0, 1e+09]",
           "its message");
}

static void
test_bad_files(void)
{
    static const char head[] = "parity-calibration 1\n";
    static const char head2[] = "parity-calibration 2\n";
    char buf[300000];
    const char *line_msg = "expected TAKEN_AT_US WALL_US (an integer >= 0, "
                           "a time > 0 and <= 1e+07 us)";
    const char *line2_msg = "expected TAKEN_AT_US WALL_US CPU_US "
                            "TASK_CLOCK_US PEAK_RSS_KB (an integer >= 0, a "
                            "time > 0 and <= 1e+07 us, then three numbers "
                            ">= 0 or -)";
    const char *head_msg = "line 1: expected \"parity-calibration 2\" (or "
                           "an older \"parity-calibration 1\")";
    char why[300];
    s_bad("another file", "garbage\n", 8, head_msg);
    s_bad("another version", "parity-calibration 3\n1 5\n", 25, head_msg);
    s_bad("empty", "", 0, head_msg);
    static const char *const lines2[] = {
        "1 5\n", "1 5 1 2\n", "1 5 1 2 3 4\n", "1 5 -1 2 3\n",
        "1 5 x 2 3\n", "1 5 1  2 3\n", "1 5 nan 2 3\n", "1 5 1 2 2e9\n",
        "1 5 1 2 --\n", "1 5 1 2 3 \n", NULL };
    for (size_t i = 0; lines2[i]; i++) {
        int len = snprintf(buf, sizeof buf, "%s1 400 - - -\n%s", head2,
                           lines2[i]);
        snprintf(why, sizeof why, "line 3: %s", line2_msg);
        char name[64];
        snprintf(name, sizeof name, "version 2 line \"%.*s\"",
                 (int)strlen(lines2[i]) - 1, lines2[i]);
        s_bad(name, buf, (size_t)len, why);
    }
    static const char *const lines[] = {
        "x y\n", "1 0\n", "1 -5\n", "1 nan\n", "1 inf\n", "-1 5\n",
        "1 5 6\n", "1  5\n", " 1 5\n", "1\t5\n", "1 20000000\n",
        "99999999999999999999 5\n", "1 5x\n", "1 \n", NULL };
    for (size_t i = 0; lines[i]; i++) {
        int len = snprintf(buf, sizeof buf, "%s1 400\n%s", head, lines[i]);
        snprintf(why, sizeof why, "line 3: %s", line_msg);
        char name[64];
        snprintf(name, sizeof name, "line \"%.*s\"",
                 (int)strlen(lines[i]) - 1, lines[i]);
        s_bad(name, buf, (size_t)len, why);
    }
    int len = snprintf(buf, sizeof buf, "%s1 400", head);
    s_bad("no newline at the end", buf, (size_t)len,
          "line 2: no newline at the end");
    len = snprintf(buf, sizeof buf, "%s1 4%0170d\n", head, 0);
    s_bad("a long line", buf, (size_t)len, "line 2: longer than 159 bytes");
    memcpy(buf, head, sizeof head - 1);
    memcpy(buf + sizeof head - 1, "1 4\0\n", 5);
    s_bad("a NUL byte", buf, sizeof head - 1 + 5,
          "a NUL byte: not a text file");
    size_t used = (size_t)snprintf(buf, sizeof buf, "%s", head);
    for (int i = 0; i < 1001; i++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "1 400\n");
    s_bad("1001 runs", buf, used, "more than 1000 runs");
    memset(buf, 'x', 200000);
    s_bad("200 kB", buf, 200000, "200000 bytes, more than the limit of "
          "131072");

    /* Not a regular file: a symbolic link, a FIFO (which must not hang
     * the read), a directory. */
    char path[300], badp[320], err[512] = "", note[1024] = "";
    double *got = NULL;
    size_t n;
    snprintf(path, sizeof path, "%s/bad", s_dir);
    snprintf(badp, sizeof badp, "%s.bad", path);
    struct { const char *name; int kind; const char *why; } odd[] = {
        { "a symbolic link", 0, "a symbolic link, not a file" },
        { "a FIFO", 1, "not a regular file" },
        { "a directory", 2, "not a regular file" },
    };
    for (size_t i = 0; i < 3; i++) {
        char want[1200];
        unlink(path);
        rmdir(badp);
        unlink(badp);
        if (odd[i].kind == 0)
            (void)!symlink("/etc/passwd", path);
        else if (odd[i].kind == 1)
            mkfifo(path, 0600);
        else
            mkdir(path, 0700);
        alarm(10);
        int rc = ag_calstore_load(path, &got, &n, note, sizeof note, err,
                                  sizeof err);
        alarm(0);
        free(got);
        got = NULL;
        snprintf(want, sizeof want, "calibration store %s: %s; set aside as "
                 "%s, starting a new store", path, odd[i].why, badp);
        ok(rc == 0 && n == 0 && !s_exists(path), "%s: set aside (%s)",
           odd[i].name, err);
        ok_str(note, want, "%s: the note says why", odd[i].name);
    }
    rmdir(badp);

    /* An append over a bad file sets it aside and starts afresh. */
    double run[3] = { 500, 501, 502 };
    unlink(path);
    s_write_file(path, "garbage\n", 8);
    ok(ag_calstore_append(path, run, 3, 7, note, sizeof note, err,
                          sizeof err) == 0 && strstr(note, "set aside"),
       "an append sets a bad store aside (%s)", note);
    ok(ag_calstore_load(path, &got, &n, note, sizeof note, err,
                        sizeof err) == 0 && n == 3 && got[2] == 502,
       "and the new store holds the new runs only");
    free(got);
}

static void
test_concurrent(void)
{
    char path[300], err[512] = "", note[512];
    double *got = NULL;
    size_t n = 0;
    snprintf(path, sizeof path, "%s/shared", s_dir);
    /* 4 processes x 10 appends x 20 runs = 800: under the cap, so any
     * lost update shows as a missing run. */
    pid_t kids[4];
    for (int k = 0; k < 4; k++) {
        if ((kids[k] = fork()) == 0) {
            double run[20];
            for (int i = 0; i < 20; i++)
                run[i] = 1000.0 * (k + 1) + i;
            for (int j = 0; j < 10; j++)
                if (ag_calstore_append(path, run, 20, j, note, sizeof note,
                                       err, sizeof err) != 0)
                    _exit(1);
            _exit(0);
        }
    }
    int bad = 0;
    for (int k = 0; k < 4; k++) {
        int st;
        waitpid(kids[k], &st, 0);
        bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    ok(bad == 0, "4 processes append at once without an error");
    ok(ag_calstore_load(path, &got, &n, note, sizeof note, err,
                        sizeof err) == 0 && n == 800 && note[0] == '\0',
       "all 800 runs are there, none lost, the file intact (%zu)", n);
    int per[4] = { 0 };
    for (size_t i = 0; i < n; i++)
        per[(int)(got[i] / 1000.0) - 1]++;
    ok(per[0] == 200 && per[1] == 200 && per[2] == 200 && per[3] == 200,
       "200 from each process");
    free(got);
}

static void
s_fill(double *x, size_t n, double base, double spread)
{
    /* Evenly spread over [base, base + spread): q90 - q10 = 0.8 spread
     * for large n. */
    for (size_t i = 0; i < n; i++)
        x[i] = base + spread * (double)((i * 37) % n) / (double)n;
}

static void
test_floor(void)
{
    double store[1000], session[100], noisy[100];
    ag_floor_t f;
    char err[256] = "", text[512];
    s_fill(store, 1000, 400, 100);
    s_fill(session, 100, 410, 110);
    s_fill(noisy, 100, 400, 400);

    ok(ag_calstore_floor(store, 1000, session, 100, false, &f, err,
                         sizeof err) == 0 && f.source == AG_FLOOR_POOLED &&
       f.why == AG_FLOOR_WHY_STORE && f.samples == 1000 && f.store_n == 1000
       && f.session_n == 100, "pooled: the newest 1000 of store and session");
    ok(f.store_floor_us > 79 && f.store_floor_us < 81 &&
       f.session_floor_us > 86 && f.session_floor_us < 89,
       "both floors recorded (%.1f, %.1f)", f.store_floor_us,
       f.session_floor_us);
    ag_floor_describe(&f, text, sizeof text);
    ok_str(text, "q90 - q10 of this host's last 1000 no-op runs (900 from "
           "the calibration store, 100 now)", "pooled: described");

    ok(ag_calstore_floor(store, 1000, noisy, 100, false, &f, err,
                         sizeof err) == 0 && f.source == AG_FLOOR_SESSION &&
       f.why == AG_FLOOR_WHY_NOISY && f.samples == 100 &&
       f.floor_us == f.session_floor_us, "4x noisier: this session's alone");
    ag_floor_describe(&f, text, sizeof text);
    ok_str(text, "q90 - q10 of this invocation's 100 no-op runs alone; this "
           "invocation's runs are much noisier than the store's (q90 - q10 "
           "317 us against 80 us, over 2x), so they are not pooled",
           "noisier: described");

    ok(ag_calstore_floor(store, 1000, session, 100, true, &f, err,
                         sizeof err) == 0 && f.source == AG_FLOOR_SESSION &&
       f.why == AG_FLOOR_WHY_FRESH && f.floor_us == f.session_floor_us,
       "fresh: this session's alone");
    ag_floor_describe(&f, text, sizeof text);
    ok_str(text, "q90 - q10 of this invocation's 100 no-op runs alone; "
           "--fresh-floor: the store (1000 runs) is not used",
           "fresh: described");

    ok(ag_calstore_floor(NULL, 0, session, 100, false, &f, err,
                         sizeof err) == 0 && f.source == AG_FLOOR_SESSION &&
       f.why == AG_FLOOR_WHY_NO_STORE, "no store: this session's");
    ok(ag_calstore_floor(NULL, 0, session, 50, false, &f, err,
                         sizeof err) == 0 && f.source == AG_FLOOR_DEFAULT &&
       f.is_default && f.floor_us == 25.0, "50 runs and no store: 25 us");
    ag_floor_describe(&f, text, sizeof text);
    ok_str(text, "the default: fewer than 100 calibration runs (50); no "
           "calibration store yet", "default: described");
    ok(ag_calstore_floor(store, 60, session, 50, false, &f, err,
                         sizeof err) == 0 && f.source == AG_FLOOR_POOLED &&
       f.samples == 110, "a young store (60) pooled with 50 runs: 110");
    /* A small session cannot be judged noisier: too few to say. */
    ok(ag_calstore_floor(store, 1000, noisy, 50, false, &f, err,
                         sizeof err) == 0 && f.source == AG_FLOOR_POOLED,
       "50 noisy runs are pooled (too few to call noisier)");
    session[7] = 0.0;
    ok(ag_calstore_floor(store, 1000, session, 100, false, &f, err,
                         sizeof err) != 0, "a run of 0 is an error");
    ok_str(err, "calibration sample 8 is 0: samples must be finite and > 0",
           "its message");
    ok_str(ag_floor_source_name(AG_FLOOR_SOURCE_COUNT), "?", "names: ?");
}

int
main(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/parity-calstore-XXXXXX");
    if (!mkdtemp(s_dir)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    test_path();
    test_round_trip();
    test_metrics();
    test_bad_files();
    test_concurrent();
    test_floor();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    (void)!system(cmd);
    return tap_done();
}
