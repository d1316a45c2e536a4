/* test_pw_json.c -- the verdict's written form: field names of the spec,
 * round trips through jansson and through pw_verdict_write, and every
 * error of the reader. */
#include "pw_json.h"
#include "../tap.h"
#include "../xorshift.h"

#include <stdint.h>
#include <stdlib.h>

static uint64_t s_rng = 0x2545f4914f6cdd1dull;

static double
s_uniform(void)
{
    return xs_uniform(&s_rng);
}

static vd_verdict_t
s_worked_example(void)
{
    const double a[] = {566, 568, 576, 690, 722};
    const double b[] = {587, 700, 712, 718, 725};
    vd_params_t p = {.parity = 0.04, .floor_us = 25.0};
    vd_verdict_t v;
    char err[256];
    if (vd_compare(a, 5, b, 5, &p, &v, err, sizeof err) != VD_OK)
        memset(&v, 0, sizeof v);
    return v;
}

static int
s_same(const vd_verdict_t *x, const vd_verdict_t *y, int summaries)
{
    int same = x->outcome == y->outcome && x->ratio == y->ratio &&
               x->best_ratio == y->best_ratio &&
               x->tolerance == y->tolerance && x->noise == y->noise &&
               x->best_tolerance == y->best_tolerance &&
               x->floor_us == y->floor_us && x->parity == y->parity &&
               x->diagnostics == y->diagnostics &&
               x->extra_runs == y->extra_runs;
    if (summaries)
        same = same && memcmp(&x->a, &y->a, sizeof x->a) == 0 &&
               memcmp(&x->b, &y->b, sizeof x->b) == 0;
    return same;
}

static void
test_fields(void)
{
    vd_verdict_t v = s_worked_example();
    json_t *o = pw_verdict_to_json(&v, 0);
    const char *keys[] = {"outcome", "ratio", "best_ratio", "tolerance",
                          "noise", "best_tolerance", "floor_us", "parity",
                          "diagnostics", "extra_runs"};

    ok(o != NULL, "worked example to JSON");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ok(json_object_get(o, keys[i]) != NULL, "field \"%s\" present",
           keys[i]);
    ok(json_object_size(o) == 10, "no summaries without the flag");
    ok_str(json_string_value(json_object_get(o, "outcome")), "parity",
           "outcome parity");
    ok_near(json_real_value(json_object_get(o, "ratio")), 0.80899, 1e-4,
            "ratio 0.80899");
    json_t *d = json_object_get(o, "diagnostics");
    ok(json_array_size(d) == 3, "three diagnostics (got %zu)",
       json_array_size(d));
    ok_str(json_string_value(json_array_get(d, 0)), "timing_modes_subject",
           "first diagnostic in bit order");
    json_decref(o);

    o = pw_verdict_to_json(&v, PW_VERDICT_SUMMARIES);
    ok(json_object_get(o, "subject") && json_object_get(o, "other"),
       "summaries with the flag");
    ok(json_integer_value(json_object_get(json_object_get(o, "subject"),
                                          "n")) == 5, "subject n 5");
    json_decref(o);
}

