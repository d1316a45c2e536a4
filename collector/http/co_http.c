/* co_http.c -- the collector over HTTP (co_http.h). */
#include "co_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>
#include <sodium.h>

#include "co_api.h"
#include "co_conn.h"
#include "co_dash.h"
#include "co_hcache.h"
#include "co_jobs.h"
#include "co_log.h"
#include "co_pg.h"
#include "co_prom.h"
#include "co_qpool.h"
#include "co_query.h"
#include "co_session.h"
#include "co_tokens.h"
#include "pw_buf.h"
#include "pw_clock.h"
#include "pw_err.h"
#include "pw_json.h"

#define S_JSON "application/json"

/* One thread's database side: its connection and the query module on
 * it, as a query worker has (co_qpool). */
typedef struct {
    co_conn_t *conn, *read;
    co_jobs_t *jobs;
    co_query_t *query;
    bool busy;
    int niced_pid;
} s_ctx_t;

typedef struct {
    char who[CO_TOKENS_NAME_MAX + 1];
    double tokens;
    int64_t last_ms;
} s_rate_t;

struct co_http {
    struct MHD_Daemon *d[CO_HTTP_BINDS_MAX];
    char url[CO_HTTP_BINDS_MAX][80];
    size_t n;
    co_tokens_t *tokens;
    co_sessions_t *sessions;     /* the dashboard's sign-ins */
    co_hcache_t *cache;          /* GET answers of the last second */
    pthread_t refresher;         /* refreshes the answers asked for */
    bool refreshing;             /* its thread runs */
    _Atomic int stopping;
    co_stats_t *stats;
    char version[64];
    bool renice;
    int rate;
    pthread_mutex_t lock;        /* ctx[].busy and rates[] */
    s_ctx_t *ctx;
    size_t nctx;
    s_rate_t rates[CO_HTTP_RATE_CLIENTS];
    /* Counted by every thread (atomics): /metrics's HTTP figures. */
    _Atomic uint64_t requests[CO_PROM_STATUS_MAX];
    _Atomic uint64_t connections;
    _Atomic int64_t open;
};

/* One request, from its first line to its end. */
typedef struct {
    char *target;                /* as sent: path and query, undecoded */
    int64_t start_ms;
    pw_buf_t body;
    bool body_refused;
    char who[CO_TOKENS_NAME_MAX + 1];
    /* Signed in by the session cookie (not a bearer token): its CSRF
     * token, which a form must carry; "" otherwise. */
    char csrf[CO_SESSION_ID_HEX + 1];
    char path[128];              /* for the log: the decoded path, cut */
    int status;
} s_req_t;

/* ---- answers ---------------------------------------------------------- */

/* Queue an answer of status with body (len bytes, copied) and type. */
static enum MHD_Result
s_send(struct MHD_Connection *con, s_req_t *rq, int status, const char *type,
       const char *body, size_t len, const char *const *headers)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    if (type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    for (size_t i = 0; headers && headers[i]; i += 2)
        MHD_add_response_header(r, headers[i], headers[i + 1]);
    enum MHD_Result ok = MHD_queue_response(con, (unsigned)status, r);
    MHD_destroy_response(r);
    if (rq)
        rq->status = status;
    return ok;
}

/* {"error": {"code", "message"}} with status. */
static enum MHD_Result
s_error(struct MHD_Connection *con, s_req_t *rq, int status,
        const char *code, const char *message, const char *const *headers)
{
    json_t *o = json_pack("{s{ssss}}", "error", "code", code, "message",
                          message);
    char *t = o ? pw_json_dumps(o) : NULL;
    json_decref(o);
    if (!t)
        return s_send(con, rq, 500, "text/plain", "out of memory\n", 14,
                      NULL);
    size_t len = strlen(t);
    char *line = malloc(len + 2);
    enum MHD_Result ok;
    if (!line) {
        ok = s_send(con, rq, status, S_JSON, t, len, headers);
    } else {
        memcpy(line, t, len);
        line[len] = '\n';
        ok = s_send(con, rq, status, S_JSON, line, len + 1, headers);
    }
    free(line);
    free(t);
    return ok;
}

/* FNV-1a of the body: an ETag that changes when the answer does. */
static void
s_etag(const char *body, size_t len, char out[24])
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)body[i];
        h *= 1099511628211ULL;
    }
    snprintf(out, 24, "\"%016" PRIx64 "\"", h);
}

/* 200 with body and its ETag, or 304 when the client has it. */
static enum MHD_Result
s_ok(struct MHD_Connection *con, s_req_t *rq, const char *type,
     const char *body, size_t len)
{
    char tag[24];
    s_etag(body, len, tag);
    const char *h[] = { MHD_HTTP_HEADER_ETAG, tag,
                        MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache", NULL };
    const char *inm = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
                                                  "If-None-Match");
    if (inm && (strcmp(inm, tag) == 0 || strcmp(inm, "*") == 0))
        return s_send(con, rq, 304, NULL, "", 0, h);
    return s_send(con, rq, 200, type, body, len, h);
}

/* ---- decoding --------------------------------------------------------- */

static int
s_hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decode [s, s + n) into out (n + 1 bytes): 0, or -1 for a NUL
 * byte, a control character or a broken escape. plus: '+' is a space
 * (query strings). */
static int
s_decode(const char *s, size_t n, bool plus, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n || s_hex(s[i + 1]) < 0 || s_hex(s[i + 2]) < 0)
                return -1;
            c = (unsigned char)(s_hex(s[i + 1]) * 16 + s_hex(s[i + 2]));
            i += 2;
        } else if (plus && c == '+') {
            c = ' ';
        }
        if (c < 0x20 || c == 0x7f)
            return -1;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return 0;
}

/* The decoded path of target into path (pathlen bytes): 0, or -1 with
 * why. */
