/* cl_bisect.c -- `parity bisect start|status|cancel`
 * (docs/commands/bisect.md, docs/bisect.md). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cl_conn.h"
#include "cl_verbs.h"
#include "pw_buf.h"
#include "pw_limits.h"
#include "cl_out.h"
#include "pw_out.h"

extern char **environ;

/* Most commits a range may hold, and the biggest --commits file or git
 * output read (100,000 ids of 64 hex digits and their newlines). */
#define S_COMMITS_MAX 100000
#define S_LIST_BYTES (8u * 1024 * 1024)
/* Longest commit id (co_bisect.h's CO_BISECT_COMMIT_MAX). */
#define S_COMMIT_MAX 128
/* The commit list's share of one request's 64 KiB of arguments. */
#define S_ARGS_COMMITS_MAX 63000u
/* How often --wait asks, and how long it rides out a collector away. */
#define S_POLL_MS 1000
#define S_RIDE_OUT_S 60.0

static volatile sig_atomic_t s_interrupted;

static void
s_on_int(int sig)
{
    (void)sig;
    s_interrupted = 1;
}

static const char S_USAGE[] =
"usage: parity bisect start --suite S --bench B --good REV --bad REV\n"
"                           (--commits FILE | --git DIR) [--hosts H,...]\n"
"                           [--var K=V]... [--runs N] [--wait] [--json]\n"
"       parity bisect status [ID] [--json]\n"
"       parity bisect cancel ID\n"
"\n"
"Find the commit that changed a benchmark, on the fleet: each commit\n"
"measured is a job with --var commit=SHA and the tags commit=SHA and\n"
"bisect=ID; the suite's command picks its build with ${commit}. Each\n"
"midpoint is judged on each host by the verdict rule against the good\n"
"and the bad end; an undecided one is measured again with more runs,\n"
"beside the two ends it is judged against.\n"
"\n"
"  --suite S       the suite (as the agents list it)\n"
"  --bench B       the benchmark whose subject arm changed\n"
"  --good REV      the last commit at the old level\n"
"  --bad REV       the first commit seen at the new level\n"
"  --commits FILE  the commits, one a line, oldest first (git rev-list\n"
"                  --reverse GOOD..BAD prints them; GOOD may be left out)\n"
"  --git DIR       run git rev-list --reverse GOOD..BAD in DIR instead\n"
"  --hosts H,...   hosts by name (default: the hosts of the change-point\n"
"                  event that ends at BAD, else every host with the suite)\n"
"  --var K=V       a suite variable for every step (not commit)\n"
"  --runs N        runs per arm of a first look (default 10; a retry\n"
"                  doubles them)\n"
"  --wait          follow it to its end; exit 1 when it fails\n"
"  --json          the collector's answer as JSON\n"
"\n"
"Connection options as in `parity hosts --help`. Exit: 0 started (or\n"
"found, with --wait), 1 the collector refused it or it failed, 2 usage,\n"
"3 no answer or --wait interrupted (the bisect goes on).\n";

/* ---- the commit list ------------------------------------------------ */

/* Split text into its non-empty lines (trimmed, '#' comments skipped)
 * appended to list. 0, or -1 (said). */
static int
s_lines(char *text, json_t *list, const char *from)
{
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        while (*line == ' ' || *line == '\t' || *line == '\r')
            line++;
        size_t n = strlen(line);
        while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t' ||
                         line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0 || line[0] == '#')
            continue;
        if (n > S_COMMIT_MAX || strpbrk(line, " \t")) {
            cl_out_error("bisect", "%s: \"%.60s\" is not a commit id (one "
                         "id a line, at most %d bytes)", from, line,
                         S_COMMIT_MAX);
            return -1;
        }
        if (json_array_size(list) >= S_COMMITS_MAX) {
            cl_out_error("bisect", "%s: more than %d commits", from,
                         S_COMMITS_MAX);
            return -1;
        }
        json_array_append_new(list, json_string(line));
    }
    return 0;
}

