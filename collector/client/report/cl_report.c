/* cl_report.c -- `parity report JOB|--latest [--markdown|--html]
 * [--out FILE]`: one job for humans, as one self-contained document:
 * the job, every host's environment and floor, the per-host verdict
 * table with the cross-host summary, then per benchmark each host's arm
 * summaries, a box plot per run (HTML) and the verdicts' diagnostics.
 * Two collector answers: `report` (docs/protocol.md 10.13) and
 * `verdicts` (10.8) of the same job. docs/commands/report.md.
 *
 * `parity report --site DIR` asks four answers instead (hosts, the latest
 * job's verdicts, regressions with change points, series) and hands them
 * to cl_site; the run box plots of both come from cl_report_boxplot.
 *
 * Every text that came from a suite, a host or a user is escaped for the
 * format (s_text): a benchmark named <script> is shown, never run. The
 * HTML is one file with inline CSS and no external resource. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_report.h"

#include "cl_aa.h"
#include "cl_conn.h"
#include "cl_out.h"
#include "pw_out.h"
#include "co_boxplot.h"
#include "cl_site.h"
#include "cl_verbs.h"
#include "pw_json.h"
#include "vd_metric.h"
#include "vd_verdict.h"

typedef cl_report_format_t s_fmt_t;
#define S_MARKDOWN CL_REPORT_MARKDOWN
#define S_HTML     CL_REPORT_HTML

/* Write s escaped for fmt. Markdown: HTML's five characters as
 * entities (a renderer would pass raw HTML through), backslashes before
 * the punctuation that Markdown or a table cell reads, line breaks as
 * spaces. HTML: the five characters as entities. */
static void
s_text(FILE *f, s_fmt_t fmt, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs(fmt == S_HTML ? "&quot;" : "\"", f); break;
        case '\'': fputs(fmt == S_HTML ? "&#39;" : "'", f); break;
        case '\n': case '\r': fputc(' ', f); break;
        case '\\': case '`': case '*': case '_': case '[': case ']':
        case '|': case '#':
            if (fmt == S_MARKDOWN)
                fputc('\\', f);
            fputc(*s, f);
            break;
        default: fputc(*s, f);
        }
    }
}

/* printf into a bounded buffer, then escape it. */
static void
s_textf(FILE *f, s_fmt_t fmt, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static void
s_textf(FILE *f, s_fmt_t fmt, const char *format, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, format);
    vsnprintf(buf, sizeof buf, format, ap);
    va_end(ap);
    s_text(f, fmt, buf);
}

static void
s_heading(FILE *f, s_fmt_t fmt, int level, const char *text)
{
    if (fmt == S_HTML) {
        fprintf(f, "<h%d>", level);
        s_text(f, fmt, text);
        fprintf(f, "</h%d>\n", level);
    } else {
        fprintf(f, "\n%.*s ", level, "######");
        s_text(f, fmt, text);
        fputc('\n', f);
    }
}

/* A table: s_row(..., head=true) first, then rows of n cells. */
static void
s_row(FILE *f, s_fmt_t fmt, const char *const *cells, size_t n, bool head)
{
    if (fmt == S_HTML) {
        fputs("<tr>", f);
        for (size_t i = 0; i < n; i++) {
            fputs(head ? "<th>" : "<td>", f);
            s_text(f, fmt, cells[i]);
            fputs(head ? "</th>" : "</td>", f);
        }
        fputs("</tr>\n", f);
        return;
    }
    if (head)
        fputc('\n', f);
    fputc('|', f);
    for (size_t i = 0; i < n; i++) {
        fputc(' ', f);
        s_text(f, fmt, cells[i]);
        fputs(" |", f);
    }
    fputc('\n', f);
    if (head) {
        fputc('|', f);
        for (size_t i = 0; i < n; i++)
            fputs("---|", f);
        fputc('\n', f);
    }
}

static void
s_table_open(FILE *f, s_fmt_t fmt)
{
    if (fmt == S_HTML)
        fputs("<table>\n", f);
}

static void
s_table_close(FILE *f, s_fmt_t fmt)
{
    if (fmt == S_HTML)
        fputs("</table>\n", f);
}

static void
s_para_open(FILE *f, s_fmt_t fmt)
{
    fputs(fmt == S_HTML ? "<p>" : "\n", f);
}

static void
s_para_close(FILE *f, s_fmt_t fmt)
{
    fputs(fmt == S_HTML ? "</p>\n" : "\n", f);
}

/* A JSON scalar as text ("-" for null or absent). */
static void
s_scalar(char *buf, size_t len, const json_t *v)
{
    if (json_is_string(v))
        snprintf(buf, len, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, len, "%g", json_real_value(v));
    else
        snprintf(buf, len, "-");
}

