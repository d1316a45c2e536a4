/* co_runs.c -- see co_runs.h. */
#include "co_runs.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <czmq.h>

typedef struct {
    char key[160];                /* "host_id:run_id" */
    int32_t *arm;
    double *wall_us;
    double *instructions;
    uint8_t *kind;
    size_t n, cap;
    co_db_run_cache_t view;
    void *handle;                 /* in order, for eviction */
} s_run_t;

struct co_runs {
    zhashx_t *by_key;             /* key -> s_run_t (owned) */
    zlistx_t *order;              /* keys, oldest first (borrowed) */
    size_t samples, max_samples;
};

static void
s_run_free(void **item)
{
    s_run_t *r = *item;
    if (!r)
        return;
    free(r->arm);
    free(r->wall_us);
    free(r->instructions);
    free(r->kind);
    free(r);
    *item = NULL;
}

co_runs_t *
co_runs_new(size_t max_samples)
{
    co_runs_t *runs = calloc(1, sizeof *runs);
    if (!runs)
        return NULL;
    runs->by_key = zhashx_new();
    runs->order = zlistx_new();
    if (!runs->by_key || !runs->order) {
        co_runs_destroy(&runs);
        return NULL;
    }
    zhashx_set_destructor(runs->by_key, s_run_free);
    runs->max_samples = max_samples;
    return runs;
}

void
co_runs_destroy(co_runs_t **runsp)
{
    if (!runsp || !*runsp)
        return;
    zlistx_destroy(&(*runsp)->order);
    zhashx_destroy(&(*runsp)->by_key);
    free(*runsp);
    *runsp = NULL;
}

/* The run's key; false when it does not fit (such a run is not kept:
 * a cut key could name two runs). */
static bool
s_key(char *key, size_t len, int64_t host_id, const char *run_id)
{
    int w = snprintf(key, len, "%" PRId64 ":%s", host_id,
                     run_id ? run_id : "");
    return w > 0 && (size_t)w < len;
}

static void
s_forget(co_runs_t *runs, s_run_t *r)
{
    runs->samples -= r->n;
    zlistx_delete(runs->order, r->handle);
    char key[sizeof r->key];
    memcpy(key, r->key, sizeof key);
    zhashx_delete(runs->by_key, key);
}

/* *arrayp reallocated to cap elements of size bytes; false (the array
 * as it was) when out of memory. */
static bool
s_resize(void *arrayp, size_t cap, size_t size)
{
    void *p = realloc(*(void **)arrayp, cap * size);
    if (p)
        *(void **)arrayp = p;
    return p != NULL;
}

/* Room for more samples in r: doubling, within the bound. Its four
 * arrays grow together; one that could not keeps the old cap for all. */
static int
s_grow(s_run_t *r, size_t more)
{
    if (r->n + more <= r->cap)
        return 0;
    size_t cap = r->cap ? r->cap : 512;
    while (cap < r->n + more)
        cap *= 2;
    bool grown = s_resize(&r->arm, cap, sizeof *r->arm);
    grown &= s_resize(&r->wall_us, cap, sizeof *r->wall_us);
    grown &= s_resize(&r->instructions, cap, sizeof *r->instructions);
    grown &= s_resize(&r->kind, cap, sizeof *r->kind);
    if (!grown)
        return -1;
    r->cap = cap;
    return 0;
}

void
co_runs_add(co_runs_t *runs, int64_t host_id, const Parity__SampleBatch *b)
{
    char key[sizeof ((s_run_t *)0)->key];
    size_t more = b->n_samples;
    if (!s_key(key, sizeof key, host_id, b->run_id)
        || more > runs->max_samples)
        return;
    s_run_t *r = zhashx_lookup(runs->by_key, key);
    /* Past the bound: the oldest runs go (never the one being added). */
    while (runs->samples + more > runs->max_samples) {
        s_run_t *old = zhashx_lookup(runs->by_key,
                                     zlistx_first(runs->order));
        if (!old || old == r)
            return;
        s_forget(runs, old);
    }
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            return;
        memcpy(r->key, key, sizeof key);
        zhashx_insert(runs->by_key, key, r);
        r->handle = zlistx_add_end(runs->order, r->key);
    }
    if (s_grow(r, more) != 0) {
        s_forget(runs, r);
        return;
    }
    for (size_t i = 0; i < b->n_samples; i++) {
        const Parity__Sample *s = b->samples[i];
        r->arm[r->n] = (int32_t)s->arm;
        r->wall_us[r->n] = s->wall_us;
        r->instructions[r->n] = (double)s->instructions;
        r->kind[r->n] = (uint8_t)s->kind;
        r->n++;
    }
    runs->samples += more;
}

const co_db_run_cache_t *
co_runs_get(co_runs_t *runs, int64_t host_id, const char *run_id)
{
    char key[sizeof ((s_run_t *)0)->key];
    if (!s_key(key, sizeof key, host_id, run_id))
        return NULL;
    s_run_t *r = zhashx_lookup(runs->by_key, key);
    if (!r)
        return NULL;
    r->view.arm = r->arm;
    r->view.wall_us = r->wall_us;
    r->view.instructions = r->instructions;
    r->view.kind = r->kind;
    r->view.n = r->n;
    return &r->view;
}

void
co_runs_forget(co_runs_t *runs, int64_t host_id, const char *run_id)
{
    char key[sizeof ((s_run_t *)0)->key];
    s_run_t *r = s_key(key, sizeof key, host_id, run_id) ?
                 zhashx_lookup(runs->by_key, key) : NULL;
    if (r)
        s_forget(runs, r);
}

size_t
co_runs_samples(const co_runs_t *runs)
{
    return runs->samples;
}
