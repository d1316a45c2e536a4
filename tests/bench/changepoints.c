/* changepoints.c -- detection quality of vd_change_find on
 * synthetic series (tests/verdict/series_gen.h), against two peers in
 * the same run:
 *
 *   parity  vd_change_params_default (floor_us 25, the default floor)
 *   otava   vd_change_params_otava: Apache Otava's defaults (window 50,
 *           p 0.001, no magnitude filter, no robustness filters)
 *   prev    the plain "verdict vs previous run": vd_compare of run k's
 *           samples against run k-1's (default rule, floor 25 us), a
 *           change reported whenever the outcome is not parity. It uses
 *           the generator's per-run samples, as parity compare would.
 *
 * Every change-point detector runs incrementally, as the collector will:
 * after each new run, on the series so far (vd_change_find looks at the
 * last `window` points of it).
 *
 *   changepoints [options] [STEP_SERIES [NOISE_SERIES]]  (100 and 50)
 *
 * Options change Parity's parameters, to measure a trade-off:
 * --max-p X, --window N, --min-relative X, --min-segment N, --no-robust;
 * --parity-only skips the two peers (their columns print as 0).
 *
 * Step series: 150 runs, then a step of 2, 5 or 10 %, then 40 runs; noise
 * (CV of the per-run medians) 0.5, 1, 2 and 5 %. A step is detected at the
 * first run after which a change within +-2 of the true index is
 * reported; runs-to-detection counts the runs from the step on that were
 * seen (the step's own run is 1). recall5 = detected within 5 runs,
 * recall = within the 40.
 *
 * False alarms: 400-run series without a step (noise only at each CV,
 * timing modes at CV 1 %, the slow-mode share redrawn every run or kept
 * from the last run 90 % of the time, 1 % outlier runs at 3x), detectors run from run 20 on;
 * an alarm is a reported change whose index is not within +-2 of one
 * already counted, per 1,000 runs looked at. Drift (2 % a week, nightly
 * runs: 0.286 % a run, CV 1 %) is a real change, so its row says how
 * many runs after the drift began (run 100) until the first report, and
 * how much drift had built up by then; its "alarms" are the staircase of
 * steps a drift is reported as.
 *
 * Prints a table, the median time of one vd_change_find on a window of
 * 200, and, last, one JSON object. Not a test: the figures go to
 * docs/regressions.md with the command (tests/bench/changepoints.sh). */
#include "pw_clock.h"
#include "vd_change.h"
#include "verdict/series_gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S_PRE        150      /* runs before the step */
#define S_POST       40       /* runs after it */
#define S_FA_RUNS    400      /* runs in a false-alarm series */
#define S_FA_START   20       /* first run the detectors look at */
#define S_BASE_US    5000.0   /* a 5 ms benchmark: floor 25 us is 0.5 % */
#define S_MAX_CP     64
#define S_DRIFT_FROM 100      /* run where the drift series starts */
#define S_DETECTORS  3

enum { D_PARITY, D_OTAVA, D_PREV };
static const char *const s_names[S_DETECTORS] = {"parity", "otava", "prev"};
static bool s_parity_only;

static int
s_cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

static double
s_quantile(double *v, size_t n, double p)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof *v, s_cmp_double);
    return vd_quantile_sorted(v, n, p);
}

/* A generated series with its samples kept for the prev detector. */
typedef struct {
    size_t n;
    vd_point_t *pts;
    double *samples;     /* n x SG_MAX_SAMPLES */
    size_t per_run;
} s_series_t;

static void
s_make(s_series_t *s, uint64_t seed, const sg_spec_t *spec, size_t n)
{
    sg_rng_t r;
    sg_seed(&r, seed);
    s->n = n;
    s->per_run = spec->samples;
    for (size_t k = 0; k < n; k++)
        sg_run(&r, spec, k, s->samples + k * SG_MAX_SAMPLES, &s->pts[k]);
}

