/* co_page.c -- the fleet's HTML pages (co_page.h). */
#include "co_page.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co_boxplot.h"
#include "co_svg.h"
#include "pw_out.h"

static const char s_css[] =
    "body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#222;"
    "max-width:84em}\n"
    "table{border-collapse:collapse;margin:0.5em 0 1em}\n"
    "th,td{border:1px solid #bbb;padding:0.2em 0.5em;text-align:left;"
    "vertical-align:top}\n"
    "th{background:#eee}\n"
    "td.win{background:#c8e6c9;color:#1b5e20}\n"
    "td.parity{background:#eeeeee;color:#424242}\n"
    "td.loss{background:#ffcdd2;color:#b71c1c}\n"
    "td.none{color:#777}\n"
    "td.online{color:#1b5e20}td.offline{color:#b71c1c;font-weight:bold}\n"
    "p.capped{color:#8d6e63;font-style:italic}\n"
    "div.plot{margin:0.3em 0 1em;overflow-x:auto}\n"
    "svg.history{max-width:960px;display:block}\n"
    "svg.history rect.hit:hover{fill:#000;fill-opacity:0.07}\n"
    "svg.boxplot{max-width:100%;height:auto;display:block}\n"
    "nav a{margin-right:1em}\n"
    "form.ack{display:inline;margin:0}\n"
    "form.note input[type=text]{width:40em;max-width:100%}\n";

/* The page's head; refresh: it reloads itself (the live overview and
 * regressions pages). */
static void
s_head(FILE *f, const char *title, const co_page_opts_t *o, bool refresh)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
          "\n<meta name=\"viewport\" content=\"width=device-width\">\n<title>",
          f);
    co_svg_text(f, title);
    fputs("</title>\n", f);
    if (refresh && o->refresh_s > 0)
        fprintf(f, "<meta http-equiv=\"refresh\" content=\"%d\">\n",
                o->refresh_s);
    fputs("<link rel=\"alternate\" type=\"application/atom+xml\" title=\""
          "Parity: regressions\" href=\"", f);
    co_svg_text(f, o->feed);
    fprintf(f, "\">\n<style>\n%s</style>\n</head>\n<body>\n", s_css);
}

/* The navigation bar: the overview, and on the dashboard its other
 * pages. */
static void
s_nav(FILE *f, const co_page_opts_t *o)
{
    fputs("<nav><a href=\"", f);
    co_svg_text(f, o->home);
    fputs("\">overview</a>", f);
    if (o->live)
        fputs("<a href=\"/hosts\">hosts</a><a href=\"/regressions\">"
              "regressions</a>", f);
    fputs("</nav>\n", f);
}

static void
s_foot(FILE *f, const json_t *doc, const co_page_opts_t *o)
{
    char when[64];
    pw_out_time(when, sizeof when, json_integer_value(json_object_get(
        doc, "generated_at_us")), PW_OUT_TIME_PAGE);
    fputs("<footer><p>Made by ", f);
    co_svg_text(f, o->maker);
    fprintf(f, " at %s. Times are "
            "wall-clock per run; a ratio is subject median / other median "
            "on one host, judged with that host's own noise floor.</p>"
            "</footer>\n</body>\n</html>\n", when);
}

