/* ag_report.c -- see ag_report.h. */
#include "ag_report.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "pw_out.h"
#include "pw_json.h"
#include "vd_verdict.h"

/* The median of CPU time (user + sys) or peak RSS over arm's measured
 * samples (the first 4096: a table's figure, no verdict reads it); NAN
 * when none. */
static double
s_median_of(const json_t *b, const char *arm, bool cpu)
{
    double v[4096];
    size_t n = 0, i;
    json_t *s;
    json_array_foreach(json_object_get(b, "samples"), i, s) {
        const char *k = json_string_value(json_object_get(s, "kind"));
        const char *name = json_string_value(json_object_get(s, "arm"));
        if (n == sizeof v / sizeof *v || !k || !name ||
            strcmp(k, "measured") != 0 || strcmp(name, arm) != 0)
            continue;
        v[n++] = cpu ? json_number_value(json_object_get(s, "user_us")) +
                       json_number_value(json_object_get(s, "sys_us"))
                     : json_number_value(json_object_get(s, "maxrss_kb"));
    }
    for (i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n == 0 ? NAN : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Beside the wall-time table, as /usr/bin/time -v and poop show them:
 * each arm's median CPU time (user + system) and peak RSS. */
static int
s_resources(FILE *f, const json_t *b, const char *const *names, size_t n)
{
    static const char *const head[] = { "", "cpu (user+sys)", "peak RSS" };
    pw_out_table_t *t = pw_out_table_new(3);
    int rc = t ? pw_out_table_add(t, head) : -1;
    pw_out_table_left(t, 0);
    for (size_t i = 0; t && i < n; i++) {
        char cpu[40], rss[40];
        double c = s_median_of(b, names[i], true),
               r = s_median_of(b, names[i], false);
        if (isnan(c))
            continue;
        pw_out_us(cpu, sizeof cpu, c);
        pw_out_kib(rss, sizeof rss, r);
        const char *row[] = { names[i], cpu, rss };
        rc |= pw_out_table_add(t, row);
    }
    if (t)
        rc |= pw_out_table_print(t, f);
    pw_out_table_destroy(&t);
    return rc;
}

/* The verdicts of the other metrics asked for (b's "metrics"). */
static int
s_metric_verdicts(FILE *f, const json_t *b, const char *subject)
{
    const char *m, *key;
    json_t *mv, *v;
    char e[256];
    json_object_foreach(json_object_get(b, "metrics"), m, mv) {
        json_object_foreach(json_object_get(mv, "verdict"), key, v) {
            vd_verdict_t vd;
            if (pw_verdict_from_json(v, &vd, e, sizeof e) == PW_OK &&
                pw_out_metric_verdict(f, m, subject, key, &vd) != 0)
                return -1;
        }
        const char *why = json_string_value(json_object_get(
            mv, "verdict_error"));
        if (why)
            fprintf(f, "%s\n", why);
    }
    return ferror(f) ? -1 : 0;
}

static int
s_bench(FILE *f, const json_t *b, bool wall)
{
    const json_t *arms = json_object_get(b, "arms");
    const json_t *summary = json_object_get(b, "summary");
    const json_t *verdict = json_object_get(b, "verdict");
    const char *status = json_string_value(json_object_get(b, "status"));
    size_t narms = json_array_size(arms), i;
    const char *names[64];
    vd_summary_t sums[64];
    size_t shown = 0;
    const char *subject = NULL;
    char e[256];

    long long runs = json_integer_value(json_object_get(b, "runs"));
    long long warm = json_integer_value(json_object_get(b, "warmup"));
    const json_t *ad = json_object_get(b, "adaptive");
    char how[160] = "";
    /* runs: auto says how many and why it stopped. */
    if (ad) {
        const char *why = json_string_value(json_object_get(ad, "stopped"));
        long long cap = json_integer_value(json_object_get(ad, "max_runs"));
        snprintf(how, sizeof how, ": auto, %s", !why ? "?"
                 : strcmp(why, "decisive") == 0 ? "stopped when decisive"
                 : strcmp(why, "cap") == 0 ? "not decisive at the cap"
                 : "stopped early");
        snprintf(how + strlen(how), sizeof how - strlen(how),
                 " (at most %lld)", cap);
    }
    fprintf(f, "%s: %s (%lld run%s%s, %lld warm-up%s)\n",
            json_string_value(json_object_get(b, "name")),
            status ? status : "?", runs, runs == 1 ? "" : "s", how, warm,
            warm == 1 ? "" : "s");
    for (i = 0; i < narms && i < 64; i++) {
        const json_t *arm = json_array_get(arms, i);
        const char *name = json_string_value(json_object_get(arm, "name"));
        if (json_is_true(json_object_get(arm, "subject")))
            subject = name;
        const json_t *s = json_object_get(summary, name);
        if (s && pw_summary_from_json(s, &sums[shown], e, sizeof e) == PW_OK)
            names[shown++] = name;
    }
    if (shown && (pw_out_arms(f, names, sums, shown) != 0 ||
                  s_resources(f, b, names, shown) != 0))
        return -1;
    const char *reason = json_string_value(json_object_get(b, "reason"));
    if (reason)
        fprintf(f, "%s: %s\n", strcmp(status, "failed") == 0 ? "failed"
                                                             : "stopped",
                reason);
    const char *tail = json_string_value(json_object_get(b, "stderr_tail"));
    if (tail && *tail) {
        fprintf(f, "stderr (last lines):\n");
        for (const char *p = tail; *p;) {
            size_t n = strcspn(p, "\n");
            fprintf(f, "  | %.*s\n", (int)n, p);
            p += n;
            if (*p)
                p++;
        }
    }
    const char *key;
    json_t *v;
    json_object_foreach(wall ? (json_t *)verdict : NULL, key, v) {
        vd_verdict_t vd;
        if (pw_verdict_from_json(v, &vd, e, sizeof e) == PW_OK &&
            pw_out_verdict(f, subject ? subject : "?", key, &vd) != 0)
            return -1;
        /* The instructions comparison, beside the verdict (never it). */
        const char *ins = json_string_value(
            json_object_get(json_object_get(v, "instructions"), "text"));
        if (ins)
            fprintf(f, "  counters: %s\n", ins);
    }
    const char *why = json_string_value(json_object_get(b, "verdict_error"));
    if (why && wall)
        fprintf(f, "%s\n", why);
    if (s_metric_verdicts(f, b, subject ? subject : "?") != 0)
        return -1;
    fprintf(f, "\n");
    return ferror(f) ? -1 : 0;
}

int
ag_report_print(FILE *f, const json_t *doc)
{
    size_t i;
    json_t *b, *w, *m;
    /* Wall time's verdicts unless --metric named others alone. */
    const json_t *asked = json_object_get(doc, "metrics");
    bool wall = !json_is_array(asked);
    json_array_foreach(asked, i, m)
        wall |= json_string_value(m) && strcmp(json_string_value(m),
                                               "wall") == 0;
    json_array_foreach(json_object_get(doc, "benchmarks"), i, b)
        if (s_bench(f, b, wall) != 0)
            return -1;
    const json_t *fl = json_object_get(doc, "floor");
    if (fl) {
        char us[40];
        const char *text = json_string_value(json_object_get(fl, "text"));
        pw_out_us(us, sizeof us,
                  json_number_value(json_object_get(fl, "floor_us")));
        if (text)
            fprintf(f, "floor: %s, %s\n", us, text);
        else
            fprintf(f, "floor: %s (%s, %lld calibration runs)\n", us,
                    json_is_true(json_object_get(fl, "default"))
                        ? "the default: fewer than 100 calibration runs"
                        : "this session's q90 - q10 of no-op runs",
                    (long long)json_integer_value(
                        json_object_get(fl, "calibration_samples")));
    }
    json_array_foreach(json_object_get(doc, "warnings"), i, w)
        fprintf(f, "warning: %s\n",
                json_string_value(json_object_get(w, "message")));
    if (!json_is_true(json_object_get(doc, "complete")))
        fprintf(f, "incomplete: interrupted before the end; what was "
                "measured is above\n");
    return ferror(f) ? -1 : 0;
}
