/* test_adaptive.c -- the stopping rule of `runs: auto` (vd_adaptive.h):
 * its looks, its margin, decisive cases, and on synthetic samples that it
 * keeps the false-verdict rate of A/A comparisons low where stopping at
 * the first look that crosses an edge does not. */
#include "vd_adaptive.h"
#include "../tap.h"
#include "../xorshift.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static uint64_t s_rng = 0x2545f4914f6cdd1dull;

static double
s_uniform(void)
{
    return xs_uniform_open(&s_rng);
}

static double
s_normal(void)
{
    return sqrt(-2.0 * log(s_uniform())) * cos(6.283185307179586 *
                                               s_uniform());
}

/* One run of a workload of base_us: multiplicative noise of sigma, plus
 * a start-up jitter with a long right tail (what a busy VM adds). */
static double
s_run(double base_us, double sigma, double jitter_us)
{
    return base_us * exp(sigma * s_normal()) -
           jitter_us * log(s_uniform());
}

static void
test_looks(void)
{
    unsigned want[] = { 10, 20, 30, 45, 67, 100, 100 };
    unsigned n = 0;
    int good = 1;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        n = vd_adaptive_next(n, 100);
        good &= n == want[i];
    }
    ok(good, "looks at 10, 20, 30, 45, 67, 100 runs up to a cap of 100");
    ok(vd_adaptive_next(0, 5) == 5, "a cap below 10 is the only look");
    ok(vd_adaptive_next(20, 25) == 25, "the last step stops at the cap");
    ok(vd_adaptive_next(100000, 100000) == 100000, "at the cap, the cap");
    ok(vd_adaptive_next(99990, 100000) == 100000,
       "no overflow near PW_RUNS_MAX");
}

static void
s_fill(double *x, size_t n, double base, double step)
{
    for (size_t i = 0; i < n; i++)
        x[i] = base + step * (double)i;
}

static void
test_decisive(void)
{
    double a[40], b[40];
    vd_params_t p = { .parity = 0.04, .floor_us = 25.0 };
    vd_verdict_t v;
    char err[256] = "";

    /* 16 % slower, spread under 1 %: a loss far beyond any margin. */
    s_fill(a, 10, 1160.0, 1.2);
    s_fill(b, 10, 1000.0, 1.0);
    ok(vd_compare(a, 10, b, 10, &p, &v, err, sizeof err) == VD_OK &&
       v.outcome == VD_LOSS && vd_adaptive_decisive(&v),
       "a clear loss at 10 runs is decisive (%s)", err);
    /* The same arms: both ratios 1, inside by far. */
    ok(vd_compare(b, 10, b, 10, &p, &v, err, sizeof err) == VD_OK &&
       v.outcome == VD_PARITY && vd_adaptive_decisive(&v),
       "identical quiet arms are decisive parity");
    /* Medians 4.1 % apart with a spread of 4 %: at the edge. */
    s_fill(a, 10, 1021.0, 4.5);
    s_fill(b, 10, 980.0, 4.5);
    ok(vd_compare(a, 10, b, 10, &p, &v, err, sizeof err) == VD_OK &&
       !vd_adaptive_decisive(&v), "a ratio near its edge is not decisive "
       "(ratio %.4f, tolerance %.4f, margin %.4f)", v.ratio, v.tolerance,
       vd_adaptive_margin(&v));
    /* Median ratio out, best ratio in: the rule says parity, and it is
     * not decisive however many runs. */
    s_fill(a, 10, 1000.0, 30.0);
    a[0] = 900.0;
    s_fill(b, 10, 900.0, 5.0);
    ok(vd_compare(a, 10, b, 10, &p, &v, err, sizeof err) == VD_OK &&
       !vd_adaptive_decisive(&v), "ratios that disagree are not decisive");

    /* The margin shrinks as 1/sqrt(n). */
    for (size_t i = 0; i < 40; i++) {
        a[i] = 1000.0 + 50.0 * (double)(i % 10);
        b[i] = 1000.0 + 50.0 * (double)(i % 10);
    }
    double m10 = 0, m40 = 0;
    if (vd_compare(a, 10, b, 10, &p, &v, err, sizeof err) == VD_OK)
        m10 = vd_adaptive_margin(&v);
    if (vd_compare(a, 40, b, 40, &p, &v, err, sizeof err) == VD_OK)
        m40 = vd_adaptive_margin(&v);
    ok_near(m10 / m40, 2.0, 0.15, "four times the runs, half the margin "
            "(%.4f against %.4f)", m10, m40);
    /* A zero spread still has the floor's share. */
    s_fill(a, 10, 1000.0, 0.0);
    ok(vd_compare(a, 10, a, 10, &p, &v, err, sizeof err) == VD_OK &&
       vd_adaptive_margin(&v) > 0, "zero spread: the floor keeps a margin");
    ok_str(vd_stop_name(VD_STOP_DECISIVE), "decisive", "stop names");
    ok_str(vd_stop_name(VD_STOP_COUNT), "?", "out of range: ?");
}

