/* fz_suite.c -- libFuzzer target: suite files, variables included.
 *
 * The input is a suite file (docs/suites.md) for ag_suite_load_buffer,
 * optionally preceded by lines "--var NAME=VALUE" that become the
 * command line's --var overrides (parsed by ag_var_parse, as
 * parity-agent does), so ${var} substitution sees both sources:
 *
 *   --var n=3
 *   name: s
 *   benchmarks: ...
 *
 * A loaded suite is walked whole (every string read once), so that a
 * dangling or unterminated field shows under ASan here rather than in
 * the harness.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_suite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_VARS_MAX 8
#define S_VAR_PREFIX "--var "

static size_t s_sink;   /* keeps the walk from being optimised away */

static void
s_touch(const char *s)
{
    if (s)
        s_sink += strlen(s);
}

static void
s_touch_cmd(const ag_cmd_t *c)
{
    s_touch(c->shell);
    for (size_t i = 0; i < c->argc; i++)
        s_touch(c->argv[i]);
    if (c->argv && c->argv[c->argc])
        abort();   /* argv must be NULL-terminated at argc */
}

static void
s_walk(const ag_suite_t *s)
{
    s_touch(s->name);
    for (size_t v = 0; v < s->var_count; v++) {
        s_touch(s->var_names[v]);
        s_touch(s->var_values[v]);
    }
    for (size_t i = 0; i < s->benchmark_count; i++) {
        const ag_bench_t *b = &s->benchmarks[i];
        s_touch(b->name);
        s_touch(b->out.path);
        s_touch(b->err.path);
        if (b->subject >= b->arm_count || ag_suite_find(s, b->name) == NULL)
            abort();
        for (size_t a = 0; a < b->arm_count; a++) {
            const ag_arm_t *arm = &b->arms[a];
            s_touch(arm->name);
            s_touch(arm->cwd);
            for (size_t e = 0; e < arm->env_count; e++)
                s_touch(arm->env[e]);
            s_touch_cmd(&arm->cmd);
            s_touch_cmd(&arm->setup);
            s_touch_cmd(&arm->cleanup);
            s_touch_cmd(&arm->prepare);
            s_touch_cmd(&arm->conclude);
            for (size_t k = 0; k < arm->version_count; k++)
                s_touch_cmd(&arm->versions[k]);
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    ag_var_t vars[S_VARS_MAX];
    size_t nvars = 0;
    char err[1024];
    ag_suite_t *suite = NULL;

    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    char *text = copy, *end = copy + size;
    /* Leading "--var NAME=VALUE" lines; a bad one is skipped, as
     * parity-agent would refuse it before loading anything. */
    while (nvars < S_VARS_MAX && (size_t)(end - text) > strlen(S_VAR_PREFIX)
           && memcmp(text, S_VAR_PREFIX, strlen(S_VAR_PREFIX)) == 0) {
        char *nl = memchr(text, '\n', (size_t)(end - text));
        if (!nl)
            break;
        *nl = '\0';
        if (ag_var_parse("--var", text + strlen(S_VAR_PREFIX), &vars[nvars], err,
                         sizeof err) == AG_SUITE_OK)
            nvars++;
        text = nl + 1;
    }
    size_t len = (size_t)(end - text);
    if (ag_suite_load_buffer("fuzz.yaml", text, len, vars, nvars, &suite,
                                err, sizeof err) == AG_SUITE_OK) {
        s_walk(suite);
        ag_suite_destroy(&suite);
        if (suite)
            abort();
    } else if (getenv("FZ_VERBOSE")) {
        fprintf(stderr, "fz_suite: %s\n", err);   /* why a seed fails */
    }
    free(copy);
    return 0;
}
