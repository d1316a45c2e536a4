/* co_api.c -- the JSON API's routes (co_api.h). */
#include "co_api.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co_reply.h"
#include "pw_err.h"

typedef enum {
    P_STR,      /* a string argument */
    P_INT,      /* a whole number argument */
    P_BOOL,     /* true or false */
    P_FLAG,     /* present (no value, or true): the argument true */
    P_TAG,      /* KEY=VALUE, repeatable: one member of an object */
    P_LIST,     /* repeatable: one string of an array */
    P_PAGE,     /* paging of the answer (limit, offset): not an argument */
} s_ptype_t;

typedef struct {
    const char *name;         /* the query parameter */
    const char *arg;          /* the argument it sets */
    s_ptype_t type;
} s_param_t;

#define S_PARAMS_MAX 8

typedef struct {
    const char *method;
    const char *pattern;      /* after /api/v1/; "*": one segment */
    const char *command;
    const char *path_arg;     /* what "*" sets, or NULL */
    s_ptype_t path_type;      /* P_STR or P_INT */
    const char *path_what;    /* "a job id" for its error */
    co_role_t role;
    const char *list, *part;
    s_param_t params[S_PARAMS_MAX];
} s_route_t;

#define S_REGRESSION_PARAMS                                               \
    { "tag", "tags", P_TAG }, { "jobs", "jobs", P_INT },                  \
    { "since_us", "since_us", P_INT }, { "host", "host", P_STR }

static const s_route_t s_routes[] = {
    { "GET", "hosts", "hosts", NULL, P_STR, NULL, CO_ROLE_READ, "hosts",
      NULL, { { "limit", NULL, P_PAGE }, { "offset", NULL, P_PAGE } } },
    { "GET", "jobs", "jobs", NULL, P_STR, NULL, CO_ROLE_READ, NULL, NULL,
      { { "active", "active", P_BOOL }, { "limit", "limit", P_INT } } },
    { "GET", "jobs/*", "job", "job", P_STR, "a job id", CO_ROLE_READ, NULL,
      NULL, { { NULL, NULL, P_STR } } },
    { "GET", "verdicts", "verdicts", NULL, P_STR, NULL, CO_ROLE_READ, NULL,
      NULL, { { "job", "job", P_STR }, { "latest", "latest", P_FLAG },
              { "metric", "metric", P_STR } } },
    { "GET", "history/*", "history", "benchmark", P_STR, "a benchmark",
      CO_ROLE_READ, NULL, NULL,
      { { "suite", "suite", P_STR }, { "other", "other", P_STR },
        { "host", "hosts", P_LIST }, { "tag", "tags", P_TAG },
        { "limit", "limit", P_INT }, { "by", "by", P_STR },
        { "metric", "metric", P_STR } } },
    { "GET", "series", "series", NULL, P_STR, NULL, CO_ROLE_READ, NULL, NULL,
      { { "suite", "suite", P_STR }, { "benchmark", "benchmark", P_STR },
        { "host", "host", P_STR }, { "tag", "tags", P_TAG },
        { "since_us", "since_us", P_INT }, { "runs", "runs", P_INT },
        { "metric", "metric", P_STR } } },
    { "GET", "regressions", "regressions", NULL, P_STR, NULL, CO_ROLE_READ,
      NULL, NULL, { S_REGRESSION_PARAMS } },
    { "GET", "changes", "regressions", NULL, P_STR, NULL, CO_ROLE_READ, NULL,
      "change_points", { S_REGRESSION_PARAMS } },
    { "GET", "bisect/*", "bisect_status", "bisect", P_INT,
      "a bisect id (a positive integer)", CO_ROLE_READ, NULL, NULL,
      { { NULL, NULL, P_STR } } },
    { "GET", "runs/*/export", "show", "run", P_STR, "a run id",
      CO_ROLE_READ, NULL, NULL, { { NULL, NULL, P_STR } } },
    { "POST", "regressions/*/ack", "ack", "id", P_INT,
      "a change point's id (a positive integer)", CO_ROLE_TRIAGE, NULL, NULL,
      { { NULL, NULL, P_STR } } },
    { "POST", "regressions/*/unack", "unack", "id", P_INT,
      "a change point's id (a positive integer)", CO_ROLE_TRIAGE, NULL, NULL,
      { { NULL, NULL, P_STR } } },
};
#define S_NROUTES (sizeof s_routes / sizeof *s_routes)

