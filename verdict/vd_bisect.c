/* vd_bisect.c -- which commit made the step (vd_bisect.h). */
#include "vd_bisect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vd_adaptive.h"
#include "vd_name.h"

static const char *const s_call_names[VD_BISECT_CALL_COUNT] = {
    "no step", "like good", "like bad", "between", "undecided",
};

VD_NAME_FN(vd_bisect_call_name, vd_bisect_call_t, s_call_names,
           VD_BISECT_CALL_COUNT)

/* The call of the two verdicts' outcomes, before decisiveness: M vs L
 * is ol, M vs H is oh; up is the outcome of a point at H's level against
 * L (loss for a slowdown). */
static vd_bisect_call_t
s_call(vd_outcome_t ol, vd_outcome_t oh, vd_outcome_t up, const char **how)
{
    vd_outcome_t down = up == VD_LOSS ? VD_WIN : VD_LOSS;
    *how = "";
    if (ol == VD_PARITY && oh == VD_PARITY) {
        *how = "within the tolerance of both ends";
        return VD_BISECT_UNDECIDED;
    }
    if (ol == VD_PARITY && oh == down)
        return VD_BISECT_LIKE_GOOD;
    if (oh == VD_PARITY && ol == up)
        return VD_BISECT_LIKE_BAD;
    if (ol == up && oh == down)
        return VD_BISECT_BETWEEN;
    if (ol == up && oh == up) {
        *how = " (beyond the bad end)";
        return VD_BISECT_LIKE_BAD;
    }
    if (ol == down && oh == down) {
        *how = " (beyond the good end)";
        return VD_BISECT_LIKE_GOOD;
    }
    *how = "the verdicts against the two ends contradict each other";
    return VD_BISECT_UNDECIDED;
}

int
vd_bisect_judge(const double *low, size_t nlow, const double *high,
                size_t nhigh, const double *m, size_t nm,
                const vd_params_t *params, vd_bisect_host_t *out, char *err,
                size_t errlen)
{
    if (!low || !high || !m || !out) {
        vd_errf(err, errlen, "vd_bisect_judge: NULL argument");
        return VD_ERR;
    }
    memset(out, 0, sizeof *out);
    out->call = VD_BISECT_UNDECIDED;
    char e[160] = "";
    const char *which = "the ends";
    if (vd_compare(high, nhigh, low, nlow, params, &out->ends, e,
                   sizeof e) != VD_OK ||
        (which = "the midpoint against the good end",
         vd_compare(m, nm, low, nlow, params, &out->vs_low, e,
                    sizeof e)) != VD_OK ||
        (which = "the midpoint against the bad end",
         vd_compare(m, nm, high, nhigh, params, &out->vs_high, e,
                    sizeof e)) != VD_OK) {
        snprintf(out->reason, sizeof out->reason, "the rule refused %s: "
                 "%.120s", which, e);
        return VD_OK;
    }
    out->have = true;
    if (out->ends.outcome == VD_PARITY) {
        out->call = VD_BISECT_NO_STEP;
        snprintf(out->reason, sizeof out->reason, "the ends do not differ "
                 "here: bad/good x%.3f, tolerance %.1f %%", out->ends.ratio,
                 100 * out->ends.tolerance);
        return VD_OK;
    }
    out->slower = out->ends.outcome == VD_LOSS;
    const char *how;
    vd_bisect_call_t c = s_call(out->vs_low.outcome, out->vs_high.outcome,
                                out->ends.outcome, &how);
    bool decisive = vd_adaptive_decisive(&out->vs_low) &&
                    vd_adaptive_decisive(&out->vs_high);
    if (c != VD_BISECT_UNDECIDED && !decisive) {
        c = VD_BISECT_UNDECIDED;
        how = "too near the rule's edge to call";
    }
    out->call = c;
    snprintf(out->reason, sizeof out->reason, "%s%s%s: x%.3f against good, "
             "x%.3f against bad (tolerances %.1f %% and %.1f %%)",
             vd_bisect_call_name(c), c == VD_BISECT_UNDECIDED ? ", " : "",
             how, out->vs_low.ratio, out->vs_high.ratio,
             100 * out->vs_low.tolerance, 100 * out->vs_high.tolerance);
    return VD_OK;
}

vd_bisect_call_t
vd_bisect_fleet(const vd_bisect_host_t *hosts, size_t n, char *reason,
                size_t reasonlen)
{
    size_t count[VD_BISECT_CALL_COUNT] = { 0 };
    const char *first_undecided = "";
    for (size_t i = 0; i < n; i++) {
        count[hosts[i].call < VD_BISECT_CALL_COUNT ? hosts[i].call :
              VD_BISECT_UNDECIDED]++;
        if (hosts[i].call == VD_BISECT_UNDECIDED && !*first_undecided)
            first_undecided = hosts[i].reason;
    }
    size_t say = n - count[VD_BISECT_NO_STEP];
    if (say == 0) {
        vd_errf(reason, reasonlen, "no host sees a step between the ends");
        return VD_BISECT_NO_STEP;
    }
    /* An undecided host abstains: the hosts that decide must agree and
     * be more than half of those that see the step. */
    size_t undecided = count[VD_BISECT_UNDECIDED], decided = say - undecided;
    if (2 * decided <= say) {
        vd_errf(reason, reasonlen, "undecided on %zu of %zu hosts: %s",
                undecided, say, first_undecided);
        return VD_BISECT_UNDECIDED;
    }
    vd_bisect_call_t calls[] = { VD_BISECT_LIKE_GOOD, VD_BISECT_LIKE_BAD,
                                 VD_BISECT_BETWEEN };
    for (size_t k = 0; k < 3; k++)
        if (count[calls[k]] == decided) {
            char also[96] = "";
            if (undecided && count[VD_BISECT_NO_STEP])
                snprintf(also, sizeof also, " (%zu undecided, %zu see no "
                         "step)", undecided, count[VD_BISECT_NO_STEP]);
            else if (undecided || count[VD_BISECT_NO_STEP])
                snprintf(also, sizeof also, " (the others %s)", undecided ?
                         "undecided" : "see no step");
            vd_errf(reason, reasonlen, "%s on %zu of %zu hosts%s",
                    vd_bisect_call_name(calls[k]), decided, n, also);
            return calls[k];
        }
    vd_errf(reason, reasonlen, "hosts disagree: %zu like good, %zu like "
            "bad, %zu between", count[VD_BISECT_LIKE_GOOD],
            count[VD_BISECT_LIKE_BAD], count[VD_BISECT_BETWEEN]);
    return VD_BISECT_UNDECIDED;
}