static void
s_header(FILE *f, s_fmt_t fmt, const json_t *rep)
{
    char title[256], tags[1024], vars[1024], created[64], ended[64];
    snprintf(title, sizeof title, "Parity report: job %s",
             pw_out_str(rep, "job", "?"));
    pw_out_pairs(tags, sizeof tags, json_object_get(rep, "tags"), "-");
    pw_out_pairs(vars, sizeof vars, json_object_get(rep, "vars"), "-");
    pw_out_time(created, sizeof created, json_integer_value(
        json_object_get(rep, "created_at_us")), PW_OUT_TIME_TABLE);
    pw_out_time(ended, sizeof ended, json_integer_value(
        json_object_get(rep, "ended_at_us")), PW_OUT_TIME_TABLE);
    if (fmt == S_HTML) {
        fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
              "<meta charset=\"utf-8\">\n<title>", f);
        s_text(f, fmt, title);
        fputs("</title>\n<style>\n"
              "body{font-family:system-ui,sans-serif;margin:2em;"
              "color:#222;max-width:80em}\n"
              "table{border-collapse:collapse;margin:0.5em 0 1em}\n"
              "th,td{border:1px solid #bbb;padding:0.25em 0.6em;"
              "text-align:left;vertical-align:top}\n"
              "th{background:#eee}\n"
              "</style>\n</head>\n<body>\n", f);
        s_heading(f, fmt, 1, title);
    } else {
        fputs("# ", f);
        s_text(f, fmt, title);
        fputc('\n', f);
    }
    s_para_open(f, fmt);
    s_textf(f, fmt, "suite %s, state %s, tags %s",
            pw_out_str(rep, "suite", "?"),
            pw_out_str(rep, "state", "?"), tags);
    if (*pw_out_str(rep, "label", ""))
        s_textf(f, fmt, ", label %s", pw_out_str(rep, "label", ""));
    s_textf(f, fmt, ", variables %s, created %s, ended %s.", vars, created,
            ended);
    s_para_close(f, fmt);
}

static void
s_hosts(FILE *f, s_fmt_t fmt, const json_t *rep)
{
    static const char *const head[] = { "host", "state", "CPU", "kernel",
        "arch", "CPUs", "floor", "self-test", "warnings" };
    s_heading(f, fmt, 2, "Hosts");
    s_table_open(f, fmt);
    s_row(f, fmt, head, 9, true);
    size_t i, k;
    json_t *h, *wn;
    json_array_foreach(json_object_get(rep, "hosts"), i, h) {
        char st[512], cpu[256], kern[256], arch[64], ncpu[32], floor[96],
             warn[1024] = "";
        snprintf(st, sizeof st, "%s%s%s", pw_out_str(h, "state", "?"),
                 *pw_out_str(h, "reason", "") ? ": " : "",
                 pw_out_str(h, "reason", ""));
        s_scalar(cpu, sizeof cpu, json_object_get(h, "cpu_model"));
        pw_out_kernel(kern, sizeof kern, h);
        s_scalar(arch, sizeof arch, json_object_get(h, "arch"));
        s_scalar(ncpu, sizeof ncpu, json_object_get(h, "logical_cpus"));
        pw_out_floor(floor, sizeof floor, h,
                     " (default: too few calibration samples)");
        json_array_foreach(json_object_get(h, "warnings"), k, wn) {
            size_t used = strlen(warn);
            snprintf(warn + used, sizeof warn - used, "%s%s: %s",
                     used ? "; " : "", pw_out_str(wn, "code", "?"),
                     pw_out_str(wn, "message", ""));
        }
        char self[256], when[96] = "";
        const json_t *sj = json_object_get(h, "selftest");
        cl_aa_text(self, sizeof self, sj);
        cl_aa_when(when, sizeof when, sj);
        if (*when)
            snprintf(self + strlen(self), sizeof self - strlen(self),
                     ", %s", when);
        const char *row[] = { pw_out_str(h, "host", "?"), st, cpu, kern, arch,
                              ncpu, floor, self, *warn ? warn : "none" };
        s_row(f, fmt, row, 9, false);
    }
    s_table_close(f, fmt);
}

/* The verdict table: one row per comparison, one column per host. Hosts
 * beyond what a page can hold still fit: the cells are written one by
 * one, never into a fixed row. */
static void
s_verdicts(FILE *f, s_fmt_t fmt, const json_t *rep, const json_t *ver)
{
    const json_t *hosts = json_object_get(rep, "hosts");
    size_t nh = json_array_size(hosts);
    const char **cells = calloc(nh + 4, sizeof *cells);
    char (*buf)[96] = calloc(nh + 4, sizeof *buf);
    s_heading(f, fmt, 2, "Verdicts");
    if (!cells || !buf)
        goto done;
    cells[0] = "benchmark";
    cells[1] = "arms";
    for (size_t h = 0; h < nh; h++)
        cells[2 + h] = pw_out_str(json_array_get(hosts, h), "host", "?");
    cells[2 + nh] = "geomean";
    cells[3 + nh] = "summary";
    s_table_open(f, fmt);
    s_row(f, fmt, cells, nh + 4, true);
    size_t i;
    json_t *cmp;
    json_array_foreach(json_object_get(ver, "comparisons"), i, cmp) {
        const json_t *sum = json_object_get(cmp, "summary");
        char arms[512];
        snprintf(arms, sizeof arms, "%s vs %s",
                 pw_out_str(cmp, "subject", "?"),
                 pw_out_str(cmp, "other", "?"));
        /* Each metric the suite tracks has its row: "grow (peak_rss)". */
        char bench[PW_OUT_CELL_MAX];
        cells[0] = pw_out_bench_metric(bench, sizeof bench, pw_out_str(
            cmp, "benchmark", "?"), pw_out_str(cmp, "metric", "wall"));
        cells[1] = arms;
        for (size_t h = 0; h < nh; h++) {
            cl_out_cell(buf[h], sizeof buf[h], pw_out_entry(cmp, pw_out_str(
                json_array_get(hosts, h), "host", "")));
            cells[2 + h] = buf[h];
        }
        if (json_integer_value(json_object_get(sum, "hosts")) > 0)
            snprintf(buf[nh], sizeof buf[nh], "%.3f", json_number_value(
                json_object_get(sum, "geomean_ratio")));
        else
            snprintf(buf[nh], sizeof buf[nh], "-");
        cells[2 + nh] = buf[nh];
        cells[3 + nh] = pw_out_str(sum, "consensus", "no hosts");
        s_row(f, fmt, cells, nh + 4, false);
    }
    s_table_close(f, fmt);
    if (json_array_size(json_object_get(ver, "comparisons")) == 0) {
        s_para_open(f, fmt);
        s_text(f, fmt, "No verdicts stored for this job.");
        s_para_close(f, fmt);
    }
    s_para_open(f, fmt);
    s_text(f, fmt, "ratio = subject median / other median on that host "
           "(below 1: the subject is faster). Each verdict uses its host's "
           "own samples and noise floor; hosts never pool samples.");
    s_para_close(f, fmt);
done:
    free(cells);
    free(buf);
}

