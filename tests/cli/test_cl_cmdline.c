/* test_cl_cmdline.c -- hyperfine-style command lines (cl_cmdline): word
 * splitting without a shell, joining back with quotes, {NAME}
 * substitution and its bound, -L lists and -P ranges. */
#include "cl_cmdline.h"
#include "../tap.h"

#include <stdlib.h>
#include <string.h>

/* The values joined by '|', or "ERR: message" when rc is not 0; v (a
 * NULL-terminated array) is freed. */
static const char *
s_values(int rc, char **v, size_t n, const char *err)
{
    static char out[4096];
    size_t len = 0;
    out[0] = '\0';
    if (rc != 0)
        snprintf(out, sizeof out, "ERR: %s", err);
    for (size_t i = 0; rc == 0 && i < n; i++)
        len += (size_t)snprintf(out + len, sizeof out - len, "%s%s",
                                i ? "|" : "", v[i]);
    if (rc == 0 && v[n] != NULL)
        snprintf(out, sizeof out, "ERR: not NULL-terminated");
    if (rc == 0)
        free(v);
    return out;
}

/* The words of line joined by '|', or "ERR: message". */
static const char *
s_split(const char *line)
{
    char **argv, err[256];
    size_t argc;
    int rc = cl_cmdline_split(line, &argv, &argc, err, sizeof err);
    return s_values(rc, argv, argc, err);
}

static void
test_split(void)
{
    ok_str(s_split("sort -S 1M data.txt"), "sort|-S|1M|data.txt", "blanks");
    ok_str(s_split("  a\t b  "), "a|b", "leading, trailing, tabs");
    ok_str(s_split("grep 'a b' \"c d\""), "grep|a b|c d", "both quotes");
    ok_str(s_split("a 'it'\\''s'"), "a|it's", "a quote in single quotes");
    ok_str(s_split("a \"x\\\"y\\\\z\\n\""), "a|x\"y\\z\\n",
           "in \"...\" a backslash escapes only \" and \\");
    ok_str(s_split("a b\\ c"), "a|b c", "a backslash outside quotes");
    ok_str(s_split("a ''"), "a|", "an empty word");
    ok_str(s_split("a x''y\"\"z"), "a|xyz", "quotes inside a word");
    ok_str(s_split("a '$HOME|;'"), "a|$HOME|;", "single quotes keep all");
    ok_str(s_split("ls *.c ?"), "ls|*.c|?", "no globbing");
    ok_str(s_split("a | b"), "ERR: \"|\" needs a shell (drop -N, or quote "
           "it)", "a pipe");
    ok_str(s_split("a&&b"), "ERR: \"&\" needs a shell (drop -N, or quote "
           "it)", "&&");
    ok_str(s_split("a\nb"), "ERR: \"\\n\" needs a shell (drop -N, or quote "
           "it)", "a newline");
    ok_str(s_split("echo \"$x\""), "ERR: \"$\" needs a shell (drop -N, or "
           "put it in single quotes)", "$ in double quotes");
    ok_str(s_split("echo `x`"), "ERR: \"`\" needs a shell (drop -N, or put "
           "it in single quotes)", "a backtick");
    ok_str(s_split("a 'b"), "ERR: no closing '", "open single quote");
    ok_str(s_split("a \"b"), "ERR: no closing \"", "open double quote");
    ok_str(s_split("a\\"), "ERR: a backslash at the end", "trailing \\");
    ok_str(s_split(""), "ERR: the command is empty", "empty");
    ok_str(s_split(" \t"), "ERR: the command is empty", "blank");
    ok_str(s_split("'' a"), "ERR: the program name is empty", "empty name");
    ok_str(s_split("a b c d e f g h i j"), "a|b|c|d|e|f|g|h|i|j",
           "the most words a line can hold");
}

static void
test_join(void)
{
    char buf[256];
    const char *a[] = { "sh", "-c", "sort data.txt" };
    ok(cl_cmdline_join(buf, sizeof buf, a, 3) == 21 &&
       strcmp(buf, "sh -c 'sort data.txt'") == 0, "join quotes a word with "
       "a blank");
    const char *b[] = { "a", "it's", "", "x=1,y", "\xc3\xa9t\xc3\xa9" };
    cl_cmdline_join(buf, sizeof buf, b, 5);
    ok_str(buf, "a 'it'\\''s' '' x=1,y \xc3\xa9t\xc3\xa9",
           "a quote, an empty word; = , and UTF-8 need none");
    /* What join writes, split reads back. */
    const char *c[] = { "p", "a b", "it's", "\"q\"", "$x", "|" };
    cl_cmdline_join(buf, sizeof buf, c, 6);
    ok_str(s_split(buf), "p|a b|it's|\"q\"|$x||", "join then split: the "
           "same words");
    ok(cl_cmdline_join(buf, 5, a, 3) == 21 && strcmp(buf, "sh -") == 0,
       "cut to the buffer, the whole length returned");
    ok(cl_cmdline_join(NULL, 0, a, 3) == 21, "only measured");
}

