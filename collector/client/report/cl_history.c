/* cl_history.c -- `parity history BENCHMARK`: one benchmark's stored
 * verdicts over time, one row per job, each host's own verdict and the
 * cross-host summary of that job (the collector's `history` answer,
 * docs/protocol.md 10.11), then each series' change points and what
 * changed on its host (the `series` answer, 10.14, kept in the body
 * under "series"). docs/commands/history.md. */
#include "cl_history.h"

#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_conn.h"
#include "cl_out.h"
#include "pw_out.h"
#include "cl_verbs.h"
#include "vd_metric.h"

/* Hosts shown as columns (when, job, tags, geomean and summary take 5
 * more, 12 in all: a terminal's width); more are shown one row per
 * host. */
#define S_HOST_COLUMNS 7
/* Most distinct hosts one pair's rows may name (the collector's bound
 * on --host filters is 256; a fleet without a filter may have more, and
 * then the per-host rows are used, which need no list). */
#define S_HOSTS_MAX 4096

/* "commit=c1 branch=main [label]" of a row. */
static void
s_tags(char *buf, size_t len, const json_t *row)
{
    pw_out_pairs(buf, len, json_object_get(row, "tags"), "");
    if (*pw_out_str(row, "label", "")) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s[%s]", used ? " " : "",
                 pw_out_str(row, "label", ""));
    }
    if (!buf[0])
        snprintf(buf, len, "-");
}

static int
s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct host names of a pair's rows, sorted, into names[max];
 * returns how many, or max + 1 when there are more. */
static size_t
s_pair_hosts(const json_t *pair, const char **names, size_t max)
{
    size_t n = 0, i, k;
    json_t *row, *e;
    json_array_foreach(json_object_get(pair, "rows"), i, row)
        json_array_foreach(json_object_get(row, "hosts"), k, e) {
            const char *h = pw_out_str(e, "host", "?");
            size_t j = 0;
            while (j < n && strcmp(names[j], h) != 0)
                j++;
            if (j < n)
                continue;
            if (n == max)
                return max + 1;
            names[n++] = h;
        }
    qsort(names, n, sizeof *names, s_cmp_str);
    return n;
}

static int
s_print_pair(FILE *f, const json_t *body, const json_t *pair,
             const char **hosts)
{
    size_t nh = s_pair_hosts(pair, hosts, S_HOSTS_MAX);
    bool columns = nh <= S_HOST_COLUMNS;
    size_t ncols = columns ? 5 + nh : 7;
    const char *head[PW_OUT_TABLE_COLS];
    char cells[PW_OUT_TABLE_COLS][PW_OUT_CELL_MAX];
    const char *row[PW_OUT_TABLE_COLS];
    int rc = 0;

    char bench[PW_OUT_CELL_MAX];
    fprintf(f, "%s: %s vs %s  (suite %s)\n",
            pw_out_bench_metric(bench, sizeof bench, pw_out_str(
                body, "benchmark", "?"), pw_out_str(body, "metric", "wall")),
            pw_out_str(pair, "subject", "?"), pw_out_str(pair, "other", "?"),
            pw_out_str(pair, "suite", "?"));
    head[0] = "when";
    head[1] = "job";
    head[2] = "tags";
    size_t c = 3;
    if (columns) {
        for (size_t h = 0; h < nh; h++)
            head[c++] = hosts[h];
    } else {
        head[c++] = "host";
        head[c++] = "outcome";
    }
    head[c++] = "geomean";
    head[c++] = "summary";
    pw_out_table_t *t = pw_out_table_new(ncols);
    if (!t)
        return -1;
    pw_out_table_left(t, 1);
    pw_out_table_left(t, 2);
    if (!columns)
        pw_out_table_left(t, 3);
    pw_out_table_left(t, ncols - 1);
    rc |= pw_out_table_add(t, head);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(pair, "rows"), i, r) {
        const json_t *sum = json_object_get(r, "summary");
        const json_t *entries = json_object_get(r, "hosts");
        size_t reps = columns ? 1 : json_array_size(entries);
        for (size_t k = 0; k < reps; k++) {
            pw_out_time(cells[0], PW_OUT_CELL_MAX,
                   json_integer_value(json_object_get(r, "at_us")),
                   PW_OUT_TIME_TABLE);
            snprintf(cells[1], PW_OUT_CELL_MAX, "%s",
                     *pw_out_str(r, "job", "") ?
                     pw_out_str(r, "job", "") : "(no job)");
            s_tags(cells[2], PW_OUT_CELL_MAX, r);
            c = 3;
            if (columns) {
                for (size_t h = 0; h < nh; h++, c++)
                    cl_out_cell(cells[c], PW_OUT_CELL_MAX,
                                pw_out_entry(r, hosts[h]));
            } else {
                const json_t *e = json_array_get(entries, k);
                snprintf(cells[c++], PW_OUT_CELL_MAX, "%s",
                         pw_out_str(e, "host", "?"));
                cl_out_cell(cells[c++], PW_OUT_CELL_MAX, e);
            }
            cl_out_geomean(cells[c++], PW_OUT_CELL_MAX, sum);
            snprintf(cells[c++], PW_OUT_CELL_MAX, "%s",
                     pw_out_str(sum, "consensus", "no hosts"));
            for (size_t q = 0; q < ncols; q++)
                row[q] = cells[q];
            rc |= pw_out_table_add(t, row);
        }
    }
    rc |= pw_out_table_print(t, f);
    pw_out_table_destroy(&t);
    return rc;
}

