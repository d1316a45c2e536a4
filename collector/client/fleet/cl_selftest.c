/* cl_selftest.c -- `parity selftest`: an A/A job on the fleet's hosts,
 * each host's false-verdict rate (docs/commands/selftest.md). */

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_aa.h"
#include "cl_conn.h"
#include "cl_out.h"
#include "pw_out.h"
#include "cl_verbs.h"
#include "pw_limits.h"

#define S_VERB "selftest"
/* Poll interval of --wait (as `run --wait`). */
#define S_POLL_MS 400
#define S_MAX_HOSTS 4096

/* ---- the verb ---------------------------------------------------- */

static const char s_usage[] =
"usage: parity selftest [--hosts NAME,...|all|KEY=VALUE] [--trials K]\n"
"                       [--loops N] [--wait] [--json] [connection options]\n\n"
"An A/A job: each host compares one command with itself K times (the\n"
"built-in suite parity-selftest: benchmarks aa-001 .. aa-K, arms a and\n"
"a-again, both `sh -c` of a counting loop). Any verdict other than parity\n"
"is a false verdict; the collector keeps each host's last rate, which\n"
"`parity hosts` shows and every verdict of the host carries. A host above\n"
"2 % is warned about.\n\n"
"  --hosts LIST    host names, `all` (the default), or KEY=VALUE to pick\n"
"                  hosts by tag; comma-separated, may repeat\n"
"  --trials K      A/A comparisons per host, 1..256 (default 50)\n"
"  --loops N       iterations of the loop both arms run, 1..10000000\n"
"                  (default 5000: about 5 to 20 ms)\n"
"  --wait          follow the job, then print each host's result\n"
"  --json          print the collector's answer (with --wait: the job and\n"
"                  each host's self-test) as JSON\n"
"Connection options as in `parity hosts --help`.\n\n"
"exit status: 0 job created (with --wait: every host done, none above\n"
"2 %), 1 the collector refused it, a host did not finish or is above 2 %,\n"
"2 usage, 3 no answer or --wait interrupted (the job goes on).\n";

static volatile sig_atomic_t s_interrupted;

static void
s_on_int(int sig)
{
    (void)sig;
    s_interrupted = 1;
}

/* s as a whole number 1..max into *out; -1 (said) when it is not. */
static int
s_count(const char *opt, const char *s, long max, long *out)
{
    char *end;
    long n = strtol(s, &end, 10);
    if (end == s || *end || n < 1 || n > max) {
        cl_out_error(S_VERB, "%s \"%s\": want a whole number from 1 to %ld",
                     opt, s, max);
        return -1;
    }
    *out = n;
    return 0;
}

/* One progress line per host whenever it changes. */
static void
s_progress(const json_t *job, long trials, char (*last)[256])
{
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(job, "hosts"), i, h) {
        if (i >= S_MAX_HOSTS)
            break;
        char line[256];
        const char *state = pw_out_str(h, "state", "?");
        json_int_t ended = json_integer_value(json_object_get(h,
                                                              "runs_ended"));
        if (strcmp(state, "running") == 0)
            snprintf(line, sizeof line, "%-12s running  trial %lld of %ld",
                     pw_out_str(h, "host", "?"),
                     (long long)(ended < trials ? ended + 1 : trials), trials);
        else
            snprintf(line, sizeof line, "%-12s %s%s%s",
                     pw_out_str(h, "host", "?"),
                     state, *pw_out_str(h, "reason", "") ? ": " : "",
                     pw_out_str(h, "reason", ""));
        if (strcmp(line, last[i]) != 0) {
            fprintf(stderr, "  %s\n", line);
            snprintf(last[i], sizeof last[i], "%s", line);
        }
    }
    fflush(stderr);
}

/* Poll `job` until it is no longer active; *job is the last answer.
 * PW_EXIT_OK, or the exit code after saying why. */
static int
s_follow(cl_conn_t *c, const char *id, long trials, json_t **job)
{
    char err[2048];
    char (*last)[256] = calloc(S_MAX_HOSTS, sizeof *last);
    json_t *args = json_pack("{s:s}", "job", id);
    int rc = PW_EXIT_SYSTEM;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_int;
    sigaction(SIGINT, &sa, NULL);
    *job = NULL;
    while (last && args) {
        json_decref(*job);
        *job = NULL;
        int code = cl_conn_request(c, "job", args, job, NULL, err,
                                   sizeof err);
        if (code != CL_CONN_OK && !s_interrupted) {
            cl_out_error(S_VERB, "%s", err);
            rc = cl_conn_exit_code(code);
            break;
        }
        if (code == CL_CONN_OK)
            s_progress(*job, trials, last);
        if (code == CL_CONN_OK &&
            strcmp(pw_out_str(*job, "state", "active"), "active") != 0) {
            rc = PW_EXIT_OK;
            break;
        }
        if (s_interrupted) {
            cl_out_error(S_VERB, "stopped waiting; job %s goes on (parity "
                         "cancel %s stops it)", id, id);
            break;
        }
        struct timespec ts = { 0, S_POLL_MS * 1000000L };
        nanosleep(&ts, NULL);
    }
    free(last);
    json_decref(args);
    return rc;
}

