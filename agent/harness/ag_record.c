/* ag_record.c -- see ag_record.h. */
#include "ag_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "pw_clock.h"
#include "pw_grow.h"
#include "pw_results.h"

struct ag_record {
    const ag_suite_t *suite;
    json_t *doc;
    json_t *bench;               /* borrowed from doc: the current one */
    const ag_bench_t *bdef;
    bool any_failed;
    void (*progress)(void *, const ag_progress_t *);
    void *progress_ctx;
    /* The current benchmark's samples, kept as plain structs while it
     * runs and turned into JSON at its end, so that recording costs next
     * to nothing between timed runs. Error texts are copied (owned). */
    pw_sample_t *pending;
    size_t npending, cap;
};

/* Upper bound on one benchmark's samples: every round of the largest
 * suite (runs + warm-ups, all arms, plus calibration). */
#define S_MAX_PENDING \
    ((size_t)(AG_SUITE_MAX_RUNS + AG_SUITE_MAX_WARMUP) * \
     (AG_SUITE_MAX_ARMS + 1))

static void
s_pending_clear(ag_record_t *r)
{
    for (size_t i = 0; i < r->npending; i++)
        free((char *)r->pending[i].error);
    r->npending = 0;
}

/* Move the pending samples into the benchmark's JSON. */
static int
s_flush(ag_record_t *r)
{
    int rc = 0;
    for (size_t i = 0; i < r->npending && rc == 0; i++)
        rc = pw_results_add_sample(r->bench, &r->pending[i]);
    s_pending_clear(r);
    return rc;
}

ag_record_t *
ag_record_new(const ag_suite_t *suite, const char *tool, char *err,
              size_t errlen)
{
    ag_record_t *r = calloc(1, sizeof *r);
    if (r)
        r->doc = pw_results_new(tool, PARITY_VERSION, suite->name,
                                suite->path, NULL, pw_clock_unix_us());
    if (!r || !r->doc) {
        free(r);
        snprintf(err, errlen, "ag_record_new: out of memory");
        return NULL;
    }
    r->suite = suite;
    return r;
}

void
ag_record_destroy(ag_record_t **rp)
{
    if (!rp || !*rp)
        return;
    json_decref((*rp)->doc);
    s_pending_clear(*rp);
    free((*rp)->pending);
    free(*rp);
    *rp = NULL;
}

static int
s_on_calibration(void *ctx, const ag_cal_batch_t *cal)
{
    ag_record_t *r = ctx;
    return pw_results_set_calibration_runs(r->doc, cal->wall_us,
                                           cal->cpu_us, cal->task_clock_us,
                                           cal->peak_rss_kb, cal->n,
                                           cal->taken_at_us);
}

static int
s_on_run_start(void *ctx, const ag_run_start_t *st)
{
    ag_record_t *r = ctx;
    if (!json_object_get(r->doc, "environment") ||
        json_object_size(json_object_get(r->doc, "environment")) == 0) {
        json_t *env = json_loads(st->environment_json, 0, NULL);
        if (env) {
            json_object_set(r->doc, "warnings",
                            json_object_get(env, "warnings"));
            json_object_set_new(r->doc, "environment", env);
        }
    }
    r->bdef = st->bench;
    r->bench = pw_results_add_benchmark(r->doc, st->benchmark, st->runs,
                                        st->warmup, st->started_at_us);
    if (!r->bench)
        return -1;
    if (st->bench->param_count &&
        pw_results_set_parameters(r->bench,
                                  (const char *const *)st->bench->param_names,
                                  (const char *const *)st->bench->param_values,
                                  st->bench->param_count) != PW_RESULTS_OK)
        return -1;
    if (st->revision && pw_results_set_revision(r->bench, st->revision,
                                                st->revision_value)
                        != PW_RESULTS_OK)
        return -1;
    for (size_t a = 0; a < st->arm_count; a++)
        if (pw_results_add_arm(r->bench, st->arms[a].name,
                               st->arms[a].subject, st->arms[a].argv,
                               st->arms[a].shell,
                               st->arms[a].version_output) != PW_RESULTS_OK
            || (st->arms[a].instance &&
                pw_results_arm_instance(r->bench, st->arms[a].instance)
                != PW_RESULTS_OK))
            return -1;
    return pw_results_set_order(r->bench, st->order, st->runs,
                                st->arm_count);
}

static int
s_on_sample(void *ctx, const ag_sample_t *s)
{
    ag_record_t *r = ctx;
    pw_sample_t p = {
        .kind = s->kind,
        .arm = s->kind == PW_SAMPLE_CALIBRATION ? NULL
                                                : r->bdef->arms[s->arm].name,
        .round = s->round, .position = s->position,
        .wall_us = s->wall_us, .user_us = s->user_us, .sys_us = s->sys_us,
        .maxrss_kb = s->maxrss_kb, .exit_status = s->exit_status,
        .term_signal = s->term_signal, .cpu = s->cpu,
        .start_unix_us = s->start_unix_us, .error = NULL,
        .instructions = s->instructions, .cycles = s->cycles,
        .task_clock_ns = s->task_clock_ns,
    };
    if (!pw_grow(&r->pending, &r->cap, r->npending, sizeof *r->pending,
                 1024, S_MAX_PENDING))
        return -1;
    if (s->error && !(p.error = strdup(s->error)))
        return -1;
    r->pending[r->npending++] = p;
    return 0;
}

