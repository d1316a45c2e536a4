/* pw_buf.h -- a growable byte buffer with a hard size limit.
 *
 * Text or binary is appended; every append checks the limit first (as
 * curl's dynbuf checks its toobig), so no caller computes a size estimate
 * and hopes it holds. The first failure is sticky: later appends do
 * nothing and return it again, so a builder may append a whole statement
 * and check once at the end. The contents are always NUL-terminated (the
 * terminator is not counted in the length and fits under the limit).
 *
 * Ownership: the pw_buf_t (usually on the caller's stack or inside a
 * struct) owns its data; pw_buf_free releases it. pw_buf_data's pointer is
 * borrowed and valid until the next append, reset or free. No I/O, no
 * printing, no global state. */
#ifndef PW_BUF_H
#define PW_BUF_H

#include <stddef.h>

/* Status codes; a failed buffer keeps returning its first one. */
enum {
    PW_BUF_OK     =  0,
    PW_BUF_TOOBIG = -1,   /* the append would pass the limit */
    PW_BUF_NOMEM  = -2,   /* realloc failed */
    PW_BUF_FORMAT = -3    /* vsnprintf refused the format */
};

typedef struct {
    char *data;      /* NULL until the first append; NUL-terminated after */
    size_t len;      /* bytes held, the terminator not counted */
    size_t cap;      /* bytes allocated */
    size_t limit;    /* most bytes len + 1 may reach; > 0 */
    int status;      /* PW_BUF_OK, or the first failure (sticky) */
} pw_buf_t;

/* An empty buffer that may hold at most limit - 1 bytes (plus the NUL).
 * Allocates nothing. */
void pw_buf_init(pw_buf_t *b, size_t limit);

/* Release the data; b is empty and reusable with the same limit. */
void pw_buf_free(pw_buf_t *b);

/* Empty b and clear a failure, keeping the memory for reuse. */
void pw_buf_reset(pw_buf_t *b);

/* Append n bytes (n may be 0; p may then be NULL). */
int pw_buf_add(pw_buf_t *b, const void *p, size_t n);

/* Append a NUL-terminated string without its NUL. */
int pw_buf_adds(pw_buf_t *b, const char *s);

/* Append printf-style formatted text. */
int pw_buf_printf(pw_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The bytes held ("" before any append), borrowed. */
const char *pw_buf_data(const pw_buf_t *b);

/* PW_BUF_OK, or the first failure since init/reset. */
int pw_buf_status(const pw_buf_t *b);

/* "ok", "too big", "out of memory", "format error"; "?" for anything else. */
const char *pw_buf_strerror(int status);

#endif
