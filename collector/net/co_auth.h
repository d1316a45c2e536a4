/* co_auth.h -- the collector's ZAP handler: CURVE keys from an allow-list.
 *
 * A ZMQ_REP socket bound to inproc://zeromq.zap.01 in the collector's
 * context (ZeroMQ RFC 27). Every CURVE handshake on any socket of that
 * context asks it; it answers 200 for a client public key found in the
 * allow-list directory (public certificate files in CZMQ zcert format,
 * as `parity keygen` writes them; files ending in _secret are skipped)
 * and sets the User-Id of the peer's messages to that key in Z85, which
 * is how the server identifies peers. Any other mechanism (NULL, PLAIN)
 * is refused. The directory is read again when its modification time
 * changes, and for a few seconds after a change, which the time alone
 * may hide (co_dirstamp.h).
 *
 * Enrollment (co_auth_set_keys, docs/collector.md "Enrollment"): the
 * database's decisions (co_keys) count too. A key the database says is
 * rejected or revoked is refused, even when its file is in the
 * directory; one it says is approved is admitted; and with enrollment on
 * any other key is admitted as pending (co_auth_verdict says so for each
 * frame: a pending key may say Hello and nothing else), unless
 * CO_ENROLL_MAX_PENDING keys are pending already.
 *
 * Must exist before the server socket binds (libzmq then refuses
 * handshakes when the handler is missing, but it is not missing here).
 */
#ifndef CO_AUTH_H
#define CO_AUTH_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "co_keys.h"

/* Most keys loaded from the allow-list directory. */
#define CO_AUTH_MAX_KEYS 4096

typedef struct co_auth co_auth_t;

/* Bind the handler in zmq context ctx and load allow_dir. Caller owns the
 * result; NULL with err filled on failure. */
co_auth_t *co_auth_new(void *ctx, const char *allow_dir, char *err,
                       size_t errlen);

/* Admit the keys of a second directory too (the collector's --admin);
 * re-read like the first when it changes. Copied. 0 or -1 with err. */
int co_auth_add_dir(co_auth_t *auth, const char *dir, char *err,
                    size_t errlen);

/* Use the database's view of keys (borrowed; must outlive auth) and
 * admit unknown keys as pending when enroll is true. */
void co_auth_set_keys(co_auth_t *auth, co_keys_t *keys, bool enroll);

/* What a key may do, from the files and the database's view. */
typedef enum {
    CO_AUTH_ALLOWED = 1,   /* in a directory, or approved */
    CO_AUTH_PENDING,       /* not approved (yet): Hello only */
    CO_AUTH_DENIED,        /* rejected or revoked */
} co_auth_verdict_t;

co_auth_verdict_t co_auth_verdict(co_auth_t *auth, const char *key);

/* Re-read the directories when they changed (every handshake does;
 * the server also calls it every heartbeat interval, so that a file
 * added for a key that is connected already counts). */
void co_auth_refresh(co_auth_t *auth);

/* A number that changes whenever a verdict may have (the directories
 * were re-read, a key's state changed): callers cache verdicts until
 * it does. */
uint64_t co_auth_generation(co_auth_t *auth);

/* The REP socket to poll for ZMQ_POLLIN; owned by auth. */
void *co_auth_socket(co_auth_t *auth);

/* Answer one pending request (call when the socket is readable). Returns
 * 1 allowed, 0 denied, -1 nothing to read or a malformed request. The
 * client key (Z85, 41 bytes with NUL) goes to key_out when not NULL, and
 * a one-line reason for a denial into why[0..whylen). */
int co_auth_handle(co_auth_t *auth, char *key_out, char *why, size_t whylen);

/* Number of keys currently allowed. */
size_t co_auth_key_count(const co_auth_t *auth);

void co_auth_destroy(co_auth_t **auth);

#endif