static int
s_path(const char *target, size_t plen, char *path, size_t pathlen,
       const char **why)
{
    if (plen >= pathlen || s_decode(target, plen, false, path) != 0) {
        *why = "the path holds a NUL byte, a control character or a broken "
               "%-escape";
        return -1;
    }
    if (path[0] != '/') {
        *why = "the path must start with /";
        return -1;
    }
    for (const char *p = path; *p; ) {
        const char *e = strchr(p + 1, '/');
        size_t l = e ? (size_t)(e - p - 1) : strlen(p + 1);
        if ((l == 1 && p[1] == '.') || (l == 2 && p[1] == '.' && p[2] == '.')) {
            *why = "the path may not hold \".\" or \"..\" segments";
            return -1;
        }
        if (!e)
            break;
        p = e;
    }
    return 0;
}

/* The query string into params (keys and values decoded into store,
 * storelen bytes): the count, or -1 with why. */
static int
s_params(const char *q, co_api_param_t *params, char *store, size_t storelen,
        const char **why)
{
    size_t n = 0, at = 0;
    while (q && *q) {
        const char *amp = strchr(q, '&');
        size_t l = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', l);
        size_t kl = eq ? (size_t)(eq - q) : l, vl = eq ? l - kl - 1 : 0;
        if (l > 0) {
            if (n == CO_API_MAX_PARAMS) {
                *why = "more than 64 parameters";
                return -1;
            }
            if (at + kl + vl + 2 > storelen
                || s_decode(q, kl, true, store + at) != 0
                || s_decode(eq ? eq + 1 : "", vl, true,
                            store + at + kl + 1) != 0) {
                *why = "a parameter holds a NUL byte, a control character "
                       "or a broken %-escape";
                return -1;
            }
            params[n].key = store + at;
            params[n].value = store + at + kl + 1;
            at += kl + vl + 2;
            n++;
        }
        q = amp ? amp + 1 : NULL;
    }
    return (int)n;
}

/* ---- tokens and rates -------------------------------------------------- */

/* The caller's role from its Authorization header: CO_ROLE_NONE with
 * why for a 401. */
static co_role_t
s_auth(co_http_t *h, struct MHD_Connection *con, s_req_t *rq,
       const char **why)
{
    if (!h->tokens) {
        snprintf(rq->who, sizeof rq->who, "-");
        return CO_ROLE_READ;
    }
    const char *a = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_AUTHORIZATION);
    const char *cookie = MHD_lookup_connection_value(con, MHD_COOKIE_KIND,
                                                     CO_SESSION_COOKIE);
    co_session_t se;
    if (!a && cookie && co_sessions_find(h->sessions, cookie, strlen(cookie),
                                         pw_clock_mono_ms(), &se)) {
        snprintf(rq->who, sizeof rq->who, "%s", se.name);
        snprintf(rq->csrf, sizeof rq->csrf, "%s", se.csrf);
        return se.role;
    }
    if (!a) {
        *why = cookie ? "the session has ended: sign in again with the "
                        "login link (docs/http.md, \"The dashboard\")"
                      : "a token is required: send Authorization: Bearer "
                        "TOKEN (docs/http.md, \"Tokens\")";
        return CO_ROLE_NONE;
    }
    if (strncasecmp(a, "Bearer ", 7) != 0 || !a[7] || strchr(a + 7, ' ')) {
        *why = "malformed Authorization header: want Bearer TOKEN";
        return CO_ROLE_NONE;
    }
    char reload[600], q[700];
    co_role_t role = co_tokens_check(h->tokens, a + 7, strlen(a + 7),
                                     pw_clock_mono_ms(), rq->who, reload,
                                     sizeof reload);
    if (reload[0])
        co_log(CO_LOG_WARN, "http_tokens_failed", "why=%s keeping=%zu",
               co_log_quote(q, sizeof q, reload), co_tokens_count(h->tokens));
    if (role == CO_ROLE_NONE)
        *why = "the token is not in the collector's tokens file";
    return role;
}

/* True when who may make one more request now (a token bucket of rate a
 * second, twice that deep). */
static bool
s_rate_ok(co_http_t *h, const char *who)
{
    if (h->rate <= 0)
        return true;
    int64_t now = pw_clock_mono_ms();
    double burst = 2.0 * h->rate;
    bool ok;
    pthread_mutex_lock(&h->lock);
    s_rate_t *slot = NULL, *old = &h->rates[0];
    for (size_t i = 0; i < CO_HTTP_RATE_CLIENTS && !slot; i++) {
        if (strcmp(h->rates[i].who, who) == 0)
            slot = &h->rates[i];
        else if (h->rates[i].last_ms < old->last_ms)
            old = &h->rates[i];
    }
    if (!slot) {
        slot = old;
        snprintf(slot->who, sizeof slot->who, "%s", who);
        slot->tokens = burst;
        slot->last_ms = now;
    }
    slot->tokens += (double)(now - slot->last_ms) * h->rate / 1000.0;
    if (slot->tokens > burst)
        slot->tokens = burst;
    slot->last_ms = now;
    ok = slot->tokens >= 1.0;
    if (ok)
        slot->tokens -= 1.0;
    pthread_mutex_unlock(&h->lock);
    return ok;
}

/* ---- the database side ------------------------------------------------ */

static s_ctx_t *
s_ctx_take(co_http_t *h)
{
    s_ctx_t *c = NULL;
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < h->nctx && !c; i++)
        if (!h->ctx[i].busy) {
            c = &h->ctx[i];
            c->busy = true;
        }
    pthread_mutex_unlock(&h->lock);
    return c;
}

static void
s_ctx_give(co_http_t *h, s_ctx_t *c)
{
    pthread_mutex_lock(&h->lock);
    c->busy = false;
    pthread_mutex_unlock(&h->lock);
}

