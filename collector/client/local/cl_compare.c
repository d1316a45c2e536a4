/* cl_compare.c -- `parity compare`: a quick interleaved comparison of
 * two or more commands on this machine, through the same harness as
 * `parity-agent run`, with hyperfine's command line
 * (docs/commands/compare.md).
 *
 *   parity compare [options] 'CMD_A' 'CMD_B' [...]
 *   parity compare [options] -- CMD_A... -- CMD_B... [-- CMD_C...]
 *
 * In the first form each argument is one command, run through /bin/sh -c
 * (-N: split into words and run without a shell); in the second each
 * command is an argv. The first command is the subject, unless
 * --reference names the baseline. -L and -P make one comparison per
 * parameter value (with one command: one comparison whose arms are the
 * values). Everything is checked before anything runs.
 * Exit codes: AG_EXIT_* of agent/cli/ag_cli.h.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_cli.h"
#include "ag_suite.h"
#include "cl_cmdline.h"
#include "pw_grow.h"
#include "cl_out.h"
#include "pw_out.h"
#include "cl_verbs.h"

#define S_VERB "compare"
/* An arm's name is its command line, cut to this many bytes. */
#define S_NAME_MAX 64
/* -L and -P options of one command line. */
#define S_MAX_PARAMS 8
/* -n options: one per command and parameter value at most. */
#define S_MAX_NAMES (AG_SUITE_MAX_ARMS * AG_SUITE_MAX_BENCHMARKS)
/* All commands, names and hooks once the parameters are put in. */
#define S_MAX_BYTES (64u << 20)

static const char s_usage[] =
    "usage: parity compare [options] 'CMD_A' 'CMD_B' [...]\n"
    "       parity compare [options] -- CMD_A... -- CMD_B... [...]\n"
    "\n"
    "Run the commands in interleaved rounds (A B, B A, ...) after warm-ups,\n"
    "with one calibration run of a no-op per round, and print per command\n"
    "n, min, median, max and IQR and the verdict of the subject (the first\n"
    "command) against each other one. Each argument is a command run by\n"
    "/bin/sh -c; after \"--\" each command is an argv, run without a "
    "shell.\n"
    "\n"
    "  -r, --runs N|auto         measured rounds (default 10, 2..100000);\n"
    "                            auto: add rounds until the verdict is\n"
    "                            decisive (docs/verdict.md)\n"
    "  -M, --max-runs N          the cap of --runs auto (default 100)\n"
    "      --fresh-floor         the floor from this invocation's no-op "
    "runs\n"
    "                            alone, not the host's calibration store\n"
    "  -w, --warmup N            warm-up rounds (default 1, 0..10000)\n"
    "  -n, --command-name NAME   name a command (once per command, in order)\n"
    "  -N, --shell=none          split each command into words, no shell\n"
    "  -S, --shell SHELL         run commands with SHELL -c (default: "
    "/bin/sh)\n"
    "  -p, --prepare CMD         run CMD before every run (not timed)\n"
    "  -C, --conclude CMD        run CMD after every run (not timed)\n"
    "  -s, --setup CMD           run CMD once before a command's first run\n"
    "  -c, --cleanup CMD         run CMD once after a command's last run\n"
    "      --reference CMD       the baseline: the one other command is "
    "judged\n"
    "                            against CMD\n"
    "  -L, --parameter-list NAME A,B,...\n"
    "                            one comparison per value of {NAME}\n"
    "  -P, --parameter-scan NAME MIN MAX\n"
    "                            one comparison per value MIN..MAX of {NAME}\n"
    "  -D, --parameter-step-size STEP\n"
    "                            the step of -P (default 1)\n"
    "      --metric NAME         judge wall (the default), cpu or peak_rss;\n"
    "                            may repeat (docs/verdict.md \"Metrics\")\n"
    "      --json                the results file (schema 3) on stdout "
    "instead\n"
    "      --export-json FILE    also write the results file to FILE\n"
    "      --export-markdown FILE  also write a Markdown table to FILE\n"
    "      --export-csv FILE     also write a CSV table to FILE\n"
    "\n"
    "exit status: 0 done (any verdict), 2 usage, 3 system error, 4 a "
    "command\n"
    "failed (wrong exit status, signal, timeout), 130 interrupted.\n"
    "See docs/commands/compare.md.\n";

enum { S_SETUP, S_CLEANUP, S_PREPARE, S_CONCLUDE, S_HOOKS };
static const char *const s_hook_opt[S_HOOKS] = {
    "--setup", "--cleanup", "--prepare", "--conclude" };

typedef enum { S_SHELL_SH, S_SHELL_NONE, S_SHELL_CUSTOM } s_shell_t;

