/* changes_quality.c -- the detection-quality table of docs/regressions.md
 * ("Detection quality: where, how many, what label"): what a user reads
 * from `parity changes` (and the collector, once a series holds these
 * runs), Parity's method (vd_change_find, defaults) beside Apache
 * Otava's (vd_otava_find, its defaults: window 50, p 0.001) in the same
 * run, on series of 40 and of 200 runs (tests/verdict/series_gen.h: a
 * 5 ms benchmark, 1 % noise of the per-run medians, 15 samples a run).
 *
 *   changes-quality [SEEDS]     (200; 1..10000)
 *
 * Per case and length, SEEDS series:
 *   step S %      a step of S % at the middle run: found (any change),
 *                 the nearest change's location exact / off by 1 /
 *                 worse, and its outcome loss (Parity: not within
 *                 noise; Otava has no verdict)
 *   3rd-newest    a 10 % step at the third-newest run (min_segment runs
 *                 after it): the same measures
 *   A/A, modes, outliers   no step: false change points per 1,000 runs
 *   drift         0.5 % a run from the first quarter on: found, and the
 *                 median run of the first change after the drift began
 *   two steps     +10 % at the middle and +10 % 8 runs later: both found
 *                 (a change within one run of each)
 * Prints the table and, last, one JSON object. Not a test: the figures
 * go to docs/regressions.md with tests/bench/changepoints.sh. */
#include "vd_change.h"
#include "vd_otava.h"
#include "vd_trend.h"
#include "verdict/series_gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_N   200
#define S_MAX_CP  64
#define S_BASE_US 5000.0
#define S_CV      0.01

enum { M_PARITY, M_OTAVA, M_N };
static const char *const s_method[M_N] = { "parity", "otava" };

/* What one method reported for one series: indexes and outcomes. */
typedef struct {
    size_t n, idx[S_MAX_CP];
    bool loss[S_MAX_CP];
} s_found_t;

static void
s_find(int m, const vd_point_t *pts, size_t n, s_found_t *f)
{
    char err[256];
    f->n = 0;
    if (m == M_PARITY) {
        vd_change_params_t p;
        vd_change_t cp[S_MAX_CP];
        vd_change_params_default(&p);
        p.window = n;
        if (vd_change_find(pts, n, &p, cp, S_MAX_CP, &f->n, err,
                           sizeof err) != VD_OK) {
            fprintf(stderr, "changes-quality: %s\n", err);
            exit(1);
        }
        f->n = f->n > S_MAX_CP ? S_MAX_CP : f->n;
        /* What a user reads: a staircase folded into one trend. */
        vd_trend_t tr[S_MAX_CP];
        size_t ntr = 0, t = 0, out = 0;
        if (vd_trend_find(pts, n, cp, f->n, &p.rule, tr, S_MAX_CP, &ntr, err,
                          sizeof err) != VD_OK) {
            fprintf(stderr, "changes-quality: %s\n", err);
            exit(1);
        }
        for (size_t k = 0; k < f->n; k++, out++) {
            bool trend = t < ntr && k == tr[t].first;
            f->idx[out] = trend ? tr[t].start : cp[k].index;
            f->loss[out] = trend ? tr[t].outcome == VD_LOSS &&
                                   !tr[t].within_noise
                                 : cp[k].outcome == VD_LOSS &&
                                   !cp[k].within_noise;
            if (trend)
                k = tr[t++].last;
        }
        f->n = out;
        return;
    }
    double x[S_MAX_N];
    vd_otava_cp_t cp[S_MAX_CP];
    for (size_t i = 0; i < n; i++)
        x[i] = pts[i].median;
    if (vd_otava_find(x, n, VD_OTAVA_DEFAULT_WINDOW, VD_OTAVA_DEFAULT_MAX_P,
                      0.0, cp, S_MAX_CP, &f->n, err, sizeof err) != 0) {
        fprintf(stderr, "changes-quality: %s\n", err);
        exit(1);
    }
    f->n = f->n > S_MAX_CP ? S_MAX_CP : f->n;
    for (size_t k = 0; k < f->n; k++) {
        f->idx[k] = cp[k].index;
        f->loss[k] = false;
    }
}