/* Run command with args; its answer text (malloc'd) or an error
 * status. */
static int
s_query(co_http_t *h, const char *command, const json_t *args,
        const char *who, char **text, const char **code, char *msg,
        size_t msglen)
{
    s_ctx_t *c = s_ctx_take(h);
    if (!c) {
        *code = "unavailable";
        pw_err(msg, msglen, "every HTTP database connection is busy; try "
               "again");
        return 503;
    }
    if (h->renice) {
        /* As the query workers: HTTP's queries take the CPU the writer
         * leaves (co_qpool.h). */
        char e[128];
        PGconn *pg = co_conn_pg(c->conn, e, sizeof e);
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), CO_QPOOL_NICE);
        if (pg)
            co_pg_renice_once(PQbackendPID(pg), CO_QPOOL_NICE, &c->niced_pid);
    }
    Parity__Request req = PARITY__REQUEST__INIT;
    Parity__Reply rep;
    char *atext = pw_json_dumps(args);
    req.request_id = 1;
    req.command = (char *)command;
    req.args_json = atext ? atext : (char *)"{}";
    char key[CO_TOKENS_NAME_MAX + 8];
    snprintf(key, sizeof key, "http:%s", who);
    co_query_answer(c->query, key, &req, &rep);
    s_ctx_give(h, c);
    free(atext);
    int status = co_api_http_status((int)rep.status, code);
    if (status == 200) {
        *text = rep.body_json;
        rep.body_json = (char *)protobuf_c_empty_string;
    } else {
        pw_err(msg, msglen, "%s", rep.error);
    }
    co_query_reply_clear(&rep);
    return status;
}

/* Paging or a part of the body: read, change, write again. */
static char *
s_shape(const co_api_call_t *call, char *text)
{
    if (!call->list && !call->part)
        return text;
    json_error_t je;
    json_t *b = json_loads(text, 0, &je), *out = b;
    free(text);
    if (call->part && b)
        out = json_object_get(b, call->part);
    else if (b)
        co_api_page(call, b);
    char *t = out ? pw_json_dumps(out) : NULL;
    json_decref(b);
    return t;
}

/* ---- routes ----------------------------------------------------------- */

static enum MHD_Result
s_metrics(co_http_t *h, struct MHD_Connection *con, s_req_t *rq)
{
    co_stats_snap_t *s = calloc(1, sizeof *s);
    co_prom_http_t *p = calloc(1, sizeof *p);
    pw_buf_t b;
    enum MHD_Result ok;
    pw_buf_init(&b, CO_HTTP_BODY_MAX);
    if (s && p) {
        co_stats_read(h->stats, s);
        for (int i = 0; i < CO_PROM_STATUS_MAX; i++)
            p->requests[i] = atomic_load(&h->requests[i]);
        p->connections = atomic_load(&h->connections);
        p->open = atomic_load(&h->open);
    }
    if (!s || !p || co_prom_render(&b, s, p, h->version) != PW_BUF_OK)
        ok = s_error(con, rq, 500, "internal", "out of memory writing "
                     "/metrics", NULL);
    else
        ok = s_send(con, rq, 200, CO_PROM_CONTENT_TYPE, pw_buf_data(&b),
                    b.len, NULL);
    pw_buf_free(&b);
    free(s);
    free(p);
    return ok;
}

/* call's answer as sent: the query's body, paged or cut to its part,
 * and a newline; 200 and *text (malloc'd, *len bytes), or the error's
 * status, code and msg. */
static int
s_api_text(co_http_t *h, const co_api_call_t *call, const char *who,
           char **text, size_t *len, const char **code, char *msg,
           size_t msglen)
{
    int status = s_query(h, call->command, call->args, who, text, code, msg,
                         msglen);
    if (status == 200 && !(*text = s_shape(call, *text))) {
        *code = "internal";
        snprintf(msg, msglen, "out of memory writing the answer");
        return 500;
    }
    if (status != 200)
        return status;
    *len = strlen(*text);
    char *line = realloc(*text, *len + 2);
    if (line) {
        line[(*len)++] = '\n';
        *text = line;
    }
    return 200;
}

/* /api/v1/...: route, authorise, run. */
static enum MHD_Result
s_api(co_http_t *h, struct MHD_Connection *con, s_req_t *rq,
      const char *method, const char *path, co_role_t role,
      const co_api_param_t *params, size_t n)
{
    co_api_call_t call;
    char msg[600];
    const char *code = NULL;
    enum MHD_Result ok;
    const char *m = strcmp(method, "HEAD") == 0 ? "GET" : method;
    if (co_api_route(m, path, params, n, pw_buf_data(&rq->body),
                     rq->body.len, &call) != 0) {
        const char *allow[] = { MHD_HTTP_HEADER_ALLOW, call.allow, NULL };
        ok = s_error(con, rq, call.status, call.code, call.message,
                     call.allow ? allow : NULL);
        co_api_call_clear(&call);
        return ok;
    }
    if (role < call.role) {
        snprintf(msg, sizeof msg, "the token of %s has the role %s; %s "
                 "/api/v1/%.200s needs %s", rq->who, co_role_name(role), m,
                 path + strlen(CO_API_PREFIX), co_role_name(call.role));
        co_api_call_clear(&call);
        return s_error(con, rq, 403, "forbidden", msg, NULL);
    }
    char *text = NULL, *key = NULL;
    size_t len;
    const char *type;
    bool get = strcmp(m, "GET") == 0;
    char *atext = get ? pw_json_dumps(call.args) : NULL;
    if (atext && asprintf(&key, "api\x1f%s\x1f%s\x1f%zu %zu %s %s",
                          call.command, atext, call.offset, call.limit,
                          call.list ? call.list : "-",
                          call.part ? call.part : "-") < 0)
        key = NULL;
    free(atext);
    if (key && co_hcache_get(h->cache, key, pw_clock_mono_ms(), &text, &len,
                             &type)) {
        co_api_call_clear(&call);
        free(key);
        ok = s_ok(con, rq, type, text, len);
        free(text);
        return ok;
    }
    int status = s_api_text(h, &call, rq->who, &text, &len, &code, msg,
                            sizeof msg);
    co_api_call_clear(&call);
    if (status != 200) {
        free(text);
        free(key);
        const char *retry[] = { MHD_HTTP_HEADER_RETRY_AFTER, "1", NULL };
        return s_error(con, rq, status, code, msg, status == 503 ? retry
                                                                 : NULL);
    }
    if (key)
        co_hcache_put(h->cache, key, text, len, S_JSON, pw_clock_mono_ms());
    else if (!get)          /* an ack or unack changed what GETs answer */
        co_hcache_clear(h->cache);
    free(key);
    ok = s_ok(con, rq, S_JSON, text, len);
    free(text);
    return ok;
}

