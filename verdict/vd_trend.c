/* vd_trend.c -- staircases of small changes folded into one trend; see
 * vd_trend.h. */
#include "vd_trend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether ch[k] may follow ch[k - 1] in one staircase. */
static bool
s_continues(const vd_change_t *ch, size_t k)
{
    bool up = ch[k].magnitude > 1.0, prev_up = ch[k - 1].magnitude > 1.0;
    return up == prev_up && ch[k].index > ch[k - 1].index &&
           ch[k].index - ch[k - 1].index <= VD_TREND_MAX_GAP &&
           fabs(ch[k].magnitude - 1.0) <= VD_TREND_MAX_STEP;
}

/* Least-squares slope of ln(median) over x[a..b]: the rate a point. */
static double
s_rate(const vd_point_t *x, size_t a, size_t b)
{
    double n = (double)(b - a + 1), si = 0, sy = 0, sii = 0, siy = 0;
    if (b <= a)
        return 0.0;
    for (size_t i = a; i <= b; i++) {
        double t = (double)(i - a), y = log(x[i].median);
        si += t;
        sy += y;
        sii += t * t;
        siy += t * y;
    }
    double den = n * sii - si * si;
    return den > 0.0 ? exp((n * siy - si * sy) / den) - 1.0 : 0.0;
}

/* The rule of x's medians in [c, d) against those in [a, b). */
static int
s_outcome(const vd_point_t *x, size_t a, size_t b, size_t c, size_t d,
          const vd_params_t *rule, vd_trend_t *t, char *err, size_t errlen)
{
    size_t nb = b - a, na = d - c;
    double *v = malloc((nb + na + 4) * sizeof *v);
    vd_verdict_t verdict;
    char why[192];
    if (!v) {
        snprintf(err, errlen, "trend: out of memory");
        return VD_ERR;
    }
    for (size_t i = 0; i < nb; i++)
        v[i] = x[a + i].median;
    for (size_t i = 0; i < na; i++)
        v[nb + 2 + i] = x[c + i].median;
    /* A one-point side as that point twice: one run, no spread. */
    if (nb == 1)
        v[nb++] = v[0];
    if (na == 1)
        v[nb + 2 + na++] = v[nb + 2];
    int rc = vd_compare(v + nb + 2, na, v, nb, rule, &verdict, why,
                        sizeof why);
    free(v);
    if (rc != VD_OK) {
        snprintf(err, errlen, "trend: %s", why);
        return VD_ERR;
    }
    t->outcome = verdict.outcome;
    t->within_noise = verdict.outcome == VD_PARITY;
    return VD_OK;
}

int
vd_trend_find(const vd_point_t *x, size_t n, const vd_change_t *ch,
              size_t nch, const vd_params_t *rule, vd_trend_t *out,
              size_t max_out, size_t *n_out, char *err, size_t errlen)
{
    vd_params_t defaults;
    *n_out = 0;
    if (!rule) {
        vd_params_default(&defaults);
        rule = &defaults;
    }
    for (size_t k = 0; k < nch; k++)
        if (ch[k].index < 1 || ch[k].index >= n) {
            snprintf(err, errlen, "trend: change %zu at point %zu of %zu", k,
                     ch[k].index, n);
            return VD_ERR;
        }
    size_t k = 0;
    while (k < nch) {
        size_t last = k;
        if (fabs(ch[k].magnitude - 1.0) <= VD_TREND_MAX_STEP)
            while (last + 1 < nch && s_continues(ch, last + 1))
                last++;
        if (last - k + 1 >= VD_TREND_MIN_STEPS && *n_out < max_out) {
            vd_trend_t *t = &out[(*n_out)++];
            memset(t, 0, sizeof *t);
            t->first = k;
            t->last = last;
            t->start = ch[k].index;
            t->end = ch[last].index;
            t->before = ch[k].before;
            t->now = ch[last].after;
            t->total = t->now / t->before;
            t->per_point = s_rate(x, t->start, t->end);
            size_t a = k > 0 ? ch[k - 1].index : 0;
            size_t d = last + 1 < nch ? ch[last + 1].index : n;
            if (s_outcome(x, a, t->start, t->end, d, rule, t, err,
                          errlen) != VD_OK) {
                *n_out = 0;
                return VD_ERR;
            }
        }
        k = last + 1;
    }
    return VD_OK;
}
