/* cl_regressions.c -- `parity regressions`: per benchmark, arm pair and
 * host, the newest verdict against the one before it; the pairs whose
 * outcome got worse (exit 1, for CI) or better (the collector's
 * `regressions` answer, docs/protocol.md 10.12).
 * docs/commands/regressions.md. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_conn.h"
#include "cl_out.h"
#include "cl_verbs.h"

/* Exit status when the collector answered with an error: not 1, which
 * means "something regressed" here (docs/commands/regressions.md). */
#define S_EXIT_REPLY 4
#define S_REGRESSED  1
/* Longest --since: the collector's bound, 366 days. */
#define S_SINCE_MAX_S (366.0 * 86400)

static const char *
s_str(const json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s && *s ? s : dflt;
}

/* "90", "90s", "10m", "2h", "3d", "2w" into seconds; -1 when not one. */
static int
s_duration(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0))
        return -1;
    if (*end == '\0' || strcmp(end, "s") == 0)
        ;
    else if (strcmp(end, "m") == 0)
        v *= 60;
    else if (strcmp(end, "h") == 0)
        v *= 3600;
    else if (strcmp(end, "d") == 0)
        v *= 86400;
    else if (strcmp(end, "w") == 0)
        v *= 7 * 86400;
    else
        return -1;
    if (v > S_SINCE_MAX_S || v * 1e6 < 1)
        return -1;
    *out = v;
    return 0;
}

static int
s_add_pair(json_t *obj, const char *s)
{
    const char *eq = strchr(s, '=');
    if (!eq || eq == s || eq - s >= 1024)
        return -1;
    char key[1024];
    snprintf(key, sizeof key, "%.*s", (int)(eq - s), s);
    return json_object_set_new(obj, key, json_string(eq + 1));
}

/* "parity 1.002" of one side. */
static void
s_side(char *buf, size_t len, const json_t *side)
{
    snprintf(buf, len, "%s %.3f", s_str(side, "outcome", "?"),
             json_number_value(json_object_get(side, "ratio")));
}

static void
s_tagtext(char *buf, size_t len, const json_t *tags)
{
    const char *k;
    json_t *v;
    buf[0] = '\0';
    json_object_foreach((json_t *)tags, k, v) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "", k,
                 json_string_value(v) ? json_string_value(v) : "");
    }
    if (!buf[0])
        snprintf(buf, len, "-");
}

static int
s_print_list(FILE *f, const char *title, const json_t *list)
{
    if (json_array_size(list) == 0)
        return 0;
    fprintf(f, "%s (%zu):\n", title, json_array_size(list));
    cl_out_table_t *t = cl_out_table_new(8);
    if (!t)
        return -1;
    static const char *const head[] = { "benchmark", "arms", "host",
        "before", "after", "before run", "after run", "after tags" };
    for (size_t c = 1; c < 8; c++)
        cl_out_table_left(t, c);
    int rc = cl_out_table_add(t, head);
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        char cells[8][CL_CELL_MAX];
        const json_t *b = json_object_get(e, "before"),
                     *a = json_object_get(e, "after");
        snprintf(cells[0], CL_CELL_MAX, "%s", s_str(e, "benchmark", "?"));
        snprintf(cells[1], CL_CELL_MAX, "%s vs %s", s_str(e, "subject", "?"),
                 s_str(e, "other", "?"));
        snprintf(cells[2], CL_CELL_MAX, "%s", s_str(e, "host", "?"));
        s_side(cells[3], CL_CELL_MAX, b);
        s_side(cells[4], CL_CELL_MAX, a);
        snprintf(cells[5], CL_CELL_MAX, "%s", s_str(b, "run_id", "?"));
        snprintf(cells[6], CL_CELL_MAX, "%s", s_str(a, "run_id", "?"));
        s_tagtext(cells[7], CL_CELL_MAX, json_object_get(a, "tags"));
        const char *row[8];
        for (size_t c = 0; c < 8; c++)
            row[c] = cells[c];
        rc |= cl_out_table_add(t, row);
    }
    rc |= cl_out_table_print(t, f);
    cl_out_table_destroy(&t);
    return rc;
}