typedef struct {
    const char *name;
    char **values;      /* one cl_cmdline allocation; NULL until made */
    size_t count;
    const char *list;   /* -L: the values as given */
    bool scan;          /* -P: values made once -D is known */
    const char *min, *max;
} s_param_t;

/* The command line, parsed; strings point into argv. */
typedef struct {
    ag_cli_opts_t copts;
    unsigned long runs, warmup;
    bool runs_auto;          /* --runs auto */
    unsigned long max_runs;  /* --max-runs; 0: PW_MAX_RUNS_DEFAULT */
    const char *names[S_MAX_NAMES];
    size_t nnames;
    const char *hooks[S_HOOKS][AG_SUITE_MAX_ARMS];
    size_t nhooks[S_HOOKS];
    const char *reference;
    s_param_t params[S_MAX_PARAMS];
    size_t nparams;
    const char *step;
    s_shell_t shell;
    const char *shell_arg;
    char **shell_argv;  /* --shell SHELL split; cl_cmdline allocation */
    size_t shell_argc;
    bool argv_form;     /* commands after "--": argvs, not strings */
    const char *texts[AG_SUITE_MAX_ARMS];  /* string form */
    char **words[AG_SUITE_MAX_ARMS];       /* argv form, into argv */
    size_t nwords[AG_SUITE_MAX_ARMS];
    size_t ncmds;
} s_opts_t;

/* Everything allocated while building the suite, freed at the end. */
typedef struct {
    void **ptrs;
    size_t n, cap;
    size_t bytes;
} s_pool_t;

static void *
s_keep(s_pool_t *pool, void *p, size_t bytes)
{
    if (!p)
        return NULL;
    if (pool->bytes + bytes > S_MAX_BYTES) {
        free(p);
        return NULL;
    }
    if (!pw_grow(&pool->ptrs, &pool->cap, pool->n, sizeof *pool->ptrs, 256,
                 SIZE_MAX)) {
        free(p);
        return NULL;
    }
    pool->bytes += bytes;
    return pool->ptrs[pool->n++] = p;
}

static void
s_pool_free(s_pool_t *pool)
{
    for (size_t i = 0; i < pool->n; i++)
        free(pool->ptrs[i]);
    free(pool->ptrs);
    memset(pool, 0, sizeof *pool);
}

/* hyperfine's options that parity compare does not have, and why: a
 * clear answer rather than "unknown option". */
static const struct {
    const char *opt;
    const char *why;
} s_hyperfine_only[] = {
    { "-m/--min-runs", "it runs exactly --runs rounds, or with --runs auto "
                       "at least 10" },
    { "-i/--ignore-failure", "a command that fails stops its comparison "
                             "(exit 4)" },
    { "--show-output", "the commands' output is discarded" },
    { "--output", "the commands' output is discarded" },
    { "--input", "the commands read /dev/null" },
    { "--style", "the table has one format" },
    { "--sort", "the table lists the commands in the order given" },
    { "-u/--time-unit", "each time is shown in its own unit" },
    { "--export-asciidoc", "use --export-markdown, --export-csv or "
                           "--export-json" },
    { "--export-orgmode", "use --export-markdown, --export-csv or "
                          "--export-json" },
};
#define S_HF_BASE 1000

static const struct option s_longopts[] = {
    { "runs", required_argument, NULL, 'r' },
    { "warmup", required_argument, NULL, 'w' },
    { "command-name", required_argument, NULL, 'n' },
    { "shell", required_argument, NULL, 'S' },
    { "prepare", required_argument, NULL, 'p' },
    { "conclude", required_argument, NULL, 'C' },
    { "setup", required_argument, NULL, 's' },
    { "cleanup", required_argument, NULL, 'c' },
    { "reference", required_argument, NULL, 'R' },
    { "parameter-list", required_argument, NULL, 'L' },
    { "parameter-scan", required_argument, NULL, 'P' },
    { "parameter-step-size", required_argument, NULL, 'D' },
    AG_CLI_OUTPUT_OPTIONS,
    { "help", no_argument, NULL, 'h' },
    { "max-runs", required_argument, NULL, 'M' },
    { "fresh-floor", no_argument, NULL, 'F' },
    { "min-runs", required_argument, NULL, S_HF_BASE + 0 },
    { "ignore-failure", no_argument, NULL, S_HF_BASE + 1 },
    { "show-output", no_argument, NULL, S_HF_BASE + 2 },
    { "output", required_argument, NULL, S_HF_BASE + 3 },
    { "input", required_argument, NULL, S_HF_BASE + 4 },
    { "style", required_argument, NULL, S_HF_BASE + 5 },
    { "sort", required_argument, NULL, S_HF_BASE + 6 },
    { "time-unit", required_argument, NULL, S_HF_BASE + 7 },
    { "export-asciidoc", required_argument, NULL, S_HF_BASE + 8 },
    { "export-orgmode", required_argument, NULL, S_HF_BASE + 9 },
    { NULL, 0, NULL, 0 },
};
/* m, i and u are hyperfine's short forms of the above; -M
 * (--max-runs) means what it means in hyperfine. */
