/* vd_verdict.c -- the verdict rule; see vd_verdict.h and
 * ../shared/spec/verdict-rule.md, which is the contract. */
#include "vd_verdict.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vd_name.h"

void
vd_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int
s_cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Up to 8 samples: an optimal 19-comparator sorting network (checked on
 * all 256 inputs of 0s and 1s), padded with +infinity. Compare-exchange
 * compiles to minsd/maxsd, so random order costs no mispredicted
 * branches; insertion sort spent half of vd_compare's time there on 7
 * samples (docs/performance.md). Samples are finite here: callers check
 * first, and NaN would only give an unsorted result, never a fault. */
#define S_NET_MAX 8

#define S_CMPSWAP(i, j) do {                                   \
        double a_ = v[i], b_ = v[j];                           \
        v[i] = a_ < b_ ? a_ : b_;  /* minsd */                 \
        v[j] = a_ > b_ ? a_ : b_;  /* maxsd */                 \
    } while (0)

static void
s_sort_network(double *x, size_t n)
{
    double v[S_NET_MAX];
    for (size_t i = 0; i < S_NET_MAX; i++)
        v[i] = i < n ? x[i] : INFINITY;
    S_CMPSWAP(0, 2); S_CMPSWAP(1, 3); S_CMPSWAP(4, 6); S_CMPSWAP(5, 7);
    S_CMPSWAP(0, 4); S_CMPSWAP(1, 5); S_CMPSWAP(2, 6); S_CMPSWAP(3, 7);
    S_CMPSWAP(0, 1); S_CMPSWAP(2, 3); S_CMPSWAP(4, 5); S_CMPSWAP(6, 7);
    S_CMPSWAP(2, 4); S_CMPSWAP(3, 5);
    S_CMPSWAP(1, 4); S_CMPSWAP(3, 6);
    S_CMPSWAP(1, 2); S_CMPSWAP(3, 4); S_CMPSWAP(5, 6);
    for (size_t i = 0; i < n; i++)
        x[i] = v[i];
}
#undef S_CMPSWAP

/* Insertion sort above 8: arms are usually 5-50 samples, where it beats
 * qsort's call overhead by a wide margin. */
static void
s_sort(double *x, size_t n)
{
    if (n <= S_NET_MAX) {
        s_sort_network(x, n);
        return;
    }
    if (n > VD_STACK_SAMPLES) {
        qsort(x, n, sizeof *x, s_cmp_double);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        double v = x[i];
        size_t j = i;
        while (j > 0 && x[j - 1] > v) {
            x[j] = x[j - 1];
            j--;
        }
        x[j] = v;
    }
}

void
vd_params_default(vd_params_t *p)
{
    p->parity = VD_DEFAULT_PARITY;
    p->floor_us = VD_DEFAULT_FLOOR_US;
    p->floor_is_default = true;
}

