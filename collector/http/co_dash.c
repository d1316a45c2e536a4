/* co_dash.c -- the live dashboard (co_dash.h). */
#include "co_dash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "co_atom.h"
#include "co_page.h"
#include "co_svg.h"
#include "pw_clock.h"
#include "pw_out.h"

#define S_HTML "text/html; charset=utf-8"

/* The id of /regressions/ID/ack, or 0. */
static long long
s_ack_id(const char *path)
{
    long long id = 0;
    int end = 0;
    if (sscanf(path, "/regressions/%18lld/ack%n", &id, &end) != 1 ||
        path[end] || id < 1 || !strchr("123456789", path[13]))
        return 0;
    return id;
}

bool
co_dash_handles(const char *path)
{
    return strcmp(path, "/") == 0 || strcmp(path, "/hosts") == 0 ||
           s_ack_id(path) > 0 ||
           strcmp(path, "/regressions") == 0 ||
           strcmp(path, "/regressions.xml") == 0 ||
           (strncmp(path, "/bench/", 7) == 0 && path[7] &&
            !strchr(path + 7, '/'));
}

/* %-encode s for a query value or a path segment into buf. */
static void
s_urlenc(const char *s, char *buf, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < len; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
            c == '~') {
            buf[o++] = (char)c;
        } else {
            buf[o++] = '%';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    buf[o] = '\0';
}

/* co_page's link to a benchmark: /bench/NAME?suite=SUITE. */
static const char *
s_bench_href(void *ctx, const char *suite, const char *bench, char *buf,
             size_t len)
{
    char s[400], b[400];
    (void)ctx;
    s_urlenc(suite ? suite : "", s, sizeof s);
    s_urlenc(bench ? bench : "", b, sizeof b);
    snprintf(buf, len, "/bench/%s?suite=%s", b, s);
    return buf;
}

static co_page_opts_t
s_opts(const char *csrf)
{
    return (co_page_opts_t){ .bench_href = s_bench_href, .home = "/",
                             .feed = "/regressions.xml",
                             .maker = "the collector's dashboard",
                             .live = true, .refresh_s = CO_DASH_REFRESH_S,
                             .csrf = csrf };
}

void
co_dash_error(int status, const char *message, co_dash_page_t *out)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    out->status = status;
    out->type = S_HTML;
    if (f) {
        char head[16] = "Parity";
        if (status != 200)
            snprintf(head, sizeof head, "%d", status);
        fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
                "charset=\"utf-8\">\n<title>Parity: %s</title>\n</head>\n"
                "<body>\n<h1>%s</h1>\n<p class=\"error\">", head, head);
        co_svg_text(f, message);
        fputs("</p>\n<p><a href=\"/\">overview</a></p>\n</body>\n</html>\n",
              f);
        fclose(f);
    }
    out->body = buf;
    out->len = buf ? len : 0;
}

/* The document of co_page.h: hosts, the latest job's verdicts and the
 * change points, as many of them as the page needs. NULL with the
 * status and message of the query that failed. */
static json_t *
s_doc(bool hosts, bool latest, bool regs, co_dash_ask_t ask, void *ctx,
      int *status, char *msg, size_t msglen)
{
    json_t *doc = json_pack("{s:I}", "generated_at_us",
                            (json_int_t)pw_clock_unix_us()), *b = NULL,
           *args = json_object();
    *status = 200;
    if (doc && args && hosts) {
        if ((*status = ask(ctx, "hosts", args, &b, msg, msglen)) != 200)
            goto fail;
        json_object_set_new(doc, "hosts", b);
    }
    if (doc && args && latest) {
        json_object_set_new(args, "latest", json_true());
        *status = ask(ctx, "verdicts", args, &b, msg, msglen);
        json_object_del(args, "latest");
        if (*status == 404)          /* no job yet: the page says so */
            b = json_null();
        else if (*status != 200)
            goto fail;
        *status = 200;
        json_object_set_new(doc, "latest", b);
    }
    if (doc && args && regs) {
        if ((*status = ask(ctx, "regressions", args, &b, msg, msglen))
            != 200)
            goto fail;
        json_object_set(doc, "regressions",
                        json_object_get(b, "change_points"));
        json_decref(b);
    }
    if (!doc || !args) {
        *status = 500;
        snprintf(msg, msglen, "out of memory");
        goto fail;
    }
    json_decref(args);
    return doc;
fail:
    json_decref(args);
    json_decref(doc);
    return NULL;
}

/* The overview's benchmarks: the series with their newest 2 runs,
 * grouped by (suite, benchmark) in the order they come. */
static json_t *
s_benches(co_dash_ask_t ask, void *ctx, bool *truncated, int *status,
          char *msg, size_t msglen)
{
    json_t *args = json_pack("{s:i}", "runs", 2), *b = NULL,
           *out = json_array(), *ser;
    size_t i;
    *status = args && out ? ask(ctx, "series", args, &b, msg, msglen) : 500;
    json_decref(args);
    if (*status != 200) {
        json_decref(out);
        return NULL;
    }
    *truncated = json_is_true(json_object_get(b, "truncated"));
    json_array_foreach(json_object_get(b, "series"), i, ser) {
        json_t *last = json_array_get(out, json_array_size(out) - 1);
        const char *suite = pw_out_str(ser, "suite", ""),
                   *bench = pw_out_str(ser, "benchmark", "");
        if (last && strcmp(pw_out_str(last, "suite", ""), suite) == 0 &&
            strcmp(pw_out_str(last, "benchmark", ""), bench) == 0) {
            json_object_set_new(last, "count", json_integer(
                json_integer_value(json_object_get(last, "count")) + 1));
            continue;
        }
        json_array_append_new(out, json_pack("{s:s,s:s,s:i}", "suite", suite,
                                             "benchmark", bench, "count",
                                             1));
    }
    json_decref(b);
    return out;
}

