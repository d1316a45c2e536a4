/* test_results.c -- pw_results: the results file built, finished (floor
 * and verdicts) and checked. The verdicts must equal vd_compare on the
 * same samples; the worked example of the spec is one of them. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pw_json.h"
#include "pw_results.h"
#include "tap.h"
#include "vd_adaptive.h"
#include "vd_counter.h"
#include "vd_verdict.h"

static const double s_a[] = { 566, 568, 576, 690, 722 };
static const double s_b[] = { 587, 700, 712, 718, 725 };

static json_t *
s_doc(size_t ncal, const char *status, size_t nb)
{
    json_t *doc = pw_results_new("test", "0", "s", "s.yaml", NULL, 1);
    double cal[200];
    for (size_t i = 0; i < ncal && i < 200; i++)
        cal[i] = 100.0 + (double)(i % 10);     /* q90 - q10 = 8 */
    pw_results_set_calibration(doc, cal, ncal, 2);
    json_t *b = pw_results_add_benchmark(doc, "edit_distance", 5, 1, 3);
    const char *argv[] = { "prog", "--x", NULL };
    pw_results_add_arm(b, "prismio", true, argv, NULL, "v1");
    pw_results_add_arm(b, "cpp", false, NULL, "echo hi", NULL);
    unsigned order[10];
    for (unsigned r = 0; r < 5; r++) {
        order[r * 2] = r % 2;
        order[r * 2 + 1] = 1 - r % 2;
    }
    pw_results_set_order(b, order, 5, 2);
    pw_sample_t w = { .kind = PW_SAMPLE_WARMUP, .arm = "prismio",
                      .wall_us = 9999, .cpu = -1 };
    pw_results_add_sample(b, &w);
    for (size_t i = 0; i < 5; i++) {
        pw_sample_t sa = { .kind = PW_SAMPLE_MEASURED, .arm = "prismio",
                           .round = (unsigned)i, .wall_us = s_a[i],
                           .cpu = 1 };
        pw_sample_t sb = sa;
        sb.arm = "cpp";
        sb.wall_us = s_b[i];
        if (i < nb)
            pw_results_add_sample(b, &sb);
        pw_results_add_sample(b, &sa);
    }
    pw_sample_t e = { .kind = PW_SAMPLE_ERROR, .arm = "cpp", .wall_us = 1,
                      .exit_status = 1, .cpu = -1, .error = "exited" };
    pw_results_add_sample(b, &e);
    pw_results_end_benchmark(b, status, NULL, "tail \xff\xfe bytes", 4);
    return doc;
}

/* A benchmark whose measured samples counted instructions (all of them,
 * or all but the other arm's last): s_a's subject executes 3 % more. */
static json_t *
s_counted_doc(bool all)
{
    json_t *doc = pw_results_new("test", "0", "s", "s.yaml", NULL, 1);
    json_t *b = pw_results_add_benchmark(doc, "b", 5, 0, 3);
    pw_results_add_arm(b, "new", true, NULL, "true", NULL);
    pw_results_add_arm(b, "old", false, NULL, "true", NULL);
    for (size_t i = 0; i < 5; i++) {
        pw_sample_t sa = { .kind = PW_SAMPLE_MEASURED, .arm = "new",
                           .round = (unsigned)i, .wall_us = s_a[i],
                           .cpu = -1, .instructions = 1030000 + (int64_t)i,
                           .cycles = 0, .task_clock_ns = 500000 };
        pw_sample_t sb = sa;
        sb.arm = "old";
        sb.wall_us = s_b[i];
        sb.instructions = all || i < 4 ? 1000000 + (int64_t)i * 2 : 0;
        pw_results_add_sample(b, &sa);
        pw_results_add_sample(b, &sb);
    }
    pw_results_end_benchmark(b, "complete", NULL, NULL, 4);
    return doc;
}

