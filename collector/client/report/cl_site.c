/* cl_site.c -- the static site of `parity report --site` (cl_site.h).
 *
 * Pages are plain HTML with one inline style sheet and inline SVG; there
 * is no script, so there is nothing to fail in a browser's console and
 * nothing to load. Hover text is SVG <title>. Every text from a host, a
 * suite or a user goes through cl_svg_text. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cl_site.h"

#include "cl_atom.h"

#include "cl_out.h"
#include "pw_out.h"
#include "cl_boxplot.h"
#include "cl_svg.h"

/* A page's file name: "bench-NNNN-" and at most this many characters of
 * the benchmark's name, letters, digits, '.', '_' and '-' only. */
#define S_NAME_CHARS 48
#define S_PATH_MAX   4096

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
    "nav a{margin-right:1em}\n";

/* The pages keep their series only until the page is written; then
 * "count" says how many it had. */
struct cl_site {
    json_t *doc;          /* the caller's, one reference */
    char dir[S_PATH_MAX];
    json_t *pages;        /* [{"suite", "benchmark", "file", "series": [],
                             "count"}] */
    json_t *by_key;       /* "suite\x1fbenchmark" -> index into pages */
    size_t dropped;       /* series beyond CL_SITE_MAX_PAGES benchmarks */
    bool truncated;       /* some answer left series out */
};
typedef struct cl_site s_site_t;

static void
s_err(char *err, size_t errlen, const char *call, const char *path)
{
    snprintf(err, errlen, "%s %s: %s", call, path, strerror(errno));
}

/* --- the directory ------------------------------------------------------ */

static bool
s_is_page(const char *name)
{
    size_t n = strlen(name);
    return strncmp(name, "bench-", 6) == 0 && n > 11 &&
           strcmp(name + n - 5, ".html") == 0;
}

/* Make dir ready: create it, or accept it empty or marked as ours; in a
 * marked one the old benchmark pages go (a benchmark may have gone). */
static int
s_prepare(const char *dir, char *err, size_t errlen)
{
    char path[S_PATH_MAX];
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT) {
            s_err(err, errlen, "stat", dir);
            return -1;
        }
        if (mkdir(dir, 0777) != 0) {
            s_err(err, errlen, "mkdir", dir);
            return -1;
        }
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a directory", dir);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", dir, CL_SITE_MARKER);
    bool marked = access(path, F_OK) == 0;
    DIR *d = opendir(dir);
    if (!d) {
        s_err(err, errlen, "opendir", dir);
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (!marked) {
            snprintf(err, errlen, "%s is not empty and holds no %s of an "
                     "earlier site: refusing to write into it (give a new "
                     "or empty directory)", dir, CL_SITE_MARKER);
            rc = -1;
        } else if (s_is_page(e->d_name)) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (unlink(path) != 0) {
                s_err(err, errlen, "unlink", path);
                rc = -1;
            }
        }
    }
    closedir(d);
    return rc;
}

/* Open dir/name's temporary twin; s_close renames it into place. */
static FILE *
s_open(const char *dir, const char *name, char *tmp, size_t tmplen,
       char *err, size_t errlen)
{
    snprintf(tmp, tmplen, "%s/%s.tmp", dir, name);
    FILE *f = fopen(tmp, "w");
    if (!f)
        s_err(err, errlen, "fopen", tmp);
    else    /* a page is 1.5 MB: fewer write calls than stdio's 4 KB */
        setvbuf(f, NULL, _IOFBF, 1 << 16);
    return f;
}