static int
s_read_file(const char *path, json_t *list)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f) {
        cl_out_error("bisect", "--commits %s: %s", path, strerror(errno));
        return -1;
    }
    char *text = malloc(S_LIST_BYTES + 1);
    size_t n = text ? fread(text, 1, S_LIST_BYTES + 1, f) : 0;
    int rc = -1;
    if (!text)
        cl_out_error("bisect", "out of memory");
    else if (ferror(f))
        cl_out_error("bisect", "--commits %s: %s", path, strerror(errno));
    else if (n > S_LIST_BYTES)
        cl_out_error("bisect", "--commits %s: larger than %u bytes", path,
                     S_LIST_BYTES);
    else if (memchr(text, '\0', n))
        cl_out_error("bisect", "--commits %s: not a text file (a NUL byte)",
                     path);
    else {
        text[n] = '\0';
        rc = s_lines(text, list, path);
    }
    free(text);
    if (f != stdin)
        fclose(f);
    return rc;
}

/* Run git -C dir args... and read its standard output (at most
 * S_LIST_BYTES) into a new string. NULL (said) when git fails. */
static char *
s_git(const char *dir, const char *const *args)
{
    const char *argv[12] = { "git", "-C", dir };
    size_t a = 3;
    for (; args[a - 3] && a < 11; a++)
        argv[a] = args[a - 3];
    argv[a] = NULL;
    int fd[2];
    pid_t pid;
    if (pipe(fd) != 0) {
        cl_out_error("bisect", "pipe: %s", strerror(errno));
        return NULL;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    int e = posix_spawnp(&pid, "git", &fa, NULL, (char *const *)argv,
                         environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (e != 0) {
        close(fd[0]);
        cl_out_error("bisect", "--git: cannot run git: %s (install git)",
                     strerror(e));
        return NULL;
    }
    char *out = malloc(S_LIST_BYTES + 1);
    size_t n = 0;
    ssize_t got = 1;
    while (out && got > 0 && n <= S_LIST_BYTES)
        if ((got = read(fd[0], out + n, S_LIST_BYTES + 1 - n)) > 0)
            n += (size_t)got;
        else if (got < 0 && errno == EINTR)
            got = 1;
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!out || n > S_LIST_BYTES || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0) {
        cl_out_error("bisect", "--git %s: git %s %s failed%s", dir, args[0],
                     args[1] ? args[1] : "", n > S_LIST_BYTES ?
                     ": its output is too large" : " (its message above)");
        free(out);
        return NULL;
    }
    out[n] = '\0';
    return out;
}

/* rev as a full commit id of the repository at dir, into out. */
static int
s_git_commit(const char *dir, const char *rev, char *out, size_t len)
{
    char spec[S_COMMIT_MAX * 2];
    snprintf(spec, sizeof spec, "%s^{commit}", rev);
    const char *args[] = { "rev-parse", "--verify", "--quiet", spec, NULL };
    char *t = s_git(dir, args);
    if (!t)
        return -1;
    t[strcspn(t, "\n")] = '\0';
    snprintf(out, len, "%s", t);
    free(t);
    return 0;
}

/* The commits from good to bad, both included, into list: from file, or
 * from git in dir. 0, or -1 (said). */
static int
s_commits(const char *file, const char *dir, const char *good,
          const char *bad, json_t *list)
{
    char g[S_COMMIT_MAX + 1], b[S_COMMIT_MAX + 1];
    json_t *all = json_array();
    const char *from = file ? file : dir;
    int rc = -1;
    snprintf(g, sizeof g, "%s", good);
    snprintf(b, sizeof b, "%s", bad);
    if (file && s_read_file(file, all) != 0)
        goto done;
    if (dir) {
        char range[2 * S_COMMIT_MAX + 4];
        if (s_git_commit(dir, good, g, sizeof g) != 0 ||
            s_git_commit(dir, bad, b, sizeof b) != 0)
            goto done;
        snprintf(range, sizeof range, "%s..%s", g, b);
        const char *args[] = { "rev-list", "--reverse", range, NULL };
        char *t = s_git(dir, args);
        if (!t || s_lines(t, all, dir) != 0) {
            free(t);
            goto done;
        }
        free(t);
    }
    long gi = -1, bi = -1;
    for (size_t i = 0; i < json_array_size(all); i++) {
        const char *c = json_string_value(json_array_get(all, i));
        if (strcmp(c, g) == 0 && gi < 0)
            gi = (long)i;
        if (strcmp(c, b) == 0 && bi < 0)
            bi = (long)i;
    }
    if (bi < 0)
        cl_out_error("bisect", "--bad %s is not in %s", b, from);
    else if (gi > bi)
        cl_out_error("bisect", "--good %s comes after --bad %s in %s (the "
                     "commits go oldest first, as git rev-list --reverse "
                     "prints them)", g, b, from);
    else if (gi == bi)
        cl_out_error("bisect", "--good and --bad are the same commit (%s)",
                     g);
    else {
        /* git rev-list GOOD..BAD leaves GOOD out: it goes first. */
        if (gi < 0)
            json_array_append_new(list, json_string(g));
        for (long i = gi < 0 ? 0 : gi; i <= bi; i++)
            json_array_append(list, json_array_get(all, (size_t)i));
        rc = 0;
    }
done:
    json_decref(all);
    return rc;
}

/* ---- printing ------------------------------------------------------- */

static void
s_hosts_text(char *buf, size_t len, const json_t *hosts)
{
    size_t i, at = 0;
    json_t *h;
    buf[0] = '\0';
    json_array_foreach(hosts, i, h)
        if (at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "",
                                   json_string_value(h));
}

/* A culprit's line and its hosts' verdicts. */
static int
s_print_culprit(const json_t *cu)
{
    const json_t *mag = json_object_get(cu, "magnitude");
    printf("  %s (after %s): ", pw_out_str(cu, "commit", "?"),
           pw_out_str(cu, "previous", "?"));
    if (json_is_number(mag))
        printf("x%.3f", json_number_value(mag));
    else
        printf("no host's verdict");
    printf(" on %lld of %zu hosts\n", (long long)json_integer_value(
           json_object_get(cu, "hosts_with_step")),
           json_array_size(json_object_get(cu, "hosts")));
    pw_out_table_t *t = pw_out_table_new(4);
    const char *head[] = { "    host", "verdict", "ratio", "tolerance" };
    pw_out_table_add(t, head);
    pw_out_table_left(t, 1);
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(cu, "hosts"), i, h) {
        char host[PW_OUT_CELL_MAX], ratio[32], tol[32];
        snprintf(host, sizeof host, "    %s", pw_out_str(h, "host", "?"));
        snprintf(ratio, sizeof ratio, "x%.3f", json_number_value(
                 json_object_get(h, "ratio")));
        snprintf(tol, sizeof tol, "%.1f %%", 100 * json_number_value(
                 json_object_get(h, "tolerance")));
        const char *row[] = { host, pw_out_str(h, "outcome", "?"), ratio,
                              tol };
        pw_out_table_add(t, row);
    }
    int rc = pw_out_table_print(t, stdout);
    pw_out_table_destroy(&t);
    return rc;
}

