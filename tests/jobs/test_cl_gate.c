/* test_cl_gate.c -- `parity run --wait` as a CI gate (cl_gate.h) on
 * canned collector answers whose verdicts the rule itself computed: the
 * --fail-on values, the counts under each, the terminal's table, the
 * Markdown (its rows, anchors, escaping, and the cap past 200 cases) and
 * the JUnit XML (failures, skipped, escaping). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_gate.h"
#include "capture.h"
#include "pw_json.h"
#include "tap.h"
#include "vd_verdict.h"

/* The written verdict of ten runs at a against ten at b (0.2 % spread). */
static json_t *
s_verdict(double a, double b)
{
    double x[10], y[10];
    for (int i = 0; i < 10; i++) {
        x[i] = a * (1 + 0.001 * (i % 3));
        y[i] = b * (1 + 0.001 * (i % 3));
    }
    vd_params_t vp;
    vd_verdict_t v;
    char err[128];
    vd_params_default(&vp);
    vp.floor_us = 10;
    vp.floor_is_default = false;
    if (vd_compare(x, 10, y, 10, &vp, &v, err, sizeof err) != VD_OK)
        return NULL;
    return pw_verdict_to_json(&v, PW_VERDICT_SUMMARIES);
}

static json_t *
s_host(const char *host, const char *run, json_t *verdict, const char *error)
{
    json_t *e = json_pack("{s:s,s:s,s:s,s:{s:s}}", "host", host, "run_id",
                          run, "status", "complete", "baseline", "job",
                          "9ab5a73c429a");
    if (verdict)
        json_object_set_new(e, "verdict", verdict);
    else {
        json_object_set_new(e, "error", json_string(error));
        json_object_set_new(e, "baseline", json_null());
    }
    return e;
}

static json_t *
s_body(const char *bench)
{
    return json_pack(
        "{s:s,s:s,s:{s:s},s:{s:s},s:[{s:s,s:s,s:s,s:[o,o,o],s:{s:s}},"
        "{s:s,s:s,s:s,s:[o],s:{s:s}}]}",
        "job", "7d1e00000001", "suite", "perf", "tags", "commit", "abc",
        "baseline", "branch", "main",
        "comparisons",
        "benchmark", bench, "subject", "tool", "other", "tool", "hosts",
        s_host("alpha", "r1", s_verdict(1100, 1000), NULL),
        s_host("beta", "r2", s_verdict(1000, 1000), NULL),
        s_host("gamma", "r3", NULL, "no baseline: none"),
        "summary", "consensus", "mixed: loss on 1, parity on 1",
        "benchmark", "fast", "subject", "tool", "other", "tool", "hosts",
        s_host("alpha", "r4", s_verdict(900, 1000), NULL),
        "summary", "consensus", "win on the only host");
}

static void
test_fail_on(void)
{
    unsigned bits = 0;
    char err[128];
    ok(cl_gate_fail_on("loss,undecided", &bits, err, sizeof err) == 0 &&
       bits == (CL_GATE_LOSS | CL_GATE_UNDECIDED), "loss,undecided");
    bits = 0;
    ok(cl_gate_fail_on("any", &bits, err, sizeof err) == 0 &&
       bits == (CL_GATE_LOSS | CL_GATE_WIN), "any is a win or a loss");
    const char *bad[] = { "", "loss,", "loss,,any", "Loss", "lossy" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char want[128];
        snprintf(want, sizeof want, "--fail-on \"%s\": want loss, any or "
                 "undecided (comma-separated)", bad[i]);
        ok(cl_gate_fail_on(bad[i], &bits, err, sizeof err) == -1 &&
           strcmp(err, want) == 0, "--fail-on \"%s\" is refused: %s",
           bad[i], err);
    }
}

static void
test_counts(const json_t *body)
{
    cl_gate_counts_t n;
    cl_gate_count(body, CL_GATE_LOSS, &n);
    ok(n.cases == 4 && n.win == 1 && n.parity == 1 && n.loss == 1 &&
       n.undecided == 1 && n.failed == 1, "fail on loss: 4 cases, 1 fails "
       "(%zu %zu %zu %zu %zu %zu)", n.cases, n.win, n.parity, n.loss,
       n.undecided, n.failed);
    cl_gate_count(body, CL_GATE_LOSS | CL_GATE_WIN, &n);
    ok(n.failed == 2, "fail on any: the win fails too (%zu)", n.failed);
    cl_gate_count(body, CL_GATE_UNDECIDED, &n);
    ok(n.failed == 1, "fail on undecided: the host without a baseline "
       "(%zu)", n.failed);
    cl_gate_count(body, 0, &n);
    ok(n.failed == 0, "fail on nothing: reported only");
}

