/* test_verdict.c -- the verdict rule against the spec's worked example,
 * the seed's three cases, and properties over random arms. */
#include <stdbool.h>
#include <string.h>

#include "vd_verdict.h"
#include "../tap.h"
#include "../xorshift.h"

#include <stdint.h>
#include <stdlib.h>

static uint64_t s_rng = 0x9e3779b97f4a7c15ull;

static double
s_uniform(void)
{
    return xs_uniform(&s_rng);
}

static void
test_worked_example(void)
{
    const double a[] = {566, 568, 576, 690, 722};
    const double b[] = {587, 700, 712, 718, 725};
    vd_params_t p = {.parity = 0.04, .floor_us = 25.0};
    vd_verdict_t v;
    char err[256] = "";

    ok(vd_compare(a, 5, b, 5, &p, &v, err, sizeof err) == VD_OK,
       "worked example computes (%s)", err);
    ok_near(v.ratio, 0.80899, 1e-4, "ratio 0.80899 (got %.5f)", v.ratio);
    ok_near(v.best_ratio, 0.96422, 1e-4, "best_ratio 0.96422 (got %.5f)",
            v.best_ratio);
    ok_near(v.noise, 0.21181, 1e-4, "noise 0.21181 (got %.5f)", v.noise);
    ok_near(v.tolerance, 0.21181, 1e-4, "tolerance 0.21181 (got %.5f)",
            v.tolerance);
    ok_near(v.best_tolerance, 0.04417, 1e-3, "best_tolerance 0.04417 "
            "(got %.5f)", v.best_tolerance);
    ok(v.outcome == VD_PARITY, "two timing modes, equal best runs: parity");
    ok(v.diagnostics & VD_DIAG_MODES_A, "subject's timing modes flagged");
    ok(!(v.diagnostics & VD_DIAG_FEW_RUNS), "5 a side is not few");
    ok(v.diagnostics & VD_DIAG_WIDE_TOLERANCE, "tolerance 21 %% is wide");
    ok(v.a.n == 5 && v.a.min == 566 && v.a.max == 722 && v.a.median == 576,
       "subject summary n/min/median/max");
    ok_near(v.a.iqr, 690 - 568, 1e-12, "subject IQR type 7");
}

static void
test_smooth_loss(void)
{
    /* A smooth cloud 16 % slower in both ratios, noise under 1 %. */
    double a[7], b[7];
    vd_verdict_t v;
    char err[256] = "";
    for (int i = 0; i < 7; i++) {
        b[i] = 1000.0 + i * 1.0;
        a[i] = 1160.0 + i * 1.2;
    }
    ok(vd_compare(a, 7, b, 7, NULL, &v, err, sizeof err) == VD_OK,
       "smooth cloud computes (%s)", err);
    ok(v.noise < 0.01, "noise under 1 %% (%.4f)", v.noise);
    ok(v.outcome == VD_LOSS, "16 %% slower smooth cloud: loss (%s)",
       vd_outcome_name(v.outcome));
    ok_near(v.tolerance, 0.04, 1e-12, "tolerance is the flat parity");
    ok(v.extra_runs == 0, "a clear loss needs no extra runs (%u)",
       v.extra_runs);

    vd_verdict_t w;
    ok(vd_compare(b, 7, a, 7, NULL, &w, err, sizeof err) == VD_OK &&
       w.outcome == VD_WIN, "swapped: win");
}