/* ---- the dashboard ------------------------------------------------------ */

typedef struct {
    co_http_t *h;
    const char *who;
} s_ask_ctx_t;

/* co_dash's queries: s_query, the answer read as JSON. */
static int
s_ask(void *ctx, const char *command, const json_t *args, json_t **body,
      char *msg, size_t msglen)
{
    s_ask_ctx_t *a = ctx;
    char *text = NULL;
    const char *code;
    int status = s_query(a->h, command, args, a->who, &text, &code, msg,
                         msglen);
    *body = NULL;
    if (status == 200) {
        json_error_t je;
        *body = json_loads(text, 0, &je);
        if (!*body) {
            status = 500;
            snprintf(msg, msglen, "out of memory reading the answer");
        }
    }
    free(text);
    return status;
}

static enum MHD_Result
s_send_page(struct MHD_Connection *con, s_req_t *rq, co_dash_page_t *pg,
            const char *const *headers)
{
    enum MHD_Result ok;
    if (!pg->body)
        ok = s_send(con, rq, 500, "text/plain", "out of memory\n", 14, NULL);
    else if (pg->status == 200)
        ok = s_ok(con, rq, pg->type, pg->body, pg->len);
    else
        ok = s_send(con, rq, pg->status, pg->type, pg->body, pg->len,
                    headers);
    free(pg->body);
    return ok;
}

static enum MHD_Result
s_html_error(struct MHD_Connection *con, s_req_t *rq, int status,
             const char *message, const char *const *headers)
{
    co_dash_page_t pg;
    co_dash_error(status, message, &pg);
    return s_send_page(con, rq, &pg, headers);
}

/* GET /login?token=T[&next=/PATH]: a session for the token, in a
 * cookie, and on to next (a path of this server) or the overview. The
 * query string is never logged (it holds the token). */
static enum MHD_Result
s_login(co_http_t *h, struct MHD_Connection *con, s_req_t *rq,
        const co_api_param_t *p, size_t n)
{
    const char *token = NULL, *next = "/";
    for (size_t i = 0; i < n; i++) {
        if (strcmp(p[i].key, "token") == 0)
            token = p[i].value;
        /* Only a path here: never "//host" or a scheme (an open
         * redirect). */
        if (strcmp(p[i].key, "next") == 0 && p[i].value[0] == '/' &&
            p[i].value[1] != '/' && !strchr(p[i].value, '\\') &&
            strlen(p[i].value) < 1024)
            next = p[i].value;
    }
    const char *home[] = { MHD_HTTP_HEADER_LOCATION, next, NULL };
    if (!h->tokens)         /* nothing to sign in to: everyone reads */
        return s_send(con, rq, 303, NULL, "", 0, home);
    char reload[600];
    co_role_t role = token ? co_tokens_check(h->tokens, token, strlen(token),
                                             pw_clock_mono_ms(), rq->who,
                                             reload, sizeof reload)
                           : CO_ROLE_NONE;
    if (role == CO_ROLE_NONE)
        return s_html_error(con, rq, 401, token ? "the token is not in the "
                            "collector's tokens file" : "the login link "
                            "needs its token: /login?token=TOKEN", NULL);
    co_session_t se;
    char cookie[200];
    co_sessions_open(h->sessions, rq->who, role, pw_clock_mono_ms(), &se);
    snprintf(cookie, sizeof cookie, "%s=%s; HttpOnly; SameSite=Strict; "
             "Path=/; Max-Age=%d", CO_SESSION_COOKIE, se.id,
             CO_SESSION_TTL_S);
    const char *hd[] = { MHD_HTTP_HEADER_LOCATION, next,
                         MHD_HTTP_HEADER_SET_COOKIE, cookie, NULL };
    return s_send(con, rq, 303, NULL, "", 0, hd);
}

/* POST /regressions/ID/ack or unack from a page's form: the session's
 * CSRF token, the triage role, then the query; back to the
 * regressions page at the event. */
