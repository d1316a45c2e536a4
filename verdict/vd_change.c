/* vd_change.c -- change points in a series of runs; see vd_change.h and
 * docs/regressions.md, which documents every parameter.
 *
 * Three passes over the window (the last params.window points):
 *
 *  1. split: E-Divisive means (Matteson and James 2014). Each interval
 *     between change points found so far offers the split tau (with an
 *     end kappa) that maximises the energy divergence q-hat of the runs'
 *     medians; the best offer over all intervals is tested with Student's
 *     t-test between the two sides bounded by its neighbours, and the
 *     loop stops at the first offer that is not significant. As in Apache
 *     Otava, this pass uses a looser p-value (10x) to find "weak" points.
 *     With params.robust a bump [tau, kappa) is also tried on its own.
 *  2. merge: the weakest point (highest p-value, recomputed with its
 *     final neighbours) is dropped while any is above max_p_value, then
 *     the smallest one that fails Parity's filters (magnitude, floor,
 *     robustness), recomputing neighbours after every removal.
 *  3. the verdict rule on what is left: vd_compare of the medians after
 *     against the medians before.
 *
 * Everything is deterministic: no random numbers (the t-test needs no
 * permutations), ties go to the earliest index. */
#include "vd_change.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parity's defaults; docs/regressions.md says why each is what it is
 * (measured with tests/bench/changepoints.sh). */
#define S_PARITY_MAX_P       0.0001
#define S_PARITY_WINDOW      200
#define S_PARITY_MIN_REL     0.02
#define S_PARITY_MIN_SEGMENT 3
/* Apache Otava's: analysis.compute_change_points(window_len=50,
 * max_pvalue=0.001, min_magnitude=0). Its q-hat admits one-point sides. */
#define S_OTAVA_MAX_P        0.001
#define S_OTAVA_WINDOW       50
#define S_OTAVA_MIN_SEGMENT  1
/* The minimums' t-test at a split the medians chose: one place, no
 * search over splits, so an ordinary 1 % level means what it says. */
#define S_CONFIRM_P          0.01


void
vd_change_params_default(vd_change_params_t *p)
{
    memset(p, 0, sizeof *p);
    p->max_p_value = S_PARITY_MAX_P;
    p->window = S_PARITY_WINDOW;
    p->min_relative = S_PARITY_MIN_REL;
    p->floor_us = VD_DEFAULT_FLOOR_US;
    vd_params_default(&p->rule);
    p->min_segment = S_PARITY_MIN_SEGMENT;
    p->robust = true;
}

void
vd_change_params_otava(vd_change_params_t *p)
{
    memset(p, 0, sizeof *p);
    p->max_p_value = S_OTAVA_MAX_P;
    p->window = S_OTAVA_WINDOW;
    p->min_relative = 0.0;
    p->floor_us = 0.0;
    vd_params_default(&p->rule);
    p->min_segment = S_OTAVA_MIN_SEGMENT;
    p->robust = false;
}

/* ---- Student's t-test ------------------------------------------------ */

/* Continued fraction of the regularized incomplete beta function
 * (modified Lentz); converges fast for x < (a + 1) / (a + b + 2). */
static double
s_beta_cf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0), h;

    if (fabs(d) < tiny)
        d = tiny;
    d = 1.0 / d;
    h = d;
    for (int m = 1; m <= 300; m++) {
        double m2 = 2.0 * m;
        double num = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        for (int half = 0; half < 2; half++) {
            d = 1.0 + num * d;
            if (fabs(d) < tiny)
                d = tiny;
            c = 1.0 + num / c;
            if (fabs(c) < tiny)
                c = tiny;
            d = 1.0 / d;
            h *= d * c;
            if (half == 0)
                num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        }
        if (fabs(d * c - 1.0) < 1e-15)
            break;
    }
    return h;
}

/* I_x(a, b). lgamma_r, not lgamma: lgamma writes the global signgam. */
static double
s_beta_inc(double a, double b, double x)
{
    int sign;
    if (x <= 0.0)
        return 0.0;
    if (x >= 1.0)
        return 1.0;
    double lfront = lgamma_r(a + b, &sign) - lgamma_r(a, &sign) -
                    lgamma_r(b, &sign) + a * log(x) + b * log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0))
        return exp(lfront) * s_beta_cf(a, b, x) / a;
    return 1.0 - exp(lfront) * s_beta_cf(b, a, 1.0 - x) / b;
}