/* One host's verdicts of one benchmark: outcome, both ratios against
 * their tolerances, floor, diagnostics, errors. */
static void
s_diagnostics(FILE *f, s_fmt_t fmt, const json_t *ver, const char *bench,
              const char *host)
{
    size_t i;
    json_t *cmp;
    json_array_foreach(json_object_get(ver, "comparisons"), i, cmp) {
        /* Wall time's: the other metrics' are the summary table's rows. */
        if (strcmp(pw_out_str(cmp, "benchmark", ""), bench) != 0 ||
            strcmp(pw_out_str(cmp, "metric", "wall"), "wall") != 0)
            continue;
        const json_t *e = pw_out_entry(cmp, host);
        if (!e)
            continue;
        const json_t *v = json_object_get(e, "verdict");
        s_para_open(f, fmt);
        if (!json_is_object(v)) {
            s_textf(f, fmt, "%s, %s vs %s: no verdict: %s", host,
                    pw_out_str(cmp, "subject", "?"),
                    pw_out_str(cmp, "other", "?"),
                    pw_out_str(e, "error", "?"));
            s_para_close(f, fmt);
            continue;
        }
        char floor[32];
        pw_out_us(floor, sizeof floor, json_number_value(
            json_object_get(v, "floor_us")));
        s_textf(f, fmt, "%s, %s vs %s: %s, ratio %.4f (tolerance %.4f), "
                "best ratio %.4f (tolerance %.4f), noise %.4f, floor %s, "
                "parity %g.", host, pw_out_str(cmp, "subject", "?"),
                pw_out_str(cmp, "other", "?"), pw_out_str(v, "outcome", "?"),
                json_number_value(json_object_get(v, "ratio")),
                json_number_value(json_object_get(v, "tolerance")),
                json_number_value(json_object_get(v, "best_ratio")),
                json_number_value(json_object_get(v, "best_tolerance")),
                json_number_value(json_object_get(v, "noise")), floor,
                json_number_value(json_object_get(v, "parity")));
        unsigned bits = 0;
        char err[256];
        const json_t *d = json_object_get(v, "diagnostics");
        if (d && pw_diagnostics_from_json(d, &bits, err, sizeof err) == PW_OK)
            for (unsigned b = 0; b < 32; b++)
                if ((bits & (1u << b)) && vd_diag_text(1u << b))
                    s_textf(f, fmt, " Note: %s.", vd_diag_text(1u << b));
        json_int_t extra = json_integer_value(json_object_get(v,
                                                              "extra_runs"));
        if (extra > 0)
            s_textf(f, fmt, " Note: about %" JSON_INTEGER_FORMAT " more "
                    "run%s a side would be worth taking.", extra,
                    extra == 1 ? "" : "s");
        /* The host's own false-verdict rate, beside every verdict. */
        size_t k;
        json_t *vh;
        json_array_foreach(json_object_get(ver, "hosts"), k, vh) {
            const json_t *sj = json_object_get(vh, "selftest");
            if (!sj || strcmp(pw_out_str(vh, "host", ""), host) != 0)
                continue;
            char self[256];
            cl_aa_text(self, sizeof self, sj);
            s_textf(f, fmt, " %sThis host: %s.", cl_aa_warns(sj) ?
                    "Warning: " : "", self);
            break;
        }
        s_para_close(f, fmt);
    }
}

/* --- box plots --------------------------------------------------------- */

/* An arm of the report's run_list for the box plot. */
static void
s_arm_of(co_boxplot_arm_t *a, const json_t *arm)
{
    const json_t *s = json_object_get(arm, "summary");
    memset(a, 0, sizeof *a);
    a->name = pw_out_str(arm, "name", "?");
    a->subject = json_is_true(json_object_get(arm, "subject"));
    a->has_summary = json_is_object(s);
    if (!a->has_summary)
        return;
    a->n = (long)json_integer_value(json_object_get(s, "n"));
    a->min_us = json_number_value(json_object_get(s, "min"));
    a->q25_us = json_number_value(json_object_get(s, "q25"));
    a->median_us = json_number_value(json_object_get(s, "median"));
    a->q75_us = json_number_value(json_object_get(s, "q75"));
    a->max_us = json_number_value(json_object_get(s, "max"));
}

/* --html: one box plot per run of bench, its arms and the verdicts of
 * that run (the verdicts answer's entries with its run id). */
