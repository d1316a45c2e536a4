/* pw_locked.h -- the value of an expression read under a mutex, for the
 * getters other threads call (a count, a flag, one entry):
 *
 *     size_t ag_spool_count(ag_spool_t *sp)
 *     {
 *         return PW_LOCKED(&sp->lock, size_t, sp->count);
 *     }
 *
 * Header-only: a GNU statement expression (the project builds as gnu11),
 * so the lock is taken, the expression copied into a value of type,
 * and the lock released, in that order, where it is used.
 */
#ifndef PW_LOCKED_H
#define PW_LOCKED_H

#include <pthread.h>

#define PW_LOCKED(mutex, type, expr) __extension__ ({                      \
        pthread_mutex_lock(mutex);                                         \
        type pw_locked_value_ = (expr);                                    \
        pthread_mutex_unlock(mutex);                                       \
        pw_locked_value_;                                                  \
    })

#endif