static const char s_shortopts[] = ":r:w:n:NS:p:C:s:c:L:P:D:hm:M:iu:";

/* The values after an option's own (-L NAME VALUES, -P NAME MIN MAX):
 * taken from argv by hand, since getopt knows one value per option. */
static int
s_more_values(int argc, char **argv, const char *opt, const char *form,
              int need, const char **out)
{
    if (optind + need > argc) {
        cl_out_error(S_VERB, "%s needs %s", opt, form);
        return -1;
    }
    for (int i = 0; i < need; i++)
        out[i] = argv[optind++];
    return 0;
}

static int
s_add_param(s_opts_t *o, const char *opt, const char *name)
{
    bool ok = *name && strlen(name) <= AG_SUITE_MAX_VAR_NAME;
    for (const char *p = name; ok && *p; p++)
        ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
             (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' ||
             *p == '.';
    if (!ok) {
        cl_out_error(S_VERB, "%s \"%s\": a parameter name is 1 to %d "
                     "letters, digits, _ - or .", opt, name,
                     AG_SUITE_MAX_VAR_NAME);
        return -1;
    }
    for (size_t i = 0; i < o->nparams; i++)
        if (strcmp(o->params[i].name, name) == 0) {
            cl_out_error(S_VERB, "%s %s: the parameter %s is given twice",
                         opt, name, name);
            return -1;
        }
    if (o->nparams >= S_MAX_PARAMS) {
        cl_out_error(S_VERB, "more than %d -L and -P", S_MAX_PARAMS);
        return -1;
    }
    o->params[o->nparams].name = name;
    o->nparams++;
    return 0;
}

static int
s_shell_opt(s_opts_t *o, const char *v)
{
    char err[256];
    o->shell_arg = v;
    free(o->shell_argv);
    o->shell_argv = NULL;
    if (strcmp(v, "none") == 0) {
        o->shell = S_SHELL_NONE;
    } else if (strcmp(v, "default") == 0) {
        o->shell = S_SHELL_SH;
    } else if (cl_cmdline_split(v, &o->shell_argv, &o->shell_argc, err,
                                sizeof err) != CL_CMDLINE_OK) {
        cl_out_error(S_VERB, "--shell \"%s\": %s", v, err);
        return -1;
    } else {
        o->shell = S_SHELL_CUSTOM;
    }
    return 0;
}

/* -L NAME VALUES and -P NAME MIN MAX (hyperfine's parameters): their
 * later values are the next arguments. -1 when wrong (said), else 0. */
static int
s_param_opt(s_opts_t *o, int c, int argc, char **argv)
{
    const char *more[2];
    if (c == 'L') {
        if (s_more_values(argc, argv, "-L", "NAME VALUES", 1, more) != 0 ||
            s_add_param(o, "-L", optarg) != 0)
            return -1;
        o->params[o->nparams - 1].list = more[0];
        return 0;
    }
    for (size_t i = 0; i < o->nparams; i++)
        if (o->params[i].scan) {
            cl_out_error(S_VERB, "-P given twice (add values with -L)");
            return -1;
        }
    if (s_more_values(argc, argv, "-P", "NAME MIN MAX", 2, more) != 0 ||
        s_add_param(o, "-P", optarg) != 0)
        return -1;
    o->params[o->nparams - 1].scan = true;
    o->params[o->nparams - 1].min = more[0];
    o->params[o->nparams - 1].max = more[1];
    return 0;
}

/* One option of getopt_long's; -1 when it is wrong (said), 1 for
 * --help, 0 otherwise. */
static int
s_option(s_opts_t *o, int c, int argc, char **argv)
{
    /* "--" is where commands start, never an option's value: the old
     * form `--warmup -- CMD` forgot the value. */
    if (c != ':' && optarg && strcmp(optarg, "--") == 0) {
        cl_out_error(S_VERB, "%s needs a value",
                     argv[optind - 1] == optarg ? argv[optind - 2]
                                                : argv[optind - 1]);
        return -1;
    }
    if (ag_cli_output_opt(&o->copts, c, optarg))
        return 0;
    switch (c) {
    case AG_CLI_OPT_METRIC: {
        char err[160];
        if (ag_cli_metric(&o->copts, optarg, err, sizeof err) != 0) {
            cl_out_error(S_VERB, "%s", err);
            return -1;
        }
        return 0;
    }
    case 'r': case 'M': case 'w': {
        char err[160];
        bool is_auto;
        unsigned long n;
        if (ag_cli_count(c == 'r' ? "--runs" : c == 'M' ? "--max-runs"
                         : "--warmup", optarg, &n, &is_auto, err,
                         sizeof err) != 0) {
            cl_out_error(S_VERB, "%s", err);
            return -1;
        }
        if (c == 'r') {
            o->runs_auto = is_auto;
            if (!is_auto)
                o->runs = n;
        } else {
            *(c == 'M' ? &o->max_runs : &o->warmup) = n;
        }
        return 0;
    }
    case 'F':
        o->copts.fresh_floor = true;
        return 0;
    case 'n':
        if (o->nnames >= S_MAX_NAMES) {
            cl_out_error(S_VERB, "more than %d -n", S_MAX_NAMES);
            return -1;
        }
        o->names[o->nnames++] = optarg;
        return 0;
    case 'N':
        return s_shell_opt(o, "none");
    case 'S':
        return s_shell_opt(o, optarg);
    case 's': case 'c': case 'p': case 'C': {
        int k = c == 's' ? S_SETUP : c == 'c' ? S_CLEANUP
              : c == 'p' ? S_PREPARE : S_CONCLUDE;
        if (o->nhooks[k] >= AG_SUITE_MAX_ARMS) {
            cl_out_error(S_VERB, "%s given more than %d times", s_hook_opt[k],
                         AG_SUITE_MAX_ARMS);
            return -1;
        }
        o->hooks[k][o->nhooks[k]++] = optarg;
        return 0;
    }
    case 'R':
        o->reference = optarg;
        return 0;
    case 'L': case 'P':
        return s_param_opt(o, c, argc, argv);
    case 'D':
        o->step = optarg;
        return 0;
    case 'h':
        return 1;
    case 'm': case 'i': case 'u':
        c = S_HF_BASE + (c == 'm' ? 0 : c == 'i' ? 1 : 7);
        /* fall through */
    default:
        if (c >= S_HF_BASE) {
            size_t k = (size_t)(c - S_HF_BASE);
            cl_out_error(S_VERB, "%s is a hyperfine option that parity "
                         "compare does not have: %s", s_hyperfine_only[k].opt,
                         s_hyperfine_only[k].why);
            return -1;
        }
        if (c == ':')
            cl_out_error(S_VERB, "%s needs a value", argv[optind - 1]);
        else if (optopt)
            cl_out_error(S_VERB, "unknown option \"-%c\" (parity compare "
                         "--help)", optopt);
        else
            cl_out_error(S_VERB, "unknown option \"%s\" (parity compare "
                         "--help)", argv[optind - 1]);
        return -1;
    }
}

/* The commands after the options: strings, or argvs split at "--". */
static int
s_commands(s_opts_t *o, int argc, char **argv)
{
    bool dashes = false;
    for (int i = optind; i < argc; i++)
        dashes |= strcmp(argv[i], "--") == 0;
    o->argv_form = dashes;
    for (int i = optind; i < argc;) {
        if (o->ncmds >= AG_SUITE_MAX_ARMS) {
            cl_out_error(S_VERB, "more than %d commands", AG_SUITE_MAX_ARMS);
            return -1;
        }
        if (!dashes) {
            if (argv[i][0] == '\0') {
                cl_out_error(S_VERB, "command %zu is empty", o->ncmds + 1);
                return -1;
            }
            o->texts[o->ncmds++] = argv[i++];
            continue;
        }
        int start = i;
        while (i < argc && strcmp(argv[i], "--") != 0)
            i++;
        if (i == start) {
            cl_out_error(S_VERB, "command %zu is empty: put the command "
                         "after \"--\"", o->ncmds + 1);
            return -1;
        }
        if (argv[start][0] == '\0') {
            cl_out_error(S_VERB, "command %zu: the program name is empty",
                         o->ncmds + 1);
            return -1;
        }
        o->words[o->ncmds] = argv + start;
        o->nwords[o->ncmds++] = (size_t)(i - start);
        /* A "--" ends this command; the next one follows it. */
        if (i < argc && ++i == argc) {
            cl_out_error(S_VERB, "command %zu is empty: put the command "
                         "after \"--\"", o->ncmds + 1);
            return -1;
        }
    }
    if (o->argv_form && o->shell == S_SHELL_CUSTOM) {
        cl_out_error(S_VERB, "--shell %s: the commands after \"--\" are "
                     "argvs, run without a shell", o->shell_arg);
        return -1;
    }
    return 0;
}

static int
s_parse(s_opts_t *o, int argc, char **argv)
{
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, s_shortopts, s_longopts, NULL)) !=
           -1) {
        int r = s_option(o, c, argc, argv);
        if (r != 0)
            return r;
    }
    if (o->max_runs && !o->runs_auto) {
        cl_out_error(S_VERB, "--max-runs %lu: a cap for --runs auto, which "
                     "is not given", o->max_runs);
        return -1;
    }
    bool scan = false;
    for (size_t i = 0; i < o->nparams; i++)
        scan |= o->params[i].scan;
    if (o->step && !scan) {
        cl_out_error(S_VERB, "-D %s: a step for -P, which is not given",
                     o->step);
        return -1;
    }
    return s_commands(o, argc, argv);
}