/* The value of parameter key, or NULL. */
static const char *
s_param(const co_api_param_t *p, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(p[i].key, key) == 0)
            return p[i].value;
    return NULL;
}

/* One benchmark's page: its series, every tracked metric. */
static int
s_bench(FILE *f, const char *bench, const co_api_param_t *p, size_t n,
        const co_page_opts_t *o, co_dash_ask_t ask, void *ctx, char *msg,
        size_t msglen)
{
    const char *suite = s_param(p, n, "suite");
    int status;
    json_t *args = json_pack("{s:s,s:s,s:i,s:s}", "suite", suite ? suite : "",
                             "benchmark", bench, "runs", CO_DASH_RUNS,
                             "metric", "all"), *b = NULL;
    json_t *doc = json_pack("{s:I}", "generated_at_us",
                            (json_int_t)pw_clock_unix_us());
    status = args && doc ? ask(ctx, "series", args, &b, msg, msglen) : 500;
    if (status == 200 && json_array_size(json_object_get(b, "series")) == 0) {
        status = 404;
        snprintf(msg, msglen, "no series of benchmark \"%.200s\"%s%.200s%s",
                 bench, suite ? " in suite \"" : "", suite ? suite : "",
                 suite ? "\"" : "");
    }
    if (status == 200)
        co_page_bench(f, doc, suite, bench, json_object_get(b, "series"), o);
    json_decref(args);
    json_decref(doc);
    json_decref(b);
    return status;
}

/* The page acknowledging change point (or event) id: 404 when it is not
 * open. */
static int
s_ack(FILE *f, long long id, const co_page_opts_t *o, co_dash_ask_t ask,
      void *ctx, char *msg, size_t msglen)
{
    int status;
    if (!o->csrf) {
        snprintf(msg, msglen, "acknowledging needs the session of a triage "
                 "token (its login link)");
        return 403;
    }
    json_t *doc = s_doc(false, false, true, ask, ctx, &status, msg, msglen);
    if (!doc)
        return status;
    if (co_page_ack(f, doc, (json_int_t)id, o) == 1) {
        status = 404;
        snprintf(msg, msglen, "no open change point or event #%lld (the "
                 "acknowledged ones are reopened from /regressions)", id);
    }
    json_decref(doc);
    return status;
}

/* Write path's page into f: 200, or the failure's status with msg. */
static int
s_page(FILE *f, const char *path, const co_api_param_t *p, size_t n,
       const char *csrf, co_dash_ask_t ask, void *ctx, const char **type,
       char *msg, size_t msglen)
{
    co_page_opts_t o = s_opts(csrf);
    int status;
    bool truncated = false;
    *type = S_HTML;
    if (strncmp(path, "/bench/", 7) == 0)
        return s_bench(f, path + 7, p, n, &o, ask, ctx, msg, msglen);
    long long ack = s_ack_id(path);
    if (ack)
        return s_ack(f, ack, &o, ask, ctx, msg, msglen);
    bool root = strcmp(path, "/") == 0, hosts = strcmp(path, "/hosts") == 0,
         feed = strcmp(path, "/regressions.xml") == 0;
    json_t *doc = s_doc(root || hosts, root, !hosts, ask, ctx, &status, msg,
                        msglen);
    if (!doc)
        return status;
    if (root) {
        json_t *benches = s_benches(ask, ctx, &truncated, &status, msg,
                                    msglen);
        if (benches)
            co_page_overview(f, doc, benches, truncated, 0, &o);
        json_decref(benches);
    } else if (hosts) {
        co_page_hosts(f, doc, &o);
    } else if (feed) {
        *type = "application/atom+xml; charset=utf-8";
        co_atom_write(f, doc, "/regressions", "/regressions.xml");
    } else {
        /* Only a session's forms may act: without one, none is shown. */
        o.csrf = csrf;
        co_page_regressions(f, doc, &o);
    }
    json_decref(doc);
    return status;
}

void
co_dash_render(const char *path, const co_api_param_t *p, size_t n,
               const char *csrf, co_dash_ask_t ask, void *ctx, size_t max,
               co_dash_page_t *out)
{
    char *buf = NULL, msg[600] = "";
    size_t len = 0;
    const char *type = S_HTML;
    memset(out, 0, sizeof *out);
    FILE *f = open_memstream(&buf, &len);
    int status = f ? s_page(f, path, p, n, csrf, ask, ctx, &type, msg,
                            sizeof msg) : 500;
    if (f && fclose(f) != 0)
        status = 500;
    if (status == 200 && len > max) {
        status = 500;
        snprintf(msg, sizeof msg, "the page would have %zu bytes: more than "
                 "%zu (narrow it: a suite, a benchmark)", len, max);
    }
    if (status != 200) {
        free(buf);
        co_dash_error(status, msg[0] ? msg : "out of memory", out);
        return;
    }
    out->status = 200;
    out->type = type;
    out->body = buf;
    out->len = len;
}
