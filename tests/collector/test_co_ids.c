/* test_co_ids.c -- co_ids: an id comes back only for the very key it was
 * held under (same bytes, same length), the oldest key gives way when
 * the slots are full, a key too long is never held, and clear forgets. */
#include <stdio.h>
#include <string.h>

#include "co_ids.h"
#include "tap.h"

int
main(void)
{
    int64_t id = -1;
    ok(co_ids_new(0) == NULL, "no slots: no cache");
    ok(!co_ids_get(NULL, "a", 1, &id) && id == -1,
       "a NULL cache holds nothing");
    co_ids_put(NULL, "a", 1, 1);    /* must not crash */

    co_ids_t *c = co_ids_new(3);
    ok(c != NULL, "three slots");
    co_ids_put(c, "b\0suite\0x", 9, 7);
    ok(co_ids_get(c, "b\0suite\0x", 9, &id) && id == 7,
       "a key with NULs inside gives its id");
    ok(!co_ids_get(c, "b\0suite", 7, &id), "a prefix of it does not");
    ok(!co_ids_get(c, "b\0suite\0y", 9, &id), "nor a key of the same length");
    co_ids_put(c, "b\0suite\0x", 9, 8);
    ok(co_ids_get(c, "b\0suite\0x", 9, &id) && id == 8,
       "putting a held key again replaces its id");

    co_ids_put(c, "k2", 2, 2);
    co_ids_put(c, "k3", 2, 3);
    co_ids_put(c, "k4", 2, 4);       /* the oldest, the first key, goes */
    ok(!co_ids_get(c, "b\0suite\0x", 9, &id), "full: the oldest key went");
    ok(co_ids_get(c, "k2", 2, &id) && id == 2 &&
       co_ids_get(c, "k3", 2, &id) && id == 3 &&
       co_ids_get(c, "k4", 2, &id) && id == 4, "the three newest stay");

    static char big[CO_IDS_KEY_MAX + 1];
    memset(big, 'e', sizeof big);
    co_ids_put(c, big, sizeof big, 9);
    ok(!co_ids_get(c, big, sizeof big, &id), "a key too long is not held");
    ok(co_ids_get(c, "k2", 2, &id), "and takes no one's slot");
    co_ids_put(c, big, CO_IDS_KEY_MAX, 10);
    ok(co_ids_get(c, big, CO_IDS_KEY_MAX, &id) && id == 10,
       "a key of exactly CO_IDS_KEY_MAX bytes is");

    co_ids_clear(c);
    ok(!co_ids_get(c, "k3", 2, &id) && !co_ids_get(c, "k4", 2, &id),
       "clear forgets every key");
    co_ids_put(c, "k5", 2, 5);
    ok(co_ids_get(c, "k5", 2, &id) && id == 5, "and the cache works after");
    co_ids_destroy(&c);
    ok(c == NULL, "destroy clears the pointer");
    co_ids_destroy(&c);             /* twice: nothing */
    return tap_done();
}
