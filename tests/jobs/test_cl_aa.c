/* test_cl_aa.c -- a host's last A/A self-test in words (cl_aa): counts
 * in singular and plural, the rate and the warning above 2 %, no
 * self-test, one that gave no verdict, and its date in UTC. */
#include <string.h>

#include "cl_aa.h"
#include "tap.h"

int
main(void)
{
    char buf[256];
    json_t *st = json_pack("{s:s,s:I,s:i,s:i,s:f}", "job", "j",
                           "at_us", (json_int_t)1764762720000000LL,
                           "trials", 50, "false_verdicts", 0, "rate", 0.0);
    cl_aa_text(buf, sizeof buf, st);
    ok(strcmp(buf, "0 false verdicts in 50 A/A trials") == 0, "%s", buf);
    ok(!cl_aa_warns(st), "0 %%: no warning");
    cl_aa_when(buf, sizeof buf, st);
    ok(strcmp(buf, "2025-12-03 11:52Z") == 0, "its date in UTC: %s", buf);
    json_object_set_new(st, "trials", json_integer(5));
    json_object_set_new(st, "false_verdicts", json_integer(1));
    json_object_set_new(st, "rate", json_real(0.2));
    cl_aa_text(buf, sizeof buf, st);
    ok(strcmp(buf, "1 false verdict in 5 A/A trials (20.0 %, above 2 %)")
       == 0, "%s", buf);
    ok(cl_aa_warns(st), "20 %%: a warning");
    json_object_set_new(st, "rate", json_real(0.02));
    ok(!cl_aa_warns(st), "exactly 2 %%: no warning");
    json_decref(st);
    cl_aa_text(buf, sizeof buf, json_null());
    ok(strcmp(buf, "no self-test yet") == 0, "%s", buf);
    cl_aa_when(buf, sizeof buf, json_null());
    ok(buf[0] == '\0', "no date without one");
    st = json_pack("{s:s,s:I,s:i,s:i,s:n}", "job", "j", "at_us",
                   (json_int_t)1764762720000000LL, "trials", 0,
                   "false_verdicts", 0, "rate");
    cl_aa_text(buf, sizeof buf, st);
    ok(strcmp(buf, "its last self-test gave no verdict") == 0, "%s", buf);
    json_decref(st);
    return tap_done();
}
