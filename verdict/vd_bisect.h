/* vd_bisect.h -- which commit made the step: a midpoint judged on each
 * host against the ends, and the search over the commits.
 *
 * A bisect measures commits of a range on several hosts (each commit a
 * job, docs/bisect.md). On one host a midpoint M is judged by the rule
 * (vd_verdict.h) against the two ends of the interval it splits, L (at
 * the old level, "good") and H (at the new one, "bad"), all three the
 * subject arm's wall times on that host, with that host's floor:
 *
 *   H vs L    parity: this host sees no step between the ends (no_step;
 *             it has no say)
 *   like L    M vs L parity and M vs H on L's side of H (M faster than H
 *             for a slowdown), both decisive
 *   like H    M vs H parity and M vs L on H's side (M slower than L), or
 *             M beyond H; both decisive
 *   between   M differs from both, between them: the step is spread over
 *             more than one commit (two smaller steps)
 *   undecided anything else: both parity (the tolerance is wider than the
 *             step), a verdict too near its edge (vd_adaptive_decisive),
 *             or the rule refused the samples
 *
 * The fleet's call is the hosts' when the hosts that decide (like good,
 * like bad or between) agree and are more than half of the hosts with a
 * say; an undecided host abstains. Undecided when they disagree, or when
 * half or more of the hosts with a say are undecided. An undecided
 * midpoint is
 * measured again with more runs (as `runs: auto` adds them) before the
 * search narrows; after VD_BISECT_TRIES_MAX tries the bisect fails with
 * the reason: it never guesses.
 *
 * The search keeps intervals (L, H) that each hold one change at least;
 * it starts with (good, bad) and splits at the middle. "between" splits
 * an interval in two, each searched on its own, so two small steps are
 * both found and named. At most VD_BISECT_CULPRITS_MAX intervals: beyond,
 * the change is spread (a drift), which the search says and stops.
 *
 * Pure computation, no I/O; the search holds its own state (caller owns
 * it), the judging functions none. Points are indexes: 0 the good end,
 * npoints - 1 the bad end, the commits between in order.
 */
#ifndef VD_BISECT_H
#define VD_BISECT_H

#include <stdbool.h>
#include <stddef.h>

#include "vd_verdict.h"

/* Tries of one midpoint (the first and the retries with more runs). */
#define VD_BISECT_TRIES_MAX    4
/* Most intervals (commits named) one search keeps. */
#define VD_BISECT_CULPRITS_MAX 8
/* Most points of one search (commits in the range, both ends included). */
#define VD_BISECT_POINTS_MAX   100000

typedef enum {
    VD_BISECT_NO_STEP = 0,  /* one host: its ends do not differ */
    VD_BISECT_LIKE_GOOD,
    VD_BISECT_LIKE_BAD,
    VD_BISECT_BETWEEN,
    VD_BISECT_UNDECIDED,
    VD_BISECT_CALL_COUNT    /* sentinel */
} vd_bisect_call_t;

/* One host's judgement of a midpoint. */
typedef struct {
    vd_bisect_call_t call;
    bool slower;           /* the step slows down (H vs L is a loss) */
    vd_verdict_t ends;     /* H vs L */
    vd_verdict_t vs_low;   /* M vs L */
    vd_verdict_t vs_high;  /* M vs H */
    bool have;             /* the three verdicts are set */
    char reason[192];      /* a line for a reader */
} vd_bisect_host_t;

/* "no step", "like good", "like bad", "between", "undecided"; "?". */
const char *vd_bisect_call_name(vd_bisect_call_t c);

/* Judge midpoint samples m against the interval's ends low and high on
 * one host, under params (the host's floor and the parity). Returns
 * VD_OK with out filled (the rule refusing a sample set is an undecided
 * call, with its reason); VD_ERR only for NULL arguments. */
int vd_bisect_judge(const double *low, size_t nlow, const double *high,
                    size_t nhigh, const double *m, size_t nm,
                    const vd_params_t *params, vd_bisect_host_t *out,
                    char *err, size_t errlen);

/* The fleet's call from the hosts' (n of them): the call the deciding
 * hosts agree on, when they are more than half of the hosts with a say;
 * UNDECIDED when they disagree or too few decide; NO_STEP when no host
 * has a say. reason gets a line ("like bad on 3 of 3 hosts", "like bad
 * on 2 of 3 hosts (the others undecided)", "hosts disagree: 2 like
 * good, 1 like bad"). */
vd_bisect_call_t vd_bisect_fleet(const vd_bisect_host_t *hosts, size_t n,
                                 char *reason, size_t reasonlen);

typedef struct vd_bisect vd_bisect_t;

/* A search over npoints points (2..VD_BISECT_POINTS_MAX): 0 good, the
 * last bad. Caller owns it; NULL with err. */
vd_bisect_t *vd_bisect_new(size_t npoints, char *err, size_t errlen);
void vd_bisect_destroy(vd_bisect_t **b);

/* The next midpoint to judge and its interval's ends; *try is 0 for a
 * first look, k for the k-th retry with more runs. False when the search
 * is over (done or failed). */
bool vd_bisect_next(const vd_bisect_t *b, size_t *mid, size_t *low,
                    size_t *high, unsigned *try_no);

/* Record the fleet's call for mid, which must be vd_bisect_next's, with
 * its reason (kept when the search fails on it): NO_STEP fails the
 * search (no host sees a step between that interval's ends), the
 * VD_BISECT_TRIES_MAX-th UNDECIDED of one midpoint too. VD_ERR (nothing
 * changed) for another point. */
int vd_bisect_record(vd_bisect_t *b, size_t mid, vd_bisect_call_t call,
                     const char *reason, char *err, size_t errlen);

/* Over and failed: *why gets the reason (borrowed, valid until the next
 * call). */
bool vd_bisect_failed(const vd_bisect_t *b, const char **why);

/* Over and found: the first bad point of each interval, in order, into
 * out (at most max); returns how many there are (0 while searching or
 * failed). */
size_t vd_bisect_culprits(const vd_bisect_t *b, size_t *out, size_t max);

/* Midpoint looks so far: narrowing rounds, and retries among them. */
size_t vd_bisect_rounds(const vd_bisect_t *b);
size_t vd_bisect_retries(const vd_bisect_t *b);

#endif
