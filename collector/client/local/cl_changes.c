/* cl_changes.c -- `parity changes`: change points of any series, offline.
 *
 *   parity changes FILE.csv [--time COL] [--metric COL]... [--window N]
 *                  [--max-p P] [--min-magnitude M] [--floor F] [--otava]
 *                  [--json]
 *   parity changes --jsonl [FILE]     (standard input without FILE)
 *
 * The collector's detector (vd_change_find, Parity's filters and the
 * verdict rule) on a series from another tool, or with --otava Apache
 * Otava's own method (vd_otava_find). See docs/commands/changes.md. Every
 * problem with the input is "FILE:LINE: what" with exit 1.
 */
#include "pw_buf.h"
#include "cl_out.h"
#include "pw_out.h"
#include "cl_verbs.h"
#include "vd_change.h"
#include "vd_otava.h"
#include "vd_trend.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define S_VERB "changes"

#define S_FILE_MAX    (256u << 20)   /* bytes read at most */
#define S_POINTS_MAX  1000000u       /* points per series */
#define S_COLUMNS_MAX 1024u          /* CSV columns */
#define S_METRICS_MAX 64u            /* --metric given at most */

static const char s_usage[] =
    "usage: parity changes FILE.csv [--time COL] [--metric COL]...\n"
    "                      [--window N] [--max-p P] [--min-magnitude M]\n"
    "                      [--floor F] [--otava] [--json]\n"
    "       parity changes --jsonl [FILE] [options]\n"
    "\n"
    "The change points of each series: where its level steps, with the\n"
    "index of the first point after the step (0-based), both sides'\n"
    "levels, the change and its p-value. By default Parity's method, the\n"
    "collector's: E-Divisive means, then its filters (the step must clear\n"
    "the quartiles of the points on both sides, the change and the\n"
    "floor) and the verdict rule of the points after against the points\n"
    "before. --otava: Apache Otava's method as Otava runs it, none of\n"
    "Parity's filters.\n"
    "\n"
    "CSV: a header row; the time or label column (--time, default the\n"
    "column named \"time\", else the first); the metrics (--metric, again\n"
    "for more; default every other column whose first value is a number).\n"
    "JSON Lines: a point a line, a number or {\"median\": M, \"min\": m,\n"
    "\"label\": \"...\"}; min is the run's fastest sample (Parity's method\n"
    "then tells timing modes from steps).\n"
    "\n"
    "  --window N         Parity: the newest N points are looked at (default\n"
    "                     all, at most 1000); Otava: its sliding window\n"
    "                     (default 50); 2..1000\n"
    "  --max-p P          significance (default 0.0001; Otava 0.001)\n"
    "  --min-magnitude M  smallest relative change reported (default 0.02;\n"
    "                     Otava 0)\n"
    "  --floor F          Parity: an absolute change smaller than F (the\n"
    "                     series' unit) is not a change (default 0)\n"
    "  --otava            Apache Otava's method\n"
    "  --json             per metric: change_points [{index, label_before,\n"
    "                     label_after, before, after, magnitude, p_value,\n"
    "                     outcome, within_noise}]\n"
    "\n"
    "exit status: 0 done, 1 the input is unreadable or wrong, 2 usage\n"
    "error, 3 system error.\n";

typedef struct {
    bool otava, json, jsonl;
    const char *time_col;
    const char *metrics[S_METRICS_MAX];
    size_t nmetrics;
    long window;         /* 0: the method's default */
    double max_p, min_magnitude, floor;
    bool max_p_set, min_mag_set;
} s_opts_t;

/* One metric's points; labels and line numbers are the input's. */
typedef struct {
    char *name;
    double *v, *mins;    /* mins NaN where unknown */
} s_metric_t;

typedef struct {
    const char *path;    /* for messages */
    size_t n, cap;       /* points */
    char **labels;       /* n, NULL where none */
    size_t *lines;       /* n: each point's line in the input */
    s_metric_t m[S_COLUMNS_MAX];
    size_t nm;
} s_input_t;

static bool s_oom;

static void
s_input_free(s_input_t *in)
{
    for (size_t i = 0; i < in->n; i++)
        free(in->labels[i]);
    free(in->labels);
    free(in->lines);
    for (size_t k = 0; k < in->nm; k++) {
        free(in->m[k].name);
        free(in->m[k].v);
        free(in->m[k].mins);
    }
}

