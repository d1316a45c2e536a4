/* test_co_selftest.c -- co_selftest: the "selftest" object from the
 * query's text (the rate computed, null without trials, none for no text
 * or text that is not JSON) and the host warning above 2 %. */
#include <string.h>

#include "co_selftest.h"
#include "tap.h"

int
main(void)
{
    json_t *st = co_selftest_json("{\"job\": \"j\", \"at_us\": 5, "
                                  "\"trials\": 50, \"false_verdicts\": 3, "
                                  "\"floor_us\": 300}");
    ok(json_is_object(st) && json_real_value(json_object_get(st, "rate"))
       == 0.06, "the rate: 3 of 50 is 0.06");
    json_t *w = json_array();
    ok(co_selftest_warn(w, st) == 0 && json_array_size(w) == 1
       && strcmp(json_string_value(json_object_get(json_array_get(w, 0),
                                                   "code")), "selftest")
       == 0, "above 2 %%: one warning of code selftest (%s)",
       json_string_value(json_object_get(json_array_get(w, 0), "message")));
    json_decref(st);
    st = co_selftest_json("{\"job\": \"j\", \"at_us\": 5, \"trials\": 50, "
                          "\"false_verdicts\": 1, \"floor_us\": 300}");
    ok(co_selftest_warn(w, st) == 0 && json_array_size(w) == 1,
       "2 %%: no warning");
    json_decref(st);
    st = co_selftest_json("{\"job\": \"j\", \"at_us\": 5, \"trials\": 0, "
                          "\"false_verdicts\": 0}");
    ok(json_is_null(json_object_get(st, "rate")) && co_selftest_warn(w, st)
       == 0 && json_array_size(w) == 1, "no trials: rate null, no warning");
    json_decref(st);
    st = co_selftest_json(NULL);
    ok(json_is_null(st), "no text: null");
    json_decref(st);
    st = co_selftest_json("");
    ok(json_is_null(st), "empty text: null");
    json_decref(st);
    st = co_selftest_json("not json");
    ok(json_is_null(st), "text that is not JSON: null");
    json_decref(st);
    json_decref(w);
    return tap_done();
}
