/* co_svg.c -- the history plot of one series (co_svg.h).
 *
 * Geometry is fixed and in SVG user units; the browser scales the whole
 * plot (viewBox, width 100 %), so no coordinate depends on the page. The
 * x axis is the run's position, not its time: runs of one commit a day
 * apart and a burst of runs in an hour get the same room. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "co_svg.h"

#include "pw_out.h"

#define S_W     960.0
#define S_ML    96.0    /* left margin: the y axis' labels */
#define S_MR    16.0
#define S_PT0   34.0    /* times panel, top and bottom */
#define S_PT1   234.0
#define S_PR0   262.0   /* ratio panel */
#define S_PR1   342.0
#define S_H     372.0
#define S_SUBJECT_COLOUR "#1565c0"
#define S_OTHER_COLOUR   "#8e24aa"
#define S_ANN_COLOUR     "#ef6c00"
/* Hover text of one run: time, ids, tags and both arms' numbers. */
#define S_HOVER_MAX 1536

typedef struct {
    const json_t *runs;   /* the series' runs, borrowed */
    size_t first;         /* index of the first run drawn */
    size_t n;             /* runs drawn */
    double lo, hi;        /* value axis: µs, KiB for peak_rss */
    double lw;            /* ratio axis half-width, natural log */
    bool kib;             /* the series' metric is peak_rss */
} s_plot_t;

/* A value of the series' metric for a reader: a time, or a memory size
 * for peak_rss (docs/verdict.md "Metrics"). */
static char *
s_value(char *buf, size_t len, bool kib, double v)
{
    return kib ? pw_out_kib(buf, len, v) : pw_out_us(buf, len, v);
}

static bool
s_is_kib(const json_t *series)
{
    return strcmp(pw_out_str(series, "metric", "wall"), "peak_rss") == 0;
}

const char *
co_svg_outcome_class(const char *outcome)
{
    if (outcome && (strcmp(outcome, "win") == 0 ||
                    strcmp(outcome, "loss") == 0 ||
                    strcmp(outcome, "parity") == 0))
        return outcome;
    return "none";
}

const char *
co_svg_outcome_colour(const char *outcome)
{
    if (outcome && strcmp(outcome, "win") == 0)
        return "#2e7d32";
    if (outcome && strcmp(outcome, "loss") == 0)
        return "#c62828";
    if (outcome && strcmp(outcome, "parity") == 0)
        return "#757575";
    return "#bdbdbd";
}

void
co_svg_text(FILE *f, const char *s)
{
    pw_out_xml(f, s, true);
}

/* x with one decimal, as "%.1f" writes it, without printf's exact
 * decimal conversion (a sixth of the client's time writing a site: 26
 * numbers per run drawn): x * 10 rounded half away from zero, which
 * differs from printf only in the last digit of an exact tie, a tenth
 * of a user unit of a 960-unit plot. */
static void
s_num1(FILE *f, double x)
{
    char buf[32], *p = buf + sizeof buf;
    if (!isfinite(x) || fabs(x) > 1e15) {
        fprintf(f, "%.1f", x);
        return;
    }
    long long v = llround(x * 10);
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v
                                 : (unsigned long long)v;
    *--p = (char)('0' + u % 10);
    u /= 10;
    *--p = '.';
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    fwrite(p, 1, (size_t)(buf + sizeof buf - p), f);
}

/* "x,y " of a polygon's or polyline's points. */
static void
s_pair(FILE *f, double x, double y)
{
    s_num1(f, x);
    fputc(',', f);
    s_num1(f, y);
    fputc(' ', f);
}

static double
s_x(const s_plot_t *p, double i)
{
    return S_ML + (i + 0.5) * (S_W - S_ML - S_MR) / (double)p->n;
}

/* The x of the boundary before drawn run i (a change point's place). */
static double
s_xb(const s_plot_t *p, double i)
{
    return S_ML + i * (S_W - S_ML - S_MR) / (double)p->n;
}

static double
s_y(const s_plot_t *p, double us)
{
    return S_PT1 - (us - p->lo) / (p->hi - p->lo) * (S_PT1 - S_PT0);
}

static double
s_yr(const s_plot_t *p, double ratio)
{
    return (S_PR0 + S_PR1) / 2 - log(ratio) / p->lw * (S_PR1 - S_PR0) / 2;
}

