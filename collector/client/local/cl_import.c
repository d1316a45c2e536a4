/* cl_import.c -- `parity import`: verdicts from other tools' JSON files.
 *
 *   parity import hyperfine FILE.json [--reference NAME] [--json] ...
 *   parity import gbench BASELINE.json CONTENDER.json [--json] ...
 *
 * See docs/commands/import.md. Every problem with a file is reported as
 * "FILE: what" (with FILE:LINE:COLUMN when the JSON does not parse).
 */
#include "cl_out.h"
#include "pw_out.h"
#include "cl_verbs.h"
#include "pw_grow.h"
#include "pw_json.h"
#include "vd_metric.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define S_VERB "import"

/* Largest file read: hyperfine and gbench exports are kilobytes, a
 * million-run export is about 20 MiB. */
#define S_FILE_MAX      (256u << 20)
/* Most distinct benchmarks (gbench) or commands (hyperfine) per file. */
#define S_ENTRIES_MAX   100000u
#define S_ERR_MAX       512

static const char s_usage[] =
    "usage: parity import hyperfine FILE.json [--reference NAME] [--json]\n"
    "                    [--floor-us F] [--parity P]\n"
    "       parity import gbench BASELINE.json CONTENDER.json [--json]\n"
    "                    [--floor-us F] [--parity P]\n"
    "\n"
    "hyperfine: a file of hyperfine --export-json; every command is judged\n"
    "against the reference (the first command, or --reference NAME, the\n"
    "command string or its --command-name), with the table or JSON of\n"
    "parity verdict. The times are whole runs, so the floor defaults to\n"
    "25 µs as in parity verdict.\n"
    "\n"
    "gbench: two Google Benchmark JSON files (--benchmark_format=json or\n"
    "--benchmark_out) run with --benchmark_repetitions=N, N >= 2. The\n"
    "\"iteration\" entries of each run_name are the samples (real_time in\n"
    "time_unit); each benchmark of both files is judged, the contender\n"
    "against the baseline. The floor defaults to 0: a repetition is not a\n"
    "process start, so the 25 µs default would hide every difference.\n"
    "\n"
    "  --reference NAME  hyperfine: the command the others are judged "
    "against\n"
    "  --floor-us F      noise floor in µs\n"
    "  --parity P        flat tolerance (default 0.04)\n"
    "  --json            JSON: the written form keyed by the other arm's "
    "name\n"
    "\n"
    "exit status: 0 done, 1 a file is unreadable or not what it claims, or\n"
    "a benchmark could not be judged, 2 usage error, 3 system error.\n";

typedef struct {
    const char *reference;
    vd_params_t params;
    bool json;
} s_opts_t;

/* Set by any allocation that fails, after its message: the verb then
 * exits PW_EXIT_SYSTEM, not PW_EXIT_DATA, whatever else went wrong. */
static bool s_oom;

/* ---- files ----------------------------------------------------------- */

/* Read and parse path. Returns the root (caller owns it) or NULL after
 * printing an error that names the file. The file is read here, not by
 * json_loadf, so that a pipe or /proc file is bounded by S_FILE_MAX like
 * a regular one and a read error is reported, not taken for the end of
 * the file. */
static json_t *
s_load(const char *path)
{
    json_error_t jerr;
    struct stat st;
    json_t *root = NULL;
    char *text = NULL, *start;
    size_t len = 0, cap = 0;
    FILE *f = fopen(path, "rb");

    if (!f) {
        cl_out_error(S_VERB, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        cl_out_error(S_VERB, "%s: is a directory, not a JSON file", path);
        goto done;
    }
    if (fstat(fileno(f), &st) == 0 && st.st_size > (off_t)S_FILE_MAX) {
        cl_out_error(S_VERB, "%s: %lld bytes, more than the limit of %u",
                     path, (long long)st.st_size, S_FILE_MAX);
        goto done;
    }
    for (;;) {
        size_t got;
        if (len == cap) {
            size_t grown = cap ? cap * 2 : 1u << 16;
            char *nt;
            if (cap > S_FILE_MAX) {
                cl_out_error(S_VERB, "%s: more than the limit of %u bytes",
                             path, S_FILE_MAX);
                goto done;
            }
            if (!(nt = realloc(text, grown))) {
                cl_out_error(S_VERB, "%s: out of memory reading it", path);
                s_oom = true;
                goto done;
            }
            text = nt;
            cap = grown;
        }
        got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                cl_out_error(S_VERB, "%s: reading: %s", path,
                             strerror(errno));
                goto done;
            }
            break;
        }
    }
    if (len > S_FILE_MAX) {
        cl_out_error(S_VERB, "%s: more than the limit of %u bytes", path,
                     S_FILE_MAX);
        goto done;
    }
    if (len == 0) {
        cl_out_error(S_VERB, "%s: empty file, not JSON", path);
        goto done;
    }
    /* A UTF-8 byte order mark, which RFC 8259 lets a parser ignore. */
    start = text;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        start += 3;
        len -= 3;
    }
    if (memchr(start, '\0', len)) {
        cl_out_error(S_VERB, "%s: a NUL byte at offset %zu: not JSON text",
                     path, (size_t)((char *)memchr(start, '\0', len) - text));
        goto done;
    }
    root = json_loadb(start, len, JSON_REJECT_DUPLICATES, &jerr);
    /* jansson fails a malloc either with json_error_out_of_memory or,
     * deep in the lexer, with no error text at all. */
    if (!root && (json_error_code(&jerr) == json_error_out_of_memory ||
                  !jerr.text[0])) {
        cl_out_error(S_VERB, "%s: out of memory parsing it", path);
        s_oom = true;
    } else if (!root) {
        cl_out_error(S_VERB, "%s:%d:%d: not JSON: %s", path, jerr.line,
                     jerr.column, jerr.text);
    }