static void
s_run_plots(FILE *f, const json_t *rep, const json_t *ver, const char *bench)
{
    size_t k, i, a;
    json_t *run, *cmp, *arm;
    json_array_foreach(json_object_get(rep, "run_list"), k, run) {
        if (strcmp(pw_out_str(run, "benchmark", ""), bench) != 0)
            continue;
        co_boxplot_arm_t arms[CO_BOXPLOT_ARMS];
        co_boxplot_ratio_t ratios[CO_BOXPLOT_ARMS];
        size_t na = 0, nr = 0;
        json_array_foreach(json_object_get(run, "arms"), a, arm)
            if (na < CO_BOXPLOT_ARMS)
                s_arm_of(&arms[na++], arm);
        json_array_foreach(json_object_get(ver, "comparisons"), i, cmp) {
            /* The box plots are of wall time. */
            if (strcmp(pw_out_str(cmp, "benchmark", ""), bench) != 0 ||
                strcmp(pw_out_str(cmp, "metric", "wall"), "wall") != 0)
                continue;
            const json_t *e = pw_out_entry(cmp, pw_out_str(run, "host", ""));
            const json_t *v = json_object_get(e, "verdict");
            if (!json_is_object(v) || nr >= CO_BOXPLOT_ARMS ||
                strcmp(pw_out_str(e, "run_id", ""),
                       pw_out_str(run, "run_id", "")) != 0)
                continue;
            ratios[nr++] = (co_boxplot_ratio_t){
                .other = pw_out_str(cmp, "other", "?"),
                .ratio = json_number_value(json_object_get(v, "ratio")),
                .tolerance = json_number_value(json_object_get(v,
                                                               "tolerance")),
                .outcome = pw_out_str(v, "outcome", NULL) };
        }
        char caption[512];
        snprintf(caption, sizeof caption, "%s, run %s",
                 pw_out_str(run, "host", "?"), pw_out_str(run, "run_id", "?"));
        fputs("<div class=\"plot\">", f);
        co_boxplot_write(f, caption, arms, na, ratios, nr);
        fputs("</div>\n", f);
    }
}

/* Per benchmark, in the order of the verdict table (then any benchmark
 * that has runs but no verdict): every host's arm summaries. */
static void
s_benchmarks(FILE *f, s_fmt_t fmt, const json_t *rep, const json_t *ver)
{
    static const char *const head[] = { "host", "arm", "n", "min", "median",
        "max", "IQR", "errors" };
    const json_t *runs = json_object_get(rep, "run_list");
    json_t *seen = json_object();
    json_t *order = json_array();
    size_t i, k, a;
    json_t *x, *run, *arm;
    if (!seen || !order)
        goto done;
    json_array_foreach(json_object_get(ver, "comparisons"), i, x)
        if (!json_object_get(seen, pw_out_str(x, "benchmark", ""))) {
            json_object_set_new(seen, pw_out_str(x, "benchmark", ""),
                                json_true());
            json_array_append_new(order, json_string(pw_out_str(x, "benchmark",
                                                           "")));
        }
    json_array_foreach(runs, i, x)
        if (!json_object_get(seen, pw_out_str(x, "benchmark", ""))) {
            json_object_set_new(seen, pw_out_str(x, "benchmark", ""),
                                json_true());
            json_array_append_new(order, json_string(pw_out_str(x, "benchmark",
                                                           "")));
        }
    json_array_foreach(order, i, x) {
        const char *bench = json_string_value(x);
        char title[512];
        snprintf(title, sizeof title, "Benchmark %s", bench);
        s_heading(f, fmt, 2, title);
        s_table_open(f, fmt);
        s_row(f, fmt, head, 8, true);
        json_array_foreach(runs, k, run) {
            if (strcmp(pw_out_str(run, "benchmark", ""), bench) != 0)
                continue;
            json_array_foreach(json_object_get(run, "arms"), a, arm) {
                const json_t *s = json_object_get(arm, "summary");
                char n[32], mn[32], md[32], mx[32], iqr[32], errs[32],
                     name[300];
                snprintf(name, sizeof name, "%s%s",
                         pw_out_str(arm, "name", "?"),
                         json_is_true(json_object_get(arm, "subject")) ?
                         " (subject)" : "");
                snprintf(errs, sizeof errs, "%" JSON_INTEGER_FORMAT,
                         json_integer_value(json_object_get(arm, "errors")));
                if (json_is_object(s)) {
                    snprintf(n, sizeof n, "%" JSON_INTEGER_FORMAT,
                             json_integer_value(json_object_get(s, "n")));
                    pw_out_us(mn, sizeof mn, json_number_value(
                        json_object_get(s, "min")));
                    pw_out_us(md, sizeof md, json_number_value(
                        json_object_get(s, "median")));
                    pw_out_us(mx, sizeof mx, json_number_value(
                        json_object_get(s, "max")));
                    pw_out_us(iqr, sizeof iqr, json_number_value(
                        json_object_get(s, "iqr")));
                } else {
                    snprintf(n, sizeof n, "0");
                    snprintf(mn, sizeof mn, "-");
                    snprintf(md, sizeof md, "-");
                    snprintf(mx, sizeof mx, "-");
                    snprintf(iqr, sizeof iqr, "-");
                }
                const char *row[] = { pw_out_str(run, "host", "?"), name,
                                      n, mn, md, mx, iqr, errs };
                s_row(f, fmt, row, 8, false);
            }
        }
        s_table_close(f, fmt);
        if (fmt == S_HTML)
            s_run_plots(f, rep, ver, bench);
        json_array_foreach(runs, k, run) {
            if (strcmp(pw_out_str(run, "benchmark", ""), bench) != 0)
                continue;
            if (strcmp(pw_out_str(run, "status", ""), "complete") != 0) {
                s_para_open(f, fmt);
                s_textf(f, fmt, "%s: run %s is %s%s%s.",
                        pw_out_str(run, "host", "?"),
                        pw_out_str(run, "run_id", "?"),
                        pw_out_str(run, "status", "?"),
                        *pw_out_str(run, "reason", "") ? ": " : "",
                        pw_out_str(run, "reason", ""));
                s_para_close(f, fmt);
            }
            s_diagnostics(f, fmt, ver, bench, pw_out_str(run, "host", ""));
        }
    }
done:
    json_decref(seen);
    json_decref(order);
}

