/* cl_verdicts.c -- `parity verdicts [JOB|--latest] [--json|--csv|
 * --markdown]` and the printer behind it (cl_verdicts.h). Each host's
 * verdict is its own (its own samples and floor); the summary columns are
 * the collector's vd_fleet summary. docs/commands/verdicts.md. */
#include "cl_verdicts.h"

#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cl_aa.h"
#include "cl_conn.h"
#include "cl_out.h"
#include "pw_out.h"
#include "cl_verbs.h"
#include "vd_metric.h"

/* Hosts shown as columns; more are shown as rows (one per host). */
#define S_HOST_COLUMNS 8

/* "loss 1.162", "no verdict", or the host's state when it has no run. */
static void
s_cell(char *buf, size_t len, const json_t *cmp, const json_t *host)
{
    const json_t *e = pw_out_entry(cmp, pw_out_str(host, "host", ""));
    if (!e) {
        /* No run of this pair from the host: where its job stands. */
        const char *st = pw_out_str(host, "state", "-");
        snprintf(buf, len, "%s", strcmp(st, "done") == 0 ? "-" : st);
    } else {
        cl_out_cell(buf, len, e);
    }
}

static void
s_arms(char *buf, size_t len, const json_t *cmp)
{
    snprintf(buf, len, "%s vs %s", pw_out_str(cmp, "subject", "?"),
             pw_out_str(cmp, "other", "?"));
}

static int
s_print_markdown_row(FILE *f, const char *const *cells, size_t n)
{
    fputc('|', f);
    for (size_t i = 0; i < n; i++) {
        fputc(' ', f);
        for (const char *p = cells[i]; *p; p++) {
            if (*p == '|')
                fputc('\\', f);
            fputc(*p, f);
        }
        fputs(" |", f);
    }
    fputc('\n', f);
    return ferror(f) ? -1 : 0;
}

static int
s_print_csv(FILE *f, const json_t *body)
{
    static const char *const head[] = {
        "job", "benchmark", "subject", "other", "host", "run_id", "outcome",
        "ratio", "best_ratio", "tolerance", "best_tolerance", "floor_us",
        "consensus", "geomean_ratio", "metric" };
    const size_t n = sizeof head / sizeof *head;
    for (size_t i = 0; i < n; i++)
        pw_out_csv_field(f, head[i], i + 1 == n);
    size_t i, k;
    json_t *cmp, *e;
    json_array_foreach(json_object_get(body, "comparisons"), i, cmp) {
        const json_t *sum = json_object_get(cmp, "summary");
        char gm[PW_OUT_NUMBER_MAX] = "";
        if (json_integer_value(json_object_get(sum, "hosts")) > 0)
            pw_out_json_number(gm, sizeof gm, sum, "geomean_ratio");
        json_array_foreach(json_object_get(cmp, "hosts"), k, e) {
            const json_t *v = json_object_get(e, "verdict");
            char num[5][PW_OUT_NUMBER_MAX];
            const char *keys[] = { "ratio", "best_ratio", "tolerance",
                                   "best_tolerance", "floor_us" };
            for (int q = 0; q < 5; q++)
                pw_out_json_number(num[q], sizeof num[q], v, keys[q]);
            const char *row[] = {
                pw_out_str(body, "job", ""), pw_out_str(cmp, "benchmark", ""),
                pw_out_str(cmp, "subject", ""), pw_out_str(cmp, "other", ""),
                pw_out_str(e, "host", ""), pw_out_str(e, "run_id", ""),
                json_is_object(v) ? pw_out_str(v, "outcome", "") : "error",
                num[0], num[1], num[2], num[3], num[4],
                pw_out_str(sum, "consensus", ""), gm,
                pw_out_str(cmp, "metric", "wall") };
            for (size_t c = 0; c < n; c++)
                pw_out_csv_field(f, row[c], c + 1 == n);
        }
    }
    return ferror(f) ? -1 : 0;
}

/* When the hosts ran more than one version of the suite: one line per
 * version (the first 12 hex digits of its SHA-256, then its hosts),
 * the one most hosts ran first; the others are marked. */
