/* cl_gate.h -- a job's verdicts as a CI gate: `parity run --wait
 * --fail-on ... [--baseline TAG=VALUE] [--summary-markdown FILE]
 * [--junit FILE]` (docs/ci.md).
 *
 * The body is either the collector's `verdicts` answer (the job's arms
 * against each other, docs/protocol.md 10.8) or its `baseline` answer
 * (each benchmark's subject arm against the baseline's, 10.16); both are
 * {"job", "suite", "comparisons": [{"benchmark", "subject", "other",
 * "hosts": [{"host", "run_id", "verdict" | "error"}], "summary"}]}, the
 * second with "baseline" (the asked tags) and a "baseline" object per
 * host. A case is one benchmark on one host: its outcome by the rule, or
 * undecided (no verdict, or a parity the rule's edge is too near to call:
 * not decisive by the margin `runs: auto` uses, vd_adaptive.h).
 *
 * Bodies are borrowed. Nothing here exits; the printers write to the
 * FILE given and return -1 on a write error.
 */
#ifndef CL_GATE_H
#define CL_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/* What fails the gate (--fail-on; "any" is LOSS | WIN). */
enum {
    CL_GATE_LOSS = 1u,
    CL_GATE_WIN = 2u,
    CL_GATE_UNDECIDED = 4u,
};

/* Most cases listed one by one in the Markdown summary; beyond, the
 * cases that pass at parity are counted, not listed (GitHub's step
 * summary holds 1 MiB). */
#define CL_GATE_MD_ROWS 200

/* The cases of a body, counted. */
typedef struct {
    size_t cases, win, parity, loss, undecided, failed;
} cl_gate_counts_t;

/* Add one --fail-on value (loss, any, undecided; comma-separated) to
 * *bits. 0, or -1 with a one-line reason in err. */
int cl_gate_fail_on(const char *s, unsigned *bits, char *err, size_t errlen);

/* Count body's cases under fail_on. */
void cl_gate_count(const json_t *body, unsigned fail_on,
                   cl_gate_counts_t *out);

/* The terminal's table of cases (benchmark, host, verdict, ratio,
 * tolerance, baseline job, gate) and the result line. */
int cl_gate_print(FILE *f, const json_t *body, unsigned fail_on);

/* The pull request's summary in GitHub-flavoured Markdown: the result,
 * a row per case with an anchor per host (#parity-BENCH-HOST), and each
 * benchmark's consensus across hosts. */
int cl_gate_markdown(FILE *f, const json_t *body, unsigned fail_on);

/* JUnit XML: one testsuite (the suite), one testcase per case, a
 * <failure> for a case that fails the gate and a <skipped> for an
 * undecided one that does not. now_us stamps the testsuite. */
int cl_gate_junit(FILE *f, const json_t *body, unsigned fail_on,
                  int64_t now_us);

#endif
