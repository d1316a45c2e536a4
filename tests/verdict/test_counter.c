/* test_counter.c -- the instructions comparison beside a verdict
 * (vd_counter.h): the spec's rule with floor 0, its decisiveness, and the
 * line it writes. */
#include "vd_adaptive.h"
#include "vd_counter.h"
#include "../tap.h"

#include <stdio.h>
#include <string.h>

int
main(void)
{
    char err[256], text[VD_COUNTER_TEXT_MAX];
    vd_verdict_t v;

    /* 10 runs of 1.000 M instructions, give or take 0.01 %, against
     * 10 runs of 0.970 M: +3.1 %, inside parity 0.04 (so parity), but
     * the spread is so small that it is decisive. */
    double a[10], b[10];
    for (int i = 0; i < 10; i++) {
        a[i] = 1000000.0 + (double)(i % 5) * 20.0;
        b[i] = 970000.0 + (double)(i % 3) * 20.0;
    }
    ok(vd_counter_compare(a, 10, b, 10, 0.04, &v, err, sizeof err) == VD_OK,
       "compare counts");
    ok(v.floor_us == 0.0 && v.parity == 0.04,
       "floor 0, the wall-time verdict's parity (%g, %g)", v.floor_us,
       v.parity);
    ok(v.outcome == VD_PARITY, "3.1 %% more is parity at 0.04 (%s)",
       vd_outcome_name(v.outcome));
    ok(vd_adaptive_decisive(&v), "and decisive: both ratios far inside "
       "their tolerance for that spread");
    vd_counter_text(text, sizeof text, "instructions", VD_PARITY, &v);
    ok_str(text, "wall time parity; instructions +3.1 % (parity, decisive)",
           "the line beside the verdict");

    /* 20 % fewer instructions in the subject: a decisive win, beside a
     * wall-time loss (the line shows both; the verdict stays the loss). */
    for (int i = 0; i < 10; i++)
        a[i] = 800000.0 + (double)(i % 4) * 30.0;
    ok(vd_counter_compare(a, 10, b, 10, 0.04, &v, err, sizeof err) == VD_OK
       && v.outcome == VD_WIN && vd_adaptive_decisive(&v),
       "20 %% fewer: a decisive win (%s)", vd_outcome_name(v.outcome));
    vd_counter_text(text, sizeof text, "instructions", VD_LOSS, &v);
    ok_str(text, "wall time loss; instructions -17.5 % (win, decisive)",
           "a win on instructions beside a wall-time loss");

    /* Noisy counts near the edge: not decisive. */
    double c[6] = { 100, 140, 100, 140, 100, 140 };
    double d[6] = { 100, 100, 100, 100, 100, 100 };
    ok(vd_counter_compare(c, 6, d, 6, 0, &v, err, sizeof err) == VD_OK &&
       v.parity == VD_DEFAULT_PARITY, "parity <= 0 takes the default");
    vd_counter_text(text, sizeof text, "instructions", VD_PARITY, &v);
    ok(strstr(text, "not decisive)") != NULL, "a wide spread is not "
       "decisive: %s", text);

    /* No change at all prints +0.0 %, never -0.0 %. */
    ok(vd_counter_compare(d, 6, d, 6, 0.04, &v, err, sizeof err) == VD_OK,
       "equal counts");
    vd_counter_text(text, sizeof text, "instructions", VD_WIN, &v);
    ok(strstr(text, "instructions +0.0 % (parity") != NULL, "%s", text);

    /* A count of 0 is not a count: refused as vd_compare refuses it. */
    double z[3] = { 0, 5, 6 };
    ok(vd_counter_compare(z, 3, d, 6, 0.04, &v, err, sizeof err) == VD_ERR
       && err[0], "a zero count is refused: %s", err);
    return tap_done();
}
