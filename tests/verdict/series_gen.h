/* series_gen.h -- deterministic synthetic series of runs for the change
 * point test (tests/verdict/test_change.c) and its benchmark
 * (tests/bench/changepoints.c). Header-only, static functions.
 *
 * A run is `samples` samples of one benchmark: its level (base, times
 * the step once past step_at, times the compounding drift), times a
 * per-run factor (the machine's run-to-run noise), times each sample's
 * own noise. The two noises are split so that the per-run MEDIANS have a
 * coefficient of variation close to `cv` (the figure a reader knows as
 * "how noisy this host is"): sample noise cv, run noise
 * cv * sqrt(1 - 1.571 / samples), since the median of k normal samples
 * has a variance of about (pi / 2) sigma^2 / k.
 *
 * Timing modes: each sample is in the slow mode (modes_ratio x) with a
 * probability (its run's share) drawn uniformly from [0.2, 0.8], so the
 * per-run median jumps between the modes while every run still has
 * samples in both. With modes_sticky s, a run keeps the previous run's
 * share with probability s: spells of runs in one mode, which look like
 * steps in the medians (the hard case). Outliers: a run is 3x slower with probability outlier_rate.
 *
 * The PRNG is splitmix64 and normals are Box-Muller, so a seed gives the
 * same series on every machine with IEEE doubles and the same libm. */
#ifndef PARITY_SERIES_GEN_H
#define PARITY_SERIES_GEN_H

#include "vd_change.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SG_MAX_SAMPLES 64

typedef struct {
    double base_us;        /* level before any step or drift */
    double cv;             /* target CV of the per-run medians */
    size_t samples;        /* per run, 2..SG_MAX_SAMPLES */
    size_t step_at;        /* first run after the step; SIZE_MAX: none */
    double step;           /* relative: 0.05 = 5 % slower from step_at */
    double drift_per_run;  /* compounding, e.g. 0.02 / 7 for 2 %/week */
    size_t drift_from;     /* first run that drifts */
    bool modes;            /* two timing modes */
    double modes_ratio;    /* slow mode / fast mode */
    double modes_sticky;   /* chance a run keeps the last run's share */
    double outlier_rate;   /* share of runs 3x slower */
} sg_spec_t;

typedef struct {
    uint64_t state;
    double share;          /* the last run's slow-mode share; < 0: none */
} sg_rng_t;

static inline void
sg_seed(sg_rng_t *r, uint64_t seed)
{
    r->state = seed;
    r->share = -1.0;
}

static inline uint64_t
sg_next(sg_rng_t *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1): never 0, so log() in Box-Muller is finite. */
static inline double
sg_uniform(sg_rng_t *r)
{
    return ((double)(sg_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

static inline double
sg_normal(sg_rng_t *r)
{
    double u = sg_uniform(r), v = sg_uniform(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* A quiet benchmark of 1 ms, 10 samples a run, noise cv, nothing else. */
static inline void
sg_spec_default(sg_spec_t *s, double cv)
{
    s->base_us = 1000.0;
    s->cv = cv;
    s->samples = 10;
    s->step_at = SIZE_MAX;
    s->step = 0.0;
    s->drift_per_run = 0.0;
    s->drift_from = 0;
    s->modes = false;
    s->modes_ratio = 1.3;
    s->modes_sticky = 0.0;
    s->outlier_rate = 0.0;
}

/* Run k of the series: its samples into samples[0..s->samples) and its
 * summary into *pt. The caller draws runs in order from one generator. */
static inline void
sg_run(sg_rng_t *r, const sg_spec_t *s, size_t k, double *samples,
       vd_point_t *pt)
{
    size_t n = s->samples > SG_MAX_SAMPLES ? SG_MAX_SAMPLES : s->samples;
    double drifted = k > s->drift_from ? (double)(k - s->drift_from) : 0.0;
    double level = s->base_us * pow(1.0 + s->drift_per_run, drifted);
    double run_var = 1.0 - 1.571 / (double)n;
    double run_sigma = s->cv * sqrt(run_var > 0.0 ? run_var : 0.0);
    double share = 0.0;
    vd_summary_t sum;

    if (s->modes) {
        bool keep = r->share >= 0.0 && s->modes_sticky > 0.0 &&
                    sg_uniform(r) < s->modes_sticky;
        share = keep ? r->share : 0.2 + 0.6 * sg_uniform(r);
        r->share = share;
    }
    if (k >= s->step_at)
        level *= 1.0 + s->step;
    level *= exp(run_sigma * sg_normal(r));
    if (s->outlier_rate > 0.0 && sg_uniform(r) < s->outlier_rate)
        level *= 3.0;
    for (size_t i = 0; i < n; i++) {
        double x = level * exp(s->cv * sg_normal(r));
        if (s->modes && sg_uniform(r) < share)
            x *= s->modes_ratio;
        samples[i] = x;
    }
    if (vd_summarize(samples, n, &sum, NULL, 0) != VD_OK) {
        pt->median = pt->min = pt->q25 = pt->q75 = pt->max = NAN;
        pt->n = 0;
        return;
    }
    pt->median = sum.median;
    pt->min = sum.min;
    pt->q25 = sum.q25;
    pt->q75 = sum.q75;
    pt->max = sum.max;
    pt->n = sum.n;
}

/* A whole series of n runs from seed (samples not kept). */
static inline void
sg_series(uint64_t seed, const sg_spec_t *s, size_t n, vd_point_t *pts)
{
    sg_rng_t r;
    double samples[SG_MAX_SAMPLES];
    sg_seed(&r, seed);
    for (size_t k = 0; k < n; k++)
        sg_run(&r, s, k, samples, &pts[k]);
}

#endif
