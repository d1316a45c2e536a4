/* cl_run.c -- `parity run SUITE ...`: ask the collector for a job across
 * the fleet and, with --wait, follow it and print the verdicts
 * (docs/commands/run.md). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cl_conn.h"
#include "cl_gate.h"
#include "cl_out.h"
#include "pw_out.h"
#include "cl_verbs.h"
#include "cl_verdicts.h"
#include "pw_limits.h"

/* Poll interval of --wait, and how long polls may go unanswered (a
 * collector restart) before it gives up: in time, not polls, since a
 * collector that is down answers a poll in 1 s ("cannot connect") and
 * one that hangs only at the timeout. */
#define S_POLL_MS 400
#define S_RIDE_OUT_S 60.0
/* Most --hosts and --only items (the collector refuses more). */
#define S_MAX_ITEMS 4096
/* Most hosts whose progress is followed. */
#define S_MAX_HOSTS 4096
/* Longest --expire: 30 days. */
#define S_EXPIRE_MAX_S (30.0 * 86400)

static void
s_usage(FILE *f)
{
    fprintf(f,
"usage: parity run SUITE [--hosts NAME,...|all|KEY=VALUE] [--tag KEY=VALUE]...\n"
"                  [--var NAME=VALUE]... [--against NAME=VALUE]...\n"
"                  [--runs N|auto] [--only BENCH]...\n"
"                  [--label TEXT] [--expire DURATION] [--wait] [--json]\n"
"                  [--baseline KEY=VALUE]... [--fail-on loss|any|undecided]\n"
"                  [--summary-markdown FILE] [--junit FILE]\n"
"                  [connection options]\n\n"
"Ask every matching host that has SUITE (it said so in its Hello) to run it.\n"
"An agent runs one job at a time; an offline agent gets the job when it\n"
"comes back, unless it expired first.\n\n"
"  --hosts LIST    host names, `all` (the default), or KEY=VALUE to pick\n"
"                  hosts by tag (e.g. arch=x86_64); comma-separated, may repeat\n"
"  --tag K=V       a tag kept with every run of the job (commit=abc123)\n"
"  --var N=V       a suite variable\n"
"  --against N=V   also run each benchmark's subject at this value of the\n"
"                  suite's revision variable, interleaved in the same\n"
"                  rounds, and judge the subject against it (may repeat;\n"
"                  docs/suites.md \"Against\"); with --wait the gate reads\n"
"                  those verdicts\n"
"  --runs N        runs per arm, %d..%d (default: the suite's); auto: each\n"
"                  host adds rounds until the verdict is decisive, at most\n"
"                  the suite's max_runs (100)\n"
"  --only BENCH    run only these benchmarks (comma-separated, may repeat)\n"
"  --label TEXT    a label kept with every run\n"
"  --expire D      hosts that have not started it within D (30s, 10m, 2h,\n"
"                  1d; at most 30d) never will; without it the job waits\n"
"                  for offline hosts until they come back\n"
"  --wait          follow progress (host, benchmark, round n/N) and print\n"
"                  the verdict table at the end\n"
"  --json          print the collector's answer as JSON\n"
"With --wait, a gate (docs/ci.md):\n"
"  --baseline K=V  judge each benchmark's subject arm on each host against\n"
"                  the host's newest complete run of it in an ended job\n"
"                  tagged K=V (may repeat: every tag); without it the gate\n"
"                  reads the job's own verdicts (with --against, the\n"
"                  subject's against each --against value)\n"
"  --fail-on WHAT  exit 1 on a loss (loss), on a win or a loss (any), on\n"
"                  no verdict or a parity too near the edge (undecided);\n"
"                  comma-separated, may repeat\n"
"  --summary-markdown FILE  the result as Markdown ($GITHUB_STEP_SUMMARY)\n"
"  --junit FILE    the result as JUnit XML, a testcase per benchmark and\n"
"                  host\n"
"Connection options as in `parity hosts --help`.\n\n"
"exit status: 0 job created (with --wait: every host done), 1 the collector\n"
"refused it, a host did not finish or the gate failed, 2 usage, 3 no answer\n"
"or --wait interrupted (the job goes on).\n", PW_RUNS_MIN, PW_RUNS_MAX);
}


/* A --var's NAME=VALUE, checked as the agents will check it, so that a
 * job no agent can run is never made; 0, or -1 (said). */
