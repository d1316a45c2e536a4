/* ag_stream.h -- streaming what the harness measures to a collector
 * through the spool: the agent's side of docs/protocol.md.
 *
 * A stream is a spool (ag_spool), a link (ag_link) run by the stream's
 * own network thread, and the harness callbacks that turn what the
 * harness measures into Calibration, RunStart, SampleBatch (<= 512
 * samples, flushed when full, at the end of the run, and at the first
 * sample or round end once the batch is AG_STREAM_FLUSH_MS old) and
 * RunEnd messages, each spooled (fsync) before it is sent. Opening a
 * stream also closes the runs an earlier process left open
 * (ag_recover): their spooled batches are resent and a RunEnd
 * INCOMPLETE "agent restarted during run" follows them.
 *
 * Used by `parity-agent run SUITE --collector ...` (ag_stream_session)
 * and by the daemon (ag_daemon), which adds the job messages: JobOffer
 * and JobCancel reach it through opts.on_job_message, and it answers
 * with ag_stream_job_status().
 *
 * Threads: the callbacks, set_job and job_status run on the caller's
 * (harness) thread; on_job_message runs on the network thread;
 * ag_stream_set_suites, spooled, has_room, set_state and link_stats may
 * be called from any thread.
 *
 * Ownership: ag_stream_open() returns a stream the caller owns (free with
 * ag_stream_destroy()); every string in the options is copied. Callbacks
 * from ag_stream_callbacks() borrow the stream and the inner callbacks,
 * which must outlive the harness run.
 */
#ifndef AG_STREAM_H
#define AG_STREAM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_cli.h"
#include "ag_harness.h"
#include "ag_link.h"
#include "ag_suitedir.h"
#include "pw_wire.h"

#define AG_STREAM_FLUSH_MS        1000   /* a batch waits at most this long */
#define AG_STREAM_PROGRESS_MS     5000   /* JobStatus "running" progress */
/* The network thread's longest sleep while measuring: its timers (the
 * heartbeat, a resend, the liveness check) end it sooner. */
#define AG_STREAM_MEASURING_WAIT_MS 60000
#define AG_STREAM_MAX_SPOOL_MB    (1u << 20)
#define AG_STREAM_RESTART_REASON  "agent restarted during run"
#define AG_STREAM_STOP_REASON     "agent stopped"
#define AG_STREAM_ACK_TIMEOUT_S   60.0
/* Spool room a new run (or job) needs before it may start. */
#define AG_STREAM_START_ROOM      (64u << 10)
#define AG_STREAM_MAX_ACK_TIMEOUT_S 86400u

typedef struct ag_stream ag_stream_t;

typedef struct {
    const char *collector;      /* tcp://HOST:PORT */
    const char *collector_key;  /* collector's public zcert file */
    const char *collector_fingerprint; /* pin; the key is then fetched */
    bool trust_first_use;       /* no pin: keep the first key seen */
    const char *key;            /* our zcert (public or _secret file) */
    const char *spool_dir;
    const char *name;           /* NULL: the host name */
    const char *suites_dir;     /* the daemon's --suites (not read here) */
    const ag_suitedir_t *suites;/* what Hello lists (read during
                                   ag_stream_open only); NULL: none */
    uint64_t spool_max_bytes;   /* 0: the spool's default */
    unsigned heartbeat_ms;      /* 0: 1000 */
    double ack_timeout_s;       /* run mode: wait this long for acks;
                                   0: AG_STREAM_ACK_TIMEOUT_S */
    /* Daemon mode: JobOffer, JobCancel and Error 21 (our key revoked),
     * on the network thread; NULL: logged as ignored. */
    void (*on_job_message)(void *ctx, const Parity__Envelope *env);
    void *job_ctx;
    /* Daemon mode: non-zero once a signal asked the agent to stop; a run
     * that then ends INCOMPLETE says AG_STREAM_STOP_REASON. NULL: never. */
    const _Atomic int *stop_signal;
} ag_stream_opts_t;

/* Remove the stream options (--collector, --collector-key,
 * --collector-fingerprint, --trust-first-use, --key, --spool,
 * --spool-max, --name, --heartbeat-ms, --ack-timeout) and their values
 * from argv[1..*argc-1], filling o (strings point into argv). Other
 * arguments keep their order. Fails on an option without its value. */
int ag_stream_take_args(int *argc, char **argv, ag_stream_opts_t *o,
                        char *err, size_t errlen);

/* True when any stream option was given (ag_stream_open then checks that
 * --collector and the other required ones are there). */
