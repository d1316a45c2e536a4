/* test_change.c -- vd_change_find on generated series (series_gen.h):
 * steps found where they are, noise and timing modes not found at all,
 * a parity-sized step marked, every refused parameter's message, window
 * offsets, max_out, determinism. */
#include "vd_change.h"
#include "series_gen.h"
#include "../tap.h"

#include <stdint.h>
#include <stdlib.h>

#define S_N      400
#define S_MAXCP  16

static vd_point_t s_pts[S_N];

static int
s_find(size_t n, const vd_change_params_t *p, vd_change_t *out,
       size_t *n_out, char *err, size_t errlen)
{
    return vd_change_find(s_pts, n, p, out, S_MAXCP, n_out, err, errlen);
}

static void
test_defaults(void)
{
    vd_change_params_t p, o;
    vd_change_params_default(&p);
    ok(p.max_p_value == 0.0001 && p.window == 200 && p.min_relative == 0.02
       && p.min_segment == 3 && p.robust && p.floor_us == 25.0 &&
       p.rule.parity == 0.04, "Parity's defaults: p 0.0001, window 200, "
       "2 %%, segment 3, robust, floor 25 us, parity 4 %%");
    vd_change_params_otava(&o);
    ok(o.max_p_value == 0.001 && o.window == 50 && o.min_relative == 0.0 &&
       o.min_segment == 1 && !o.robust && o.floor_us == 0.0,
       "Otava's defaults: p 0.001, window 50, no filters");
}

static void
test_clear_step(void)
{
    sg_spec_t s;
    vd_change_t c[S_MAXCP];
    size_t n = 99;
    char err[256] = "";

    sg_spec_default(&s, 0.01);
    s.step_at = 100;
    s.step = 0.10;
    sg_series(1, &s, 150, s_pts);
    ok(s_find(150, NULL, c, &n, err, sizeof err) == VD_OK, "step: runs (%s)",
       err);
    ok(n == 1, "10 %% step at 1 %% noise: one change (%zu)", n);
    if (n >= 1) {
        ok(c[0].index + 1 >= 100 && c[0].index <= 101,
           "at index 100 +-1 (%zu)", c[0].index);
        ok_near(c[0].magnitude, 1.10, 0.02, "magnitude near 1.10 (%.4f)",
                c[0].magnitude);
        ok_near(c[0].after / c[0].before, c[0].magnitude, 1e-12,
                "magnitude is after / before");
        ok(c[0].p_value <= 0.0001, "p-value %.3g <= 0.0001", c[0].p_value);
        ok(c[0].outcome == VD_LOSS && !c[0].within_noise,
           "10 %% slower: loss, not within noise (%s)",
           vd_outcome_name(c[0].outcome));
    }

    /* A step down is a win. */
    s.step = -0.10;
    sg_series(2, &s, 150, s_pts);
    ok(s_find(150, NULL, c, &n, err, sizeof err) == VD_OK && n == 1 &&
       c[0].index + 1 >= 100 && c[0].index <= 101 &&
       c[0].outcome == VD_WIN, "10 %% faster: one change, a win");

    /* Otava's parameters find it too (in its 50-point window). */
    vd_change_params_t o;
    vd_change_params_otava(&o);
    s.step = 0.10;
    sg_series(1, &s, 120, s_pts);
    ok(s_find(120, &o, c, &n, err, sizeof err) == VD_OK && n >= 1,
       "Otava's parameters find the step (%zu)", n);
}

static void
test_pure_noise(void)
{
    static const double cvs[] = {0.005, 0.02, 0.05};
    size_t found = 0;
    char err[256] = "";

    for (size_t i = 0; i < 3; i++)
        for (uint64_t seed = 10; seed < 20; seed++) {
            sg_spec_t s;
            vd_change_t c[S_MAXCP];
            size_t n = 0;
            sg_spec_default(&s, cvs[i]);
            sg_series(seed, &s, 200, s_pts);
            if (s_find(200, NULL, c, &n, err, sizeof err) != VD_OK)
                n = 1000;
            found += n;
        }
    ok(found == 0, "30 noise-only series (0.5, 2, 5 %%): no change (%zu)",
       found);
}