static void
s_counters(void)
{
    char err[256], want[VD_COUNTER_TEXT_MAX];
    json_t *doc = s_counted_doc(true);
    ok(pw_results_finish(doc, 0.04, true, 9, err, sizeof err) ==
       PW_RESULTS_OK, "finish a counted benchmark");
    json_t *b = json_array_get(json_object_get(doc, "benchmarks"), 0);
    json_t *s0 = json_array_get(json_object_get(b, "samples"), 0);
    ok(json_integer_value(json_object_get(s0, "instructions")) == 1030000 &&
       json_integer_value(json_object_get(s0, "task_clock_ns")) == 500000 &&
       !json_object_get(s0, "cycles"),
       "a sample writes the counters it counted, and no cycles (0)");
    json_t *v = json_object_get(json_object_get(b, "verdict"), "old");
    json_t *ins = json_object_get(v, "instructions");
    double a[5], o[5];
    for (int i = 0; i < 5; i++) {
        a[i] = 1030000 + i;
        o[i] = 1000000 + i * 2;
    }
    vd_verdict_t cv, wall;
    vd_counter_compare(a, 5, o, 5, 0.04, &cv, err, sizeof err);
    pw_verdict_from_json(v, &wall, err, sizeof err);
    vd_counter_text(want, sizeof want, "instructions", wall.outcome, &cv);
    ok(ins && json_number_value(json_object_get(ins, "ratio")) == cv.ratio &&
       json_is_true(json_object_get(ins, "decisive")) ==
       vd_adaptive_decisive(&cv),
       "beside the verdict: the instructions comparison, as vd_counter "
       "says");
    ok_str(json_string_value(json_object_get(ins, "text")), want,
           "its line");
    ok(strstr(want, "instructions +3.0 % (parity, decisive)") != NULL,
       "3 %% more instructions: parity, decisive (%s)", want);
    ok(wall.outcome == VD_PARITY && wall.ratio == json_number_value(
           json_object_get(v, "ratio")),
       "the wall-time verdict is the one of the wall times, unchanged");
    json_decref(doc);

    doc = s_counted_doc(false);
    pw_results_finish(doc, 0.04, true, 9, err, sizeof err);
    b = json_array_get(json_object_get(doc, "benchmarks"), 0);
    v = json_object_get(json_object_get(b, "verdict"), "old");
    ok(v && !json_object_get(v, "instructions"),
       "one run of an arm not counted: no instructions comparison");
    json_decref(doc);
}

