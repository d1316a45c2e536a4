/* co_log.h -- structured logs on stderr: one line per event, key=value.
 *
 *   ts=2026-12-02T13:22:04.123456Z level=info event=hello peer=Ab3... name="h1"
 *
 * The caller formats the key=value part; co_log_quote() makes a value that
 * came from the network safe for one line (quoted, escaped, bounded). Only
 * the collector's main program and its server loop log; the storage
 * modules return errors instead. Not thread-safe by design: the collector
 * logs from one thread.
 */
#ifndef CO_LOG_H
#define CO_LOG_H

#include <stddef.h>

typedef enum { CO_LOG_DEBUG = 0, CO_LOG_INFO, CO_LOG_WARN, CO_LOG_ERROR } co_log_level_t;

/* Lines below this level are not written (default CO_LOG_INFO). */
void co_log_set_level(co_log_level_t level);

/* Write "ts=... level=... event=EVENT " then the formatted rest and a
 * newline, in one write(2). Control characters in the rest become '?'.
 * Lines are cut at CO_LOG_LINE_MAX bytes. */
#define CO_LOG_LINE_MAX 4096
void co_log(co_log_level_t level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Copy src into dst[0..dstlen) as a double-quoted value with \" \\ and
 * \xNN escapes, cut to fit. Returns dst. */
char *co_log_quote(char *dst, size_t dstlen, const char *src);

#endif
