/* ag_log.c -- see ag_log.h. */
#include "ag_log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t s_log_lock = PTHREAD_MUTEX_INITIALIZER;

void
ag_logf(const char *event, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    pthread_mutex_lock(&s_log_lock);
    fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ parity-agent "
            "event=%s %s\n", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
            tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, event,
            text);
    fflush(stderr);
    pthread_mutex_unlock(&s_log_lock);
}