static int
s_fail(co_api_call_t *c, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
s_fail(co_api_call_t *c, int status, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->message, sizeof c->message, fmt, ap);
    va_end(ap);
    c->status = status;
    c->code = code;
    json_decref(c->args);
    c->args = NULL;
    return -1;
}

/* path matches pattern segment by segment; the "*" segment's text in
 * star (at most starlen bytes with its NUL). */
static bool
s_match(const char *pattern, const char *path, char *star, size_t starlen)
{
    star[0] = '\0';
    while (*pattern || *path) {
        const char *pe = strchr(pattern, '/'), *se = strchr(path, '/');
        size_t pl = pe ? (size_t)(pe - pattern) : strlen(pattern);
        size_t sl = se ? (size_t)(se - path) : strlen(path);
        if (!*pattern || !*path || (pe == NULL) != (se == NULL))
            return false;
        if (pl == 1 && *pattern == '*') {
            if (sl == 0 || sl >= starlen)
                return false;
            memcpy(star, path, sl);
            star[sl] = '\0';
        } else if (pl != sl || memcmp(pattern, path, pl) != 0) {
            return false;
        }
        pattern += pl + (pe != NULL);
        path += sl + (se != NULL);
    }
    return true;
}

static bool
s_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    if (!*s || strlen(s) > 19 || (*s != '-' && (*s < '0' || *s > '9')))
        return false;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static const s_param_t *
s_param(const s_route_t *r, const char *name)
{
    for (int i = 0; i < S_PARAMS_MAX && r->params[i].name; i++)
        if (strcmp(r->params[i].name, name) == 0)
            return &r->params[i];
    return NULL;
}

/* "limit offset": the route's parameters for an error. */
static void
s_known(const s_route_t *r, char *out, size_t len)
{
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < S_PARAMS_MAX && r->params[i].name && at < len; i++)
        at += (size_t)snprintf(out + at, len - at, "%s%s", i ? " " : "",
                               r->params[i].name);
    if (!out[0])
        snprintf(out, len, "none");
}