static void
test_floor_dominates(void)
{
    /* A 60 us workload 20 % slower: the floor (25 us) makes the
     * tolerance 25/60 = 42 %, so it is parity. */
    const double a[] = {72, 72.5, 73, 73.2, 73.5};
    const double b[] = {60, 60.2, 60.4, 60.5, 61};
    vd_params_t p = {.parity = 0.04, .floor_us = 25.0};
    vd_verdict_t v;
    char err[256] = "";
    ok(vd_compare(a, 5, b, 5, &p, &v, err, sizeof err) == VD_OK,
       "short workload computes");
    ok(v.outcome == VD_PARITY, "floor dominates a 60 us workload: parity");
    ok_near(v.tolerance, 25.0 / 60.4, 1e-9, "tolerance = floor / median");
    ok_near(v.best_tolerance, 25.0 / 60.0, 1e-9, "best_tolerance = floor/min");

    p.floor_us = 1.0;
    ok(vd_compare(a, 5, b, 5, &p, &v, err, sizeof err) == VD_OK &&
       v.outcome == VD_LOSS, "same samples with a 1 us floor: loss");
}

static void
test_errors(void)
{
    const double good[] = {1, 2, 3};
    const double one[] = {1};
    const double zero[] = {1, 0, 3};
    const double neg[] = {1, -2, 3};
    double nan_[] = {1, NAN, 3};
    double inf_[] = {1, INFINITY, 3};
    vd_verdict_t v;
    char err[256];
    vd_params_t p = {.parity = -1, .floor_us = 25};

    ok(vd_compare(one, 1, good, 3, NULL, &v, err, sizeof err) == VD_ERR,
       "1 sample is an error");
    ok_str(err, "subject arm has 1 sample: at least 2 a side", "message: %s",
           err);
    ok(vd_compare(good, 3, good, 0, NULL, &v, err, sizeof err) == VD_ERR,
       "0 samples is an error");
    ok_str(err, "other arm has 0 samples: at least 2 a side", "message: %s",
           err);
    ok(vd_compare(zero, 3, good, 3, NULL, &v, err, sizeof err) == VD_ERR,
       "a zero is an error");
    ok_str(err, "subject sample 2 is 0: samples must be finite and > 0",
           "message: %s", err);
    ok(vd_compare(good, 3, neg, 3, NULL, &v, err, sizeof err) == VD_ERR,
       "a negative is an error");
    ok_str(err, "other sample 2 is -2: samples must be finite and > 0",
           "message: %s", err);
    ok(vd_compare(nan_, 3, good, 3, NULL, &v, err, sizeof err) == VD_ERR,
       "NaN is an error");
    ok(vd_compare(inf_, 3, good, 3, NULL, &v, err, sizeof err) == VD_ERR,
       "infinity is an error");
    ok(vd_compare(good, 3, good, 3, &p, &v, err, sizeof err) == VD_ERR,
       "negative parity is an error");
    ok_str(err, "parity -1: must be a finite number >= 0", "message: %s", err);
    p.parity = 0.04;
    p.floor_us = NAN;
    ok(vd_compare(good, 3, good, 3, &p, &v, err, sizeof err) == VD_ERR,
       "NaN floor is an error");
    ok_str(err, "floor nan: must be a finite number >= 0", "message: %s", err);
}

/* Samples each valid but too far apart for doubles: refused, never an
 * infinite or zero ratio; the mean of huge samples stays finite. */
