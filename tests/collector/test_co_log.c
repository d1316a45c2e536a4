/* test_co_log.c -- co_log: one line per event, key=value, values quoted
 * and escaped, control characters never reach the log, bounded lines. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "co_log.h"
#include "tap.h"

/* Run co_log with stderr sent to a temp file; return what it wrote. */
static char s_out[2 * CO_LOG_LINE_MAX];

static const char *
s_capture_begin(int *saved, char *path)
{
    strcpy(path, "/tmp/parity-colog-XXXXXX");
    int fd = mkstemp(path);
    *saved = dup(2);
    dup2(fd, 2);
    close(fd);
    return path;
}

static const char *
s_capture_end(int saved, const char *path)
{
    dup2(saved, 2);
    close(saved);
    int fd = open(path, O_RDONLY);
    ssize_t n = read(fd, s_out, sizeof s_out - 1);
    close(fd);
    unlink(path);
    s_out[n > 0 ? n : 0] = '\0';
    return s_out;
}

int
main(void)
{
    char q[64], path[64];
    int saved;

    ok_str(co_log_quote(q, sizeof q, "host-1"), "\"host-1\"", "plain value");
    ok_str(co_log_quote(q, sizeof q, "a \"b\" \\c"), "\"a \\\"b\\\" \\\\c\"",
           "quotes and backslashes escaped");
    ok_str(co_log_quote(q, sizeof q, "x\ny\tz"), "\"x\\x0ay\\x09z\"",
           "newline and tab as \\xNN");
    ok_str(co_log_quote(q, sizeof q, NULL), "\"\"", "NULL is \"\"");
    char big[200];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    co_log_quote(q, sizeof q, big);
    ok(strlen(q) == sizeof q - 1 && q[0] == '"' && q[strlen(q) - 1] == '"',
       "a long value is cut to the buffer and still closed");
    co_log_quote(q, 8, "ab\ncd");
    ok_str(q, "\"ab\"", "an escape that does not fit is left out whole");

    s_capture_begin(&saved, path);
    co_log(CO_LOG_INFO, "hello", "peer=%s n=%d", "K", 3);
    const char *o = s_capture_end(saved, path);
    ok(strncmp(o, "ts=", 3) == 0 && strstr(o, "Z level=info event=hello "
                                                "peer=K n=3\n")
       && strchr(o, '\n') == o + strlen(o) - 1, "one line: %s", o);

    s_capture_begin(&saved, path);
    co_log(CO_LOG_WARN, "x", "why=%s", "line1\nline2\r");
    o = s_capture_end(saved, path);
    ok(strstr(o, "why=line1?line2?\n") && strchr(o, '\n') == o + strlen(o) - 1,
       "control characters in the rest become '?'");

    s_capture_begin(&saved, path);
    co_log_set_level(CO_LOG_WARN);
    co_log(CO_LOG_INFO, "quiet", "x=1");
    co_log(CO_LOG_ERROR, "loud", "x=2");
    o = s_capture_end(saved, path);
    ok(!strstr(o, "event=quiet") && strstr(o, "level=error event=loud x=2"),
       "lines below the level are not written");
    co_log_set_level(CO_LOG_INFO);

    static char huge[3 * CO_LOG_LINE_MAX];
    memset(huge, 'z', sizeof huge - 1);
    s_capture_begin(&saved, path);
    co_log(CO_LOG_INFO, "big", "v=%s", huge);
    o = s_capture_end(saved, path);
    ok(strlen(o) <= CO_LOG_LINE_MAX && o[strlen(o) - 1] == '\n'
       && strchr(o, '\n') == o + strlen(o) - 1,
       "a huge line is cut to %d bytes and still ends with a newline",
       CO_LOG_LINE_MAX);
    return tap_done();
}
