/* test_bisect.c -- which commit made the step (vd_bisect.h): a midpoint
 * judged on one host, the fleet's call, and the search driven over
 * simulated fleets of 3 hosts and 64 commits (lognormal noise a run): a
 * 10 % step found in 6 narrowing rounds, a 3 % step with the extra runs
 * it needs (with a flat tolerance below 3 %), two small steps both named, no step, a host without the step,
 * hosts that disagree and a drift each ending the search with its
 * reason; it never names a wrong commit. */
#include "vd_bisect.h"
#include "vd_adaptive.h"
#include "../tap.h"
#include "../xorshift.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define S_HOSTS   3
#define S_POINTS  65            /* the good end, 63 commits, the bad end */
#define S_RUNS    100           /* most runs of one point on one host */
#define S_BASE_US 10000.0

static uint64_t s_rng = 0x9e3779b97f4a7c15ull;

static double
s_normal(void)
{
    return sqrt(-2.0 * log(xs_uniform_open(&s_rng))) *
           cos(6.283185307179586 * xs_uniform_open(&s_rng));
}

/* A fleet to bisect: each host's level at each point, and the runs
 * measured so far. */
typedef struct {
    double level[S_HOSTS][S_POINTS];
    double x[S_POINTS][S_HOSTS][S_RUNS];
    size_t n[S_POINTS];
    double sigma;
    vd_params_t vp;
    size_t jobs;                /* points measured (a job each) */
} s_fleet_t;

/* Every host's level: 1 before the point `at`, 1 + step from it. */
static void
s_step(s_fleet_t *f, size_t host, size_t at, double step)
{
    for (size_t p = at; p < S_POINTS; p++)
        f->level[host][p] *= 1 + step;
}

static void
s_fleet(s_fleet_t *f, double sigma, double parity)
{
    memset(f, 0, sizeof *f);
    for (size_t h = 0; h < S_HOSTS; h++)
        for (size_t p = 0; p < S_POINTS; p++)
            f->level[h][p] = 1.0;
    f->sigma = sigma;
    vd_params_default(&f->vp);
    f->vp.parity = parity;
    f->vp.floor_us = 40;        /* 0.4 % of the runs */
    f->vp.floor_is_default = false;
}

/* Measure point p to runs runs on every host (a job when it adds). */
static void
s_measure(s_fleet_t *f, size_t p, size_t runs)
{
    if (runs > S_RUNS)
        runs = S_RUNS;
    if (f->n[p] >= runs)
        return;
    for (size_t h = 0; h < S_HOSTS; h++)
        for (size_t i = f->n[p]; i < runs; i++)
            f->x[p][h][i] = S_BASE_US * f->level[h][p] *
                            exp(f->sigma * s_normal());
    f->n[p] = runs;
    f->jobs++;
}

/* Drive a search to its end as the collector will: first looks at 10
 * runs; an undecided midpoint and its interval's ends get more runs,
 * as `runs: auto` adds them. Returns the search (caller destroys). */
static vd_bisect_t *
s_bisect(s_fleet_t *f, char *last, size_t lastlen)
{
    char err[256];
    vd_bisect_t *b = vd_bisect_new(S_POINTS, err, sizeof err);
    size_t mid, lo, hi;
    unsigned t;
    s_measure(f, 0, VD_ADAPTIVE_FIRST);
    s_measure(f, S_POINTS - 1, VD_ADAPTIVE_FIRST);
    while (b && vd_bisect_next(b, &mid, &lo, &hi, &t)) {
        size_t runs = VD_ADAPTIVE_FIRST;
        for (unsigned k = 0; k < t; k++)
            runs = vd_adaptive_next((unsigned)runs, S_RUNS);
        s_measure(f, lo, runs);
        s_measure(f, hi, runs);
        s_measure(f, mid, runs);
        vd_bisect_host_t hosts[S_HOSTS];
        for (size_t h = 0; h < S_HOSTS; h++)
            vd_bisect_judge(f->x[lo][h], f->n[lo], f->x[hi][h], f->n[hi],
                            f->x[mid][h], f->n[mid], &f->vp, &hosts[h],
                            err, sizeof err);
        vd_bisect_call_t call = vd_bisect_fleet(hosts, S_HOSTS, last,
                                                lastlen);
        vd_bisect_record(b, mid, call, last, err, sizeof err);
    }
    return b;
}