static enum MHD_Result
s_form(co_http_t *h, struct MHD_Connection *con, s_req_t *rq,
       const char *path, co_role_t role)
{
    co_api_param_t p[CO_API_MAX_PARAMS];
    char store[CO_API_MAX_BODY + 2 * CO_API_MAX_PARAMS];
    const char *why = NULL, *csrf = NULL, *note = NULL, *code;
    long long id = 0;
    char verb[8] = "", msg[600], where[96];
    if (sscanf(path, "/regressions/%lld/%7[a-z]", &id, verb) != 2 || id < 1
        || (strcmp(verb, "ack") && strcmp(verb, "unack")))
        return s_html_error(con, rq, 404, "no such page", NULL);
    int n = s_params(pw_buf_data(&rq->body), p, store, sizeof store, &why);
    for (int i = 0; i < n; i++) {
        if (strcmp(p[i].key, "csrf") == 0)
            csrf = p[i].value;
        else if (strcmp(p[i].key, "note") == 0)
            note = p[i].value;
    }
    if (!rq->csrf[0] || !csrf || strlen(csrf) != CO_SESSION_ID_HEX ||
        sodium_memcmp(csrf, rq->csrf, CO_SESSION_ID_HEX) != 0)
        return s_html_error(con, rq, 403, "the form's CSRF token is not "
                            "this session's: reload the page and try again",
                            NULL);
    if (role < CO_ROLE_TRIAGE) {
        snprintf(msg, sizeof msg, "the token of %s has the role %s; "
                 "acknowledging needs triage", rq->who, co_role_name(role));
        return s_html_error(con, rq, 403, msg, NULL);
    }
    json_t *args = json_pack("{s:I}", "id", (json_int_t)id);
    if (args && note && !strcmp(verb, "ack"))
        json_object_set_new(args, "note", json_string(note));
    char *text = NULL;
    int status = args ? s_query(h, verb, args, rq->who, &text, &code, msg,
                                sizeof msg) : 500;
    json_decref(args);
    free(text);
    if (status != 200)
        return s_html_error(con, rq, status, msg, NULL);
    co_hcache_clear(h->cache);
    snprintf(where, sizeof where, "/regressions#event-%lld", id);
    const char *hd[] = { MHD_HTTP_HEADER_LOCATION, where, NULL };
    return s_send(con, rq, 303, NULL, "", 0, hd);
}

/* GET of a dashboard page. */
static enum MHD_Result
s_page(co_http_t *h, struct MHD_Connection *con, s_req_t *rq,
       const char *path, co_role_t role, const co_api_param_t *p, size_t n)
{
    s_ask_ctx_t a = { h, rq->who };
    co_dash_page_t pg;
    const char *csrf = role >= CO_ROLE_TRIAGE && rq->csrf[0] ? rq->csrf
                                                             : NULL;
    char *key = NULL;
    if (asprintf(&key, "page\x1f%s\x1f%s", rq->target ? rq->target : path,
                 csrf ? csrf : "") < 0)
        key = NULL;
    if (key && co_hcache_get(h->cache, key, pw_clock_mono_ms(), &pg.body,
                             &pg.len, &pg.type)) {
        free(key);
        pg.status = 200;
        return s_send_page(con, rq, &pg, NULL);
    }
    co_dash_render(path, p, n, csrf, s_ask, &a, CO_HTTP_BODY_MAX, &pg);
    if (key && pg.status == 200 && pg.body)
        co_hcache_put(h->cache, key, pg.body, pg.len, pg.type,
                      pw_clock_mono_ms());
    free(key);
    const char *retry[] = { MHD_HTTP_HEADER_RETRY_AFTER, "1", NULL };
    return s_send_page(con, rq, &pg, pg.status == 503 ? retry : NULL);
}

/* Sign-in, authorisation and the rate, then the page, /metrics or the
 * API. */
static enum MHD_Result
s_route(co_http_t *h, struct MHD_Connection *con, s_req_t *rq,
        const char *method, const char *path, const co_api_param_t *params,
        size_t n)
{
    const char *why = NULL;
    bool api = strncmp(path, CO_API_PREFIX, strlen(CO_API_PREFIX)) == 0 ||
               strcmp(path, "/metrics") == 0;
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (strcmp(path, "/login") == 0 && get)
        return s_login(h, con, rq, params, n);
    co_role_t role = s_auth(h, con, rq, &why);
    if (role == CO_ROLE_NONE) {
        const char *hd[] = { MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                             "Bearer realm=\"parity\"", NULL };
        if (!api) {
            char msg[400];
            snprintf(msg, sizeof msg, "%s; or open the login link "
                     "/login?token=TOKEN that the collector's operator "
                     "gave you", why);
            return s_html_error(con, rq, 401, msg, hd);
        }
        return s_error(con, rq, 401, "unauthorized", why, hd);
    }
    if (!s_rate_ok(h, h->tokens ? rq->who : "-")) {
        char msg[160];
        const char *hd[] = { MHD_HTTP_HEADER_RETRY_AFTER, "1", NULL };
        snprintf(msg, sizeof msg, "more than %d requests a second from %s; "
                 "try again", h->rate, h->tokens ? rq->who : "this client");
        return s_error(con, rq, 429, "too_many_requests", msg, hd);
    }
    if (strcmp(path, "/metrics") == 0) {
        if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
            const char *hd[] = { MHD_HTTP_HEADER_ALLOW, "GET, HEAD", NULL };
            return s_error(con, rq, 405, "method_not_allowed", "/metrics "
                           "answers GET and HEAD only", hd);
        }
        if (n > 0)
            return s_error(con, rq, 400, "bad_parameter", "/metrics takes "
                           "no parameters", NULL);
        return s_metrics(h, con, rq);
    }
    if (api)
        return s_api(h, con, rq, method, path, role, params, n);
    if (strcmp(path, "/logout") == 0 && get) {
        const char *cookie = MHD_lookup_connection_value(
            con, MHD_COOKIE_KIND, CO_SESSION_COOKIE);
        if (cookie)
            co_sessions_close(h->sessions, cookie, strlen(cookie));
        const char *hd[] = { MHD_HTTP_HEADER_SET_COOKIE, CO_SESSION_COOKIE
                             "=; HttpOnly; SameSite=Strict; Path=/; "
                             "Max-Age=0", NULL };
        co_dash_page_t pg;
        co_dash_error(200, "signed out", &pg);
        enum MHD_Result r = s_send(con, rq, 200, pg.type, pg.body ? pg.body
                                   : "", pg.body ? pg.len : 0, hd);
        free(pg.body);
        return r;
    }
    if (co_dash_handles(path) && get)
        return s_page(h, con, rq, path, role, params, n);
    if (strncmp(path, "/regressions/", 13) == 0 &&
        strcmp(method, "POST") == 0)
        return s_form(h, con, rq, path, role);
    char msg[300];
    bool page = co_dash_handles(path);
    if (page)
        snprintf(msg, sizeof msg, "%.200s answers GET and HEAD only", path);
    else
        snprintf(msg, sizeof msg, "no such page: %.200s", path);
    const char *hd[] = { MHD_HTTP_HEADER_ALLOW, "GET, HEAD", NULL };
    return s_html_error(con, rq, page ? 405 : 404, msg, page ? hd : NULL);
}

