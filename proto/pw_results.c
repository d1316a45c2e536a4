/* pw_results.c -- see pw_results.h. */
#include "pw_results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_grow.h"
#include "pw_json.h"
#include "vd_name.h"

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when it is not
 * one. Never reads past a NUL (a NUL is no continuation byte). */
static size_t
s_utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        return (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 ||
            (s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))
            return 0;
        return 3;
    }
    if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 ||
            (s[3] & 0xC0) != 0x80 || (s[0] == 0xF0 && s[1] < 0x90) ||
            (s[0] == 0xF4 && s[1] >= 0x90))
            return 0;
        return 4;
    }
    return 0;
}

/* A JSON string of text that may hold any bytes (a command line, a path,
 * a program's output): valid UTF-8 is kept, each other byte becomes '?'.
 * jansson refuses invalid UTF-8, which would otherwise lose the field or
 * the whole document. NULL only when out of memory. */
static json_t *
s_text(const char *text)
{
    json_t *j = json_string(text);
    if (j)
        return j;
    char *copy = strdup(text);
    if (!copy)
        return NULL;
    for (unsigned char *p = (unsigned char *)copy; *p;) {
        size_t n = s_utf8_len(p);
        if (n == 0) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
    j = json_string(copy);
    free(copy);
    return j;
}

static const char *const s_kind_names[PW_SAMPLE_KIND_COUNT] = {
    "measured", "warmup", "calibration", "error" };

VD_NAME_FN(pw_sample_kind_name, pw_sample_kind_t, s_kind_names,
           PW_SAMPLE_KIND_COUNT)
VD_PARSE_FN(pw_sample_kind_parse, pw_sample_kind_t, s_kind_names,
            PW_SAMPLE_KIND_COUNT)

json_t *
pw_results_new(const char *tool, const char *tool_version, const char *suite,
               const char *suite_file, json_t *environment,
               int64_t started_at_us)
{
    json_t *doc = json_pack("{s:i,s:s,s:s,s:o,s:o?,s:b,s:I,s:n,s:o,s:o}",
                            "schema_version", PW_SCHEMA_VERSION,
                            "tool", tool, "tool_version", tool_version,
                            "suite", s_text(suite),
                            "suite_file", suite_file ? s_text(suite_file)
                                                     : NULL,
                            "complete", 0,
                            "started_at_us", (json_int_t)started_at_us,
                            "ended_at_us",
                            "benchmarks", json_array(),
                            "warnings", json_array());
    if (!doc)
        return NULL;
    if (environment) {
        json_object_set(doc, "environment", environment);
        json_t *w = json_object_get(environment, "warnings");
        if (json_is_array(w))
            json_object_set(doc, "warnings", w);
    } else {
        json_object_set_new(doc, "environment", json_object());
    }
    return doc;
}

json_t *
pw_results_add_benchmark(json_t *doc, const char *name, unsigned runs,
                         unsigned warmup, int64_t started_at_us)
{
    json_t *b = json_pack("{s:o,s:s,s:n,s:n,s:i,s:i,s:I,s:n,s:o,s:o,s:o}",
                          "name", s_text(name), "status", "incomplete",
                          "reason", "stderr_tail",
                          "runs", (int)runs, "warmup", (int)warmup,
                          "started_at_us", (json_int_t)started_at_us,
                          "ended_at_us",
                          "arms", json_array(), "order", json_array(),
                          "samples", json_array());
    if (!b || json_array_append_new(json_object_get(doc, "benchmarks"), b))
        return NULL;
    return b;
}

int
pw_results_add_arm(json_t *bench, const char *name, bool subject,
                   const char *const *argv, const char *shell,
                   const char *version_output)
{
    json_t *arm = json_pack("{s:o,s:b,s:o}", "name", s_text(name),
                            "subject", subject, "version_output",
                            s_text(version_output ? version_output : ""));
    if (!arm)
        return PW_RESULTS_ERR;
    if (argv) {
        json_t *a = json_array();
        for (size_t i = 0; argv[i]; i++)
            json_array_append_new(a, s_text(argv[i]));
        json_object_set_new(arm, "command", a);
    } else {
        json_object_set_new(arm, "shell", s_text(shell ? shell : ""));
    }
    return json_array_append_new(json_object_get(bench, "arms"), arm) == 0
           ? PW_RESULTS_OK : PW_RESULTS_ERR;
}

int
pw_results_set_revision(json_t *bench, const char *name, const char *value)
{
    json_t *rev = json_pack("{s:o,s:o}", "name", s_text(name), "value",
                            s_text(value));
    return rev && json_object_set_new(bench, "revision", rev) == 0
           ? PW_RESULTS_OK : PW_RESULTS_ERR;
}

int
pw_results_arm_instance(json_t *bench, const char *value)
{
    json_t *arms = json_object_get(bench, "arms");
    json_t *last = json_array_get(arms, json_array_size(arms) - 1);
    return last && json_object_set_new(last, "instance", s_text(value)) == 0
           ? PW_RESULTS_OK : PW_RESULTS_ERR;
}

int
pw_results_set_parameters(json_t *bench, const char *const *names,
                          const char *const *values, size_t n)
{
    json_t *params = json_object();
    if (!params || json_object_set_new(bench, "parameters", params) != 0)
        return PW_RESULTS_ERR;
    for (size_t i = 0; i < n; i++) {
        json_t *name = s_text(names[i]);
        int bad = !name || json_object_set_new(params,
                                               json_string_value(name),
                                               s_text(values[i])) != 0;
        json_decref(name);
        if (bad)
            return PW_RESULTS_ERR;
    }
    return PW_RESULTS_OK;
}

int
pw_results_set_order(json_t *bench, const unsigned *order, size_t rounds,
                     size_t arm_count)
{
    json_t *arms = json_object_get(bench, "arms");
    json_t *o = json_array();
    if (!o)
        return PW_RESULTS_ERR;
    for (size_t r = 0; r < rounds; r++) {
        json_t *row = json_array();
        for (size_t p = 0; p < arm_count; p++) {
            json_t *arm = json_array_get(arms, order[r * arm_count + p]);
            json_array_append(row, json_object_get(arm, "name"));
        }
        json_array_append_new(o, row);
    }
    return json_object_set_new(bench, "order", o) == 0 ? PW_RESULTS_OK
                                                      : PW_RESULTS_ERR;
}

int
pw_results_add_sample(json_t *bench, const pw_sample_t *s)
{
    json_t *o = json_pack("{s:s,s:o?,s:i,s:i,s:f,s:f,s:f,s:I,s:i,s:i,s:I}",
                          "kind", pw_sample_kind_name(s->kind),
                          "arm", s->arm ? s_text(s->arm) : NULL,
                          "round", (int)s->round,
                          "position", (int)s->position,
                          "wall_us", s->wall_us,
                          "user_us", s->user_us,
                          "sys_us", s->sys_us,
                          "maxrss_kb", (json_int_t)s->maxrss_kb,
                          "exit_status", s->exit_status,
                          "term_signal", s->term_signal,
                          "start_unix_us", (json_int_t)s->start_unix_us);
    if (!o)
        return PW_RESULTS_ERR;
    json_object_set_new(o, "cpu", s->cpu >= 0 ? json_integer(s->cpu)
                                               : json_null());
    if (s->error)
        json_object_set_new(o, "error", s_text(s->error));
    const char *names[3] = { "instructions", "cycles", "task_clock_ns" };
    const int64_t counts[3] = { s->instructions, s->cycles,
                                s->task_clock_ns };
    for (size_t i = 0; i < 3; i++)
        if (counts[i] > 0)
            json_object_set_new(o, names[i],
                                json_integer((json_int_t)counts[i]));
    return json_array_append_new(json_object_get(bench, "samples"), o) == 0
           ? PW_RESULTS_OK : PW_RESULTS_ERR;
}

int
pw_results_end_benchmark(json_t *bench, const char *status,
                         const char *reason, const char *stderr_tail,
                         int64_t ended_at_us)
{
    json_object_set_new(bench, "status", json_string(status));
    json_object_set_new(bench, "reason",
                        reason ? s_text(reason) : json_null());
    /* A stderr tail is arbitrary bytes (and may start inside a UTF-8
     * sequence, being a tail). */
    json_t *tail = stderr_tail ? s_text(stderr_tail) : NULL;
    json_object_set_new(bench, "stderr_tail", tail ? tail : json_null());
    json_object_set_new(bench, "ended_at_us",
                        json_integer((json_int_t)ended_at_us));
    return PW_RESULTS_OK;
}

int
pw_results_set_calibration(json_t *doc, const double *wall_us, size_t n,
                           int64_t taken_at_us)
{
    return pw_results_set_calibration_runs(doc, wall_us, NULL, NULL, NULL, n,
                                           taken_at_us);
}

/* values[0..n) as a JSON array; NULL values: NULL. */
static json_t *
s_reals(const double *values, size_t n)
{
    if (!values)
        return NULL;
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_real(values[i]));
    return a;
}

