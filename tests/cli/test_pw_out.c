/* test_pw_out.c -- the shared output helpers every verb uses: units,
 * number and list parsing, aligned tables and their bounds. */
#include "cl_out.h"
#include "pw_out.h"
#include "../capture.h"
#include "../tap.h"

#include <stdlib.h>
#include <math.h>
#include <string.h>

static void
test_units(void)
{
    char buf[64];
    ok_str(pw_out_us(buf, sizeof buf, 0.01234), "12.34 ns", "below 1 µs in ns");
    json_t *e = json_pack("{s:s,s:{s:s,s:f,s:f}}", "host", "a", "verdict",
                          "outcome", "win", "ratio", 0.45, "tolerance",
                          0.447);
    ok_str(cl_out_cell(buf, sizeof buf, e), "win 0.450 (tol. 0.447)",
           "a verdict cell shows the tolerance beside the ratio");
    json_object_del(json_object_get(e, "verdict"), "tolerance");
    ok_str(cl_out_cell(buf, sizeof buf, e), "win 0.450",
           "a verdict without a tolerance: the ratio alone");
    json_decref(e);
    ok_str(pw_out_number(buf, sizeof buf, 0.8), "0.8",
           "CSV numbers: the shortest text that reads back exactly");
    ok_str(pw_out_number(buf, sizeof buf, 0.1 + 0.2), "0.30000000000000004",
           "CSV numbers: 17 digits when 15 and 16 do not read back");
    ok_str(pw_out_number(buf, sizeof buf, 566.0 / 1e6), "0.000566",
           "CSV numbers: seconds from microseconds");
    ok_str(pw_out_number(buf, sizeof buf, NAN), "", "CSV numbers: NaN empty");
    ok_str(pw_out_us(buf, sizeof buf, 5.5), "5.500 µs", "below 10 µs, 3 decimals");
    ok_str(pw_out_us(buf, sizeof buf, 566.0), "566.0 µs", "below 1 ms in µs");
    ok_str(pw_out_us(buf, sizeof buf, 1500.0), "1.500 ms", "below 1 s in ms");
    ok_str(pw_out_us(buf, sizeof buf, 2.5e6), "2.500 s", "seconds");
    ok_str(pw_out_us(buf, sizeof buf, NAN), "-", "not finite: a dash");
    ok_str(pw_out_us(buf, sizeof buf, 0.5), "500.0 ns", "500 ns, 4 figures");
    ok_str(pw_out_us(buf, sizeof buf, 1e-20), "1e-17 ns",
           "below 1 ns: not a false 0.00 ns");
    ok_str(pw_out_us(buf, sizeof buf, 0.0), "0", "zero (an IQR, a floor)");
    ok_str(pw_out_us(buf, sizeof buf, -0.0), "0", "minus zero is 0");
    ok_str(pw_out_us(buf, sizeof buf, 1.35e308), "1.35e+302 s",
           "beyond 31 years: %%g, not 300 digits");
    ok_str(pw_out_us(buf, 4, 566.0), "566", "truncated to the buffer");
    ok_str(pw_out_ratio(buf, sizeof buf, 0.80898876), "0.8090",
           "ratio: four decimals");
    ok_str(pw_out_ratio(buf, sizeof buf, 1e-5), "1e-05",
           "ratio 1e-5: not 0.0000");
    ok_str(pw_out_ratio(buf, sizeof buf, 2.5e20), "2.5e+20",
           "tolerance 2.5e20: not 21 digits");
    ok_str(pw_out_ratio(buf, sizeof buf, 16.666666), "16.6667",
           "tolerance 16.67: four decimals");
}

static void
test_parsing(void)
{
    double x = 0, *v = NULL;
    size_t n = 0;
    char err[128] = "";

    ok(cl_out_parse_double("1.5", &x) == 0 && x == 1.5, "1.5");
    ok(cl_out_parse_double("25 ", &x) == 0 && x == 25.0, "trailing space");
    ok(cl_out_parse_double("", &x) == -1, "empty refused");
    ok(cl_out_parse_double("1x", &x) == -1, "trailing text refused");
    ok(cl_out_parse_double("inf", &x) == -1, "infinity refused");
    ok(cl_out_parse_double("1e999", &x) == -1, "overflow refused");
    ok(cl_out_parse_double(NULL, &x) == -1, "NULL refused");

    ok(cl_out_parse_list("1, 2,3", 10, &v, &n, err, sizeof err) == 0 &&
       n == 3 && v[0] == 1 && v[1] == 2 && v[2] == 3, "list with spaces");
    free(v);
    v = NULL;
    ok(cl_out_parse_list("1,2,3", 2, &v, &n, err, sizeof err) == -1 && !v,
       "over the bound refused");
    ok_str(err, "3 values, more than the limit of 2", "bound message");
    ok(cl_out_parse_list("1,,2", 10, &v, &n, err, sizeof err) == -1,
       "empty item refused");
    ok_str(err, "sample 2 is empty", "empty item message");
    ok(cl_out_parse_list("1,2,", 10, &v, &n, err, sizeof err) == -1,
       "trailing comma refused");
    ok_str(err, "sample 3 is empty", "trailing comma message");
}

/* The table's text, whatever pw_out_table_print returned: the checks
 * read what it wrote. */
static char *
s_print(const pw_out_table_t *t)
{
    capture_t c;
    pw_out_table_print(t, capture_open(&c));
    return capture_text(&c, 0);
}

