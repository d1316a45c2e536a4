/* co_tokens.h -- who may use the collector's HTTP side: the tokens file
 * of --http-tokens (docs/http.md "Tokens").
 *
 * One token a line, `NAME ROLE TOKEN`, separated by spaces or tabs;
 * blank lines and lines starting with `#` are skipped. NAME is 1 to
 * CO_TOKENS_NAME_MAX letters, digits, `.`, `_` or `-` (what the log
 * shows, never the token); ROLE is `read` (every GET) or `triage` (GET,
 * and acknowledging change points); TOKEN is CO_TOKENS_TOKEN_MIN to
 * CO_TOKENS_TOKEN_MAX printable ASCII characters without spaces. A name
 * or token given twice is an error, and so is a file that anyone may
 * read (mode o+r: the tokens are secrets).
 *
 * Only a hash of each token is kept (BLAKE2b, libsodium), and a token is
 * compared with every entry's hash in constant time (sodium_memcmp,
 * with no early exit), so neither its content nor its position leaks
 * through timing.
 *
 * The file is read again when it changes (its modification time, size
 * or inode; looked at once a second at most); a file that no longer
 * reads keeps the last good set, and says why once per change.
 * Thread-safe: the HTTP threads check tokens at once.
 */
#ifndef CO_TOKENS_H
#define CO_TOKENS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CO_TOKENS_NAME_MAX 64
#define CO_TOKENS_TOKEN_MIN 16
#define CO_TOKENS_TOKEN_MAX 256
#define CO_TOKENS_MAX 1024
/* The largest file read (CO_TOKENS_MAX lines of the longest kind). */
#define CO_TOKENS_FILE_MAX (CO_TOKENS_MAX * 340)
#define CO_TOKENS_RECHECK_MS 1000

typedef enum {
    CO_ROLE_NONE = 0,
    CO_ROLE_READ,
    CO_ROLE_TRIAGE,
} co_role_t;

typedef struct co_tokens co_tokens_t;

/* Read path (copied). Caller owns the result; NULL with err ("FILE:LINE:
 * what", or the file's own error). */
co_tokens_t *co_tokens_new(const char *path, char *err, size_t errlen);
void co_tokens_destroy(co_tokens_t **t);

/* Parse text (len bytes) as a tokens file named path for its errors:
 * the entries are counted in *n. 0, or -1 with err. For tests and
 * co_tokens_new. */
int co_tokens_parse(const char *path, const char *text, size_t len,
                    size_t *n, char *err, size_t errlen);

/* The role of token (len bytes; need not be terminated): the entry's
 * name in name (CO_TOKENS_NAME_MAX + 1 bytes), or CO_ROLE_NONE. Reads
 * the file again first when it changed (now_ms: pw_clock_mono_ms());
 * a new file that does not read is said once in *reload_err (when not
 * NULL, reload_errlen bytes; "" otherwise) and the last good set is
 * used. */
co_role_t co_tokens_check(co_tokens_t *t, const char *token, size_t len,
                          int64_t now_ms, char *name, char *reload_err,
                          size_t reload_errlen);

/* Tokens in the set now. */
size_t co_tokens_count(co_tokens_t *t);

/* "read", "triage" (or "none"). */
const char *co_role_name(co_role_t role);

#endif