/* The reported change nearest to at; SIZE_MAX when none. */
static size_t
s_nearest(const s_found_t *f, size_t at)
{
    size_t best = SIZE_MAX, dist = SIZE_MAX;
    for (size_t k = 0; k < f->n; k++) {
        size_t d = f->idx[k] > at ? f->idx[k] - at : at - f->idx[k];
        if (d < dist) {
            dist = d;
            best = k;
        }
    }
    return best;
}

static void
s_make(uint64_t seed, const sg_spec_t *spec, size_t n, vd_point_t *pts)
{
    double samples[SG_MAX_SAMPLES];
    sg_rng_t r;
    sg_seed(&r, seed);
    for (size_t k = 0; k < n; k++)
        sg_run(&r, spec, k, samples, &pts[k]);
}

static void
s_spec(sg_spec_t *spec)
{
    sg_spec_default(spec, S_CV);
    spec->base_us = S_BASE_US;
}

typedef struct {
    char name[32];
    size_t n;
    bool step;                       /* found/exact/off1/worse/loss */
    double found[M_N], exact[M_N], off1[M_N], worse[M_N], loss[M_N];
    double per_1000[M_N];            /* no-step rows */
    double first[M_N];               /* drift: median runs to the first */
    double count[M_N];               /* drift: changes a series, mean */
} s_row_t;

static uint64_t
s_seed(size_t i, size_t n, unsigned salt)
{
    return 1000003u * (uint64_t)(i + 1) + 7919u * (uint64_t)n + salt;
}

/* A step row: SEEDS series of n points with a step at `at`. */
static void
s_step_row(s_row_t *row, size_t seeds, size_t n, double step, size_t at,
           unsigned salt)
{
    vd_point_t pts[S_MAX_N];
    sg_spec_t spec;
    s_spec(&spec);
    spec.step_at = at;
    spec.step = step;
    row->n = n;
    row->step = true;
    for (int m = 0; m < M_N; m++) {
        size_t found = 0, exact = 0, off1 = 0, worse = 0, loss = 0;
        for (size_t i = 0; i < seeds; i++) {
            s_found_t f;
            s_make(s_seed(i, n, salt), &spec, n, pts);
            s_find(m, pts, n, &f);
            size_t k = s_nearest(&f, at);
            if (k == SIZE_MAX)
                continue;
            size_t d = f.idx[k] > at ? f.idx[k] - at : at - f.idx[k];
            found++;
            exact += d == 0;
            off1 += d == 1;
            worse += d > 1;
            loss += f.loss[k];
        }
        row->found[m] = 100.0 * (double)found / (double)seeds;
        row->exact[m] = 100.0 * (double)exact / (double)seeds;
        row->off1[m] = 100.0 * (double)off1 / (double)seeds;
        row->worse[m] = 100.0 * (double)worse / (double)seeds;
        row->loss[m] = m == M_PARITY ? 100.0 * (double)loss / (double)seeds
                                     : NAN;
    }
}

/* A no-step row: changes reported per 1,000 runs. */
static void
s_noise_row(s_row_t *row, size_t seeds, size_t n, const sg_spec_t *spec,
            unsigned salt)
{
    vd_point_t pts[S_MAX_N];
    row->n = n;
    for (int m = 0; m < M_N; m++) {
        size_t changes = 0;
        for (size_t i = 0; i < seeds; i++) {
            s_found_t f;
            s_make(s_seed(i, n, salt), spec, n, pts);
            s_find(m, pts, n, &f);
            changes += f.n;
        }
        row->per_1000[m] = 1000.0 * (double)changes / (double)(seeds * n);
        row->first[m] = NAN;
    }
}

static int
s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Drift 0.5 % a run from n / 4: found, and the median number of runs
 * from the drift's start to the first change after it. */
