/* test_harness_api.c -- ag_harness as the daemon uses it: the callback
 * sequence, a callback refusing, cancel from another thread, reset,
 * the options' errors. Real processes (parity-testprog).
 *
 *   test-agent-harness-api PATH/TO/parity-testprog */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ag_harness.h"
#include "ag_suite.h"
#include "tap.h"

typedef struct {
    char events[4096];      /* one letter per callback: C S s p E */
    size_t nevents;
    size_t ncal;
    bool cal_metrics;       /* every calibration run has cpu and peak RSS */
    unsigned runs, warmup;
    unsigned order[64];
    size_t arm_count;
    unsigned measured[4];
    unsigned warm[4];
    unsigned calibration;
    bool order_ok;
    ag_run_status_t status[8];
    char reason[8][256];
    size_t ends;
    double between_cpu_us, windows_wall_us;
    int refuse_at;          /* on_sample returns -1 at this sample (1-based) */
    unsigned nsamples;
    char env[64];
} rec_t;

static void
s_ev(rec_t *r, char c)
{
    if (r->nevents + 1 < sizeof r->events)
        r->events[r->nevents++] = c;
}

static int
s_cal(void *ctx, const ag_cal_batch_t *cal)
{
    rec_t *r = ctx;
    s_ev(r, 'C');
    r->ncal = cal->n;
    r->cal_metrics = cal->n > 0;
    for (size_t i = 0; i < cal->n; i++) {
        if (!(cal->wall_us[i] > 0))
            r->ncal = (size_t)-1;
        /* A no-op's CPU time may be under one tick (0), its task clock
         * absent (0) where perf is not allowed; its peak RSS never 0. */
        if (!(cal->cpu_us[i] >= 0 && cal->task_clock_us[i] >= 0 &&
              cal->peak_rss_kb[i] > 0))
            r->cal_metrics = false;
    }
    return 0;
}

static int
s_start(void *ctx, const ag_run_start_t *st)
{
    rec_t *r = ctx;
    s_ev(r, 'S');
    r->runs = st->runs;
    r->warmup = st->warmup;
    r->arm_count = st->arm_count;
    for (size_t i = 0; i < st->runs * st->arm_count && i < 64; i++)
        r->order[i] = st->order[i];
    r->order_ok = true;
    snprintf(r->env, sizeof r->env, "%s", st->environment_json);
    return 0;
}

static int
s_sample(void *ctx, const ag_sample_t *s)
{
    rec_t *r = ctx;
    s_ev(r, 's');
    r->nsamples++;
    if (s->kind == PW_SAMPLE_MEASURED && s->arm < 4) {
        r->measured[s->arm]++;
        if (r->order[s->round * r->arm_count + s->position] != s->arm)
            r->order_ok = false;
    }
    if (s->kind == PW_SAMPLE_WARMUP && s->arm < 4)
        r->warm[s->arm]++;
    if (s->kind == PW_SAMPLE_CALIBRATION)
        r->calibration++;
    if (r->refuse_at && (int)r->nsamples == r->refuse_at)
        return -1;
    return 0;
}

static void
s_progress(void *ctx, const ag_progress_t *p)
{
    rec_t *r = ctx;
    s_ev(r, 'p');
    (void)p;
}

static int
s_end(void *ctx, const ag_run_end_t *e)
{
    rec_t *r = ctx;
    s_ev(r, 'E');
    if (r->ends < 8) {
        r->status[r->ends] = e->status;
        snprintf(r->reason[r->ends], sizeof r->reason[0], "%s",
                 e->reason ? e->reason : "");
        r->ends++;
    }
    r->between_cpu_us = e->between_cpu_us;
    r->windows_wall_us = e->windows_wall_us;
    return 0;
}

static ag_callbacks_t
s_cb(rec_t *r)
{
    ag_callbacks_t cb = { r, s_cal, s_start, s_sample, s_progress, s_end };
    return cb;
}

