/* test_co_api.c -- co_api: each endpoint becomes its query with the
 * arguments the protocol names; each refusal has its status, code and
 * message; paging keeps the rows asked for and says where the next page
 * starts. */
#include <string.h>

#include <jansson.h>

#include "co_api.h"
#include "co_reply.h"
#include "pw_json.h"
#include "tap.h"

/* Route and compare: command and args (as compact JSON), or the error. */
static void
route(const char *method, const char *path, const co_api_param_t *p,
      size_t n, const char *body, const char *want_cmd,
      const char *want_args)
{
    co_api_call_t c;
    int rc = co_api_route(method, path, p, n, body, body ? strlen(body) : 0,
                          &c);
    char *args = c.args ? pw_json_dumps(c.args) : NULL;
    ok(rc == 0 && strcmp(c.command, want_cmd) == 0 && args &&
       strcmp(args, want_args) == 0, "%s %s: %s %s (%s %s)", method, path,
       want_cmd, want_args, rc ? c.message : c.command, args ? args : "");
    free(args);
    co_api_call_clear(&c);
}

static void
refuse(const char *method, const char *path, const co_api_param_t *p,
       size_t n, const char *body, int status, const char *code,
       const char *message)
{
    co_api_call_t c;
    int rc = co_api_route(method, path, p, n, body, body ? strlen(body) : 0,
                          &c);
    ok(rc == -1 && c.status == status && strcmp(c.code, code) == 0 &&
       strcmp(c.message, message) == 0, "%d %s: %s (%d %s)", status, code,
       message, c.status, c.message);
    co_api_call_clear(&c);
}

