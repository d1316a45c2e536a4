/* co_keys.c -- see co_keys.h. */
#include "co_keys.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <czmq.h>

#include "pw_locked.h"

struct co_keys {
    pthread_mutex_t lock;
    zhashx_t *states;        /* Z85 key -> (void *)(intptr_t)state */
    size_t pending;          /* entries whose state is PENDING */
    atomic_uint_fast64_t generation;
};

static const char *const s_names[] = {
    "unknown", "pending", "approved", "rejected", "revoked",
};

co_keys_t *
co_keys_new(void)
{
    co_keys_t *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->states = zhashx_new();
    if (!k->states) {
        free(k);
        return NULL;
    }
    /* Items are small integers, not pointers: nothing to free. */
    zhashx_set_destructor(k->states, NULL);
    zhashx_set_duplicator(k->states, NULL);
    pthread_mutex_init(&k->lock, NULL);
    atomic_init(&k->generation, 1);
    return k;
}

void
co_keys_destroy(co_keys_t **keys)
{
    if (!keys || !*keys)
        return;
    zhashx_destroy(&(*keys)->states);
    pthread_mutex_destroy(&(*keys)->lock);
    free(*keys);
    *keys = NULL;
}

int
co_keys_set(co_keys_t *k, const char *key, co_key_state_t state)
{
    int rc = 0;
    pthread_mutex_lock(&k->lock);
    void *item = zhashx_lookup(k->states, key);
    co_key_state_t was = item ? (co_key_state_t)(intptr_t)item
                              : CO_KEY_UNKNOWN;
    if (was != state) {
        if (state == CO_KEY_UNKNOWN) {
            zhashx_delete(k->states, key);
        } else if (!item && zhashx_size(k->states) >= CO_KEYS_MAX) {
            rc = -1;
        } else if (item) {
            zhashx_update(k->states, key, (void *)(intptr_t)state);
        } else if (zhashx_insert(k->states, key, (void *)(intptr_t)state)
                   != 0) {
            rc = -1;
        }
        if (rc == 0) {
            k->pending += state == CO_KEY_PENDING;
            k->pending -= was == CO_KEY_PENDING;
            atomic_fetch_add(&k->generation, 1);
        }
    }
    pthread_mutex_unlock(&k->lock);
    return rc;
}

co_key_state_t
co_keys_get(co_keys_t *k, const char *key)
{
    void *item = PW_LOCKED(&k->lock, void *,
                           zhashx_lookup(k->states, key));
    return item ? (co_key_state_t)(intptr_t)item : CO_KEY_UNKNOWN;
}

size_t
co_keys_pending(co_keys_t *k)
{
    return PW_LOCKED(&k->lock, size_t, k->pending);
}

uint64_t
co_keys_generation(co_keys_t *k)
{
    return atomic_load(&k->generation);
}

const char *
co_key_state_name(co_key_state_t state)
{
    return (unsigned)state < sizeof s_names / sizeof *s_names
           ? s_names[state] : "unknown";
}

co_key_state_t
co_key_state_parse(const char *name)
{
    for (size_t i = 1; name && i < sizeof s_names / sizeof *s_names; i++)
        if (strcmp(name, s_names[i]) == 0)
            return (co_key_state_t)i;
    return CO_KEY_UNKNOWN;
}
