/* cl_regressions.c -- `parity regressions`: the open change points of
 * each series (found by the collector as runs are stored),
 * regressions first and worst first, with the hosts that show the same
 * step (exit 1 while a regression is open, for CI); beside them, per
 * benchmark, arm pair and host, the newest verdict against the one
 * before it. `regressions ack ID --note T` and `unack ID` mark a change
 * point as known. The collector's `regressions`, `ack` and `unack`
 * answers: docs/protocol.md 10.12, 10.15. docs/commands/regressions.md. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_confirm.h"
#include "cl_conn.h"
#include "cl_out.h"
#include "pw_out.h"
#include "cl_regressions.h"
#include "cl_verbs.h"
#include "vd_metric.h"

/* Exit status when the collector answered with an error: not 1, which
 * means "something regressed" here (docs/commands/regressions.md). */
#define S_EXIT_REPLY 4
#define S_REGRESSED  1
/* Longest --since: the collector's bound, 366 days. */
#define S_SINCE_MAX_S (366.0 * 86400)



/* "parity 1.002" of one side. */
static void
s_side(char *buf, size_t len, const json_t *side)
{
    snprintf(buf, len, "%s %.3f", pw_out_str(side, "outcome", "?"),
             json_number_value(json_object_get(side, "ratio")));
}

/* "commit=abc" of a side's tags: the commit tag alone when it has one. */
static void
s_range_end(char *buf, size_t len, const json_t *side)
{
    const json_t *tags = json_object_get(side, "tags");
    const char *commit = json_string_value(json_object_get(tags, "commit"));
    if (commit)
        snprintf(buf, len, "%s", commit);
    else
        pw_out_pairs(buf, len, tags, "-");
}

/* Both tables of the verb have nine columns. */
#define S_COLS 9

/* The heading "TITLE (N):" and a table under head: its columns
 * left-aligned but the first (an id or a benchmark) and the one numbered
 * right (S_COLS: none). NULL when out of memory. */
static pw_out_table_t *
s_table_new(FILE *f, const char *title, size_t n,
            const char *const head[S_COLS], size_t right, int *rc)
{
    fprintf(f, "%s (%zu):\n", title, n);
    pw_out_table_t *t = pw_out_table_new(S_COLS);
    if (!t)
        return NULL;
    for (size_t c = 1; c < S_COLS; c++)
        if (c != right)
            pw_out_table_left(t, c);
    *rc = pw_out_table_add(t, head);
    return t;
}

static int
s_table_add(pw_out_table_t *t, char cells[S_COLS][PW_OUT_CELL_MAX])
{
    const char *row[S_COLS];
    for (size_t c = 0; c < S_COLS; c++)
        row[c] = cells[c];
    return pw_out_table_add(t, row);
}

/* The change points table: id, what, where, how much, since when. */
/* Whether a listed item (event or change point) is shown: within noise
 * only with --all. */
static bool
s_shown(const json_t *e, bool all)
{
    return all || !json_is_true(json_object_get(e, "within_noise"));
}

static size_t
s_count_shown(const json_t *list, bool all)
{
    size_t i, n = 0;
    const json_t *e;
    json_array_foreach(list, i, e) n += s_shown(e, all);
    return n;
}

/* The three cells that say where a row is: benchmark, "SUBJECT vs
 * OTHER", host. */
/* A change point's or event's benchmark, with the metric its series
 * measures when that is not wall time: "grow (peak_rss)". */
static void
s_bench(char *buf, size_t len, const json_t *e)
{
    pw_out_bench_metric(buf, len, pw_out_str(e, "benchmark", "?"),
                        pw_out_str(e, "quantity", "wall"));
}

static void
s_where(char (*cells)[PW_OUT_CELL_MAX], const json_t *e)
{
    s_bench(cells[0], PW_OUT_CELL_MAX, e);
    snprintf(cells[1], PW_OUT_CELL_MAX, "%s vs %s",
             pw_out_str(e, "subject", "?"), pw_out_str(e, "other", "?"));
    snprintf(cells[2], PW_OUT_CELL_MAX, "%s", pw_out_str(e, "host", "?"));
}