/* The steps: which commit, try, job and the fleet's call. */
static int
s_print_steps(const json_t *b)
{
    pw_out_table_t *t = pw_out_table_new(6);
    const char *head[] = { "step", "commit", "try", "runs", "job", "call" };
    pw_out_table_add(t, head);
    pw_out_table_left(t, 1);
    pw_out_table_left(t, 4);
    pw_out_table_left(t, 5);
    size_t i;
    json_t *st;
    json_array_foreach(json_object_get(b, "steps"), i, st) {
        char seq[24], try_no[40], runs[24], call[PW_OUT_CELL_MAX];
        snprintf(seq, sizeof seq, "%lld", (long long)json_integer_value(
                 json_object_get(st, "seq")));
        snprintf(try_no, sizeof try_no, "%lld%s",
                 (long long)json_integer_value(json_object_get(st, "try")) +
                 1, json_integer_value(json_object_get(st, "rerun")) ?
                 " rerun" : "");
        snprintf(runs, sizeof runs, "%lld", (long long)json_integer_value(
                 json_object_get(st, "runs")));
        const char *c = pw_out_str(st, "call", NULL);
        if (c)
            snprintf(call, sizeof call, "%s: %s", c,
                     pw_out_str(st, "reason", ""));
        else if (pw_out_str(st, "mid_commit", NULL) && strcmp(pw_out_str(
                     st, "mid_commit", ""), pw_out_str(st, "commit", "")))
            snprintf(call, sizeof call, "(an end, beside %s; job %s)",
                     pw_out_str(st, "mid_commit", "?"), pw_out_str(
                         st, "job_state", "?"));
        else
            snprintf(call, sizeof call, "(job %s)",
                     pw_out_str(st, "job_state", "?"));
        const char *row[] = { seq, pw_out_str(st, "commit", "?"), try_no,
                              runs, pw_out_str(st, "job", "?"), call };
        pw_out_table_add(t, row);
    }
    int rc = pw_out_table_print(t, stdout);
    pw_out_table_destroy(&t);
    return rc;
}