/* Room for one more point in every metric. 0, or -1 after the error. */
static int
s_grow(s_input_t *in)
{
    if (in->n < in->cap)
        return 0;
    if (in->n >= S_POINTS_MAX) {
        cl_out_error(S_VERB, "%s: more than %u points", in->path,
                     S_POINTS_MAX);
        return -1;
    }
    size_t cap = in->cap ? in->cap * 2 : 256;
    if (cap > S_POINTS_MAX)
        cap = S_POINTS_MAX;
    char **l = realloc(in->labels, cap * sizeof *l);
    if (l)
        in->labels = l;
    size_t *ln = l ? realloc(in->lines, cap * sizeof *ln) : NULL;
    if (ln)
        in->lines = ln;
    bool ok = l && ln;
    for (size_t k = 0; ok && k < in->nm; k++) {
        double *v = realloc(in->m[k].v, cap * sizeof *v);
        if (v)
            in->m[k].v = v;
        double *mn = v ? realloc(in->m[k].mins, cap * sizeof *mn) : NULL;
        if (mn)
            in->m[k].mins = mn;
        ok = v && mn;
    }
    if (!ok) {
        cl_out_error(S_VERB, "%s: out of memory at %zu points", in->path,
                     in->n);
        s_oom = true;
        return -1;
    }
    in->cap = cap;
    return 0;
}

/* ---- reading ---------------------------------------------------------- */

/* The whole of path (standard input when NULL) into b, bounded. */
static int
s_slurp(const char *path, const char *shown, pw_buf_t *b)
{
    FILE *f = path ? fopen(path, "rb") : stdin;
    struct stat st;
    char chunk[65536];
    int rc = -1;

    if (!f) {
        cl_out_error(S_VERB, "%s: cannot open: %s", shown, strerror(errno));
        return -1;
    }
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        cl_out_error(S_VERB, "%s: is a directory", shown);
        goto done;
    }
    for (;;) {
        size_t got = fread(chunk, 1, sizeof chunk, f);
        if (got > 0 && pw_buf_add(b, chunk, got) != PW_BUF_OK) {
            cl_out_error(S_VERB, "%s: %s", shown,
                         b->status == PW_BUF_TOOBIG
                         ? "more than the limit of 256 MiB"
                         : pw_buf_strerror(b->status));
            s_oom = b->status == PW_BUF_NOMEM;
            goto done;
        }
        if (got < sizeof chunk) {
            if (ferror(f)) {
                cl_out_error(S_VERB, "%s: reading: %s", shown,
                             strerror(errno));
                goto done;
            }
            break;
        }
    }
    rc = 0;
done:
    if (path)
        fclose(f);
    return rc;
}

/* The next line of text at *p (NUL-terminated in place, "\r\n" too);
 * NULL at the end. */
static char *
s_line(char **p)
{
    char *s = *p, *nl;
    if (!s || !*s)
        return NULL;
    nl = strchr(s, '\n');
    if (nl) {
        *nl = '\0';
        *p = nl + 1;
    } else {
        *p = s + strlen(s);
    }
    size_t len = strlen(s);
    if (len > 0 && s[len - 1] == '\r')
        s[len - 1] = '\0';
    return s;
}

/* Split one CSV line in place (RFC 4180 quotes, "" inside them; spaces
 * around an unquoted field trimmed). -1 with what in *why. */
static int
s_csv_split(char *s, char **f, size_t *nf, const char **why)
{
    size_t n = 0;
    for (;;) {
        if (n == S_COLUMNS_MAX) {
            *why = "more than 1024 columns";
            return -1;
        }
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '"') {
            char *w = ++s;
            f[n++] = w;
            for (;;) {
                if (!*s) {
                    *why = "a quote is not closed on its line";
                    return -1;
                }
                if (*s == '"' && s[1] == '"') {
                    *w++ = '"';
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    *w++ = *s++;
                }
            }
            *w = '\0';
            while (*s == ' ' || *s == '\t')
                s++;
            if (*s && *s != ',') {
                *why = "text after a quoted field";
                return -1;
            }
        } else {
            f[n++] = s;
            while (*s && *s != ',')
                s++;
            char *end = s;
            while (end > f[n - 1] && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
            if (*s == ',') {
                *end = '\0';
                s++;
                continue;
            }
            *end = '\0';
        }
        if (*s == ',') {
            s++;
            continue;
        }
        break;
    }
    *nf = n;
    return 0;
}

