/* pw_buf.c -- see pw_buf.h. */
#include "pw_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
pw_buf_init(pw_buf_t *b, size_t limit)
{
    memset(b, 0, sizeof *b);
    b->limit = limit ? limit : 1;
}

void
pw_buf_free(pw_buf_t *b)
{
    free(b->data);
    pw_buf_init(b, b->limit);
}

void
pw_buf_reset(pw_buf_t *b)
{
    b->len = 0;
    b->status = PW_BUF_OK;
    if (b->data)
        b->data[0] = '\0';
}

/* Room for n more bytes and the NUL, within the limit. Sets the sticky
 * status on failure. */
static int
s_reserve(pw_buf_t *b, size_t n)
{
    if (b->status != PW_BUF_OK)
        return b->status;
    /* len + 1 <= limit holds, so limit - len - 1 does not wrap. */
    if (n > b->limit - b->len - 1) {
        b->status = PW_BUF_TOOBIG;
        return b->status;
    }
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return PW_BUF_OK;
    size_t cap = b->cap ? b->cap : (b->limit < 256 ? b->limit : 256);
    while (cap < need)
        cap = cap > b->limit / 2 ? b->limit : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->status = PW_BUF_NOMEM;
        return b->status;
    }
    b->data = p;
    b->cap = cap;
    return PW_BUF_OK;
}

int
pw_buf_add(pw_buf_t *b, const void *p, size_t n)
{
    int rc = s_reserve(b, n);
    if (rc != PW_BUF_OK)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return PW_BUF_OK;
}

int
pw_buf_adds(pw_buf_t *b, const char *s)
{
    return pw_buf_add(b, s, strlen(s));
}

int
pw_buf_printf(pw_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    if (b->status != PW_BUF_OK)
        return b->status;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->status = PW_BUF_FORMAT;
        return b->status;
    }
    int rc = s_reserve(b, (size_t)n);
    if (rc != PW_BUF_OK)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return PW_BUF_OK;
}

const char *
pw_buf_data(const pw_buf_t *b)
{
    return b->data ? b->data : "";
}

int
pw_buf_status(const pw_buf_t *b)
{
    return b->status;
}

const char *
pw_buf_strerror(int status)
{
    switch (status) {
    case PW_BUF_OK:     return "ok";
    case PW_BUF_TOOBIG: return "too big";
    case PW_BUF_NOMEM:  return "out of memory";
    case PW_BUF_FORMAT: return "format error";
    default:            return "?";
    }
}