static void
test_round_trips(void)
{
    int jansson_ok = 1, text_ok = 1, text_parses = 1;
    for (int c = 0; c < 300; c++) {
        double a[9], b[9];
        size_t na = 2 + c % 8, nb = 2 + (c / 8) % 8;
        vd_params_t p = {.parity = 0.01 + 0.1 * s_uniform(),
                         .floor_us = 100.0 * s_uniform(),
                         .floor_is_default = c % 2};
        vd_verdict_t v, back;
        char err[256], text[PW_VERDICT_TEXT_MAX];
        for (size_t i = 0; i < na; i++)
            a[i] = 10.0 + 1000.0 * s_uniform();
        for (size_t i = 0; i < nb; i++)
            b[i] = 10.0 + 1000.0 * s_uniform();
        if (vd_compare(a, na, b, nb, &p, &v, err, sizeof err) != VD_OK) {
            jansson_ok = 0;
            continue;
        }
        /* jansson object, dumped with 17 digits and loaded again. */
        json_t *o = pw_verdict_to_json(&v, PW_VERDICT_SUMMARIES);
        char *s = json_dumps(o, PW_JSON_DUMP_FLAGS);
        json_t *o2 = json_loads(s, 0, NULL);
        if (!o2 || pw_verdict_from_json(o2, &back, err, sizeof err) ||
            !s_same(&v, &back, 1))
            jansson_ok = 0;
        free(s);
        json_decref(o);
        json_decref(o2);
        /* The shortest-digits text reads back to the same doubles. */
        int n = pw_verdict_write(text, sizeof text, &v, PW_VERDICT_SUMMARIES);
        o2 = n > 0 ? json_loadb(text, (size_t)n, 0, NULL) : NULL;
        if (!o2)
            text_parses = 0;
        else if (pw_verdict_from_json(o2, &back, err, sizeof err) ||
                 !s_same(&v, &back, 1))
            text_ok = 0;
        json_decref(o2);
    }
    ok(jansson_ok, "300 random verdicts round-trip through jansson exactly");
    ok(text_parses, "pw_verdict_write output is valid JSON");
    ok(text_ok, "pw_verdict_write round-trips every double exactly");
}