int
pw_results_set_calibration_runs(json_t *doc, const double *wall_us,
                                const double *cpu_us,
                                const double *task_clock_us,
                                const double *peak_rss_kb, size_t n,
                                int64_t taken_at_us)
{
    json_t *c = json_pack("{s:I,s:o}", "taken_at_us",
                          (json_int_t)taken_at_us, "wall_us",
                          s_reals(wall_us, n));
    /* The task clock only when every run counted it (0: not counted). */
    bool counted = task_clock_us != NULL;
    for (size_t i = 0; counted && i < n; i++)
        counted = task_clock_us[i] > 0;
    const struct { const char *key; const double *v; } more[] = {
        { "cpu_us", cpu_us }, { "task_clock_us", counted ? task_clock_us
                                                         : NULL },
        { "peak_rss_kb", peak_rss_kb } };
    for (size_t k = 0; c && k < 3; k++)
        if (more[k].v && json_object_set_new(c, more[k].key,
                                             s_reals(more[k].v, n)) != 0) {
            json_decref(c);
            c = NULL;
        }
    return c && json_object_set_new(doc, "calibration", c) == 0
           ? PW_RESULTS_OK : PW_RESULTS_ERR;
}

/* Grow *a to hold one more double; bounded by VD_MAX_SAMPLES. */
static int
s_push(double **a, size_t *n, size_t *cap, double x)
{
    if (*n >= VD_MAX_SAMPLES)
        return -1;
    if (!pw_grow(a, cap, *n, sizeof **a, 64, SIZE_MAX))
        return -1;
    (*a)[(*n)++] = x;
    return 0;
}