static void
test_subst(void)
{
    const char *names[] = { "foo", "bar" }, *values[] = { "{bar} baz",
                                                          "quux" };
    char *out = NULL, err[256];
    ok(cl_cmdline_subst("echo {foo} {bar} {baz} {", names, values, 2, &out,
                        err, sizeof err) == 0, "substitute");
    ok_str(out, "echo {bar} baz quux {baz} {", "left to right, never "
           "inside a value put in; others kept");
    free(out);
    ok(cl_cmdline_uses("a{foo}", "foo") && !cl_cmdline_uses("a{fo}o",
                                                             "foo") &&
       !cl_cmdline_uses("{foo", "foo"), "uses");
    char *big = malloc(1100000);
    memset(big, 'x', 1099999);
    big[1099999] = '\0';
    const char *n1[] = { "x" }, *v1[] = { big };
    ok(cl_cmdline_subst("{x}", n1, v1, 1, &out, err, sizeof err) != 0,
       "beyond the bound refused");
    ok_str(err, "longer than 1048576 bytes once the parameters are put in",
           "bound message");
    free(big);
}

static const char *
s_list(const char *s, size_t max)
{
    char **v, err[256];
    size_t n;
    int rc = cl_cmdline_list(s, max, &v, &n, err, sizeof err);
    return s_values(rc, v, n, err);
}

static const char *
s_range(const char *lo, const char *hi, const char *step, size_t max)
{
    char **v, err[256];
    size_t n;
    int rc = cl_cmdline_range(lo, hi, step, max, &v, &n, err, sizeof err);
    return s_values(rc, v, n, err);
}

static void
test_list_range(void)
{
    ok_str(s_list("gcc,clang", 10), "gcc|clang", "a list");
    ok_str(s_list("a\\,b,c\\\\,\\n", 10), "a,b|c\\|\\n",
           "\\, and \\\\ escaped, other backslashes kept");
    ok_str(s_list(",,", 10), "||", "empty values kept");
    ok_str(s_list("", 10), "", "one empty value");
    ok_str(s_list("1,2,3", 2), "ERR: 3 values, at most 2", "too many");
    ok_str(s_range("1", "8", NULL, 100), "1|2|3|4|5|6|7|8", "integers");
    ok_str(s_range("0", "10", "3", 100), "0|3|6|9", "a step past the end");
    ok_str(s_range("-2", "1", NULL, 100), "-2|-1|0|1", "negative");
    ok_str(s_range("0.3", "0.7", "0.2", 100), "0.3|0.5|0.7",
           "hyperfine's decimal example");
    ok_str(s_range("0", "1", "0.25", 100), "0.00|0.25|0.50|0.75|1.00",
           "the most decimal places of the three");
    ok_str(s_range("-0.5", "0.5", "0.5", 100), "-0.5|0.0|0.5",
           "negative decimals");
    ok_str(s_range("5", "5", NULL, 100), "5", "one value");
    ok_str(s_range("0.1", "0.5", NULL, 100),
           "ERR: decimal bounds need a step (-D)", "decimals need -D");
    ok_str(s_range("2", "1", NULL, 100),
           "ERR: the range is empty (1 is below 2)", "empty range");
    ok_str(s_range("1", "2", "0", 100), "ERR: the step must be above 0",
           "zero step");
    ok_str(s_range("1", "2", "-1", 100), "ERR: the step must be above 0",
           "negative step");
    ok_str(s_range("1", "300", NULL, 256), "ERR: 300 values, at most 256",
           "too many values");
    ok_str(s_range("x", "2", NULL, 100), "ERR: \"x\" is not a number "
           "(digits, an optional sign and point, at most 9 decimals)",
           "not a number");
    ok_str(s_range("1", "2", "0.0000000001", 100), "ERR: \"0.0000000001\" "
           "is not a number (digits, an optional sign and point, at most 9 "
           "decimals)", "ten decimals");
    ok_str(s_range("99999999999", "2", NULL, 100), "ERR: \"99999999999\" "
           "is not a number (digits, an optional sign and point, at most 9 "
           "decimals)", "too many digits");
    ok_str(s_range("-3999999999", "3999999999", "0.000000001", 10),
           "ERR: 7999999998000000001 values, at most 10",
           "the widest range counts without overflow");
    ok_str(s_range(".", "2", NULL, 100), "ERR: \".\" is not a number "
           "(digits, an optional sign and point, at most 9 decimals)",
           "a lone point");
}

int
main(void)
{
    test_split();
    test_join();
    test_subst();
    test_list_range();
    return tap_done();
}
