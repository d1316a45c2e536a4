/* cl_hosts.c -- `parity hosts [--json]`: the fleet as the collector sees
 * it (docs/commands/hosts.md). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cl_aa.h"
#include "cl_conn.h"
#include "cl_hosts.h"
#include "cl_out.h"
#include "pw_clock.h"
#include "pw_out.h"
#include "cl_verbs.h"

static void
s_usage(FILE *f)
{
    fprintf(f, "usage: parity hosts [--json] [connection options]\n"
               "       parity hosts --pending [--json] [connection "
               "options]\n"
               "       parity hosts approve|reject|revoke FINGERPRINT|NAME "
               "[--json]\n"
               "                    [connection options]\n\n"
               "The collector's hosts: name, online or offline and when "
               "last seen, noise floor\nand when calibrated, CPU, kernel, "
               "environment warnings, suites, last A/A self-test\n"
               "(parity selftest; a warning above 2 %% false "
               "verdicts).\n\n"
               "  --pending              the agents' keys that wait for "
               "approval: fingerprint,\n"
               "                         claimed name, address\n"
               "  approve KEY            let a pending (or rejected, "
               "revoked) key's agent in:\n"
               "                         its spooled data arrives\n"
               "  reject KEY             refuse a pending key for good\n"
               "  revoke KEY             shut an approved key out now: its "
               "connection is\n"
               "                         refused, its running job fails\n"
               "  KEY is a fingerprint (SHA256:..., as --pending and "
               "parity-agent\n"
               "  --fingerprint show it) or the host name its agent "
               "claimed.\n"
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

/* "12 s ago", "3 min ago", "2 h ago", "4 d ago" before now_us (0: the
 * clock's now). */
static void
s_ago(char *buf, size_t len, json_int_t at_us, int64_t now_us)
{
    if (at_us <= 0) {
        snprintf(buf, len, "never");
        return;
    }
    if (now_us <= 0)
        now_us = pw_clock_unix_us();
    double s = ((double)now_us - (double)at_us) / 1e6;
    char span[32];
    snprintf(buf, len, "%s ago", cl_out_span(span, sizeof span, s));
}

/* One line per machine that more than one host (agent) runs on: the
 * collector gives jobs to one of them at a time. Each group is printed
 * once, at its first host in the table's order. */
static void
s_print_machines(FILE *f, const json_t *hosts)
{
    size_t i;
    json_t *h;
    json_array_foreach(hosts, i, h) {
        const json_t *same = json_object_get(h, "same_machine");
        if (json_array_size(same) == 0)
            continue;
        const char *name = pw_out_str(h, "name", "?");
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
        fprintf(f, "one machine (boot id %.8s...): %s",
               pw_out_str(h, "boot_id", "?"),
               name);
        json_array_foreach(same, k, v)
            fprintf(f, ", %s", json_string_value(v) ? json_string_value(v) : "?");
        /* The collector lists 16 others at most; the count has them all. */
        json_int_t all = json_integer_value(json_object_get(
            h, "same_machine_count"));
        if (all > (json_int_t)json_array_size(same))
            fprintf(f, " and %lld more", (long long)(all -
                                      (json_int_t)json_array_size(same)));
        fprintf(f, ": their jobs run one at a time\n");
    }
}

/* A warning line per host whose last self-test gave more than 2 %
 * false verdicts (the table's self-test column has only the counts). */
static void
s_print_selftests(FILE *f, const json_t *hosts)
{
    size_t i;
    json_t *h;
    json_array_foreach(hosts, i, h) {
        const json_t *st = json_object_get(h, "selftest");
        if (!cl_aa_warns(st))
            continue;
        char text[256], when[96];
        cl_aa_text(text, sizeof text, st);
        cl_aa_when(when, sizeof when, st);
        fprintf(f, "warning: %s: %s (self-test of %s); its verdicts call "
               "noise a difference more often than the rule is built to\n",
               pw_out_str(h, "name", "?"), text, when);
    }
}

