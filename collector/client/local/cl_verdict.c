/* cl_verdict.c -- `parity verdict`: one comparison from the command line,
 * or many as JSON Lines on stdin (--batch). See docs/commands/verdict.md.
 */
#include "cl_out.h"
#include "pw_out.h"
#include "cl_verbs.h"
#include "pw_json.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_VERB "verdict"

/* Longest batch line accepted: two arms of VD_MAX_SAMPLES samples at up
 * to 24 characters each would be 48 MiB; 64 MiB leaves room for spacing. */
#define S_LINE_MAX      (64u << 20)
/* Input is read, and output written, in blocks of this size. */
#define S_BLOCK         (1u << 20)
/* Longest error text of one batch line, before escaping. */
#define S_ERR_MAX       256
/* Most commas a line of two arms of VD_MAX_SAMPLES can need (the arms'
 * separators and those between the four keys, with room to spare). A
 * longer list is refused before jansson, which would spend about 40
 * bytes a value (1.4 GB on a 64 MiB line of "1,1,1..."). Only lines of
 * at least 2 bytes a value beyond it are counted. */
#define S_COMMAS_MAX    (2u * VD_MAX_SAMPLES + 8u)

static const char s_usage[] =
    "usage: parity verdict --a LIST --b LIST [--floor-us F] [--parity P]\n"
    "                      [--names A,B] [--json]\n"
    "       parity verdict --batch [--floor-us F] [--parity P] < LINES\n"
    "\n"
    "Judge subject samples A against other samples B (microseconds, comma\n"
    "separated): win, parity or loss by ../shared/spec/verdict-rule.md.\n"
    "\n"
    "  --a LIST        subject arm, e.g. 566,568,576,690,722\n"
    "  --b LIST        other arm\n"
    "  --floor-us F    noise floor in µs (default 25, the uncalibrated "
    "default)\n"
    "  --parity P      flat tolerance (default 0.04)\n"
    "  --names A,B     arm names for the table (default a,b)\n"
    "  --json          the verdict object of the written form, with "
    "summaries\n"
    "  --batch         JSON Lines on stdin, {\"a\": [...], \"b\": [...],\n"
    "                  \"floor_us\": F, \"parity\": P}, one verdict line out "
    "per\n"
    "                  line in; a bad line gets {\"line\": N, \"error\": "
    "...}\n"
    "                  and the exit status is 1. --floor-us and --parity\n"
    "                  set the defaults of lines that omit them.\n"
    "\n"
    "exit status: 0 done (whatever the outcome), 1 bad samples or a bad\n"
    "batch line, 2 usage error, 3 system error.\n";

typedef struct {
    const char *a_list;
    const char *b_list;
    const char *names;
    vd_params_t params;
    bool json;
    bool batch;
} s_opts_t;

/* ---- the single comparison ------------------------------------------- */

/* Check one arm the way the rule will, with the option's name in the
 * message. Returns 0 or -1 after printing. */
