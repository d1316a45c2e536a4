/* cl_report.c -- `parity report JOB|--latest [--markdown|--html]
 * [--out FILE]`: one job for humans, as one self-contained document:
 * the job, every host's environment and floor, the per-host verdict
 * table with the cross-host summary, then per benchmark each host's arm
 * summaries and the verdicts' diagnostics. Two collector answers:
 * `report` (docs/protocol.md 10.13) and `verdicts` (10.8) of the same
 * job. docs/commands/report.md.
 *
 * Every text that came from a suite, a host or a user is escaped for the
 * format (s_text): a benchmark named <script> is shown, never run. The
 * HTML is one file with inline CSS and no external resource. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_report.h"

#include "cl_conn.h"
#include "cl_out.h"
#include "cl_verbs.h"
#include "pw_json.h"
#include "vd_verdict.h"

typedef cl_report_format_t s_fmt_t;
#define S_MARKDOWN CL_REPORT_MARKDOWN
#define S_HTML     CL_REPORT_HTML

static const char *
s_str(const json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s && *s ? s : dflt;
}

static void
s_time(char *buf, size_t len, const json_t *us)
{
    json_int_t v = json_integer_value(us);
    time_t t = (time_t)(v / 1000000);
    struct tm tm;
    if (v <= 0 || !gmtime_r(&t, &tm) ||
        strftime(buf, len, "%Y-%m-%d %H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "-");
}

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

/* "k=v k=v" of an object of strings, "-" when empty. */
static void
s_pairs(char *buf, size_t len, const json_t *obj)
{
    const char *k;
    json_t *v;
    buf[0] = '\0';
    json_object_foreach((json_t *)obj, k, v) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "", k,
                 json_string_value(v) ? json_string_value(v) : "");
    }
    if (!buf[0])
        snprintf(buf, len, "-");
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
             s_str(rep, "job", "?"));
    s_pairs(tags, sizeof tags, json_object_get(rep, "tags"));
    s_pairs(vars, sizeof vars, json_object_get(rep, "vars"));
    s_time(created, sizeof created, json_object_get(rep, "created_at_us"));
    s_time(ended, sizeof ended, json_object_get(rep, "ended_at_us"));
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
    s_textf(f, fmt, "suite %s, state %s, tags %s", s_str(rep, "suite", "?"),
            s_str(rep, "state", "?"), tags);
    if (*s_str(rep, "label", ""))
        s_textf(f, fmt, ", label %s", s_str(rep, "label", ""));
    s_textf(f, fmt, ", variables %s, created %s, ended %s.", vars, created,
            ended);
    s_para_close(f, fmt);
}

static void
s_hosts(FILE *f, s_fmt_t fmt, const json_t *rep)
{
    static const char *const head[] = { "host", "state", "CPU", "kernel",
        "arch", "CPUs", "floor", "warnings" };
    s_heading(f, fmt, 2, "Hosts");
    s_table_open(f, fmt);
    s_row(f, fmt, head, 8, true);
    size_t i, k;
    json_t *h, *wn;
    json_array_foreach(json_object_get(rep, "hosts"), i, h) {
        char st[512], cpu[256], kern[256], arch[64], ncpu[32], floor[96],
             warn[1024] = "";
        snprintf(st, sizeof st, "%s%s%s", s_str(h, "state", "?"),
                 *s_str(h, "reason", "") ? ": " : "", s_str(h, "reason", ""));
        s_scalar(cpu, sizeof cpu, json_object_get(h, "cpu_model"));
        s_scalar(kern, sizeof kern, json_object_get(h, "kernel"));
        s_scalar(arch, sizeof arch, json_object_get(h, "arch"));
        s_scalar(ncpu, sizeof ncpu, json_object_get(h, "logical_cpus"));
        const json_t *fu = json_object_get(h, "floor_us");
        if (json_is_number(fu)) {
            char us[32];
            cl_out_us(us, sizeof us, json_number_value(fu));
            snprintf(floor, sizeof floor, "%s%s", us,
                     json_is_true(json_object_get(h, "floor_default")) ?
                     " (default: too few calibration samples)" : "");
        } else {
            snprintf(floor, sizeof floor, "-");
        }
        json_array_foreach(json_object_get(h, "warnings"), k, wn) {
            size_t used = strlen(warn);
            snprintf(warn + used, sizeof warn - used, "%s%s: %s",
                     used ? "; " : "", s_str(wn, "code", "?"),
                     s_str(wn, "message", ""));
        }
        const char *row[] = { s_str(h, "host", "?"), st, cpu, kern, arch,
                              ncpu, floor, *warn ? warn : "none" };
        s_row(f, fmt, row, 8, false);
    }
    s_table_close(f, fmt);
}

static const json_t *
s_entry(const json_t *cmp, const char *host)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(cmp, "hosts"), i, e)
        if (strcmp(s_str(e, "host", ""), host) == 0)
            return e;
    return NULL;
}

