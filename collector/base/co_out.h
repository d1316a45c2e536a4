/* co_out.h -- what the database workers hand back to the network loop.
 *
 * Workers never touch the ROUTER socket (ZeroMQ sockets belong to one
 * thread). Each worker has its own PUSH socket connected to the loop's
 * PULL at CO_OUT_ENDPOINT and sends one message per result:
 *
 *   [header][routing id][body]
 *
 * where body is a packed Envelope to send to that routing id (with
 * CO_OUT_SEND), and CO_OUT_DONE says one item the loop queued for key is
 * finished (seq and bytes as queued), so that the loop's per-peer and
 * global bounds and its "still storing" set stay exact.
 */
#ifndef CO_OUT_H
#define CO_OUT_H

#include <stddef.h>
#include <stdint.h>

#include <zmq.h>

#include "co_queue.h"

#define CO_OUT_ENDPOINT "inproc://co-out"
/* Messages the loop's PULL may hold; a worker's send waits beyond it
 * (the worker waits, never the loop). */
#define CO_OUT_HWM 100000

enum {
    CO_OUT_SEND = 1,     /* send body to the routing id */
    CO_OUT_DONE = 2,     /* an item queued for key is finished */
};

typedef struct {
    uint32_t flags;
    char key[41];        /* the peer's Z85 key ("" when not DONE) */
    uint64_t seq;        /* the finished item's seq */
    size_t bytes;        /* the finished item's size as queued */
    int64_t arrived_us;  /* when the loop read it (monotonic; 0 if none) */
    int kind;            /* the finished item's co_item_kind_t */
    int body_case;       /* and its body case */
} co_out_hdr_t;

/* Fill h as the CO_OUT_DONE of item (flags: CO_OUT_DONE only). */
void co_out_hdr_done(co_out_hdr_t *h, const co_queue_item_t *item);

/* A PUSH socket of ctx connected to CO_OUT_ENDPOINT; NULL with err. */
void *co_out_connect(void *ctx, char *err, size_t errlen);

/* Send one result; body may be NULL (len 0) without CO_OUT_SEND.
 * Returns 0 or -1 (the context is terminating). */
int co_out_send(void *push, const co_out_hdr_t *h, const uint8_t *rid,
                size_t rid_len, const void *body, size_t len);

/* Receive one result without waiting: 0 and the three parts, or -1 when
 * none is waiting. rid and body are initialised here in every case; the
 * caller closes them. */
int co_out_recv(void *pull, co_out_hdr_t *h, zmq_msg_t *rid,
                zmq_msg_t *body);

#endif
