/* ag_main.c -- parity-agent: run a suite locally, show the environment,
 * or (daemon mode, agent/daemon/ag_daemon.h) serve a collector.
 *
 *   parity-agent run SUITE.yaml [--var k=v]... [--only BENCH]...
 *                    [--runs N|auto] [--max-runs N] [--fresh-floor]
 *                    [--warmup N] [--out FILE] [--json]
 *                    [--export-json FILE] [--export-markdown FILE]
 *                    [--export-csv FILE]
 *   parity-agent env [--json]
 *   parity-agent --help | --version
 *
 * Exit codes are AG_EXIT_* of ag_cli.h; docs/agent.md lists them.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ag_against.h"
#include "ag_cli.h"
#include "ag_daemon.h"
#include "ag_stream.h"
#include "ag_env.h"
#include "ag_harness.h"
#include "ag_suite.h"
#include "pw_out.h"
#include "config.h"

#define S_MAX_ONLY AG_SUITE_MAX_BENCHMARKS

static void
s_usage(FILE *f)
{
    fprintf(f,
        "usage: parity-agent run SUITE.yaml [--var NAME=VALUE]... "
        "[--only BENCH]...\n"
        "                        [--against NAME=VALUE]...\n"
        "                        [--runs N|auto] [--max-runs N] "
        "[--fresh-floor]\n"
        "                        [--warmup N] [--out FILE] [--json]\n"
        "                        [--export-json FILE] "
        "[--export-markdown FILE]\n"
        "                        [--export-csv FILE]\n"
        "       parity-agent env [--json]\n"
        "       parity-agent --help | --version\n"
        "\n"
        "run   run a suite file's benchmarks here (interleaved rounds, "
        "warm-ups,\n"
        "      calibration) and print the verdict table\n"
        "env   print this machine's environment and what makes timings "
        "less\n"
        "      trustworthy\n"
        "\n"
        "run options:\n"
        "  --var NAME=VALUE    set ${NAME} in the suite's commands (also "
        "PARITY_VAR_NAME)\n"
        "  --against NAME=VALUE  also run each subject at this value of "
        "the suite's\n"
        "                      revision variable, interleaved, and judge "
        "it against\n"
        "                      that (repeatable; docs/suites.md "
        "\"Against\")\n"
        "  --only BENCH        run only this benchmark (repeatable)\n"
        "  --runs N            measured rounds, overriding the suite's\n"
        "  --runs auto         add rounds until each verdict is decisive "
        "(docs/verdict.md)\n"
        "  --max-runs N        the cap of runs: auto (default: the suite's "
        "max_runs, 100)\n"
        "  --fresh-floor       the floor from this run's no-op runs alone, "
        "not the\n"
        "                      host's calibration store\n"
        "  --warmup N          warm-up rounds, overriding the suite's\n"
        "  --json              the results file on stdout instead of the "
        "table\n"
        "  --export-json FILE  also write the results file to FILE\n"
        "  --out FILE          the same as --export-json FILE\n"
        "  --export-markdown FILE  also write the table as Markdown\n"
        "  --export-csv FILE   also write the table as CSV\n"
        "  --metric NAME       judge wall (the default), cpu or peak_rss "
        "(repeatable)\n"
        "\n"
        "exit status: 0 done (any verdict), 1 suite file wrong, 2 usage, "
        "3 system error,\n"
        "4 a benchmark failed, 130 interrupted (results written with "
        "complete: false).\n"
        "See docs/agent.md and docs/suites.md.\n");
}

/* Usage on stdout for --help; AG_EXIT_SYSTEM when it could not be
 * written (a full disk, a closed pipe), said on stderr. */
static int
s_help(const char *prog, bool with_daemon)
{
    s_usage(stdout);
    if (with_daemon) {
        fputc('\n', stdout);
        ag_daemon_usage(stdout);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: write to stdout failed\n", prog);
        return AG_EXIT_SYSTEM;
    }
    return AG_EXIT_OK;
}

/* What `parity-agent run`'s options ask for. */
typedef struct {
    ag_var_t vars[AG_SUITE_MAX_VARS];
    size_t nvars;
    ag_var_t against[AG_AGAINST_MAX];
    size_t nagainst;
    const char *only[S_MAX_ONLY];
    size_t nonly;
    ag_harness_opts_t hopts;
    ag_cli_opts_t copts;
} s_run_t;

/* One option c (getopt_long's) with its value v into r: 0, or an exit
 * code after saying what is wrong (or printing the help). */