/* One bisect in full, as `status ID` and `start --wait` show it. */
static int
s_print_one(const json_t *b)
{
    char hosts[PW_OUT_CELL_MAX];
    s_hosts_text(hosts, sizeof hosts, json_object_get(b, "hosts"));
    printf("bisect %lld: %s/%s from %s to %s (%lld commits) on %s\n",
           (long long)json_integer_value(json_object_get(b, "id")),
           pw_out_str(b, "suite", "?"), pw_out_str(b, "benchmark", "?"),
           pw_out_str(b, "good", "?"), pw_out_str(b, "bad", "?"),
           (long long)json_integer_value(json_object_get(b, "commits")),
           hosts);
    const char *state = pw_out_str(b, "state", "?");
    const json_t *res = json_object_get(b, "result");
    const json_t *cs = json_object_get(res, "culprits");
    const json_t *sr = json_object_get(b, "searching");
    if (strcmp(state, "done") == 0 && json_array_size(cs) == 1)
        printf("done: the first bad commit is %s\n",
               pw_out_str(json_array_get(cs, 0), "commit", "?"));
    else if (strcmp(state, "done") == 0)
        printf("done: the step is spread over %zu commits\n",
               json_array_size(cs));
    else if (sr)
        printf("%s: measuring %s (try %lld) between %s and %s, %lld commits "
               "left\n", state, pw_out_str(sr, "commit", "?"),
               (long long)json_integer_value(json_object_get(sr, "try")) + 1,
               pw_out_str(sr, "good", "?"), pw_out_str(sr, "bad", "?"),
               (long long)json_integer_value(json_object_get(
                   sr, "commits_left")));
    else
        printf("%s%s%s\n", state, *pw_out_str(b, "reason", "") ? ": " : "",
               pw_out_str(b, "reason", ""));
    size_t i;
    json_t *cu;
    json_array_foreach(cs, i, cu)
        if (s_print_culprit(cu) != 0)
            return PW_EXIT_SYSTEM;
    if (res)
        printf("%lld jobs, %lld narrowing rounds (%lld retries), %.0f s\n",
               (long long)json_integer_value(json_object_get(res, "jobs")),
               (long long)json_integer_value(json_object_get(res, "rounds")),
               (long long)json_integer_value(json_object_get(res, "retries")),
               (double)json_integer_value(json_object_get(res, "wall_us")) /
               1e6);
    return s_print_steps(b) == 0 ? PW_EXIT_OK : PW_EXIT_SYSTEM;
}

