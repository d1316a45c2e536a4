/* cl_cmdline.c -- see cl_cmdline.h. */
#include "cl_cmdline.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A NULL-terminated array of at most max_words words and their bytes
 * (at most text_len + max_words) in one allocation. */
static char **
s_words_alloc(size_t max_words, size_t text_len, char **text)
{
    size_t ptrs = (max_words + 1) * sizeof(char *);
    char **w = malloc(ptrs + text_len + max_words + 1);
    if (w)
        *text = (char *)w + ptrs;
    return w;
}

/* Characters a shell would read as structure rather than as a word. */
static bool
s_shell_only(char c)
{
    return c && strchr("|&;<>()\n", c) != NULL;
}

int
cl_cmdline_split(const char *line, char ***argv, size_t *argc, char *err,
                 size_t errlen)
{
    size_t len = strlen(line), n = 0;
    char *out;
    /* A word takes at least one byte and one blank after it. */
    char **w = s_words_alloc(len / 2 + 1, len, &out);
    *argv = NULL;
    *argc = 0;
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return CL_CMDLINE_ERR;
    }
    const char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        w[n++] = out;
        char quote = 0;
        for (; *p && (quote || (*p != ' ' && *p != '\t')); p++) {
            char c = *p;
            if (quote == '\'') {
                if (c == '\'')
                    quote = 0;
                else
                    *out++ = c;
                continue;
            }
            if (c == '$' || c == '`') {
                snprintf(err, errlen, "\"%c\" needs a shell (drop -N, or "
                         "put it in single quotes)", c);
                goto fail;
            }
            if (c == '\\') {
                char next = p[1];
                if (!next) {
                    snprintf(err, errlen, "a backslash at the end");
                    goto fail;
                }
                /* Inside "..." a backslash escapes only " and \. */
                if (quote && next != '"' && next != '\\') {
                    *out++ = c;
                    continue;
                }
                *out++ = next;
                p++;
                continue;
            }
            if (quote == '"') {
                if (c == '"')
                    quote = 0;
                else
                    *out++ = c;
                continue;
            }
            if (c == '\'' || c == '"') {
                quote = c;
                continue;
            }
            if (s_shell_only(c)) {
                snprintf(err, errlen, "\"%s\" needs a shell (drop -N, or "
                         "quote it)", c == '\n' ? "\\n" : (char[2]){ c, 0 });
                goto fail;
            }
            *out++ = c;
        }
        if (quote) {
            snprintf(err, errlen, "no closing %c", quote);
            goto fail;
        }
        *out++ = '\0';
    }
    if (n == 0) {
        snprintf(err, errlen, "the command is empty");
        goto fail;
    }
    if (w[0][0] == '\0') {
        snprintf(err, errlen, "the program name is empty");
        goto fail;
    }
    w[n] = NULL;
    *argv = w;
    *argc = n;
    return CL_CMDLINE_OK;
fail:
    free(w);
    return CL_CMDLINE_ERR;
}

static bool
s_plain(const char *word)
{
    if (!*word)
        return false;
    for (const unsigned char *p = (const unsigned char *)word; *p; p++)
        if (!(*p >= 0x80 || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("_-./:=,+@%^", *p)))
            return false;
    return true;
}

size_t
cl_cmdline_join(char *out, size_t outlen, const char *const *argv,
                size_t argc)
{
    size_t need = 0;
#define S_PUT(c)                                   \
    do {                                           \
        if (need + 1 < outlen)                     \
            out[need] = (c);                       \
        need++;                                    \
    } while (0)
    for (size_t i = 0; i < argc; i++) {
        if (i)
            S_PUT(' ');
        bool plain = s_plain(argv[i]);
        if (!plain)
            S_PUT('\'');
        for (const char *p = argv[i]; *p; p++) {
            if (!plain && *p == '\'') {
                S_PUT('\'');
                S_PUT('\\');
                S_PUT('\'');
            }
            S_PUT(*p);
        }
        if (!plain)
            S_PUT('\'');
    }
#undef S_PUT
    if (outlen)
        out[need < outlen ? need : outlen - 1] = '\0';
    return need;
}

/* The parameter whose {NAME} starts at p, or n. */
static size_t
s_param_at(const char *p, const char *const *names, size_t n)
{
    if (*p != '{')
        return n;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(names[i]);
        if (strncmp(p + 1, names[i], l) == 0 && p[1 + l] == '}')
            return i;
    }
    return n;
}