static int
s_run_option(s_run_t *r, int c, char *v, char **argv)
{
    const char *prog = r->copts.prog;
    char err[1024];
    unsigned long n;
    if (ag_cli_output_opt(&r->copts, c, v))
        return 0;
    switch (c) {
    case AG_CLI_OPT_METRIC:
        if (ag_cli_metric(&r->copts, v, err, sizeof err) != 0) {
            fprintf(stderr, "%s: %s\n", prog, err);
            return AG_EXIT_USAGE;
        }
        return 0;
    case 'v':
        if (r->nvars >= AG_SUITE_MAX_VARS) {
            fprintf(stderr, "%s: more than %d --var\n", prog,
                    AG_SUITE_MAX_VARS);
            return AG_EXIT_USAGE;
        }
        if (ag_var_parse("--var", v, &r->vars[r->nvars], err, sizeof err)
            != 0) {
            fprintf(stderr, "%s: %s\n", prog, err);
            return AG_EXIT_USAGE;
        }
        r->nvars++;
        return 0;
    case 'a':
        if (r->nagainst >= AG_AGAINST_MAX) {
            fprintf(stderr, "%s: more than %d --against\n", prog,
                    AG_AGAINST_MAX);
            return AG_EXIT_USAGE;
        }
        if (ag_var_parse("--against", v, &r->against[r->nagainst], err,
                         sizeof err) != 0) {
            fprintf(stderr, "%s: %s\n", prog, err);
            return AG_EXIT_USAGE;
        }
        r->nagainst++;
        return 0;
    case 'o':
        if (r->nonly >= S_MAX_ONLY) {
            fprintf(stderr, "%s: more than %d --only\n", prog, S_MAX_ONLY);
            return AG_EXIT_USAGE;
        }
        r->only[r->nonly++] = v;
        return 0;
    case 'r': case 'm': case 'w': {
        bool is_auto;
        if (ag_cli_count(c == 'r' ? "--runs" : c == 'm' ? "--max-runs"
                         : "--warmup", v, &n, &is_auto, err, sizeof err)
            != 0) {
            fprintf(stderr, "%s: %s\n", prog, err);
            return AG_EXIT_USAGE;
        }
        if (c == 'r') {
            r->hopts.runs_auto = is_auto;
            r->hopts.runs = (unsigned)n;
        } else if (c == 'm') {
            r->hopts.max_runs = (unsigned)n;
        } else {
            r->hopts.warmup = (int)n;
        }
        return 0;
    }
    case 'f':
        r->copts.fresh_floor = true;
        return 0;
    case 'O':   /* --out: --export-json's older name */
        r->copts.export_path = v;
        return 0;
    case 'h':
        return s_help(prog, false);
    case ':':
        fprintf(stderr, "%s: option %s needs a value\n", prog,
                argv[optind - 1]);
        return AG_EXIT_USAGE;
    default:
        fprintf(stderr, "%s: unknown option \"%s\" (parity-agent --help)\n",
                prog, argv[optind - 1]);
        return AG_EXIT_USAGE;
    }
}

static int
s_run_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "var", required_argument, NULL, 'v' },
        { "against", required_argument, NULL, 'a' },
        { "only", required_argument, NULL, 'o' },
        { "runs", required_argument, NULL, 'r' },
        { "max-runs", required_argument, NULL, 'm' },
        { "fresh-floor", no_argument, NULL, 'f' },
        { "warmup", required_argument, NULL, 'w' },
        { "out", required_argument, NULL, 'O' },
        AG_CLI_OUTPUT_OPTIONS,
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *prog = "parity-agent run";
    s_run_t r = { .hopts = { .warmup = -1 },
                  .copts = { .prog = prog, .tool = "parity-agent",
                             .parity = VD_DEFAULT_PARITY } };
    char err[1024];
    int c;

    /* --collector and friends: stream the run through the spool. */
    ag_stream_opts_t sopts = { 0 };
    if (ag_stream_take_args(&argc, argv, &sopts, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return AG_EXIT_USAGE;
    }

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        int code = s_run_option(&r, c, optarg, argv);
        if (code != 0 || c == 'h')
            return code;
    }
    if (optind >= argc) {
        fprintf(stderr, "%s: missing the suite file (parity-agent run "
                "SUITE.yaml)\n", prog);
        return AG_EXIT_USAGE;
    }
    const char *path = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "%s: one suite file expected, got \"%s\" too\n",
                prog, argv[optind]);
        return AG_EXIT_USAGE;
    }
    ag_suite_t *suite = NULL;
    char *text = NULL;
    size_t len = 0;
    if (ag_suite_read(path, &text, &len, err, sizeof err) != 0 ||
        ag_suite_load_buffer(path, text, len, r.vars, r.nvars, &suite, err,
                             sizeof err) != 0 ||
        ag_against_add(suite, text, len, r.vars, r.nvars, r.against,
                       r.nagainst, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        free(text);
        ag_suite_destroy(&suite);
        return AG_EXIT_DATA;
    }
    free(text);
    r.hopts.only = r.nonly ? r.only : NULL;
    r.hopts.only_count = r.nonly;
    int code = ag_stream_wanted(&sopts)
             ? ag_stream_session(suite, &r.hopts, &r.copts, &sopts)
             : ag_cli_session(suite, &r.hopts, &r.copts);
    ag_suite_destroy(&suite);
    return code;
}