int
pw_results_calibration_samples(const json_t *doc, double **out, size_t *n,
                               char *err, size_t errlen)
{
    double *a = NULL;
    size_t count = 0, cap = 0;
    size_t i, j;
    json_t *v, *b, *s;
    json_array_foreach(json_object_get(json_object_get(doc, "calibration"),
                                       "wall_us"), i, v)
        if (s_push(&a, &count, &cap, json_number_value(v)) != 0)
            goto fail;
    json_array_foreach(json_object_get(doc, "benchmarks"), i, b)
        json_array_foreach(json_object_get(b, "samples"), j, s) {
            const char *k = json_string_value(json_object_get(s, "kind"));
            if (k && strcmp(k, "calibration") == 0 &&
                s_push(&a, &count, &cap,
                       json_number_value(json_object_get(s, "wall_us"))) != 0)
                goto fail;
        }
    *out = a;
    *n = count;
    return PW_RESULTS_OK;
fail:
    free(a);
    snprintf(err, errlen, "calibration samples: out of memory or more than "
             "%u", VD_MAX_SAMPLES);
    return PW_RESULTS_ERR;
}

/* Append x, y, z to the three columns a (each with its capacity in
 * cap), *n values long; -1 when full. */
static int
s_push3(double **a, size_t *n, size_t *cap, double x, double y, double z)
{
    const double v[3] = { x, y, z };
    for (int k = 0; k < 3; k++) {
        size_t at = *n;
        if (s_push(&a[k], &at, &cap[k], v[k]) != 0)
            return -1;
    }
    (*n)++;
    return 0;
}

/* A sample's (or a run's) value of key, NAN where it has none (a 0 task
 * clock or peak RSS was not counted). */
static double
s_have(const json_t *v, bool zero_is_none)
{
    double x = json_number_value(v);
    return json_is_number(v) && !(zero_is_none && x <= 0) ? x : NAN;
}

