/* cl_aa.c -- see cl_aa.h. */
#include "cl_aa.h"

#include <stdio.h>
#include <time.h>

#include "pw_limits.h"

bool
cl_aa_warns(const json_t *st)
{
    const json_t *rate = json_object_get(st, "rate");
    return json_is_number(rate) &&
           json_number_value(rate) > PW_SELFTEST_WARN_RATE;
}

void
cl_aa_text(char *buf, size_t len, const json_t *st)
{
    if (!json_is_object(st)) {
        snprintf(buf, len, "no self-test yet");
        return;
    }
    json_int_t n = json_integer_value(json_object_get(st, "trials"));
    json_int_t bad = json_integer_value(json_object_get(st,
                                                        "false_verdicts"));
    if (n <= 0) {
        snprintf(buf, len, "its last self-test gave no verdict");
        return;
    }
    int used = snprintf(buf, len, "%" JSON_INTEGER_FORMAT " false verdict%s "
                        "in %" JSON_INTEGER_FORMAT " A/A trial%s", bad,
                        bad == 1 ? "" : "s", n, n == 1 ? "" : "s");
    if (cl_aa_warns(st) && used > 0 && (size_t)used < len)
        snprintf(buf + used, len - (size_t)used, " (%.1f %%, above %.0f %%)",
                 100.0 * json_number_value(json_object_get(st, "rate")),
                 100.0 * PW_SELFTEST_WARN_RATE);
}

void
cl_aa_when(char *buf, size_t len, const json_t *st)
{
    json_int_t at = json_integer_value(json_object_get(st, "at_us"));
    time_t t = (time_t)(at / 1000000);
    struct tm tm;
    if (len == 0)
        return;
    if (at <= 0 || !gmtime_r(&t, &tm) ||
        strftime(buf, len, "%Y-%m-%d %H:%MZ", &tm) == 0)
        buf[0] = 0;
}