int
cl_cmdline_subst(const char *text, const char *const *names,
                 const char *const *values, size_t n, char **out,
                 char *err, size_t errlen)
{
    /* Two passes: measure (bounded), then write. */
    size_t need = 0;
    for (const char *p = text; *p;) {
        size_t i = s_param_at(p, names, n);
        if (i < n) {
            need += strlen(values[i]);
            p += strlen(names[i]) + 2;
        } else {
            need++;
            p++;
        }
        if (need > CL_CMDLINE_MAX_TEXT) {
            snprintf(err, errlen, "longer than %u bytes once the parameters "
                     "are put in", CL_CMDLINE_MAX_TEXT);
            return CL_CMDLINE_ERR;
        }
    }
    char *s = malloc(need + 1), *o = s;
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return CL_CMDLINE_ERR;
    }
    for (const char *p = text; *p;) {
        size_t i = s_param_at(p, names, n);
        if (i < n) {
            size_t l = strlen(values[i]);
            memcpy(o, values[i], l);
            o += l;
            p += strlen(names[i]) + 2;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    *out = s;
    return CL_CMDLINE_OK;
}

int
cl_cmdline_uses(const char *text, const char *name)
{
    const char *const names[1] = { name };
    for (const char *p = text; *p; p++)
        if (s_param_at(p, names, 1) == 0)
            return 1;
    return 0;
}

int
cl_cmdline_list(const char *list, size_t max, char ***values, size_t *count,
                char *err, size_t errlen)
{
    size_t len = strlen(list), n = 1;
    for (const char *p = list; *p; p++) {
        if (*p == '\\' && (p[1] == ',' || p[1] == '\\'))
            p++;
        else if (*p == ',')
            n++;
    }
    *values = NULL;
    *count = 0;
    if (n > max) {
        snprintf(err, errlen, "%zu values, at most %zu", n, max);
        return CL_CMDLINE_ERR;
    }
    char *out;
    char **v = s_words_alloc(n, len, &out);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return CL_CMDLINE_ERR;
    }
    size_t k = 0;
    v[k++] = out;
    for (const char *p = list; *p; p++) {
        if (*p == '\\' && (p[1] == ',' || p[1] == '\\')) {
            *out++ = *++p;
        } else if (*p == ',') {
            *out++ = '\0';
            v[k++] = out;
        } else {
            *out++ = *p;
        }
    }
    *out = '\0';
    v[k] = NULL;
    *values = v;
    *count = k;
    return CL_CMDLINE_OK;
}

/* A decimal number: value / 10^scale. */
typedef struct {
    int64_t mant;
    int scale;
} s_dec_t;

/* The most decimal places taken, and the bound of a number's digits
 * read as a whole (before its point is placed): scaled to 9 places a
 * mantissa stays below 4 * 10^18, so the difference of two still fits
 * an int64. */
#define S_MAX_SCALE 9
#define S_MAX_DIGITS_VALUE 400000000

static int
s_dec_parse(const char *s, s_dec_t *d)
{
    const char *p = s;
    bool neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    int64_t m = 0;
    int digits = 0, scale = 0;
    bool dot = false;
    for (; *p; p++) {
        if (*p == '.' && !dot) {
            dot = true;
            continue;
        }
        if (*p < '0' || *p > '9')
            return -1;
        if (m >= S_MAX_DIGITS_VALUE || (dot && scale >= S_MAX_SCALE))
            return -1;
        m = m * 10 + (*p - '0');
        digits++;
        if (dot)
            scale++;
    }
    if (digits == 0)
        return -1;
    d->mant = neg ? -m : m;
    d->scale = scale;
    return 0;
}

static int64_t
s_pow10(int k)
{
    int64_t x = 1;
    while (k-- > 0)
        x *= 10;
    return x;
}

/* One value of the scan written into *out (room for 32 bytes). */
static void
s_dec_format(char *out, int64_t mant, int scale)
{
    if (scale == 0) {
        snprintf(out, 32, "%lld", (long long)mant);
        return;
    }
    int64_t p = s_pow10(scale);
    uint64_t a = mant < 0 ? (uint64_t)0 - (uint64_t)mant : (uint64_t)mant;
    snprintf(out, 32, "%s%llu.%0*llu", mant < 0 ? "-" : "",
             (unsigned long long)(a / (uint64_t)p), scale,
             (unsigned long long)(a % (uint64_t)p));
}

int
cl_cmdline_range(const char *min, const char *max, const char *step,
                 size_t max_count, char ***values, size_t *count,
                 char *err, size_t errlen)
{
    s_dec_t lo, hi, st = { 1, 0 };
    *values = NULL;
    *count = 0;
    const char *bad = s_dec_parse(min, &lo) != 0 ? min
                    : s_dec_parse(max, &hi) != 0 ? max
                    : step && s_dec_parse(step, &st) != 0 ? step : NULL;
    if (bad) {
        snprintf(err, errlen, "\"%s\" is not a number (digits, an optional "
                 "sign and point, at most %d decimals)", bad, S_MAX_SCALE);
        return CL_CMDLINE_ERR;
    }
    if (!step && (lo.scale || hi.scale)) {
        snprintf(err, errlen, "decimal bounds need a step (-D)");
        return CL_CMDLINE_ERR;
    }
    int scale = lo.scale > hi.scale ? lo.scale : hi.scale;
    if (st.scale > scale)
        scale = st.scale;
    /* Mantissas are below 10^9 * 10^9 / 10: all fit in the common scale
     * (below 9.3 * 10^18) and a difference of two fits too. */
    lo.mant *= s_pow10(scale - lo.scale);
    hi.mant *= s_pow10(scale - hi.scale);
    st.mant *= s_pow10(scale - st.scale);
    if (st.mant <= 0) {
        snprintf(err, errlen, "the step must be above 0");
        return CL_CMDLINE_ERR;
    }
    if (hi.mant < lo.mant) {
        snprintf(err, errlen, "the range is empty (%s is below %s)", max,
                 min);
        return CL_CMDLINE_ERR;
    }
    uint64_t n = (uint64_t)(hi.mant - lo.mant) / (uint64_t)st.mant + 1;
    if (n > max_count) {
        snprintf(err, errlen, "%llu values, at most %zu",
                 (unsigned long long)n, max_count);
        return CL_CMDLINE_ERR;
    }
    char *out;
    char **v = s_words_alloc((size_t)n, (size_t)n * 31, &out);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return CL_CMDLINE_ERR;
    }
    for (uint64_t i = 0; i < n; i++) {
        v[i] = out;
        s_dec_format(out, lo.mant + (int64_t)i * st.mant, scale);
        out += strlen(out) + 1;
    }
    v[n] = NULL;
    *values = v;
    *count = (size_t)n;
    return CL_CMDLINE_OK;
}
