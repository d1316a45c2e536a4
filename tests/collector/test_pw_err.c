/* test_pw_err.c -- pw_err and pw_err_line: the text formatted into the
 * buffer, cut to its size and always terminated, pw_err_line's cut at the
 * first newline (libpq's messages hold several lines), and a NULL buffer
 * or a size of 0 left alone. */
#include <string.h>

#include "pw_err.h"
#include "tap.h"

int
main(void)
{
    char err[16];
    pw_err(err, sizeof err, "%s: %d", "open", 2);
    ok(strcmp(err, "open: 2") == 0, "formatted (%s)", err);
    pw_err(err, sizeof err, "%s", "a text longer than sixteen bytes");
    ok(strlen(err) == sizeof err - 1 && strncmp(err, "a text longer t", 15)
       == 0, "cut to the buffer and terminated (%s)", err);
    pw_err(err, sizeof err, "one\ntwo");
    ok(strcmp(err, "one\ntwo") == 0, "pw_err keeps newlines");
    pw_err_line(err, sizeof err, "ERROR: x\nDETAIL: y");
    ok(strcmp(err, "ERROR: x") == 0, "pw_err_line: the first line only "
       "(%s)", err);
    pw_err_line(err, sizeof err, "no newline here, long");
    ok(strlen(err) == sizeof err - 1, "and cut to the buffer");
    memset(err, 'z', sizeof err);
    pw_err(err, 0, "ignored");
    ok(err[0] == 'z', "errlen 0: nothing written");
    pw_err(NULL, 10, "ignored");
    pw_err_line(NULL, 10, "ignored");
    char one[1] = { 'q' };
    pw_err(one, sizeof one, "x");
    ok(one[0] == '\0', "a one-byte buffer holds the terminator alone");
    return tap_done();
}
