/* co_db.h -- the collector's storage: libpq, migrations, ingest, verdicts.
 *
 * One connection, used from one thread. Every statement is parameterised;
 * every message is stored in one transaction together with the record of
 * its natural key (calibration_id, run_id, (run_id, batch_seq)), so that a
 * duplicate changes nothing and an Ack can follow the COMMIT.
 *
 * Status codes of the store functions:
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
 */
#ifndef CO_DB_H
#define CO_DB_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include <libpq-fe.h>

#include "parity.pb-c.h"

enum {
    CO_DB_OK = 0,
    CO_DB_DUP = 1,
    CO_DB_LATER = 2,
    CO_DB_REFUSED = -2,
    CO_DB_FAIL = -1,
    CO_DB_DEPENDS = -3,
};

/* Seconds a connect may take unless the conninfo says otherwise (each
 * is made on a thread with other work waiting: co_db_open). */
#define CO_DB_CONNECT_TIMEOUT "2"

/* Default size of the calibration window behind a host's floor. */
#define CO_DB_FLOOR_WINDOW 1000
/* Upper bound of that window (and of --floor-window). */
#define CO_DB_FLOOR_WINDOW_MAX 1000000

typedef struct co_db co_db_t;

/* A handle for conninfo (copied). Does not connect. Caller owns it. */
co_db_t *co_db_new(const char *conninfo);
void co_db_destroy(co_db_t **db);

/* A new connection to conninfo, every connection of the collector made
 * the same way: connect_timeout CO_DB_CONNECT_TIMEOUT unless conninfo
 * says otherwise, NOTICEs quieted (they would break the one-line log),
 * then the statements of settings (NULL: none). NULL on failure, with
 * err "PQconnectdb: " or "settings: " and libpq's first line (never the
 * conninfo: it may hold a password). Caller owns it (PQfinish). */
PGconn *co_db_open(const char *conninfo, const char *settings, char *err,
                   size_t errlen);

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

/* Insert or update the host with this authenticated public key from a
 * Hello; *host_id gets its id. Marks it online. CO_DB_REFUSED when its
 * environment_json is neither empty nor a JSON object. */
int co_db_hello(co_db_t *db, const char *public_key, const Parity__Hello *h,
                int64_t *host_id, char *err, size_t errlen);

/* Mark a host online or offline (best effort, no transaction needed). */
int co_db_host_online(co_db_t *db, int64_t host_id, bool online,
                      char *err, size_t errlen);

/* Mark offline every host this collector held (co_db_set_collector), and
 * those no collector holds: at start nobody is connected here yet. Hosts
 * of other collectors on the same database are theirs to keep. */
int co_db_hosts_offline(co_db_t *db, char *err, size_t errlen);

/* CO_DB_REFUSED without samples or with one that is not finite and > 0. */
int co_db_calibration(co_db_t *db, int64_t host_id,
                      const Parity__Calibration *c, char *err, size_t errlen);

/* CO_DB_REFUSED for another host's run id, no arms, an arm without a
 * name or with an earlier arm's name, an environment that is not a JSON
 * object; CO_DB_DUP for this host's run id stored before (unchanged).
 * A refusal of a run id no host stored is remembered (009_refusals), so
 * that the run's batches and RunEnd get CO_DB_DEPENDS. */
int co_db_run_start(co_db_t *db, int64_t host_id, const Parity__RunStart *rs,
                    char *err, size_t errlen);

/* Store a batch; *stored gets the samples written (0 for a duplicate).
 * CO_DB_REFUSED (nothing stored) when a sample has a time that is not
 * finite or is negative, an unknown kind, an arm the run does not have
 * (CALIBRATION samples excepted), or round/position above INT32_MAX;
 * such a refusal is remembered, so that a RunEnd counting the batch gets
 * CO_DB_DEPENDS. CO_DB_DEPENDS when the run's RunStart was refused. */
int co_db_batch(co_db_t *db, int64_t host_id, const Parity__SampleBatch *b,
                size_t *stored, char *err, size_t errlen);

/* Many batches (from any hosts) in one transaction: one INSERT of their
 * (run, batch_seq) records and one COPY of the new ones' samples, so that
 * a burst costs one commit. Each item gets its own status in rc (CO_DB_OK,
 * CO_DB_DUP, CO_DB_LATER, CO_DB_REFUSED with err, or CO_DB_FAIL) and
 * stored; a data error inside the group makes it fall back to one
 * transaction per batch, so only the bad batch is refused. */