done:
    free(text);
    fclose(f);
    return root;
}

/* A JSON string of text that may not be UTF-8 (a file name): invalid
 * bytes become U+FFFD instead of failing the whole output. Caller owns
 * the result; NULL on out of memory. */
static json_t *
s_json_text(const char *text)
{
    json_t *j = json_string(text);
    char *fixed, *o;
    size_t n = strlen(text);

    if (j || !(fixed = malloc(3 * n + 1)))
        return j;
    o = fixed;
    for (const unsigned char *p = (const unsigned char *)text; *p;) {
        size_t k = pw_out_utf8_len(p);
        if (k) {
            memcpy(o, p, k);
            o += k;
            p += k;
        } else {
            memcpy(o, "\xEF\xBF\xBD", 3);
            o += 3;
            p++;
        }
    }
    *o = '\0';
    j = json_string(fixed);
    free(fixed);
    return j;
}

/* ---- arms ------------------------------------------------------------ */

/* One arm: a name and its samples in µs. */
typedef struct {
    const char *name;   /* borrowed from the parsed file */
    double *us;
    size_t n;
    size_t cap;
    size_t errors;      /* gbench repetitions with error_occurred */
    const char *error_message;
    /* hyperfine: the mean CPU time of a run (user + system), < 0 when the
     * export has none, and each run's peak RSS in KiB (rss.us) where it
     * measured one (memory_usage_byte; 0 there is "not measured"). */
    double cpu_mean_us;
    struct s_values {
        double *us;
        size_t n, cap;
    } rss;
} s_arm_t;

/* Append a sample: 0, -1 beyond VD_MAX_SAMPLES, or -2 out of memory
 * (s_oom set). */
static int
s_arm_push(s_arm_t *arm, double us)
{
    if (arm->n >= VD_MAX_SAMPLES)
        return -1;
    if (!pw_grow(&arm->us, &arm->cap, arm->n, sizeof *arm->us, 16,
                 SIZE_MAX)) {
        s_oom = true;
        return -2;
    }
    arm->us[arm->n++] = us;
    return 0;
}

static void
s_arms_free(s_arm_t *arms, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(arms[i].us);
        free(arms[i].rss.us);
    }
    free(arms);
}

/* Compare subject against other; on a rule error print nothing and fill
 * err. */
static int
s_judge(const s_arm_t *subject, const s_arm_t *other, const vd_params_t *p,
        vd_verdict_t *v, char *err, size_t errlen)
{
    return vd_compare(subject->us, subject->n, other->us, other->n, p, v,
                      err, errlen);
}

/* ---- hyperfine ------------------------------------------------------- */

/* A result's other metrics (docs/commands/import.md "Metrics"): "user"
 * and "system", hyperfine's mean seconds a run, into arm->cpu_mean_us;
 * "memory_usage_byte", one peak RSS a run (hyperfine 1.19 on), into
 * arm->rss in KiB. Both optional. 0, or -1 said. */
static int
s_hyperfine_more(const char *path, const json_t *r, size_t i,
                 const char *command, s_arm_t *arm)
{
    const json_t *u = json_object_get(r, "user"),
                 *sy = json_object_get(r, "system"),
                 *mem = json_object_get(r, "memory_usage_byte"), *m;
    size_t k;
    arm->cpu_mean_us = -1;
    if (u || sy) {
        double t = json_number_value(u) + json_number_value(sy);
        if (!json_is_number(u) || !json_is_number(sy) ||
            json_number_value(u) < 0 || json_number_value(sy) < 0 ||
            !isfinite(t * 1e6)) {
            cl_out_error(S_VERB, "%s: results[%zu] (\"%s\"): \"user\" and "
                         "\"system\" must both be seconds >= 0", path, i,
                         command);
            return -1;
        }
        arm->cpu_mean_us = t * 1e6;
    }
    if (!mem || json_is_null(mem))
        return 0;
    if (!json_is_array(mem) || json_array_size(mem) != arm->n) {
        cl_out_error(S_VERB, "%s: results[%zu] (\"%s\"): "
                     "\"memory_usage_byte\" must be one number a run (%zu "
                     "times)", path, i, command, arm->n);
        return -1;
    }
    json_array_foreach(mem, k, m) {
        double b = json_number_value(m);
        if (!json_is_number(m) || !(b >= 0) || !isfinite(b)) {
            cl_out_error(S_VERB, "%s: results[%zu] (\"%s\"): "
                         "memory_usage_byte[%zu] is not a byte count >= 0",
                         path, i, command, k);
            return -1;
        }
        if (b == 0)
            continue;   /* not measured there: absent, never a zero */
        if (!pw_grow(&arm->rss.us, &arm->rss.cap, arm->rss.n,
                     sizeof *arm->rss.us, 16, SIZE_MAX)) {
            s_oom = true;
            cl_out_error(S_VERB, "%s: out of memory", path);
            return -1;
        }
        arm->rss.us[arm->rss.n++] = b / 1024.0;
    }
    return 0;
}