int
cl_report_write(FILE *f, cl_report_format_t fmt, const json_t *rep,
                 const json_t *ver)
{
    s_header(f, fmt, rep);
    s_hosts(f, fmt, rep);
    s_verdicts(f, fmt, rep, ver);
    s_benchmarks(f, fmt, rep, ver);
    s_para_open(f, fmt);
    s_text(f, fmt, "Times are wall-clock per run; IQR is the "
           "interquartile range (type-7 quantiles). Made by parity report.");
    s_para_close(f, fmt);
    if (fmt == S_HTML)
        fputs("</body>\n</html>\n", f);
    return ferror(f) ? -1 : 0;
}

/* --- the verb ----------------------------------------------------------- */

/* Longest --since: the collector's bound for `regressions`, 366 days. */
#define S_SINCE_MAX_S (366.0 * 86400)


/* The answer to request id of --site: PW_EXIT_OK with *body, or the
 * exit code after printing why (the command named), except for an error
 * Reply of status expected, which the caller handles. *status is the
 * Reply's status when the collector answered with an error. */
static int
s_site_wait(cl_conn_t *c, uint64_t id, const char *command, json_t **body,
            int *status, int expected)
{
    char err[512];
    *status = 0;
    int st = cl_conn_wait(c, id, body, status, err, sizeof err);
    if (st == CL_CONN_OK)
        return PW_EXIT_OK;
    if (st == CL_CONN_REPLY && *status == 2 && strcmp(command, "series") == 0)
        cl_out_error("report", "the collector does not answer \"series\" "
                     "(it predates parity report --site): upgrade the "
                     "collector");
    else if (!(st == CL_CONN_REPLY && expected && *status == expected))
        cl_out_error("report", "%s: %s", command, err);
    return st == CL_CONN_REPLY ? PW_EXIT_DATA : cl_conn_exit_code(st);
}

/* Send one request of --site: PW_EXIT_OK with *id, or the exit code
 * after printing why. */
static int
s_site_send(cl_conn_t *c, const char *command, const json_t *args,
            uint64_t *id)
{
    char err[512];
    int st = cl_conn_send(c, command, args, id, err, sizeof err);
    if (st == CL_CONN_OK)
        return PW_EXIT_OK;
    cl_out_error("report", "%s: %s", command, err);
    return cl_conn_exit_code(st);
}

/* One request of --site on the open connection (s_site_wait's answer). */
static int
s_site_ask(cl_conn_t *c, const char *command, const json_t *args,
           json_t **body, int *status, int expected)
{
    uint64_t id;
    *body = NULL;
    *status = 0;
    int rc = s_site_send(c, command, args, &id);
    return rc == PW_EXIT_OK ? s_site_wait(c, id, command, body, status,
                                          expected) : rc;
}

/* Runs per series the site asks for: what one history plot draws. */
#define S_SITE_RUNS 200

/* Append answer one (taken) of a `series` request with args to all's
 * "series"; when it could not hold everything ("truncated") and args
 * name no host, ask once per host of the hosts answer instead. */
static int
s_site_series_add(cl_conn_t *c, json_t *args, const json_t *hosts,
                  json_t *one, json_t *all)
{
    json_t *x;
    size_t i;
    int rc = PW_EXIT_OK, status;
    bool cut = json_is_true(json_object_get(one, "truncated"));
    if (cut && hosts && !json_object_get(args, "host")) {
        json_decref(one);
        json_array_foreach(json_object_get(hosts, "hosts"), i, x) {
            json_object_set_new(args, "host", json_string(pw_out_str(x, "name",
                                                                "")));
            if ((rc = s_site_ask(c, "series", args, &one, &status, 0)) !=
                PW_EXIT_OK)
                break;
            rc = s_site_series_add(c, args, NULL, one, all);
            if (rc != PW_EXIT_OK)
                break;
        }
        json_object_del(args, "host");
        return rc;
    }
    json_array_foreach(json_object_get(one, "series"), i, x)
        json_array_append(json_object_get(all, "series"), x);
    if (cut)
        json_object_set_new(all, "truncated", json_true());
    json_decref(one);
    return PW_EXIT_OK;
}

/* The `series` arguments of benchmark k of list (its first series of
 * that benchmark). */
static void
s_site_bench_args(json_t *args, const json_t *first)
{
    json_object_set_new(args, "suite", json_string(pw_out_str(first, "suite",
                                                         "")));
    json_object_set_new(args, "benchmark", json_string(
        pw_out_str(first, "benchmark", "")));
    json_object_set_new(args, "runs", json_integer(S_SITE_RUNS));
    /* A plot per metric the benchmark tracks (docs/regressions.md
     * "Metrics"). */
    json_object_set_new(args, "metric", json_string("all"));
}

/* Benchmarks asked for ahead of the page being drawn, one per
 * connection (cl_conn keeps one request outstanding per connection):
 * with one ahead, the collector's database work and its encoding of the
 * next answer ran one after the other while the client drew; with two,
 * the collector's two query workers overlap them (docs/performance.md,
 * "Regressions over time"). */
#define S_SITE_AHEAD 2