/* The newest bisects, one a line. */
static int
s_print_list(const json_t *body)
{
    pw_out_table_t *t = pw_out_table_new(6);
    const char *head[] = { "bisect", "benchmark", "state", "range", "hosts",
                           "found" };
    pw_out_table_add(t, head);
    for (size_t c = 1; c < 6; c++)
        pw_out_table_left(t, c);
    size_t i, k;
    json_t *b, *cu;
    json_array_foreach(json_object_get(body, "bisects"), i, b) {
        char id[24], bench[PW_OUT_CELL_MAX], range[PW_OUT_CELL_MAX],
             hosts[PW_OUT_CELL_MAX], found[PW_OUT_CELL_MAX] = "";
        size_t at = 0;
        snprintf(id, sizeof id, "%lld", (long long)json_integer_value(
                 json_object_get(b, "id")));
        snprintf(bench, sizeof bench, "%s/%s", pw_out_str(b, "suite", "?"),
                 pw_out_str(b, "benchmark", "?"));
        snprintf(range, sizeof range, "%s..%s (%lld)", pw_out_str(b, "good",
                 "?"), pw_out_str(b, "bad", "?"), (long long)
                 json_integer_value(json_object_get(b, "commits")));
        s_hosts_text(hosts, sizeof hosts, json_object_get(b, "hosts"));
        json_array_foreach(json_object_get(json_object_get(b, "result"),
                                           "culprits"), k, cu)
            if (at < sizeof found)
                at += (size_t)snprintf(found + at, sizeof found - at, "%s%s",
                                       k ? ", " : "", pw_out_str(cu, "commit",
                                                                 "?"));
        const char *row[] = { id, bench, pw_out_str(b, "state", "?"), range,
                              hosts, *found ? found : pw_out_str(
                                  b, "reason", "-") };
        pw_out_table_add(t, row);
    }
    int rc = pw_out_table_print(t, stdout);
    if (json_array_size(json_object_get(body, "bisects")) == 0)
        printf("(no bisect yet)\n");
    pw_out_table_destroy(&t);
    return rc == 0 ? PW_EXIT_OK : PW_EXIT_SYSTEM;
}

/* ---- start --wait --------------------------------------------------- */

/* Tell the steps judged or started since the last poll (stderr). */
static void
s_progress(const json_t *b, size_t *told_steps, json_int_t *told_seq)
{
    size_t i;
    json_t *st;
    json_array_foreach(json_object_get(b, "steps"), i, st) {
        json_int_t seq = json_integer_value(json_object_get(st, "seq"));
        const char *call = pw_out_str(st, "call", NULL);
        if (i >= *told_steps)
            fprintf(stderr, "parity bisect: measuring %s (try %lld%s, %lld "
                    "runs): job %s\n", pw_out_str(st, "commit", "?"),
                    (long long)json_integer_value(json_object_get(st, "try"))
                    + 1, json_integer_value(json_object_get(st, "rerun")) ?
                    ", a rerun" : "", (long long)json_integer_value(
                        json_object_get(st, "runs")), pw_out_str(st, "job",
                                                                 "?"));
        if (call && seq > *told_seq) {
            fprintf(stderr, "parity bisect: %s %s: %s\n", pw_out_str(
                    st, "commit", "?"), call, pw_out_str(st, "reason", ""));
            *told_seq = seq;
        }
    }
    *told_steps = json_array_size(json_object_get(b, "steps"));
}

/* Follow bisect id to its end: the exit status (0 found, 1 failed or
 * cancelled), its last state printed (or as JSON). */
