/* vd_otava.c -- Apache Otava's compute_change_points; see vd_otava.h.
 *
 * Where Otava's numpy code has an order of its own (argmax over the
 * whole q-hat matrix, Python's max and min keeping the first of equal
 * keys, the points judged again after a drop), this follows it, so that
 * the indexes are Otava's on its own published series (tests/cli
 * test_changes.py pins them). */
#include "vd_otava.h"

#include "vd_change.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* TTestSignificanceTester.compare: x[a..c) against x[c..b). */
static void
s_compare(const double *x, size_t a, size_t c, size_t b, vd_otava_cp_t *cp)
{
    size_t n1 = c - a, n2 = b - c;
    vd_change_split_t sp;
    vd_change_split(x, a, c, b, &sp);
    double m1 = sp.mean1, m2 = sp.mean2;
    double v1 = n1 >= 2 ? sp.ss1 / (double)n1 : 0.0;   /* np.std: ddof 0 */
    double v2 = n2 >= 2 ? sp.ss2 / (double)n2 : 0.0;
    cp->index = c;
    cp->mean_before = m1;
    cp->mean_after = m2;
    cp->std_before = sqrt(v1);
    cp->std_after = sqrt(v2);
    if (n1 + n2 <= 2) {
        cp->p_value = 1.0;
        return;
    }
    /* scipy's ttest_ind_from_stats, equal variances: the deviations it
     * is given are the population ones. */
    double df = (double)(n1 + n2 - 2);
    double svar = ((double)(n1 - 1) * v1 + (double)(n2 - 1) * v2) / df;
    double denom = sqrt(svar * (1.0 / (double)n1 + 1.0 / (double)n2));
    cp->p_value = vd_change_student_p((m1 - m2) / denom, df);
}

/* Relative change of the means, the larger of both directions (0 where
 * a mean is 0): TTestStats.change_magnitude. */
static double
s_magnitude(const vd_otava_cp_t *cp)
{
    double f = cp->mean_before == 0.0 ? 0.0
               : cp->mean_after / cp->mean_before - 1.0;
    double b = cp->mean_after == 0.0 ? 0.0
               : cp->mean_before / cp->mean_after - 1.0;
    return fabs(f) > fabs(b) ? fabs(f) : fabs(b);
}

/* ---- one window: ChangePointDetector.get_change_points ---------------- */

typedef struct {
    const double *x;     /* the window */
    size_t n;
    double *pre;         /* n x (n + 1): row j, sum_{i in [s, t)} |x_i - x_j| */
    size_t *cps;         /* change indexes in the window, sorted */
    size_t ncp;
} s_win_t;

/* PairDistanceCalculator.get_candidate_change_point on x[s..e), e - s
 * >= 2: numpy's argmax over the (e-1-s) x (e-1-s) matrix of q-hat(tau,
 * kappa), row tau = s+1+i, column kappa = s+2+j, whose entries below the
 * diagonal (kappa <= tau) are 0; the first maximum in row order. */
static void
s_candidate(s_win_t *w, size_t s, size_t e, size_t *tau_out, double *q_out)
{
    const double *x = w->x;
    size_t stride = w->n + 1, dim = e - 1 - s;
    vd_change_prefix(x, s, e, w->pre, stride);
    double best = 0.0, wl = 0.0;
    size_t best_i = 0, best_j = 0;
    bool have = false;
    for (size_t i = 0; i < dim; i++) {
        size_t tau = s + 1 + i;
        const double *prev = w->pre + (tau - 1 - s) * stride;
        wl += prev[tau - 1 - s];   /* pairs within [s, tau) */
        double n = (double)(tau - s), cross = 0.0, wr = 0.0;
        for (size_t j = 0; j < dim; j++) {
            double q = 0.0;
            size_t kappa = s + 2 + j;
            if (kappa > tau) {
                const double *row = w->pre + (kappa - 1 - s) * stride;
                cross += row[tau - s];
                wr += row[kappa - 1 - s] - row[tau - s];
                double m = (double)(kappa - tau);
                q = 2.0 / (n + m) * cross;
                if (n > 1.0)
                    q -= 2.0 * m / ((n + m) * (n - 1.0)) * wl;
                if (m > 1.0)
                    q -= 2.0 * n / ((n + m) * (m - 1.0)) * wr;
            }
            if (!have || q > best) {
                best = q;
                best_i = i;
                best_j = j;
                have = true;
            }
        }
    }
    (void)best_j;
    *tau_out = s + 1 + best_i;
    *q_out = best;
}

static void
s_win_insert(s_win_t *w, size_t tau)
{
    size_t k = 0;
    while (k < w->ncp && w->cps[k] < tau)
        k++;
    memmove(w->cps + k + 1, w->cps + k, (w->ncp - k) * sizeof *w->cps);
    w->cps[k] = tau;
    w->ncp++;
}

/* The change points of one window, at level p, into w->cps. */
static void
s_window(s_win_t *w, double p)
{
    w->ncp = 0;
    for (;;) {
        size_t best_tau = 0, lo = 0, hi = 0;
        double best_q = 0.0;
        bool have = false;
        for (size_t k = 0; k <= w->ncp; k++) {
            size_t s = k == 0 ? 0 : w->cps[k - 1];
            size_t e = k == w->ncp ? w->n : w->cps[k];
            size_t tau;
            double q;
            if (e - s < 2)
                continue;
            s_candidate(w, s, e, &tau, &q);
            if (!have || q > best_q) {   /* Python's max: the first */
                have = true;
                best_q = q;
                best_tau = tau;
                lo = s;
                hi = e;
            }
        }
        if (!have)
            return;
        vd_otava_cp_t cp;
        s_compare(w->x, lo, best_tau, hi, &cp);
        if (!(cp.p_value <= p))   /* NaN is not significant either */
            return;
        s_win_insert(w, best_tau);
    }
}

