/* co_pg.h -- the collector's private PostgreSQL cluster.
 *
 * Without --db the collector keeps its own cluster in DATA_DIR/pg: created
 * by initdb on first start (superuser "parity", trust authentication on a
 * Unix socket only: listen_addresses = '' and the socket in DATA_DIR/pg,
 * a directory only its owner can enter), started with pg_ctl, reused when
 * it is already there or still running after a crash, and stopped with
 * `pg_ctl stop -m fast` by co_pg_stop(). As root the tools and the server
 * run as the `postgres` user (runuser) and DATA_DIR/pg is chowned to it;
 * DATA_DIR itself gets o+x so that user can reach it.
 *
 * DATA_DIR/collector.lock (flock, holding the pid; co_pg_lock_dir) keeps
 * a second collector off the same data dir until co_pg_destroy().
 *
 * Binaries: PARITY_PG_BINDIR if set, else the newest
 * /usr/lib/postgresql/N/bin, else `pg_config --bindir`. The tools' output
 * goes to DATA_DIR/pg.log. Functions return 0 or -1 and fill err.
 */
#ifndef CO_PG_H
#define CO_PG_H

#include <stddef.h>
#include <stdbool.h>

typedef struct co_pg co_pg_t;

/* Create (if needed) and start (if needed) the cluster under data_dir,
 * and make sure database "parity" exists. Returns a new handle the caller
 * owns (co_pg_destroy), or NULL with err filled. */
co_pg_t *co_pg_new(const char *data_dir, char *err, size_t errlen);

/* Take DATA_DIR/collector.lock (creating DATA_DIR 0700): an open,
 * flock'ed descriptor holding our pid, which the caller closes to
 * release it; -1 with err when another collector holds it. co_pg_new
 * takes it itself; a collector on --db with --data-dir takes it here. */
int co_pg_lock_dir(const char *data_dir, char *err, size_t errlen);

/* libpq connection string of the "parity" database; owned by pg. */
const char *co_pg_conninfo(const co_pg_t *pg);

/* The directory holding the server's Unix socket (for psql -h). */
const char *co_pg_socket_dir(const co_pg_t *pg);

/* Stop the server (pg_ctl stop -m fast, waiting). Idempotent. */
int co_pg_stop(co_pg_t *pg, char *err, size_t errlen);

/* Free the handle and clear *pg; does NOT stop the server (a crash-free
 * exit calls co_pg_stop first). NULL is fine. */
void co_pg_destroy(co_pg_t **pg);

/* Lower a server process's CPU priority to nice (0..19): its own nice
 * value and, where the kernel groups CPU time by session (autogroup,
 * /proc/PID/autogroup), its session's. Every PostgreSQL server process
 * is a session of its own (setsid at fork), so with autogroup on its
 * own nice value weighs against nothing: each backend got as much CPU
 * as the collector's whole session. Returns 0, or -1 with errno (EAGAIN:
 * the kernel takes one autogroup change per 100 ms from an unprivileged
 * process; try again later). No autogroup in the kernel is not an
 * error. */
int co_pg_renice(int pid, int nice);

/* co_pg_renice once per server process, for a connection that may be
 * made again: *done_pid is the process done last (a new connection is
 * a new process); after EAGAIN it is cleared, so the next call tries
 * again. Returns 0 when pid was done already (or is not one), 1 when it
 * is done now, -1 with errno when it failed. */
int co_pg_renice_once(int pid, int nice, int *done_pid);

#endif
