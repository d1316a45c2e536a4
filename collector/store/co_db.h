/* co_db.h -- the writer's connection to PostgreSQL: transactions,
 * statements, binary COPY, migrations; the handle every store module
 * (co_hosts, co_cals, co_ingest, co_verdicts, co_retain) stores through.
 *
 * One connection, used from one thread. Every statement is parameterised;
 * every message is stored in one transaction together with the record of
 * its natural key (calibration_id, run_id, (run_id, batch_seq)), so that a
 * duplicate changes nothing and an Ack can follow the COMMIT.
 *
 * Status codes of the store functions (here and in the store modules):
 *   CO_DB_OK       stored and committed
 *   CO_DB_DUP      stored earlier; nothing changed (ack it again)
 *   CO_DB_LATER    depends on a message not stored yet (do not ack)
 *   CO_DB_REFUSED  can never be stored (bad content, another host's run):
 *                  err says why
 *   CO_DB_DEPENDS  can never be stored because a message it depends on
 *                  was refused for good (a batch or RunEnd of a refused
 *                  RunStart, a RunEnd counting a refused batch): err
 *                  names that message and why it was refused
 *   CO_DB_FAIL     the database failed or is down (do not ack); when the
 *                  connection is lost co_db_connected() turns false
 *
 * Messages passed in are borrowed; nothing is kept after a call returns.
 * The second half of this header is for the store modules only: what
 * they share of the handle (its statement runner, its COPY buffer, the
 * rows it holds between messages).
 */
#ifndef CO_DB_H
#define CO_DB_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include <libpq-fe.h>

#include "co_conn.h"
#include "co_floors.h"
#include "co_ids.h"
#include "parity.pb-c.h"

enum {
    CO_DB_OK = 0,
    CO_DB_DUP = 1,
    CO_DB_LATER = 2,
    CO_DB_REFUSED = -2,
    CO_DB_FAIL = -1,
    CO_DB_DEPENDS = -3,
};

/* Default size of the calibration window behind a host's floor. */
#define CO_DB_FLOOR_WINDOW 1000
/* Upper bound of that window (and of --floor-window). */
#define CO_DB_FLOOR_WINDOW_MAX 1000000

typedef struct co_db co_db_t;

/* A handle for conninfo (copied). Does not connect. Caller owns it. */
co_db_t *co_db_new(const char *conninfo);
void co_db_destroy(co_db_t **db);

/* (Re)connect; drops a previous connection first. */
int co_db_connect(co_db_t *db, char *err, size_t errlen);
bool co_db_connected(const co_db_t *db);
void co_db_disconnect(co_db_t *db);

/* Apply the embedded migrations above the stored schema_version, each in
 * its own transaction. *applied (may be NULL) gets how many ran; a second
 * call applies none. */
int co_db_migrate(co_db_t *db, int *applied, char *err, size_t errlen);

/* The stored schema version (0 on an empty database). */
int co_db_schema_version(co_db_t *db, int *version, char *err,
                         size_t errlen);

/* One transaction around many messages (the writer's burst): until
 * co_db_commit, each store function's own transaction is a savepoint in
 * it, so one refused message is undone alone and the burst costs one
 * COMMIT (one WAL flush). What a store function said CO_DB_OK or
 * CO_DB_DUP about is durable only after co_db_commit returns CO_DB_OK:
 * ack nothing before. A failed commit rolls everything back
 * (CO_DB_FAIL). co_db_abort rolls back. Migrations, partitions and
 * retention must not run inside. */
int co_db_begin(co_db_t *db, char *err, size_t errlen);
int co_db_commit(co_db_t *db, char *err, size_t errlen);
void co_db_abort(co_db_t *db);

/* A run's samples as the writer stored them (every kind), borrowed: the
 * next co_verdicts_run_end uses them instead of reading the run's rows back
 * when their count is exactly that of the run's stored batches (so it
 * holds every stored sample once); otherwise, or with NULL, it reads
 * them. Reading them back scans every page written while the run lasted
 * (BRIN cannot tell interleaved runs apart): ~40 ms a RunEnd under a
 * fleet's load. Cleared by co_verdicts_run_end. */
typedef struct {
    const int32_t *arm;
    const double *wall_us;
    const double *instructions;   /* 0: not counted; NULL: none kept */
    const uint8_t *kind;
    size_t n;
} co_db_run_cache_t;
void co_db_set_run_samples(co_db_t *db, const co_db_run_cache_t *cache);

/* runs.id of the run the last co_verdicts_run_end stored (0: it stored
 * none, or the run is no longer remembered). */
int64_t co_db_last_run_end(const co_db_t *db);

/* The calibration window (1..CO_DB_FLOOR_WINDOW_MAX; others ignored) of
 * the floor kept on a host's row when a Calibration is stored: the
 * collector's --floor-window. Until set, CO_DB_FLOOR_WINDOW, then the
 * last co_verdicts_run_end's. Each Calibration and each RunEnd writes hosts'
 * floor_us, floor_is_default, floor_samples and floor_at_us (the end of
 * the window), never replacing one whose window ends later. */