/* The values of every -L and -P; each must be used somewhere. */
static int
s_values(s_opts_t *o)
{
    char err[256];
    for (size_t i = 0; i < o->nparams; i++) {
        s_param_t *p = &o->params[i];
        if (p->scan) {
            if (cl_cmdline_range(p->min, p->max, o->step,
                                 AG_SUITE_MAX_BENCHMARKS, &p->values,
                                 &p->count, err, sizeof err) != 0) {
                cl_out_error(S_VERB, "-P %s %s %s%s%s: %s", p->name, p->min,
                             p->max, o->step ? " -D " : "",
                             o->step ? o->step : "", err);
                return -1;
            }
        } else if (cl_cmdline_list(p->list, AG_SUITE_MAX_BENCHMARKS,
                                   &p->values, &p->count, err,
                                   sizeof err) != 0) {
            cl_out_error(S_VERB, "-L %s %s: %s", p->name, p->list, err);
            return -1;
        }
        for (size_t a = 0; a < p->count; a++)
            for (size_t b = 0; b < a; b++)
                if (strcmp(p->values[a], p->values[b]) == 0) {
                    cl_out_error(S_VERB, "-L %s: the value \"%s\" is given "
                                 "twice", p->name, p->values[a]);
                    return -1;
                }
        bool used = o->reference && cl_cmdline_uses(o->reference, p->name);
        for (size_t c = 0; c < o->ncmds && !used; c++) {
            if (!o->argv_form)
                used = cl_cmdline_uses(o->texts[c], p->name);
            for (size_t w = 0; o->argv_form && w < o->nwords[c] && !used;
                 w++)
                used = cl_cmdline_uses(o->words[c][w], p->name);
        }
        for (size_t n = 0; n < o->nnames && !used; n++)
            used = cl_cmdline_uses(o->names[n], p->name);
        for (size_t k = 0; k < S_HOOKS; k++)
            for (size_t h = 0; h < o->nhooks[k] && !used; h++)
                used = cl_cmdline_uses(o->hooks[k][h], p->name);
        if (!used) {
            cl_out_error(S_VERB, "%s %s: no command, name or hook holds "
                         "{%s}", p->scan ? "-P" : "-L", p->name, p->name);
            return -1;
        }
    }
    return 0;
}