static void
s_usage(FILE *f)
{
    fprintf(f,
"usage: parity regressions [--since DURATION | --jobs N] [--tag KEY=VALUE]...\n"
"                          [--json] [connection options]\n\n"
"Per benchmark, arm pair and host: the newest stored verdict against the one\n"
"before it (the previous job of the same suite that host ran it in, among\n"
"runs carrying every --tag). Lists the pairs whose outcome got worse (win to\n"
"parity, parity to loss, win to loss) and those that got better.\n\n"
"  --jobs N        pairs whose newest verdict is from the suite's N newest\n"
"                  jobs (default 1: the latest job of each suite)\n"
"  --since D       pairs whose newest verdict is younger than D (90s, 10m,\n"
"                  2h, 3d, 2w; at most 366d)\n"
"  --tag K=V       only runs tagged K=V (e.g. branch=main); may repeat\n"
"  --json          the collector's answer\n"
"Connection options as in `parity hosts --help`.\n\n"
"exit status: 0 nothing got worse, 1 something regressed, 2 usage, 3 no\n"
"answer, 4 the collector answered with an error (e.g. not an admin key).\n");
}

int
cl_regressions_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    char err[512];
    bool as_json = false, since = false, jobs = false;
    int rc = CL_EXIT_USAGE;
    json_t *args = json_object(), *tags = json_object(), *body = NULL;
    if (cl_out_wants_help(argc, argv)) {
        s_usage(stdout);
        rc = CL_EXIT_OK;
        goto done;
    }
    if (!args || !tags) {
        cl_out_error("regressions", "out of memory");
        rc = CL_EXIT_SYSTEM;
        goto done;
    }
    if (cl_conn_take_args(&argc, argv, &co, err, sizeof err) != 0) {
        cl_out_error("regressions", "%s", err);
        goto done;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = strcmp(a, "--since") == 0 || strcmp(a, "--jobs") == 0 ||
                     strcmp(a, "--tag") == 0;
        if (takes && !v) {
            cl_out_error("regressions", "%s needs a value", a);
            goto done;
        }
        if (strcmp(a, "--json") == 0) {
            as_json = true;
        } else if (strcmp(a, "--since") == 0) {
            double s;
            if (s_duration(v, &s) != 0) {
                cl_out_error("regressions", "--since \"%s\": want a duration "
                             "such as 90s, 10m, 2h, 3d, 2w (at most 366d)", v);
                goto done;
            }
            json_object_set_new(args, "since_us",
                                json_integer((json_int_t)(s * 1e6)));
            since = true;
            i++;
        } else if (strcmp(a, "--jobs") == 0) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || end == v || n < 1 || n > 1000) {
                cl_out_error("regressions", "--jobs \"%s\": want 1..1000", v);
                goto done;
            }
            json_object_set_new(args, "jobs", json_integer(n));
            jobs = true;
            i++;
        } else if (strcmp(a, "--tag") == 0) {
            if (s_add_pair(tags, v) != 0 || json_object_size(tags) > 256) {
                cl_out_error("regressions", "--tag \"%s\": want KEY=VALUE",
                             v);
                goto done;
            }
            i++;
        } else {
            cl_out_error("regressions", "unexpected argument \"%s\" (parity "
                         "regressions --help)", a);
            goto done;
        }
    }
    if (since && jobs) {
        cl_out_error("regressions", "give --since or --jobs, not both");
        goto done;
    }
    json_object_set(args, "tags", tags);
    rc = cl_conn_ask("regressions", &co, "regressions", args, &body);
    if (rc != CL_EXIT_OK) {
        if (rc == CL_EXIT_DATA)
            rc = S_EXIT_REPLY;
        goto done;
    }
    const json_t *worse = json_object_get(body, "regressions"),
                 *better = json_object_get(body, "improvements");
    int w = 0;
    if (as_json) {
        w = cl_out_json(stdout, body);
    } else {
        w |= s_print_list(stdout, "regressions", worse);
        if (json_array_size(worse) && json_array_size(better))
            fputc('\n', stdout);
        w |= s_print_list(stdout, "improvements", better);
        printf("%zu regressed, %zu improved, %" JSON_INTEGER_FORMAT
               " unchanged, %" JSON_INTEGER_FORMAT " with no earlier "
               "verdict\n", json_array_size(worse), json_array_size(better),
               json_integer_value(json_object_get(body, "unchanged")),
               json_integer_value(json_object_get(body, "first")));
        if (json_is_true(json_object_get(body, "truncated")))
            printf("(more pairs than one answer holds: give --tag or "
                   "--jobs)\n");
    }
    if (w != 0 || fflush(stdout) != 0) {
        cl_out_error("regressions", "writing stdout failed");
        rc = CL_EXIT_SYSTEM;
        goto done;
    }
    rc = json_array_size(worse) ? S_REGRESSED : CL_EXIT_OK;
done:
    json_decref(args);
    json_decref(tags);
    json_decref(body);
    return rc;
}