static void
s_env_text(FILE *f, const json_t *env)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)env, key, v) {
        if (strcmp(key, "cpus") == 0 || strcmp(key, "warnings") == 0)
            continue;
        /* Six significant digits are enough for a reader; --json keeps
         * every digit. */
        char *val = json_dumps(json_object_get(v, "value"),
                               JSON_ENCODE_ANY | JSON_COMPACT |
                               JSON_REAL_PRECISION(6));
        const char *src = json_string_value(json_object_get(v, "source"));
        const json_t *sv = json_object_get(v, "value");
        fprintf(f, "%-24s %-40s %s\n", key,
                json_is_string(sv) ? json_string_value(sv)
                : json_is_null(sv) ? "none (no limit)"
                : (val ? val : "?"),
                src ? src : "");
        free(val);
    }
    size_t i;
    json_t *cpu, *w;
    json_array_foreach(json_object_get(env, "cpus"), i, cpu) {
        json_t *field;
        fprintf(f, "cpu %lld:", (long long)json_integer_value(
                    json_object_get(cpu, "cpu")));
        size_t shown = 0;
        json_object_foreach(cpu, key, field) {
            if (strcmp(key, "cpu") == 0)
                continue;
            const json_t *sv = json_object_get(field, "value");
            if (json_is_string(sv))
                fprintf(f, " %s=%s", key, json_string_value(sv));
            else
                fprintf(f, " %s=%lld", key,
                        (long long)json_integer_value(sv));
            shown++;
        }
        fprintf(f, "%s\n", shown ? "" : " (no cpufreq data: "
                "/sys/devices/system/cpu/cpuN/cpufreq is absent)");
    }
    json_array_foreach(json_object_get(env, "warnings"), i, w)
        fprintf(f, "warning: %s\n",
                json_string_value(json_object_get(w, "message")));
}

static int
s_env_main(int argc, char **argv)
{
    const char *prog = "parity-agent env";
    bool json = false;
    char err[256];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--help") == 0 ||
                   strcmp(argv[i], "-h") == 0) {
            return s_help(prog, false);
        } else {
            fprintf(stderr, "%s: unknown argument \"%s\" (parity-agent "
                    "--help)\n", prog, argv[i]);
            return AG_EXIT_USAGE;
        }
    }
    json_t *env = ag_env_collect(NULL, 0, err, sizeof err);
    if (!env) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return AG_EXIT_SYSTEM;
    }
    int bad = json ? pw_out_json(stdout, env) : (s_env_text(stdout, env), 0);
    json_decref(env);
    if (bad || fflush(stdout) != 0) {
        fprintf(stderr, "%s: write to stdout failed\n", prog);
        return AG_EXIT_SYSTEM;
    }
    return AG_EXIT_OK;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        s_usage(stderr);
        return AG_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0)
        return s_help("parity-agent", true);
    if (strcmp(argv[1], "--version") == 0) {
        printf("parity-agent %s\n", PARITY_VERSION);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "parity-agent: write to stdout failed\n");
            return AG_EXIT_SYSTEM;
        }
        return AG_EXIT_OK;
    }
    if (strcmp(argv[1], "run") == 0)
        return s_run_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "env") == 0)
        return s_env_main(argc - 1, argv + 1);
    /* Daemon mode (agent/daemon/ag_daemon.h). */
    if (strncmp(argv[1], "--", 2) == 0)
        return ag_daemon_main(argc, argv);
    fprintf(stderr, "parity-agent: unknown command \"%s\" (parity-agent "
            "--help)\n", argv[1]);
    return AG_EXIT_USAGE;
}
