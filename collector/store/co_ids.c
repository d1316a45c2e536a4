/* co_ids.c -- see co_ids.h. A linear scan: a few hundred slots, each
 * compared by length first, cost far less than the round trip saved. */
#include "co_ids.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    void *key;     /* NULL: empty */
    size_t len;
    int64_t id;
} s_slot_t;

struct co_ids {
    s_slot_t *slot;
    size_t n;
    size_t next;   /* the slot a new key takes: the oldest */
};

co_ids_t *
co_ids_new(size_t slots)
{
    co_ids_t *ids = slots ? calloc(1, sizeof *ids) : NULL;
    if (ids && !(ids->slot = calloc(slots, sizeof *ids->slot))) {
        free(ids);
        ids = NULL;
    }
    if (ids)
        ids->n = slots;
    return ids;
}

void
co_ids_clear(co_ids_t *ids)
{
    for (size_t i = 0; ids && i < ids->n; i++) {
        free(ids->slot[i].key);
        ids->slot[i] = (s_slot_t){ 0 };
    }
}

void
co_ids_destroy(co_ids_t **ids)
{
    if (!ids || !*ids)
        return;
    co_ids_clear(*ids);
    free((*ids)->slot);
    free(*ids);
    *ids = NULL;
}

static s_slot_t *
s_find(const co_ids_t *ids, const void *key, size_t len)
{
    for (size_t i = 0; ids && i < ids->n; i++) {
        s_slot_t *s = &ids->slot[i];
        if (s->key && s->len == len && memcmp(s->key, key, len) == 0)
            return s;
    }
    return NULL;
}

bool
co_ids_get(const co_ids_t *ids, const void *key, size_t len, int64_t *id)
{
    const s_slot_t *s = s_find(ids, key, len);
    if (s)
        *id = s->id;
    return s != NULL;
}

void
co_ids_put(co_ids_t *ids, const void *key, size_t len, int64_t id)
{
    if (!ids || len > CO_IDS_KEY_MAX)
        return;
    s_slot_t *s = s_find(ids, key, len);
    if (s) {
        s->id = id;
        return;
    }
    void *copy = malloc(len ? len : 1);
    if (!copy)
        return;
    memcpy(copy, key, len);
    s = &ids->slot[ids->next];
    ids->next = (ids->next + 1) % ids->n;
    free(s->key);
    *s = (s_slot_t){ .key = copy, .len = len, .id = id };
}