static const json_t *
s_run(const s_plot_t *p, size_t i)
{
    return json_array_get(p->runs, p->first + i);
}

static double
s_num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

/* Axis ranges over the drawn runs: times from every min and max, the
 * ratio's half-width from every ratio and tolerance (at least 5 %). */
static void
s_ranges(s_plot_t *p)
{
    bool any = false;
    p->lw = log(1.05);
    for (size_t i = 0; i < p->n; i++) {
        const json_t *r = s_run(p, i);
        static const char *const arm[] = { "subject", "other" };
        for (size_t a = 0; a < 2; a++) {
            const json_t *s = json_object_get(r, arm[a]);
            if (!json_is_object(s))
                continue;
            double mn = s_num(s, "min"), mx = s_num(s, "max");
            p->lo = any && p->lo < mn ? p->lo : mn;
            p->hi = any && p->hi > mx ? p->hi : mx;
            any = true;
        }
        double ratio = s_num(r, "ratio"), t = s_num(r, "tolerance");
        if (ratio > 0 && isfinite(ratio) && fabs(log(ratio)) * 1.2 > p->lw)
            p->lw = fabs(log(ratio)) * 1.2;
        if (t > 0 && isfinite(t) && log(1 + t) * 1.2 > p->lw)
            p->lw = log(1 + t) * 1.2;
    }
    if (!(p->hi > p->lo))
        p->hi = p->lo + (p->lo > 0 ? p->lo * 0.01 : 1);
    double pad = (p->hi - p->lo) * 0.05;
    p->lo -= pad;
    p->hi += pad;
}

static void
s_arm_text(char *buf, size_t len, const char *name, const json_t *s,
           bool kib)
{
    char md[32], mn[32], mx[32];
    if (!json_is_object(s)) {
        snprintf(buf, len, "%s: no samples", name);
        return;
    }
    s_value(md, sizeof md, kib, s_num(s, "median"));
    s_value(mn, sizeof mn, kib, s_num(s, "min"));
    s_value(mx, sizeof mx, kib, s_num(s, "max"));
    snprintf(buf, len, "%s median %s (min %s, max %s, n %" JSON_INTEGER_FORMAT
             ")", name, md, mn, mx, json_integer_value(json_object_get(s,
                                                                       "n")));
}

/* The hover text of run r: when, which run and job, its tags, both arms
 * and its verdict. */
static void
s_hover(char *buf, size_t len, const json_t *series, const json_t *r)
{
    char when[32], tags[512], sub[256], oth[256], ver[128];
    pw_out_time(when, sizeof when,
                json_integer_value(json_object_get(r, "time_us")),
                PW_OUT_TIME_PLOT);
    pw_out_pairs(tags, sizeof tags, json_object_get(r, "tags"), "no tags");
    s_arm_text(sub, sizeof sub, pw_out_str(series, "subject", "subject"),
               json_object_get(r, "subject"), s_is_kib(series));
    s_arm_text(oth, sizeof oth, pw_out_str(series, "other", "other"),
               json_object_get(r, "other"), s_is_kib(series));
    if (json_is_number(json_object_get(r, "ratio")))
        snprintf(ver, sizeof ver, "ratio %.4f (tolerance %.4f): %s",
                 s_num(r, "ratio"), s_num(r, "tolerance"),
                 pw_out_str(r, "outcome", "no verdict"));
    else
        snprintf(ver, sizeof ver, "no verdict");
    snprintf(buf, len, "%s, run %s%s%s; %s; %s; %s; %s", when,
             pw_out_str(r, "run", "?"),
             *pw_out_str(r, "job", "") ? ", job " : "",
             pw_out_str(r, "job", ""), tags, sub, oth, ver);
}

