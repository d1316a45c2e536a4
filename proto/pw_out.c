/* pw_out.c -- shared output and argument helpers; see pw_out.h. */
#include "pw_out.h"
#include "pw_json.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


char *
pw_out_us(char *buf, size_t len, double us)
{
    /* Four significant figures or so, in the unit that keeps the integer
     * part under 1000: enough to read a 1 % difference. */
    double a = fabs(us);
    if (!isfinite(us))
        snprintf(buf, len, "-");
    else if (a == 0.0)
        snprintf(buf, len, "0");
    else if (a < 1e-3)      /* below 1 ns: %.2f would print a false 0 */
        snprintf(buf, len, "%.3g ns", us * 1e3);
    else if (a < 0.1)
        snprintf(buf, len, "%.2f ns", us * 1e3);
    else if (a < 1.0)
        snprintf(buf, len, "%.1f ns", us * 1e3);
    else if (a < 10.0)
        snprintf(buf, len, "%.3f µs", us);
    else if (a < 1000.0)
        snprintf(buf, len, "%.1f µs", us);
    else if (a < 1e6)
        snprintf(buf, len, "%.3f ms", us / 1e3);
    else if (a < 1e15)
        snprintf(buf, len, "%.3f s", us / 1e6);
    else                    /* beyond 31 years: no screenful of digits */
        snprintf(buf, len, "%.4g s", us / 1e6);
    return buf;
}

char *
pw_out_bench_metric(char *buf, size_t len, const char *bench,
                    const char *metric)
{
    bool wall = !metric || strcmp(metric, "wall") == 0;
    snprintf(buf, len, "%s%s%s%s", bench, wall ? "" : " (",
             wall ? "" : metric, wall ? "" : ")");
    return buf;
}

char *
pw_out_kib(char *buf, size_t len, double kib)
{
    if (!isfinite(kib))
        snprintf(buf, len, "-");
    else if (kib >= 10240)
        snprintf(buf, len, "%.1f MiB", kib / 1024);
    else
        snprintf(buf, len, "%.0f KiB", kib);
    return buf;
}

char *
pw_out_ratio(char *buf, size_t len, double x)
{
    double a = fabs(x);
    if (a == 0.0 || (a >= 1e-3 && a < 1e4))
        snprintf(buf, len, "%.4f", x);
    else                    /* 0.0000 would hide a ratio of 1e-5 */
        snprintf(buf, len, "%.4g", x);
    return buf;
}