static int
s_check_arm(const char *opt, const double *x, size_t n)
{
    if (n < 2) {
        cl_out_error(S_VERB, "%s: %zu sample%s: at least 2 a side", opt, n,
                     n == 1 ? "" : "s");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (!(x[i] > 0.0)) {
            cl_out_error(S_VERB, "%s: sample %zu is %g: samples must be "
                         "finite and > 0", opt, i + 1, x[i]);
            return -1;
        }
    return 0;
}

static int
s_single(const s_opts_t *o)
{
    double *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    char err[S_ERR_MAX], name_a[PW_OUT_CELL_MAX] = "a",
         name_b[PW_OUT_CELL_MAX] = "b";
    vd_verdict_t v;
    json_t *j = NULL;
    int rc = PW_EXIT_USAGE;

    if (o->names) {
        const char *comma = strchr(o->names, ',');
        size_t la = comma ? (size_t)(comma - o->names) : 0;
        if (!comma || la == 0 || !comma[1] || strchr(comma + 1, ',')) {
            cl_out_error(S_VERB, "--names \"%s\": want two non-empty names "
                         "separated by one comma, e.g. --names new,old",
                         o->names);
            goto done;
        }
        if (la >= sizeof name_a || strlen(comma + 1) >= sizeof name_b) {
            cl_out_error(S_VERB, "--names: a name longer than %zu bytes",
                         sizeof name_a - 1);
            goto done;
        }
        memcpy(name_a, o->names, la);
        name_a[la] = '\0';
        snprintf(name_b, sizeof name_b, "%s", comma + 1);
        json_t *check = json_pack("[s,s]", name_a, name_b);
        if (!check) {   /* JSON strings must be UTF-8 */
            cl_out_error(S_VERB, "--names: the names are not UTF-8 text");
            goto done;
        }
        json_decref(check);
    }
    if (cl_out_parse_list(o->a_list, VD_MAX_SAMPLES, &a, &na, err,
                          sizeof err)) {
        cl_out_error(S_VERB, "--a: %s", err);
        goto done;
    }
    if (cl_out_parse_list(o->b_list, VD_MAX_SAMPLES, &b, &nb, err,
                          sizeof err)) {
        cl_out_error(S_VERB, "--b: %s", err);
        goto done;
    }
    rc = PW_EXIT_DATA;
    if (s_check_arm("--a", a, na) || s_check_arm("--b", b, nb))
        goto done;
    if (vd_compare(a, na, b, nb, &o->params, &v, err, sizeof err) != VD_OK) {
        cl_out_error(S_VERB, "%s", err);
        goto done;
    }
    rc = PW_EXIT_SYSTEM;
    if (o->json) {
        j = pw_verdict_to_json(&v, PW_VERDICT_SUMMARIES);
        if (!j || json_object_set_new(j, "subject_name",
                                      json_string(name_a)) ||
            json_object_set_new(j, "other_name", json_string(name_b)) ||
            pw_out_json(stdout, j) || fflush(stdout) != 0) {
            cl_out_error(S_VERB, "writing the JSON verdict failed");
            goto done;
        }
    } else {
        const char *names[2] = {name_a, name_b};
        vd_summary_t sums[2] = {v.a, v.b};
        if (pw_out_arms(stdout, names, sums, 2) || fputc('\n', stdout) < 0 ||
            pw_out_verdict(stdout, name_a, name_b, &v) ||
            fflush(stdout) != 0) {
            cl_out_error(S_VERB, "writing the table failed");
            goto done;
        }
    }
    rc = PW_EXIT_OK;
done:
    json_decref(j);
    free(a);
    free(b);
    return rc;
}

/* ---- batch ----------------------------------------------------------- */

/* Reused between lines, so a long batch allocates nothing per line once
 * the arrays have grown to the longest arm. */
typedef struct {
    double *a, *b;
    size_t cap_a, cap_b;
    vd_params_t defaults;
    char *out;          /* S_BLOCK + room for one line's answer */
    size_t out_len;
    size_t out_cap;
    bool bad_lines;     /* any line answered with an error: exit 1 */
    bool oom;           /* a line failed for want of memory: exit 3 */
    int write_errno;    /* errno of the first failed write, or 0 */
    bool fast;          /* use s_fast_line; off only to test jansson's path */
} s_batch_t;

static void
s_flush(s_batch_t *bt)
{
    if (bt->out_len && fwrite(bt->out, 1, bt->out_len, stdout) != bt->out_len
        && !bt->write_errno)
        bt->write_errno = errno ? errno : EIO;
    bt->out_len = 0;
}

/* Make room for n more output bytes. */
static char *
s_out_room(s_batch_t *bt, size_t n)
{
    if (bt->out_len + n > bt->out_cap)
        s_flush(bt);
    return bt->out_len + n <= bt->out_cap ? bt->out + bt->out_len : NULL;
}

/* {"line": N, "error": "..."} with the text escaped for JSON. The text
 * can quote the line (a key, jansson's "near '...'") and be cut by
 * snprintf mid-character, so bytes that are not valid UTF-8 become
 * U+FFFD: every output line stays valid JSON. */
static void
s_line_error(s_batch_t *bt, unsigned long long line, const char *text)
{
    char *p = s_out_room(bt, 64 + 6 * S_ERR_MAX);
    size_t k, n;
    bt->bad_lines = true;
    if (!p)
        return;
    k = (size_t)sprintf(p, "{\"line\":%llu,\"error\":\"", line);
    for (const unsigned char *s = (const unsigned char *)text; *s; s += n) {
        n = pw_out_utf8_len(s);
        if (*s == '"' || *s == '\\') {
            p[k++] = '\\';
            p[k++] = (char)*s;
        } else if (*s < 0x20) {
            k += (size_t)sprintf(p + k, "\\u%04x", *s);
        } else if (n == 0) {
            memcpy(p + k, "\\ufffd", 6);
            k += 6;
            n = 1;
        } else {
            memcpy(p + k, s, n);
            k += n;
        }
    }
    memcpy(p + k, "\"}\n", 3);
    bt->out_len += k + 3;
}

static int
s_grow(double **x, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < n)
        c *= 2;
    double *nx = realloc(*x, c * sizeof *nx);
    if (!nx)
        return -1;
    *x = nx;
    *cap = c;
    return 0;
}

