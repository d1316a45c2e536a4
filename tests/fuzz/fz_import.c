/* fz_import.c -- libFuzzer target: `parity import hyperfine` and
 * `parity import gbench`.
 *
 * The input is the command line's format word and options on its first
 * line, then the file(s):
 *
 *   hyperfine --json
 *   {"results": [...]}
 *
 *   gbench
 *   {baseline...}
 *   --8<--
 *   {contender...}
 *
 * The files are written to memfds and handed to cl_import_main by their
 * /proc/self/fd path, so the whole verb runs as a user runs it: its own
 * bounded reader (s_load), both importers, the rule and the printers.
 * stdout goes to /dev/null (a closed stdout would end the verb at its
 * first printf); its error lines go to stderr, which run.sh closes with
 * -close_fd_mask=2.
 */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cl_verbs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_ARGS_MAX 8
#define S_SCISSORS "\n--8<--\n"

static int s_fd[2] = { -1, -1 };
static char s_path[2][64];

/* Replace the memfd's contents with buf[0..len). */
static void
s_fill(int i, const char *buf, size_t len)
{
    if (ftruncate(s_fd[i], 0) != 0
        || (len && pwrite(s_fd[i], buf, len, 0) != (ssize_t)len))
        abort();
}

static void
s_init(void)
{
    for (int i = 0; i < 2; i++) {
        s_fd[i] = memfd_create("fz-import", 0);
        if (s_fd[i] < 0)
            abort();
        snprintf(s_path[i], sizeof s_path[i], "/proc/self/fd/%d", s_fd[i]);
    }
    if (!freopen("/dev/null", "w", stdout))
        abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[S_ARGS_MAX + 4];
    int argc = 0;

    if (s_fd[0] < 0)
        s_init();
    const char *text = (const char *)data, *end = text + size;
    const char *nl = memchr(text, '\n', size);
    if (!nl || nl - text > 256)
        return 0;
    char head[257];
    memcpy(head, text, (size_t)(nl - text));
    head[nl - text] = '\0';
    argv[argc++] = "import";
    for (char *save = NULL, *w = strtok_r(head, " ", &save);
         w && argc < S_ARGS_MAX; w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    /* The body: one file, or two around the scissors line. */
    const char *body = nl + 1;
    const char *cut = memmem(body, (size_t)(end - body), S_SCISSORS,
                             strlen(S_SCISSORS));
    if (cut) {
        s_fill(0, body, (size_t)(cut - body));
        const char *second = cut + strlen(S_SCISSORS);
        s_fill(1, second, (size_t)(end - second));
        argv[argc++] = s_path[0];
        argv[argc++] = s_path[1];
    } else {
        s_fill(0, body, (size_t)(end - body));
        argv[argc++] = s_path[0];
    }
    argv[argc] = NULL;
    (void)cl_import_main(argc, argv);
    fflush(stdout);
    return 0;
}