/* The series of the site, in two passes so that no answer outgrows a
 * frame (docs/protocol.md 10.14): every series with its newest 2 runs,
 * to learn the benchmarks, then each benchmark's series in full, written
 * as its page (the client holds S_SITE_AHEAD benchmarks' series at most,
 * not the fleet's), either per host when one answer cannot hold it.
 * Benchmark i goes over conns[i % S_SITE_AHEAD], asked for before the
 * pages ahead of it are drawn, so that the collector answers while the
 * client draws. conns[0] is c; the others are opened here with co. */
static int
s_site_series(cl_conn_t *c, const cl_conn_opts_t *co, const json_t *filter,
              const json_t *hosts, cl_site_t *site)
{
    cl_conn_t *conns[S_SITE_AHEAD] = { c };
    uint64_t ids[S_SITE_AHEAD] = { 0 };
    json_t *list = json_pack("{s:[],s:b}", "series", "truncated", 0),
           *args = json_deep_copy(filter), *one = NULL, *seen = json_object(),
           *firsts = json_array(), *ans = NULL, *ser;
    int rc = PW_EXIT_SYSTEM, status, code = 0;
    size_t i;
    char err[1024];
    if (!list || !args || !seen || !firsts ||
        json_object_set_new(args, "runs", json_integer(2)) != 0)
        goto oom;
    if ((rc = s_site_ask(c, "series", args, &ans, &status, 0)) != PW_EXIT_OK
        || (rc = s_site_series_add(c, args, hosts, ans, list)) != PW_EXIT_OK)
        goto done;
    json_array_foreach(json_object_get(list, "series"), i, ser) {
        char key[2048];
        snprintf(key, sizeof key, "%s\x1f%s", pw_out_str(ser, "suite", ""),
                 pw_out_str(ser, "benchmark", ""));
        if (json_object_get(seen, key) ||
            json_object_size(seen) >= CL_SITE_MAX_PAGES)
            continue;
        json_object_set_new(seen, key, json_true());
        json_array_append(firsts, ser);
    }
    bool cut_all = json_is_true(json_object_get(list, "truncated"));
    json_decref(list);
    list = NULL;
    size_t n = json_array_size(firsts);
    for (i = 0; i < n && i < S_SITE_AHEAD; i++) {
        if (!conns[i] && !(conns[i] = cl_conn_open(co, &code, err,
                                                   sizeof err))) {
            cl_out_error("report", "%s", err);
            rc = cl_conn_exit_code(code);
            goto done;
        }
        s_site_bench_args(args, json_array_get(firsts, i));
        if ((rc = s_site_send(conns[i], "series", args, &ids[i])) !=
            PW_EXIT_OK)
            goto done;
    }
    for (i = 0; i < n; i++) {
        cl_conn_t *ci = conns[i % S_SITE_AHEAD];
        uint64_t *id = &ids[i % S_SITE_AHEAD];
        if ((rc = s_site_wait(ci, *id, "series", &ans, &status, 0)) !=
            PW_EXIT_OK)
            goto done;
        if (!(one = json_pack("{s:[],s:b}", "series", "truncated", 0))) {
            json_decref(ans);
            goto oom;
        }
        s_site_bench_args(args, json_array_get(firsts, i));
        if ((rc = s_site_series_add(ci, args, hosts, ans, one)) != PW_EXIT_OK)
            goto done;
        if (i + S_SITE_AHEAD < n) {
            s_site_bench_args(args, json_array_get(firsts, i + S_SITE_AHEAD));
            if ((rc = s_site_send(ci, "series", args, id)) != PW_EXIT_OK)
                goto done;
        }
        if (cl_site_add(site, json_object_get(one, "series"), cut_all ||
                        json_is_true(json_object_get(one, "truncated")),
                        err, sizeof err) != 0) {
            cl_out_error("report", "--site: %s", err);
            rc = PW_EXIT_DATA;
            goto done;
        }
        json_decref(one);
        one = NULL;
    }
    rc = PW_EXIT_OK;
    goto done;
oom:
    cl_out_error("report", "out of memory asking for the series");
    rc = PW_EXIT_SYSTEM;
done:
    json_decref(list);
    json_decref(args);
    json_decref(one);
    json_decref(seen);
    json_decref(firsts);
    for (i = 1; i < S_SITE_AHEAD; i++)
        cl_conn_destroy(&conns[i]);
    return rc;
}

/* The change points of a `regressions` answer: its "change_points"
 * object (docs/protocol.md 10.12), or the answer itself when it has
 * "open" at the top. NULL from a collector without change points. */
static const json_t *
s_change_points(const json_t *regs)
{
    const json_t *cp = json_object_get(regs, "change_points");
    if (json_is_array(json_object_get(cp, "open")))
        return cp;
    if (json_is_array(json_object_get(regs, "open")))
        return regs;
    return NULL;
}

/* --site: ask hosts, the latest job's verdicts, the change points and
 * the series (since_us and tags filter the last two), assemble the
 * document of cl_site.h and write it. */
