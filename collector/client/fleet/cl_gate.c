/* cl_gate.c -- a job's verdicts as a CI gate (cl_gate.h). */
#include "cl_gate.h"

#include <ctype.h>
#include <string.h>
#include <time.h>

#include "pw_json.h"
#include "cl_out.h"
#include "pw_out.h"
#include "vd_adaptive.h"

/* One case: a benchmark on a host, and what the gate makes of it. */
typedef struct {
    const json_t *cmp, *entry;
    const char *bench, *host;
    char name[320];         /* bench, with its metric when not wall */
    const char *state;      /* win, parity, loss or undecided */
    bool fails;
    vd_verdict_t v;
    bool has_verdict;
    char why[320];          /* what the case says, one line */
} s_case_t;

int
cl_gate_fail_on(const char *s, unsigned *bits, char *err, size_t errlen)
{
    const char *p = s;
    do {
        size_t n = strcspn(p, ",");
        if (n == 4 && strncmp(p, "loss", 4) == 0)
            *bits |= CL_GATE_LOSS;
        else if (n == 3 && strncmp(p, "any", 3) == 0)
            *bits |= CL_GATE_LOSS | CL_GATE_WIN;
        else if (n == 9 && strncmp(p, "undecided", 9) == 0)
            *bits |= CL_GATE_UNDECIDED;
        else {
            snprintf(err, errlen, "--fail-on \"%.60s\": want loss, any or "
                     "undecided (comma-separated)", s);
            return -1;
        }
        p += n;
    } while (*p++ == ',');
    return 0;
}

/* Whether the body compares with a baseline (else arms within the job). */
static bool
s_is_baseline(const json_t *body)
{
    return json_is_object(json_object_get(body, "baseline"));
}

static void
s_case(const json_t *cmp, const json_t *entry, unsigned fail_on,
       s_case_t *c)
{
    memset(c, 0, sizeof *c);
    c->cmp = cmp;
    c->entry = entry;
    /* Another metric's case names it: "grow (peak_rss)". */
    const char *metric = pw_out_str(cmp, "metric", "wall");
    pw_out_bench_metric(c->name, sizeof c->name,
                        pw_out_str(cmp, "benchmark", "?"), metric);
    c->bench = c->name;
    c->host = pw_out_str(entry, "host", "?");
    c->state = "undecided";
    const json_t *vj = json_object_get(entry, "verdict");
    char err[200];
    if (!json_is_object(vj)) {
        snprintf(c->why, sizeof c->why, "undecided: %s",
                 pw_out_str(entry, "error", "no verdict"));
    } else if (pw_verdict_from_json(vj, &c->v, err, sizeof err) != 0) {
        snprintf(c->why, sizeof c->why, "undecided: the verdict does not "
                 "read: %s", err);
    } else {
        char r[32], b[32], fl[40];
        c->has_verdict = true;
        c->state = vd_outcome_name(c->v.outcome);
        bool edge = c->v.outcome == VD_PARITY &&
                    !vd_adaptive_decisive(&c->v);
        if (edge)
            c->state = "undecided";
        snprintf(fl, sizeof fl, strcmp(metric, "peak_rss") == 0
                 ? "%.0f KiB" : "%.1f us", c->v.floor_us);
        snprintf(c->why, sizeof c->why, "%s%s: ratio %s, tolerance %.1f %%, "
                 "best ratio %s, floor %s", c->state,
                 edge ? " (parity, too near the rule's edge to call)" : "",
                 pw_out_ratio(r, sizeof r, c->v.ratio), 100 * c->v.tolerance,
                 pw_out_ratio(b, sizeof b, c->v.best_ratio), fl);
    }
    bool undecided = strcmp(c->state, "undecided") == 0;
    c->fails = (undecided && (fail_on & CL_GATE_UNDECIDED)) ||
               (!undecided && c->v.outcome == VD_LOSS &&
                (fail_on & CL_GATE_LOSS)) ||
               (!undecided && c->v.outcome == VD_WIN &&
                (fail_on & CL_GATE_WIN));
}

/* Call fn on every case of body, in order; stops at fn's nonzero. A
 * comparison on a metric the suite does not track ("tracked": false,
 * docs/suites.md "Metrics") is no case. */