/* The request complete (its body read): answer it. */
static enum MHD_Result
s_dispatch(co_http_t *h, struct MHD_Connection *con, s_req_t *rq,
           const char *method)
{
    const char *why = NULL;
    const char *target = rq->target ? rq->target : "/";
    size_t tlen = strlen(target);
    if (tlen > CO_HTTP_TARGET_MAX) {
        char msg[160];
        snprintf(msg, sizeof msg, "the request target has %zu bytes: at "
                 "most %d", tlen, CO_HTTP_TARGET_MAX);
        return s_error(con, rq, 414, "too_long", msg, NULL);
    }
    const char *qm = strchr(target, '?');
    char path[CO_HTTP_TARGET_MAX + 1], store[CO_HTTP_TARGET_MAX + 2 *
                                             CO_API_MAX_PARAMS];
    co_api_param_t params[CO_API_MAX_PARAMS];
    int n = 0;
    if (s_path(target, qm ? (size_t)(qm - target) : tlen, path, sizeof path,
               &why) != 0
        || (n = s_params(qm ? qm + 1 : NULL, params, store, sizeof store,
                        &why)) < 0)
        return s_error(con, rq, 400, "bad_request", why, NULL);
    snprintf(rq->path, sizeof rq->path, "%.*s", (int)sizeof rq->path - 1,
             path);
    return s_route(h, con, rq, method, path, params, (size_t)n);
}

/* libmicrohttpd's access handler: called with the headers, then with
 * each piece of the body, then once more with none. */
static enum MHD_Result
s_access(void *cls, struct MHD_Connection *con, const char *url,
         const char *method, const char *version, const char *upload,
         size_t *upload_size, void **con_cls)
{
    co_http_t *h = cls;
    s_req_t *rq = *con_cls;
    (void)url;
    (void)version;
    if (!rq)
        return MHD_NO;              /* the URI callback always makes one */
    if (!rq->path[0] && rq->target)      /* for the log, until decoded */
        snprintf(rq->path, sizeof rq->path, "%.*s",
                 (int)strcspn(rq->target, "?"), rq->target);
    bool post = strcmp(method, "POST") == 0;
    if (!post && strcmp(method, "GET") && strcmp(method, "HEAD")) {
        const char *hd[] = { MHD_HTTP_HEADER_ALLOW, "GET, HEAD, POST",
                             NULL };
        char msg[120];
        snprintf(msg, sizeof msg, "%.20s is not a method the collector "
                 "answers (GET, HEAD, POST)", method);
        return s_error(con, rq, 405, "method_not_allowed", msg, hd);
    }
    if (!post)
        return s_dispatch(h, con, rq, method);
    if (rq->start_ms == 0) {
        rq->start_ms = pw_clock_mono_ms() | 1;
        const char *cl = MHD_lookup_connection_value(
            con, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > CO_API_MAX_BODY) {
            char msg[160];
            snprintf(msg, sizeof msg, "the body has %.20s bytes: at most %d",
                     cl, CO_API_MAX_BODY);
            return s_error(con, rq, 413, "too_large", msg, NULL);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (pw_clock_mono_ms() - rq->start_ms > CO_HTTP_REQUEST_MS) {
            *upload_size = 0;
            return s_error(con, rq, 408, "timeout", "the body took longer "
                           "than 10 s to arrive", NULL);
        }
        if (pw_buf_add(&rq->body, upload, *upload_size) != PW_BUF_OK) {
            *upload_size = 0;
            char msg[80];
            snprintf(msg, sizeof msg, "the body has more than %d bytes",
                     CO_API_MAX_BODY);
            return s_error(con, rq, 413, "too_large", msg, NULL);
        }
        *upload_size = 0;
        return MHD_YES;
    }
    return s_dispatch(h, con, rq, method);
}

/* The first thing libmicrohttpd knows of a request: keep its target as
 * sent (the access handler gets it decoded, and cut at a NUL). */
static void *
s_uri(void *cls, const char *uri, struct MHD_Connection *con)
{
    (void)cls;
    (void)con;
    s_req_t *rq = calloc(1, sizeof *rq);
    if (!rq)
        return NULL;
    rq->target = strdup(uri ? uri : "/");
    pw_buf_init(&rq->body, CO_API_MAX_BODY + 1);
    return rq;
}

/* The request is over: log it (never its query string, which for a
 * login holds the token), count it, free it. */
static void
s_completed(void *cls, struct MHD_Connection *con, void **con_cls,
            enum MHD_RequestTerminationCode toe)
{
    co_http_t *h = cls;
    s_req_t *rq = *con_cls;
    (void)con;
    if (!rq)
        return;
    if (rq->status >= 100 && rq->status < CO_PROM_STATUS_MAX)
        atomic_fetch_add(&h->requests[rq->status], 1);
    if (rq->status) {
        char q[300];
        co_log(rq->status >= 500 ? CO_LOG_WARN : CO_LOG_INFO, "http",
               "status=%d path=%s who=%s ended=%s", rq->status,
               co_log_quote(q, sizeof q, rq->path[0] ? rq->path : "-"),
               rq->who[0] ? rq->who : "-",
               toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "ok" : "cut");
    }
    pw_buf_free(&rq->body);
    free(rq->target);
    free(rq);
    *con_cls = NULL;
}

static void
s_connection(void *cls, struct MHD_Connection *con, void **socket_ctx,
             enum MHD_ConnectionNotificationCode toe)
{
    co_http_t *h = cls;
    (void)con;
    (void)socket_ctx;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add(&h->connections, 1);
        atomic_fetch_add(&h->open, 1);
    } else {
        atomic_fetch_sub(&h->open, 1);
    }
}