static int
s_close(FILE *f, const char *dir, const char *name, const char *tmp,
        char *err, size_t errlen)
{
    char path[S_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) {
        s_err(err, errlen, "write", tmp);
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        s_err(err, errlen, "rename", path);
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* --- pages of benchmarks ------------------------------------------------ */

/* Group the series by (suite, benchmark), in the order they come, and
 * name each group's page. */
static int
s_group(s_site_t *s, const json_t *series)
{
    size_t i;
    json_t *ser;
    json_array_foreach(series, i, ser) {
        char key[2048];
        snprintf(key, sizeof key, "%s\x1f%s", pw_out_str(ser, "suite", ""),
                 pw_out_str(ser, "benchmark", ""));
        json_t *at = json_object_get(s->by_key, key);
        if (!at) {
            size_t n = json_array_size(s->pages);
            if (n >= CL_SITE_MAX_PAGES) {
                s->dropped++;
                continue;
            }
            char file[128], safe[S_NAME_CHARS + 1];
            const char *b = pw_out_str(ser, "benchmark", "unnamed");
            size_t k = 0;
            for (; b[k] && k < S_NAME_CHARS; k++) {
                char c = b[k];
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                          c == '-';
                safe[k] = ok ? c : '_';
            }
            safe[k] = '\0';
            snprintf(file, sizeof file, "bench-%04zu-%s.html", n + 1, safe);
            if (json_array_append_new(s->pages, json_pack(
                    "{s:s,s:s,s:s,s:[],s:i}", "suite", pw_out_str(ser, "suite",
                    ""), "benchmark", pw_out_str(ser, "benchmark", ""), "file",
                    file, "series", "count", 0)) != 0 ||
                json_object_set_new(s->by_key, key, json_integer(
                    (json_int_t)n)) != 0)
                return -1;
            at = json_object_get(s->by_key, key);
        }
        json_t *page = json_array_get(s->pages,
                                      (size_t)json_integer_value(at));
        if (json_array_append(json_object_get(page, "series"), ser) != 0)
            return -1;
    }
    return 0;
}

/* The page file of (suite, benchmark), or NULL when it has none. */
static const char *
s_page_of(const s_site_t *s, const char *suite, const char *bench)
{
    char key[2048];
    snprintf(key, sizeof key, "%s\x1f%s", suite ? suite : "",
             bench ? bench : "");
    json_t *at = json_object_get(s->by_key, key);
    if (!at)
        return NULL;
    return pw_out_str(json_array_get(s->pages, (size_t)json_integer_value(at)),
                 "file", NULL);
}

static void
s_head(FILE *f, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
          "\n<meta name=\"viewport\" content=\"width=device-width\">\n<title>",
          f);
    cl_svg_text(f, title);
    fprintf(f, "</title>\n<link rel=\"alternate\" type=\"application/atom+xml"
            "\" title=\"Parity: regressions\" href=\"regressions.xml\">\n"
            "<style>\n%s</style>\n</head>\n<body>\n", s_css);
}

static void
s_foot(FILE *f, const s_site_t *s)
{
    char when[64];
    cl_out_time(when, sizeof when, json_integer_value(json_object_get(
        s->doc, "generated_at_us")), CL_OUT_TIME_PAGE);
    fprintf(f, "<footer><p>Made by parity report --site at %s. Times are "
            "wall-clock per run; a ratio is subject median / other median "
            "on one host, judged with that host's own noise floor.</p>"
            "</footer>\n</body>\n</html>\n", when);
}

/* A box plot of one run of a series: both arms and its verdict. */
static void
s_run_box(FILE *f, const json_t *ser, const json_t *run)
{
    cl_boxplot_arm_t arms[2];
    cl_boxplot_ratio_t ratio;
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
    ratio = (cl_boxplot_ratio_t){
        .other = pw_out_str(ser, "other", "other"),
        .ratio = json_number_value(json_object_get(run, "ratio")),
        .tolerance = json_number_value(json_object_get(run, "tolerance")),
        .outcome = pw_out_str(run, "outcome", NULL) };
    char when[64], tags[512], caption[1024];
    cl_out_time(when, sizeof when, json_integer_value(json_object_get(run,
                                                                 "time_us")), CL_OUT_TIME_PAGE);
    pw_out_pairs(tags, sizeof tags, json_object_get(run, "tags"), "-");
    snprintf(caption, sizeof caption, "%s, run %s, %s", when,
             pw_out_str(run, "run", "?"), tags);
    fputs("<div class=\"plot\">", f);
    cl_boxplot_write(f, caption, arms, 2, &ratio, has_ratio ? 1 : 0);
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
        const char *o = cl_svg_outcome_class(pw_out_str(m, "outcome", NULL));
        fprintf(f, "<li>change point %" JSON_INTEGER_FORMAT ": <span "
                "class=\"%s\">%s</span>, %s x%.4f%s, from run ",
                json_integer_value(json_object_get(m, "id")), o, o,
                pw_out_str(m, "metric", "ratio"), json_number_value(
                    json_object_get(m, "magnitude")),
                json_is_true(json_object_get(m, "within_noise")) ?
                " (within noise)" : "");
        cl_out_xmlf(f, true, "%s (%s)</li>\n", pw_out_str(run, "run", "?"),
                    tags);
    }
    json_array_foreach(json_object_get(ser, "annotations"), i, m) {
        fputs("<li>", f);
        cl_svg_text(f, pw_out_str(m, "kind", "change"));
        fprintf(f, " change before run %" JSON_INTEGER_FORMAT ": ",
                json_integer_value(json_object_get(m, "index")) + 1);
        cl_svg_text(f, pw_out_str(m, "text", ""));
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
    cl_out_xmlf(f, true, "<section class=\"series\">\n<h2>%s</h2>\n", title);
    if (total > CL_SVG_MAX_POINTS)
        fprintf(f, "<p class=\"capped\">The plot shows the newest %d of %zu "
                "runs.</p>\n", CL_SVG_MAX_POINTS, total);
    fputs("<div class=\"plot\">", f);
    cl_svg_history(f, ser, CL_SVG_MAX_POINTS, &shown);
    fputs("</div>\n", f);
    s_marks_list(f, ser);
    /* The box plots are of each run's wall-time samples. */
    if (total > 0 && wall) {
        size_t k = total < CL_SITE_BOX_RUNS ? total : CL_SITE_BOX_RUNS;
        fprintf(f, "<h3>The newest %zu run%s, newest first</h3>\n", k,
                k == 1 ? "" : "s");
        if (total > k)
            fprintf(f, "<p class=\"capped\">Box plots of the newest %d of "
                    "%zu runs.</p>\n", CL_SITE_BOX_RUNS, total);
        for (size_t i = 0; i < k; i++)
            s_run_box(f, ser, json_array_get(runs, total - 1 - i));
    }
    fputs("</section>\n", f);
}

static int
s_bench_page(const s_site_t *s, const json_t *page, const char *dir,
             char *err, size_t errlen)
{
    char tmp[S_PATH_MAX], title[1024];
    const char *file = pw_out_str(page, "file", "bench.html");
    snprintf(title, sizeof title, "%s%s%s", pw_out_str(page, "suite", ""),
             *pw_out_str(page, "suite", "") ? " / " : "",
             pw_out_str(page, "benchmark", "?"));
    FILE *f = s_open(dir, file, tmp, sizeof tmp, err, errlen);
    if (!f)
        return -1;
    s_head(f, title);
    fputs("<nav><a href=\"index.html\">overview</a></nav>\n<h1>", f);
    cl_svg_text(f, title);
    fputs("</h1>\n<p>Per host and arm pair: the history of both arms' "
          "per-run medians with their min-max band, and the ratio with "
          "each run's tolerance band, coloured by the verdict; hover a "
          "point or a mark for its run, tags and numbers.</p>\n", f);
    size_t i;
    json_t *ser;
    json_array_foreach(json_object_get(page, "series"), i, ser)
        s_series(f, ser);
    s_foot(f, s);
    return s_close(f, dir, file, tmp, err, errlen);
}

/* --- the overview ------------------------------------------------------- */

static void
s_hosts(FILE *f, const s_site_t *s)
{
    const json_t *hosts = json_object_get(json_object_get(s->doc, "hosts"),
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
        cl_out_floor(floor, sizeof floor, h, " (default)");
        cl_out_time(seen, sizeof seen, json_integer_value(json_object_get(
            h, "last_seen_us")), CL_OUT_TIME_PAGE);
        fputs("<tr><td>", f);
        cl_svg_text(f, pw_out_str(h, "name", "?"));
        fprintf(f, "</td><td class=\"%s\">%s</td><td>%s</td><td>",
                online ? "online" : "offline", online ? "online" : "offline",
                floor);
        cl_svg_text(f, pw_out_str(h, "cpu_model", "-"));
        cl_out_xmlf(f, true, "</td><td>%s</td><td>%s</td><td>",
                    cl_out_kernel(kern, sizeof kern, h), seen);
        if (json_array_size(json_object_get(h, "warnings")) == 0)
            fputs("none", f);
        json_array_foreach(json_object_get(h, "warnings"), k, w) {
            cl_out_xmlf(f, true, "%s%s: %s", k ? "<br>" : "",
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
s_cp_row(FILE *f, const s_site_t *s, const json_t *cp, bool acked)
{
    const char *o = cl_svg_outcome_class(pw_out_str(cp, "outcome", NULL));
    const char *page = s_page_of(s, pw_out_str(cp, "suite", ""),
                                 pw_out_str(cp, "benchmark", ""));
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
        fprintf(f, "<a href=\"%s\">", page);
        cl_svg_text(f, bench);
        fputs("</a>", f);
    } else {
        cl_svg_text(f, bench);
    }
    cl_out_xmlf(f, true, "</td><td>%s</td><td>%s vs %s</td><td>%s",
                pw_out_str(cp, "host", "?"), pw_out_str(cp, "subject", "?"),
                pw_out_str(cp, "other", "?"), vars);
    double mag = json_number_value(json_object_get(cp, "magnitude"));
    fprintf(f, "</td><td>%s %+.1f %%</td><td>%.2g</td><td>",
            pw_out_str(cp, "metric", "ratio"), (mag - 1) * 100,
            json_number_value(json_object_get(cp, "p_value")));
    cl_out_xmlf(f, true, "%s &rarr; %s", before, after);
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
        cl_svg_text(f, json_string_value(a));
    }
    if (acked) {
        fputs("</td><td>", f);
        cl_svg_text(f, pw_out_str(json_object_get(cp, "ack"), "note", ""));
    }
    fputs("</td></tr>\n", f);
}

static int
s_cps(FILE *f, const s_site_t *s, const char *which, const char *title)
{
    const json_t *list = json_object_get(json_object_get(s->doc,
                                                         "regressions"),
                                         which);
    size_t all = json_array_size(list), n = 0;
    bool acked = strcmp(which, "acked") == 0;
    fprintf(f, "<h2>%s</h2>\n", title);
    const json_t **order = calloc(all ? all : 1, sizeof *order);
    if (!order)
        return -1;
    /* Open ones within noise are folded into their series (above). */
    for (size_t i = 0; i < all; i++)
        if (acked || !json_is_true(json_object_get(json_array_get(list, i),
                                                   "within_noise")))
            order[n++] = json_array_get(list, i);
    if (n == 0) {
        fprintf(f, "<p>None.</p>\n");
        free(order);
        return 0;
    }
    qsort(order, n, sizeof *order, s_worse);
    size_t shown = n < CL_SITE_MAX_ROWS ? n : CL_SITE_MAX_ROWS;
    if (shown < n)
        fprintf(f, "<p class=\"capped\">The worst %zu of %zu.</p>\n", shown,
                n);
    fprintf(f, "<table class=\"%s\">\n<tr><th>outcome</th><th>benchmark</th>"
            "<th>host</th><th>arms</th><th>variables</th><th>step</th>"
            "<th>p</th><th>runs before &rarr; after</th><th>hosts with the "
            "step</th><th>environment</th>%s</tr>\n", which,
            acked ? "<th>note</th>" : "");
    for (size_t i = 0; i < shown; i++)
        s_cp_row(f, s, order[i], acked);
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
    if (page)
        fprintf(f, "<a href=\"%s\">", page);
    /* An event of another metric's series is named with it. */
    cl_svg_text(f, pw_out_bench_metric(bench, sizeof bench, pw_out_str(
        o, "benchmark", "?"), pw_out_str(o, "quantity", "wall")));
    fputs(page ? "</a></td><td>" : "</td><td>", f);
    cl_out_xmlf(f, true, "%s vs %s</td>", pw_out_str(o, "subject", "?"),
                pw_out_str(o, "other", "?"));
}

/* The open events (one step on several hosts, docs/regressions.md), as
 * the collector sorted them: regressions first, the largest steps. */
static void
s_events(FILE *f, const s_site_t *s)
{
    const json_t *all = json_object_get(json_object_get(json_object_get(
        s->doc, "regressions"), "events"), "open"), *e;
    json_t *list = json_array();
    size_t n, i, k, noise = 0;
    /* Within noise: folded into their series (the benchmark's page), as
     * `parity regressions` lists them only with --all. */
    json_array_foreach(all, i, e) {
        if (json_is_true(json_object_get(e, "within_noise")))
            noise++;
        else
            json_array_append(list, (json_t *)e);
    }
    n = json_array_size(list);
    fputs("<h2>Open events</h2>\n", f);
    if (noise)
        fprintf(f, "<p class=\"noise\">%zu within noise, on their "
                "benchmarks' pages.</p>\n", noise);
    if (n == 0) {
        fputs("<p>None.</p>\n", f);
        json_decref(list);
        return;
    }
    size_t shown = n < CL_SITE_MAX_ROWS ? n : CL_SITE_MAX_ROWS;
    if (shown < n)
        fprintf(f, "<p class=\"capped\">The worst %zu of %zu.</p>\n",
                shown, n);
    fputs("<table class=\"events\">\n<tr><th>outcome</th><th>benchmark"
          "</th><th>arms</th><th>variables</th><th>change</th><th>runs "
          "before &rarr; after</th><th>hosts</th></tr>\n", f);
    json_array_foreach(list, i, e) {
        if (i == shown)
            break;
        const char *o = cl_svg_outcome_class(pw_out_str(e, "outcome", NULL));
        const char *page = s_page_of(s, pw_out_str(e, "suite", ""),
                                     pw_out_str(e, "benchmark", ""));
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
        if (*cl_out_bisect(bisect, sizeof bisect, json_object_get(
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
        cl_out_xmlf(f, true, "<td>%s</td><td>%s</td><td>%s &rarr; %s", vars,
                    change, before, after);
        fprintf(f, "</td><td>%" JSON_INTEGER_FORMAT " of %"
                JSON_INTEGER_FORMAT ":", json_integer_value(
                    json_object_get(e, "hosts_with_step")),
                json_integer_value(json_object_get(e, "hosts_total")));
        json_array_foreach(json_object_get(e, "hosts"), k, h) {
            fputs(k ? ", " : " ", f);
            cl_svg_text(f, json_string_value(h) ? json_string_value(h)
                                                : "?");
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    json_decref(list);
}

/* The latest job: one row per comparison, one cell per host coloured by
 * its verdict's outcome. */
static void
s_latest(FILE *f, const s_site_t *s)
{
    const json_t *ver = json_object_get(s->doc, "latest");
    const json_t *hosts = json_object_get(ver, "hosts");
    size_t i, h;
    json_t *cmp, *host;
    if (!json_is_object(ver)) {
        fputs("<h2>Latest job</h2>\n<p>No job yet.</p>\n", f);
        return;
    }
    char tags[512];
    pw_out_pairs(tags, sizeof tags, json_object_get(ver, "tags"), "-");
    cl_out_xmlf(f, true, "<h2>Latest job: %s</h2>\n<p>suite %s, state %s, "
                "tags %s.</p>\n<table class=\"latest\">\n<tr><th>benchmark"
                "</th><th>arms</th>", pw_out_str(ver, "job", "?"),
                pw_out_str(ver, "suite", "?"), pw_out_str(ver, "state", "?"),
                tags);
    json_array_foreach(hosts, h, host)
        cl_out_xmlf(f, true, "<th>%s</th>", pw_out_str(host, "host", "?"));
    fputs("<th>across hosts</th></tr>\n", f);
    json_array_foreach(json_object_get(ver, "comparisons"), i, cmp) {
        const char *page = s_page_of(s, pw_out_str(ver, "suite", ""),
                                     pw_out_str(cmp, "benchmark", ""));
        fputs("<tr><td>", f);
        s_bench_arms(f, page, cmp);
        json_array_foreach(hosts, h, host) {
            const json_t *e = cl_out_entry(cmp, pw_out_str(host, "host", ""));
            const json_t *v = json_object_get(e, "verdict");
            if (!e) {
                fputs("<td class=\"none\">-</td>", f);
            } else if (!json_is_object(v)) {
                fputs("<td class=\"none\">no verdict</td>", f);
            } else {
                const char *o =
                    cl_svg_outcome_class(pw_out_str(v, "outcome", NULL));
                fprintf(f, "<td class=\"%s\">%s %.3f</td>", o, o,
                        json_number_value(json_object_get(v, "ratio")));
            }
        }
        fputs("<td>", f);
        cl_svg_text(f, pw_out_str(json_object_get(cmp, "summary"), "consensus",
                             "no hosts"));
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void
s_bench_list(FILE *f, const s_site_t *s)
{
    size_t i;
    json_t *page;
    fprintf(f, "<h2>Benchmarks (%zu)</h2>\n", json_array_size(s->pages));
    if (s->truncated)
        fputs("<p class=\"capped\">The collector held more series than one "
              "answer carries: some are missing (give --since or --tag)."
              "</p>\n", f);
    if (s->dropped)
        fprintf(f, "<p class=\"capped\">%zu series of benchmarks beyond the "
                "first %d are left out.</p>\n", s->dropped,
                CL_SITE_MAX_PAGES);
    fputs("<ul class=\"benchmarks\">\n", f);
    json_array_foreach(s->pages, i, page) {
        json_int_t n = json_integer_value(json_object_get(page, "count"));
        fprintf(f, "<li><a href=\"%s\">", pw_out_str(page, "file", ""));
        if (*pw_out_str(page, "suite", "")) {
            cl_svg_text(f, pw_out_str(page, "suite", ""));
            fputs(" / ", f);
        }
        cl_svg_text(f, pw_out_str(page, "benchmark", "?"));
        fprintf(f, "</a> (%" JSON_INTEGER_FORMAT " series)</li>\n", n);
    }
    fputs("</ul>\n", f);
}

static int
s_index(const s_site_t *s, const char *dir, char *err, size_t errlen)
{
    char tmp[S_PATH_MAX], when[64];
    FILE *f = s_open(dir, "index.html", tmp, sizeof tmp, err, errlen);
    if (!f)
        return -1;
    cl_out_time(when, sizeof when, json_integer_value(json_object_get(
        s->doc, "generated_at_us")), CL_OUT_TIME_PAGE);
    s_head(f, "Parity");
    fprintf(f, "<h1>Parity</h1>\n<p>The fleet as of %s.</p>\n", when);
    s_hosts(f, s);
    s_events(f, s);
    int rc = s_cps(f, s, "open", "Open change points, per host");
    if (json_is_true(json_object_get(json_object_get(s->doc, "regressions"),
                                     "truncated")))
        fputs("<p class=\"capped\">More change points than one answer "
              "carries: some are missing.</p>\n", f);
    s_latest(f, s);
    rc |= s_cps(f, s, "acked", "Acknowledged");
    s_bench_list(f, s);
    s_foot(f, s);
    if (rc != 0) {
        fclose(f);
        unlink(tmp);
        snprintf(err, errlen, "out of memory writing %s/index.html", dir);
        return -1;
    }
    if (s_close(f, dir, "index.html", tmp, err, errlen) != 0)
        return -1;
    /* The feed of regressions beside it (cl_atom.h). */
    if (!(f = s_open(dir, "regressions.xml", tmp, sizeof tmp, err, errlen)))
        return -1;
    if (cl_atom_write(f, s->doc) != 0) {
        fclose(f);
        unlink(tmp);
        snprintf(err, errlen, "out of memory or a write error writing "
                 "%s/regressions.xml", dir);
        return -1;
    }
    return s_close(f, dir, "regressions.xml", tmp, err, errlen);
}

cl_site_t *
cl_site_begin(json_t *doc, const char *dir, char *err, size_t errlen)
{
    char tmp[S_PATH_MAX];
    s_site_t *s = NULL;
    if (strlen(dir) > S_PATH_MAX - 128) {
        snprintf(err, errlen, "%.64s...: directory name too long", dir);
        return NULL;
    }
    if (!json_is_object(doc)) {
        snprintf(err, errlen, "the site's document is not a JSON object");
        return NULL;
    }
    if (s_prepare(dir, err, errlen) != 0)
        return NULL;
    /* The marker first: a site left half written can be written again. */
    FILE *m = s_open(dir, CL_SITE_MARKER, tmp, sizeof tmp, err, errlen);
    if (!m)
        return NULL;
    fputs("written by parity report --site; this directory may be "
          "rewritten by it\n", m);
    if (s_close(m, dir, CL_SITE_MARKER, tmp, err, errlen) != 0)
        return NULL;
    if (!(s = calloc(1, sizeof *s)) || !(s->pages = json_array()) ||
        !(s->by_key = json_object())) {
        snprintf(err, errlen, "out of memory starting the site");
        goto fail;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    s->doc = json_incref(doc);
    s->truncated = json_is_true(json_object_get(json_object_get(doc,
                                                "series"), "truncated"));
    return s;
fail:
    if (s) {
        json_decref(s->pages);
        json_decref(s->by_key);
    }
    free(s);
    return NULL;
}

int
cl_site_add(cl_site_t *s, const json_t *series, bool truncated, char *err,
            size_t errlen)
{
    size_t i;
    json_t *page;
    s->truncated = s->truncated || truncated;
    if (s_group(s, series) != 0) {
        snprintf(err, errlen, "out of memory grouping the series");
        return -1;
    }
    json_array_foreach(s->pages, i, page) {
        json_t *list = json_object_get(page, "series");
        size_t n = json_array_size(list);
        if (n == 0)
            continue;
        if (s_bench_page(s, page, s->dir, err, errlen) != 0)
            return -1;
        json_object_set_new(page, "count", json_integer(json_integer_value(
            json_object_get(page, "count")) + (json_int_t)n));
        json_array_clear(list);
    }
    return 0;
}

int
cl_site_end(cl_site_t **sp, char *err, size_t errlen)
{
    s_site_t *s = sp ? *sp : NULL;
    int rc = -1;
    if (!s)
        return 0;
    *sp = NULL;
    if (err)
        rc = s_index(s, s->dir, err, errlen);
    json_decref(s->doc);
    json_decref(s->pages);
    json_decref(s->by_key);
    free(s);
    return rc;
}

int
cl_site_write(const json_t *doc, const char *dir, char *err, size_t errlen)
{
    cl_site_t *s = cl_site_begin((json_t *)doc, dir, err, errlen);
    if (!s)
        return -1;
    if (cl_site_add(s, json_object_get(json_object_get(doc, "series"),
                                       "series"), false, err, errlen) != 0) {
        cl_site_end(&s, NULL, 0);
        return -1;
    }
    return cl_site_end(&s, err, errlen);
}