size_t
pw_out_utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F
                                                                   : 0xBF;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F
                                                                   : 0xBF;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 &&
               (s[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

/* ---- tables ---------------------------------------------------------- */

struct pw_out_table {
    unsigned left;  /* bit c: column c is left-aligned */
    size_t cols;
    size_t rows;
    size_t cap;
    char **cells;   /* rows * cols copies, each its own allocation */
};

static const char *
s_cell(const pw_out_table_t *t, size_t r, size_t c)
{
    return t->cells[r * t->cols + c];
}

pw_out_table_t *
pw_out_table_new(size_t cols)
{
    pw_out_table_t *t;
    if (cols == 0 || cols > PW_OUT_TABLE_COLS || !(t = calloc(1, sizeof *t)))
        return NULL;
    t->cols = cols;
    t->left = 1u;
    return t;
}

void
pw_out_table_left(pw_out_table_t *t, size_t col)
{
    if (col < t->cols)
        t->left |= 1u << col;
}

void
pw_out_table_destroy(pw_out_table_t **t)
{
    if (!t || !*t)
        return;
    for (size_t i = 0; i < (*t)->rows * (*t)->cols; i++)
        free((*t)->cells[i]);
    free((*t)->cells);
    free(*t);
    *t = NULL;
}

int
pw_out_table_add(pw_out_table_t *t, const char *const *cells)
{
    char **row;
    if (t->rows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        char **nc;
        if (cap > PW_OUT_TABLE_ROWS)
            cap = PW_OUT_TABLE_ROWS;
        if (t->rows == cap ||
            !(nc = realloc(t->cells, cap * t->cols * sizeof *nc)))
            return -1;
        t->cells = nc;
        t->cap = cap;
    }
    row = t->cells + t->rows * t->cols;
    for (size_t c = 0; c < t->cols; c++)
        if (!(row[c] = strdup(cells[c] ? cells[c] : ""))) {
            while (c--)
                free(row[c]);
            return -1;
        }
    t->rows++;
    return 0;
}

/* Display width of UTF-8 text: code points, not bytes ("µs" is 2). */
static size_t
s_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

int
pw_out_table_print(const pw_out_table_t *t, FILE *f)
{
    size_t width[PW_OUT_TABLE_COLS] = {0};

    for (size_t r = 0; r < t->rows; r++)
        for (size_t c = 0; c < t->cols; c++) {
            size_t w = s_width(s_cell(t, r, c));
            if (w > width[c])
                width[c] = w;
        }
    for (size_t r = 0; r < t->rows; r++) {
        /* Empty cells at the end of a row print nothing, not a run of
         * trailing spaces (the gbench table's empty notes). */
        size_t used = t->cols;
        while (used > 1 && !*s_cell(t, r, used - 1))
            used--;
        for (size_t c = 0; c < used; c++) {
            const char *cell = s_cell(t, r, c);
            size_t pad = width[c] - s_width(cell);
            if (c)
                fputs("  ", f);
            if (t->left & (1u << c)) {
                fputs(cell, f);
                if (c + 1 < used)
                    fprintf(f, "%*s", (int)pad, "");
            } else {
                fprintf(f, "%*s%s", (int)pad, "", cell);
            }
        }
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

/* ---- verdicts -------------------------------------------------------- */

int
pw_out_arms(FILE *f, const char *const *names, const vd_summary_t *sums,
            size_t count)
{
    static const char *const head[] = {"arm", "n", "min", "median", "max",
                                       "IQR"};
    pw_out_table_t *t = pw_out_table_new(6);
    char n[32], mn[40], md[40], mx[40], iqr[40];
    int rc = -1;

    if (!t || pw_out_table_add(t, head))
        goto done;
    for (size_t i = 0; i < count; i++) {
        const char *row[6] = {names[i], n, mn, md, mx, iqr};
        snprintf(n, sizeof n, "%zu", sums[i].n);
        pw_out_us(mn, sizeof mn, sums[i].min);
        pw_out_us(md, sizeof md, sums[i].median);
        pw_out_us(mx, sizeof mx, sums[i].max);
        pw_out_us(iqr, sizeof iqr, sums[i].iqr);
        if (pw_out_table_add(t, row))
            goto done;
    }
    rc = pw_out_table_print(t, f);
done:
    pw_out_table_destroy(&t);
    return rc;
}

int
pw_out_verdict(FILE *f, const char *subject, const char *other,
               const vd_verdict_t *v)
{
    return pw_out_metric_verdict(f, NULL, subject, other, v);
}

int
pw_out_metric_verdict(FILE *f, const char *metric, const char *subject,
                      const char *other, const vd_verdict_t *v)
{
    char floor[40];
    bool kib = metric && strcmp(metric, "peak_rss") == 0;

    fprintf(f, "verdict%s%s%s: %s vs %s: %s\n", metric ? " (" : "",
            metric ? metric : "", metric ? ")" : "", subject, other,
            vd_outcome_name(v->outcome));
    char r[32], t[32], n[32], br[32], bt[32];

    pw_out_ratio(r, sizeof r, v->ratio);
    pw_out_ratio(t, sizeof t, v->tolerance);
    pw_out_ratio(n, sizeof n, v->noise);
    pw_out_ratio(br, sizeof br, v->best_ratio);
    pw_out_ratio(bt, sizeof bt, v->best_tolerance);
    fprintf(f, "  ratio       %s  tolerance       %s  (noise %s)\n", r, t, n);
    fprintf(f, "  best_ratio  %s  best_tolerance  %s\n", br, bt);
    if (kib)
        snprintf(floor, sizeof floor, "%.0f KiB", v->floor_us);
    fprintf(f, "  floor %s, parity %.4g\n", kib ? floor :
            pw_out_us(floor, sizeof floor, v->floor_us), v->parity);
    for (unsigned i = 0; i < 32; i++) {
        const char *text = vd_diag_text(1u << i);
        /* Another metric's default floor is its resolution (vd_metric). */
        if (metric && (1u << i) == VD_DIAG_DEFAULT_FLOOR)
            text = "no calibration of 100 runs or more of this metric: its "
                   "resolution was the floor";
        if ((v->diagnostics & (1u << i)) && text)
            fprintf(f, "  note: %s\n", text);
    }
    if (v->extra_runs)
        fprintf(f, "  note: about %u more run%s a side would be worth "
                "taking\n", v->extra_runs, v->extra_runs == 1 ? "" : "s");
    return ferror(f) ? -1 : 0;
}

int
pw_out_json(FILE *f, const json_t *j)
{
    char *text = pw_json_dumps(j);
    int rc = -1;
    if (text && fputs(text, f) >= 0 && fputc('\n', f) != EOF)
        rc = 0;
    free(text);
    return rc;
}

void
pw_out_csv_field(FILE *f, const char *s, bool last)
{
    if (strpbrk(s, ",\"\n")) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputc(last ? '\n' : ',', f);
}

char *
pw_out_number(char *buf, size_t len, double x)
{
    if (len == 0)
        return buf;
    buf[0] = '\0';
    if (!isfinite(x))
        return buf;
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    return buf;
}

char *
pw_out_json_number(char *buf, size_t len, const json_t *o, const char *key)
{
    const json_t *x = json_object_get(o, key);
    if (json_is_number(x))
        return pw_out_number(buf, len, json_number_value(x));
    if (len)
        buf[0] = '\0';
    return buf;
}

/* ---- the collector's answers --------------------------------------- */

const char *
pw_out_str(const json_t *o, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && *s ? s : dflt;
}

char *
pw_out_confirm(char *buf, size_t len, const json_t *k)
{
    const char *state = pw_out_str(k, "state", "?");
    json_int_t id = json_integer_value(json_object_get(k, "id"));
    if (len)
        buf[0] = '\0';
    if (!json_is_object(k) || len == 0)
        return buf;
    if (strcmp(state, "not possible") == 0)
        snprintf(buf, len, "not confirmed: %s", pw_out_str(k, "reason", "?"));
    else if (strcmp(state, "failed") == 0)
        snprintf(buf, len, "confirm %" JSON_INTEGER_FORMAT " failed: %s", id,
                 pw_out_str(k, "reason", "?"));
    else if (strcmp(state, "confirmed") == 0 ||
             strcmp(state, "not reproduced") == 0)
        snprintf(buf, len, "confirm %" JSON_INTEGER_FORMAT " %s: %"
                 JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " host%s "
                 "see%s the step again, %s against %s in one job", id, state,
                 json_integer_value(json_object_get(k, "confirmed")),
                 json_integer_value(json_object_get(k, "measured")),
                 json_integer_value(json_object_get(k, "measured")) == 1 ?
                 "" : "s", json_integer_value(json_object_get(
                     k, "confirmed")) == 1 ? "s" : "",
                 pw_out_str(k, "after", "?"), pw_out_str(k, "before", "?"));
    else
        snprintf(buf, len, "confirm %" JSON_INTEGER_FORMAT " %s: %s against "
                 "%s", id, state, pw_out_str(k, "after", "?"),
                 pw_out_str(k, "before", "?"));
    return buf;
}

char *
pw_out_pairs(char *buf, size_t len, const json_t *obj, const char *empty)
{
    const char *k;
    json_t *v;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    json_object_foreach((json_t *)obj, k, v) {
        size_t used = strlen(buf);
        if (used + 1 >= len)
            break;
        snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "", k,
                 json_string_value(v) ? json_string_value(v) : "");
    }
    if (!buf[0])
        snprintf(buf, len, "%s", empty);
    return buf;
}

void
pw_out_xml(FILE *f, const char *s, bool one_line)
{
    /* Plain text between the characters that need an entity is written
     * in one piece: a character at a time was a twentieth of a site's
     * writing. */
    const char *plain = s;
    for (; s && *s; s++) {
        const char *e;
        switch (*s) {
        case '&': e = "&amp;"; break;
        case '<': e = "&lt;"; break;
        case '>': e = "&gt;"; break;
        case '"': e = "&quot;"; break;
        case '\'': e = "&#39;"; break;
        case '\n': case '\r':
            if (!one_line)
                continue;
            e = " ";
            break;
        default:
            /* Other control bytes are not XML at all (a feed reader
             * would refuse the file). */
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                continue;
            e = "?";
        }
        fwrite(plain, 1, (size_t)(s - plain), f);
        fputs(e, f);
        plain = s + 1;
    }
    if (s && s > plain)
        fwrite(plain, 1, (size_t)(s - plain), f);
}

void
pw_out_xmlf(FILE *f, bool one_line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    for (const char *p = fmt; *p; p++) {
        const char *pct = strchr(p, '%');
        if (!pct) {
            fputs(p, f);
            break;
        }
        fwrite(p, 1, (size_t)(pct - p), f);
        if (pct[1] == 's')
            pw_out_xml(f, va_arg(ap, const char *), one_line);
        else if (pct[1] == '%')
            fputc('%', f);
        else
            break;        /* not a conversion of ours: stop there */
        p = pct + 1;
    }
    va_end(ap);
}

char *
pw_out_bisect(char *buf, size_t len, const json_t *b)
{
    const json_t *cs = json_object_get(b, "culprits");
    const char *state = pw_out_str(b, "state", "?");
    size_t i;
    json_t *c;
    int at;
    if (len)
        buf[0] = '\0';
    if (!json_is_object(b) || len == 0)
        return buf;
    at = snprintf(buf, len, "bisect %" JSON_INTEGER_FORMAT " ",
                  json_integer_value(json_object_get(b, "id")));
    if (strcmp(state, "done") == 0 && json_array_size(cs) > 0)
        at += snprintf(buf + at, len - (size_t)at, "found %s",
                       json_array_size(cs) > 1 ? "a step spread over " : "");
    else if (strcmp(state, "failed") == 0)
        at += snprintf(buf + at, len - (size_t)at, "failed: %s",
                       pw_out_str(b, "reason", "?"));
    else
        at += snprintf(buf + at, len - (size_t)at, "%s", state);
    json_array_foreach(cs, i, c)
        if (at > 0 && (size_t)at < len)
            at += snprintf(buf + at, len - (size_t)at, "%s%s", i ? ", " : "",
                           json_string_value(c) ? json_string_value(c) : "?");
    return buf;
}

char *
pw_out_time(char *buf, size_t len, json_int_t us, pw_out_time_form_t form)
{
    time_t t = (time_t)(us / 1000000);
    struct tm tm;
    size_t n = 0;
    if (us > 0 && gmtime_r(&t, &tm)) {
        if (form == PW_OUT_TIME_PAGE)
            n = strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm);
        else if (form == PW_OUT_TIME_PLOT)
            n = strftime(buf, len, "%Y-%m-%d %H:%M", &tm);
        else
            n = strftime(buf, len, "%Y-%m-%d %H:%M:%SZ", &tm);
    }
    if (n == 0)
        snprintf(buf, len, "-");
    return buf;
}

const json_t *
pw_out_named(const json_t *o, const char *list, const char *key,
             const char *value)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(o, list), i, e)
        if (strcmp(pw_out_str(e, key, ""), value) == 0)
            return e;
    return NULL;
}

const json_t *
pw_out_entry(const json_t *cmp, const char *host)
{
    return pw_out_named(cmp, "hosts", "host", host);
}

char *
pw_out_floor(char *buf, size_t len, const json_t *host,
             const char *dflt_note)
{
    const json_t *fu = json_object_get(host, "floor_us");
    char us[32];
    if (!json_is_number(fu))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%s%s", pw_out_us(us, sizeof us,
                                             json_number_value(fu)),
                 json_is_true(json_object_get(host, "floor_default")) ?
                 dflt_note : "");
    return buf;
}

char *
pw_out_kernel(char *buf, size_t len, const json_t *host)
{
    const char *k = pw_out_str(host, "kernel", "-");
    const char *sp = strchr(k, ' ');
    if (sp && sp[1] && sp[1] != ' ')
        k = sp + 1;
    snprintf(buf, len, "%.*s", (int)strcspn(k, " "), k);
    return buf;
}
