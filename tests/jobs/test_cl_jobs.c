/* test_cl_jobs.c -- the table of `parity jobs` (cl_jobs_print) on a canned
 * answer, compared whole with tests/expected/jobs.out: an active job
 * with host states counted, an ended one with tags and a label, one with
 * no host; and the line an empty list prints, with and without
 * --active. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "cl_jobs.h"
#include "tap.h"
#include "expected.h"

int
main(void)
{
    json_error_t je;
    json_t *body = json_loads(
        "{\"jobs\": ["
        " {\"job\": \"a1b2c3d4e5f6\", \"suite\": \"example\", \"state\": "
        "  \"active\", \"label\": \"\", \"tags\": {}, \"created_at_us\": "
        "  1765000000000000, \"ended_at_us\": null, \"hosts\": {\"done\": 1, "
        "  \"running\": 2}},"
        " {\"job\": \"0123456789ab\", \"suite\": \"db\", \"state\": "
        "  \"ended\", \"label\": \"nightly\", \"tags\": {\"branch\": \"main\","
        "  \"commit\": \"c42\"}, \"created_at_us\": 1764913600000000, "
        "  \"ended_at_us\": 1764914000000000, \"hosts\": {\"done\": 3}},"
        " {\"job\": \"ffffffffffff\", \"suite\": \"lonely\", \"state\": "
        "  \"ended\", \"label\": \"\", \"tags\": {}, \"created_at_us\": "
        "  1764900000000000, \"ended_at_us\": 1764900000000001, \"hosts\": {}}"
        "]}", 0, &je);
    ok(body != NULL, "canned answer (%s)", body ? "" : je.text);
    char *t = CAPTURE(f, cl_jobs_print(f, body, false));
    ok(expected_match("jobs", t), "the jobs table, whole");
    free(t);
    json_decref(body);

    json_t *none = json_pack("{s:[]}", "jobs");
    t = CAPTURE(f, cl_jobs_print(f, none, true));
    ok(t && strstr(t, "job  suite  state  created  hosts  tags  label\n")
       == t && strstr(t, "\n(no active job)\n"),
       "--active with none: the header and (no active job)");
    free(t);
    t = CAPTURE(f, cl_jobs_print(f, none, false));
    ok(t && strstr(t, "\n(no job yet)\n"), "none at all: (no job yet)");
    free(t);
    json_decref(none);
    return tap_done();
}