int
pw_results_calibration_metrics(const json_t *doc, double **cpu_us,
                               double **task_clock_us, double **peak_rss_kb,
                               size_t *n, char *err, size_t errlen)
{
    double *a[3] = { NULL, NULL, NULL };
    size_t count = 0, cap[3] = { 0, 0, 0 }, i, j;
    json_t *v, *b, *x;
    const json_t *c = json_object_get(doc, "calibration");
    json_array_foreach(json_object_get(c, "wall_us"), i, v)
        if (s_push3(a, &count, cap,
                    s_have(json_array_get(json_object_get(c, "cpu_us"), i),
                           false),
                    s_have(json_array_get(json_object_get(c,
                                                          "task_clock_us"),
                                          i), true),
                    s_have(json_array_get(json_object_get(c, "peak_rss_kb"),
                                          i), true)) != 0)
            goto fail;
    json_array_foreach(json_object_get(doc, "benchmarks"), i, b)
        json_array_foreach(json_object_get(b, "samples"), j, x) {
            const char *k = json_string_value(json_object_get(x, "kind"));
            if (!k || strcmp(k, "calibration") != 0)
                continue;
            const json_t *tc = json_object_get(x, "task_clock_ns");
            double cpu = json_number_value(json_object_get(x, "user_us")) +
                         json_number_value(json_object_get(x, "sys_us"));
            if (s_push3(a, &count, cap, cpu,
                        json_is_number(tc) && json_number_value(tc) > 0
                        ? json_number_value(tc) / 1000.0 : NAN,
                        s_have(json_object_get(x, "maxrss_kb"), true)) != 0)
                goto fail;
        }
    *cpu_us = a[0];
    *task_clock_us = a[1];
    *peak_rss_kb = a[2];
    *n = count;
    return PW_RESULTS_OK;
fail:
    for (int k = 0; k < 3; k++)
        free(a[k]);
    snprintf(err, errlen, "calibration metrics: out of memory or more than "
             "%u", VD_MAX_SAMPLES);
    return PW_RESULTS_ERR;
}

/* field of every measured sample of arm; with all, *n is 0 as soon as
 * one such sample lacks a number > 0 there. */
static int
s_arm_values(const json_t *bench, const char *arm, const char *field,
             bool all, double **out, size_t *n, char *err, size_t errlen)
{
    double *a = NULL;
    size_t count = 0, cap = 0, i;
    json_t *s;
    *out = NULL;
    *n = 0;
    json_array_foreach(json_object_get(bench, "samples"), i, s) {
        const char *k = json_string_value(json_object_get(s, "kind"));
        const char *name = json_string_value(json_object_get(s, "arm"));
        if (!k || !name || strcmp(k, "measured") != 0 ||
            strcmp(name, arm) != 0)
            continue;
        const json_t *v = json_object_get(s, field);
        if (all && !(json_is_number(v) && json_number_value(v) > 0)) {
            free(a);
            return PW_RESULTS_OK;
        }
        if (s_push(&a, &count, &cap, json_number_value(v)) != 0) {
            free(a);
            snprintf(err, errlen, "arm %s: out of memory or more than %u "
                     "samples", arm, VD_MAX_SAMPLES);
            return PW_RESULTS_ERR;
        }
    }
    *out = a;
    *n = count;
    return PW_RESULTS_OK;
}

int
pw_results_arm_samples(const json_t *bench, const char *arm, double **out,
                       size_t *n, char *err, size_t errlen)
{
    return s_arm_values(bench, arm, "wall_us", false, out, n, err, errlen);
}

int
pw_results_arm_counts(const json_t *bench, const char *arm,
                      const char *counter, double **out, size_t *n,
                      char *err, size_t errlen)
{
    return s_arm_values(bench, arm, counter, true, out, n, err, errlen);
}

/* Beside verdict v of the subject against arm other: the instructions
 * comparison, where both arms counted them on every measured run. */
static void
s_add_counter(json_t *vj, const json_t *b, const char *subject,
              const char *other, const vd_verdict_t *v)
{
    double *a = NULL, *o = NULL;
    size_t na = 0, no = 0;
    char e[256];
    json_t *cj = NULL;
    if (pw_results_arm_counts(b, subject, "instructions", &a, &na, e,
                              sizeof e) == PW_RESULTS_OK &&
        pw_results_arm_counts(b, other, "instructions", &o, &no, e,
                              sizeof e) == PW_RESULTS_OK &&
        (cj = pw_counter_compare_json("instructions", a, na, o, no, v)))
        json_object_set_new(vj, "instructions", cj);
    free(a);
    free(o);
}

