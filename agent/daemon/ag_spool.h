/* ag_spool.h -- the agent's durable outbox: one fsync'd file per message.
 *
 * Every data message (Calibration, RunStart, SampleBatch, RunEnd,
 * JobStatus) is appended here before it is sent and removed only when the
 * collector has acked its seq, so a crash of the agent, the collector or
 * the database never loses one. docs/spool.md describes the files.
 *
 * Sequence numbers: ag_spool_take_seq() hands out numbers that keep
 * growing across restarts. They are leased from a counter file in blocks
 * of AG_SPOOL_SEQ_LEASE (one fsync per block, not per message), so after a
 * restart the numbers jump forward by up to one block; they never repeat.
 *
 * Bounds: max_bytes and max_messages. An append that would pass either is
 * refused with AG_SPOOL_FULL and a message naming the bound, unless the
 * caller forces it (a RunEnd must always be recordable, or a run could
 * never be closed); old data is never dropped to make room.
 *
 * Corrupt or truncated files found by ag_spool_open() or ag_spool_read()
 * are moved into DIR/corrupt/ and reported (file name and reason) through
 * ag_spool_problem(); they never stop the spool.
 *
 * One process at a time: ag_spool_open() takes an flock on DIR/lock and
 * fails with "spool DIR is in use by another process" while another
 * process (or another open in this one) holds it.
 *
 * Thread safety: every function takes the spool's own mutex, so a
 * measuring thread may append while the network thread reads and removes.
 * No function holds it while it writes and fsyncs a file (an append
 * checks and reserves its room under it, writes its file, then indexes
 * it; the state files have a lock of their own), so the network thread's
 * counts at every Heartbeat never wait for the disk. Appends of one seq
 * from two threads at once are not supported (take_seq hands out each
 * once).
 *
 * Ownership: ag_spool_open() returns a spool the caller owns and frees
 * with ag_spool_destroy(). ag_spool_read() returns a malloc'd buffer the
 * caller frees. Nothing here prints or exits.
 */
#ifndef AG_SPOOL_H
#define AG_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AG_SPOOL_OK       0
#define AG_SPOOL_ERR     -1
#define AG_SPOOL_FULL    -2   /* a bound would be passed; nothing written */
#define AG_SPOOL_NOTFOUND -3  /* no such seq (already removed) */
#define AG_SPOOL_CORRUPT -4   /* the file was bad and has been moved aside */

/* One message is at most the collector's ZMQ_MAXMSGSIZE. */
#define AG_SPOOL_MAX_MESSAGE_BYTES  (4u << 20)
#define AG_SPOOL_DEFAULT_MAX_BYTES  (256ull << 20)   /* --spool-max 256 */
#define AG_SPOOL_DEFAULT_MAX_MESSAGES 100000u
#define AG_SPOOL_SEQ_LEASE          1024u
/* Problems kept for ag_spool_problem(): the first ones; later ones are
 * not kept (their files are still moved aside). The first ones say the
 * most, and forgetting old ones would free strings whose pointers
 * ag_spool_problem() has handed out ("valid until destroyed"). */
#define AG_SPOOL_MAX_PROBLEMS       64u

typedef struct ag_spool ag_spool_t;

typedef struct {
    uint64_t max_bytes;      /* payload bytes held; 0: the default */
    uint32_t max_messages;   /* messages held; 0: the default */
} ag_spool_limits_t;

/* Open (creating if needed, mode 0700) the spool in dir with limits (NULL
 * for the defaults). Scans the directory: removes leftover *.tmp files of
 * an interrupted append, checks every message file and moves bad ones
 * aside. On failure *out is NULL and err names the call and path. */
int ag_spool_open(const char *dir, const ag_spool_limits_t *limits,
                  ag_spool_t **out, char *err, size_t errlen);

/* Close and free *sp, then set it to NULL. Files stay. Accepts NULL. */
void ag_spool_destroy(ag_spool_t **sp);

/* The next sequence number (> 0), never handed out before, even across
 * restarts. 0 on a failure to persist the counter (err says why). */
uint64_t ag_spool_take_seq(ag_spool_t *sp, char *err, size_t errlen);

/* Write data[0..len-1] as message seq (tmp file, fsync, rename, fsync
 * dir). seq must come from ag_spool_take_seq() and be new. Returns
 * AG_SPOOL_FULL when a bound would be passed and force is false. */
int ag_spool_append(ag_spool_t *sp, uint64_t seq, const void *data,
                    size_t len, bool force, char *err, size_t errlen);

/* Read message seq into a new buffer *data (caller frees) of *len bytes.
 * A bad file is moved aside and AG_SPOOL_CORRUPT returned. */
int ag_spool_read(ag_spool_t *sp, uint64_t seq, void **data, size_t *len,
                  char *err, size_t errlen);

/* Delete message seq (it was acked). AG_SPOOL_NOTFOUND when it is not
 * held, e.g. a duplicate ack. */
int ag_spool_remove(ag_spool_t *sp, uint64_t seq, char *err, size_t errlen);

/* Copy up to max held seqs, in increasing order, that are greater than
 * after into seqs; returns how many were copied. */
size_t ag_spool_list(ag_spool_t *sp, uint64_t after, uint64_t *seqs,
                     size_t max);

/* Messages and payload bytes held now. */
size_t ag_spool_count(ag_spool_t *sp);
uint64_t ag_spool_bytes(ag_spool_t *sp);

/* True when a message of len bytes could be appended without force. */
bool ag_spool_has_room(ag_spool_t *sp, size_t len);

/* The i-th problem found since open ("FILE: reason"), or NULL. Pointers
 * stay valid until the spool is destroyed. */
const char *ag_spool_problem(ag_spool_t *sp, size_t i);
size_t ag_spool_problem_count(ag_spool_t *sp);

/* The directory, as given to ag_spool_open(). */
const char *ag_spool_dir(const ag_spool_t *sp);

/* A small fsync'd state file beside the messages (e.g. the run in
 * progress): write replaces it atomically, read returns a new NUL-ended
 * string (caller frees) or NULL when absent, clear deletes it. name is
 * [a-z0-9-]+ and must not end in ".msg" or ".tmp". */
int ag_spool_state_write(ag_spool_t *sp, const char *name, const char *text,
                         char *err, size_t errlen);
char *ag_spool_state_read(ag_spool_t *sp, const char *name);
int ag_spool_state_clear(ag_spool_t *sp, const char *name, char *err,
                         size_t errlen);

#endif
