/* parity.c -- the user's command: dispatch to the verbs of cl_verbs.h.
 *
 *   parity VERB [options]      run a verb
 *   parity help [VERB]         the verb list, or one verb's usage
 *   parity VERB --help         the same
 *   parity --version
 *
 * Exit codes are PW_EXIT_* (pw_out.h, docs/commands/README.md).
 */
#include "cl_out.h"
#include "pw_out.h"
#include "cl_verbs.h"
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} s_verb_t;

#define S_VERB_ENTRY(name, summary) {#name, cl_##name##_main, summary},
static const s_verb_t s_verbs[] = {CL_VERBS(S_VERB_ENTRY)};
#undef S_VERB_ENTRY
#define S_VERB_COUNT (sizeof s_verbs / sizeof s_verbs[0])

static void
s_usage(FILE *f)
{
    fprintf(f, "usage: parity VERB [options]\n"
               "       parity help VERB | parity VERB --help\n"
               "       parity --version\n\n"
               "Benchmark verdicts (win, parity, loss) that tell a real "
               "difference from noise.\n\nverbs:\n");
    for (size_t i = 0; i < S_VERB_COUNT; i++)
        fprintf(f, "  %-12s %s\n", s_verbs[i].name, s_verbs[i].summary);
    fprintf(f, "\nexit status: 0 done, 1 bad data (samples, batch line, "
               "file), 2 usage error,\n3 system error (memory, output). "
               "See docs/commands/README.md.\n");
}

/* Exit status after printing to stdout: a closed or full stdout is a
 * system error, not a silent success. */
static int
s_flushed(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cl_out_error(NULL, "writing stdout: %s", strerror(errno));
        return PW_EXIT_SYSTEM;
    }
    return PW_EXIT_OK;
}

static const s_verb_t *
s_find(const char *name)
{
    for (size_t i = 0; i < S_VERB_COUNT; i++)
        if (strcmp(s_verbs[i].name, name) == 0)
            return &s_verbs[i];
    return NULL;
}

static int
s_unknown(const char *name)
{
    cl_out_error(NULL, "unknown verb \"%s\" (parity --help lists them)",
                 name);
    return PW_EXIT_USAGE;
}

int
main(int argc, char **argv)
{
    const s_verb_t *verb;

    if (argc < 2) {
        s_usage(stderr);
        return PW_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        (strcmp(argv[1], "help") == 0 && argc == 2)) {
        s_usage(stdout);
        return s_flushed();
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("parity %s\n", PARITY_VERSION);
        return s_flushed();
    }
    if (strcmp(argv[1], "help") == 0) {
        char help[] = "--help";
        char *hargv[3] = {argv[2], help, NULL};
        if (argc > 3) {
            cl_out_error(NULL, "help takes one verb, got %d", argc - 2);
            return PW_EXIT_USAGE;
        }
        if (!(verb = s_find(argv[2])))
            return s_unknown(argv[2]);
        return verb->run(2, hargv);
    }
    if (argv[1][0] == '-') {
        cl_out_error(NULL, "unknown option \"%s\" (parity --help)", argv[1]);
        return PW_EXIT_USAGE;
    }
    if (!(verb = s_find(argv[1])))
        return s_unknown(argv[1]);
    return verb->run(argc - 1, argv + 1);
}