static int
s_check_var(const char *s)
{
    const char *eq = strchr(s, '=');
    char name[PW_VAR_NAME_MAX + 2];
    if (!eq)
        return 0;   /* cl_out_key_value says what is wrong */
    snprintf(name, sizeof name, "%.*s", (int)(eq - s), s);
    if ((size_t)(eq - s) > PW_VAR_NAME_MAX || !pw_var_name_ok(name)) {
        cl_out_error("run", "--var \"%.60s\": \"%.60s\" is not a variable "
                     "name (letters, digits and _, not starting with a "
                     "digit, at most %d bytes)", s, name, PW_VAR_NAME_MAX);
        return -1;
    }
    return 0;
}


static volatile sig_atomic_t s_interrupted;

static void
s_on_int(int sig)
{
    (void)sig;
    s_interrupted = 1;
}

/* A line for every run of the job that ended since the last poll
 * (seen holds the run ids already told). A benchmark that starts and
 * ends between two polls (startup: /bin/true 6 times, ~50 ms) is never
 * the current one a poll sees, so the per-host line alone missed it;
 * run_list has every run. */
static void
s_runs_ended(const json_t *job, json_t *seen)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(job, "run_list"), i, r) {
        const char *id = pw_out_str(r, "run_id", "");
        const char *st = pw_out_str(r, "status", "running");
        if (!*id || strcmp(st, "running") == 0 ||
            json_object_get(seen, id) ||
            json_object_size(seen) >= S_MAX_HOSTS * 64)
            continue;
        json_object_set_new(seen, id, json_true());
        fprintf(stderr, "  %-12s %s: %s\n", pw_out_str(r, "host", "?"),
                pw_out_str(r, "benchmark", "?"), st);
    }
}

/* One progress line per change; rounds only on a terminal. */
static void
s_progress(const json_t *job, char (*last)[512], size_t max, bool tty)
{
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(job, "hosts"), i, h) {
        if (i >= max)
            break;
        const char *state = pw_out_str(h, "state", "?");
        const json_t *pg = json_object_get(h, "progress");
        const char *bench = pw_out_str(h, "benchmark",
                                       pw_out_str(pg, "benchmark", ""));
        json_int_t round = json_integer_value(json_object_get(h, "round"));
        json_int_t rounds = json_integer_value(json_object_get(h, "rounds"));
        if (rounds == 0) {
            round = json_integer_value(json_object_get(pg, "round"));
            rounds = json_integer_value(json_object_get(pg, "rounds"));
        }
        if (round > rounds)
            round = rounds;
        json_int_t nb = json_integer_value(json_object_get(h, "benchmarks"));
        json_int_t ended = json_integer_value(json_object_get(h,
                                                              "runs_ended"));
        char line[512];
        if (strcmp(state, "running") == 0 && *bench) {
            json_int_t at = ended + 1 > nb && nb > 0 ? nb : ended + 1;
            if (tty)
                snprintf(line, sizeof line, "%-12s running  %s "
                         "(benchmark %lld/%lld)  round %lld/%lld",
                         pw_out_str(h, "host", "?"), bench, (long long)at,
                         (long long)nb, (long long)round, (long long)rounds);
            else
                snprintf(line, sizeof line, "%-12s running  %s "
                         "(benchmark %lld/%lld)", pw_out_str(h, "host", "?"),
                         bench, (long long)at, (long long)nb);
        } else if (strcmp(state, "queued") == 0 &&
                   json_is_false(json_object_get(h, "online"))) {
            snprintf(line, sizeof line, "%-12s queued: offline, gets the job "
                     "when it comes back", pw_out_str(h, "host", "?"));
        } else {
            const char *why = pw_out_str(h, "reason", "");
            snprintf(line, sizeof line, "%-12s %s%s%s",
                     pw_out_str(h, "host", "?"),
                     state, *why ? ": " : "", why);
        }
        if (strcmp(line, last[i]) != 0) {
            fprintf(stderr, "  %s\n", line);
            snprintf(last[i], sizeof last[i], "%s", line);
        }
    }
    fflush(stderr);
}

/* Once: which hosts the job waits for because they are offline, and
 * until when. True when it said so. */