/* Summaries and verdicts of one benchmark. */
static int
s_finish_bench(json_t *b, const vd_params_t *params, char *err,
               size_t errlen)
{
    json_t *arms = json_object_get(b, "arms");
    size_t narms = json_array_size(arms), subject = 0;
    double *samples[64] = { 0 };
    size_t counts[64] = { 0 };
    int rc = PW_RESULTS_ERR;
    json_t *summary = json_object(), *verdict = json_object();
    char why[768] = "";

    if (narms > 64) {
        snprintf(err, errlen, "benchmark %s: more than 64 arms",
                 json_string_value(json_object_get(b, "name")));
        goto done;
    }
    for (size_t i = 0; i < narms; i++) {
        json_t *arm = json_array_get(arms, i);
        const char *name = json_string_value(json_object_get(arm, "name"));
        if (json_is_true(json_object_get(arm, "subject")))
            subject = i;
        if (pw_results_arm_samples(b, name, &samples[i], &counts[i], err,
                                   errlen) != PW_RESULTS_OK)
            goto done;
        vd_summary_t s;
        char e[256];
        if (counts[i] > 0 &&
            vd_summarize(samples[i], counts[i], &s, e, sizeof e) == VD_OK)
            json_object_set_new(summary, name, pw_summary_to_json(&s));
    }
    const char *status = json_string_value(json_object_get(b, "status"));
    const char *subject_name = json_string_value(
        json_object_get(json_array_get(arms, subject), "name"));
    if (status && strcmp(status, "failed") == 0) {
        snprintf(why, sizeof why, "no verdict: the benchmark failed");
    } else {
        for (size_t i = 0; i < narms; i++) {
            if (i == subject)
                continue;
            const char *name = json_string_value(
                json_object_get(json_array_get(arms, i), "name"));
            vd_verdict_t v;
            char e[256];
            if (vd_compare(samples[subject], counts[subject], samples[i],
                           counts[i], params, &v, e, sizeof e) != VD_OK) {
                snprintf(why, sizeof why, "no verdict for %s against %s: %s",
                         subject_name, name, e);
                continue;
            }
            json_t *vj = pw_verdict_to_json(&v, PW_VERDICT_SUMMARIES);
            if (vj)
                s_add_counter(vj, b, subject_name, name, &v);
            json_object_set_new(verdict, name, vj);
        }
    }
    json_object_set_new(b, "summary", summary);
    json_object_set_new(b, "verdict", verdict);
    summary = verdict = NULL;
    json_object_set_new(b, "verdict_error", why[0] ? s_text(why)
                                                   : json_null());
    rc = PW_RESULTS_OK;
done:
    for (size_t i = 0; i < narms && i < 64; i++)
        free(samples[i]);
    json_decref(summary);
    json_decref(verdict);
    return rc;
}

int
pw_results_finish_floor(json_t *doc, const vd_params_t *params, json_t *floor,
                        bool complete, int64_t ended_at_us, char *err,
                        size_t errlen)
{
    size_t i;
    json_t *b;
    if (!floor) {
        snprintf(err, errlen, "results: out of memory for the floor");
        return PW_RESULTS_ERR;
    }
    json_object_set_new(doc, "floor", floor);
    json_array_foreach(json_object_get(doc, "benchmarks"), i, b)
        if (s_finish_bench(b, params, err, errlen) != PW_RESULTS_OK)
            return PW_RESULTS_ERR;
    json_object_set_new(doc, "complete", json_boolean(complete));
    json_object_set_new(doc, "ended_at_us",
                        json_integer((json_int_t)ended_at_us));
    return PW_RESULTS_OK;
}

/* ---- other metrics (vd_metric.h) ----------------------------------- */

/* Sample s's value of metric m from source src; false when it has none
 * (the task clock not counted on that run). */
static bool
s_metric_value(const json_t *s, vd_metric_t m, vd_cpu_source_t src,
               double *v)
{
    if (m == VD_METRIC_PEAK_RSS) {
        *v = json_number_value(json_object_get(s, "maxrss_kb"));
        return json_is_number(json_object_get(s, "maxrss_kb"));
    }
    if (src == VD_CPU_TASK_CLOCK) {
        const json_t *t = json_object_get(s, "task_clock_ns");
        *v = json_number_value(t) / 1000.0;
        return json_is_number(t) && json_number_value(t) > 0;
    }
    *v = json_number_value(json_object_get(s, "user_us")) +
         json_number_value(json_object_get(s, "sys_us"));
    return true;
}