static void
s_print_suite_versions(FILE *f, const json_t *body, bool markdown)
{
    const json_t *groups = json_object_get(body, "suite_digests");
    size_t n = json_array_size(groups), i, k;
    json_t *g, *h;
    if (n < 2)
        return;
    fprintf(f, "%ssuite %s: the hosts ran %zu versions of it (SHA-256 of "
            "the suite file):\n", markdown ? "\n" : "",
            pw_out_str(body, "suite", "?"), n);
    json_array_foreach(groups, i, g) {
        fprintf(f, "%s%.12s ", markdown ? "- " : "  ",
                pw_out_str(g, "digest", "?"));
        json_array_foreach(json_object_get(g, "hosts"), k, h)
            fprintf(f, "%s%s", k ? ", " : "", json_string_value(h) ?
                    json_string_value(h) : "?");
        fprintf(f, "%s\n", i ? "  (differs from the most hosts')" : "");
    }
}

/* What each host's last A/A self-test says about its verdicts, one
 * line per host (a collector that does not send "selftest": none). */
static void
s_print_selftests(FILE *f, const json_t *hosts, bool markdown)
{
    size_t i;
    json_t *h;
    bool first = true;
    json_array_foreach(hosts, i, h) {
        const json_t *st = json_object_get(h, "selftest");
        if (!st)
            continue;
        char text[256], when[96] = "";
        cl_aa_text(text, sizeof text, st);
        cl_aa_when(when, sizeof when, st);
        if (markdown && first)
            fputc('\n', f);
        first = false;
        fprintf(f, "%s%s: %sthis host: %s%s%s%s\n", markdown ? "- " : "",
                pw_out_str(h, "host", "?"), cl_aa_warns(st) ? "warning: "
                : "", text, *when ? " (self-test of " : "", when,
                *when ? ")" : json_is_object(st) ? "" : " (parity selftest)");
    }
}

/* What each host's floor pooled, one line per host: its newest run's
 * (a collector that does not send "floor_pool": none). */
static void
s_print_floors(FILE *f, const json_t *hosts, const json_t *cmps,
               bool markdown)
{
    size_t i, k, e;
    json_t *h, *cmp, *entry;
    bool first = true;
    json_array_foreach(hosts, i, h) {
        const char *name = pw_out_str(h, "host", "?");
        const json_t *pool = NULL, *verdict = NULL;
        json_array_foreach(cmps, k, cmp)
            json_array_foreach(json_object_get(cmp, "hosts"), e, entry)
                if (strcmp(pw_out_str(entry, "host", ""), name) == 0
                    && json_object_get(entry, "floor_pool")) {
                    pool = json_object_get(entry, "floor_pool");
                    verdict = json_object_get(entry, "verdict");
                }
        if (!pool)
            continue;
        char text[160], us[32];
        cl_out_pool(text, sizeof text, pool, 0);
        const json_t *fu = json_object_get(verdict, "floor_us");
        if (markdown && first)
            fputc('\n', f);
        first = false;
        fprintf(f, "%s%s: floor %s from %s%s\n", markdown ? "- " : "", name,
                json_is_number(fu) ? pw_out_us(us, sizeof us,
                                               json_number_value(fu)) : "?",
                text, json_is_false(json_object_get(pool, "quiet"))
                ? " (fewer than 100 quiet in its window)" : "");
    }
}

/* The other metrics' floors, a line per host and metric (from its
 * first comparison of that metric): what each host's verdicts on it
 * used (docs/verdict.md "Metrics"). */
static void
s_print_metric_floors(FILE *f, const json_t *cmps, bool markdown)
{
    bool done[VD_METRIC_COUNT] = { false }, first = true;
    size_t i, k;
    json_t *cmp, *e;
    json_array_foreach(cmps, i, cmp) {
        vd_metric_t m;
        if (vd_metric_parse(pw_out_str(cmp, "metric", "wall"), &m) != 0 ||
            m == VD_METRIC_WALL || done[m])
            continue;
        done[m] = true;
        json_array_foreach(json_object_get(cmp, "hosts"), k, e) {
            const json_t *v = json_object_get(e, "verdict");
            const json_t *fl = json_object_get(v, "floor_us");
            if (!json_is_number(fl))
                continue;
            char val[40];
            if (m == VD_METRIC_PEAK_RSS)
                snprintf(val, sizeof val, "%.0f KiB", json_number_value(fl));
            else
                pw_out_us(val, sizeof val, json_number_value(fl));
            if (markdown && first)
                fputc('\n', f);
            first = false;
            fprintf(f, "%s%s: %s floor %s from %" JSON_INTEGER_FORMAT
                    " calibration runs%s%s%s\n", markdown ? "- " : "",
                    pw_out_str(e, "host", "?"), vd_metric_name(m), val,
                    json_integer_value(json_object_get(v, "floor_samples")),
                    *pw_out_str(v, "source", "") ? " (" : "",
                    pw_out_str(v, "source", ""),
                    *pw_out_str(v, "source", "") ? ")" : "");
        }
    }
}