/* How the commands and values make comparisons and their arms. The base
 * arms are the commands, after the --reference command when it is one
 * more: [reference,] command 1, command 2, ... */
typedef struct {
    size_t combos;         /* product of the value counts; 1 without */
    bool values_are_arms;  /* one command and values: one comparison */
    bool ref_added;        /* --reference is base arm 0 */
    size_t nbase;
    size_t subject;        /* the subject's base arm */
    size_t nbench, narms;
} s_layout_t;

static int
s_layout(const s_opts_t *o, s_layout_t *l)
{
    memset(l, 0, sizeof *l);
    l->combos = 1;
    if (o->reference) {
        size_t match = o->ncmds;
        for (size_t i = 0; !o->argv_form && i < o->ncmds; i++)
            if (strcmp(o->texts[i], o->reference) == 0)
                match = i;
        size_t others = match < o->ncmds ? o->ncmds - 1 : o->ncmds;
        if (others != 1) {
            cl_out_error(S_VERB, "--reference: parity compare judges one "
                         "command against the reference, found %zu (drop "
                         "--reference to judge the first command against "
                         "each other one)", others);
            return -1;
        }
        l->ref_added = match == o->ncmds;
        l->subject = l->ref_added ? 1 : 1 - match;
    }
    l->nbase = o->ncmds + l->ref_added;
    l->values_are_arms = l->nbase == 1 && o->nparams > 0;
    if (l->nbase < 2 && !l->values_are_arms) {
        cl_out_error(S_VERB, "expected at least two commands: parity compare "
                     "'CMD_A' 'CMD_B' (or -- CMD_A... -- CMD_B...)");
        return -1;
    }
    size_t limit = l->values_are_arms ? AG_SUITE_MAX_ARMS
                                      : AG_SUITE_MAX_BENCHMARKS;
    for (size_t i = 0; i < o->nparams; i++) {
        l->combos *= o->params[i].count;
        if (l->combos > limit) {
            cl_out_error(S_VERB, l->values_are_arms
                         ? "-L/-P: more than %zu values, the arms of one "
                           "comparison (one command)"
                         : "-L/-P: more than %zu combinations of values, one "
                           "comparison each", limit);
            return -1;
        }
    }
    if (l->values_are_arms && l->combos < 2) {
        cl_out_error(S_VERB, "one command and one value: nothing to compare "
                     "(give two values, or two commands)");
        return -1;
    }
    l->nbench = l->values_are_arms ? 1 : l->combos;
    l->narms = l->values_are_arms ? l->combos : l->nbase;
    /* -n: hyperfine's counts (at most one per command; with values once,
     * or once per command and value), or once per command. */
    size_t every = o->ncmds * l->combos;
    if (!o->nparams && o->nnames > o->ncmds) {
        cl_out_error(S_VERB, "-n given %zu times for %zu commands",
                     o->nnames, o->ncmds);
        return -1;
    }
    if (o->nparams && o->nnames > 1 && o->nnames != o->ncmds &&
        o->nnames != every) {
        cl_out_error(S_VERB, "-n given %zu times: once, once per command "
                     "(%zu) or once per command and value (%zu)", o->nnames,
                     o->ncmds, every);
        return -1;
    }
    for (size_t k = 0; k < S_HOOKS; k++)
        if (o->nhooks[k] > 1 && o->nhooks[k] != l->nbase) {
            cl_out_error(S_VERB, "%s given %zu times: once for all commands, "
                         "or once per command (%zu%s)", s_hook_opt[k],
                         o->nhooks[k], l->nbase,
                         l->ref_added ? ", the --reference first" : "");
            return -1;
        }
    return 0;
}