/* A box plot of one run of a series: both arms and its verdict. */
static void
s_run_box(FILE *f, const json_t *ser, const json_t *run)
{
    co_boxplot_arm_t arms[2];
    co_boxplot_ratio_t ratio;
    static const char *const key[] = { "subject", "other" };
    for (size_t a = 0; a < 2; a++) {
        const json_t *sum = json_object_get(run, key[a]);
        memset(&arms[a], 0, sizeof arms[a]);
        arms[a].name = pw_out_str(ser, key[a], key[a]);
        arms[a].subject = a == 0;
        arms[a].has_summary = json_is_object(sum);
        if (!arms[a].has_summary)
            continue;
        arms[a].n = (long)json_integer_value(json_object_get(sum, "n"));
        arms[a].min_us = json_number_value(json_object_get(sum, "min"));
        arms[a].q25_us = json_number_value(json_object_get(sum, "q25"));
        arms[a].median_us = json_number_value(json_object_get(sum,
                                                              "median"));
        arms[a].q75_us = json_number_value(json_object_get(sum, "q75"));
        arms[a].max_us = json_number_value(json_object_get(sum, "max"));
    }
    bool has_ratio = json_is_number(json_object_get(run, "ratio")) &&
                     json_is_number(json_object_get(run, "tolerance"));
    ratio = (co_boxplot_ratio_t){
        .other = pw_out_str(ser, "other", "other"),
        .ratio = json_number_value(json_object_get(run, "ratio")),
        .tolerance = json_number_value(json_object_get(run, "tolerance")),
        .outcome = pw_out_str(run, "outcome", NULL) };
    char when[64], tags[512], caption[1024];
    pw_out_time(when, sizeof when, json_integer_value(json_object_get(run,
                                                                 "time_us")), PW_OUT_TIME_PAGE);
    pw_out_pairs(tags, sizeof tags, json_object_get(run, "tags"), "-");
    snprintf(caption, sizeof caption, "%s, run %s, %s", when,
             pw_out_str(run, "run", "?"), tags);
    fputs("<div class=\"plot\">", f);
    co_boxplot_write(f, caption, arms, 2, &ratio, has_ratio ? 1 : 0);
    fputs("</div>\n", f);
}

/* Change points and annotations of a series as a list, for reading
 * without hovering. */
static void
s_marks_list(FILE *f, const json_t *ser)
{
    const json_t *runs = json_object_get(ser, "runs");
    size_t i;
    json_t *m;
    if (json_array_size(json_object_get(ser, "change_points")) +
        json_array_size(json_object_get(ser, "annotations")) == 0)
        return;
    fputs("<ul class=\"marks\">\n", f);
    json_array_foreach(json_object_get(ser, "change_points"), i, m) {
        const json_t *run = json_array_get(runs, (size_t)json_integer_value(
            json_object_get(m, "index")));
        char tags[512];
        pw_out_pairs(tags, sizeof tags, json_object_get(run, "tags"), "-");
        const char *o = co_svg_outcome_class(pw_out_str(m, "outcome", NULL));
        fprintf(f, "<li>change point %" JSON_INTEGER_FORMAT ": <span "
                "class=\"%s\">%s</span>, %s x%.4f%s, from run ",
                json_integer_value(json_object_get(m, "id")), o, o,
                pw_out_str(m, "metric", "ratio"), json_number_value(
                    json_object_get(m, "magnitude")),
                json_is_true(json_object_get(m, "within_noise")) ?
                " (within noise)" : "");
        pw_out_xmlf(f, true, "%s (%s)</li>\n", pw_out_str(run, "run", "?"),
                    tags);
    }
    json_array_foreach(json_object_get(ser, "annotations"), i, m) {
        fputs("<li>", f);
        co_svg_text(f, pw_out_str(m, "kind", "change"));
        fprintf(f, " change before run %" JSON_INTEGER_FORMAT ": ",
                json_integer_value(json_object_get(m, "index")) + 1);
        co_svg_text(f, pw_out_str(m, "text", ""));
        fputs("</li>\n", f);
    }
    fputs("</ul>\n", f);
}

static void
s_series(FILE *f, const json_t *ser)
{
    const json_t *runs = json_object_get(ser, "runs");
    size_t total = json_array_size(runs), shown = 0;
    char vars[512], title[1536];
    pw_out_pairs(vars, sizeof vars, json_object_get(ser, "vars"), "-");
    /* Another metric's plot says which (docs/verdict.md "Metrics"). */
    const char *metric = pw_out_str(ser, "metric", "wall");
    bool wall = strcmp(metric, "wall") == 0;
    snprintf(title, sizeof title, "%s: %s vs %s%s%s%s%s",
             pw_out_str(ser, "host", "?"), pw_out_str(ser, "subject", "?"),
             pw_out_str(ser, "other", "?"), strcmp(vars, "-") ? ", " : "",
             strcmp(vars, "-") ? vars : "", wall ? "" : ", ",
             wall ? "" : metric);
    pw_out_xmlf(f, true, "<section class=\"series\">\n<h2>%s</h2>\n", title);
    if (total > CO_SVG_MAX_POINTS)
        fprintf(f, "<p class=\"capped\">The plot shows the newest %d of %zu "
                "runs.</p>\n", CO_SVG_MAX_POINTS, total);
    fputs("<div class=\"plot\">", f);
    co_svg_history(f, ser, CO_SVG_MAX_POINTS, &shown);
    fputs("</div>\n", f);
    s_marks_list(f, ser);
    /* The box plots are of each run's wall-time samples. */
    if (total > 0 && wall) {
        size_t k = total < CO_PAGE_BOX_RUNS ? total : CO_PAGE_BOX_RUNS;
        fprintf(f, "<h3>The newest %zu run%s, newest first</h3>\n", k,
                k == 1 ? "" : "s");
        if (total > k)
            fprintf(f, "<p class=\"capped\">Box plots of the newest %d of "
                    "%zu runs.</p>\n", CO_PAGE_BOX_RUNS, total);
        for (size_t i = 0; i < k; i++)
            s_run_box(f, ser, json_array_get(runs, total - 1 - i));
    }
    fputs("</section>\n", f);
}

