/* co_boxplot.c -- a run's box plot as inline SVG (co_boxplot.h). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "co_boxplot.h"
#include "co_svg.h"
#include "pw_out.h"

/* Geometry of a box plot, in SVG user units: names left of S_BOX_X0, the
 * values between S_BOX_X0 and S_BOX_X1, a ratio's value right of it. */
#define S_BOX_W      780
#define S_BOX_X0     170.0
#define S_BOX_X1     680.0
#define S_BOX_ROW    24.0
#define S_BOX_TOP    24.0
#define S_BOX_AXIS   18.0
/* Longest arm name shown beside its box (the hover text has it whole). */
#define S_BOX_LABEL  24

/* At most max characters of s (whole UTF-8 sequences), "…" when cut. */
static void
s_label(char *buf, size_t len, const char *s, size_t max)
{
    size_t at = 0, chars = 0;
    while (s[at] && chars < max) {
        size_t l = pw_out_utf8_len((const unsigned char *)s + at);
        at += l ? l : 1;
        chars++;
    }
    snprintf(buf, len, "%.*s%s", (int)at, s, s[at] ? "\u2026" : "");
}

static double
s_box_x(double v, double lo, double hi)
{
    return S_BOX_X0 + (v - lo) / (hi - lo) * (S_BOX_X1 - S_BOX_X0);
}

static void
s_box_arm(FILE *f, const co_boxplot_arm_t *a, double y, double lo, double hi)
{
    char label[128], v[5][32];
    s_label(label, sizeof label, a->name ? a->name : "?", S_BOX_LABEL);
    fprintf(f, "<g class=\"arm %s\"><title>", a->subject ? "subject" :
            "other");
    co_svg_text(f, a->name ? a->name : "?");
    if (!a->has_summary) {
        fputs(a->subject ? " (subject)" : "", f);
        fputs(": no measured samples</title>", f);
    } else {
        pw_out_us(v[0], sizeof v[0], a->min_us);
        pw_out_us(v[1], sizeof v[1], a->q25_us);
        pw_out_us(v[2], sizeof v[2], a->median_us);
        pw_out_us(v[3], sizeof v[3], a->q75_us);
        pw_out_us(v[4], sizeof v[4], a->max_us);
        fprintf(f, "%s: n %ld, min %s, q25 %s, median %s, q75 %s, max %s"
                "</title>", a->subject ? " (subject)" : "", a->n, v[0],
                v[1], v[2], v[3], v[4]);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
            "font-size=\"12\">", S_BOX_X0 - 8, y + 4);
    co_svg_text(f, label);
    fputs("</text>", f);
    if (!a->has_summary) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
                "fill=\"#777\">no samples</text></g>\n", S_BOX_X0, y + 4);
        return;
    }
    const char *fill = a->subject ? "#bbdefb" : "#e1bee7";
    double xq25 = s_box_x(a->q25_us, lo, hi), xq75 = s_box_x(a->q75_us, lo,
                                                              hi);
    fprintf(f, "<line class=\"whisker\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
            "y2=\"%.1f\" stroke=\"#555\"/>", s_box_x(a->min_us, lo, hi),
            s_box_x(a->max_us, lo, hi), y, y);
    fprintf(f, "<rect class=\"iqr\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
            "height=\"16\" fill=\"%s\" stroke=\"#37474f\"/>", xq25, y - 8,
            xq75 - xq25 > 1 ? xq75 - xq25 : 1, fill);
    fprintf(f, "<line class=\"median\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
            "y2=\"%.1f\" stroke=\"#000\" stroke-width=\"2\"/></g>\n",
            s_box_x(a->median_us, lo, hi), s_box_x(a->median_us, lo, hi),
            y - 8, y + 8);
}

/* A ratio on a log axis centred on 1, half-width lw (natural log). */
static double
s_ratio_x(double r, double lw)
{
    double mid = (S_BOX_X0 + S_BOX_X1) / 2;
    return mid + log(r) / lw * (S_BOX_X1 - S_BOX_X0) / 2;
}

