/* pw_err.h -- the one-line error texts every library fills in.
 *
 * Libraries never print: a failing call writes what failed into the
 * caller's buffer (err, errlen) and returns a status. These two are that
 * write, shared instead of a static copy in each module. Both accept a
 * NULL err or errlen 0 (nothing is written) and always NUL-terminate.
 */
#ifndef PW_ERR_H
#define PW_ERR_H

#include <stddef.h>

/* Format into err, truncated to errlen. */
void pw_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* pw_err, then cut at the first newline: for texts that quote another
 * program's (libpq's messages end in one, and may hold several lines)
 * where the caller wants one line. */
void pw_err_line(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