double
vd_change_student_p(double t, double df)
{
    if (isnan(t) || !(df > 0.0))
        return NAN;
    return s_beta_inc(df / 2.0, 0.5, df / (df + t * t));
}

void
vd_change_split(const double *x, size_t a, size_t c, size_t b,
                vd_change_split_t *out)
{
    double m[2] = { 0.0, 0.0 }, ss[2] = { 0.0, 0.0 };
    const size_t lo[2] = { a, c }, hi[2] = { c, b };
    for (int k = 0; k < 2; k++) {
        for (size_t i = lo[k]; i < hi[k]; i++)
            m[k] += x[i];
        m[k] /= (double)(hi[k] - lo[k]);
        for (size_t i = lo[k]; i < hi[k]; i++)
            ss[k] += (x[i] - m[k]) * (x[i] - m[k]);
    }
    *out = (vd_change_split_t){ m[0], m[1], ss[0], ss[1] };
}

void
vd_change_prefix(const double *x, size_t s, size_t e, double *pre,
                 size_t stride)
{
    for (size_t j = s; j < e; j++) {
        double *row = pre + (j - s) * stride, acc = 0.0;
        row[0] = 0.0;
        for (size_t t = s; t < j; t++) {
            acc += fabs(x[t] - x[j]);
            row[t - s + 1] = acc;
        }
    }
}

/* Two-sided p-value of Student's t-test (pooled variance, as Otava's
 * scipy ttest_ind_from_stats) between v[a..c) and v[c..b). Otava feeds it
 * numpy's ddof=0 deviations; here they are the unbiased ones. *diff gets
 * mean(right) - mean(left). */
static double
s_ttest(const double *v, size_t a, size_t c, size_t b, double *diff)
{
    size_t n1 = c - a, n2 = b - c;
    vd_change_split_t sp;
    vd_change_split(v, a, c, b, &sp);
    double m1 = sp.mean1, m2 = sp.mean2, ss = sp.ss1 + sp.ss2;
    *diff = m2 - m1;
    if (n1 + n2 < 3)
        return 1.0;
    double df = (double)(n1 + n2 - 2);
    double se2 = ss / df * (1.0 / (double)n1 + 1.0 / (double)n2);
    if (!(se2 > 0.0))
        return m1 == m2 ? 1.0 : 0.0;
    return vd_change_student_p((m2 - m1) / sqrt(se2), df);
}

/* ---- E-Divisive ------------------------------------------------------ */

typedef struct {
    const vd_change_params_t *p;
    size_t w;          /* points in the window */
    double *med;       /* w medians */
    double *mins;      /* w minimums, NaN where unknown */
    double *pre;       /* w x (w + 1) prefix sums of distances */
    double *scratch;   /* 2 x w, for summaries and the verdict */
    size_t *cps;       /* change indexes (first point after), sorted */
    size_t ncp;
    /* Per interval i ([cps[i-1], cps[i]), the first from 0, the last to
     * w): its best split and q-hat, has_cand false when too short. */
    size_t *cand_tau;
    size_t *cand_kappa;
    double *cand_q;
    bool *has_cand;
} s_work_t;

/* The split of med[s..e) that maximises q-hat over tau and the end
 * kappa, both sides at least min_segment. O((e - s)^2): row j of pre
 * holds sum_{i in [s, t)} |med[i] - med[j]| at t - s, for t <= j, from
 * which the cross and within sums follow in O(1) per (tau, kappa). */
static bool
s_candidate(s_work_t *wk, size_t s, size_t e, size_t *tau_out,
            size_t *kappa_out, double *q_out)
{
    const double *med = wk->med;
    size_t ms = wk->p->min_segment, stride = wk->w + 1;
    double best = -INFINITY, wl = 0.0;
    size_t best_tau = 0, best_kappa = 0;

    if (e - s < 2 * ms)
        return false;
    vd_change_prefix(med, s, e, wk->pre, stride);
    for (size_t tau = s + 1; tau + ms <= e; tau++) {
        const double *prev = wk->pre + (tau - 1 - s) * stride;
        wl += prev[tau - 1 - s];     /* within-left pairs ending at tau-1 */
        double n = (double)(tau - s), cross = 0.0, wr = 0.0;
        if (tau - s < ms)
            continue;
        for (size_t kappa = tau + 1; kappa <= e; kappa++) {
            const double *row = wk->pre + (kappa - 1 - s) * stride;
            cross += row[tau - s];
            wr += row[kappa - 1 - s] - row[tau - s];
            if (kappa - tau < ms)
                continue;
            double m = (double)(kappa - tau);
            double q = 2.0 / (n + m) * cross;
            if (n > 1.0)
                q -= 2.0 * m / ((n + m) * (n - 1.0)) * wl;
            if (m > 1.0)
                q -= 2.0 * n / ((n + m) * (m - 1.0)) * wr;
            if (q > best) {
                best = q;
                best_tau = tau;
                best_kappa = kappa;
            }
        }
    }
    if (best_tau == 0)
        return false;
    *tau_out = best_tau;
    *kappa_out = best_kappa;
    *q_out = best;
    return true;
}