static void
s_box_ratio(FILE *f, const co_boxplot_ratio_t *r, double y, double lw)
{
    char label[128], other[96];
    s_label(other, sizeof other, r->other ? r->other : "?", S_BOX_LABEL - 3);
    snprintf(label, sizeof label, "vs %s", other);
    const char *cls = co_svg_outcome_class(r->outcome);
    double t = r->tolerance;
    fprintf(f, "<g class=\"ratio-row %s\"><title>ratio vs ", cls);
    co_svg_text(f, r->other ? r->other : "?");
    fprintf(f, " %.4f, tolerance %.4f (parity between %.4f and %.4f): %s"
            "</title>", r->ratio, t, 1 / (1 + t), 1 + t, cls);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
            "font-size=\"12\">", S_BOX_X0 - 8, y + 4);
    co_svg_text(f, label);
    fputs("</text>", f);
    double xlo = s_ratio_x(1 / (1 + t), lw), xhi = s_ratio_x(1 + t, lw);
    fprintf(f, "<rect class=\"tol\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
            "height=\"14\" fill=\"#e0e0e0\"/>", xlo, y - 7,
            xhi - xlo > 1 ? xhi - xlo : 1);
    fprintf(f, "<line class=\"one\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
            "y2=\"%.1f\" stroke=\"#616161\" stroke-dasharray=\"3 2\"/>",
            s_ratio_x(1, lw), s_ratio_x(1, lw), y - 10, y + 10);
    fprintf(f, "<circle class=\"ratio %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" "
            "fill=\"%s\"/>", cls, s_ratio_x(r->ratio, lw), y,
            co_svg_outcome_colour(r->outcome));
    fprintf(f, "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
            "fill=\"%s\">%.3f %s</text></g>\n", cls, S_BOX_X1 + 8, y + 4,
            co_svg_outcome_colour(r->outcome), r->ratio, cls);
}

int
co_boxplot_write(FILE *f, const char *caption, const co_boxplot_arm_t *arms,
                 size_t narms, const co_boxplot_ratio_t *ratios,
                 size_t nratios)
{
    size_t na = narms < CO_BOXPLOT_ARMS ? narms : CO_BOXPLOT_ARMS;
    size_t nr = 0;
    double lo = 0, hi = 0, lw = log(1.02);
    bool any = false;
    for (size_t i = 0; i < na; i++) {
        if (!arms[i].has_summary)
            continue;
        lo = any && lo < arms[i].min_us ? lo : arms[i].min_us;
        hi = any && hi > arms[i].max_us ? hi : arms[i].max_us;
        any = true;
    }
    if (!(hi > lo)) {
        /* One value, or none: an axis around it that still has a width. */
        hi = lo + (lo > 0 ? lo * 0.01 : 1);
    }
    double pad = (hi - lo) * 0.04;
    lo -= pad;
    hi += pad;
    /* Only ratios that can be drawn on a log axis: a verdict's. */
    for (size_t i = 0; i < nratios && nr < CO_BOXPLOT_ARMS; i++) {
        const co_boxplot_ratio_t *r = &ratios[i];
        if (!(r->ratio > 0) || !(r->tolerance >= 0) || !isfinite(r->ratio))
            continue;
        double w = fabs(log(r->ratio)) > log(1 + r->tolerance) ?
                   fabs(log(r->ratio)) : log(1 + r->tolerance);
        if (w * 1.25 > lw)
            lw = w * 1.25;
        nr++;
    }
    double h = S_BOX_TOP + S_BOX_ROW * (double)na + S_BOX_AXIS +
               S_BOX_ROW * (double)nr + 6;
    fprintf(f, "<svg class=\"boxplot\" data-arms=\"%zu\" data-ratios=\"%zu\" "
            "viewBox=\"0 0 %d %.0f\" width=\"%d\" height=\"%.0f\" "
            "role=\"img\" font-family=\"sans-serif\"><title>", na, nr,
            S_BOX_W, h, S_BOX_W, h);
    co_svg_text(f, caption ? caption : "");
    fputs("</title><text x=\"4\" y=\"15\" font-size=\"12\" "
          "font-weight=\"bold\">", f);
    co_svg_text(f, caption ? caption : "");
    if (narms > na || nratios > CO_BOXPLOT_ARMS)
        fprintf(f, " (first %d arms and ratios shown)", CO_BOXPLOT_ARMS);
    fputs("</text>\n", f);
    for (size_t i = 0; i < na; i++)
        s_box_arm(f, &arms[i], S_BOX_TOP + S_BOX_ROW * ((double)i + 0.5), lo,
                  hi);
    double ay = S_BOX_TOP + S_BOX_ROW * (double)na + 12;
    if (any) {
        char a[32], m[32], b[32];
        pw_out_us(a, sizeof a, lo);
        pw_out_us(m, sizeof m, (lo + hi) / 2);
        pw_out_us(b, sizeof b, hi);
        fprintf(f, "<g class=\"axis\" font-size=\"11\" fill=\"#555\">"
                "<text x=\"%.1f\" y=\"%.1f\">%s</text>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>"
                "</g>\n", S_BOX_X0, ay, a, (S_BOX_X0 + S_BOX_X1) / 2, ay, m,
                S_BOX_X1, ay, b);
    }
    size_t k = 0;
    for (size_t i = 0; i < nratios && k < nr; i++) {
        const co_boxplot_ratio_t *r = &ratios[i];
        if (!(r->ratio > 0) || !(r->tolerance >= 0) || !isfinite(r->ratio))
            continue;
        s_box_ratio(f, r, ay + 6 + S_BOX_ROW * ((double)k + 0.5), lw);
        k++;
    }
    fputs("</svg>\n", f);
    return ferror(f) ? -1 : 0;
}
