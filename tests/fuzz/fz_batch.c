/* fz_batch.c -- libFuzzer target: `parity verdict --batch` lines.
 *
 * Each line of the input goes through s_batch_line twice, once with the
 * fast scanner (s_fast_line, jansson only for what it leaves) and once
 * through jansson alone (what PARITY_BATCH_JANSSON=1 does), and the two
 * answer lines must be byte-identical: the fast path exists only for
 * speed, so any difference is a bug, and the target aborts on it with
 * both answers on stderr.
 *
 * cl_verdict.c is included, not linked, because the line parser is file
 * static there (the verb's only entry point reads stdin); the target
 * calls the very function s_batch calls per line, minus the reading.
 */
#include "../../collector/client/local/cl_verdict.c"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One s_batch_t per path, kept across inputs as the verb keeps it
 * across lines (so growing arms and stale contents are exercised). */
static s_batch_t s_fast, s_slow;

static void
s_init(s_batch_t *bt, bool fast)
{
    vd_params_default(&bt->defaults);
    bt->fast = fast;
    bt->out_cap = S_BLOCK + PW_VERDICT_TEXT_MAX + 64 + 6 * S_ERR_MAX;
    bt->out = malloc(bt->out_cap);
    if (!bt->out)
        abort();
}

/* Answer one line with both paths and compare. */
static void
s_line(unsigned long long lineno, const char *text, size_t len)
{
    s_fast.out_len = 0;
    s_slow.out_len = 0;
    s_batch_line(&s_fast, lineno, text, len);
    s_batch_line(&s_slow, lineno, text, len);
    if (s_fast.out_len != s_slow.out_len
        || memcmp(s_fast.out, s_slow.out, s_fast.out_len) != 0) {
        fprintf(stderr, "fz_batch: line %llu answered differently\n"
                "fast:    %.*s\njansson: %.*s\n", lineno,
                (int)s_fast.out_len, s_fast.out, (int)s_slow.out_len,
                s_slow.out);
        abort();
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data, *end = text + size;
    unsigned long long lineno = 1;

    if (!s_fast.out) {
        s_init(&s_fast, true);
        s_init(&s_slow, false);
    }
    /* Lines as s_batch splits them: at '\n', the last one without. */
    while (text < end) {
        const char *nl = memchr(text, '\n', (size_t)(end - text));
        size_t len = nl ? (size_t)(nl - text) : (size_t)(end - text);
        s_line(lineno++, text, len);
        text += len + (nl ? 1 : 0);
    }
    return 0;
}