/* The suite being built: the parameter values of the current
 * combination, and the pool that owns every string made. */
typedef struct {
    const s_opts_t *o;
    s_pool_t pool;
    const char *pnames[S_MAX_PARAMS];
    const char *pvalues[S_MAX_PARAMS];
} s_build_t;

static void
s_set_combo(s_build_t *b, size_t combo)
{
    /* The first -L varies fastest, as in hyperfine. */
    for (size_t i = 0; i < b->o->nparams; i++) {
        const s_param_t *p = &b->o->params[i];
        b->pnames[i] = p->name;
        b->pvalues[i] = p->values[combo % p->count];
        combo /= p->count;
    }
}

static int
s_oom(void)
{
    cl_out_error(S_VERB, "out of memory, or more than %u MiB of commands "
                 "once the parameters are put in", S_MAX_BYTES >> 20);
    return -1;
}

/* tmpl with the current values put in, kept in the pool; NULL (said)
 * when too long. what names the option for the message. */
static char *
s_text(s_build_t *b, const char *tmpl, const char *what)
{
    char *out, err[256];
    if (cl_cmdline_subst(tmpl, b->pnames, b->pvalues, b->o->nparams, &out,
                         err, sizeof err) != CL_CMDLINE_OK) {
        cl_out_error(S_VERB, "%s: %s", what, err);
        return NULL;
    }
    if (!s_keep(&b->pool, out, strlen(out) + 1)) {
        s_oom();
        return NULL;
    }
    return out;
}

/* A command given as a string: run by the shell, or split (-N). */
static int
s_string_cmd(s_build_t *b, const char *tmpl, const char *what,
             ag_cmd_spec_t *spec)
{
    const s_opts_t *o = b->o;
    char err[256], **words;
    size_t n;
    const char *text = s_text(b, tmpl, what);
    if (!text)
        return -1;
    memset(spec, 0, sizeof *spec);
    if (o->shell == S_SHELL_SH) {
        spec->shell = text;
        return 0;
    }
    if (o->shell == S_SHELL_NONE) {
        if (cl_cmdline_split(text, &words, &n, err, sizeof err) != 0) {
            cl_out_error(S_VERB, "%s \"%s\": %s", what, text, err);
            return -1;
        }
        if (!s_keep(&b->pool, words, strlen(text) + n * sizeof *words))
            return s_oom();
        spec->argv = (const char *const *)words;
        spec->argc = n;
        return 0;
    }
    /* --shell SHELL: SHELL's words, -c, the command. */
    n = o->shell_argc + 2;
    const char **argv = s_keep(&b->pool, calloc(n + 1, sizeof *argv),
                               (n + 1) * sizeof *argv);
    if (!argv)
        return s_oom();
    for (size_t i = 0; i < o->shell_argc; i++)
        argv[i] = o->shell_argv[i];
    argv[n - 2] = "-c";
    argv[n - 1] = text;
    spec->argv = argv;
    spec->argc = n;
    return 0;
}

/* A command given as an argv after "--": each word with the values. */
static int
s_argv_cmd(s_build_t *b, char **words, size_t n, const char *what,
           ag_cmd_spec_t *spec)
{
    const char **argv = s_keep(&b->pool, calloc(n + 1, sizeof *argv),
                               (n + 1) * sizeof *argv);
    if (!argv)
        return s_oom();
    for (size_t i = 0; i < n; i++)
        if (!(argv[i] = s_text(b, words[i], what)))
            return -1;
    memset(spec, 0, sizeof *spec);
    spec->argv = argv;
    spec->argc = n;
    return 0;
}

