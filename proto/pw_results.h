/* pw_results.h -- the results file, JSON schema_version 3.
 *
 * One document per session (a suite run or a `parity compare`):
 *
 *   {"schema_version": 3, "tool": "parity-agent", "tool_version": "0.1.0",
 *    "suite": "example", "suite_file": "examples/suites/example.yaml",
 *    "complete": true, "started_at_us": ..., "ended_at_us": ...,
 *    "environment": {...ag_env...}, "warnings": [...],
 *    "floor": {"floor_us": 31.2, "default": false,
 *              "calibration_samples": 1000, "parity": 0.04,
 *              "source": "pooled", "why": "store", "store_samples": 900,
 *              "session_samples": 130, "store_floor_us": 30.8,
 *              "session_floor_us": 35.1, "text": "..."},
 *    "calibration": {"taken_at_us": ..., "wall_us": [...]},
 *    "benchmarks": [
 *      {"name": "compress", "status": "complete", "reason": null,
 *       "stderr_tail": null, "runs": 10, "warmup": 1,
 *       "arms": [{"name": "gzip1", "subject": true,
 *                 "command": ["gzip", "-1"], "version_output": ""}],
 *       "order": [["gzip1", "gzip9"], ["gzip9", "gzip1"]],
 *       "samples": [{"kind": "measured", "arm": "gzip1", "round": 0,
 *                    "position": 0, "wall_us": ..., "user_us": ...,
 *                    "sys_us": ..., "maxrss_kb": ..., "exit_status": 0,
 *                    "term_signal": 0, "cpu": 1, "start_unix_us": ...,
 *                    "instructions": ..., "cycles": ...,
 *                    "task_clock_ns": ...}],
 *       "summary": {"gzip1": {pw_summary}, ...},
 *       "verdict": {"gzip9": {pw_verdict with summaries,
 *                             "instructions": {pw_counter_compare_json}}}}]}
 *
 * Samples of every kind (warmup, measured, calibration, error) are kept;
 * only "measured" ones enter summaries and verdicts. A calibration
 * sample's "arm" is null; an error sample has "error". docs/agent.md
 * documents every field.
 *
 * Ownership: functions returning json_t * return a new reference the
 * caller owns (json_decref), except where "borrowed" is said. No I/O.
 */
#ifndef PW_RESULTS_H
#define PW_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "vd_metric.h"
#include "vd_verdict.h"

#define PW_RESULTS_OK   0
#define PW_RESULTS_ERR -1

/* Sample kinds as parity.proto numbers them (agent/daemon/ag_stream.c
 * asserts it at build time). */
typedef enum {
    PW_SAMPLE_MEASURED = 0,
    PW_SAMPLE_WARMUP = 1,
    PW_SAMPLE_CALIBRATION = 2,
    PW_SAMPLE_ERROR = 3,
    PW_SAMPLE_KIND_COUNT       /* sentinel */
} pw_sample_kind_t;

typedef struct {
    pw_sample_kind_t kind;
    const char *arm;           /* arm name; NULL for calibration */
    unsigned round;
    unsigned position;
    double wall_us;
    double user_us;
    double sys_us;
    int64_t maxrss_kb;
    int exit_status;
    int term_signal;
    int cpu;                   /* -1 unknown: written as null */
    int64_t start_unix_us;
    const char *error;         /* error samples only */
    /* Hardware counters of the command and its children (parity.proto
     * Sample 14-16): written only when > 0, i.e. counted on this host. */
    int64_t instructions;
    int64_t cycles;
    int64_t task_clock_ns;
} pw_sample_t;

/* A new document with the header fields; environment is borrowed (a
 * reference is taken) and may be NULL. */
json_t *pw_results_new(const char *tool, const char *tool_version,
                       const char *suite, const char *suite_file,
                       json_t *environment, int64_t started_at_us);

/* Append a benchmark; returns it borrowed from doc (NULL on OOM). */
json_t *pw_results_add_benchmark(json_t *doc, const char *name,
                                 unsigned runs, unsigned warmup,
                                 int64_t started_at_us);

/* Append an arm to bench: argv (NULL-terminated) or shell. */
int pw_results_add_arm(json_t *bench, const char *name, bool subject,
                       const char *const *argv, const char *shell,
                       const char *version_output);

/* The revision of a benchmark's run (docs/suites.md "Revision"):
 * "revision": {"name": NAME, "value": VALUE}; and of its last arm when
 * that arm is an --against instance: the arm's "instance": VALUE, the
 * value it ran the subject at. Strings copied as with the other text. */
int pw_results_set_revision(json_t *bench, const char *name,
                            const char *value);
int pw_results_arm_instance(json_t *bench, const char *value);

/* The parameter values a benchmark was made from (`parity compare -L`):
 * "parameters": {"NAME": "VALUE", ...}; strings borrowed, copied (bytes
 * that are not UTF-8 become '?'). */
int pw_results_set_parameters(json_t *bench, const char *const *names,
                              const char *const *values, size_t n);

/* order[r * arm_count + p] = index of the arm at position p of round r. */
int pw_results_set_order(json_t *bench, const unsigned *order,
                         size_t rounds, size_t arm_count);

int pw_results_add_sample(json_t *bench, const pw_sample_t *s);

/* status is "complete", "failed", "incomplete" or "cancelled"; reason and
 * stderr_tail may be NULL. */