double
vd_quantile_sorted(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return NAN;
    /* p outside [0, 1] (or NaN) would make (size_t)floor(h) undefined. */
    if (n == 1 || !(p > 0.0))
        return sorted[0];
    if (p >= 1.0)
        return sorted[n - 1];
    double h = (double)(n - 1) * p;
    size_t lo = (size_t)floor(h);
    if (lo >= n - 1)
        return sorted[n - 1];
    return sorted[lo] + (h - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

/* Check every sample; returns the index of the first bad one or n. */
static size_t
s_first_bad(const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || !(x[i] > 0.0))
            return i;
    return n;
}

static void
s_summarize_sorted(const double *s, size_t n, vd_summary_t *out)
{
    double sum = 0.0, mean;
    for (size_t i = 0; i < n; i++)
        sum += s[i];
    mean = sum / (double)n;
    if (!isfinite(sum)) {   /* samples near DBL_MAX: sum the parts */
        mean = 0.0;
        for (size_t i = 0; i < n; i++)
            mean += s[i] / (double)n;
    }
    out->n = n;
    out->min = s[0];
    out->max = s[n - 1];
    out->q25 = vd_quantile_sorted(s, n, 0.25);
    out->median = vd_quantile_sorted(s, n, 0.5);
    out->q75 = vd_quantile_sorted(s, n, 0.75);
    out->iqr = out->q75 - out->q25;
    out->mean = mean;
}

/* The timing-modes test on data already sorted (vd_compare's copies). */
static bool
s_timing_modes_sorted(const double *s, size_t n)
{
    size_t cut = 0;     /* gap between s[cut-1] and s[cut] */
    double widest = -1.0;

    if (n < 4)
        return false;
    for (size_t i = 2; i + 1 < n; i++) {  /* >= 2 samples each side */
        double gap = s[i] - s[i - 1];
        if (gap > widest) {
            widest = gap;
            cut = i;
        }
    }
    if (!cut)
        return false;
    double median = vd_quantile_sorted(s, n, 0.5);
    double low_spread = s[cut - 1] - s[0];
    double high_spread = s[n - 1] - s[cut];
    return widest >= 0.05 * median && widest > low_spread &&
           widest > high_spread;
}

bool
vd_timing_modes(const double *x, size_t n)
{
    double stack[VD_STACK_SAMPLES];
    double *s = stack;
    bool result;

    if (n < 4 || n > VD_MAX_SAMPLES)
        return false;
    if (n > VD_STACK_SAMPLES && !(s = malloc(n * sizeof *s)))
        return false;
    memcpy(s, x, n * sizeof *s);
    s_sort(s, n);
    result = s_timing_modes_sorted(s, n);
    if (s != stack)
        free(s);
    return result;
}

int
vd_summarize(const double *x, size_t n, vd_summary_t *out,
             char *err, size_t errlen)
{
    double stack[VD_STACK_SAMPLES];
    double *s = stack;
    size_t bad;

    if (n == 0) {
        vd_errf(err, errlen, "no samples");
        return VD_ERR;
    }
    if (n > VD_MAX_SAMPLES) {
        vd_errf(err, errlen, "%zu samples, more than the limit of %u", n,
              VD_MAX_SAMPLES);
        return VD_ERR;
    }
    if ((bad = s_first_bad(x, n)) < n) {
        vd_errf(err, errlen, "sample %zu is %g: samples must be finite and > 0",
              bad + 1, x[bad]);
        return VD_ERR;
    }
    if (n > VD_STACK_SAMPLES && !(s = malloc(n * sizeof *s))) {
        vd_errf(err, errlen, "out of memory for %zu samples", n);
        return VD_ERR;
    }
    memcpy(s, x, n * sizeof *s);
    s_sort(s, n);
    s_summarize_sorted(s, n, out);
    if (s != stack)
        free(s);
    return VD_OK;
}

static int
s_check_params(const vd_params_t *p, char *err, size_t errlen)
{
    if (!isfinite(p->parity) || p->parity < 0.0) {
        vd_errf(err, errlen, "parity %g: must be a finite number >= 0",
              p->parity);
        return VD_ERR;
    }
    if (!isfinite(p->floor_us) || p->floor_us < 0.0) {
        vd_errf(err, errlen, "floor %g: must be a finite number >= 0",
              p->floor_us);
        return VD_ERR;
    }
    return VD_OK;
}

static bool
s_finite_positive(double x)
{
    return isfinite(x) && x > 0.0;
}

/* A summary the rule can use: 2 or more samples, a finite minimum > 0, a
 * finite median >= the minimum, a finite IQR. Summaries from vd_summarize
 * always are; this guards ones read back from a file or a database.
 * (Stricter order checks could refuse a real summary over one rounding
 * of the type-7 interpolation.) */
static int
s_check_summary(const char *side, const vd_summary_t *s, char *err,
                size_t errlen)
{
    if (s->n < 2) {
        vd_errf(err, errlen, "%s arm has %zu sample%s: at least 2 a side",
              side, s->n, s->n == 1 ? "" : "s");
        return VD_ERR;
    }
    if (s->n > VD_MAX_SAMPLES) {
        vd_errf(err, errlen, "%zu samples in one arm, more than the limit of "
              "%u", s->n, VD_MAX_SAMPLES);
        return VD_ERR;
    }
    if (!s_finite_positive(s->min) || !isfinite(s->median) ||
        !(s->median >= s->min) || !isfinite(s->iqr)) {
        vd_errf(err, errlen, "%s summary is not of samples > 0: min %g, "
              "median %g, iqr %g", side, s->min, s->median, s->iqr);
        return VD_ERR;
    }
    return VD_OK;
}

/* Leaves-upwards (+1), leaves-downwards (-1) or inside (0). The bounds
 * 1 + t and 1 / (1 + t) are symmetric in log space, so swapping the arms
 * mirrors the answer exactly. */
static int
s_leave(double r, double t)
{
    if (r > 1.0 + t)
        return 1;
    if (r < 1.0 / (1.0 + t))
        return -1;
    return 0;
}

/* Runs a side after which the medians' sampling error (about
 * 0.93 * relative IQR / sqrt(n) each, normal approximation) is under half
 * the distance, in log space, from the ratio to the nearest edge of its
 * tolerance. A heuristic for "worth taking", documented in
 * docs/verdict.md; it never changes the outcome. */
static unsigned
s_extra_runs(const vd_verdict_t *v)
{
    size_t n = v->a.n < v->b.n ? v->a.n : v->b.n;
    double ra = v->a.iqr / v->a.median, rb = v->b.iqr / v->b.median;
    double edge = log1p(v->tolerance);
    double dist = fabs(fabs(log(v->ratio)) - edge);
    double need;
    unsigned extra = 0;

    if (ra == 0.0 && rb == 0.0)
        need = VD_FEW_RUNS;     /* no spread: more runs change nothing */
    else if (dist <= 0.0)
        need = VD_MAX_EXTRA_RUNS;
    else
        need = ceil(4.0 * 0.8630 * (ra * ra + rb * rb) / (dist * dist));
    if (need < VD_FEW_RUNS)
        need = VD_FEW_RUNS;
    if (need > (double)n)
        extra = need - (double)n > VD_MAX_EXTRA_RUNS
                    ? VD_MAX_EXTRA_RUNS : (unsigned)(need - (double)n);
    return extra;
}

/* The rule on two summaries already checked (vd_compare's own, or ones
 * that passed s_check_summary). */
static int
s_compare_summaries(const vd_summary_t *a, const vd_summary_t *b,
                    const vd_params_t *params, vd_verdict_t *out,
                    char *err, size_t errlen)
{
    vd_params_t defaults;
    vd_verdict_t v;

    if (!params) {
        vd_params_default(&defaults);
        params = &defaults;
    }
    if (s_check_params(params, err, errlen) != VD_OK)
        return VD_ERR;
    memset(&v, 0, sizeof v);
    v.a = *a;
    v.b = *b;
    /* + 0.0 turns -0.0 into 0.0, so "-0" never reaches a written form. */
    v.parity = params->parity + 0.0;
    v.floor_us = params->floor_us + 0.0;
    v.ratio = a->median / b->median;
    v.best_ratio = a->min / b->min;

    double noise_a = a->iqr / a->median, noise_b = b->iqr / b->median;
    v.noise = noise_a > noise_b ? noise_a : noise_b;

    double min_med = a->median < b->median ? a->median : b->median;
    double min_min = a->min < b->min ? a->min : b->min;
    double floor_med = params->floor_us / min_med;
    double floor_min = params->floor_us / min_min;

    v.tolerance = params->parity;
    if (v.noise > v.tolerance)
        v.tolerance = v.noise;
    if (floor_med > v.tolerance)
        v.tolerance = floor_med;
    v.best_tolerance = params->parity > floor_min ? params->parity : floor_min;

    /* Samples that are each finite and > 0 can still be too far apart
     * for doubles (1e300 against 1e-300, or a floor of 25 over 1e-320):
     * a ratio of inf or 0 would be a made-up verdict, and JSON has no
     * spelling for infinity. */
    if (!s_finite_positive(v.ratio) || !s_finite_positive(v.best_ratio) ||
        !isfinite(v.noise) || !isfinite(v.tolerance) ||
        !isfinite(v.best_tolerance)) {
        vd_errf(err, errlen, "samples out of range: medians %g and %g, "
              "minimums %g and %g, floor %g give a ratio or tolerance "
              "that is not a finite number > 0", a->median, b->median,
              a->min, b->min, params->floor_us);
        return VD_ERR;
    }

    int med = s_leave(v.ratio, v.tolerance);
    int best = s_leave(v.best_ratio, v.best_tolerance);
    if (med == 1 && best == 1)
        v.outcome = VD_LOSS;
    else if (med == -1 && best == -1)
        v.outcome = VD_WIN;
    else
        v.outcome = VD_PARITY;

    if (a->n < VD_FEW_RUNS || b->n < VD_FEW_RUNS)
        v.diagnostics |= VD_DIAG_FEW_RUNS;
    if (v.tolerance > VD_WIDE_TOLERANCE)
        v.diagnostics |= VD_DIAG_WIDE_TOLERANCE;
    if (params->floor_is_default)
        v.diagnostics |= VD_DIAG_DEFAULT_FLOOR;
    if ((med != 0) != (best != 0) || (med != 0 && med != best))
        v.diagnostics |= VD_DIAG_RATIOS_DISAGREE;
    v.extra_runs = s_extra_runs(&v);
    *out = v;
    return VD_OK;
}

int
vd_compare_summaries(const vd_summary_t *a, const vd_summary_t *b,
                     const vd_params_t *params, vd_verdict_t *out,
                     char *err, size_t errlen)
{
    if (s_check_summary("subject", a, err, errlen) != VD_OK ||
        s_check_summary("other", b, err, errlen) != VD_OK)
        return VD_ERR;
    return s_compare_summaries(a, b, params, out, err, errlen);
}

int
vd_compare(const double *a, size_t na, const double *b, size_t nb,
           const vd_params_t *params, vd_verdict_t *out,
           char *err, size_t errlen)
{
    double stack[2 * VD_STACK_SAMPLES];
    double *sa = stack, *sb = stack + VD_STACK_SAMPLES;
    double *heap = NULL;
    vd_summary_t suma, sumb;
    int rc = VD_ERR;
    size_t bad;

    if (na < 2 || nb < 2) {
        vd_errf(err, errlen, "%s arm has %zu sample%s: at least 2 a side",
              na < 2 ? "subject" : "other", na < 2 ? na : nb,
              (na < 2 ? na : nb) == 1 ? "" : "s");
        return VD_ERR;
    }
    if (na > VD_MAX_SAMPLES || nb > VD_MAX_SAMPLES) {
        vd_errf(err, errlen, "%zu samples in one arm, more than the limit of %u",
              na > nb ? na : nb, VD_MAX_SAMPLES);
        return VD_ERR;
    }
    if ((bad = s_first_bad(a, na)) < na) {
        vd_errf(err, errlen, "subject sample %zu is %g: samples must be finite "
              "and > 0", bad + 1, a[bad]);
        return VD_ERR;
    }
    if ((bad = s_first_bad(b, nb)) < nb) {
        vd_errf(err, errlen, "other sample %zu is %g: samples must be finite "
              "and > 0", bad + 1, b[bad]);
        return VD_ERR;
    }
    if (na > VD_STACK_SAMPLES || nb > VD_STACK_SAMPLES) {
        if (!(heap = malloc((na + nb) * sizeof *heap))) {
            vd_errf(err, errlen, "out of memory for %zu samples", na + nb);
            return VD_ERR;
        }
        sa = heap;
        sb = heap + na;
    }
    memcpy(sa, a, na * sizeof *sa);
    memcpy(sb, b, nb * sizeof *sb);
    s_sort(sa, na);
    s_sort(sb, nb);
    s_summarize_sorted(sa, na, &suma);
    s_summarize_sorted(sb, nb, &sumb);
    if (s_compare_summaries(&suma, &sumb, params, out, err, errlen) != VD_OK)
        goto done;
    if (s_timing_modes_sorted(sa, na))
        out->diagnostics |= VD_DIAG_MODES_A;
    if (s_timing_modes_sorted(sb, nb))
        out->diagnostics |= VD_DIAG_MODES_B;
    rc = VD_OK;
done:
    free(heap);
    return rc;
}

int
vd_floor(const double *cal, size_t n, double *floor_us, bool *is_default,
         char *err, size_t errlen)
{
    double *s = NULL;
    size_t bad;

    if (n > VD_MAX_SAMPLES) {
        vd_errf(err, errlen, "%zu calibration samples, more than the limit "
              "of %u", n, VD_MAX_SAMPLES);
        return VD_ERR;
    }
    /* Checked even when there are too few to use: a bad sample is a bug
     * in the measurement, never something to pass over silently. */
    if ((bad = s_first_bad(cal, n)) < n) {
        vd_errf(err, errlen, "calibration sample %zu is %g: samples must be "
              "finite and > 0", bad + 1, cal[bad]);
        return VD_ERR;
    }
    if (n < VD_FLOOR_MIN_SAMPLES) {
        *floor_us = VD_DEFAULT_FLOOR_US;
        *is_default = true;
        return VD_OK;
    }
    if (!(s = malloc(n * sizeof *s))) {
        vd_errf(err, errlen, "out of memory for %zu samples", n);
        return VD_ERR;
    }
    memcpy(s, cal, n * sizeof *s);
    s_sort(s, n);
    *floor_us = vd_quantile_sorted(s, n, 0.9) - vd_quantile_sorted(s, n, 0.1);
    *is_default = false;
    free(s);
    return VD_OK;
}

static const char *const s_outcome_names[VD_OUTCOME_COUNT] = {
    [VD_WIN] = "win", [VD_PARITY] = "parity", [VD_LOSS] = "loss",
};

VD_NAME_FN(vd_outcome_name, vd_outcome_t, s_outcome_names, VD_OUTCOME_COUNT)
VD_PARSE_FN(vd_outcome_parse, vd_outcome_t, s_outcome_names,
            VD_OUTCOME_COUNT)

static const struct {
    unsigned bit;
    const char *name;
    const char *text;
} s_diags[] = {
    {VD_DIAG_MODES_A, "timing_modes_subject",
     "the subject's runs fall in two timing modes"},
    {VD_DIAG_MODES_B, "timing_modes_other",
     "the other arm's runs fall in two timing modes"},
    {VD_DIAG_FEW_RUNS, "few_runs",
     "fewer than 5 runs a side: too few to trust either way"},
    {VD_DIAG_WIDE_TOLERANCE, "wide_tolerance",
     "tolerance above 10 %: a 10 % difference would not be seen"},
    {VD_DIAG_DEFAULT_FLOOR, "default_floor",
     "no calibration of 100 runs or more: the default 25 µs floor was used"},
    {VD_DIAG_RATIOS_DISAGREE, "ratios_disagree",
     "the median and best-run ratios disagree"},
};

/* The entry of s_diags for bit; its name (which 0) or text (which 1),
 * NULL for another bit. */
static const char *
s_diag(unsigned bit, int which)
{
    for (size_t i = 0; i < sizeof s_diags / sizeof s_diags[0]; i++)
        if (s_diags[i].bit == bit)
            return which ? s_diags[i].text : s_diags[i].name;
    return NULL;
}

const char *
vd_diag_name(unsigned bit)
{
    return s_diag(bit, 0);
}

const char *
vd_diag_text(unsigned bit)
{
    return s_diag(bit, 1);
}
