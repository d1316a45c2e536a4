/* test_cl_history.c -- the printers of `parity history` (cl_history_print)
 * and `parity report` (cl_report_write) on canned collector answers, no
 * collector: host columns and the per-host layout past 7 hosts, a row
 * without a job, a host missing from a row, CSV quoting; the report's
 * escaping of hostile names in HTML and Markdown, a host without a
 * verdict, a run that did not complete, a default floor, diagnostics;
 * the regressions pairs with both runs' tags. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_history.h"
#include "cl_regressions.h"
#include "cl_report.h"
#include "capture.h"
#include "tap.h"
#include "expected.h"

static char *
s_history(const json_t *body, cl_history_format_t fmt)
{
    return CAPTURE(f, cl_history_print(f, body, fmt));
}

static char *
s_report(const json_t *rep, const json_t *ver, cl_report_format_t fmt)
{
    return CAPTURE(f, cl_report_write(f, fmt, rep, ver));
}

static json_t *
s_verdict(const char *outcome, double ratio)
{
    return json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:[s],s:i}",
                     "outcome", outcome, "ratio", ratio, "best_ratio", ratio,
                     "tolerance", 0.05, "noise", 0.01, "best_tolerance", 0.04,
                     "floor_us", 25.0, "parity", 0.04,
                     "diagnostics", "few_runs", "extra_runs", 3);
}

static json_t *
s_entry(const char *host, const char *outcome, double ratio)
{
    return json_pack("{s:s,s:s,s:s,s:o}", "host", host, "run_id", "r",
                     "status", "complete", "verdict",
                     s_verdict(outcome, ratio));
}

static json_t *
s_summary(int hosts, const char *consensus)
{
    return json_pack("{s:i,s:i,s:i,s:i,s:f,s:f,s:s}", "hosts", hosts, "win",
                     0, "parity", hosts, "loss", 0, "geomean_ratio", 1.0,
                     "geomean_best_ratio", 1.0, "consensus", consensus);
}

static int
s_count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static void
s_history_tests(void)
{
    /* Two rows: a job on alpha and beta, then a run without a job on
     * alpha only. */
    json_t *row1 = json_pack("{s:s,s:s,s:I,s:{s:s},s:s,s:[o,o],s:o}",
        "job", "0123456789ab", "run_id", "", "at_us",
        (json_int_t)1796221290000000, "tags", "commit", "c,1", "label", "",
        "hosts", s_entry("beta", "parity", 1.01),
                 s_entry("alpha", "loss", 1.5),
        "summary", s_summary(2, "mixed: loss on 1, parity on 1"));
    json_t *row2 = json_pack("{s:s,s:s,s:I,s:{},s:s,s:[o],s:o}",
        "job", "", "run_id", "run-x", "at_us",
        (json_int_t)1796221300000000, "tags", "label", "adhoc",
        "hosts", s_entry("alpha", "win", 0.5),
        "summary", s_summary(1, "win on the only host"));
    json_t *body = json_pack("{s:s,s:b,s:[{s:s,s:s,s:s,s:[o,o]}]}",
        "benchmark", "zip", "truncated", 0, "pairs", "suite", "s",
        "subject", "new", "other", "old", "rows", row1, row2);
    char *t = s_history(body, CL_HISTORY_TABLE);
    ok(t && strstr(t, "zip: new vs old  (suite s)\n"), "a title per pair");
    const char *head = t ? strstr(t, "\nwhen ") : NULL;
    ok(head && strstr(head, " job ") && strstr(head, " tags ") &&
       strstr(head, " alpha ") < strstr(head, " beta ") &&
       strstr(head, " beta ") < strstr(head, " geomean  summary\n"),
       "columns: when, job, tags, the hosts in name order, summary");
    ok(t && strstr(t, "(no job)") && strstr(t, "[adhoc]") &&
       strstr(t, "win 0.500") && strstr(t, "  -  "),
       "a run without a job is a row; a host not in it shows -");
    ok(t && strstr(t, "commit=c,1") && strstr(t, "loss 1.500") &&
       strstr(t, "parity 1.010"), "row 1's tags and both hosts' cells");
    ok(t && strstr(t, "loss 1.500") < strstr(t, "win 0.500"),
       "rows in the answer's order (oldest first)");
    ok(expected_match("history", t), "the whole history table as "
       "tests/expected/history.out has it");
    free(t);
    t = s_history(body, CL_HISTORY_CSV);
    ok(t && s_count(t, "\n") == 4 && strstr(t, ",\"commit=c,1\",") &&
       strstr(t, ",run-x,") == NULL && strstr(t, ",win,0.5,"),
       "CSV: a header and one line per job and host, quoted tags");
    ok(t && strstr(t, ",win,0.5,0.5,0.05,") && !strstr(t, ".000"),
       "CSV: ratio, best ratio and tolerance with the same digits as "
       "verdicts --csv (pw_out_number), the geomean not rounded to 3 "
       "places");
    free(t);

    /* Nine hosts: one line per job and host instead of columns. */
    json_t *many = json_array();
    char name[16];
    for (int i = 0; i < 9; i++) {
        snprintf(name, sizeof name, "h%d", i);
        json_array_append_new(many, s_entry(name, "parity", 1.0));
    }
    json_t *row = json_pack("{s:s,s:s,s:I,s:{},s:s,s:o,s:o}", "job", "j1",
        "run_id", "", "at_us", (json_int_t)1796221290000000, "tags",
        "label", "", "hosts", many, "summary",
        s_summary(9, "parity on all 9 hosts"));
    json_t *wide = json_pack("{s:s,s:[{s:s,s:s,s:s,s:[o]}]}", "benchmark",
        "zip", "pairs", "suite", "s", "subject", "a", "other", "b", "rows",
        row);
    t = s_history(wide, CL_HISTORY_TABLE);
    ok(t && strstr(t, " host ") && strstr(t, " outcome ") &&
       strstr(t, "  h0  ") != NULL && s_count(t, "parity on all 9") == 9,
       "past 7 hosts: one line per host");
    free(t);
    json_t *empty = json_pack("{s:s,s:[]}", "benchmark", "zip", "pairs");
    t = s_history(empty, CL_HISTORY_TABLE);
    ok_str(t, "(no verdicts of zip match: none stored yet, or the "
           "--host/--tag filters exclude them)\n", "no pairs says so");
    free(t);
    json_decref(body);
    json_decref(wide);
    json_decref(empty);
}