static bool
s_tell_offline(const json_t *job, const char *job_id)
{
    char names[1024] = "";
    size_t n = 0, i;
    json_t *h;
    json_array_foreach(json_object_get(job, "hosts"), i, h) {
        if (strcmp(pw_out_str(h, "state", ""), "queued") != 0 ||
            !json_is_false(json_object_get(h, "online")))
            continue;
        size_t used = strlen(names);
        if (used < sizeof names - 64)
            snprintf(names + used, sizeof names - used, "%s%s",
                     n ? ", " : "", pw_out_str(h, "host", "?"));
        n++;
    }
    if (n == 0)
        return false;
    json_int_t exp = json_integer_value(json_object_get(job,
                                                        "expires_at_us"));
    char until[128];
    if (exp > 0) {
        time_t t = (time_t)(exp / 1000000);
        struct tm tm;
        if (!gmtime_r(&t, &tm) ||
            strftime(until, sizeof until, "until %Y-%m-%d %H:%M:%SZ (--expire)",
                     &tm) == 0)
            snprintf(until, sizeof until, "until it expires");
    } else {
        snprintf(until, sizeof until, "until they come back (no --expire)");
    }
    fprintf(stderr, "  waiting for %zu offline host%s: %s; the job waits "
            "%s; Ctrl-C stops waiting, parity cancel %s stops the job\n", n,
            n == 1 ? "" : "s", names, until, job_id);
    return true;
}

/* Follow job_id until it is no longer active: 0 with *jobp its last
 * poll (caller owns), else the exit status (said). */
static int
s_wait(cl_conn_t *c, const char *job_id, json_t **jobp)
{
    char err[2048];
    json_t *args = json_pack("{s:s}", "job", job_id);
    json_t *job = NULL;
    int rc;
    struct timespec miss_ts = { 0, 0 };   /* first unanswered poll */
    bool tty = isatty(STDERR_FILENO), told_offline = false;
    char (*last)[512] = calloc(S_MAX_HOSTS, sizeof *last);
    json_t *seen = json_object();   /* run ids whose end was told */
    if (!args || !last || !seen) {
        json_decref(args);
        json_decref(seen);
        free(last);
        return PW_EXIT_SYSTEM;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_int;
    sigaction(SIGINT, &sa, NULL);
    for (;;) {
        json_decref(job);
        job = NULL;
        int status = 0;
        rc = cl_conn_request(c, "job", args, &job, &status, err, sizeof err);
        /* A collector restarting, or its database briefly away (status
         * 5), is waited out for a few polls. */
        bool missed = rc == CL_CONN_NOANSWER ||
                      (rc == CL_CONN_REPLY && status == 5);
        if (missed && !s_interrupted) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (miss_ts.tv_sec == 0 && miss_ts.tv_nsec == 0)
                miss_ts = now;
            if ((double)(now.tv_sec - miss_ts.tv_sec) +
                (double)(now.tv_nsec - miss_ts.tv_nsec) / 1e9 <
                S_RIDE_OUT_S) {
                struct timespec pause = { 1, 0 };
                nanosleep(&pause, NULL);
                continue;
            }
        }
        if (rc != CL_CONN_OK && s_interrupted)
            goto stopped;
        if (rc != CL_CONN_OK) {
            cl_out_error("run", "%s", err);
            rc = cl_conn_exit_code(rc);
            goto done;
        }
        miss_ts = (struct timespec){ 0, 0 };
        s_runs_ended(job, seen);
        s_progress(job, last, S_MAX_HOSTS, tty);
        if (!told_offline)
            told_offline = s_tell_offline(job, job_id);
        if (strcmp(pw_out_str(job, "state", "active"), "active") != 0)
            break;
        if (s_interrupted) {
stopped:
            cl_out_error("run", "stopped waiting; job %s goes on (parity "
                         "cancel %s stops it)", job_id, job_id);
            rc = PW_EXIT_SYSTEM;
            goto done;
        }
        struct timespec ts = { 0, S_POLL_MS * 1000000L };
        nanosleep(&ts, NULL);
    }
    *jobp = job;
    job = NULL;
    rc = PW_EXIT_OK;
done:
    json_decref(job);
    json_decref(args);
    json_decref(seen);
    free(last);
    return rc;
}

/* What `parity run` was asked: the request's args (suite, hosts, tags,
 * vars, only, runs, label, expire_us) and the verb's own flags. */