static void
test_range(void)
{
    const double huge[] = {1e308, 1.7e308}, tiny[] = {1e-300, 2e-300};
    const double denorm[] = {5e-324, 1e-323}, one[] = {1, 2};
    vd_params_t p = {.parity = 0.04, .floor_us = 25};
    vd_verdict_t v;
    vd_summary_t s;
    char err[256];

    ok(vd_compare(huge, 2, tiny, 2, &p, &v, err, sizeof err) == VD_ERR,
       "1e308 against 1e-300: refused");
    ok_str(err, "samples out of range: medians 1.35e+308 and 1.5e-300, "
           "minimums 1e+308 and 1e-300, floor 25 give a ratio or tolerance "
           "that is not a finite number > 0", "message: %s", err);
    ok(vd_compare(denorm, 2, one, 2, &p, &v, err, sizeof err) == VD_ERR,
       "floor 25 over a denormal sample: refused (tolerance infinite)");
    p.floor_us = 0;
    ok(vd_compare(denorm, 2, huge, 2, &p, &v, err, sizeof err) == VD_ERR,
       "denormal against 1e308: refused (ratio 0)");
    ok(vd_compare(huge, 2, one, 2, &p, &v, err, sizeof err) == VD_OK &&
       isfinite(v.a.mean) && fabs(v.a.mean - 1.35e308) < 1e293,
       "the mean of samples near DBL_MAX is finite (%g)", v.a.mean);
    ok(vd_summarize(huge, 2, &s, err, sizeof err) == VD_OK &&
       isfinite(s.mean), "vd_summarize: same");

    p.parity = -0.0;
    p.floor_us = -0.0;
    ok(vd_compare(one, 2, one, 2, &p, &v, err, sizeof err) == VD_OK &&
       !signbit(v.parity) && !signbit(v.floor_us),
       "parity and floor -0.0 are recorded as 0.0");
    const double flat[] = {3, 3};
    ok(vd_compare(flat, 2, flat, 2, &p, &v, err, sizeof err) == VD_OK &&
       v.extra_runs == 3, "no spread, ratio on the edge: only the few-runs "
       "minimum is suggested (%u), not the cap", v.extra_runs);
}

/* vd_compare_summaries guards summaries it did not compute. */
static void
test_summaries(void)
{
    const double a[] = {100, 101, 102, 103}, b[] = {110, 111, 112, 113};
    vd_summary_t sa, sb, bad;
    vd_verdict_t v, w;
    char err[256];

    ok(vd_summarize(a, 4, &sa, err, sizeof err) == VD_OK &&
       vd_summarize(b, 4, &sb, err, sizeof err) == VD_OK &&
       vd_compare_summaries(&sa, &sb, NULL, &v, err, sizeof err) == VD_OK &&
       vd_compare(a, 4, b, 4, NULL, &w, err, sizeof err) == VD_OK &&
       v.outcome == w.outcome && v.ratio == w.ratio &&
       v.tolerance == w.tolerance, "summaries give vd_compare's verdict");
    bad = sa;
    bad.median = 0;
    ok(vd_compare_summaries(&bad, &sb, NULL, &v, err, sizeof err) == VD_ERR,
       "a summary with median 0 is refused");
    ok_str(err, "subject summary is not of samples > 0: min 100, median 0, "
           "iqr 1.5", "message: %s", err);
    bad = sb;
    bad.iqr = NAN;
    ok(vd_compare_summaries(&sa, &bad, NULL, &v, err, sizeof err) == VD_ERR,
       "a summary with a NaN IQR is refused");
    bad.iqr = sb.iqr;
    bad.n = 1;
    ok(vd_compare_summaries(&sa, &bad, NULL, &v, err, sizeof err) == VD_ERR,
       "a summary of 1 sample is refused");
    ok_str(err, "other arm has 1 sample: at least 2 a side", "message: %s",
           err);
}

static void
test_quantiles(void)
{
    const double x[] = {1, 2, 3, 4};
    ok_near(vd_quantile_sorted(x, 4, 0.5), 2.5, 1e-12, "median of 1..4");
    ok_near(vd_quantile_sorted(x, 4, 0.25), 1.75, 1e-12, "q25 of 1..4 (type 7)");
    ok_near(vd_quantile_sorted(x, 4, 0.75), 3.25, 1e-12, "q75 of 1..4");
    ok_near(vd_quantile_sorted(x, 4, 0.9), 3.7, 1e-12, "q90 of 1..4");
    ok(vd_quantile_sorted(x, 4, 1.0) == 4 && vd_quantile_sorted(x, 4, 0) == 1,
       "q0 and q1 are the extremes");
    ok(vd_quantile_sorted(x, 1, 0.5) == 1, "single sample");
    ok(vd_quantile_sorted(x, 4, -0.5) == 1 && vd_quantile_sorted(x, 4, 7) == 4
       && vd_quantile_sorted(x, 4, NAN) == 1,
       "p outside [0, 1] or NaN: clamped, never an undefined cast");
    ok(isnan(vd_quantile_sorted(x, 0, 0.5)), "no samples: NaN");
}

