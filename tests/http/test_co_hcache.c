/* test_co_hcache.c -- co_hcache: an answer is given back while younger
 * than CO_HCACHE_TTL_MS; after that, stale, until CO_HCACHE_STALE_MS,
 * and handed once to the refresher; a key replaces its own answer,
 * clear forgets all, the entry and byte bounds drop the oldest, and an
 * answer over a quarter of the bytes is not kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co_hcache.h"
#include "tap.h"

static bool
has(co_hcache_t *c, const char *key, int64_t now, const char *want)
{
    char *b = NULL;
    size_t len = 0;
    const char *type = NULL;
    bool hit = co_hcache_get(c, key, now, &b, &len, &type);
    bool same = hit && want && len == strlen(want) &&
                memcmp(b, want, len) == 0 && strcmp(type, "t/x") == 0;
    free(b);
    return want ? same : !hit;
}

int
main(void)
{
    co_hcache_t *c = co_hcache_new();
    ok(c != NULL, "new");
    co_hcache_put(c, "a", "alpha", 5, "t/x", 1000);
    ok(has(c, "a", 1000, "alpha") && has(c, "a", 1999, "alpha"),
       "kept while younger than the TTL");
    char *k = NULL;
    ok(!co_hcache_claim(c, 0, &k) && !k, "fresh: nothing to refresh");
    ok(has(c, "a", 1000 + CO_HCACHE_TTL_MS, "alpha"),
       "past the TTL: still given, stale");
    ok(co_hcache_claim(c, 0, &k) && k && strcmp(k, "a") == 0,
       "and handed to the refresher (%s)", k ? k : "none");
    free(k);
    ok(!co_hcache_claim(c, 0, &k), "once: a claimed key is not claimed "
       "again");
    co_hcache_put(c, "a", "beta", 4, "t/x", 2100);
    ok(has(c, "a", 2100, "beta"), "the refresher's answer replaces it");
    co_hcache_drop(c, "a");
    ok(has(c, "a", 2100, NULL), "a dropped key: nothing");
    co_hcache_put(c, "a", "alpha", 5, "t/x", 1000);
    ok(has(c, "a", 1000 + CO_HCACHE_STALE_MS, NULL),
       "gone after CO_HCACHE_STALE_MS");
    ok(has(c, "b", 1000, NULL), "an unknown key: nothing");
    co_hcache_put(c, "a", "one", 3, "t/x", 2000);
    co_hcache_put(c, "a", "two", 3, "t/x", 2001);
    ok(has(c, "a", 2002, "two"), "a key's newer answer replaces its own");
    co_hcache_clear(c);
    ok(has(c, "a", 2002, NULL), "clear forgets it");
    char key[32];
    for (int i = 0; i < CO_HCACHE_ENTRIES + 3; i++) {
        snprintf(key, sizeof key, "k%d", i);
        co_hcache_put(c, key, "v", 1, "t/x", 3000 + i);
    }
    ok(has(c, "k0", 3100, NULL) && has(c, "k2", 3100, NULL) &&
       has(c, "k3", 3100, "v") && has(c, "k66", 3100, "v"),
       "past %d entries the oldest go", CO_HCACHE_ENTRIES);
    co_hcache_clear(c);
    size_t big = CO_HCACHE_BYTES / 4;
    char *b = calloc(1, big + 1);
    memset(b, 'x', big + 1);
    co_hcache_put(c, "huge", b, big + 1, "t/x", 5000);
    char *got;
    size_t len;
    const char *type;
    ok(!co_hcache_get(c, "huge", 5000, &got, &len, &type),
       "an answer over a quarter of the bytes is not kept");
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "q%d", i);
        co_hcache_put(c, key, b, big, "t/x", 6000 + i);
    }
    ok(!co_hcache_get(c, "q0", 6010, &got, &len, &type) &&
       co_hcache_get(c, "q4", 6010, &got, &len, &type) && len == big,
       "past %u bytes the oldest go", CO_HCACHE_BYTES);
    free(got);
    free(b);
    co_hcache_close(c);
    ok(!co_hcache_claim(c, 1000, &k), "closed: claim returns at once");
    co_hcache_destroy(&c);
    ok(c == NULL, "destroy sets NULL");
    return tap_done();
}