typedef struct {
    json_t *args, *hosts, *tags, *vars, *only;
    json_t *against;   /* [{"name", "value"}] of --against */
    const char *suite;
    bool wait, as_json;
    /* The gate (docs/ci.md): --baseline's tags ({}: the job's own
     * verdicts), --fail-on's CL_GATE_* bits, and the files asked for,
     * opened before the job is made. */
    json_t *baseline;
    unsigned fail_on;
    const char *md_path, *junit_path;
    FILE *md, *junit;
} s_req_t;

/* run's options, as getopt_long returns them. */
enum { O_WAIT = 256, O_JSON, O_HOSTS, O_ONLY, O_TAG, O_VAR, O_RUNS, O_LABEL,
       O_EXPIRE, O_BASELINE, O_FAIL_ON, O_SUMMARY_MD, O_JUNIT, O_AGAINST };

/* One option of run into r; 0, or -1 (said). */
static int
s_option(s_req_t *r, int o, const char *v)
{
    char *end;
    long n;
    double sec;
    switch (o) {
    case O_WAIT:
        r->wait = true;
        return 0;
    case O_JSON:
        r->as_json = true;
        return 0;
    case O_HOSTS:
        if (cl_out_add_list(r->hosts, v, S_MAX_ITEMS) == 0)
            return 0;
        cl_out_error("run", "--hosts \"%s\": want NAME,NAME,..., all or "
                     "KEY=VALUE", v);
        return -1;
    case O_ONLY:
        if (cl_out_add_list(r->only, v, S_MAX_ITEMS) == 0)
            return 0;
        cl_out_error("run", "--only \"%s\": want BENCH,BENCH,...", v);
        return -1;
    case O_TAG:
    case O_VAR:
    case O_BASELINE:
        if (o == O_VAR && s_check_var(v) != 0)
            return -1;
        if (cl_out_key_value(o == O_TAG ? r->tags : o == O_VAR ? r->vars :
                             r->baseline, v) == 0)
            return 0;
        cl_out_error("run", "%s \"%.60s\": want KEY=VALUE (a non-empty "
                     "KEY of at most 1024 bytes)", o == O_TAG ? "--tag" :
                     o == O_VAR ? "--var" : "--baseline", v);
        return -1;
    case O_AGAINST: {
        const char *eq = strchr(v, '=');
        char name[PW_VAR_NAME_MAX + 2];
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - v) : 0, v);
        if (!eq || (size_t)(eq - v) > PW_VAR_NAME_MAX ||
            !pw_var_name_ok(name)) {
            cl_out_error("run", "--against \"%.60s\": want NAME=VALUE, NAME "
                         "a variable name (the suite's revision variable)",
                         v);
            return -1;
        }
        if (json_array_size(r->against) >= PW_AGAINST_MAX) {
            cl_out_error("run", "more than %d --against", PW_AGAINST_MAX);
            return -1;
        }
        return json_array_append_new(r->against, json_pack(
            "{s:s,s:s}", "name", name, "value", eq + 1)) == 0 ? 0 : -1;
    }
    case O_FAIL_ON: {
        char e[160];
        if (cl_gate_fail_on(v, &r->fail_on, e, sizeof e) == 0)
            return 0;
        cl_out_error("run", "%s", e);
        return -1;
    }
    case O_SUMMARY_MD:
        r->md_path = v;
        return 0;
    case O_JUNIT:
        r->junit_path = v;
        return 0;
    case O_RUNS:
        if (strcmp(v, "auto") == 0) {
            json_object_set_new(r->args, "runs", json_string("auto"));
            return 0;
        }
        n = strtol(v, &end, 10);
        if (*end || end == v || n < PW_RUNS_MIN || n > PW_RUNS_MAX) {
            cl_out_error("run", "--runs \"%s\": want auto or a whole number "
                         "from %d to %d", v, PW_RUNS_MIN, PW_RUNS_MAX);
            return -1;
        }
        json_object_set_new(r->args, "runs", json_integer(n));
        return 0;
    case O_LABEL:
        json_object_set_new(r->args, "label", json_string(v));
        return 0;
    case O_EXPIRE:
        if (cl_out_duration(v, S_EXPIRE_MAX_S, &sec) != 0) {
            cl_out_error("run", "--expire \"%s\": want a duration such as "
                         "90s, 10m, 2h, 1d (at most 30d)", v);
            return -1;
        }
        /* At least 1 us: 0 would mean never. */
        json_object_set_new(r->args, "expire_us", json_integer(
            sec * 1e6 >= 1 ? (json_int_t)(sec * 1e6) : 1));
        return 0;
    }
    return -1;
}