static size_t
s_lo(const s_work_t *wk, size_t i)
{
    return i == 0 ? 0 : wk->cps[i - 1];
}

static size_t
s_hi(const s_work_t *wk, size_t i)
{
    return i == wk->ncp ? wk->w : wk->cps[i];
}

static void
s_offer(s_work_t *wk, size_t i)
{
    wk->has_cand[i] = s_candidate(wk, s_lo(wk, i), s_hi(wk, i),
                                  &wk->cand_tau[i], &wk->cand_kappa[i],
                                  &wk->cand_q[i]);
}

/* Make tau change number i: interval i becomes [lo, tau) and a new one
 * [tau, hi) follows it; both get their offers. */
static void
s_insert(s_work_t *wk, size_t i, size_t tau)
{
    size_t tail = wk->ncp + 1 - i;   /* intervals from i on */

    memmove(wk->cps + i + 1, wk->cps + i, (wk->ncp - i) * sizeof *wk->cps);
    memmove(wk->cand_tau + i + 1, wk->cand_tau + i,
            tail * sizeof *wk->cand_tau);
    memmove(wk->cand_kappa + i + 1, wk->cand_kappa + i,
            tail * sizeof *wk->cand_kappa);
    memmove(wk->cand_q + i + 1, wk->cand_q + i, tail * sizeof *wk->cand_q);
    memmove(wk->has_cand + i + 1, wk->has_cand + i,
            tail * sizeof *wk->has_cand);
    wk->cps[i] = tau;
    wk->ncp++;
    s_offer(wk, i);
    s_offer(wk, i + 1);
}

/* Pass 1: binary segmentation, best q-hat first, until the best offer's
 * t-test p-value is above weak_p.
 *
 * One addition to Otava: q-hat's best split comes with an end kappa, and
 * when [tau, kappa) is a bump that ends before the interval does (a
 * regression fixed 10 runs later), the t-test of [lo, tau) against all
 * of [tau, hi) dilutes it with the runs after the fix and fails. Then the
 * bump itself is tested against the runs before it, and if it passes,
 * both of its edges become candidates; the merge pass judges each of
 * them against its own neighbours at max_p_value like any other. */
static void
s_split(s_work_t *wk, double weak_p)
{
    size_t ms = wk->p->min_segment;

    wk->ncp = 0;
    s_offer(wk, 0);
    for (;;) {
        size_t best = SIZE_MAX, lo, hi, tau, kappa;
        double diff;
        for (size_t i = 0; i <= wk->ncp; i++)
            if (wk->has_cand[i] &&
                (best == SIZE_MAX || wk->cand_q[i] > wk->cand_q[best]))
                best = i;
        if (best == SIZE_MAX)
            return;
        lo = s_lo(wk, best);
        hi = s_hi(wk, best);
        tau = wk->cand_tau[best];
        kappa = wk->cand_kappa[best];
        if (s_ttest(wk->med, lo, tau, hi, &diff) <= weak_p) {
            s_insert(wk, best, tau);
            continue;
        }
        if (!wk->p->robust || hi - kappa < ms ||
            !(s_ttest(wk->med, lo, tau, kappa, &diff) <= weak_p))
            return;
        s_insert(wk, best, tau);
        s_insert(wk, best + 1, kappa);
    }
}

/* ---- Parity's filters ------------------------------------------------ */

/* What one change point looks like with its current neighbours. */
typedef struct {
    double p_value;
    vd_summary_t before, after;   /* of the medians on each side */
    bool passes;                  /* magnitude, floor and robustness */
} s_judged_t;

static bool
s_mins_known(const double *mins, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++)
        if (!(isfinite(mins[i]) && mins[i] > 0.0))
            return false;
    return true;
}