/* A name for a reader and a key of the results file: cut to S_NAME_MAX
 * bytes, each byte that is not UTF-8 (a raw argv may hold any) made '?',
 * then "#2", "#3" for a repeat within the comparison, so two arms never
 * share a name. names[0..a-1] are the comparison's earlier arms. */
static char *
s_arm_name(s_build_t *b, const char *text, char *const *names, size_t a)
{
    char *name = s_keep(&b->pool, malloc(S_NAME_MAX + 16), S_NAME_MAX + 16);
    if (!name) {
        s_oom();
        return NULL;
    }
    size_t len = strlen(text);
    if (len > S_NAME_MAX)
        len = S_NAME_MAX;
    memcpy(name, text, len);
    name[len] = '\0';
    for (size_t k = 0; k < len;) {
        size_t u = pw_out_utf8_len((const unsigned char *)name + k);
        if (u == 0 || k + u > len)
            name[k++] = '?';
        else
            k += u;
    }
    unsigned same = 1;
    for (size_t i = 0; i < a; i++)
        if (strncmp(names[i], name, len) == 0 &&
            (names[i][len] == '\0' || names[i][len] == '#'))
            same++;
    if (same > 1)
        snprintf(name + len, 16, "#%u", same);
    return name;
}

/* The name -n gives the arm of command cmd in combination combo, or
 * NULL (named by its command line). */
static const char *
s_given_name(const s_opts_t *o, size_t cmd, size_t combo)
{
    if (!o->nparams)
        return cmd < o->nnames ? o->names[cmd] : NULL;
    if (o->nnames == 0)
        return NULL;
    if (o->nnames == 1)
        return o->names[0];
    if (o->nnames == o->ncmds)
        return o->names[cmd];
    return o->names[combo * o->ncmds + cmd];
}

/* Arm arm of comparison bench: its command, hooks and name. names holds
 * the comparison's arm names so far (for "#2"). */
static int
s_arm(s_build_t *b, const s_layout_t *l, size_t bench, size_t arm,
      ag_arm_spec_t *spec, char **names)
{
    const s_opts_t *o = b->o;
    size_t combo = l->values_are_arms ? arm : bench;
    size_t base = l->values_are_arms ? 0 : arm;
    bool is_ref = l->ref_added && base == 0;
    size_t cmd = base - l->ref_added;
    char what[64];
    const char *shown;
    s_set_combo(b, combo);
    memset(spec, 0, sizeof *spec);
    if (is_ref) {
        snprintf(what, sizeof what, "--reference");
        if (s_string_cmd(b, o->reference, what, &spec->cmd) != 0 ||
            !(shown = s_text(b, o->reference, what)))
            return -1;
    } else if (o->argv_form) {
        snprintf(what, sizeof what, "command %zu", cmd + 1);
        if (s_argv_cmd(b, o->words[cmd], o->nwords[cmd], what,
                       &spec->cmd) != 0)
            return -1;
        /* The name keeps the quoting the command needs to be typed. */
        size_t need = cl_cmdline_join(NULL, 0, spec->cmd.argv,
                                      spec->cmd.argc);
        char *joined = s_keep(&b->pool, malloc(need + 1), need + 1);
        if (!joined)
            return s_oom();
        cl_cmdline_join(joined, need + 1, spec->cmd.argv, spec->cmd.argc);
        shown = joined;
    } else {
        snprintf(what, sizeof what, "command %zu", cmd + 1);
        if (s_string_cmd(b, o->texts[cmd], what, &spec->cmd) != 0 ||
            !(shown = s_text(b, o->texts[cmd], what)))
            return -1;
    }
    const char *given = is_ref ? NULL : s_given_name(o, cmd, combo);
    if (given && !(shown = s_text(b, given, "-n")))
        return -1;
    if (!(names[arm] = s_arm_name(b, shown, names, arm)))
        return -1;
    spec->name = names[arm];
    ag_cmd_spec_t *hooks[S_HOOKS] = { &spec->setup, &spec->cleanup,
                                      &spec->prepare, &spec->conclude };
    for (size_t k = 0; k < S_HOOKS; k++) {
        if (!o->nhooks[k])
            continue;
        size_t h = o->nhooks[k] == 1 ? 0 : base;
        if (o->nhooks[k] == 1)
            snprintf(what, sizeof what, "%s", s_hook_opt[k]);
        else
            snprintf(what, sizeof what, "%s %zu", s_hook_opt[k], h + 1);
        if (s_string_cmd(b, o->hooks[k][h], what, hooks[k]) != 0)
            return -1;
    }
    return 0;
}

