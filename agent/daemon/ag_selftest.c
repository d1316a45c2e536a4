/* ag_selftest.c -- see ag_selftest.h. */
#include "ag_selftest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_limits.h"

bool
ag_selftest_is(const char *name)
{
    return name && strcmp(name, PW_SELFTEST_SUITE) == 0;
}

/* value as a whole number in 1..max into *out; -1 with err naming var. */
static int
s_count(const char *var, const char *value, long max, long *out, char *err,
        size_t errlen)
{
    char *end;
    errno = 0;
    long n = strtol(value, &end, 10);
    if (errno || end == value || *end || n < 1 || n > max) {
        snprintf(err, errlen, PW_SELFTEST_SUITE ": variable %s \"%.40s\" is "
                 "not a whole number from 1 to %ld", var, value, max);
        return -1;
    }
    *out = n;
    return 0;
}

int
ag_selftest_suite(const ag_var_t *vars, size_t var_count, ag_suite_t **out,
                  char *err, size_t errlen)
{
    long trials = PW_SELFTEST_TRIALS_DEFAULT, loops = PW_SELFTEST_LOOPS_DEFAULT;
    *out = NULL;
    for (size_t i = 0; i < var_count; i++) {
        const char *n = vars[i].name, *v = vars[i].value ? vars[i].value : "";
        int rc = strcmp(n, "trials") == 0 ?
                     s_count(n, v, PW_SELFTEST_TRIALS_MAX, &trials, err, errlen)
               : strcmp(n, "loops") == 0 ?
                     s_count(n, v, PW_SELFTEST_LOOPS_MAX, &loops, err, errlen)
               : (snprintf(err, errlen, PW_SELFTEST_SUITE ": unknown variable "
                           "\"%.100s\" (known: trials loops)", n), -1);
        if (rc != 0)
            return AG_SUITE_ERR;
    }
    /* Both arms run the very same text: any difference the rule finds
     * between them is noise it took for a difference. */
    char shell[128], names[PW_SELFTEST_TRIALS_MAX][16];
    snprintf(shell, sizeof shell, "i=0; while [ $i -lt %ld ]; do "
             "i=$((i+1)); done", loops);
    ag_arm_spec_t arms[2] = {
        { .name = "a", .cmd = { .shell = shell } },
        { .name = "a-again", .cmd = { .shell = shell } },
    };
    ag_bench_spec_t benches[PW_SELFTEST_TRIALS_MAX];
    memset(benches, 0, sizeof benches);
    for (long i = 0; i < trials; i++) {
        /* trials <= PW_SELFTEST_TRIALS_MAX (256): at most "aa-256". */
        snprintf(names[i], sizeof names[i], "aa-%03u",
                 (unsigned)(i + 1) % 1000u);
        benches[i].name = names[i];
        benches[i].arms = arms;
        benches[i].arm_count = 2;
        benches[i].subject = 0;
    }
    if (ag_suite_from_specs(PW_SELFTEST_SUITE, benches, (size_t)trials,
                            AG_SUITE_DEFAULT_RUNS, AG_SUITE_DEFAULT_WARMUP,
                            out, err, errlen) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    /* Every metric is judged: an A/A pair is parity on each (docs/verdict.md
     * "The A/A self-test"). */
    for (size_t i = 0; i < (*out)->benchmark_count; i++) {
        ag_bench_t *b = &(*out)->benchmarks[i];
        for (int m = 0; m < VD_METRIC_COUNT; m++)
            b->metrics[m] = (vd_metric_t)m;
        b->metric_count = VD_METRIC_COUNT;
    }
    return AG_SUITE_OK;
}