static int
s_wait(cl_conn_t *c, json_int_t id, bool as_json)
{
    char err[2048];
    json_t *args = json_pack("{s:I}", "bisect", id), *b = NULL;
    size_t told_steps = 0;
    json_int_t told_seq = -1;
    double missed_s = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_int;
    sigaction(SIGINT, &sa, NULL);
    int rc;
    for (;;) {
        json_decref(b);
        b = NULL;
        int status = 0;
        rc = cl_conn_request(c, "bisect_status", args, &b, &status, err,
                             sizeof err);
        /* A collector restarting, or its database away for a moment
         * (status 5), is waited out. */
        if ((rc == CL_CONN_NOANSWER || (rc == CL_CONN_REPLY &&
                                        status == 5)) && !s_interrupted &&
            missed_s < S_RIDE_OUT_S) {
            struct timespec pause = { 1, 0 };
            nanosleep(&pause, NULL);
            missed_s += 1;
            continue;
        }
        if (rc != CL_CONN_OK && !s_interrupted) {
            cl_out_error("bisect", "%s", err);
            rc = cl_conn_exit_code(rc);
            goto done;
        }
        missed_s = 0;
        if (rc == CL_CONN_OK)
            s_progress(b, &told_steps, &told_seq);
        const char *state = pw_out_str(b, "state", "running");
        if (rc == CL_CONN_OK && strcmp(state, "running") != 0 &&
            strcmp(state, "queued") != 0)
            break;
        if (s_interrupted) {
            cl_out_error("bisect", "stopped waiting; bisect %lld goes on "
                         "(parity bisect cancel %lld stops it)",
                         (long long)id, (long long)id);
            rc = PW_EXIT_SYSTEM;
            goto done;
        }
        struct timespec ts = { 0, S_POLL_MS * 1000000L };
        nanosleep(&ts, NULL);
    }
    rc = as_json ? (pw_out_json(stdout, b) == 0 ? PW_EXIT_OK :
                    PW_EXIT_SYSTEM) : s_print_one(b);
    if (rc == PW_EXIT_OK && strcmp(pw_out_str(b, "state", ""), "done") != 0) {
        cl_out_error("bisect", "bisect %lld %s: %s", (long long)id,
                     pw_out_str(b, "state", "?"), pw_out_str(b, "reason",
                                                             "?"));
        rc = PW_EXIT_DATA;
    }
done:
    json_decref(args);
    json_decref(b);
    return rc;
}

/* ---- the subcommands ------------------------------------------------ */

typedef struct {
    const char *suite, *bench, *good, *bad, *file, *dir;
    json_t *hosts, *vars;
    long runs;
    bool wait, as_json;
} s_start_t;

/* Parse start's options into s: 0, or the exit status (said). */
static int
s_start_opts(int argc, char **argv, s_start_t *s)
{
    enum { O_SUITE = 256, O_BENCH, O_GOOD, O_BAD, O_COMMITS, O_GIT, O_HOSTS,
           O_VAR, O_RUNS, O_WAIT, O_JSON };
    static const struct option opts[] = {
        { "suite", required_argument, NULL, O_SUITE },
        { "bench", required_argument, NULL, O_BENCH },
        { "good", required_argument, NULL, O_GOOD },
        { "bad", required_argument, NULL, O_BAD },
        { "commits", required_argument, NULL, O_COMMITS },
        { "git", required_argument, NULL, O_GIT },
        { "hosts", required_argument, NULL, O_HOSTS },
        { "var", required_argument, NULL, O_VAR },
        { "runs", required_argument, NULL, O_RUNS },
        { "wait", no_argument, NULL, O_WAIT },
        { "json", no_argument, NULL, O_JSON },
        { NULL, 0, NULL, 0 } };
    const char **strs[] = { &s->suite, &s->bench, &s->good, &s->bad,
                            &s->file, &s->dir };
    int o;
    CL_CONN_EACH_OPTION(o, argc, argv, opts) {
        char *end;
        if (o >= O_SUITE && o <= O_GIT)
            *strs[o - O_SUITE] = optarg;
        else if (o == O_HOSTS && s->hosts && cl_out_add_list(
                     s->hosts, optarg, 4096) != 0) {
            cl_out_error("bisect", "--hosts \"%.60s\": want NAME,NAME,...",
                         optarg);
            return PW_EXIT_USAGE;
        } else if (o == O_VAR && cl_out_key_value(s->vars, optarg) != 0) {
            cl_out_error("bisect", "--var \"%.60s\": want NAME=VALUE",
                         optarg);
            return PW_EXIT_USAGE;
        } else if (o == O_VAR && strncmp(optarg, "commit=", 7) == 0) {
            cl_out_error("bisect", "--var commit: each step sets commit to "
                         "the commit it measures");
            return PW_EXIT_USAGE;
        } else if (o == O_RUNS) {
            s->runs = strtol(optarg, &end, 10);
            if (*end || end == optarg || s->runs < PW_RUNS_MIN ||
                s->runs > 10000) {
                cl_out_error("bisect", "--runs \"%s\": want %d..10000",
                             optarg, PW_RUNS_MIN);
                return PW_EXIT_USAGE;
            }
        } else if (o == O_WAIT)
            s->wait = true;
        else if (o == O_JSON)
            s->as_json = true;
        else if (o != O_HOSTS && o != O_VAR) {
            cl_out_option_error("bisect", o, argv);
            return PW_EXIT_USAGE;
        }
    }
    const char *missing = !s->suite ? "--suite" : !s->bench ? "--bench" :
                          !s->good ? "--good" : !s->bad ? "--bad" : NULL;
    if (optind < argc)
        cl_out_error("bisect", "unexpected argument \"%s\" (parity bisect "
                     "--help)", argv[optind]);
    else if (missing)
        cl_out_error("bisect", "start needs %s (parity bisect --help)",
                     missing);
    else if (!s->file == !s->dir)
        cl_out_error("bisect", "start needs the commits: --commits FILE or "
                     "--git DIR (one of them)");
    else
        return 0;
    return PW_EXIT_USAGE;
}