static void
s_drift_row(s_row_t *row, size_t seeds, size_t n)
{
    vd_point_t pts[S_MAX_N];
    double *first = malloc(seeds * sizeof *first);
    sg_spec_t spec;
    if (!first)
        exit(1);
    s_spec(&spec);
    spec.drift_per_run = 0.005;
    spec.drift_from = n / 4;
    row->n = n;
    for (int m = 0; m < M_N; m++) {
        size_t found = 0, changes = 0;
        for (size_t i = 0; i < seeds; i++) {
            s_found_t f;
            s_make(s_seed(i, n, 31), &spec, n, pts);
            s_find(m, pts, n, &f);
            changes += f.n;
            first[i] = INFINITY;
            for (size_t k = 0; k < f.n; k++)
                if (f.idx[k] >= n / 4 && !isfinite(first[i]))
                    first[i] = (double)(f.idx[k] - n / 4);
            found += isfinite(first[i]);
        }
        qsort(first, seeds, sizeof *first, s_cmp);
        row->found[m] = 100.0 * (double)found / (double)seeds;
        row->first[m] = first[seeds / 2];
        row->count[m] = (double)changes / (double)seeds;
        row->per_1000[m] = NAN;
    }
    free(first);
}

/* Two +10 % steps 8 runs apart: both found within one run. */
static void
s_two_row(s_row_t *row, size_t seeds, size_t n)
{
    vd_point_t pts[S_MAX_N];
    sg_spec_t spec;
    size_t a = n / 2, b = n / 2 + 8;
    s_spec(&spec);
    spec.step_at = a;
    spec.step = 0.10;
    row->n = n;
    for (int m = 0; m < M_N; m++) {
        size_t both = 0;
        for (size_t i = 0; i < seeds; i++) {
            s_found_t f;
            s_make(s_seed(i, n, 37), &spec, n, pts);
            for (size_t k = b; k < n; k++) {
                pts[k].median *= 1.10;
                pts[k].min *= 1.10;
                pts[k].q25 *= 1.10;
                pts[k].q75 *= 1.10;
                pts[k].max *= 1.10;
            }
            s_find(m, pts, n, &f);
            bool fa = false, fb = false;
            for (size_t k = 0; k < f.n; k++) {
                fa = fa || (f.idx[k] + 1 >= a && f.idx[k] <= a + 1);
                fb = fb || (f.idx[k] + 1 >= b && f.idx[k] <= b + 1);
            }
            both += fa && fb;
        }
        row->found[m] = 100.0 * (double)both / (double)seeds;
        row->per_1000[m] = NAN;
        row->first[m] = NAN;
    }
}

static void
s_print(const s_row_t *rows, size_t nrows, size_t seeds)
{
    printf("| case | runs | Parity: found | exact | off by 1 | worse | "
           "loss | Otava: found | exact | off by 1 | worse |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t r = 0; r < nrows; r++) {
        const s_row_t *w = &rows[r];
        if (w->step)
            printf("| %s | %zu | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | "
                   "%.1f | %.1f | %.1f |\n", w->name, w->n, w->found[0],
                   w->exact[0], w->off1[0], w->worse[0], w->loss[0],
                   w->found[1], w->exact[1], w->off1[1], w->worse[1]);
    }
    printf("\n| case | runs | Parity | Otava |\n|---|---|---|---|\n");
    for (size_t r = 0; r < nrows; r++) {
        const s_row_t *w = &rows[r];
        if (w->step)
            continue;
        if (isfinite(w->per_1000[0]))
            printf("| %s | %zu | %.2f false per 1,000 runs | %.2f |\n",
                   w->name, w->n, w->per_1000[0], w->per_1000[1]);
        else if (strncmp(w->name, "drift", 5) == 0)
            printf("| %s | %zu | found %.1f %%, first after %.0f runs, "
                   "%.1f change points a series | found %.1f %%, first "
                   "after %.0f runs, %.1f |\n", w->name, w->n, w->found[0],
                   w->first[0], w->count[0], w->found[1], w->first[1],
                   w->count[1]);
        else
            printf("| %s | %zu | both found %.1f %% | %.1f %% |\n", w->name,
                   w->n, w->found[0], w->found[1]);
    }
    printf("\n%zu seeds a case; 1 %% noise of the per-run medians, 15 "
           "samples a run, 5 ms\n", seeds);
}

