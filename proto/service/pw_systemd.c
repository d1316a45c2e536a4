/* pw_systemd.c -- see pw_systemd.h. */
#include "pw_systemd.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "pw_clock.h"

/* "READY=1\nSTATUS=" or "STOPPING=1\nSTATUS=" and the text. */
#define S_MSG_MAX (PW_SYSTEMD_STATUS_MAX + 32)

static pthread_once_t s_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
static bool s_enabled;             /* NOTIFY_SOCKET was set at start */
static uint64_t s_interval_us;     /* half of WATCHDOG_USEC; 0: none */

/* Under s_lock. */
static bool s_ready;               /* READY=1 sent: pings may start */
static bool s_stopping;            /* STOPPING=1 sent: no more STATUS */
static int64_t s_next_ping_us;
static int64_t s_next_status_us;
static char s_last_status[PW_SYSTEMD_STATUS_MAX];

static void
s_init(void)
{
    const char *sock = getenv("NOTIFY_SOCKET");
    uint64_t usec = 0;
    s_enabled = sock && *sock;
    /* > 0 only when WATCHDOG_USEC is set and WATCHDOG_PID, if set, is
     * ours: a benchmark or a PostgreSQL child that inherited the
     * variables never pings for us. */
    if (s_enabled && sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
        s_interval_us = usec / 2;
}

bool
pw_systemd_enabled(void)
{
    pthread_once(&s_once, s_init);
    return s_enabled;
}

uint64_t
pw_systemd_watchdog_interval_us(void)
{
    pthread_once(&s_once, s_init);
    return s_interval_us;
}

/* head, then STATUS= and the formatted text (cut at
 * PW_SYSTEMD_STATUS_MAX, newlines made spaces: a newline would start a
 * new assignment), into msg; the text alone into text. */
static void
s_format(char *msg, char text[PW_SYSTEMD_STATUS_MAX], const char *head,
         const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

static void
s_format(char *msg, char text[PW_SYSTEMD_STATUS_MAX], const char *head,
         const char *fmt, va_list ap)
{
    vsnprintf(text, PW_SYSTEMD_STATUS_MAX, fmt, ap);
    for (char *p = text; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    snprintf(msg, S_MSG_MAX, "%sSTATUS=%s", head, text);
}

/* Send head + STATUS=; update the state under the lock so that a ping
 * never goes out between READY's decision and READY itself. */
static int
s_send(const char *head, bool ready, bool stopping, const char *fmt,
       va_list ap) __attribute__((format(printf, 4, 0)));

static int
s_send(const char *head, bool ready, bool stopping, const char *fmt,
       va_list ap)
{
    char msg[S_MSG_MAX], text[PW_SYSTEMD_STATUS_MAX];
    pthread_once(&s_once, s_init);
    if (!s_enabled)
        return 0;
    s_format(msg, text, head, fmt, ap);
    pthread_mutex_lock(&s_lock);
    int rc = 0;
    if (!ready && !stopping && strcmp(text, s_last_status) == 0)
        goto out;     /* the same STATUS again: nothing new to say */
    rc = sd_notify(0, msg);
    snprintf(s_last_status, sizeof s_last_status, "%s", text);
    int64_t now = pw_clock_mono_us();
    if (ready && !s_ready) {
        s_ready = true;
        s_next_ping_us = now + (int64_t)s_interval_us;
        s_next_status_us = now + PW_SYSTEMD_STATUS_MS * 1000LL;
    }
    if (stopping)
        s_stopping = true;
out:
    pthread_mutex_unlock(&s_lock);
    return rc;
}

int
pw_systemd_ready(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = s_send("READY=1\n", true, false, fmt, ap);
    va_end(ap);
    return rc;
}

int
pw_systemd_status(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = s_send("", false, false, fmt, ap);
    va_end(ap);
    return rc;
}

int
pw_systemd_stopping(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = s_send("STOPPING=1\n", false, true, fmt, ap);
    va_end(ap);
    return rc;
}

bool
pw_systemd_tick(void)
{
    pthread_once(&s_once, s_init);
    if (!s_enabled)
        return false;
    bool status_due = false;
    int64_t now = pw_clock_mono_us();
    pthread_mutex_lock(&s_lock);
    if (s_ready && s_interval_us > 0 && now >= s_next_ping_us) {
        /* A failed send is not retried sooner: the next one is due at
         * the same pace, and the watchdog allows one miss. */
        sd_notify(0, "WATCHDOG=1");
        s_next_ping_us = now + (int64_t)s_interval_us;
    }
    if (s_ready && !s_stopping && now >= s_next_status_us) {
        s_next_status_us = now + PW_SYSTEMD_STATUS_MS * 1000LL;
        status_due = true;
    }
    pthread_mutex_unlock(&s_lock);
    return status_due;
}