static int
s_start_main(int argc, char **argv, cl_conn_opts_t *co)
{
    s_start_t s = { .hosts = json_array(), .vars = json_object(),
                    .runs = 0 };
    json_t *commits = json_array(), *args = NULL, *body = NULL;
    cl_conn_t *c = NULL;
    int rc = !s.hosts || !s.vars || !commits ? PW_EXIT_SYSTEM :
             s_start_opts(argc, argv, &s);
    if (rc == 0 && s_commits(s.file, s.dir, s.good, s.bad, commits) != 0)
        rc = PW_EXIT_USAGE;
    if (rc != 0)
        goto done;
    /* One request carries at most 64 KiB of arguments (docs/protocol.md
     * 10.1): say so here rather than as the collector's generic line. */
    char *cm = json_dumps(commits, JSON_COMPACT);
    size_t cml = cm ? strlen(cm) : 0;
    free(cm);
    if (cml > S_ARGS_COMMITS_MAX) {
        cl_out_error("bisect", "%zu commits from %s to %s are more than "
                     "one request carries (%u bytes of ids, about 1,500 "
                     "full SHA-1 ids): narrow the range (a nearer --good "
                     "or --bad)", json_array_size(commits), s.good, s.bad,
                     S_ARGS_COMMITS_MAX);
        rc = PW_EXIT_USAGE;
        goto done;
    }
    args = json_pack("{s:s,s:s,s:O,s:O}", "suite", s.suite, "benchmark",
                     s.bench, "commits", commits, "vars", s.vars);
    if (json_array_size(s.hosts))
        json_object_set(args, "hosts", s.hosts);
    if (s.runs)
        json_object_set_new(args, "runs", json_integer(s.runs));
    char err[2048];
    int code = 0, status = 0;
    if (!(c = cl_conn_open(co, &code, err, sizeof err))) {
        cl_out_error("bisect", "%s", err);
        rc = cl_conn_exit_code(code);
        goto done;
    }
    if ((rc = cl_conn_request(c, "bisect_start", args, &body, &status, err,
                              sizeof err)) != CL_CONN_OK) {
        cl_out_error("bisect", "%s", err);
        rc = cl_conn_exit_code(rc);
        goto done;
    }
    json_int_t id = json_integer_value(json_object_get(body, "bisect"));
    char hosts[PW_OUT_CELL_MAX];
    s_hosts_text(hosts, sizeof hosts, json_object_get(body, "hosts"));
    if (s.wait || !s.as_json)
        fprintf(s.wait ? stderr : stdout, "bisect %lld started: %s/%s, %lld "
                "commits from %s to %s on %s%s\n", (long long)id, s.suite,
                s.bench, (long long)json_array_size(commits), s.good, s.bad,
                hosts, json_is_integer(json_object_get(body, "event")) &&
                !json_array_size(s.hosts) ? " (the hosts of its "
                "change-point event)" : "");
    if (s.wait)
        rc = s_wait(c, id, s.as_json);
    else
        rc = s.as_json && pw_out_json(stdout, body) != 0 ? PW_EXIT_SYSTEM
                                                        : PW_EXIT_OK;
done:
    cl_conn_destroy(&c);
    json_decref(s.hosts);
    json_decref(s.vars);
    json_decref(commits);
    json_decref(args);
    json_decref(body);
    return rc;
}