static void
test_timing_modes(void)
{
    size_t found = 0, otava = 0;
    char err[256] = "";
    vd_change_params_t o;

    vd_change_params_otava(&o);
    for (uint64_t seed = 30; seed < 50; seed++) {
        sg_spec_t s;
        vd_change_t c[S_MAXCP];
        size_t n = 0;
        sg_spec_default(&s, 0.01);
        s.modes = true;
        s.modes_sticky = seed % 2 ? 0.9 : 0.0;
        sg_series(seed, &s, 200, s_pts);
        if (s_find(200, NULL, c, &n, err, sizeof err) != VD_OK)
            n = 1000;
        found += n;
        if (s_find(200, &o, c, &n, err, sizeof err) == VD_OK)
            otava += n;
    }
    ok(found == 0, "20 timing-mode series (10 sticky): no change (%zu)",
       found);
    tap_diag("Otava's parameters report %zu on the same series", otava);

    /* The same, robust filters off: the medians alone do report spells
     * of one mode, which is why the filters exist. */
    vd_change_params_t p;
    vd_change_params_default(&p);
    p.robust = false;
    found = 0;
    for (uint64_t seed = 31; seed < 50; seed += 2) {
        sg_spec_t s;
        vd_change_t c[S_MAXCP];
        size_t n = 0;
        sg_spec_default(&s, 0.01);
        s.modes = true;
        s.modes_sticky = 0.9;
        sg_series(seed, &s, 200, s_pts);
        if (s_find(200, &p, c, &n, err, sizeof err) == VD_OK)
            found += n;
    }
    ok(found > 0, "without the robust filters sticky modes are reported "
       "(%zu): the filters do the work", found);
}

static void
test_within_noise(void)
{
    sg_spec_t s;
    vd_change_t c[S_MAXCP];
    size_t n = 0;
    char err[256] = "";
    vd_change_params_t p;

    /* 3 % on a quiet 5 ms benchmark: above min_relative and the floor
     * (25 us = 0.5 %), inside the rule's 4 % parity. */
    sg_spec_default(&s, 0.003);
    s.base_us = 5000.0;
    s.step_at = 100;
    s.step = 0.03;
    sg_series(3, &s, 150, s_pts);
    ok(s_find(150, NULL, c, &n, err, sizeof err) == VD_OK && n == 1,
       "3 %% step at 0.3 %% noise: found (%zu, %s)", n, err);
    if (n == 1)
        ok(c[0].within_noise && c[0].outcome == VD_PARITY &&
           c[0].index + 1 >= 100 && c[0].index <= 101,
           "kept, marked within noise (parity) at 100 (%zu)", c[0].index);

    /* The host floor hides it: 3 % of 5 ms is 150 us. */
    vd_change_params_default(&p);
    p.floor_us = 200.0;
    ok(s_find(150, &p, c, &n, err, sizeof err) == VD_OK && n == 0,
       "floor 200 us: a 150 us step is not reported (%zu)", n);
    /* min_relative hides it too. */
    vd_change_params_default(&p);
    p.min_relative = 0.05;
    ok(s_find(150, &p, c, &n, err, sizeof err) == VD_OK && n == 0,
       "min_relative 5 %%: a 3 %% step is not reported (%zu)", n);
}

static void
test_window_offsets(void)
{
    sg_spec_t s;
    vd_change_t c[S_MAXCP];
    size_t n = 0;
    char err[256] = "";

    sg_spec_default(&s, 0.01);
    s.step_at = 300;
    s.step = 0.10;
    sg_series(4, &s, S_N, s_pts);
    ok(s_find(S_N, NULL, c, &n, err, sizeof err) == VD_OK && n == 1,
       "400 points, window 200: one change (%zu)", n);
    if (n == 1)
        ok(c[0].index + 1 >= 300 && c[0].index <= 301,
           "index into the full array: 300 +-1 (%zu)", c[0].index);

    /* A step before the window is not seen. */
    s.step_at = 100;
    sg_series(4, &s, S_N, s_pts);
    ok(s_find(S_N, NULL, c, &n, err, sizeof err) == VD_OK && n == 0,
       "a step before the window: nothing (%zu)", n);

    /* Too few points for two sides: nothing, no error. */
    ok(s_find(5, NULL, c, &n, err, sizeof err) == VD_OK && n == 0,
       "5 points (< 2 x min_segment): no change, no error");
    ok(vd_change_find(NULL, 0, NULL, NULL, 0, &n, err, sizeof err) ==
       VD_OK && n == 0, "no points at all: no change, no error");
}