static void
test_floor(void)
{
    double cal[200];
    double f;
    bool dflt;
    char err[256];
    for (int i = 0; i < 200; i++)
        cal[i] = 100.0 + i;    /* q10 = 119.9, q90 = 279.1 */
    ok(vd_floor(cal, 99, &f, &dflt, err, sizeof err) == VD_OK && dflt &&
       f == VD_DEFAULT_FLOOR_US, "99 calibration samples: default floor");
    ok(vd_floor(cal, 200, &f, &dflt, err, sizeof err) == VD_OK && !dflt,
       "200 calibration samples: own floor");
    ok_near(f, 279.1 - 119.9, 1e-9, "floor = q90 - q10 (%.3f)", f);
    cal[5] = 0;
    ok(vd_floor(cal, 200, &f, &dflt, err, sizeof err) == VD_ERR,
       "a zero calibration sample is an error");
    ok_str(err, "calibration sample 6 is 0: samples must be finite and > 0",
           "message: %s", err);
    ok(vd_floor(cal, 50, &f, &dflt, err, sizeof err) == VD_ERR,
       "a zero among too few calibration samples is still an error");
}

/* Properties over random arms: mirror, scale, order. */
static void
test_properties(void)
{
    enum { CASES = 20000 };
    int mirror_bad = 0, scale_bad = 0, order_bad = 0, outcomes[3] = {0};
    char err[256];

    for (int c = 0; c < CASES; c++) {
        size_t na = 2 + (size_t)(s_uniform() * 20);
        size_t nb = 2 + (size_t)(s_uniform() * 20);
        double a[32], b[32], as[32], bs[32], ap[32];
        double base = 10.0 + s_uniform() * 5000.0;
        double shift = 0.7 + s_uniform() * 0.6;
        double spread = s_uniform() * 0.3;
        for (size_t i = 0; i < na; i++)
            a[i] = base * shift * (1.0 + spread * s_uniform());
        for (size_t i = 0; i < nb; i++)
            b[i] = base * (1.0 + spread * s_uniform());
        vd_params_t p = {.parity = 0.04 * s_uniform() * 2,
                         .floor_us = s_uniform() * 50};
        vd_verdict_t v, w, sv, pv;
        if (vd_compare(a, na, b, nb, &p, &v, err, sizeof err) != VD_OK ||
            vd_compare(b, nb, a, na, &p, &w, err, sizeof err) != VD_OK) {
            mirror_bad++;
            continue;
        }
        outcomes[v.outcome]++;
        vd_outcome_t mirrored = v.outcome == VD_WIN ? VD_LOSS
                              : v.outcome == VD_LOSS ? VD_WIN : VD_PARITY;
        if (w.outcome != mirrored ||
            fabs(w.ratio * v.ratio - 1.0) > 1e-12 ||
            fabs(w.best_ratio * v.best_ratio - 1.0) > 1e-12 ||
            w.tolerance != v.tolerance || w.best_tolerance != v.best_tolerance
            || w.noise != v.noise)
            mirror_bad++;

        /* Scale by a power of two so the arithmetic is exact. */
        double k = ldexp(1.0, (int)(s_uniform() * 20) - 10);
        for (size_t i = 0; i < na; i++)
            as[i] = a[i] * k;
        for (size_t i = 0; i < nb; i++)
            bs[i] = b[i] * k;
        vd_params_t ps = p;
        ps.floor_us = p.floor_us * k;
        if (vd_compare(as, na, bs, nb, &ps, &sv, err, sizeof err) != VD_OK ||
            sv.outcome != v.outcome || sv.ratio != v.ratio ||
            sv.best_ratio != v.best_ratio || sv.tolerance != v.tolerance ||
            sv.best_tolerance != v.best_tolerance)
            scale_bad++;

        /* Reverse and rotate the order. */
        size_t rot = (size_t)(s_uniform() * na);
        for (size_t i = 0; i < na; i++)
            ap[i] = a[(na - 1 - i + rot) % na];
        if (vd_compare(ap, na, b, nb, &p, &pv, err, sizeof err) != VD_OK ||
            pv.outcome != v.outcome || pv.ratio != v.ratio ||
            pv.tolerance != v.tolerance || pv.diagnostics != v.diagnostics)
            order_bad++;
    }
    ok(mirror_bad == 0, "swapping arms mirrors the outcome, reciprocal "
       "ratios, equal tolerances (%d of %d bad)", mirror_bad, CASES);
    ok(scale_bad == 0, "scaling samples and floor changes nothing "
       "(%d of %d bad)", scale_bad, CASES);
    ok(order_bad == 0, "sample order changes nothing (%d of %d bad)",
       order_bad, CASES);
    ok(outcomes[0] > 100 && outcomes[1] > 100 && outcomes[2] > 100,
       "random cases cover win %d, parity %d, loss %d", outcomes[0],
       outcomes[1], outcomes[2]);
}