/* Read results[] into arms. Returns the count, or 0 after an error. */
static size_t
s_hyperfine_arms(const char *path, const json_t *root, s_arm_t **out)
{
    const json_t *results = json_object_get(root, "results"), *r;
    s_arm_t *arms = NULL;
    size_t i, count = 0;

    if (!json_is_object(root)) {
        cl_out_error(S_VERB, "%s: not a hyperfine --export-json file: the "
                     "top level is not an object", path);
        return 0;
    }
    if (!json_is_array(results)) {
        cl_out_error(S_VERB, "%s: not a hyperfine --export-json file: no "
                     "\"results\" array", path);
        return 0;
    }
    count = json_array_size(results);
    if (count == 0 || count > S_ENTRIES_MAX) {
        cl_out_error(S_VERB, "%s: %zu results: want 2 to %u commands", path,
                     count, S_ENTRIES_MAX);
        return 0;
    }
    if (!(arms = calloc(count, sizeof *arms))) {
        cl_out_error(S_VERB, "%s: out of memory for %zu results", path,
                     count);
        s_oom = true;
        return 0;
    }
    json_array_foreach(results, i, r) {
        const json_t *times = json_object_get(r, "times"), *t;
        const char *command = json_string_value(json_object_get(r,
                                                                "command"));
        size_t k;
        if (!json_is_object(r)) {
            cl_out_error(S_VERB, "%s: results[%zu] is not an object", path,
                         i);
            goto fail;
        }
        if (!command) {
            cl_out_error(S_VERB, "%s: results[%zu] has no \"command\" string",
                         path, i);
            goto fail;
        }
        arms[i].name = command;
        if (!json_is_array(times)) {
            cl_out_error(S_VERB, "%s: results[%zu] (\"%s\"): no \"times\" "
                         "array of run times in seconds", path, i, command);
            goto fail;
        }
        json_array_foreach(times, k, t) {
            double s = json_number_value(t);
            if (!json_is_number(t)) {
                cl_out_error(S_VERB, "%s: results[%zu] (\"%s\"): times[%zu] "
                             "is not a number", path, i, command, k);
                goto fail;
            }
            if (!(s > 0.0)) {
                cl_out_error(S_VERB, "%s: results[%zu] (\"%s\"): times[%zu] "
                             "is %g: run times must be > 0", path, i,
                             command, k, s);
                goto fail;
            }
            if (!isfinite(s * 1e6)) {
                cl_out_error(S_VERB, "%s: results[%zu] (\"%s\"): times[%zu] "
                             "is %g s: too large for a run time", path, i,
                             command, k, s);
                goto fail;
            }
            if (s_arm_push(&arms[i], s * 1e6)) {
                if (s_oom)
                    cl_out_error(S_VERB, "%s: out of memory", path);
                else
                    cl_out_error(S_VERB, "%s: results[%zu] (\"%s\"): more "
                                 "than %u times", path, i, command,
                                 VD_MAX_SAMPLES);
                goto fail;
            }
        }
        if (arms[i].n < 2) {
            cl_out_error(S_VERB, "%s: results[%zu] (\"%s\"): %zu time%s: at "
                         "least 2 runs a command (hyperfine --runs)", path, i,
                         command, arms[i].n, arms[i].n == 1 ? "" : "s");
            goto fail;
        }
        if (s_hyperfine_more(path, r, i, command, &arms[i]) != 0)
            goto fail;
    }
    if (count < 2) {
        cl_out_error(S_VERB, "%s: 1 command (\"%s\"): nothing to compare it "
                     "with", path, arms[0].name);
        goto fail;
    }
    *out = arms;
    return count;
fail:
    s_arms_free(arms, count);
    return 0;
}

/* Peak RSS verdicts, judged like wall time on each run's value (the
 * floor the metric's resolution: an export holds no calibration runs),
 * when every command has 2 values or more; *why says otherwise. v has
 * count slots (ref's unused). True when they were judged. */