static void
s_json(const s_row_t *rows, size_t nrows, size_t seeds)
{
    printf("{\"seeds\":%zu,\"rows\":[", seeds);
    for (size_t r = 0; r < nrows; r++) {
        const s_row_t *w = &rows[r];
        printf("%s{\"case\":\"%s\",\"runs\":%zu", r ? "," : "", w->name,
               w->n);
        for (int m = 0; m < M_N; m++) {
            printf(",\"%s\":{", s_method[m]);
            if (w->step)
                printf("\"found\":%.1f,\"exact\":%.1f,\"off1\":%.1f,"
                       "\"worse\":%.1f", w->found[m], w->exact[m],
                       w->off1[m], w->worse[m]);
            else if (isfinite(w->per_1000[m]))
                printf("\"per_1000\":%.2f", w->per_1000[m]);
            else
                printf("\"found\":%.1f", w->found[m]);
            if (w->step && m == M_PARITY)
                printf(",\"loss\":%.1f", w->loss[m]);
            if (!w->step && isfinite(w->first[m]))
                printf(",\"first_runs\":%.0f,\"changes\":%.1f",
                       w->first[m], w->count[m]);
            printf("}");
        }
        printf("}");
    }
    printf("]}\n");
}

int
main(int argc, char **argv)
{
    size_t seeds = argc > 1 ? strtoul(argv[1], NULL, 10) : 200;
    static const double steps[] = { 0.02, 0.03, 0.05, 0.10, 0.20 };
    static const size_t lens[] = { 40, 200 };
    s_row_t rows[2 * 11];
    size_t nr = 0;
    sg_spec_t spec;

    if (argc > 2 || seeds < 1 || seeds > 10000) {
        fprintf(stderr, "usage: changes-quality [SEEDS (1..10000)]\n");
        return 2;
    }
    memset(rows, 0, sizeof rows);
    for (size_t l = 0; l < 2; l++) {
        size_t n = lens[l];
        for (size_t s = 0; s < 5; s++) {
            snprintf(rows[nr].name, sizeof rows[nr].name, "step %.0f %%",
                     steps[s] * 100);
            s_step_row(&rows[nr++], seeds, n, steps[s], n / 2,
                       (unsigned)(s + 1));
        }
        snprintf(rows[nr].name, sizeof rows[nr].name, "10 %% at 3rd-newest");
        s_step_row(&rows[nr++], seeds, n, 0.10, n - 3, 11);
        s_spec(&spec);
        snprintf(rows[nr].name, sizeof rows[nr].name, "A/A noise");
        s_noise_row(&rows[nr++], seeds, n, &spec, 13);
        spec.modes = true;
        spec.modes_sticky = 0.9;
        snprintf(rows[nr].name, sizeof rows[nr].name, "timing modes, sticky");
        s_noise_row(&rows[nr++], seeds, n, &spec, 17);
        s_spec(&spec);
        spec.outlier_rate = 0.01;
        snprintf(rows[nr].name, sizeof rows[nr].name, "outliers 1 %%, 3x");
        s_noise_row(&rows[nr++], seeds, n, &spec, 19);
        snprintf(rows[nr].name, sizeof rows[nr].name, "drift 0.5 %%/run");
        s_drift_row(&rows[nr++], seeds, n);
        snprintf(rows[nr].name, sizeof rows[nr].name, "two steps 8 apart");
        s_two_row(&rows[nr++], seeds, n);
    }
    s_print(rows, nr, seeds);
    s_json(rows, nr, seeds);
    return 0;
}