static void
s_on_progress(void *ctx, const ag_progress_t *p)
{
    ag_record_t *r = ctx;
    if (r->progress)
        r->progress(r->progress_ctx, p);
}

/* runs: auto: "runs" becomes the rounds taken (the order keeps those
 * rows) and "adaptive" says the cap and why it stopped. */
static int
s_adaptive(json_t *bench, const ag_run_end_t *e)
{
    json_t *order = json_object_get(bench, "order");
    while (json_array_size(order) > e->rounds)
        json_array_remove(order, json_array_size(order) - 1);
    json_object_set_new(bench, "runs", json_integer(e->rounds));
    const char *why = e->stop == VD_STOP_DECISIVE ? "decisive"
                    : e->stop == VD_STOP_CAP ? "cap" : "stopped";
    return json_object_set_new(bench, "adaptive",
                               json_pack("{s:I,s:I,s:s}", "max_runs",
                                         (json_int_t)e->max_runs,
                                         "runs_taken",
                                         (json_int_t)e->rounds,
                                         "stopped", why));
}

static int
s_on_run_end(void *ctx, const ag_run_end_t *e)
{
    ag_record_t *r = ctx;
    if (e->status == AG_RUN_FAILED)
        r->any_failed = true;
    if (s_flush(r) != 0)
        return -1;
    json_object_set_new(r->bench, "harness_overhead",
                        json_pack("{s:f,s:f,s:f}",
                                  "between_runs_cpu_us", e->between_cpu_us,
                                  "runs_wall_us", e->windows_wall_us,
                                  "share", e->windows_wall_us > 0
                                      ? e->between_cpu_us / e->windows_wall_us
                                      : 0.0));
    if (e->runs_auto && s_adaptive(r->bench, e) != 0)
        return -1;
    return pw_results_end_benchmark(r->bench, ag_run_status_name(e->status),
                                    e->reason, e->stderr_tail,
                                    e->ended_at_us);
}

ag_callbacks_t
ag_record_callbacks(ag_record_t *r,
                    void (*progress)(void *, const ag_progress_t *),
                    void *progress_ctx)
{
    r->progress = progress;
    r->progress_ctx = progress_ctx;
    ag_callbacks_t cb = {
        .ctx = r, .on_calibration = s_on_calibration,
        .on_run_start = s_on_run_start, .on_sample = s_on_sample,
        .on_progress = s_on_progress, .on_run_end = s_on_run_end,
    };
    return cb;
}

int
ag_record_calibration(const ag_record_t *r, double **out, size_t *n,
                      char *err, size_t errlen)
{
    return pw_results_calibration_samples(r->doc, out, n, err, errlen);
}

int
ag_record_calibration_metrics(const ag_record_t *r, double **cpu_us,
                              double **task_clock_us, double **peak_rss_kb,
                              size_t *n, char *err, size_t errlen)
{
    return pw_results_calibration_metrics(r->doc, cpu_us, task_clock_us,
                                          peak_rss_kb, n, err, errlen);
}

bool
ag_record_any_failed(const ag_record_t *r)
{
    return r->any_failed;
}

json_t *
ag_record_finish(ag_record_t *r, double parity, const ag_floor_t *floor,
                 bool complete, char *err, size_t errlen)
{
    if (!floor) {
        if (pw_results_finish(r->doc, parity, complete, pw_clock_unix_us(),
                              err, errlen) != PW_RESULTS_OK)
            return NULL;
        return json_incref(r->doc);
    }
    vd_params_t p = { .parity = parity, .floor_us = floor->floor_us,
                      .floor_is_default = floor->is_default };
    char text[512];
    ag_floor_describe(floor, text, sizeof text);
    json_t *fl = json_pack("{s:f,s:b,s:I,s:f,s:s,s:s,s:I,s:I,s:f,s:f,s:s}",
                           "floor_us", floor->floor_us,
                           "default", floor->is_default,
                           "calibration_samples", (json_int_t)floor->samples,
                           "parity", parity,
                           "source", ag_floor_source_name(floor->source),
                           "why", ag_floor_why_name(floor->why),
                           "store_samples", (json_int_t)floor->store_n,
                           "session_samples", (json_int_t)floor->session_n,
                           "store_floor_us", floor->store_floor_us,
                           "session_floor_us", floor->session_floor_us,
                           "text", text);
    if (pw_results_finish_floor(r->doc, &p, fl, complete, pw_clock_unix_us(),
                                err, errlen) != PW_RESULTS_OK)
        return NULL;
    return json_incref(r->doc);
}