/* libmicrohttpd's own messages, into the log. */
static void s_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void
s_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[512], q[600];
    (void)cls;
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    co_log(CO_LOG_WARN, "http_server", "why=%s",
           co_log_quote(q, sizeof q, line));
}

/* ---- the refresher ------------------------------------------------------ */

/* A stale answer's key again: "api\x1fCOMMAND\x1fARGS\x1fOFFSET LIMIT
 * LIST PART" (s_api) or "page\x1fTARGET\x1fCSRF" (s_page). */
static void
s_refresh(co_http_t *h, const char *key)
{
    char *cut = strdup(key);        /* cut into its fields; key stays */
    char *f[4] = { NULL }, *p = cut, msg[600];
    for (int i = 0; i < 4 && p; i++) {
        f[i] = p;
        if ((p = strchr(p, '\x1f')))
            *p++ = '\0';
    }
    char *text = NULL;
    size_t len = 0;
    const char *code;
    int status = 0;
    if (f[0] && strcmp(f[0], "api") == 0 && f[3]) {
        co_api_call_t call;
        char list[32], part[32];
        json_error_t je;
        memset(&call, 0, sizeof call);
        call.command = f[1];
        call.args = json_loads(f[2], 0, &je);
        if (call.args && sscanf(f[3], "%zu %zu %31s %31s", &call.offset,
                                &call.limit, list, part) == 4) {
            call.list = strcmp(list, "-") ? list : NULL;
            call.part = strcmp(part, "-") ? part : NULL;
            status = s_api_text(h, &call, "refresh", &text, &len, &code,
                                msg, sizeof msg);
        }
        co_api_call_clear(&call);
        if (status == 200)
            co_hcache_put(h->cache, key, text, len, S_JSON,
                          pw_clock_mono_ms());
    } else if (f[0] && strcmp(f[0], "page") == 0 && f[2]) {
        const char *qm = strchr(f[1], '?'), *why;
        char path[CO_HTTP_TARGET_MAX + 1];
        char store[CO_HTTP_TARGET_MAX + 2 * CO_API_MAX_PARAMS];
        co_api_param_t params[CO_API_MAX_PARAMS];
        int n = -1;
        if (s_path(f[1], qm ? (size_t)(qm - f[1]) : strlen(f[1]), path,
                   sizeof path, &why) == 0)
            n = s_params(qm ? qm + 1 : NULL, params, store, sizeof store,
                         &why);
        s_ask_ctx_t a = { h, "refresh" };
        co_dash_page_t pg = { 0 };
        if (n >= 0)
            co_dash_render(path, params, (size_t)n, f[2][0] ? f[2] : NULL,
                           s_ask, &a, CO_HTTP_BODY_MAX, &pg);
        status = pg.status;
        if (status == 200 && pg.body)
            co_hcache_put(h->cache, key, pg.body, pg.len, pg.type,
                          pw_clock_mono_ms());
        text = pg.body;
    }
    if (status != 200)
        co_hcache_drop(h->cache, key);
    free(text);
    free(cut);
}

static void *
s_refresher(void *arg)
{
    co_http_t *h = arg;
    char *key;
    while (!atomic_load(&h->stopping)) {
        if (!co_hcache_claim(h->cache, 500, &key))
            continue;
        s_refresh(h, key);
        free(key);
    }
    return NULL;
}

/* ---- life cycle --------------------------------------------------------- */

/* bind into a socket address; 0, or -1 with err. */
static int
s_addr(const char *bind, struct sockaddr_storage *ss, bool *v6,
       bool *loopback, char *err, size_t errlen)
{
    char host[64];
    const char *colon = strrchr(bind, ':');
    const char *h0 = bind, *h1 = colon;
    memset(ss, 0, sizeof *ss);
    if (colon && bind[0] == '[') {
        h0 = bind + 1;
        h1 = colon > bind && colon[-1] == ']' ? colon - 1 : NULL;
    }
    char *end;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || !h1 || h1 <= h0 || (size_t)(h1 - h0) >= sizeof host
        || !colon[1] || *end || port < 0 || port > 65535) {
        pw_err(err, errlen, "--http %.100s: want ADDR:PORT, such as "
               "127.0.0.1:8080 or [::1]:8080", bind);
        return -1;
    }
    memcpy(host, h0, (size_t)(h1 - h0));
    host[h1 - h0] = '\0';
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (bind[0] != '[' && inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *v6 = false;
        *loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
        return 0;
    }
    if (bind[0] == '[' && inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *v6 = true;
        *loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
        return 0;
    }
    pw_err(err, errlen, "--http %.100s: \"%s\" is not a numeric IPv4 "
           "address or a bracketed IPv6 one", bind, host);
    return -1;
}

int
co_http_check_bind(const char *bind, bool *loopback, char *err,
                   size_t errlen)
{
    struct sockaddr_storage ss;
    bool v6;
    return s_addr(bind, &ss, &v6, loopback, err, errlen);
}