/* One query parameter into call's arguments. */
static int
s_take(const s_route_t *r, const co_api_param_t *p, bool *seen,
       co_api_call_t *c)
{
    const s_param_t *d = s_param(r, p->key);
    long long v;
    if (!d) {
        char known[200];
        s_known(r, known, sizeof known);
        return s_fail(c, 400, "bad_parameter", "unknown parameter \"%.60s\" "
                      "for %s /api/v1/%s (known: %s)", p->key, r->method,
                      r->pattern, known);
    }
    int idx = (int)(d - r->params);
    if (seen[idx] && d->type != P_TAG && d->type != P_LIST)
        return s_fail(c, 400, "bad_parameter", "parameter \"%s\" is given "
                      "twice", d->name);
    seen[idx] = true;
    json_t *val = NULL;
    switch (d->type) {
    case P_STR:
        val = json_string(p->value);
        break;
    case P_INT:
        if (!s_int(p->value, INT64_MIN + 1, INT64_MAX, &v))
            return s_fail(c, 400, "bad_parameter", "parameter \"%s\": "
                          "\"%.60s\" is not a whole number", d->name,
                          p->value);
        val = json_integer(v);
        break;
    case P_BOOL:
        if (strcmp(p->value, "true") && strcmp(p->value, "false"))
            return s_fail(c, 400, "bad_parameter", "parameter \"%s\": want "
                          "true or false, not \"%.60s\"", d->name, p->value);
        val = json_boolean(strcmp(p->value, "true") == 0);
        break;
    case P_FLAG:
        if (*p->value && strcmp(p->value, "true"))
            return s_fail(c, 400, "bad_parameter", "parameter \"%s\" takes "
                          "no value (or true), not \"%.60s\"", d->name,
                          p->value);
        val = json_true();
        break;
    case P_TAG: {
        const char *eq = strchr(p->value, '=');
        if (!eq || eq == p->value)
            return s_fail(c, 400, "bad_parameter", "parameter \"%s\": "
                          "\"%.60s\" is not KEY=VALUE", d->name, p->value);
        json_t *o = json_object_get(c->args, d->arg);
        if (!o) {
            o = json_object();
            json_object_set_new(c->args, d->arg, o);
        }
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(eq - p->value), p->value);
        if (json_object_get(o, key))
            return s_fail(c, 400, "bad_parameter", "parameter \"%s\": key "
                          "\"%.60s\" is given twice", d->name, key);
        json_object_set_new(o, key, json_string(eq + 1));
        return 0;
    }
    case P_LIST: {
        json_t *a = json_object_get(c->args, d->arg);
        if (!a) {
            a = json_array();
            json_object_set_new(c->args, d->arg, a);
        }
        json_array_append_new(a, json_string(p->value));
        return 0;
    }
    case P_PAGE:
        if (!s_int(p->value, strcmp(d->name, "limit") == 0 ? 1 : 0,
                   strcmp(d->name, "limit") == 0 ? CO_API_PAGE_MAX
                                                 : 1000000000, &v))
            return s_fail(c, 400, "bad_parameter", "parameter \"%s\": want "
                          "a whole number from %d to %d, not \"%.60s\"",
                          d->name, strcmp(d->name, "limit") == 0,
                          strcmp(d->name, "limit") == 0 ? CO_API_PAGE_MAX
                                                        : 1000000000,
                          p->value);
        *(strcmp(d->name, "limit") == 0 ? &c->limit : &c->offset) =
            (size_t)v;
        return 0;
    }
    if (!val)      /* not UTF-8 (json_string refuses it), or no memory */
        return s_fail(c, 400, "bad_parameter", "parameter \"%s\" is not "
                      "UTF-8 text", d->name);
    json_object_set_new(c->args, d->arg, val);
    return 0;
}

/* The POST body: a JSON object whose members join the arguments. */
static int
s_body(const char *body, size_t len, co_api_call_t *c)
{
    if (len > CO_API_MAX_BODY)
        return s_fail(c, 413, "too_large", "the body has %zu bytes: at most "
                      "%d", len, CO_API_MAX_BODY);
    if (len == 0)
        return 0;
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        return s_fail(c, 400, "bad_body", "the body must be a JSON object, "
                      "such as {\"note\": \"why the change is known\"}");
    }
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        if (json_object_get(c->args, k)) {
            char key[64];
            snprintf(key, sizeof key, "%.60s", k);
            json_decref(o);          /* k is o's */
            return s_fail(c, 400, "bad_body", "\"%s\" is the path's, not "
                          "the body's", key);
        }
        json_object_set(c->args, k, v);
    }
    json_decref(o);
    return 0;
}

/* The route's path argument from the "*" segment. */
static int
s_path_arg(const s_route_t *r, const char *star, co_api_call_t *c)
{
    long long v;
    json_t *val;
    if (r->path_type == P_INT) {
        if (!s_int(star, 1, INT64_MAX, &v))
            return s_fail(c, 400, "bad_parameter", "\"%.60s\" in the path is "
                          "not %s", star, r->path_what);
        val = json_integer(v);
    } else {
        val = json_string(star);
    }
    if (!val)
        return s_fail(c, 400, "bad_parameter", "the path is not UTF-8 text");
    json_object_set_new(c->args, r->path_arg, val);
    return 0;
}

