/* pw_limits.h -- the bounds a job's settings share wherever they are
 * checked: `parity run` before it asks for a job, `parity compare`,
 * `parity-agent run`, a suite file, and the agent daemon when a job is
 * offered. One set of numbers, so that what one side accepts no other
 * side refuses later (a job that every host then fails).
 *
 * Header only: constants and one pure check, no I/O.
 */
#ifndef PW_LIMITS_H
#define PW_LIMITS_H

#include <stdbool.h>
#include <string.h>

/* Measured rounds of a benchmark: a verdict needs two runs a side. */
#define PW_RUNS_MIN       2
#define PW_RUNS_MAX       100000
/* `runs: auto` (docs/verdict.md "Adaptive runs"): rounds are added in
 * steps until the verdict is decisive or max_runs rounds are taken. A
 * job's runs (JobOffer.runs, the jobs row, `parity run --runs auto`)
 * carries it as PW_RUNS_AUTO: 1 is never a count of runs, since a
 * verdict needs 2. The cap is the suite's max_runs, else
 * PW_MAX_RUNS_DEFAULT; max_runs has the bounds of runs. */
#define PW_RUNS_AUTO      1
#define PW_MAX_RUNS_DEFAULT 100
/* Warm-up rounds. */
#define PW_WARMUP_MAX     10000
/* Variables of a suite (its own and --var together), and the bytes of
 * one name. */
#define PW_VARS_MAX       256
#define PW_VAR_NAME_MAX   100
/* --against values of one job (docs/suites.md "Against"): each is one
 * more arm of every benchmark, whose arms, with the subject and one
 * other, stay within a suite's 16. */
#define PW_AGAINST_MAX    14

/* The A/A self-test (`parity selftest`, docs/verdict.md): a suite every
 * agent knows by this reserved name without a file, whose job variable
 * `trials` (K) is the number of A/A benchmarks and `loops` the length of
 * the shell loop both arms run. A host whose last self-test gave more
 * than PW_SELFTEST_WARN_RATE false verdicts is warned about. */
#define PW_SELFTEST_SUITE          "parity-selftest"
#define PW_SELFTEST_TRIALS_DEFAULT 50
#define PW_SELFTEST_TRIALS_MAX     256    /* a suite's benchmark bound */
#define PW_SELFTEST_LOOPS_DEFAULT  5000
#define PW_SELFTEST_LOOPS_MAX      10000000
#define PW_SELFTEST_WARN_RATE      0.02

/* True when name is a variable name: 1 to PW_VAR_NAME_MAX letters,
 * digits and _, not starting with a digit (it becomes ${name} and
 * PARITY_VAR_NAME). */
static inline bool
pw_var_name_ok(const char *name)
{
    if (!name || !((name[0] >= 'A' && name[0] <= 'Z') ||
                   (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
        return false;
    size_t n = 0;
    for (const char *p = name; *p; p++, n++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
              (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return n <= PW_VAR_NAME_MAX;
}

#endif