static bool
s_rss_verdicts(const char *path, const s_arm_t *arms, size_t count,
               size_t ref, const s_opts_t *o, vd_verdict_t *v, char *why,
               size_t whylen)
{
    vd_params_t p = o->params;
    p.floor_us = VD_PEAK_RSS_RESOLUTION_KIB;
    p.floor_is_default = true;
    size_t with = 0;
    for (size_t i = 0; i < count; i++)
        with += arms[i].rss.n > 0;
    if (with == 0) {
        snprintf(why, whylen, "no memory_usage_byte in the export (hyperfine "
                 "1.19 or later writes it)");
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        char e[256];
        if (arms[i].rss.n < 2) {
            snprintf(why, whylen, "\"%s\" has %zu peak RSS value%s: at least "
                     "2 a command", arms[i].name, arms[i].rss.n,
                     arms[i].rss.n == 1 ? "" : "s");
            return false;
        }
        if (i != ref && vd_compare(arms[i].rss.us, arms[i].rss.n,
                                   arms[ref].rss.us, arms[ref].rss.n, &p,
                                   &v[i], e, sizeof e) != VD_OK) {
            snprintf(why, whylen, "%s: \"%s\": %s", path, arms[i].name, e);
            return false;
        }
    }
    return true;
}

/* The table beside wall time's, as `parity compare` prints it: each
 * command's mean CPU time (hyperfine's user + system) and median peak
 * RSS; "-" where the export has none. */
static int
s_print_more(const s_arm_t *arms, size_t count)
{
    static const char *const head[] = { "", "cpu (user+sys, mean)",
                                        "peak RSS (median)" };
    pw_out_table_t *t = pw_out_table_new(3);
    int rc = t ? pw_out_table_add(t, head) : -1;
    for (size_t i = 0; t && i < count; i++) {
        char cpu[40] = "-", rss[40] = "-", e[128];
        vd_summary_t sum;
        if (arms[i].cpu_mean_us >= 0)
            pw_out_us(cpu, sizeof cpu, arms[i].cpu_mean_us);
        if (arms[i].rss.n && vd_summarize(arms[i].rss.us, arms[i].rss.n,
                                          &sum, e, sizeof e) == VD_OK)
            pw_out_kib(rss, sizeof rss, sum.median);
        const char *row[] = { arms[i].name, cpu, rss };
        rc |= pw_out_table_add(t, row);
    }
    if (t) {
        pw_out_table_left(t, 0);
        rc |= putchar('\n') == EOF || pw_out_table_print(t, stdout);
    }
    pw_out_table_destroy(&t);
    return rc;
}

/* The JSON of one command's other metrics: "cpu_mean_us" (null: none)
 * and, when measured, "peak_rss": {"summary", "verdict": {REF: ...}}. */
static int
s_json_more(json_t *entry, const s_arm_t *arm, const char *ref_name,
            const vd_verdict_t *v)
{
    int rc = json_object_set_new(entry, "cpu_mean_us", arm->cpu_mean_us >= 0
                                 ? json_real(arm->cpu_mean_us) : json_null());
    vd_summary_t sum;
    char e[128];
    if (!arm->rss.n || vd_summarize(arm->rss.us, arm->rss.n, &sum, e,
                                    sizeof e) != VD_OK)
        return rc;
    json_t *m = json_pack("{s:s,s:o}", "unit", "KiB", "summary",
                          pw_summary_to_json(&sum));
    if (m && v) {
        json_t *vj = pw_verdict_to_json(v, 0);
        if (vj)
            json_object_set_new(vj, "metric", json_string("peak_rss"));
        json_object_set_new(m, "verdict", json_pack("{s:o}", ref_name, vj));
    }
    return rc | (m ? json_object_set_new(entry, "peak_rss", m) : -1);
}

