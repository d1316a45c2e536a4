/* co_jobs.h -- jobs across the fleet: who runs what, and where it stands.
 *
 * A job is one `parity run`: a suite (with vars, runs, only, label, tags)
 * sent to every matching host whose latest Hello listed the suite. Each
 * (job, host) has a state:
 *
 *   queued    not offered yet (host offline, or busy with another job)
 *   running   JobOffer sent; JobStatus progress is stored on the row
 *   done, failed, lost, cancelled, expired      final
 *
 * Rules (docs/protocol.md, section 10):
 * - An agent gets at most one job at a time: a JobOffer is sent only to
 *   an online host without a running row, oldest queued job first; the
 *   next one follows when the row becomes final.
 * - A queued row whose job has expired (expires_at_us passed) becomes
 *   `expired` and is never offered.
 * - A running row becomes `lost` when its host goes offline, when one of
 *   its runs ends INCOMPLETE, or when the host says Hello again (a new
 *   connection: the agent may have restarted) and no Heartbeat of the new
 *   connection says it is still running that job within confirm_us (a
 *   collector restart, or a network cut: the agent carried on). A running
 *   row of a host that is not online (the collector restarted and the
 *   agent never came back, or the database was down when it went) is lost
 *   once the module has run for CO_JOBS_RESTART_GRACE_US. A later
 *   JobStatus of that job from that host still moves it to done/failed
 *   (late results are better than none); progress does not (it may be a
 *   dead process's, resent from its spool).
 * - A job ends (`ended`) when every row is final; `cancelled` when
 *   cancelled.
 *
 * What a `parity run` request asks, and which hosts it goes to, is
 * co_jobreq's to decide (no database); this module reads the hosts,
 * writes the job, its rows and their states, and sends the offers.
 *
 * Storage: the job tables of collector/store/migrations/002_jobs.sql, through
 * the connection it is given (co_conn: reconnected on demand), every
 * statement parameterised. In memory only the online hosts and the key
 * each one speaks with (bounded by CO_JOBS_MAX_ONLINE).
 *
 * Sending: co_jobs never touches a socket; it calls the send callback
 * with the host's authenticated public key and a packed-ready Envelope
 * (borrowed for the call). The server maps the key to its routing id.
 *
 * Single-threaded (the writer's, or a bisect thread's own). Nothing here
 * prints: events go to the optional log callback. Messages and JSON
 * passed in are borrowed.
 */
#ifndef CO_JOBS_H
#define CO_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "co_conn.h"
#include "parity.pb-c.h"

/* Status codes, the same values as co_db's so the server acks alike. */
enum {
    CO_JOBS_OK = 0,
    CO_JOBS_LATER = 2,      /* depends on a message not stored yet: do
                               not ack (co_db's CO_DB_LATER) */
    CO_JOBS_FAIL = -1,      /* database down or failed: do not ack */
    CO_JOBS_REFUSED = -2,   /* can never be stored: Error with seq */
    CO_JOBS_BADARGS = -3,   /* a request's arguments are wrong */
    CO_JOBS_NOTFOUND = -4,  /* no such job */
};

/* Most hosts online at once (the server's CO_SERVER_MAX_PEERS). */
#define CO_JOBS_MAX_ONLINE 4096
/* Most JobStatus messages in one co_jobs_status_begin/_commit batch. */
#define CO_JOBS_STATUS_BATCH 64
/* Z85 public key length. */
#define CO_JOBS_KEY_LEN 40
/* After a Hello, how long a running row waits for a Heartbeat saying the
 * agent still runs its job, when opts.confirm_us is 0. */
#define CO_JOBS_CONFIRM_US 5000000
/* How long after start a running row of a host that never connected
 * stays running (agents back off up to 16 s before reconnecting). */
#define CO_JOBS_RESTART_GRACE_US 30000000

typedef struct co_jobs co_jobs_t;

typedef struct {
    /* The connection it runs on: borrowed, outlives the module; made
     * with .listen = CO_JOBS_CHANNEL when listen is set. */
    co_conn_t *conn;
    void *ctx;              /* passed to the callbacks */
    /* Send env to the host speaking with public_key. Returns 0 when
     * queued for sending, -1 when the host cannot be reached now. */
    int (*send)(void *ctx, const char *public_key,
                const Parity__Envelope *env);
    /* One log line: event is a machine word (job_created, job_offered,
     * host_lost, job_expired, job_ended, db_error), text key=value pairs.
     * May be NULL. */
    void (*log)(void *ctx, const char *event, const char *text);
    /* How long a running row waits, after its host's Hello, for a
     * Heartbeat that names its job (0: CO_JOBS_CONFIRM_US). The server
     * passes its liveness timeout. */
    int64_t confirm_us;
    /* Several collectors on one database (docs/operations.md): this
     * collector's name (co_db_set_collector's), beaten into the
     * collectors table at every tick with ttl_ms, after which others
     * take its hosts for gone. NULL: no beat (query workers). */
    const char *collector;
    int ttl_ms;
    /* conn LISTENs on CO_JOBS_CHANNEL (only the writer's instance: a
     * listener that never reads would fill the server's notification
     * queue): co_jobs_poll reads it. */
    bool listen;
} co_jobs_opts_t;

/* The NOTIFY channel: "job" when a job was created, "cancel UUID" when
 * one was cancelled, so that other collectors on the database offer and
 * cancel at once (co_jobs_poll). */
