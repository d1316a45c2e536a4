/* co_queue.c -- see co_queue.h. */
#include "co_queue.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "pw_locked.h"

struct co_queue {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    co_queue_item_t *head, *tail;
    size_t items, bytes;           /* invariant: sums over the list */
    size_t max_items, max_bytes;
    bool closed;
};

co_queue_t *
co_queue_new(size_t max_items, size_t max_bytes)
{
    co_queue_t *q = calloc(1, sizeof *q);
    pthread_condattr_t ca;
    if (!q)
        return NULL;
    pthread_mutex_init(&q->lock, NULL);
    /* Timed waits on the monotonic clock: a wall-clock step must not
     * stall a worker. */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->ready, &ca);
    pthread_condattr_destroy(&ca);
    q->max_items = max_items;
    q->max_bytes = max_bytes;
    return q;
}

void
co_queue_destroy(co_queue_t **qp)
{
    if (!qp || !*qp)
        return;
    co_queue_t *q = *qp;
    while (q->head) {
        co_queue_item_t *it = q->head;
        q->head = it->next;
        co_queue_item_free(&it);
    }
    pthread_cond_destroy(&q->ready);
    pthread_mutex_destroy(&q->lock);
    free(q);
    *qp = NULL;
}

co_queue_item_t *
co_queue_item_new(co_item_kind_t kind)
{
    co_queue_item_t *it = calloc(1, sizeof *it);
    if (!it)
        return NULL;
    it->kind = kind;
    zmq_msg_init(&it->frame);
    return it;
}

void
co_queue_item_free(co_queue_item_t **itp)
{
    if (!itp || !*itp)
        return;
    zmq_msg_close(&(*itp)->frame);
    free(*itp);
    *itp = NULL;
}

int
co_queue_push(co_queue_t *q, co_queue_item_t **itemp, bool control)
{
    co_queue_item_t *it = *itemp;
    int rc = -1;
    pthread_mutex_lock(&q->lock);
    if (q->closed)
        goto out;
    if (!control && (q->items >= q->max_items
                     || q->bytes + it->bytes > q->max_bytes))
        goto out;
    it->next = NULL;
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    q->items++;
    q->bytes += it->bytes;
    *itemp = NULL;
    rc = 0;
    pthread_cond_signal(&q->ready);
out:
    pthread_mutex_unlock(&q->lock);
    return rc;
}

co_queue_item_t *
co_queue_pop(co_queue_t *q, int64_t timeout_us)
{
    co_queue_item_t *it = NULL;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_us / 1000000;
    until.tv_nsec += (timeout_us % 1000000) * 1000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&q->lock);
    while (!q->head && !q->closed && timeout_us > 0) {
        if (pthread_cond_timedwait(&q->ready, &q->lock, &until) == ETIMEDOUT)
            break;
    }
    if (q->head) {
        it = q->head;
        q->head = it->next;
        if (!q->head)
            q->tail = NULL;
        q->items--;
        q->bytes -= it->bytes;
        it->next = NULL;
    }
    pthread_mutex_unlock(&q->lock);
    return it;
}

void
co_queue_close(co_queue_t *q)
{
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    pthread_cond_broadcast(&q->ready);
    pthread_mutex_unlock(&q->lock);
}

bool
co_queue_closed(co_queue_t *q)
{
    return PW_LOCKED(&q->lock, bool, q->closed);
}

void
co_queue_depth(co_queue_t *q, size_t *items, size_t *bytes)
{
    pthread_mutex_lock(&q->lock);
    if (items)
        *items = q->items;
    if (bytes)
        *bytes = q->bytes;
    pthread_mutex_unlock(&q->lock);
}

int64_t
co_queue_oldest_us(co_queue_t *q)
{
    pthread_mutex_lock(&q->lock);
    int64_t t = q->head ? q->head->arrived_us : 0;
    pthread_mutex_unlock(&q->lock);
    return t;
}
