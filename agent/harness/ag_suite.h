/* ag_suite.h -- suite files: YAML, validated strictly, variables applied.
 *
 * A suite file names benchmarks; a benchmark has two or more arms, one of
 * them the subject (the arm marked `subject: true`, or the first arm when
 * none is marked). docs/suites.md is the reference for the format.
 *
 * Loading parses the whole file with libyaml, rejects unknown keys and
 * wrong types with "FILE:LINE:COL: message" (1-based line and column of
 * the offending node), applies the suite's defaults to each benchmark and
 * then substitutes ${name} variables inside each already-parsed string, so
 * a value is never split into words or seen by a shell.
 *
 * Ownership: ag_suite_load() returns a suite the caller owns and frees with
 * ag_suite_destroy(); every string and array inside belongs to the suite.
 * Nothing here prints or exits.
 */
#ifndef AG_SUITE_H
#define AG_SUITE_H

#include <stdbool.h>
#include <stddef.h>

#include "pw_limits.h"
#include "vd_metric.h"

#define AG_SUITE_OK   0
#define AG_SUITE_ERR -1

/* Explicit bounds on what one suite file may ask for. Runs, warm-ups
 * and variables are proto/pw_limits.h's, which `parity run` checks
 * before it asks for a job. */
#define AG_SUITE_MAX_FILE_BYTES  (1u << 20)   /* 1 MiB of YAML */
#define AG_SUITE_MAX_BENCHMARKS  256
#define AG_SUITE_MAX_ARMS        16
#define AG_SUITE_MIN_RUNS        PW_RUNS_MIN
#define AG_SUITE_MAX_RUNS        PW_RUNS_MAX
#define AG_SUITE_MAX_WARMUP      PW_WARMUP_MAX
#define AG_SUITE_MAX_ARGV        4096
#define AG_SUITE_MAX_VARS        PW_VARS_MAX
#define AG_SUITE_MAX_VAR_NAME    PW_VAR_NAME_MAX  /* bytes of a name */
#define AG_SUITE_MAX_ENV         1024          /* env: entries of one arm */
#define AG_SUITE_MAX_TIMEOUT_S   86400.0
#define AG_SUITE_MAX_CPUS        1024          /* CPU numbers are < this */

/* Defaults when neither the benchmark nor the suite's `defaults` say. */
#define AG_SUITE_DEFAULT_RUNS       10
#define AG_SUITE_DEFAULT_MAX_RUNS   PW_MAX_RUNS_DEFAULT  /* of runs: auto */
#define AG_SUITE_DEFAULT_WARMUP     1
#define AG_SUITE_DEFAULT_TIMEOUT_S  300.0

/* A command: exactly one of argv (a list, run directly) or shell (a
 * string, run as `/bin/sh -c SHELL`) is set. */
typedef struct {
    char **argv;     /* NULL-terminated; NULL when shell is set */
    size_t argc;
    char *shell;     /* NULL when argv is set */
} ag_cmd_t;

/* Where a measured process's stdout or stderr goes. */
typedef enum {
    AG_OUT_DISCARD = 0,   /* /dev/null (stderr: a scratch file, emptied per
                             run, read only for an error's tail) */
    AG_OUT_FILE,          /* appended to path */
    AG_OUT_COUNT          /* sentinel */
} ag_out_kind_t;

typedef struct {
    ag_out_kind_t kind;
    char *path;           /* AG_OUT_FILE only */
} ag_out_t;

typedef struct {
    char *name;
    bool subject;
    ag_cmd_t cmd;          /* `command:` (argv list) or `shell:` */
    char *cwd;             /* NULL: the agent's working directory */
    char **env;            /* NULL-terminated "KEY=VALUE" added to the
                              agent's environment, PARITY_VAR_* included */
    size_t env_count;
    ag_cmd_t setup;        /* once before the arm's first run; argc == 0
                              and shell == NULL when absent */
    ag_cmd_t cleanup;      /* once after the arm's last run */
    ag_cmd_t prepare;      /* before every run, not timed */
    ag_cmd_t conclude;     /* after every run, not timed */
    ag_cmd_t *versions;    /* commands whose output is the arm's version */
    size_t version_count;
    int line;              /* where the arm starts in the file, 1-based */
    /* The revision value this arm runs the subject at: an --against
     * instance (ag_against.h); NULL for the suite's own arms. */
    char *instance;
} ag_arm_t;

