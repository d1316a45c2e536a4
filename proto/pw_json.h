/* pw_json.h -- the verdict's written form (results schema version 3).
 *
 * The JSON object of ../shared/spec/verdict-rule.md, "Written form", as a
 * jansson value, and back. Used by `parity verdict`, the harness's results
 * files and the collector, so that every program writes the same fields
 * with the same names:
 *
 *   {"outcome": "parity", "ratio": 0.809, "best_ratio": 0.9631,
 *    "tolerance": 0.2126, "noise": 0.2126, "best_tolerance": 0.0442,
 *    "floor_us": 25.0, "parity": 0.04,
 *    "diagnostics": ["timing_modes_subject", "wide_tolerance"],
 *    "extra_runs": 12,
 *    "subject": {"n": 5, "min": 566, ...},     (PW_VERDICT_SUMMARIES)
 *    "other":   {"n": 5, "min": 587, ...}}
 *
 * The first five fields are the seed's; floor_us and parity make the
 * verdict reproducible from the samples; diagnostics (names from
 * vd_diag_name, in bit order) and extra_runs never change the outcome.
 * In a results file the object is keyed by the other arm's name; that map
 * is the caller's business.
 *
 * No I/O, no printing: functions return a new reference (caller owns it,
 * json_decref) or PW_OK / PW_ERR with a one-line reason in err.
 *
 * Numbers: the values are stored as jansson reals. To write them exactly,
 * dump with pw_json_dumps() (shortest text that reads back to the same
 * double: "0.04", not "0.040000000000000001") or with json_dumps and
 * PW_JSON_DUMP_FLAGS (17 significant digits). pw_verdict_write() is the
 * allocation-free writer of the same object for `parity verdict --batch`.
 */
#ifndef PW_JSON_H
#define PW_JSON_H

#include <stddef.h>
#include <jansson.h>

#include "vd_verdict.h"

#define PW_OK    0
#define PW_ERR  -1

/* The results schema version this module writes and reads. */
#define PW_SCHEMA_VERSION 3

/* Enough digits for any double to read back bit for bit. */
#define PW_JSON_DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(17))

/* Flags for pw_verdict_to_json / pw_verdict_write. */
enum {
    PW_VERDICT_SUMMARIES = 1u << 0, /* add "subject" and "other" summaries */
};

/* Longest text pw_verdict_write can produce, with summaries and every
 * diagnostic: 13 + 16 numbers of at most 24 characters, names and keys. */
#define PW_VERDICT_TEXT_MAX 1536

/* The verdict object of the written form. Returns a new reference the
 * caller owns, or NULL when jansson runs out of memory. */
json_t *pw_verdict_to_json(const vd_verdict_t *v, unsigned flags);

/* The comparison of a counter's counts beside wall-time verdict wall
 * (vd_counter_compare of the subject's a[0..na) and the other arm's
 * b[0..nb) with wall's parity) as {"counter", "outcome", "ratio",
 * "best_ratio", "tolerance", "noise", "decisive", "subject_median",
 * "other_median", "text"}. Caller owns the result; NULL when a or b is
 * NULL, the counts cannot be compared (fewer than 2, a count not > 0)
 * or out of memory. */
json_t *pw_counter_compare_json(const char *counter, const double *a,
                                size_t na, const double *b, size_t nb,
                                const vd_verdict_t *wall);

/* One arm's summary as {"n", "min", "q25", "median", "q75", "max", "iqr",
 * "mean"}. Caller owns the result; NULL on out of memory. */
json_t *pw_summary_to_json(const vd_summary_t *s);

/* The diagnostic bits as an array of names in bit order. Caller owns the
 * result; NULL on out of memory. */
json_t *pw_diagnostics_to_json(unsigned bits);

/* Read a verdict object back. Requires the eight fields of the written
 * form (outcome, ratio, best_ratio, tolerance, noise, best_tolerance,
 * floor_us, parity); diagnostics, extra_runs and the summaries are read
 * when present and zero otherwise. An unknown diagnostic name, a wrong
 * type or a missing field is an error naming the field. obj is borrowed;
 * out is untouched on PW_ERR. */
int pw_verdict_from_json(const json_t *obj, vd_verdict_t *out,
                         char *err, size_t errlen);

/* Read a summary object written by pw_summary_to_json. */
int pw_summary_from_json(const json_t *obj, vd_summary_t *out,
                         char *err, size_t errlen);

/* Read an array of diagnostic names into bits. */
int pw_diagnostics_from_json(const json_t *arr, unsigned *bits,
                             char *err, size_t errlen);

/* Write the same object as pw_verdict_to_json, compact, into
 * buf[0..len-1] without a trailing newline; each number is the shortest
 * text that reads back to the same double. Returns the length written, or
 * -1 when len is too small (PW_VERDICT_TEXT_MAX always suffices). No heap
 * use: this is the fast path of `parity verdict --batch`. */
int pw_verdict_write(char *buf, size_t len, const vd_verdict_t *v,
                     unsigned flags);

/* Shortest decimal text of a finite double x that strtod reads back to x
 * (at most 25 bytes with the NUL), JSON syntax: "25.0", "0.04", "1e-07".
 * Returns the length, or -1 when len is too small or x is not finite. */
int pw_format_double(char *buf, size_t len, double x);

/* Compact JSON text of any value like json_dumps(j, JSON_COMPACT |
 * JSON_ENCODE_ANY), except that reals are the shortest text that reads
 * back to the same double (pw_format_double), so the file is exact and
 * still reads "0.04". Object keys keep their insertion order. Returns a
 * new string the caller frees, or NULL on out of memory, a non-finite
 * real, nesting deeper than PW_JSON_DEPTH_MAX or text over
 * PW_JSON_TEXT_MAX bytes. */
#define PW_JSON_DEPTH_MAX 64
#define PW_JSON_TEXT_MAX  (1u << 30)
char *pw_json_dumps(const json_t *j);

#endif