int pw_results_end_benchmark(json_t *bench, const char *status,
                             const char *reason, const char *stderr_tail,
                             int64_t ended_at_us);

/* The session-start calibration samples. */
int pw_results_set_calibration(json_t *doc, const double *wall_us, size_t n,
                               int64_t taken_at_us);

/* The same with the other metrics' values of those runs (each NULL or n
 * long): "cpu_us" (user + system), "task_clock_us" (written only when
 * every run counted it), "peak_rss_kb", which the metrics' floors pool
 * (pw_results_add_metrics). */
int pw_results_set_calibration_runs(json_t *doc, const double *wall_us,
                                    const double *cpu_us,
                                    const double *task_clock_us,
                                    const double *peak_rss_kb, size_t n,
                                    int64_t taken_at_us);

/* Every calibration wall_us of the document (session start and rounds)
 * into a new malloc'd array the caller frees; *n the count. */
int pw_results_calibration_samples(const json_t *doc, double **out,
                                   size_t *n, char *err, size_t errlen);

/* The measured wall_us of one arm of bench into a new malloc'd array. */
int pw_results_arm_samples(const json_t *bench, const char *arm,
                           double **out, size_t *n, char *err,
                           size_t errlen);

/* The measured counts of one counter ("instructions", "cycles",
 * "task_clock_ns") of one arm, as pw_results_arm_samples; *n is 0 when
 * any measured sample of the arm lacks it (not counted on this host). */
int pw_results_arm_counts(const json_t *bench, const char *arm,
                          const char *counter, double **out, size_t *n,
                          char *err, size_t errlen);

/* Finish doc: the floor from its calibration samples (vd_floor), then for
 * each benchmark the summaries and a verdict of the subject against every
 * other arm (vd_compare), with an "instructions" comparison beside it
 * where both arms' measured samples all counted instructions
 * (vd_counter.h; it never changes the verdict). A benchmark whose status is "failed", or an arm
 * with fewer than 2 measured samples, gets "verdict_error" instead of
 * that verdict. Sets "complete" and "ended_at_us". */
int pw_results_finish(json_t *doc, double parity, bool complete,
                      int64_t ended_at_us, char *err, size_t errlen);

/* pw_results_finish with a floor the caller chose (a host's calibration
 * store, agent/harness/ag_calstore.h): params holds the parity and floor every
 * verdict uses; floor becomes the document's "floor" object (reference
 * stolen, NULL is an error) and should say where the floor came from. */
int pw_results_finish_floor(json_t *doc, const vd_params_t *params,
                            json_t *floor, bool complete,
                            int64_t ended_at_us, char *err, size_t errlen);

/* Beside each benchmark's wall-time verdicts, its verdicts on the other
 * metrics ms[0..n) (shared/spec/verdict-rule.md "Other metrics"; wall in
 * ms is skipped: it is "verdict"), judged by the same rule with parity
 * and the metric's floor from the document's calibration samples. Each
 * goes under the benchmark's "metrics" object, which a schema-3 reader
 * ignores: {"cpu": {"unit", "source": "task_clock" | "rusage", "floor":
 * {"value", "default", "samples", "resolution"}, "summary": {ARM:
 * summary}, "verdict": {OTHER: verdict + "metric"}, "verdict_error"}}.
 * cpu is the task clock where every measured run of the benchmark has
 * it, else user + system time; peak_rss the runs' maxrss_kb. clk_tck:
 * the clock ticks a second (rusage's resolution). Call after
 * pw_results_finish*. */
int pw_results_add_metrics(json_t *doc, const vd_metric_t *ms, size_t n,
                           double parity, long clk_tck, char *err,
                           size_t errlen);

/* Calibration runs a metric's floor pools before the document's own:
 * the host's calibration store's, oldest first, as many as the wall
 * floor pooled of it. Per run cpu_us (user + sys), task_clock_us and
 * peak_rss_kb, NAN where it has no value. Borrowed. */
typedef struct {
    const double *cpu_us;
    const double *task_clock_us;
    const double *peak_rss_kb;
    size_t n;
} pw_results_pool_t;

/* The same for benchmark bench (0-based) of the document alone (a
 * suite's `metrics:` differ from one benchmark to the next), each floor
 * pooling pool's runs (NULL: none) with the document's. */
int pw_results_add_bench_metrics(json_t *doc, size_t bench,
                                 const vd_metric_t *ms, size_t n,
                                 const pw_results_pool_t *pool,
                                 double parity, long clk_tck, char *err,
                                 size_t errlen);

/* The other metrics of every calibration run of the document, in
 * pw_results_calibration_samples's order (session start, then each
 * benchmark's): three new arrays of *n (cpu_us, task_clock_us,
 * peak_rss_kb), NAN where a run has no value; the caller frees them. */
int pw_results_calibration_metrics(const json_t *doc, double **cpu_us,
                                   double **task_clock_us,
                                   double **peak_rss_kb, size_t *n,
                                   char *err, size_t errlen);

/* Check the document's required fields and types (for readers such as
 * `parity import`); err names the first problem. */
int pw_results_check(const json_t *doc, char *err, size_t errlen);

const char *pw_sample_kind_name(pw_sample_kind_t k);
int pw_sample_kind_parse(const char *s, pw_sample_kind_t *k);

#endif