/* The table's first line: job, suite, state, tags and label. */
static void
s_job_line(FILE *f, const json_t *body)
{
    char tags[PW_OUT_CELL_MAX];
    pw_out_pairs(tags, sizeof tags, json_object_get(body, "tags"), "");
    const char *label = pw_out_str(body, "label", "");
    fprintf(f, "job %s  suite %s  %s%s%s%s%s\n", pw_out_str(body, "job", "?"),
            pw_out_str(body, "suite", "?"), pw_out_str(body, "state", "?"),
            *tags ? "  tags " : "", tags, *label ? "  label " : "", label);
}

/* One row of comparison cmp: benchmark, arms, then a cell per host
 * (columns) or host r's name and cell, then geomean and summary. */
static void
s_row_cells(char cells[][PW_OUT_CELL_MAX], const json_t *cmp,
            const json_t *hosts, bool columns, size_t r)
{
    const json_t *sum = json_object_get(cmp, "summary");
    size_t c = 2;
    /* Another metric's comparison is named with its metric. */
    pw_out_bench_metric(cells[0], PW_OUT_CELL_MAX,
                        pw_out_str(cmp, "benchmark", "?"),
                        pw_out_str(cmp, "metric", "wall"));
    s_arms(cells[1], PW_OUT_CELL_MAX, cmp);
    if (columns) {
        for (size_t h = 0; h < json_array_size(hosts); h++, c++)
            s_cell(cells[c], PW_OUT_CELL_MAX, cmp, json_array_get(hosts, h));
    } else {
        const json_t *e = json_array_get(json_object_get(cmp, "hosts"), r);
        snprintf(cells[c++], PW_OUT_CELL_MAX, "%s",
                 pw_out_str(e, "host", "?"));
        json_t *one = json_pack("{s:s}", "host", pw_out_str(e, "host", ""));
        s_cell(cells[c++], PW_OUT_CELL_MAX, cmp, one);
        json_decref(one);
    }
    cl_out_geomean(cells[c++], PW_OUT_CELL_MAX, sum);
    snprintf(cells[c], PW_OUT_CELL_MAX, "%s",
             pw_out_str(sum, "consensus", "no hosts"));
}

/* Hosts that did not finish say why (in Markdown as a list after a blank
 * line, so a report keeps it). */
static void
s_unfinished(FILE *f, const json_t *hosts, bool markdown)
{
    bool first = true;
    size_t i;
    json_t *h;
    json_array_foreach(hosts, i, h) {
        const char *st = pw_out_str(h, "state", "?");
        if (strcmp(st, "done") == 0)
            continue;
        if (markdown && first)
            fputc('\n', f);
        first = false;
        fprintf(f, "%s%s: %s%s%s\n", markdown ? "- " : "",
                pw_out_str(h, "host", "?"), st,
                *pw_out_str(h, "reason", "") ? ": " : "",
                pw_out_str(h, "reason", ""));
    }
}

/* The instructions comparison beside each verdict that has one
 * (hosts that count instructions, docs/verdict.md "Counters beside wall
 * time"): a line per host and comparison, after the table. */
static void
s_print_counters(FILE *f, const json_t *cmps, bool markdown)
{
    size_t i, k;
    json_t *cmp, *h;
    json_array_foreach(cmps, i, cmp)
        json_array_foreach(json_object_get(cmp, "hosts"), k, h) {
            const char *text = json_string_value(json_object_get(
                json_object_get(json_object_get(h, "verdict"),
                                "instructions"), "text"));
            if (text)
                fprintf(f, "%s%s %s vs %s on %s: %s\n", markdown ? "- " : "",
                        pw_out_str(cmp, "benchmark", "?"),
                        pw_out_str(cmp, "subject", "?"),
                        pw_out_str(cmp, "other", "?"),
                        pw_out_str(h, "host", "?"), text);
        }
}

