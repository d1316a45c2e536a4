/* pw_out.h -- output and argument helpers of every program: `parity`,
 * `parity-agent run` and the collector's client verbs.
 *
 * Every verb prints through these, so tables, units, error lines and JSON
 * look the same everywhere: errors go to stderr as "parity VERB: text",
 * tables and JSON to stdout. Nothing here exits; each helper returns a
 * status and the verb decides its exit code (see PW_EXIT_*).
 */
#ifndef PW_OUT_H
#define PW_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#include "vd_verdict.h"

/* Exit codes of every verb; docs/commands/README.md is their reference. */
#define PW_EXIT_OK      0   /* done; a loss is still a success */
#define PW_EXIT_DATA    1   /* the input was read but is wrong: a bad
                               sample, batch line or file */
#define PW_EXIT_USAGE   2   /* the command line is wrong */
#define PW_EXIT_SYSTEM  3   /* out of memory, a write to stdout failed */

/* A size for the buffers verbs format one cell into (tables copy cells
 * whole, whatever their length), and the most columns of a table. */
#define PW_OUT_CELL_MAX     256
#define PW_OUT_TABLE_COLS   16
/* Upper bound of the rows of one table, the header included: the
 * 100,000 commands a hyperfine file may hold and a header; beyond this
 * rows are refused. */
#define PW_OUT_TABLE_ROWS   100001

/* A time in microseconds for a reader, with its unit: "12.34 ns",
 * "566.0 µs", "1.234 ms", "2.500 s". Writes at most len bytes; returns buf. */
char *pw_out_us(char *buf, size_t len, double us);
/* A benchmark's name for a row of metric m's verdicts or change
 * points: "grow", or "grow (peak_rss)" for a metric other than wall
 * (NULL or "wall": wall time). Returns buf. */
char *pw_out_bench_metric(char *buf, size_t len, const char *bench,
                          const char *metric);

/* A memory size in KiB for a reader: "812 KiB", "113.8 MiB" from 10 MiB
 * on. Returns buf. */
char *pw_out_kib(char *buf, size_t len, double kib);

/* A ratio, tolerance or noise for a reader: "%.4f" (0.8090, 16.6667),
 * or "%.4g" below 0.001 and from 10000 up (1e-05, 2.5e+20), where four
 * decimals would read 0.0000 or run on. Returns buf. */
char *pw_out_ratio(char *buf, size_t len, double x);

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when the bytes
 * there are not one (a stray continuation byte, an overlong form, a
 * surrogate, a sequence cut short). Never reads past a NUL. */
size_t pw_out_utf8_len(const unsigned char *s);

/* A text table, aligned when printed: left-aligned first column, the
 * others right-aligned. pw_out_table_new returns NULL on out of memory;
 * pw_out_table_destroy accepts NULL and clears the pointer. */
typedef struct pw_out_table pw_out_table_t;

pw_out_table_t *pw_out_table_new(size_t cols);
void pw_out_table_destroy(pw_out_table_t **t);
/* Add a row of exactly cols cells (each copied whole; NULL is empty).
 * Returns 0, or -1 on out of memory or too many rows. */
int pw_out_table_add(pw_out_table_t *t, const char *const *cells);
/* Left-align column col too (the first always is). */
void pw_out_table_left(pw_out_table_t *t, size_t col);
/* Print with two spaces between columns. Returns 0 or -1 on a write
 * error. */
int pw_out_table_print(const pw_out_table_t *t, FILE *f);

/* The arms table of `parity verdict` and the imports: a header row and one
 * row per arm (name, n, min, median, max, IQR). names[i] labels sums[i]. */
int pw_out_arms(FILE *f, const char *const *names,
                const vd_summary_t *sums, size_t count);

/* The verdict block: outcome line, both ratios with their tolerances,
 * floor and parity, then the diagnostics as notes and the extra-runs
 * advice. subject and other name the arms. */
int pw_out_verdict(FILE *f, const char *subject, const char *other,
                   const vd_verdict_t *v);

/* pw_out_verdict of one metric's verdict (vd_metric.h): "verdict
 * (peak_rss): a vs b: loss", its floor in the metric's unit; metric NULL
 * is wall time, exactly pw_out_verdict. */
int pw_out_metric_verdict(FILE *f, const char *metric, const char *subject,
                          const char *other, const vd_verdict_t *v);

/* Dump a JSON value compactly with exact doubles and a newline. Does not
 * take the reference. Returns 0 or -1 on a write or memory error. */
int pw_out_json(FILE *f, const json_t *j);

