/* test_co_tokens.c -- co_tokens: the tokens file's every refusal with
 * its file and line, the roles, a token found in constant time whatever
 * its place, the file read again when it changes (the last good set
 * kept when it no longer reads), and the permissions it wants. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "co_tokens.h"
#include "tap.h"

#define A "alpha-0123456789abcdef"
#define B "bravo-fedcba9876543210"

static void
check_parse(const char *text, const char *want)
{
    char err[400] = "";
    size_t n = 0;
    int rc = co_tokens_parse("t", text, strlen(text), &n, err, sizeof err);
    if (!want)
        ok(rc == 0, "reads: %.40s (%s)", text, err);
    else
        ok(rc == -1 && strcmp(err, want) == 0, "refused: %s (%s)", want, err);
}

static void
write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

int
main(void)
{
    size_t n = 0;
    char err[400], name[CO_TOKENS_NAME_MAX + 1], why[600];
    const char *good = "# who role token\n\nci read " A "\r\n"
                       "  ops\ttriage  " B "\n";
    ok(co_tokens_parse("t", good, strlen(good), &n, err, sizeof err) == 0
       && n == 2, "comments, blank lines, tabs and CRLF: 2 tokens (%zu)", n);
    check_parse("ci\n", "t:1: want NAME ROLE TOKEN");
    check_parse("ci read\n", "t:1: want NAME ROLE TOKEN");
    check_parse("ci read " A " extra\n",
                "t:1: want NAME ROLE TOKEN, and nothing after the token");
    check_parse("c/i read " A "\n", "t:1: name \"c/i\": want 1 to 64 "
                "letters, digits, '.', '_' or '-'");
    check_parse("ci admin " A "\n",
                "t:1: role \"admin\" of ci: want read or triage");
    check_parse("\nci read short\n",
                "t:2: the token of ci has 5 characters: want 16 to 256");
    check_parse("ci read " A "\nci read " B "\n", "t:2: name ci given twice");
    check_parse("ci read " A "\nops triage " A "\n",
                "t:2: the token of ops is also ci's");
    check_parse("ci read \x01" A "\n", "t:1: the token of ci: want "
                "printable ASCII characters without spaces");
    static const char nul[] = "ci read " A "\0x\n";
    ok(co_tokens_parse("t", nul, sizeof nul - 1, &n, err, sizeof err) == -1
       && strcmp(err, "t: a NUL byte: not a tokens file") == 0,
       "a NUL byte: refused (%s)", err);

    char dir[] = "/tmp/test-co-tokens-XXXXXX", path[300];
    ok(mkdtemp(dir) != NULL, "a temporary directory");
    snprintf(path, sizeof path, "%s/tokens", dir);
    write_file(path, good, 0644);
    co_tokens_t *t = co_tokens_new(path, err, sizeof err);
    char want[700];
    snprintf(want, sizeof want, "%s: others may read it (its tokens are "
             "secrets): chmod o-r %s", path, path);
    ok(!t && strcmp(err, want) == 0, "a file others may read is refused "
       "(%s)", err);
    chmod(path, 0600);
    t = co_tokens_new(path, err, sizeof err);
    ok(t && co_tokens_count(t) == 2, "mode 0600: read, 2 tokens");
    int64_t now = 1000000;
    ok(co_tokens_check(t, A, strlen(A), now, name, why, sizeof why)
       == CO_ROLE_READ && strcmp(name, "ci") == 0 && !why[0],
       "ci's token: read, named ci");
    ok(co_tokens_check(t, B, strlen(B), now, name, why, sizeof why)
       == CO_ROLE_TRIAGE && strcmp(name, "ops") == 0, "ops's: triage");
    ok(co_tokens_check(t, A, strlen(A) - 1, now, name, why, sizeof why)
       == CO_ROLE_NONE && !name[0], "a prefix of a token: none");
    ok(co_tokens_check(t, "", 0, now, name, why, sizeof why)
       == CO_ROLE_NONE, "an empty token: none");
    ok(strcmp(co_role_name(CO_ROLE_TRIAGE), "triage") == 0 &&
       strcmp(co_role_name(CO_ROLE_READ), "read") == 0 &&
       strcmp(co_role_name(CO_ROLE_NONE), "none") == 0, "role names");

    /* Rewritten: read again once CO_TOKENS_RECHECK_MS has passed. */
    write_file(path, "ci triage " A "\n", 0600);
    ok(co_tokens_check(t, B, strlen(B), now + 10, name, why, sizeof why)
       == CO_ROLE_TRIAGE, "within the recheck interval: the old set");
    now += CO_TOKENS_RECHECK_MS;
    ok(co_tokens_check(t, A, strlen(A), now, name, why, sizeof why)
       == CO_ROLE_TRIAGE && co_tokens_count(t) == 1,
       "rewritten: ci is triage now, ops gone");
    ok(co_tokens_check(t, B, strlen(B), now, name, why, sizeof why)
       == CO_ROLE_NONE, "ops's token: none");
    write_file(path, "ci read short-one\nbroken\n", 0600);
    now += CO_TOKENS_RECHECK_MS;
    co_role_t r = co_tokens_check(t, A, strlen(A), now, name, why,
                                  sizeof why);
    snprintf(want, sizeof want, "%s:1: the token of ci has 9 characters: "
             "want 16 to 256", path);
    ok(r == CO_ROLE_TRIAGE && strcmp(why, want) == 0,
       "a file that no longer reads: said once (%s), the last good set "
       "kept", why);
    now += CO_TOKENS_RECHECK_MS;
    co_tokens_check(t, A, strlen(A), now, name, why, sizeof why);
    ok(!why[0], "and not said again while it stays the same");
    co_tokens_destroy(&t);
    ok(t == NULL, "destroy sets NULL");
    co_tokens_destroy(&t);

    unlink(path);
    t = co_tokens_new(path, err, sizeof err);
    snprintf(want, sizeof want, "%s: No such file or directory", path);
    ok(!t && strcmp(err, want) == 0, "a missing file (%s)", err);
    rmdir(dir);
    return tap_done();
}