/* The values of metric m of the samples of kind (of arm, or any arm for
 * NULL) of bench into *a (appended to *n, *cap); -1 on too many. */
static int
s_metric_values(const json_t *bench, const char *kind, const char *arm,
                vd_metric_t m, vd_cpu_source_t src, double **a, size_t *n,
                size_t *cap)
{
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(bench, "samples"), i, s) {
        const char *k = json_string_value(json_object_get(s, "kind"));
        const char *name = json_string_value(json_object_get(s, "arm"));
        double v;
        if (!k || strcmp(k, kind) != 0 || (arm && (!name ||
            strcmp(name, arm) != 0)) || !s_metric_value(s, m, src, &v))
            continue;
        if (s_push(a, n, cap, v) != 0)
            return -1;
    }
    return 0;
}

/* Every measured run of bench has a task clock: cpu from it, else from
 * rusage for every arm alike. */
static vd_cpu_source_t
s_cpu_source(const json_t *bench)
{
    size_t i, measured = 0;
    json_t *s;
    double v;
    json_array_foreach(json_object_get(bench, "samples"), i, s) {
        const char *k = json_string_value(json_object_get(s, "kind"));
        if (!k || strcmp(k, "measured") != 0)
            continue;
        measured++;
        if (!s_metric_value(s, VD_METRIC_CPU, VD_CPU_TASK_CLOCK, &v))
            return VD_CPU_RUSAGE;
    }
    return measured ? VD_CPU_TASK_CLOCK : VD_CPU_RUSAGE;
}

/* The floor of metric m for bench: the document's calibration runs'
 * values. NULL on out of memory, or with err. */
static json_t *
s_metric_floor(const json_t *doc, vd_metric_t m, vd_cpu_source_t src,
               const pw_results_pool_t *pool, long clk_tck, vd_params_t *p,
               char *err, size_t errlen)
{
    double *cal = NULL;
    size_t n = 0, cap = 0, i;
    json_t *b, *v;
    /* The store's runs, oldest first, then this session's (the wall
     * floor's pool); a value the store has not is left out. */
    const double *pv = !pool ? NULL : m == VD_METRIC_PEAK_RSS
                       ? pool->peak_rss_kb : src == VD_CPU_TASK_CLOCK
                       ? pool->task_clock_us : pool->cpu_us;
    for (i = 0; pv && i < pool->n; i++)
        if (isfinite(pv[i]) && (src == VD_CPU_RUSAGE || pv[i] > 0) &&
            s_push(&cal, &n, &cap, pv[i]) != 0) {
            snprintf(err, errlen, "%s: more than %u calibration values",
                     vd_metric_name(m), VD_MAX_SAMPLES);
            free(cal);
            return NULL;
        }
    /* The session-start calibration runs first, where the document has
     * the metric's values of them. */
    const char *key = m == VD_METRIC_PEAK_RSS ? "peak_rss_kb"
                    : src == VD_CPU_TASK_CLOCK ? "task_clock_us" : "cpu_us";
    json_array_foreach(json_object_get(json_object_get(doc, "calibration"),
                                       key), i, v)
        if (json_is_number(v) && s_push(&cal, &n, &cap,
                                        json_number_value(v)) != 0) {
            snprintf(err, errlen, "%s: more than %u calibration values",
                     vd_metric_name(m), VD_MAX_SAMPLES);
            free(cal);
            return NULL;
        }
    json_array_foreach(json_object_get(doc, "benchmarks"), i, b)
        if (s_metric_values(b, "calibration", NULL, m, src, &cal, &n,
                            &cap) != 0) {
            snprintf(err, errlen, "%s: more than %u calibration values",
                     vd_metric_name(m), VD_MAX_SAMPLES);
            free(cal);
            return NULL;
        }
    double res = vd_metric_resolution(m, src, clk_tck), floor;
    bool def;
    int rc = vd_metric_floor(cal, n, res, &floor, &def, err, errlen);
    free(cal);
    if (rc != VD_OK)
        return NULL;
    p->floor_us = floor;
    p->floor_is_default = def;
    return json_pack("{s:f,s:b,s:I,s:f}", "value", floor, "default", def,
                     "samples", (json_int_t)n, "resolution", res);
}