/* "ratio +79.1% loss (regression)" of a change point. */
static void
s_change_text(char *buf, size_t len, const json_t *cp)
{
    double m = json_number_value(json_object_get(cp, "magnitude"));
    snprintf(buf, len, "%s %+.1f%% %s%s", pw_out_str(cp, "metric", "?"),
             (m - 1.0) * 100.0, pw_out_str(cp, "outcome", "?"),
             json_is_true(json_object_get(cp, "regression")) ? " (regression)"
             : json_is_true(json_object_get(cp, "within_noise"))
             ? " (within noise)" : "");
}

/* Append text to notes[run] ("; " between). */
static void
s_note_add(json_t *notes, const char *run, const char *text)
{
    const char *was = json_string_value(json_object_get(notes, run));
    char buf[PW_OUT_CELL_MAX];
    /* A cell's worth: a run with more notes than fit ends in "...",
     * after its last whole UTF-8 sequence (json_string wants valid
     * UTF-8). */
    if (snprintf(buf, sizeof buf, "%s%s%s", was ? was : "",
                 was ? "; " : "", text) >= (int)sizeof buf) {
        size_t end = 0, k;
        while (end < sizeof buf - 4 &&
               (k = pw_out_utf8_len((const unsigned char *)buf + end)) &&
               end + k <= sizeof buf - 4)
            end += k;
        memcpy(buf + end, "...", 4);
    }
    json_object_set_new(notes, run, json_string(buf));
}

/* Run id -> what happened at that run: its series' change points and
 * the host's changes (the "series" the body was given). Caller owns. */
static json_t *
s_run_notes(const json_t *body)
{
    json_t *notes = json_object();
    size_t i, k;
    json_t *s, *x;
    json_array_foreach(json_object_get(body, "series"), i, s) {
        const json_t *runs = json_object_get(s, "runs");
        json_array_foreach(json_object_get(s, "change_points"), k, x) {
            char text[PW_OUT_CELL_MAX];
            const json_t *run = json_array_get(runs, (size_t)
                json_integer_value(json_object_get(x, "index")));
            s_change_text(text, sizeof text, x);
            if (notes && run)
                s_note_add(notes, pw_out_str(run, "run", ""), text);
        }
        json_array_foreach(json_object_get(s, "annotations"), k, x) {
            const json_t *run = json_array_get(runs, (size_t)
                json_integer_value(json_object_get(x, "index")));
            if (notes && run)
                s_note_add(notes, pw_out_str(run, "run", ""),
                           pw_out_str(x, "text", ""));
        }
    }
    return notes;
}

/* Under the tables: per series, its change points and the changes on
 * its host, at the run (job tags) where each happened. */
