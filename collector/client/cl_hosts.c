/* cl_hosts.c -- `parity hosts [--json]`: the fleet as the collector sees
 * it (docs/commands/hosts.md). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cl_conn.h"
#include "cl_out.h"
#include "cl_verbs.h"

static void
s_usage(FILE *f)
{
    fprintf(f, "usage: parity hosts [--json] [connection options]\n\n"
               "The collector's hosts: name, online or offline and when "
               "last seen, noise floor\nand when calibrated, CPU, kernel, "
               "environment warnings, suites.\n\n"
               "  --json                 the collector's answer as JSON\n"
               "  --collector ADDR       tcp://HOST:PORT "
               "($PARITY_COLLECTOR)\n"
               "  --collector-key FILE   its public key "
               "($PARITY_COLLECTOR_KEY)\n"
               "  --key FILE             this client's key, on the "
               "collector's --admin list ($PARITY_KEY)\n"
               "  --timeout SECONDS      per request (default 10)\n"
               "Settings also come from ~/.config/parity/client.yaml "
               "(docs/client.md).\n");
}

/* "12 s ago", "3 min ago", "2 h ago", "4 d ago". */
static void
s_ago(char *buf, size_t len, json_int_t at_us)
{
    if (at_us <= 0) {
        snprintf(buf, len, "never");
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double s = ((double)ts.tv_sec * 1e6 + ts.tv_nsec / 1e3 - (double)at_us)
               / 1e6;
    if (s < 0)
        s = 0;
    if (s < 120)
        snprintf(buf, len, "%.0f s ago", s);
    else if (s < 7200)
        snprintf(buf, len, "%.0f min ago", s / 60);
    else if (s < 172800)
        snprintf(buf, len, "%.0f h ago", s / 3600);
    else
        snprintf(buf, len, "%.0f d ago", s / 86400);
}

static const char *
s_str(const json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s && *s ? s : dflt;
}

/* One line per machine that more than one host (agent) runs on: the
 * collector gives jobs to one of them at a time. Each group is printed
 * once, at its first host in the table's order. */
static void
s_print_machines(const json_t *hosts)
{
    size_t i;
    json_t *h;
    json_array_foreach(hosts, i, h) {
        const json_t *same = json_object_get(h, "same_machine");
        if (json_array_size(same) == 0)
            continue;
        const char *name = s_str(h, "name", "?");
        bool first = true;
        size_t k;
        json_t *v;
        json_array_foreach(same, k, v) {
            const char *o = json_string_value(v);
            if (o && strcmp(o, name) < 0)
                first = false;
        }
        if (!first)
            continue;
        printf("one machine (boot id %.8s...): %s", s_str(h, "boot_id", "?"),
               name);
        json_array_foreach(same, k, v)
            printf(", %s", json_string_value(v) ? json_string_value(v) : "?");
        printf(": their jobs run one at a time\n");
    }
}

int
cl_hosts_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    char err[512];
    bool as_json = false;
    if (cl_out_wants_help(argc, argv)) {
        s_usage(stdout);
        return CL_EXIT_OK;
    }
    if (cl_conn_take_args(&argc, argv, &co, err, sizeof err) != 0) {
        cl_out_error("hosts", "%s", err);
        return CL_EXIT_USAGE;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            as_json = true;
        } else {
            cl_out_error("hosts", "unknown argument \"%s\" (parity hosts "
                         "--help)", argv[i]);
            return CL_EXIT_USAGE;
        }
    }
    json_t *body = NULL;
    int rc = cl_conn_ask("hosts", &co, "hosts", NULL, &body);
    if (rc != CL_EXIT_OK)
        return rc;
    if (as_json) {
        rc = cl_out_json(stdout, body) == 0 ? CL_EXIT_OK : CL_EXIT_SYSTEM;
        json_decref(body);
        return rc;
    }
    json_t *hosts = json_object_get(body, "hosts");
    cl_out_table_t *t = cl_out_table_new(9);
    if (!t) {
        json_decref(body);
        return CL_EXIT_SYSTEM;
    }
    const char *head[] = { "host", "state", "last seen", "floor",
                           "calibrated", "cpu", "kernel", "suites",
                           "warnings" };
    cl_out_table_add(t, head);
    size_t i;
    json_t *h;
    json_array_foreach(hosts, i, h) {
        char seen[64], floor[64], cal[64], suites[CL_CELL_MAX] = "",
             warn[CL_CELL_MAX] = "";
        s_ago(seen, sizeof seen,
              json_integer_value(json_object_get(h, "last_seen_us")));
        cl_out_us(floor, sizeof floor,
                  json_real_value(json_object_get(h, "floor_us")));
        if (json_is_true(json_object_get(h, "floor_default")))
            strncat(floor, " (default)", sizeof floor - strlen(floor) - 1);
        s_ago(cal, sizeof cal,
              json_integer_value(json_object_get(h, "calibrated_at_us")));
        size_t k;
        json_t *v;
        json_array_foreach(json_object_get(h, "suites"), k, v) {
            if (k)
                strncat(suites, ",", sizeof suites - strlen(suites) - 1);
            strncat(suites, json_string_value(v) ? json_string_value(v) : "",
                    sizeof suites - strlen(suites) - 1);
        }
        json_array_foreach(json_object_get(h, "warnings"), k, v) {
            if (k)
                strncat(warn, ",", sizeof warn - strlen(warn) - 1);
            strncat(warn, s_str(v, "code", "?"),
                    sizeof warn - strlen(warn) - 1);
        }
        const char *row[] = {
            s_str(h, "name", "?"),
            json_is_true(json_object_get(h, "online")) ? "online" :
                                                         "offline",
            seen, floor, cal, s_str(h, "cpu_model", "-"),
            s_str(h, "kernel", "-"), *suites ? suites : "-",
            *warn ? warn : "-" };
        cl_out_table_add(t, row);
    }
    rc = cl_out_table_print(t, stdout) == 0 ? CL_EXIT_OK : CL_EXIT_SYSTEM;
    if (json_array_size(hosts) == 0)
        printf("(no host has said Hello to this collector yet)\n");
    s_print_machines(hosts);
    cl_out_table_destroy(&t);
    json_decref(body);
    return rc;
}