static long
s_column(char **head, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(head[i], name) == 0)
            return (long)i;
    return -1;
}

/* The header's columns as "a, b, c" for a message. */
static void
s_columns_text(char **head, size_t n, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at + 1 < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "",
                               head[i]);
}

/* Which columns are metrics: --metric's, else those whose first value
 * is a number. col[k] is metric k's column. */
static int
s_csv_metrics(s_input_t *in, const s_opts_t *o, char **head, size_t nh,
              long tcol, char **first, size_t nfirst, size_t *col)
{
    char cols[2048];
    double x;
    for (size_t k = 0; k < o->nmetrics; k++) {
        long c = s_column(head, nh, o->metrics[k]);
        if (c < 0 || c == tcol) {
            s_columns_text(head, nh, cols, sizeof cols);
            cl_out_error(S_VERB, "%s: no metric column \"%s\" (columns: %s)",
                         in->path, o->metrics[k], cols);
            return -1;
        }
        col[in->nm++] = (size_t)c;
    }
    for (size_t c = 0; o->nmetrics == 0 && c < nh; c++)
        if ((long)c != tcol && c < nfirst &&
            cl_out_parse_double(first[c], &x) == 0)
            col[in->nm++] = c;
    if (in->nm == 0) {
        cl_out_error(S_VERB, "%s: no column of numbers to look at (the "
                     "first row has none; --metric COL)", in->path);
        return -1;
    }
    for (size_t k = 0; k < in->nm; k++)
        if (!(in->m[k].name = strdup(head[col[k]]))) {
            s_oom = true;
            cl_out_error(S_VERB, "out of memory");
            return -1;
        }
    return 0;
}

static int
s_csv(char *text, s_input_t *in, const s_opts_t *o)
{
    static char *head[S_COLUMNS_MAX], *f[S_COLUMNS_MAX];
    size_t col[S_COLUMNS_MAX], nh = 0, nf, lineno = 0;
    const char *why;
    char *p = text, *line;
    long tcol;

    while ((line = s_line(&p)) && (++lineno, !*line))
        ;
    if (!line) {
        cl_out_error(S_VERB, "%s: empty, no header row", in->path);
        return -1;
    }
    if (s_csv_split(line, head, &nh, &why) != 0) {
        cl_out_error(S_VERB, "%s:%zu: %s", in->path, lineno, why);
        return -1;
    }
    if (o->time_col) {
        char cols[2048];
        if ((tcol = s_column(head, nh, o->time_col)) < 0) {
            s_columns_text(head, nh, cols, sizeof cols);
            cl_out_error(S_VERB, "%s: no time column \"%s\" (columns: %s)",
                         in->path, o->time_col, cols);
            return -1;
        }
    } else {
        tcol = s_column(head, nh, "time");
        tcol = tcol < 0 ? 0 : tcol;
    }
    while ((line = s_line(&p))) {
        lineno++;
        if (!*line)
            continue;
        if (s_csv_split(line, f, &nf, &why) != 0) {
            cl_out_error(S_VERB, "%s:%zu: %s", in->path, lineno, why);
            return -1;
        }
        if (nf != nh) {
            cl_out_error(S_VERB, "%s:%zu: %zu fields, the header has %zu",
                         in->path, lineno, nf, nh);
            return -1;
        }
        if (in->n == 0 && s_csv_metrics(in, o, head, nh, tcol, f, nf,
                                        col) != 0)
            return -1;
        if (s_grow(in) != 0)
            return -1;
        for (size_t k = 0; k < in->nm; k++) {
            const char *cell = f[col[k]];
            if (cl_out_parse_double(cell, &in->m[k].v[in->n]) != 0) {
                cl_out_error(S_VERB, "%s:%zu: column \"%s\": \"%s\" is not "
                             "a number", in->path, lineno, in->m[k].name,
                             cell);
                return -1;
            }
            in->m[k].mins[in->n] = NAN;
        }
        in->lines[in->n] = lineno;
        in->labels[in->n] = strdup(f[tcol]);
        if (!in->labels[in->n]) {
            s_oom = true;
            cl_out_error(S_VERB, "out of memory");
            return -1;
        }
        in->n++;
    }
    if (in->n == 0) {
        cl_out_error(S_VERB, "%s: a header and no rows", in->path);
        return -1;
    }
    return 0;
}

