/* test_pw_buf.c -- the bounded buffer (proto/pw_buf.h): the limit is
 * checked on every append, failure is sticky, the text stays terminated. */
#include "tap.h"
#include "pw_buf.h"

#include <stdlib.h>

static void
test_append(void)
{
    pw_buf_t b;
    pw_buf_init(&b, 64);
    ok_str(pw_buf_data(&b), "", "an empty buffer reads as \"\"");
    ok(pw_buf_adds(&b, "INSERT ") == PW_BUF_OK, "adds");
    ok(pw_buf_printf(&b, "($%d, $%zu)", 1, (size_t)2) == PW_BUF_OK,
       "printf");
    ok(pw_buf_add(&b, "xyz", 0) == PW_BUF_OK && pw_buf_add(&b, NULL, 0) == 0,
       "adding nothing is fine");
    ok_str(pw_buf_data(&b), "INSERT ($1, $2)", "the text so far");
    ok(b.len == 15, "len counts without the NUL (%zu)", b.len);
    pw_buf_reset(&b);
    ok(b.len == 0 && pw_buf_data(&b)[0] == '\0', "reset empties it");
    pw_buf_free(&b);
    ok(b.data == NULL && b.limit == 64, "free keeps the limit");
}

static void
test_limit(void)
{
    pw_buf_t b;
    char big[100];
    memset(big, 'a', sizeof big);
    pw_buf_init(&b, 16);
    ok(pw_buf_add(&b, big, 15) == PW_BUF_OK, "15 bytes fit a limit of 16 "
       "(the NUL is the 16th)");
    ok(pw_buf_add(&b, "b", 1) == PW_BUF_TOOBIG, "the 16th byte does not");
    ok(b.len == 15 && b.data[15] == '\0', "nothing was written past it");
    ok(pw_buf_adds(&b, "") == PW_BUF_TOOBIG, "the failure is sticky");
    ok(pw_buf_printf(&b, "%d", 1) == PW_BUF_TOOBIG,
       "printf after a failure fails");
    ok(pw_buf_status(&b) == PW_BUF_TOOBIG, "status says too big");
    ok_str(pw_buf_strerror(pw_buf_status(&b)), "too big", "its name");
    pw_buf_reset(&b);
    ok(pw_buf_status(&b) == PW_BUF_OK, "reset clears the failure");
    ok(pw_buf_printf(&b, "%s", "0123456789abcdefg") == PW_BUF_TOOBIG,
       "a printf over the limit fails as a whole");
    ok(b.len == 0, "and appends nothing (%zu)", b.len);
    pw_buf_free(&b);

    /* Near SIZE_MAX: the check must not wrap. */
    pw_buf_init(&b, 8);
    ok(pw_buf_add(&b, big, (size_t)-1) == PW_BUF_TOOBIG,
       "SIZE_MAX bytes are too big, without wrapping");
    pw_buf_free(&b);
}

static void
test_grow(void)
{
    pw_buf_t b;
    pw_buf_init(&b, 1u << 20);
    int rc = PW_BUF_OK;
    for (int i = 0; i < 100000 && rc == PW_BUF_OK; i++)
        rc = pw_buf_printf(&b, "%d,", i % 10);
    ok(rc == PW_BUF_OK && b.len == 200000, "grows to 200000 bytes");
    ok(b.cap <= b.limit, "never allocates past the limit (%zu)", b.cap);
    ok(b.data[199998] == '9' && b.data[200000] == '\0', "contents intact");
    pw_buf_free(&b);
    pw_buf_init(&b, 1000);
    for (int i = 0; i < 2000; i++)
        pw_buf_add(&b, "x", 1);
    ok(b.len == 999 && b.cap == 1000,
       "fills exactly to the limit (len %zu, cap %zu)", b.len, b.cap);
    ok(pw_buf_status(&b) == PW_BUF_TOOBIG, "then fails");
    pw_buf_free(&b);
}

int
main(void)
{
    test_append();
    test_limit();
    test_grow();
    return tap_done();
}
