/* co_dirstamp.c -- when a directory of key files must be read again;
 * see co_dirstamp.h. */
#include "co_dirstamp.h"

void
co_dirstamp_note(co_dirstamp_t *s, const struct timespec *dir_mtime,
                 const struct timespec *newest, int64_t now_ms,
                 int64_t unix_us)
{
    int64_t newest_us = (int64_t)newest->tv_sec * 1000000
                      + newest->tv_nsec / 1000;
    int64_t age_ms = (unix_us - newest_us) / 1000;
    s->mtime = *dir_mtime;
    s->read_ms = now_ms;
    s->done = true;
    /* A time ahead of the clock by more than the window is a clock
     * that was set back, not a write in progress: re-reading until the
     * clock catches up would read every few hundred milliseconds. */
    s->unsure = age_ms < CO_DIRSTAMP_SETTLE_MS
             && age_ms > -CO_DIRSTAMP_SETTLE_MS;
}

bool
co_dirstamp_due(const co_dirstamp_t *s, const struct timespec *dir_mtime,
                int64_t now_ms, bool missing)
{
    if (!s->done || dir_mtime->tv_sec != s->mtime.tv_sec
        || dir_mtime->tv_nsec != s->mtime.tv_nsec)
        return true;
    return s->unsure
        && (missing || now_ms - s->read_ms >= CO_DIRSTAMP_RECHECK_MS);
}

void
co_dirstamp_later(struct timespec *newest, const struct timespec *t)
{
    if (t->tv_sec > newest->tv_sec
        || (t->tv_sec == newest->tv_sec && t->tv_nsec > newest->tv_nsec))
        *newest = *t;
}
