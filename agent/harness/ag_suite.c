/* ag_suite.c -- see ag_suite.h and docs/suites.md. */
#include "ag_suite.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "ag_spawn.h"

/* The keys each mapping may hold; anything else is an error. */
static const char *const s_top_keys[] = {
    "suite", "revision", "variables", "defaults", "benchmarks", NULL };
static const char *const s_defaults_keys[] = {
    "runs", "max_runs", "warmup", "timeout", "stdout", "stderr",
    "expect_exit", "cpus", "versions", "metrics", NULL };
static const char *const s_bench_keys[] = {
    "name", "arms", "runs", "max_runs", "warmup", "timeout", "stdout",
    "stderr", "expect_exit", "cpus", "versions", "metrics", NULL };
static const char *const s_arm_keys[] = {
    "name", "subject", "command", "shell", "cwd", "env", "setup", "cleanup",
    "prepare", "conclude", "versions", NULL };

/* Settings that a benchmark inherits from `defaults:`. Strings and arrays
 * point into the yaml document until copied into a benchmark. */
typedef struct {
    unsigned runs;
    bool runs_auto;              /* runs: auto */
    unsigned max_runs;           /* the cap of runs: auto */
    unsigned warmup;
    double timeout_s;
    yaml_node_t *stdout_node;
    yaml_node_t *stderr_node;
    int expect_exit;
    yaml_node_t *cpus_node;
    yaml_node_t *versions_node;
    yaml_node_t *metrics_node;
} s_settings_t;

typedef struct {
    const char *name;            /* file name for messages */
    yaml_document_t *doc;
    char *err;
    size_t errlen;
    char **var_names;            /* the variables in effect */
    char **var_values;
    size_t var_count;
    /* used[i]: var_names[i] is declared under variables: or some ${name}
     * reads it. A --var that stays unused is a typo (s_unused_var). */
    bool *var_used;
    size_t copied;               /* bytes of strings copied so far */
} s_ctx_t;

static int s_fail(s_ctx_t *c, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Write "file:line:col: message" and return AG_SUITE_ERR. */
static int
s_fail(s_ctx_t *c, const yaml_node_t *n, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n)
        snprintf(c->err, c->errlen, "%s:%zu:%zu: %s", c->name,
                 n->start_mark.line + 1, n->start_mark.column + 1, msg);
    else
        snprintf(c->err, c->errlen, "%s: %s", c->name, msg);
    return AG_SUITE_ERR;
}