int
co_page_bench(FILE *f, const json_t *doc, const char *suite,
              const char *bench, const json_t *series,
              const co_page_opts_t *o)
{
    char title[1024];
    snprintf(title, sizeof title, "%s%s%s", suite ? suite : "",
             suite && *suite ? " / " : "", bench ? bench : "?");
    s_head(f, title, o, false);
    s_nav(f, o);
    fputs("<h1>", f);
    co_svg_text(f, title);
    fputs("</h1>\n<p>Per host and arm pair: the history of both arms' "
          "per-run medians with their min-max band, and the ratio with "
          "each run's tolerance band, coloured by the verdict; hover a "
          "point or a mark for its run, tags and numbers.</p>\n", f);
    size_t i;
    json_t *ser;
    json_array_foreach(series, i, ser)
        s_series(f, ser);
    if (json_array_size(series) == 0)
        fputs("<p>No series.</p>\n", f);
    s_foot(f, doc, o);
    return 0;
}

/* --- the overview ------------------------------------------------------- */

/* The href of o's (suite, benchmark) page into buf, or NULL. */
static const char *
s_href(const co_page_opts_t *op, const json_t *o, char *buf, size_t len)
{
    return op->bench_href ? op->bench_href(op->ctx, pw_out_str(o, "suite",
                                                               ""),
                                           pw_out_str(o, "benchmark", ""),
                                           buf, len)
                          : NULL;
}

/* The dashboard's way to acknowledge change point (or event) id: a
 * link to its own page, whose form takes the note (a page that reloads
 * itself would lose a note being typed); when acked, a one-button form
 * that reopens it. */
static void
s_ack_form(FILE *f, const co_page_opts_t *op, json_int_t id, bool acked)
{
    if (!acked) {
        fprintf(f, "<a class=\"ack\" href=\"/regressions/%"
                JSON_INTEGER_FORMAT "/ack\">acknowledge&hellip;</a>", id);
        return;
    }
    fprintf(f, "<form class=\"ack\" method=\"post\" action=\"/regressions/%"
            JSON_INTEGER_FORMAT "/unack\"><input type=\"hidden\" "
            "name=\"csrf\" value=\"", id);
    co_svg_text(f, op->csrf);
    fputs("\"><button type=\"submit\">reopen</button></form>", f);
}

static void
s_truncated(FILE *f, const json_t *doc)
{
    if (json_is_true(json_object_get(json_object_get(doc, "regressions"),
                                     "truncated")))
        fputs("<p class=\"capped\">More change points than one answer "
              "carries: some are missing.</p>\n", f);
}

