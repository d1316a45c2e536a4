/* co_log.c -- see co_log.h. */
#include "co_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static co_log_level_t s_level = CO_LOG_INFO;
static const char *const s_level_names[] = { "debug", "info", "warn", "error" };

void
co_log_set_level(co_log_level_t level)
{
    s_level = level;
}

void
co_log(co_log_level_t level, const char *event, const char *fmt, ...)
{
    char line[CO_LOG_LINE_MAX];
    struct timeval tv;
    struct tm tm;
    va_list ap;
    size_t n;
    int w;

    if (level < s_level || level > CO_LOG_ERROR)
        return;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    n = strftime(line, sizeof line, "ts=%Y-%m-%dT%H:%M:%S", &tm);
    w = snprintf(line + n, sizeof line - n, ".%06ldZ level=%s event=%s ",
                 (long)tv.tv_usec, s_level_names[level], event);
    if (w > 0)
        n += (size_t)w < sizeof line - n ? (size_t)w : sizeof line - n - 1;
    size_t start = n;
    va_start(ap, fmt);
    w = vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    if (w > 0)
        n += (size_t)w < sizeof line - n ? (size_t)w : sizeof line - n - 1;
    for (size_t i = start; i < n; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            line[i] = '?';
    /* Leave room for the newline even when the line was cut. */
    if (n >= sizeof line - 1)
        n = sizeof line - 2;
    line[n++] = '\n';
    ssize_t rc = write(STDERR_FILENO, line, n);
    (void)rc;   /* nowhere to report a failing stderr */
}

char *
co_log_quote(char *dst, size_t dstlen, const char *src)
{
    size_t o = 0;
    if (dstlen < 3) {
        if (dstlen)
            dst[0] = '\0';
        return dst;
    }
    dst[o++] = '"';
    for (const unsigned char *p = (const unsigned char *)(src ? src : "");
         *p; p++) {
        char esc[5];
        size_t k;
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\'; esc[1] = (char)*p; k = 2;
        } else if (*p < 0x20 || *p == 0x7f) {
            snprintf(esc, sizeof esc, "\\x%02x", *p); k = 4;
        } else {
            esc[0] = (char)*p; k = 1;
        }
        if (o + k + 2 > dstlen)
            break;
        memcpy(dst + o, esc, k);
        o += k;
    }
    dst[o++] = '"';
    dst[o] = '\0';
    return dst;
}
