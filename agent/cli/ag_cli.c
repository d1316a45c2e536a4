/* ag_cli.c -- see ag_cli.h. */
#include "ag_cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ag_export.h"
#include "ag_record.h"
#include "ag_report.h"
#include "pw_clock.h"
#include "pw_out.h"
#include "pw_results.h"

/* The harness a signal handler cancels; one session at a time. */
static ag_harness_t *volatile s_harness;

static void
s_on_signal(int sig)
{
    (void)sig;
    if (s_harness)
        ag_harness_cancel(s_harness, AG_RUN_INCOMPLETE);
}

typedef struct {
    bool drawn;
} s_progress_t;

static void
s_progress(void *ctx, const ag_progress_t *p)
{
    s_progress_t *pg = ctx;
    double eta_s = p->eta_us / 1e6;
    fprintf(stderr, "\r\033[K%s  %s %u/%u  ETA %.1f s", p->benchmark,
            p->warmup ? "warm-up" : "round", p->round, p->rounds, eta_s);
    fflush(stderr);
    pg->drawn = true;
}

int
ag_cli_uint(const char *s, unsigned long lo, unsigned long hi,
            unsigned long *out)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

bool
ag_cli_output_opt(ag_cli_opts_t *o, int c, const char *v)
{
    switch (c) {
    case AG_CLI_OPT_JSON:            o->json = true;          return true;
    case AG_CLI_OPT_EXPORT_JSON:     o->export_path = v;      return true;
    case AG_CLI_OPT_EXPORT_MARKDOWN: o->export_markdown = v;  return true;
    case AG_CLI_OPT_EXPORT_CSV:      o->export_csv = v;       return true;
    default:                                                  return false;
    }
}

int
ag_cli_count(const char *opt, const char *v, unsigned long *n,
             bool *is_auto, char *err, size_t errlen)
{
    bool runs = strcmp(opt, "--runs") == 0;
    bool warmup = strcmp(opt, "--warmup") == 0;
    unsigned long lo = warmup ? 0 : AG_SUITE_MIN_RUNS;
    unsigned long hi = warmup ? AG_SUITE_MAX_WARMUP : AG_SUITE_MAX_RUNS;
    *is_auto = runs && strcmp(v, "auto") == 0;
    *n = 0;
    if (*is_auto || ag_cli_uint(v, lo, hi, n) == 0)
        return 0;
    snprintf(err, errlen, "%s %s: expected %san integer from %lu to %lu",
             opt, v, runs ? "auto or " : "", lo, hi);
    return -1;
}

/* Write doc (as format writes it) to path through path.tmp and rename,
 * so a reader never sees half a file. */