static void
test_tables(void)
{
    const char *head[] = {"arm", "median", "note"};
    const char *row1[] = {"a", "566.0 µs", "x"};
    const char *row2[] = {"longer", "1.0 ms", "yes"};
    pw_out_table_t *t = pw_out_table_new(3);
    char *text;

    ok(t && pw_out_table_add(t, head) == 0 && pw_out_table_add(t, row1) == 0 &&
       pw_out_table_add(t, row2) == 0, "three rows");
    pw_out_table_left(t, 2);
    text = s_print(t);
    ok_str(text, "arm       median  note\n"
                 "a       566.0 µs  x\n"
                 "longer    1.0 ms  yes\n",
           "aligned by characters, not bytes; first and chosen columns left");
    free(text);
    pw_out_table_destroy(&t);
    ok(t == NULL, "destroy clears the pointer");
    pw_out_table_destroy(&t);
    pw_out_table_destroy(NULL);
    ok(t == NULL, "destroy accepts NULL and a cleared pointer, and leaves "
       "it NULL");
    /* Cells are copied whole: two long names differing only at the end
     * stay two names (hyperfine commands, gbench template names). */
    char longa[400], longb[400];
    memset(longa, 'x', 399);
    longa[399] = '\0';
    memcpy(longb, longa, sizeof longb);
    longa[398] = 'A';
    longb[398] = 'B';
    const char *la[] = {longa}, *lb[] = {longb};
    t = pw_out_table_new(1);
    ok(t && pw_out_table_add(t, la) == 0 && pw_out_table_add(t, lb) == 0,
       "rows of 399-byte cells");
    text = s_print(t);
    ok(text && strlen(text) == 800 && text[398] == 'A' && text[798] == 'B',
       "long cells printed whole, not cut at PW_OUT_CELL_MAX");
    free(text);
    pw_out_table_destroy(&t);

    const char *h2[] = {"a", "notes"}, *r2[] = {"xyz", ""};
    t = pw_out_table_new(2);
    pw_out_table_left(t, 1);
    ok(t && pw_out_table_add(t, h2) == 0 && pw_out_table_add(t, r2) == 0,
       "a row ending in an empty cell");
    text = s_print(t);
    ok_str(text, "a    notes\nxyz\n", "no trailing spaces for empty end cells");
    free(text);
    pw_out_table_destroy(&t);

    ok(pw_out_table_new(0) == NULL && pw_out_table_new(PW_OUT_TABLE_COLS + 1) ==
       NULL, "0 or too many columns refused");

    t = pw_out_table_new(1);
    int added = 0, refused = 0;
    const char *cell[] = {"r"};
    for (int i = 0; i < PW_OUT_TABLE_ROWS + 1; i++) {
        if (pw_out_table_add(t, cell) == 0)
            added++;
        else
            refused++;
    }
    ok(added == PW_OUT_TABLE_ROWS && refused == 1, "rows bounded at %d (added %d)",
       PW_OUT_TABLE_ROWS, added);
    ok(PW_OUT_TABLE_ROWS == 100001, "room for 100000 hyperfine commands and "
       "the header");
    pw_out_table_destroy(&t);
}

static void
test_help(void)
{
    char a0[] = "verdict", a1[] = "--a", a2[] = "--help", dd[] = "--";
    char *with[] = {a0, a1, a2, NULL};
    char *after[] = {a0, dd, a2, NULL};
    ok(cl_out_wants_help(3, with), "--help anywhere");
    ok(!cl_out_wants_help(3, after), "not after --");
}

/* The "k=v k=v" text every table, report and page shows tags with. */
static void
test_pairs(void)
{
    char buf[64], small[8];
    json_t *tags = json_pack("{s:s,s:s,s:i}", "commit", "c1", "branch",
                             "main", "n", 3);
    json_t *none = json_object();
    ok_str(pw_out_pairs(buf, sizeof buf, tags, "-"),
           "commit=c1 branch=main n=", "pairs in order, a non-string empty");
    ok_str(pw_out_pairs(buf, sizeof buf, none, "-"), "-",
           "an empty object: the text for none");
    ok_str(pw_out_pairs(buf, sizeof buf, NULL, "no tags"), "no tags",
           "no object: the text for none");
    ok_str(pw_out_pairs(small, sizeof small, tags, "-"), "commit=",
           "cut at the buffer's size");
    json_decref(tags);
    json_decref(none);
}

/* XML text, as the site, the feed and the JUnit file write it. */
static void
test_xml(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        ok(false, "open_memstream");
        return;
    }
    pw_out_xml(f, "a<b>&\"c'\x01\td\ne", true);
    fputc('|', f);
    pw_out_xml(f, "l1\nl2\r", false);
    fputc('|', f);
    pw_out_xml(f, NULL, true);
    pw_out_xmlf(f, true, "<td class=\"%s\">%s vs %s</td> 100%%|",
                "w&n", "a<", "b\n");
    pw_out_xmlf(f, false, "%s %d stops", "x", 1);
    fclose(f);
    ok_str(text, "a&lt;b&gt;&amp;&quot;c&#39;?\td e|l1\nl2\r|"
           "<td class=\"w&amp;n\">a&lt; vs b </td> 100%|x ",
           "entities, '?' for a control byte, line ends kept or spaces, "
           "NULL as nothing; a template escapes its %%s, writes %%%% as %% "
           "and stops at a conversion it does not know");
    free(text);
}

int
main(void)
{
    test_units();
    test_parsing();
    test_tables();
    test_help();
    test_pairs();
    test_xml();
    return tap_done();
}