static int
s_print_changes(FILE *f, const char *title, const json_t *list, bool all)
{
    static const char *const head[S_COLS] = { "id", "benchmark", "arms",
        "host", "metric", "change", "verdict", "between", "hosts" };
    if (s_count_shown(list, all) == 0)
        return 0;
    int rc = 0;
    pw_out_table_t *t = s_table_new(f, title, s_count_shown(list, all), head,
                                    5, &rc);
    if (!t)
        return -1;
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        if (!s_shown(e, all))
            continue;
        char cells[S_COLS][PW_OUT_CELL_MAX], from[PW_OUT_CELL_MAX],
             to[PW_OUT_CELL_MAX];
        double m = json_number_value(json_object_get(e, "magnitude"));
        snprintf(cells[0], PW_OUT_CELL_MAX, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(e, "id")));
        s_where(cells + 1, e);
        snprintf(cells[4], PW_OUT_CELL_MAX, "%s%s",
                 pw_out_str(e, "metric", "?"),
                 json_is_object(json_object_get(e, "trend")) ? " trend" : "");
        snprintf(cells[5], PW_OUT_CELL_MAX, "%+.1f%%", (m - 1.0) * 100.0);
        snprintf(cells[6], PW_OUT_CELL_MAX, "%s%s",
                 pw_out_str(e, "outcome", "?"),
                 json_is_true(json_object_get(e, "within_noise"))
                 ? " (within noise)" : "");
        s_range_end(from, sizeof from, json_object_get(e, "before"));
        s_range_end(to, sizeof to, json_object_get(e, "after"));
        snprintf(cells[7], PW_OUT_CELL_MAX, "%.100s .. %.100s", from, to);
        snprintf(cells[8], PW_OUT_CELL_MAX, "%" JSON_INTEGER_FORMAT " of %"
                 JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(e, "hosts_with_step")),
                 json_integer_value(json_object_get(e, "hosts_total")));
        rc |= s_table_add(t, cells);
    }
    rc |= pw_out_table_print(t, f);
    pw_out_table_destroy(&t);
    /* What changed on the host at each step, and why acked ones are. */
    json_array_foreach(list, i, e) {
        if (!s_shown(e, all))
            continue;
        size_t k;
        json_t *note;
        json_array_foreach(json_object_get(e, "annotations"), k, note)
            fprintf(f, "  %" JSON_INTEGER_FORMAT ": %s\n",
                    json_integer_value(json_object_get(e, "id")),
                    json_string_value(note) ? json_string_value(note) : "");
        const json_t *ack = json_object_get(e, "ack");
        if (json_is_object(ack))
            fprintf(f, "  %" JSON_INTEGER_FORMAT ": acked: %s\n",
                    json_integer_value(json_object_get(e, "id")),
                    pw_out_str(ack, "note", ""));
    }
    return rc;
}

/* One line a fleet event (co_events.h): "#1 step (new vs old): slower
 * on 3 of 4 hosts between c24 and c25, ratio x1.10 (x1.098 to x1.101),
 * loss: h1, h2, h3". */