/* The arm under key from a parsed line into *x. */
static int
s_arm_from_json(const json_t *line, const char *key, double **x,
                size_t *cap, size_t *n, bool *oom, char *err)
{
    const json_t *arr = json_object_get(line, key), *item;
    size_t i;

    if (!arr) {
        snprintf(err, S_ERR_MAX, "missing \"%s\" (an array of samples in "
                 "µs)", key);
        return -1;
    }
    if (!json_is_array(arr)) {
        snprintf(err, S_ERR_MAX, "\"%s\" is not an array", key);
        return -1;
    }
    *n = json_array_size(arr);
    if (*n > VD_MAX_SAMPLES) {
        snprintf(err, S_ERR_MAX, "\"%s\" has %zu samples, more than the "
                 "limit of %u", key, *n, VD_MAX_SAMPLES);
        return -1;
    }
    if (*n < 2) {
        snprintf(err, S_ERR_MAX, "\"%s\" has %zu sample%s: at least 2 a "
                 "side", key, *n, *n == 1 ? "" : "s");
        return -1;
    }
    if (s_grow(x, cap, *n)) {
        snprintf(err, S_ERR_MAX, "out of memory for %zu samples", *n);
        *oom = true;
        return -1;
    }
    json_array_foreach(arr, i, item) {
        if (!json_is_number(item)) {
            snprintf(err, S_ERR_MAX, "\"%s\"[%zu] is not a number", key, i);
            return -1;
        }
        (*x)[i] = json_number_value(item);
        if (!((*x)[i] > 0.0)) {
            snprintf(err, S_ERR_MAX, "\"%s\"[%zu] is %g: samples must be "
                     "finite and > 0", key, i, (*x)[i]);
            return -1;
        }
    }
    return 0;
}

static int
s_param_from_json(const json_t *line, const char *key, double *value,
                  char *err)
{
    const json_t *item = json_object_get(line, key);
    if (!item)
        return 0;
    if (!json_is_number(item)) {
        snprintf(err, S_ERR_MAX, "\"%s\" is not a number", key);
        return -1;
    }
    *value = json_number_value(item);
    if (!(*value >= 0.0)) {
        snprintf(err, S_ERR_MAX, "\"%s\" is %g: must be a number >= 0", key,
                 *value);
        return -1;
    }
    return 1;
}

/* One line through jansson. Returns 0 and fills the arms and params, or
 * -1 with err set. */
