/* cl_cmdline.h -- command lines as hyperfine users type them, for
 * `parity compare`: split a command into argv without a shell (-N),
 * join an argv back the way it would be typed, substitute {NAME}
 * parameters, and expand -L lists and -P ranges.
 *
 * Every result is one allocation the caller frees with free(); every
 * size is bounded (CL_CMDLINE_MAX_TEXT). Nothing here prints or exits.
 */
#ifndef CL_CMDLINE_H
#define CL_CMDLINE_H

#include <stddef.h>

#define CL_CMDLINE_OK   0
#define CL_CMDLINE_ERR -1

/* The longest command, after substitution, that is accepted: far above
 * what a kernel passes to one exec (ARG_MAX is 2 MiB), so that a value
 * repeated in a command cannot grow it without end. */
#define CL_CMDLINE_MAX_TEXT  (1u << 20)

/* Split line into words as a POSIX shell splits a simple command:
 * blanks (space, tab) separate words, '...' keeps everything literally,
 * "..." keeps everything but a backslash before " or \, and a backslash
 * outside quotes keeps the next character. What only a shell can do is
 * refused with err naming it: a missing closing quote, a trailing
 * backslash, an unquoted | & ; < > ( ) or newline, and $ or ` outside
 * single quotes. No globbing: * and ? are kept as written.
 *
 * On success *argv is a NULL-terminated array (the words stored in the
 * same allocation; free(*argv) frees all) of *argc >= 1 words. An empty
 * or blank line is an error. */
int cl_cmdline_split(const char *line, char ***argv, size_t *argc,
                     char *err, size_t errlen);

/* argv (argc words) as one line that cl_cmdline_split (and sh) would
 * split back into the same words: a word holding anything but letters,
 * digits, bytes >= 0x80 and _ - . / : = , + @ % ^ is put in single
 * quotes ('\'' for a quote inside); an empty word is ''. Writes at most
 * outlen - 1 bytes and a NUL (cut short when it does not fit); returns
 * the length the whole line needs. */
size_t cl_cmdline_join(char *out, size_t outlen, const char *const *argv,
                       size_t argc);

/* text with every {NAME} of names[0..n-1] replaced by its value, left
 * to right, never looking into a value just inserted (hyperfine's
 * rule). *out is a new string; fails (err says why) when the result
 * would be longer than CL_CMDLINE_MAX_TEXT. */
int cl_cmdline_subst(const char *text, const char *const *names,
                     const char *const *values, size_t n, char **out,
                     char *err, size_t errlen);

/* True when text holds {NAME}. */
int cl_cmdline_uses(const char *text, const char *name);

/* The values of a -L list: split at commas, "\," a comma and "\\" a
 * backslash in a value; empty values are kept ("a,,b" is three). On
 * success *values is a NULL-terminated array (one allocation) of
 * *count values; more than max values is an error. */
int cl_cmdline_list(const char *list, size_t max, char ***values,
                    size_t *count, char *err, size_t errlen);

/* The values of a -P scan from min to max (both included) in steps of
 * step (NULL: 1), as hyperfine makes them: integers when all three are
 * integers, else decimals written with the most decimal places of the
 * three (0.3 0.7 -D 0.2 gives 0.3 0.5 0.7). Decimal bounds need a step.
 * Fails on a value that is not a number, max < min, a step <= 0 or more
 * than max_count values. Result as for cl_cmdline_list. */
int cl_cmdline_range(const char *min, const char *max, const char *step,
                     size_t max_count, char ***values, size_t *count,
                     char *err, size_t errlen);

#endif