static int
s_print_events(FILE *f, const char *title, const json_t *list, bool all)
{
    size_t i, k;
    const json_t *e, *h;
    if (s_count_shown(list, all) == 0)
        return 0;
    fprintf(f, "%s (%zu):\n", title, s_count_shown(list, all));
    json_array_foreach(list, i, e) {
        if (!s_shown(e, all))
            continue;
        char from[PW_OUT_CELL_MAX], to[PW_OUT_CELL_MAX], vars[256],
             bench[PW_OUT_CELL_MAX];
        s_bench(bench, sizeof bench, e);
        double m = json_number_value(json_object_get(e, "magnitude")),
               lo = json_number_value(json_object_get(e, "magnitude_min")),
               hi = json_number_value(json_object_get(e, "magnitude_max"));
        s_range_end(from, sizeof from, json_object_get(e, "before"));
        s_range_end(to, sizeof to, json_object_get(e, "after"));
        pw_out_pairs(vars, sizeof vars, json_object_get(e, "vars"), "");
        const json_t *trend = json_object_get(e, "trend");
        char when[2 * PW_OUT_CELL_MAX + 64];
        if (json_is_object(trend))
            snprintf(when, sizeof when, "drifting from %.100s on (%+.2f %% a "
                     "run)", to, 100.0 * json_number_value(json_object_get(
                         trend, "per_run")));
        else
            snprintf(when, sizeof when, "between %.100s and %.100s", from,
                     to);
        fprintf(f, "  #%" JSON_INTEGER_FORMAT " %s (%s vs %s%s%s): %s on %"
                JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " host%s "
                "%s, %s x%.2f%s",
                json_integer_value(json_object_get(e, "id")), bench,
                pw_out_str(e, "subject", "?"),
                pw_out_str(e, "other", "?"), vars[0] ? ", " : "", vars,
                pw_out_str(e, "direction", "?"),
                json_integer_value(json_object_get(e, "hosts_with_step")),
                json_integer_value(json_object_get(e, "hosts_total")),
                json_integer_value(json_object_get(e, "hosts_total")) == 1
                ? "" : "s", when, pw_out_str(e, "metric", "?"), m,
                json_is_object(trend) ? " so far" : "");
        if (lo != hi)
            fprintf(f, " (x%.3f to x%.3f)", lo, hi);
        fprintf(f, ", %s%s:", pw_out_str(e, "outcome", "?"),
                json_is_true(json_object_get(e, "within_noise"))
                ? " (within noise)" : "");
        json_array_foreach(json_object_get(e, "hosts"), k, h)
            fprintf(f, "%s%s", k ? ", " : " ", json_string_value(h) ?
                    json_string_value(h) : "?");
        fputc('\n', f);
        char bisect[PW_OUT_CELL_MAX];
        if (*pw_out_bisect(bisect, sizeof bisect, json_object_get(
                e, "bisect")))
            fprintf(f, "    %s\n", bisect);
        if (*pw_out_confirm(bisect, sizeof bisect, json_object_get(
                e, "confirm")))
            fprintf(f, "    %s\n", bisect);
    }
    fputc('\n', f);
    return ferror(f) ? -1 : 0;
}

/* Open change points that are regressions. */
static size_t
s_open_regressions(const json_t *body)
{
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(json_object_get(json_object_get(body,
                       "change_points"), "open"), i, e)
        n += json_is_true(json_object_get(e, "regression"));
    return n;
}

static int
s_print_list(FILE *f, const char *title, const json_t *list)
{
    static const char *const head[S_COLS] = { "benchmark", "arms", "host",
        "before", "after", "before run", "after run", "before tags",
        "after tags" };
    if (json_array_size(list) == 0)
        return 0;
    int rc = 0;
    pw_out_table_t *t = s_table_new(f, title, json_array_size(list), head,
                                    S_COLS, &rc);
    if (!t)
        return -1;
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        char cells[S_COLS][PW_OUT_CELL_MAX];
        const json_t *b = json_object_get(e, "before"),
                     *a = json_object_get(e, "after");
        s_where(cells, e);
        s_side(cells[3], PW_OUT_CELL_MAX, b);
        s_side(cells[4], PW_OUT_CELL_MAX, a);
        snprintf(cells[5], PW_OUT_CELL_MAX, "%s",
                 pw_out_str(b, "run_id", "?"));
        snprintf(cells[6], PW_OUT_CELL_MAX, "%s",
                 pw_out_str(a, "run_id", "?"));
        pw_out_pairs(cells[7], PW_OUT_CELL_MAX, json_object_get(b, "tags"),
                     "-");
        pw_out_pairs(cells[8], PW_OUT_CELL_MAX, json_object_get(a, "tags"),
                     "-");
        rc |= s_table_add(t, cells);
    }
    rc |= pw_out_table_print(t, f);
    pw_out_table_destroy(&t);
    return rc;
}

