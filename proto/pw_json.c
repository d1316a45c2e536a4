/* pw_json.c -- the verdict's written form; see pw_json.h. */
#include "pw_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
s_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

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

/* ---- reading --------------------------------------------------------- */

static int
s_get_number(const json_t *obj, const char *key, double *out,
             char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        s_err(err, errlen, "missing \"%s\"", key);
        return PW_ERR;
    }
    if (!json_is_number(v)) {
        s_err(err, errlen, "\"%s\" is not a number", key);
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
        s_err(err, errlen, "summary is not an object");
        return PW_ERR;
    }
    n = json_object_get(obj, "n");
    if (!json_is_integer(n) || json_integer_value(n) < 0 ||
        json_integer_value(n) > (json_int_t)VD_MAX_SAMPLES) {
        s_err(err, errlen, "summary \"n\" is not an integer in 0..%u",
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
        s_err(err, errlen, "\"diagnostics\" is not an array");
        return PW_ERR;
    }
    json_array_foreach(arr, i, item) {
        const char *name = json_string_value(item);
        unsigned b;
        if (!name) {
            s_err(err, errlen, "diagnostic %zu is not a string", i + 1);
            return PW_ERR;
        }
        for (b = 0; b < S_DIAG_BITS; b++) {
            const char *known = vd_diag_name(1u << b);
            if (known && strcmp(known, name) == 0)
                break;
        }
        if (b == S_DIAG_BITS) {
            s_err(err, errlen, "unknown diagnostic \"%.64s\"", name);
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
        s_err(err, errlen, "verdict is not an object");
        return PW_ERR;
    }
    memset(&v, 0, sizeof v);
    outcome = json_string_value(json_object_get(obj, "outcome"));
    if (!outcome) {
        s_err(err, errlen, "missing \"outcome\" (a string)");
        return PW_ERR;
    }
    if (vd_outcome_parse(outcome, &v.outcome) != VD_OK) {
        s_err(err, errlen, "\"outcome\" is \"%.32s\": not win, parity or loss",
              outcome);
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
            s_err(err, errlen, "\"extra_runs\" is not an integer in 0..%d",
                  VD_MAX_EXTRA_RUNS);
            return PW_ERR;
        }
        v.extra_runs = (unsigned)json_integer_value(item);
    }
    if ((item = json_object_get(obj, "subject")) &&
        pw_summary_from_json(item, &v.a, sub, sizeof sub)) {
        s_err(err, errlen, "\"subject\": %s", sub);
        return PW_ERR;
    }
    if ((item = json_object_get(obj, "other")) &&
        pw_summary_from_json(item, &v.b, sub, sizeof sub)) {
        s_err(err, errlen, "\"other\": %s", sub);
        return PW_ERR;
    }
    *out = v;
    return PW_OK;
}

/* ---- writing text ---------------------------------------------------- */

int
pw_format_double(char *buf, size_t len, double x)
{
    char tmp[32];
    int n = 0;

    if (!isfinite(x))
        return -1;
    /* Shortest of 15, 16, 17 significant digits that reads back exactly:
     * 17 always does, 15 usually does and is what people expect to see.
     * Below 15 digits is tried too for short values like 0.04 and 25. */
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(tmp, sizeof tmp, "%.*g", prec, x);
        if (prec == 17 || strtod(tmp, NULL) == x)
            break;
    }
    if (n < 0 || (size_t)n >= sizeof tmp - 2)
        return -1;
    /* Keep reals recognisable as reals ("25.0", as in the spec). */
    if (!strpbrk(tmp, ".eE")) {
        tmp[n++] = '.';
        tmp[n++] = '0';
        tmp[n] = '\0';
    }
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