static void
test_judge(void)
{
    double low[10], high[10], mid[10], one[1] = { 1000 };
    char err[128];
    vd_params_t vp;
    vd_params_default(&vp);
    vp.floor_us = 1;
    vp.floor_is_default = false;
    for (int i = 0; i < 10; i++) {
        low[i] = 1000 + i % 3;          /* 0.2 % of spread */
        high[i] = 1100 + i % 3;
    }
    struct { double at; vd_bisect_call_t call; const char *start; } c[] = {
        { 1000, VD_BISECT_LIKE_GOOD, "like good: x1.000 against good, "
          "x0.909 against bad" },
        { 1100, VD_BISECT_LIKE_BAD, "like bad: x1.100 against good" },
        { 1050, VD_BISECT_BETWEEN, "between: x1.050 against good, x0.955 "
          "against bad" },
        { 1200, VD_BISECT_LIKE_BAD, "like bad (beyond the bad end): x1.200" },
        { 900, VD_BISECT_LIKE_GOOD, "like good (beyond the good end)" },
    };
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        for (int i = 0; i < 10; i++)
            mid[i] = c[k].at + i % 3;
        vd_bisect_host_t h;
        int rc = vd_bisect_judge(low, 10, high, 10, mid, 10, &vp, &h, err,
                                 sizeof err);
        ok(rc == VD_OK && h.call == c[k].call && h.slower &&
           strncmp(h.reason, c[k].start, strlen(c[k].start)) == 0,
           "judge: a midpoint at %.0f of 1000 .. 1100 is %s: \"%s\"",
           c[k].at, vd_bisect_call_name(c[k].call), h.reason);
    }
    /* A step of 3 % with the flat tolerance of 4 %: the midpoint sits
     * inside both ends' tolerance, nothing to call. */
    for (int i = 0; i < 10; i++) {
        high[i] = 1060 + i % 3;
        mid[i] = 1030 + i % 3;
    }
    vd_bisect_host_t h;
    vd_bisect_judge(low, 10, high, 10, mid, 10, &vp, &h, err, sizeof err);
    ok(h.call == VD_BISECT_UNDECIDED && strstr(h.reason, "undecided, "
       "within the tolerance of both ends"), "judge: within both ends' "
       "tolerance is undecided: \"%s\"", h.reason);
    for (int i = 0; i < 10; i++)
        high[i] = 1020 + i % 3;
    vd_bisect_judge(low, 10, high, 10, mid, 10, &vp, &h, err, sizeof err);
    ok(h.call == VD_BISECT_NO_STEP && strcmp(h.reason, "the ends do not "
       "differ here: bad/good x1.020, tolerance 4.0 %") == 0,
       "judge: ends within the tolerance: no step here: \"%s\"", h.reason);
    vd_bisect_judge(low, 10, high, 10, one, 1, &vp, &h, err, sizeof err);
    ok(h.call == VD_BISECT_UNDECIDED && strncmp(h.reason, "the rule "
       "refused the midpoint against the good end: ", 45) == 0,
       "judge: one run is refused by the rule, undecided: \"%s\"",
       h.reason);
    ok(vd_bisect_judge(NULL, 0, high, 10, mid, 10, &vp, &h, err,
                       sizeof err) == VD_ERR, "judge: NULL is an error");
}