#define CO_JOBS_CHANNEL "parity_jobs"
/* A collector's beat is trusted this long at least (ttl_ms below it is
 * raised): a writer step of a few seconds must not make its hosts look
 * gone to the others. */
#define CO_JOBS_MIN_TTL_MS 15000

/* A new module on opts->conn. Caller owns it. NULL on out of memory. */
co_jobs_t *co_jobs_new(const co_jobs_opts_t *opts);
void co_jobs_destroy(co_jobs_t **jobs);

/* The connection the module runs on (opts.conn; borrowed). */
co_conn_t *co_jobs_conn(co_jobs_t *jobs);

/* A host's Hello was stored (the host row exists): remember its suites,
 * mark it online, mark a running row lost (new connection), and offer it
 * its oldest queued job. */
int co_jobs_agent_online(co_jobs_t *jobs, const char *public_key,
                         const Parity__Hello *hello, int64_t now_us,
                         char *err, size_t errlen);

/* A Hello again on a connection whose Hello was stored (the agent's
 * suites changed): its suites replace the ones listed before, and
 * nothing else changes (a running row stays as it is). */
int co_jobs_agent_suites(co_jobs_t *jobs, const char *public_key,
                         const Parity__Hello *hello, char *err,
                         size_t errlen);

/* Notifications from other collectors (LISTEN, opts.listen): a new job
 * makes idle online hosts get offers, a cancel sends JobCancel to this
 * collector's hosts running the job. After a reconnect (notifications
 * may have been missed) the same checks run once for every job. Cheap
 * when nothing came (no round trip): the writer calls it every pass. */
void co_jobs_poll(co_jobs_t *jobs, int64_t now_us);

/* The host is gone (liveness timeout): its running row becomes lost,
 * unless another collector holds the host by now (it failed over and
 * its job goes on there). */
void co_jobs_agent_offline(co_jobs_t *jobs, const char *public_key,
                           int64_t now_us);

/* True while the host is online as far as co_jobs knows. */
bool co_jobs_is_online(const co_jobs_t *jobs, const char *public_key);

/* A Heartbeat from the host on the connection of its stored Hello: it
 * proves the agent alive now (last_seen of `hosts`) and, when it says
 * `running` the job of the host's running row, that the row is not lost
 * although the agent connected again. */
void co_jobs_heartbeat(co_jobs_t *jobs, const char *public_key,
                       const Parity__Heartbeat *hb, int64_t now_us);

/* When the host was last heard by co_jobs (Hello or Heartbeat), 0 when
 * it is not online. */
int64_t co_jobs_last_heard_us(const co_jobs_t *jobs, const char *public_key);

/* Store a JobStatus from a host (a data message: ack after CO_JOBS_OK).
 * Refused when the job was never given to that host. A `done` while one
 * of the job's runs on that host has no stored RunEnd yet is
 * CO_JOBS_LATER: the agent's in-order resend brings the RunEnd first, so
 * a job never ends before its verdicts are stored. */
int co_jobs_status(co_jobs_t *jobs, const char *public_key,
                   const Parity__JobStatus *st, int64_t now_us,
                   char *err, size_t errlen);

/* Several JobStatus in one transaction: co_jobs_status_begin, then at
 * most CO_JOBS_STATUS_BATCH co_jobs_status calls, then
 * co_jobs_status_commit. One COMMIT for all of them (the writer answers a
 * burst's statuses together), and the jobs that ended and the hosts that
 * became free are acted on once, after it. CO_JOBS_FAIL from the commit
 * means none of the batch was stored, whatever each call returned. */
int co_jobs_status_begin(co_jobs_t *jobs, char *err, size_t errlen);
int co_jobs_status_commit(co_jobs_t *jobs, int64_t now_us, char *err,
                          size_t errlen);

/* A RunEnd was stored: a run of a job that ended INCOMPLETE marks the
 * host's row lost. Best effort (the RunEnd itself is already acked). */
void co_jobs_run_end(co_jobs_t *jobs, const char *public_key,
                     const Parity__RunEnd *re, int64_t now_us);

/* Periodic work: expire queued rows, end jobs, offer queued jobs to idle
 * online hosts (e.g. after the database came back). */
void co_jobs_tick(co_jobs_t *jobs, int64_t now_us);

/* Create a job from the `run` request's arguments (docs/protocol.md
 * 10.3) asked by admin key requested_by. On CO_JOBS_OK *reply is a new
 * object the caller owns ({"job", "hosts", "skipped"}); on
 * CO_JOBS_BADARGS err says what is wrong. */
int co_jobs_create(co_jobs_t *jobs, const char *requested_by,
                   const json_t *args, int64_t now_us, json_t **reply,
                   char *err, size_t errlen);

/* Cancel a job: queued and running rows become cancelled, running hosts
 * get a JobCancel. *reply as for co_jobs_create ({"job", "cancelled"}). */
int co_jobs_cancel(co_jobs_t *jobs, const char *job_id, int64_t now_us,
                   json_t **reply, char *err, size_t errlen);

/* The statement_timeout the module's connections use, ms (0: none). */
int co_jobs_statement_timeout_ms(const co_jobs_t *jobs);

/* True when r failed because its statement ran past the connection's
 * statement_timeout (SQLSTATE 57014, query_canceled). */
bool co_jobs_timed_out(const PGresult *r);

#endif
