/* cl_jobs.c -- `parity jobs [--active]` and `parity cancel JOB`
 * (docs/commands/jobs.md, cancel.md). */
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cl_conn.h"
#include "cl_jobs.h"
#include "cl_out.h"
#include "pw_out.h"
#include "cl_verbs.h"

static void
s_jobs_usage(FILE *f)
{
    fprintf(f, "usage: parity jobs [--active] [--limit N] [--json] "
               "[connection options]\n\n"
               "The latest jobs (newest first): id, suite, state, when, "
               "hosts per state, tags, label.\n\n"
               "  --active   only jobs still running or queued somewhere\n"
               "  --limit N  at most N jobs (default 50, at most 1000)\n"
               "  --json     the collector's answer as JSON\n"

               "Connection options as in `parity hosts --help`.\n");
}

int
cl_jobs_print(FILE *f, const json_t *body, bool active)
{
    pw_out_table_t *t = pw_out_table_new(7);
    if (!t)
        return PW_EXIT_SYSTEM;
    const char *head[] = { "job", "suite", "state", "created", "hosts",
                           "tags", "label" };
    pw_out_table_add(t, head);
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(body, "jobs"), i, j) {
        char created[64], hosts[PW_OUT_CELL_MAX] = "",
             tags[PW_OUT_CELL_MAX];
        pw_out_time(created, sizeof created,
               json_integer_value(json_object_get(j, "created_at_us")),
               PW_OUT_TIME_TABLE);
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(j, "hosts"), k, v) {
            size_t u = strlen(hosts);
            snprintf(hosts + u, sizeof hosts - u, "%s%s %lld", u ? ", " : "",
                     k, (long long)json_integer_value(v));
        }
        pw_out_pairs(tags, sizeof tags, json_object_get(j, "tags"), "-");
        const char *row[] = { pw_out_str(j, "job", "?"),
                              pw_out_str(j, "suite", "?"),
                              pw_out_str(j, "state", "?"), created,
                              *hosts ? hosts : "-", tags,
                              pw_out_str(j, "label", "-") };
        pw_out_table_add(t, row);
    }
    int rc = pw_out_table_print(t, f) == 0 ? PW_EXIT_OK : PW_EXIT_SYSTEM;
    if (json_array_size(json_object_get(body, "jobs")) == 0)
        fprintf(f, active ? "(no active job)\n" : "(no job yet)\n");
    pw_out_table_destroy(&t);
    return rc;
}

int
cl_jobs_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    bool active = false, as_json = false;
    long limit = 50;
    if (cl_out_wants_help(argc, argv)) {
        s_jobs_usage(stdout);
        return PW_EXIT_OK;
    }
    if (cl_conn_verb_args("jobs", &argc, argv, &co) != 0)
        return PW_EXIT_USAGE;
    enum { O_ACTIVE = 256, O_JSON, O_LIMIT };
    static const struct option opts[] = {
        { "active", no_argument, NULL, O_ACTIVE },
        { "json", no_argument, NULL, O_JSON },
        { "limit", required_argument, NULL, O_LIMIT },
        { NULL, 0, NULL, 0 } };
    int o;
    CL_CONN_EACH_OPTION(o, argc, argv, opts) {
        char *end;
        if (o == O_ACTIVE) {
            active = true;
        } else if (o == O_JSON) {
            as_json = true;
        } else if (o == O_LIMIT) {
            limit = strtol(optarg, &end, 10);
            if (*end || end == optarg || limit < 1 || limit > 1000) {
                cl_out_error("jobs", "--limit \"%s\": want 1..1000", optarg);
                return PW_EXIT_USAGE;
            }
        } else {
            cl_out_getopt_error("jobs", o, argv);
            return PW_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        cl_out_error("jobs", "unexpected argument \"%s\" (parity jobs "
                     "--help)", argv[optind]);
        return PW_EXIT_USAGE;
    }
    json_t *args = json_pack("{s:b,s:i}", "active", active, "limit",
                             (int)limit);
    json_t *body = NULL;
    int rc = cl_conn_ask("jobs", &co, "jobs", args, &body);
    json_decref(args);
    if (rc != PW_EXIT_OK)
        return rc;
    if (as_json)
        return cl_out_json_exit(body);
    rc = cl_jobs_print(stdout, body, active);
    json_decref(body);
    return rc;
}

int
cl_cancel_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    const char *job = NULL;
    int begun = cl_conn_verb_begin("cancel",
        "usage: parity cancel JOB [connection options]\n\n"
        "Cancel a job: hosts that have not started it never will, running "
        "ones are\nasked to stop (their run ends cancelled).\n",
        &argc, argv, &co);
    if (begun >= 0)
        return begun;
    if (cl_out_operand_only("cancel", argc, argv, &job) != 0)
        return PW_EXIT_USAGE;
    if (!job) {
        cl_out_error("cancel", "which job? (parity cancel JOB; parity jobs "
                     "--active lists them)");
        return PW_EXIT_USAGE;
    }
    json_t *args = json_pack("{s:s}", "job", job);
    json_t *body = NULL;
    int rc = cl_conn_ask("cancel", &co, "cancel", args, &body);
    json_decref(args);
    if (rc != PW_EXIT_OK)
        return rc;
    json_int_t n = json_integer_value(json_object_get(body, "cancelled"));
    if (n > 0)
        printf("job %s cancelled on %lld host%s\n", job, (long long)n,
               n == 1 ? "" : "s");
    else
        printf("job %s was already %s: nothing to cancel\n", job,
               pw_out_str(body, "state", "over"));
    json_decref(body);
    return PW_EXIT_OK;
}
