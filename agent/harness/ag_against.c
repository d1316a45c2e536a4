/* ag_against.c -- see ag_against.h. */
#include "ag_against.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The checks that need no second load: 0, or -1 with err. */
static int
s_check(const ag_suite_t *s, const ag_var_t *against, size_t n, char *err,
        size_t errlen)
{
    if (n > AG_AGAINST_MAX) {
        snprintf(err, errlen, "more than %d --against values",
                 AG_AGAINST_MAX);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const ag_var_t *a = &against[i];
        if (!s->revision) {
            snprintf(err, errlen, "--against %s=%s: suite \"%s\" names no "
                     "revision variable (add \"revision: %s\" to compare "
                     "its values in one job; docs/suites.md \"Revision\")",
                     a->name, a->value, s->name, a->name);
            return -1;
        }
        if (strcmp(a->name, s->revision) != 0) {
            snprintf(err, errlen, "--against %s=%s: --against takes suite "
                     "\"%s\"'s revision variable, %s", a->name, a->value,
                     s->name, s->revision);
            return -1;
        }
        if (strcmp(a->value, s->revision_value) == 0) {
            snprintf(err, errlen, "--against %s=%s: the subject's own "
                     "value (give another)", a->name, a->value);
            return -1;
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(against[k].value, a->value) == 0) {
                snprintf(err, errlen, "--against %s=%s: given twice",
                         a->name, a->value);
                return -1;
            }
    }
    for (size_t b = 0; b < s->benchmark_count; b++)
        if (s->benchmarks[b].arm_count + n > AG_SUITE_MAX_ARMS) {
            snprintf(err, errlen, "benchmark \"%s\": %zu arms and %zu "
                     "--against values make %zu arms (at most %d)",
                     s->benchmarks[b].name, s->benchmarks[b].arm_count, n,
                     s->benchmarks[b].arm_count + n, AG_SUITE_MAX_ARMS);
            return -1;
        }
    return 0;
}

/* Move instance's subject arm of each benchmark to the end of s's, as
 * "SUBJECT@VALUE": 0, or -1 with err. The arm moved out is left zeroed
 * in instance, which then frees nothing of it. */
static int
s_take(ag_suite_t *s, ag_suite_t *instance, const char *value, char *err,
       size_t errlen)
{
    for (size_t b = 0; b < s->benchmark_count; b++) {
        ag_bench_t *to = &s->benchmarks[b], *from = &instance->benchmarks[b];
        ag_arm_t *arm = &from->arms[from->subject];
        size_t len = strlen(arm->name) + strlen(value) + 2;
        char *name = malloc(len);
        ag_arm_t *grown = realloc(to->arms, (to->arm_count + 1) *
                                            sizeof *to->arms);
        if (grown)
            to->arms = grown;
        if (!name || !grown) {
            free(name);
            snprintf(err, errlen, "--against: out of memory");
            return -1;
        }
        snprintf(name, len, "%s@%s", arm->name, value);
        for (size_t k = 0; k < to->arm_count; k++)
            if (strcmp(to->arms[k].name, name) == 0) {
                snprintf(err, errlen, "--against %s=%s: benchmark \"%s\" "
                         "has an arm named \"%s\" already (the instance's "
                         "name)", s->revision, value, to->name, name);
                free(name);
                return -1;
            }
        if (!(arm->instance = strdup(value))) {
            free(name);
            snprintf(err, errlen, "--against: out of memory");
            return -1;
        }
        free(arm->name);
        arm->name = name;
        arm->subject = false;
        to->arms[to->arm_count++] = *arm;
        memset(arm, 0, sizeof *arm);
    }
    return 0;
}

int
ag_against_add(ag_suite_t *s, const char *text, size_t len,
               const ag_var_t *vars, size_t nvars, const ag_var_t *against,
               size_t n, char *err, size_t errlen)
{
    if (s_check(s, against, n, err, errlen) != 0)
        return -1;
    /* The job's variables with the revision's value replaced (or added:
     * the suite's default made the subject's). */
    ag_var_t *iv = calloc(nvars + 1, sizeof *iv);
    if (!iv) {
        snprintf(err, errlen, "--against: out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        size_t m = 0;
        for (size_t k = 0; k < nvars; k++)
            if (strcmp(vars[k].name, s->revision) != 0)
                iv[m++] = vars[k];
        iv[m++] = against[i];
        ag_suite_t *inst = NULL;
        char why[768];
        if (ag_suite_load_buffer(s->path, text, len, iv, m, &inst, why,
                                 sizeof why) != AG_SUITE_OK) {
            snprintf(err, errlen, "--against %s=%s: %s", against[i].name,
                     against[i].value, why);
            rc = -1;
        } else {
            rc = s_take(s, inst, against[i].value, err, errlen);
        }
        ag_suite_destroy(&inst);
    }
    free(iv);
    return rc;
}