/* Changes reported by detector d after run k-1 (points 0..k-1 seen). */
static size_t
s_detect(int d, const vd_change_params_t *params, const s_series_t *s,
         size_t k, size_t *idx)
{
    vd_change_t cps[S_MAX_CP];
    size_t n = 0;
    char err[256];

    if (d == D_PREV) {
        vd_params_t rule;
        vd_verdict_t v;
        vd_params_default(&rule);
        if (k < 2)
            return 0;
        if (vd_compare(s->samples + (k - 1) * SG_MAX_SAMPLES, s->per_run,
                       s->samples + (k - 2) * SG_MAX_SAMPLES, s->per_run,
                       &rule, &v, err, sizeof err) != VD_OK) {
            fprintf(stderr, "changepoints: vd_compare: %s\n", err);
            exit(1);
        }
        if (v.outcome == VD_PARITY)
            return 0;
        idx[0] = k - 1;
        return 1;
    }
    if (vd_change_find(s->pts, k, params, cps, S_MAX_CP, &n, err,
                       sizeof err) != VD_OK) {
        fprintf(stderr, "changepoints: vd_change_find: %s\n", err);
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        idx[i] = cps[i].index;
    return n;
}

typedef struct {
    double step, cv;
    double recall5[S_DETECTORS], recall[S_DETECTORS];
    double median_runs[S_DETECTORS], p90_runs[S_DETECTORS];
} s_step_row_t;

static void
s_step_cell(double step, double cv, size_t nseries,
            const vd_change_params_t *params, s_series_t *s,
            s_step_row_t *row)
{
    sg_spec_t spec;
    double *runs = malloc(nseries * sizeof *runs);
    size_t idx[S_MAX_CP];

    if (!runs)
        exit(1);
    sg_spec_default(&spec, cv);
    spec.base_us = S_BASE_US;
    spec.step_at = S_PRE;
    spec.step = step;
    row->step = step;
    row->cv = cv;
    for (int d = 0; d < (s_parity_only ? 1 : S_DETECTORS); d++) {
        size_t found = 0, found5 = 0;
        for (size_t i = 0; i < nseries; i++) {
            s_make(s, 1000003u * (i + 1) + (uint64_t)(step * 1e4) * 7919u +
                   (uint64_t)(cv * 1e4), &spec, S_PRE + S_POST);
            runs[i] = INFINITY;
            for (size_t k = S_PRE + 1; k <= S_PRE + S_POST; k++) {
                size_t n = s_detect(d, &params[d], s, k, idx), hit = 0;
                for (size_t j = 0; j < n; j++)
                    if (idx[j] + 2 >= S_PRE && idx[j] <= S_PRE + 2)
                        hit = 1;
                if (hit) {
                    runs[i] = (double)(k - S_PRE);
                    break;
                }
            }
            found += isfinite(runs[i]);
            found5 += runs[i] <= 5.0;
        }
        row->recall[d] = 100.0 * (double)found / (double)nseries;
        row->recall5[d] = 100.0 * (double)found5 / (double)nseries;
        /* Misses count as infinitely late: the median and p90 are over
         * all series, so a p90 of inf means under 90 % recall. */
        row->median_runs[d] = s_quantile(runs, nseries, 0.5);
        row->p90_runs[d] = s_quantile(runs, nseries, 0.9);
    }
    free(runs);
}

typedef struct {
    const char *name;
    double per_1000[S_DETECTORS];
    double first_run[S_DETECTORS];   /* median run of the first alarm */
} s_fa_row_t;

/* first_run counts from origin: only alarms after it (the drift's
 * start) count as the first. */
static void
s_fa_cell(const char *name, const sg_spec_t *spec, size_t nseries,
          size_t origin, const vd_change_params_t *params, s_series_t *s,
          s_fa_row_t *row)
{
    size_t idx[S_MAX_CP], alarmed[4 * S_FA_RUNS];
    double *first = malloc(nseries * sizeof *first);

    if (!first)
        exit(1);
    row->name = name;
    for (int d = 0; d < (s_parity_only ? 1 : S_DETECTORS); d++) {
        size_t alarms = 0, looked = 0;
        for (size_t i = 0; i < nseries; i++) {
            size_t nal = 0;
            s_make(s, 7777777u * (i + 1) + (uint64_t)(spec->cv * 1e5) +
                   (spec->modes ? 11u : 0) + (spec->outlier_rate > 0 ? 13u : 0)
                   + (spec->drift_per_run > 0 ? 17u : 0), spec, S_FA_RUNS);
            first[i] = INFINITY;
            for (size_t k = S_FA_START; k <= S_FA_RUNS; k++) {
                size_t n = s_detect(d, &params[d], s, k, idx);
                looked++;
                for (size_t j = 0; j < n; j++) {
                    bool seen = false;
                    for (size_t a = 0; a < nal && !seen; a++)
                        seen = idx[j] + 2 >= alarmed[a] &&
                               idx[j] <= alarmed[a] + 2;
                    if (seen || nal == sizeof alarmed / sizeof *alarmed)
                        continue;
                    alarmed[nal++] = idx[j];
                    alarms++;
                    if (!isfinite(first[i]) && k > origin)
                        first[i] = (double)(k - origin);
                }
            }
        }
        row->per_1000[d] = 1000.0 * (double)alarms / (double)looked;
        row->first_run[d] = s_quantile(first, nseries, 0.5);
    }
    free(first);
}

static double
s_time_window(const vd_change_params_t *p, s_series_t *s)
{
    sg_spec_t spec;
    double t[301];
    vd_change_t cps[S_MAX_CP];
    size_t n;
    char err[256];

    sg_spec_default(&spec, 0.02);
    spec.base_us = S_BASE_US;
    spec.step_at = 150;
    spec.step = 0.10;
    s_make(s, 42, &spec, 200);
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        double t0 = pw_clock_mono_sec();
        if (vd_change_find(s->pts, 200, p, cps, S_MAX_CP, &n, err,
                           sizeof err) != VD_OK) {
            fprintf(stderr, "changepoints: %s\n", err);
            exit(1);
        }
        t[i] = (pw_clock_mono_sec() - t0) * 1e6;
    }
    return s_quantile(t, sizeof t / sizeof *t, 0.5);
}