static int
s_print_changes(FILE *f, const json_t *body)
{
    size_t i, k;
    json_t *s, *x;
    bool any = false;
    json_array_foreach(json_object_get(body, "series"), i, s) {
        const json_t *runs = json_object_get(s, "runs");
        if (!json_array_size(json_object_get(s, "change_points")) &&
            !json_array_size(json_object_get(s, "annotations")))
            continue;
        char *vars = json_dumps(json_object_get(s, "vars"), JSON_COMPACT |
                                JSON_SORT_KEYS);
        fprintf(f, "%s%s, %s vs %s%s%s:\n", any ? "" : "\nchanges:\n",
                pw_out_str(s, "host", "?"), pw_out_str(s, "subject", "?"),
                pw_out_str(s, "other", "?"),
                vars && strcmp(vars, "{}") ? " " : "",
                vars && strcmp(vars, "{}") ? vars : "");
        free(vars);
        any = true;
        for (int pass = 0; pass < 2; pass++)
            json_array_foreach(json_object_get(s, pass ? "annotations" :
                                               "change_points"), k, x) {
                char text[PW_OUT_CELL_MAX], tags[PW_OUT_CELL_MAX];
                const json_t *run = json_array_get(runs, (size_t)
                    json_integer_value(json_object_get(x, "index")));
                if (pass)
                    snprintf(text, sizeof text, "%s",
                             pw_out_str(x, "text", ""));
                else
                    s_change_text(text, sizeof text, x);
                s_tags(tags, sizeof tags, run);
                fprintf(f, "  %s at %s%s\n", text, tags, pass ? "" :
                        " (first run after the change)");
                char bisect[PW_OUT_CELL_MAX];
                if (!pass && *pw_out_bisect(bisect, sizeof bisect,
                                            json_object_get(x, "bisect")))
                    fprintf(f, "    %s\n", bisect);
                if (!pass && *pw_out_confirm(bisect, sizeof bisect,
                                             json_object_get(x, "confirm")))
                    fprintf(f, "    %s\n", bisect);
            }
    }
    return ferror(f) ? -1 : 0;
}

static int
s_print_csv(FILE *f, const json_t *body)
{
    static const char *const head[] = {
        "benchmark", "suite", "subject", "other", "at", "job", "tags",
        "label", "host", "run_id", "outcome", "ratio", "best_ratio",
        "tolerance", "consensus", "geomean_ratio", "changes" };
    json_t *notes = s_run_notes(body);
    const size_t n = sizeof head / sizeof *head;
    for (size_t i = 0; i < n; i++)
        pw_out_csv_field(f, head[i], i + 1 == n);
    size_t i, k, h;
    json_t *pair, *r, *e;
    json_array_foreach(json_object_get(body, "pairs"), i, pair)
        json_array_foreach(json_object_get(pair, "rows"), k, r) {
            const json_t *sum = json_object_get(r, "summary");
            char at[64], tags[PW_OUT_CELL_MAX], gm[PW_OUT_NUMBER_MAX] = "";
            pw_out_time(at, sizeof at,
                   json_integer_value(json_object_get(r, "at_us")),
                   PW_OUT_TIME_TABLE);
            s_tags(tags, sizeof tags, r);
            if (json_integer_value(json_object_get(sum, "hosts")) > 0)
                pw_out_json_number(gm, sizeof gm, sum, "geomean_ratio");
            json_array_foreach(json_object_get(r, "hosts"), h, e) {
                const json_t *v = json_object_get(e, "verdict");
                char num[3][PW_OUT_NUMBER_MAX];
                pw_out_json_number(num[0], sizeof num[0], v, "ratio");
                pw_out_json_number(num[1], sizeof num[1], v, "best_ratio");
                pw_out_json_number(num[2], sizeof num[2], v, "tolerance");
                const char *row[] = {
                    pw_out_str(body, "benchmark", ""),
                    pw_out_str(pair, "suite", ""),
                    pw_out_str(pair, "subject", ""),
                    pw_out_str(pair, "other", ""),
                    at, pw_out_str(r, "job", ""), tags,
                    pw_out_str(r, "label", ""),
                    pw_out_str(e, "host", ""), pw_out_str(e, "run_id", ""),
                    json_is_object(v) ? pw_out_str(v, "outcome", "") : "error",
                    num[0], num[1], num[2], pw_out_str(sum, "consensus", ""),
                    gm,
                    pw_out_str(notes, pw_out_str(e, "run_id", ""), "") };
                for (size_t q = 0; q < n; q++)
                    pw_out_csv_field(f, row[q], q + 1 == n);
            }
        }
    json_decref(notes);
    return ferror(f) ? -1 : 0;
}