static int
s_hyperfine(const char *path, const s_opts_t *o)
{
    json_t *root = s_load(path), *out = NULL, *list = NULL;
    s_arm_t *arms = NULL;
    vd_summary_t *sums = NULL;
    vd_verdict_t *verdicts = NULL, *rss = NULL;
    const char **names = NULL;
    size_t count = 0, ref = 0;
    int rc = PW_EXIT_DATA;
    char err[S_ERR_MAX], rss_why[S_ERR_MAX] = "";
    bool rss_judged = false;

    if (!root || !(count = s_hyperfine_arms(path, root, &arms)))
        goto done;
    if (o->reference) {
        for (ref = 0; ref < count; ref++)
            if (strcmp(arms[ref].name, o->reference) == 0)
                break;
        if (ref == count) {
            cl_out_error(S_VERB, "%s: no command named \"%s\" for "
                         "--reference (the first is \"%s\")", path,
                         o->reference, arms[0].name);
            rc = PW_EXIT_USAGE;
            goto done;
        }
    }
    rc = PW_EXIT_SYSTEM;
    if (!(sums = calloc(count, sizeof *sums)) ||
        !(verdicts = calloc(count, sizeof *verdicts)) ||
        !(rss = calloc(count, sizeof *rss)) ||
        !(names = calloc(count, sizeof *names)) ||
        (o->json && (!(out = json_object()) || !(list = json_array())))) {
        cl_out_error(S_VERB, "out of memory for %zu commands", count);
        s_oom = true;
        goto done;
    }
    for (size_t i = 0; i < count; i++) {
        names[i] = arms[i].name;
        if (vd_summarize(arms[i].us, arms[i].n, &sums[i], err, sizeof err)) {
            cl_out_error(S_VERB, "%s: \"%s\": %s", path, arms[i].name, err);
            rc = PW_EXIT_DATA;
            goto done;
        }
    }
    /* Every verdict before any output: a command that cannot be judged
     * leaves stdout empty rather than half a table. */
    for (size_t i = 0; i < count; i++)
        if (i != ref && s_judge(&arms[i], &arms[ref], &o->params,
                                &verdicts[i], err, sizeof err)) {
            cl_out_error(S_VERB, "%s: \"%s\": %s", path, arms[i].name, err);
            rc = PW_EXIT_DATA;
            goto done;
        }
    rss_judged = s_rss_verdicts(path, arms, count, ref, o, rss, rss_why,
                                sizeof rss_why);
    if (!o->json && (pw_out_arms(stdout, names, sums, count) ||
                     s_print_more(arms, count) ||
                     printf("\nreference: %s\n", arms[ref].name) < 0))
        goto write_failed;
    for (size_t i = 0; i < count; i++) {
        const vd_verdict_t *v = &verdicts[i];
        json_t *entry = NULL, *keyed = NULL;
        if (o->json) {
            entry = json_pack("{s:s, s:o}", "command", arms[i].name,
                              "summary", pw_summary_to_json(&sums[i]));
            if (!entry || json_array_append_new(list, entry) ||
                s_json_more(entry, &arms[i], arms[ref].name,
                            rss_judged && i != ref ? &rss[i] : NULL))
                goto write_failed;
        }
        if (i == ref)
            continue;
        if (o->json) {
            keyed = json_object();
            if (!keyed || json_object_set_new(entry, "verdict", keyed) ||
                json_object_set_new(keyed, arms[ref].name,
                                    pw_verdict_to_json(v, 0)))
                goto write_failed;
        } else if (putchar('\n') == EOF ||
                   pw_out_verdict(stdout, arms[i].name, arms[ref].name, v) ||
                   (rss_judged && pw_out_metric_verdict(stdout, "peak_rss",
                                                        arms[i].name,
                                                        arms[ref].name,
                                                        &rss[i]))) {
            goto write_failed;
        }
    }
    /* CPU time is a mean per command in an export: shown, never judged. */
    if (!o->json && printf("\ncpu: hyperfine exports each command's mean "
                           "CPU time, not each run's: no verdict\n%s%s%s",
                           rss_judged ? "" : "peak_rss: no verdict: ",
                           rss_judged ? "" : rss_why,
                           rss_judged ? "" : "\n") < 0)
        goto write_failed;
    if (o->json) {
        if (json_object_set_new(out, "source", json_string("hyperfine")) ||
            json_object_set_new(out, "file", s_json_text(path)) ||
            json_object_set_new(out, "reference",
                                json_string(arms[ref].name)) ||
            json_object_set_new(out, "floor_us",
                                json_real(o->params.floor_us)) ||
            json_object_set_new(out, "parity", json_real(o->params.parity)) ||
            json_object_set_new(out, "peak_rss_error", rss_judged ? json_null()
                                : json_string(rss_why)) ||
            json_object_set(out, "results", list) || pw_out_json(stdout, out))
            goto write_failed;
    }
    if (fflush(stdout) != 0)
        goto write_failed;
    rc = PW_EXIT_OK;
    goto done;
write_failed:
    cl_out_error(S_VERB, "writing the output failed (or out of memory)");
done:
    if (s_oom)
        rc = PW_EXIT_SYSTEM;
    json_decref(list);
    json_decref(out);
    free(sums);
    free(verdicts);
    free(rss);
    free(names);
    s_arms_free(arms, count);
    json_decref(root);
    return rc;
}

/* ---- Google Benchmark ------------------------------------------------ */

typedef struct {
    s_arm_t *arms;
    size_t count;
    json_t *index;      /* run_name -> position in arms */
    json_t *root;
} s_gbench_t;

static void
s_gbench_free(s_gbench_t *g)
{
    s_arms_free(g->arms, g->count);
    json_decref(g->index);
    json_decref(g->root);
    memset(g, 0, sizeof *g);
}

/* Multiplier from time_unit to µs; 0 for an unknown unit. */
static double
s_unit_us(const char *unit)
{
    if (!unit || strcmp(unit, "ns") == 0)   /* gbench's default */
        return 1e-3;
    if (strcmp(unit, "us") == 0)
        return 1.0;
    if (strcmp(unit, "ms") == 0)
        return 1e3;
    if (strcmp(unit, "s") == 0)
        return 1e6;
    return 0.0;
}