/* One benchmark's verdicts on metric m, as pw_results_add_metrics says. */
static json_t *
s_metric_bench(const json_t *doc, const json_t *b, vd_metric_t m,
               const pw_results_pool_t *pool, double parity, long clk_tck,
               char *err, size_t errlen)
{
    vd_cpu_source_t src = m == VD_METRIC_CPU ? s_cpu_source(b)
                                             : VD_CPU_RUSAGE;
    vd_params_t p;
    vd_params_default(&p);
    p.parity = parity;
    json_t *floor = s_metric_floor(doc, m, src, pool, clk_tck, &p, err,
                                   errlen);
    json_t *out = floor ? json_pack("{s:s,s:o,s:{},s:{}}", "unit",
                                    vd_metric_unit(m), "floor", floor,
                                    "summary", "verdict") : NULL;
    if (!out)
        return NULL;
    if (m == VD_METRIC_CPU)
        json_object_set_new(out, "source",
                            json_string(vd_cpu_source_name(src)));
    const json_t *arms = json_object_get(b, "arms");
    size_t narms = json_array_size(arms), subject = 0, i;
    double *x[64] = { 0 };
    size_t nx[64] = { 0 }, cap;
    char why[768] = "";
    for (i = 0; i < narms && i < 64; i++) {
        const json_t *arm = json_array_get(arms, i);
        const char *name = json_string_value(json_object_get(arm, "name"));
        vd_summary_t s;
        char e[256];
        if (json_is_true(json_object_get(arm, "subject")))
            subject = i;
        cap = 0;
        if (s_metric_values(b, "measured", name, m, src, &x[i], &nx[i],
                            &cap) != 0)
            snprintf(why, sizeof why, "%s: arm %s: more than %u values",
                     vd_metric_name(m), name, VD_MAX_SAMPLES);
        else if (nx[i] && vd_summarize(x[i], nx[i], &s, e, sizeof e) ==
                 VD_OK)
            json_object_set_new(json_object_get(out, "summary"), name,
                                pw_summary_to_json(&s));
    }
    const char *sname = json_string_value(json_object_get(json_array_get(
        arms, subject), "name"));
    const char *status = json_string_value(json_object_get(b, "status"));
    for (i = 0; !why[0] && i < narms && i < 64; i++) {
        if (i == subject)
            continue;
        const char *name = json_string_value(json_object_get(
            json_array_get(arms, i), "name"));
        vd_verdict_t v;
        char e[256];
        if (status && strcmp(status, "failed") == 0)
            snprintf(why, sizeof why, "no verdict: the benchmark failed");
        else if (vd_compare(x[subject], nx[subject], x[i], nx[i], &p, &v, e,
                            sizeof e) != VD_OK)
            snprintf(why, sizeof why, "no %s verdict for %s against %s: %s",
                     vd_metric_name(m), sname, name, e);
        else {
            json_t *vj = pw_verdict_to_json(&v, PW_VERDICT_SUMMARIES);
            if (vj)
                json_object_set_new(vj, "metric",
                                    json_string(vd_metric_name(m)));
            json_object_set_new(json_object_get(out, "verdict"), name, vj);
        }
    }
    json_object_set_new(out, "verdict_error", why[0] ? s_text(why)
                                                     : json_null());
    for (i = 0; i < narms && i < 64; i++)
        free(x[i]);
    return out;
}

int
pw_results_add_metrics(json_t *doc, const vd_metric_t *ms, size_t n,
                       double parity, long clk_tck, char *err,
                       size_t errlen)
{
    for (size_t i = 0; i < json_array_size(json_object_get(doc,
                                                           "benchmarks"));
         i++)
        if (pw_results_add_bench_metrics(doc, i, ms, n, NULL, parity,
                                         clk_tck, err, errlen)
            != PW_RESULTS_OK)
            return PW_RESULTS_ERR;
    return PW_RESULTS_OK;
}

int
pw_results_add_bench_metrics(json_t *doc, size_t bench,
                             const vd_metric_t *ms, size_t n,
                             const pw_results_pool_t *pool, double parity,
                             long clk_tck, char *err, size_t errlen)
{
    json_t *b = json_array_get(json_object_get(doc, "benchmarks"), bench);
    if (!b) {
        snprintf(err, errlen, "results: no benchmark %zu", bench);
        return PW_RESULTS_ERR;
    }
    json_t *all = json_object();
    for (size_t k = 0; all && k < n; k++) {
        if (ms[k] == VD_METRIC_WALL || ms[k] >= VD_METRIC_COUNT)
            continue;
        json_t *one = s_metric_bench(doc, b, ms[k], pool, parity, clk_tck,
                                     err, errlen);
        if (!one || json_object_set_new(all, vd_metric_name(ms[k]), one)
                    != 0) {
            json_decref(all);
            return PW_RESULTS_ERR;
        }
    }
    if (!all || json_object_set_new(b, "metrics", all) != 0) {
        snprintf(err, errlen, "results: out of memory for metrics");
        return PW_RESULTS_ERR;
    }
    return PW_RESULTS_OK;
}