static int
s_parse_json_line(s_batch_t *bt, const char *text, size_t len, size_t *na,
                  size_t *nb, vd_params_t *p, char *err)
{
    json_error_t jerr;
    json_t *line;
    const char *key, *nul;
    json_t *item;
    int rc = -1, got;

    /* jansson words a NUL byte as "end of file expected near end of
     * file", which sends a reader looking for the wrong thing. */
    if ((nul = memchr(text, '\0', len))) {
        snprintf(err, S_ERR_MAX, "a NUL byte at column %zu: not JSON text",
                 (size_t)(nul - text) + 1);
        return -1;
    }
    line = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    /* jansson fails a malloc either with json_error_out_of_memory or,
     * deep in the lexer, with no error text at all. */
    if (!line && (json_error_code(&jerr) == json_error_out_of_memory ||
                  !jerr.text[0])) {
        snprintf(err, S_ERR_MAX, "out of memory parsing the line");
        bt->oom = true;
        return -1;
    }
    if (!line) {
        snprintf(err, S_ERR_MAX, "not JSON: %s at column %d", jerr.text,
                 jerr.column);
        return -1;
    }
    if (!json_is_object(line)) {
        snprintf(err, S_ERR_MAX, "not an object: want {\"a\": [...], "
                 "\"b\": [...]}");
        goto done;
    }
    json_object_foreach(line, key, item) {
        if (strcmp(key, "a") && strcmp(key, "b") && strcmp(key, "floor_us") &&
            strcmp(key, "parity")) {
            snprintf(err, S_ERR_MAX, "unknown key \"%.64s\" (known: a, b, "
                     "floor_us, parity)", key);
            goto done;
        }
    }
    if (s_arm_from_json(line, "a", &bt->a, &bt->cap_a, na, &bt->oom, err) ||
        s_arm_from_json(line, "b", &bt->b, &bt->cap_b, nb, &bt->oom, err))
        goto done;
    *p = bt->defaults;
    if ((got = s_param_from_json(line, "floor_us", &p->floor_us, err)) < 0)
        goto done;
    if (got)
        p->floor_is_default = false;
    if (s_param_from_json(line, "parity", &p->parity, err) < 0)
        goto done;
    rc = 0;
done:
    json_decref(line);
    return rc;
}

/* ---- the fast path of a batch line ----------------------------------
 *
 * Most lines are {"a": [numbers], "b": [numbers]} with maybe floor_us
 * and parity. This scanner accepts exactly that, in strict JSON, and
 * answers "not mine" (0) for anything else: an unusual spelling, an
 * error of any kind, a duplicate key. Those lines go through jansson,
 * which gives the error its text, so both paths give one answer per
 * line; tests/cli pins that they agree. jansson per line costs about
 * 5 us (a malloc per number); this about 1 us. */

typedef struct {
    const char *p;
    const char *end;
} s_scan_t;

static void
s_ws(s_scan_t *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
                             *s->p == '\r' || *s->p == '\n'))
        s->p++;
}