/* Open path for writing now, so that a file the gate cannot write is
 * said before the fleet spends time on the job; 0, or -1 (said). */
static int
s_open(const char *path, const char *opt, FILE **f)
{
    if (!path)
        return 0;
    if (!(*f = fopen(path, "w"))) {
        cl_out_error("run", "%s %s: %s", opt, path, strerror(errno));
        return -1;
    }
    return 0;
}

/* The command line into r (its JSON parts already made); 0, or -1
 * (said). */
static int
s_parse(int argc, char **argv, s_req_t *r)
{
    static const struct option opts[] = {
        { "wait", no_argument, NULL, O_WAIT },
        { "json", no_argument, NULL, O_JSON },
        { "hosts", required_argument, NULL, O_HOSTS },
        { "only", required_argument, NULL, O_ONLY },
        { "tag", required_argument, NULL, O_TAG },
        { "var", required_argument, NULL, O_VAR },
        { "against", required_argument, NULL, O_AGAINST },
        { "runs", required_argument, NULL, O_RUNS },
        { "label", required_argument, NULL, O_LABEL },
        { "expire", required_argument, NULL, O_EXPIRE },
        { "baseline", required_argument, NULL, O_BASELINE },
        { "fail-on", required_argument, NULL, O_FAIL_ON },
        { "summary-markdown", required_argument, NULL, O_SUMMARY_MD },
        { "junit", required_argument, NULL, O_JUNIT },
        { NULL, 0, NULL, 0 } };
    int o;
    CL_CONN_EACH_OPTION(o, argc, argv, opts) {
        if (o == ':' || o == '?') {
            cl_out_getopt_error("run", o, argv);
            return -1;
        }
        if (s_option(r, o, optarg) != 0)
            return -1;
    }
    if (cl_out_one_operand("run", argc, argv, &r->suite) != 0)
        return -1;
    if (!r->suite) {
        cl_out_error("run", "which suite? (parity run SUITE; parity hosts "
                     "lists each host's suites)");
        return -1;
    }
    if (json_object_size(r->vars) > PW_VARS_MAX) {
        cl_out_error("run", "more than %d --var", PW_VARS_MAX);
        return -1;
    }
    if (!r->wait && (json_object_size(r->baseline) || r->fail_on ||
                     r->md_path || r->junit_path)) {
        cl_out_error("run", "--baseline, --fail-on, --summary-markdown and "
                     "--junit need --wait (they judge the job once it has "
                     "ended)");
        return -1;
    }
    if (json_array_size(r->against) && json_object_size(r->baseline)) {
        cl_out_error("run", "--against and --baseline are two ways to judge "
                     "the job's subject: give one (docs/ci.md \"Which "
                     "mode\")");
        return -1;
    }
    if (s_open(r->md_path, "--summary-markdown", &r->md) != 0 ||
        s_open(r->junit_path, "--junit", &r->junit) != 0)
        return -1;
    json_object_set_new(r->args, "suite", json_string(r->suite));
    json_object_set(r->args, "hosts", r->hosts);
    json_object_set(r->args, "tags", r->tags);
    json_object_set(r->args, "vars", r->vars);
    json_object_set(r->args, "only", r->only);
    if (json_array_size(r->against))
        json_object_set(r->args, "against", r->against);
    return 0;
}

/* The gate's body for --against: the job's verdicts of each subject
 * against its --against instances alone, labelled "commit=c00" (the
 * gate's "against ..."). A new reference, or NULL when out of memory. */
static json_t *
s_against_body(const json_t *verdicts, const json_t *against)
{
    json_t *body = json_deep_copy(verdicts), *keep = json_array();
    char label[512] = "";
    size_t i;
    json_t *x;
    if (!body || !keep) {
        json_decref(body);
        json_decref(keep);
        return NULL;
    }
    json_array_foreach(json_object_get(body, "comparisons"), i, x)
        if (json_is_object(json_object_get(x, "against")))
            json_array_append(keep, x);
    json_object_set_new(body, "comparisons", keep);
    json_array_foreach(against, i, x) {
        size_t n = strlen(label);
        snprintf(label + n, sizeof label - n, "%s%s=%s", n ? ", " : "",
                 pw_out_str(x, "name", "?"), pw_out_str(x, "value", ""));
    }
    json_object_set_new(body, "against", json_string(label));
    return body;
}

