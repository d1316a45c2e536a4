/* co_atom.c -- the site's Atom feed of regressions (co_atom.h). */
#include "co_atom.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "co_svg.h"
#include "pw_out.h"

/* One entry: the event, whether it is acknowledged, and its instant. */
typedef struct {
    const json_t *event;
    bool acked;
    json_int_t updated_us;
} s_entry_t;

/* us as RFC 3339 in UTC ("2026-12-05T21:00:00Z"). */
static const char *
s_stamp(char *buf, size_t len, json_int_t us)
{
    time_t t = (time_t)(us > 0 ? us / 1000000 : 0);
    struct tm tm;
    if (!gmtime_r(&t, &tm) ||
        strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "1970-01-01T00:00:00Z");
    return buf;
}

/* The change point id of the site's lists (open, acked), or NULL. */
static const json_t *
s_cp(const json_t *doc, json_int_t id)
{
    const json_t *reg = json_object_get(doc, "regressions"), *cp;
    const char *lists[] = { "open", "acked" };
    size_t i;
    for (int l = 0; l < 2; l++)
        json_array_foreach(json_object_get(reg, lists[l]), i, cp)
            if (json_integer_value(json_object_get(cp, "id")) == id)
                return cp;
    return NULL;
}

/* When the entry last changed: its first run after the step, or a
 * member's later update or acknowledgement. */
static json_int_t
s_updated(const json_t *doc, const json_t *event)
{
    json_int_t at = json_integer_value(json_object_get(
        json_object_get(event, "after"), "time_us"));
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(event, "members"), i, m) {
        const json_t *cp = s_cp(doc, json_integer_value(m));
        json_int_t u = json_integer_value(json_object_get(cp,
                                                          "updated_at_us"));
        json_int_t a = json_integer_value(json_object_get(
            json_object_get(cp, "ack"), "at_us"));
        if (u > at)
            at = u;
        if (a > at)
            at = a;
    }
    return at;
}

static int
s_newest(const void *a, const void *b)
{
    const s_entry_t *x = a, *y = b;
    if (x->updated_us != y->updated_us)
        return x->updated_us < y->updated_us ? 1 : -1;
    json_int_t ix = json_integer_value(json_object_get(x->event, "id")),
               iy = json_integer_value(json_object_get(y->event, "id"));
    return (ix < iy) - (ix > iy);
}

/* "ratio x1.098" with the members' range when they differ. */
static void
s_change(char *buf, size_t len, const json_t *e)
{
    double m = json_number_value(json_object_get(e, "magnitude")),
           lo = json_number_value(json_object_get(e, "magnitude_min")),
           hi = json_number_value(json_object_get(e, "magnitude_max"));
    int at = snprintf(buf, len, "%s x%.3f", pw_out_str(e, "metric", "ratio"),
                      m);
    if (lo != hi && at > 0 && (size_t)at < len)
        snprintf(buf + at, len - (size_t)at, " (x%.3f to x%.3f)", lo, hi);
}

