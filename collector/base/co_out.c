/* co_out.c -- see co_out.h. */
#include "co_out.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void
co_out_hdr_done(co_out_hdr_t *h, const co_queue_item_t *item)
{
    memset(h, 0, sizeof *h);
    h->flags = CO_OUT_DONE;
    snprintf(h->key, sizeof h->key, "%s", item->key);
    h->seq = item->seq;
    h->bytes = item->bytes;
    h->arrived_us = item->arrived_us;
    h->kind = (int)item->kind;
    h->body_case = item->body_case;
}

void *
co_out_connect(void *ctx, char *err, size_t errlen)
{
    void *s = zmq_socket(ctx, ZMQ_PUSH);
    int hwm = CO_OUT_HWM, linger = 0;
    if (!s || zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm)
        || zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger)
        || zmq_connect(s, CO_OUT_ENDPOINT) != 0) {
        snprintf(err, errlen, "zmq_connect(%s): %s", CO_OUT_ENDPOINT,
                 zmq_strerror(errno));
        if (s)
            zmq_close(s);
        return NULL;
    }
    return s;
}

int
co_out_send(void *push, const co_out_hdr_t *h, const uint8_t *rid,
            size_t rid_len, const void *body, size_t len)
{
    if (zmq_send(push, h, sizeof *h, ZMQ_SNDMORE) < 0
        || zmq_send(push, rid, rid_len, ZMQ_SNDMORE) < 0
        || zmq_send(push, body, len, 0) < 0)
        return -1;
    return 0;
}

int
co_out_recv(void *pull, co_out_hdr_t *h, zmq_msg_t *rid, zmq_msg_t *body)
{
    zmq_msg_t hm;
    int more = 0;
    size_t ml = sizeof more;
    bool ok = false;
    zmq_msg_init(&hm);
    zmq_msg_init(rid);
    zmq_msg_init(body);
    if (zmq_msg_recv(&hm, pull, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&hm);
        return -1;
    }
    /* The parts of one message arrive together (ZeroMQ's atomicity). */
    zmq_getsockopt(pull, ZMQ_RCVMORE, &more, &ml);
    if (more && zmq_msg_recv(rid, pull, 0) >= 0) {
        zmq_getsockopt(pull, ZMQ_RCVMORE, &more, &ml);
        if (more && zmq_msg_recv(body, pull, 0) >= 0)
            ok = zmq_msg_size(&hm) == sizeof *h;
    }
    if (ok)
        memcpy(h, zmq_msg_data(&hm), sizeof *h);
    zmq_msg_close(&hm);
    return ok ? 0 : -1;
}
