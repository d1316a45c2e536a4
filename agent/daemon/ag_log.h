/* ag_log.h -- parity-agent's daemon log: one structured line per event
 * on stderr, `TIME parity-agent event=EVENT TEXT`, e.g.
 *   2026-12-03T11:20:00.123Z parity-agent event=suite_invalid ...
 * (docs/agent.md lists the events). Shared by the daemon's modules
 * (ag_stream, ag_recover, ag_suitedir, ag_daemon); the harness library
 * below them never logs.
 *
 * Thread-safe: lines from the network thread, the job thread and the
 * suite watcher never interleave. A line longer than 1 KiB is cut.
 */
#ifndef AG_LOG_H
#define AG_LOG_H

/* One line: the time (UTC, milliseconds), event (a short machine word)
 * and the formatted text. */
void ag_logf(const char *event, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