static void
s_report_tests(void)
{
    const char *bench = "<script>alert(\"x\")</script>";
    json_t *arm = json_pack("{s:s,s:b,s:i,s:{s:i,s:f,s:f,s:f,s:f,s:f,s:f,"
                            "s:f}}", "name", "a'b&c*d", "subject", 1,
                            "errors", 0, "summary", "n", 5, "min", 566.0,
                            "q25", 568.0, "median", 576.0, "q75", 690.0,
                            "max", 722.0, "iqr", 122.0, "mean", 624.4);
    json_t *other = json_pack("{s:s,s:b,s:i,s:n}", "name", "old|x",
                              "subject", 0, "errors", 2, "summary");
    json_t *rep = json_pack(
        "{s:s,s:s,s:s,s:s,s:{s:s},s:{},s:i,s:I,s:n,"
        " s:[{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:f,s:b,s:i,s:[{s:s,s:s}]},"
        "    {s:s,s:s,s:s,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:[]}],"
        " s:[{s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:[o,o]},"
        "    {s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:[]}]}",
        "job", "0123456789ab", "suite", "s<1>", "state", "ended", "label",
        "", "tags", "branch", "main`x`", "vars", "runs", 0,
        "created_at_us", (json_int_t)1796221290000000, "ended_at_us",
        "hosts",
        "host", "h<1>", "state", "done", "reason", "", "cpu_model", "EPYC",
        "kernel", "Linux 6.1.0_x #1 SMP_X", "arch", "x86_64", "logical_cpus", 2,
        "floor_us", 25.0, "floor_default", 1, "floor_samples", 3,
        "warnings", "code", "load", "message", "load <b>high</b>\nnow",
        "host", "beta", "state", "lost", "reason", "agent went offline",
        "cpu_model", "kernel", "arch", "logical_cpus", "floor_us",
        "floor_default", "floor_samples", "warnings",
        "run_list",
        "run_id", "r1", "host", "h<1>", "benchmark", bench, "status",
        "complete", "reason", "", "runs", 5, "warmup", 1, "arms", arm, other,
        "run_id", "r2", "host", "beta", "benchmark", bench, "status",
        "incomplete", "reason", "agent went offline", "runs", 5, "warmup", 1,
        "arms");
    json_t *ver = json_pack(
        "{s:s,s:[{s:s,s:s,s:s,s:[o,{s:s,s:s,s:s,s:s}],s:o}]}",
        "job", "0123456789ab", "comparisons", "benchmark", bench, "subject",
        "a'b&c*d", "other", "old|x", "hosts", s_entry("h<1>", "loss", 1.25),
        "host", "beta", "run_id", "r2", "status", "incomplete", "error",
        "the run did not complete", "summary",
        s_summary(1, "loss on the only host"));
    /* h<1>'s last A/A self-test: 2 false verdicts in 50, above 2 %. */
    json_t *aa = json_pack("{s:s,s:I,s:i,s:i,s:f,s:f}", "job",
                           "5d0c7e2a91bf", "at_us",
                           (json_int_t)1796221290000000, "trials", 50,
                           "false_verdicts", 2, "rate", 0.04,
                           "floor_us", 412.0);
    json_object_set(json_array_get(json_object_get(rep, "hosts"), 0),
                    "selftest", aa);
    json_object_set_new(ver, "hosts", json_pack("[{s:s,s:o},{s:s,s:n}]",
                        "host", "h<1>", "selftest", aa, "host", "beta",
                        "selftest"));

    char *h = s_report(rep, ver, CL_REPORT_HTML);
    ok(h && strncmp(h, "<!DOCTYPE html>\n", 16) == 0 &&
       strstr(h, "</body>\n</html>\n"), "HTML: one whole document");
    ok(h && !strstr(h, "<script") && !strstr(h, "<b>") &&
       strstr(h, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;") &&
       strstr(h, "a&#39;b&amp;c*d") && strstr(h, "h&lt;1&gt;") &&
       strstr(h, "load &lt;b&gt;high&lt;/b&gt; now"),
       "HTML: names, hosts and warnings escaped");
    ok(h && s_count(h, "<table>") == 3 && s_count(h, "</table>") == 3 &&
       strstr(h, "<style>") && !strstr(h, "http") && !strstr(h, "src=") &&
       !strstr(h, "href"), "HTML: three tables, inline CSS, nothing "
       "external");
    free(h);

    char *m = s_report(rep, ver, CL_REPORT_MARKDOWN);
    ok(m && strncmp(m, "# Parity report: job 0123456789ab\n", 34) == 0,
       "Markdown: the title");
    ok(m && !strstr(m, "<script") &&
       strstr(m, "&lt;script&gt;alert(\"x\")&lt;/script&gt;") &&
       strstr(m, "a'b&amp;c\\*d") && strstr(m, "old\\|x") &&
       strstr(m, "branch=main\\`x\\`") && strstr(m, "6.1.0\\_x") &&
       strstr(m, "suite s&lt;1&gt;"), "Markdown: names escaped");
    ok(m && !strstr(m, "SMP") &&
       strstr(m, "| h&lt;1&gt; | done | EPYC | 6.1.0\\_x | "
                      "x86\\_64 | 2 | 25.0 µs (default: too few "
                      "calibration samples) | 2 false verdicts in 50 A/A "
                      "trials (4.0 %, above 2 %), 2026-12-02 14:21Z | "
                      "load: load &lt;b&gt;high&lt;/b&gt; now |\n"),
       "Markdown: the host row, default floor, self-test, warning on one "
       "line");
    ok(m && strstr(m, "| beta | lost: agent went offline | - | - | - | - | "
                      "- | no self-test yet | none |"), "a lost host's row");
    ok(m && strstr(m, "Warning: This host: 2 false verdicts in 50 A/A "
                      "trials (4.0 %, above 2 %)."),
       "Markdown: the host's self-test beside its verdict, with the "
       "warning above 2 %%");
    ok(m && strstr(m, "| loss 1.250 (tol. 0.050) | incomplete | 1.000 | "
                      "loss on the only host |"), "the verdict table: the "
       "tolerance beside the ratio; a host without a verdict shows its "
       "run's status (as history and verdicts do)");
    ok(m && strstr(m, "| h&lt;1&gt; | a'b&amp;c\\*d (subject) | 5 | 566.0 µs "
                      "| 576.0 µs | 722.0 µs | 122.0 µs | 0 |") &&
       strstr(m, "| h&lt;1&gt; | old\\|x | 0 | - | - | - | - | 2 |"),
       "arm summaries: n, min, median, max, IQR, errors; none without "
       "samples");
    ok(m && strstr(m, "beta: run r2 is incomplete: agent went offline.") &&
       strstr(m, "beta, a'b&amp;c\\*d vs old\\|x: no verdict: the run did "
                 "not complete"), "an incomplete run says why");
    ok(m && strstr(m, "h&lt;1&gt;, a'b&amp;c\\*d vs old\\|x: loss, ratio "
                      "1.2500 (tolerance 0.0500)") &&
       strstr(m, "Note: fewer than") &&
       strstr(m, "about 3 more runs a side would be worth taking"),
       "the verdict in full with its diagnostics");
    free(m);
    json_decref(rep);
    json_decref(ver);
}

/* A run with more changes than a cell holds: its CSV "changes" field is
 * cut after a whole UTF-8 sequence and ends in "...". */
static void
s_notes_cut_tests(void)
{
    json_t *notes = json_array();
    for (int i = 0; i < 40; i++)   /* "é" is two bytes: a cut may split it */
        json_array_append_new(notes, json_pack("{s:i,s:s}", "index", 0,
                                               "text", "kernel \xc3\xa9"));
    json_t *body = json_pack(
        "{s:s,s:[{s:s,s:s,s:s,s:[{s:s,s:s,s:I,s:{},s:s,s:[o],s:o}]}],"
        "s:[{s:[{s:s}],s:o}]}", "benchmark", "b", "pairs", "suite", "s",
        "subject", "new", "other", "old", "rows", "job", "0123456789ab",
        "run_id", "", "at_us", (json_int_t)1796221290000000, "tags",
        "label", "", "hosts", s_entry("alpha", "parity", 1.0), "summary",
        s_summary(1, "parity on all 1 hosts"), "series", "runs", "run", "r",
        "annotations", notes);
    char *t = body ? s_history(body, CL_HISTORY_CSV) : NULL;
    const char *end = t ? strstr(t, "kernel \xc3\xa9; kernel") : NULL;
    const char *cut = end ? strstr(end, "...") : NULL;
    size_t len = cut ? (size_t)(cut + 3 - end) : 0;
    bool whole = cut && (cut[-1] == '\xa9' || cut[-1] == ' ' ||
                         cut[-1] == ';' || (cut[-1] >= 'a' && cut[-1] <= 'z'));
    ok(t && cut && len <= 255 && whole,
       "a run's changes longer than a cell end in \"...\" after a whole "
       "character (%zu bytes)", len);
    free(t);
    json_decref(body);
}

/* regressions: a pair that got worse names both runs and their tags. */
static void
s_regressions_tests(void)
{
    json_t *body = json_pack(
        "{s:{s:[],s:[]},s:[{s:s,s:s,s:s,s:s,"
        "s:{s:s,s:f,s:s,s:{s:s,s:s}},s:{s:s,s:f,s:s,s:{s:s}}}],"
        "s:[],s:i,s:i}",
        "change_points", "open", "acked",
        "regressions", "benchmark", "grows", "subject", "new", "other", "old",
        "host", "alpha",
        "before", "outcome", "parity", "ratio", 1.0, "run_id", "r1", "tags",
        "commit", "c1", "phase", "early",
        "after", "outcome", "loss", "ratio", 1.5, "run_id", "r2", "tags",
        "commit", "c2",
        "improvements", "unchanged", 3, "first", 0);
    capture_t c;
    FILE *f = capture_open(&c);
    int rc = body ? cl_regressions_print(f, body, false) : -1;
    char *buf = capture_text(&c, rc);
    ok(rc == 0 && buf && strstr(buf, "before tags") &&
       strstr(buf, "after tags") && strstr(buf, "commit=c1 phase=early") &&
       strstr(buf, "commit=c2") && strstr(buf, "r1") && strstr(buf, "r2") &&
       strstr(buf, "1 worse, 0 better, 3 unchanged"),
       "regressions: a worse pair shows the tags of the run before and "
       "the run after");
    ok(expected_match("regressions", buf), "the whole regressions answer "
       "as tests/expected/regressions.out has it");
    free(buf);
    json_decref(body);

    /* A change point within noise: counted, listed with --all. */
    body = json_pack("{s:{s:[{s:I,s:s,s:s,s:s,s:s,s:s,s:f,s:s,s:b,s:b,"
                     "s:{s:{s:s}},s:{s:{s:s}},s:I,s:I,s:[]}],s:[]},s:[],"
                     "s:[],s:i,s:i}", "change_points", "open", "id",
                     (json_int_t)7, "benchmark", "b", "subject", "new",
                     "other", "old", "host", "alpha", "metric", "ratio",
                     "magnitude", 1.03, "outcome", "parity", "within_noise",
                     1, "regression", 0, "before", "tags", "commit", "c1",
                     "after", "tags", "commit", "c2", "hosts_with_step",
                     (json_int_t)1, "hosts_total", (json_int_t)1,
                     "annotations", "acked", "regressions", "improvements",
                     "unchanged", 0, "first", 0);
    for (int all = 0; all < 2; all++) {
        f = capture_open(&c);
        rc = body ? cl_regressions_print(f, body, all) : -1;
        buf = capture_text(&c, rc);
        ok(rc == 0 && buf && (all ? strstr(buf, "parity (within noise)") &&
                              !strstr(buf, "not listed")
                              : !strstr(buf, "change points (") &&
                              strstr(buf, "1 change point within noise not "
                                     "listed (--all lists them)")),
           "regressions %s: a change point within noise %s", all ? "--all"
           : "alone", all ? "is listed" : "is counted, not listed");
        free(buf);
    }
    json_decref(body);
}

int
main(void)
{
    s_history_tests();
    s_notes_cut_tests();
    s_regressions_tests();
    s_report_tests();
    return tap_done();
}
