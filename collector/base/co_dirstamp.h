/* co_dirstamp.h -- when a directory of key files must be read again.
 *
 * The collector reads --allow and --admin again when a directory's
 * modification time changes (co_auth at every handshake and heartbeat,
 * co_query at every request). The time alone misses two changes:
 *
 *   - a file created and then written (cp, install, an editor's save):
 *     the directory's time moves at the create and not at the write, so
 *     a read between the two finds the file empty or cut short, and
 *     nothing tells the reader to look again;
 *   - a second change within one tick of the file system's clock (a few
 *     milliseconds on Linux) after a read: the time does not move.
 *
 * So a read is unsure while the newest time it saw, the directory's or
 * a file's, is within CO_DIRSTAMP_SETTLE_MS of the read, and an unsure
 * read is repeated, at most every CO_DIRSTAMP_RECHECK_MS (at once for a
 * key no file let in), until one is sure. A file rewritten in place long
 * after the last read still goes unnoticed: keys are added and removed
 * as files.
 *
 * A value, no allocation; times are passed in (testable without
 * sleeping). One per reader: not thread-safe.
 */
#ifndef CO_DIRSTAMP_H
#define CO_DIRSTAMP_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define CO_DIRSTAMP_SETTLE_MS 3000
#define CO_DIRSTAMP_RECHECK_MS 250

typedef struct {
    struct timespec mtime;   /* the directory's, taken before the read */
    int64_t read_ms;         /* monotonic time of the read */
    bool unsure;             /* the read may have missed a change */
    bool done;               /* a read happened */
} co_dirstamp_t;

/* Note a read: dir_mtime is the directory's time taken before its
 * entries were read, newest the latest time among it and its files,
 * now_ms pw_clock_mono_ms() and unix_us pw_clock_unix_us(). */
void co_dirstamp_note(co_dirstamp_t *s, const struct timespec *dir_mtime,
                      const struct timespec *newest, int64_t now_ms,
                      int64_t unix_us);

/* True when the directory, whose time is now dir_mtime, is due another
 * read: never read, its time moved, or the last read was unsure and
 * either CO_DIRSTAMP_RECHECK_MS have passed since or missing is true (a
 * key asked about is in no file of that read: its file may be what the
 * read missed). */
bool co_dirstamp_due(const co_dirstamp_t *s,
                     const struct timespec *dir_mtime, int64_t now_ms,
                     bool missing);

/* Make newest the later of newest and t. */
void co_dirstamp_later(struct timespec *newest, const struct timespec *t);

#endif