static void
s_hosts(FILE *f, const json_t *doc)
{
    const json_t *hosts = json_object_get(json_object_get(doc, "hosts"),
                                          "hosts");
    size_t i, k;
    json_t *h, *w;
    fputs("<h2>Hosts</h2>\n", f);
    if (json_array_size(hosts) == 0) {
        fputs("<p>No hosts.</p>\n", f);
        return;
    }
    fputs("<table class=\"hosts\">\n<tr><th>host</th><th>state</th>"
          "<th>floor</th><th>CPU</th><th>kernel</th><th>last seen</th>"
          "<th>warnings</th></tr>\n", f);
    json_array_foreach(hosts, i, h) {
        bool online = json_is_true(json_object_get(h, "online"));
        char floor[64], seen[64], kern[PW_OUT_CELL_MAX];
        pw_out_floor(floor, sizeof floor, h, " (default)");
        pw_out_time(seen, sizeof seen, json_integer_value(json_object_get(
            h, "last_seen_us")), PW_OUT_TIME_PAGE);
        fputs("<tr><td>", f);
        co_svg_text(f, pw_out_str(h, "name", "?"));
        fprintf(f, "</td><td class=\"%s\">%s</td><td>%s</td><td>",
                online ? "online" : "offline", online ? "online" : "offline",
                floor);
        co_svg_text(f, pw_out_str(h, "cpu_model", "-"));
        pw_out_xmlf(f, true, "</td><td>%s</td><td>%s</td><td>",
                    pw_out_kernel(kern, sizeof kern, h), seen);
        if (json_array_size(json_object_get(h, "warnings")) == 0)
            fputs("none", f);
        json_array_foreach(json_object_get(h, "warnings"), k, w) {
            pw_out_xmlf(f, true, "%s%s: %s", k ? "<br>" : "",
                        pw_out_str(w, "code", "?"),
                        pw_out_str(w, "message", ""));
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

/* Worst first: regressions before the rest, then losses, then the
 * largest step in either direction (log of the magnitude). */
static int
s_worse(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a,
                  *y = *(const json_t *const *)b;
    int rx = json_is_true(json_object_get(x, "regression")),
        ry = json_is_true(json_object_get(y, "regression"));
    if (rx != ry)
        return ry - rx;
    int lx = strcmp(pw_out_str(x, "outcome", ""), "loss") == 0,
        ly = strcmp(pw_out_str(y, "outcome", ""), "loss") == 0;
    if (lx != ly)
        return ly - lx;
    double mx = json_number_value(json_object_get(x, "magnitude")),
           my = json_number_value(json_object_get(y, "magnitude"));
    double sx = mx > 0 ? fabs(log(mx)) : 0, sy = my > 0 ? fabs(log(my)) : 0;
    return (sy > sx) - (sy < sx);
}

static void
s_cp_row(FILE *f, const co_page_opts_t *op, const json_t *cp, bool acked)
{
    const char *o = co_svg_outcome_class(pw_out_str(cp, "outcome", NULL));
    char href[1024];
    const char *page = s_href(op, cp, href, sizeof href);
    char before[512], after[512], vars[512];
    pw_out_pairs(before, sizeof before, json_object_get(json_object_get(
        cp, "before"), "tags"), "-");
    pw_out_pairs(after, sizeof after, json_object_get(json_object_get(
        cp, "after"), "tags"), "-");
    pw_out_pairs(vars, sizeof vars, json_object_get(cp, "vars"), "-");
    fprintf(f, "<tr class=\"cp\" id=\"cp-%" JSON_INTEGER_FORMAT "\"><td "
            "class=\"%s\">#%" JSON_INTEGER_FORMAT " %s%s%s</td><td>",
            json_integer_value(json_object_get(cp, "id")), o,
            json_integer_value(json_object_get(cp, "id")), o,
            json_is_true(json_object_get(cp, "regression")) ?
            " (regression)" : "",
            json_is_true(json_object_get(cp, "within_noise")) ?
            " (within noise)" : "");
    char bench[PW_OUT_CELL_MAX];
    pw_out_bench_metric(bench, sizeof bench, pw_out_str(cp, "benchmark",
                        "?"), pw_out_str(cp, "quantity", "wall"));
    if (page) {
        fputs("<a href=\"", f);
        co_svg_text(f, page);
        fputs("\">", f);
        co_svg_text(f, bench);
        fputs("</a>", f);
    } else {
        co_svg_text(f, bench);
    }
    pw_out_xmlf(f, true, "</td><td>%s</td><td>%s vs %s</td><td>%s",
                pw_out_str(cp, "host", "?"), pw_out_str(cp, "subject", "?"),
                pw_out_str(cp, "other", "?"), vars);
    double mag = json_number_value(json_object_get(cp, "magnitude"));
    fprintf(f, "</td><td>%s %+.1f %%</td><td>%.2g</td><td>",
            pw_out_str(cp, "metric", "ratio"), (mag - 1) * 100,
            json_number_value(json_object_get(cp, "p_value")));
    pw_out_xmlf(f, true, "%s &rarr; %s", before, after);
    fprintf(f, "</td><td>%" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT
            "</td><td>", json_integer_value(json_object_get(
                cp, "hosts_with_step")), json_integer_value(json_object_get(
                cp, "hosts_total")));
    size_t i;
    json_t *a;
    if (json_array_size(json_object_get(cp, "annotations")) == 0)
        fputs("-", f);
    json_array_foreach(json_object_get(cp, "annotations"), i, a) {
        fputs(i ? "; " : "", f);
        co_svg_text(f, json_string_value(a));
    }
    if (acked) {
        fputs("</td><td>", f);
        co_svg_text(f, pw_out_str(json_object_get(cp, "ack"), "note", ""));
    }
    if (op->csrf) {
        fputs("</td><td>", f);
        s_ack_form(f, op, json_integer_value(json_object_get(cp, "id")),
                   acked);
    }
    fputs("</td></tr>\n", f);
}

/* The change points of list which ("open", "acked"), worst first; only
 * not 0: that one alone. */
static int
s_cps(FILE *f, const json_t *doc, const co_page_opts_t *op,
      const char *which, const char *title, json_int_t only)
{
    const json_t *list = json_object_get(json_object_get(doc,
                                                         "regressions"),
                                         which);
    size_t all = json_array_size(list), n = 0;
    bool acked = strcmp(which, "acked") == 0;
    fprintf(f, "<h2>%s</h2>\n", title);
    const json_t **order = calloc(all ? all : 1, sizeof *order);
    if (!order)
        return -1;
    /* Open ones within noise are folded into their series (above). */
    for (size_t i = 0; i < all; i++) {
        const json_t *cp = json_array_get(list, i);
        if (only ? json_integer_value(json_object_get(cp, "id")) == only
                 : acked || !json_is_true(json_object_get(cp,
                                                          "within_noise")))
            order[n++] = cp;
    }
    if (n == 0) {
        fprintf(f, "<p>None.</p>\n");
        free(order);
        return 0;
    }
    qsort(order, n, sizeof *order, s_worse);
    size_t shown = n < CO_PAGE_MAX_ROWS ? n : CO_PAGE_MAX_ROWS;
    if (shown < n)
        fprintf(f, "<p class=\"capped\">The worst %zu of %zu.</p>\n", shown,
                n);
    fprintf(f, "<table class=\"%s\">\n<tr><th>outcome</th><th>benchmark</th>"
            "<th>host</th><th>arms</th><th>variables</th><th>step</th>"
            "<th>p</th><th>runs before &rarr; after</th><th>hosts with the "
            "step</th><th>environment</th>%s%s</tr>\n", which,
            acked ? "<th>note</th>" : "", op->csrf ? "<th></th>" : "");
    for (size_t i = 0; i < shown; i++)
        s_cp_row(f, op, order[i], acked);
    fputs("</table>\n", f);
    free(order);
    return 0;
}

/* The rest of a benchmark cell that is open (linked to page when there
 * is one) and the arms cell: "bench</td><td>new vs old</td>". */
static void
s_bench_arms(FILE *f, const char *page, const json_t *o)
{
    char bench[PW_OUT_CELL_MAX];
    if (page) {
        fputs("<a href=\"", f);
        co_svg_text(f, page);
        fputs("\">", f);
    }
    /* An event of another metric's series is named with it. */
    co_svg_text(f, pw_out_bench_metric(bench, sizeof bench, pw_out_str(
        o, "benchmark", "?"), pw_out_str(o, "quantity", "wall")));
    fputs(page ? "</a></td><td>" : "</td><td>", f);
    pw_out_xmlf(f, true, "%s vs %s</td>", pw_out_str(o, "subject", "?"),
                pw_out_str(o, "other", "?"));
}

/* The open events (one step on several hosts, docs/regressions.md), as
 * the collector sorted them: regressions first, the largest steps; only
 * not 0: that one alone. */
static void
s_events(FILE *f, const json_t *doc, const co_page_opts_t *op,
         const char *title, json_int_t only)
{
    const json_t *all = json_object_get(json_object_get(json_object_get(
        doc, "regressions"), "events"), "open"), *e;
    json_t *list = json_array();
    size_t n, i, k, noise = 0;
    /* Within noise: folded into their series (the benchmark's page), as
     * `parity regressions` lists them only with --all. */
    json_array_foreach(all, i, e) {
        if (only && json_integer_value(json_object_get(e, "id")) != only)
            continue;
        if (!only && json_is_true(json_object_get(e, "within_noise")))
            noise++;
        else
            json_array_append(list, (json_t *)e);
    }
    n = json_array_size(list);
    fprintf(f, "<h2>%s</h2>\n", title);
    if (noise)
        fprintf(f, "<p class=\"noise\">%zu within noise, on their "
                "benchmarks' pages.</p>\n", noise);
    if (n == 0) {
        fputs("<p>None.</p>\n", f);
        json_decref(list);
        return;
    }
    size_t shown = n < CO_PAGE_MAX_ROWS ? n : CO_PAGE_MAX_ROWS;
    if (shown < n)
        fprintf(f, "<p class=\"capped\">The worst %zu of %zu.</p>\n",
                shown, n);
    fputs("<table class=\"events\">\n<tr><th>outcome</th><th>benchmark"
          "</th><th>arms</th><th>variables</th><th>change</th><th>runs "
          "before &rarr; after</th><th>hosts</th>", f);
    fputs(op->csrf ? "<th></th></tr>\n" : "</tr>\n", f);
    json_array_foreach(list, i, e) {
        if (i == shown)
            break;
        const char *o = co_svg_outcome_class(pw_out_str(e, "outcome", NULL));
        char href[1024];
        const char *page = s_href(op, e, href, sizeof href);
        const json_t *trend = json_object_get(e, "trend"), *h;
        char before[512], after[512], vars[512], change[PW_OUT_CELL_MAX + 200];
        pw_out_pairs(before, sizeof before, json_object_get(
            json_object_get(e, "before"), "tags"), "-");
        pw_out_pairs(after, sizeof after, json_object_get(
            json_object_get(e, "after"), "tags"), "-");
        pw_out_pairs(vars, sizeof vars, json_object_get(e, "vars"), "-");
        double m = json_number_value(json_object_get(e, "magnitude")),
               lo = json_number_value(json_object_get(e, "magnitude_min")),
               hi = json_number_value(json_object_get(e, "magnitude_max"));
        int at = snprintf(change, sizeof change, "%s %s x%.3f",
                          pw_out_str(e, "direction", "?"),
                          pw_out_str(e, "metric", "ratio"), m);
        if (lo != hi && at > 0 && (size_t)at < sizeof change)
            at += snprintf(change + at, sizeof change - (size_t)at,
                           " (x%.3f to x%.3f)", lo, hi);
        if (json_is_object(trend) && at > 0 && (size_t)at < sizeof change)
            at += snprintf(change + at, sizeof change - (size_t)at, ", a "
                           "trend: %+.2f %% a run", 100.0 * json_number_value(
                               json_object_get(trend, "per_run")));
        char bisect[PW_OUT_CELL_MAX];
        if (*pw_out_bisect(bisect, sizeof bisect, json_object_get(
                e, "bisect")) && at > 0 && (size_t)at < sizeof change)
            at += snprintf(change + at, sizeof change - (size_t)at, "; %s",
                           bisect);
        if (*pw_out_confirm(bisect, sizeof bisect, json_object_get(
                e, "confirm")) && at > 0 && (size_t)at < sizeof change)
            snprintf(change + at, sizeof change - (size_t)at, "; %s", bisect);
        fprintf(f, "<tr class=\"event\" id=\"event-%" JSON_INTEGER_FORMAT
                "\"><td class=\"%s\">#%" JSON_INTEGER_FORMAT " %s%s%s</td>"
                "<td>", json_integer_value(json_object_get(e, "id")), o,
                json_integer_value(json_object_get(e, "id")), o,
                json_is_true(json_object_get(e, "regression")) ?
                " (regression)" : "", json_is_true(json_object_get(
                    e, "within_noise")) ? " (within noise)" : "");
        s_bench_arms(f, page, e);
        pw_out_xmlf(f, true, "<td>%s</td><td>%s</td><td>%s &rarr; %s", vars,
                    change, before, after);
        fprintf(f, "</td><td>%" JSON_INTEGER_FORMAT " of %"
                JSON_INTEGER_FORMAT ":", json_integer_value(
                    json_object_get(e, "hosts_with_step")),
                json_integer_value(json_object_get(e, "hosts_total")));
        json_array_foreach(json_object_get(e, "hosts"), k, h) {
            fputs(k ? ", " : " ", f);
            co_svg_text(f, json_string_value(h) ? json_string_value(h)
                                                : "?");
        }
        if (op->csrf) {
            fputs("</td><td>", f);
            s_ack_form(f, op, json_integer_value(json_object_get(e, "id")),
                       false);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    json_decref(list);
}

/* The latest job: one row per comparison, one cell per host coloured by
 * its verdict's outcome. */
static void
s_latest(FILE *f, const json_t *doc, const co_page_opts_t *op)
{
    const json_t *ver = json_object_get(doc, "latest");
    const json_t *hosts = json_object_get(ver, "hosts");
    size_t i, h;
    json_t *cmp, *host;
    if (!json_is_object(ver)) {
        fputs("<h2>Latest job</h2>\n<p>No job yet.</p>\n", f);
        return;
    }
    char tags[512];
    pw_out_pairs(tags, sizeof tags, json_object_get(ver, "tags"), "-");
    pw_out_xmlf(f, true, "<h2>Latest job: %s</h2>\n<p>suite %s, state %s, "
                "tags %s.</p>\n<table class=\"latest\">\n<tr><th>benchmark"
                "</th><th>arms</th>", pw_out_str(ver, "job", "?"),
                pw_out_str(ver, "suite", "?"), pw_out_str(ver, "state", "?"),
                tags);
    json_array_foreach(hosts, h, host)
        pw_out_xmlf(f, true, "<th>%s</th>", pw_out_str(host, "host", "?"));
    fputs("<th>across hosts</th></tr>\n", f);
    json_array_foreach(json_object_get(ver, "comparisons"), i, cmp) {
        char href[1024];
        const char *page = op->bench_href ? op->bench_href(
            op->ctx, pw_out_str(ver, "suite", ""), pw_out_str(
                cmp, "benchmark", ""), href, sizeof href) : NULL;
        fputs("<tr><td>", f);
        s_bench_arms(f, page, cmp);
        json_array_foreach(hosts, h, host) {
            const json_t *e = pw_out_entry(cmp, pw_out_str(host, "host", ""));
            const json_t *v = json_object_get(e, "verdict");
            if (!e) {
                fputs("<td class=\"none\">-</td>", f);
            } else if (!json_is_object(v)) {
                fputs("<td class=\"none\">no verdict</td>", f);
            } else {
                const char *o =
                    co_svg_outcome_class(pw_out_str(v, "outcome", NULL));
                fprintf(f, "<td class=\"%s\">%s %.3f</td>", o, o,
                        json_number_value(json_object_get(v, "ratio")));
            }
        }
        fputs("<td>", f);
        co_svg_text(f, pw_out_str(json_object_get(cmp, "summary"), "consensus",
                             "no hosts"));
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void
s_bench_list(FILE *f, const json_t *benches, bool truncated, size_t dropped,
             const co_page_opts_t *op)
{
    size_t i;
    json_t *b;
    fprintf(f, "<h2>Benchmarks (%zu)</h2>\n", json_array_size(benches));
    if (truncated)
        fputs("<p class=\"capped\">The collector held more series than one "
              "answer carries: some are missing (give --since or --tag)."
              "</p>\n", f);
    if (dropped)
        fprintf(f, "<p class=\"capped\">%zu series of further benchmarks "
                "are left out.</p>\n", dropped);
    fputs("<ul class=\"benchmarks\">\n", f);
    json_array_foreach(benches, i, b) {
        char href[1024];
        const char *page = s_href(op, b, href, sizeof href);
        json_int_t n = json_integer_value(json_object_get(b, "count"));
        fputs("<li>", f);
        if (page) {
            fputs("<a href=\"", f);
            co_svg_text(f, page);
            fputs("\">", f);
        }
        if (*pw_out_str(b, "suite", "")) {
            co_svg_text(f, pw_out_str(b, "suite", ""));
            fputs(" / ", f);
        }
        co_svg_text(f, pw_out_str(b, "benchmark", "?"));
        fprintf(f, "%s (%" JSON_INTEGER_FORMAT " series)</li>\n",
                page ? "</a>" : "", n);
    }
    fputs("</ul>\n", f);
}

int
co_page_overview(FILE *f, const json_t *doc, const json_t *benches,
                 bool truncated, size_t dropped, const co_page_opts_t *o)
{
    char when[64];
    pw_out_time(when, sizeof when, json_integer_value(json_object_get(
        doc, "generated_at_us")), PW_OUT_TIME_PAGE);
    s_head(f, "Parity", o, true);
    if (o->live)
        s_nav(f, o);
    fprintf(f, "<h1>Parity</h1>\n<p>The fleet as of %s.</p>\n", when);
    s_hosts(f, doc);
    s_events(f, doc, o, "Open events", 0);
    int rc = s_cps(f, doc, o, "open", "Open change points, per host", 0);
    s_truncated(f, doc);
    s_latest(f, doc, o);
    rc |= s_cps(f, doc, o, "acked", "Acknowledged", 0);
    s_bench_list(f, benches, truncated, dropped, o);
    s_foot(f, doc, o);
    return rc;
}

int
co_page_hosts(FILE *f, const json_t *doc, const co_page_opts_t *o)
{
    s_head(f, "Parity: hosts", o, true);
    s_nav(f, o);
    s_hosts(f, doc);
    s_foot(f, doc, o);
    return 0;
}

int
co_page_regressions(FILE *f, const json_t *doc, const co_page_opts_t *o)
{
    s_head(f, "Parity: regressions", o, true);
    s_nav(f, o);
    fputs("<h1>Regressions</h1>\n", f);
    s_events(f, doc, o, "Open events", 0);
    int rc = s_cps(f, doc, o, "open", "Open change points, per host", 0);
    s_truncated(f, doc);
    rc |= s_cps(f, doc, o, "acked", "Acknowledged", 0);
    s_foot(f, doc, o);
    return rc;
}

/* The id among list's objects, or NULL. */
static const json_t *
s_find(const json_t *list, json_int_t id)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x)
        if (json_integer_value(json_object_get(x, "id")) == id)
            return x;
    return NULL;
}

int
co_page_ack(FILE *f, const json_t *doc, json_int_t id,
            const co_page_opts_t *o)
{
    const json_t *regs = json_object_get(doc, "regressions");
    const json_t *ev = s_find(json_object_get(json_object_get(regs,
                                                              "events"),
                                              "open"), id);
    if (!o->csrf || (!ev && !s_find(json_object_get(regs, "open"), id)))
        return 1;
    /* The item's row without a form of its own: the form is below. */
    co_page_opts_t row = *o;
    row.csrf = NULL;
    char title[64];
    snprintf(title, sizeof title, "Parity: acknowledge #%" JSON_INTEGER_FORMAT,
             id);
    s_head(f, title, o, false);
    s_nav(f, o);
    fprintf(f, "<h1>Acknowledge #%" JSON_INTEGER_FORMAT "</h1>\n<p>The step "
            "is known: this change point and every member of its event "
            "move to the acknowledged ones and no longer make <code>parity "
            "regressions</code> exit 1. <em>Reopen</em> undoes it.</p>\n",
            id);
    int rc = 0;
    if (ev)
        s_events(f, doc, &row, "The event", id);
    else
        rc = s_cps(f, doc, &row, "open", "The change point", id);
    fprintf(f, "<form class=\"note\" method=\"post\" action=\"/regressions/"
            "%" JSON_INTEGER_FORMAT "/ack\"><input type=\"hidden\" "
            "name=\"csrf\" value=\"", id);
    co_svg_text(f, o->csrf);
    fputs("\">\n<p><label>Why it is known: <input type=\"text\" "
          "name=\"note\" required maxlength=\"1000\" autofocus></label>"
          "</p>\n<p><button type=\"submit\">acknowledge</button> <a href="
          "\"/regressions\">back to the regressions</a></p>\n</form>\n", f);
    s_foot(f, doc, o);
    return rc;
}
