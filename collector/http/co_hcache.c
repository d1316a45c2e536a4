/* co_hcache.c -- the HTTP side's answers of the last moment
 * (co_hcache.h). */
#include "co_hcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    char *key;
    char *body;
    size_t len;
    const char *type;
    int64_t at_ms;
    bool wanted;              /* stale and asked for: to refresh */
    bool claimed;             /* a refresher has it */
} s_entry_t;

struct co_hcache {
    pthread_mutex_t lock;
    pthread_cond_t wanted;
    bool closed;
    s_entry_t e[CO_HCACHE_ENTRIES];
    size_t bytes;
};

co_hcache_t *
co_hcache_new(void)
{
    co_hcache_t *c = calloc(1, sizeof *c);
    if (c && pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        return NULL;
    }
    if (c && pthread_cond_init(&c->wanted, NULL) != 0) {
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
    }
    return c;
}

static void
s_drop(co_hcache_t *c, s_entry_t *e)
{
    c->bytes -= e->len;
    free(e->key);
    free(e->body);
    memset(e, 0, sizeof *e);
}

/* Drop key's answer, if kept (the lock held). */
static void
s_forget(co_hcache_t *c, const char *key)
{
    for (size_t i = 0; i < CO_HCACHE_ENTRIES; i++)
        if (c->e[i].key && strcmp(c->e[i].key, key) == 0)
            s_drop(c, &c->e[i]);
}

void
co_hcache_destroy(co_hcache_t **cp)
{
    if (!cp || !*cp)
        return;
    co_hcache_clear(*cp);
    pthread_cond_destroy(&(*cp)->wanted);
    pthread_mutex_destroy(&(*cp)->lock);
    free(*cp);
    *cp = NULL;
}

bool
co_hcache_get(co_hcache_t *c, const char *key, int64_t now_ms, char **body,
              size_t *len, const char **type)
{
    bool hit = false;
    *body = NULL;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < CO_HCACHE_ENTRIES; i++) {
        s_entry_t *e = &c->e[i];
        if (!e->key || strcmp(e->key, key) != 0)
            continue;
        if (now_ms - e->at_ms >= CO_HCACHE_STALE_MS) {
            s_drop(c, e);
            break;
        }
        if (now_ms - e->at_ms >= CO_HCACHE_TTL_MS && !e->wanted) {
            e->wanted = true;
            pthread_cond_signal(&c->wanted);
        }
        if ((*body = malloc(e->len ? e->len : 1))) {
            memcpy(*body, e->body, e->len);
            *len = e->len;
            *type = e->type;
            hit = true;
        }
        break;
    }
    pthread_mutex_unlock(&c->lock);
    return hit;
}

void
co_hcache_put(co_hcache_t *c, const char *key, const char *body, size_t len,
              const char *type, int64_t now_ms)
{
    if (len > CO_HCACHE_BYTES / 4)
        return;
    char *k = strdup(key), *b = malloc(len ? len : 1);
    if (!k || !b) {
        free(k);
        free(b);
        return;
    }
    memcpy(b, body, len);
    pthread_mutex_lock(&c->lock);
    s_entry_t *slot = NULL;
    s_forget(c, key);
    /* Room: the oldest go until the answer fits and a slot is free. */
    for (;;) {
        s_entry_t *old = NULL;
        slot = NULL;
        for (size_t i = 0; i < CO_HCACHE_ENTRIES; i++) {
            if (!c->e[i].key && !slot)
                slot = &c->e[i];
            else if (c->e[i].key && (!old || c->e[i].at_ms < old->at_ms))
                old = &c->e[i];
        }
        if (slot && c->bytes + len <= CO_HCACHE_BYTES)
            break;
        s_drop(c, old);
    }
    *slot = (s_entry_t){ .key = k, .body = b, .len = len, .type = type,
                         .at_ms = now_ms };
    c->bytes += len;
    pthread_mutex_unlock(&c->lock);
}

void
co_hcache_clear(co_hcache_t *c)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < CO_HCACHE_ENTRIES; i++)
        if (c->e[i].key)
            s_drop(c, &c->e[i]);
    pthread_mutex_unlock(&c->lock);
}

bool
co_hcache_claim(co_hcache_t *c, int wait_ms, char **key)
{
    *key = NULL;
    pthread_mutex_lock(&c->lock);
    for (int pass = 0; pass < 2 && !*key && !c->closed; pass++) {
        for (size_t i = 0; i < CO_HCACHE_ENTRIES && !*key; i++) {
            s_entry_t *e = &c->e[i];
            if (e->key && e->wanted && !e->claimed &&
                (*key = strdup(e->key)))
                e->claimed = true;
        }
        if (!*key && pass == 0 && wait_ms > 0 && !c->closed) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += wait_ms / 1000;
            ts.tv_nsec += (long)(wait_ms % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&c->wanted, &c->lock, &ts);
        }
    }
    pthread_mutex_unlock(&c->lock);
    return *key != NULL;
}

void
co_hcache_drop(co_hcache_t *c, const char *key)
{
    pthread_mutex_lock(&c->lock);
    s_forget(c, key);
    pthread_mutex_unlock(&c->lock);
}

void
co_hcache_close(co_hcache_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->closed = true;
    pthread_cond_broadcast(&c->wanted);
    pthread_mutex_unlock(&c->lock);
}