/* One JSON Lines point into point in->n of metric 0. */
static int
s_jsonl_point(s_input_t *in, const json_t *j, size_t lineno)
{
    const json_t *med = j, *mn = NULL, *lab = NULL;
    if (json_is_object(j)) {
        med = json_object_get(j, "median");
        mn = json_object_get(j, "min");
        lab = json_object_get(j, "label");
        if (!med) {
            cl_out_error(S_VERB, "%s:%zu: an object without \"median\"",
                         in->path, lineno);
            return -1;
        }
    }
    if (!json_is_number(med)) {
        cl_out_error(S_VERB, "%s:%zu: %s", in->path, lineno,
                     json_is_object(j) ? "\"median\" is not a number"
                     : "not a number or an object with \"median\"");
        return -1;
    }
    if (mn && !json_is_null(mn) && !json_is_number(mn)) {
        cl_out_error(S_VERB, "%s:%zu: \"min\" is not a number", in->path,
                     lineno);
        return -1;
    }
    if (lab && !json_is_null(lab) && !json_is_string(lab)) {
        cl_out_error(S_VERB, "%s:%zu: \"label\" is not a string", in->path,
                     lineno);
        return -1;
    }
    in->m[0].v[in->n] = json_number_value(med);
    in->m[0].mins[in->n] = json_is_number(mn) ? json_number_value(mn) : NAN;
    in->labels[in->n] = json_is_string(lab) ? strdup(json_string_value(lab))
                        : NULL;
    if (json_is_string(lab) && !in->labels[in->n]) {
        s_oom = true;
        cl_out_error(S_VERB, "out of memory");
        return -1;
    }
    in->lines[in->n++] = lineno;
    return 0;
}

static int
s_jsonl(char *text, s_input_t *in)
{
    char *p = text, *line;
    size_t lineno = 0;
    if (!(in->m[0].name = strdup("value"))) {
        s_oom = true;
        cl_out_error(S_VERB, "out of memory");
        return -1;
    }
    in->nm = 1;
    while ((line = s_line(&p))) {
        json_error_t jerr;
        lineno++;
        if (!*line)
            continue;
        json_t *j = json_loads(line, JSON_DECODE_ANY, &jerr);
        if (!j) {
            cl_out_error(S_VERB, "%s:%zu: not JSON: %s", in->path, lineno,
                         jerr.text);
            return -1;
        }
        int rc = s_grow(in) == 0 ? s_jsonl_point(in, j, lineno) : -1;
        json_decref(j);
        if (rc != 0)
            return -1;
    }
    if (in->n == 0) {
        cl_out_error(S_VERB, "%s: no points", in->path);
        return -1;
    }
    return 0;
}

/* ---- finding ---------------------------------------------------------- */

static json_t *
s_label(const s_input_t *in, size_t i)
{
    return in->labels[i] ? json_string(in->labels[i]) : json_null();
}

static json_t *
s_num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* One change point's JSON. */
static json_t *
s_cp_json(const s_input_t *in, size_t index, double before, double after,
          double p, json_t *outcome, json_t *within)
{
    return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                     "index", (json_int_t)index,
                     "label_before", s_label(in, index - 1),
                     "label_after", s_label(in, index),
                     "before", s_num(before), "after", s_num(after),
                     "magnitude", s_num(before != 0.0 ? after / before
                                        : NAN),
                     "p_value", s_num(p), "outcome", outcome,
                     "within_noise", within);
}

/* The method's parameters as used: the options, else its defaults. */
typedef struct {
    size_t window;
    double max_p, min_magnitude;
} s_method_t;

