/* co_floors.c -- held calibration windows; see co_floors.h. */
#include "co_floors.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t taken_us;
    double wall_us;
    bool quiet;
} s_row_t;

typedef struct {
    int64_t host_id;
    bool used;
    bool complete;        /* rows are all the host's rows */
    uint64_t last_use;    /* for eviction */
    size_t n, cap;
    s_row_t *rows;        /* ascending taken_us */
} s_host_t;

struct co_floors {
    int window;
    uint64_t clock;
    size_t last;          /* index of the last host found: a batch's rows
                           * are added one after another */
    s_host_t hosts[CO_FLOORS_MAX_HOSTS];
};

co_floors_t *
co_floors_new(int window)
{
    co_floors_t *f = calloc(1, sizeof *f);
    if (f)
        f->window = window > 0 ? window : 1;
    return f;
}

static void
s_drop(s_host_t *h)
{
    free(h->rows);
    memset(h, 0, sizeof *h);
}

void
co_floors_clear(co_floors_t *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < CO_FLOORS_MAX_HOSTS; i++)
        if (f->hosts[i].used || f->hosts[i].rows)
            s_drop(&f->hosts[i]);
}

void
co_floors_destroy(co_floors_t **fp)
{
    if (!fp || !*fp)
        return;
    co_floors_clear(*fp);
    free(*fp);
    *fp = NULL;
}

int
co_floors_window_size(const co_floors_t *f)
{
    return f->window;
}

void
co_floors_set_window(co_floors_t *f, int window)
{
    if (window < 1 || window == f->window)
        return;
    co_floors_clear(f);
    f->window = window;
}

static s_host_t *
s_find(co_floors_t *f, int64_t host_id)
{
    s_host_t *h = &f->hosts[f->last];
    if (h->used && h->host_id == host_id)
        return h;
    for (size_t i = 0; i < CO_FLOORS_MAX_HOSTS; i++)
        if (f->hosts[i].used && f->hosts[i].host_id == host_id) {
            f->last = i;
            return &f->hosts[i];
        }
    return NULL;
}

void
co_floors_forget(co_floors_t *f, int64_t host_id)
{
    s_host_t *h = f ? s_find(f, host_id) : NULL;
    if (h)
        s_drop(h);
}

bool
co_floors_known(const co_floors_t *f, int64_t host_id)
{
    return s_find((co_floors_t *)f, host_id) != NULL;
}

static int
s_cmp_row(const void *a, const void *b)
{
    const s_row_t *x = a, *y = b;
    return (x->taken_us > y->taken_us) - (x->taken_us < y->taken_us);
}

/* A free slot, else the least recently used host's. */
static s_host_t *
s_slot(co_floors_t *f)
{
    size_t victim = 0;
    for (size_t i = 0; i < CO_FLOORS_MAX_HOSTS; i++) {
        if (!f->hosts[i].used)
            return &f->hosts[i];
        if (f->hosts[i].last_use < f->hosts[victim].last_use)
            victim = i;
    }
    s_drop(&f->hosts[victim]);
    return &f->hosts[victim];
}

bool
co_floors_load(co_floors_t *f, int64_t host_id, const int64_t *taken_us,
               const double *wall_us, const bool *quiet, size_t n)
{
    co_floors_forget(f, host_id);
    if (n > (size_t)f->window)
        return false;
    s_host_t *h = s_slot(f);
    h->rows = malloc((size_t)f->window * sizeof *h->rows);
    if (!h->rows)
        return false;
    for (size_t i = 0; i < n; i++)
        h->rows[i] = (s_row_t){ taken_us[i], wall_us[i],
                                quiet ? quiet[i] : false };
    qsort(h->rows, n, sizeof *h->rows, s_cmp_row);
    h->host_id = host_id;
    h->used = true;
    h->complete = n < (size_t)f->window;
    h->last_use = ++f->clock;
    h->n = n;
    h->cap = (size_t)f->window;
    f->last = (size_t)(h - f->hosts);
    return true;
}

void
co_floors_add(co_floors_t *f, int64_t host_id, int64_t taken_us,
              double wall_us, bool quiet)
{
    s_host_t *h = f ? s_find(f, host_id) : NULL;
    if (!h)
        return;
    h->last_use = ++f->clock;
    /* Where it goes: after every row taken at or before it (rows come
     * newest last, so this is nearly always the end). */
    size_t at = h->n;
    while (at > 0 && h->rows[at - 1].taken_us > taken_us)
        at--;
    if (h->n == h->cap) {
        if (at == 0)
            return;   /* older than every held row: not among the newest */
        /* The oldest row leaves the window. */
        memmove(&h->rows[0], &h->rows[1], (at - 1) * sizeof *h->rows);
        at--;
        h->n--;
        h->complete = false;
    } else {
        memmove(&h->rows[at + 1], &h->rows[at],
                (h->n - at) * sizeof *h->rows);
    }
    h->rows[at] = (s_row_t){ taken_us, wall_us, quiet };
    h->n++;
}

bool
co_floors_window(co_floors_t *f, int64_t host_id, int64_t until_us,
                 co_floors_row_t *out, size_t *n)
{
    s_host_t *h = s_find(f, host_id);
    if (!h)
        return false;
    h->last_use = ++f->clock;
    size_t end = h->n;
    while (end > 0 && h->rows[end - 1].taken_us > until_us)
        end--;
    /* Rows newer than until_us were held in place of older ones that
     * the window would now include. */
    if (end < h->n && !h->complete)
        return false;
    for (size_t i = 0; i < end; i++)
        out[i] = (co_floors_row_t){ h->rows[i].taken_us, h->rows[i].wall_us,
                                    h->rows[i].quiet };
    *n = end;
    return true;
}