/* One arm's band (min-max), median line and points. */
static void
s_arm(FILE *f, const s_plot_t *p, const char *arm, const char *colour)
{
    size_t i;
    fprintf(f, "<g class=\"series-arm %s\" pointer-events=\"none\">", arm);
    fprintf(f, "<polygon class=\"band %s\" fill=\"%s\" fill-opacity=\"0.15\""
            " stroke=\"none\" points=\"", arm, colour);
    for (i = 0; i < p->n; i++) {
        const json_t *s = json_object_get(s_run(p, i), arm);
        if (json_is_object(s))
            s_pair(f, s_x(p, (double)i), s_y(p, s_num(s, "max")));
    }
    for (i = p->n; i-- > 0;) {
        const json_t *s = json_object_get(s_run(p, i), arm);
        if (json_is_object(s))
            s_pair(f, s_x(p, (double)i), s_y(p, s_num(s, "min")));
    }
    fprintf(f, "\"/>\n<polyline class=\"median %s\" fill=\"none\" "
            "stroke=\"%s\" stroke-width=\"1.5\" points=\"", arm, colour);
    for (i = 0; i < p->n; i++) {
        const json_t *s = json_object_get(s_run(p, i), arm);
        if (json_is_object(s))
            s_pair(f, s_x(p, (double)i), s_y(p, s_num(s, "median")));
    }
    fputs("\"/>\n", f);
    for (i = 0; i < p->n; i++) {
        const json_t *s = json_object_get(s_run(p, i), arm);
        if (json_is_object(s)) {
            fprintf(f, "<circle class=\"pt %s\" cx=\"", arm);
            s_num1(f, s_x(p, (double)i));
            fputs("\" cy=\"", f);
            s_num1(f, s_y(p, s_num(s, "median")));
            fprintf(f, "\" r=\"3\" fill=\"%s\"/>\n", colour);
        }
    }
    fputs("</g>\n", f);
}

/* The ratio panel: each run's tolerance band around 1, the line at 1,
 * a point per run with a ratio, coloured by its outcome. */
static void
s_ratio(FILE *f, const s_plot_t *p)
{
    size_t i;
    fprintf(f, "<g class=\"series-ratio\" pointer-events=\"none\">"
            "<polygon class=\"tol\" "
            "fill=\"#e0e0e0\" stroke=\"none\" points=\"");
    for (i = 0; i < p->n; i++) {
        const json_t *t = json_object_get(s_run(p, i), "tolerance");
        if (json_is_number(t) && json_number_value(t) >= 0)
            s_pair(f, s_x(p, (double)i), s_yr(p, 1 + json_number_value(t)));
    }
    for (i = p->n; i-- > 0;) {
        const json_t *t = json_object_get(s_run(p, i), "tolerance");
        if (json_is_number(t) && json_number_value(t) >= 0)
            s_pair(f, s_x(p, (double)i),
                   s_yr(p, 1 / (1 + json_number_value(t))));
    }
    fprintf(f, "\"/>\n<line class=\"one\" x1=\"%.1f\" x2=\"%.1f\" "
            "y1=\"%.1f\" y2=\"%.1f\" stroke=\"#616161\" "
            "stroke-dasharray=\"3 2\"/>\n", S_ML, S_W - S_MR, s_yr(p, 1),
            s_yr(p, 1));
    for (i = 0; i < p->n; i++) {
        const json_t *r = s_run(p, i);
        double ratio = s_num(r, "ratio");
        if (!json_is_number(json_object_get(r, "ratio")) || !(ratio > 0) ||
            !isfinite(ratio))
            continue;
        const char *o = pw_out_str(r, "outcome", "none");
        fprintf(f, "<circle class=\"pt ratio %s\" cx=\"", o);
        s_num1(f, s_x(p, (double)i));
        fputs("\" cy=\"", f);
        s_num1(f, s_yr(p, ratio));
        fprintf(f, "\" r=\"3.5\" fill=\"%s\"/>\n",
                co_svg_outcome_colour(o));
    }
    fputs("</g>\n", f);
}

/* One column per run under the points, the height of both panels, that
 * holds the run's hover text: hovering anywhere in it, a point or not,
 * tells the run (the points ignore the pointer). Its text once per run,
 * not per point, keeps a 200-run plot about 150 KB. */
static void
s_hits(FILE *f, const s_plot_t *p, const json_t *series)
{
    double w = (S_W - S_ML - S_MR) / (double)p->n;
    char tail[160];
    snprintf(tail, sizeof tail, "\" y=\"%.1f\" width=\"%.2f\" "
             "height=\"%.1f\" fill=\"none\" pointer-events=\"all\"><title>",
             S_PT0, w, S_PR1 - S_PT0);
    fputs("<g class=\"hits\">", f);
    for (size_t i = 0; i < p->n; i++) {
        char hover[S_HOVER_MAX];
        s_hover(hover, sizeof hover, series, s_run(p, i));
        fputs("<rect class=\"hit\" x=\"", f);
        s_num1(f, s_xb(p, (double)i));
        fputs(tail, f);
        co_svg_text(f, hover);
        fputs("</title></rect>\n", f);
    }
    fputs("</g>\n", f);
}