static void
test_print(const json_t *body)
{
    char *t = CAPTURE(f, cl_gate_print(f, body, CL_GATE_LOSS));
    ok(t && strstr(t, "\nagainst branch=main:\nbenchmark  host   verdict     "
       "ratio  tolerance  baseline      gate\n"
       "tool       alpha  loss       1.1000      4.0 %  9ab5a73c429a  FAIL\n"
       "tool       beta   parity     1.0000      4.0 %  9ab5a73c429a  ok\n"
       "tool       gamma  undecided       -          -  none          ok\n"
       "fast       alpha  win        0.9000      4.0 %  9ab5a73c429a  ok\n") &&
       strstr(t, "  tool on alpha: loss: ratio 1.1000, tolerance 4.0 %, "
              "best ratio 1.1000, floor 10.0 us\n") &&
       strstr(t, "  tool on gamma: undecided: no baseline: none\n") &&
       strstr(t, "gate failed: 1 of 4 cases fails (fail on loss; against "
              "branch=main): 1 win, 1 parity, 1 loss, 1 undecided\n"),
       "the terminal's table, the reasons and the result line:\n%s",
       t ? t : "(null)");
    free(t);
}

static void
test_markdown(void)
{
    json_t *body = s_body("a|b_c<d>");
    char *t = CAPTURE(f, cl_gate_markdown(f, body, CL_GATE_LOSS));
    ok(t && strncmp(t, "### Parity: suite perf against branch=main\n\n"
       "**failed**: 1 of 4 cases fails (fail on loss; against branch=main): "
       "1 win, 1 parity, 1 loss, 1 undecided\n\njob 7d1e00000001, tags "
       "commit=abc\n\n| benchmark | host | verdict | ratio | tolerance | "
       "baseline job | run |\n|---|---|---|---|---|---|---|\n", 279) == 0,
       "Markdown: heading, result, job, table head:\n%s", t ? t : "");
    ok(t && strstr(t, "| a\\|b\\_c&lt;d&gt; | <a id=\"parity-a-b-c-d--alpha\">"
       "</a>alpha | **loss** | 1.1000 | 4.0 % | 9ab5a73c429a | r1 |\n") &&
       strstr(t, "| <a id=\"parity-a-b-c-d--gamma\"></a>gamma | undecided | "
              "- | - | none | r3 |\n") &&
       strstr(t, "- a\\|b\\_c&lt;d&gt;: mixed: loss on 1, parity on 1 "),
       "Markdown: a row per case, escaped, with its anchor; the "
       "consensus");
    free(t);
    json_decref(body);

    /* Past 200 cases the passing parity ones are counted, not listed. */
    json_t *big = s_body("tool");
    json_t *hosts = json_object_get(json_array_get(json_object_get(
        big, "comparisons"), 0), "hosts");
    for (int i = 0; i < 200; i++) {
        char name[16];
        snprintf(name, sizeof name, "h%03d", i);
        json_array_append_new(hosts, s_host(name, "r", s_verdict(1000,
                                                                 1000),
                                            NULL));
    }
    t = CAPTURE(f, cl_gate_markdown(f, big, CL_GATE_LOSS));
    ok(t && strstr(t, "\n201 more cases at parity, not listed.\n") &&
       !strstr(t, "h007"), "Markdown: 204 cases list the 3 that are not a "
       "passing parity and count the 201 others");
    free(t);
    json_decref(big);
}

static void
test_junit(void)
{
    json_t *body = s_body("x&y");
    char *t = CAPTURE(f, cl_gate_junit(f, body, CL_GATE_LOSS,
                                       1796000000000000LL));
    ok(t && strstr(t, "<testsuites name=\"parity\" tests=\"4\" failures=\"1\" "
       "errors=\"0\" skipped=\"1\" time=\"0\">\n  <testsuite name=\"perf\" "
       "tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"1\" time=\"0\" "
       "timestamp=\"2026-11-30T00:53:20\" hostname=\"parity\" id=\"0\" "
       "package=\"parity\">\n"), "JUnit: the counts and the stamp");
    ok(t && strstr(t, "    <testcase name=\"x&amp;y on alpha\" classname="
       "\"perf.x&amp;y\" time=\"0\">\n      <failure type=\"loss\" message="
       "\"loss: ratio 1.1000, tolerance 4.0 %, best ratio 1.1000, floor "
       "10.0 us\">") &&
       strstr(t, "<skipped type=\"undecided\" message=\"undecided: no "
              "baseline: none\">") &&
       strstr(t, "<property name=\"against\" value=\"branch=main\"/>"),
       "JUnit: a failure with the numbers, a skipped undecided case, "
       "escaped names:\n%s", t ? t : "");
    free(t);
    t = CAPTURE(f, cl_gate_junit(f, body, CL_GATE_UNDECIDED, 0));
    ok(t && strstr(t, "failures=\"1\" errors=\"0\" skipped=\"0\"") &&
       strstr(t, "<failure type=\"undecided\""), "JUnit: --fail-on "
       "undecided makes it a failure");
    free(t);
    json_decref(body);
}

int
main(void)
{
    json_t *body = s_body("tool");
    test_fail_on();
    test_counts(body);
    test_print(body);
    test_markdown();
    test_junit();
    json_decref(body);
    return tap_done();
}
