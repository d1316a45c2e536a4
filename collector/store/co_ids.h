/* co_ids.h -- ids of rows a writer found or stored by their natural key
 * (a benchmark by suite and name, a host's environment by its text),
 * held so that it need not ask the database again: two of a RunStart's
 * five round trips, which under load are mostly waits for a CPU
 * (docs/performance.md, "A fleet of 1,000 agents").
 *
 * A fixed number of slots, the oldest replaced first; a key longer than
 * CO_IDS_KEY_MAX bytes is not held. The owner (co_db) forgets them all
 * whenever what it wrote may be undone (an id of a row inserted by a
 * transaction that is rolled back names nothing). One thread.
 */
#ifndef CO_IDS_H
#define CO_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CO_IDS_KEY_MAX (64u * 1024)

typedef struct co_ids co_ids_t;

/* NULL when out of memory or slots is 0. The caller owns the result and
 * frees it with co_ids_destroy. */
co_ids_t *co_ids_new(size_t slots);
void co_ids_destroy(co_ids_t **ids);

/* The id held for the key of len bytes: true and *id, else false. A NULL
 * ids holds nothing. */
bool co_ids_get(const co_ids_t *ids, const void *key, size_t len,
                int64_t *id);

/* Hold id for the key (a copy); replaces what the key held. Best effort:
 * out of memory or a key too long holds nothing. */
void co_ids_put(co_ids_t *ids, const void *key, size_t len, int64_t id);

/* Forget every key. */
void co_ids_clear(co_ids_t *ids);

#endif