#define CO_DB_GROUP_MAX 64
typedef struct {
    int64_t host_id;
    const Parity__SampleBatch *batch;   /* borrowed */
    int rc;
    size_t stored;
    char err[256];
} co_db_batch_item_t;

/* Returns CO_DB_FAIL when the database failed (then every item not
 * settled before is CO_DB_FAIL), else CO_DB_OK. n <= CO_DB_GROUP_MAX. */
int co_db_batches(co_db_t *db, co_db_batch_item_t *items, size_t n,
                  char *err, size_t errlen);

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
 * next co_db_run_end uses them instead of reading the run's rows back
 * when their count is exactly that of the run's stored batches (so it
 * holds every stored sample once); otherwise, or with NULL, it reads
 * them. Reading them back scans every page written while the run lasted
 * (BRIN cannot tell interleaved runs apart): ~40 ms a RunEnd under a
 * fleet's load. Cleared by co_db_run_end. */
typedef struct {
    const int32_t *arm;
    const double *wall_us;
    const double *instructions;   /* 0: not counted; NULL: none kept */
    const uint8_t *kind;
    size_t n;
} co_db_run_cache_t;
void co_db_set_run_samples(co_db_t *db, const co_db_run_cache_t *cache);

/* runs.id of the run the last co_db_run_end stored (0: it stored
 * none, or the run is no longer remembered). */
int64_t co_db_last_run_end(const co_db_t *db);

/* Store the RunEnd and, in the same transaction, one verdict per
 * non-subject arm: vd_compare of its MEASURED samples against the subject
 * arm's, with the host's floor from its last floor_window calibration
 * samples taken up to the run's end, and parity. CO_DB_LATER while some of
 * batches 0..re->batches-1 are not stored, CO_DB_DEPENDS when one of
 * them (and no later copy) or the run's RunStart was refused. *verdicts
 * gets the count. */
int co_db_run_end(co_db_t *db, int64_t host_id, const Parity__RunEnd *re,
                  int floor_window, double parity, unsigned *verdicts,
                  char *err, size_t errlen);

/* The calibration window (1..CO_DB_FLOOR_WINDOW_MAX; others ignored) of
 * the floor kept on a host's row when a Calibration is stored: the
 * collector's --floor-window. Until set, CO_DB_FLOOR_WINDOW, then the
 * last co_db_run_end's. Each Calibration and each RunEnd writes hosts'
 * floor_us, floor_is_default, floor_samples and floor_at_us (the end of
 * the window), never replacing one whose window ends later. */
void co_db_set_floor_window(co_db_t *db, int window);

/* Longest collector name (--name), and this collector's: written as the
 * holder of each host whose Hello it stores. Empty until set. */
#define CO_DB_NAME_MAX 128
void co_db_set_collector(co_db_t *db, const char *name);

/* Most months co_db_partitions_ensure makes ahead. */
#define CO_DB_MONTHS_AHEAD_MAX 24

/* Make the monthly partitions of samples (samples_pYYYYMM, UTC months of
 * start_unix_us) for the month of now_us and the months_ahead after it
 * (0..CO_DB_MONTHS_AHEAD_MAX, else CO_DB_REFUSED), each that is missing
 * in its own transaction; one that exists is left alone, so a second call
 * changes nothing. Rows of a new month already in samples_default (an
 * agent clock ahead) move into it. Each creation waits at most 5 s for
 * its lock on samples (CO_DB_FAIL then; call again later). */
int co_db_partitions_ensure(co_db_t *db, int64_t now_us, int months_ahead,
                            char *err, size_t errlen);

/* Retention of raw samples: drop every partition of samples whose upper
 * bound is at or before now_us - keep_us, delete the rows of
 * samples_default older than that of runs started before it, and the
 * host_calibration rows taken before it. Runs, arms, batches,
 * run_summaries, verdicts, floors and calibration_samples are kept.
 * *dropped gets the partitions dropped (also when a later step fails).
 * CO_DB_REFUSED when keep_us or now_us is not > 0. Each drop waits at
 * most 5 s for its lock. */
int co_db_retention(co_db_t *db, int64_t keep_us, int64_t now_us,
                    int *dropped, char *err, size_t errlen);

#endif
