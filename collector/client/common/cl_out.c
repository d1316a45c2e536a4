/* cl_out.c -- the client's printing and argument helpers; see
 * cl_out.h. */
#include "cl_out.h"
#include "pw_json.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void
cl_out_error(const char *verb, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "parity%s%s: ", verb ? " " : "", verb ? verb : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int
cl_out_parse_double(const char *s, double *out)
{
    char *end;
    double x;

    if (!s || !*s)
        return -1;
    errno = 0;
    x = strtod(s, &end);
    while (*end == ' ' || *end == '\t')
        end++;
    /* ERANGE on underflow still gives a usable tiny value; on overflow
     * the value is infinite and refused below. */
    if (end == s || *end != '\0' || !isfinite(x))
        return -1;
    *out = x;
    return 0;
}

int
cl_out_parse_list(const char *s, size_t max, double **values, size_t *n,
                  char *err, size_t errlen)
{
    size_t count = 1, used = 0;
    double *v = NULL;
    const char *p;
    char item[64];

    for (p = s; *p; p++)
        count += *p == ',';
    if (count > max) {
        snprintf(err, errlen, "%zu values, more than the limit of %zu",
                 count, max);
        return -1;
    }
    if (!(v = malloc(count * sizeof *v))) {
        snprintf(err, errlen, "out of memory for %zu values", count);
        return -1;
    }
    p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t')) {
            p++;
            len--;
        }
        if (len == 0) {
            snprintf(err, errlen, "sample %zu is empty", used + 1);
            goto fail;
        }
        if (len >= sizeof item) {
            snprintf(err, errlen, "sample %zu is %zu characters long: "
                     "not a number", used + 1, len);
            goto fail;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (cl_out_parse_double(item, &v[used]) != 0) {
            snprintf(err, errlen, "sample %zu is \"%s\": not a number",
                     used + 1, item);
            goto fail;
        }
        used++;
        if (!comma)
            break;
        p = comma + 1;
    }
    *values = v;
    *n = used;
    return 0;
fail:
    free(v);
    return -1;
}

int
cl_out_json_exit(json_t *j)
{
    int rc = j && pw_out_json(stdout, j) == 0 ? PW_EXIT_OK : PW_EXIT_SYSTEM;
    json_decref(j);
    return rc;
}

int
cl_out_help(const char *verb, const char *usage)
{
    if (fputs(usage, stdout) < 0 || fflush(stdout) != 0) {
        cl_out_error(verb, "writing the usage failed: %s", strerror(errno));
        return PW_EXIT_SYSTEM;
    }
    return PW_EXIT_OK;
}

bool
cl_out_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    }
    return false;
}



int
cl_out_nonneg_opt(const char *verb, const char *opt, const char *arg,
                  double *out)
{
    if (cl_out_parse_double(arg, out) != 0) {
        cl_out_error(verb, "%s \"%s\": not a number", opt, arg);
        return -1;
    }
    if (*out < 0.0) {
        cl_out_error(verb, "%s %s: must be >= 0", opt, arg);
        return -1;
    }
    return 0;
}

int
cl_out_rule_opt(const char *verb, int c, const char *arg, vd_params_t *p)
{
    if (c == PW_OUT_OPT_FLOOR) {
        if (cl_out_nonneg_opt(verb, "--floor-us", arg, &p->floor_us) != 0)
            return -1;
        p->floor_is_default = false;
        return 1;
    }
    if (c == PW_OUT_OPT_PARITY)
        return cl_out_nonneg_opt(verb, "--parity", arg, &p->parity) != 0
               ? -1 : 1;
    return 0;
}

int
cl_out_duration(const char *s, double max_s, double *out_s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0))
        return -1;
    if (*end == '\0' || strcmp(end, "s") == 0)
        ;
    else if (strcmp(end, "m") == 0)
        v *= 60;
    else if (strcmp(end, "h") == 0)
        v *= 3600;
    else if (strcmp(end, "d") == 0)
        v *= 86400;
    else if (strcmp(end, "w") == 0)
        v *= 7 * 86400;
    else
        return -1;
    if (v > max_s || v * 1e6 < 1)
        return -1;
    *out_s = v;
    return 0;
}

void
cl_out_getopt_error(const char *verb, int c, char *const *argv)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "?";
    if (c == ':')
        cl_out_error(verb, "%s needs a value", arg);
    else
        cl_out_error(verb, "unexpected argument \"%s\" (parity %s --help)",
                     arg, verb);
}

void
cl_out_option_error(const char *verb, int c, char *const *argv)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "?";
    if (c == ':')
        cl_out_error(verb, "%s needs a value", arg);
    else if (optopt > 0 && optopt < 256)
        cl_out_error(verb, "unknown option \"-%c\" (parity %s --help)",
                     optopt, verb);
    else if (optopt >= 256)
        cl_out_error(verb, "\"%s\": the option takes no value", arg);
    else
        cl_out_error(verb, "unknown option \"%s\" (parity %s --help)", arg,
                     verb);
}

