/* test_conffile.c -- pw_conffile, the daemons' configuration files: the
 * entries of a file in order with their lines, --config taken out of
 * argv, a missing file (allowed or not), and each refusal's text naming
 * the file and line: an unknown or repeated key, a list or an empty
 * value, a file that is not a mapping, YAML syntax. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pw_conffile.h"
#include "tap.h"

static const char *const s_keys[] = { "bind", "heartbeat-ms", "name", NULL };
static char s_path[64];

static int
s_load(const char *text, pw_conffile_t **c, char *err, size_t len)
{
    FILE *f = fopen(s_path, "w");
    fputs(text, f);
    fclose(f);
    err[0] = '\0';
    return pw_conffile_load(s_path, s_keys, true, c, err, len);
}

/* The refusal of text: its error after "PATH:". */
static const char *
s_refused(const char *text, char *err, size_t len)
{
    pw_conffile_t *c = NULL;
    if (s_load(text, &c, err, len) == PW_CONFFILE_OK || c) {
        pw_conffile_destroy(&c);
        return "(accepted)";
    }
    size_t n = strlen(s_path);
    return strncmp(err, s_path, n) == 0 ? err + n : err;
}

int
main(void)
{
    char err[512], where[128];
    snprintf(s_path, sizeof s_path, "/tmp/parity-conffile-%d.yaml",
             (int)getpid());
    pw_conffile_t *c = NULL;
    ok(s_load("# the collector\nbind: tcp://0.0.0.0:5555\n\nheartbeat-ms: "
              "200\n", &c, err, sizeof err) == PW_CONFFILE_OK && c,
       "a file of two keys (%s)", err);
    ok(pw_conffile_count(c) == 2, "two entries");
    const pw_conffile_entry_t *e = pw_conffile_entry(c, 1);
    ok(e && strcmp(e->key, "heartbeat-ms") == 0 && strcmp(e->value, "200")
       == 0 && e->line == 4, "in file order, with their line (%u)",
       e ? e->line : 0);
    pw_conffile_where(c, e, where, sizeof where);
    char want[128];
    snprintf(want, sizeof want, "%s:4", s_path);
    ok(strcmp(where, want) == 0, "where: FILE:LINE (%s)", where);
    pw_conffile_destroy(&c);
    ok(c == NULL, "destroy clears");

    ok(strcmp(s_refused("port: 5\n", err, sizeof err),
              ":1: unknown key \"port\"") == 0, "an unknown key: %s", err);
    ok(strncmp(s_refused("name: a\nname: b\n", err, sizeof err),
               ":2: name given twice (first at line 1)", 38) == 0,
       "a key given twice: %s", err);
    ok(strncmp(s_refused("bind: [a, b]\n", err, sizeof err),
               ":1: bind: want one value, not a list", 36) == 0,
       "a list: %s", err);
    ok(strncmp(s_refused("name:\n", err, sizeof err), ":1: name: no value",
               18) == 0, "an empty value: %s", err);
    ok(strncmp(s_refused("- a\n- b\n", err, sizeof err),
               ":1: want a mapping of option: value", 35) == 0,
       "a list at the top: %s", err);
    ok(strncmp(s_refused("bind: \"unterminated\n", err, sizeof err), ":",
               1) == 0 && strcmp(err, "(accepted)") != 0,
       "YAML syntax, with its line: %s", err);

    unlink(s_path);
    ok(pw_conffile_load(s_path, s_keys, false, &c, err, sizeof err) ==
       PW_CONFFILE_OK && c && pw_conffile_count(c) == 0,
       "a missing file that may be missing: empty");
    pw_conffile_destroy(&c);
    ok(pw_conffile_load(s_path, s_keys, true, &c, err, sizeof err) ==
       PW_CONFFILE_ERR && !c && strstr(err, "No such file"),
       "one that must exist: %s", err);

    char a0[] = "parity-agent", a1[] = "--config", a2[] = "x.yaml",
         a3[] = "--name", a4[] = "n", a5[] = "--config=y.yaml";
    char *argv[] = { a0, a1, a2, a3, a4, a5, NULL };
    int argc = 6;
    const char *path = NULL;
    ok(pw_conffile_take_arg(&argc, argv, &path, err, sizeof err) == 0
       && argc == 3 && path && strcmp(path, "y.yaml") == 0
       && strcmp(argv[1], "--name") == 0 && strcmp(argv[2], "n") == 0,
       "--config taken out of argv, the last one winning (%s)",
       path ? path : "none");
    char b0[] = "p", b1[] = "--config";
    char *argv2[] = { b0, b1, NULL };
    argc = 2;
    ok(pw_conffile_take_arg(&argc, argv2, &path, err, sizeof err) != 0
       && strcmp(err, "--config needs a FILE") == 0,
       "--config without its FILE: %s", err);
    return tap_done();
}
