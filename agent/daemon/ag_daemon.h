/* ag_daemon.h -- parity-agent's daemon mode: a stream (ag_stream) to
 * the collector, a start-up calibration, a job queue fed by JobOffer
 * messages (suites from --suites only, ag_suitedir) and one worker that
 * runs a job at a time. docs/agent.md "Daemon mode" is the user's page;
 * exit codes are there.
 */
#ifndef AG_DAEMON_H
#define AG_DAEMON_H

#include <stdio.h>

#define AG_DAEMON_EXIT_OK      0
#define AG_DAEMON_EXIT_FAIL    1   /* a run failed, or acks timed out */
#define AG_DAEMON_EXIT_USAGE   2   /* bad command line, unreadable key */

#define AG_DAEMON_MAX_QUEUE       64     /* jobs waiting; more are refused */
/* The idle job loop's longest sleep: a job queued, a signal or a
 * calibration batch due wakes it sooner. */
#define AG_DAEMON_IDLE_MAX_MS     60000
/* A job keeps the machine lock until the collector acked its runs, at
 * most this long (a collector away: the next job need not wait more). */
#define AG_DAEMON_HANDOFF_MS      2000
/* --enroll waits this long for the collector's answer (--ack-timeout
 * overrides). */
#define AG_DAEMON_ENROLL_TIMEOUT_S 30.0

/* `parity-agent --collector ...`: the daemon. argv[0] is the program.
 * Returns the process exit code. */
int ag_daemon_main(int argc, char **argv);

/* Write the daemon's --help text to f. */
void ag_daemon_usage(FILE *f);

#endif