/* The other metrics' A/A counts of a host's self-test, a line each:
 * "alpha: cpu: 0 false verdicts in 50 A/A trials". */
static void
s_metric_lines(const char *name, const json_t *st)
{
    const char *const others[] = { "cpu", "peak_rss" };
    for (size_t k = 0; k < 2; k++) {
        const json_t *m = json_object_get(json_object_get(st, "metrics"),
                                          others[k]);
        if (!json_is_object(m))
            continue;
        json_int_t n = json_integer_value(json_object_get(m, "trials"));
        json_int_t bad = json_integer_value(json_object_get(m,
                                                            "false_verdicts"));
        printf("%s: %s: %" JSON_INTEGER_FORMAT " false verdict%s in %"
               JSON_INTEGER_FORMAT " A/A trial%s\n", name, others[k], bad,
               bad == 1 ? "" : "s", n, n == 1 ? "" : "s");
    }
}

/* After the job: each of its hosts' result, from `hosts`. */
static int
s_results(cl_conn_t *c, const char *id, const json_t *job, bool as_json)
{
    char err[2048];
    json_t *hosts = NULL, *out = json_array();
    int code = cl_conn_request(c, "hosts", NULL, &hosts, NULL, err,
                               sizeof err);
    if (code != CL_CONN_OK || !out) {
        cl_out_error(S_VERB, "%s", code != CL_CONN_OK ? err
                                                      : "out of memory");
        json_decref(out);
        return code != CL_CONN_OK ? cl_conn_exit_code(code) : PW_EXIT_SYSTEM;
    }
    size_t i, bad = 0, warned = 0;
    json_t *jh;
    json_array_foreach(json_object_get(job, "hosts"), i, jh) {
        const char *name = pw_out_str(jh, "host", "?");
        const char *state = pw_out_str(jh, "state", "?");
        const json_t *st = json_object_get(
            pw_out_named(hosts, "hosts", "name", name), "selftest");
        /* Only this job's result answers this run; an older one stays
         * the host's last until a new one ends done. */
        bool ours = strcmp(pw_out_str(st, "job", ""), id) == 0;
        if (!ours || strcmp(state, "done") != 0)
            bad++;
        else if (cl_aa_warns(st))
            warned++;
        json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:O}", "host",
            name, "state", state, "reason", pw_out_str(jh, "reason", ""),
            "selftest", ours && st ? st : json_null()));
        if (as_json)
            continue;
        char text[256], when[96], floor[32] = "-";
        if (!ours || strcmp(state, "done") != 0) {
            printf("%s: %s%s%s\n", name, state, *pw_out_str(jh, "reason", "")
                   ? ": " : "", pw_out_str(jh, "reason", ""));
            continue;
        }
        cl_aa_text(text, sizeof text, st);
        cl_aa_when(when, sizeof when, st);
        if (json_is_number(json_object_get(st, "floor_us")))
            pw_out_us(floor, sizeof floor, json_number_value(
                json_object_get(st, "floor_us")));
        printf("%s: %s%s, floor %s (self-test of %s)\n", name,
               cl_aa_warns(st) ? "warning: " : "", text, floor, when);
        s_metric_lines(name, st);
    }
    int rc = PW_EXIT_OK;
    if (as_json) {
        json_t *both = json_pack("{s:O,s:o}", "job", job, "hosts", out);
        out = NULL;
        rc = cl_out_json_exit(both);
    }
    json_decref(out);
    json_decref(hosts);
    if (rc == PW_EXIT_OK && bad)
        cl_out_error(S_VERB, "%zu of %zu hosts did not finish self-test %s",
                     bad, json_array_size(json_object_get(job, "hosts")), id);
    if (rc == PW_EXIT_OK && warned)
        cl_out_error(S_VERB, "%zu host%s gave more than %.0f %% false "
                     "verdicts: their verdicts are less trustworthy "
                     "(docs/verdict.md)", warned, warned == 1 ? "" : "s",
                     100.0 * PW_SELFTEST_WARN_RATE);
    return rc == PW_EXIT_OK && (bad || warned) ? PW_EXIT_DATA : rc;
}

enum { S_OPT_HOSTS = 256, S_OPT_TRIALS, S_OPT_LOOPS, S_OPT_WAIT,
       S_OPT_JSON };

