/* ag_daemon.h -- parity-agent's daemon mode, and streaming a local run to
 * a collector through the spool.
 *
 * A stream is the agent's side of docs/protocol.md: a spool (ag_spool),
 * a link (ag_link) run by its own network thread, and the harness
 * callbacks that turn what the harness measures into Calibration,
 * RunStart, SampleBatch (<= 512 samples, flushed when full, at the end of
 * the run, and at the first sample or round end once the batch is
 * AG_DAEMON_FLUSH_MS old) and RunEnd messages, each spooled (fsync) before it is
 * sent. Opening a stream also closes a run that an earlier process left
 * open: its spooled batches are resent and a RunEnd INCOMPLETE "agent
 * restarted during run" follows them.
 *
 * The daemon (ag_daemon_main) is a stream plus a start-up calibration, a
 * job queue fed by JobOffer messages (suites from --suites only) and one
 * worker that runs a job at a time. docs/agent.md "Daemon mode" is the
 * user's page; exit codes are there.
 *
 * Ownership: ag_stream_open() returns a stream the caller owns (free with
 * ag_stream_destroy()); every string in the options is copied. Callbacks
 * from ag_stream_callbacks() borrow the stream and the inner callbacks,
 * which must outlive the harness run.
 */
#ifndef AG_DAEMON_H
#define AG_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ag_cli.h"
#include "ag_harness.h"
#include "ag_link.h"

#define AG_DAEMON_EXIT_OK      0
#define AG_DAEMON_EXIT_FAIL    1   /* a run failed, or acks timed out */
#define AG_DAEMON_EXIT_USAGE   2   /* bad command line, unreadable key */

#define AG_DAEMON_MAX_QUEUE       64     /* jobs waiting; more are refused */
#define AG_DAEMON_FLUSH_MS        1000   /* a batch waits at most this long */
#define AG_DAEMON_PROGRESS_MS     5000   /* JobStatus "running" progress */
#define AG_DAEMON_MAX_SPOOL_MB    (1u << 20)
#define AG_DAEMON_RESTART_REASON  "agent restarted during run"
#define AG_DAEMON_STOP_REASON     "agent stopped"
#define AG_DAEMON_ACK_TIMEOUT_S   60.0
/* Spool room a new run (or job) needs before it may start. */
#define AG_DAEMON_START_ROOM      (64u << 10)
#define AG_DAEMON_MAX_ACK_TIMEOUT_S 86400u
/* --enroll waits this long for the collector's answer (--ack-timeout
 * overrides). */
#define AG_DAEMON_ENROLL_TIMEOUT_S 30.0

typedef struct ag_stream ag_stream_t;

typedef struct {
    const char *collector;      /* tcp://HOST:PORT */
    const char *collector_key;  /* collector's public zcert file */
    const char *collector_fingerprint; /* pin; the key is then fetched */
    bool trust_first_use;       /* no pin: keep the first key seen */
    const char *key;            /* our zcert (public or _secret file) */
    const char *spool_dir;
    const char *name;           /* NULL: the host name */
    const char *suites_dir;     /* NULL: Hello lists no suites */
    uint64_t spool_max_bytes;   /* 0: the spool's default */
    unsigned heartbeat_ms;      /* 0: 1000 */
    double ack_timeout_s;       /* run mode: wait this long for acks;
                                   0: AG_DAEMON_ACK_TIMEOUT_S */
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

/* Tag the runs that follow with a job (NULL for none). Copied. */
void ag_stream_set_job(ag_stream_t *s, const char *job_id);

/* Wait up to timeout_s for the collector to ack everything spooled.
 * Returns 0 when all were acked, else the number still spooled. */
size_t ag_stream_drain(ag_stream_t *s, double timeout_s);

/* The spool's problems (corrupt files) and counters, for the caller's log. */
size_t ag_stream_spooled(ag_stream_t *s);

/* The link's counters and what the collector said of our key (safe
 * from any thread). */
void ag_stream_link_stats(ag_stream_t *s, ag_link_stats_t *out);

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

/* `parity-agent --collector ...`: the daemon. argv[0] is the program.
 * Returns the process exit code. */
int ag_daemon_main(int argc, char **argv);

/* Write the daemon's --help text to f. */
void ag_daemon_usage(FILE *f);

#endif