int
co_api_route(const char *method, const char *path,
             const co_api_param_t *params, size_t n, const char *body,
             size_t body_len, co_api_call_t *c)
{
    memset(c, 0, sizeof *c);
    size_t pl = strlen(CO_API_PREFIX);
    const char *rest = strncmp(path, CO_API_PREFIX, pl) == 0 ? path + pl
                                                             : NULL;
    char star[512], allow[64] = "";
    const s_route_t *r = NULL;
    for (size_t i = 0; rest && i < S_NROUTES; i++) {
        if (!s_match(s_routes[i].pattern, rest, star, sizeof star))
            continue;
        if (strcmp(s_routes[i].method, method) == 0) {
            r = &s_routes[i];
            break;
        }
        size_t at = strlen(allow);
        if (!strstr(allow, s_routes[i].method))
            snprintf(allow + at, sizeof allow - at, "%s%s", at ? ", " : "",
                     s_routes[i].method);
    }
    if (!r && allow[0]) {
        c->allow = strcmp(allow, "GET") == 0 ? "GET, HEAD"
                   : strcmp(allow, "POST") == 0 ? "POST" : "GET, HEAD, POST";
        return s_fail(c, 405, "method_not_allowed", "%s is not allowed on "
                      "%.200s (allowed: %s)", method, path, c->allow);
    }
    if (!r)
        return s_fail(c, 404, "not_found", "no such endpoint: %.200s (the "
                      "API's endpoints: docs/http.md)", path);
    if (n > CO_API_MAX_PARAMS)
        return s_fail(c, 400, "bad_parameter", "%zu parameters: at most %d",
                      n, CO_API_MAX_PARAMS);
    c->command = r->command;
    c->role = r->role;
    c->list = r->list;
    c->part = r->part;
    c->limit = CO_API_PAGE_MAX;
    if (!(c->args = json_object()))
        return s_fail(c, 500, "internal", "out of memory");
    if (r->path_arg && s_path_arg(r, star, c) != 0)
        return -1;
    bool seen[S_PARAMS_MAX] = { false };
    for (size_t i = 0; i < n; i++)
        if (s_take(r, &params[i], seen, c) != 0)
            return -1;
    if (strcmp(method, "POST") == 0 && s_body(body, body_len, c) != 0)
        return -1;
    return 0;
}

void
co_api_call_clear(co_api_call_t *c)
{
    json_decref(c->args);
    c->args = NULL;
}

int
co_api_http_status(int reply_status, const char **code)
{
    switch (reply_status) {
    case CO_REPLY_OK: *code = NULL; return 200;
    case CO_REPLY_BADARGS: *code = "bad_parameter"; return 400;
    case CO_REPLY_FORBIDDEN: *code = "forbidden"; return 403;
    case CO_REPLY_NOTFOUND: *code = "not_found"; return 404;
    case CO_REPLY_UNAVAILABLE: *code = "unavailable"; return 503;
    case CO_REPLY_TIMEOUT: *code = "timeout"; return 504;
    case CO_REPLY_TOO_BIG: *code = "too_large"; return 500;
    default: *code = "internal"; return 500;
    }
}

void
co_api_page(const co_api_call_t *c, json_t *body)
{
    json_t *a = c->list ? json_object_get(body, c->list) : NULL;
    if (!json_is_array(a))
        return;
    size_t total = json_array_size(a);
    json_t *keep = json_array();
    for (size_t i = c->offset; keep && i < total && i - c->offset < c->limit;
         i++)
        json_array_append(keep, json_array_get(a, i));
    if (!keep)
        return;
    size_t next = c->offset + json_array_size(keep);
    json_object_set_new(body, c->list, keep);
    json_object_set_new(body, "total", json_integer((json_int_t)total));
    json_object_set_new(body, "next", next < total ?
                        json_integer((json_int_t)next) : json_null());
}
