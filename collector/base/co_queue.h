/* co_queue.h -- a bounded hand-over queue between the network loop and a
 * database worker (Redis bio.c's job lists, with the bounds curl's dynbuf
 * keeps: checked on every push).
 *
 * Many threads may push and pop. A push never blocks: when the queue
 * holds max_items items or max_bytes bytes it is refused (-1) and the
 * caller drops the work (an agent resends what was not acked). An item
 * pushed with `control` set (a peer went offline) is always taken: such
 * items are bounded by the peer table, not by the queue.
 *
 * Items carry one frame (a zmq_msg_t, moved in: the queue owns it until
 * it is popped, then the popper owns it and closes it with
 * co_queue_item_free).
 */
#ifndef CO_QUEUE_H
#define CO_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zmq.h>

/* Longest ZeroMQ routing id kept with an item. */
#define CO_QUEUE_RID_MAX 256

/* What an item asks of the worker. */
typedef enum {
    CO_ITEM_FRAME = 0,     /* a frame from a peer (an Envelope) */
    CO_ITEM_OFFLINE,       /* the peer went silent (no frame) */
    CO_ITEM_REQUEST,       /* a client Request frame */
} co_item_kind_t;

typedef struct co_queue_item {
    co_item_kind_t kind;
    char key[41];                  /* the peer's Z85 CURVE key */
    uint8_t rid[CO_QUEUE_RID_MAX]; /* connection it arrived on */
    size_t rid_len;
    zmq_msg_t frame;               /* owned; empty for OFFLINE */
    int body_case;                 /* from pw_wire_peek, 0 unknown */
    uint64_t seq;
    int64_t arrived_us;            /* monotonic, when the loop read it */
    size_t bytes;                  /* the frame's size, for the bound */
    /* The loop's verdict on the key when it queued the frame (co_auth):
     * not approved. Only a Hello is queued so; the writer records it as
     * pending (co_enroll). */
    bool key_pending;
    struct co_queue_item *next;
} co_queue_item_t;

typedef struct co_queue co_queue_t;

/* A queue of at most max_items items and max_bytes bytes of frames.
 * Caller owns it; NULL on out of memory. */
co_queue_t *co_queue_new(size_t max_items, size_t max_bytes);

/* Free the queue and every item still in it; NULL is fine. */
void co_queue_destroy(co_queue_t **q);

/* A new empty item (frame initialised empty); caller owns it. */
co_queue_item_t *co_queue_item_new(co_item_kind_t kind);
void co_queue_item_free(co_queue_item_t **item);

/* Append *item; on success the queue owns it and *item is NULL. Returns
 * 0, or -1 when the queue is full (the caller still owns *item) or
 * closed. */
int co_queue_push(co_queue_t *q, co_queue_item_t **item, bool control);

/* Take the oldest item, waiting at most timeout_us (0: do not wait).
 * Caller owns the result; NULL when none came or the queue is closed. */
co_queue_item_t *co_queue_pop(co_queue_t *q, int64_t timeout_us);

/* Wake every waiter and refuse pushes from now on. */
void co_queue_close(co_queue_t *q);

/* True once co_queue_close was called. */
bool co_queue_closed(co_queue_t *q);

/* Items and bytes waiting now. */
void co_queue_depth(co_queue_t *q, size_t *items, size_t *bytes);

/* arrived_us of the oldest item waiting, 0 when none: how far behind
 * the worker is (the writer's lag on /metrics). */
int64_t co_queue_oldest_us(co_queue_t *q);

#endif