int
cl_history_print(FILE *f, const json_t *body, cl_history_format_t format)
{
    if (format == CL_HISTORY_JSON)
        return pw_out_json(f, body);
    if (format == CL_HISTORY_CSV)
        return s_print_csv(f, body);
    const json_t *pairs = json_object_get(body, "pairs");
    const char **names = calloc(S_HOSTS_MAX + 1, sizeof *names);
    int rc = 0;
    if (!names)
        return -1;
    size_t i;
    json_t *pair;
    json_array_foreach(pairs, i, pair) {
        if (i)
            fputc('\n', f);
        rc |= s_print_pair(f, body, pair, names);
    }
    if (json_array_size(pairs) == 0)
        fprintf(f, "(no verdicts of %s match: none stored yet, or the "
                "--host/--tag filters exclude them)\n",
                pw_out_str(body, "benchmark", "?"));
    else
        fprintf(f, "ratio = subject median / other median on that host "
                "(below 1: the subject is faster);\neach verdict uses its "
                "host's own samples and noise floor; oldest first.\n");
    if (json_is_true(json_object_get(body, "truncated")))
        fprintf(f, "(more verdicts than one answer holds: give --limit, "
                "--host or --tag)\n");
    rc |= s_print_changes(f, body);
    free(names);
    return rc || ferror(f) ? -1 : 0;
}

static void
s_usage(FILE *f)
{
    fprintf(f,
"usage: parity history BENCHMARK [--arm OTHER] [--suite SUITE] [--host H]...\n"
"                      [--tag KEY=VALUE]... [--limit N] [--by time|TAG]\n"
"                      [--metric NAME] [--json | --csv]\n"
"                      [connection options]\n\n"
"One benchmark's stored verdicts over time, oldest first: one row per job\n"
"(or per run without a job) with its tags, each host's own outcome and\n"
"ratio, and the cross-host summary. One table per subject-vs-other pair.\n"
"Then, per series (host, arms, job variables), its change points and what\n"
"changed on the host (kernel, CPU, governor, arms, agent), at the job\n"
"where each happened (`changes` in --csv, `series` in --json).\n\n"
"  --arm OTHER    only the pair against arm OTHER (default: every pair)\n"
"  --suite SUITE  only the benchmark of this suite (a name in two suites)\n"
"  --host H       only host H's verdicts; may repeat\n"
"  --tag K=V      only runs tagged K=V (e.g. branch=main); may repeat\n"
"  --limit N      the newest N jobs per pair (default 50, at most 1000)\n"
"  --by TAG       order jobs by TAG's value in job order (e.g. --by commit:\n"
"                 a commit re-run later stays where its first job put it);\n"
"                 --by time (the default): when each job's first run began\n"
"  --metric NAME  the verdicts and change points of wall (the default), cpu\n"
"                 or peak_rss, for benchmarks whose suite tracks it\n"
"  --json         the collector's answer\n"
"  --csv          one line per job and host\n"
"Connection options as in `parity hosts --help`.\n\n"
"exit status: 0, 1 no such benchmark or arm (or not an admin key), 2 usage,\n"
"3 no answer.\n");
}


/* The hosts of a history answer (its rows' entries), once each. */
static json_t *
s_history_hosts(const json_t *body)
{
    json_t *names = json_object(), *out = json_array(), *pair, *row, *e;
    size_t i, k, h;
    const char *name;
    json_t *v;
    json_array_foreach(json_object_get(body, "pairs"), i, pair)
        json_array_foreach(json_object_get(pair, "rows"), k, row)
            json_array_foreach(json_object_get(row, "hosts"), h, e)
                if (names)
                    json_object_set_new(names, pw_out_str(e, "host", ""),
                                        json_true());
    json_object_foreach(names, name, v)
        if (out && *name)
            json_array_append_new(out, json_string(name));
    json_decref(names);
    return out;
}