/* The minimums step the same way as the medians: significantly at the
 * split the medians chose (t-test at 1 %), and by at least half as much
 * as the medians, both in means (dmed: mean after - mean before of the
 * medians) and in medians (rel: the step of the medians' medians), and
 * by half min_relative.
 *
 * Timing modes move the medians (the share of slow samples changes) but
 * hardly the minimums: the fast mode is still in nearly every run, only
 * with fewer samples, so its minimum rises by a fraction of the sample
 * noise, ~2 % where the medians jumped 30 %. A real change moves the
 * whole distribution, minimums included. Both measures, because each
 * alone was fooled in the benchmark: a spell in the slow mode shorter
 * than half its side moves the side's mean but not its median; a spell
 * in which a third of the runs had no fast sample at all moves the
 * minimums' mean but not their median. */
static bool
s_mins_agree(const s_work_t *wk, size_t a, size_t c, size_t b, double dmed,
             double rel)
{
    vd_summary_t lo, hi;
    double dmin;

    if (!s_mins_known(wk->mins, a, b))
        return true;   /* ratio series: the medians' filters only */
    if (s_ttest(wk->mins, a, c, b, &dmin) > S_CONFIRM_P ||
        dmin * dmed <= 0.0 || fabs(dmin) < fabs(dmed) / 2.0)
        return false;
    if (vd_summarize(wk->mins + a, c - a, &lo, NULL, 0) != VD_OK ||
        vd_summarize(wk->mins + c, b - c, &hi, NULL, 0) != VD_OK)
        return false;
    double rel_min = hi.median / lo.median - 1.0;
    double need = fabs(rel) / 2.0;
    if (need < wk->p->min_relative / 2.0)
        need = wk->p->min_relative / 2.0;
    return rel_min * rel > 0.0 && fabs(rel_min) >= need;
}

/* Whether a change whose side is as short as min_segment is where the
 * step is. A step with fewer new runs after it than min_segment can only
 * be split min_segment from the end, which puts runs of the old level on
 * the new side: 2 runs after a 10 % step gave a change one run early,
 * "parity (within noise)". So when a side has exactly min_segment points,
 * its point next to the change must be nearer its own side's level (the
 * median of the side without it) than the other side's; if not, the
 * change is not located yet and waits for the next run. Longer sides are
 * not checked: there the split is free to sit where the step is, and a
 * noisy first run must not hide a small step for good. */
static bool
s_located(const s_work_t *wk, size_t a, size_t c, size_t b,
          const s_judged_t *j)
{
    size_t ms = wk->p->min_segment;
    vd_summary_t rest;
    if (ms < 2)
        return true;
    if (b - c == ms && vd_summarize(wk->med + c + 1, b - c - 1, &rest, NULL,
                                    0) == VD_OK &&
        !(fabs(wk->med[c] - rest.median) <
          fabs(wk->med[c] - j->before.median)))
        return false;
    if (c - a == ms && vd_summarize(wk->med + a, c - 1 - a, &rest, NULL,
                                    0) == VD_OK &&
        !(fabs(wk->med[c - 1] - rest.median) <
          fabs(wk->med[c - 1] - j->after.median)))
        return false;
    return true;
}

static int
s_judge(const s_work_t *wk, size_t k, s_judged_t *j)
{
    size_t a = k == 0 ? 0 : wk->cps[k - 1], c = wk->cps[k];
    size_t b = k + 1 == wk->ncp ? wk->w : wk->cps[k + 1];
    const vd_change_params_t *p = wk->p;
    double dmed, diff;

    j->p_value = s_ttest(wk->med, a, c, b, &dmed);
    if (p->robust) {
        /* Also the symmetric test: the longer side cut to the shorter
         * one's length next to the change. A step in the last few runs,
         * too short to be a change yet, otherwise contaminates the side
         * of the change before it, whose p-value rises; the merge drops
         * it, which contaminates the next one, and so on: a cascade
         * that erased a square wave of 6-run steps. */
        size_t len = c - a < b - c ? c - a : b - c;
        if (len >= p->min_segment && (len < c - a || len < b - c)) {
            double local = s_ttest(wk->med, c - len, c, c + len, &diff);
            if (local < j->p_value)
                j->p_value = local;
        }
    }
    if (vd_summarize(wk->med + a, c - a, &j->before, NULL, 0) != VD_OK ||
        vd_summarize(wk->med + c, b - c, &j->after, NULL, 0) != VD_OK)
        return VD_ERR;   /* medians were checked: cannot happen */
    double before = j->before.median, after = j->after.median;
    double rel = after / before - 1.0;
    j->passes = fabs(rel) >= p->min_relative &&
                (p->floor_us <= 0.0 || fabs(after - before) >= p->floor_us);
    if (j->passes && p->robust) {
        /* Each side's median outside the other side's middle half: a
         * handful of outliers, or medians jumping between two timing
         * modes in both segments, do not move a median that far. */
        if (rel > 0.0)
            j->passes = after > j->before.q75 && before < j->after.q25;
        else
            j->passes = after < j->before.q25 && before > j->after.q75;
        j->passes = j->passes && s_mins_agree(wk, a, c, b, dmed, rel) &&
                    s_located(wk, a, c, b, j);
    }
    return VD_OK;
}

