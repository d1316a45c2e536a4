/* pw_err.c -- see pw_err.h. */
#include "pw_err.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static void
s_verr(char *err, size_t errlen, bool one_line, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static void
s_verr(char *err, size_t errlen, bool one_line, const char *fmt, va_list ap)
{
    if (!err || !errlen)
        return;
    vsnprintf(err, errlen, fmt, ap);
    if (one_line)
        err[strcspn(err, "\n")] = '\0';
}

void
pw_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_verr(err, errlen, false, fmt, ap);
    va_end(ap);
}

void
pw_err_line(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_verr(err, errlen, true, fmt, ap);
    va_end(ap);
}