bool ag_stream_wanted(const ag_stream_opts_t *o);

/* Open the spool, load the keys, start the network thread, say Hello and
 * close any run left open by an earlier process. NULL with err on
 * failure (a missing option, a bad key file, an unusable spool). */
ag_stream_t *ag_stream_open(const ag_stream_opts_t *o, char *err,
                            size_t errlen);

/* Callbacks for ag_harness_run() that stream everything and then call
 * inner's (which may be NULL). *out borrows s and inner. */
void ag_stream_callbacks(ag_stream_t *s, const ag_callbacks_t *inner,
                         ag_callbacks_t *out);

/* Tag the runs that follow with a job (job_id NULL for none; copied)
 * and its offer (tags and label go with each run; borrowed until the
 * next call). Clears the job's failure and the last stop reason. */
void ag_stream_set_job(ag_stream_t *s, const char *job_id,
                       const Parity__JobOffer *offer);

/* Why the current job failed ("BENCHMARK: reason" of its first run that
 * ended FAILED), "" when none did. Borrowed from s. */
const char *ag_stream_job_failed(const ag_stream_t *s);

/* Spool a JobStatus (forced past the spool's bound) and log it. reason
 * and run_id may be NULL. Returns an AG_SPOOL_* code. */
int ag_stream_job_status(ag_stream_t *s, const char *job_id,
                         const char *state, const char *reason,
                         const char *run_id);

/* The JobStatus "running" that starts a job, naming the SHA-256 of the
 * suite file's bytes the job runs. */
int ag_stream_job_started(ag_stream_t *s, const char *job_id,
                          const char *suite_digest);

/* Spool a Calibration of cal's no-op runs (at most
 * PW_WIRE_MAX_CALIBRATION are sent): wall time and the other metrics'
 * values (the task clock only when every run counted it); quiet: taken
 * idle, under the machine lock, the machine quiet (ag_topup.h; a job's
 * runs never are). Returns an AG_SPOOL_* code. */
int ag_stream_calibration(ag_stream_t *s, const ag_cal_batch_t *cal,
                          bool quiet, char *err, size_t errlen);

/* Wait up to timeout_s for the collector to ack everything spooled.
 * Returns 0 when all were acked, else the number still spooled. */
size_t ag_stream_drain(ag_stream_t *s, double timeout_s);

/* The suites changed: say Hello again listing suites (read during the
 * call only) on the current connection, and use that Hello on every
 * connection from now on (docs/protocol.md, Hello). -1 with err when it
 * cannot be packed (out of memory, or above the frame). */
int ag_stream_set_suites(ag_stream_t *s, const ag_suitedir_t *suites,
                         char *err, size_t errlen);

/* Messages spooled and not yet acked. */
size_t ag_stream_spooled(ag_stream_t *s);

/* Whether the spool has room for bytes more (a new job needs
 * AG_STREAM_START_ROOM). */
bool ag_stream_has_room(ag_stream_t *s, uint64_t bytes);

/* What the heartbeats say: "idle"/"running" and the job (copied). */
/* on: a measured run or a calibration begins on this machine; spooled
 * messages then wait for the network thread's next heartbeat tick, and
 * the thread sleeps until its own timers or the collector wake it.
 * off: it ends; what waits is sent now. Any thread. */
void ag_stream_set_measuring(ag_stream_t *s, bool on);

void ag_stream_set_state(ag_stream_t *s, const char *state,
                         const char *job_id);

/* The link's counters and what the collector said of our key (safe
 * from any thread). */
void ag_stream_link_stats(ag_stream_t *s, ag_link_stats_t *out);

/* The agent's public key, Z85; owned by the stream. */
const char *ag_stream_public_key(const ag_stream_t *s);

/* Stop the network thread, close everything, free *s, set it to NULL.
 * The spool's files stay for the next start. Accepts NULL. */
void ag_stream_destroy(ag_stream_t **s);

/* `parity-agent run SUITE --collector ...`: ag_cli_session() with its
 * callbacks streamed through a stream opened from so, then up to
 * so->ack_timeout_s for the acks. Returns an AG_EXIT_* code:
 * AG_EXIT_SYSTEM when messages remain unacked (it says how many), or
 * when the spool is full before the run starts (the run is refused). */
int ag_stream_session(const ag_suite_t *suite,
                      const ag_harness_opts_t *hopts,
                      const ag_cli_opts_t *copts,
                      const ag_stream_opts_t *so);

#endif
