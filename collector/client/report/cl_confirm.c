/* cl_confirm.c -- `parity regressions confirm` (cl_confirm.h). */
#include "cl_confirm.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_out.h"
#include "pw_out.h"

#define S_VERB "regressions confirm"
/* The collector answered with an error, or the confirm failed. */
#define S_EXIT_REPLY 4
#define S_CONFIRMED  1
/* How often --wait asks, and how long it rides out a collector away. */
#define S_POLL_MS 1000
#define S_RIDE_OUT_S 60.0
/* Most runs (co_confirm.h's CO_CONFIRM_RUNS_MAX). */
#define S_RUNS_MAX 10000

static volatile sig_atomic_t s_interrupted;

static void
s_on_int(int sig)
{
    (void)sig;
    s_interrupted = 1;
}

/* "alpha, beta" of a list of names. */
static void
s_names(char *buf, size_t len, const json_t *list)
{
    size_t i, at = 0;
    json_t *h;
    buf[0] = '\0';
    json_array_foreach(list, i, h)
        if (at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "",
                                   json_string_value(h) ?
                                   json_string_value(h) : "?");
}

/* The ended confirm k: a line, each host's answer, the state. */
static int
s_print(FILE *f, const json_t *k)
{
    fprintf(f, "confirm %lld of event #%lld (%s/%s), %s against %s in job "
            "%s:\n", (long long)json_integer_value(json_object_get(k, "id")),
            (long long)json_integer_value(json_object_get(k, "event")),
            pw_out_str(k, "suite", "?"), pw_out_str(k, "benchmark", "?"),
            pw_out_str(k, "after", "?"), pw_out_str(k, "before", "?"),
            pw_out_str(k, "job", "-"));
    static const char *const head[] = { "host", "state", "verdict", "ratio",
                                        "tolerance", "why" };
    pw_out_table_t *t = pw_out_table_new(6);
    int rc = t ? pw_out_table_add(t, head) : -1;
    size_t i;
    json_t *h;
    for (size_t c = 0; t && c < 6; c++)
        if (c != 3 && c != 4)
            pw_out_table_left(t, c);
    json_array_foreach(json_object_get(json_object_get(k, "result"), "hosts"),
                       i, h) {
        char ratio[32] = "-", tol[32] = "-";
        if (json_is_number(json_object_get(h, "ratio"))) {
            snprintf(ratio, sizeof ratio, "x%.3f", json_number_value(
                json_object_get(h, "ratio")));
            snprintf(tol, sizeof tol, "%.1f %%", 100 * json_number_value(
                json_object_get(h, "tolerance")));
        }
        const char *row[] = { pw_out_str(h, "host", "?"),
                              pw_out_str(h, "state", "?"),
                              pw_out_str(h, "outcome", "-"), ratio, tol,
                              pw_out_str(h, "reason", "") };
        if (t)
            rc |= pw_out_table_add(t, row);
    }
    if (t)
        rc |= pw_out_table_print(t, f);
    pw_out_table_destroy(&t);
    json_t *sum = json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:O}", "id",
        json_object_get(k, "id"), "state", json_object_get(k, "state"),
        "reason", json_object_get(k, "reason"), "before", json_object_get(
            k, "before"), "after", json_object_get(k, "after"), "confirmed",
        json_object_get(json_object_get(k, "result"), "confirmed") ?
        json_object_get(json_object_get(k, "result"), "confirmed") :
        json_null(), "measured", json_object_get(json_object_get(k, "result"),
        "measured") ? json_object_get(json_object_get(k, "result"),
        "measured") : json_null());
    char said[PW_OUT_CELL_MAX];
    fprintf(f, "%s\n", pw_out_confirm(said, sizeof said, sum));
    json_decref(sum);
    return rc || ferror(f) ? -1 : 0;
}

/* Follow confirm id to its end; its exit status (cl_confirm.h). */
static int
s_wait(cl_conn_t *c, json_int_t id, bool as_json)
{
    char err[2048];
    json_t *args = json_pack("{s:I}", "confirm", id), *k = NULL;
    double missed_s = 0;
    bool told_job = false;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_int;
    sigaction(SIGINT, &sa, NULL);
    int rc;
    for (;;) {
        json_decref(k);
        k = NULL;
        int status = 0;
        rc = cl_conn_request(c, "confirm_status", args, &k, &status, err,
                             sizeof err);
        if ((rc == CL_CONN_NOANSWER || (rc == CL_CONN_REPLY &&
                                        status == 5)) && !s_interrupted &&
            missed_s < S_RIDE_OUT_S) {
            struct timespec pause = { 1, 0 };
            nanosleep(&pause, NULL);
            missed_s += 1;
            continue;
        }
        if (rc != CL_CONN_OK && !s_interrupted) {
            cl_out_error(S_VERB, "%s", err);
            rc = rc == CL_CONN_REPLY ? S_EXIT_REPLY : cl_conn_exit_code(rc);
            goto done;
        }
        missed_s = 0;
        const char *state = pw_out_str(k, "state", "queued");
        if (rc == CL_CONN_OK && !told_job && json_is_string(json_object_get(
                k, "job"))) {
            fprintf(stderr, "parity %s: job %s\n", S_VERB,
                    pw_out_str(k, "job", "?"));
            told_job = true;
        }
        if (rc == CL_CONN_OK && strcmp(state, "running") != 0 &&
            strcmp(state, "queued") != 0)
            break;
        if (s_interrupted) {
            cl_out_error(S_VERB, "stopped waiting; confirm %lld goes on "
                         "(parity regressions lists its answer)",
                         (long long)id);
            rc = PW_EXIT_SYSTEM;
            goto done;
        }
        struct timespec ts = { 0, S_POLL_MS * 1000000L };
        nanosleep(&ts, NULL);
    }
    if ((as_json ? pw_out_json(stdout, k) : s_print(stdout, k)) != 0 ||
        fflush(stdout) != 0) {
        cl_out_error(S_VERB, "writing stdout failed");
        rc = PW_EXIT_SYSTEM;
        goto done;
    }
    const char *state = pw_out_str(k, "state", "?");
    if (strcmp(state, "failed") == 0) {
        cl_out_error(S_VERB, "confirm %lld failed: %s", (long long)id,
                     pw_out_str(k, "reason", "?"));
        rc = S_EXIT_REPLY;
    } else
        rc = strcmp(state, "confirmed") == 0 ? S_CONFIRMED : PW_EXIT_OK;
done:
    json_decref(args);
    json_decref(k);
    return rc;
}