static void
s_cell(char *buf, size_t len, const json_t *e)
{
    const json_t *v = json_object_get(e, "verdict");
    if (!e)
        snprintf(buf, len, "-");
    else if (!json_is_object(v))
        snprintf(buf, len, "no verdict");
    else
        snprintf(buf, len, "%s %.3f", s_str(v, "outcome", "?"),
                 json_number_value(json_object_get(v, "ratio")));
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
        cells[2 + h] = s_str(json_array_get(hosts, h), "host", "?");
    cells[2 + nh] = "geomean";
    cells[3 + nh] = "summary";
    s_table_open(f, fmt);
    s_row(f, fmt, cells, nh + 4, true);
    size_t i;
    json_t *cmp;
    json_array_foreach(json_object_get(ver, "comparisons"), i, cmp) {
        const json_t *sum = json_object_get(cmp, "summary");
        char arms[512];
        snprintf(arms, sizeof arms, "%s vs %s", s_str(cmp, "subject", "?"),
                 s_str(cmp, "other", "?"));
        cells[0] = s_str(cmp, "benchmark", "?");
        cells[1] = arms;
        for (size_t h = 0; h < nh; h++) {
            s_cell(buf[h], sizeof buf[h], s_entry(cmp, s_str(
                json_array_get(hosts, h), "host", "")));
            cells[2 + h] = buf[h];
        }
        if (json_integer_value(json_object_get(sum, "hosts")) > 0)
            snprintf(buf[nh], sizeof buf[nh], "%.3f", json_number_value(
                json_object_get(sum, "geomean_ratio")));
        else
            snprintf(buf[nh], sizeof buf[nh], "-");
        cells[2 + nh] = buf[nh];
        cells[3 + nh] = s_str(sum, "consensus", "no hosts");
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
        if (strcmp(s_str(cmp, "benchmark", ""), bench) != 0)
            continue;
        const json_t *e = s_entry(cmp, host);
        if (!e)
            continue;
        const json_t *v = json_object_get(e, "verdict");
        s_para_open(f, fmt);
        if (!json_is_object(v)) {
            s_textf(f, fmt, "%s, %s vs %s: no verdict: %s", host,
                    s_str(cmp, "subject", "?"), s_str(cmp, "other", "?"),
                    s_str(e, "error", "?"));
            s_para_close(f, fmt);
            continue;
        }
        char floor[32];
        cl_out_us(floor, sizeof floor, json_number_value(
            json_object_get(v, "floor_us")));
        s_textf(f, fmt, "%s, %s vs %s: %s, ratio %.4f (tolerance %.4f), "
                "best ratio %.4f (tolerance %.4f), noise %.4f, floor %s, "
                "parity %g.", host, s_str(cmp, "subject", "?"),
                s_str(cmp, "other", "?"), s_str(v, "outcome", "?"),
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
        s_para_close(f, fmt);
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
        if (!json_object_get(seen, s_str(x, "benchmark", ""))) {
            json_object_set_new(seen, s_str(x, "benchmark", ""), json_true());
            json_array_append_new(order, json_string(s_str(x, "benchmark",
                                                           "")));
        }
    json_array_foreach(runs, i, x)
        if (!json_object_get(seen, s_str(x, "benchmark", ""))) {
            json_object_set_new(seen, s_str(x, "benchmark", ""), json_true());
            json_array_append_new(order, json_string(s_str(x, "benchmark",
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
            if (strcmp(s_str(run, "benchmark", ""), bench) != 0)
                continue;
            json_array_foreach(json_object_get(run, "arms"), a, arm) {
                const json_t *s = json_object_get(arm, "summary");
                char n[32], mn[32], md[32], mx[32], iqr[32], errs[32],
                     name[300];
                snprintf(name, sizeof name, "%s%s", s_str(arm, "name", "?"),
                         json_is_true(json_object_get(arm, "subject")) ?
                         " (subject)" : "");
                snprintf(errs, sizeof errs, "%" JSON_INTEGER_FORMAT,
                         json_integer_value(json_object_get(arm, "errors")));
                if (json_is_object(s)) {
                    snprintf(n, sizeof n, "%" JSON_INTEGER_FORMAT,
                             json_integer_value(json_object_get(s, "n")));
                    cl_out_us(mn, sizeof mn, json_number_value(
                        json_object_get(s, "min")));
                    cl_out_us(md, sizeof md, json_number_value(
                        json_object_get(s, "median")));
                    cl_out_us(mx, sizeof mx, json_number_value(
                        json_object_get(s, "max")));
                    cl_out_us(iqr, sizeof iqr, json_number_value(
                        json_object_get(s, "iqr")));
                } else {
                    snprintf(n, sizeof n, "0");
                    snprintf(mn, sizeof mn, "-");
                    snprintf(md, sizeof md, "-");
                    snprintf(mx, sizeof mx, "-");
                    snprintf(iqr, sizeof iqr, "-");
                }
                const char *row[] = { s_str(run, "host", "?"), name, n, mn,
                                      md, mx, iqr, errs };
                s_row(f, fmt, row, 8, false);
            }
        }
        s_table_close(f, fmt);
        json_array_foreach(runs, k, run) {
            if (strcmp(s_str(run, "benchmark", ""), bench) != 0)
                continue;
            if (strcmp(s_str(run, "status", ""), "complete") != 0) {
                s_para_open(f, fmt);
                s_textf(f, fmt, "%s: run %s is %s%s%s.", s_str(run, "host",
                        "?"), s_str(run, "run_id", "?"),
                        s_str(run, "status", "?"),
                        *s_str(run, "reason", "") ? ": " : "",
                        s_str(run, "reason", ""));
                s_para_close(f, fmt);
            }
            s_diagnostics(f, fmt, ver, bench, s_str(run, "host", ""));
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

static void
s_usage(FILE *f)
{
    fprintf(f,
"usage: parity report JOB | --latest [--markdown | --html] [--out FILE]\n"
"                     [connection options]\n\n"
"One job as a document for people: suite and tags, each host's environment\n"
"(CPU, kernel, floor, warnings), the per-host verdict table with the\n"
"cross-host summary, and per benchmark each host's arm summaries (n, min,\n"
"median, max, IQR) and the verdicts' diagnostics.\n\n"
"  --latest    the newest job\n"
"  --markdown  Markdown (the default)\n"
"  --html      one HTML file, inline CSS, no external resources\n"
"  --out FILE  write there instead of stdout\n"
"Connection options as in `parity hosts --help`.\n\n"
"exit status: 0, 1 no such job (or not an admin key) or FILE cannot be\n"
"written, 2 usage, 3 no answer.\n");
}

int
cl_report_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    char err[512];
    const char *job = NULL, *out = NULL;
    bool latest = false;
    int formats = 0, rc = CL_EXIT_USAGE;
    s_fmt_t fmt = S_MARKDOWN;
    json_t *args = NULL, *rep = NULL, *ver = NULL;
    FILE *f = NULL;
    if (cl_out_wants_help(argc, argv)) {
        s_usage(stdout);
        return CL_EXIT_OK;
    }
    if (cl_conn_take_args(&argc, argv, &co, err, sizeof err) != 0) {
        cl_out_error("report", "%s", err);
        return CL_EXIT_USAGE;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--markdown") == 0) {
            fmt = S_MARKDOWN;
            formats++;
        } else if (strcmp(a, "--html") == 0) {
            fmt = S_HTML;
            formats++;
        } else if (strcmp(a, "--latest") == 0) {
            latest = true;
        } else if (strcmp(a, "--out") == 0) {
            if (i + 1 >= argc || !*argv[i + 1]) {
                cl_out_error("report", "--out needs a file name");
                return CL_EXIT_USAGE;
            }
            out = argv[++i];
        } else if (a[0] == '-' || job) {
            cl_out_error("report", "unexpected argument \"%s\" (parity "
                         "report --help)", a);
            return CL_EXIT_USAGE;
        } else {
            job = a;
        }
    }
    if (formats > 1) {
        cl_out_error("report", "give one of --markdown, --html");
        return CL_EXIT_USAGE;
    }
    if (job && latest) {
        cl_out_error("report", "give JOB or --latest, not both");
        return CL_EXIT_USAGE;
    }
    if (!job && !latest) {
        cl_out_error("report", "which job? (give JOB or --latest)");
        return CL_EXIT_USAGE;
    }
    args = job ? json_pack("{s:s}", "job", job) :
                 json_pack("{s:b}", "latest", 1);
    rc = cl_conn_ask("report", &co, "report", args, &rep);
    if (rc != CL_EXIT_OK)
        goto done;
    /* The verdicts of exactly the job the report is of, even when a new
     * job started in between (--latest). */
    json_decref(args);
    args = json_pack("{s:s}", "job", s_str(rep, "job", ""));
    rc = cl_conn_ask("report", &co, "verdicts", args, &ver);
    if (rc != CL_EXIT_OK)
        goto done;
    f = out ? fopen(out, "w") : stdout;
    if (!f) {
        cl_out_error("report", "--out %s: %s", out, strerror(errno));
        rc = CL_EXIT_DATA;
        goto done;
    }
    int w = cl_report_write(f, fmt, rep, ver);
    if (out) {
        w |= fclose(f) != 0 ? -1 : 0;
        f = NULL;
    } else {
        w |= fflush(stdout) != 0 ? -1 : 0;
    }
    if (w != 0) {
        cl_out_error("report", "writing %s failed", out ? out : "stdout");
        rc = out ? CL_EXIT_DATA : CL_EXIT_SYSTEM;
    }
done:
    json_decref(args);
    json_decref(rep);
    json_decref(ver);
    return rc;
}