/* A number for a file a program reads back (CSV): the shortest "%.15g"
 * to "%.17g" text that parses to exactly x, so every CSV writer gives
 * the same digits ("0.8", "1.2345678901234567"); "" when x is not
 * finite. Returns buf (PW_OUT_NUMBER_MAX bytes are enough). */
#define PW_OUT_NUMBER_MAX 32
char *pw_out_number(char *buf, size_t len, double x);

/* pw_out_number of o[key], "" when it is not a number. */
char *pw_out_json_number(char *buf, size_t len, const json_t *o,
                         const char *key);

/* One CSV field of s then ',' (or '\n' when last), quoted as RFC 4180
 * says when s holds a comma, a quote or a newline. Errors show in
 * ferror(f). */
void pw_out_csv_field(FILE *f, const char *s, bool last);

/* ---- the collector's answers (docs/protocol.md section 10) ----------
 * What every verb reads the same way from a Reply body, so one host's
 * verdict, a date or a floor look alike in every table. All borrow. */

/* o[key] when it is a non-empty string, else dflt. */
const char *pw_out_str(const json_t *o, const char *key, const char *dflt);

/* "k=v k=v" of an object of strings (tags, vars), in the object's order;
 * a value that is not a string shows as empty. empty (may be "") when the
 * object has no member or is not an object. Cut at len, between pairs
 * or inside one. Returns buf. */
char *pw_out_pairs(char *buf, size_t len, const json_t *obj,
                   const char *empty);

/* A fleet event's or change point's confirm (its "confirm" object,
 * docs/protocol.md "confirm") in words: "confirm 3 confirmed: 2 of 2
 * hosts see the step again, c37 against c36 in one job", "confirm 3 not
 * reproduced: 0 of 2 hosts ...", "confirm 3 running: c37 against c36",
 * "confirm 3 failed: REASON", and for a notice whose event could not be
 * confirmed, "not confirmed: REASON". "" for a missing one. Returns
 * buf. */
char *pw_out_confirm(char *buf, size_t len, const json_t *confirm);

/* Write s escaped for HTML, SVG and XML: & < > " ' as entities, other
 * control bytes than tab and the line ends (which XML forbids) as '?',
 * and with one_line the line ends as spaces too. NULL writes nothing.
 * Errors show in ferror(f). */
void pw_out_xml(FILE *f, const char *s, bool one_line);

/* Write fmt with each "%s" replaced by the next argument (a string, NULL
 * for nothing) as pw_out_xml writes it, and "%%" by '%'; fmt itself is
 * markup, written as it is. No other conversion exists. */
void pw_out_xmlf(FILE *f, bool one_line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A fleet event's bisect (its "bisect" object, docs/protocol.md 10.17)
 * in words: "bisect 3 found c37", "bisect 3 found a step spread over
 * c20, c37", "bisect 3 running", "bisect 3 failed: REASON". "" for a
 * missing one. Returns buf. */
char *pw_out_bisect(char *buf, size_t len, const json_t *bisect);

/* A time in microseconds since the epoch as a UTC date, or "-" when
 * us <= 0: tables "2026-12-03 11:10:52Z", the site's pages "2026-12-03
 * 11:10 UTC", its plots "2026-12-03 11:10". Returns buf. */
typedef enum {
    PW_OUT_TIME_TABLE = 0,
    PW_OUT_TIME_PAGE,
    PW_OUT_TIME_PLOT,
} pw_out_time_form_t;
char *pw_out_time(char *buf, size_t len, json_int_t us,
                  pw_out_time_form_t form);

/* The first object of o[list] whose string key is value, or NULL. */
const json_t *pw_out_named(const json_t *o, const char *list,
                           const char *key, const char *value);

/* The entry of host in a comparison's "hosts" array, or NULL. */
const json_t *pw_out_entry(const json_t *cmp, const char *host);

/* A host's floor ("566.0 µs"), then dflt_note (" (default)") when it is
 * the rule's default, or "-" when the host has none. Returns buf. */
char *pw_out_floor(char *buf, size_t len, const json_t *host,
                   const char *dflt_note);

/* The kernel release of a host's "kernel" ("Linux 6.1.0-18-amd64 #1 SMP
 * PREEMPT_DYNAMIC Debian ...", uname's sysname, release and version):
 * its second word, "6.1.0-18-amd64"; the whole text when it has one
 * word; "-" when host has none. Tables show this; the environment keeps
 * the whole text. Returns buf. */
char *pw_out_kernel(char *buf, size_t len, const json_t *host);



#endif