/* The benchmark's series for the rows shown: each series' newest
 * limit + 1 runs (a mark needs the run before). When one answer cannot
 * hold them all ("truncated"), one request per host of the history. */
static int
s_ask_series(const cl_conn_opts_t *co, const char *bench, const json_t *args,
             const json_t *hosts, const json_t *body, json_int_t limit,
             json_t **out)
{
    json_t *sargs = json_pack("{s:s,s:O,s:I}", "benchmark", bench, "tags",
                              json_object_get(args, "tags"), "runs",
                              limit < 1000 ? limit + 1 : 1000);
    json_t *all = NULL, *each = NULL, *h;
    size_t i;
    int rc = PW_EXIT_SYSTEM;
    *out = NULL;
    if (!sargs) {
        cl_out_error("history", "out of memory");
        goto done;
    }
    if (json_object_get(args, "suite"))
        json_object_set(sargs, "suite", json_object_get(args, "suite"));
    /* The change points of the metric shown (026). */
    if (json_object_get(args, "metric"))
        json_object_set(sargs, "metric", json_object_get(args, "metric"));
    if (json_array_size(hosts) == 1)
        json_object_set(sargs, "host", json_array_get(hosts, 0));
    rc = cl_conn_ask("history", co, "series", sargs, &all);
    if (rc != PW_EXIT_OK || json_array_size(hosts) == 1 ||
        !json_is_true(json_object_get(all, "truncated")))
        goto done;
    json_t *list = json_array();
    each = s_history_hosts(body);
    if (!list || !each) {
        json_decref(list);
        cl_out_error("history", "out of memory");
        rc = PW_EXIT_SYSTEM;
        goto done;
    }
    json_object_set_new(all, "series", list);
    json_object_set_new(all, "truncated", json_false());
    json_array_foreach(each, i, h) {
        json_t *one = NULL, *x;
        size_t k;
        json_object_set(sargs, "host", h);
        rc = cl_conn_ask("history", co, "series", sargs, &one);
        if (rc != PW_EXIT_OK)
            goto done;
        json_array_foreach(json_object_get(one, "series"), k, x)
            json_array_append(list, x);
        if (json_is_true(json_object_get(one, "truncated")))
            json_object_set_new(all, "truncated", json_true());
        json_decref(one);
    }
done:
    if (rc == PW_EXIT_OK) {
        *out = all;
        all = NULL;
    }
    json_decref(all);
    json_decref(each);
    json_decref(sargs);
    return rc;
}

/* The options of history into args, tags and hosts (what the collector
 * reads) and the verb's own; 0, or -1 (said). */