static void
s_fmt_runs(char *buf, size_t len, double v)
{
    if (isfinite(v))
        snprintf(buf, len, "%.0f", v);
    else
        snprintf(buf, len, "-");
}

int
main(int argc, char **argv)
{
    size_t nstep = 100, nfa = 50, npos = 0;
    static const double steps[] = {0.02, 0.05, 0.10};
    static const double cvs[] = {0.005, 0.01, 0.02, 0.05};
    enum { NSTEP = 3, NCV = 4, NFA = 8 };
    s_step_row_t rows[NSTEP * NCV] = {{0}};
    s_fa_row_t fa[NFA] = {{0}};
    vd_change_params_t params[S_DETECTORS];
    s_series_t s;
    double t0 = pw_clock_mono_sec(), drift_pct[S_DETECTORS];

    vd_change_params_default(&params[D_PARITY]);
    for (int i = 1; i < argc; i++) {
        vd_change_params_t *pp = &params[D_PARITY];
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (strcmp(a, "--max-p") == 0 && ++i)
            pp->max_p_value = strtod(v, NULL);
        else if (strcmp(a, "--window") == 0 && ++i)
            pp->window = strtoul(v, NULL, 10);
        else if (strcmp(a, "--min-relative") == 0 && ++i)
            pp->min_relative = strtod(v, NULL);
        else if (strcmp(a, "--min-segment") == 0 && ++i)
            pp->min_segment = strtoul(v, NULL, 10);
        else if (strcmp(a, "--no-robust") == 0)
            pp->robust = false;
        else if (strcmp(a, "--parity-only") == 0)
            s_parity_only = true;
        else if (a[0] != '-' && npos < 2)
            *(npos++ ? &nfa : &nstep) = strtoul(a, NULL, 10);
        else
            nstep = 0;
    }
    if (nstep == 0 || nstep > 100000 || nfa == 0 || nfa > 10000) {
        fprintf(stderr, "usage: changepoints [--max-p X] [--window N] "
                "[--min-relative X] [--min-segment N] [--no-robust] "
                "[--parity-only] [STEP_SERIES (1..100000) "
                "[NOISE_SERIES (1..10000)]]\n");
        return 2;
    }
    vd_change_params_otava(&params[D_OTAVA]);
    vd_change_params_default(&params[D_PREV]);   /* unused */
    s.pts = malloc(S_FA_RUNS * sizeof *s.pts);
    s.samples = malloc(S_FA_RUNS * SG_MAX_SAMPLES * sizeof *s.samples);
    if (!s.pts || !s.samples)
        return 1;

    for (int i = 0; i < NSTEP; i++)
        for (int j = 0; j < NCV; j++)
            s_step_cell(steps[i], cvs[j], nstep, params, &s,
                        &rows[i * NCV + j]);

    sg_spec_t spec;
    for (int j = 0; j < NCV; j++) {
        static const char *const names[NCV] = {"noise 0.5%", "noise 1%",
                                               "noise 2%", "noise 5%"};
        sg_spec_default(&spec, cvs[j]);
        spec.base_us = S_BASE_US;
        s_fa_cell(names[j], &spec, nfa, 0, params, &s, &fa[j]);
    }
    sg_spec_default(&spec, 0.01);
    spec.base_us = S_BASE_US;
    spec.modes = true;
    s_fa_cell("timing modes 1.3x", &spec, nfa, 0, params, &s, &fa[4]);
    spec.modes_sticky = 0.9;
    s_fa_cell("timing modes 1.3x, sticky", &spec, nfa, 0, params, &s,
              &fa[7]);
    sg_spec_default(&spec, 0.01);
    spec.base_us = S_BASE_US;
    spec.outlier_rate = 0.01;
    s_fa_cell("outliers 1% of runs 3x", &spec, nfa, 0, params, &s, &fa[5]);
    sg_spec_default(&spec, 0.01);
    spec.base_us = S_BASE_US;
    spec.drift_per_run = 0.02 / 7.0;
    spec.drift_from = S_DRIFT_FROM;
    s_fa_cell("drift 2%/week from run 100", &spec, nfa, S_DRIFT_FROM, params, &s,
              &fa[6]);
    for (int d = 0; d < S_DETECTORS; d++) {
        drift_pct[d] = 100.0 * (pow(1.0 + spec.drift_per_run,
                                    fa[6].first_run[d]) - 1.0);
    }

    vd_change_params_t timed;
    vd_change_params_default(&timed);   /* always the defaults, window 200 */
    double find_us = s_time_window(&timed, &s);
    double elapsed = pw_clock_mono_sec() - t0;

    printf("step  noise | recall within 5 runs %% | recall within 40 %% "
           "| median runs       | p90 runs\n");
    printf("            | parity otava  prev     | parity otava  prev "
           "| parity otava prev | parity otava prev\n");
    for (int r = 0; r < NSTEP * NCV; r++) {
        char m[S_DETECTORS][16], p9[S_DETECTORS][16];
        for (int d = 0; d < S_DETECTORS; d++) {
            s_fmt_runs(m[d], sizeof m[d], rows[r].median_runs[d]);
            s_fmt_runs(p9[d], sizeof p9[d], rows[r].p90_runs[d]);
        }
        printf("%3.0f%% %5.1f%% | %6.0f %5.0f %5.0f    | %6.0f %5.0f %5.0f "
               "| %6s %5s %4s | %6s %5s %4s\n", rows[r].step * 100,
               rows[r].cv * 100, rows[r].recall5[0], rows[r].recall5[1],
               rows[r].recall5[2], rows[r].recall[0], rows[r].recall[1],
               rows[r].recall[2], m[0], m[1], m[2], p9[0], p9[1], p9[2]);
    }
    printf("\nno-step series (%zu x %d runs)  | alarms per 1,000 runs      "
           "| median run of the first\n", nfa, S_FA_RUNS - S_FA_START + 1);
    printf("                               | parity  otava   prev       "
           "| parity otava prev\n");
    for (int r = 0; r < NFA; r++) {
        char f[S_DETECTORS][16];
        for (int d = 0; d < S_DETECTORS; d++)
            s_fmt_runs(f[d], sizeof f[d], fa[r].first_run[d]);
        printf("%-30s | %6.2f %6.2f %6.2f      | %6s %5s %4s\n", fa[r].name,
               fa[r].per_1000[0], fa[r].per_1000[1], fa[r].per_1000[2],
               f[0], f[1], f[2]);
    }
    printf("drift: first report (median) after %.1f %% / %.1f %% / %.1f %% "
           "of drift (runs counted from the drift's start)\n",
           drift_pct[0], drift_pct[1], drift_pct[2]);
    printf("\nvd_change_find, window 200, parity defaults: median %.0f us\n",
           find_us);
    printf("elapsed %.1f s\n", elapsed);

    printf("{\"step_series\":%zu,\"noise_series\":%zu,\"find_us_w200\":%.1f,"
           "\"elapsed_s\":%.1f,\"steps\":[", nstep, nfa, find_us, elapsed);
    for (int r = 0; r < NSTEP * NCV; r++) {
        printf("%s{\"step\":%.2f,\"cv\":%.3f", r ? "," : "", rows[r].step,
               rows[r].cv);
        for (int d = 0; d < S_DETECTORS; d++)
            printf(",\"%s\":{\"recall5\":%.1f,\"recall\":%.1f,"
                   "\"median_runs\":%.0f,\"p90_runs\":%.0f}", s_names[d],
                   rows[r].recall5[d], rows[r].recall[d],
                   isfinite(rows[r].median_runs[d]) ? rows[r].median_runs[d]
                                                    : -1.0,
                   isfinite(rows[r].p90_runs[d]) ? rows[r].p90_runs[d] : -1.0);
        printf("}");
    }
    printf("],\"no_step\":[");
    for (int r = 0; r < NFA; r++) {
        printf("%s{\"series\":\"%s\"", r ? "," : "", fa[r].name);
        for (int d = 0; d < S_DETECTORS; d++)
            printf(",\"%s\":{\"per_1000\":%.2f,\"first_run\":%.0f}",
                   s_names[d], fa[r].per_1000[d],
                   isfinite(fa[r].first_run[d]) ? fa[r].first_run[d] : -1.0);
        printf("}");
    }
    printf("],\"drift_pct_at_first\":{\"parity\":%.1f,\"otava\":%.1f,"
           "\"prev\":%.1f}}\n", isfinite(drift_pct[0]) ? drift_pct[0] : -1.0,
           isfinite(drift_pct[1]) ? drift_pct[1] : -1.0,
           isfinite(drift_pct[2]) ? drift_pct[2] : -1.0);
    free(s.pts);
    free(s.samples);
    return 0;
}
