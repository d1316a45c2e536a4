/* vd_verdict.h -- the verdict rule of docs/verdict-rule (win, parity, loss).
 *
 * One implementation of ../shared/spec/verdict-rule.md, used by every
 * program. Pure computation: nothing here prints, exits, allocates on the
 * heap for arms of up to VD_STACK_SAMPLES samples, or keeps state between
 * calls, so it is safe from any thread.
 *
 * Units: whatever the caller's samples are in, as long as floor_us is in
 * the same unit. Every Parity program uses microseconds.
 */
#ifndef VD_VERDICT_H
#define VD_VERDICT_H

#include <stddef.h>
#include <stdbool.h>

/* Status codes. Every function that can fail returns one of these and
 * writes a one-line reason into the caller's error buffer. */
#define VD_OK        0
#define VD_ERR      -1

#define VD_DEFAULT_PARITY     0.04
#define VD_DEFAULT_FLOOR_US   25.0
/* Calibration samples needed before a host's own floor replaces the
 * default (spec: "at least 100"). */
#define VD_FLOOR_MIN_SAMPLES  100
/* Arms shorter than this are sorted on the stack; longer ones use one
 * malloc per call. */
#define VD_STACK_SAMPLES      64
/* Hard upper bound on the samples in one arm (8 MiB of doubles). */
#define VD_MAX_SAMPLES        (1u << 20)
/* Below this many runs a side the verdict carries the few-runs note. */
#define VD_FEW_RUNS           5
/* A tolerance above this cannot tell a 10 % difference from noise. */
#define VD_WIDE_TOLERANCE     0.10
/* Upper bound on the extra runs the rule will ever suggest. */
#define VD_MAX_EXTRA_RUNS     10000

typedef enum {
    VD_WIN = 0,
    VD_PARITY,
    VD_LOSS,
    VD_OUTCOME_COUNT            /* sentinel */
} vd_outcome_t;

/* Diagnostics: reported beside the outcome, never changing it. */
enum {
    VD_DIAG_MODES_A        = 1u << 0,  /* subject arm has two timing modes */
    VD_DIAG_MODES_B        = 1u << 1,  /* other arm has two timing modes */
    VD_DIAG_FEW_RUNS       = 1u << 2,  /* fewer than VD_FEW_RUNS on a side */
    VD_DIAG_WIDE_TOLERANCE = 1u << 3,  /* tolerance > VD_WIDE_TOLERANCE */
    VD_DIAG_DEFAULT_FLOOR  = 1u << 4,  /* floor is the 25 us default, set
                                          by the caller (vd_floor) */
    VD_DIAG_RATIOS_DISAGREE = 1u << 5, /* one ratio leaves its tolerance,
                                          the other stays inside */
};

/* Order statistics of one arm. Invariant: min <= q25 <= median <= q75 <= max,
 * iqr = q75 - q25, all from type-7 quantiles of the n samples. */
typedef struct {
    size_t n;
    double min;
    double q25;
    double median;
    double q75;
    double max;
    double iqr;
    double mean;     /* shown for readers, never used by the rule */
} vd_summary_t;

typedef struct {
    double parity;   /* flat tolerance, >= 0; VD_DEFAULT_PARITY */
    double floor_us; /* absolute time no change moves, >= 0 */
    bool floor_is_default; /* only sets VD_DIAG_DEFAULT_FLOOR */
} vd_params_t;

typedef struct {
    vd_outcome_t outcome;
    double ratio;          /* med(A) / med(B) */
    double best_ratio;     /* min(A) / min(B) */
    double tolerance;      /* max(parity, noise, floor / min(medians)) */
    double noise;          /* max(iqr(A)/med(A), iqr(B)/med(B)) */
    double best_tolerance; /* max(parity, floor / min(minimums)) */
    double floor_us;       /* the floor this verdict used */
    double parity;         /* the parity this verdict used */
    vd_summary_t a;
    vd_summary_t b;
    unsigned diagnostics;  /* VD_DIAG_* bits */
    unsigned extra_runs;   /* runs a side worth adding; 0 = enough */
} vd_verdict_t;

/* Fill p with the defaults (parity 0.04, floor 25 us, default flag set). */
void vd_params_default(vd_params_t *p);

/* Format an error text into err (errlen bytes; nothing when err is NULL
 * or errlen 0): the one helper every vd_ module fills its err with. */
void vd_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Type-7 quantile of sorted[0..n-1] at p in [0, 1]; p below 0 (or NaN)
 * gives the minimum, above 1 the maximum, n == 0 NaN. */
double vd_quantile_sorted(const double *sorted, size_t n, double p);

/* Summarise x[0..n-1] (not modified) into out. Fails on n == 0, n above
 * VD_MAX_SAMPLES, or a sample that is not finite and > 0. */
int vd_summarize(const double *x, size_t n, vd_summary_t *out,
                 char *err, size_t errlen);

/* Compare subject arm a against other arm b under params (NULL for the
 * defaults). Neither array is modified or kept. On VD_ERR out is
 * untouched and err says why (fewer than 2 samples, a bad sample, a bad
 * parameter, or samples so far apart that a ratio or tolerance is not a
 * finite number > 0, e.g. 1e300 against 1e-300). A parity or floor of
 * -0.0 is recorded as 0.0. */
int vd_compare(const double *a, size_t na, const double *b, size_t nb,
               const vd_params_t *params, vd_verdict_t *out,
               char *err, size_t errlen);

/* The same comparison from two summaries already computed. Timing-mode
 * diagnostics need the samples, so they are not set here. A summary with
 * n < 2, a minimum that is not finite and > 0, a median below it or a
 * non-finite IQR is refused. */
int vd_compare_summaries(const vd_summary_t *a, const vd_summary_t *b,
                         const vd_params_t *params, vd_verdict_t *out,
                         char *err, size_t errlen);

/* A host's noise floor from its calibration samples: q(0.9) - q(0.1).
 * With fewer than VD_FLOOR_MIN_SAMPLES samples *floor_us is the default
 * and *is_default is set. A sample that is not finite and > 0 is an error
 * however many there are. */
int vd_floor(const double *cal, size_t n, double *floor_us, bool *is_default,
             char *err, size_t errlen);

/* True when x[0..n-1] forms two clusters: the widest gap between sorted
 * neighbours is wider than the spread inside each side, at least 5 % of
 * the median, with at least two samples on each side. */
bool vd_timing_modes(const double *x, size_t n);

/* "win", "parity", "loss"; "?" for an out-of-range value. */
const char *vd_outcome_name(vd_outcome_t o);

/* Parse "win"/"parity"/"loss"; returns VD_OK and sets *o, or VD_ERR. */
int vd_outcome_parse(const char *s, vd_outcome_t *o);

/* Short machine names of the diagnostic bits, in bit order, e.g.
 * "timing_modes_a". Returns NULL for a bit with no name. */
const char *vd_diag_name(unsigned bit);

/* A sentence for a reader, e.g. "the subject's runs fall in two timing
 * modes". Returns NULL for a bit with no text. */
const char *vd_diag_text(unsigned bit);

#endif