/* What the collector said of a new job: its hosts and the ones skipped,
 * on info (stderr under --wait, which prints the verdicts on stdout). */
static void
s_created(FILE *info, const json_t *reply, const char *suite, bool wait)
{
    const char *job = pw_out_str(reply, "job", "?");
    size_t i, n = json_array_size(json_object_get(reply, "hosts"));
    json_t *h;
    fprintf(info, "job %s: suite %s on %zu host%s\n", job, suite, n,
            n == 1 ? "" : "s");
    json_array_foreach(json_object_get(reply, "skipped"), i, h)
        fprintf(info, "  skipped %s: %s\n", pw_out_str(h, "host", "?"),
                pw_out_str(h, "reason", ""));
    json_array_foreach(json_object_get(reply, "warnings"), i, h)
        if (json_is_string(h))
            fprintf(stderr, "parity run: warning: %s\n",
                    json_string_value(h));
    if (wait)
        return;
    json_array_foreach(json_object_get(reply, "hosts"), i, h)
        fprintf(info, "  %-12s %s\n", pw_out_str(h, "host", "?"),
                pw_out_str(h, "state", "?"));
    fprintf(info, "follow it: parity verdicts %s (after it ends), "
            "parity jobs --active\n", job);
}

/* The gate's files, once the job has ended: 0, or -1 (said). */
static int
s_write_files(const s_req_t *r, const json_t *judged)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (r->md && (cl_gate_markdown(r->md, judged, r->fail_on) != 0 ||
                  fflush(r->md) != 0)) {
        cl_out_error("run", "--summary-markdown %s: %s", r->md_path,
                     strerror(errno));
        return -1;
    }
    if (r->junit && (cl_gate_junit(r->junit, judged, r->fail_on,
                                   (int64_t)now.tv_sec * 1000000 +
                                   now.tv_nsec / 1000) != 0 ||
                     fflush(r->junit) != 0)) {
        cl_out_error("run", "--junit %s: %s", r->junit_path,
                     strerror(errno));
        return -1;
    }
    return 0;
}

/* The JSON of --wait --json: the job, its verdicts and, when asked, the
 * baseline answer and the gate's counts. */
static int
s_print_json(const s_req_t *r, json_t *job, json_t *verdicts, json_t *base,
             const cl_gate_counts_t *n)
{
    json_t *out = json_pack("{s:O,s:O}", "job", job, "verdicts", verdicts);
    if (out && base)
        json_object_set(out, "baseline", base);
    if (out && (r->fail_on || r->md || r->junit || base))
        json_object_set_new(out, "gate", json_pack(
            "{s:b,s:I,s:I,s:I,s:I,s:I,s:I}", "passed", n->failed == 0,
            "cases", (json_int_t)n->cases, "failed", (json_int_t)n->failed,
            "win", (json_int_t)n->win, "parity", (json_int_t)n->parity,
            "loss", (json_int_t)n->loss, "undecided",
            (json_int_t)n->undecided));
    return cl_out_json_exit(out);
}

/* The ended job's verdicts and, when asked, its gate: printed, the files
 * written; the exit status. */
