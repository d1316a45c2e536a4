/* test_suite.c -- ag_suite: what a valid file turns into, and every error
 * message a suite file can produce, pinned with its line and column. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "ag_suite.h"
#include "pw_clock.h"
#include "tap.h"

#define ARMS2 \
    "    arms:\n" \
    "      - name: a\n" \
    "        command: [/bin/true]\n" \
    "      - name: b\n" \
    "        command: [/bin/true]\n"

typedef struct {
    const char *yaml;
    const char *want;   /* the whole message */
} bad_t;

static const bad_t s_bad[] = {
    { "", "t.yaml:1:1: expected a mapping with suite: and benchmarks:, "
          "found an empty file" },
    { "suite: [x\n", "t.yaml:2:1: YAML syntax: did not find expected ',' or "
      "']' while parsing a flow sequence" },
    { "- a\n- b\n", "t.yaml:1:1: expected a mapping with suite: and "
      "benchmarks: at the top, found a list" },
    { "suite: s\nbenchmark: []\n", "t.yaml:2:1: unknown key \"benchmark\" in "
      "the suite (expected one of: suite, revision, variables, defaults, "
      "benchmarks)" },
    { "suite: s\nsuite: t\n", "t.yaml:2:1: duplicate key \"suite\" in the "
      "suite" },
    { "benchmarks: []\n", "t.yaml:1:1: missing key \"suite\" (the suite's "
      "name)" },
    { "suite: [a]\n", "t.yaml:1:8: suite: expected a string, found a list" },
    { "suite: ''\n", "t.yaml:1:8: suite: expected a non-empty name" },
    { "suite: s\n", "t.yaml:1:1: missing key \"benchmarks\"" },
    { "suite: s\nbenchmarks: {}\n", "t.yaml:2:13: benchmarks: expected a "
      "list of benchmarks, found a mapping" },
    { "suite: s\nbenchmarks: []\n", "t.yaml:2:13: benchmarks: expected at "
      "least one benchmark, found an empty list" },
    { "suite: s\nbenchmarks:\n  - x\n", "t.yaml:3:5: benchmarks: expected a "
      "mapping with name: and arms:, found a scalar" },
    { "suite: s\nbenchmarks:\n  - runs: 3\n", "t.yaml:3:5: benchmark: "
      "missing key \"name\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    colour: red\n",
      "t.yaml:4:5: unknown key \"colour\" in a benchmark (expected one of: "
      "name, arms, runs, max_runs, warmup, timeout, stdout, stderr, "
      "expect_exit, cpus, versions, metrics)" },
    { "suite: s\nbenchmarks:\n  - name: x\n",
      "t.yaml:3:5: benchmark \"x\": missing key \"arms\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms: a\n",
      "t.yaml:4:11: arms: expected a list of at least 2 arms, found a "
      "scalar" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [/bin/true]\n",
      "t.yaml:5:7: benchmark \"x\": expected at least 2 arms, found 1" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - a\n      - b\n",
      "t.yaml:5:9: arms: expected a mapping with name: and command: or "
      "shell:, found a scalar" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - command: [a]\n"
      "      - name: b\n",
      "t.yaml:5:9: arm: missing key \"name\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        cmd: [a]\n      - name: b\n",
      "t.yaml:6:9: unknown key \"cmd\" in an arm (expected one of: name, "
      "subject, command, shell, cwd, env, setup, cleanup, prepare, conclude, "
      "versions)" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "      - name: b\n",
      "t.yaml:5:9: arm \"a\": missing key \"command\" (an argv list) or "
      "\"shell\" (a string)" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [a]\n        shell: a\n      - name: b\n",
      "t.yaml:7:16: arm \"a\": give command: (an argv list) or shell: (a "
      "string), not both" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: a b\n      - name: b\n",
      "t.yaml:6:18: command: expected a list of strings (the argv), found a "
      "scalar" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: []\n      - name: b\n",
      "t.yaml:6:18: command: expected at least the program name, found an "
      "empty list" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: ['']\n      - name: b\n",
      "t.yaml:6:19: command: the program name is empty" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [[a]]\n      - name: b\n",
      "t.yaml:6:19: command: expected a string, found a list" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        shell: [a]\n      - name: b\n",
      "t.yaml:6:16: shell: expected a string, found a list" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [a, \"${size}\"]\n      - name: b\n"
      "        command: [b]\n",
      "t.yaml:6:22: command: undefined variable ${size} (give --var "
      "size=VALUE or set it under variables:)" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [a, \"${size\"]\n      - name: b\n",
      "t.yaml:6:22: command: unterminated \"${\" in \"${size\" (write $${ "
      "for a literal ${)" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [a, \"${}\"]\n      - name: b\n",
      "t.yaml:6:22: command: expected a variable name inside ${} in \"${}\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [a, \"${1x}\"]\n      - name: b\n",
      "t.yaml:6:22: command: \"1x\" is not a variable name (letters, digits "
      "and _, not starting with a digit)" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [a, \"a\\0b\"]\n      - name: b\n",
      "t.yaml:6:22: command: contains a NUL byte" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        subject: yes\n        command: [a]\n      - name: b\n",
      "t.yaml:6:18: subject: expected true or false, found \"yes\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        subject: true\n        command: [a]\n      - name: b\n"
      "        subject: true\n        command: [b]\n",
      "t.yaml:8:9: benchmark \"x\": arms \"a\" and \"b\" are both marked "
      "subject: true" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [a]\n      - name: a\n        command: [b]\n",
      "t.yaml:7:9: benchmark \"x\": two arms named \"a\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n" ARMS2 "  - name: x\n" ARMS2,
      "t.yaml:9:5: two benchmarks named \"x\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    runs: 0\n" ARMS2,
      "t.yaml:4:11: runs: expected auto or an integer from 2 to 100000, found "
      "\"0\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    runs: 1\n" ARMS2,
      "t.yaml:4:11: runs: expected auto or an integer from 2 to 100000, found "
      "\"1\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    runs: 100001\n" ARMS2,
      "t.yaml:4:11: runs: expected auto or an integer from 2 to 100000, found "
      "\"100001\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    runs: ten\n" ARMS2,
      "t.yaml:4:11: runs: expected auto or an integer from 2 to 100000, found "
      "\"ten\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    runs: [1]\n" ARMS2,
      "t.yaml:4:11: runs: expected auto or an integer from 2 to 100000, found a "
      "list" },
    { "suite: s\nbenchmarks:\n  - name: x\n    warmup: -1\n" ARMS2,
      "t.yaml:4:13: warmup: expected an integer from 0 to 10000, found "
      "\"-1\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    timeout: 0\n" ARMS2,
      "t.yaml:4:14: timeout: expected seconds above 0 and at most 86400, "
      "found \"0\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    timeout: {}\n" ARMS2,
      "t.yaml:4:14: timeout: expected seconds above 0 and at most 86400, "
      "found a mapping" },
    { "suite: s\nbenchmarks:\n  - name: x\n    expect_exit: 256\n" ARMS2,
      "t.yaml:4:18: expect_exit: expected an integer from 0 to 255, found "
      "\"256\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    stdout: ''\n" ARMS2,
      "t.yaml:4:13: stdout: expected \"discard\" or a file path, found an "
      "empty string" },
    { "suite: s\nbenchmarks:\n  - name: x\n    stderr: [a]\n" ARMS2,
      "t.yaml:4:13: stderr: expected \"discard\" or a file path, found a "
      "list" },
    { "suite: s\nbenchmarks:\n  - name: x\n    cpus: 1-0\n" ARMS2,
      "t.yaml:4:11: cpus: cpu list \"1-0\": expected a range end >= 1" },
    { "suite: s\nbenchmarks:\n  - name: x\n    cpus: 5000\n" ARMS2,
      "t.yaml:4:11: cpus: cpu list \"5000\": CPU 5000 is not below 1024" },
    { "suite: s\nbenchmarks:\n  - name: x\n    cpus: 0;1\n" ARMS2,
      "t.yaml:4:11: cpus: cpu list \"0;1\": unexpected ';'" },
    { "suite: s\nbenchmarks:\n  - name: x\n    metrics: [wall, rss]\n"
      ARMS2,
      "t.yaml:4:21: metrics: unknown metric \"rss\" (want wall, cpu or "
      "peak_rss)" },
    { "suite: s\ndefaults:\n  metrics: [cpu, cpu]\nbenchmarks:\n"
      "  - name: x\n" ARMS2,
      "t.yaml:3:18: metrics: \"cpu\" is listed twice" },
    { "suite: s\nbenchmarks:\n  - name: x\n    metrics: wall\n" ARMS2,
      "t.yaml:4:14: metrics: expected a list of wall, cpu and peak_rss, "
      "found a scalar" },
    { "suite: s\nbenchmarks:\n  - name: x\n    metrics: []\n" ARMS2,
      "t.yaml:4:14: metrics: expected at least one of wall, cpu and "
      "peak_rss" },
    { "suite: s\nbenchmarks:\n  - name: x\n    metrics: [[wall]]\n" ARMS2,
      "t.yaml:4:15: metrics: expected a metric name (wall, cpu or "
      "peak_rss), found a list" },
    { "suite: s\nbenchmarks:\n  - name: x\n    cpus: []\n" ARMS2,
      "t.yaml:4:11: cpus: expected at least one CPU" },
    { "suite: s\nbenchmarks:\n  - name: x\n    cpus: {a: 1}\n" ARMS2,
      "t.yaml:4:11: cpus: expected a CPU list such as \"0-3,6\" or a list of "
      "CPU numbers, found a mapping" },
    { "suite: s\nbenchmarks:\n  - name: x\n    versions: cc --version\n"
      ARMS2,
      "t.yaml:4:15: versions: expected a list of commands, found a scalar" },
    { "suite: s\nbenchmarks:\n  - name: x\n    versions: [{a: b}]\n" ARMS2,
      "t.yaml:4:16: versions: expected a shell string or an argv list, "
      "found a mapping" },
    { "suite: s\ndefaults: []\nbenchmarks: []\n",
      "t.yaml:2:11: defaults: expected a mapping, found a list" },
    { "suite: s\ndefaults:\n  arms: []\nbenchmarks: []\n",
      "t.yaml:3:3: unknown key \"arms\" in defaults (expected one of: runs, "
      "max_runs, warmup, timeout, stdout, stderr, expect_exit, cpus, "
      "versions, metrics)" },
    { "suite: s\nbenchmarks:\n  - name: x\n    runs: Auto\n" ARMS2,
      "t.yaml:4:11: runs: expected auto or an integer from 2 to 100000, "
      "found \"Auto\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    max_runs: 1\n" ARMS2,
      "t.yaml:4:15: max_runs: expected an integer from 2 to 100000, found "
      "\"1\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    max_runs: auto\n" ARMS2,
      "t.yaml:4:15: max_runs: expected an integer from 2 to 100000, found "
      "\"auto\"" },
    { "suite: s\nvariables: [a]\nbenchmarks: []\n",
      "t.yaml:2:12: variables: expected a mapping of name: value, found a "
      "list" },
    { "suite: s\nvariables: {a-b: 1}\nbenchmarks: []\n",
      "t.yaml:2:13: variables: \"a-b\" is not a variable name (letters, "
      "digits and _, not starting with a digit)" },
    { "suite: s\nvariables: {a: [1]}\nbenchmarks: []\n",
      "t.yaml:2:16: variables: expected a string, found a list" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [a]\n        env: [A]\n      - name: b\n",
      "t.yaml:7:14: env: expected a mapping of NAME: value, found a list" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [a]\n        env: {A B: 1}\n      - name: b\n",
      "t.yaml:7:15: env: \"A B\" is not a variable name (letters, digits and "
      "_, not starting with a digit)" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [a]\n        prepare: {x: 1}\n      - name: b\n",
      "t.yaml:7:18: prepare: expected a shell string or an argv list, found "
      "a mapping" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: ''\n"
      "        command: [a]\n      - name: b\n",
      "t.yaml:5:15: name: expected a non-empty arm name" },
    { "suite: s\nbenchmarks:\n  - {name: x, arms: [{name: a, command: [a]},"
      " {name: b, command: [b]}]}\n---\nsuite: t\n",
      "t.yaml:5:1: expected one YAML document, found a second" },
    { "suite: s\n{a: 1}: 2\nbenchmarks: []\n",
      "t.yaml:2:1: the suite: expected a key, found a mapping" },
    { "suite: s\nbenchmarks:\n  - name: ''\n" ARMS2,
      "t.yaml:3:11: name: expected a non-empty benchmark name" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        subject: [true]\n        command: [a]\n      - name: b\n",
      "t.yaml:6:18: subject: expected true or false, found a list" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [a]\n        env: {A: 1, A: 2}\n      - name: b\n",
      "t.yaml:7:21: duplicate key \"A\" in env" },
    { "suite: s\nvariables: {a: 1, a: 2}\nbenchmarks: []\n",
      "t.yaml:2:19: duplicate key \"a\" in variables" },
    /* x and X are both PARITY_VAR_X: a shell arm would see one value
     * for both (it did, before this was refused). */
    { "suite: s\nvariables: {x: one, X: two}\nbenchmarks: []\n",
      "t.yaml:2:21: variables: \"x\" and \"X\" would both be PARITY_VAR_X "
      "(names must differ in more than case)" },
    { "suite: s\nvariables: {v: 1}\nbenchmarks:\n  - name: x\n    arms:\n"
      "      - name: a\n        command: [a]\n"
      "        env: {PARITY_VAR_V: 2}\n      - name: b\n",
      "t.yaml:8:15: env: \"PARITY_VAR_V\" is the variable v's (give --var "
      "v=VALUE instead)" },
    { "suite: s\ndefaults: &d {runs: 2}\nbenchmarks:\n  - name: x\n"
      "    <<: *d\n" ARMS2,
      "t.yaml:5:5: merge keys (<<) are not supported in a benchmark: write "
      "the keys out (anchors and aliases are fine)" },
    { "suite: s\nbenchmarks:\n  - name: x\n    runs: \" 3\"\n" ARMS2,
      "t.yaml:4:11: runs: expected auto or an integer from 2 to 100000, found \" 3\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    runs: +3\n" ARMS2,
      "t.yaml:4:11: runs: expected auto or an integer from 2 to 100000, found \"+3\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    runs: 1000000000000\n" ARMS2,
      "t.yaml:4:11: runs: expected auto or an integer from 2 to 100000, found "
      "\"1000000000000\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    timeout: -1\n" ARMS2,
      "t.yaml:4:14: timeout: expected seconds above 0 and at most 86400, "
      "found \"-1\"" },
    { "suite: s\nbenchmarks:\n  - name: x\n    cpus: [9999]\n" ARMS2,
      "t.yaml:4:12: cpus: expected an integer from 0 to 1023, found "
      "\"9999\"" },
    { "suite: s\nbenchmarks:\n\t- name: x\n",
      "t.yaml:3:1: YAML syntax: found character that cannot start any token "
      "while scanning for the next token" },
    { "suite: s\xff\n",
      "t.yaml:1:1: YAML syntax: invalid leading UTF-8 octet" },
    { "suite: s\nbenchmarks:\n  - name: x\n    arms:\n      - name: a\n"
      "        command: [a]\n        env: {\"A=B\": 1}\n      - name: b\n",
      "t.yaml:7:15: env: \"A=B\" is not a variable name (letters, digits and "
      "_, not starting with a digit)" },
    /* A versions: argv whose second element is refused leaked
     * the argv and its first string (the ASan build's LeakSanitizer
     * fails this program then). */
    { "suite: s\nbenchmarks:\n  - name: x\n    versions: [[ok, {k: v}]]\n"
      ARMS2, "t.yaml:4:21: versions: expected a string, found a mapping" },
};

/* Messages about bounds, on files generated to pass them. */
static void
s_bound_cases(void)
{
    static char buf[1 << 21];
    size_t n;
    ag_suite_t *s = NULL;
    char err[1024];

    /* 17 arms */
    n = (size_t)snprintf(buf, sizeof buf, "suite: s\nbenchmarks:\n"
                         "  - name: x\n    arms:\n");
    for (int i = 0; i < 17; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "      - {name: a%d, command: [a]}\n", i);
    ag_suite_load_buffer("t.yaml", buf, n, NULL, 0, &s, err, sizeof err);
    ok_str(err, "t.yaml:5:7: benchmark \"x\": more than 16 arms",
           "17 arms");

    /* 257 benchmarks */
    n = (size_t)snprintf(buf, sizeof buf, "suite: s\nbenchmarks:\n");
    for (int i = 0; i < 257; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "  - {name: b%d, arms: [{name: a, command: [a]},"
                              " {name: b, command: [b]}]}\n", i);
    ag_suite_load_buffer("t.yaml", buf, n, NULL, 0, &s, err, sizeof err);
    ok_str(err, "t.yaml:3:3: benchmarks: more than 256", "257 benchmarks");

    /* 4097 arguments */
    n = (size_t)snprintf(buf, sizeof buf, "suite: s\nbenchmarks:\n"
                         "  - name: x\n    arms:\n      - name: a\n"
                         "        command: [a");
    for (int i = 0; i < 4096; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, ", x");
    n += (size_t)snprintf(buf + n, sizeof buf - n, "]\n      - name: b\n"
                          "        command: [b]\n");
    ag_suite_load_buffer("t.yaml", buf, n, NULL, 0, &s, err, sizeof err);
    ok_str(err, "t.yaml:6:18: command: more than 4096 arguments",
           "4097 arguments");

    /* 1025 CPUs in a list */
    n = (size_t)snprintf(buf, sizeof buf, "suite: s\nbenchmarks:\n"
                         "  - name: x\n    cpus: [0");
    for (int i = 0; i < 1024; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, ", 1");
    n += (size_t)snprintf(buf + n, sizeof buf - n, "]\n" ARMS2);
    ag_suite_load_buffer("t.yaml", buf, n, NULL, 0, &s, err, sizeof err);
    ok_str(err, "t.yaml:4:11: cpus: more than 1024 CPUs", "1025 CPUs");

    /* 65 versions commands */
    n = (size_t)snprintf(buf, sizeof buf, "suite: s\nbenchmarks:\n"
                         "  - name: x\n    versions: [v");
    for (int i = 0; i < 64; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, ", v");
    n += (size_t)snprintf(buf + n, sizeof buf - n, "]\n" ARMS2);
    ag_suite_load_buffer("t.yaml", buf, n, NULL, 0, &s, err, sizeof err);
    ok_str(err, "t.yaml:4:15: versions: more than 64 commands",
           "65 versions commands");

    /* 257 variables */
    n = (size_t)snprintf(buf, sizeof buf, "suite: s\nvariables:\n");
    for (int i = 0; i < 257; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "  v%d: x\n", i);
    n += (size_t)snprintf(buf + n, sizeof buf - n, "benchmarks: []\n");
    ag_suite_load_buffer("t.yaml", buf, n, NULL, 0, &s, err, sizeof err);
    ok_str(err, "t.yaml:3:3: variables: more than 256", "257 variables");

    /* 1025 env entries (the duplicate check is quadratic: 50,000 took
     * 8 s before this bound) */
    n = (size_t)snprintf(buf, sizeof buf, "suite: s\nbenchmarks:\n"
                         "  - name: x\n    arms:\n      - name: a\n"
                         "        command: [a]\n        env:\n");
    for (int i = 0; i < 1025; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "          V%d: x\n",
                              i);
    n += (size_t)snprintf(buf + n, sizeof buf - n, "      - name: b\n"
                          "        command: [b]\n");
    ag_suite_load_buffer("t.yaml", buf, n, NULL, 0, &s, err, sizeof err);
    ok_str(err, "t.yaml:8:11: env: more than 1024 entries", "1025 env");

    /* A string over 4 MiB once substituted: said so, not "out of memory" */
    n = (size_t)snprintf(buf, sizeof buf, "suite: s\nvariables:\n  v: ");
    memset(buf + n, 'x', 900000);
    n += 900000;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "\nbenchmarks:\n"
                          "  - name: x\n    arms:\n      - name: a\n"
                          "        command: [a, \"${v}${v}${v}${v}${v}\"]\n"
                          "      - name: b\n        command: [b]\n");
    ag_suite_load_buffer("t.yaml", buf, n, NULL, 0, &s, err, sizeof err);
    ok_str(err, "t.yaml:8:22: command: longer than 4194304 bytes with its "
           "variables substituted", "a 4.5 MB argument");

    /* A variable name of 101 bytes */
    char longname[102];
    memset(longname, 'v', 101);
    longname[101] = '\0';
    n = (size_t)snprintf(buf, sizeof buf, "suite: s\nvariables:\n  %s: x\n"
                         "benchmarks: []\n", longname);
    ag_suite_load_buffer("t.yaml", buf, n, NULL, 0, &s, err, sizeof err);
    ok_str(err, "t.yaml:3:3: variables: a name longer than 100 bytes",
           "101-byte variable name");
    ag_var_t longvar = { longname, "1" };
    static const char y0[] = "suite: s\nbenchmarks:\n  - name: x\n" ARMS2;
    ag_suite_load_buffer("t.yaml", y0, sizeof y0 - 1, &longvar, 1, &s, err,
                         sizeof err);
    ok_str(err, "t.yaml: --var: a name longer than 100 bytes",
           "101-byte --var name");
    ag_var_t upper = { "X", "2" };
    static const char y1[] = "suite: s\nvariables: {x: 1}\nbenchmarks:\n"
                             "  - name: x\n" ARMS2;
    ag_suite_load_buffer("t.yaml", y1, sizeof y1 - 1, &upper, 1, &s, err,
                         sizeof err);
    ok_str(err, "t.yaml: --var X: \"x\" and \"X\" would both be "
           "PARITY_VAR_X (names must differ in more than case)",
           "--var X against variables: x");

    /* A file over 1 MiB */
    memset(buf, '#', (1u << 20) + 1);
    ag_suite_load_buffer("t.yaml", buf, (1u << 20) + 1, NULL, 0, &s, err,
                         sizeof err);
    ok_str(err, "t.yaml: larger than 1048576 bytes", "over 1 MiB");

    /* A --var name given through the API, not ag_var_parse. */
    ag_var_t bad = { "no-dash", "1" };
    static const char y[] = "suite: s\nbenchmarks:\n  - name: x\n" ARMS2;
    ag_suite_load_buffer("t.yaml", y, sizeof y - 1, &bad, 1, &s, err,
                         sizeof err);
    ok_str(err, "t.yaml: --var no-dash: not a variable name (letters, "
           "digits and _, not starting with a digit)", "bad --var name");
    ok(s == NULL, "no suite after any of them");
}

/* Found by fuzzing: libyaml's scanner is quadratic in flow nesting
 * (200,000 '[' ran for over a minute), so deep nesting is refused before
 * the file is loaded, and quickly. */
static void
s_depth_cases(void)
{
    static char buf[1 << 20];
    ag_suite_t *s = NULL;
    char err[1024] = "", path[] = "/tmp/parity-test-suite-XXXXXX";
    size_t n = 200000;

    memset(buf, '[', n);
    int fd = mkstemp(path);
    ok(fd >= 0 && write(fd, buf, n) == (ssize_t)n && close(fd) == 0,
       "a suite file of 200,000 '['");
    double t0 = pw_clock_mono_sec();
    int rc = ag_suite_load(path, NULL, 0, &s, err, sizeof err);
    double took = pw_clock_mono_sec() - t0;
    unlink(path);
    char want[256];
    snprintf(want, sizeof want, "%s:1:65: more than 64 levels of [ ] and "
             "{ } nesting", path);
    ok(rc == AG_SUITE_ERR && s == NULL, "is refused");
    ok_str(err, want, "its message names the file, line and column");
    ok(took < 0.5, "in well under a second (%.3f s)", took);

    /* 64 levels are the bound, mixing [ and {: the 65th is refused, and
     * 64 reach the suite's own checks. */
    for (int levels = 64; levels <= 65; levels++) {
        n = (size_t)snprintf(buf, sizeof buf, "suite: s\nbenchmarks:\n  - ");
        for (int i = 0; i < levels; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, i % 2 ? "[" :
                                  "{k: ");
        for (int i = levels - 1; i >= 0; i--)
            n += (size_t)snprintf(buf + n, sizeof buf - n, i % 2 ? "]" : "}");
        n += (size_t)snprintf(buf + n, sizeof buf - n, "\n");
        ag_suite_load_buffer("t.yaml", buf, n, NULL, 0, &s, err,
                             sizeof err);
        ok_str(err, levels == 64 ? "t.yaml:3:6: unknown key \"k\" in a "
               "benchmark (expected one of: name, arms, runs, max_runs, warmup, "
               "timeout, stdout, stderr, expect_exit, cpus, versions, "
               "metrics)" :
               "t.yaml:3:165: more than 64 levels of [ ] and { } nesting",
               "%d levels of [ and {", levels);
    }

    /* Brackets in quoted and plain scalars and in comments are text. */
    char deep[101];
    memset(deep, '[', 100);
    deep[100] = '\0';
    n = (size_t)snprintf(buf, sizeof buf, "suite: \"%s\" # %s\n"
                         "benchmarks:\n  - name: x\n    arms:\n"
                         "      - {name: a, command: ['%s']}\n"
                         "      - name: b\n        shell: echo a%s\n",
                         deep, deep, deep, deep);
    rc = ag_suite_load_buffer("t.yaml", buf, n, NULL, 0, &s, err, sizeof err);
    ok(rc == AG_SUITE_OK, "'[' in quoted and plain scalars and comments "
       "does not count (%s)", rc == AG_SUITE_OK ? "" : err);
    ag_suite_destroy(&s);
}

/* Found by fuzzing: aliases repeat substituted strings. This 200 KB
 * suite asks for 256 benchmarks x 16 arms x a 4 MB argv, 16 GB: it is
 * refused at 16 MiB of strings in all. The load runs in a child, so
 * its peak memory can be read and a runaway one killed by alarm(). */
static void
s_alias_bomb(void)
{
    static char buf[1 << 20];
    size_t n = (size_t)snprintf(buf, sizeof buf, "suite: s\nvariables:\n"
                                "  v: ");
    memset(buf + n, 'x', 200000);
    n += 200000;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "\nbenchmarks:\n"
                          "  - name: b0\n    arms: &arms\n"
                          "      - {name: a0, command: &c [p");
    for (int i = 0; i < 20; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, ", \"${v}\"");
    n += (size_t)snprintf(buf + n, sizeof buf - n, "]}\n");
    for (int i = 1; i < 16; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "      - {name: a%d, command: *c}\n", i);
    for (int i = 1; i < 256; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "  - {name: b%d, arms: *arms}\n", i);
    ok(n > 200000 && n < 220000, "an alias bomb of %zu bytes", n);

    int pipefd[2];
    if (pipe(pipefd) != 0) {
        ok(0, "pipe");
        return;
    }
    double t0 = pw_clock_mono_sec();
    pid_t pid = fork();
    if (pid == 0) {
        char err[1024] = "";
        ag_suite_t *s = NULL;
        alarm(20);
#ifndef __SANITIZE_ADDRESS__
        /* Without the bound the load asks for 16 GB: a 1 GiB address
         * space makes it fail early instead of pressing on the machine.
         * (ASan reserves terabytes of shadow memory, so not there.) */
        struct rlimit lim = { 1ul << 30, 1ul << 30 };
        setrlimit(RLIMIT_AS, &lim);
#endif
        close(pipefd[0]);
        ag_suite_load_buffer("t.yaml", buf, n, NULL, 0, &s, err, sizeof err);
        ssize_t w = write(pipefd[1], err, strlen(err));
        (void)w;
        ag_suite_destroy(&s);
        _exit(0);
    }
    close(pipefd[1]);
    char err[1024] = "";
    size_t got = 0;
    ssize_t r;
    while ((r = read(pipefd[0], err + got, sizeof err - 1 - got)) > 0)
        got += (size_t)r;
    err[got] = '\0';
    close(pipefd[0]);
    int status = 0;
    struct rusage ru;
    pid_t w = wait4(pid, &status, 0, &ru);
    double took = pw_clock_mono_sec() - t0;
    ok(w == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "the load ends by itself (status %#x)", (unsigned)status);
    ok_str(err, "t.yaml:10:9: env: the suite's strings come to more "
           "than 16777216 bytes with variables substituted and aliases "
           "expanded", "it is refused, naming the 16 MiB bound");
    ok(took < 5.0, "quickly (%.2f s)", took);
    ok(ru.ru_maxrss < 256 * 1024, "with bounded memory (peak %ld KiB)",
       ru.ru_maxrss);
}

static void
s_bad_cases(void)
{
    for (size_t i = 0; i < sizeof s_bad / sizeof s_bad[0]; i++) {
        ag_suite_t *s = NULL;
        char err[1024] = "";
        int rc = ag_suite_load_buffer("t.yaml", s_bad[i].yaml,
                                      strlen(s_bad[i].yaml), NULL, 0, &s,
                                      err, sizeof err);
        ok(rc == AG_SUITE_ERR && s == NULL, "bad case %zu is refused", i);
        ok_str(err, s_bad[i].want, "bad case %zu message", i);
        ag_suite_destroy(&s);
    }
}

static void
s_good(void)
{
    static const char yaml[] =
        "suite: good\n"
        "variables:\n"
        "  size: '10'\n"
        "  word: default\n"
        "defaults:\n"
        "  runs: 7\n"
        "  warmup: 2\n"
        "  timeout: 1.5\n"
        "  cpus: 0\n"
        "  metrics: [peak_rss, wall]\n"
        "benchmarks:\n"
        "  - name: first\n"
        "    runs: 3\n"
        "    stdout: out.txt\n"
        "    expect_exit: 3\n"
        "    arms:\n"
        "      - name: a\n"
        "        command: [prog, \"--size=${size}\", \"${word}\", \"$${x}\"]\n"
        "        env: {MY: \"v${size}\"}\n"
        "        prepare: echo ${word}\n"
        "      - name: b\n"
        "        subject: true\n"
        "        shell: \"echo ${word} | wc -c\"\n"
        "        versions: [[prog, --version], \"uname -r\"]\n"
        "  - name: second\n"
        "    arms:\n"
        "      - {name: x, command: [x]}\n"
        "      - {name: y, command: [y]}\n"
        "  - name: third\n"
        "    runs: auto\n"
        "    metrics: [cpu]\n"
        "    arms:\n"
        "      - {name: x, command: [x]}\n"
        "      - {name: y, command: [y]}\n"
        "  - name: fourth\n"
        "    runs: auto\n"
        "    max_runs: 40\n"
        "    arms:\n"
        "      - {name: x, command: [x]}\n"
        "      - {name: y, command: [y]}\n";
    ag_var_t vars[] = { { "word", "a; rm -rf /" } };
    ag_suite_t *s = NULL;
    char err[1024] = "";
    int rc = ag_suite_load_buffer("good.yaml", yaml, sizeof yaml - 1, vars, 1,
                                  &s, err, sizeof err);
    ok(rc == AG_SUITE_OK, "a valid suite loads (%s)", err);
    if (rc != AG_SUITE_OK)
        return;
    ok_str(s->name, "good", "suite name");
    ok(s->benchmark_count == 4, "four benchmarks");
    ok(!s->benchmarks[0].runs_auto && s->benchmarks[2].runs_auto &&
       s->benchmarks[2].runs == 100 && s->benchmarks[2].max_runs == 100,
       "runs: auto, capped at 100 by default");
    ok(s->benchmarks[3].runs_auto && s->benchmarks[3].runs == 40 &&
       s->benchmarks[3].max_runs == 40, "runs: auto with max_runs: 40");
    const ag_bench_t *b = &s->benchmarks[0];
    ok(b->runs == 3 && b->warmup == 2, "runs from the benchmark, warmup "
       "from defaults");
    ok(b->timeout_s == 1.5 && b->expect_exit == 3, "timeout and expect_exit");
    ok(b->out.kind == AG_OUT_FILE && strcmp(b->out.path, "out.txt") == 0,
       "stdout to a file");
    ok(b->err.kind == AG_OUT_DISCARD, "stderr discarded by default");
    ok(b->cpu_count == 1 && b->cpus[0] == 0, "cpus from defaults");
    ok(b->metric_count == 2 && b->metrics[0] == VD_METRIC_PEAK_RSS &&
       b->metrics[1] == VD_METRIC_WALL, "metrics from defaults, in order");
    ok(s->benchmarks[2].metric_count == 1 &&
       s->benchmarks[2].metrics[0] == VD_METRIC_CPU,
       "a benchmark's metrics replace the defaults'");
    ok(b->subject == 1 && b->arms[1].subject && !b->arms[0].subject,
       "subject: true picks the subject");
    const ag_arm_t *a = &b->arms[0];
    ok(a->cmd.argc == 4, "argv keeps its 4 elements");
    ok_str(a->cmd.argv[1], "--size=10", "${size} inside an element");
    ok_str(a->cmd.argv[2], "a; rm -rf /", "--var overrides and stays one "
           "argument");
    ok_str(a->cmd.argv[3], "${x}", "$${ is a literal ${");
    ok(a->cmd.argv[4] == NULL, "argv is NULL-terminated");
    ok_str(a->env[0], "MY=v10", "env value substituted");
    ok(a->env_count == 3, "env: own plus one PARITY_VAR_ per variable");
    ok_str(a->env[1], "PARITY_VAR_SIZE=10", "PARITY_VAR_SIZE exported");
    ok_str(a->env[2], "PARITY_VAR_WORD=a; rm -rf /", "PARITY_VAR_WORD "
           "exported");
    ok_str(a->prepare.shell, "echo ${PARITY_VAR_WORD}", "in a shell string "
           "${word} becomes a reference to PARITY_VAR_WORD");
    ok_str(b->arms[1].cmd.shell, "echo ${PARITY_VAR_WORD} | wc -c",
           "shell arm: the value never enters the shell text");
    ok(b->arms[1].version_count == 2 && b->arms[1].versions[0].argc == 2 &&
       b->arms[1].versions[1].shell, "versions: argv and shell forms");
    const ag_bench_t *c = &s->benchmarks[1];
    ok(c->runs == 7 && c->subject == 0 && c->arms[0].subject,
       "defaults apply, and the first arm is the subject by default");
    ok(ag_suite_find(s, "second") == c && !ag_suite_find(s, "fifth"),
       "ag_suite_find");
    ag_suite_destroy(&s);
    ok(s == NULL, "destroy clears the pointer");
    ag_suite_destroy(&s);
    ag_suite_destroy(NULL);
    ok(s == NULL, "destroy accepts NULL and a cleared pointer, and leaves "
       "it NULL");
}

static void
s_vars(void)
{
    char good[] = "n_1=x=y", bad1[] = "novalue", bad2[] = "1n=3";
    ag_var_t v;
    char err[256];
    ok(ag_var_parse("--var", good, &v, err, sizeof err) == AG_SUITE_OK &&
       strcmp(v.name, "n_1") == 0 && strcmp(v.value, "x=y") == 0,
       "--var splits at the first =");
    ok(ag_var_parse("--var", bad1, &v, err, sizeof err) == AG_SUITE_ERR, "no =");
    ok_str(err, "--var novalue: expected NAME=VALUE", "no = message");
    ok(ag_var_parse("--var", bad2, &v, err, sizeof err) == AG_SUITE_ERR, "bad name");
    ok_str(err, "--var 1n=3: \"1n\" is not a variable name (letters, digits "
           "and _, not starting with a digit)", "bad name message");

    ag_suite_t *s = NULL;
    ok(ag_suite_load("/nonexistent/x.yaml", NULL, 0, &s, err, sizeof err) ==
       AG_SUITE_ERR, "missing file");
    ok_str(err, "/nonexistent/x.yaml: open: No such file or directory",
           "missing file message");
    ok(ag_suite_load("/", NULL, 0, &s, err, sizeof err) == AG_SUITE_ERR,
       "a directory");
    ok_str(err, "/: not a regular file", "directory message");

    const char *argv_a[] = { "/bin/true" }, *argv_b[] = { "/bin/echo", "x" };
    ag_arm_spec_t arms[2] = {
        { .name = "A", .cmd = { argv_a, 1, NULL } },
        { .name = "B", .cmd = { argv_b, 2, NULL },
          .prepare = { NULL, 0, "rm -f x" },
          .setup = { argv_a, 1, NULL } },
    };
    const char *pn[] = { "size" }, *pv[] = { "1M" };
    ag_bench_spec_t bench = { .name = "c", .arms = arms, .arm_count = 2,
                              .subject = 1, .param_names = pn,
                              .param_values = pv, .param_count = 1 };
    ok(ag_suite_from_specs("c", &bench, 1, 5, 0, &s, err, sizeof err) ==
       AG_SUITE_OK && s->benchmarks[0].arm_count == 2 &&
       strcmp(s->benchmarks[0].arms[1].name, "B") == 0 &&
       !s->benchmarks[0].arms[0].subject &&
       s->benchmarks[0].arms[1].subject && s->benchmarks[0].subject == 1 &&
       strcmp(s->benchmarks[0].arms[1].cmd.argv[1], "x") == 0 &&
       s->benchmarks[0].arms[1].cmd.argv[2] == NULL &&
       strcmp(s->benchmarks[0].arms[1].prepare.shell, "rm -f x") == 0 &&
       s->benchmarks[0].arms[1].setup.argc == 1 &&
       !s->benchmarks[0].arms[0].prepare.shell &&
       s->benchmarks[0].arms[0].prepare.argc == 0 &&
       s->benchmarks[0].param_count == 1 &&
       strcmp(s->benchmarks[0].param_values[0], "1M") == 0 &&
       s->benchmarks[0].runs == 5 && s->benchmarks[0].warmup == 0,
       "ag_suite_from_specs: arms, hooks, subject and parameters copied");
    ag_suite_destroy(&s);
    arms[1].cmd = (ag_cmd_spec_t){ NULL, 0, "sort data.txt" };
    bench.param_count = 0;
    ok(ag_suite_from_specs("c", &bench, 1, 5, 0, &s, err, sizeof err) ==
       AG_SUITE_OK && s->benchmarks[0].arms[1].cmd.argv == NULL &&
       strcmp(s->benchmarks[0].arms[1].cmd.shell, "sort data.txt") == 0,
       "ag_suite_from_specs: a shell command");
    ag_suite_destroy(&s);
    bench.arm_count = 1;
    bench.subject = 0;
    ok(ag_suite_from_specs("c", &bench, 1, 5, 0, &s, err, sizeof err) ==
       AG_SUITE_ERR && s == NULL, "one command refused");
    ok_str(err, "c: expected 2 to 16 commands, found 1",
           "one command message");
    bench.arm_count = 2;
    arms[1].name = "A";
    ok(ag_suite_from_specs("c", &bench, 1, 5, 0, &s, err, sizeof err) ==
       AG_SUITE_ERR, "two arms of one name refused");
    ok_str(err, "c: two commands named \"A\"", "same name message");
    arms[1].name = "B";
    arms[1].conclude = (ag_cmd_spec_t){ NULL, 0, "" };
    ok(ag_suite_from_specs("c", &bench, 1, 5, 0, &s, err, sizeof err) ==
       AG_SUITE_ERR, "an empty hook refused");
    ok_str(err, "command 2: conclude: the command is empty",
           "empty hook message");
    arms[1].conclude = (ag_cmd_spec_t){ 0 };
    ok(ag_suite_from_specs("c", &bench, 0, 5, 0, &s, err, sizeof err) ==
       AG_SUITE_ERR, "no benchmark refused");
    ok_str(err, "expected 1 to 256 benchmarks, found 0",
           "no benchmark message");
    ok(ag_suite_from_specs("c", &bench, 1, 0, 0, &s, err, sizeof err) ==
       AG_SUITE_ERR, "0 runs refused");
}

/* A --var the suite never uses (neither declared under variables: nor
 * read by a ${name}) is refused, naming the suite's variables; the
 * daemon refuses such a job with this text. */
static void
s_unused_vars(void)
{
    static const char decl[] =
        "suite: s\nvariables: {input: a.txt, lines: \"10\"}\n"
        "benchmarks:\n  - name: x\n    arms:\n      - name: a\n"
        "        command: [head, -n, \"${lines}\", \"${input}\"]\n"
        "      - name: b\n        command: [cat, \"${size}\"]\n";
    ag_suite_t *s = NULL;
    char err[512] = "";
    ag_var_t typo[] = { { "size", "1" }, { "imput", "b.txt" } };
    ok(ag_suite_load_buffer("t.yaml", decl, sizeof decl - 1, typo, 2, &s,
                            err, sizeof err) == AG_SUITE_ERR && !s,
       "a --var the suite never uses is refused");
    ok_str(err, "t.yaml: --var imput: suite \"s\" has no variable "
           "\"imput\" (its variables: input, lines, size)",
           "... naming the suite's variables, declared and ${}-read");
    ag_var_t fine[] = { { "size", "1" }, { "input", "b.txt" } };
    ok(ag_suite_load_buffer("t.yaml", decl, sizeof decl - 1, fine, 2, &s,
                            err, sizeof err) == AG_SUITE_OK && s &&
       strcmp(s->benchmarks[0].arms[0].cmd.argv[3], "b.txt") == 0,
       "declared and ${}-read variables are taken: %s", err);
    ag_suite_destroy(&s);
    static const char none[] = "suite: s\nbenchmarks:\n  - name: x\n"
        "    arms:\n      - name: a\n        command: [true]\n"
        "      - name: b\n        command: [false]\n";
    ag_var_t one = { "input", "x" };
    ok(ag_suite_load_buffer("t.yaml", none, sizeof none - 1, &one, 1, &s,
                            err, sizeof err) == AG_SUITE_ERR, "a suite "
       "without variables refuses any --var");
    ok_str(err, "t.yaml: --var input: suite \"s\" has no variable "
           "\"input\" (it has no variables)", "... and says it has none");
}

/* revision: names one of the suite's variables; its value (the
 * suite's default or the --var) is the revision of every run. */
static void
s_revision_cases(void)
{
    static const char good[] =
        "suite: s\nrevision: commit\nvariables: {commit: HEAD, n: \"3\"}\n"
        "benchmarks:\n  - name: x\n    arms:\n      - name: a\n"
        "        command: [run, \"${commit}\", \"${n}\"]\n"
        "      - name: b\n        command: [cat]\n";
    ag_suite_t *s = NULL;
    char err[512] = "";
    ok(ag_suite_load_buffer("t.yaml", good, sizeof good - 1, NULL, 0, &s,
                            err, sizeof err) == AG_SUITE_OK && s &&
       s->revision && strcmp(s->revision, "commit") == 0 &&
       strcmp(s->revision_value, "HEAD") == 0,
       "revision: names the variable, its default the value: %s", err);
    ag_suite_destroy(&s);
    ag_var_t c37 = { "commit", "c37" };
    ok(ag_suite_load_buffer("t.yaml", good, sizeof good - 1, &c37, 1, &s,
                            err, sizeof err) == AG_SUITE_OK && s &&
       strcmp(s->revision_value, "c37") == 0 &&
       strcmp(s->benchmarks[0].arms[0].cmd.argv[1], "c37") == 0,
       "... and a --var of it is the run's revision");
    ag_suite_destroy(&s);
    /* A variable read by ${} alone, given by --var, may be the revision. */
    static const char read_only[] =
        "suite: s\nrevision: rev\nbenchmarks:\n  - name: x\n    arms:\n"
        "      - name: a\n        command: [run, \"${rev}\"]\n"
        "      - name: b\n        command: [cat]\n";
    ag_var_t rev = { "rev", "abc" };
    ok(ag_suite_load_buffer("t.yaml", read_only, sizeof read_only - 1, &rev,
                            1, &s, err, sizeof err) == AG_SUITE_OK && s &&
       strcmp(s->revision_value, "abc") == 0,
       "a ${}-read variable may be the revision: %s", err);
    ag_suite_destroy(&s);
    ok(s == NULL, "destroyed");

    static const bad_t bad[] = {
        { "suite: s\nrevision: commit\nvariables: {input: a}\n"
          "benchmarks:\n  - name: x\n    arms:\n      - name: a\n"
          "        command: [cat, \"${input}\"]\n      - name: b\n"
          "        command: [cat]\n",
          "t.yaml:2:11: revision: suite \"s\" has no variable \"commit\" "
          "(its variables: input)" },
        { "suite: s\nrevision: commit\nbenchmarks:\n  - name: x\n" ARMS2,
          "t.yaml:2:11: revision: suite \"s\" has no variable \"commit\" "
          "(it has no variables)" },
        { "suite: s\nrevision: [commit]\nbenchmarks:\n  - name: x\n" ARMS2,
          "t.yaml:2:11: revision: expected a string, found a list" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        ok(ag_suite_load_buffer("t.yaml", bad[i].yaml, strlen(bad[i].yaml),
                                NULL, 0, &s, err, sizeof err)
           == AG_SUITE_ERR && !s, "revision case %zu refused", i);
        ok_str(err, bad[i].want, "revision case %zu's message", i);
    }
}

int
main(void)
{
    s_bad_cases();
    s_bound_cases();
    s_depth_cases();
    s_alias_bomb();
    s_good();
    s_vars();
    s_unused_vars();
    s_revision_cases();
    return tap_done();
}
