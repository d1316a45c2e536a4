/* test_co_floors.c -- co_floors: the held calibration window gives the
 * same rows as the database's "newest `window` taken at or before the
 * run's end", or says it cannot; it never answers wrongly. Checked
 * against a plain list of every row, with rows added in order, out of
 * order, and ends before the newest rows. */
#include <stdlib.h>
#include <string.h>

#include "co_floors.h"
#include "tap.h"

#define MAXROWS 4000

typedef struct {
    int64_t t;
    double w;
} row_t;

/* Every row of the history, newest first, kept so on each add: the
 * plain answer is then a walk, not a sort of every row at every ask. */
static row_t s_sorted[MAXROWS];
static size_t s_nall;

/* Where t is, or would go, in s_sorted (newest first). */
static size_t
s_pos(int64_t t)
{
    size_t lo = 0, hi = s_nall;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s_sorted[mid].t > t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool
s_have(int64_t t)
{
    size_t i = s_pos(t);
    return i < s_nall && s_sorted[i].t == t;
}

static void
s_add(row_t r)
{
    size_t i = s_pos(r.t);
    memmove(&s_sorted[i + 1], &s_sorted[i], (s_nall - i) * sizeof r);
    s_sorted[i] = r;
    s_nall++;
}

/* Whether rows[0..n) are what the database would give, oldest first
 * as co_floors_window promises: the newest `window` rows with t <=
 * until, each with its time and value. Taken times are distinct here. */
static bool
s_same(int window, int64_t until, const co_floors_row_t *rows, size_t n)
{
    size_t from = s_pos(until), have = s_nall - from;
    if (n != (have < (size_t)window ? have : (size_t)window))
        return false;
    for (size_t i = 0; i < n; i++) {
        const row_t *want = &s_sorted[from + n - 1 - i];
        if (rows[i].taken_us != want->t || rows[i].wall_us != want->w)
            return false;
    }
    return true;
}

/* One random history: load the first rows as the database would give
 * them, add the rest (mostly in order), ask for random ends. Returns
 * the number of wrong answers; *answered counts the held answers. */
static int
s_trial(unsigned seed, int window, int *answered, int *asked)
{
    srand(seed);
    int wrong = 0;
    co_floors_t *f = co_floors_new(window);
    s_nall = 0;
    size_t first = (size_t)(rand() % (2 * window));
    int64_t t = 1000;
    for (size_t i = 0; i < first; i++) {
        t += 1 + rand() % 50;
        s_add((row_t){ t, 100.0 + rand() % 1000 });
    }
    /* The database's answer to the load: newest `window` rows. */
    double *vals = malloc(MAXROWS * sizeof *vals);
    co_floors_row_t *rows = malloc(MAXROWS * sizeof *rows);
    size_t nl = s_nall < (size_t)window ? s_nall : (size_t)window;
    int64_t *lt = malloc((nl + 1) * sizeof *lt);
    for (size_t i = 0; i < nl; i++) {
        lt[i] = s_sorted[i].t;
        vals[i] = s_sorted[i].w;
    }
    co_floors_load(f, 7, lt, vals, NULL, nl);
    for (int step = 0; step < 3 * window && s_nall < MAXROWS; step++) {
        int64_t at;
        if (rand() % 10 == 0)   /* a resent, older row */
            at = 500 + rand() % (int)(t - 500);
        else
            at = (t += 1 + rand() % 50);
        if (s_have(at))
            continue;
        double w = 100.0 + rand() % 1000 + (double)step / 7.0;
        s_add((row_t){ at, w });
        co_floors_add(f, 7, at, w, false);
        int64_t until = rand() % 3 ? INT64_MAX : 500 + rand() % (int)(t - 499);
        size_t n = 0;
        (*asked)++;
        if (!co_floors_window(f, 7, until, rows, &n))
            continue;
        (*answered)++;
        if (!s_same(window, until, rows, n))
            wrong++;
    }
    free(lt);
    free(vals);
    free(rows);
    co_floors_destroy(&f);
    return wrong;
}

int
main(void)
{
    co_floors_t *f = co_floors_new(4);
    co_floors_row_t out[8];
    size_t n = 99;
    ok(f != NULL, "new");
    ok(!co_floors_known(f, 1), "an unknown host is not held");
    ok(!co_floors_window(f, 1, INT64_MAX, out, &n),
       "an unknown host cannot answer");
    co_floors_add(f, 1, 10, 1.0, false);
    ok(!co_floors_known(f, 1), "adding to an unknown host holds nothing");

    /* Two rows: all of the host's, so any end can be answered. */
    int64_t t2[] = { 20, 10 };
    double w2[] = { 2.0, 1.0 };
    bool q2[] = { true, false };
    ok(co_floors_load(f, 1, t2, w2, q2, 2), "load 2 of a window of 4");
    ok(co_floors_window(f, 1, 15, out, &n) && n == 1 && out[0].wall_us == 1.0
       && out[0].taken_us == 10 && !out[0].quiet,
       "complete rows answer an end between them");
    co_floors_add(f, 1, 30, 3.0, false);
    co_floors_add(f, 1, 40, 4.0, true);
    co_floors_add(f, 1, 50, 5.0, false);   /* 10 leaves the window */
    ok(co_floors_window(f, 1, INT64_MAX, out, &n) && n == 4
       && out[0].wall_us == 2.0 && out[3].wall_us == 5.0,
       "window keeps the newest 4");
    ok(out[0].quiet && !out[1].quiet && out[2].quiet && !out[3].quiet
       && out[2].taken_us == 40, "each row keeps its instant and whether "
       "it was quiet");
    ok(!co_floors_window(f, 1, 45, out, &n),
       "an end before the newest row cannot be answered once rows left");
    co_floors_add(f, 1, 5, 0.5, false);   /* older than all held */
    ok(co_floors_window(f, 1, INT64_MAX, out, &n) && n == 4
       && out[0].wall_us == 2.0, "an old resent row does not enter a full window");
    co_floors_add(f, 1, 35, 3.5, true);   /* out of order, among the newest */
    ok(co_floors_window(f, 1, INT64_MAX, out, &n) && n == 4
       && out[0].wall_us == 3.0 && out[1].wall_us == 3.5 && out[1].quiet
       && out[2].wall_us == 4.0,
       "an out-of-order row goes in its place");
    co_floors_set_window(f, 8);
    ok(!co_floors_known(f, 1), "a new window forgets every host");
    ok(co_floors_load(f, 2, t2, w2, NULL, 2), "load again");
    co_floors_forget(f, 2);
    ok(!co_floors_known(f, 2), "forget");
    ok(co_floors_load(f, 3, NULL, NULL, NULL, 0), "a host without rows");
    ok(co_floors_window(f, 3, INT64_MAX, out, &n) && n == 0,
       "answers: no rows");
    co_floors_clear(f);
    ok(!co_floors_known(f, 3), "clear");
    int64_t t9[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    double w9[9] = { 0 };
    ok(!co_floors_load(f, 4, t9, w9, NULL, 9),
       "more rows than the window: no");

    /* Bounded: a new host beyond the bound takes the least recent. */
    for (int64_t h = 1; h <= CO_FLOORS_MAX_HOSTS + 1; h++)
        co_floors_load(f, h, t2, w2, NULL, 2);
    ok(!co_floors_known(f, 1) && co_floors_known(f, CO_FLOORS_MAX_HOSTS + 1)
       && co_floors_known(f, 2), "the least recently used host is evicted");
    co_floors_destroy(&f);
    ok(f == NULL, "destroy clears the pointer");

    /* Random histories against the plain list. */
    int wrong = 0, answered = 0, asked = 0;
    for (unsigned seed = 1; seed <= 60; seed++)
        wrong += s_trial(seed, seed % 3 ? 100 : 1000, &answered, &asked);
    ok(wrong == 0, "random histories: %d wrong of %d answered", wrong,
       answered);
    ok(answered > asked * 6 / 10,
       "and most asks are answered from memory (%d of %d)", answered, asked);
    return tap_done();
}
