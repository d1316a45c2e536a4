/* co_selftest.c -- see co_selftest.h. */
#include "co_selftest.h"

#include <stdio.h>

json_t *
co_selftest_json(const char *text)
{
    json_t *o = text && *text ? json_loads(text, 0, NULL) : NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        return json_null();
    }
    json_int_t trials = json_integer_value(json_object_get(o, "trials"));
    json_int_t bad = json_integer_value(json_object_get(o,
                                                        "false_verdicts"));
    json_object_set_new(o, "rate", trials > 0 ?
                        json_real((double)bad / (double)trials) :
                        json_null());
    /* percentile_cont over no rows is null; keep it so. */
    if (!json_object_get(o, "floor_us"))
        json_object_set_new(o, "floor_us", json_null());
    return o;
}

int
co_selftest_warn(json_t *warnings, const json_t *selftest)
{
    const json_t *rate = json_object_get(selftest, "rate");
    if (!json_is_number(rate) ||
        json_number_value(rate) <= PW_SELFTEST_WARN_RATE)
        return 0;
    char msg[256];
    json_int_t bad = json_integer_value(json_object_get(selftest,
                                                        "false_verdicts"));
    snprintf(msg, sizeof msg, "its last self-test gave %" JSON_INTEGER_FORMAT
             " false verdict%s in %" JSON_INTEGER_FORMAT " A/A trials "
             "(%.1f %%, above %.0f %%): its verdicts call noise a "
             "difference more often than the rule is built to", bad,
             bad == 1 ? "" : "s",
             json_integer_value(json_object_get(selftest, "trials")),
             100.0 * json_number_value(rate), 100.0 * PW_SELFTEST_WARN_RATE);
    return json_array_append_new(warnings, json_pack("{s:s,s:s}", "code",
                                 "selftest", "message", msg));
}