static const double s_exact_pow10[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* One JSON number, as jansson and strtod would read it. Returns 1 and
 * sets *x, or 0 for not a number or one this path leaves to jansson. */
static int
s_fast_number(s_scan_t *s, double *x)
{
    const char *start = s->p, *p = s->p;
    uint64_t mant = 0;
    int digits = 0, frac_digits = 0, exp10 = 0, exp_sign = 1;
    bool neg = false, is_int = true;

    if (p < s->end && *p == '-') {
        neg = true;
        p++;
    }
    if (p >= s->end || *p < '0' || *p > '9')
        return 0;
    if (*p == '0' && p + 1 < s->end && p[1] >= '0' && p[1] <= '9')
        return 0;                               /* leading zero: jansson */
    for (; p < s->end && *p >= '0' && *p <= '9'; p++, digits++)
        mant = mant * 10 + (uint64_t)(*p - '0');
    if (p < s->end && *p == '.') {
        is_int = false;
        p++;
        if (p >= s->end || *p < '0' || *p > '9')
            return 0;
        for (; p < s->end && *p >= '0' && *p <= '9'; p++, frac_digits++)
            mant = mant * 10 + (uint64_t)(*p - '0');
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) {
        int e = 0, e_digits = 0;
        is_int = false;
        p++;
        if (p < s->end && (*p == '+' || *p == '-'))
            exp_sign = *p++ == '-' ? -1 : 1;
        for (; p < s->end && *p >= '0' && *p <= '9' && e_digits < 4;
             p++, e_digits++)
            e = e * 10 + (*p - '0');
        if (e_digits == 0 || (p < s->end && *p >= '0' && *p <= '9'))
            return 0;
        exp10 = exp_sign * e;
    }
    s->p = p;
    /* jansson reads an integer token as json_int_t: beyond 18 digits it
     * may refuse ("too big integer"), so such tokens are its business. */
    if (is_int && digits > 18)
        return 0;
    /* jansson converts an integer token through json_int_t: "-0" is 0.0,
     * not -0.0, and the rounding is the integer's. */
    if (is_int) {
        *x = (double)(neg ? -(long long)mant : (long long)mant);
        return 1;
    }
    /* Clinger's fast path: an integer below 2^53 times an exact power of
     * ten is one correctly rounded operation, the value strtod gives. */
    exp10 -= frac_digits;
    if (digits + frac_digits <= 15 && exp10 >= -22 && exp10 <= 22) {
        double m = (double)mant;
        *x = exp10 < 0 ? m / s_exact_pow10[-exp10] : m * s_exact_pow10[exp10];
        if (neg)
            *x = -*x;
        return 1;
    }
    char tmp[64];
    size_t n = (size_t)(p - start);
    if (n >= sizeof tmp)
        return 0;
    memcpy(tmp, start, n);
    tmp[n] = '\0';
    *x = strtod(tmp, NULL);
    return isfinite(*x);
}

/* An array of samples, each > 0, into *x. */
static int
s_fast_arm(s_scan_t *s, double **x, size_t *cap, size_t *n)
{
    size_t count = 0;

    if (s->p >= s->end || *s->p != '[')
        return 0;
    s->p++;
    for (;;) {
        double v;
        s_ws(s);
        if (count == *cap && (count >= VD_MAX_SAMPLES ||
                              s_grow(x, cap, count + 1)))
            return 0;
        if (!s_fast_number(s, &v) || !(v > 0.0))
            return 0;
        (*x)[count++] = v;
        s_ws(s);
        if (s->p >= s->end)
            return 0;
        if (*s->p == ']') {
            s->p++;
            break;
        }
        if (*s->p != ',')
            return 0;
        s->p++;
    }
    *n = count;
    return count >= 2;
}

static int
s_fast_line(s_batch_t *bt, const char *text, size_t len, size_t *na,
            size_t *nb, vd_params_t *p)
{
    s_scan_t s = {text, text + len};
    unsigned seen = 0;  /* 1 a, 2 b, 4 floor_us, 8 parity */

    *p = bt->defaults;
    s_ws(&s);
    if (s.p >= s.end || *s.p != '{')
        return 0;
    s.p++;
    for (;;) {
        const char *key;
        size_t klen;
        unsigned bit;
        s_ws(&s);
        if (s.p >= s.end || *s.p != '"')
            return 0;
        key = ++s.p;
        while (s.p < s.end && *s.p != '"' && *s.p != '\\')
            s.p++;
        if (s.p >= s.end || *s.p != '"')
            return 0;
        klen = (size_t)(s.p - key);
        s.p++;
        s_ws(&s);
        if (s.p >= s.end || *s.p != ':')
            return 0;
        s.p++;
        s_ws(&s);
        if (klen == 1 && key[0] == 'a') {
            bit = 1;
            if (!s_fast_arm(&s, &bt->a, &bt->cap_a, na))
                return 0;
        } else if (klen == 1 && key[0] == 'b') {
            bit = 2;
            if (!s_fast_arm(&s, &bt->b, &bt->cap_b, nb))
                return 0;
        } else if (klen == 8 && memcmp(key, "floor_us", 8) == 0) {
            bit = 4;
            if (!s_fast_number(&s, &p->floor_us) || !(p->floor_us >= 0.0))
                return 0;
            p->floor_is_default = false;
        } else if (klen == 6 && memcmp(key, "parity", 6) == 0) {
            bit = 8;
            if (!s_fast_number(&s, &p->parity) || !(p->parity >= 0.0))
                return 0;
        } else {
            return 0;
        }
        if (seen & bit)
            return 0;                       /* duplicate: jansson refuses */
        seen |= bit;
        s_ws(&s);
        if (s.p >= s.end)
            return 0;
        if (*s.p == '}') {
            s.p++;
            break;
        }
        if (*s.p != ',')
            return 0;
        s.p++;
    }
    s_ws(&s);
    return s.p == s.end && (seen & 3) == 3;
}

static void
s_batch_line(s_batch_t *bt, unsigned long long lineno, const char *text,
             size_t len)
{
    char err[S_ERR_MAX], vderr[S_ERR_MAX];
    size_t na = 0, nb = 0;
    vd_params_t p;
    vd_verdict_t v;
    size_t i;
    char *o;
    int n;

    /* A UTF-8 byte order mark before the first line (Windows tools
     * write one): RFC 8259 lets a parser ignore it, and jansson's
     * message would quote an invisible character. */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        if (lineno > 1) {
            s_line_error(bt, lineno, "a byte order mark (U+FEFF) starts the "
                         "line: only the first line may have one");
            return;
        }
        text += 3;
        len -= 3;
    }
    for (i = 0; i < len; i++)
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\r')
            break;
    if (i == len) {
        s_line_error(bt, lineno, "empty line");
        return;
    }
    if (len / 2 > S_COMMAS_MAX) {
        size_t commas = 0;
        for (const char *c = text; (c = memchr(c, ',', len -
                                              (size_t)(c - text))); c++)
            commas++;
        if (commas > S_COMMAS_MAX) {
            snprintf(err, sizeof err, "%zu commas: more values than two "
                     "arms of at most %u samples", commas, VD_MAX_SAMPLES);
            s_line_error(bt, lineno, err);
            return;
        }
    }
    if (!(bt->fast && s_fast_line(bt, text, len, &na, &nb, &p)) &&
        s_parse_json_line(bt, text, len, &na, &nb, &p, err)) {
        s_line_error(bt, lineno, err);
        return;
    }
    if (vd_compare(bt->a, na, bt->b, nb, &p, &v, vderr, sizeof vderr)) {
        s_line_error(bt, lineno, vderr);
        return;
    }
    if (!(o = s_out_room(bt, PW_VERDICT_TEXT_MAX + 1)))
        return;
    n = pw_verdict_write(o, PW_VERDICT_TEXT_MAX, &v, 0);
    if (n < 0) {
        s_line_error(bt, lineno, "verdict text too long");
        return;
    }
    o[n] = '\n';
    bt->out_len += (size_t)n + 1;
}

