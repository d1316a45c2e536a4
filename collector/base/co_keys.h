/* co_keys.h -- what the database says of agents' keys, in memory
 * (docs/collector.md "Enrollment").
 *
 * The truth is the host_keys table (migration 009), which several
 * collectors may share. This is one collector's copy of it: the writer
 * reads the table's changes every heartbeat interval (co_enroll_poll)
 * and sets what a Hello taught it, the query workers set what an
 * operator's decision changed (so that it takes effect here at once),
 * and the network loop reads it for the handshake (co_auth) and for
 * every frame of a key that is not in --allow. A key with no entry is
 * one the database has no row for.
 *
 * Thread-safe: one mutex, held for one lookup or one update. Bounded by
 * CO_KEYS_MAX entries; beyond it a key is not kept and reads as
 * unknown, which is safe: unknown keys may say Hello and nothing else,
 * and the writer asks the database at each Hello.
 */
#ifndef CO_KEYS_H
#define CO_KEYS_H

#include <stddef.h>
#include <stdint.h>

#define CO_KEYS_MAX 65536

/* host_keys.state, and UNKNOWN for a key without a row. */
typedef enum {
    CO_KEY_UNKNOWN = 0,
    CO_KEY_PENDING,
    CO_KEY_APPROVED,
    CO_KEY_REJECTED,
    CO_KEY_REVOKED,
} co_key_state_t;

typedef struct co_keys co_keys_t;

/* Caller owns the result; NULL on out of memory. */
co_keys_t *co_keys_new(void);
void co_keys_destroy(co_keys_t **keys);

/* Remember key's state (Z85, copied). Returns 0, or -1 when the table
 * is full and key is not in it. */
int co_keys_set(co_keys_t *keys, const char *key, co_key_state_t state);

co_key_state_t co_keys_get(co_keys_t *keys, const char *key);

/* Keys known to be pending now. */
size_t co_keys_pending(co_keys_t *keys);

/* A number that changes whenever a key's state changes (readers cache
 * what they derived from the table until it does). */
uint64_t co_keys_generation(co_keys_t *keys);

/* "pending", "approved", "rejected", "revoked" ("unknown" for UNKNOWN),
 * and back (UNKNOWN for any other text). */
const char *co_key_state_name(co_key_state_t state);
co_key_state_t co_key_state_parse(const char *name);

#endif
