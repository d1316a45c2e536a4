/* co_hcache.h -- the HTTP side's answers of the last moment: a GET's
 * answer kept for CO_HCACHE_TTL_MS, so that a dashboard open in many
 * browsers, or a scraper polling `hosts`, costs the database one query
 * a second, not one per request (docs/http.md "Limits").
 *
 * An answer older than that but younger than CO_HCACHE_STALE_MS is
 * still given (stale), and its key is handed to whoever refreshes
 * (co_hcache_claim, co_http's refresher thread): a request for an
 * answer that is asked for often never waits for the database; only
 * the first for a key, or one after CO_HCACHE_STALE_MS, does. An
 * acknowledgement clears them all.
 *
 * Entries are keyed by text (the query and its arguments, or the page
 * and its parameters); at most CO_HCACHE_ENTRIES of them and
 * CO_HCACHE_BYTES of answers: the oldest go first. Thread-safe.
 */
#ifndef CO_HCACHE_H
#define CO_HCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CO_HCACHE_TTL_MS 1000
#define CO_HCACHE_STALE_MS 10000
#define CO_HCACHE_ENTRIES 64
#define CO_HCACHE_BYTES (32u << 20)

typedef struct co_hcache co_hcache_t;

/* Caller owns the result; NULL on out of memory. */
co_hcache_t *co_hcache_new(void);
void co_hcache_destroy(co_hcache_t **c);

/* key's answer when it is younger than CO_HCACHE_STALE_MS at monotonic
 * now_ms: true, with a copy in *body (caller frees, *len bytes) and its
 * type (a static string given to co_hcache_put); older than
 * CO_HCACHE_TTL_MS, it is also marked for a refresh. */
bool co_hcache_get(co_hcache_t *c, const char *key, int64_t now_ms,
                   char **body, size_t *len, const char **type);

/* Take one key marked for a refresh (a copy: caller frees): true, or
 * false when none is. Waits at most wait_ms for one (0: does not). The
 * taker puts the new answer, or co_hcache_drop()s the key. */
bool co_hcache_claim(co_hcache_t *c, int wait_ms, char **key);

/* Forget key's answer (a refresh that failed). */
void co_hcache_drop(co_hcache_t *c, const char *key);

/* Wake a waiting co_hcache_claim for good: it returns false from now on. */
void co_hcache_close(co_hcache_t *c);

/* Keep a copy of body (len bytes) of type (static) for key. An answer
 * larger than a quarter of CO_HCACHE_BYTES is not kept. */
void co_hcache_put(co_hcache_t *c, const char *key, const char *body,
                   size_t len, const char *type, int64_t now_ms);

/* Forget every answer (something changed them). */
void co_hcache_clear(co_hcache_t *c);

#endif