static void
s_method(const s_input_t *in, const s_opts_t *o, s_method_t *m)
{
    vd_change_params_t d;
    vd_change_params_default(&d);
    m->window = o->window ? (size_t)o->window
                : o->otava ? VD_OTAVA_DEFAULT_WINDOW
                : in->n < VD_CHANGE_MAX_WINDOW ? in->n : VD_CHANGE_MAX_WINDOW;
    m->max_p = o->max_p_set ? o->max_p
               : o->otava ? VD_OTAVA_DEFAULT_MAX_P : d.max_p_value;
    m->min_magnitude = o->min_mag_set ? o->min_magnitude
                       : o->otava ? 0.0 : d.min_relative;
}

/* Parity's method on metric k; its change points appended to arr. */
static int
s_parity(const s_input_t *in, size_t k, const s_opts_t *o,
         const s_method_t *mt, json_t *arr)
{
    const s_metric_t *m = &in->m[k];
    vd_change_params_t p;
    vd_point_t *pt = calloc(in->n, sizeof *pt);
    vd_change_t *out = calloc(in->n, sizeof *out);
    size_t nout = 0;
    char err[256];
    int rc = -1;

    vd_change_params_default(&p);
    p.window = mt->window;
    p.max_p_value = mt->max_p;
    p.min_relative = mt->min_magnitude;
    p.floor_us = o->floor;
    p.rule.floor_us = o->floor;
    p.rule.floor_is_default = false;
    if (!pt || !out) {
        s_oom = true;
        cl_out_error(S_VERB, "out of memory for %zu points", in->n);
        goto done;
    }
    for (size_t i = 0; i < in->n; i++) {
        if (!(m->v[i] > 0.0)) {
            cl_out_error(S_VERB, "%s:%zu: \"%s\" is %g: Parity's method "
                         "needs times above 0 (--otava takes any number)",
                         in->path, in->lines[i], m->name, m->v[i]);
            goto done;
        }
        pt[i].median = m->v[i];
        pt[i].min = m->mins[i];
        pt[i].q25 = pt[i].q75 = pt[i].max = NAN;
    }
    if (vd_change_find(pt, in->n, &p, out, in->n, &nout, err,
                       sizeof err) != VD_OK) {
        cl_out_error(S_VERB, "%s: \"%s\": %s", in->path, m->name, err);
        goto done;
    }
    /* A staircase of small changes one way is one drift (vd_trend.h),
     * as the collector stores it. */
    vd_trend_t tr[64];
    size_t ntr = 0, t = 0;
    if (vd_trend_find(pt, in->n, out, nout, &p.rule, tr, 64, &ntr, err,
                      sizeof err) != VD_OK) {
        cl_out_error(S_VERB, "%s: \"%s\": %s", in->path, m->name, err);
        goto done;
    }
    for (size_t c = 0; c < nout; c++) {
        const vd_change_t *ch = &out[c];
        json_t *cp;
        if (t < ntr && c == tr[t].first) {
            double pmin = 1.0;
            for (size_t f = tr[t].first; f <= tr[t].last; f++)
                pmin = out[f].p_value < pmin ? out[f].p_value : pmin;
            cp = s_cp_json(in, tr[t].start, tr[t].before, tr[t].now, pmin,
                           json_string(vd_outcome_name(tr[t].outcome)),
                           json_boolean(tr[t].within_noise));
            if (cp && json_object_update_new(cp, json_pack("{s:s,s:f,s:I,"
                    "s:I}", "kind", "trend", "per_point", tr[t].per_point,
                    "steps", (json_int_t)(tr[t].last - tr[t].first + 1),
                    "until_index", (json_int_t)tr[t].end)) != 0) {
                json_decref(cp);
                cp = NULL;
            }
            c = tr[t++].last;
        } else {
            cp = s_cp_json(in, ch->index, ch->before, ch->after, ch->p_value,
                           json_string(vd_outcome_name(ch->outcome)),
                           json_boolean(ch->within_noise));
            if (cp && json_object_set_new(cp, "kind", json_string("step"))) {
                json_decref(cp);
                cp = NULL;
            }
        }
        if (json_array_append_new(arr, cp) != 0) {
            s_oom = true;
            cl_out_error(S_VERB, "out of memory");
            goto done;
        }
    }
    rc = 0;
done:
    free(pt);
    free(out);
    return rc;
}