/* Entry i (named name) of path's real_time in microseconds, into *us:
 * 0, or -1 after saying what is wrong with it (unit, missing, not a
 * number, not > 0, too large). */
static int
s_gbench_time(const char *path, size_t i, const char *name, const json_t *b,
              double *us)
{
    const json_t *unit = json_object_get(b, "time_unit");
    const json_t *real = json_object_get(b, "real_time");
    double mult;
    if (unit && !json_is_string(unit)) {
        cl_out_error(S_VERB, "%s: benchmarks[%zu] (\"%s\"): \"time_unit\" "
                     "is not a string", path, i, name);
        return -1;
    }
    if (!(mult = s_unit_us(json_string_value(unit)))) {
        cl_out_error(S_VERB, "%s: benchmarks[%zu] (\"%s\"): unknown "
                     "time_unit \"%s\" (ns, us, ms or s)", path, i, name,
                     json_string_value(unit));
        return -1;
    }
    if (!real) {
        cl_out_error(S_VERB, "%s: benchmarks[%zu] (\"%s\"): no "
                     "\"real_time\"", path, i, name);
        return -1;
    }
    if (!json_is_number(real)) {
        cl_out_error(S_VERB, "%s: benchmarks[%zu] (\"%s\"): \"real_time\" "
                     "is not a number", path, i, name);
        return -1;
    }
    if (!(json_number_value(real) > 0.0)) {
        cl_out_error(S_VERB, "%s: benchmarks[%zu] (\"%s\"): \"real_time\" "
                     "is %g: times must be > 0", path, i, name,
                     json_number_value(real));
        return -1;
    }
    if (!isfinite(json_number_value(real) * mult)) {
        cl_out_error(S_VERB, "%s: benchmarks[%zu] (\"%s\"): \"real_time\" "
                     "is %g %s: too large for a time", path, i, name,
                     json_number_value(real),
                     unit ? json_string_value(unit) : "ns");
        return -1;
    }
    *us = json_number_value(real) * mult;
    return 0;
}

/* Group the iteration entries of path by run_name. 0 or -1 after
 * printing. */
static int
s_gbench_load(const char *path, s_gbench_t *g)
{
    const json_t *list, *b;
    size_t i, iterations = 0;

    memset(g, 0, sizeof *g);
    if (!(g->root = s_load(path)))
        return -1;
    list = json_object_get(g->root, "benchmarks");
    if (!json_is_object(g->root) || !json_is_array(list)) {
        cl_out_error(S_VERB, "%s: not a Google Benchmark JSON file: no "
                     "\"benchmarks\" array", path);
        return -1;
    }
    if (json_array_size(list) > (size_t)S_ENTRIES_MAX * 64) {
        cl_out_error(S_VERB, "%s: %zu benchmark entries, more than the "
                     "limit of %zu", path, json_array_size(list),
                     (size_t)S_ENTRIES_MAX * 64);
        return -1;
    }
    if (!(g->index = json_object()) ||
        !(g->arms = calloc(json_array_size(list) + 1, sizeof *g->arms))) {
        cl_out_error(S_VERB, "%s: out of memory for %zu benchmark entries",
                     path, json_array_size(list));
        s_oom = true;
        return -1;
    }
    json_array_foreach(list, i, b) {
        const char *name = json_string_value(json_object_get(b, "name"));
        const char *run_name = json_string_value(json_object_get(b,
                                                                 "run_name"));
        const char *run_type = json_string_value(json_object_get(b,
                                                                 "run_type"));
        const json_t *pos;
        s_arm_t *arm;

        if (!json_is_object(b)) {
            cl_out_error(S_VERB, "%s: benchmarks[%zu] is not an object",
                         path, i);
            return -1;
        }
        if (!name) {
            cl_out_error(S_VERB, "%s: benchmarks[%zu] has no \"name\" string",
                         path, i);
            return -1;
        }
        /* Aggregates (mean, median, stddev, cv) are summaries of the
         * iterations, not samples. Files older than run_type mark them
         * with aggregate_name. */
        if ((run_type && strcmp(run_type, "iteration") != 0) ||
            (!run_type && json_object_get(b, "aggregate_name")))
            continue;
        if (!run_name)
            run_name = name;
        if (!(pos = json_object_get(g->index, run_name))) {
            if (g->count >= S_ENTRIES_MAX) {
                cl_out_error(S_VERB, "%s: more than %u benchmarks", path,
                             S_ENTRIES_MAX);
                return -1;
            }
            if (json_object_set_new(g->index, run_name,
                                    json_integer((json_int_t)g->count))) {
                cl_out_error(S_VERB, "%s: out of memory", path);
                s_oom = true;
                return -1;
            }
            g->arms[g->count].name = run_name;
            arm = &g->arms[g->count++];
        } else {
            arm = &g->arms[json_integer_value(pos)];
        }
        if (json_is_true(json_object_get(b, "error_occurred"))) {
            if (!arm->errors++)
                arm->error_message = json_string_value(
                    json_object_get(b, "error_message"));
            continue;
        }
        double us;
        if (s_gbench_time(path, i, name, b, &us) != 0)
            return -1;
        if (s_arm_push(arm, us)) {
            if (s_oom)
                cl_out_error(S_VERB, "%s: out of memory", path);
            else
                cl_out_error(S_VERB, "%s: \"%s\": more than %u "
                             "repetitions", path, run_name, VD_MAX_SAMPLES);
            return -1;
        }
        iterations++;
    }
    if (iterations == 0) {
        cl_out_error(S_VERB, "%s: no \"iteration\" entries: run the "
                     "benchmark with --benchmark_repetitions=N (N >= 2) and "
                     "without --benchmark_report_aggregates_only", path);
        return -1;
    }
    return 0;
}