static void
test_max_out_and_determinism(void)
{
    sg_spec_t s;
    vd_change_t c[S_MAXCP], d[S_MAXCP], one[1];
    size_t n = 0, m = 0, k = 0;
    char err[256] = "";

    /* Three steps: +10 % at 50, +10 % at 100, -15 % at 150. */
    sg_spec_default(&s, 0.01);
    sg_series(5, &s, 200, s_pts);
    for (size_t i = 50; i < 200; i++) {
        double f = i < 100 ? 1.10 : i < 150 ? 1.21 : 1.21 * 0.85;
        s_pts[i].median *= f;
        s_pts[i].min *= f;
        s_pts[i].q25 *= f;
        s_pts[i].q75 *= f;
        s_pts[i].max *= f;
    }
    ok(s_find(200, NULL, c, &n, err, sizeof err) == VD_OK && n == 3,
       "three steps: three changes (%zu)", n);
    if (n == 3)
        ok(c[0].index < c[1].index && c[1].index < c[2].index &&
           c[0].index + 1 >= 50 && c[0].index <= 51 &&
           c[2].index + 1 >= 150 && c[2].index <= 151,
           "oldest first, at 50, 100, 150 (%zu %zu %zu)", c[0].index,
           c[1].index, c[2].index);
    ok(vd_change_find(s_pts, 200, NULL, one, 1, &k, err, sizeof err) ==
       VD_OK && k == 1 && n == 3 && one[0].index == c[2].index,
       "max_out 1: one written, the newest (%zu)", k);
    ok(vd_change_find(s_pts, 200, NULL, NULL, 0, &k, err, sizeof err) ==
       VD_OK && k == 0, "max_out 0: nothing written");

    ok(s_find(200, NULL, d, &m, err, sizeof err) == VD_OK && m == n,
       "same input again: same count");
    bool same = m == n;
    for (size_t i = 0; same && i < n; i++)
        same = c[i].index == d[i].index && c[i].before == d[i].before &&
               c[i].after == d[i].after && c[i].p_value == d[i].p_value &&
               c[i].outcome == d[i].outcome &&
               c[i].within_noise == d[i].within_noise;
    ok(same, "same input again: identical changes, bit for bit");

    /* A ratio series (min unknown) still finds the steps. */
    for (size_t i = 0; i < 200; i++)
        s_pts[i].min = s_pts[i].q25 = s_pts[i].q75 = s_pts[i].max = NAN;
    ok(s_find(200, NULL, d, &m, err, sizeof err) == VD_OK && m == 3,
       "ratio series (min NaN): three changes (%zu)", m);
}

/* A regression fixed 10 runs later, and a square wave of 6-run steps
 * whose newest step is too recent to report (2 runs): both fully found. */
static void
test_bump_and_wave(void)
{
    sg_spec_t s;
    vd_change_t c[40];
    size_t n = 0;
    char err[256] = "";

    sg_spec_default(&s, 0.005);
    sg_series(7, &s, 200, s_pts);
    for (size_t i = 100; i < 110; i++) {
        s_pts[i].median *= 1.10;
        s_pts[i].min *= 1.10;
    }
    ok(s_find(200, NULL, c, &n, err, sizeof err) == VD_OK && n == 2,
       "10-run bump: two changes (%zu)", n);
    if (n == 2)
        ok(c[0].index + 1 >= 100 && c[0].index <= 101 &&
           c[1].index + 1 >= 110 && c[1].index <= 111 &&
           c[0].outcome == VD_LOSS && c[1].outcome == VD_WIN,
           "at 100 (loss) and 110 (win): %zu %zu", c[0].index, c[1].index);

    sg_spec_default(&s, 0.002);
    sg_series(3, &s, 200, s_pts);
    for (size_t i = 0; i < 200; i++)
        if ((i / 6) % 2) {
            s_pts[i].median *= 1.10;
            s_pts[i].min *= 1.10;
        }
    ok(vd_change_find(s_pts, 200, NULL, c, 40, &n, err, sizeof err) ==
       VD_OK && n == 32, "square wave, 6-run steps, last step 2 runs old: "
       "all 32 changes (%zu)", n);
}

