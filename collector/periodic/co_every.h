/* co_every.h -- a thread that calls one function every period until it
 * is stopped: the notice thread (co_notify) and the bisect thread
 * (co_bisector) are each one.
 *
 * The function runs on the thread, first at once, then period_ms after
 * each call returned (never two at once, never piling up behind a slow
 * call). A stop waits for the call in progress to return; a long call
 * asks co_every_stopping between its pieces of work to end early.
 */
#ifndef CO_EVERY_H
#define CO_EVERY_H

#include <stdbool.h>
#include <stddef.h>

typedef struct co_every co_every_t;

/* What the thread calls; e is the thread's handle (for
 * co_every_stopping), arg the one given to co_every_new. */
typedef void (*co_every_fn)(void *arg, co_every_t *e);

/* Start the thread. name (copied) says which in an error. Caller owns
 * the result; NULL with err. */
co_every_t *co_every_new(const char *name, int period_ms, co_every_fn fn,
                         void *arg, char *err, size_t errlen);

/* True once co_every_destroy has asked the thread to stop. */
bool co_every_stopping(co_every_t *e);

/* Stop the thread (after the call in progress), join, free; NULL is
 * fine. */
void co_every_destroy(co_every_t **e);

#endif