static struct MHD_Daemon *
s_start(co_http_t *h, const char *bind, char *url, size_t urllen, char *err,
        size_t errlen)
{
    struct sockaddr_storage ss;
    bool v6, loopback;
    if (s_addr(bind, &ss, &v6, &loopback, err, errlen) != 0)
        return NULL;
    if (!loopback && !h->tokens) {
        pw_err(err, errlen, "--http %.100s: an address other than loopback "
               "needs --http-tokens FILE (anyone who reaches it could read "
               "the fleet's history)", bind);
        return NULL;
    }
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG
                   | (v6 ? MHD_USE_IPv6 : 0);
    struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL,
        s_access, h,
        /* First, or libmicrohttpd's messages before it go to stderr. */
        MHD_OPTION_EXTERNAL_LOGGER, s_mhd_log, h,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)CO_HTTP_THREADS,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)CO_HTTP_MAX_CONNECTIONS,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CO_HTTP_MEMORY,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CO_HTTP_IDLE_S,
        MHD_OPTION_URI_LOG_CALLBACK, s_uri, h,
        MHD_OPTION_NOTIFY_COMPLETED, s_completed, h,
        MHD_OPTION_NOTIFY_CONNECTION, s_connection, h,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u,
        /* Refuse what a careful client never sends (bare LF, spaces
         * around header names) rather than guess at it. */
        MHD_OPTION_STRICT_FOR_CLIENT, (int)1,
        MHD_OPTION_END);
    if (!d) {
        pw_err(err, errlen, "--http %.100s: cannot listen there (%s)", bind,
               strerror(errno ? errno : EADDRINUSE));
        return NULL;
    }
    const union MHD_DaemonInfo *di =
        MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char host[64];
    if (v6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host,
                  sizeof host);
    else
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host,
                  sizeof host);
    snprintf(url, urllen, v6 ? "http://[%s]:%u" : "http://%s:%u", host,
             di ? (unsigned)di->port : 0u);
    return d;
}

/* One database side per thread of every daemon. */
static int
s_ctx_new(co_http_t *h, const co_config_t *cfg, size_t n, char *err,
          size_t errlen)
{
    co_conn_opts_t co = { .conninfo = cfg->conninfo,
                          .settings = "SET max_parallel_workers_per_gather "
                                      "= 0",
                          .statement_timeout_ms = cfg->query_timeout_ms };
    if (!(h->ctx = calloc(n, sizeof *h->ctx)))
        goto oom;
    h->nctx = n;
    for (size_t i = 0; i < n; i++) {
        s_ctx_t *c = &h->ctx[i];
        if (!(c->conn = co_conn_new(&co)))
            goto oom;
        co_jobs_opts_t o = { .conn = c->conn };
        if (!(c->jobs = co_jobs_new(&o))
            || !(c->query = co_query_new(c->jobs, cfg->floor_window, NULL)))
            goto oom;
        co_query_set_parity(c->query, cfg->parity);
        if (cfg->query_conninfo) {
            co_conn_opts_t ro = co;
            ro.conninfo = cfg->query_conninfo;
            if (!(c->read = co_conn_new(&ro)))
                goto oom;
            co_query_set_reader(c->query, c->read);
        }
    }
    return 0;
oom:
    pw_err(err, errlen, "co_http: out of memory");
    return -1;
}

co_http_t *
co_http_new(const co_http_opts_t *o, char *err, size_t errlen)
{
    co_http_t *h = calloc(1, sizeof *h);
    if (!h || pthread_mutex_init(&h->lock, NULL) != 0) {
        free(h);
        pw_err(err, errlen, "co_http: out of memory");
        return NULL;
    }
    h->stats = o->stats;
    h->rate = o->rate;
    h->renice = o->cfg->private_db;
    snprintf(h->version, sizeof h->version, "%s", o->version);
    if (o->nbinds == 0 || o->nbinds > CO_HTTP_BINDS_MAX) {
        pw_err(err, errlen, "--http: give 1 to %d addresses",
               CO_HTTP_BINDS_MAX);
        goto fail;
    }
    if (o->tokens_path
        && !(h->tokens = co_tokens_new(o->tokens_path, err, errlen)))
        goto fail;
    if (!(h->sessions = co_sessions_new()) || !(h->cache = co_hcache_new())) {
        pw_err(err, errlen, "co_http: out of memory");
        goto fail;
    }
    /* A connection per thread, and one for the refresher. */
    if (s_ctx_new(h, o->cfg, o->nbinds * CO_HTTP_THREADS + 1, err,
                  errlen) != 0)
        goto fail;
    if (pthread_create(&h->refresher, NULL, s_refresher, h) != 0) {
        pw_err(err, errlen, "pthread_create(http refresher): %s",
               strerror(errno));
        goto fail;
    }
    h->refreshing = true;
    for (; h->n < o->nbinds; h->n++)
        if (!(h->d[h->n] = s_start(h, o->binds[h->n], h->url[h->n],
                                   sizeof h->url[h->n], err, errlen)))
            goto fail;
    return h;
fail:
    co_http_destroy(&h);
    return NULL;
}

const char *
co_http_url(const co_http_t *h, size_t i)
{
    return i < h->n ? h->url[i] : "";
}

void
co_http_destroy(co_http_t **hp)
{
    if (!hp || !*hp)
        return;
    co_http_t *h = *hp;
    for (size_t i = 0; i < CO_HTTP_BINDS_MAX; i++)
        if (h->d[i])
            MHD_stop_daemon(h->d[i]);
    if (h->refreshing) {
        atomic_store(&h->stopping, 1);
        co_hcache_close(h->cache);
        pthread_join(h->refresher, NULL);
    }
    for (size_t i = 0; h->ctx && i < h->nctx; i++) {
        co_query_destroy(&h->ctx[i].query);
        co_jobs_destroy(&h->ctx[i].jobs);
        co_conn_destroy(&h->ctx[i].read);
        co_conn_destroy(&h->ctx[i].conn);
    }
    free(h->ctx);
    co_tokens_destroy(&h->tokens);
    co_sessions_destroy(&h->sessions);
    co_hcache_destroy(&h->cache);
    pthread_mutex_destroy(&h->lock);
    free(h);
    *hp = NULL;
}