/* Pass 2: drop the weakest point until every one left has p <= max_p
 * and passes the filters; each removal changes its neighbours' sides,
 * so everything is judged again (k is small: O(k * window) a round). */
static int
s_merge(s_work_t *wk, s_judged_t *judged)
{
    while (wk->ncp > 0) {
        size_t worst_p = SIZE_MAX, worst_f = SIZE_MAX, drop;
        for (size_t k = 0; k < wk->ncp; k++) {
            s_judged_t *j = &judged[k];
            if (s_judge(wk, k, j) != VD_OK)
                return VD_ERR;
            if (!(j->p_value <= wk->p->max_p_value)) {
                if (worst_p == SIZE_MAX ||
                    j->p_value > judged[worst_p].p_value)
                    worst_p = k;
            } else if (!j->passes) {
                double mag = fabs(log(j->after.median / j->before.median));
                if (worst_f == SIZE_MAX ||
                    mag < fabs(log(judged[worst_f].after.median /
                                   judged[worst_f].before.median)))
                    worst_f = k;
            }
        }
        if (worst_p == SIZE_MAX && worst_f == SIZE_MAX)
            return VD_OK;
        drop = worst_p != SIZE_MAX ? worst_p : worst_f;
        memmove(wk->cps + drop, wk->cps + drop + 1,
                (wk->ncp - drop - 1) * sizeof *wk->cps);
        wk->ncp--;
    }
    return VD_OK;
}

/* Pass 3: the verdict rule, the medians after as the subject arm. A
 * one-point side (min_segment 1) is given as that point twice: one run,
 * no spread. */
static int
s_verdict(const s_work_t *wk, size_t k, vd_outcome_t *outcome,
          char *err, size_t errlen)
{
    size_t a = k == 0 ? 0 : wk->cps[k - 1], c = wk->cps[k];
    size_t b = k + 1 == wk->ncp ? wk->w : wk->cps[k + 1];
    const double *before = wk->med + a, *after = wk->med + c;
    size_t nb = c - a, na = b - c;
    double *one = wk->scratch;
    vd_change_params_t const *p = wk->p;
    vd_params_t rule = p->rule;
    vd_verdict_t v;
    char why[192];

    rule.floor_us = p->floor_us;
    if (nb == 1) {
        one[0] = one[1] = before[0];
        before = one;
        nb = 2;
    }
    if (na == 1) {
        one[2] = one[3] = after[0];
        after = one + 2;
        na = 2;
    }
    if (vd_compare(after, na, before, nb, &rule, &v, why, sizeof why) !=
        VD_OK) {
        vd_errf(err, errlen, "verdict of the change at window point %zu: %s",
              c, why);
        return VD_ERR;
    }
    *outcome = v.outcome;
    return VD_OK;
}

/* ---- the entry point ------------------------------------------------- */

static int
s_check(const vd_point_t *x, size_t n, const vd_change_params_t *p,
        const vd_change_t *out, size_t max_out, char *err, size_t errlen)
{
    if (n > 0 && !x) {
        vd_errf(err, errlen, "points is NULL with n %zu", n);
        return VD_ERR;
    }
    if (max_out > 0 && !out) {
        vd_errf(err, errlen, "out is NULL with max_out %zu", max_out);
        return VD_ERR;
    }
    if (!(p->max_p_value > 0.0 && p->max_p_value <= 1.0)) {
        vd_errf(err, errlen, "max_p_value %g: must be in (0, 1]",
              p->max_p_value);
        return VD_ERR;
    }
    if (p->window < 2 || p->window > VD_CHANGE_MAX_WINDOW) {
        vd_errf(err, errlen, "window %zu: must be from 2 to %d", p->window,
              VD_CHANGE_MAX_WINDOW);
        return VD_ERR;
    }
    if (p->min_segment < 1 || p->min_segment > p->window / 2) {
        vd_errf(err, errlen, "min_segment %zu: must be from 1 to half the "
              "window (%zu)", p->min_segment, p->window / 2);
        return VD_ERR;
    }
    if (!isfinite(p->min_relative) || p->min_relative < 0.0) {
        vd_errf(err, errlen, "min_relative %g: must be a finite number >= 0",
              p->min_relative);
        return VD_ERR;
    }
    if (!isfinite(p->floor_us) || p->floor_us < 0.0) {
        vd_errf(err, errlen, "floor_us %g: must be a finite number >= 0",
              p->floor_us);
        return VD_ERR;
    }
    if (!isfinite(p->rule.parity) || p->rule.parity < 0.0) {
        vd_errf(err, errlen, "rule parity %g: must be a finite number >= 0",
              p->rule.parity);
        return VD_ERR;
    }
    for (size_t i = n > p->window ? n - p->window : 0; i < n; i++)
        if (!isfinite(x[i].median) || !(x[i].median > 0.0)) {
            vd_errf(err, errlen, "point %zu has median %g: medians must be "
                  "finite and > 0", i, x[i].median);
            return VD_ERR;
        }
    return VD_OK;
}