static void
test_errors(void)
{
    vd_change_params_t p;
    vd_change_t c[S_MAXCP];
    size_t n = 7;
    char err[256];
    sg_spec_t s;

    sg_spec_default(&s, 0.01);
    sg_series(6, &s, 50, s_pts);

#define S_BAD(field, value, msg) do {                                     \
        vd_change_params_default(&p);                                     \
        p.field = value;                                                  \
        err[0] = '\0';                                                    \
        ok(s_find(50, &p, c, &n, err, sizeof err) == VD_ERR && n == 0,    \
           #field " " #value ": VD_ERR, no changes");                     \
        ok_str(err, msg, #field " message");                              \
    } while (0)

    S_BAD(max_p_value, 0.0, "max_p_value 0: must be in (0, 1]");
    S_BAD(max_p_value, 1.5, "max_p_value 1.5: must be in (0, 1]");
    S_BAD(max_p_value, NAN, "max_p_value nan: must be in (0, 1]");
    S_BAD(window, 1, "window 1: must be from 2 to 1000");
    S_BAD(window, 1001, "window 1001: must be from 2 to 1000");
    S_BAD(min_segment, 0, "min_segment 0: must be from 1 to half the "
          "window (100)");
    S_BAD(min_segment, 101, "min_segment 101: must be from 1 to half the "
          "window (100)");
    S_BAD(min_relative, -0.1, "min_relative -0.1: must be a finite number "
          ">= 0");
    S_BAD(min_relative, INFINITY, "min_relative inf: must be a finite "
          "number >= 0");
    S_BAD(floor_us, -1.0, "floor_us -1: must be a finite number >= 0");
    S_BAD(rule.parity, NAN, "rule parity nan: must be a finite number >= 0");
#undef S_BAD

    s_pts[17].median = NAN;
    ok(s_find(50, NULL, c, &n, err, sizeof err) == VD_ERR, "NaN median: "
       "VD_ERR");
    ok_str(err, "point 17 has median nan: medians must be finite and > 0",
           "NaN median message names the point");
    s_pts[17].median = 0.0;
    ok(s_find(50, NULL, c, &n, err, sizeof err) == VD_ERR, "0 median: "
       "VD_ERR");
    ok_str(err, "point 17 has median 0: medians must be finite and > 0",
           "0 median message");
    /* Outside the window a bad point is not looked at. */
    vd_change_params_default(&p);
    p.window = 20;
    ok(s_find(50, &p, c, &n, err, sizeof err) == VD_OK,
       "a bad point before the window is not read");

    ok(vd_change_find(NULL, 3, NULL, c, S_MAXCP, &n, err, sizeof err) ==
       VD_ERR, "NULL points: VD_ERR");
    ok_str(err, "points is NULL with n 3", "NULL points message");
    ok(vd_change_find(s_pts, 3, NULL, NULL, 2, &n, err, sizeof err) ==
       VD_ERR, "NULL out: VD_ERR");
    ok_str(err, "out is NULL with max_out 2", "NULL out message");
    ok(vd_change_find(s_pts, 3, NULL, c, 2, NULL, err, sizeof err) ==
       VD_ERR, "NULL n_out: VD_ERR");
    ok_str(err, "n_out is NULL", "NULL n_out message");
}

int
main(void)
{
    test_defaults();
    test_clear_step();
    test_pure_noise();
    test_timing_modes();
    test_within_noise();
    test_window_offsets();
    test_max_out_and_determinism();
    test_bump_and_wave();
    test_errors();
    return tap_done();
}
