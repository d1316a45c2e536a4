/* vd_adaptive.c -- see vd_adaptive.h and docs/verdict.md "Adaptive
 * runs". */
#include "vd_adaptive.h"

#include <math.h>

#include "vd_name.h"

unsigned
vd_adaptive_next(unsigned taken, unsigned max_runs)
{
    unsigned next;
    if (taken >= max_runs)
        return max_runs;
    if (taken < VD_ADAPTIVE_FIRST)
        next = VD_ADAPTIVE_FIRST;
    else {
        unsigned step = taken / 2 > VD_ADAPTIVE_STEP_MIN
                        ? taken / 2 : VD_ADAPTIVE_STEP_MIN;
        next = taken > max_runs - step ? max_runs : taken + step;
    }
    return next > max_runs ? max_runs : next;
}

/* An arm's relative spread as an IQR, at least the floor's share. */
static double
s_spread(const vd_summary_t *s, double floor_us)
{
    double r = s->iqr / s->median;
    double f = VD_ADAPTIVE_FLOOR_IQR * floor_us / s->median;
    return r > f ? r : f;
}

double
vd_adaptive_margin(const vd_verdict_t *v)
{
    size_t n = v->a.n < v->b.n ? v->a.n : v->b.n;
    if (n == 0)
        return INFINITY;
    double ra = s_spread(&v->a, v->floor_us);
    double rb = s_spread(&v->b, v->floor_us);
    return VD_ADAPTIVE_Z * sqrt(0.8630 * (ra * ra + rb * rb) / (double)n);
}

/* Where log(r) sits against the edge log(1 + t) with margin m: +1 out
 * upwards, -1 out downwards, 0 inside, all by m; 2 within m of an edge. */
static int
s_side(double r, double t, double m)
{
    double x = log(r), edge = log1p(t);
    if (x > edge + m)
        return 1;
    if (x < -edge - m)
        return -1;
    if (fabs(x) < edge - m)
        return 0;
    return 2;
}

bool
vd_adaptive_decisive(const vd_verdict_t *v)
{
    double m = vd_adaptive_margin(v);
    if (!isfinite(m))
        return false;
    int s = s_side(v->ratio, v->tolerance, m);
    int b = s_side(v->best_ratio, v->best_tolerance, m);
    return s != 2 && s == b;
}

static const char *const s_names[VD_STOP_COUNT] = {
    "more", "decisive", "cap" };

VD_NAME_FN(vd_stop_name, vd_stop_t, s_names, VD_STOP_COUNT)