int
pw_results_finish(json_t *doc, double parity, bool complete,
                  int64_t ended_at_us, char *err, size_t errlen)
{
    double *cal = NULL;
    size_t ncal = 0;
    vd_params_t params;
    int rc = PW_RESULTS_ERR;

    vd_params_default(&params);
    params.parity = parity;
    if (pw_results_calibration_samples(doc, &cal, &ncal, err, errlen) !=
        PW_RESULTS_OK)
        return PW_RESULTS_ERR;
    if (vd_floor(cal, ncal, &params.floor_us, &params.floor_is_default, err,
                 errlen) != VD_OK)
        goto done;
    rc = pw_results_finish_floor(doc, &params,
                                 json_pack("{s:f,s:b,s:I,s:f}",
                                           "floor_us", params.floor_us,
                                           "default", params.floor_is_default,
                                           "calibration_samples",
                                           (json_int_t)ncal,
                                           "parity", params.parity),
                                 complete, ended_at_us, err, errlen);
done:
    free(cal);
    return rc;
}

int
pw_results_check(const json_t *doc, char *err, size_t errlen)
{
    size_t i, j;
    json_t *b, *s;
    if (!json_is_object(doc)) {
        snprintf(err, errlen, "results: expected an object");
        return PW_RESULTS_ERR;
    }
    json_t *ver = json_object_get(doc, "schema_version");
    if (!json_is_integer(ver) || json_integer_value(ver) != PW_SCHEMA_VERSION) {
        snprintf(err, errlen, "results: schema_version: expected %d",
                 PW_SCHEMA_VERSION);
        return PW_RESULTS_ERR;
    }
    static const char *const strs[] = { "suite", "tool", NULL };
    for (i = 0; strs[i]; i++)
        if (!json_is_string(json_object_get(doc, strs[i]))) {
            snprintf(err, errlen, "results: %s: expected a string", strs[i]);
            return PW_RESULTS_ERR;
        }
    if (!json_is_boolean(json_object_get(doc, "complete"))) {
        snprintf(err, errlen, "results: complete: expected true or false");
        return PW_RESULTS_ERR;
    }
    if (!json_is_array(json_object_get(doc, "benchmarks"))) {
        snprintf(err, errlen, "results: benchmarks: expected a list");
        return PW_RESULTS_ERR;
    }
    json_array_foreach(json_object_get(doc, "benchmarks"), i, b) {
        if (!json_is_string(json_object_get(b, "name")) ||
            !json_is_array(json_object_get(b, "arms")) ||
            !json_is_array(json_object_get(b, "samples"))) {
            snprintf(err, errlen, "results: benchmarks[%zu]: expected name, "
                     "arms and samples", i);
            return PW_RESULTS_ERR;
        }
        /* pw_results_finish looks samples up by arm name (strcmp) and
         * keys summaries and verdicts by it: a nameless arm would crash
         * it (found by fuzzing). */
        json_t *arm;
        json_array_foreach(json_object_get(b, "arms"), j, arm)
            if (!json_is_string(json_object_get(arm, "name"))) {
                snprintf(err, errlen, "results: benchmarks[%zu].arms[%zu]: "
                         "expected an object with a name (a string)", i, j);
                return PW_RESULTS_ERR;
            }
        json_array_foreach(json_object_get(b, "samples"), j, s) {
            pw_sample_kind_t k;
            if (pw_sample_kind_parse(json_string_value(
                    json_object_get(s, "kind")), &k) != PW_RESULTS_OK ||
                !json_is_number(json_object_get(s, "wall_us"))) {
                snprintf(err, errlen, "results: benchmarks[%zu].samples[%zu]:"
                         " expected kind and wall_us", i, j);
                return PW_RESULTS_ERR;
            }
        }
    }
    return PW_RESULTS_OK;
}
