/* test_co_keys.c -- co_keys: a key reads back the state set for it, the
 * pending count follows every change, the generation moves on each change
 * and only then, state names round-trip, and a full table keeps the keys
 * it holds and reads the others as unknown. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "co_keys.h"
#include "tap.h"

int
main(void)
{
    co_keys_t *k = co_keys_new();
    ok(k != NULL, "a key table");
    ok(co_keys_get(k, "abc") == CO_KEY_UNKNOWN && co_keys_pending(k) == 0,
       "an unknown key reads as unknown");
    uint64_t g0 = co_keys_generation(k);
    ok(co_keys_set(k, "abc", CO_KEY_PENDING) == 0
       && co_keys_get(k, "abc") == CO_KEY_PENDING && co_keys_pending(k) == 1,
       "pending: read back and counted");
    uint64_t g1 = co_keys_generation(k);
    ok(g1 != g0, "a change moves the generation");
    co_keys_set(k, "abc", CO_KEY_PENDING);
    ok(co_keys_generation(k) == g1, "setting the same state again does not");
    co_keys_set(k, "abc", CO_KEY_APPROVED);
    ok(co_keys_get(k, "abc") == CO_KEY_APPROVED && co_keys_pending(k) == 0
       && co_keys_generation(k) != g1, "approved: no longer pending");
    co_keys_set(k, "def", CO_KEY_PENDING);
    co_keys_set(k, "ghi", CO_KEY_PENDING);
    co_keys_set(k, "def", CO_KEY_REJECTED);
    ok(co_keys_pending(k) == 1, "pending counts each change (%zu)",
       co_keys_pending(k));

    static const co_key_state_t all[] = { CO_KEY_UNKNOWN, CO_KEY_PENDING,
        CO_KEY_APPROVED, CO_KEY_REJECTED, CO_KEY_REVOKED };
    static const char *const names[] = { "unknown", "pending", "approved",
                                         "rejected", "revoked" };
    bool round = true;
    for (size_t i = 0; i < 5; i++)
        round &= strcmp(co_key_state_name(all[i]), names[i]) == 0
                 && co_key_state_parse(names[i]) == all[i];
    ok(round, "state names round-trip");
    ok(co_key_state_parse("Approved") == CO_KEY_UNKNOWN
       && co_key_state_parse("") == CO_KEY_UNKNOWN
       && co_key_state_parse(NULL) == CO_KEY_UNKNOWN,
       "any other text parses as unknown");

    char key[48];
    int refused = 0;
    for (int i = 0; i < CO_KEYS_MAX + 10; i++) {
        snprintf(key, sizeof key, "key-%d", i);
        refused += co_keys_set(k, key, CO_KEY_APPROVED) != 0;
    }
    ok(refused > 0 && refused <= 13, "a full table refuses new keys (%d of "
       "%d refused)", refused, CO_KEYS_MAX + 10);
    ok(co_keys_get(k, "abc") == CO_KEY_APPROVED
       && co_keys_set(k, "abc", CO_KEY_REVOKED) == 0
       && co_keys_get(k, "abc") == CO_KEY_REVOKED,
       "a key it holds still changes when full");
    snprintf(key, sizeof key, "key-%d", CO_KEYS_MAX + 9);
    ok(co_keys_get(k, key) == CO_KEY_UNKNOWN, "a refused key reads as "
       "unknown");
    co_keys_destroy(&k);
    ok(k == NULL, "destroy clears");
    co_keys_destroy(&k);
    return tap_done();
}
