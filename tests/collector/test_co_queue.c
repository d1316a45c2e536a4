/* test_co_queue.c -- co_queue: items come out in the order they went in,
 * the item and byte bounds refuse a push (leaving the item with the
 * caller) but never a control item, a pop waits at most its timeout,
 * close wakes a waiting popper and refuses pushes, and a frame's bytes
 * travel with its item. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "co_queue.h"
#include "pw_clock.h"
#include "tap.h"

static co_queue_item_t *
s_item(uint64_t seq, size_t bytes)
{
    co_queue_item_t *it = co_queue_item_new(CO_ITEM_FRAME);
    if (it) {
        it->seq = seq;
        it->bytes = bytes;
        zmq_msg_init_size(&it->frame, bytes);
        memset(zmq_msg_data(&it->frame), (int)seq, bytes);
    }
    return it;
}

static void *
s_close_later(void *arg)
{
    struct timespec ts = { 0, 100 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    co_queue_close(arg);
    return NULL;
}

int
main(void)
{
    co_queue_t *q = co_queue_new(3, 100);
    ok(q != NULL, "a queue of 3 items and 100 bytes");
    size_t items = 9, bytes = 9;
    co_queue_depth(q, &items, &bytes);
    ok(items == 0 && bytes == 0, "new: empty");

    co_queue_item_t *a = s_item(1, 40), *b = s_item(2, 40), *c = s_item(3, 30);
    ok(co_queue_push(q, &a, false) == 0 && a == NULL,
       "a push moves the item into the queue");
    ok(co_queue_push(q, &b, false) == 0, "a second");
    ok(co_queue_push(q, &c, false) == -1 && c != NULL,
       "a push past the byte bound is refused and the item stays the "
       "caller's");
    co_queue_depth(q, &items, &bytes);
    ok(items == 2 && bytes == 80, "depth counts items and bytes (%zu, %zu)",
       items, bytes);
    c->bytes = 20;
    ok(co_queue_push(q, &c, false) == 0, "one that fits goes in");
    co_queue_item_t *d = s_item(4, 0);
    ok(co_queue_push(q, &d, false) == -1 && d, "a fourth item is refused");
    d->kind = CO_ITEM_OFFLINE;
    ok(co_queue_push(q, &d, true) == 0 && !d,
       "a control item is taken past the bounds");

    uint64_t want[] = { 1, 2, 3, 4 };
    bool order = true;
    for (int i = 0; i < 4; i++) {
        co_queue_item_t *it = co_queue_pop(q, 0);
        order &= it && it->seq == want[i];
        if (it && it->seq == 1)
            ok(zmq_msg_size(&it->frame) == 40
               && ((unsigned char *)zmq_msg_data(&it->frame))[39] == 1,
               "the frame travels with its item");
        co_queue_item_free(&it);
        ok(it == NULL, "item_free clears the pointer (%d)", i);
    }
    ok(order, "items come out in the order they went in");
    co_queue_depth(q, &items, &bytes);
    ok(items == 0 && bytes == 0, "and the depth is back to zero");

    int64_t t0 = pw_clock_mono_us();
    co_queue_item_t *none = co_queue_pop(q, 50000);
    int64_t waited = pw_clock_mono_us() - t0;
    ok(none == NULL && waited >= 45000 && waited < 1000000,
       "an empty pop waits its timeout, no longer (%lld us)",
       (long long)waited);
    ok(co_queue_pop(q, 0) == NULL, "a pop with no timeout does not wait");

    pthread_t th;
    pthread_create(&th, NULL, s_close_later, q);
    t0 = pw_clock_mono_us();
    none = co_queue_pop(q, 10 * 1000000);
    waited = pw_clock_mono_us() - t0;
    pthread_join(th, NULL);
    ok(none == NULL && waited < 5000000,
       "close wakes a waiting pop (%lld us)", (long long)waited);
    ok(co_queue_closed(q), "closed says so");
    co_queue_item_t *e = s_item(5, 1);
    ok(co_queue_push(q, &e, true) == -1 && e, "a closed queue takes "
       "nothing, not even a control item");
    co_queue_item_free(&e);

    co_queue_t *full = co_queue_new(10, 1000);
    for (int i = 0; i < 3; i++) {
        co_queue_item_t *it = s_item((uint64_t)i, 10);
        co_queue_push(full, &it, false);
    }
    co_queue_destroy(&full);
    ok(full == NULL, "destroy frees the items still queued and clears");
    co_queue_destroy(&q);
    co_queue_destroy(&q);
    co_queue_item_free(&e);
    return tap_done();
}