/* An ID operand: a positive integer. */
static int
s_id(const char *s, json_int_t *id)
{
    char *end;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (!s || *end || end == s || v < 1) {
        cl_out_error("bisect", "\"%s\" is not a bisect id (parity bisect "
                     "status lists them)", s ? s : "");
        return -1;
    }
    *id = (json_int_t)v;
    return 0;
}

/* status [ID] [--json], cancel ID. */
static int
s_other_main(const char *sub, int argc, char **argv, cl_conn_opts_t *co)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 'j' }, { NULL, 0, NULL, 0 } };
    bool as_json = false, cancel = strcmp(sub, "cancel") == 0;
    const char *operand = NULL;
    json_int_t id = 0;
    int o;
    CL_CONN_EACH_OPTION(o, argc, argv, opts) {
        if (o != 'j' || cancel) {
            cl_out_option_error("bisect", o, argv);
            return PW_EXIT_USAGE;
        }
        as_json = true;
    }
    if (cl_out_one_operand("bisect", argc, argv, &operand) != 0 ||
        (operand && s_id(operand, &id) != 0))
        return PW_EXIT_USAGE;
    if (cancel && !operand) {
        cl_out_error("bisect", "which bisect? (parity bisect cancel ID; "
                     "parity bisect status lists them)");
        return PW_EXIT_USAGE;
    }
    json_t *args = id ? json_pack("{s:I}", "bisect", id) : json_object();
    json_t *body = NULL;
    int rc = cl_conn_ask("bisect", co, cancel ? "bisect_cancel" :
                         "bisect_status", args, &body);
    json_decref(args);
    if (rc != PW_EXIT_OK)
        return rc;
    if (as_json)
        rc = pw_out_json(stdout, body) == 0 ? PW_EXIT_OK : PW_EXIT_SYSTEM;
    else if (cancel)
        printf("bisect %lld cancelled (%lld job%s stopped)\n", (long long)id,
               (long long)json_integer_value(json_object_get(
                   body, "jobs_cancelled")), json_integer_value(
                   json_object_get(body, "jobs_cancelled")) == 1 ? "" : "s");
    else
        rc = id ? s_print_one(body) : s_print_list(body);
    json_decref(body);
    return rc;
}

int
cl_bisect_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0)
        return argc < 2 ? (cl_out_error("bisect", "which one? start, "
                                        "status or cancel (parity bisect "
                                        "--help)"), PW_EXIT_USAGE)
                        : cl_out_help("bisect", S_USAGE);
    const char *sub = argv[1];
    if (strcmp(sub, "start") != 0 && strcmp(sub, "status") != 0 &&
        strcmp(sub, "cancel") != 0) {
        cl_out_error("bisect", "unknown subcommand \"%.60s\": start, status "
                     "or cancel (parity bisect --help)", sub);
        return PW_EXIT_USAGE;
    }
    if (cl_out_wants_help(argc, argv))
        return cl_out_help("bisect", S_USAGE);
    if (cl_conn_verb_args("bisect", &argc, argv, &co) != 0)
        return PW_EXIT_USAGE;
    /* The subcommand is argv[0] for its own parsing. */
    if (strcmp(sub, "start") == 0)
        return s_start_main(argc - 1, argv + 1, &co);
    return s_other_main(sub, argc - 1, argv + 1, &co);
}
