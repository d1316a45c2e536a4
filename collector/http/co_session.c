/* co_session.c -- the dashboard's sessions (co_session.h). */
#include "co_session.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

struct co_sessions {
    pthread_mutex_t lock;
    co_session_t s[CO_SESSION_MAX];
};

co_sessions_t *
co_sessions_new(void)
{
    co_sessions_t *s = calloc(1, sizeof *s);
    if (s && (sodium_init() < 0 || pthread_mutex_init(&s->lock, NULL))) {
        free(s);
        return NULL;
    }
    return s;
}

void
co_sessions_destroy(co_sessions_t **sp)
{
    if (!sp || !*sp)
        return;
    pthread_mutex_destroy(&(*sp)->lock);
    sodium_memzero(*sp, sizeof **sp);
    free(*sp);
    *sp = NULL;
}

static void
s_random_hex(char out[CO_SESSION_ID_HEX + 1])
{
    unsigned char b[CO_SESSION_ID_HEX / 2];
    randombytes_buf(b, sizeof b);
    sodium_bin2hex(out, CO_SESSION_ID_HEX + 1, b, sizeof b);
}

int
co_sessions_open(co_sessions_t *s, const char *name, co_role_t role,
                 int64_t now_ms, co_session_t *out)
{
    co_session_t n;
    memset(&n, 0, sizeof n);
    s_random_hex(n.id);
    s_random_hex(n.csrf);
    snprintf(n.name, sizeof n.name, "%s", name);
    n.role = role;
    n.expires_ms = now_ms + (int64_t)CO_SESSION_TTL_S * 1000;
    pthread_mutex_lock(&s->lock);
    /* A free or expired slot, else the one that ends soonest. */
    co_session_t *slot = &s->s[0];
    for (size_t i = 0; i < CO_SESSION_MAX; i++) {
        if (!s->s[i].id[0] || s->s[i].expires_ms <= now_ms) {
            slot = &s->s[i];
            break;
        }
        if (s->s[i].expires_ms < slot->expires_ms)
            slot = &s->s[i];
    }
    *slot = n;
    pthread_mutex_unlock(&s->lock);
    *out = n;
    return 0;
}

bool
co_sessions_find(co_sessions_t *s, const char *id, size_t len,
                 int64_t now_ms, co_session_t *out)
{
    bool found = false;
    if (len != CO_SESSION_ID_HEX)
        return false;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < CO_SESSION_MAX; i++)
        if (s->s[i].id[0] && s->s[i].expires_ms > now_ms &&
            sodium_memcmp(s->s[i].id, id, CO_SESSION_ID_HEX) == 0 &&
            !found) {
            *out = s->s[i];
            found = true;
        }
    pthread_mutex_unlock(&s->lock);
    return found;
}

void
co_sessions_close(co_sessions_t *s, const char *id, size_t len)
{
    if (len != CO_SESSION_ID_HEX)
        return;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < CO_SESSION_MAX; i++)
        if (s->s[i].id[0] &&
            sodium_memcmp(s->s[i].id, id, CO_SESSION_ID_HEX) == 0)
            memset(&s->s[i], 0, sizeof s->s[i]);
    pthread_mutex_unlock(&s->lock);
}