static void
test_fleet_call(void)
{
    vd_bisect_host_t h[3];
    char why[192];
    memset(h, 0, sizeof h);
    h[0].call = h[1].call = h[2].call = VD_BISECT_LIKE_BAD;
    ok(vd_bisect_fleet(h, 3, why, sizeof why) == VD_BISECT_LIKE_BAD &&
       strcmp(why, "like bad on 3 of 3 hosts") == 0, "fleet: \"%s\"", why);
    h[2].call = VD_BISECT_NO_STEP;
    ok(vd_bisect_fleet(h, 3, why, sizeof why) == VD_BISECT_LIKE_BAD &&
       strcmp(why, "like bad on 2 of 3 hosts (the others see no step)")
       == 0, "fleet: a host without the step has no say: \"%s\"", why);
    h[1].call = VD_BISECT_LIKE_GOOD;
    ok(vd_bisect_fleet(h, 3, why, sizeof why) == VD_BISECT_UNDECIDED &&
       strcmp(why, "hosts disagree: 1 like good, 1 like bad, 0 between")
       == 0, "fleet: disagreeing hosts are undecided: \"%s\"", why);
    h[0].call = h[1].call = h[2].call = VD_BISECT_LIKE_BAD;
    h[2].call = VD_BISECT_UNDECIDED;
    snprintf(h[2].reason, sizeof h[2].reason, "too near");
    ok(vd_bisect_fleet(h, 3, why, sizeof why) == VD_BISECT_LIKE_BAD &&
       strcmp(why, "like bad on 2 of 3 hosts (the others undecided)") == 0,
       "fleet: an undecided host abstains when most decide: \"%s\"", why);
    h[1].call = VD_BISECT_UNDECIDED;
    ok(vd_bisect_fleet(h, 3, why, sizeof why) == VD_BISECT_UNDECIDED &&
       strcmp(why, "undecided on 2 of 3 hosts: too near") == 0,
       "fleet: too few decide: \"%s\"", why);
    h[1].call = VD_BISECT_NO_STEP;
    ok(vd_bisect_fleet(h, 3, why, sizeof why) == VD_BISECT_UNDECIDED &&
       strcmp(why, "undecided on 1 of 2 hosts: too near") == 0,
       "fleet: one of two with a say is not a majority: \"%s\"", why);
    vd_bisect_host_t h4[4];
    memset(h4, 0, sizeof h4);
    h4[0].call = h4[1].call = VD_BISECT_LIKE_GOOD;
    h4[2].call = VD_BISECT_UNDECIDED;
    h4[3].call = VD_BISECT_NO_STEP;
    ok(vd_bisect_fleet(h4, 4, why, sizeof why) == VD_BISECT_LIKE_GOOD &&
       strcmp(why, "like good on 2 of 4 hosts (1 undecided, 1 see no "
              "step)") == 0, "fleet: \"%s\"", why);
    h[0].call = h[1].call = h[2].call = VD_BISECT_NO_STEP;
    ok(vd_bisect_fleet(h, 3, why, sizeof why) == VD_BISECT_NO_STEP &&
       strcmp(why, "no host sees a step between the ends") == 0,
       "fleet: \"%s\"", why);
}

static void
test_search_api(void)
{
    char err[160];
    ok(!vd_bisect_new(1, err, sizeof err) && strcmp(err, "a bisect needs 2 "
       "to 100000 points (the good end, the commits, the bad end), not 1")
       == 0, "new: one point is refused: \"%s\"", err);
    vd_bisect_t *b = vd_bisect_new(2, err, sizeof err);
    size_t m, lo, hi, c[4];
    unsigned t;
    ok(b && !vd_bisect_next(b, &m, &lo, &hi, &t) &&
       vd_bisect_culprits(b, c, 4) == 1 && c[0] == 1,
       "two points: the bad end is the culprit, nothing to measure");
    vd_bisect_destroy(&b);
    b = vd_bisect_new(9, err, sizeof err);
    ok(vd_bisect_next(b, &m, &lo, &hi, &t) && m == 4 && lo == 0 && hi == 8
       && t == 0, "nine points: the first midpoint is 4 of 0 .. 8");
    ok(vd_bisect_record(b, 3, VD_BISECT_LIKE_BAD, "", err, sizeof err) ==
       VD_ERR && strcmp(err, "point 3 is not the one to judge now") == 0,
       "record: another point is refused: \"%s\"", err);
    vd_bisect_record(b, 4, VD_BISECT_UNDECIDED, "u", err, sizeof err);
    ok(vd_bisect_next(b, &m, &lo, &hi, &t) && m == 4 && t == 1,
       "an undecided midpoint is looked at again (try 1)");
    vd_bisect_destroy(&b);
    ok(b == NULL, "destroy sets the pointer to NULL");
}