/* --pending: the keys waiting for approval, oldest first. */
static int
s_pending(const json_t *body)
{
    json_t *keys = json_object_get(body, "pending");
    pw_out_table_t *t = pw_out_table_new(6);
    if (!t)
        return PW_EXIT_SYSTEM;
    const char *head[] = { "fingerprint", "name", "address", "version",
                           "first seen", "last seen" };
    pw_out_table_add(t, head);
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k) {
        char first[64], last[64];
        s_ago(first, sizeof first,
              json_integer_value(json_object_get(k, "first_seen_us")), 0);
        s_ago(last, sizeof last,
              json_integer_value(json_object_get(k, "last_seen_us")), 0);
        const char *row[] = { pw_out_str(k, "fingerprint", "?"),
                              pw_out_str(k, "name", "-"),
                              pw_out_str(k, "address", "-"),
                              pw_out_str(k, "agent_version", "-"), first,
                              last };
        pw_out_table_add(t, row);
    }
    int rc = pw_out_table_print(t, stdout) == 0 ? PW_EXIT_OK : PW_EXIT_SYSTEM;
    pw_out_table_destroy(&t);
    if (json_array_size(keys) == 0)
        printf("(no key waits for approval)\n");
    else
        printf("Compare a fingerprint with `parity-agent --fingerprint` on "
               "its host, then:\n  parity hosts approve FINGERPRINT\n");
    return rc;
}

/* approve, reject, revoke: what the collector did. */
static void
s_decided(const char *action, const json_t *b)
{
    const char *fp = pw_out_str(b, "fingerprint", "?");
    const char *name = pw_out_str(b, "name", "-");
    const char *state = pw_out_str(b, "state", "?");
    const char *was = pw_out_str(b, "was", "?");
    if (strcmp(state, was) == 0) {
        printf("%s (%s) was %s already: nothing changed\n", fp, name, was);
        return;
    }
    if (strcmp(action, "approve") == 0)
        printf("approved %s (%s): its agent's next Hello is accepted, and "
               "its spooled data follows\n", fp, name);
    else if (strcmp(action, "reject") == 0)
        printf("rejected %s (%s): refused at the handshake from now on\n",
               fp, name);
    else
        printf("revoked %s (%s): refused from now on; %lld job row(s) "
               "failed\n", fp, name,
               (long long)json_integer_value(json_object_get(b,
                                                             "jobs_failed")));
}

/* Another metric's floor, as its verdicts use it (docs/verdict.md
 * "Metrics"): "312 us", "8 KiB", with "(default)" when fewer than 100
 * calibration runs had the metric; "-" when none is known. */
static void
s_metric_floor(char *buf, size_t len, const json_t *h, const char *metric)
{
    const json_t *f = json_object_get(json_object_get(h, "metric_floors"),
                                      metric);
    const json_t *v = json_object_get(f, "floor");
    char num[48];
    if (!json_is_number(v)) {
        snprintf(buf, len, "-");
        return;
    }
    if (strcmp(metric, "peak_rss") == 0)
        snprintf(num, sizeof num, "%.0f KiB", json_number_value(v));
    else
        pw_out_us(num, sizeof num, json_number_value(v));
    snprintf(buf, len, "%s%s", num, json_is_true(json_object_get(f,
             "default")) ? " (default)" : "");
}