int
cl_verdicts_print(FILE *f, const json_t *body, cl_verdicts_format_t format)
{
    if (format == CL_VERDICTS_JSON)
        return pw_out_json(f, body);
    if (format == CL_VERDICTS_CSV)
        return s_print_csv(f, body);

    const json_t *hosts = json_object_get(body, "hosts");
    const json_t *cmps = json_object_get(body, "comparisons");
    size_t nh = json_array_size(hosts);
    bool columns = nh <= S_HOST_COLUMNS;
    size_t ncols = columns ? 4 + nh : 6;
    const char *head[PW_OUT_TABLE_COLS];
    char cells[PW_OUT_TABLE_COLS][PW_OUT_CELL_MAX];
    const char *row[PW_OUT_TABLE_COLS];
    int rc = 0;

    if (format == CL_VERDICTS_TABLE)
        s_job_line(f, body);
    head[0] = "benchmark";
    head[1] = "arms";
    if (columns) {
        for (size_t i = 0; i < nh; i++)
            head[2 + i] = pw_out_str(json_array_get(hosts, i), "host", "?");
        head[2 + nh] = "geomean";
        head[3 + nh] = "summary";
    } else {
        head[2] = "host";
        head[3] = "outcome";
        head[4] = "geomean";
        head[5] = "summary";
    }
    pw_out_table_t *t = pw_out_table_new(ncols);
    if (!t)
        return -1;
    if (format == CL_VERDICTS_MARKDOWN) {
        s_print_markdown_row(f, head, ncols);
        for (size_t i = 0; i < ncols; i++)
            fputs(i ? "---|" : "|---|", f);
        fputc('\n', f);
    } else {
        pw_out_table_add(t, head);
    }
    size_t i;
    json_t *cmp;
    json_array_foreach(cmps, i, cmp) {
        size_t reps = columns ? 1 : json_array_size(json_object_get(cmp,
                                                                    "hosts"));
        for (size_t r = 0; r < reps; r++) {
            s_row_cells(cells, cmp, hosts, columns, r);
            for (size_t q = 0; q < ncols; q++)
                row[q] = cells[q];
            if (format == CL_VERDICTS_MARKDOWN)
                rc |= s_print_markdown_row(f, row, ncols);
            else
                pw_out_table_add(t, row);
        }
    }
    if (format == CL_VERDICTS_TABLE) {
        rc |= pw_out_table_print(t, f);
        if (json_array_size(cmps) == 0)
            fprintf(f, "(no verdicts stored for this job%s)\n",
                    strcmp(pw_out_str(body, "state", ""), "active") == 0 ?
                    " yet" : "");
    }
    if (format == CL_VERDICTS_TABLE || format == CL_VERDICTS_MARKDOWN) {
        s_unfinished(f, hosts, format == CL_VERDICTS_MARKDOWN);
        s_print_suite_versions(f, body, format == CL_VERDICTS_MARKDOWN);
        s_print_selftests(f, hosts, format == CL_VERDICTS_MARKDOWN);
        s_print_floors(f, hosts, cmps, format == CL_VERDICTS_MARKDOWN);
        s_print_metric_floors(f, cmps, format == CL_VERDICTS_MARKDOWN);
        s_print_counters(f, cmps, format == CL_VERDICTS_MARKDOWN);
    }
    if (format == CL_VERDICTS_TABLE && json_array_size(cmps) > 0)
        fprintf(f, "ratio = subject median / other median on that host "
                "(below 1: the subject is faster);\neach verdict uses its "
                "host's own samples and noise floor.\n");
    pw_out_table_destroy(&t);
    return rc || ferror(f) ? -1 : 0;
}

/* The reason host has no verdict in an ended job: its state and reason
 * when it did not finish, else the first comparison's error for it. */
static void
s_host_reason(const json_t *body, const json_t *host)
{
    const char *name = pw_out_str(host, "host", "?");
    const char *st = pw_out_str(host, "state", "?");
    if (strcmp(st, "done") != 0) {
        const char *why = pw_out_str(host, "reason", "");
        fprintf(stderr, "  %s: %s%s%s\n", name, st, *why ? ": " : "", why);
        return;
    }
    size_t i;
    json_t *cmp;
    json_array_foreach(json_object_get(body, "comparisons"), i, cmp) {
        const json_t *e = pw_out_entry(cmp, name);
        if (e) {
            fprintf(stderr, "  %s: %s: %s\n", name,
                    pw_out_str(cmp, "benchmark", "?"),
                    pw_out_str(e, "error",
                               pw_out_str(e, "status", "no verdict")));
            return;
        }
    }
    fprintf(stderr, "  %s: done, but stored no run\n", name);
}

/* True for a job that has ended with no verdict from any host, after
 * saying so on stderr with each host's reason: a script that reads only
 * the exit status must not take it for a result. */
