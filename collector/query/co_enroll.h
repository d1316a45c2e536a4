/* co_enroll.h -- agents' keys in the database: the ones waiting for
 * approval, an operator's decisions, and the changes every collector
 * reads (docs/collector.md "Enrollment"; docs/protocol.md 11.3 is the
 * reference of the commands' arguments and bodies):
 *
 *   pending   the keys waiting for approval, oldest first
 *   approve   a pending (or rejected, or revoked) key becomes approved:
 *             its next Hello, or the next data message on a connection
 *             whose Hello waited, is stored
 *   reject    a pending key becomes rejected: refused at the handshake
 *   revoke    an approved key (also one approved by --allow) becomes
 *             revoked: refused at the handshake and, on a connection
 *             that is up, answered Error 21; its queued and running job
 *             rows fail, its suites are forgotten (no new job), and its
 *             host is offline
 *
 * The table is host_keys (migration 009). A key is named by its
 * fingerprint (pw_key) or by the host name it claimed; a name that two
 * keys claim is refused, naming their fingerprints.
 *
 * Everything runs on a co_conn connection (borrowed); every statement is
 * parameterised; nothing here prints. A decision is also set in keys
 * (co_keys, when not NULL), so that it holds in this collector at once;
 * the others read it with co_enroll_poll.
 */
#ifndef CO_ENROLL_H
#define CO_ENROLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "co_conn.h"
#include "co_keys.h"

/* Keys waiting for approval at most: a Hello of one more unknown key is
 * answered Error 20 without recording it (a flood of new keys cannot
 * fill the database; an operator approves or rejects some first). */
#define CO_ENROLL_MAX_PENDING 1024
/* Rows co_enroll_poll reads at most per call (the next call goes on). */
#define CO_ENROLL_POLL_MAX 4096
/* Longest name or agent version kept for a pending key. */
#define CO_ENROLL_TEXT_MAX 256

enum {
    CO_ENROLL_OK = 0,
    CO_ENROLL_FULL = 1,      /* not recorded: CO_ENROLL_MAX_PENDING wait */
    CO_ENROLL_REFUSED = 2,   /* text the database cannot hold */
    CO_ENROLL_FAIL = -1,     /* database down or failed */
};

/* The Hello of a key that is not approved here (key Z85, the rest claims
 * of the Hello and the peer's address): a new pending row, or the name,
 * version and address of a pending one updated. *state is what the
 * database says of the key afterwards (approved when an operator was
 * faster than this collector's copy), *created whether the row is new.
 * Returns CO_ENROLL_OK, _FULL, _REFUSED or _FAIL (err says why). */
int co_enroll_hello(co_conn_t *conn, const char *key, const char *name,
                    const char *agent_version, const char *address,
                    co_key_state_t *state, bool *created, char *err,
                    size_t errlen);

/* Read the rows changed since *version (0: all) into keys, at most
 * CO_ENROLL_POLL_MAX; *version becomes the highest one read. Returns
 * the number read, or -1 with err. */
int co_enroll_poll(co_conn_t *conn, co_keys_t *keys, int64_t *version,
                   char *err, size_t errlen);

/* True for "pending", "approve", "reject" and "revoke" (co_query checks
 * their argument names and that the client is an admin). */
bool co_enroll_handles(const char *command);

/* Answer command (args borrowed) for the admin whose key is admin_key.
 * The reply body (caller owns) with *status CO_REPLY_OK, or NULL with
 * *status and err. */
json_t *co_enroll_handle(co_conn_t *conn, co_keys_t *keys,
                         const char *admin_key, const char *command,
                         const json_t *args, int *status, char *err,
                         size_t errlen);

#endif
