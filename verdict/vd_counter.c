/* vd_counter.c -- see vd_counter.h. */
#include "vd_counter.h"

#include <stdio.h>

#include "vd_adaptive.h"

int
vd_counter_compare(const double *a, size_t na, const double *b, size_t nb,
                   double parity, vd_verdict_t *out, char *err,
                   size_t errlen)
{
    vd_params_t p;
    vd_params_default(&p);
    if (parity > 0)
        p.parity = parity;
    p.floor_us = 0;
    p.floor_is_default = false;
    return vd_compare(a, na, b, nb, &p, out, err, errlen);
}

int
vd_counter_text(char *buf, size_t len, const char *counter,
                vd_outcome_t wall, const vd_verdict_t *cv)
{
    double pct = (cv->ratio - 1.0) * 100.0;
    /* "+0.0 %" rather than "-0.0 %" for a change that rounds away. */
    if (pct > -0.05 && pct < 0.05)
        pct = 0.0;
    return snprintf(buf, len, "wall time %s; %s %+.1f %% (%s, %s)",
                    vd_outcome_name(wall), counter, pct,
                    vd_outcome_name(cv->outcome),
                    vd_adaptive_decisive(cv) ? "decisive" : "not decisive");
}
