/* co_every.c -- a function called every period on a thread (co_every.h). */
#include "co_every.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pw_locked.h"

struct co_every {
    co_every_fn fn;
    void *arg;
    int period_ms;
    bool stop;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
};

static void *
s_thread(void *p)
{
    co_every_t *e = p;
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        pthread_mutex_unlock(&e->lock);
        e->fn(e->arg, e);
        pthread_mutex_lock(&e->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += e->period_ms / 1000;
        until.tv_nsec += (e->period_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        /* A stop signals wake: the wait ends at once. */
        if (!e->stop)
            pthread_cond_timedwait(&e->wake, &e->lock, &until);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

co_every_t *
co_every_new(const char *name, int period_ms, co_every_fn fn, void *arg,
             char *err, size_t errlen)
{
    co_every_t *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    e->fn = fn;
    e->arg = arg;
    e->period_ms = period_ms > 0 ? period_ms : 1;
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->wake, NULL);
    if (pthread_create(&e->thread, NULL, s_thread, e) != 0) {
        snprintf(err, errlen, "pthread_create(%s) failed", name);
        pthread_mutex_destroy(&e->lock);
        pthread_cond_destroy(&e->wake);
        free(e);
        return NULL;
    }
    return e;
}

bool
co_every_stopping(co_every_t *e)
{
    return PW_LOCKED(&e->lock, bool, e->stop);
}

void
co_every_destroy(co_every_t **ep)
{
    co_every_t *e = ep ? *ep : NULL;
    if (!e)
        return;
    *ep = NULL;
    pthread_mutex_lock(&e->lock);
    e->stop = true;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->lock);
    pthread_join(e->thread, NULL);
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->wake);
    free(e);
}