typedef struct {
    char *name;
    ag_arm_t *arms;
    size_t arm_count;      /* 2 .. AG_SUITE_MAX_ARMS */
    size_t subject;        /* index of the subject arm */
    unsigned runs;         /* measured rounds, AG_SUITE_MIN_RUNS ..
                              AG_SUITE_MAX_RUNS; with runs_auto the
                              cap, max_runs */
    bool runs_auto;        /* `runs: auto`: rounds are added in steps
                              until the verdict is decisive
                              (vd_adaptive.h) or max_runs */
    unsigned max_runs;     /* the cap of runs: auto (default 100) */
    unsigned warmup;       /* warm-up rounds, 0 .. AG_SUITE_MAX_WARMUP */
    double timeout_s;      /* per run; > 0 */
    ag_out_t out;          /* stdout */
    ag_out_t err;          /* stderr */
    int expect_exit;       /* 0 .. 255 */
    int *cpus;             /* CPUs the measured process may run on */
    size_t cpu_count;      /* 0: not pinned */
    /* `metrics:`: what it is judged and tracked on (docs/suites.md
     * "Metrics"), each once, in the file's order; wall alone by default. */
    vd_metric_t metrics[VD_METRIC_COUNT];
    size_t metric_count;   /* 1 .. VD_METRIC_COUNT */
    /* The parameter values a program made this benchmark from (parity
     * compare -L/-P); none for a suite file's benchmark. */
    char **param_names;
    char **param_values;
    size_t param_count;
    int line;
} ag_bench_t;

typedef struct {
    char *name;
    char *path;            /* the file it was loaded from */
    ag_bench_t *benchmarks;
    size_t benchmark_count;
    char **var_names;      /* the variables in effect (defaults + --var) */
    char **var_values;
    size_t var_count;
    /* `revision:`: the variable that picks the version under test, or
     * NULL. Its value (one of var_values, not a copy) is the revision of
     * every run; the collector keeps it out of the series key. */
    char *revision;
    const char *revision_value;
} ag_suite_t;

/* One --var name=value. */
typedef struct {
    const char *name;
    const char *value;
} ag_var_t;

/* Load and validate path with vars (which override the file's
 * `variables:`). On success *out is a new suite the caller owns. On
 * failure *out is NULL and err holds "path:line:col: what was expected"
 * (or "path: <call>: <strerror>" for I/O). vars are copied, not kept. */
int ag_suite_load(const char *path, const ag_var_t *vars, size_t var_count,
                  ag_suite_t **out, char *err, size_t errlen);

/* The bytes of the suite file at path (a regular file of at most
 * AG_SUITE_MAX_FILE_BYTES), NUL-terminated; *text is the caller's to
 * free. ag_suite_load() is this and ag_suite_load_buffer(); a caller
 * that must know exactly which bytes it ran (the daemon hashes them)
 * calls the two itself. err as ag_suite_load()'s for I/O. */
int ag_suite_read(const char *path, char **text, size_t *len, char *err,
                  size_t errlen);

/* The same from a buffer; name is used in messages in place of a path. */
int ag_suite_load_buffer(const char *name, const char *text, size_t len,
                         const ag_var_t *vars, size_t var_count,
                         ag_suite_t **out, char *err, size_t errlen);

/* Parse "name=value" (as given to --var or --against, opt, which the
 * message names) into *var, pointing into s. Fails on a missing '=' or
 * a name that is not [A-Za-z_][A-Za-z0-9_]*. */
int ag_var_parse(const char *opt, char *s, ag_var_t *var, char *err,
                 size_t errlen);

/* A command handed over by a program rather than read from a file
 * (`parity compare`): argc words of argv, or a shell string, both
 * borrowed; argv NULL, argc 0 and shell NULL when absent. */
typedef struct {
    const char *const *argv;
    size_t argc;
    const char *shell;
} ag_cmd_spec_t;

/* An arm handed over by a program; strings borrowed. cmd is required,
 * the hooks optional (as in a suite file: setup once before the arm's
 * first run, cleanup once after its last, prepare and conclude around
 * every run). */
typedef struct {
    const char *name;
    ag_cmd_spec_t cmd;
    ag_cmd_spec_t setup;
    ag_cmd_spec_t cleanup;
    ag_cmd_spec_t prepare;
    ag_cmd_spec_t conclude;
} ag_arm_spec_t;

/* A benchmark handed over by a program; everything borrowed. params are
 * the parameter values this benchmark was made from (parity compare -L
 * or -P), recorded in the results file; param_count may be 0. */
typedef struct {
    const char *name;
    const ag_arm_spec_t *arms;
    size_t arm_count;          /* 2 .. AG_SUITE_MAX_ARMS */
    size_t subject;            /* index of the subject arm */
    const char *const *param_names;
    const char *const *param_values;
    size_t param_count;        /* 0 .. AG_SUITE_MAX_VARS */
} ag_bench_spec_t;

/* Build a suite named suite_name from bench_count benchmarks (1 ..
 * AG_SUITE_MAX_BENCHMARKS), each with runs measured and warmup warm-up
 * rounds, the default timeout and output handling. Everything is
 * copied; the caller owns *out. On failure *out is NULL and err says
 * which benchmark, arm or command is wrong. */
int ag_suite_from_specs(const char *suite_name,
                        const ag_bench_spec_t *benches, size_t bench_count,
                        unsigned runs, unsigned warmup, ag_suite_t **out,
                        char *err, size_t errlen);

/* Free s and everything in it, then set *s to NULL. Accepts NULL. */
void ag_suite_destroy(ag_suite_t **s);

/* The benchmark named name, or NULL. */
const ag_bench_t *ag_suite_find(const ag_suite_t *s, const char *name);

#endif
