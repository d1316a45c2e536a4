/* test_cl_verdicts.c -- the verdict table of `parity verdicts` and
 * `parity run --wait` (cl_verdicts_print) on canned collector answers:
 * host columns, a lost host, a failed run, the summary columns, the
 * one-row-per-host layout past 8 hosts, CSV quoting, Markdown escaping. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_verdicts.h"
#include "capture.h"
#include "tap.h"
#include "expected.h"

static char *
s_print(const json_t *body, cl_verdicts_format_t fmt)
{
    return CAPTURE(f, cl_verdicts_print(f, body, fmt));
}

static json_t *
s_verdict(const char *outcome, double ratio)
{
    return json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "outcome", outcome,
                     "ratio", ratio, "best_ratio", ratio, "tolerance", 0.05,
                     "noise", 0.01, "best_tolerance", 0.04, "floor_us", 25.0,
                     "parity", 0.04);
}

static int
s_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

int
main(void)
{
    json_t *body = json_pack(
        "{s:s,s:s,s:s,s:{s:s},s:s,"
        " s:[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s}],"
        " s:[{s:s,s:s,s:s,s:[{s:s,s:s,s:s,s:o},{s:s,s:s,s:s,s:s}],"
        "     s:{s:i,s:i,s:i,s:i,s:f,s:f,s:s}}]}",
        "job", "0123456789ab", "suite", "demo", "state", "ended",
        "tags", "commit", "abc", "label", "",
        "hosts", "host", "alpha", "state", "done", "reason", "",
                 "host", "beta", "state", "done", "reason", "",
                 "host", "gamma", "state", "lost", "reason",
                 "the agent went offline during the job",
        "comparisons", "benchmark", "zip", "subject", "new", "other", "old|x",
        "hosts", "host", "alpha", "run_id", "r1", "status", "complete",
                 "verdict", s_verdict("loss", 1.162),
                 "host", "beta", "run_id", "r2", "status", "incomplete",
                 "error", "the run did not complete",
        "summary", "hosts", 1, "win", 0, "parity", 0, "loss", 1,
        "geomean_ratio", 1.162, "geomean_best_ratio", 1.162,
        "consensus", "loss on the only host");
    ok(body != NULL, "canned answer built");

    char *t = s_print(body, CL_VERDICTS_TABLE);
    ok(t && strstr(t, "job 0123456789ab  suite demo  ended  tags commit=abc"),
       "table: header line with job, suite, state and tags");
    ok(t && strstr(t, "benchmark") && strstr(t, "alpha") &&
       strstr(t, "beta") && strstr(t, "gamma") && strstr(t, "geomean") &&
       strstr(t, "summary"), "table: one column per host, then the summary");
    ok(t && strstr(t, "loss 1.162"), "table: alpha's cell is outcome and "
       "ratio");
    ok(t && strstr(t, "incomplete"), "table: beta's cut-short run shows its "
       "status");
    ok(t && strstr(t, "lost"), "table: gamma without a run shows its state");
    ok(t && strstr(t, "loss on the only host"), "table: the consensus");
    ok(t && strstr(t, "gamma: lost: the agent went offline during the job"),
       "table: a host that did not finish says why");
    ok(expected_match("verdicts", t), "table: the whole table as "
       "tests/expected/verdicts.out has it");
    free(t);

    t = s_print(body, CL_VERDICTS_CSV);
    ok(t && s_lines(t) == 3, "csv: a header and one line per host entry "
       "(%d lines)", t ? s_lines(t) : -1);
    ok(t && strstr(t, "0123456789ab,zip,new,old|x,alpha,r1,loss,1.162,"),
       "csv: alpha's line with the ratio's shortest exact digits");
    ok(t && strstr(t, ",beta,r2,error,"), "csv: beta's line says error");
    ok(t && strstr(t, ",loss on the only host,1.162,wall\n"),
       "csv: the geomean with the same digits (pw_out_number), not rounded "
       "to 3 places");
    free(t);

    t = s_print(body, CL_VERDICTS_MARKDOWN);
    ok(t && strstr(t, "| benchmark | arms | alpha | beta | gamma | geomean "
                      "| summary |") && strstr(t, "new vs old\\|x"),
       "markdown: header row, and | in a name escaped");
    ok(t && strstr(t, "|\n\n- gamma: lost: the agent went offline during "
                      "the job\n"),
       "markdown: a host that did not finish is listed after the table");
    free(t);

    /* The instructions comparison beside a verdict: one line per host
     * that counted them, after the table; none without. */
    t = s_print(body, CL_VERDICTS_TABLE);
    ok(t && !strstr(t, "instructions"), "table: no counters line where "
       "no host counted instructions");
    free(t);
    json_t *ct = json_deep_copy(body);
    json_t *cv = json_object_get(json_array_get(json_object_get(
        json_array_get(json_object_get(ct, "comparisons"), 0), "hosts"), 0),
        "verdict");
    json_object_set_new(cv, "instructions", json_pack("{s:s,s:s}",
        "counter", "instructions", "text",
        "wall time loss; instructions +3.1 % (parity, decisive)"));
    t = s_print(ct, CL_VERDICTS_TABLE);
    ok(t && strstr(t, "\nzip new vs old|x on alpha: wall time loss; "
                      "instructions +3.1 % (parity, decisive)\n"),
       "table: the instructions line of alpha's verdict");
    free(t);
    t = s_print(ct, CL_VERDICTS_MARKDOWN);
    ok(t && strstr(t, "\n- zip new vs old|x on alpha: wall time loss; "),
       "markdown: as a list item");
    free(t);
    json_decref(ct);

    /* Each host's last A/A self-test beside its verdicts: none, a clean
     * one, one above 2 %. */
    json_t *aa = json_deep_copy(body);
    json_t *ah = json_object_get(aa, "hosts");
    json_object_set_new(json_array_get(ah, 0), "selftest", json_pack(
        "{s:s,s:I,s:i,s:i,s:f,s:f}", "job", "5d0c7e2a91bf", "at_us",
        (json_int_t)1796221290000000, "trials", 50, "false_verdicts", 0,
        "rate", 0.0, "floor_us", 412.0));
    json_object_set_new(json_array_get(ah, 1), "selftest", json_pack(
        "{s:s,s:I,s:i,s:i,s:f,s:f}", "job", "5d0c7e2a91bf", "at_us",
        (json_int_t)1796221290000000, "trials", 50, "false_verdicts", 3,
        "rate", 0.06, "floor_us", 900.0));
    json_object_set_new(json_array_get(ah, 2), "selftest", json_null());
    t = s_print(aa, CL_VERDICTS_TABLE);
    ok(t && strstr(t, "\nalpha: this host: 0 false verdicts in 50 A/A "
                      "trials (self-test of 2026-12-02 14:21Z)\n"),
       "table: a host's clean self-test under its verdicts");
    ok(t && strstr(t, "\nbeta: warning: this host: 3 false verdicts in 50 "
                      "A/A trials (6.0 %, above 2 %) (self-test of "
                      "2026-12-02 14:21Z)\n"),
       "table: a host above 2 %% is warned about");
    ok(t && strstr(t, "\ngamma: this host: no self-test yet (parity "
                      "selftest)\n"), "table: a host without one says so");
    free(t);
    t = s_print(aa, CL_VERDICTS_MARKDOWN);
    ok(t && strstr(t, "\n- alpha: this host: 0 false verdicts in 50 A/A "
                      "trials"), "markdown: the self-test lines as a list");
    free(t);
    json_decref(aa);

    /* A label goes into the header; a job without verdicts says so
     * without "yet" once it is over. */
    json_t *empty = json_pack("{s:s,s:s,s:s,s:{},s:s,s:[],s:[]}", "job",
                              "0123456789ab", "suite", "demo", "state",
                              "cancelled", "tags", "label", "nightly",
                              "hosts", "comparisons");
    t = s_print(empty, CL_VERDICTS_TABLE);
    ok(t && strstr(t, "job 0123456789ab  suite demo  cancelled  label "
                      "nightly\n") &&
       strstr(t, "(no verdicts stored for this job)\n") &&
       !strstr(t, "ratio ="), "table: label in the header, no verdicts of an "
       "ended job without \"yet\" nor the ratio note");
    free(t);
    json_object_set_new(empty, "state", json_string("active"));
    t = s_print(empty, CL_VERDICTS_TABLE);
    ok(t && strstr(t, "(no verdicts stored for this job yet)\n"),
       "table: an active job's are not stored \"yet\"");
    free(t);
    json_decref(empty);

    /* One version of the suite: no note. Two: a note naming each
     * version's first 12 hex digits and hosts, the other marked. */
    t = s_print(body, CL_VERDICTS_TABLE);
    ok(t && !strstr(t, "versions of it"), "table: no suite note without "
       "suite_digests");
    free(t);
    json_object_set_new(body, "suite_digests", json_pack(
        "[{s:s,s:[s,s]},{s:s,s:[s]}]",
        "digest", "aaaaaaaaaaaa1111", "hosts", "alpha", "beta",
        "digest", "bbbbbbbbbbbb2222", "hosts", "gamma"));
    t = s_print(body, CL_VERDICTS_TABLE);
    ok(t && strstr(t, "suite demo: the hosts ran 2 versions of it (SHA-256 "
                      "of the suite file):\n  aaaaaaaaaaaa alpha, beta\n"
                      "  bbbbbbbbbbbb gamma  (differs from the most "
                      "hosts')\n"),
       "table: hosts that ran another version of the suite are named");
    free(t);
    t = s_print(body, CL_VERDICTS_MARKDOWN);
    ok(t && strstr(t, "\n\nsuite demo: the hosts ran 2 versions of it "
                      "(SHA-256 of the suite file):\n- aaaaaaaaaaaa alpha, "
                      "beta\n- bbbbbbbbbbbb gamma  (differs"),
       "markdown: the same note, as a list after a blank line");
    free(t);
    json_object_del(body, "suite_digests");

    /* Nine hosts: one row per host instead of nine columns. */
    json_t *hosts = json_object_get(body, "hosts");
    json_t *entries = json_object_get(json_array_get(
        json_object_get(body, "comparisons"), 0), "hosts");
    for (int i = 0; i < 6; i++) {
        char name[16];
        snprintf(name, sizeof name, "h%d", i);
        json_array_append_new(hosts, json_pack("{s:s,s:s,s:s}", "host", name,
                                               "state", "done", "reason", ""));
        json_array_append_new(entries, json_pack("{s:s,s:s,s:s,s:o}", "host",
                              name, "run_id", "r", "status", "complete",
                              "verdict", s_verdict("parity", 1.0)));
    }
    t = s_print(body, CL_VERDICTS_TABLE);
    ok(t && strstr(t, "host") && strstr(t, "outcome") && strstr(t, "h5") &&
       !strstr(t, "  gamma  "), "9 hosts: one row per host entry");
    ok(t && s_lines(t) >= 10, "9 hosts: 8 entry rows plus header lines (%d)",
       t ? s_lines(t) : -1);
    free(t);

    t = s_print(body, CL_VERDICTS_JSON);
    json_t *back = t ? json_loads(t, 0, NULL) : NULL;
    ok(back && json_equal(back, body), "json: the answer, unchanged");
    json_decref(back);
    free(t);
    json_decref(body);
    return tap_done();
}