/* Otava's method on metric k. */
static int
s_otava(const s_input_t *in, size_t k, const s_method_t *mt, json_t *arr)
{
    vd_otava_cp_t *out = calloc(in->n, sizeof *out);
    size_t nout = 0;
    char err[256];
    int rc = -1;

    if (!out) {
        s_oom = true;
        cl_out_error(S_VERB, "out of memory for %zu points", in->n);
        return -1;
    }
    if (vd_otava_find(in->m[k].v, in->n, mt->window, mt->max_p,
                      mt->min_magnitude, out, in->n, &nout, err,
                      sizeof err) != 0) {
        cl_out_error(S_VERB, "%s: \"%s\": %s", in->path, in->m[k].name, err);
        goto done;
    }
    for (size_t c = 0; c < nout; c++)
        if (json_array_append_new(arr, s_cp_json(in, out[c].index,
                out[c].mean_before, out[c].mean_after, out[c].p_value,
                json_null(), json_null())) != 0) {
            s_oom = true;
            cl_out_error(S_VERB, "out of memory");
            goto done;
        }
    rc = 0;
done:
    free(out);
    return rc;
}

/* {"method", "window", "max_p", "min_magnitude", "metrics": [...]} or
 * NULL after the error. */
static json_t *
s_find(const s_input_t *in, const s_opts_t *o)
{
    size_t need = o->otava ? 2 : 2 * 3;   /* Parity: min_segment 3 a side */
    json_t *metrics = json_array(), *doc = NULL;
    s_method_t mt;
    s_method(in, o, &mt);
    if (in->n < need) {
        cl_out_error(S_VERB, "%s: %zu point%s; %s method needs at least "
                     "%zu", in->path, in->n, in->n == 1 ? "" : "s",
                     o->otava ? "Otava's" : "Parity's", need);
        goto fail;
    }
    if (!o->otava && !o->window && in->n > VD_CHANGE_MAX_WINDOW)
        fprintf(stderr, "parity changes: note: %zu points; Parity's method "
                "looks at the newest %d (--otava slides a window over "
                "all)\n", in->n, VD_CHANGE_MAX_WINDOW);
    for (size_t k = 0; metrics && k < in->nm; k++) {
        json_t *arr = json_array();
        if (!arr || json_array_append_new(metrics, json_pack("{s:s, s:I, "
                "s:o}", "metric", in->m[k].name, "points",
                (json_int_t)in->n, "change_points", arr)) != 0) {
            s_oom = true;
            cl_out_error(S_VERB, "out of memory");
            goto fail;
        }
        if ((o->otava ? s_otava(in, k, &mt, arr)
                      : s_parity(in, k, o, &mt, arr)) != 0)
            goto fail;
    }
    doc = json_pack("{s:s, s:I, s:f, s:f, s:o}",
                    "method", o->otava ? "otava" : "parity",
                    "window", (json_int_t)mt.window, "max_p", mt.max_p,
                    "min_magnitude", mt.min_magnitude, "metrics", metrics);
    if (!doc) {
        s_oom = true;
        cl_out_error(S_VERB, "out of memory");
    }
    return doc;
fail:
    json_decref(metrics);
    return NULL;
}

/* ---- output ----------------------------------------------------------- */

enum { S_INT, S_LEVEL, S_TIMES, S_P };

static const char *
s_text(char *buf, size_t len, const json_t *v, int kind)
{
    double x = json_number_value(v);
    if (json_is_string(v))
        return json_string_value(v);
    if (!json_is_number(v))
        return "-";
    switch (kind) {
    case S_INT: snprintf(buf, len, "%.0f", x); break;
    case S_LEVEL: snprintf(buf, len, "%.6g", x); break;
    case S_TIMES: snprintf(buf, len, "x%.4f", x); break;
    default: snprintf(buf, len, "%.3g", x); break;
    }
    return buf;
}