static int
s_batch(const s_opts_t *o)
{
    s_batch_t bt = {0};
    char *in = NULL;
    size_t cap = S_BLOCK, len = 0, start = 0, scan = 0;
    unsigned long long lineno = 1;
    int eof = 0, skipping = 0, rc = PW_EXIT_SYSTEM;

    bt.defaults = o->params;
    /* PARITY_BATCH_JANSSON=1 sends every line through jansson: the tests
     * compare both paths on the same input. */
    bt.fast = !getenv("PARITY_BATCH_JANSSON");
    bt.out_cap = S_BLOCK + PW_VERDICT_TEXT_MAX + 64 + 6 * S_ERR_MAX;
    if (!(bt.out = malloc(bt.out_cap)) || !(in = malloc(cap))) {
        cl_out_error(S_VERB, "out of memory for the batch buffers");
        goto done;
    }
    for (;;) {
        char *nl = memchr(in + scan, '\n', len - scan);
        if (nl) {
            size_t end = (size_t)(nl - in);
            if (skipping)
                skipping = 0;
            else
                s_batch_line(&bt, lineno, in + start, end - start);
            lineno++;
            start = scan = end + 1;
            continue;
        }
        if (eof) {
            if (len > start && !skipping)
                s_batch_line(&bt, lineno, in + start, len - start);
            break;
        }
        /* No newline in what is buffered: keep the partial line, make
         * room, read more. A line beyond S_LINE_MAX is answered with an
         * error and the rest of it skipped. */
        if (start > 0) {
            memmove(in, in + start, len - start);
            len -= start;
            start = 0;
        }
        scan = len;
        if (len == cap) {
            if (cap >= S_LINE_MAX) {
                char msg[S_ERR_MAX];
                if (!skipping) {
                    /* The buffer holds S_LINE_MAX bytes with the
                     * newline, so the longest line is one less. */
                    snprintf(msg, sizeof msg, "line longer than %u bytes",
                             S_LINE_MAX - 1);
                    s_line_error(&bt, lineno, msg);
                }
                skipping = 1;
                len = scan = 0;
            } else {
                char *grown = realloc(in, cap * 2);
                if (!grown) {
                    cl_out_error(S_VERB, "out of memory for a line of %zu "
                                 "bytes", len);
                    goto done;
                }
                in = grown;
                cap *= 2;
            }
        }
        size_t got = fread(in + len, 1, cap - len, stdin);
        if (got == 0) {
            if (ferror(stdin)) {
                cl_out_error(S_VERB, "reading stdin: %s", strerror(errno));
                goto done;
            }
            eof = 1;
        }
        len += got;
    }
    s_flush(&bt);
    if (fflush(stdout) != 0 && !bt.write_errno)
        bt.write_errno = errno ? errno : EIO;
    if (bt.write_errno) {
        cl_out_error(S_VERB, "writing stdout: %s", strerror(bt.write_errno));
        goto done;
    }
    if (bt.oom)
        cl_out_error(S_VERB, "out of memory answering a line (its error "
                     "line says where)");
    rc = bt.oom ? PW_EXIT_SYSTEM : bt.bad_lines ? PW_EXIT_DATA : PW_EXIT_OK;
done:
    free(in);
    free(bt.out);
    free(bt.a);
    free(bt.b);
    return rc;
}