static const char *
s_kind_name(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

static const char *
s_scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

static yaml_node_t *
s_node(s_ctx_t *c, int id)
{
    return yaml_document_get_node(c->doc, id);
}

static bool
s_is_name(const char *s)
{
    if (!(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (const char *p = s + 1; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return false;
    return true;
}

/* A variable name in upper case, as in PARITY_VAR_<NAME>. */
typedef struct {
    char s[AG_SUITE_MAX_VAR_NAME + 1];
} s_upper_t;

static s_upper_t
s_upper(const char *name)
{
    s_upper_t u;
    size_t i;
    for (i = 0; name[i] && i < AG_SUITE_MAX_VAR_NAME; i++)
        u.s[i] = (char)toupper((unsigned char)name[i]);
    u.s[i] = '\0';
    return u;
}

/* A scalar node that holds no NUL byte (YAML's "\0" escape could). */
static int
s_want_scalar(s_ctx_t *c, const yaml_node_t *n, const char *what)
{
    if (n->type != YAML_SCALAR_NODE)
        return s_fail(c, n, "%s: expected a string, found %s", what,
                      s_kind_name(n));
    if (strlen(s_scalar(n)) != n->data.scalar.length)
        return s_fail(c, n, "%s: contains a NUL byte", what);
    return AG_SUITE_OK;
}

/* Reject unknown and duplicate keys of mapping n, whose keys must be
 * plain strings. what names the mapping in messages. */
static int
s_check_keys(s_ctx_t *c, yaml_node_t *n, const char *what,
             const char *const *allowed)
{
    char expected[512] = "";
    size_t used = 0;
    for (size_t i = 0; allowed[i]; i++)
        used += (size_t)snprintf(expected + used, sizeof expected - used,
                                 "%s%s", i ? ", " : "", allowed[i]);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = s_node(c, p->key);
        if (k->type != YAML_SCALAR_NODE)
            return s_fail(c, k, "%s: expected a key, found %s", what,
                          s_kind_name(k));
        bool known = false;
        for (size_t i = 0; allowed[i]; i++)
            if (strcmp(s_scalar(k), allowed[i]) == 0)
                known = true;
        if (!known && strcmp(s_scalar(k), "<<") == 0)
            return s_fail(c, k, "merge keys (<<) are not supported in %s: "
                          "write the keys out (anchors and aliases are "
                          "fine)", what);
        if (!known)
            return s_fail(c, k, "unknown key \"%s\" in %s (expected one of: "
                          "%s)", s_scalar(k), what, expected);
        for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++)
            if (strcmp(s_scalar(s_node(c, q->key)), s_scalar(k)) == 0)
                return s_fail(c, k, "duplicate key \"%s\" in %s",
                              s_scalar(k), what);
    }
    return AG_SUITE_OK;
}

/* The value of key in mapping n (keys already checked), or NULL. */
static yaml_node_t *
s_get(s_ctx_t *c, yaml_node_t *n, const char *key)
{
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++)
        if (strcmp(s_scalar(s_node(c, p->key)), key) == 0)
            return s_node(c, p->value);
    return NULL;
}

static int
s_uint(s_ctx_t *c, yaml_node_t *n, const char *what, long lo, long hi,
       long *out)
{
    if (n->type != YAML_SCALAR_NODE)
        return s_fail(c, n, "%s: expected an integer from %ld to %ld, "
                      "found %s", what, lo, hi, s_kind_name(n));
    const char *s = s_scalar(n);
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    /* Digits only (and '-' for a clear range message): strtol alone
     * would take " 3" and "+3". */
    if (!(isdigit((unsigned char)s[0]) || s[0] == '-') || *end || errno ||
        v < lo || v > hi)
        return s_fail(c, n, "%s: expected an integer from %ld to %ld, "
                      "found \"%s\"", what, lo, hi, s);
    *out = v;
    return AG_SUITE_OK;
}

static int
s_seconds(s_ctx_t *c, yaml_node_t *n, const char *what, double *out)
{
    if (n->type == YAML_SCALAR_NODE) {
        const char *s = s_scalar(n);
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (*s && !*end && !errno && isfinite(v) && v > 0 &&
            v <= AG_SUITE_MAX_TIMEOUT_S) {
            *out = v;
            return AG_SUITE_OK;
        }
        return s_fail(c, n, "%s: expected seconds above 0 and at most %.0f, "
                      "found \"%s\"", what, AG_SUITE_MAX_TIMEOUT_S, s);
    }
    return s_fail(c, n, "%s: expected seconds above 0 and at most %.0f, "
                  "found %s", what, AG_SUITE_MAX_TIMEOUT_S, s_kind_name(n));
}

static int
s_bool(s_ctx_t *c, yaml_node_t *n, const char *what, bool *out)
{
    if (n->type == YAML_SCALAR_NODE) {
        if (strcmp(s_scalar(n), "true") == 0) {
            *out = true;
            return AG_SUITE_OK;
        }
        if (strcmp(s_scalar(n), "false") == 0) {
            *out = false;
            return AG_SUITE_OK;
        }
        return s_fail(c, n, "%s: expected true or false, found \"%s\"",
                      what, s_scalar(n));
    }
    return s_fail(c, n, "%s: expected true or false, found %s", what,
                  s_kind_name(n));
}

/* A growable string with a hard bound. */
typedef struct {
    char *buf;
    size_t len, cap;
    bool too_long;       /* the bound, not memory, refused the growth */
} s_buf_t;

/* Bytes one string may have after its variables are substituted. */
#define S_MAX_STRING ((size_t)AG_SUITE_MAX_FILE_BYTES * 4)

/* Bytes of strings one suite may copy in all: substituted strings, env
 * entries (each arm gets every variable as PARITY_VAR_*) and names.
 * Aliases let a 200 KB file repeat a 4 MiB string thousands of times
 * (one reached 257 MB, another asked for 16 GB); a real suite copies a
 * few kilobytes. */
#define S_MAX_COPIED (S_MAX_STRING * 4)

/* Count bytes the suite is about to keep; refuse past S_MAX_COPIED. */
static int
s_account(s_ctx_t *c, const yaml_node_t *n, const char *what, size_t bytes)
{
    if (bytes > S_MAX_COPIED - c->copied)
        return s_fail(c, n, "%s: the suite's strings come to more than %zu "
                      "bytes with variables substituted and aliases "
                      "expanded", what, S_MAX_COPIED);
    c->copied += bytes;
    return AG_SUITE_OK;
}

static int
s_buf_add(s_buf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        if (cap > S_MAX_STRING) {
            b->too_long = true;
            return -1;
        }
        char *p = realloc(b->buf, cap);
        if (!p)
            return -1;
        b->buf = p;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
    return 0;
}

/* Copy scalar n with ${name} replaced by the variable's value. In a shell
 * string (for_shell) it becomes ${PARITY_VAR_NAME} instead, so the value
 * reaches the shell only as the expansion of an environment variable and
 * is never parsed as shell code. "$${" writes a literal "${". */
static int
s_subst(s_ctx_t *c, yaml_node_t *n, const char *what, bool for_shell,
        char **out)
{
    if (s_want_scalar(c, n, what) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    const char *s = s_scalar(n);
    s_buf_t b = { 0 };
    int rc = AG_SUITE_ERR;
    while (*s) {
        if (s[0] == '$' && s[1] == '$' && s[2] == '{') {
            if (s_buf_add(&b, "${", 2) != 0)
                goto oom;
            s += 3;
            continue;
        }
        if (s[0] != '$' || s[1] != '{') {
            if (s_buf_add(&b, s, 1) != 0)
                goto oom;
            s++;
            continue;
        }
        const char *close = strchr(s + 2, '}');
        if (!close) {
            s_fail(c, n, "%s: unterminated \"${\" in \"%s\" (write $${ for "
                   "a literal ${)", what, s_scalar(n));
            goto out;
        }
        char name[128];
        size_t len = (size_t)(close - (s + 2));
        if (len == 0 || len >= sizeof name) {
            s_fail(c, n, "%s: expected a variable name inside ${} in \"%s\"",
                   what, s_scalar(n));
            goto out;
        }
        memcpy(name, s + 2, len);
        name[len] = '\0';
        if (!s_is_name(name)) {
            s_fail(c, n, "%s: \"%s\" is not a variable name (letters, digits "
                   "and _, not starting with a digit)", what, name);
            goto out;
        }
        size_t v;
        for (v = 0; v < c->var_count; v++)
            if (strcmp(c->var_names[v], name) == 0)
                break;
        if (v == c->var_count) {
            s_fail(c, n, "%s: undefined variable ${%s} (give --var %s=VALUE "
                   "or set it under variables:)", what, name, name);
            goto out;
        }
        c->var_used[v] = true;
        if (for_shell) {
            char ref[160];
            int m = snprintf(ref, sizeof ref, "${PARITY_VAR_");
            for (size_t i = 0; name[i]; i++)
                ref[m++] = (char)toupper((unsigned char)name[i]);
            ref[m++] = '}';
            if (s_buf_add(&b, ref, (size_t)m) != 0)
                goto oom;
        } else if (s_buf_add(&b, c->var_values[v],
                             strlen(c->var_values[v])) != 0) {
            goto oom;
        }
        s = close + 1;
    }
    if (!b.buf && s_buf_add(&b, "", 0) != 0)
        goto oom;
    if (s_account(c, n, what, b.len + 1) != AG_SUITE_OK)
        goto out;
    *out = b.buf;
    b.buf = NULL;
    rc = AG_SUITE_OK;
    goto out;
oom:
    if (b.too_long)
        s_fail(c, n, "%s: longer than %zu bytes with its variables "
               "substituted", what, S_MAX_STRING);
    else
        s_fail(c, n, "%s: out of memory", what);
out:
    free(b.buf);
    return rc;
}

static void
s_cmd_free(ag_cmd_t *cmd)
{
    for (size_t i = 0; i < cmd->argc; i++)
        free(cmd->argv[i]);
    free(cmd->argv);
    free(cmd->shell);
    memset(cmd, 0, sizeof *cmd);
}

/* An argv list (each element substituted on its own). */
static int
s_argv(s_ctx_t *c, yaml_node_t *n, const char *what, ag_cmd_t *cmd)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return s_fail(c, n, "%s: expected a list of strings (the argv), "
                      "found %s", what, s_kind_name(n));
    size_t count = (size_t)(n->data.sequence.items.top -
                            n->data.sequence.items.start);
    if (count == 0)
        return s_fail(c, n, "%s: expected at least the program name, found "
                      "an empty list", what);
    if (count > AG_SUITE_MAX_ARGV)
        return s_fail(c, n, "%s: more than %d arguments", what,
                      AG_SUITE_MAX_ARGV);
    cmd->argv = calloc(count + 1, sizeof *cmd->argv);
    if (!cmd->argv)
        return s_fail(c, n, "%s: out of memory", what);
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = s_node(c, n->data.sequence.items.start[i]);
        if (s_subst(c, item, what, false, &cmd->argv[i]) != AG_SUITE_OK)
            return AG_SUITE_ERR;
        cmd->argc = i + 1;
    }
    if (cmd->argv[0][0] == '\0')
        return s_fail(c, s_node(c, n->data.sequence.items.start[0]),
                      "%s: the program name is empty", what);
    return AG_SUITE_OK;
}

/* A helper command: a string runs through /bin/sh -c, a list directly. */
static int
s_cmd(s_ctx_t *c, yaml_node_t *n, const char *what, ag_cmd_t *cmd)
{
    if (n->type == YAML_SCALAR_NODE)
        return s_subst(c, n, what, true, &cmd->shell);
    if (n->type == YAML_SEQUENCE_NODE)
        return s_argv(c, n, what, cmd);
    return s_fail(c, n, "%s: expected a shell string or an argv list, found "
                  "%s", what, s_kind_name(n));
}

static int
s_out(s_ctx_t *c, yaml_node_t *n, const char *what, ag_out_t *out)
{
    out->kind = AG_OUT_DISCARD;
    if (!n)
        return AG_SUITE_OK;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.length == 0)
        return s_fail(c, n, "%s: expected \"discard\" or a file path, found "
                      "%s", what, n->type == YAML_SCALAR_NODE ?
                      "an empty string" : s_kind_name(n));
    if (strcmp(s_scalar(n), "discard") == 0)
        return AG_SUITE_OK;
    out->kind = AG_OUT_FILE;
    return s_subst(c, n, what, false, &out->path);
}

