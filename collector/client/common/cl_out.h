/* cl_out.h -- the printing and argument helpers of `parity`'s verbs
 * alone (the ones every program shares are proto/pw_out's): error lines,
 * help, options and operands, XML text, and the cells, times and pools
 * of the collector's answers. Nothing here exits; each helper returns a
 * status and the verb decides its exit code (PW_EXIT_*).
 */
#ifndef CL_OUT_H
#define CL_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "pw_out.h"
#include "vd_verdict.h"

/* Print "parity VERB: message" and a newline on stderr. */
void cl_out_error(const char *verb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parse a whole string as a finite double (no trailing text). Returns 0
 * and sets *out, or -1. */
int cl_out_parse_double(const char *s, double *out);

/* Parse the value of option opt (e.g. "--floor-us") as a finite number
 * >= 0 into *out; on failure print verb's error ("--floor-us \"x\": not a
 * number", "--parity -1: must be >= 0") and return -1. */
int cl_out_nonneg_opt(const char *verb, const char *opt, const char *arg,
                      double *out);

/* The rule's options that the local verbs share, as getopt_long codes:
 * --floor-us (the floor, no longer the default) and --parity, each a
 * number >= 0 (cl_out_nonneg_opt). cl_out_rule_opt takes option c with
 * its value into p: 1 when c was one of them, 0 when it is not, -1 when
 * its value was refused (said). */
enum { PW_OUT_OPT_FLOOR = 0x300, PW_OUT_OPT_PARITY };
#define PW_OUT_RULE_OPTIONS                                                \
    {"floor-us", required_argument, NULL, PW_OUT_OPT_FLOOR},             \
    {"parity", required_argument, NULL, PW_OUT_OPT_PARITY}
int cl_out_rule_opt(const char *verb, int c, const char *arg,
                    vd_params_t *p);

/* Parse a comma-separated list of numbers ("566,568, 576") into a new
 * array the caller frees. At most max values. Returns 0, or -1 with a
 * reason in err ("sample 3 is \"x\": not a number"). Values are not
 * checked against the rule; vd_compare does that. */
int cl_out_parse_list(const char *s, size_t max, double **values,
                      size_t *n, char *err, size_t errlen);

/* The last step of a verb whose answer is JSON: j (may be NULL: out of
 * memory) on stdout as pw_out_json writes it, then released (taken).
 * PW_EXIT_OK, or PW_EXIT_SYSTEM when there is nothing to write or the
 * write failed. */
int cl_out_json_exit(json_t *j);

/* Print a verb's usage on stdout and flush it: PW_EXIT_OK, or
 * PW_EXIT_SYSTEM after "parity VERB: writing the usage failed: <strerror>"
 * when stdout is closed or full. */
int cl_out_help(const char *verb, const char *usage);

/* Look a long option name up: true when arg is exactly --help or -h,
 * used by every verb before its own parsing. */
bool cl_out_wants_help(int argc, char **argv);

/* What a verb says when getopt_long (with an optstring that starts with
 * ':' and opterr 0) returned c, ':' or '?': "--limit needs a value", or
 * "unexpected argument \"ARG\" (parity VERB --help)". Reads getopt's
 * optind. */
void cl_out_getopt_error(const char *verb, int c, char *const *argv);

/* The same for a verb whose getopt_long may also return '?' for an
 * option it does not know or a long option given a value it does not
 * take (optstring ':' plus its short letters, opterr 0): "--limit needs
 * a value", "unknown option \"-q\" (parity VERB --help)", "\"--json=1\":
 * the option takes no value", or "unknown option \"--frob\" (parity VERB
 * --help)". Tells them apart by getopt's optopt: a short option's letter,
 * a long option's value (callers number theirs from 256) when it was
 * given a value, else 0. Reads optind and optopt. */
void cl_out_option_error(const char *verb, int c, char *const *argv);

/* After getopt_long: the one positional argument a verb takes into *arg
 * (unchanged when there is none). 0, or -1 after "unexpected argument"
 * for a second one. */
int cl_out_one_operand(const char *verb, int argc, char *const *argv,
                       const char **arg);

/* For a verb that takes no option but --help and one operand: parse
 * argv with getopt_long and take the operand into *arg (unchanged when
 * none). 0, or -1 after cl_out_getopt_error or "unexpected argument". */
int cl_out_operand_only(const char *verb, int argc, char **argv,
                        const char **arg);

/* "90", "90s", "10m", "2h", "3d", "2w" (no unit: seconds) into *out_s:
 * 0, or -1 when s is not one or is beyond max_s or under 1 us. The
 * verbs' --since and --expire share it. */
int cl_out_duration(const char *s, double max_s, double *out_s);

/* The comma-separated items of s ("a,b,c") appended to arr as strings:
 * 0, or -1 on an empty item or when arr would pass max items. --hosts
 * and --only share it. */
int cl_out_add_list(json_t *arr, const char *s, size_t max);

/* "KEY=VALUE" into obj[KEY] (KEY 1..1024 bytes, VALUE may be empty):
 * 0, or -1 when s is not one. --tag and --var share it. */
int cl_out_key_value(json_t *obj, const char *s);

/* One host's verdict in a table cell: "-" when entry is NULL, its status
 * when it has no verdict ("no verdict" when it completed), else the
 * outcome, the ratio and the tolerance it was judged with, "win 0.450
 * (tol. 0.040)", so a reader sees how close the call was. Returns buf. */
char *cl_out_cell(char *buf, size_t len, const json_t *entry);

/* A summary's geometric mean ratio, or "-" when no host has a verdict.
 * Returns buf. */
char *cl_out_geomean(char *buf, size_t len, const json_t *summary);

/* A span of seconds, short: "40 s", "12 min", "3 h", "2 d" (below 0:
 * "0 s"). Returns buf. */
char *cl_out_span(char *buf, size_t len, double seconds);

/* What a floor pooled, from an object with "runs" (or "floor_samples"),
 * "quiet", "oldest_us", "newest_us" (Unix us): "100 quiet runs, 4 s to
 * 2 min old" (quiet runs alone), "200 runs with busy ones, ..." (every
 * run of the window: fewer than 100 were quiet), "200 runs, ..."
 * (unknown: stored before the collector kept it), "-" without runs or
 * instants. Ages are before now_us (0: the clock's now). Returns buf. */
char *cl_out_pool(char *buf, size_t len, const json_t *pool,
                  int64_t now_us);

#endif