/* Why arm cannot be judged, or NULL when it can. */
static const char *
s_gbench_unusable(const s_arm_t *arm, const char *side, char *buf,
                  size_t len)
{
    if (arm->errors) {
        snprintf(buf, len, "%s: %zu repetition%s reported an error (%s)",
                 side, arm->errors, arm->errors == 1 ? "" : "s",
                 arm->error_message ? arm->error_message : "no message");
        return buf;
    }
    if (arm->n < 2) {
        snprintf(buf, len, "%s has %zu repetition%s: run with "
                 "--benchmark_repetitions=N, N >= 2", side, arm->n,
                 arm->n == 1 ? "" : "s");
        return buf;
    }
    return NULL;
}

/* The table row of one judged benchmark: name, repetitions, both
 * medians, both ratios, the tolerance, the outcome and the diagnostics.
 * 0, or -1 out of memory. */
static int
s_gbench_row(pw_out_table_t *t, const s_arm_t *b, const s_arm_t *c,
             const vd_verdict_t *v)
{
    char n[40], bm[40], cm[40], r[32], br[32], tol[32];
    char notes[PW_OUT_CELL_MAX] = "";
    for (unsigned bit = 0; bit < 32; bit++) {
        const char *name = vd_diag_name(1u << bit);
        if ((v->diagnostics & (1u << bit)) && name)
            snprintf(notes + strlen(notes),
                     sizeof notes - strlen(notes), "%s%s",
                     notes[0] ? "," : "", name);
    }
    snprintf(n, sizeof n, "%zu/%zu", b->n, c->n);
    pw_out_us(bm, sizeof bm, v->b.median);
    pw_out_us(cm, sizeof cm, v->a.median);
    pw_out_ratio(r, sizeof r, v->ratio);
    pw_out_ratio(br, sizeof br, v->best_ratio);
    pw_out_ratio(tol, sizeof tol, v->tolerance);
    const char *row[9] = {b->name, n, bm, cm, r, br, tol,
                          vd_outcome_name(v->outcome), notes};
    return pw_out_table_add(t, row);
}