int
main(void)
{
    co_api_param_t p[4];
    route("GET", "/api/v1/hosts", NULL, 0, NULL, "hosts", "{}");
    p[0] = (co_api_param_t){ "active", "true" };
    p[1] = (co_api_param_t){ "limit", "5" };
    route("GET", "/api/v1/jobs", p, 2, NULL, "jobs",
          "{\"active\":true,\"limit\":5}");
    route("GET", "/api/v1/jobs/0123456789ab", NULL, 0, NULL, "job",
          "{\"job\":\"0123456789ab\"}");
    p[0] = (co_api_param_t){ "latest", "" };
    p[1] = (co_api_param_t){ "metric", "cpu" };
    route("GET", "/api/v1/verdicts", p, 2, NULL, "verdicts",
          "{\"latest\":true,\"metric\":\"cpu\"}");
    p[0] = (co_api_param_t){ "host", "a" };
    p[1] = (co_api_param_t){ "host", "b" };
    p[2] = (co_api_param_t){ "tag", "branch=main" };
    p[3] = (co_api_param_t){ "tag", "os=linux=6" };
    route("GET", "/api/v1/history/compress", p, 4, NULL, "history",
          "{\"benchmark\":\"compress\",\"hosts\":[\"a\",\"b\"],\"tags\":"
          "{\"branch\":\"main\",\"os\":\"linux=6\"}}");
    p[0] = (co_api_param_t){ "since_us", "86400000000" };
    route("GET", "/api/v1/series", p, 1, NULL, "series",
          "{\"since_us\":86400000000}");
    route("GET", "/api/v1/regressions", NULL, 0, NULL, "regressions", "{}");
    route("GET", "/api/v1/bisect/7", NULL, 0, NULL, "bisect_status",
          "{\"bisect\":7}");
    route("GET", "/api/v1/runs/r-1/export", NULL, 0, NULL, "show",
          "{\"run\":\"r-1\"}");
    route("POST", "/api/v1/regressions/12/ack", NULL, 0,
          "{\"note\": \"known\"}", "ack", "{\"id\":12,\"note\":\"known\"}");
    route("POST", "/api/v1/regressions/12/unack", NULL, 0, "", "unack",
          "{\"id\":12}");

    co_api_call_t c;
    co_api_route("GET", "/api/v1/changes", NULL, 0, NULL, 0, &c);
    ok(strcmp(c.command, "regressions") == 0 &&
       strcmp(c.part, "change_points") == 0 && c.role == CO_ROLE_READ,
       "changes: regressions, its change_points, the read role");
    co_api_call_clear(&c);
    co_api_route("POST", "/api/v1/regressions/1/ack", NULL, 0, "{}", 2, &c);
    ok(c.role == CO_ROLE_TRIAGE, "ack needs the triage role");
    co_api_call_clear(&c);

    refuse("GET", "/api/v1/nope", NULL, 0, NULL, 404, "not_found",
           "no such endpoint: /api/v1/nope (the API's endpoints: "
           "docs/http.md)");
    refuse("GET", "/api/v1/jobs/", NULL, 0, NULL, 404, "not_found",
           "no such endpoint: /api/v1/jobs/ (the API's endpoints: "
           "docs/http.md)");
    refuse("POST", "/api/v1/hosts", NULL, 0, NULL, 405, "method_not_allowed",
           "POST is not allowed on /api/v1/hosts (allowed: GET, HEAD)");
    refuse("GET", "/api/v1/regressions/3/ack", NULL, 0, NULL, 405,
           "method_not_allowed", "GET is not allowed on "
           "/api/v1/regressions/3/ack (allowed: POST)");
    p[0] = (co_api_param_t){ "limit", "1001" };
    refuse("GET", "/api/v1/hosts", p, 1, NULL, 400, "bad_parameter",
           "parameter \"limit\": want a whole number from 1 to 1000, not "
           "\"1001\"");
    p[0] = (co_api_param_t){ "offset", "-1" };
    refuse("GET", "/api/v1/hosts", p, 1, NULL, 400, "bad_parameter",
           "parameter \"offset\": want a whole number from 0 to 1000000000, "
           "not \"-1\"");
    p[0] = (co_api_param_t){ "active", "yes" };
    refuse("GET", "/api/v1/jobs", p, 1, NULL, 400, "bad_parameter",
           "parameter \"active\": want true or false, not \"yes\"");
    p[0] = (co_api_param_t){ "runs", "99999999999999999999" };
    refuse("GET", "/api/v1/series", p, 1, NULL, 400, "bad_parameter",
           "parameter \"runs\": \"99999999999999999999\" is not a whole "
           "number");
    p[0] = (co_api_param_t){ "tag", "=x" };
    refuse("GET", "/api/v1/series", p, 1, NULL, 400, "bad_parameter",
           "parameter \"tag\": \"=x\" is not KEY=VALUE");
    p[0] = (co_api_param_t){ "tag", "a=1" };
    p[1] = (co_api_param_t){ "tag", "a=2" };
    refuse("GET", "/api/v1/series", p, 2, NULL, 400, "bad_parameter",
           "parameter \"tag\": key \"a\" is given twice");
    p[0] = (co_api_param_t){ "host", "\xff" };
    refuse("GET", "/api/v1/series", p, 1, NULL, 400, "bad_parameter",
           "parameter \"host\" is not UTF-8 text");
    refuse("GET", "/api/v1/bisect/0", NULL, 0, NULL, 400, "bad_parameter",
           "\"0\" in the path is not a bisect id (a positive integer)");
    refuse("POST", "/api/v1/regressions/x/ack", NULL, 0, NULL, 400,
           "bad_parameter", "\"x\" in the path is not a change point's id "
           "(a positive integer)");
    refuse("POST", "/api/v1/regressions/4/ack", NULL, 0, "{\"id\": 5}", 400,
           "bad_body", "\"id\" is the path's, not the body's");
    refuse("POST", "/api/v1/regressions/4/ack", NULL, 0, "note", 400,
           "bad_body", "the body must be a JSON object, such as {\"note\": "
           "\"why the change is known\"}");

    /* Paging: rows [offset, offset + limit), the total, the next. */
    json_t *b = json_pack("{s[iiiii]}", "hosts", 0, 1, 2, 3, 4);
    p[0] = (co_api_param_t){ "limit", "2" };
    p[1] = (co_api_param_t){ "offset", "2" };
    co_api_route("GET", "/api/v1/hosts", p, 2, NULL, 0, &c);
    co_api_page(&c, b);
    char *t = pw_json_dumps(b);
    ok(strcmp(t, "{\"hosts\":[2,3],\"total\":5,\"next\":4}") == 0,
       "page 2 of 2 rows: %s", t);
    free(t);
    co_api_call_clear(&c);
    p[1] = (co_api_param_t){ "offset", "4" };
    co_api_route("GET", "/api/v1/hosts", p, 2, NULL, 0, &c);
    co_api_page(&c, b);      /* of [2, 3]: past the end */
    t = pw_json_dumps(b);
    ok(strcmp(t, "{\"hosts\":[],\"total\":2,\"next\":null}") == 0,
       "past the end: no rows, no next: %s", t);
    free(t);
    co_api_call_clear(&c);
    json_decref(b);

    const char *code;
    ok(co_api_http_status(CO_REPLY_OK, &code) == 200 && !code &&
       co_api_http_status(CO_REPLY_BADARGS, &code) == 400 &&
       strcmp(code, "bad_parameter") == 0 &&
       co_api_http_status(CO_REPLY_NOTFOUND, &code) == 404 &&
       co_api_http_status(CO_REPLY_UNAVAILABLE, &code) == 503 &&
       strcmp(code, "unavailable") == 0 &&
       co_api_http_status(CO_REPLY_TIMEOUT, &code) == 504 &&
       co_api_http_status(CO_REPLY_TOO_BIG, &code) == 500 &&
       strcmp(code, "too_large") == 0,
       "a Reply's status as HTTP's: 200, 400, 404, 503, 504, 500");
    return tap_done();
}