static int
s_write(const char *prog, const char *path,
        int (*format)(FILE *, const json_t *), const json_t *doc)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        fprintf(stderr, "%s: %s: path too long\n", prog, path);
        return -1;
    }
    FILE *f = fopen(tmp, "we");
    if (!f) {
        fprintf(stderr, "%s: fopen(%s): %s\n", prog, tmp, strerror(errno));
        return -1;
    }
    int bad = format(f, doc);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "%s: write(%s): %s\n", prog, tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        fprintf(stderr, "%s: rename(%s, %s): %s\n", prog, tmp, path,
                strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

static double
s_tv_us(const struct timeval *a, const struct timeval *b)
{
    return (double)(b->tv_sec - a->tv_sec) * 1e6 +
           (double)(b->tv_usec - a->tv_usec);
}

/* The agent's own CPU during the session (everything but the measured
 * processes: spawning, waiting, recording) against the measured and
 * calibration time, so that overhead is visible in every results file. */
static void
s_harness_cpu(json_t *doc, const struct rusage *a, const struct rusage *b)
{
    double user = s_tv_us(&a->ru_utime, &b->ru_utime);
    double sys = s_tv_us(&a->ru_stime, &b->ru_stime);
    double wall = 0;
    size_t i, j;
    json_t *bench, *s;
    json_array_foreach(json_object_get(doc, "benchmarks"), i, bench)
        json_array_foreach(json_object_get(bench, "samples"), j, s)
            wall += json_number_value(json_object_get(s, "wall_us"));
    json_array_foreach(json_object_get(json_object_get(doc, "calibration"),
                                       "wall_us"), i, s)
        wall += json_number_value(s);
    json_object_set_new(doc, "harness_cpu",
                        json_pack("{s:f,s:f,s:f,s:f}", "user_us", user,
                                  "sys_us", sys, "runs_wall_us", wall,
                                  "share", wall > 0 ? (user + sys) / wall
                                                    : 0.0));
}

/* Refuse an export path (opt names the option) that cannot be written
 * before anything is measured, rather than lose a session's results to
 * it at the end. NULL is fine. */
static int
s_check_export(const char *prog, const char *opt, const char *path)
{
    struct stat st;
    if (!path)
        return 0;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "%s: %s %s: is a directory\n", prog, opt, path);
        return -1;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "%s: %s %s: cannot write in %s: %s\n", prog, opt,
                path, dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* Every export the options ask for; false when one failed (said). */
static bool
s_exports(const ag_cli_opts_t *copts, const json_t *doc)
{
    bool ok = true;
    if (copts->export_path)
        ok &= s_write(copts->prog, copts->export_path, pw_out_json,
                      doc) == 0;
    if (copts->export_markdown)
        ok &= s_write(copts->prog, copts->export_markdown,
                      ag_export_markdown, doc) == 0;
    if (copts->export_csv)
        ok &= s_write(copts->prog, copts->export_csv, ag_export_csv,
                      doc) == 0;
    return ok;
}

/* The host's calibration store: its path and runs, or path[0] '\0'
 * when it cannot be used (said on stderr; the session goes on). */
static void
s_store_load(const ag_cli_opts_t *copts, char *path, size_t pathlen,
             ag_calstore_runs_t *store)
{
    char err[1024], note[1024];
    memset(store, 0, sizeof *store);
    if (ag_calstore_path(copts->calstore_dir, path, pathlen, err,
                         sizeof err) != AG_CALSTORE_OK) {
        fprintf(stderr, "%s: calibration store: %s; the floor is this "
                "invocation's runs alone\n", copts->prog, err);
        path[0] = '\0';
        return;
    }
    if (ag_calstore_load_runs(path, store, note, sizeof note, err,
                              sizeof err) != AG_CALSTORE_OK) {
        fprintf(stderr, "%s: %s; the floor is this invocation's runs "
                "alone\n", copts->prog, err);
        path[0] = '\0';
        return;
    }
    if (note[0])
        fprintf(stderr, "%s: %s\n", copts->prog, note);
}

int
ag_cli_metric(ag_cli_opts_t *o, const char *v, char *err, size_t errlen)
{
    vd_metric_t *ms = o->metrics;
    size_t *n = &o->nmetrics;
    vd_metric_t m;
    if (vd_metric_parse(v, &m) != 0) {
        snprintf(err, errlen, "--metric %.60s: want wall, cpu or peak_rss",
                 v);
        return -1;
    }
    for (size_t i = 0; i < *n; i++)
        if (ms[i] == m) {
            snprintf(err, errlen, "--metric %s: given twice", v);
            return -1;
        }
    if (*n >= VD_METRIC_COUNT)
        return -1;          /* unreachable: each metric once */
    ms[(*n)++] = m;
    return 0;
}

/* True when some benchmark of suite tracks a metric besides wall time
 * (its `metrics:`, docs/suites.md "Metrics"). */
static bool
s_suite_metrics(const ag_suite_t *suite)
{
    for (size_t i = 0; i < suite->benchmark_count; i++)
        if (suite->benchmarks[i].metric_count != 1 ||
            suite->benchmarks[i].metrics[0] != VD_METRIC_WALL)
            return true;
    return false;
}

/* The metrics judged: --metric's for every benchmark, else each
 * benchmark's own `metrics:` (the document's benchmarks are the suite's
 * that ran, by name). Their names as the document's "metrics" and the
 * other metrics' verdicts beside wall time's. False when said. */
static bool
s_metrics(const ag_cli_opts_t *copts, const ag_suite_t *suite,
          const pw_results_pool_t *pool, json_t *doc)
{
    char err[512] = "out of memory";
    bool seen[VD_METRIC_COUNT] = { false };
    json_t *names = json_array(), *b;
    size_t i;
    int rc = names ? PW_RESULTS_OK : PW_RESULTS_ERR;
    json_array_foreach(json_object_get(doc, "benchmarks"), i, b) {
        const ag_bench_t *sb = ag_suite_find(suite, json_string_value(
            json_object_get(b, "name")));
        const vd_metric_t *ms = copts->nmetrics ? copts->metrics
                              : sb ? sb->metrics : NULL;
        size_t n = copts->nmetrics ? copts->nmetrics
                 : sb ? sb->metric_count : 0;
        for (size_t k = 0; names && k < n; k++)
            if (!seen[ms[k]]) {
                seen[ms[k]] = true;
                json_array_append_new(names, json_string(vd_metric_name(
                    ms[k])));
            }
        if (rc == PW_RESULTS_OK && n)
            rc = pw_results_add_bench_metrics(doc, i, ms, n, pool,
                                              copts->parity,
                                              sysconf(_SC_CLK_TCK), err,
                                              sizeof err);
    }
    if (rc != PW_RESULTS_OK) {
        json_decref(names);
        fprintf(stderr, "%s: %s\n", copts->prog, err);
        return false;
    }
    if (json_object_set_new(doc, "metrics", names) != 0) {
        fprintf(stderr, "%s: out of memory\n", copts->prog);
        return false;
    }
    return true;
}

/* The floor for the session's verdicts from the store and its runs, and
 * its runs added to the store. NULL floor (the document's own runs)
 * when the runs cannot be had. */
static const ag_floor_t *
s_store_floor(const ag_cli_opts_t *copts, ag_record_t *rec,
              const char *path, const double *store, size_t store_n,
              ag_floor_t *f)
{
    char err[1024], note[1024];
    double *cal = NULL, *more[AG_CALSTORE_MORE] = { NULL, NULL, NULL };
    size_t n = 0, nm = 0;
    const ag_floor_t *out = NULL;
    if (ag_record_calibration(rec, &cal, &n, err, sizeof err) != 0 ||
        ag_record_calibration_metrics(rec, &more[0], &more[1], &more[2],
                                      &nm, err, sizeof err) != 0 ||
        ag_calstore_floor(store, store_n, cal, n, copts->fresh_floor, f, err,
                          sizeof err) != AG_CALSTORE_OK) {
        fprintf(stderr, "%s: floor: %s\n", copts->prog, err);
        goto done;
    }
    /* A much noisier invocation is said with the floor in the report
     * and the results file (ag_floor_describe), not on stderr: stderr
     * is for what went wrong. */
    out = f;
    /* The runs with their other metrics (nm == n: the same runs). */
    const double *const with[AG_CALSTORE_MORE] = {
        nm == n ? more[0] : NULL, nm == n ? more[1] : NULL,
        nm == n ? more[2] : NULL };
    if (path[0] && n > 0 &&
        ag_calstore_append_runs(path, cal, with, n, pw_clock_unix_us(),
                                note, sizeof note, err, sizeof err)
            != AG_CALSTORE_OK)
        fprintf(stderr, "%s: %s\n", copts->prog, err);
    else if (path[0] && n > 0 && note[0])
        fprintf(stderr, "%s: %s\n", copts->prog, note);
done:
    free(cal);
    for (int k = 0; k < AG_CALSTORE_MORE; k++)
        free(more[k]);
    return out;
}

/* The store's runs the other metrics' floors pool: those the wall floor
 * pooled (its newest, beside this session's: ag_calstore_floor), none
 * when it did not pool the store. */
static pw_results_pool_t
s_pool(const ag_calstore_runs_t *store, const ag_floor_t *f)
{
    pw_results_pool_t p = { NULL, NULL, NULL, 0 };
    if (!f || f->source != AG_FLOOR_POOLED || store->n == 0)
        return p;
    size_t session = f->session_n < AG_CALSTORE_MAX ? f->session_n
                                                    : AG_CALSTORE_MAX;
    size_t take = store->n + session > AG_CALSTORE_MAX
                  ? AG_CALSTORE_MAX - session : store->n;
    size_t from = store->n - take;
    p.cpu_us = store->more[0] + from;
    p.task_clock_us = store->more[1] + from;
    p.peak_rss_kb = store->more[2] + from;
    p.n = take;
    return p;
}

int
ag_cli_session(const ag_suite_t *suite, const ag_harness_opts_t *hopts,
               const ag_cli_opts_t *copts)
{
    char err[1024];
    int code = AG_EXIT_SYSTEM;
    ag_record_t *rec = NULL;
    json_t *doc = NULL;
    struct sigaction sa, old_int, old_term;
    bool handlers = false;
    s_progress_t pg = { false };
    char store_path[4096];
    ag_calstore_runs_t runs = { 0 };
    ag_harness_opts_t ho = { .warmup = -1 };
    ag_floor_t floor;

    if (s_check_export(copts->prog, "--export-json",
                       copts->export_path) != 0 ||
        s_check_export(copts->prog, "--export-markdown",
                       copts->export_markdown) != 0 ||
        s_check_export(copts->prog, "--export-csv", copts->export_csv) != 0)
        return AG_EXIT_USAGE;
    ag_harness_t *h = ag_harness_new(err, sizeof err);
    if (!h) {
        fprintf(stderr, "%s: %s\n", copts->prog, err);
        return AG_EXIT_SYSTEM;
    }
    s_store_load(copts, store_path, sizeof store_path, &runs);
    const double *store = runs.wall_us;
    size_t store_n = runs.n;
    if (hopts)
        ho = *hopts;
    ho.store_us = store;
    ho.store_n = store_n;
    ho.fresh_floor = copts->fresh_floor;
    ho.parity = copts->parity;
    if (!(rec = ag_record_new(suite, copts->tool, err, sizeof err))) {
        fprintf(stderr, "%s: %s\n", copts->prog, err);
        goto done;
    }
    /* No SA_RESTART: the harness's poll must return on Ctrl-C. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    s_harness = h;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    handlers = true;

    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    ag_callbacks_t cb = ag_record_callbacks(
        rec, isatty(STDERR_FILENO) ? s_progress : NULL, &pg);
    ag_callbacks_t wrapped;
    if (copts->wrap) {
        copts->wrap(copts->wrap_ctx, &cb, &wrapped);
        cb = wrapped;
    }
    int rc = ag_harness_run(h, suite, &ho, &cb, err, sizeof err);
    if (pg.drawn) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
    if (rc == AG_HARNESS_ERR) {
        fprintf(stderr, "%s: %s\n", copts->prog, err);
        code = strncmp(err, "--only", 6) == 0 ? AG_EXIT_USAGE
                                              : AG_EXIT_SYSTEM;
        goto done;
    }
    getrusage(RUSAGE_SELF, &ru1);
    bool complete = rc == AG_HARNESS_OK;
    const ag_floor_t *fl = s_store_floor(copts, rec, store_path, store,
                                         store_n, &floor);
    if (!(doc = ag_record_finish(rec, copts->parity, fl, complete, err,
                                 sizeof err))) {
        fprintf(stderr, "%s: %s\n", copts->prog, err);
        goto done;
    }
    s_harness_cpu(doc, &ru0, &ru1);
    pw_results_pool_t pool = s_pool(&runs, fl);
    if ((copts->nmetrics || s_suite_metrics(suite)) &&
        !s_metrics(copts, suite, &pool, doc))
        goto done;
    /* A file that cannot be written still leaves the results on stdout. */
    bool export_failed = !s_exports(copts, doc);
    int out = copts->json ? pw_out_json(stdout, doc)
                          : ag_report_print(stdout, doc);
    if (out != 0 || fflush(stdout) != 0) {
        fprintf(stderr, "%s: write to stdout: %s\n", copts->prog,
                strerror(errno));
        goto done;
    }
    if (export_failed)
        code = AG_EXIT_SYSTEM;
    else if (!complete)
        code = AG_EXIT_INTERRUPTED;
    else if (ag_record_any_failed(rec))
        code = AG_EXIT_FAILED;
    else
        code = AG_EXIT_OK;
done:
    if (handlers) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        s_harness = NULL;
    }
    json_decref(doc);
    ag_record_destroy(&rec);
    ag_harness_destroy(&h);
    ag_calstore_runs_free(&runs);
    return code;
}