/* The operand: an event's or change point's id. */
static int
s_args(int argc, char **argv, json_int_t *id, json_int_t *runs, bool *wait,
       bool *as_json)
{
    enum { O_RUNS = 256, O_WAIT, O_JSON };
    static const struct option opts[] = {
        { "runs", required_argument, NULL, O_RUNS },
        { "wait", no_argument, NULL, O_WAIT },
        { "json", no_argument, NULL, O_JSON }, { NULL, 0, NULL, 0 } };
    int c;
    char *end;
    CL_CONN_EACH_OPTION(c, argc, argv, opts) {
        if (c == O_WAIT)
            *wait = true;
        else if (c == O_JSON)
            *as_json = true;
        else if (c == O_RUNS) {
            errno = 0;
            *runs = strtoll(optarg, &end, 10);
            if (*end || end == optarg || errno || *runs < 2 ||
                *runs > S_RUNS_MAX) {
                cl_out_error(S_VERB, "--runs \"%s\": want a whole number "
                             "from 2 to %d", optarg, S_RUNS_MAX);
                return -1;
            }
        } else {
            cl_out_error(S_VERB, c == ':' ? "%s needs a value" :
                         "unexpected option %s (parity regressions --help)",
                         argv[optind - 1]);
            return -1;
        }
    }
    if (optind + 1 != argc) {
        cl_out_error(S_VERB, "give one event id (parity regressions lists "
                     "them)");
        return -1;
    }
    const char *text = argv[optind];
    errno = 0;
    *id = strtoll(text, &end, 10);
    if (*end || end == text || errno || *id < 1) {
        cl_out_error(S_VERB, "\"%s\" is not an event id", text);
        return -1;
    }
    return 0;
}

int
cl_confirm_main(int argc, char **argv, cl_conn_opts_t *co)
{
    json_int_t id = 0, runs = 0;
    bool wait = false, as_json = false;
    if (s_args(argc, argv, &id, &runs, &wait, &as_json) != 0)
        return PW_EXIT_USAGE;
    json_t *args = json_pack("{s:I}", "id", id), *body = NULL;
    if (args && runs)
        json_object_set_new(args, "runs", json_integer(runs));
    char err[2048];
    int code = 0, status = 0, rc;
    cl_conn_t *c = args ? cl_conn_open(co, &code, err, sizeof err) : NULL;
    if (!c) {
        cl_out_error(S_VERB, "%s", args ? err : "out of memory");
        rc = args ? cl_conn_exit_code(code) : PW_EXIT_SYSTEM;
        goto done;
    }
    if ((rc = cl_conn_request(c, "confirm", args, &body, &status, err,
                              sizeof err)) != CL_CONN_OK) {
        cl_out_error(S_VERB, "%s", err);
        rc = rc == CL_CONN_REPLY ? S_EXIT_REPLY : cl_conn_exit_code(rc);
        goto done;
    }
    char hosts[PW_OUT_CELL_MAX];
    s_names(hosts, sizeof hosts, json_object_get(body, "hosts"));
    json_int_t kid = json_integer_value(json_object_get(body, "id"));
    if (wait || !as_json)
        fprintf(wait ? stderr : stdout, "confirm %lld of event #%lld %s: "
                "%s/%s, %s against %s on %s\n", (long long)kid,
                (long long)json_integer_value(json_object_get(body, "event")),
                json_is_true(json_object_get(body, "existing")) ?
                "was asked already" : "asked", pw_out_str(body, "suite", "?"),
                pw_out_str(body, "benchmark", "?"), pw_out_str(body, "after",
                                                               "?"),
                pw_out_str(body, "before", "?"), hosts);
    if (wait)
        rc = s_wait(c, kid, as_json);
    else
        rc = as_json && pw_out_json(stdout, body) != 0 ? PW_EXIT_SYSTEM
                                                       : PW_EXIT_OK;
done:
    cl_conn_destroy(&c);
    json_decref(args);
    json_decref(body);
    return rc;
}