int
cl_out_one_operand(const char *verb, int argc, char *const *argv,
                   const char **arg)
{
    if (argc - optind > 1) {
        cl_out_error(verb, "unexpected argument \"%s\" (parity %s --help)",
                     argv[optind + 1], verb);
        return -1;
    }
    if (argc - optind == 1)
        *arg = argv[optind];
    return 0;
}

int
cl_out_operand_only(const char *verb, int argc, char **argv,
                    const char **arg)
{
    static const struct option none[] = { { NULL, 0, NULL, 0 } };
    int o;
    optind = 1;
    opterr = 0;
    if ((o = getopt_long(argc, argv, ":", none, NULL)) != -1) {
        cl_out_getopt_error(verb, o, argv);
        return -1;
    }
    return cl_out_one_operand(verb, argc, argv, arg);
}

int
cl_out_add_list(json_t *arr, const char *s, size_t max)
{
    for (const char *p = s;;) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n == 0 || json_array_size(arr) >= max ||
            json_array_append_new(arr, json_stringn(p, n)) != 0)
            return -1;
        if (!c)
            return 0;
        p = c + 1;
    }
}

int
cl_out_key_value(json_t *obj, const char *s)
{
    const char *eq = strchr(s, '=');
    char key[1025];   /* the collector's bound, 1024 bytes */
    if (!eq || eq == s || (size_t)(eq - s) >= sizeof key)
        return -1;
    snprintf(key, sizeof key, "%.*s", (int)(eq - s), s);
    return json_object_set_new(obj, key, json_string(eq + 1));
}





char *
cl_out_cell(char *buf, size_t len, const json_t *entry)
{
    const json_t *v = json_object_get(entry, "verdict");
    if (!entry) {
        snprintf(buf, len, "-");
    } else if (!json_is_object(v)) {
        const char *st = pw_out_str(entry, "status", "complete");
        snprintf(buf, len, "%s", strcmp(st, "complete") == 0 ? "no verdict"
                                                             : st);
    } else if (!json_is_number(json_object_get(v, "tolerance"))) {
        snprintf(buf, len, "%s %.3f", pw_out_str(v, "outcome", "?"),
                 json_number_value(json_object_get(v, "ratio")));
    } else {
        /* The tolerance beside the ratio says how close the call was:
         * "parity 1.030 (tol. 0.040)" was nearly a loss. */
        snprintf(buf, len, "%s %.3f (tol. %.3f)",
                 pw_out_str(v, "outcome", "?"),
                 json_number_value(json_object_get(v, "ratio")),
                 json_number_value(json_object_get(v, "tolerance")));
    }
    return buf;
}

char *
cl_out_geomean(char *buf, size_t len, const json_t *summary)
{
    if (json_integer_value(json_object_get(summary, "hosts")) == 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.3f", json_number_value(
            json_object_get(summary, "geomean_ratio")));
    return buf;
}


char *
cl_out_span(char *buf, size_t len, double s)
{
    if (s < 0)
        s = 0;
    if (s < 120)
        snprintf(buf, len, "%.0f s", s);
    else if (s < 7200)
        snprintf(buf, len, "%.0f min", s / 60);
    else if (s < 172800)
        snprintf(buf, len, "%.0f h", s / 3600);
    else
        snprintf(buf, len, "%.0f d", s / 86400);
    return buf;
}

char *
cl_out_pool(char *buf, size_t len, const json_t *pool, int64_t now_us)
{
    const json_t *n = json_object_get(pool, "runs");
    if (!n)
        n = json_object_get(pool, "floor_samples");
    const json_t *lo = json_object_get(pool, "oldest_us");
    if (!lo)
        lo = json_object_get(pool, "floor_oldest_us");
    const json_t *hi = json_object_get(pool, "newest_us");
    if (!hi)
        hi = json_object_get(pool, "floor_newest_us");
    const json_t *q = json_object_get(pool, "quiet");
    if (!q)
        q = json_object_get(pool, "floor_quiet");
    if (json_integer_value(n) <= 0 || !json_is_integer(lo)
        || !json_is_integer(hi)) {
        snprintf(buf, len, "-");
        return buf;
    }
    double now = (double)now_us;
    if (now_us <= 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        now = (double)ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
    }
    char young[32], old[32];
    cl_out_span(young, sizeof young,
                (now - (double)json_integer_value(hi)) / 1e6);
    cl_out_span(old, sizeof old, (now - (double)json_integer_value(lo)) / 1e6);
    snprintf(buf, len, "%" JSON_INTEGER_FORMAT "%s, %s to %s old",
             json_integer_value(n), json_is_true(q) ? " quiet runs"
             : json_is_false(q) ? " runs with busy ones" : " runs", young,
             old);
    return buf;
}

