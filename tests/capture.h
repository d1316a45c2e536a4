/* capture.h -- what a printer wrote, as a string: for the tests of the
 * functions that print to a FILE * (tables, reports, CSV).
 *
 *     capture_t c;
 *     int rc = cl_history_print(capture_open(&c), body, fmt);
 *     char *text = capture_text(&c, rc);   (NULL when rc != 0)
 *
 * or, for one call, CAPTURE below.
 *
 * Header-only (static functions), like tap.h. The text is the caller's
 * (free). A test cannot go on without its stream: a failed
 * open_memstream aborts.
 */
#ifndef PARITY_CAPTURE_H
#define PARITY_CAPTURE_H

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    char *buf;
    size_t len;
    FILE *f;
} capture_t;

/* A FILE * writing into memory, for one printer call. */
static inline FILE *
capture_open(capture_t *c)
{
    c->buf = NULL;
    c->len = 0;
    c->f = open_memstream(&c->buf, &c->len);
    if (!c->f) {
        perror("open_memstream");
        abort();
    }
    return c->f;
}

/* Close it; the text written, or NULL (and nothing to free) when the
 * printer's status rc is not 0. */
static inline char *
capture_text(capture_t *c, int rc)
{
    fclose(c->f);
    c->f = NULL;
    if (rc != 0) {
        free(c->buf);
        c->buf = NULL;
    }
    return c->buf;
}

/* The text of one printer call that writes to the FILE * named f, or
 * NULL when the call returns non-zero:
 *
 *     char *text = CAPTURE(f, cl_history_print(f, body, fmt));
 */
#define CAPTURE(f, call) __extension__ ({                                  \
        capture_t capture_;                                                \
        FILE *f = capture_open(&capture_);                                 \
        capture_text(&capture_, (call));                                   \
    })

#endif
