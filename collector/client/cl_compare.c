/* cl_compare.c -- `parity compare`: a quick interleaved comparison of
 * two or more commands on this machine, through the same harness as
 * `parity-agent run` (docs/commands/compare.md).
 *
 *   parity compare [--runs N] [--warmup N] [--json] [--export-json FILE]
 *                  -- CMD_A... -- CMD_B... [-- CMD_C...]
 *
 * The first command is the subject. Each command is an argv, run without
 * a shell. Exit codes: AG_EXIT_* of agent/ag_cli.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_cli.h"
#include "ag_suite.h"
#include "cl_out.h"
#include "cl_verbs.h"

#define S_VERB "compare"
/* An arm's name is its command line, cut to this many bytes. */
#define S_NAME_MAX 64

static const char s_usage[] =
    "usage: parity compare [--runs N] [--warmup N] [--json] "
    "[--export-json FILE]\n"
    "                      -- CMD_A... -- CMD_B... [-- CMD_C...]\n"
    "\n"
    "Run the commands in interleaved rounds (A B, B A, ...) after warm-ups,\n"
    "with one calibration run of a no-op per round, and print per command\n"
    "n, min, median, max and IQR and the verdict of the first command (the\n"
    "subject) against each other one. Commands run without a shell.\n"
    "\n"
    "  --runs N            measured rounds (default 10, 1..100000)\n"
    "  --warmup N          warm-up rounds (default 1, 0..10000)\n"
    "  --json              the results file (schema 3) on stdout instead\n"
    "  --export-json FILE  also write the results file to FILE\n"
    "\n"
    "exit status: 0 done (any verdict), 2 usage, 3 system error, 4 a "
    "command\n"
    "failed (wrong exit status, signal, timeout), 130 interrupted.\n"
    "See docs/commands/compare.md.\n";

int
cl_compare_main(int argc, char **argv)
{
    unsigned long runs = AG_SUITE_DEFAULT_RUNS;
    unsigned long warmup = AG_SUITE_DEFAULT_WARMUP;
    ag_cli_opts_t copts = { .prog = "parity compare", .tool = "parity",
                            .parity = VD_DEFAULT_PARITY };
    char **cmds[AG_SUITE_MAX_ARMS];
    size_t argcs[AG_SUITE_MAX_ARMS];
    char names[AG_SUITE_MAX_ARMS][S_NAME_MAX + 16];
    const char *name_ptrs[AG_SUITE_MAX_ARMS];
    size_t narms = 0;
    char err[1024];
    int i;

    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(s_usage, stdout);
            if (fflush(stdout) != 0 || ferror(stdout)) {
                cl_out_error(S_VERB, "write to stdout failed");
                return AG_EXIT_SYSTEM;
            }
            return CL_EXIT_OK;
        }
        if (strcmp(a, "--json") == 0) {
            copts.json = true;
            continue;
        }
        bool takes = strcmp(a, "--runs") == 0 || strcmp(a, "--warmup") == 0 ||
                     strcmp(a, "--export-json") == 0;
        if (!takes) {
            cl_out_error(S_VERB, "unknown option \"%s\" (parity compare "
                         "--help)", a);
            return AG_EXIT_USAGE;
        }
        if (i + 1 >= argc || strcmp(argv[i + 1], "--") == 0) {
            cl_out_error(S_VERB, "%s needs a value", a);
            return AG_EXIT_USAGE;
        }
        const char *v = argv[++i];
        if (strcmp(a, "--runs") == 0) {
            if (ag_cli_uint(v, 1, AG_SUITE_MAX_RUNS, &runs) != 0) {
                cl_out_error(S_VERB, "--runs %s: expected an integer from 1 "
                             "to %d", v, AG_SUITE_MAX_RUNS);
                return AG_EXIT_USAGE;
            }
        } else if (strcmp(a, "--warmup") == 0) {
            if (ag_cli_uint(v, 0, AG_SUITE_MAX_WARMUP, &warmup) != 0) {
                cl_out_error(S_VERB, "--warmup %s: expected an integer from "
                             "0 to %d", v, AG_SUITE_MAX_WARMUP);
                return AG_EXIT_USAGE;
            }
        } else {
            copts.export_path = v;
        }
    }
    /* The commands: each starts after a "--" and ends at the next. */
    while (i < argc) {
        int start = ++i;
        while (i < argc && strcmp(argv[i], "--") != 0)
            i++;
        if (i == start) {
            cl_out_error(S_VERB, "command %zu is empty: put the command "
                         "after \"--\"", narms + 1);
            return AG_EXIT_USAGE;
        }
        if (argv[start][0] == '\0') {
            cl_out_error(S_VERB, "command %zu: the program name is empty",
                         narms + 1);
            return AG_EXIT_USAGE;
        }
        if (narms >= AG_SUITE_MAX_ARMS) {
            cl_out_error(S_VERB, "more than %d commands", AG_SUITE_MAX_ARMS);
            return AG_EXIT_USAGE;
        }
        cmds[narms] = argv + start;
        argcs[narms] = (size_t)(i - start);
        narms++;
    }
    if (narms < 2) {
        cl_out_error(S_VERB, "expected at least two commands: parity "
                     "compare -- CMD_A... -- CMD_B...");
        return AG_EXIT_USAGE;
    }
    /* Name each arm by its command line; a repeat gets "#2", "#3". */
    for (size_t a = 0; a < narms; a++) {
        size_t len = 0;
        names[a][0] = '\0';
        for (size_t w = 0; w < argcs[a] && len < S_NAME_MAX; w++)
            len += (size_t)snprintf(names[a] + len, S_NAME_MAX + 1 - len,
                                    "%s%s", w ? " " : "", cmds[a][w]);
        if (len > S_NAME_MAX)
            len = S_NAME_MAX;
        names[a][len] = '\0';
        /* The name keys the summary and the verdict in the results file,
         * which is UTF-8: a byte that is not (a raw argv may hold any) is
         * made '?' here, before the "#2" of a repeat, so two commands
         * never share a name; the cut at 64 bytes may split a sequence
         * too. */
        for (size_t k = 0; k < len;) {
            size_t u = cl_out_utf8_len((const unsigned char *)names[a] + k);
            if (u == 0 || k + u > len)
                names[a][k++] = '?';
            else
                k += u;
        }
        unsigned same = 1;
        for (size_t b = 0; b < a; b++)
            if (strncmp(names[b], names[a], len) == 0 &&
                (names[b][len] == '\0' || names[b][len] == '#'))
                same++;
        if (same > 1)
            snprintf(names[a] + len, 16, "#%u", same);
        name_ptrs[a] = names[a];
    }
    ag_suite_t *suite = NULL;
    if (ag_suite_from_argv("compare", "compare", cmds, argcs, narms,
                           name_ptrs, (unsigned)runs, (unsigned)warmup,
                           &suite, err, sizeof err) != AG_SUITE_OK) {
        cl_out_error(S_VERB, "%s", err);
        return AG_EXIT_USAGE;
    }
    ag_harness_opts_t hopts = { .warmup = -1 };
    int code = ag_cli_session(suite, &hopts, &copts);
    ag_suite_destroy(&suite);
    return code;
}