static void
test_names(void)
{
    vd_outcome_t o;
    ok_str(vd_outcome_name(VD_WIN), "win", "win name");
    ok_str(vd_outcome_name(VD_LOSS), "loss", "loss name");
    ok_str(vd_outcome_name((vd_outcome_t)7), "?", "out of range name");
    ok(vd_outcome_parse("parity", &o) == VD_OK && o == VD_PARITY, "parse");
    ok(vd_outcome_parse("draw", &o) == VD_ERR, "parse rejects unknown");
    ok(vd_diag_name(VD_DIAG_FEW_RUNS) && vd_diag_text(VD_DIAG_FEW_RUNS),
       "diagnostics have names and texts");
    /* Every program spells the unit "µs" (U+00B5), as pw_out_us does. */
    bool micro = true;
    for (unsigned bit = 1; bit && bit <= VD_DIAG_RATIOS_DISAGREE; bit <<= 1) {
        const char *t = vd_diag_text(bit);
        micro &= !t || (!strstr(t, " us ") && !strstr(t, "\xce\xbc"));
    }
    ok(micro && strstr(vd_diag_text(VD_DIAG_DEFAULT_FLOOR), "25 \xc2\xb5s"),
       "diagnostics spell microseconds \"µs\": %s",
       vd_diag_text(VD_DIAG_DEFAULT_FLOOR));
}

static void
test_diagnostics(void)
{
    const double a[] = {100, 101, 102};
    const double b[] = {100, 101, 103};
    vd_verdict_t v;
    char err[256];
    ok(vd_compare(a, 3, b, 3, NULL, &v, err, sizeof err) == VD_OK &&
       (v.diagnostics & VD_DIAG_FEW_RUNS), "3 a side is few runs");
    ok(v.diagnostics & VD_DIAG_DEFAULT_FLOOR, "NULL params: default floor "
       "noted");
    ok(v.extra_runs >= 2, "few runs suggests at least 2 more (%u)",
       v.extra_runs);
    /* One smooth arm is not two modes. */
    const double smooth[] = {100, 101, 102, 103, 104, 105, 106};
    ok(!vd_timing_modes(smooth, 7), "a smooth arm has no timing modes");
    const double modes[] = {570, 720, 571, 722, 569, 725, 573};
    ok(vd_timing_modes(modes, 7), "570/720 clusters are timing modes");
}

int
main(void)
{
    test_worked_example();
    test_smooth_loss();
    test_floor_dominates();
    test_errors();
    test_range();
    test_summaries();
    test_quantiles();
    test_floor();
    test_properties();
    test_names();
    test_diagnostics();
    return tap_done();
}
