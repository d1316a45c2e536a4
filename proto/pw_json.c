/* pw_json.c -- the verdict's written form; see pw_json.h. */
#include "pw_json.h"

#include "vd_adaptive.h"
#include "vd_counter.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_err.h"

/* Every diagnostic bit vd_verdict.h defines, in bit order. The bits are
 * found by asking vd_diag_name, so a new bit needs no change here. */
#define S_DIAG_BITS 32

/* ---- building -------------------------------------------------------- */

/* json_object_set_new that reports failure (it already frees value). */
static int
s_set(json_t *obj, const char *key, json_t *value)
{
    return value && json_object_set_new(obj, key, value) == 0 ? 0 : -1;
}

json_t *
pw_summary_to_json(const vd_summary_t *s)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    if (s_set(o, "n", json_integer((json_int_t)s->n)) ||
        s_set(o, "min", json_real(s->min)) ||
        s_set(o, "q25", json_real(s->q25)) ||
        s_set(o, "median", json_real(s->median)) ||
        s_set(o, "q75", json_real(s->q75)) ||
        s_set(o, "max", json_real(s->max)) ||
        s_set(o, "iqr", json_real(s->iqr)) ||
        s_set(o, "mean", json_real(s->mean))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *
pw_diagnostics_to_json(unsigned bits)
{
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    for (unsigned i = 0; i < S_DIAG_BITS; i++) {
        unsigned bit = 1u << i;
        const char *name = vd_diag_name(bit);
        if (!(bits & bit) || !name)
            continue;
        if (json_array_append_new(arr, json_string(name)) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

json_t *
pw_verdict_to_json(const vd_verdict_t *v, unsigned flags)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    if (s_set(o, "outcome", json_string(vd_outcome_name(v->outcome))) ||
        s_set(o, "ratio", json_real(v->ratio)) ||
        s_set(o, "best_ratio", json_real(v->best_ratio)) ||
        s_set(o, "tolerance", json_real(v->tolerance)) ||
        s_set(o, "noise", json_real(v->noise)) ||
        s_set(o, "best_tolerance", json_real(v->best_tolerance)) ||
        s_set(o, "floor_us", json_real(v->floor_us)) ||
        s_set(o, "parity", json_real(v->parity)) ||
        s_set(o, "diagnostics", pw_diagnostics_to_json(v->diagnostics)) ||
        s_set(o, "extra_runs", json_integer(v->extra_runs)))
        goto fail;
    if ((flags & PW_VERDICT_SUMMARIES) &&
        (s_set(o, "subject", pw_summary_to_json(&v->a)) ||
         s_set(o, "other", pw_summary_to_json(&v->b))))
        goto fail;
    return o;
fail:
    json_decref(o);
    return NULL;
}

json_t *
pw_counter_compare_json(const char *counter, const double *a, size_t na,
                        const double *b, size_t nb, const vd_verdict_t *wall)
{
    vd_verdict_t cv;
    char text[VD_COUNTER_TEXT_MAX], e[256];
    if (!a || !b || vd_counter_compare(a, na, b, nb, wall->parity, &cv, e,
                                       sizeof e) != VD_OK)
        return NULL;
    vd_counter_text(text, sizeof text, counter, wall->outcome, &cv);
    return json_pack("{s:s,s:s,s:f,s:f,s:f,s:f,s:b,s:f,s:f,s:s}",
                     "counter", counter,
                     "outcome", vd_outcome_name(cv.outcome),
                     "ratio", cv.ratio, "best_ratio", cv.best_ratio,
                     "tolerance", cv.tolerance, "noise", cv.noise,
                     "decisive", vd_adaptive_decisive(&cv),
                     "subject_median", cv.a.median,
                     "other_median", cv.b.median, "text", text);
}

/* ---- reading --------------------------------------------------------- */

static int
s_get_number(const json_t *obj, const char *key, double *out,
             char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        pw_err(err, errlen, "missing \"%s\"", key);
        return PW_ERR;
    }
    if (!json_is_number(v)) {
        pw_err(err, errlen, "\"%s\" is not a number", key);
        return PW_ERR;
    }
    *out = json_number_value(v);
    return PW_OK;
}

int
pw_summary_from_json(const json_t *obj, vd_summary_t *out,
                     char *err, size_t errlen)
{
    vd_summary_t s;
    const json_t *n;

    if (!json_is_object(obj)) {
        pw_err(err, errlen, "summary is not an object");
        return PW_ERR;
    }
    n = json_object_get(obj, "n");
    if (!json_is_integer(n) || json_integer_value(n) < 0 ||
        json_integer_value(n) > (json_int_t)VD_MAX_SAMPLES) {
        pw_err(err, errlen, "summary \"n\" is not an integer in 0..%u",
               VD_MAX_SAMPLES);
        return PW_ERR;
    }
    s.n = (size_t)json_integer_value(n);
    if (s_get_number(obj, "min", &s.min, err, errlen) ||
        s_get_number(obj, "q25", &s.q25, err, errlen) ||
        s_get_number(obj, "median", &s.median, err, errlen) ||
        s_get_number(obj, "q75", &s.q75, err, errlen) ||
        s_get_number(obj, "max", &s.max, err, errlen) ||
        s_get_number(obj, "iqr", &s.iqr, err, errlen) ||
        s_get_number(obj, "mean", &s.mean, err, errlen))
        return PW_ERR;
    *out = s;
    return PW_OK;
}

int
pw_diagnostics_from_json(const json_t *arr, unsigned *bits,
                         char *err, size_t errlen)
{
    unsigned result = 0;
    size_t i;
    const json_t *item;

    if (!json_is_array(arr)) {
        pw_err(err, errlen, "\"diagnostics\" is not an array");
        return PW_ERR;
    }
    json_array_foreach(arr, i, item) {
        const char *name = json_string_value(item);
        unsigned b;
        if (!name) {
            pw_err(err, errlen, "diagnostic %zu is not a string", i + 1);
            return PW_ERR;
        }
        for (b = 0; b < S_DIAG_BITS; b++) {
            const char *known = vd_diag_name(1u << b);
            if (known && strcmp(known, name) == 0)
                break;
        }
        if (b == S_DIAG_BITS) {
            pw_err(err, errlen, "unknown diagnostic \"%.64s\"", name);
            return PW_ERR;
        }
        result |= 1u << b;
    }
    *bits = result;
    return PW_OK;
}

int
pw_verdict_from_json(const json_t *obj, vd_verdict_t *out,
                     char *err, size_t errlen)
{
    vd_verdict_t v;
    const json_t *item;
    const char *outcome;
    char sub[160];

    if (!json_is_object(obj)) {
        pw_err(err, errlen, "verdict is not an object");
        return PW_ERR;
    }
    memset(&v, 0, sizeof v);
    outcome = json_string_value(json_object_get(obj, "outcome"));
    if (!outcome) {
        pw_err(err, errlen, "missing \"outcome\" (a string)");
        return PW_ERR;
    }
    if (vd_outcome_parse(outcome, &v.outcome) != VD_OK) {
        pw_err(err, errlen,
               "\"outcome\" is \"%.32s\": not win, parity or loss", outcome);
        return PW_ERR;
    }
    if (s_get_number(obj, "ratio", &v.ratio, err, errlen) ||
        s_get_number(obj, "best_ratio", &v.best_ratio, err, errlen) ||
        s_get_number(obj, "tolerance", &v.tolerance, err, errlen) ||
        s_get_number(obj, "noise", &v.noise, err, errlen) ||
        s_get_number(obj, "best_tolerance", &v.best_tolerance, err, errlen) ||
        s_get_number(obj, "floor_us", &v.floor_us, err, errlen) ||
        s_get_number(obj, "parity", &v.parity, err, errlen))
        return PW_ERR;
    if ((item = json_object_get(obj, "diagnostics")) &&
        pw_diagnostics_from_json(item, &v.diagnostics, err, errlen))
        return PW_ERR;
    if ((item = json_object_get(obj, "extra_runs"))) {
        if (!json_is_integer(item) || json_integer_value(item) < 0 ||
            json_integer_value(item) > VD_MAX_EXTRA_RUNS) {
            pw_err(err, errlen, "\"extra_runs\" is not an integer in 0..%d",
                   VD_MAX_EXTRA_RUNS);
            return PW_ERR;
        }
        v.extra_runs = (unsigned)json_integer_value(item);
    }
    if ((item = json_object_get(obj, "subject")) &&
        pw_summary_from_json(item, &v.a, sub, sizeof sub)) {
        pw_err(err, errlen, "\"subject\": %s", sub);
        return PW_ERR;
    }
    if ((item = json_object_get(obj, "other")) &&
        pw_summary_from_json(item, &v.b, sub, sizeof sub)) {
        pw_err(err, errlen, "\"other\": %s", sub);
        return PW_ERR;
    }
    *out = v;
    return PW_OK;
}

/* ---- writing text ---------------------------------------------------- */

/* Shortest round-trip digits by Grisu2 (Florian Loitsch, "Printing
 * floating-point numbers quickly and accurately with integers", PLDI
 * 2010), in the form of Milo Yip's dtoa (MIT). printf("%.17g") plus a
 * strtod check costs about 1 us a number, which alone would cap
 * `parity verdict --batch` near 100,000 lines/s; this takes about 50 ns.
 * Grisu2 always reads back exactly and is shortest for all but a tiny
 * fraction of doubles (those get a digit more); tests/cli/test_pw_json.c
 * checks the round trip on millions of values. */
typedef struct {
    uint64_t f;
    int e;
} s_fp_t;

/* 10^k for k = -348, -340, ..., 340: 64-bit normalised significand and
 * binary exponent (generated exactly with Python integers). */
static const s_fp_t s_pow10_cache[87] = {
    {0xfa8fd5a0081c0288ull, -1220}, {0xbaaee17fa23ebf76ull, -1193}, {0x8b16fb203055ac76ull, -1166},
    {0xcf42894a5dce35eaull, -1140}, {0x9a6bb0aa55653b2dull, -1113}, {0xe61acf033d1a45dfull, -1087},
    {0xab70fe17c79ac6caull, -1060}, {0xff77b1fcbebcdc4full, -1034}, {0xbe5691ef416bd60cull, -1007},
    {0x8dd01fad907ffc3cull, -980}, {0xd3515c2831559a83ull, -954}, {0x9d71ac8fada6c9b5ull, -927},
    {0xea9c227723ee8bcbull, -901}, {0xaecc49914078536dull, -874}, {0x823c12795db6ce57ull, -847},
    {0xc21094364dfb5637ull, -821}, {0x9096ea6f3848984full, -794}, {0xd77485cb25823ac7ull, -768},
    {0xa086cfcd97bf97f4ull, -741}, {0xef340a98172aace5ull, -715}, {0xb23867fb2a35b28eull, -688},
    {0x84c8d4dfd2c63f3bull, -661}, {0xc5dd44271ad3cdbaull, -635}, {0x936b9fcebb25c996ull, -608},
    {0xdbac6c247d62a584ull, -582}, {0xa3ab66580d5fdaf6ull, -555}, {0xf3e2f893dec3f126ull, -529},
    {0xb5b5ada8aaff80b8ull, -502}, {0x87625f056c7c4a8bull, -475}, {0xc9bcff6034c13053ull, -449},
    {0x964e858c91ba2655ull, -422}, {0xdff9772470297ebdull, -396}, {0xa6dfbd9fb8e5b88full, -369},
    {0xf8a95fcf88747d94ull, -343}, {0xb94470938fa89bcfull, -316}, {0x8a08f0f8bf0f156bull, -289},
    {0xcdb02555653131b6ull, -263}, {0x993fe2c6d07b7facull, -236}, {0xe45c10c42a2b3b06ull, -210},
    {0xaa242499697392d3ull, -183}, {0xfd87b5f28300ca0eull, -157}, {0xbce5086492111aebull, -130},
    {0x8cbccc096f5088ccull, -103}, {0xd1b71758e219652cull, -77}, {0x9c40000000000000ull, -50},
    {0xe8d4a51000000000ull, -24}, {0xad78ebc5ac620000ull, 3}, {0x813f3978f8940984ull, 30},
    {0xc097ce7bc90715b3ull, 56}, {0x8f7e32ce7bea5c70ull, 83}, {0xd5d238a4abe98068ull, 109},
    {0x9f4f2726179a2245ull, 136}, {0xed63a231d4c4fb27ull, 162}, {0xb0de65388cc8ada8ull, 189},
    {0x83c7088e1aab65dbull, 216}, {0xc45d1df942711d9aull, 242}, {0x924d692ca61be758ull, 269},
    {0xda01ee641a708deaull, 295}, {0xa26da3999aef774aull, 322}, {0xf209787bb47d6b85ull, 348},
    {0xb454e4a179dd1877ull, 375}, {0x865b86925b9bc5c2ull, 402}, {0xc83553c5c8965d3dull, 428},
    {0x952ab45cfa97a0b3ull, 455}, {0xde469fbd99a05fe3ull, 481}, {0xa59bc234db398c25ull, 508},
    {0xf6c69a72a3989f5cull, 534}, {0xb7dcbf5354e9beceull, 561}, {0x88fcf317f22241e2ull, 588},
    {0xcc20ce9bd35c78a5ull, 614}, {0x98165af37b2153dfull, 641}, {0xe2a0b5dc971f303aull, 667},
    {0xa8d9d1535ce3b396ull, 694}, {0xfb9b7cd9a4a7443cull, 720}, {0xbb764c4ca7a44410ull, 747},
    {0x8bab8eefb6409c1aull, 774}, {0xd01fef10a657842cull, 800}, {0x9b10a4e5e9913129ull, 827},
    {0xe7109bfba19c0c9dull, 853}, {0xac2820d9623bf429ull, 880}, {0x80444b5e7aa7cf85ull, 907},
    {0xbf21e44003acdd2dull, 933}, {0x8e679c2f5e44ff8full, 960}, {0xd433179d9c8cb841ull, 986},
    {0x9e19db92b4e31ba9ull, 1013}, {0xeb96bf6ebadf77d9ull, 1039}, {0xaf87023b9bf0ee6bull, 1066},
};

static s_fp_t
s_fp_mul(s_fp_t a, s_fp_t b)
{
    unsigned __int128 p = (unsigned __int128)a.f * b.f;
    uint64_t h = (uint64_t)(p >> 64);
    if ((uint64_t)p & (1ull << 63))
        h++;                                   /* round */
    return (s_fp_t){h, a.e + b.e + 64};
}

static s_fp_t
s_fp_normalize(s_fp_t x)
{
    int shift = __builtin_clzll(x.f);
    return (s_fp_t){x.f << shift, x.e - shift};
}

static void
s_grisu_round(char *buf, int len, uint64_t delta, uint64_t rest,
              uint64_t ten_kappa, uint64_t wp_w)
{
    while (rest < wp_w && delta - rest >= ten_kappa &&
           (rest + ten_kappa < wp_w ||
            wp_w - rest > rest + ten_kappa - wp_w)) {
        buf[len - 1]--;
        rest += ten_kappa;
    }
}

static const uint64_t s_pow10_u64[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
    10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
    100000000000ull, 1000000000000ull, 10000000000000ull,
    100000000000000ull, 1000000000000000ull, 10000000000000000ull,
    100000000000000000ull, 1000000000000000000ull,
    10000000000000000000ull,
};

/* Digits of a positive finite x into digits[0..*len) (at most 18), with
 * x ~= digits * 10^*k. */
static void
s_grisu2(double x, char *digits, int *len, int *k)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int biased = (int)((bits >> 52) & 0x7ff);
    uint64_t frac = bits & ((1ull << 52) - 1);
    s_fp_t v = biased ? (s_fp_t){frac | (1ull << 52), biased - 1075}
                      : (s_fp_t){frac, -1074};

    /* Boundaries m+ and m- halfway to the neighbouring doubles. */
    s_fp_t plus = {(v.f << 1) + 1, v.e - 1};
    while (!(plus.f & (1ull << 53))) {
        plus.f <<= 1;
        plus.e--;
    }
    plus.f <<= 10;
    plus.e -= 10;
    s_fp_t minus = (v.f == (1ull << 52)) ? (s_fp_t){(v.f << 2) - 1, v.e - 2}
                                         : (s_fp_t){(v.f << 1) - 1, v.e - 1};
    minus.f <<= minus.e - plus.e;
    minus.e = plus.e;

    /* A cached power c = 10^-K that brings plus's exponent into
     * [-60, -32]. */
    double dk = (-61 - plus.e) * 0.30102999566398114 + 347;
    int ik = (int)dk;
    if (dk - ik > 0.0)
        ik++;
    unsigned index = (unsigned)((ik >> 3) + 1);
    *k = -(-348 + (int)(index << 3));
    s_fp_t c = s_pow10_cache[index];

    s_fp_t w = s_fp_mul(s_fp_normalize(v), c);
    s_fp_t wp = s_fp_mul(plus, c);
    s_fp_t wm = s_fp_mul(minus, c);
    wm.f++;
    wp.f--;

    /* Digit generation. */
    uint64_t delta = wp.f - wm.f;
    s_fp_t one = {1ull << -wp.e, wp.e};
    uint64_t wp_w = wp.f - w.f;
    uint32_t p1 = (uint32_t)(wp.f >> -one.e);
    uint64_t p2 = wp.f & (one.f - 1);
    int kappa = 1;
    while (kappa < 10 && p1 >= s_pow10_u64[kappa])
        kappa++;
    *len = 0;
    while (kappa > 0) {
        uint32_t div = (uint32_t)s_pow10_u64[kappa - 1];
        uint32_t d = p1 / div;
        p1 %= div;
        if (d || *len)
            digits[(*len)++] = (char)('0' + d);
        kappa--;
        uint64_t tmp = ((uint64_t)p1 << -one.e) + p2;
        if (tmp <= delta) {
            *k += kappa;
            s_grisu_round(digits, *len, delta, tmp,
                          s_pow10_u64[kappa] << -one.e, wp_w);
            return;
        }
    }
    for (;;) {
        p2 *= 10;
        delta *= 10;
        char d = (char)(p2 >> -one.e);
        if (d || *len)
            digits[(*len)++] = (char)('0' + d);
        p2 &= one.f - 1;
        kappa--;
        if (p2 < delta) {
            *k += kappa;
            s_grisu_round(digits, *len, delta, p2, one.f,
                          -kappa < 20 ? wp_w * s_pow10_u64[-kappa] : 0);
            return;
        }
    }
}

int
pw_format_double(char *buf, size_t len, double x)
{
    char digits[24], tmp[40];
    int n = 0, nd, k;

    if (!isfinite(x))
        return -1;
    if (x == 0.0) {
        n = snprintf(tmp, sizeof tmp, "%s", signbit(x) ? "-0.0" : "0.0");
        goto copy;
    }
    if (x < 0.0) {
        tmp[n++] = '-';
        x = -x;
    }
    s_grisu2(x, digits, &nd, &k);
    /* x = 0.d1d2...dnd * 10^point. Plain notation for 1e-4 <= x < 1e17,
     * as %.17g would choose; otherwise d.ddde[+-]XX. */
    int point = nd + k;
    if (point > 0 && point <= 17) {
        if (nd <= point) {                       /* integer: 1200.0 */
            memcpy(tmp + n, digits, (size_t)nd);
            n += nd;
            memset(tmp + n, '0', (size_t)(point - nd));
            n += point - nd;
            memcpy(tmp + n, ".0", 2);
            n += 2;
        } else {                                 /* 12.345 */
            memcpy(tmp + n, digits, (size_t)point);
            n += point;
            tmp[n++] = '.';
            memcpy(tmp + n, digits + point, (size_t)(nd - point));
            n += nd - point;
        }
    } else if (point <= 0 && point > -4) {       /* 0.00123 */
        tmp[n++] = '0';
        tmp[n++] = '.';
        memset(tmp + n, '0', (size_t)-point);
        n += -point;
        memcpy(tmp + n, digits, (size_t)nd);
        n += nd;
    } else {                                     /* 1.5e-07, 1e+20 */
        int exp10 = point - 1;
        tmp[n++] = digits[0];
        if (nd > 1) {
            tmp[n++] = '.';
            memcpy(tmp + n, digits + 1, (size_t)(nd - 1));
            n += nd - 1;
        }
        n += snprintf(tmp + n, sizeof tmp - (size_t)n, "e%c%02d",
                      exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
    tmp[n] = '\0';
copy:
    if ((size_t)n >= len)
        return -1;
    memcpy(buf, tmp, (size_t)n + 1);
    return n;
}

/* A bounded appender: pos only moves while everything fits. */
typedef struct {
    char *buf;
    size_t len;
    size_t pos;
    int full;
} s_text_t;

static void
s_puts(s_text_t *t, const char *s)
{
    size_t n = strlen(s);
    if (t->full || t->pos + n >= t->len) {
        t->full = 1;
        return;
    }
    memcpy(t->buf + t->pos, s, n + 1);
    t->pos += n;
}

static void
s_number(s_text_t *t, const char *key, double x)
{
    char num[32];
    s_puts(t, key);
    if (pw_format_double(num, sizeof num, x) < 0)
        s_puts(t, "null");   /* not finite: JSON has no spelling for it */
    else
        s_puts(t, num);
}

static void
s_count(s_text_t *t, const char *key, unsigned long long x)
{
    char num[32];
    snprintf(num, sizeof num, "%llu", x);
    s_puts(t, key);
    s_puts(t, num);
}

static void
s_summary(s_text_t *t, const char *key, const vd_summary_t *s)
{
    s_puts(t, key);
    s_count(t, "{\"n\":", s->n);
    s_number(t, ",\"min\":", s->min);
    s_number(t, ",\"q25\":", s->q25);
    s_number(t, ",\"median\":", s->median);
    s_number(t, ",\"q75\":", s->q75);
    s_number(t, ",\"max\":", s->max);
    s_number(t, ",\"iqr\":", s->iqr);
    s_number(t, ",\"mean\":", s->mean);
    s_puts(t, "}");
}

int
pw_verdict_write(char *buf, size_t len, const vd_verdict_t *v,
                 unsigned flags)
{
    s_text_t t = {buf, len, 0, 0};
    const char *sep = "";

    if (len == 0)
        return -1;
    buf[0] = '\0';
    s_puts(&t, "{\"outcome\":\"");
    s_puts(&t, vd_outcome_name(v->outcome));
    s_number(&t, "\",\"ratio\":", v->ratio);
    s_number(&t, ",\"best_ratio\":", v->best_ratio);
    s_number(&t, ",\"tolerance\":", v->tolerance);
    s_number(&t, ",\"noise\":", v->noise);
    s_number(&t, ",\"best_tolerance\":", v->best_tolerance);
    s_number(&t, ",\"floor_us\":", v->floor_us);
    s_number(&t, ",\"parity\":", v->parity);
    s_puts(&t, ",\"diagnostics\":[");
    for (unsigned i = 0; i < S_DIAG_BITS; i++) {
        const char *name = vd_diag_name(1u << i);
        if (!(v->diagnostics & (1u << i)) || !name)
            continue;
        s_puts(&t, sep);
        s_puts(&t, "\"");
        s_puts(&t, name);
        s_puts(&t, "\"");
        sep = ",";
    }
    s_count(&t, "],\"extra_runs\":", v->extra_runs);
    if (flags & PW_VERDICT_SUMMARIES) {
        s_summary(&t, ",\"subject\":", &v->a);
        s_summary(&t, ",\"other\":", &v->b);
    }
    s_puts(&t, "}");
    return t.full ? -1 : (int)t.pos;
}

/* ---- dumping any value with exact short reals ------------------------ */

typedef struct {
    char *buf;
    size_t len;
    size_t cap;
    int failed;
} s_grow_t;

static void
s_grow_put(s_grow_t *g, const char *s, size_t n)
{
    if (g->failed)
        return;
    if (g->len + n + 1 > g->cap) {
        size_t cap = g->cap ? g->cap : 256;
        while (cap < g->len + n + 1)
            cap *= 2;
        char *nb;
        if (cap > PW_JSON_TEXT_MAX || !(nb = realloc(g->buf, cap))) {
            g->failed = 1;
            return;
        }
        g->buf = nb;
        g->cap = cap;
    }
    memcpy(g->buf + g->len, s, n);
    g->len += n;
    g->buf[g->len] = '\0';
}

/* A string or other leaf through jansson's own encoder, so escaping is
 * exactly jansson's. */
static void
s_grow_leaf(s_grow_t *g, const json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text) {
        g->failed = 1;
        return;
    }
    s_grow_put(g, text, strlen(text));
    free(text);
}

/* s as a JSON string, escaped as jansson's encoder does with the flags
 * pw_json_dumps uses (", \\, \b \f \n \r \t, other control characters
 * as \u00XX, the rest as it is). Text with a byte beyond ASCII goes
 * through jansson (s_grow_leaf) so that its UTF-8 check stays the one
 * that decides. Keys and strings through jansson, one allocation each,
 * were two thirds of the collector's time encoding a `series` answer. */
static void
s_grow_str(s_grow_t *g, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) {
            json_t *j = json_stringn(s, n);
            if (!j)
                g->failed = 1;
            else
                s_grow_leaf(g, j);
            json_decref(j);
            return;
        }
    s_grow_put(g, "\"", 1);
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[7] = { '\\', 0 };
        size_t elen = 2;
        if (c == '"' || c == '\\')
            esc[1] = (char)c;
        else if (c == '\b')
            esc[1] = 'b';
        else if (c == '\f')
            esc[1] = 'f';
        else if (c == '\n')
            esc[1] = 'n';
        else if (c == '\r')
            esc[1] = 'r';
        else if (c == '\t')
            esc[1] = 't';
        else if (c < 0x20) {
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            elen = 6;
        } else
            continue;
        s_grow_put(g, s + from, i - from);
        s_grow_put(g, esc, elen);
        from = i + 1;
    }
    s_grow_put(g, s + from, n - from);
    s_grow_put(g, "\"", 1);
}

