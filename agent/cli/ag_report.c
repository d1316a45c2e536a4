/* ag_report.c -- see ag_report.h. */
#include "ag_report.h"

#include <string.h>

#include "pw_out.h"
#include "pw_json.h"
#include "vd_verdict.h"

static int
s_bench(FILE *f, const json_t *b)
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
    if (shown && pw_out_arms(f, names, sums, shown) != 0)
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
    json_object_foreach((json_t *)verdict, key, v) {
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
    if (why)
        fprintf(f, "%s\n", why);
    fprintf(f, "\n");
    return ferror(f) ? -1 : 0;
}

int
ag_report_print(FILE *f, const json_t *doc)
{
    size_t i;
    json_t *b, *w;
    json_array_foreach(json_object_get(doc, "benchmarks"), i, b)
        if (s_bench(f, b) != 0)
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