static int
s_parse(int argc, char **argv, json_t *args, json_t *tags, json_t *hosts,
        const char **bench, bool *as_json, bool *as_csv)
{
    enum { O_JSON = 256, O_CSV, O_ARM, O_SUITE, O_HOST, O_TAG, O_BY,
           O_LIMIT, O_METRIC };
    static const struct option opts[] = {
        { "json", no_argument, NULL, O_JSON },
        { "csv", no_argument, NULL, O_CSV },
        { "arm", required_argument, NULL, O_ARM },
        { "suite", required_argument, NULL, O_SUITE },
        { "host", required_argument, NULL, O_HOST },
        { "tag", required_argument, NULL, O_TAG },
        { "by", required_argument, NULL, O_BY },
        { "limit", required_argument, NULL, O_LIMIT },
        { "metric", required_argument, NULL, O_METRIC },
        { NULL, 0, NULL, 0 } };
    int o;
    CL_CONN_EACH_OPTION(o, argc, argv, opts) {
        const char *v = optarg;
        char *end;
        long n;
        switch (o) {
        case O_JSON:
            *as_json = true;
            break;
        case O_CSV:
            *as_csv = true;
            break;
        case O_ARM:
        case O_SUITE:
            json_object_set_new(args, o == O_ARM ? "other" : "suite",
                                json_string(v));
            break;
        case O_HOST:
            if (!*v || json_array_size(hosts) >= 256) {
                cl_out_error("history", "--host \"%s\": want a host name "
                             "(at most 256 of them)", v);
                return -1;
            }
            json_array_append_new(hosts, json_string(v));
            break;
        case O_TAG:
            if (cl_out_key_value(tags, v) != 0 ||
                json_object_size(tags) > 256) {
                cl_out_error("history", "--tag \"%s\": want KEY=VALUE", v);
                return -1;
            }
            break;
        case O_BY:
            if (strlen(v) > 200) {
                cl_out_error("history", "--by \"%.60s...\": want a tag name "
                             "of at most 200 bytes", v);
                return -1;
            }
            /* "time" is the default order; anything else is a tag. */
            json_object_set_new(args, "by", json_string(
                strcmp(v, "time") == 0 ? "" : v));
            break;
        case O_METRIC: {
            vd_metric_t m;
            if (vd_metric_parse(v, &m) != 0) {
                cl_out_error("history", "--metric %.60s: want wall, cpu or "
                             "peak_rss", v);
                return -1;
            }
            json_object_set_new(args, "metric", json_string(v));
            break;
        }
        case O_LIMIT:
            n = strtol(v, &end, 10);
            if (*end || end == v || n < 1 || n > 1000) {
                cl_out_error("history", "--limit \"%s\": want 1..1000", v);
                return -1;
            }
            json_object_set_new(args, "limit", json_integer(n));
            break;
        default:
            cl_out_getopt_error("history", o, argv);
            return -1;
        }
    }
    return cl_out_one_operand("history", argc, argv, bench);
}

int
cl_history_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    const char *bench = NULL;
    bool as_json = false, as_csv = false;
    int rc = PW_EXIT_USAGE;
    json_t *args = json_object(), *tags = json_object(),
           *hosts = json_array(), *body = NULL;
    if (cl_out_wants_help(argc, argv)) {
        s_usage(stdout);
        rc = PW_EXIT_OK;
        goto done;
    }
    if (!args || !tags || !hosts) {
        cl_out_error("history", "out of memory");
        rc = PW_EXIT_SYSTEM;
        goto done;
    }
    if (cl_conn_verb_args("history", &argc, argv, &co) != 0)
        goto done;
    if (s_parse(argc, argv, args, tags, hosts, &bench, &as_json,
                &as_csv) != 0)
        goto done;
    if (!bench) {
        cl_out_error("history", "which benchmark? (parity history BENCHMARK; "
                     "parity verdicts lists them)");
        goto done;
    }
    if (as_json && as_csv) {
        cl_out_error("history", "give one of --json, --csv");
        goto done;
    }
    json_object_set_new(args, "benchmark", json_string(bench));
    json_object_set(args, "tags", tags);
    json_object_set(args, "hosts", hosts);
    rc = cl_conn_ask("history", &co, "history", args, &body);
    if (rc != PW_EXIT_OK)
        goto done;
    /* The same benchmark's series: change points and annotations. */
    json_t *series = NULL;
    json_int_t limit = json_integer_value(json_object_get(args, "limit"));
    rc = s_ask_series(&co, bench, args, hosts, body, limit ? limit : 50,
                      &series);
    if (rc != PW_EXIT_OK)
        goto done;
    /* --host H (several): only their series. */
    json_t *keep = json_array(), *one;
    size_t si, hi;
    json_array_foreach(json_object_get(series, "series"), si, one) {
        bool want = json_array_size(hosts) == 0;
        json_t *h;
        json_array_foreach(hosts, hi, h)
            want = want || strcmp(json_string_value(h),
                                  pw_out_str(one, "host", "")) == 0;
        if (keep && want)
            json_array_append(keep, one);
    }
    json_object_set_new(body, "series", keep ? keep : json_array());
    json_decref(series);
    int w = cl_history_print(stdout, body, as_json ? CL_HISTORY_JSON :
                             as_csv ? CL_HISTORY_CSV : CL_HISTORY_TABLE);
    if (w != 0 || fflush(stdout) != 0) {
        cl_out_error("history", "writing stdout failed");
        rc = PW_EXIT_SYSTEM;
    }
done:
    json_decref(args);
    json_decref(tags);
    json_decref(hosts);
    json_decref(body);
    return rc;
}