int
cl_hosts_print(FILE *f, const json_t *body, int64_t now_us)
{
    json_t *hosts = json_object_get(body, "hosts");
    pw_out_table_t *t = pw_out_table_new(13);
    if (!t)
        return PW_EXIT_SYSTEM;
    const char *head[] = { "host", "state", "last seen", "floor",
                           "floor pools", "cpu floor", "rss floor",
                           "calibrated", "cpu", "kernel", "suites",
                           "self-test", "warnings" };
    pw_out_table_add(t, head);
    size_t i;
    json_t *h;
    json_array_foreach(hosts, i, h) {
        char seen[64], floor[64], pool[160], cal[64], cpuf[64], rssf[64],
             suites[PW_OUT_CELL_MAX] = "",
             warn[PW_OUT_CELL_MAX] = "", self[64] = "-";
        s_ago(seen, sizeof seen,
              json_integer_value(json_object_get(h, "last_seen_us")), now_us);
        pw_out_floor(floor, sizeof floor, h, " (default)");
        cl_out_pool(pool, sizeof pool, h, now_us);
        s_metric_floor(cpuf, sizeof cpuf, h, "cpu");
        s_metric_floor(rssf, sizeof rssf, h, "peak_rss");
        char kern[PW_OUT_CELL_MAX];
        pw_out_kernel(kern, sizeof kern, h);
        s_ago(cal, sizeof cal,
              json_integer_value(json_object_get(h, "calibrated_at_us")), now_us);
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
            strncat(warn, pw_out_str(v, "code", "?"),
                    sizeof warn - strlen(warn) - 1);
        }
        /* false verdicts / trials, and the day; the words below. */
        const json_t *st = json_object_get(h, "selftest");
        if (json_is_object(st)) {
            char when[96];
            cl_aa_when(when, sizeof when, st);
            snprintf(self, sizeof self, "%" JSON_INTEGER_FORMAT "/%"
                     JSON_INTEGER_FORMAT " %.10s",
                     json_integer_value(json_object_get(st,
                                                        "false_verdicts")),
                     json_integer_value(json_object_get(st, "trials")),
                     when);
        }
        /* A key shut out says so before whether it is online. */
        const char *key_state = pw_out_str(h, "key_state", "approved");
        const char *row[] = {
            pw_out_str(h, "name", "?"),
            strcmp(key_state, "approved") != 0 ? key_state :
            json_is_true(json_object_get(h, "online")) ? "online" :
                                                         "offline",
            seen, floor, pool, cpuf, rssf, cal,
            pw_out_str(h, "cpu_model", "-"),
            kern, *suites ? suites : "-", self,
            *warn ? warn : "-" };
        pw_out_table_add(t, row);
    }
    int rc = pw_out_table_print(t, f) == 0 ? PW_EXIT_OK : PW_EXIT_SYSTEM;
    if (json_array_size(hosts) == 0)
        fprintf(f, "(no host has said Hello to this collector yet)\n");
    s_print_machines(f, hosts);
    s_print_selftests(f, hosts);
    pw_out_table_destroy(&t);
    return rc;
}

int
cl_hosts_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    bool as_json = false, pending = false;
    const char *action = NULL, *target = NULL;
    if (cl_out_wants_help(argc, argv)) {
        s_usage(stdout);
        return PW_EXIT_OK;
    }
    if (cl_conn_verb_args("hosts", &argc, argv, &co) != 0)
        return PW_EXIT_USAGE;
    enum { O_JSON = 256, O_PENDING };
    static const struct option opts[] = {
        { "json", no_argument, NULL, O_JSON },
        { "pending", no_argument, NULL, O_PENDING },
        { NULL, 0, NULL, 0 } };
    int o;
    CL_CONN_EACH_OPTION(o, argc, argv, opts) {
        if (o == O_JSON) {
            as_json = true;
        } else if (o == O_PENDING) {
            pending = true;
        } else {
            cl_out_error("hosts", "unknown argument \"%s\" (parity hosts "
                         "--help)", argv[optind - 1]);
            return PW_EXIT_USAGE;
        }
    }
    /* Then nothing, or ACTION TARGET. */
    for (int i = optind; i < argc; i++) {
        if (i == optind && (strcmp(argv[i], "approve") == 0
                            || strcmp(argv[i], "reject") == 0
                            || strcmp(argv[i], "revoke") == 0)) {
            action = argv[i];
        } else if (action && !target) {
            target = argv[i];
        } else {
            cl_out_error("hosts", "unknown argument \"%s\" (parity hosts "
                         "--help)", argv[i]);
            return PW_EXIT_USAGE;
        }
    }
    if (action && !target) {
        cl_out_error("hosts", "%s needs a key's FINGERPRINT or its host's "
                     "NAME (parity hosts --pending lists them)", action);
        return PW_EXIT_USAGE;
    }
    if (action && pending) {
        cl_out_error("hosts", "--pending lists keys; %s takes one: give "
                     "either", action);
        return PW_EXIT_USAGE;
    }
    json_t *args = action ? json_pack("{s:s}", strncmp(target, "SHA256:", 7)
                                      == 0 ? "fingerprint" : "name", target)
                          : NULL;
    json_t *body = NULL;
    int rc = cl_conn_ask("hosts", &co, action ? action : pending ? "pending"
                         : "hosts", args, &body);
    json_decref(args);
    if (rc != PW_EXIT_OK)
        return rc;
    if (as_json)
        return cl_out_json_exit(body);
    if (action || pending) {
        if (action)
            s_decided(action, body);
        rc = action ? PW_EXIT_OK : s_pending(body);
        json_decref(body);
        if (fflush(stdout) != 0)
            rc = PW_EXIT_SYSTEM;
        return rc;
    }
    rc = cl_hosts_print(stdout, body, 0);
    json_decref(body);
    return rc;
}
