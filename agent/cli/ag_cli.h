/* ag_cli.h -- the program side of a local session, shared by
 * `parity-agent run` and `parity compare`: Ctrl-C handling, the progress
 * line, writing the results file, the report or JSON on stdout.
 *
 * This is program code (it prints and installs signal handlers), kept out
 * of the harness library on purpose.
 */
#ifndef AG_CLI_H
#define AG_CLI_H

#include <stdbool.h>

#include "ag_harness.h"
#include "vd_metric.h"

/* Exit codes of both commands (docs/agent.md, docs/commands/compare.md). */
#define AG_EXIT_OK           0    /* every benchmark ran; any verdict */
#define AG_EXIT_DATA         1    /* the suite file is wrong */
#define AG_EXIT_USAGE        2    /* the command line is wrong */
#define AG_EXIT_SYSTEM       3    /* could not run or write at all */
#define AG_EXIT_FAILED       4    /* a benchmark failed (error sample) */
#define AG_EXIT_INTERRUPTED  130  /* Ctrl-C: results written, complete
                                     false */

typedef struct {
    const char *prog;        /* "parity-agent run", "parity compare" */
    const char *tool;        /* "parity-agent", "parity" for the file */
    bool json;               /* results JSON on stdout, not the report */
    const char *export_path; /* also write the results file here */
    const char *export_markdown; /* and its table as Markdown here */
    const char *export_csv;      /* and as CSV here (ag_export.h) */
    double parity;           /* flat tolerance */
    /* The host's calibration store (ag_calstore.h) lives in this
     * directory; NULL: the user's cache. */
    const char *calstore_dir;
    bool fresh_floor;        /* --fresh-floor: this invocation's runs
                                alone (they are still stored) */
    /* Optional: wrap the session's callbacks (parity-agent run
     * --collector streams them through the spool, ag_daemon.h). */
    void (*wrap)(void *ctx, const ag_callbacks_t *inner,
                 ag_callbacks_t *out);
    void *wrap_ctx;
    /* --metric: the metrics judged (vd_metric.h), in order; none: wall
     * time alone, as before metrics. */
    vd_metric_t metrics[VD_METRIC_COUNT];
    size_t nmetrics;
} ag_cli_opts_t;

/* Run suite with hopts and report; returns an AG_EXIT_* code. suite and
 * hopts are borrowed. Errors go to stderr as "PROG: message". The floor
 * pools the host's calibration store with this session's calibration
 * runs (ag_calstore_floor), which are then added to the store; a store
 * that cannot be used is said on stderr and the session goes on with
 * its own runs. */
int ag_cli_session(const ag_suite_t *suite, const ag_harness_opts_t *hopts,
                   const ag_cli_opts_t *copts);

/* The outputs both parity-agent run and parity compare write, as
 * getopt_long codes above every short option: --json, --export-json,
 * --export-markdown and --export-csv. ag_cli_output_opt takes option c
 * with its value v into o: true when c was one of them. */
enum {
    AG_CLI_OPT_JSON = 0x200, AG_CLI_OPT_EXPORT_JSON,
    AG_CLI_OPT_EXPORT_MARKDOWN, AG_CLI_OPT_EXPORT_CSV, AG_CLI_OPT_METRIC
};
#define AG_CLI_OUTPUT_OPTIONS                                               \
    { "json", no_argument, NULL, AG_CLI_OPT_JSON },                        \
    { "export-json", required_argument, NULL, AG_CLI_OPT_EXPORT_JSON },    \
    { "export-markdown", required_argument, NULL,                          \
      AG_CLI_OPT_EXPORT_MARKDOWN },                                        \
    { "export-csv", required_argument, NULL, AG_CLI_OPT_EXPORT_CSV },      \
    { "metric", required_argument, NULL, AG_CLI_OPT_METRIC }
bool ag_cli_output_opt(ag_cli_opts_t *o, int c, const char *v);

/* Add --metric v (the AG_CLI_OPT_METRIC option of AG_CLI_OUTPUT_OPTIONS)
 * to o's metrics: 0, or -1 with err ("--metric rss: want wall, cpu or
 * peak_rss", "--metric cpu: given twice"). */
int ag_cli_metric(ag_cli_opts_t *o, const char *v, char *err,
                  size_t errlen);

/* Parse a whole decimal unsigned in [lo, hi]; 0 or -1. */
int ag_cli_uint(const char *s, unsigned long lo, unsigned long hi,
                unsigned long *out);

/* The run counts both `parity-agent run` and `parity compare` take:
 * --runs (an integer AG_SUITE_MIN_RUNS..AG_SUITE_MAX_RUNS or "auto"),
 * --max-runs (the same, without auto) and --warmup (0 to
 * AG_SUITE_MAX_WARMUP), by their option names. *n gets the number (0
 * for auto) and *is_auto whether it was auto. 0, or -1 with err
 * ("--runs x: expected auto or an integer from 2 to 10000"). */
int ag_cli_count(const char *opt, const char *v, unsigned long *n,
                 bool *is_auto, char *err, size_t errlen);

#endif
