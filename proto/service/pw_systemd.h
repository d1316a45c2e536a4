/* pw_systemd.h -- telling the service manager how a daemon is doing
 * (sd_notify(3) through libsystemd), for parity-agent and
 * parity-collector: it lives in proto/service/, below both daemons.
 *
 * READY=1 once the daemon serves, STATUS= lines for `systemctl status`,
 * STOPPING=1 when it begins to stop, and WATCHDOG=1 pings. Outside
 * systemd (no NOTIFY_SOCKET) every call is a cheap no-op.
 *
 * The watchdog: sd_watchdog_enabled() gives WatchdogSec= (WATCHDOG_USEC,
 * honoured only when WATCHDOG_PID is unset or ours); pw_systemd_tick()
 * pings at half of it. No ping leaves before READY=1: systemd arms the
 * watchdog at the first ping, and a slow start (initdb, migrations) is
 * bounded by TimeoutStartSec=, not by the watchdog.
 *
 * The state is the process's own (NOTIFY_SOCKET is one per process), so
 * there is no object: the first call reads the environment once. Every
 * function may be called from any thread (the agent pings from its
 * network thread, says READY and STOPPING from its main one). Nothing
 * here prints or exits: sends return sd_notify()'s result (< 0 a
 * negative errno, 0 no service manager, > 0 sent) for the caller's log.
 * Strings are copied; the caller keeps its own.
 */
#ifndef PW_SYSTEMD_H
#define PW_SYSTEMD_H

#include <stdbool.h>
#include <stdint.h>

/* A STATUS= text longer than this is cut (systemctl shows one line). */
#define PW_SYSTEMD_STATUS_MAX 256
/* pw_systemd_tick() asks for a new STATUS= at most this often: it is a
 * syscall and usually a count over the daemon's peers. */
#define PW_SYSTEMD_STATUS_MS  2000

/* True when a service manager listens (NOTIFY_SOCKET is set). */
bool pw_systemd_enabled(void);

/* The ping interval: half of the watchdog's timeout, in microseconds;
 * 0 when there is no watchdog for this process. */
uint64_t pw_systemd_watchdog_interval_us(void);

/* READY=1 with STATUS=text (printf format). Starts the watchdog pings. */
int pw_systemd_ready(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* STATUS=text, sent only when it differs from the last one sent. */
int pw_systemd_status(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* STOPPING=1 with STATUS=text. Further STATUS requests from
 * pw_systemd_tick() stop; pings go on while the daemon drains. */
int pw_systemd_stopping(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Call from the daemon's loop at its timer point, as often as it likes:
 * sends WATCHDOG=1 when half the watchdog interval has passed since the
 * last ping (and READY=1 was sent). Returns true when a new STATUS= is
 * due (every PW_SYSTEMD_STATUS_MS after READY=1 and before STOPPING=1);
 * the caller then formats it and calls pw_systemd_status(). */
bool pw_systemd_tick(void);

#endif