/* Change points and annotations: a vertical line at the boundary before
 * the run they name, when that run is drawn. */
static void
s_marks(FILE *f, const s_plot_t *p, const json_t *series)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(series, "annotations"), i, m) {
        json_int_t at = json_integer_value(json_object_get(m, "index"));
        if (at < (json_int_t)p->first || at >= (json_int_t)(p->first + p->n))
            continue;
        double x = s_xb(p, (double)(at - (json_int_t)p->first));
        fprintf(f, "<g class=\"ann-mark\"><title>");
        co_svg_text(f, pw_out_str(m, "kind", "change"));
        fputs(" change: ", f);
        co_svg_text(f, pw_out_str(m, "text", ""));
        fprintf(f, "</title><line class=\"ann %s\" x1=\"%.1f\" x2=\"%.1f\" "
                "y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\" "
                "stroke-dasharray=\"1 3\"/><polygon points=\"%.1f,%.1f "
                "%.1f,%.1f %.1f,%.1f\" fill=\"%s\"/></g>\n",
                pw_out_str(m, "kind", "change"), x, x, S_PT0, S_PR1,
                S_ANN_COLOUR,
                x - 5, S_PT0 - 8, x + 5, S_PT0 - 8, x, S_PT0, S_ANN_COLOUR);
    }
    json_array_foreach(json_object_get(series, "change_points"), i, m) {
        json_int_t at = json_integer_value(json_object_get(m, "index"));
        if (at < (json_int_t)p->first || at >= (json_int_t)(p->first + p->n))
            continue;
        double x = s_xb(p, (double)(at - (json_int_t)p->first));
        const char *o = pw_out_str(m, "outcome", "none");
        bool noise = json_is_true(json_object_get(m, "within_noise"));
        char before[512], after[512];
        const json_t *run_before = json_array_get(p->runs,
                                                  (size_t)at - (at > 0));
        const json_t *run_after = json_array_get(p->runs, (size_t)at);
        pw_out_pairs(before, sizeof before,
                     json_object_get(run_before, "tags"), "no tags");
        pw_out_pairs(after, sizeof after, json_object_get(run_after, "tags"),
                     "no tags");
        fprintf(f, "<g class=\"cp-mark\"><title>change point %"
                JSON_INTEGER_FORMAT " (%s x%.4f): %s%s; before: ",
                json_integer_value(json_object_get(m, "id")),
                pw_out_str(m, "metric", "ratio"), s_num(m, "magnitude"), o,
                noise ? ", within noise" : "");
        co_svg_text(f, before);
        fputs("; after: ", f);
        co_svg_text(f, after);
        fprintf(f, "</title><line class=\"cp %s%s\" x1=\"%.1f\" x2=\"%.1f\" "
                "y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>"
                "</g>\n", o, noise ? " noise" : "", x, x, S_PT0, S_PR1,
                co_svg_outcome_colour(o),
                noise ? " stroke-dasharray=\"5 4\"" : "");
    }
}

