/* co_session.h -- the dashboard's sign-in sessions: a browser that
 * opened /login?token=T (as Jupyter's login links) holds a session
 * cookie instead of the token, and each session has a CSRF token that
 * the page's forms carry (docs/http.md "The dashboard").
 *
 * A session is CO_SESSION_ID_HEX random hex digits (libsodium's
 * randombytes), kept in memory only: a restart signs everyone out. It
 * lasts CO_SESSION_TTL_S from its sign-in; at most CO_SESSION_MAX live
 * at once (a new one then replaces the oldest). Thread-safe.
 */
#ifndef CO_SESSION_H
#define CO_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co_tokens.h"

#define CO_SESSION_ID_HEX 64
#define CO_SESSION_TTL_S (12 * 3600)
#define CO_SESSION_MAX 1024
#define CO_SESSION_COOKIE "parity_session"

typedef struct co_sessions co_sessions_t;

typedef struct {
    char id[CO_SESSION_ID_HEX + 1];
    char csrf[CO_SESSION_ID_HEX + 1];
    char name[CO_TOKENS_NAME_MAX + 1];   /* the token's NAME */
    co_role_t role;
    int64_t expires_ms;                  /* monotonic */
} co_session_t;

/* Caller owns the result; NULL on out of memory. */
co_sessions_t *co_sessions_new(void);
void co_sessions_destroy(co_sessions_t **s);

/* A new session for name with role at monotonic now_ms, copied into
 * *out: 0, or -1 when no random bytes could be had. */
int co_sessions_open(co_sessions_t *s, const char *name, co_role_t role,
                     int64_t now_ms, co_session_t *out);

/* The live session of id (len bytes, need not be terminated) into *out:
 * true, or false when none (unknown, expired). Compared in constant
 * time. */
bool co_sessions_find(co_sessions_t *s, const char *id, size_t len,
                      int64_t now_ms, co_session_t *out);

/* End the session of id (a sign-out); unknown ids are ignored. */
void co_sessions_close(co_sessions_t *s, const char *id, size_t len);

#endif