static int
s_finish(cl_conn_t *c, const s_req_t *r, const char *job_id, json_t *job)
{
    char err[2048] = "out of memory";
    json_t *verdicts = NULL, *base = NULL, *own = NULL;
    /* Every metric's verdicts: the gate fails on a loss in any metric the
     * suite tracks (docs/suites.md "Metrics"). */
    json_t *args = json_pack("{s:s,s:s}", "job", job_id, "metric", "all");
    int rc = args ? cl_conn_request(c, "verdicts", args, &verdicts, NULL,
                                    err, sizeof err) : CL_CONN_SYSTEM;
    json_object_del(args, "metric");
    if (rc == CL_CONN_OK && json_object_size(r->baseline)) {
        json_object_set(args, "tags", r->baseline);
        rc = cl_conn_request(c, "baseline", args, &base, NULL, err,
                             sizeof err);
    }
    json_decref(args);
    if (rc != CL_CONN_OK) {
        cl_out_error("run", "%s", err);
        rc = cl_conn_exit_code(rc);
        goto done;
    }
    if (json_array_size(r->against) &&
        !(own = s_against_body(verdicts, r->against))) {
        cl_out_error("run", "out of memory");
        rc = PW_EXIT_SYSTEM;
        goto done;
    }
    const json_t *judged = base ? base : own ? own : verdicts;
    bool gate = r->fail_on || r->md || r->junit || base;
    cl_gate_counts_t n;
    cl_gate_count(judged, r->fail_on, &n);
    if (r->as_json) {
        rc = s_print_json(r, job, verdicts, base, &n);
    } else {
        printf("\n");
        rc = cl_verdicts_print(stdout, verdicts, CL_VERDICTS_TABLE) == 0 &&
             (!gate || cl_gate_print(stdout, judged, r->fail_on) == 0) ?
             PW_EXIT_OK : PW_EXIT_SYSTEM;
    }
    if (rc == PW_EXIT_OK && s_write_files(r, judged) != 0)
        rc = PW_EXIT_SYSTEM;
    if (rc == PW_EXIT_OK) {
        size_t i, bad = 0, nh = json_array_size(json_object_get(job,
                                                                "hosts"));
        json_t *h;
        json_array_foreach(json_object_get(job, "hosts"), i, h)
            if (strcmp(pw_out_str(h, "state", ""), "done") != 0)
                bad++;
        if (bad) {
            cl_out_error("run", "%zu of %zu hosts did not finish job %s",
                         bad, nh, job_id);
            rc = PW_EXIT_DATA;
        }
    }
    if (rc == PW_EXIT_OK && n.failed) {
        cl_out_error("run", "the gate failed: %zu of %zu case%s (parity "
                     "verdicts %s)", n.failed, n.cases, n.cases == 1 ? "" :
                     "s", job_id);
        rc = PW_EXIT_DATA;
    }
done:
    json_decref(verdicts);
    json_decref(base);
    json_decref(own);
    return rc;
}

int
cl_run_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    char err[2048];
    if (cl_out_wants_help(argc, argv)) {
        s_usage(stdout);
        return PW_EXIT_OK;
    }
    if (cl_conn_verb_args("run", &argc, argv, &co) != 0)
        return PW_EXIT_USAGE;
    s_req_t r = { json_object(), json_array(), json_object(), json_object(),
                  json_array(), json_array(), NULL, false, false,
                  json_object(), 0, NULL, NULL, NULL, NULL };
    int rc = PW_EXIT_USAGE, code;
    cl_conn_t *c = NULL;
    json_t *reply = NULL;
    if (!r.args || !r.hosts || !r.tags || !r.vars || !r.only || !r.baseline
        || !r.against) {
        rc = PW_EXIT_SYSTEM;
        goto done;
    }
    if (s_parse(argc, argv, &r) != 0)
        goto done;
    if (!(c = cl_conn_open(&co, &code, err, sizeof err))) {
        cl_out_error("run", "%s", err);
        rc = cl_conn_exit_code(code);
        goto done;
    }
    code = cl_conn_request(c, "run", r.args, &reply, NULL, err, sizeof err);
    if (code != CL_CONN_OK) {
        cl_out_error("run", "%s", err);
        rc = cl_conn_exit_code(code);
        goto done;
    }
    if (r.as_json && !r.wait) {
        rc = pw_out_json(stdout, reply) == 0 ? PW_EXIT_OK : PW_EXIT_SYSTEM;
        goto done;
    }
    s_created(r.wait ? stderr : stdout, reply, r.suite, r.wait);
    rc = PW_EXIT_OK;
    if (r.wait) {
        json_t *job = NULL;
        fflush(stderr);
        rc = s_wait(c, pw_out_str(reply, "job", "?"), &job);
        if (rc == PW_EXIT_OK)
            rc = s_finish(c, &r, pw_out_str(reply, "job", "?"), job);
        json_decref(job);
    }
done:
    if (r.md && fclose(r.md) != 0 && rc == PW_EXIT_OK) {
        cl_out_error("run", "--summary-markdown %s: %s", r.md_path,
                     strerror(errno));
        rc = PW_EXIT_SYSTEM;
    }
    if (r.junit && fclose(r.junit) != 0 && rc == PW_EXIT_OK) {
        cl_out_error("run", "--junit %s: %s", r.junit_path, strerror(errno));
        rc = PW_EXIT_SYSTEM;
    }
    cl_conn_destroy(&c);
    json_decref(reply);
    json_decref(r.args);
    json_decref(r.hosts);
    json_decref(r.tags);
    json_decref(r.vars);
    json_decref(r.only);
    json_decref(r.against);
    json_decref(r.baseline);
    return rc;
}