static void
s_entry(FILE *f, const json_t *doc, const s_entry_t *en, const char *page)
{
    const json_t *e = en->event, *trend = json_object_get(e, "trend"), *h;
    json_int_t id = json_integer_value(json_object_get(e, "id"));
    char stamp[32], change[160], before[512], after[512], vars[512];
    size_t i;
    s_change(change, sizeof change, e);
    pw_out_pairs(before, sizeof before, json_object_get(
        json_object_get(e, "before"), "tags"), "-");
    pw_out_pairs(after, sizeof after, json_object_get(
        json_object_get(e, "after"), "tags"), "-");
    pw_out_pairs(vars, sizeof vars, json_object_get(e, "vars"), "");
    const char *dir = pw_out_str(e, "direction", "?");
    fprintf(f, "  <entry>\n    <id>urn:parity:event:%" JSON_INTEGER_FORMAT
            "</id>\n    <title type=\"text\">%s%s: ", id,
            json_is_object(trend) ? "drifting " : "", dir);
    char bench[300];
    co_svg_text(f, pw_out_bench_metric(bench, sizeof bench, pw_out_str(
        e, "benchmark", "?"), pw_out_str(e, "quantity", "wall")));
    fputs(" (", f);
    co_svg_text(f, pw_out_str(e, "subject", "?"));
    fputs(" vs ", f);
    co_svg_text(f, pw_out_str(e, "other", "?"));
    fprintf(f, ") on %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT
            " hosts, ", json_integer_value(json_object_get(e,
                                                           "hosts_with_step")),
            json_integer_value(json_object_get(e, "hosts_total")));
    co_svg_text(f, change);
    /* A confirm's answer (co_confirm): what a reader decides on. */
    const json_t *k = json_object_get(e, "confirm");
    const char *ks = pw_out_str(k, "state", "");
    if (strcmp(ks, "confirmed") == 0 || strcmp(ks, "not reproduced") == 0)
        fprintf(f, " (%s)", ks);
    fprintf(f, "%s</title>\n    <updated>%s</updated>\n", en->acked ?
            " (acknowledged)" : "", s_stamp(stamp, sizeof stamp,
                                            en->updated_us));
    fprintf(f, "    <published>%s</published>\n    <link rel=\"alternate\" "
            "type=\"text/html\" href=\"%s#%s-%" JSON_INTEGER_FORMAT
            "\"/>\n    <summary type=\"text\">%s on", s_stamp(
                stamp, sizeof stamp, json_integer_value(json_object_get(
                    json_object_get(e, "after"), "time_us"))), page,
            en->acked ? "cp" : "event", id, dir);
    json_array_foreach(json_object_get(e, "hosts"), i, h) {
        fputs(i ? ", " : " ", f);
        co_svg_text(f, json_string_value(h) ? json_string_value(h) : "?");
    }
    fputs(" between ", f);
    co_svg_text(f, before);
    fputs(" and ", f);
    co_svg_text(f, after);
    fputs(": ", f);
    co_svg_text(f, change);
    fprintf(f, ", %s", pw_out_str(e, "outcome", "?"));
    if (json_is_object(trend))
        fprintf(f, ", a trend of %+.2f %% a run", 100.0 * json_number_value(
            json_object_get(trend, "per_run")));
    if (*vars) {
        fputs("; variables ", f);
        co_svg_text(f, vars);
    }
    char said[PW_OUT_CELL_MAX];
    if (*pw_out_confirm(said, sizeof said, k)) {
        fputs("; ", f);
        co_svg_text(f, said);
    }
    if (en->acked) {
        fputs("; acknowledged: ", f);
        co_svg_text(f, pw_out_str(json_object_get(s_cp(doc, id), "ack"),
                                  "note", ""));
    }
    fputs(".</summary>\n  </entry>\n", f);
}

int
co_atom_write(FILE *f, const json_t *doc, const char *page,
              const char *self)
{
    const json_t *ev = json_object_get(json_object_get(doc, "regressions"),
                                       "events");
    size_t n = json_array_size(json_object_get(ev, "open")) +
               json_array_size(json_object_get(ev, "acked")), k = 0, i;
    s_entry_t *all = calloc(n ? n : 1, sizeof *all);
    json_t *e;
    if (!all)
        return -1;
    for (int l = 0; l < 2; l++)
        json_array_foreach(json_object_get(ev, l ? "acked" : "open"), i, e)
            if (json_is_true(json_object_get(e, "regression")))
                all[k++] = (s_entry_t){ e, l == 1, s_updated(doc, e) };
    qsort(all, k, sizeof *all, s_newest);
    if (k > CO_ATOM_MAX_ENTRIES)
        k = CO_ATOM_MAX_ENTRIES;
    char stamp[32];
    json_int_t updated = k ? all[0].updated_us : json_integer_value(
        json_object_get(doc, "generated_at_us"));
    fprintf(f, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
            "<feed xmlns=\"http://www.w3.org/2005/Atom\">\n"
            "  <title type=\"text\">Parity: regressions</title>\n"
            "  <subtitle type=\"text\">Steps that made a benchmark slower, "
            "one entry per step across the fleet</subtitle>\n"
            "  <id>urn:parity:regressions</id>\n"
            "  <updated>%s</updated>\n"
            "  <author><name>parity</name></author>\n"
            "  <generator>parity</generator>\n"
            "  <link rel=\"self\" type=\"application/atom+xml\" "
            "href=\"%s\"/>\n"
            "  <link rel=\"alternate\" type=\"text/html\" "
            "href=\"%s\"/>\n", s_stamp(stamp, sizeof stamp, updated), self,
            page);
    for (i = 0; i < k; i++)
        s_entry(f, doc, &all[i], page);
    fputs("</feed>\n", f);
    free(all);
    return ferror(f) ? -1 : 0;
}