static int
s_gbench(const char *base_path, const char *cont_path, const s_opts_t *o)
{
    s_gbench_t base, cont;
    pw_out_table_t *t = NULL;
    json_t *out = NULL, *list = NULL, *only_b = NULL, *only_c = NULL;
    size_t common = 0, failed = 0;
    int rc = PW_EXIT_DATA;
    char err[S_ERR_MAX];

    memset(&cont, 0, sizeof cont);
    if (s_gbench_load(base_path, &base) || s_gbench_load(cont_path, &cont))
        goto done;
    rc = PW_EXIT_SYSTEM;
    if (o->json) {
        if (!(out = json_object()) || !(list = json_array()) ||
            !(only_b = json_array()) || !(only_c = json_array()))
            goto write_failed;
    } else {
        static const char *const head[] = {
            "benchmark", "n", "baseline", "contender", "ratio", "best_ratio",
            "tolerance", "verdict", "notes"};
        if (!(t = pw_out_table_new(9)) || pw_out_table_add(t, head))
            goto write_failed;
        pw_out_table_left(t, 8);
    }
    for (size_t i = 0; i < base.count; i++) {
        const s_arm_t *b = &base.arms[i], *c;
        const json_t *pos = json_object_get(cont.index, b->name);
        const char *why;
        vd_verdict_t v;

        if (!pos) {
            if (o->json && json_array_append_new(only_b, json_string(b->name)))
                goto write_failed;
            if (!o->json)
                fprintf(stderr, "parity import: only in %s: %s\n", base_path,
                        b->name);
            continue;
        }
        common++;
        c = &cont.arms[json_integer_value(pos)];
        why = s_gbench_unusable(b, "baseline", err, sizeof err);
        if (!why)
            why = s_gbench_unusable(c, "contender", err, sizeof err);
        if (!why && s_judge(c, b, &o->params, &v, err, sizeof err))
            why = err;
        if (why) {
            failed++;
            cl_out_error(S_VERB, "%s: %s", b->name, why);
            if (o->json && json_array_append_new(list, json_pack(
                    "{s:s, s:s}", "name", b->name, "error", why)))
                goto write_failed;
            continue;
        }
        if (o->json) {
            json_t *entry = json_pack("{s:s, s:{s:o}}", "name", b->name,
                                      "verdict", "baseline",
                                      pw_verdict_to_json(
                                          &v, PW_VERDICT_SUMMARIES));
            if (!entry || json_array_append_new(list, entry))
                goto write_failed;
        } else {
            if (s_gbench_row(t, b, c, &v))
                goto write_failed;
        }
    }
    for (size_t i = 0; i < cont.count; i++) {
        if (json_object_get(base.index, cont.arms[i].name))
            continue;
        if (o->json) {
            if (json_array_append_new(only_c, json_string(cont.arms[i].name)))
                goto write_failed;
        } else {
            fprintf(stderr, "parity import: only in %s: %s\n", cont_path,
                    cont.arms[i].name);
        }
    }
    if (o->json) {
        if (json_object_set_new(out, "source", json_string("gbench")) ||
            json_object_set_new(out, "baseline", s_json_text(base_path)) ||
            json_object_set_new(out, "contender", s_json_text(cont_path)) ||
            json_object_set_new(out, "floor_us",
                                json_real(o->params.floor_us)) ||
            json_object_set_new(out, "parity", json_real(o->params.parity)) ||
            json_object_set(out, "benchmarks", list) ||
            json_object_set(out, "only_in_baseline", only_b) ||
            json_object_set(out, "only_in_contender", only_c) ||
            pw_out_json(stdout, out))
            goto write_failed;
    } else {
        if (printf("contender %s against baseline %s (ratio < 1: the "
                   "contender is faster)\n", cont_path, base_path) < 0 ||
            pw_out_table_print(t, stdout))
            goto write_failed;
    }
    if (fflush(stdout) != 0)
        goto write_failed;
    if (common == 0) {
        cl_out_error(S_VERB, "%s and %s have no benchmark in common",
                     base_path, cont_path);
        rc = PW_EXIT_DATA;
    } else {
        rc = failed ? PW_EXIT_DATA : PW_EXIT_OK;
    }
    goto done;
write_failed:
    cl_out_error(S_VERB, "writing the output failed (or out of memory)");
done:
    if (s_oom)
        rc = PW_EXIT_SYSTEM;
    pw_out_table_destroy(&t);
    json_decref(out);
    json_decref(list);
    json_decref(only_b);
    json_decref(only_c);
    s_gbench_free(&base);
    s_gbench_free(&cont);
    return rc;
}

/* ---- options --------------------------------------------------------- */

enum { S_OPT_REF = 256, S_OPT_JSON };

static const struct option s_options[] = {
    {"reference", required_argument, NULL, S_OPT_REF},
    PW_OUT_RULE_OPTIONS,
    {"json", no_argument, NULL, S_OPT_JSON},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};


int
cl_import_main(int argc, char **argv)
{
    s_opts_t o = {0};
    const char *kind;
    int c, nfiles, rule;

    vd_params_default(&o.params);
    if (cl_out_wants_help(argc, argv)) {
        return cl_out_help(S_VERB, s_usage);
    }
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", s_options, NULL)) != -1) {
        switch (c) {
        case S_OPT_REF: o.reference = optarg; break;
        case S_OPT_JSON: o.json = true; break;
        default:
            rule = cl_out_rule_opt(S_VERB, c, optarg, &o.params);
            if (rule > 0)
                break;
            if (rule == 0)
                cl_out_option_error(S_VERB, c, argv);
            return PW_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        cl_out_error(S_VERB, "which format? hyperfine or gbench (parity "
                     "import --help)");
        return PW_EXIT_USAGE;
    }
    kind = argv[optind++];
    nfiles = argc - optind;
    if (strcmp(kind, "hyperfine") == 0) {
        if (nfiles != 1) {
            cl_out_error(S_VERB, "hyperfine takes one FILE.json, got %d",
                         nfiles);
            return PW_EXIT_USAGE;
        }
        return s_hyperfine(argv[optind], &o);
    }
    if (strcmp(kind, "gbench") == 0) {
        if (nfiles != 2) {
            cl_out_error(S_VERB, "gbench takes BASELINE.json and "
                         "CONTENDER.json, got %d file%s", nfiles,
                         nfiles == 1 ? "" : "s");
            return PW_EXIT_USAGE;
        }
        if (o.reference) {
            cl_out_error(S_VERB, "--reference is for hyperfine; gbench "
                         "judges the contender against the baseline");
            return PW_EXIT_USAGE;
        }
        if (o.params.floor_is_default) {   /* no --floor-us */
            o.params.floor_us = 0.0;
            o.params.floor_is_default = false;
        }
        return s_gbench(argv[optind], argv[optind + 1], &o);
    }
    cl_out_error(S_VERB, "unknown format \"%s\": hyperfine or gbench", kind);
    return PW_EXIT_USAGE;
}