int
main(void)
{
    char err[512];
    json_t *doc = s_doc(100, "complete", 5);
    ok(pw_results_finish(doc, 0.04, true, 9, err, sizeof err) ==
       PW_RESULTS_OK, "finish");
    ok(pw_results_check(doc, err, sizeof err) == PW_RESULTS_OK,
       "the document passes its own check (%s)", err);
    json_t *fl = json_object_get(doc, "floor");
    /* 100..109 ten times each: type-7 q(0.1) = 100.9, q(0.9) = 108.1. */
    ok_near(json_number_value(json_object_get(fl, "floor_us")), 7.2, 1e-9,
            "floor = q90 - q10 of 100 calibration samples");
    ok(json_is_false(json_object_get(fl, "default")), "not the default");
    json_t *b = json_array_get(json_object_get(doc, "benchmarks"), 0);
    json_t *v = json_object_get(json_object_get(b, "verdict"), "cpp");
    vd_verdict_t got, want;
    vd_params_t p;
    vd_params_default(&p);
    p.floor_us = json_number_value(json_object_get(fl, "floor_us"));
    p.floor_is_default = false;
    vd_compare(s_a, 5, s_b, 5, &p, &want, err, sizeof err);
    ok(v && pw_verdict_from_json(v, &got, err, sizeof err) == PW_OK,
       "verdict keyed by the other arm, readable");
    ok(got.outcome == VD_PARITY && got.ratio == want.ratio &&
       got.best_ratio == want.best_ratio && got.tolerance == want.tolerance &&
       got.floor_us == p.floor_us, "the worked example: parity, as vd_compare says");
    json_t *sum = json_object_get(json_object_get(b, "summary"), "prismio");
    ok(json_integer_value(json_object_get(sum, "n")) == 5 &&
       json_number_value(json_object_get(sum, "max")) == 722,
       "summary: warm-up and error samples left out");
    json_t *arm1 = json_array_get(json_object_get(b, "arms"), 1);
    ok_str(json_string_value(json_object_get(arm1, "shell")), "echo hi",
           "a shell arm");
    json_t *s0 = json_array_get(json_object_get(b, "samples"), 0);
    ok(json_is_null(json_object_get(s0, "cpu")) &&
       strcmp(json_string_value(json_object_get(s0, "kind")), "warmup") == 0,
       "unknown cpu is null; kind by name");
    ok_str(json_string_value(json_object_get(b, "stderr_tail")),
           "tail ?? bytes", "a stderr tail that is not UTF-8 is kept, "
           "readable");
    json_t *ord = json_array_get(json_object_get(b, "order"), 1);
    ok_str(json_string_value(json_array_get(ord, 0)), "cpp",
           "order written with arm names");
    ok(json_is_true(json_object_get(doc, "complete")), "complete");
    ok(!json_object_get(v, "instructions"),
       "no counts, no instructions comparison");
    json_decref(doc);

    doc = s_doc(99, "complete", 5);
    pw_results_finish(doc, 0.04, false, 9, err, sizeof err);
    fl = json_object_get(doc, "floor");
    b = json_array_get(json_object_get(doc, "benchmarks"), 0);
    v = json_object_get(json_object_get(b, "verdict"), "cpp");
    ok(json_is_true(json_object_get(fl, "default")) &&
       json_number_value(json_object_get(fl, "floor_us")) == 25.0,
       "99 calibration samples: the 25 us default");
    ok(pw_verdict_from_json(v, &got, err, sizeof err) == PW_OK &&
       (got.diagnostics & VD_DIAG_DEFAULT_FLOOR),
       "and the verdict says so (default_floor)");
    ok(json_is_false(json_object_get(doc, "complete")), "complete: false");
    json_decref(doc);

    doc = s_doc(100, "failed", 5);
    pw_results_finish(doc, 0.04, true, 9, err, sizeof err);
    b = json_array_get(json_object_get(doc, "benchmarks"), 0);
    ok(json_object_size(json_object_get(b, "verdict")) == 0,
       "no verdict for a failed benchmark");
    ok_str(json_string_value(json_object_get(b, "verdict_error")),
           "no verdict: the benchmark failed", "verdict_error says why");
    json_decref(doc);

    doc = s_doc(100, "incomplete", 1);
    pw_results_finish(doc, 0.04, false, 9, err, sizeof err);
    b = json_array_get(json_object_get(doc, "benchmarks"), 0);
    ok(json_object_size(json_object_get(b, "verdict")) == 0,
       "one sample on a side: no verdict");
    const char *why = json_string_value(json_object_get(b, "verdict_error"));
    ok(why && strncmp(why, "no verdict for prismio against cpp: ", 36) == 0,
       "verdict_error names the arms and vd_compare's reason (%s)", why);
    json_decref(doc);

    json_t *bad = json_pack("{s:i}", "schema_version", 2);
    ok(pw_results_check(bad, err, sizeof err) == PW_RESULTS_ERR, "schema 2");
    ok_str(err, "results: schema_version: expected 3", "its message");
    json_decref(bad);
    bad = json_pack("{s:i,s:s,s:s,s:b,s:[{s:s,s:[],s:[{s:s}]}]}",
                    "schema_version", 3, "suite", "s", "tool", "t",
                    "complete", 1, "benchmarks", "name", "x", "arms",
                    "samples", "kind", "bogus");
    ok(pw_results_check(bad, err, sizeof err) == PW_RESULTS_ERR,
       "a bad sample kind");
    ok_str(err, "results: benchmarks[0].samples[0]: expected kind and "
           "wall_us", "its message");
    json_decref(bad);
    /* Found by fuzzing: an arm without a name passed the check and
     * pw_results_finish then crashed in strcmp(name, NULL). */
    static const char *const nameless[] = {
        "[{\"name\": \"a\"}, {\"subject\": true}]",
        "[{\"name\": \"a\"}, {\"name\": 7}]",
        "[{\"name\": \"a\"}, \"b\"]",
    };
    for (size_t i = 0; i < sizeof nameless / sizeof nameless[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"schema_version\": 3, \"suite\": "
                 "\"s\", \"tool\": \"t\", \"complete\": true, "
                 "\"benchmarks\": [{\"name\": \"x\", \"arms\": %s, "
                 "\"samples\": [{\"kind\": \"measured\", \"arm\": "
                 "\"a\", \"wall_us\": 1}]}]}", nameless[i]);
        bad = json_loads(text, 0, NULL);
        ok(bad && pw_results_check(bad, err, sizeof err) == PW_RESULTS_ERR,
           "an arm without a string name is refused (%s)", nameless[i]);
        ok_str(err, "results: benchmarks[0].arms[1]: expected an object "
               "with a name (a string)", "its message names the arm");
        json_decref(bad);
    }
    /* Bytes that are not UTF-8 (a raw argv, a path, a program's output)
     * become '?', valid sequences stay; nothing is refused or lost. */
    json_t *raw = pw_results_new("test", "0", "s", "x\xff.yaml", NULL, 1);
    ok(raw != NULL, "a suite file path that is not UTF-8");
    ok_str(json_string_value(json_object_get(raw, "suite_file")), "x?.yaml",
           "is kept with '?'");
    json_t *rb = pw_results_add_benchmark(raw, "b\xc3", 2, 0, 1);
    const char *rargv[] = { "prog\xff", "\xc3\xa9t\xc3\xa9", NULL };
    ok(rb && pw_results_add_arm(rb, "a\xfe", true, rargv, NULL,
                                "v1 \xff\xfe end \xe2\x82") ==
       PW_RESULTS_OK, "an arm with bytes that are not UTF-8");
    json_t *rarm = json_array_get(json_object_get(rb, "arms"), 0);
    ok_str(json_string_value(json_object_get(rarm, "name")), "a?",
           "its name");
    ok_str(json_string_value(json_object_get(rarm, "version_output")),
           "v1 ?? end ??", "its version output (a cut sequence too)");
    ok_str(json_string_value(json_array_get(json_object_get(rarm, "command"),
                                            1)), "\xc3\xa9t\xc3\xa9",
           "valid UTF-8 stays as it is");
    pw_sample_t re = { .kind = PW_SAMPLE_ERROR, .arm = "a\xfe",
                       .wall_us = 1, .cpu = -1,
                       .error = "posix_spawnp(prog\xff): No such file" };
    ok(pw_results_add_sample(rb, &re) == PW_RESULTS_OK, "a sample");
    json_t *rs = json_array_get(json_object_get(rb, "samples"), 0);
    ok_str(json_string_value(json_object_get(rs, "error")),
           "posix_spawnp(prog?): No such file", "its error text");
    ok_str(json_string_value(json_object_get(rb, "name")), "b?",
           "the benchmark name");
    json_decref(raw);

    pw_sample_kind_t k;
    ok(pw_sample_kind_parse("calibration", &k) == PW_RESULTS_OK &&
       k == PW_SAMPLE_CALIBRATION &&
       pw_sample_kind_parse("x", &k) == PW_RESULTS_ERR &&
       strcmp(pw_sample_kind_name(PW_SAMPLE_KIND_COUNT), "?") == 0,
       "kind names");
    s_counters();
    return tap_done();
}