static int
s_cpus(s_ctx_t *c, yaml_node_t *n, ag_bench_t *b)
{
    if (!n)
        return AG_SUITE_OK;
    int buf[AG_SUITE_MAX_CPUS];
    size_t count = 0;
    char msg[256];
    if (n->type == YAML_SCALAR_NODE) {
        if (ag_cpulist_parse(s_scalar(n), buf, AG_SUITE_MAX_CPUS, &count,
                             AG_SUITE_MAX_CPUS, msg, sizeof msg) != 0)
            return s_fail(c, n, "cpus: %s", msg);
    } else if (n->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             it < n->data.sequence.items.top; it++) {
            long v;
            if (count >= AG_SUITE_MAX_CPUS)
                return s_fail(c, n, "cpus: more than %d CPUs",
                              AG_SUITE_MAX_CPUS);
            if (s_uint(c, s_node(c, *it), "cpus", 0, AG_SUITE_MAX_CPUS - 1,
                       &v) != AG_SUITE_OK)
                return AG_SUITE_ERR;
            buf[count++] = (int)v;
        }
    } else {
        return s_fail(c, n, "cpus: expected a CPU list such as \"0-3,6\" or "
                      "a list of CPU numbers, found %s", s_kind_name(n));
    }
    if (count == 0)
        return s_fail(c, n, "cpus: expected at least one CPU");
    b->cpus = malloc(count * sizeof *b->cpus);
    if (!b->cpus)
        return s_fail(c, n, "cpus: out of memory");
    memcpy(b->cpus, buf, count * sizeof *b->cpus);
    b->cpu_count = count;
    return AG_SUITE_OK;
}

/* `metrics: [wall, peak_rss]`: the metrics the benchmark is judged and
 * tracked on, each once; absent: wall alone. */
static int
s_metrics(s_ctx_t *c, yaml_node_t *n, ag_bench_t *b)
{
    b->metrics[0] = VD_METRIC_WALL;
    b->metric_count = 1;
    if (!n)
        return AG_SUITE_OK;
    if (n->type != YAML_SEQUENCE_NODE)
        return s_fail(c, n, "metrics: expected a list of wall, cpu and "
                      "peak_rss, found %s", s_kind_name(n));
    b->metric_count = 0;
    for (yaml_node_item_t *it = n->data.sequence.items.start;
         it < n->data.sequence.items.top; it++) {
        yaml_node_t *m = s_node(c, *it);
        vd_metric_t id;
        if (!m || m->type != YAML_SCALAR_NODE)
            return s_fail(c, m ? m : n, "metrics: expected a metric name "
                          "(wall, cpu or peak_rss), found %s",
                          m ? s_kind_name(m) : "nothing");
        if (vd_metric_parse(s_scalar(m), &id) != 0)
            return s_fail(c, m, "metrics: unknown metric \"%.60s\" (want "
                          "wall, cpu or peak_rss)", s_scalar(m));
        for (size_t k = 0; k < b->metric_count; k++)
            if (b->metrics[k] == id)
                return s_fail(c, m, "metrics: \"%s\" is listed twice",
                              s_scalar(m));
        b->metrics[b->metric_count++] = id;
    }
    if (b->metric_count == 0)
        return s_fail(c, n, "metrics: expected at least one of wall, cpu "
                      "and peak_rss");
    return AG_SUITE_OK;
}