static int
s_each(const json_t *body, unsigned fail_on,
       int (*fn)(s_case_t *c, void *ctx), void *ctx)
{
    size_t i, k;
    json_t *cmp, *e;
    json_array_foreach(json_object_get(body, "comparisons"), i, cmp) {
        if (json_is_false(json_object_get(cmp, "tracked")))
            continue;
        json_array_foreach(json_object_get(cmp, "hosts"), k, e) {
            s_case_t c;
            s_case(cmp, e, fail_on, &c);
            int rc = fn(&c, ctx);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int
s_count_one(s_case_t *c, void *ctx)
{
    cl_gate_counts_t *n = ctx;
    n->cases++;
    n->failed += c->fails;
    if (strcmp(c->state, "undecided") == 0)
        n->undecided++;
    else if (c->v.outcome == VD_WIN)
        n->win++;
    else if (c->v.outcome == VD_LOSS)
        n->loss++;
    else
        n->parity++;
    return 0;
}

void
cl_gate_count(const json_t *body, unsigned fail_on, cl_gate_counts_t *out)
{
    memset(out, 0, sizeof *out);
    s_each(body, fail_on, s_count_one, out);
}

/* "loss", "loss, undecided", "any" ...: what fails, for the result line. */
static const char *
s_fail_on_text(char *buf, size_t len, unsigned fail_on)
{
    snprintf(buf, len, "%s%s%s%s",
             (fail_on & CL_GATE_WIN) ? "any" :
             (fail_on & CL_GATE_LOSS) ? "loss" : "",
             (fail_on & (CL_GATE_WIN | CL_GATE_LOSS)) &&
             (fail_on & CL_GATE_UNDECIDED) ? ", " : "",
             (fail_on & CL_GATE_UNDECIDED) ? "undecided" : "",
             fail_on ? "" : "nothing");
    return buf;
}

/* What the cases are compared with: "branch=main" or "the job's arms". */
static const char *
s_against(char *buf, size_t len, const json_t *body)
{
    if (s_is_baseline(body))
        pw_out_pairs(buf, len, json_object_get(body, "baseline"), "?");
    else if (json_is_string(json_object_get(body, "against")))
        snprintf(buf, len, "%s", pw_out_str(body, "against", "?"));
    else
        snprintf(buf, len, "the job's own arms");
    return buf;
}

/* The result in one line without markup: *word is "failed" or
 * "passed", buf the rest. */
static void
s_result(char *buf, size_t len, const char **word, const json_t *body,
         unsigned fail_on)
{
    cl_gate_counts_t n;
    char fo[64], ag[256];
    cl_gate_count(body, fail_on, &n);
    *word = n.failed ? "failed" : "passed";
    snprintf(buf, len, "%zu of %zu case%s fail%s (fail on %s; against %s): "
             "%zu win, %zu parity, %zu loss, %zu undecided", n.failed,
             n.cases, n.cases == 1 ? "" : "s", n.failed == 1 ? "s" : "",
             s_fail_on_text(fo, sizeof fo, fail_on),
             s_against(ag, sizeof ag, body), n.win, n.parity, n.loss,
             n.undecided);
}

/* The case's label: the benchmark, with its arms when they differ. */
static void
s_label(char *buf, size_t len, const s_case_t *c)
{
    const char *s = pw_out_str(c->cmp, "subject", "?");
    const char *o = pw_out_str(c->cmp, "other", "?");
    /* The subject against an --against instance of it: the result line
     * says which revision ("against commit=c00"). */
    if (strcmp(s, o) == 0 || json_is_object(json_object_get(c->cmp,
                                                            "against")))
        snprintf(buf, len, "%s", c->bench);
    else
        snprintf(buf, len, "%s (%s vs %s)", c->bench, s, o);
}

/* What a case was judged against, for its row: the baseline's job, the
 * --against instance's revision, "none" (no baseline run) or "-". */
static const char *
s_base_cell(const s_case_t *c)
{
    const json_t *base = json_object_get(c->entry, "baseline");
    const json_t *against = json_object_get(c->cmp, "against");
    if (json_is_object(base))
        return pw_out_str(base, "job", "?");
    if (json_is_object(against))
        return pw_out_str(against, "value", "?");
    return json_is_null(base) ? "none" : "-";
}

/* ---- the terminal ---------------------------------------------------- */

static int
s_row(s_case_t *c, void *ctx)
{
    pw_out_table_t *t = ctx;
    char label[256], ratio[32] = "-", tol[32] = "-";
    s_label(label, sizeof label, c);
    if (c->has_verdict) {
        pw_out_ratio(ratio, sizeof ratio, c->v.ratio);
        snprintf(tol, sizeof tol, "%.1f %%", 100 * c->v.tolerance);
    }
    const char *row[] = { label, c->host, c->state, ratio, tol,
                          s_base_cell(c), c->fails ? "FAIL" : "ok" };
    return pw_out_table_add(t, row);
}

static int
s_reason(s_case_t *c, void *ctx)
{
    FILE *f = ctx;
    if (!c->has_verdict || c->fails)
        fprintf(f, "  %s on %s: %s\n", c->bench, c->host, c->why);
    return 0;
}

int
cl_gate_print(FILE *f, const json_t *body, unsigned fail_on)
{
    static const char *const head[] = { "benchmark", "host", "verdict",
        "ratio", "tolerance", "baseline", "gate" };
    pw_out_table_t *t = pw_out_table_new(7);
    char ag[256];
    if (!t)
        return -1;
    /* Names and words left, numbers right. */
    const size_t left[] = { 0, 1, 2, 5, 6 };
    for (size_t i = 0; i < sizeof left / sizeof *left; i++)
        pw_out_table_left(t, left[i]);
    fprintf(f, "\nagainst %s:\n", s_against(ag, sizeof ag, body));
    int rc = pw_out_table_add(t, head) || s_each(body, fail_on, s_row, t);
    rc |= pw_out_table_print(t, f);
    pw_out_table_destroy(&t);
    s_each(body, fail_on, s_reason, f);
    char res[512];
    const char *word;
    s_result(res, sizeof res, &word, body, fail_on);
    fprintf(f, "gate %s: %s\n", word, res);
    return rc || ferror(f) ? -1 : 0;
}

/* ---- Markdown -------------------------------------------------------- */

/* s as Markdown text in a table cell: HTML's specials as entities, the
 * table's and emphasis' specials escaped. */
static void
s_md(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '\n' || *s == '\r')
            fputc(' ', f);
        else {
            if (strchr("|\\*_`[]#~", *s))
                fputc('\\', f);
            fputc(*s, f);
        }
    }
}

/* The anchor of a case: parity-BENCH-HOST with every byte outside
 * [a-z0-9-] as '-', so GitHub and GitLab keep it as written. */
static void
s_anchor(char *buf, size_t len, const s_case_t *c)
{
    snprintf(buf, len, "parity-%s-%s", c->bench, c->host);
    for (char *p = buf; *p; p++) {
        *p = (char)tolower((unsigned char)*p);
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
            *p = '-';
    }
}

typedef struct {
    FILE *f;
    size_t listed, left;
    bool all;
} s_md_t;

static int
s_md_row(s_case_t *c, void *ctx)
{
    s_md_t *m = ctx;
    if (!m->all && !c->fails && strcmp(c->state, "parity") == 0) {
        m->left++;
        return 0;
    }
    char label[256], anchor[300], ratio[32] = "-", tol[32] = "-";
    s_label(label, sizeof label, c);
    s_anchor(anchor, sizeof anchor, c);
    if (c->has_verdict) {
        pw_out_ratio(ratio, sizeof ratio, c->v.ratio);
        snprintf(tol, sizeof tol, "%.1f %%", 100 * c->v.tolerance);
    }
    FILE *f = m->f;
    fputs("| ", f);
    s_md(f, label);
    fprintf(f, " | <a id=\"%s\"></a>", anchor);
    s_md(f, c->host);
    fprintf(f, " | %s%s%s | %s | %s | ", c->fails ? "**" : "", c->state,
            c->fails ? "**" : "", ratio, tol);
    s_md(f, s_base_cell(c));
    fputs(" | ", f);
    s_md(f, pw_out_str(c->entry, "run_id", "-"));
    fputs(" |\n", f);
    m->listed++;
    return 0;
}

int
cl_gate_markdown(FILE *f, const json_t *body, unsigned fail_on)
{
    cl_gate_counts_t n;
    char ag[256], tags[512];
    cl_gate_count(body, fail_on, &n);
    fputs("### Parity: suite ", f);
    s_md(f, pw_out_str(body, "suite", "?"));
    fputs(" against ", f);
    s_md(f, s_against(ag, sizeof ag, body));
    char res[512];
    const char *word;
    s_result(res, sizeof res, &word, body, fail_on);
    fprintf(f, "\n\n**%s**: ", word);
    s_md(f, res);
    fputs("\n\njob ", f);
    s_md(f, pw_out_str(body, "job", "?"));
    pw_out_pairs(tags, sizeof tags, json_object_get(body, "tags"), "");
    if (*tags) {
        fputs(", tags ", f);
        s_md(f, tags);
    }
    fputs("\n\n| benchmark | host | verdict | ratio | tolerance | baseline "
          "job | run |\n|---|---|---|---|---|---|---|\n", f);
    s_md_t m = { f, 0, 0, n.cases <= CL_GATE_MD_ROWS };
    s_each(body, fail_on, s_md_row, &m);
    if (m.left)
        fprintf(f, "\n%zu more case%s at parity, not listed.\n", m.left,
                m.left == 1 ? "" : "s");
    fputc('\n', f);
    size_t i;
    json_t *cmp;
    json_array_foreach(json_object_get(body, "comparisons"), i, cmp) {
        const json_t *sum = json_object_get(cmp, "summary");
        char gm[64];
        fputs("- ", f);
        s_md(f, pw_out_str(cmp, "benchmark", "?"));
        fputs(": ", f);
        s_md(f, pw_out_str(sum, "consensus", "no verdict"));
        fprintf(f, " (geomean ratio %s)\n",
                cl_out_geomean(gm, sizeof gm, sum));
    }
    return ferror(f) ? -1 : 0;
}

/* ---- JUnit XML ------------------------------------------------------- */

typedef struct {
    FILE *f;
    const char *suite;
} s_xml_t;

static int
s_testcase(s_case_t *c, void *ctx)
{
    s_xml_t *x = ctx;
    FILE *f = x->f;
    char label[256];
    s_label(label, sizeof label, c);
    pw_out_xmlf(f, false, "    <testcase name=\"%s on %s\" "
                "classname=\"%s.%s\" time=\"0\">\n", label, c->host,
                x->suite, c->bench);
    bool undecided = strcmp(c->state, "undecided") == 0;
    if (c->fails || undecided) {
        const char *el = c->fails ? "failure" : "skipped";
        pw_out_xmlf(f, false, "      <%s type=\"%s\" message=\"%s\">%s on "
                    "%s: %s\nrun %s</%s>\n", el, c->state, c->why, c->bench,
                    c->host, c->why, pw_out_str(c->entry, "run_id", "-"), el);
    }
    pw_out_xmlf(f, false, "      <system-out>%s</system-out>\n    </testcase>"
                "\n", c->why);
    return 0;
}

int
cl_gate_junit(FILE *f, const json_t *body, unsigned fail_on, int64_t now_us)
{
    cl_gate_counts_t n;
    cl_gate_count(body, fail_on, &n);
    /* Undecided cases that do not fail are skipped; failing ones are
     * failures. */
    size_t skipped = (fail_on & CL_GATE_UNDECIDED) ? 0 : n.undecided;
    char stamp[32] = "1970-01-01T00:00:00", ag[256], fo[64];
    time_t t = (time_t)(now_us / 1000000);
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<testsuites name=\"parity\" tests=\"%zu\" failures=\"%zu\" "
            "errors=\"0\" skipped=\"%zu\" time=\"0\">\n"
            "  <testsuite name=\"", n.cases, n.failed, skipped);
    pw_out_xml(f, pw_out_str(body, "suite", "?"), false);
    fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\""
            " time=\"0\" timestamp=\"%s\" hostname=\"parity\" id=\"0\" "
            "package=\"parity\">\n    <properties>\n"
            "      <property name=\"job\" value=\"", n.cases, n.failed,
            skipped, stamp);
    pw_out_xml(f, pw_out_str(body, "job", "?"), false);
    fputs("\"/>\n      <property name=\"against\" value=\"", f);
    pw_out_xml(f, s_against(ag, sizeof ag, body), false);
    fprintf(f, "\"/>\n      <property name=\"fail_on\" value=\"%s\"/>\n"
            "    </properties>\n", s_fail_on_text(fo, sizeof fo, fail_on));
    s_xml_t x = { f, pw_out_str(body, "suite", "?") };
    s_each(body, fail_on, s_testcase, &x);
    char res[512];
    const char *word;
    s_result(res, sizeof res, &word, body, fail_on);
    fprintf(f, "    <system-out>gate %s: ", word);
    pw_out_xml(f, res, false);
    fputs("</system-out>\n    <system-err></system-err>\n  </testsuite>\n"
          "</testsuites>\n", f);
    return ferror(f) ? -1 : 0;
}