static void
test_write_text(void)
{
    vd_verdict_t v = s_worked_example();
    char buf[PW_VERDICT_TEXT_MAX], small[40];
    int n = pw_verdict_write(buf, sizeof buf, &v, 0);

    ok(n > 0 && (size_t)n == strlen(buf), "write returns its length");
    ok(strstr(buf, "\"floor_us\":25.0,\"parity\":0.04,") != NULL,
       "short numbers stay short: %s", buf);
    ok(strncmp(buf, "{\"outcome\":\"parity\",\"ratio\":0.808988764044944",
               44) == 0, "outcome first, then the ratio");
    ok(pw_verdict_write(small, sizeof small, &v, 0) == -1,
       "too small a buffer is refused");
    v.diagnostics = ~0u;
    v.extra_runs = VD_MAX_EXTRA_RUNS;
    v.ratio = -1.2345678901234567e-300;
    ok(pw_verdict_write(buf, sizeof buf, &v, PW_VERDICT_SUMMARIES) > 0,
       "PW_VERDICT_TEXT_MAX holds every diagnostic and summaries");

    char num[32];
    ok(pw_format_double(num, sizeof num, 1e-7) > 0 && !strcmp(num, "1e-07"),
       "1e-7 as 1e-07 (%s)", num);
    ok(pw_format_double(num, sizeof num, 0.1 + 0.2) > 0 &&
       strtod(num, NULL) == 0.1 + 0.2, "0.1+0.2 exact (%s)", num);
    ok(pw_format_double(num, sizeof num, NAN) == -1, "NaN refused");
    ok(pw_format_double(num, sizeof num, INFINITY) == -1, "infinity refused");
    const struct {
        double x;
        const char *text;
    } fixed[] = {
        {25.0, "25.0"}, {0.04, "0.04"}, {-0.0, "-0.0"}, {0.0, "0.0"},
        {1e21, "1e+21"}, {1e16, "10000000000000000.0"}, {1e17, "1e+17"},
        {123456.789, "123456.789"}, {0.0001, "0.0001"}, {0.00001, "1e-05"},
        {5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
        {-566.5, "-566.5"}, {0.8089887640449438, "0.8089887640449438"},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        pw_format_double(num, sizeof num, fixed[i].x);
        ok_str(num, fixed[i].text, "%.17g prints as %s", fixed[i].x,
               fixed[i].text);
    }

    /* Round trip and length against printf's shortest of %.1g..%.17g, on
     * random bit patterns (every exponent) and on times-like values. */
    size_t wrong = 0, longer = 0, total = 0, maxlen = 0;
    for (int i = 0; i < 2000000; i++) {
        uint64_t bits = ((uint64_t)(s_uniform() * 4294967296.0) << 32) ^
                        (uint64_t)(s_uniform() * 4294967296.0);
        double x;
        if (i % 2) {
            memcpy(&x, &bits, sizeof x);
        } else {
            x = (double)(bits % 10000000) / 10.0 /
                (1.0 + (double)(bits >> 40) / 1e4);
        }
        if (!isfinite(x))
            continue;
        total++;
        int len = pw_format_double(num, sizeof num, x);
        if (len < 0 || strtod(num, NULL) != x) {
            if (wrong++ < 5)
                tap_diag("%.17g printed as %s", x, num);
            continue;
        }
        if ((size_t)len > maxlen)
            maxlen = (size_t)len;
        if (i % 64 == 0) {      /* the slow reference on a subset */
            char ref[40];
            for (int prec = 1; prec <= 17; prec++) {
                snprintf(ref, sizeof ref, "%.*g", prec, x);
                if (strtod(ref, NULL) == x)
                    break;
            }
            /* Compare digit counts: the notations differ in style. */
            size_t dg = 0, dr = 0;
            for (const char *c = num; *c && *c != 'e'; c++)
                dg += *c >= '1' && *c <= '9';
            for (const char *c = ref; *c && *c != 'e'; c++)
                dr += *c >= '1' && *c <= '9';
            longer += dg > dr;
        }
    }
    ok(wrong == 0, "%zu of %zu doubles read back exactly", total - wrong,
       total);
    ok(maxlen <= 24, "longest text %zu characters (<= 24)", maxlen);
    ok(longer * 1000 <= total / 64 + 1, "at most 0.1 %% a digit longer "
       "than the shortest (%zu of about %zu)", longer, total / 64);
    ok(pw_format_double(num, 3, 12.5) == -1, "short buffer refused");
}

/* Copy pattern into out with its one "%s" (if any) replaced by fill. */
static void
s_subst(char *out, size_t len, const char *pattern, const char *fill)
{
    const char *at = strstr(pattern, "%s");
    if (!at)
        snprintf(out, len, "%s", pattern);
    else
        snprintf(out, len, "%.*s%s%s", (int)(at - pattern), pattern, fill,
                 at + 2);
}

struct bad_case {
    const char *json;
    const char *error;
};

static void
test_reader_errors(void)
{
    const char *good_head = "\"ratio\":1,\"best_ratio\":1,\"tolerance\":0.04,"
                            "\"noise\":0,\"best_tolerance\":0.04,"
                            "\"floor_us\":25,\"parity\":0.04";
    char text[1024], err[256];
    vd_verdict_t v;
    const struct bad_case cases[] = {
        {"[1]", "verdict is not an object"},
        {"{\"ratio\":1}", "missing \"outcome\" (a string)"},
        {"{\"outcome\":\"draw\"}",
         "\"outcome\" is \"draw\": not win, parity or loss"},
        {"{\"outcome\":\"win\"}", "missing \"ratio\""},
        {"{\"outcome\":\"win\",\"ratio\":\"1\"}", "\"ratio\" is not a number"},
        {"{\"outcome\":\"win\",\"ratio\":1,\"best_ratio\":1,"
         "\"tolerance\":0.04,\"noise\":0,\"best_tolerance\":0.04,"
         "\"floor_us\":25}", "missing \"parity\""},
        {"{\"outcome\":\"win\",%s,\"diagnostics\":{}}",
         "\"diagnostics\" is not an array"},
        {"{\"outcome\":\"win\",%s,\"diagnostics\":[\"few_runs\",3]}",
         "diagnostic 2 is not a string"},
        {"{\"outcome\":\"win\",%s,\"diagnostics\":[\"cosmic_rays\"]}",
         "unknown diagnostic \"cosmic_rays\""},
        {"{\"outcome\":\"win\",%s,\"extra_runs\":-1}",
         "\"extra_runs\" is not an integer in 0..10000"},
        {"{\"outcome\":\"win\",%s,\"subject\":[]}",
         "\"subject\": summary is not an object"},
        {"{\"outcome\":\"win\",%s,\"other\":{\"n\":2.5}}",
         "\"other\": summary \"n\" is not an integer in 0..1048576"},
        {"{\"outcome\":\"win\",%s,\"other\":{\"n\":2,\"min\":1}}",
         "\"other\": missing \"q25\""},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s_subst(text, sizeof text, cases[i].json, good_head);
        json_t *o = json_loads(text, 0, NULL);
        err[0] = '\0';
        ok(o && pw_verdict_from_json(o, &v, err, sizeof err) == PW_ERR,
           "reader refuses %s", cases[i].json);
        ok_str(err, cases[i].error, "with \"%s\"", cases[i].error);
        json_decref(o);
    }

    snprintf(text, sizeof text, "{\"outcome\":\"loss\",%s}", good_head);
    json_t *o = json_loads(text, 0, NULL);
    ok(o && pw_verdict_from_json(o, &v, err, sizeof err) == PW_OK &&
       v.outcome == VD_LOSS && v.floor_us == 25.0 && v.diagnostics == 0,
       "integers accepted where reals are written; optional fields zero");
    json_decref(o);
}

static void
test_dumps(void)
{
    vd_verdict_t v = s_worked_example(), back;
    json_t *o = pw_verdict_to_json(&v, PW_VERDICT_SUMMARIES);
    char err[256], *text = pw_json_dumps(o), buf[PW_VERDICT_TEXT_MAX];
    json_t *o2 = text ? json_loads(text, 0, NULL) : NULL;

    ok(o2 && pw_verdict_from_json(o2, &back, err, sizeof err) == PW_OK &&
       s_same(&v, &back, 1), "pw_json_dumps round-trips a verdict exactly");
    int n = pw_verdict_write(buf, sizeof buf, &v, PW_VERDICT_SUMMARIES);
    ok(text && n > 0 && strcmp(text, buf) == 0,
       "pw_json_dumps and pw_verdict_write give the same text");
    free(text);
    json_decref(o);
    json_decref(o2);

    o = json_pack("{s:s, s:[i, f, b, n], s:{}}", "k\"ey\n", "v\u00e9",
                  "list", -3, 0.5, 1, "empty");
    text = pw_json_dumps(o);
    ok_str(text, "{\"k\\\"ey\\n\":\"v\u00e9\",\"list\":[-3,0.5,true,"
           "null],\"empty\":{}}", "escapes, integers, literals, key order");
    free(text);
    json_decref(o);

    /* Strings and keys are escaped by pw_json's own writer when ASCII:
     * exactly as jansson's, every control character and a NUL included. */
    char all[40];
    for (int i = 0; i < 32; i++)
        all[i] = (char)i;
    memcpy(all + 32, "\"\\/a\x7f~ ", 7);
    o = json_pack("{s:s%,s:s,s:I,s:b}", "ctl\x01\t\"\\", all,
                  (size_t)39, "utf8 \u00e9\u2603", "\u00e9 \x1f",
                  "big", (json_int_t)-9007199254740993LL, "no", 0);
    text = pw_json_dumps(o);
    char *want = json_dumps(o, JSON_COMPACT | JSON_ENCODE_ANY);
    ok(text && want && strcmp(text, want) == 0,
       "strings and keys escaped as jansson escapes them");
    free(text);
    free(want);
    json_decref(o);

    o = json_array();
    json_t *inner = o;
    for (int i = 0; i < PW_JSON_DEPTH_MAX + 2; i++) {
        json_t *next = json_array();
        json_array_append_new(inner, next);
        inner = next;
    }
    text = pw_json_dumps(o);
    ok(text == NULL, "nesting beyond PW_JSON_DEPTH_MAX is refused");
    free(text);
    json_decref(o);
    ok(pw_json_dumps(NULL) == NULL, "NULL value gives NULL");
}

int
main(void)
{
    test_dumps();
    test_fields();
    test_round_trips();
    test_write_text();
    test_reader_errors();
    return tap_done();
}
