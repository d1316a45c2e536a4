/* co_stats.c -- the loop's figures for other threads (co_stats.h). */
#include "co_stats.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct co_stats {
    pthread_mutex_t lock;
    co_stats_snap_t snap;
};

co_stats_t *
co_stats_new(void)
{
    co_stats_t *s = calloc(1, sizeof *s);
    if (s && pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

void
co_stats_destroy(co_stats_t **sp)
{
    if (!sp || !*sp)
        return;
    pthread_mutex_destroy(&(*sp)->lock);
    free(*sp);
    *sp = NULL;
}

void
co_stats_publish(co_stats_t *s, const co_stats_snap_t *snap)
{
    pthread_mutex_lock(&s->lock);
    s->snap = *snap;
    s->snap.set = true;
    pthread_mutex_unlock(&s->lock);
}

void
co_stats_read(co_stats_t *s, co_stats_snap_t *out)
{
    pthread_mutex_lock(&s->lock);
    *out = s->snap;
    pthread_mutex_unlock(&s->lock);
}