static bool
s_none_judged(const json_t *body)
{
    if (strcmp(pw_out_str(body, "state", "active"), "active") == 0)
        return false;
    size_t i, j;
    json_t *cmp, *e;
    json_array_foreach(json_object_get(body, "comparisons"), i, cmp)
        json_array_foreach(json_object_get(cmp, "hosts"), j, e)
            if (json_is_object(json_object_get(e, "verdict")))
                return false;
    const json_t *hosts = json_object_get(body, "hosts");
    cl_out_error("verdicts", "job %s (%s): no host produced a verdict%s",
                 pw_out_str(body, "job", "?"), pw_out_str(body, "state", "?"),
                 json_array_size(hosts) ? ":" : " (it had no hosts)");
    json_array_foreach(hosts, i, e)
        s_host_reason(body, e);
    return true;
}

static void
s_usage(FILE *f)
{
    fprintf(f, "usage: parity verdicts [JOB | --latest] [--metric NAME] "
               "[--json | --csv |\n                       --markdown] "
               "[connection options]\n\n"
               "Per benchmark and arm pair, one column per host with its "
               "outcome and ratio,\nthen the cross-host summary: geometric "
               "mean of the ratios and the consensus.\nWithout JOB: the "
               "latest job.\n\n"
               "  --metric NAME  wall (the default), cpu, peak_rss, or all: "
               "the verdicts on\n              that metric (docs/verdict.md "
               "\"Metrics\")\n"
               "  --json      the collector's answer (each host's verdict "
               "in the spec's written form)\n"
               "  --csv       one line per host verdict\n"
               "  --markdown  the table as Markdown\n"
               "Connection options as in `parity hosts --help`.\n\n"
               "exit status: 0, 1 no such job, or it ended and no host "
               "produced a verdict\n(each host's reason on stderr), 2 "
               "usage, 3 no answer.\n");
}

int
cl_verdicts_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    const char *job = NULL;
    cl_verdicts_format_t fmt = CL_VERDICTS_TABLE;
    int formats = 0;
    if (cl_out_wants_help(argc, argv)) {
        s_usage(stdout);
        return PW_EXIT_OK;
    }
    if (cl_conn_verb_args("verdicts", &argc, argv, &co) != 0)
        return PW_EXIT_USAGE;
    bool latest = false;
    const char *metric = "wall";
    enum { O_JSON = 256, O_CSV, O_MARKDOWN, O_LATEST, O_METRIC };
    static const struct option opts[] = {
        { "metric", required_argument, NULL, O_METRIC },
        { "json", no_argument, NULL, O_JSON },
        { "csv", no_argument, NULL, O_CSV },
        { "markdown", no_argument, NULL, O_MARKDOWN },
        { "latest", no_argument, NULL, O_LATEST },
        { NULL, 0, NULL, 0 } };
    int o;
    CL_CONN_EACH_OPTION(o, argc, argv, opts) {
        vd_metric_t m;
        if (o == O_LATEST) {
            latest = true;
        } else if (o == O_METRIC) {
            if (strcmp(optarg, "all") != 0 &&
                vd_metric_parse(optarg, &m) != 0) {
                cl_out_error("verdicts", "--metric %.60s: want wall, cpu, "
                             "peak_rss or all", optarg);
                return PW_EXIT_USAGE;
            }
            metric = optarg;
        } else if (o >= O_JSON && o <= O_MARKDOWN) {
            fmt = o == O_JSON ? CL_VERDICTS_JSON : o == O_CSV ?
                  CL_VERDICTS_CSV : CL_VERDICTS_MARKDOWN;
            formats++;
        } else {
            cl_out_getopt_error("verdicts", o, argv);
            return PW_EXIT_USAGE;
        }
    }
    if (cl_out_one_operand("verdicts", argc, argv, &job) != 0)
        return PW_EXIT_USAGE;
    if (formats > 1 || (job && latest)) {
        cl_out_error("verdicts", "%s", formats > 1 ?
                     "give one of --json, --csv, --markdown" :
                     "give JOB or --latest, not both");
        return PW_EXIT_USAGE;
    }
    json_t *args = job ? json_pack("{s:s}", "job", job) :
                         json_pack("{s:b}", "latest", 1);
    /* Wall time's alone is what an older collector answers: not sent. */
    if (args && strcmp(metric, "wall") != 0)
        json_object_set_new(args, "metric", json_string(metric));
    json_t *body = NULL;
    int rc = cl_conn_ask("verdicts", &co, "verdicts", args, &body);
    json_decref(args);
    if (rc != PW_EXIT_OK)
        return rc;
    rc = cl_verdicts_print(stdout, body, fmt) == 0 ? PW_EXIT_OK :
                                                     PW_EXIT_SYSTEM;
    fflush(stdout);   /* the table first, then the reasons on stderr */
    if (rc == PW_EXIT_OK && s_none_judged(body))
        rc = PW_EXIT_DATA;
    json_decref(body);
    return rc;
}