/* ---- options --------------------------------------------------------- */

enum { S_OPT_A = 256, S_OPT_B, S_OPT_NAMES, S_OPT_JSON, S_OPT_BATCH };

static const struct option s_options[] = {
    {"a", required_argument, NULL, S_OPT_A},
    {"b", required_argument, NULL, S_OPT_B},
    PW_OUT_RULE_OPTIONS,
    {"names", required_argument, NULL, S_OPT_NAMES},
    {"json", no_argument, NULL, S_OPT_JSON},
    {"batch", no_argument, NULL, S_OPT_BATCH},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};


int
cl_verdict_main(int argc, char **argv)
{
    s_opts_t o = {0};
    int c, rule;

    vd_params_default(&o.params);
    if (cl_out_wants_help(argc, argv)) {
        return cl_out_help(S_VERB, s_usage);
    }
    optind = 0;     /* full reinitialisation of glibc's getopt */
    opterr = 0;     /* our own messages, pinned by tests */
    while ((c = getopt_long(argc, argv, ":h", s_options, NULL)) != -1) {
        switch (c) {
        case S_OPT_A: o.a_list = optarg; break;
        case S_OPT_B: o.b_list = optarg; break;
        case S_OPT_NAMES: o.names = optarg; break;
        case S_OPT_JSON: o.json = true; break;
        case S_OPT_BATCH: o.batch = true; break;
        default:
            rule = cl_out_rule_opt(S_VERB, c, optarg, &o.params);
            if (rule > 0)
                break;
            if (rule == 0)
                cl_out_option_error(S_VERB, c, argv);
            return PW_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        cl_out_error(S_VERB, "unexpected argument \"%s\"", argv[optind]);
        return PW_EXIT_USAGE;
    }
    if (o.batch) {
        if (o.a_list || o.b_list || o.names || o.json) {
            cl_out_error(S_VERB, "--batch reads its arms from stdin and "
                         "writes JSON: drop --a, --b, --names and --json");
            return PW_EXIT_USAGE;
        }
        return s_batch(&o);
    }
    if (!o.a_list || !o.b_list) {
        cl_out_error(S_VERB, "--a and --b are both needed (or --batch); "
                     "parity verdict --help");
        return PW_EXIT_USAGE;
    }
    return s_single(&o);
}