static int
s_table(FILE *f, const json_t *doc)
{
    size_t i;
    const json_t *m;
    bool otava = strcmp(pw_out_str(doc, "method", ""), "otava") == 0;
    fprintf(f, "%s method: window %lld, p <= %g, change >= %g %%\n",
            otava ? "Otava's" : "Parity's",
            (long long)json_integer_value(json_object_get(doc, "window")),
            json_real_value(json_object_get(doc, "max_p")),
            100.0 * json_real_value(json_object_get(doc, "min_magnitude")));
    json_array_foreach(json_object_get(doc, "metrics"), i, m) {
        const json_t *cps = json_object_get(m, "change_points"), *c;
        size_t k, n = json_array_size(cps);
        fprintf(f, "\n%s: %lld points, %zu change point%s\n",
                pw_out_str(m, "metric", ""),
                (long long)json_integer_value(json_object_get(m, "points")),
                n, n == 1 ? "" : "s");
        if (n == 0)
            continue;
        pw_out_table_t *t = pw_out_table_new(8);
        const char *head[] = { "index", "before", "after", "level before",
                               "level after", "change", "p-value",
                               "outcome" };
        int rc = t ? pw_out_table_add(t, head) : -1;
        json_array_foreach(cps, k, c) {
            char b[7][64], out[192];
            const json_t *oc = json_object_get(c, "outcome");
            const json_t *pp = json_object_get(c, "per_point");
            char trend[64] = "";
            if (json_is_number(pp))
                snprintf(trend, sizeof trend, ", a trend: %+.2f %% a point",
                         100.0 * json_number_value(pp));
            snprintf(out, sizeof out, "%s%s%s", json_is_string(oc)
                     ? json_string_value(oc) : "-",
                     json_is_true(json_object_get(c, "within_noise"))
                     ? " (within noise)" : "", trend);
            const char *row[] = {
                s_text(b[0], 64, json_object_get(c, "index"), S_INT),
                s_text(b[1], 64, json_object_get(c, "label_before"), S_P),
                s_text(b[2], 64, json_object_get(c, "label_after"), S_P),
                s_text(b[3], 64, json_object_get(c, "before"), S_LEVEL),
                s_text(b[4], 64, json_object_get(c, "after"), S_LEVEL),
                s_text(b[5], 64, json_object_get(c, "magnitude"), S_TIMES),
                s_text(b[6], 64, json_object_get(c, "p_value"), S_P),
                out };
            if (rc == 0)
                rc = pw_out_table_add(t, row);
        }
        pw_out_table_left(t, 1);
        pw_out_table_left(t, 2);
        pw_out_table_left(t, 7);
        if (rc == 0)
            rc = pw_out_table_print(t, f);
        pw_out_table_destroy(&t);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* ---- options ---------------------------------------------------------- */

enum { S_OPT_TIME = 256, S_OPT_METRIC, S_OPT_WINDOW, S_OPT_MAXP,
       S_OPT_MINMAG, S_OPT_FLOOR, S_OPT_OTAVA, S_OPT_JSON, S_OPT_JSONL };

static const struct option s_options[] = {
    {"time", required_argument, NULL, S_OPT_TIME},
    {"metric", required_argument, NULL, S_OPT_METRIC},
    {"window", required_argument, NULL, S_OPT_WINDOW},
    {"max-p", required_argument, NULL, S_OPT_MAXP},
    {"min-magnitude", required_argument, NULL, S_OPT_MINMAG},
    {"floor", required_argument, NULL, S_OPT_FLOOR},
    {"otava", no_argument, NULL, S_OPT_OTAVA},
    {"json", no_argument, NULL, S_OPT_JSON},
    {"jsonl", no_argument, NULL, S_OPT_JSONL},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* A number option's value: PW_EXIT_OK, PW_EXIT_USAGE when it is not a
 * number, PW_EXIT_DATA when it is out of range. */
static int
s_number_opt(const char *opt, const char *arg, double lo, double hi,
             bool lo_open, double *out)
{
    if (cl_out_parse_double(arg, out) != 0) {
        cl_out_error(S_VERB, "%s \"%s\": not a number", opt, arg);
        return PW_EXIT_USAGE;
    }
    if ((lo_open ? !(*out > lo) : !(*out >= lo)) || *out > hi) {
        cl_out_error(S_VERB, "%s %s: outside %s%g..%g%s", opt, arg,
                     lo_open ? "(" : "", lo, hi, lo_open ? "]" : "");
        return PW_EXIT_DATA;
    }
    return PW_EXIT_OK;
}

static int
s_parse(int argc, char **argv, s_opts_t *o, const char **file)
{
    int c, rc;
    double w;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", s_options, NULL)) != -1) {
        switch (c) {
        case S_OPT_TIME: o->time_col = optarg; break;
        case S_OPT_METRIC:
            if (o->nmetrics == S_METRICS_MAX) {
                cl_out_error(S_VERB, "--metric: at most %u", S_METRICS_MAX);
                return PW_EXIT_USAGE;
            }
            o->metrics[o->nmetrics++] = optarg;
            break;
        case S_OPT_WINDOW:
            if ((rc = s_number_opt("--window", optarg, 2, VD_OTAVA_MAX_WINDOW,
                                   false, &w)) != PW_EXIT_OK)
                return rc;
            if (w != floor(w)) {
                cl_out_error(S_VERB, "--window %s: not a whole number",
                             optarg);
                return PW_EXIT_USAGE;
            }
            o->window = (long)w;
            break;
        case S_OPT_MAXP:
            if ((rc = s_number_opt("--max-p", optarg, 0, 1, true,
                                   &o->max_p)) != PW_EXIT_OK)
                return rc;
            o->max_p_set = true;
            break;
        case S_OPT_MINMAG:
            if ((rc = s_number_opt("--min-magnitude", optarg, 0, 1e6, false,
                                   &o->min_magnitude)) != PW_EXIT_OK)
                return rc;
            o->min_mag_set = true;
            break;
        case S_OPT_FLOOR:
            if ((rc = s_number_opt("--floor", optarg, 0, 1e300, false,
                                   &o->floor)) != PW_EXIT_OK)
                return rc;
            break;
        case S_OPT_OTAVA: o->otava = true; break;
        case S_OPT_JSON: o->json = true; break;
        case S_OPT_JSONL: o->jsonl = true; break;
        default:
            cl_out_option_error(S_VERB, c, argv);
            return PW_EXIT_USAGE;
        }
    }
    if (cl_out_one_operand(S_VERB, argc, argv, file) != 0)
        return PW_EXIT_USAGE;
    if (!*file && !o->jsonl) {
        cl_out_error(S_VERB, "which series? FILE.csv, or --jsonl with a "
                     "file or standard input (parity changes --help)");
        return PW_EXIT_USAGE;
    }
    if (o->jsonl && (o->time_col || o->nmetrics)) {
        cl_out_error(S_VERB, "--time and --metric are for CSV; a JSON Lines "
                     "series is one metric");
        return PW_EXIT_USAGE;
    }
    if (o->otava && o->floor > 0.0) {
        cl_out_error(S_VERB, "--floor is Parity's filter; --otava has none");
        return PW_EXIT_USAGE;
    }
    return PW_EXIT_OK;
}

int
cl_changes_main(int argc, char **argv)
{
    s_opts_t o = { 0 };
    s_input_t in = { 0 };
    const char *file = NULL;
    pw_buf_t text;
    json_t *doc = NULL;
    int rc;

    if (cl_out_wants_help(argc, argv))
        return cl_out_help(S_VERB, s_usage);
    if ((rc = s_parse(argc, argv, &o, &file)) != PW_EXIT_OK)
        return rc;
    if (file && strcmp(file, "-") == 0)
        file = NULL;
    in.path = file ? file : "standard input";
    pw_buf_init(&text, S_FILE_MAX);
    rc = PW_EXIT_DATA;
    if (s_slurp(file, in.path, &text) != 0)
        goto done;
    if (text.len == 0) {
        cl_out_error(S_VERB, "%s: empty", in.path);
        goto done;
    }
    if (strlen(text.data) != text.len) {
        cl_out_error(S_VERB, "%s: holds a NUL byte: not text", in.path);
        goto done;
    }
    if ((o.jsonl ? s_jsonl(text.data, &in) : s_csv(text.data, &in, &o)) != 0)
        goto done;
    if (!(doc = s_find(&in, &o)))
        goto done;
    rc = PW_EXIT_OK;
    if ((o.json ? pw_out_json(stdout, doc) : s_table(stdout, doc)) != 0 ||
        fflush(stdout) != 0) {
        cl_out_error(S_VERB, "writing the answer: %s", strerror(errno));
        rc = PW_EXIT_SYSTEM;
    }
done:
    if (s_oom)
        rc = PW_EXIT_SYSTEM;
    json_decref(doc);
    s_input_free(&in);
    pw_buf_free(&text);
    return rc;
}