static void
s_grow_value(s_grow_t *g, const json_t *j, int depth)
{
    char num[32];
    const char *key;
    json_t *item;
    size_t i;
    int n;

    if (depth > PW_JSON_DEPTH_MAX) {
        g->failed = 1;
        return;
    }
    switch (json_typeof(j)) {
    case JSON_REAL:
        if ((n = pw_format_double(num, sizeof num, json_real_value(j))) < 0)
            g->failed = 1;
        else
            s_grow_put(g, num, (size_t)n);
        break;
    case JSON_OBJECT:
        s_grow_put(g, "{", 1);
        i = 0;
        json_object_foreach((json_t *)j, key, item) {
            if (i++)
                s_grow_put(g, ",", 1);
            s_grow_str(g, key, strlen(key));
            s_grow_put(g, ":", 1);
            s_grow_value(g, item, depth + 1);
        }
        s_grow_put(g, "}", 1);
        break;
    case JSON_ARRAY:
        s_grow_put(g, "[", 1);
        json_array_foreach(j, i, item) {
            if (i)
                s_grow_put(g, ",", 1);
            s_grow_value(g, item, depth + 1);
        }
        s_grow_put(g, "]", 1);
        break;
    case JSON_STRING:
        s_grow_str(g, json_string_value(j), json_string_length(j));
        break;
    case JSON_INTEGER:
        n = snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT,
                     json_integer_value(j));
        s_grow_put(g, num, (size_t)n);
        break;
    case JSON_TRUE:
        s_grow_put(g, "true", 4);
        break;
    case JSON_FALSE:
        s_grow_put(g, "false", 5);
        break;
    default:
        s_grow_leaf(g, j);
        break;
    }
}

char *
pw_json_dumps(const json_t *j)
{
    s_grow_t g = {NULL, 0, 0, 0};
    if (!j)
        return NULL;
    s_grow_value(&g, j, 0);
    if (g.failed) {
        free(g.buf);
        return NULL;
    }
    return g.buf;
}