void co_db_set_floor_window(co_db_t *db, int window);

/* Longest collector name (--name), and this collector's: written as the
 * holder of each host whose Hello it stores. Empty until set. */
#define CO_DB_NAME_MAX 128
void co_db_set_collector(co_db_t *db, const char *name);

/* ---- for the store modules --------------------------------------------
 * Each store module keeps its statements in a table (co_stmt_t) and
 * runs them with co_db_run; a store function wraps its message in
 * co_db_exec(db, "BEGIN") ... co_db_exec(db, "COMMIT"), co_db_rollback on
 * failure (inside co_db_begin's burst these are a savepoint), and names
 * the message it stores with co_db_what while it runs. */

/* Longest run id a store function accepts (its message's name too). */
#define CO_DB_UUID_MAX 128

/* Run st with params (st->n_params of them) on the writer's connection
 * (co_conn_run, inside the burst's transaction): the result (caller
 * clears) or NULL with *rc and err set (a data or constraint error
 * CO_DB_REFUSED, named by co_db_what; anything else CO_DB_FAIL). */
PGresult *co_db_run(co_db_t *db, const co_stmt_t *st,
                    const char *const *params, int *rc, char *err,
                    size_t errlen);

/* co_db_run for a statement built at run time (n rows of VALUES); its
 * text is its name. */
PGresult *co_db_run_text(co_db_t *db, const char *sql, int n,
                         const char *const *params, ExecStatusType want,
                         int *rc, char *err, size_t errlen);

/* A statement without parameters, or BEGIN / COMMIT (a savepoint and
 * its release inside co_db_begin's transaction). */
int co_db_exec(co_db_t *db, const char *sql, char *err, size_t errlen);

/* Undo the store function's transaction (or its savepoint). */
void co_db_rollback(co_db_t *db);

/* The end of a store function's transaction: COMMIT when rc is
 * CO_DB_OK, else co_db_rollback; returns the final status. */
int co_db_end(co_db_t *db, int rc, char *err, size_t errlen);

/* Name the message being stored ("batch R/3"; NULL clears it): a
 * statement the database refuses for the message's content is reported
 * under this name, never with the statement (peers get the text; it
 * would show them the schema). co_db_what_text returns it. */
void co_db_what(co_db_t *db, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *co_db_what_text(const co_db_t *db);

/* Binary COPY: co_db_copy_begin, per row co_db_copy_row(fields) and one
 * co_db_copy_* per field, then co_db_copy_send with the COPY ... FROM
 * STDIN (FORMAT binary) statement. The data has a limit checked on every
 * append (64 MiB): a failed append sticks and co_db_copy_send reports it
 * (CO_DB_REFUSED when too big, CO_DB_FAIL out of memory), sending
 * nothing. */
#define CO_DB_COPY_MAX (64u << 20)
void co_db_copy_begin(co_db_t *db);
void co_db_copy_row(co_db_t *db, int16_t fields);
void co_db_copy_i16(co_db_t *db, int16_t v);
void co_db_copy_i32(co_db_t *db, int32_t v);
void co_db_copy_i64(co_db_t *db, int64_t v);
void co_db_copy_bool(co_db_t *db, bool v);
void co_db_copy_f64(co_db_t *db, double v);
void co_db_copy_text(co_db_t *db, const char *s, size_t n);
void co_db_copy_null(co_db_t *db);
int co_db_copy_send(co_db_t *db, const char *sql, char *err, size_t errlen);

/* What the handle holds between messages, forgotten whenever what this
 * connection wrote may be undone (a failed statement, a rollback, a
 * failed COMMIT, a lost connection): rows a later COMMIT loses would
 * otherwise be used as if stored. */
co_floors_t *co_db_floors(co_db_t *db);
co_ids_t *co_db_ids(co_db_t *db);
const char *co_db_collector(const co_db_t *db);
int co_db_floor_window(const co_db_t *db);
/* The run samples co_db_set_run_samples lent (NULL: none). */
const co_db_run_cache_t *co_db_run_samples(const co_db_t *db);
void co_db_set_last_run_end(co_db_t *db, int64_t run);

/* Remember a stored run (runs.id, its host, its arms) by its run id, in
 * a bounded round-robin cache; co_db_run_find says whether it is held. */
void co_db_run_keep(co_db_t *db, const char *uuid, int64_t id,
                    int64_t host_id, size_t n_arms);
bool co_db_run_find(const co_db_t *db, const char *uuid, int64_t *id,
                    int64_t *host_id, size_t *n_arms);

/* Helpers of the store modules: "" for NULL; a double as text that
 * reads back the same. */
static inline const char *
co_db_str(const char *s)
{
    return s ? s : "";
}
void co_db_num(char *buf, size_t len, double x);

#endif