static int
s_site(const cl_conn_opts_t *co, const char *dir, json_int_t since_us,
       json_t *tags)
{
    char err[1024];
    int code = 0, status = 0, rc;
    json_t *hosts = NULL, *latest = NULL, *regs = NULL, *args = NULL,
           *doc = NULL;
    cl_site_t *site = NULL;
    const json_t *cps;
    cl_conn_t *c = cl_conn_open(co, &code, err, sizeof err);
    if (!c) {
        cl_out_error("report", "%s", err);
        return cl_conn_exit_code(code);
    }
    rc = s_site_ask(c, "hosts", NULL, &hosts, &status, 0);
    if (rc != PW_EXIT_OK)
        goto done;
    args = json_pack("{s:b}", "latest", 1);
    rc = s_site_ask(c, "verdicts", args, &latest, &status, 4);
    if (rc != PW_EXIT_OK && status == 4) {
        latest = json_null();     /* no job yet: the site says so */
        rc = PW_EXIT_OK;
    } else if (rc != PW_EXIT_OK) {
        goto done;
    }
    json_decref(args);
    args = json_pack("{s:O}", "tags", tags);
    if (args && since_us > 0)
        json_object_set_new(args, "since_us", json_integer(since_us));
    rc = s_site_ask(c, "regressions", args, &regs, &status, 0);
    if (rc != PW_EXIT_OK)
        goto done;
    cps = s_change_points(regs);
    if (!cps) {
        cl_out_error("report", "the collector's regressions answer has no "
                     "change points (\"change_points\"; it predates parity "
                     "report --site): upgrade the collector");
        rc = PW_EXIT_DATA;
        goto done;
    }
    doc = json_pack("{s:I,s:O,s:O,s:O}", "generated_at_us",
                    (json_int_t)time(NULL) * 1000000, "hosts", hosts,
                    "latest", latest, "regressions", cps);
    if (!doc) {
        cl_out_error("report", "out of memory assembling the site");
        rc = PW_EXIT_SYSTEM;
        goto done;
    }
    if (!(site = cl_site_begin(doc, dir, err, sizeof err))) {
        cl_out_error("report", "--site: %s", err);
        rc = PW_EXIT_DATA;
        goto done;
    }
    rc = s_site_series(c, co, args, hosts, site);
    if (rc == PW_EXIT_OK && cl_site_end(&site, err, sizeof err) != 0) {
        cl_out_error("report", "--site: %s", err);
        rc = PW_EXIT_DATA;
    }
done:
    cl_site_end(&site, NULL, 0);
    json_decref(args);
    json_decref(hosts);
    json_decref(latest);
    json_decref(regs);
    json_decref(doc);
    cl_conn_destroy(&c);
    return rc;
}

static void
s_usage(FILE *f)
{
    fprintf(f,
"usage: parity report [JOB | --latest] [--markdown | --html] [--out FILE]\n"
"                     [--metric NAME] [connection options]\n"
"       parity report --site DIR [--since DURATION] [--tag KEY=VALUE]...\n"
"                     [connection options]\n\n"
"One job as a document for people: suite and tags, each host's environment\n"
"(CPU, kernel, floor, warnings), the per-host verdict table with the\n"
"cross-host summary, and per benchmark each host's arm summaries (n, min,\n"
"median, max, IQR), a box plot per run (--html) and the verdicts'\n"
"diagnostics.\n\n"
"  --latest    the newest job (also without JOB)\n"
"  --markdown  Markdown (the default)\n"
"  --html      one HTML file, inline CSS and SVG, no external resources\n"
"  --out FILE  write there instead of stdout\n"
"  --metric M  the verdict table of wall, cpu or peak_rss alone (default:\n"
"              every metric the suite tracks, each benchmark's rows)\n\n"
"--site DIR writes a static site (no script, opens from file://): an\n"
"overview of hosts, open regressions and the latest job's verdicts, and a\n"
"page per benchmark with each host's history plot and box plots of its\n"
"newest runs. DIR is created, or must be empty or an earlier site.\n"
"  --since D   change points and runs of the last D (90s, 10m, 2h, 3d, 2w)\n"
"  --tag K=V   only runs tagged K=V; may repeat\n"
"Connection options as in `parity hosts --help`.\n\n"
"exit status: 0, 1 no such job (or not an admin key) or FILE/DIR cannot be\n"
"written, 2 usage, 3 no answer.\n");
}

enum {
    S_OPT_MARKDOWN = 1, S_OPT_HTML, S_OPT_LATEST, S_OPT_OUT, S_OPT_SITE,
    S_OPT_SINCE, S_OPT_TAG, S_OPT_METRIC,
};

static const struct option s_options[] = {
    { "markdown", no_argument, NULL, S_OPT_MARKDOWN },
    { "html", no_argument, NULL, S_OPT_HTML },
    { "latest", no_argument, NULL, S_OPT_LATEST },
    { "out", required_argument, NULL, S_OPT_OUT },
    { "site", required_argument, NULL, S_OPT_SITE },
    { "since", required_argument, NULL, S_OPT_SINCE },
    { "tag", required_argument, NULL, S_OPT_TAG },
    { "metric", required_argument, NULL, S_OPT_METRIC },
    { NULL, 0, NULL, 0 },
};

/* The options of report; the connection's are taken out before. */
typedef struct {
    const char *job, *out, *site;
    const char *metric;        /* the verdicts' metric, or "all" */
    bool latest;
    int formats;
    s_fmt_t fmt;
    json_int_t since_us;
    json_t *tags;              /* owned; {} when no --tag */
} s_opts_t;

