/* pw_err.c -- see pw_err.h. */
#include "pw_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void
pw_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (!err || !errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void
pw_err_line(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (!err || !errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    err[strcspn(err, "\n")] = '\0';
}