/* One allocation for all the work space; NULL when out of memory. */
static void *
s_alloc(s_work_t *wk, size_t w)
{
    size_t cells = w * (w + 1) + 4 * w + w;   /* pre, med, mins, scratch,
                                                 cand_q */
    size_t bytes = cells * sizeof(double) + 3 * w * sizeof(size_t) +
                   w * sizeof(bool) + w * sizeof(s_judged_t);
    char *block = malloc(bytes);
    if (!block)
        return NULL;
    double *d = (double *)block;
    wk->pre = d;
    d += w * (w + 1);
    wk->med = d;
    d += w;
    wk->mins = d;
    d += w;
    wk->scratch = d;
    d += 2 * w;
    wk->cand_q = d;
    d += w;
    wk->cps = (size_t *)d;
    wk->cand_tau = wk->cps + w;
    wk->cand_kappa = wk->cand_tau + w;
    /* s_judged_t holds doubles and size_t: aligned after them. */
    return block;
}

int
vd_change_find(const vd_point_t *x, size_t n,
               const vd_change_params_t *params, vd_change_t *out,
               size_t max_out, size_t *n_out, char *err, size_t errlen)
{
    vd_change_params_t defaults;
    s_work_t wk;
    s_judged_t *judged;
    char *block;
    int rc = VD_ERR;

    if (!n_out) {
        vd_errf(err, errlen, "n_out is NULL");
        return VD_ERR;
    }
    *n_out = 0;
    if (!params) {
        vd_change_params_default(&defaults);
        params = &defaults;
    }
    if (s_check(x, n, params, out, max_out, err, errlen) != VD_OK)
        return VD_ERR;
    size_t w = n < params->window ? n : params->window, first = n - w;
    if (w < 2 * params->min_segment)
        return VD_OK;   /* too few points for a change with two sides */

    memset(&wk, 0, sizeof wk);
    wk.p = params;
    wk.w = w;
    if (!(block = s_alloc(&wk, w))) {
        vd_errf(err, errlen, "out of memory for a window of %zu points", w);
        return VD_ERR;
    }
    judged = (s_judged_t *)(wk.cand_kappa + w);
    wk.has_cand = (bool *)(judged + w);
    for (size_t i = 0; i < w; i++) {
        wk.med[i] = x[first + i].median;
        wk.mins[i] = x[first + i].min;
    }

    s_split(&wk, params->max_p_value < 0.05 ? params->max_p_value * 10.0
                 : params->max_p_value < 0.5 ? params->max_p_value * 2.0
                 : params->max_p_value);
    if (s_merge(&wk, judged) != VD_OK) {
        vd_errf(err, errlen, "internal error: a segment's medians could not "
              "be summarised");
        goto done;
    }
    /* More than max_out: the newest are kept, the collector's interest. */
    size_t skip = wk.ncp > max_out ? wk.ncp - max_out : 0;
    for (size_t k = skip; k < wk.ncp; k++) {
        vd_change_t *c = &out[k - skip];
        const s_judged_t *j = &judged[k];
        if (s_verdict(&wk, k, &c->outcome, err, errlen) != VD_OK)
            goto done;
        c->index = first + wk.cps[k];
        c->before = j->before.median;
        c->after = j->after.median;
        c->magnitude = c->after / c->before;
        c->p_value = j->p_value;
        c->within_noise = c->outcome == VD_PARITY;
    }
    *n_out = wk.ncp - skip;
    rc = VD_OK;
done:
    free(block);
    return rc;
}