/* One adaptive comparison of base_a against base_b, looking as `runs:
 * auto` does; margin false: stop at the first look whose outcome is a
 * win or a loss (re-running until significant). Returns the outcome at
 * the stop, *taken the runs. */
static vd_outcome_t
s_trial(double base_a, double base_b, const vd_params_t *p, bool margin,
        unsigned max_runs, unsigned *taken)
{
    double a[100], b[100];
    vd_verdict_t v;
    char err[256];
    unsigned n = 0, look = vd_adaptive_next(0, max_runs);
    v.outcome = VD_PARITY;
    while (n < max_runs) {
        a[n] = s_run(base_a, 0.02, 0.04 * base_a);
        b[n] = s_run(base_b, 0.02, 0.04 * base_b);
        if (++n < look)
            continue;
        if (vd_compare(a, n, b, n, p, &v, err, sizeof err) != VD_OK)
            break;
        bool stop = margin ? vd_adaptive_decisive(&v)
                           : v.outcome != VD_PARITY;
        if (stop || n == max_runs)
            break;
        look = vd_adaptive_next(n, max_runs);
    }
    *taken = n;
    return v.outcome;
}

static void
test_synthetic(void)
{
    /* parity 0 and floor 0: the tolerance is the noise alone, so a look
     * has a real chance to cross by noise and repeated looks add up. */
    vd_params_t bare = { .parity = 0.0, .floor_us = 0.0 };
    vd_params_t std = { .parity = 0.04, .floor_us = 500.0 };
    const int trials = 2000;
    int naive = 0, adaptive = 0, fixed = 0, found = 0, found10 = 0;
    unsigned taken, runs_sum = 0;
    for (int t = 0; t < trials; t++) {
        naive += s_trial(10000, 10000, &bare, false, 100, &taken) !=
                 VD_PARITY;
        adaptive += s_trial(10000, 10000, &bare, true, 100, &taken) !=
                    VD_PARITY;
        fixed += s_trial(10000, 10000, &bare, true, 10, &taken) !=
                 VD_PARITY;
    }
    tap_diag("A/A, tolerance = noise: %d naive, %d adaptive, %d fixed-10 "
             "false verdicts in %d", naive, adaptive, fixed, trials);
    ok(adaptive <= trials / 100, "adaptive A/A false verdicts <= 1 %% "
       "(%d of %d)", adaptive, trials);
    ok(adaptive <= fixed, "adaptive is no worse than fixed 10 runs (%d, "
       "%d)", adaptive, fixed);
    ok(naive > 2 * adaptive + 10, "stopping at the first crossing "
       "inflates false verdicts (%d against %d)", naive, adaptive);
    for (int t = 0; t < trials / 4; t++) {
        found += s_trial(11000, 10000, &std, true, 100, &taken) == VD_LOSS;
        runs_sum += taken;
        found10 += s_trial(11000, 10000, &std, true, 10, &taken) == VD_LOSS;
    }
    tap_diag("A/B 10 %%, floor 500 us on 10 ms: adaptive %d, fixed-10 %d "
             "of %d, mean runs %.1f", found, found10, trials / 4,
             (double)runs_sum / (trials / 4));
    ok(found >= found10 && found >= (trials / 4) * 95 / 100,
       "adaptive finds a 10 %% difference in >= 95 %% (%d of %d)", found,
       trials / 4);
}

int
main(void)
{
    test_looks();
    test_decisive();
    test_synthetic();
    return tap_done();
}