static void
test_step(double step, double sigma, double parity, const char *what)
{
    size_t found = 0, wrong = 0, max_narrow = 0, retries = 0, jobs = 0;
    char last[192];
    for (int seed = 0; seed < 20; seed++) {
        static s_fleet_t f;
        s_fleet(&f, sigma, parity);
        size_t at = 1 + (size_t)(xs_uniform(&s_rng) * (S_POINTS - 1));
        for (size_t h = 0; h < S_HOSTS; h++)
            s_step(&f, h, at, step);
        vd_bisect_t *b = s_bisect(&f, last, sizeof last);
        size_t c[VD_BISECT_CULPRITS_MAX];
        size_t n = vd_bisect_culprits(b, c, VD_BISECT_CULPRITS_MAX);
        if (n == 1 && c[0] == at)
            found++;
        else if (n > 0)
            wrong++;
        size_t narrow = vd_bisect_rounds(b) - vd_bisect_retries(b);
        if (narrow > max_narrow)
            max_narrow = narrow;
        retries += vd_bisect_retries(b);
        jobs += f.jobs;
        vd_bisect_destroy(&b);
    }
    ok(found == 20 && wrong == 0, "%s: the culprit named in 20 of 20 "
       "fleets (%zu, %zu wrong)", what, found, wrong);
    ok(max_narrow <= 7, "%s: at most 7 narrowing rounds (%zu; %zu retries "
       "with more runs and %zu jobs over 20 fleets)", what, max_narrow,
       retries, jobs);
}

static void
test_spread(void)
{
    static s_fleet_t f;
    char last[192];
    s_fleet(&f, 0.005, 0.02);
    for (size_t h = 0; h < S_HOSTS; h++) {
        s_step(&f, h, 20, 0.06);
        s_step(&f, h, 45, 0.06);
    }
    vd_bisect_t *b = s_bisect(&f, last, sizeof last);
    size_t c[VD_BISECT_CULPRITS_MAX];
    size_t n = vd_bisect_culprits(b, c, VD_BISECT_CULPRITS_MAX);
    const char *why = "";
    vd_bisect_failed(b, &why);
    ok(n == 2 && c[0] == 20 && c[1] == 45, "two 6 %% steps at 20 and 45 "
       "(0.5 %% noise, parity 2 %%): both named (%zu: %zu, %zu%s%s)", n, n > 0 ? c[0] : 0,
       n > 1 ? c[1] : 0, *why ? "; " : "", why);
    vd_bisect_destroy(&b);
}

static void
test_failures(void)
{
    static s_fleet_t f;
    char last[192];
    const char *why = "";
    s_fleet(&f, 0.01, 0.04);
    vd_bisect_t *b = s_bisect(&f, last, sizeof last);
    bool failed = vd_bisect_failed(b, &why);
    ok(failed && strcmp(why, "at point 32: no host "
       "sees a step between the ends") == 0,
       "no step anywhere: the search fails at once: \"%s\"", why);
    vd_bisect_destroy(&b);

    s_fleet(&f, 0.01, 0.04);
    s_step(&f, 0, 30, 0.10);
    s_step(&f, 1, 30, 0.10);
    b = s_bisect(&f, last, sizeof last);
    size_t c[4];
    ok(vd_bisect_culprits(b, c, 4) == 1 && c[0] == 30,
       "a host without the step has no say: the others find 30");
    vd_bisect_destroy(&b);

    s_fleet(&f, 0.01, 0.04);
    s_step(&f, 0, 20, 0.10);
    s_step(&f, 1, 20, 0.10);
    s_step(&f, 2, 40, 0.10);
    b = s_bisect(&f, last, sizeof last);
    failed = vd_bisect_failed(b, &why);
    ok(failed && strstr(why, "undecided at point 32 "
       "after 4 tries with more runs: hosts disagree: 1 like good, 2 like "
       "bad"), "hosts with steps at other commits: it fails rather than "
       "guess: \"%s\"", why);
    vd_bisect_destroy(&b);

    s_fleet(&f, 0.005, 0.01);
    for (size_t h = 0; h < S_HOSTS; h++)
        for (size_t p = 10; p < 40; p++)
            s_step(&f, h, p, 0.02);
    b = s_bisect(&f, last, sizeof last);
    failed = vd_bisect_failed(b, &why);
    ok(failed && vd_bisect_culprits(b, c, 4) == 0,
       "a drift of 2 %% a commit over 30 commits: no culprit named: "
       "\"%s\"", why);
    vd_bisect_destroy(&b);
}

int
main(void)
{
    test_judge();
    test_fleet_call();
    test_search_api();
    test_step(0.10, 0.01, 0.04, "10 % step, 1 % noise");
    test_step(0.03, 0.005, 0.015, "3 % step, 0.5 % noise, parity 1.5 %");
    test_spread();
    test_failures();
    return tap_done();
}