/* ---- the search ----------------------------------------------------- */

struct vd_bisect {
    size_t npoints;
    size_t lo[VD_BISECT_CULPRITS_MAX], hi[VD_BISECT_CULPRITS_MAX];
    size_t nint;
    unsigned tries;            /* of the current midpoint */
    size_t rounds, retries;
    bool failed;
    char why[256];
};

vd_bisect_t *
vd_bisect_new(size_t npoints, char *err, size_t errlen)
{
    if (npoints < 2 || npoints > VD_BISECT_POINTS_MAX) {
        vd_errf(err, errlen, "a bisect needs 2 to %d points (the good end, "
                "the commits, the bad end), not %zu", VD_BISECT_POINTS_MAX,
                npoints);
        return NULL;
    }
    vd_bisect_t *b = calloc(1, sizeof *b);
    if (!b) {
        vd_errf(err, errlen, "out of memory");
        return NULL;
    }
    b->npoints = npoints;
    b->lo[0] = 0;
    b->hi[0] = npoints - 1;
    b->nint = 1;
    return b;
}

void
vd_bisect_destroy(vd_bisect_t **b)
{
    if (b) {
        free(*b);
        *b = NULL;
    }
}

/* The first interval still wider than one commit, or nint. */
static size_t
s_open(const vd_bisect_t *b)
{
    size_t i = 0;
    while (i < b->nint && b->hi[i] - b->lo[i] < 2)
        i++;
    return i;
}

bool
vd_bisect_next(const vd_bisect_t *b, size_t *mid, size_t *low, size_t *high,
               unsigned *try_no)
{
    size_t i = s_open(b);
    if (b->failed || i == b->nint)
        return false;
    *low = b->lo[i];
    *high = b->hi[i];
    *mid = b->lo[i] + (b->hi[i] - b->lo[i]) / 2;
    *try_no = b->tries;
    return true;
}

/* The search is over without a culprit: why (a line) says where. */
#define S_FAIL(b, ...) \
    ((b)->failed = true, snprintf((b)->why, sizeof (b)->why, __VA_ARGS__))

int
vd_bisect_record(vd_bisect_t *b, size_t mid, vd_bisect_call_t call,
                 const char *reason, char *err, size_t errlen)
{
    size_t m, lo, hi;
    unsigned t;
    if (!vd_bisect_next(b, &m, &lo, &hi, &t) || m != mid ||
        (unsigned)call >= VD_BISECT_CALL_COUNT) {
        vd_errf(err, errlen, "point %zu is not the one to judge now", mid);
        return VD_ERR;
    }
    size_t i = s_open(b);
    b->rounds++;
    b->retries += b->tries > 0;
    switch (call) {
    case VD_BISECT_NO_STEP:
        S_FAIL(b, "at point %zu: %.200s", mid, reason ? reason : "");
        break;
    case VD_BISECT_UNDECIDED:
        if (++b->tries >= VD_BISECT_TRIES_MAX)
            S_FAIL(b, "undecided at point %zu after %d tries with more "
                   "runs: %.160s", mid, VD_BISECT_TRIES_MAX,
                   reason ? reason : "");
        return VD_OK;
    case VD_BISECT_LIKE_GOOD:
        b->lo[i] = mid;
        break;
    case VD_BISECT_LIKE_BAD:
        b->hi[i] = mid;
        break;
    case VD_BISECT_BETWEEN:
        if (b->nint == VD_BISECT_CULPRITS_MAX) {
            S_FAIL(b, "at point %zu the change is spread over more than %d "
                   "commits (a drift rather than a step)", mid,
                   VD_BISECT_CULPRITS_MAX);
            break;
        }
        memmove(&b->lo[i + 2], &b->lo[i + 1], (b->nint - i - 1) *
                sizeof *b->lo);
        memmove(&b->hi[i + 2], &b->hi[i + 1], (b->nint - i - 1) *
                sizeof *b->hi);
        b->lo[i + 1] = mid;
        b->hi[i + 1] = b->hi[i];
        b->hi[i] = mid;
        b->nint++;
        break;
    default:
        break;
    }
    b->tries = 0;
    return VD_OK;
}

bool
vd_bisect_failed(const vd_bisect_t *b, const char **why)
{
    if (b->failed && why)
        *why = b->why;
    return b->failed;
}

size_t
vd_bisect_culprits(const vd_bisect_t *b, size_t *out, size_t max)
{
    if (b->failed || s_open(b) != b->nint)
        return 0;
    for (size_t i = 0; i < b->nint && i < max; i++)
        out[i] = b->hi[i];
    return b->nint;
}

size_t
vd_bisect_rounds(const vd_bisect_t *b)
{
    return b->rounds;
}

size_t
vd_bisect_retries(const vd_bisect_t *b)
{
    return b->retries;
}
