/* verdict_bench.c -- vd_compare throughput on 7-sample arms, one core,
 * against a named peer measured in the same run: the same rule written
 * the obvious way (copy to the heap, qsort, quantiles recomputed per
 * statistic), which is what a first implementation would look like.
 *
 *   verdict-bench [SECONDS_PER_SIDE]      (default 1.0)
 *
 * Prints pairs/s for both, the ratio, and whether the target of
 * 5 million pairs per second holds. Not a test: figures go to
 * docs/performance.md with the command that made them. */
#include "pw_clock.h"
#include "vd_verdict.h"
#include "../xorshift.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S_ARM      7
#define S_PAIRS    4096       /* distinct inputs, cycled: fits in L2 */
#define S_TARGET   5e6        /* pairs per second: the target */

static uint64_t s_rng = 0x853c49e6748fea9bull;

static double
s_uniform(void)
{
    return xs_uniform(&s_rng);
}

/* ---- the peer: the rule written naively ------------------------------ */

static int
s_cmp(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

static double
s_naive_quantile(const double *x, size_t n, double p)
{
    double *s = malloc(n * sizeof *s), q;
    if (!s)
        abort();
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, s_cmp);
    double h = (double)(n - 1) * p;
    size_t lo = (size_t)floor(h);
    q = lo >= n - 1 ? s[n - 1] : s[lo] + (h - (double)lo) * (s[lo + 1] - s[lo]);
    free(s);
    return q;
}

static int
s_leave(double r, double t)
{
    return r > 1.0 + t ? 1 : (r < 1.0 / (1.0 + t) ? -1 : 0);
}

static vd_outcome_t
s_naive_compare(const double *a, const double *b, size_t n, double parity,
                double floor_us)
{
    double med_a = s_naive_quantile(a, n, 0.5);
    double med_b = s_naive_quantile(b, n, 0.5);
    double min_a = s_naive_quantile(a, n, 0.0);
    double min_b = s_naive_quantile(b, n, 0.0);
    double noise_a = (s_naive_quantile(a, n, 0.75) -
                      s_naive_quantile(a, n, 0.25)) / med_a;
    double noise_b = (s_naive_quantile(b, n, 0.75) -
                      s_naive_quantile(b, n, 0.25)) / med_b;
    double noise = fmax(noise_a, noise_b);
    double tol = fmax(parity, fmax(noise, floor_us / fmin(med_a, med_b)));
    double btol = fmax(parity, floor_us / fmin(min_a, min_b));
    int m = s_leave(med_a / med_b, tol), k = s_leave(min_a / min_b, btol);
    return m == 1 && k == 1 ? VD_LOSS : (m == -1 && k == -1 ? VD_WIN
                                                           : VD_PARITY);
}

/* ---- measurement ----------------------------------------------------- */

int
main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    static double arms[S_PAIRS][2][S_ARM];
    vd_params_t p;
    vd_verdict_t v;
    char err[256];
    unsigned outcomes[VD_OUTCOME_COUNT] = {0};
    size_t disagree = 0;

    if (!(seconds > 0.0) || seconds > 60.0) {
        fprintf(stderr, "verdict-bench: SECONDS_PER_SIDE must be in (0, 60]\n");
        return 2;
    }
    vd_params_default(&p);
    for (size_t i = 0; i < S_PAIRS; i++) {
        double centre = 100.0 + 10000.0 * s_uniform();
        double shift = (i % 3 == 0) ? 1.16 : (i % 3 == 1 ? 0.85 : 1.0);
        for (size_t k = 0; k < S_ARM; k++) {
            arms[i][0][k] = centre * shift * (1.0 + 0.01 * s_uniform());
            arms[i][1][k] = centre * (1.0 + 0.01 * s_uniform());
        }
    }
    /* Both implementations must agree before either is timed. */
    for (size_t i = 0; i < S_PAIRS; i++) {
        if (vd_compare(arms[i][0], S_ARM, arms[i][1], S_ARM, &p, &v, err,
                       sizeof err) != VD_OK) {
            fprintf(stderr, "verdict-bench: vd_compare: %s\n", err);
            return 1;
        }
        outcomes[v.outcome]++;
        disagree += v.outcome != s_naive_compare(arms[i][0], arms[i][1],
                                                 S_ARM, p.parity, p.floor_us);
    }
    if (disagree) {
        fprintf(stderr, "verdict-bench: the peer disagrees on %zu of %d "
                "pairs\n", disagree, S_PAIRS);
        return 1;
    }

    /* vd_compare: batches of S_PAIRS until the time is up. */
    size_t done = 0;
    unsigned sink = 0;
    double t0 = pw_clock_mono_sec(), t1;
    do {
        for (size_t i = 0; i < S_PAIRS; i++) {
            vd_compare(arms[i][0], S_ARM, arms[i][1], S_ARM, &p, &v, err,
                       sizeof err);
            sink += v.outcome;
        }
        done += S_PAIRS;
        t1 = pw_clock_mono_sec();
    } while (t1 - t0 < seconds);
    double rate = (double)done / (t1 - t0);

    size_t peer_done = 0;
    t0 = pw_clock_mono_sec();
    do {
        for (size_t i = 0; i < S_PAIRS; i++)
            sink += s_naive_compare(arms[i][0], arms[i][1], S_ARM, p.parity,
                                    p.floor_us);
        peer_done += S_PAIRS;
        t1 = pw_clock_mono_sec();
    } while (t1 - t0 < seconds);
    double peer_rate = (double)peer_done / (t1 - t0);

    printf("inputs: %d pairs of %d-sample arms (win %u, parity %u, loss %u), "
           "cycled\n", S_PAIRS, S_ARM, outcomes[VD_WIN], outcomes[VD_PARITY],
           outcomes[VD_LOSS]);
    printf("vd_compare (with diagnostics):  %6.2f M pairs/s  (%.0f ns each)\n",
           rate / 1e6, 1e9 / rate);
    printf("peer: naive qsort rule:         %6.2f M pairs/s  (%.0f ns each)\n",
           peer_rate / 1e6, 1e9 / peer_rate);
    printf("ratio vd_compare / peer:        %6.2f\n", rate / peer_rate);
    printf("target >= %.0f M pairs/s:        %s\n", S_TARGET / 1e6,
           rate >= S_TARGET ? "met" : "NOT met");
    return sink == 0xFFFFFFFFu;   /* keep the loops from being dropped */
}
