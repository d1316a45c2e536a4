/* co_hook.h -- one webhook: JSON notices POSTed to one URL, in order,
 * by a thread of its own (libcurl), from a bounded queue.
 *
 * co_hook_post never blocks and never waits for the network: it copies
 * the notice into the queue, or, when the queue is full, drops it,
 * counts it and logs it (the first drop of each outage, with the bound).
 * The thread sends the oldest notice; a notice the receiver did not take
 * (no connection, a timeout, HTTP 408, 429 or 5xx) stays at the head and
 * is sent again after a back-off (CO_HOOK_RETRY_MIN_MS doubling to
 * CO_HOOK_RETRY_MAX_MS), so nothing is lost while the receiver is down,
 * up to the queue's bound. A receiver that refuses a notice (any other
 * 4xx) is not asked again for it: logged and dropped. Notices still
 * queued when the collector stops are logged as not delivered; the
 * queue is memory only.
 *
 * Logs with co_log (one line each: notify_retry, notify_delivered,
 * notify_refused, notify_dropped, notify_undelivered).
 */
#ifndef CO_HOOK_H
#define CO_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Default and largest queue, in notices (--notify-queue). */
#define CO_HOOK_QUEUE_DEFAULT 1000
#define CO_HOOK_QUEUE_MAX     100000
/* One attempt's bound, and its connection's. */
#define CO_HOOK_TIMEOUT_MS         10000
#define CO_HOOK_CONNECT_TIMEOUT_MS 5000
/* Back-off between attempts at one notice. */
#define CO_HOOK_RETRY_MIN_MS 250
#define CO_HOOK_RETRY_MAX_MS 8000
/* Longest notice accepted (a bigger one is a bug of the caller). */
#define CO_HOOK_BODY_MAX (256u * 1024)

typedef struct co_hook co_hook_t;

typedef struct {
    uint64_t queued;      /* notices taken by co_hook_post */
    uint64_t delivered;   /* answered 2xx */
    uint64_t attempts;    /* POSTs made, retries included */
    uint64_t refused;     /* answered a 4xx other than 408 and 429 */
    uint64_t dropped;     /* not queued: the queue was full */
} co_hook_counters_t;

/* Check url: http:// or https:// with a host. 0, or -1 with err. */
int co_hook_check_url(const char *url, char *err, size_t errlen);

/* A hook for url (copied; checked) with a queue of queue_max notices,
 * its thread started. Caller owns the result; NULL with err. */
co_hook_t *co_hook_new(const char *url, size_t queue_max, char *err,
                       size_t errlen);

/* Queue body (a JSON text, copied). Never blocks. False when it was not
 * queued (the queue is full, or it is larger than CO_HOOK_BODY_MAX). */
bool co_hook_post(co_hook_t *h, const char *body);

void co_hook_counters(co_hook_t *h, co_hook_counters_t *out);

/* Stop the thread (an attempt under way ends within its timeout), log
 * the notices not delivered, free; NULL is fine. */
void co_hook_destroy(co_hook_t **h);

#endif