static void
s_usage(FILE *f)
{
    fprintf(f,
"usage: parity regressions [--since DURATION | --jobs N] [--tag KEY=VALUE]...\n"
"                          [--host NAME] [--metric NAME] [--all] [--json]\n"
"                          [connection options]\n"
"       parity regressions ack ID --note TEXT [connection options]\n"
"       parity regressions unack ID [connection options]\n"
"       parity regressions confirm ID [--runs N] [--wait] [--json]\n"
"                          [connection options]\n\n"
"The open events (one step on several hosts) and change points of every\n"
"series (benchmark, arm pair, host and variables), found as runs are\n"
"stored: regressions first, worst first, with the commit range, the verdict\n"
"of the runs after against the runs before, how many hosts show the same\n"
"step, and what changed on the host. Acked ones are listed apart. Beside\n"
"them: per benchmark, arm pair and host, the newest verdict against the\n"
"previous job's (worse, better).\n\n"
"  --since D       change points after D ago, and pairs whose newest verdict\n"
"                  is younger than D (90s, 10m, 2h, 3d, 2w; at most 366d)\n"
"  --jobs N        pairs whose newest verdict is from the suite's N newest\n"
"                  jobs (default 1)\n"
"  --tag K=V       only runs tagged K=V (e.g. branch=main); may repeat\n"
"  --host NAME     only this host\n"
"  --metric NAME   only the change points of wall, cpu or peak_rss series\n"
"                  (default: every metric's; the verdicts against the\n"
"                  previous job are wall time's)\n"
"  --all           list change points within noise too (counted otherwise)\n"
"  --json          the collector's answer (all of them)\n"
"  ack ID --note T mark change point ID and its event as known (it no\n"
"                  longer fails)\n"
"  unack ID        undo that\n"
"  confirm ID      measure event ID's step again: the revision before it\n"
"                  and the one after it interleaved in one job on its\n"
"                  hosts (--runs N per arm, default the suite's); --wait\n"
"                  follows it and exits 1 when confirmed, 0 when not\n"
"                  reproduced\n"
"Connection options as in `parity hosts --help`.\n\n"
"exit status: 0 no open regression, 1 a regression is open, 2 usage, 3 no\n"
"answer, 4 the collector answered with an error (e.g. not an admin key)\n"
"or a confirm failed.\n");
}

/* `regressions ack ID --note T` and `regressions unack ID`. */
static int
s_ack_main(int argc, char **argv, cl_conn_opts_t *co, bool ack)
{
    const char *verb = ack ? "regressions ack" : "regressions unack";
    const char *note = NULL, *id_text = NULL;
    static const struct option opts[] = {
        { "note", required_argument, NULL, 'n' }, { NULL, 0, NULL, 0 } };
    int c;
    CL_CONN_EACH_OPTION(c, argc, argv, opts) {
        if (c == 'n' && ack) {
            note = optarg;
        } else {
            cl_out_error(verb, c == ':' ? "%s needs a value" :
                         "unexpected option %s (parity regressions --help)",
                         argv[optind - 1]);
            return PW_EXIT_USAGE;
        }
    }
    if (optind + 1 != argc) {
        cl_out_error(verb, "give one change point id (parity regressions "
                     "lists them)");
        return PW_EXIT_USAGE;
    }
    id_text = argv[optind];
    char *end;
    errno = 0;
    long long id = strtoll(id_text, &end, 10);
    if (*end || end == id_text || errno || id < 1) {
        cl_out_error(verb, "\"%s\" is not a change point id", id_text);
        return PW_EXIT_USAGE;
    }
    if (ack && (!note || !*note)) {
        cl_out_error(verb, "--note TEXT is required: say why the change is "
                     "known");
        return PW_EXIT_USAGE;
    }
    json_t *args = json_pack("{s:I}", "id", (json_int_t)id), *body = NULL;
    if (!args || (ack && json_object_set_new(args, "note",
                                             json_string(note)) != 0)) {
        json_decref(args);
        cl_out_error(verb, "out of memory or --note is not UTF-8");
        return ack ? PW_EXIT_USAGE : PW_EXIT_SYSTEM;
    }
    int rc = cl_conn_ask(verb, co, ack ? "ack" : "unack", args, &body);
    json_decref(args);
    if (rc == PW_EXIT_DATA)
        return S_EXIT_REPLY;
    if (rc != PW_EXIT_OK)
        return rc;
    /* An event's members are acked together (docs/regressions.md). */
    const json_t *hosts = json_object_get(body, "hosts"), *h;
    size_t n = json_array_size(json_object_get(body, "members")), i;
    printf("change point %lld %s", id, ack ? "acked" : "open again");
    if (n > 1) {
        printf(", with its event: %zu change points on ", n);
        json_array_foreach(hosts, i, h)
            printf("%s%s", i ? ", " : "", json_string_value(h) ?
                   json_string_value(h) : "?");
    }
    printf("\n");
    json_decref(body);
    return fflush(stdout) == 0 ? PW_EXIT_OK : PW_EXIT_SYSTEM;
}