static void
s_axes(FILE *f, const s_plot_t *p)
{
    char lo[32], mid[32], hi[32], d0[32], d1[32];
    s_value(lo, sizeof lo, p->kib, p->lo);
    s_value(mid, sizeof mid, p->kib, (p->lo + p->hi) / 2);
    s_value(hi, sizeof hi, p->kib, p->hi);
    fprintf(f, "<g class=\"axis\" font-size=\"11\" fill=\"#555\" "
            "text-anchor=\"end\">"
            "<text x=\"%.1f\" y=\"%.1f\">%s</text>"
            "<text x=\"%.1f\" y=\"%.1f\">%s</text>"
            "<text x=\"%.1f\" y=\"%.1f\">%s</text>"
            "<text x=\"%.1f\" y=\"%.1f\">%.3f</text>"
            "<text x=\"%.1f\" y=\"%.1f\">ratio 1</text>"
            "<text x=\"%.1f\" y=\"%.1f\">%.3f</text></g>\n",
            S_ML - 6, S_PT1, lo, S_ML - 6, (S_PT0 + S_PT1) / 2 + 4, mid,
            S_ML - 6, S_PT0 + 8, hi, S_ML - 6, S_PR0 + 8, exp(p->lw),
            S_ML - 6, (S_PR0 + S_PR1) / 2 + 4, S_ML - 6, S_PR1,
            exp(-p->lw));
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"none\" stroke=\"#bbb\"/><rect x=\"%.1f\" y=\"%.1f\" "
            "width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#bbb\"/>\n",
            S_ML, S_PT0, S_W - S_ML - S_MR, S_PT1 - S_PT0, S_ML, S_PR0,
            S_W - S_ML - S_MR, S_PR1 - S_PR0);
    pw_out_time(d0, sizeof d0,
                json_integer_value(json_object_get(s_run(p, 0), "time_us")),
                PW_OUT_TIME_PLOT);
    pw_out_time(d1, sizeof d1, json_integer_value(json_object_get(
        s_run(p, p->n - 1), "time_us")), PW_OUT_TIME_PLOT);
    fprintf(f, "<g class=\"axis\" font-size=\"11\" fill=\"#555\">"
            "<text x=\"%.1f\" y=\"%.1f\">%s</text>"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%zu run%s, "
            "oldest left</text>"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text></g>\n",
            S_ML, S_PR1 + 18, d0, (S_ML + S_W - S_MR) / 2, S_PR1 + 18, p->n,
            p->n == 1 ? "" : "s", S_W - S_MR, S_PR1 + 18, d1);
}

static void
s_legend(FILE *f, const json_t *series)
{
    fprintf(f, "<g class=\"legend\" font-size=\"12\">"
            "<rect x=\"%.1f\" y=\"8\" width=\"14\" height=\"10\" fill=\"%s\" "
            "fill-opacity=\"0.4\"/><text x=\"%.1f\" y=\"17\">",
            S_ML, S_SUBJECT_COLOUR, S_ML + 18);
    co_svg_text(f, pw_out_str(series, "subject", "subject"));
    fprintf(f, " (subject): median, min-max</text>"
            "<rect x=\"%.1f\" y=\"8\" width=\"14\" height=\"10\" fill=\"%s\" "
            "fill-opacity=\"0.4\"/><text x=\"%.1f\" y=\"17\">",
            S_ML + 330, S_OTHER_COLOUR, S_ML + 348);
    co_svg_text(f, pw_out_str(series, "other", "other"));
    fprintf(f, "</text><text x=\"%.1f\" y=\"17\" text-anchor=\"end\" "
            "fill=\"#555\">solid line: change point; dotted: environment "
            "change</text></g>\n", S_W - S_MR);
}

int
co_svg_history(FILE *f, const json_t *series, size_t max_points,
               size_t *shown)
{
    s_plot_t p = { .runs = json_object_get(series, "runs"),
                   .kib = s_is_kib(series) };
    size_t total = json_array_size(p.runs);
    if (max_points == 0 || max_points > CO_SVG_MAX_POINTS)
        max_points = CO_SVG_MAX_POINTS;
    p.n = total < max_points ? total : max_points;
    p.first = total - p.n;
    if (shown)
        *shown = p.n;
    fprintf(f, "<svg class=\"history\" data-runs=\"%zu\" data-shown=\"%zu\" "
            "viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" "
            "preserveAspectRatio=\"xMinYMin meet\" role=\"img\" "
            "font-family=\"sans-serif\">\n", total, p.n, S_W, S_H);
    if (p.n == 0) {
        fputs("<text x=\"10\" y=\"30\">no runs</text></svg>\n", f);
        return ferror(f) ? -1 : 0;
    }
    s_ranges(&p);
    s_legend(f, series);
    s_axes(f, &p);
    s_hits(f, &p, series);
    s_arm(f, &p, "other", S_OTHER_COLOUR);
    s_arm(f, &p, "subject", S_SUBJECT_COLOUR);
    s_ratio(f, &p);
    s_marks(f, &p, series);
    fputs("</svg>\n", f);
    return ferror(f) ? -1 : 0;
}