static ag_suite_t *
s_suite(const char *prog, const char *sleep_us, unsigned runs)
{
    char yaml[2048];
    snprintf(yaml, sizeof yaml,
             "suite: api\n"
             "benchmarks:\n"
             "  - name: one\n"
             "    runs: %u\n"
             "    warmup: 1\n"
             "    arms:\n"
             "      - {name: a, command: [\"${prog}\", sleep, \"%s\"]}\n"
             "      - {name: b, command: [\"${prog}\", sleep, \"%s\"]}\n"
             "  - name: two\n"
             "    runs: 2\n"
             "    warmup: 0\n"
             "    arms:\n"
             "      - {name: a, command: [/bin/true]}\n"
             "      - {name: b, command: [/bin/true]}\n",
             runs, sleep_us, sleep_us);
    ag_var_t var = { "prog", prog };
    ag_suite_t *s = NULL;
    char err[512];
    if (ag_suite_load_buffer("api.yaml", yaml, strlen(yaml), &var, 1, &s, err,
                             sizeof err) != AG_SUITE_OK)
        printf("# %s\n", err);
    return s;
}

typedef struct {
    ag_harness_t *h;
    ag_run_status_t how;
} cancel_t;

static void *
s_cancel_later(void *arg)
{
    cancel_t *c = arg;
    struct timespec ts = { 0, 300 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    ag_harness_cancel(c->h, c->how);
    return NULL;
}

int
main(int argc, char **argv)
{
    char err[1024];
    if (argc < 2) {
        printf("Bail out! usage: test-agent-harness-api PARITY_TESTPROG\n");
        return 1;
    }
    ag_harness_t *h = ag_harness_new(err, sizeof err);
    ok(h != NULL, "ag_harness_new");

    /* The whole sequence. */
    ag_suite_t *s = s_suite(argv[1], "1000", 3);
    ok(s != NULL, "suite loads");
    rec_t r;
    memset(&r, 0, sizeof r);
    ag_callbacks_t cb = s_cb(&r);
    const char *only[] = { "one" };
    ag_harness_opts_t o = { .warmup = -1, .only = only, .only_count = 1,
                            .environment_json = "{\"given\":1}" };
    int rc = ag_harness_run(h, s, &o, &cb, err, sizeof err);
    ok(rc == AG_HARNESS_OK, "run returns OK (%s)", rc ? err : "");
    r.events[r.nevents] = '\0';
    /* C, S, 2 warm-ups, p, then per round 2 samples + calibration + p, E */
    ok_str(r.events, "CSssp" "sssp" "sssp" "sssp" "E", "callback sequence");
    ok(r.ncal == 97, "97 session-start calibration runs (+3 rounds = 100)");
    ok(r.cal_metrics, "each with its CPU time, task clock and peak RSS");
    ok(r.runs == 3 && r.warmup == 1 && r.arm_count == 2, "run start fields");
    ok(r.order[0] == 0 && r.order[1] == 1 && r.order[2] == 1 &&
       r.order[3] == 0 && r.order[4] == 0, "order plan rotates");
    ok(r.order_ok, "every measured sample sits where the plan says");
    ok(r.measured[0] == 3 && r.measured[1] == 3 && r.warm[0] == 1 &&
       r.warm[1] == 1 && r.calibration == 3, "sample counts by kind");
    ok(r.ends == 1 && r.status[0] == AG_RUN_COMPLETE, "--only: one run, "
       "complete");
    ok_str(r.env, "{\"given\":1}", "the given environment is passed on");
    ok(r.between_cpu_us > 0 && r.windows_wall_us >= 6 * 1000,
       "overhead accounting (%.0f us between, %.0f us in windows)",
       r.between_cpu_us, r.windows_wall_us);

    /* A callback that refuses stops the session. */
    memset(&r, 0, sizeof r);
    r.refuse_at = 3;
    o.only = NULL;
    o.only_count = 0;
    rc = ag_harness_run(h, s, &o, &cb, err, sizeof err);
    ok(rc == AG_HARNESS_STOPPED, "a refusing on_sample stops the session");
    ok(r.ends == 1 && r.status[0] == AG_RUN_INCOMPLETE,
       "the run ends incomplete and the next benchmark does not start");
    ok_str(r.reason[0], "stopped by the caller (on_sample)", "reason");

    /* Cancel from another thread, as a JobCancel would. */
    ag_suite_destroy(&s);
    s = s_suite(argv[1], "100000", 50);
    memset(&r, 0, sizeof r);
    cancel_t c = { h, AG_RUN_CANCELLED };
    pthread_t th;
    pthread_create(&th, NULL, s_cancel_later, &c);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = ag_harness_run(h, s, &o, &cb, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(th, NULL);
    double took = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ok(rc == AG_HARNESS_STOPPED && took < 3.0,
       "cancel stops the session promptly (%.2f s)", took);
    ok(r.ends == 1 && r.status[0] == AG_RUN_CANCELLED,
       "status cancelled, as asked");
    ok_str(r.reason[0], "interrupted", "reason");
    rc = ag_harness_run(h, s, &o, &cb, err, sizeof err);
    ok(rc == AG_HARNESS_STOPPED, "still cancelled until reset");
    ag_harness_reset(h);
    ag_suite_destroy(&s);
    s = s_suite(argv[1], "1000", 2);
    memset(&r, 0, sizeof r);
    rc = ag_harness_run(h, s, &o, &cb, err, sizeof err);
    ok(rc == AG_HARNESS_OK && r.ends == 2 &&
       r.status[1] == AG_RUN_COMPLETE, "after reset the harness runs again");

    /* Errors before anything runs. */
    const char *nosuch[] = { "three" };
    ag_harness_opts_t bad = { .warmup = -1, .only = nosuch, .only_count = 1 };
    memset(&r, 0, sizeof r);
    ok(ag_harness_run(h, s, &bad, &cb, err, sizeof err) == AG_HARNESS_ERR &&
       r.nevents == 0, "--only naming no benchmark: nothing runs");
    ok_str(err, "--only three: suite \"api\" has no such benchmark (it has: "
           "one, two)", "its message");
    ag_harness_opts_t nonoop = { .warmup = -1,
                                 .noop_path = "/nonexistent/noop" };
    ok(ag_harness_run(h, s, &nonoop, &cb, err, sizeof err) ==
       AG_HARNESS_ERR, "a missing calibration program");
    ok_str(err, "calibration program /nonexistent/noop: No such file or "
           "directory", "its message");
    ag_harness_opts_t falsenoop = { .warmup = -1,
                                    .noop_path = "/bin/false" };
    ok(ag_harness_run(h, s, &falsenoop, &cb, err, sizeof err) ==
       AG_HARNESS_ERR, "a calibration program that fails");
    ok_str(err, "calibration program /bin/false exited with status 1 "
           "(signal 0)", "its message");
    ag_harness_opts_t fewcal = { .warmup = 0, .runs = 1,
                                 .calibration_target = 5,
                                 .environment_json = "{}" };
    memset(&r, 0, sizeof r);
    ok(ag_harness_run(h, s, &fewcal, &cb, err, sizeof err) == AG_HARNESS_OK &&
       r.ncal == 3, "calibration_target 5 with 2 rounds: 3 extra runs");

    ok(strcmp(pw_sample_kind_name(PW_SAMPLE_ERROR), "error") == 0 &&
       strcmp(pw_sample_kind_name(PW_SAMPLE_KIND_COUNT), "?") == 0 &&
       strcmp(ag_run_status_name(AG_RUN_CANCELLED), "cancelled") == 0,
       "names of kinds and statuses");
    ok(access(ag_harness_default_noop(), X_OK) == 0,
       "the default no-op program exists (%s)", ag_harness_default_noop());

    ag_suite_destroy(&s);
    ag_harness_destroy(&h);
    ok(h == NULL, "destroy clears the pointer");
    ag_harness_destroy(&h);
    return tap_done();
}