/* ---- the whole series ------------------------------------------------- */

/* Judge point k of cps[0..n) against its neighbours: the merge branch
 * of TTestSignificanceTester.change_point. */
static void
s_judge(const double *x, size_t len, const size_t *cps, size_t n, size_t k,
        vd_otava_cp_t *out)
{
    size_t a = k == 0 ? 0 : cps[k - 1], b = k + 1 == n ? len : cps[k + 1];
    s_compare(x, a, cps[k], b, out);
}

static bool
s_has(const size_t *cps, size_t n, size_t idx)
{
    for (size_t k = 0; k < n; k++)
        if (cps[k] == idx)
            return true;
    return false;
}

static int
s_cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* split(): the union of every sliding window's points, sorted. */
static size_t
s_split(const double *x, size_t len, size_t window_len, double p,
        s_win_t *w, size_t *all)
{
    size_t start = 0, step = window_len / 2, nall = 0;
    while (start < len) {
        size_t end = start + window_len < len ? start + window_len : len;
        w->x = x + start;
        w->n = end - start;
        s_window(w, p);
        size_t last = w->ncp ? start + w->cps[w->ncp - 1] : 0;
        for (size_t k = 0; k < w->ncp; k++)
            if (!s_has(all, nall, start + w->cps[k]))
                all[nall++] = start + w->cps[k];
        start = last > start + step ? last : start + step;
    }
    qsort(all, nall, sizeof *all, s_cmp_size);
    return nall;
}

/* merge(): drop the weakest until every point is significant and
 * larger than min_magnitude; cp[k] stays the judgement of all[k]. */
static size_t
s_merge(const double *x, size_t len, size_t *all, vd_otava_cp_t *cp,
        size_t n, double max_p, double min_magnitude)
{
    while (n > 0) {
        size_t weak = 0;
        for (size_t k = 1; k < n; k++)   /* max by p: the first */
            if (cp[k].p_value > cp[weak].p_value)
                weak = k;
        if (cp[weak].p_value < max_p) {
            weak = 0;
            for (size_t k = 1; k < n; k++)   /* min by magnitude */
                if (s_magnitude(&cp[k]) < s_magnitude(&cp[weak]))
                    weak = k;
            if (s_magnitude(&cp[weak]) > min_magnitude)
                return n;
        }
        memmove(all + weak, all + weak + 1, (n - weak - 1) * sizeof *all);
        memmove(cp + weak, cp + weak + 1, (n - weak - 1) * sizeof *cp);
        n--;
        for (size_t k = weak; k < weak + 2 && k < n; k++)
            s_judge(x, len, all, n, k, &cp[k]);
    }
    return 0;
}

int
vd_otava_find(const double *x, size_t n, size_t window_len, double max_p,
              double min_magnitude, vd_otava_cp_t *out, size_t max_out,
              size_t *n_out, char *err, size_t errlen)
{
    s_win_t w = { 0 };
    size_t *all = NULL;
    vd_otava_cp_t *cp = NULL;
    int rc = -1;

    *n_out = 0;
    if (!x && n > 0) {
        vd_errf(err, errlen, "otava: no series");
        return -1;
    }
    if (window_len < 2 || window_len > VD_OTAVA_MAX_WINDOW) {
        vd_errf(err, errlen, "otava: window %zu is outside 2..%d", window_len,
              VD_OTAVA_MAX_WINDOW);
        return -1;
    }
    if (!(max_p > 0.0 && max_p <= 1.0) || !(min_magnitude >= 0.0) ||
        !isfinite(min_magnitude)) {
        vd_errf(err, errlen, "otava: p-value %g or magnitude %g out of range",
              max_p, min_magnitude);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) {
            vd_errf(err, errlen, "otava: point %zu is not a finite number", i);
            return -1;
        }
    if (n < 2)
        return 0;
    size_t wn = window_len < n ? window_len : n;
    double first = max_p < 0.05 ? max_p * 10.0
                   : max_p < 0.5 ? max_p * 2.0 : max_p;
    w.pre = malloc(wn * (wn + 1) * sizeof *w.pre);
    w.cps = malloc(wn * sizeof *w.cps);
    all = malloc(n * sizeof *all);
    cp = malloc(n * sizeof *cp);
    if (!w.pre || !w.cps || !all || !cp) {
        vd_errf(err, errlen, "otava: out of memory for %zu points", n);
        goto done;
    }
    size_t nall = s_split(x, n, window_len, first, &w, all);
    for (size_t k = 0; k < nall; k++)
        s_judge(x, n, all, nall, k, &cp[k]);
    nall = s_merge(x, n, all, cp, nall, max_p, min_magnitude);
    for (size_t k = 0; k < nall && k < max_out; k++)
        out[k] = cp[k];
    *n_out = nall;
    rc = 0;
done:
    free(w.pre);
    free(w.cps);
    free(all);
    free(cp);
    return rc;
}
