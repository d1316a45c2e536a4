/* ag_export.c -- see ag_export.h. */
#include "ag_export.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "pw_out.h"

/* A CSV column's name, "parameter_" and a parameter's (whose names are
 * at most a few hundred bytes). */
#define S_COLUMN_MAX 1024

/* A table's unit: the one that shows its smallest median with at least
 * one digit before the point, as hyperfine chooses one per table. */
typedef struct {
    const char *name;
    double us;           /* microseconds in one unit */
} s_unit_t;

static s_unit_t
s_unit(double smallest_us)
{
    if (smallest_us >= 1e6)
        return (s_unit_t){ "s", 1e6 };
    if (smallest_us >= 1e3)
        return (s_unit_t){ "ms", 1e3 };
    return (s_unit_t){ "µs", 1.0 };
}

static double
s_num(const json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

/* A command in a Markdown table cell: as code, in a run of backticks
 * longer than any inside it, with '|' escaped (a table cell ends there
 * even inside code). */
static void
s_md_code(FILE *f, const char *s)
{
    size_t run = 0, longest = 0;
    for (const char *p = s; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    for (size_t i = 0; i <= longest; i++)
        fputc('`', f);
    if (longest)
        fputc(' ', f);
    for (const char *p = s; *p; p++) {
        if (*p == '|')
            fputc('\\', f);
        fputc(*p == '\n' ? ' ' : *p, f);
    }
    if (longest)
        fputc(' ', f);
    for (size_t i = 0; i <= longest; i++)
        fputc('`', f);
}

static void
s_md_bench(FILE *f, const json_t *b, bool heading)
{
    const json_t *arms = json_object_get(b, "arms");
    const json_t *summary = json_object_get(b, "summary");
    const json_t *verdict = json_object_get(b, "verdict");
    const char *name = json_string_value(json_object_get(b, "name"));
    size_t i;
    json_t *arm;
    double smallest = INFINITY;
    json_array_foreach(arms, i, arm) {
        const json_t *s = json_object_get(summary, json_string_value(
            json_object_get(arm, "name")));
        if (s && s_num(s, "median") < smallest)
            smallest = s_num(s, "median");
    }
    s_unit_t u = s_unit(isfinite(smallest) ? smallest : 0);
    if (heading)
        fprintf(f, "### %s\n\n", name ? name : "?");
    fprintf(f, "| Command | Median [%s] | Min [%s] | Max [%s] | IQR [%s] | "
            "n | Subject vs this |\n|:---|---:|---:|---:|---:|---:|:---|\n",
            u.name, u.name, u.name, u.name);
    json_array_foreach(arms, i, arm) {
        const char *arm_name = json_string_value(json_object_get(arm,
                                                                 "name"));
        const json_t *s = json_object_get(summary, arm_name);
        const json_t *v = json_object_get(verdict, arm_name);
        fputs("| ", f);
        s_md_code(f, arm_name ? arm_name : "?");
        int digits = u.us > 1 ? 3 : 1;
        if (s) {
            fprintf(f, " | %.*f", digits, s_num(s, "median") / u.us);
            fprintf(f, " | %.*f", digits, s_num(s, "min") / u.us);
            fprintf(f, " | %.*f", digits, s_num(s, "max") / u.us);
            fprintf(f, " | %.*f", digits, s_num(s, "iqr") / u.us);
            fprintf(f, " | %lld",
                    (long long)json_integer_value(json_object_get(s, "n")));
        } else {
            fputs(" | | | | | 0", f);
        }
        if (json_is_true(json_object_get(arm, "subject"))) {
            fputs(" | subject |\n", f);
        } else if (v) {
            char r[40], t[40];
            fprintf(f, " | %s %s (tol. %s) |\n",
                    json_string_value(json_object_get(v, "outcome")),
                    pw_out_ratio(r, sizeof r, s_num(v, "ratio")),
                    pw_out_ratio(t, sizeof t, s_num(v, "tolerance")));
        } else {
            fputs(" | no verdict |\n", f);
        }
    }
    const char *reason = json_string_value(json_object_get(b, "reason"));
    const char *why = json_string_value(json_object_get(b, "verdict_error"));
    if (reason)
        fprintf(f, "\n%s: %s\n",
                json_string_value(json_object_get(b, "status")), reason);
    else if (why)
        fprintf(f, "\n%s\n", why);
}

int
ag_export_markdown(FILE *f, const json_t *doc)
{
    const json_t *benches = json_object_get(doc, "benchmarks");
    size_t i;
    json_t *b;
    json_array_foreach(benches, i, b) {
        if (i)
            fputc('\n', f);
        s_md_bench(f, b, json_array_size(benches) > 1);
    }
    return ferror(f) ? -1 : 0;
}

/* Mean user and system time and the sample standard deviation of the
 * wall time of arm's measured samples, in microseconds; stddev NAN
 * below two samples. */
static void
s_sample_stats(const json_t *b, const char *arm, double *user, double *sys,
               double *stddev)
{
    double n = 0, wall = 0, wall2 = 0;
    size_t i;
    json_t *s;
    *user = *sys = 0;
    json_array_foreach(json_object_get(b, "samples"), i, s) {
        const char *kind = json_string_value(json_object_get(s, "kind"));
        const char *a = json_string_value(json_object_get(s, "arm"));
        if (!kind || !a || strcmp(kind, "measured") != 0 ||
            strcmp(a, arm) != 0)
            continue;
        double w = s_num(s, "wall_us");
        n++;
        wall += w;
        wall2 += w * w;
        *user += s_num(s, "user_us");
        *sys += s_num(s, "sys_us");
    }
    if (n > 0) {
        *user /= n;
        *sys /= n;
    }
    /* Two passes would be steadier; at benchmark spreads (a few per
     * cent of the mean) the one-pass form loses nothing visible. */
    *stddev = n >= 2 ? sqrt(fmax(0, (wall2 - wall * wall / n) / (n - 1)))
                     : NAN;
}

/* A time in seconds, or an empty field when unknown. */
static void
s_csv_s(FILE *f, double us, bool last)
{
    char buf[PW_OUT_NUMBER_MAX];
    pw_out_csv_field(f, pw_out_number(buf, sizeof buf, us / 1e6), last);
}

static void
s_csv_arm(FILE *f, const json_t *b, const json_t *arm,
          const json_t *pnames)
{
    const char *name = json_string_value(json_object_get(arm, "name"));
    const json_t *s = json_object_get(json_object_get(b, "summary"), name);
    const json_t *v = json_object_get(json_object_get(b, "verdict"), name);
    const json_t *params = json_object_get(b, "parameters");
    double user, sys, sd;
    char buf[64];
    if (!name)
        return;
    s_sample_stats(b, name, &user, &sys, &sd);
    pw_out_csv_field(f, name, false);
    s_csv_s(f, s ? s_num(s, "mean") : NAN, false);
    s_csv_s(f, sd, false);
    s_csv_s(f, s ? s_num(s, "median") : NAN, false);
    s_csv_s(f, s ? user : NAN, false);
    s_csv_s(f, s ? sys : NAN, false);
    s_csv_s(f, s ? s_num(s, "min") : NAN, false);
    s_csv_s(f, s ? s_num(s, "max") : NAN, false);
    size_t i;
    json_t *pn;
    json_array_foreach(pnames, i, pn) {
        const char *pv = json_string_value(json_object_get(
            params, json_string_value(pn)));
        pw_out_csv_field(f, pv ? pv : "", false);
    }
    pw_out_csv_field(f, json_string_value(json_object_get(b, "name")),
                     false);
    bool subject = json_is_true(json_object_get(arm, "subject"));
    pw_out_csv_field(f, subject ? "true" : "false", false);
    snprintf(buf, sizeof buf, "%lld",
             (long long)json_integer_value(json_object_get(s, "n")));
    pw_out_csv_field(f, buf, false);
    s_csv_s(f, s ? s_num(s, "iqr") : NAN, false);
    pw_out_csv_field(f, v ? json_string_value(json_object_get(v, "outcome"))
                          : "", false);
    pw_out_csv_field(f, pw_out_json_number(buf, sizeof buf, v, "ratio"),
                     false);
    pw_out_csv_field(f, pw_out_json_number(buf, sizeof buf, v, "tolerance"),
                     true);
}

int
ag_export_csv(FILE *f, const json_t *doc)
{
    const json_t *benches = json_object_get(doc, "benchmarks");
    json_t *pnames = json_array();
    size_t i, j;
    json_t *b, *arm;
    const char *key;
    json_t *v;
    if (!pnames)
        return -1;
    /* Every parameter any benchmark has, in the order first seen. */
    json_array_foreach(benches, i, b)
        json_object_foreach(json_object_get(b, "parameters"), key, v) {
            bool seen = false;
            json_array_foreach(pnames, j, arm)
                seen |= strcmp(json_string_value(arm), key) == 0;
            if (!seen)
                json_array_append_new(pnames, json_string(key));
        }
    static const char *const head[] = { "command", "mean", "stddev",
        "median", "user", "system", "min", "max" };
    static const char *const tail[] = { "benchmark", "subject", "n", "iqr",
        "outcome", "ratio", "tolerance" };
    for (i = 0; i < sizeof head / sizeof *head; i++)
        pw_out_csv_field(f, head[i], false);
    json_array_foreach(pnames, i, v) {
        char col[S_COLUMN_MAX];
        snprintf(col, sizeof col, "parameter_%s", json_string_value(v));
        pw_out_csv_field(f, col, false);
    }
    for (i = 0; i < sizeof tail / sizeof *tail; i++)
        pw_out_csv_field(f, tail[i], i + 1 == sizeof tail / sizeof *tail);
    json_array_foreach(benches, i, b)
        json_array_foreach(json_object_get(b, "arms"), j, arm)
            s_csv_arm(f, b, arm, pnames);
    json_decref(pnames);
    return ferror(f) ? -1 : 0;
}