static const struct option s_options[] = {
    {"hosts", required_argument, NULL, S_OPT_HOSTS},
    {"trials", required_argument, NULL, S_OPT_TRIALS},
    {"loops", required_argument, NULL, S_OPT_LOOPS},
    {"wait", no_argument, NULL, S_OPT_WAIT},
    {"json", no_argument, NULL, S_OPT_JSON},
    {NULL, 0, NULL, 0},
};

/* Parse argv into args (the `run` request) and the flags. PW_EXIT_OK or
 * PW_EXIT_USAGE (said). */
static int
s_parse(int argc, char **argv, json_t *hosts, long *trials, long *loops,
        bool *wait, bool *as_json)
{
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", s_options, NULL)) != -1) {
        switch (c) {
        case S_OPT_HOSTS:
            if (cl_out_add_list(hosts, optarg, S_MAX_HOSTS) != 0) {
                cl_out_error(S_VERB, "--hosts \"%s\": want NAME,NAME,..., "
                             "all or KEY=VALUE", optarg);
                return PW_EXIT_USAGE;
            }
            break;
        case S_OPT_TRIALS:
            if (s_count("--trials", optarg, PW_SELFTEST_TRIALS_MAX, trials))
                return PW_EXIT_USAGE;
            break;
        case S_OPT_LOOPS:
            if (s_count("--loops", optarg, PW_SELFTEST_LOOPS_MAX, loops))
                return PW_EXIT_USAGE;
            break;
        case S_OPT_WAIT: *wait = true; break;
        case S_OPT_JSON: *as_json = true; break;
        default:
            cl_out_option_error(S_VERB, c, argv);
            return PW_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        cl_out_error(S_VERB, "unexpected argument \"%s\" (parity selftest "
                     "--help)", argv[optind]);
        return PW_EXIT_USAGE;
    }
    return PW_EXIT_OK;
}

int
cl_selftest_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    char err[2048], num[24];
    long trials = PW_SELFTEST_TRIALS_DEFAULT, loops = 0;
    bool wait = false, as_json = false;
    if (cl_out_wants_help(argc, argv))
        return cl_out_help(S_VERB, s_usage);
    if (cl_conn_verb_args(S_VERB, &argc, argv, &co) != 0)
        return PW_EXIT_USAGE;
    json_t *hosts = json_array(), *vars = json_object(), *reply = NULL;
    json_t *job = NULL;
    cl_conn_t *c = NULL;
    int rc = hosts && vars ? s_parse(argc, argv, hosts, &trials, &loops,
                                     &wait, &as_json) : PW_EXIT_SYSTEM;
    if (rc != PW_EXIT_OK)
        goto done;
    snprintf(num, sizeof num, "%ld", trials);
    json_object_set_new(vars, "trials", json_string(num));
    if (loops > 0) {
        snprintf(num, sizeof num, "%ld", loops);
        json_object_set_new(vars, "loops", json_string(num));
    }
    json_t *args = json_pack("{s:s,s:O,s:O}", "suite", PW_SELFTEST_SUITE,
                             "hosts", hosts, "vars", vars);
    int code;
    if (!(c = cl_conn_open(&co, &code, err, sizeof err))) {
        cl_out_error(S_VERB, "%s", err);
        rc = cl_conn_exit_code(code);
        json_decref(args);
        goto done;
    }
    code = cl_conn_request(c, "run", args, &reply, NULL, err, sizeof err);
    json_decref(args);
    if (code != CL_CONN_OK) {
        cl_out_error(S_VERB, "%s", err);
        rc = cl_conn_exit_code(code);
        goto done;
    }
    const char *id = pw_out_str(reply, "job", "?");
    if (as_json && !wait) {
        rc = pw_out_json(stdout, reply) == 0 ? PW_EXIT_OK : PW_EXIT_SYSTEM;
        goto done;
    }
    FILE *info = wait ? stderr : stdout;
    size_t i, n = json_array_size(json_object_get(reply, "hosts"));
    json_t *h;
    fprintf(info, "job %s: A/A self-test, %ld trial%s on %zu host%s\n", id,
            trials, trials == 1 ? "" : "s", n, n == 1 ? "" : "s");
    json_array_foreach(json_object_get(reply, "skipped"), i, h)
        fprintf(info, "  skipped %s: %s\n", pw_out_str(h, "host", "?"),
                pw_out_str(h, "reason", ""));
    if (!wait) {
        fprintf(info, "each host's result: parity hosts (after it ends)\n");
        goto done;
    }
    fflush(info);
    rc = s_follow(c, id, trials, &job);
    if (rc == PW_EXIT_OK)
        rc = s_results(c, id, job, as_json);
done:
    cl_conn_destroy(&c);
    json_decref(job);
    json_decref(reply);
    json_decref(hosts);
    json_decref(vars);
    return rc;
}