/* "compare", or "compare NAME=VALUE ..." for one of several. */
static char *
s_bench_name(s_build_t *b, const s_layout_t *l, size_t bench)
{
    size_t n = l->values_are_arms ? 0 : b->o->nparams, need = 8;
    s_set_combo(b, bench);
    for (size_t i = 0; i < n; i++)
        need += strlen(b->pnames[i]) + strlen(b->pvalues[i]) + 2;
    char *name = s_keep(&b->pool, malloc(need), need);
    if (!name) {
        s_oom();
        return NULL;
    }
    size_t len = (size_t)snprintf(name, need, "compare");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(name + len, need - len, " %s=%s",
                                b->pnames[i], b->pvalues[i]);
    return name;
}

/* The whole suite from the command line; NULL when something is wrong
 * (said). */
static ag_suite_t *
s_suite(s_build_t *b, const s_layout_t *l)
{
    const s_opts_t *o = b->o;
    char err[1024];
    char *names[AG_SUITE_MAX_ARMS];
    size_t nspecs = l->nbench * l->narms;
    ag_bench_spec_t *benches = s_keep(&b->pool,
        calloc(l->nbench, sizeof *benches), l->nbench * sizeof *benches);
    ag_arm_spec_t *arms = s_keep(&b->pool, calloc(nspecs, sizeof *arms),
                                 nspecs * sizeof *arms);
    if (!benches || !arms) {
        s_oom();
        return NULL;
    }
    for (size_t i = 0; i < l->nbench; i++) {
        ag_bench_spec_t *bs = &benches[i];
        if (!(bs->name = s_bench_name(b, l, i)))
            return NULL;
        bs->arms = arms + i * l->narms;
        bs->arm_count = l->narms;
        bs->subject = l->values_are_arms ? 0 : l->subject;
        for (size_t a = 0; a < l->narms; a++)
            if (s_arm(b, l, i, a, &arms[i * l->narms + a], names) != 0)
                return NULL;
        if (!l->values_are_arms && o->nparams) {
            /* s_arm left the comparison's own values in place. */
            const char **pv = s_keep(&b->pool,
                calloc(o->nparams, sizeof *pv), o->nparams * sizeof *pv);
            if (!pv) {
                s_oom();
                return NULL;
            }
            memcpy(pv, b->pvalues, o->nparams * sizeof *pv);
            bs->param_names = b->pnames;
            bs->param_values = pv;
            bs->param_count = o->nparams;
        }
    }
    ag_suite_t *suite = NULL;
    if (ag_suite_from_specs("compare", benches, l->nbench,
                            (unsigned)o->runs, (unsigned)o->warmup, &suite,
                            err, sizeof err) != AG_SUITE_OK) {
        cl_out_error(S_VERB, "%s", err);
        return NULL;
    }
    return suite;
}

int
cl_compare_main(int argc, char **argv)
{
    s_opts_t *o = calloc(1, sizeof *o);
    s_build_t b = { 0 };
    s_layout_t l;
    ag_suite_t *suite = NULL;
    int code = AG_EXIT_USAGE;
    if (!o) {
        cl_out_error(S_VERB, "out of memory");
        return AG_EXIT_SYSTEM;
    }
    o->runs = AG_SUITE_DEFAULT_RUNS;
    o->warmup = AG_SUITE_DEFAULT_WARMUP;
    o->copts = (ag_cli_opts_t){ .prog = "parity compare", .tool = "parity",
                                .parity = VD_DEFAULT_PARITY };
    int r = s_parse(o, argc, argv);
    if (r == 1) {
        fputs(s_usage, stdout);
        code = PW_EXIT_OK;
        if (fflush(stdout) != 0 || ferror(stdout)) {
            cl_out_error(S_VERB, "write to stdout failed");
            code = AG_EXIT_SYSTEM;
        }
        goto done;
    }
    if (r != 0 || s_values(o) != 0 || s_layout(o, &l) != 0)
        goto done;
    b.o = o;
    for (size_t i = 0; i < o->nparams; i++)
        b.pnames[i] = o->params[i].name;
    if (!(suite = s_suite(&b, &l)))
        goto done;
    /* The names, commands and hooks are copied into the suite. */
    s_pool_free(&b.pool);
    ag_harness_opts_t hopts = { .warmup = -1, .runs_auto = o->runs_auto,
                                .max_runs = (unsigned)o->max_runs };
    code = ag_cli_session(suite, &hopts, &o->copts);
done:
    ag_suite_destroy(&suite);
    s_pool_free(&b.pool);
    for (size_t i = 0; i < o->nparams; i++)
        free(o->params[i].values);
    free(o->shell_argv);
    free(o);
    return code;
}