/* The options of the listing; args gets what the collector reads. */
static int
s_list_opts(int argc, char **argv, json_t *args, json_t *tags, bool *as_json,
            bool *all, const char **metric)
{
    enum { O_SINCE = 256, O_JOBS, O_TAG, O_HOST, O_JSON, O_ALL, O_METRIC };
    static const struct option opts[] = {
        { "all", no_argument, NULL, O_ALL },
        { "metric", required_argument, NULL, O_METRIC },
        { "since", required_argument, NULL, O_SINCE },
        { "jobs", required_argument, NULL, O_JOBS },
        { "tag", required_argument, NULL, O_TAG },
        { "host", required_argument, NULL, O_HOST },
        { "json", no_argument, NULL, O_JSON }, { NULL, 0, NULL, 0 } };
    bool since = false, jobs = false;
    int c;
    CL_CONN_EACH_OPTION(c, argc, argv, opts) {
        const char *v = optarg;
        double sec;
        char *end;
        long n;
        switch (c) {
        case O_JSON:
            *as_json = true;
            break;
        case O_ALL:
            *all = true;
            break;
        case O_METRIC: {
            vd_metric_t m;
            if (vd_metric_parse(v, &m) != 0) {
                cl_out_error("regressions", "--metric %.60s: want wall, cpu "
                             "or peak_rss", v);
                return -1;
            }
            *metric = v;
            break;
        }
        case O_SINCE:
            if (cl_out_duration(v, S_SINCE_MAX_S, &sec) != 0) {
                cl_out_error("regressions", "--since \"%s\": want a duration "
                             "such as 90s, 10m, 2h, 3d, 2w (at most 366d)", v);
                return -1;
            }
            json_object_set_new(args, "since_us",
                                json_integer((json_int_t)(sec * 1e6)));
            since = true;
            break;
        case O_JOBS:
            n = strtol(v, &end, 10);
            if (*end || end == v || n < 1 || n > 1000) {
                cl_out_error("regressions", "--jobs \"%s\": want 1..1000", v);
                return -1;
            }
            json_object_set_new(args, "jobs", json_integer(n));
            jobs = true;
            break;
        case O_TAG:
            if (cl_out_key_value(tags, v) != 0 || json_object_size(tags) > 256) {
                cl_out_error("regressions", "--tag \"%s\": want KEY=VALUE",
                             v);
                return -1;
            }
            break;
        case O_HOST:
            if (!*v || strlen(v) > 200) {
                cl_out_error("regressions", "--host \"%.60s\": want a host "
                             "name of 1..200 bytes", v);
                return -1;
            }
            json_object_set_new(args, "host", json_string(v));
            break;
        case ':':
            cl_out_error("regressions", "%s needs a value", argv[optind - 1]);
            return -1;
        default:
            cl_out_error("regressions", "unexpected argument \"%s\" (parity "
                         "regressions --help)", argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        cl_out_error("regressions", "unexpected argument \"%s\" (parity "
                     "regressions --help)", argv[optind]);
        return -1;
    }
    if (since && jobs) {
        cl_out_error("regressions", "give --since or --jobs, not both");
        return -1;
    }
    return 0;
}

/* Keep only what speaks of metric: the change points and events of its
 * series, and the verdicts against the previous job when it is wall
 * time (they are wall time's). */
static void
s_only_metric(json_t *body, const char *metric)
{
    json_t *cps = json_object_get(body, "change_points");
    json_t *lists[] = { json_object_get(cps, "open"),
                        json_object_get(cps, "acked"),
                        json_object_get(cps, "superseded"),
                        json_object_get(json_object_get(cps, "events"),
                                        "open"),
                        json_object_get(json_object_get(cps, "events"),
                                        "acked") };
    for (size_t k = 0; k < sizeof lists / sizeof *lists; k++)
        for (size_t i = json_array_size(lists[k]); i-- > 0;)
            if (strcmp(pw_out_str(json_array_get(lists[k], i), "quantity",
                                  "wall"), metric) != 0)
                json_array_remove(lists[k], i);
    if (strcmp(metric, "wall") != 0) {
        json_array_clear(json_object_get(body, "regressions"));
        json_array_clear(json_object_get(body, "improvements"));
        json_object_set_new(body, "unchanged", json_integer(0));
        json_object_set_new(body, "first", json_integer(0));
    }
}

int
cl_regressions_print(FILE *f, const json_t *body, bool all)
{
    const json_t *cps = json_object_get(body, "change_points"),
                 *worse = json_object_get(body, "regressions"),
                 *better = json_object_get(body, "improvements");
    const json_t *events = json_object_get(cps, "events");
    int w = s_print_events(f, "events", json_object_get(events, "open"),
                           all);
    w |= s_print_events(f, "acked events", json_object_get(events, "acked"),
                        all);
    w |= s_print_changes(f, "change points", json_object_get(cps, "open"),
                         all);
    if (s_count_shown(json_object_get(cps, "acked"), all))
        fputc('\n', f);
    w |= s_print_changes(f, "acked", json_object_get(cps, "acked"), all);
    if (json_array_size(worse) || json_array_size(better))
        fputc('\n', f);
    w |= s_print_list(f, "verdict worse than the previous job's", worse);
    if (json_array_size(worse) && json_array_size(better))
        fputc('\n', f);
    w |= s_print_list(f, "verdict better than the previous job's",
                      better);
    fprintf(f, "%zu open regressions, %zu other open change points, %zu "
            "acked; against the previous job: %zu worse, %zu better, %"
            JSON_INTEGER_FORMAT " unchanged, %" JSON_INTEGER_FORMAT " with "
            "no earlier verdict\n", s_open_regressions(body),
            json_array_size(json_object_get(cps, "open")) -
            s_open_regressions(body),
            json_array_size(json_object_get(cps, "acked")),
            json_array_size(worse), json_array_size(better),
            json_integer_value(json_object_get(body, "unchanged")),
            json_integer_value(json_object_get(body, "first")));
    size_t hidden = json_array_size(json_object_get(cps, "open")) +
                    json_array_size(json_object_get(cps, "acked")) -
                    s_count_shown(json_object_get(cps, "open"), all) -
                    s_count_shown(json_object_get(cps, "acked"), all);
    if (hidden)
        fprintf(f, "%zu change point%s within noise not listed (--all "
                "lists them)\n", hidden, hidden == 1 ? "" : "s");
    if (json_is_true(json_object_get(body, "truncated")) ||
        json_is_true(json_object_get(cps, "truncated")))
        fprintf(f, "(more than one answer holds: give --tag, --host or "
                "--since)\n");
    return w || ferror(f) ? -1 : 0;
}

int
cl_regressions_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    bool as_json = false;
    int rc = PW_EXIT_USAGE;
    json_t *args = json_object(), *tags = json_object(), *body = NULL;
    if (cl_out_wants_help(argc, argv)) {
        s_usage(stdout);
        rc = PW_EXIT_OK;
        goto done;
    }
    if (!args || !tags) {
        cl_out_error("regressions", "out of memory");
        rc = PW_EXIT_SYSTEM;
        goto done;
    }
    if (cl_conn_verb_args("regressions", &argc, argv, &co) != 0)
        goto done;
    if (argc > 1 && strcmp(argv[1], "confirm") == 0) {
        rc = cl_confirm_main(argc - 1, argv + 1, &co);
        goto done;
    }
    if (argc > 1 && (strcmp(argv[1], "ack") == 0 ||
                     strcmp(argv[1], "unack") == 0)) {
        rc = s_ack_main(argc - 1, argv + 1, &co, argv[1][0] == 'a');
        goto done;
    }
    bool all = false;
    const char *metric = NULL;
    if (s_list_opts(argc, argv, args, tags, &as_json, &all, &metric) != 0)
        goto done;
    json_object_set(args, "tags", tags);
    rc = cl_conn_ask("regressions", &co, "regressions", args, &body);
    if (rc != PW_EXIT_OK) {
        if (rc == PW_EXIT_DATA)
            rc = S_EXIT_REPLY;
        goto done;
    }
    if (metric)
        s_only_metric(body, metric);
    int w = as_json ? pw_out_json(stdout, body) :
                    cl_regressions_print(stdout, body, all);
    if (w != 0 || fflush(stdout) != 0) {
        cl_out_error("regressions", "writing stdout failed");
        rc = PW_EXIT_SYSTEM;
        goto done;
    }
    rc = s_open_regressions(body) ? S_REGRESSED : PW_EXIT_OK;
done:
    json_decref(args);
    json_decref(tags);
    json_decref(body);
    return rc;
}
