/* co_seen.h -- hosts.last_seen written beside the writer, never in its
 * way.
 *
 * The writer used to run `UPDATE hosts SET last_seen = now()` for every
 * host heard in the last heartbeat interval on its own thread, between
 * two bursts, and wait for it: at 1,000 agents ~10 ms of every second
 * (and its COMMIT's fsync, a disk stall included) in which no Ack could
 * be sent; a client holding one host's row (`SELECT ... FOR UPDATE`)
 * stalled every Ack for as long as it held it.
 *
 * Here the UPDATE goes out on a connection of its own with libpq's
 * asynchronous calls, and its answer is read by a later call: the writer
 * never waits for the server. Rows another transaction holds are
 * skipped (SKIP LOCKED; the host is written again at its next frame),
 * so this connection never waits for a lock either and cannot make a
 * deadlock with the writer's transaction. The connection commits
 * without waiting for the WAL's flush: last_seen is rewritten every
 * heartbeat interval, and a crash losing the last one costs nothing.
 *
 * Ids given while an UPDATE is still out wait for the next one (a
 * set of at most CO_SEEN_MAX; more are dropped: they are heard again
 * within an interval). Connecting
 * is the one step that waits (a Unix socket or connect_timeout, 2 s),
 * at most once per CO_SEEN_RETRY_US after a failure.
 *
 * Not thread-safe: one owner (the writer thread). */
#ifndef CO_SEEN_H
#define CO_SEEN_H

#include <stddef.h>
#include <stdint.h>

#define CO_SEEN_MAX 16384
#define CO_SEEN_RETRY_US 5000000

typedef struct co_seen co_seen_t;

/* Caller owns the result (co_seen_destroy); NULL on out of memory. The
 * conninfo is copied; nothing connects before the first co_seen_add. */
co_seen_t *co_seen_new(const char *conninfo);

/* Close the connection (an UPDATE still out is left to the server) and
 * free; NULL and *s NULL are fine. */
void co_seen_destroy(co_seen_t **s);

/* Add host ids to the next write, then co_seen_poll. */
void co_seen_add(co_seen_t *s, const int64_t *ids, size_t n, int64_t now_us);

/* Read what the server has sent without waiting; when no UPDATE is out
 * and ids wait, send them (connecting first if need be, see above). */
void co_seen_poll(co_seen_t *s, int64_t now_us);

#endif
