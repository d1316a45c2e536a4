/* test_co_dirstamp.c -- co_dirstamp: a key directory is read again when
 * its time moves, and while its last read was too close to a change to
 * trust (a file created and not yet written, a second change in the
 * same clock tick), at most every CO_DIRSTAMP_RECHECK_MS (at once for a
 * key no file let in); an old directory, or one whose time is far ahead
 * of the clock, is read once. */
#include <stdio.h>

#include "co_dirstamp.h"
#include "tap.h"

/* The time sec seconds plus ms milliseconds (ms may be negative), as
 * stat gives it: 0 <= tv_nsec < 1e9. */
static struct timespec
s_ts(time_t sec, long ms)
{
    while (ms < 0) {
        sec--;
        ms += 1000;
    }
    return (struct timespec){ sec + ms / 1000, (ms % 1000) * 1000000L };
}

int
main(void)
{
    const int64_t T = 1800000000;                 /* unix seconds */
    const int64_t unix_us = T * 1000000;          /* the read's clock */
    co_dirstamp_t s = { 0 };
    struct timespec dir = s_ts(T - 60, 0), newest = dir;
    ok(co_dirstamp_due(&s, &dir, 0, false), "never read: due");

    /* A minute old, files too: sure. */
    co_dirstamp_note(&s, &dir, &newest, 1000, unix_us);
    ok(!s.unsure, "a directory a minute old is read once");
    ok(!co_dirstamp_due(&s, &dir, 1000 + 3600 * 1000, false),
       "and not again while its time stays");
    struct timespec moved = s_ts(T - 60, 1);
    ok(co_dirstamp_due(&s, &moved, 1001, false),
       "its time moved by 1 ms: due");
    ok(!co_dirstamp_due(&s, &dir, 1001, true),
       "a key no file lets in: not due when the read was sure");

    /* The directory changed 2 ms before the read: another change in the
     * same tick would not move its time. */
    dir = newest = s_ts(T, -2);
    co_dirstamp_note(&s, &dir, &newest, 5000, unix_us);
    ok(s.unsure, "read 2 ms after the directory changed: unsure");
    ok(!co_dirstamp_due(&s, &dir, 5000 + CO_DIRSTAMP_RECHECK_MS - 1,
                        false),
       "not read again within %d ms", CO_DIRSTAMP_RECHECK_MS);
    ok(co_dirstamp_due(&s, &dir, 5001, true),
       "but at once for a key no file lets in");
    ok(co_dirstamp_due(&s, &dir, 5000 + CO_DIRSTAMP_RECHECK_MS, false),
       "read again after %d ms with the same time",
       CO_DIRSTAMP_RECHECK_MS);
    /* The repeated read, the window later: sure. */
    co_dirstamp_note(&s, &dir, &newest, 5000 + CO_DIRSTAMP_SETTLE_MS,
                     unix_us + CO_DIRSTAMP_SETTLE_MS * 1000);
    ok(!s.unsure && !co_dirstamp_due(&s, &dir, 5000 + 3600 * 1000, false),
       "a read %d ms after the change is sure", CO_DIRSTAMP_SETTLE_MS);

    /* The directory is old but a file in it was written 10 ms ago (a
     * key copied in: created, then written). */
    dir = s_ts(T - 600, 0);
    newest = dir;
    struct timespec file = s_ts(T, -10);
    co_dirstamp_later(&newest, &file);
    ok(newest.tv_sec == file.tv_sec && newest.tv_nsec == file.tv_nsec,
       "later: the file's time is the newest");
    struct timespec older = s_ts(T - 900, 0);
    co_dirstamp_later(&newest, &older);
    ok(newest.tv_sec == file.tv_sec && newest.tv_nsec == file.tv_nsec,
       "later: an older time leaves it");
    co_dirstamp_note(&s, &dir, &newest, 9000, unix_us);
    ok(s.unsure && co_dirstamp_due(&s, &dir, 9000 + CO_DIRSTAMP_RECHECK_MS,
                                   false),
       "a file written 10 ms before the read: read again");

    /* A clock set back an hour: every time is ahead of it. */
    dir = newest = s_ts(T + 3600, 0);
    co_dirstamp_note(&s, &dir, &newest, 12000, unix_us);
    ok(!s.unsure, "a time an hour ahead of the clock: read once");
    dir = newest = s_ts(T, 5);
    co_dirstamp_note(&s, &dir, &newest, 13000, unix_us);
    ok(s.unsure, "a time 5 ms ahead (the same clock, read first): unsure");
    return tap_done();
}