/* Parse argv into o. PW_EXIT_OK, or PW_EXIT_USAGE after the error. */
static int
s_parse(int argc, char **argv, s_opts_t *o)
{
    int c;
    optind = 0;     /* full reinitialisation of glibc's getopt */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", s_options, NULL)) != -1) {
        switch (c) {
        case S_OPT_MARKDOWN: o->fmt = S_MARKDOWN; o->formats++; break;
        case S_OPT_HTML: o->fmt = S_HTML; o->formats++; break;
        case S_OPT_LATEST: o->latest = true; break;
        case S_OPT_METRIC: {
            vd_metric_t m;
            if (vd_metric_parse(optarg, &m) != 0) {
                cl_out_error("report", "--metric %.60s: want wall, cpu or "
                             "peak_rss", optarg);
                return PW_EXIT_USAGE;
            }
            o->metric = optarg;
            break;
        }
        case S_OPT_OUT:
            if (!*optarg) {
                cl_out_error("report", "--out needs a file name");
                return PW_EXIT_USAGE;
            }
            o->out = optarg;
            break;
        case S_OPT_SITE:
            if (!*optarg) {
                cl_out_error("report", "--site needs a directory");
                return PW_EXIT_USAGE;
            }
            o->site = optarg;
            break;
        case S_OPT_SINCE: {
            double sec;
            if (cl_out_duration(optarg, S_SINCE_MAX_S, &sec) != 0) {
                cl_out_error("report", "--since \"%s\": want a duration "
                             "up to 366d (90s, 10m, 2h, 3d, 2w)", optarg);
                return PW_EXIT_USAGE;
            }
            o->since_us = (json_int_t)(sec * 1e6);
            break;
        }
        case S_OPT_TAG:
            if (cl_out_key_value(o->tags, optarg) != 0) {
                cl_out_error("report", "--tag \"%s\": want KEY=VALUE",
                             optarg);
                return PW_EXIT_USAGE;
            }
            break;
        case ':':
            if (optopt == S_OPT_OUT)
                cl_out_error("report", "--out needs a file name");
            else if (optopt == S_OPT_SITE)
                cl_out_error("report", "--site needs a directory");
            else
                cl_out_error("report", "%s needs a value", argv[optind - 1]);
            return PW_EXIT_USAGE;
        default:
            cl_out_error("report", "unexpected argument \"%s\" (parity "
                         "report --help)", argv[optind - 1]);
            return PW_EXIT_USAGE;
        }
    }
    for (int i = optind; i < argc; i++) {
        if (o->job) {
            cl_out_error("report", "unexpected argument \"%s\" (parity "
                         "report --help)", argv[i]);
            return PW_EXIT_USAGE;
        }
        o->job = argv[i];
    }
    return PW_EXIT_OK;
}

/* Which combinations make sense: one format, one job, --site alone. */
static int
s_check(const s_opts_t *o)
{
    if (o->site && (o->job || o->latest || o->formats || o->out ||
                    o->metric)) {
        cl_out_error("report", "--site writes a whole site: give it without "
                     "JOB, --latest, --markdown, --html, --out or --metric");
        return PW_EXIT_USAGE;
    }
    if (!o->site && (o->since_us > 0 || json_object_size(o->tags) > 0)) {
        cl_out_error("report", "--since and --tag go with --site");
        return PW_EXIT_USAGE;
    }
    if (o->site)
        return PW_EXIT_OK;
    if (o->formats > 1) {
        cl_out_error("report", "give one of --markdown, --html");
        return PW_EXIT_USAGE;
    }
    if (o->job && o->latest) {
        cl_out_error("report", "give JOB or --latest, not both");
        return PW_EXIT_USAGE;
    }
    /* No JOB is the newest job (--latest), as `verdicts` does. */
    return PW_EXIT_OK;
}

/* One job's document: `report`, then `verdicts` of the same job. */
static int
s_document(const cl_conn_opts_t *co, const s_opts_t *o)
{
    json_t *args, *rep = NULL, *ver = NULL;
    FILE *f = NULL;
    int rc;
    args = o->job ? json_pack("{s:s}", "job", o->job) :
                    json_pack("{s:b}", "latest", 1);
    rc = cl_conn_ask("report", co, "report", args, &rep);
    if (rc != PW_EXIT_OK)
        goto done;
    /* The verdicts of exactly the job the report is of, even when a new
     * job started in between (--latest). */
    json_decref(args);
    args = json_pack("{s:s,s:s}", "job", pw_out_str(rep, "job", ""),
                     "metric", o->metric ? o->metric : "all");
    rc = cl_conn_ask("report", co, "verdicts", args, &ver);
    if (rc != PW_EXIT_OK)
        goto done;
    f = o->out ? fopen(o->out, "w") : stdout;
    if (!f) {
        cl_out_error("report", "--out %s: %s", o->out, strerror(errno));
        rc = PW_EXIT_DATA;
        goto done;
    }
    int w = cl_report_write(f, o->fmt, rep, ver);
    if (o->out)
        w |= fclose(f) != 0 ? -1 : 0;
    else
        w |= fflush(stdout) != 0 ? -1 : 0;
    if (w != 0) {
        cl_out_error("report", "writing %s failed", o->out ? o->out :
                     "stdout");
        rc = o->out ? PW_EXIT_DATA : PW_EXIT_SYSTEM;
    }
done:
    json_decref(args);
    json_decref(rep);
    json_decref(ver);
    return rc;
}

int
cl_report_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    s_opts_t o = { .fmt = S_MARKDOWN, .tags = json_object() };
    int rc;
    if (cl_out_wants_help(argc, argv)) {
        json_decref(o.tags);
        s_usage(stdout);
        return PW_EXIT_OK;
    }
    if (!o.tags) {
        cl_out_error("report", "out of memory");
        return PW_EXIT_SYSTEM;
    }
    if (cl_conn_verb_args("report", &argc, argv, &co) != 0) {
        rc = PW_EXIT_USAGE;
    } else if ((rc = s_parse(argc, argv, &o)) == PW_EXIT_OK &&
               (rc = s_check(&o)) == PW_EXIT_OK) {
        rc = o.site ? s_site(&co, o.site, o.since_us, o.tags) :
                      s_document(&co, &o);
    }
    json_decref(o.tags);
    return rc;
}
