/* fz_results.c -- libFuzzer target: the results file reader.
 *
 * The input is a results file (schema 3, proto/pw_results.h). It is
 * read as the readers read it: parsed by jansson, checked with
 * pw_results_check, then its samples, verdicts and summaries read back
 * (pw_results_calibration_samples, pw_results_arm_samples,
 * pw_verdict_from_json, pw_summary_from_json) and the document finished
 * again (pw_results_finish) and written (pw_json_dumps).
 *
 * One property is checked besides "no crash, no leak, no UB": every
 * verdict read back writes the same text through pw_verdict_write (the
 * batch's heap-free path) as through pw_verdict_to_json and
 * pw_json_dumps, which pw_json.h promises; the target aborts otherwise.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pw_json.h"
#include "pw_results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* pw_verdict_write and pw_verdict_to_json must agree on v. */
static void
s_same_text(const vd_verdict_t *v, unsigned flags)
{
    char buf[PW_VERDICT_TEXT_MAX];
    int n = pw_verdict_write(buf, sizeof buf, v, flags);
    json_t *j = pw_verdict_to_json(v, flags);
    char *text = j ? pw_json_dumps(j) : NULL;
    /* A value pw_json_dumps refuses (not finite) has no text to compare. */
    if (n >= 0 && text
        && ((size_t)n != strlen(text) || memcmp(buf, text, (size_t)n))) {
        fprintf(stderr, "fz_results: verdict texts differ\n"
                "pw_verdict_write: %.*s\npw_json_dumps:    %s\n", n, buf,
                text);
        abort();
    }
    free(text);
    json_decref(j);
}

/* Read back every verdict and summary object of one benchmark. */
static void
s_read_bench(const json_t *b)
{
    const char *key;
    json_t *obj;
    char err[256];
    json_object_foreach(json_object_get(b, "verdict"), key, obj) {
        vd_verdict_t v;
        if (pw_verdict_from_json(obj, &v, err, sizeof err) == 0) {
            s_same_text(&v, 0);
            s_same_text(&v, PW_VERDICT_SUMMARIES);
        }
    }
    json_object_foreach(json_object_get(b, "summary"), key, obj) {
        vd_summary_t s;
        (void)pw_summary_from_json(obj, &s, err, sizeof err);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    char err[512];
    size_t i, j;
    json_t *b, *arm;
    double *x = NULL;
    size_t n = 0;

    json_t *doc = json_loadb((const char *)data, size,
                             JSON_REJECT_DUPLICATES, &jerr);
    if (!doc)
        return 0;
    if (pw_results_check(doc, err, sizeof err) != PW_RESULTS_OK)
        goto done;
    if (pw_results_calibration_samples(doc, &x, &n, err, sizeof err)
        == PW_RESULTS_OK)
        free(x);
    json_array_foreach(json_object_get(doc, "benchmarks"), i, b) {
        s_read_bench(b);
        json_array_foreach(json_object_get(b, "arms"), j, arm) {
            const char *name = json_string_value(json_object_get(arm,
                                                                 "name"));
            if (name && pw_results_arm_samples(b, name, &x, &n, err,
                                               sizeof err) == PW_RESULTS_OK)
                free(x);
        }
    }
    if (pw_results_finish(doc, VD_DEFAULT_PARITY, true, 1, err, sizeof err)
        == PW_RESULTS_OK) {
        json_array_foreach(json_object_get(doc, "benchmarks"), i, b)
            s_read_bench(b);
        free(pw_json_dumps(doc));
    }
done:
    json_decref(doc);
    return 0;
}