/* Read the inheritable settings present in mapping n over *s. */
static int
s_settings(s_ctx_t *c, yaml_node_t *n, s_settings_t *s)
{
    yaml_node_t *v;
    long x;
    if ((v = s_get(c, n, "runs"))) {
        if (v->type == YAML_SCALAR_NODE && strcmp(s_scalar(v), "auto") == 0)
            s->runs_auto = true;
        else if (v->type != YAML_SCALAR_NODE ||
                 s_uint(c, v, "runs", AG_SUITE_MIN_RUNS, AG_SUITE_MAX_RUNS,
                        &x) != AG_SUITE_OK)
            return s_fail(c, v, "runs: expected auto or an integer from %d "
                          "to %d, found %s%s%s", AG_SUITE_MIN_RUNS,
                          AG_SUITE_MAX_RUNS,
                          v->type == YAML_SCALAR_NODE ? "\"" : "",
                          v->type == YAML_SCALAR_NODE ? s_scalar(v)
                                                      : s_kind_name(v),
                          v->type == YAML_SCALAR_NODE ? "\"" : "");
        else {
            s->runs_auto = false;
            s->runs = (unsigned)x;
        }
    }
    if ((v = s_get(c, n, "max_runs"))) {
        if (s_uint(c, v, "max_runs", AG_SUITE_MIN_RUNS, AG_SUITE_MAX_RUNS,
                   &x) != AG_SUITE_OK)
            return AG_SUITE_ERR;
        s->max_runs = (unsigned)x;
    }
    if ((v = s_get(c, n, "warmup"))) {
        if (s_uint(c, v, "warmup", 0, AG_SUITE_MAX_WARMUP, &x) !=
            AG_SUITE_OK)
            return AG_SUITE_ERR;
        s->warmup = (unsigned)x;
    }
    if ((v = s_get(c, n, "timeout")) &&
        s_seconds(c, v, "timeout", &s->timeout_s) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    if ((v = s_get(c, n, "expect_exit"))) {
        if (s_uint(c, v, "expect_exit", 0, 255, &x) != AG_SUITE_OK)
            return AG_SUITE_ERR;
        s->expect_exit = (int)x;
    }
    if ((v = s_get(c, n, "stdout")))
        s->stdout_node = v;
    if ((v = s_get(c, n, "stderr")))
        s->stderr_node = v;
    if ((v = s_get(c, n, "cpus")))
        s->cpus_node = v;
    if ((v = s_get(c, n, "metrics")))
        s->metrics_node = v;
    if ((v = s_get(c, n, "versions"))) {
        if (v->type != YAML_SEQUENCE_NODE)
            return s_fail(c, v, "versions: expected a list of commands, "
                          "found %s", s_kind_name(v));
        s->versions_node = v;
    }
    return AG_SUITE_OK;
}

static int
s_versions(s_ctx_t *c, yaml_node_t *n, ag_arm_t *arm)
{
    if (!n)
        return AG_SUITE_OK;
    size_t count = (size_t)(n->data.sequence.items.top -
                            n->data.sequence.items.start);
    if (count > AG_SUITE_MAX_ARMS * 4)
        return s_fail(c, n, "versions: more than %d commands",
                      AG_SUITE_MAX_ARMS * 4);
    arm->versions = calloc(count ? count : 1, sizeof *arm->versions);
    if (!arm->versions)
        return s_fail(c, n, "versions: out of memory");
    for (size_t i = 0; i < count; i++) {
        /* Counted before it is filled: a command refused half-way (an argv
         * whose second element is a mapping) still holds memory that
         * ag_suite_destroy frees; a zeroed ag_cmd_t frees nothing. */
        arm->version_count = i + 1;
        if (s_cmd(c, s_node(c, n->data.sequence.items.start[i]), "versions",
                  &arm->versions[i]) != AG_SUITE_OK)
            return AG_SUITE_ERR;
    }
    return AG_SUITE_OK;
}

/* env: the arm's own KEY: VALUE pairs, then PARITY_VAR_* for every
 * variable in effect. arm_node names the arm in messages about those. */
static int
s_env(s_ctx_t *c, yaml_node_t *n, const yaml_node_t *arm_node, ag_arm_t *arm)
{
    size_t own = 0;
    if (n) {
        if (n->type != YAML_MAPPING_NODE)
            return s_fail(c, n, "env: expected a mapping of NAME: value, "
                          "found %s", s_kind_name(n));
        own = (size_t)(n->data.mapping.pairs.top -
                       n->data.mapping.pairs.start);
    }
    if (own > AG_SUITE_MAX_ENV)
        return s_fail(c, n, "env: more than %d entries", AG_SUITE_MAX_ENV);
    arm->env = calloc(own + c->var_count + 1, sizeof *arm->env);
    if (!arm->env)
        return s_fail(c, n, "env: out of memory");
    for (size_t i = 0; i < own; i++) {
        yaml_node_pair_t *p = &n->data.mapping.pairs.start[i];
        yaml_node_t *k = s_node(c, p->key);
        char *value = NULL;
        if (s_want_scalar(c, k, "env") != AG_SUITE_OK)
            return AG_SUITE_ERR;
        if (!s_is_name(s_scalar(k)))
            return s_fail(c, k, "env: \"%s\" is not a variable name "
                          "(letters, digits and _, not starting with a "
                          "digit)", s_scalar(k));
        for (size_t j = 0; j < i; j++)
            if (strcmp(s_scalar(s_node(c, n->data.mapping.pairs.start[j].key)),
                       s_scalar(k)) == 0)
                return s_fail(c, k, "duplicate key \"%s\" in env",
                              s_scalar(k));
        for (size_t v = 0; v < c->var_count; v++)
            if (strncmp(s_scalar(k), "PARITY_VAR_", 11) == 0 &&
                strcasecmp(s_scalar(k) + 11, c->var_names[v]) == 0)
                return s_fail(c, k, "env: \"%s\" is the variable %s's "
                              "(give --var %s=VALUE instead)", s_scalar(k),
                              c->var_names[v], c->var_names[v]);
        if (s_subst(c, s_node(c, p->value), "env", false, &value) !=
            AG_SUITE_OK)
            return AG_SUITE_ERR;
        int r = asprintf(&arm->env[arm->env_count], "%s=%s", s_scalar(k),
                         value);
        free(value);
        if (r < 0) {
            arm->env[arm->env_count] = NULL;
            return s_fail(c, n, "env: out of memory");
        }
        arm->env_count++;
        if (s_account(c, k, "env", (size_t)r + 1) != AG_SUITE_OK)
            return AG_SUITE_ERR;
    }
    for (size_t v = 0; v < c->var_count; v++) {
        char upper[128];
        size_t i;
        for (i = 0; c->var_names[v][i] && i + 1 < sizeof upper; i++)
            upper[i] = (char)toupper((unsigned char)c->var_names[v][i]);
        upper[i] = '\0';
        int r = asprintf(&arm->env[arm->env_count], "PARITY_VAR_%s=%s",
                         upper, c->var_values[v]);
        if (r < 0) {
            arm->env[arm->env_count] = NULL;
            return s_fail(c, n, "env: out of memory");
        }
        arm->env_count++;
        if (s_account(c, arm_node, "env", (size_t)r + 1) != AG_SUITE_OK)
            return AG_SUITE_ERR;
    }
    return AG_SUITE_OK;
}

static int
s_arm(s_ctx_t *c, yaml_node_t *n, ag_arm_t *arm, yaml_node_t *versions)
{
    yaml_node_t *v;
    arm->line = (int)n->start_mark.line + 1;
    if (n->type != YAML_MAPPING_NODE)
        return s_fail(c, n, "arms: expected a mapping with name: and "
                      "command: or shell:, found %s", s_kind_name(n));
    if (s_check_keys(c, n, "an arm", s_arm_keys) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    if (!(v = s_get(c, n, "name")))
        return s_fail(c, n, "arm: missing key \"name\"");
    if (s_want_scalar(c, v, "name") != AG_SUITE_OK)
        return AG_SUITE_ERR;
    if (v->data.scalar.length == 0)
        return s_fail(c, v, "name: expected a non-empty arm name");
    if (s_account(c, v, "name", v->data.scalar.length + 1) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    if (!(arm->name = strdup(s_scalar(v))))
        return s_fail(c, v, "name: out of memory");
    if ((v = s_get(c, n, "subject")) &&
        s_bool(c, v, "subject", &arm->subject) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    yaml_node_t *command = s_get(c, n, "command");
    yaml_node_t *shell = s_get(c, n, "shell");
    if (command && shell)
        return s_fail(c, shell, "arm \"%s\": give command: (an argv list) or "
                      "shell: (a string), not both", arm->name);
    if (!command && !shell)
        return s_fail(c, n, "arm \"%s\": missing key \"command\" (an argv "
                      "list) or \"shell\" (a string)", arm->name);
    if (command && s_argv(c, command, "command", &arm->cmd) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    if (shell) {
        if (shell->type != YAML_SCALAR_NODE)
            return s_fail(c, shell, "shell: expected a string, found %s",
                          s_kind_name(shell));
        if (s_subst(c, shell, "shell", true, &arm->cmd.shell) != AG_SUITE_OK)
            return AG_SUITE_ERR;
    }
    if ((v = s_get(c, n, "cwd")) &&
        s_subst(c, v, "cwd", false, &arm->cwd) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    if (s_env(c, s_get(c, n, "env"), n, arm) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    static const char *const hooks[] = { "setup", "cleanup", "prepare",
                                         "conclude" };
    ag_cmd_t *hook_cmd[] = { &arm->setup, &arm->cleanup, &arm->prepare,
                             &arm->conclude };
    for (size_t i = 0; i < 4; i++)
        if ((v = s_get(c, n, hooks[i])) &&
            s_cmd(c, v, hooks[i], hook_cmd[i]) != AG_SUITE_OK)
            return AG_SUITE_ERR;
    if ((v = s_get(c, n, "versions"))) {
        if (v->type != YAML_SEQUENCE_NODE)
            return s_fail(c, v, "versions: expected a list of commands, "
                          "found %s", s_kind_name(v));
        versions = v;
    }
    return s_versions(c, versions, arm);
}

static int
s_bench(s_ctx_t *c, yaml_node_t *n, const s_settings_t *defaults,
        ag_bench_t *b)
{
    yaml_node_t *v;
    b->line = (int)n->start_mark.line + 1;
    if (n->type != YAML_MAPPING_NODE)
        return s_fail(c, n, "benchmarks: expected a mapping with name: and "
                      "arms:, found %s", s_kind_name(n));
    if (s_check_keys(c, n, "a benchmark", s_bench_keys) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    if (!(v = s_get(c, n, "name")))
        return s_fail(c, n, "benchmark: missing key \"name\"");
    if (s_want_scalar(c, v, "name") != AG_SUITE_OK)
        return AG_SUITE_ERR;
    if (v->data.scalar.length == 0)
        return s_fail(c, v, "name: expected a non-empty benchmark name");
    if (s_account(c, v, "name", v->data.scalar.length + 1) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    if (!(b->name = strdup(s_scalar(v))))
        return s_fail(c, v, "name: out of memory");

    s_settings_t s = *defaults;
    if (s_settings(c, n, &s) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    b->runs_auto = s.runs_auto;
    b->max_runs = s.max_runs ? s.max_runs : AG_SUITE_DEFAULT_MAX_RUNS;
    b->runs = s.runs_auto ? b->max_runs : s.runs;
    b->warmup = s.warmup;
    b->timeout_s = s.timeout_s;
    b->expect_exit = s.expect_exit;
    if (s_out(c, s.stdout_node, "stdout", &b->out) != AG_SUITE_OK ||
        s_out(c, s.stderr_node, "stderr", &b->err) != AG_SUITE_OK ||
        s_cpus(c, s.cpus_node, b) != AG_SUITE_OK ||
        s_metrics(c, s.metrics_node, b) != AG_SUITE_OK)
        return AG_SUITE_ERR;

    yaml_node_t *arms = s_get(c, n, "arms");
    if (!arms)
        return s_fail(c, n, "benchmark \"%s\": missing key \"arms\"",
                      b->name);
    if (arms->type != YAML_SEQUENCE_NODE)
        return s_fail(c, arms, "arms: expected a list of at least 2 arms, "
                      "found %s", s_kind_name(arms));
    size_t count = (size_t)(arms->data.sequence.items.top -
                            arms->data.sequence.items.start);
    if (count < 2)
        return s_fail(c, arms, "benchmark \"%s\": expected at least 2 arms, "
                      "found %zu", b->name, count);
    if (count > AG_SUITE_MAX_ARMS)
        return s_fail(c, arms, "benchmark \"%s\": more than %d arms",
                      b->name, AG_SUITE_MAX_ARMS);
    b->arms = calloc(count, sizeof *b->arms);
    if (!b->arms)
        return s_fail(c, arms, "arms: out of memory");
    bool marked = false;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *an = s_node(c, arms->data.sequence.items.start[i]);
        b->arm_count = i + 1;
        if (s_arm(c, an, &b->arms[i], s.versions_node) != AG_SUITE_OK)
            return AG_SUITE_ERR;
        for (size_t j = 0; j < i; j++)
            if (strcmp(b->arms[j].name, b->arms[i].name) == 0)
                return s_fail(c, an, "benchmark \"%s\": two arms named "
                              "\"%s\"", b->name, b->arms[i].name);
        if (b->arms[i].subject) {
            if (marked)
                return s_fail(c, an, "benchmark \"%s\": arms \"%s\" and "
                              "\"%s\" are both marked subject: true",
                              b->name, b->arms[b->subject].name,
                              b->arms[i].name);
            marked = true;
            b->subject = i;
        }
    }
    /* No arm marked: the first one is the subject (docs/suites.md). */
    if (!marked)
        b->arms[0].subject = true;
    return AG_SUITE_OK;
}

/* "a, b" of the suite's variables (declared or read), for messages. */
static void
s_var_list(const s_ctx_t *c, char *list, size_t size)
{
    *list = 0;
    for (size_t k = 0; k < c->var_count; k++) {
        size_t used = strlen(list);
        if (c->var_used[k] && used + 4 < size)
            snprintf(list + used, size - used, "%s%s", used ? ", " : "",
                     c->var_names[k]);
    }
}

/* A --var that neither variables: declares nor any ${name} reads would
 * run silently on the defaults (a typo: --var imput=...): AG_SUITE_ERR
 * naming it and the suite's variables, or AG_SUITE_OK. */
static int
s_unused_var(s_ctx_t *c, const char *suite)
{
    size_t i;
    for (i = 0; i < c->var_count && c->var_used[i]; i++)
        ;
    if (i == c->var_count)
        return AG_SUITE_OK;
    char list[512];
    s_var_list(c, list, sizeof list);
    return s_fail(c, NULL, "--var %s: suite \"%s\" has no variable \"%s\" "
                  "(%s%s)", c->var_names[i], suite, c->var_names[i],
                  *list ? "its variables: " : "it has no variables",
                  list);
}

/* variables: from the file, then --var over them. */
static int
s_vars(s_ctx_t *c, yaml_node_t *n, const ag_var_t *vars, size_t nvars)
{
    size_t own = 0;
    if (n) {
        if (n->type != YAML_MAPPING_NODE)
            return s_fail(c, n, "variables: expected a mapping of name: "
                          "value, found %s", s_kind_name(n));
        own = (size_t)(n->data.mapping.pairs.top -
                       n->data.mapping.pairs.start);
    }
    if (own + nvars > AG_SUITE_MAX_VARS)
        return s_fail(c, n, "variables: more than %d", AG_SUITE_MAX_VARS);
    c->var_names = calloc(own + nvars + 1, sizeof *c->var_names);
    c->var_values = calloc(own + nvars + 1, sizeof *c->var_values);
    c->var_used = calloc(own + nvars + 1, sizeof *c->var_used);
    if (!c->var_names || !c->var_values || !c->var_used)
        return s_fail(c, n, "variables: out of memory");
    for (size_t i = 0; i < own; i++) {
        yaml_node_pair_t *p = &n->data.mapping.pairs.start[i];
        yaml_node_t *k = s_node(c, p->key), *v = s_node(c, p->value);
        if (s_want_scalar(c, k, "variables") != AG_SUITE_OK)
            return AG_SUITE_ERR;
        if (!s_is_name(s_scalar(k)))
            return s_fail(c, k, "variables: \"%s\" is not a variable name "
                          "(letters, digits and _, not starting with a "
                          "digit)", s_scalar(k));
        if (strlen(s_scalar(k)) > AG_SUITE_MAX_VAR_NAME)
            return s_fail(c, k, "variables: a name longer than %d bytes",
                          AG_SUITE_MAX_VAR_NAME);
        for (size_t j = 0; j < c->var_count; j++) {
            if (strcmp(c->var_names[j], s_scalar(k)) == 0)
                return s_fail(c, k, "duplicate key \"%s\" in variables",
                              s_scalar(k));
            if (strcasecmp(c->var_names[j], s_scalar(k)) == 0)
                return s_fail(c, k, "variables: \"%s\" and \"%s\" would "
                              "both be PARITY_VAR_%s (names must differ in "
                              "more than case)", c->var_names[j],
                              s_scalar(k), s_upper(s_scalar(k)).s);
        }
        if (s_want_scalar(c, v, "variables") != AG_SUITE_OK)
            return AG_SUITE_ERR;
        c->var_names[c->var_count] = strdup(s_scalar(k));
        c->var_values[c->var_count] = strdup(s_scalar(v));
        c->var_used[c->var_count] = true;   /* declared: the suite's own */
        c->var_count++;
        if (!c->var_names[c->var_count - 1] ||
            !c->var_values[c->var_count - 1])
            return s_fail(c, v, "variables: out of memory");
    }
    for (size_t i = 0; i < nvars; i++) {
        if (!s_is_name(vars[i].name))
            return s_fail(c, NULL, "--var %s: not a variable name (letters, "
                          "digits and _, not starting with a digit)",
                          vars[i].name);
        if (strlen(vars[i].name) > AG_SUITE_MAX_VAR_NAME)
            return s_fail(c, NULL, "--var: a name longer than %d bytes",
                          AG_SUITE_MAX_VAR_NAME);
        size_t j;
        for (j = 0; j < c->var_count; j++)
            if (strcmp(c->var_names[j], vars[i].name) == 0)
                break;
        for (size_t k = 0; j == c->var_count && k < c->var_count; k++)
            if (strcasecmp(c->var_names[k], vars[i].name) == 0)
                return s_fail(c, NULL, "--var %s: \"%s\" and \"%s\" would "
                              "both be PARITY_VAR_%s (names must differ in "
                              "more than case)", vars[i].name,
                              c->var_names[k], vars[i].name,
                              s_upper(vars[i].name).s);
        char *value = strdup(vars[i].value);
        if (!value)
            return s_fail(c, NULL, "--var: out of memory");
        if (j < c->var_count) {
            free(c->var_values[j]);
            c->var_values[j] = value;
        } else {
            c->var_values[c->var_count] = value;
            c->var_names[c->var_count] = strdup(vars[i].name);
            c->var_count++;
            if (!c->var_names[c->var_count - 1])
                return s_fail(c, NULL, "--var: out of memory");
        }
    }
    return AG_SUITE_OK;
}

/* revision: names the variable that picks the version under test
 * (docs/suites.md "Revision"): one of the suite's variables, declared
 * under variables: or read by some ${name}, so that a job's value of it
 * reaches the commands. */
static int
s_revision(s_ctx_t *c, yaml_node_t *n, ag_suite_t *suite)
{
    if (!n)
        return AG_SUITE_OK;
    if (s_want_scalar(c, n, "revision") != AG_SUITE_OK)
        return AG_SUITE_ERR;
    const char *name = s_scalar(n);
    for (size_t i = 0; i < c->var_count; i++) {
        if (strcmp(c->var_names[i], name) != 0 || !c->var_used[i])
            continue;
        if (!(suite->revision = strdup(name)))
            return s_fail(c, n, "revision: out of memory");
        suite->revision_value = suite->var_values[i];
        return AG_SUITE_OK;
    }
    char list[512];
    s_var_list(c, list, sizeof list);
    return s_fail(c, n, "revision: suite \"%s\" has no variable \"%s\" "
                  "(%s%s)", suite->name, name,
                  *list ? "its variables: " : "it has no variables", list);
}

static int
s_suite(s_ctx_t *c, const ag_var_t *vars, size_t nvars, ag_suite_t *suite)
{
    yaml_node_t *root = yaml_document_get_root_node(c->doc);
    yaml_node_t *v;
    if (!root) {
        snprintf(c->err, c->errlen, "%s:1:1: expected a mapping with suite: "
                 "and benchmarks:, found an empty file", c->name);
        return AG_SUITE_ERR;
    }
    if (root->type != YAML_MAPPING_NODE)
        return s_fail(c, root, "expected a mapping with suite: and "
                      "benchmarks: at the top, found %s", s_kind_name(root));
    if (s_check_keys(c, root, "the suite", s_top_keys) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    if (!(v = s_get(c, root, "suite")))
        return s_fail(c, root, "missing key \"suite\" (the suite's name)");
    if (s_want_scalar(c, v, "suite") != AG_SUITE_OK)
        return AG_SUITE_ERR;
    if (v->data.scalar.length == 0)
        return s_fail(c, v, "suite: expected a non-empty name");
    if (!(suite->name = strdup(s_scalar(v))))
        return s_fail(c, v, "suite: out of memory");

    if (s_vars(c, s_get(c, root, "variables"), vars, nvars) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    suite->var_names = c->var_names;
    suite->var_values = c->var_values;
    suite->var_count = c->var_count;

    s_settings_t defaults = {
        .runs = AG_SUITE_DEFAULT_RUNS,
        .warmup = AG_SUITE_DEFAULT_WARMUP,
        .timeout_s = AG_SUITE_DEFAULT_TIMEOUT_S,
    };
    if ((v = s_get(c, root, "defaults"))) {
        if (v->type != YAML_MAPPING_NODE)
            return s_fail(c, v, "defaults: expected a mapping, found %s",
                          s_kind_name(v));
        if (s_check_keys(c, v, "defaults", s_defaults_keys) != AG_SUITE_OK ||
            s_settings(c, v, &defaults) != AG_SUITE_OK)
            return AG_SUITE_ERR;
    }

    yaml_node_t *benches = s_get(c, root, "benchmarks");
    if (!benches)
        return s_fail(c, root, "missing key \"benchmarks\"");
    if (benches->type != YAML_SEQUENCE_NODE)
        return s_fail(c, benches, "benchmarks: expected a list of "
                      "benchmarks, found %s", s_kind_name(benches));
    size_t count = (size_t)(benches->data.sequence.items.top -
                            benches->data.sequence.items.start);
    if (count == 0)
        return s_fail(c, benches, "benchmarks: expected at least one "
                      "benchmark, found an empty list");
    if (count > AG_SUITE_MAX_BENCHMARKS)
        return s_fail(c, benches, "benchmarks: more than %d",
                      AG_SUITE_MAX_BENCHMARKS);
    suite->benchmarks = calloc(count, sizeof *suite->benchmarks);
    if (!suite->benchmarks)
        return s_fail(c, benches, "benchmarks: out of memory");
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *bn = s_node(c, benches->data.sequence.items.start[i]);
        suite->benchmark_count = i + 1;
        if (s_bench(c, bn, &defaults, &suite->benchmarks[i]) != AG_SUITE_OK)
            return AG_SUITE_ERR;
        for (size_t j = 0; j < i; j++)
            if (strcmp(suite->benchmarks[j].name,
                       suite->benchmarks[i].name) == 0)
                return s_fail(c, bn, "two benchmarks named \"%s\"",
                              suite->benchmarks[i].name);
    }
    if (s_unused_var(c, suite->name) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    return s_revision(c, s_get(c, root, "revision"), suite);
}

/* Flow collections ([ ] and { }) one suite may nest. A real suite needs
 * three or four (versions: [[prog, --version]] inside an arm inside
 * arms: [...]). libyaml's scanner keeps one possible simple key per
 * open flow level and walks all of them for every token, so its time
 * grows with depth times tokens: 40,000 levels took 8 s, 200,000 over a
 * minute, and the daemon scans its suites directory at start. */
#define S_MAX_FLOW_DEPTH 64

/* Refuse text nested deeper than S_MAX_FLOW_DEPTH before it is loaded.
 * This pass uses libyaml's own scanner, token by token, so quoted
 * scalars, comments and plain scalars such as "a[1]" count exactly as
 * the loader will see them, and it stops at the first token too deep:
 * its cost is bounded by S_MAX_FLOW_DEPTH per token. A syntax error
 * ends the pass; the loader then reports it in its usual words. */
static int
s_check_depth(const char *name, const char *text, size_t len, char *err,
              size_t errlen)
{
    yaml_parser_t parser;
    yaml_token_t token;
    int depth = 0, rc = AG_SUITE_OK;
    bool done = false;

    if (!yaml_parser_initialize(&parser)) {
        snprintf(err, errlen, "%s: yaml_parser_initialize failed", name);
        return AG_SUITE_ERR;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    while (!done && yaml_parser_scan(&parser, &token)) {
        switch (token.type) {
        case YAML_FLOW_SEQUENCE_START_TOKEN:
        case YAML_FLOW_MAPPING_START_TOKEN:
            if (++depth > S_MAX_FLOW_DEPTH) {
                snprintf(err, errlen, "%s:%zu:%zu: more than %d levels of "
                         "[ ] and { } nesting", name,
                         token.start_mark.line + 1,
                         token.start_mark.column + 1, S_MAX_FLOW_DEPTH);
                rc = AG_SUITE_ERR;
                done = true;
            }
            break;
        case YAML_FLOW_SEQUENCE_END_TOKEN:
        case YAML_FLOW_MAPPING_END_TOKEN:
            depth--;
            break;
        case YAML_STREAM_END_TOKEN:
            done = true;
            break;
        default:
            break;
        }
        yaml_token_delete(&token);
    }
    yaml_parser_delete(&parser);
    return rc;
}

int
ag_suite_load_buffer(const char *name, const char *text, size_t len,
                     const ag_var_t *vars, size_t var_count,
                     ag_suite_t **out, char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    bool parser_ok = false, doc_ok = false;
    int rc = AG_SUITE_ERR;
    s_ctx_t c = { .name = name, .doc = &doc, .err = err, .errlen = errlen };
    ag_suite_t *suite = NULL;

    *out = NULL;
    if (len > AG_SUITE_MAX_FILE_BYTES) {
        snprintf(err, errlen, "%s: larger than %u bytes", name,
                 AG_SUITE_MAX_FILE_BYTES);
        return AG_SUITE_ERR;
    }
    if (s_check_depth(name, text, len, err, errlen) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    if (!yaml_parser_initialize(&parser)) {
        snprintf(err, errlen, "%s: yaml_parser_initialize failed", name);
        return AG_SUITE_ERR;
    }
    parser_ok = true;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, errlen, "%s:%zu:%zu: YAML syntax: %s%s%s", name,
                 parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                 parser.problem ? parser.problem : "unknown error",
                 parser.context ? " " : "",
                 parser.context ? parser.context : "");
        goto done;
    }
    doc_ok = true;
    if (!(suite = calloc(1, sizeof *suite)) ||
        !(suite->path = strdup(name))) {
        snprintf(err, errlen, "%s: out of memory", name);
        goto done;
    }
    rc = s_suite(&c, vars, var_count, suite);
    if (rc == AG_SUITE_OK) {
        /* A second document in the same file would be ignored otherwise. */
        yaml_document_t extra;
        if (yaml_parser_load(&parser, &extra)) {
            yaml_node_t *r = yaml_document_get_root_node(&extra);
            if (r) {
                snprintf(err, errlen, "%s:%zu:%zu: expected one YAML "
                         "document, found a second", name,
                         r->start_mark.line + 1, r->start_mark.column + 1);
                rc = AG_SUITE_ERR;
            }
            yaml_document_delete(&extra);
        }
    }
done:
    free(c.var_used);
    if (suite && !suite->var_names) {
        /* s_vars failed before handing its arrays to the suite. */
        suite->var_names = c.var_names;
        suite->var_values = c.var_values;
        suite->var_count = c.var_count;
    } else if (!suite) {
        for (size_t i = 0; i < c.var_count; i++) {
            free(c.var_names[i]);
            free(c.var_values[i]);
        }
        free(c.var_names);
        free(c.var_values);
    }
    if (rc == AG_SUITE_OK)
        *out = suite;
    else
        ag_suite_destroy(&suite);
    if (doc_ok)
        yaml_document_delete(&doc);
    if (parser_ok)
        yaml_parser_delete(&parser);
    return rc;
}

int
ag_suite_read(const char *path, char **text_out, size_t *len_out, char *err,
              size_t errlen)
{
    int rc = AG_SUITE_ERR;
    char *text = NULL;
    struct stat st;
    *text_out = NULL;
    *len_out = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: open: %s", path, strerror(errno));
        return AG_SUITE_ERR;
    }
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: fstat: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        goto done;
    }
    if (st.st_size > (off_t)AG_SUITE_MAX_FILE_BYTES) {
        snprintf(err, errlen, "%s: larger than %u bytes", path,
                 AG_SUITE_MAX_FILE_BYTES);
        goto done;
    }
    size_t size = (size_t)st.st_size, got = 0;
    if (!(text = malloc(size + 1))) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    while (got < size) {
        ssize_t r = read(fd, text + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, errlen, "%s: read: %s", path, strerror(errno));
            goto done;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    text[got] = '\0';
    *text_out = text;
    *len_out = got;
    text = NULL;
    rc = AG_SUITE_OK;
done:
    free(text);
    close(fd);
    return rc;
}

int
ag_suite_load(const char *path, const ag_var_t *vars, size_t var_count,
              ag_suite_t **out, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    if (ag_suite_read(path, &text, &len, err, errlen) != AG_SUITE_OK)
        return AG_SUITE_ERR;
    int rc = ag_suite_load_buffer(path, text, len, vars, var_count, out, err,
                                  errlen);
    free(text);
    return rc;
}

int
ag_var_parse(const char *opt, char *s, ag_var_t *var, char *err,
             size_t errlen)
{
    char *eq = strchr(s, '=');
    if (!eq) {
        snprintf(err, errlen, "%s %s: expected NAME=VALUE", opt, s);
        return AG_SUITE_ERR;
    }
    *eq = '\0';
    if (!s_is_name(s)) {
        snprintf(err, errlen, "%s %s=%s: \"%s\" is not a variable name "
                 "(letters, digits and _, not starting with a digit)", opt,
                 s, eq + 1, s);
        *eq = '=';
        return AG_SUITE_ERR;
    }
    var->name = s;
    var->value = eq + 1;
    return AG_SUITE_OK;
}

/* Copy a program's command into cmd; what says which one in err. */
static int
s_cmd_copy(ag_cmd_t *cmd, const ag_cmd_spec_t *spec, bool required,
           const char *what, char *err, size_t errlen)
{
    if (spec->shell) {
        if (spec->shell[0] == '\0') {
            snprintf(err, errlen, "%s: the command is empty", what);
            return AG_SUITE_ERR;
        }
        if (!(cmd->shell = strdup(spec->shell)))
            goto oom;
        return AG_SUITE_OK;
    }
    if (spec->argc == 0) {
        if (!required)
            return AG_SUITE_OK;
        snprintf(err, errlen, "%s: the command is empty", what);
        return AG_SUITE_ERR;
    }
    if (spec->argc > AG_SUITE_MAX_ARGV) {
        snprintf(err, errlen, "%s: more than %d words", what,
                 AG_SUITE_MAX_ARGV);
        return AG_SUITE_ERR;
    }
    if (spec->argv[0][0] == '\0') {
        snprintf(err, errlen, "%s: the program name is empty", what);
        return AG_SUITE_ERR;
    }
    if (!(cmd->argv = calloc(spec->argc + 1, sizeof *cmd->argv)))
        goto oom;
    for (size_t j = 0; j < spec->argc; j++) {
        if (!(cmd->argv[j] = strdup(spec->argv[j])))
            goto oom;
        cmd->argc = j + 1;
    }
    return AG_SUITE_OK;
oom:
    snprintf(err, errlen, "%s: out of memory", what);
    return AG_SUITE_ERR;
}

static int
s_arm_from_spec(ag_arm_t *a, const ag_arm_spec_t *spec, const char *where,
                char *err, size_t errlen)
{
    static const char *const hook_names[] = { "setup", "cleanup", "prepare",
                                              "conclude" };
    ag_cmd_t *hooks[] = { &a->setup, &a->cleanup, &a->prepare,
                          &a->conclude };
    const ag_cmd_spec_t *hook_specs[] = { &spec->setup, &spec->cleanup,
                                          &spec->prepare, &spec->conclude };
    char what[512];
    if (!(a->name = strdup(spec->name)) ||
        !(a->env = calloc(1, sizeof *a->env))) {
        snprintf(err, errlen, "%s: out of memory", where);
        return AG_SUITE_ERR;
    }
    if (s_cmd_copy(&a->cmd, &spec->cmd, true, where, err, errlen) != 0)
        return AG_SUITE_ERR;
    for (size_t k = 0; k < 4; k++) {
        snprintf(what, sizeof what, "%s: %s", where, hook_names[k]);
        if (s_cmd_copy(hooks[k], hook_specs[k], false, what, err,
                       errlen) != 0)
            return AG_SUITE_ERR;
    }
    return AG_SUITE_OK;
}

static int
s_bench_from_spec(ag_bench_t *b, const ag_bench_spec_t *spec, unsigned runs,
                  unsigned warmup, char *err, size_t errlen)
{
    char where[64];
    if (spec->arm_count < 2 || spec->arm_count > AG_SUITE_MAX_ARMS) {
        snprintf(err, errlen, "%s: expected 2 to %d commands, found %zu",
                 spec->name, AG_SUITE_MAX_ARMS, spec->arm_count);
        return AG_SUITE_ERR;
    }
    if (spec->subject >= spec->arm_count ||
        spec->param_count > AG_SUITE_MAX_VARS) {
        snprintf(err, errlen, "%s: no arm %zu to be the subject, or more "
                 "than %d parameters", spec->name, spec->subject,
                 AG_SUITE_MAX_VARS);
        return AG_SUITE_ERR;
    }
    if (!(b->name = strdup(spec->name)) ||
        !(b->arms = calloc(spec->arm_count, sizeof *b->arms)))
        goto oom;
    b->runs = runs;
    b->warmup = warmup;
    b->timeout_s = AG_SUITE_DEFAULT_TIMEOUT_S;
    b->metrics[0] = VD_METRIC_WALL;
    b->metric_count = 1;
    b->subject = spec->subject;
    for (size_t i = 0; i < spec->arm_count; i++) {
        b->arm_count = i + 1;
        snprintf(where, sizeof where, "command %zu", i + 1);
        if (s_arm_from_spec(&b->arms[i], &spec->arms[i], where, err,
                            errlen) != AG_SUITE_OK)
            return AG_SUITE_ERR;
        b->arms[i].subject = i == spec->subject;
        /* Summaries and verdicts are keyed by the arm's name. */
        for (size_t j = 0; j < i; j++)
            if (strcmp(b->arms[j].name, b->arms[i].name) == 0) {
                snprintf(err, errlen, "%s: two commands named \"%s\"",
                         spec->name, spec->arms[i].name);
                return AG_SUITE_ERR;
            }
    }
    if (spec->param_count &&
        (!(b->param_names = calloc(spec->param_count, sizeof(char *))) ||
         !(b->param_values = calloc(spec->param_count, sizeof(char *)))))
        goto oom;
    for (size_t i = 0; i < spec->param_count; i++) {
        b->param_count = i + 1;
        if (!(b->param_names[i] = strdup(spec->param_names[i])) ||
            !(b->param_values[i] = strdup(spec->param_values[i])))
            goto oom;
    }
    return AG_SUITE_OK;
oom:
    snprintf(err, errlen, "%s: out of memory", spec->name);
    return AG_SUITE_ERR;
}

int
ag_suite_from_specs(const char *suite_name, const ag_bench_spec_t *benches,
                    size_t bench_count, unsigned runs, unsigned warmup,
                    ag_suite_t **out, char *err, size_t errlen)
{
    ag_suite_t *s = NULL;
    *out = NULL;
    if (bench_count < 1 || bench_count > AG_SUITE_MAX_BENCHMARKS) {
        snprintf(err, errlen, "expected 1 to %d benchmarks, found %zu",
                 AG_SUITE_MAX_BENCHMARKS, bench_count);
        return AG_SUITE_ERR;
    }
    if (runs < AG_SUITE_MIN_RUNS || runs > AG_SUITE_MAX_RUNS ||
        warmup > AG_SUITE_MAX_WARMUP) {
        snprintf(err, errlen, "runs must be %d..%d and warmup 0..%d",
                 AG_SUITE_MIN_RUNS, AG_SUITE_MAX_RUNS, AG_SUITE_MAX_WARMUP);
        return AG_SUITE_ERR;
    }
    if (!(s = calloc(1, sizeof *s)) || !(s->name = strdup(suite_name)) ||
        !(s->path = strdup("(command line)")) ||
        !(s->benchmarks = calloc(bench_count, sizeof *s->benchmarks))) {
        snprintf(err, errlen, "ag_suite_from_specs: out of memory");
        ag_suite_destroy(&s);
        return AG_SUITE_ERR;
    }
    for (size_t i = 0; i < bench_count; i++) {
        /* Counted first, so that destroy frees a half-built one too. */
        s->benchmark_count = i + 1;
        if (s_bench_from_spec(&s->benchmarks[i], &benches[i], runs, warmup,
                              err, errlen) != AG_SUITE_OK) {
            ag_suite_destroy(&s);
            return AG_SUITE_ERR;
        }
    }
    *out = s;
    return AG_SUITE_OK;
}

void
ag_suite_destroy(ag_suite_t **sp)
{
    if (!sp || !*sp)
        return;
    ag_suite_t *s = *sp;
    for (size_t i = 0; i < s->benchmark_count; i++) {
        ag_bench_t *b = &s->benchmarks[i];
        for (size_t j = 0; j < b->arm_count; j++) {
            ag_arm_t *a = &b->arms[j];
            free(a->name);
            free(a->instance);
            s_cmd_free(&a->cmd);
            free(a->cwd);
            for (size_t k = 0; k < a->env_count; k++)
                free(a->env[k]);
            free(a->env);
            s_cmd_free(&a->setup);
            s_cmd_free(&a->cleanup);
            s_cmd_free(&a->prepare);
            s_cmd_free(&a->conclude);
            for (size_t k = 0; k < a->version_count; k++)
                s_cmd_free(&a->versions[k]);
            free(a->versions);
        }
        free(b->arms);
        free(b->name);
        free(b->out.path);
        free(b->err.path);
        free(b->cpus);
        for (size_t k = 0; k < b->param_count; k++) {
            free(b->param_names[k]);
            free(b->param_values[k]);
        }
        free(b->param_names);
        free(b->param_values);
    }
    free(s->benchmarks);
    for (size_t i = 0; i < s->var_count; i++) {
        free(s->var_names[i]);
        free(s->var_values[i]);
    }
    free(s->var_names);
    free(s->var_values);
    free(s->revision);
    free(s->name);
    free(s->path);
    free(s);
    *sp = NULL;
}

const ag_bench_t *
ag_suite_find(const ag_suite_t *s, const char *name)
{
    for (size_t i = 0; i < s->benchmark_count; i++)
        if (strcmp(s->benchmarks[i].name, name) == 0)
            return &s->benchmarks[i];
    return NULL;
}
