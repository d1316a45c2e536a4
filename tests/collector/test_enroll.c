/* test_enroll.c -- enrollment in the real collector, with raw
 * CURVE peers, the admin's Requests and its private PostgreSQL:
 *
 *   - the key service answers "key" with the public key, nothing else;
 *   - an unknown key's Hello: Error 20 naming its fingerprint, a pending
 *     row (name, fingerprint, address), no host; its data: Error 20 with
 *     the seq, nothing stored;
 *   - only --admin keys may list, approve, reject or revoke;
 *   - approval mid-connection: the same connection's next data message
 *     is stored (its kept Hello first: Ack{0}, then the Ack);
 *   - revoke: Error 21 on the live connection, the next handshake
 *     refused, also for a key in --allow (until approved again);
 *   - reject, and every refusal of the commands (wrong state, a name two
 *     keys claim, bad arguments, unknown keys and names);
 *   - CO_ENROLL_MAX_PENDING: a Hello beyond it is not recorded (Error 20
 *     says so), and the handshake of a new key is refused;
 *   - --enroll off: an unknown key fails the handshake, a key approved
 *     in the database does not; key files whose arrival the directory's
 *     time hides (written after a read saw them empty, or added within
 *     the clock tick of a read) still let their keys in.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <jansson.h>

#include "co_client.h"
#include "pw_key.h"
#include "tap.h"
#include "co_sql.h"

static PGconn *s_pg;

static long
s_sql_long(const char *sql)
{
    return cc_sql_long(s_pg, sql);
}
static uint64_t s_req_id = 1000;

/* One text value of key's host_keys row ("" when none). */
static const char *
s_key_col(const char *key, const char *col)
{
    static char out[256];
    char sql[256];
    const char *p[] = { key };
    snprintf(sql, sizeof sql, "SELECT %s FROM host_keys WHERE public_key = "
             "$1", col);
    PGresult *r = PQexecParams(s_pg, sql, 1, NULL, p, NULL, NULL, 0);
    snprintf(out, sizeof out, "%s", PQresultStatus(r) == PGRES_TUPLES_OK
             && PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return out;
}

static long
s_hosts_with(const char *key)
{
    const char *p[] = { key };
    PGresult *r = PQexecParams(s_pg, "SELECT count(*) FROM hosts WHERE "
                               "public_key = $1", 1, NULL, p, NULL, NULL, 0);
    long n = PQresultStatus(r) == PGRES_TUPLES_OK
             ? strtol(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    PQclear(r);
    return n;
}

/* The admin's Request: *status and the body (caller frees; NULL when
 * status is not 0, err then holds the error line). */
static json_t *
s_ask(void *admin, const char *cmd, const char *args, int *status,
      char *err, size_t errlen)
{
    Parity__Envelope *e = cc_request_args(admin, ++s_req_id, cmd, args,
                                          10000);
    json_t *body = NULL;
    *status = -1;
    err[0] = '\0';
    if (e) {
        *status = (int)e->reply->status;
        snprintf(err, errlen, "%s", e->reply->error ? e->reply->error : "");
        if (*status == 0)
            body = json_loads(e->reply->body_json, 0, NULL);
    }
    pw_wire_free(&e);
    return body;
}

/* The next Error within ms (other messages skipped); NULL when none. */
static Parity__Envelope *
s_error(void *s, int ms)
{
    int64_t until = cc_now_ms() + ms;
    for (int64_t left; (left = until - cc_now_ms()) > 0;) {
        Parity__Envelope *e = cc_recv(s, (int)left);
        if (!e || e->body_case == PARITY__ENVELOPE__BODY_ERROR)
            return e;
        pw_wire_free(&e);
    }
    return NULL;
}

static int
s_send_run_start(void *s, uint64_t seq, const char *run_id)
{
    Parity__Envelope env;
    Parity__RunStart rs = PARITY__RUN_START__INIT;
    Parity__Arm a = PARITY__ARM__INIT, b = PARITY__ARM__INIT;
    Parity__Arm *arms[] = { &a, &b };
    char *argv[] = { "/bin/true" };
    rs.run_id = (char *)run_id;
    rs.suite = "s";
    rs.benchmark = "b";
    a.name = "x";
    a.subject = true;
    a.argv = argv;
    a.n_argv = 1;
    b.name = "y";
    b.argv = argv;
    b.n_argv = 1;
    rs.arms = arms;
    rs.n_arms = 2;
    rs.runs = 5;
    rs.started_at_us = cc_unix_us();
    pw_wire_init(&env, seq);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_RUN_START, &rs);
    return cc_send(s, &env);
}

/* An answer's error line holds want (TAP line names both). */
static void
s_refused(void *admin, const char *cmd, const char *args, int want_status,
          const char *want)
{
    int st;
    char err[600];
    json_t *b = s_ask(admin, cmd, args, &st, err, sizeof err);
    ok(st == want_status && strstr(err, want), "%s %s: status %d \"%s\" "
       "(got %d \"%s\")", cmd, args, want_status, want, st, err);
    json_decref(b);
}

/* A new CURVE peer's Hello: nothing back within ms (a refused handshake). */
static bool
s_refused_at_handshake(void *ctx, const cc_collector_t *col, zcert_t *c,
                       int ms)
{
    void *s = cc_dealer(ctx, col->endpoint, c, col->public_key);
    cc_hello(s, "again");
    Parity__Envelope *e = cc_recv(s, ms);
    bool refused = e == NULL;
    pw_wire_free(&e);
    zmq_close(s);
    return refused;
}

/* True when c's Hello is acked within ms: its handshake was let in. */
static bool
s_greeted(void *ctx, const cc_collector_t *col, zcert_t *c, const char *name,
          int ms)
{
    void *s = cc_dealer(ctx, col->endpoint, c, col->public_key);
    cc_hello(s, name);
    bool acked = cc_wait_ack(s, 0, ms);
    zmq_close(s);
    return acked;
}

/* The key service: "key" gets the public key, anything else nothing. */
static void
s_key_service(void *ctx, const cc_collector_t *col, const char *endpoint)
{
    char buf[64] = "";
    void *r = zmq_socket(ctx, ZMQ_REQ);
    int linger = 0, timeo = 3000;
    zmq_setsockopt(r, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(r, ZMQ_RCVTIMEO, &timeo, sizeof timeo);
    zmq_connect(r, endpoint);
    zmq_send(r, "key", 3, 0);
    int n = zmq_recv(r, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    ok(n == 40 && strcmp(buf, col->public_key) == 0,
       "the key service answers \"key\" with the public key (%d bytes)", n);
    zmq_close(r);
    r = zmq_socket(ctx, ZMQ_REQ);
    timeo = 700;
    zmq_setsockopt(r, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(r, ZMQ_RCVTIMEO, &timeo, sizeof timeo);
    zmq_connect(r, endpoint);
    zmq_send(r, "secret", 6, 0);
    ok(zmq_recv(r, buf, sizeof buf, 0) < 0, "anything else is not answered");
    zmq_close(r);
}

/* A port P of 127.0.0.1 with P + 1 free too, for a collector whose key
 * service takes --bind's port + 1: with port 0 the kernel's pick may
 * have its neighbour taken (by another test), and the key service is
 * then off. 0 when none is found. */
static int
s_two_free_ports(void)
{
    for (int tries = 0; tries < 50; tries++) {
        int a = socket(AF_INET, SOCK_STREAM, 0);
        int b = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = { .sin_family = AF_INET,
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof sa;
        int port = 0;
        if (a >= 0 && b >= 0 && bind(a, (struct sockaddr *)&sa, sizeof sa)
            == 0 && getsockname(a, (struct sockaddr *)&sa, &len) == 0 &&
            ntohs(sa.sin_port) < 65535) {
            sa.sin_port = htons((uint16_t)(ntohs(sa.sin_port) + 1));
            if (bind(b, (struct sockaddr *)&sa, sizeof sa) == 0)
                port = ntohs(sa.sin_port) - 1;
        }
        if (a >= 0)
            close(a);
        if (b >= 0)
            close(b);
        if (port)
            return port;
    }
    return 0;
}

/* The value after needle on the log line holding both needle and has. */
static void
s_log_value(const char *logp, const char *has, const char *needle, char *out,
            size_t outlen)
{
    char line[8192];
    FILE *f = fopen(logp, "r");
    out[0] = '\0';
    while (f && fgets(line, sizeof line, f)) {
        char *p = strstr(line, needle);
        if (p && strstr(line, has))
            sscanf(p + strlen(needle), "%255s", out);
    }
    if (f)
        fclose(f);
    (void)outlen;
}

typedef struct {
    void *ctx;
    cc_collector_t *col;
    void *admin;
    const char *logp;
} s_world_t;

/* Pending, refused data, approval mid-connection. */
static void
s_pending_then_approved(s_world_t *w, zcert_t *p, zcert_t *filed)
{
    char fp[PW_KEY_FP_SIZE], args[200], err[600], want[300];
    const char *key = zcert_public_txt(p);
    int st;
    pw_key_fingerprint(key, fp);
    void *s = cc_dealer(w->ctx, w->col->endpoint, p, w->col->public_key);
    cc_hello(s, "pend");
    Parity__Envelope *e = s_error(s, 5000);
    snprintf(want, sizeof want, "pending: this key (%s) waits for an "
             "operator's approval (parity hosts approve %s); nothing is "
             "stored until then", fp, fp);
    ok(e && e->error->code == 20 && e->error->seq == 0
       && strstr(e->error->message, want),
       "an unknown key's Hello: Error 20, seq 0, naming its fingerprint "
       "(%s)", e ? e->error->message : "no Error");
    pw_wire_free(&e);
    ok(strcmp(s_key_col(key, "state"), "pending") == 0
       && strcmp(s_key_col(key, "name"), "pend") == 0
       && strcmp(s_key_col(key, "fingerprint"), fp) == 0
       && strcmp(s_key_col(key, "address"), "127.0.0.1") == 0,
       "the database holds it pending, with its name, fingerprint and "
       "address");
    ok(s_hosts_with(key) == 0, "and no host for it");
    ok(cc_log_has(w->logp, "event=key_pending", fp), "the collector logs "
       "event=key_pending with the fingerprint");

    s_send_run_start(s, 7, "run-pending-1");
    e = s_error(s, 5000);
    ok(e && e->error->code == 20 && e->error->seq == 7
       && strstr(e->error->message, "nothing was stored: keep the message, "
                 "and send Hello again"),
       "its data message: Error 20 with seq 7 (%s)",
       e ? e->error->message : "no Error");
    pw_wire_free(&e);
    ok(s_sql_long("SELECT count(*) FROM runs") == 0, "nothing stored");
    ok(cc_stat(w->admin, "key_pending") >= 1, "stats counts key_pending");

    /* Only admins decide. */
    snprintf(args, sizeof args, "{\"fingerprint\": \"%s\"}", fp);
    s_refused(s, "approve", args, 3, "forbidden: this client's key is not "
              "in the collector's --admin directory");
    void *f = cc_dealer(w->ctx, w->col->endpoint, filed, w->col->public_key);
    cc_hello(f, "filed");
    ok(cc_wait_ack(f, 0, 5000), "a key of --allow is greeted as before");
    s_refused(f, "approve", args, 3, "forbidden");
    s_refused(f, "pending", NULL, 3, "forbidden");
    zmq_close(f);

    json_t *b = s_ask(w->admin, "pending", NULL, &st, err, sizeof err);
    json_t *k = json_array_get(json_object_get(b, "pending"), 0);
    ok(st == 0 && json_array_size(json_object_get(b, "pending")) == 1
       && strcmp(json_string_value(json_object_get(k, "fingerprint")), fp)
          == 0
       && strcmp(json_string_value(json_object_get(k, "name")), "pend") == 0
       && strcmp(json_string_value(json_object_get(k, "address")),
                 "127.0.0.1") == 0,
       "pending lists it: fingerprint, name, address (%d %s)", st, err);
    json_decref(b);

    b = s_ask(w->admin, "approve", args, &st, err, sizeof err);
    ok(st == 0 && strcmp(json_string_value(json_object_get(b, "state")),
                         "approved") == 0
       && strcmp(json_string_value(json_object_get(b, "was")), "pending")
          == 0
       && strcmp(json_string_value(json_object_get(b, "name")), "pend") == 0,
       "approve by fingerprint: approved, was pending (%d %s)", st, err);
    json_decref(b);
    /* The same connection, no new Hello: its kept Hello is stored first. */
    s_send_run_start(s, 7, "run-pending-1");
    ok(cc_wait_ack(s, 0, 5000), "mid-connection: the kept Hello is acked");
    ok(cc_wait_ack(s, 7, 5000), "and the data message refused before is "
       "stored now (Ack 7)");
    ok(s_hosts_with(key) == 1 && s_sql_long("SELECT count(*) FROM runs") == 1,
       "one host, one run");
    b = s_ask(w->admin, "approve", args, &st, err, sizeof err);
    ok(st == 0 && strcmp(json_string_value(json_object_get(b, "was")),
                         "approved") == 0,
       "approve again: nothing changes (was approved)");
    json_decref(b);
    b = s_ask(w->admin, "pending", NULL, &st, err, sizeof err);
    ok(st == 0 && json_array_size(json_object_get(b, "pending")) == 0,
       "and it is no longer pending");
    json_decref(b);
    zmq_close(s);
}

/* Revoke: the live connection gets Error 21, the next is refused; a key
 * of --allow too, until approved again. */
static void
s_revoke(s_world_t *w, zcert_t *p, zcert_t *filed)
{
    char fp[PW_KEY_FP_SIZE], ffp[PW_KEY_FP_SIZE], err[600], want[300];
    int st;
    pw_key_fingerprint(zcert_public_txt(p), fp);
    pw_key_fingerprint(zcert_public_txt(filed), ffp);
    void *s = cc_dealer(w->ctx, w->col->endpoint, p, w->col->public_key);
    cc_hello(s, "pend");
    ok(cc_wait_ack(s, 0, 5000), "the approved key's new connection is "
       "greeted");
    snprintf(want, sizeof want, "key %s (pend) is approved: revoke it "
             "instead (parity hosts revoke)", fp);
    s_refused(w->admin, "reject", "{\"name\": \"pend\"}", 1, want);
    json_t *b = s_ask(w->admin, "revoke", "{\"name\": \"pend\"}", &st, err,
                      sizeof err);
    ok(st == 0 && strcmp(json_string_value(json_object_get(b, "state")),
                         "revoked") == 0
       && json_integer_value(json_object_get(b, "jobs_failed")) == 0,
       "revoke by name: revoked (%d %s)", st, err);
    json_decref(b);
    s_send_run_start(s, 8, "run-pending-2");
    Parity__Envelope *e = s_error(s, 5000);
    snprintf(want, sizeof want, "denied: this key (%s) was rejected or "
             "revoked by an operator of the collector; nothing is stored, "
             "and the next connection is refused", fp);
    ok(e && e->error->code == 21 && e->error->seq == 8
       && strcmp(e->error->message, want) == 0,
       "the live connection's next message: Error 21 (%s)",
       e ? e->error->message : "no Error");
    pw_wire_free(&e);
    ok(s_sql_long("SELECT count(*) FROM runs") == 1, "nothing stored");
    zmq_close(s);
    ok(s_refused_at_handshake(w->ctx, w->col, p, 1500),
       "its next connection is refused at the handshake");
    snprintf(want, sizeof want, "client key %s was revoked (parity hosts)",
             zcert_public_txt(p));
    ok(cc_log_has(w->logp, "event=auth_denied", want), "logged: %s", want);
    b = s_ask(w->admin, "revoke", "{\"name\": \"pend\"}", &st, err,
              sizeof err);
    ok(st == 0 && strcmp(json_string_value(json_object_get(b, "was")),
                         "revoked") == 0, "revoke again: was revoked");
    json_decref(b);

    /* A key of --allow: revoked wins over its file. */
    b = s_ask(w->admin, "revoke", "{\"name\": \"filed\"}", &st, err,
              sizeof err);
    ok(st == 0 && strcmp(json_string_value(json_object_get(b, "fingerprint")),
                         ffp) == 0
       && strcmp(json_string_value(json_object_get(b, "was")), "approved")
          == 0, "revoke a host of --allow: its fingerprint, was approved "
       "(%d %s)", st, err);
    json_decref(b);
    ok(s_refused_at_handshake(w->ctx, w->col, filed, 1500),
       "its file in --allow no longer admits it");
    b = s_ask(w->admin, "approve", "{\"name\": \"filed\"}", &st, err,
              sizeof err);
    ok(st == 0, "approve it again (%d %s)", st, err);
    json_decref(b);
    ok(s_greeted(w->ctx, w->col, filed, "filed", 5000),
       "and it is greeted again");
}

/* Reject, and the refusals of the commands. */
static void
s_reject_and_refusals(s_world_t *w, zcert_t *q, zcert_t *r, zcert_t *t1,
                      zcert_t *t2)
{
    char fp[PW_KEY_FP_SIZE], fp1[PW_KEY_FP_SIZE], fp2[PW_KEY_FP_SIZE],
         err[600], want[300];
    int st;
    void *sq = cc_dealer(w->ctx, w->col->endpoint, q, w->col->public_key);
    void *sr = cc_dealer(w->ctx, w->col->endpoint, r, w->col->public_key);
    void *s1 = cc_dealer(w->ctx, w->col->endpoint, t1, w->col->public_key);
    void *s2 = cc_dealer(w->ctx, w->col->endpoint, t2, w->col->public_key);
    cc_hello(sq, "queue");
    cc_hello(sr, "rpend");
    cc_hello(s1, "twin");
    cc_hello(s2, "twin");
    Parity__Envelope *e[4] = { s_error(sq, 5000), s_error(sr, 5000),
                               s_error(s1, 5000), s_error(s2, 5000) };
    ok(e[0] && e[1] && e[2] && e[3] && e[0]->error->code == 20
       && e[1]->error->code == 20 && e[2]->error->code == 20
       && e[3]->error->code == 20, "four more keys are pending");
    for (int i = 0; i < 4; i++)
        pw_wire_free(&e[i]);
    json_t *b = s_ask(w->admin, "reject", "{\"name\": \"queue\"}", &st, err,
                      sizeof err);
    ok(st == 0 && strcmp(json_string_value(json_object_get(b, "state")),
                         "rejected") == 0, "reject by name (%d %s)", st, err);
    json_decref(b);
    cc_beat(sq);
    Parity__Envelope *d = s_error(sq, 5000);
    ok(d && d->error->code == 21, "the rejected key's connection: Error 21");
    pw_wire_free(&d);
    ok(s_refused_at_handshake(w->ctx, w->col, q, 1500),
       "and its next handshake is refused");
    snprintf(want, sizeof want, "client key %s was rejected (parity hosts)",
             zcert_public_txt(q));
    ok(cc_log_has(w->logp, "event=auth_denied", want), "logged: %s", want);
    pw_key_fingerprint(zcert_public_txt(r), fp);
    snprintf(want, sizeof want, "key %s (rpend) is pending: it was never "
             "approved; reject it instead (parity hosts reject)", fp);
    s_refused(w->admin, "revoke", "{\"name\": \"rpend\"}", 1, want);
    pw_key_fingerprint(zcert_public_txt(t1), fp1);
    pw_key_fingerprint(zcert_public_txt(t2), fp2);
    b = s_ask(w->admin, "approve", "{\"name\": \"twin\"}", &st, err,
              sizeof err);
    ok(st == 1 && strstr(err, "name \"twin\" is claimed by 2 keys (")
       && strstr(err, fp1) && strstr(err, fp2)
       && strstr(err, "): give the fingerprint instead"),
       "a name two keys claim is refused, naming both: %s", err);
    json_decref(b);
    s_refused(w->admin, "approve", "{}", 1, "give the key's \"fingerprint\" "
              "or its host's \"name\" (one string, not both)");
    s_refused(w->admin, "approve", "{\"name\": 3}", 1, "give the key's "
              "\"fingerprint\" or its host's \"name\"");
    s_refused(w->admin, "approve", "{\"fingerprint\": \"SHA256:x\"}", 1,
              "\"fingerprint\" SHA256:x: want SHA256: and 43 base64 "
              "characters, as parity hosts --pending and parity-agent "
              "--fingerprint show it");
    s_refused(w->admin, "approve", "{\"key\": \"x\"}", 1, "unknown argument "
              "\"key\" for approve (known: fingerprint name)");
    s_refused(w->admin, "approve", "{\"name\": \"nobody\"}", 4, "no host or "
              "pending key is named \"nobody\" (parity hosts, parity hosts "
              "--pending)");
    snprintf(want, sizeof want, "{\"fingerprint\": \"SHA256:%043d\"}", 0);
    s_refused(w->admin, "reject", want, 4, "no key has fingerprint SHA256:0000");
    s_refused(w->admin, "reject", want, 4, "(parity hosts --pending lists the "
              "keys waiting for approval)");
    /* twin 1 approved by fingerprint: --enroll off below keeps it. */
    snprintf(want, sizeof want, "{\"fingerprint\": \"%s\"}", fp1);
    b = s_ask(w->admin, "approve", want, &st, err, sizeof err);
    ok(st == 0, "the twin with fingerprint %s is approved by it", fp1);
    json_decref(b);
    zmq_close(sq);
    zmq_close(sr);
    zmq_close(s1);
    zmq_close(s2);
}

/* A pending Hello whose name the database cannot hold: Error 10. */
static void
s_bad_name(s_world_t *w, zcert_t *k)
{
    void *s = cc_dealer(w->ctx, w->col->endpoint, k, w->col->public_key);
    cc_hello(s, "bad\xff");
    Parity__Envelope *e = s_error(s, 5000);
    ok(e && e->error->code == 10 && e->error->seq == 0
       && strncmp(e->error->message, "hello: host_keys: ", 18) == 0
       && strstr(e->error->message, "UTF8"),
       "a pending Hello whose name is not UTF-8: Error 10 (%s)",
       e ? e->error->message : "no Error");
    pw_wire_free(&e);
    ok(strcmp(s_key_col(zcert_public_txt(k), "state"), "") == 0,
       "and no row for it");
    zmq_close(s);
}

/* The collector's copy of the keys is older than the database (another
 * collector decided; this one reads every minute here): the Hello asks
 * the database, which wins. */
static void
s_stale(s_world_t *w, zcert_t *rej, zcert_t *app)
{
    char fp[PW_KEY_FP_SIZE], want[400], sql[300];
    void *sr = cc_dealer(w->ctx, w->col->endpoint, rej, w->col->public_key);
    void *sa = cc_dealer(w->ctx, w->col->endpoint, app, w->col->public_key);
    Parity__Envelope *e1 = cc_request(sr, 1, "ping", 5000);
    Parity__Envelope *e2 = cc_request(sa, 1, "ping", 5000);
    ok(e1 && e2, "two new keys through the handshake");
    pw_wire_free(&e1);
    pw_wire_free(&e2);
    pw_key_fingerprint(zcert_public_txt(rej), fp);
    snprintf(sql, sizeof sql, "INSERT INTO host_keys (public_key, "
             "fingerprint, state) VALUES ('%s', '%s', 'rejected')",
             zcert_public_txt(rej), fp);
    PQclear(PQexec(s_pg, sql));
    pw_key_fingerprint(zcert_public_txt(app), fp);
    snprintf(sql, sizeof sql, "INSERT INTO host_keys (public_key, "
             "fingerprint, state) VALUES ('%s', '%s', 'approved')",
             zcert_public_txt(app), fp);
    PQclear(PQexec(s_pg, sql));
    cc_hello(sr, "stale-rejected");
    Parity__Envelope *e = s_error(sr, 5000);
    pw_key_fingerprint(zcert_public_txt(rej), fp);
    snprintf(want, sizeof want, "denied: this key (%s) was rejected by an "
             "operator of the collector; nothing is stored, and the next "
             "connection is refused", fp);
    ok(e && e->error->code == 21 && e->error->seq == 0
       && strcmp(e->error->message, want) == 0,
       "a key rejected in the database meanwhile: its Hello gets Error 21 "
       "(%s)", e ? e->error->message : "no Error");
    pw_wire_free(&e);
    cc_hello(sa, "stale-approved");
    ok(cc_wait_ack(sa, 0, 5000), "one approved meanwhile: its Hello is "
       "acked");
    ok(s_hosts_with(zcert_public_txt(app)) == 1, "and it is a host");
    zmq_close(sr);
    zmq_close(sa);
}

/* Key files whose arrival the directory's time does not show (--enroll
 * off, so only --allow lets them in): one created empty, read so, and
 * written afterwards (what cp does, in slow motion); one added with the
 * directory's time set back to what the last read saw (a second change
 * in the same clock tick). */
static void
s_late_files(void *ctx, const cc_collector_t *col, const cc_files_t *fx,
             const char *log, zcert_t *late, zcert_t *tick)
{
    char path[300], src[300], buf[1024];
    snprintf(path, sizeof path, "%s/late", fx->allow);
    snprintf(src, sizeof src, "%s/late.pub", fx->dir);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    close(fd);
    usleep(300000);   /* heartbeats (200 ms) read it empty */
    zcert_save_public(late, src);
    FILE *in = fopen(src, "r");
    size_t n = in ? fread(buf, 1, sizeof buf, in) : 0;
    if (in)
        fclose(in);
    /* Written in place: the directory's time stays. */
    fd = open(path, O_WRONLY | O_TRUNC);
    bool written = fd >= 0 && n > 0 && write(fd, buf, n) == (ssize_t)n;
    if (fd >= 0)
        close(fd);
    ok(written && s_greeted(ctx, col, late, "late", 5000),
       "a key file read empty and written afterwards lets its key in");
    ok(!cc_log_has(log, "event=auth_denied", zcert_public_txt(late)),
       "at its first handshake (no auth_denied for it)");
    /* A change, a read (a heartbeat) within its tick, then the key. */
    snprintf(path, sizeof path, "%s/.change", fx->allow);
    close(open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644));
    struct stat st;
    stat(fx->allow, &st);
    usleep(300000);
    cc_files_allow(fx, "tick", tick);
    struct timespec times[2] = { st.st_atim, st.st_mtim };
    ok(utimensat(AT_FDCWD, fx->allow, times, 0) == 0
       && s_greeted(ctx, col, tick, "tick", 5000),
       "so does one added within the clock tick of the last read");
    ok(!cc_log_has(log, "event=auth_denied", zcert_public_txt(tick)),
       "at its first handshake too");
}

/* CO_ENROLL_MAX_PENDING keys wait: a Hello of one more is not recorded,
 * and a new key's handshake is refused. */
static void
s_full(s_world_t *w, zcert_t *y, zcert_t *z)
{
    char fp[PW_KEY_FP_SIZE], want[400], sql[400];
    /* y's handshake is done before the table is full. */
    void *sy = cc_dealer(w->ctx, w->col->endpoint, y, w->col->public_key);
    Parity__Envelope *e = cc_request(sy, 1, "ping", 5000);
    ok(e != NULL, "a new key is through the handshake");
    pw_wire_free(&e);
    long n = s_sql_long("SELECT count(*) FROM host_keys WHERE state = "
                        "'pending'");
    snprintf(sql, sizeof sql, "INSERT INTO host_keys (public_key, "
             "fingerprint, state, name) SELECT 'fake-' || i, 'fp-' || i, "
             "'pending', 'fake' FROM generate_series(1, %ld) i", 1024 - n);
    PQclear(PQexec(s_pg, sql));
    ok(s_sql_long("SELECT count(*) FROM host_keys WHERE state = 'pending'")
       == 1024, "1024 keys pending");
    cc_hello(sy, "one-too-many");
    e = s_error(sy, 5000);
    pw_key_fingerprint(zcert_public_txt(y), fp);
    snprintf(want, sizeof want, "pending: 1024 keys wait for an operator's "
             "approval already, so this key (%s) was not recorded; ask an "
             "operator to approve or reject some (parity hosts --pending), "
             "then say Hello again", fp);
    ok(e && e->error->code == 20 && strcmp(e->error->message, want) == 0,
       "a Hello beyond them: Error 20 saying it was not recorded (%s)",
       e ? e->error->message : "no Error");
    pw_wire_free(&e);
    ok(strcmp(s_key_col(zcert_public_txt(y), "state"), "") == 0,
       "and it has no row");
    zmq_close(sy);
    usleep(800000);   /* the writer reads the rows (every 200 ms) */
    ok(s_refused_at_handshake(w->ctx, w->col, z, 1500),
       "a new key's handshake is refused while 1024 wait");
    snprintf(want, sizeof want, "client key %s refused: 1024 keys wait for "
             "approval already (parity hosts --pending)",
             zcert_public_txt(z));
    ok(cc_log_has(w->logp, "event=auth_denied", want), "logged: %s", want);
    PQclear(PQexec(s_pg, "DELETE FROM host_keys WHERE name = 'fake'"));
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-enroll PATH/TO/parity-collector\n");
        return 2;
    }
    cc_files_t fx;
    char path[300], admin[200], logp2[200], keysvc[256], bind1[64];
    cc_collector_t col;
    if (cc_files_make(&fx, "/tmp/parity-enroll-XXXXXX") != 0)
        return 1;
    snprintf(admin, sizeof admin, "%s/admin", fx.dir);
    snprintf(logp2, sizeof logp2, "%s/collector2.log", fx.dir);
    mkdir(admin, 0755);
    zcert_t *adm = zcert_new(), *filed = zcert_new();
    zcert_t *p = zcert_new(), *q = zcert_new(), *r = zcert_new();
    zcert_t *t1 = zcert_new(), *t2 = zcert_new(), *y = zcert_new();
    zcert_t *z = zcert_new(), *nw = zcert_new(), *bn = zcert_new();
    zcert_t *sr = zcert_new(), *sa = zcert_new();
    zcert_t *late = zcert_new(), *tick = zcert_new();
    snprintf(path, sizeof path, "%s/admin", admin);
    zcert_save_public(adm, path);
    cc_files_allow(&fx, "filed", filed);
    snprintf(bind1, sizeof bind1, "tcp://127.0.0.1:%d", s_two_free_ports());
    char *cargv[] = { argv[1], "--bind", bind1, "--key",
                      fx.key, "--allow", fx.allow, "--admin", admin,
                      "--data-dir", fx.datadir, "--heartbeat-ms", "200",
                      NULL };
    if (!ok(cc_collector_start(&col, cargv, fx.log, 60000) == 0,
            "collector starts (enrollment on by default)")) {
        printf("Bail out! collector did not start\n");
        return 1;
    }
    s_pg = PQconnectdb(fx.conninfo);
    ok(PQstatus(s_pg) == CONNECTION_OK, "its database answers");
    s_log_value(fx.log, "event=listening", "key_service=", keysvc,
                sizeof keysvc);
    if (!ok(strncmp(keysvc, "tcp://127.0.0.1:", 16) == 0
            && cc_log_has(fx.log, "event=listening", "enroll=on"),
            "it serves its key on %s", keysvc)) {
        /* A REQ socket without a peer would wait for ever. */
        printf("Bail out! no key service to ask\n");
        cc_collector_stop(&col, SIGKILL, 5000);
        return 1;
    }
    void *ctx = zmq_ctx_new();
    s_key_service(ctx, &col, keysvc);
    s_world_t w = { ctx, &col, cc_dealer(ctx, col.endpoint, adm,
                                         col.public_key), fx.log };
    s_pending_then_approved(&w, p, filed);
    s_revoke(&w, p, filed);
    s_reject_and_refusals(&w, q, r, t1, t2);
    s_bad_name(&w, bn);
    s_full(&w, y, z);
    ok(cc_stat(w.admin, "key_denied") >= 2 && cc_stat(w.admin,
                                                      "key_requests") >= 1,
       "stats counts key_denied and key_requests");
    zmq_close(w.admin);

    /* --enroll off: the database's approvals still count. */
    ok(cc_collector_stop(&col, SIGTERM, 30000) == 0, "SIGTERM: exit 0");
    char *cargv2[] = { argv[1], "--bind", "tcp://127.0.0.1:0", "--key",
                       fx.key, "--allow", fx.allow, "--admin", admin,
                       "--data-dir", fx.datadir, "--heartbeat-ms", "200",
                       "--enroll", "off", NULL };
    ok(cc_collector_start(&col, cargv2, logp2, 60000) == 0,
       "the collector starts again with --enroll off");
    usleep(1000000);   /* its writer reads host_keys */
    ok(s_refused_at_handshake(ctx, &col, nw, 1500),
       "--enroll off: a new key fails the handshake");
    snprintf(path, sizeof path, "client key %s not in the allow-list",
             zcert_public_txt(nw));
    ok(cc_log_has(logp2, "event=auth_denied", path), "logged: %s", path);
    ok(s_greeted(ctx, &col, t1, "twin", 5000),
       "a key approved in the database is greeted");
    ok(s_greeted(ctx, &col, filed, "filed", 5000),
       "a key of --allow is greeted");
    ok(s_refused_at_handshake(ctx, &col, p, 1500),
       "a revoked key stays refused");
    s_late_files(ctx, &col, &fx, logp2, late, tick);
    ok(cc_collector_stop(&col, SIGTERM, 30000) == 0, "SIGTERM: exit 0");

    /* Heartbeats a minute apart: the keys are read at start only. */
    char logp3[220];
    snprintf(logp3, sizeof logp3, "%s/collector3.log", fx.dir);
    char *cargv3[] = { argv[1], "--bind", "tcp://127.0.0.1:0", "--key",
                       fx.key, "--allow", fx.allow, "--admin", admin,
                       "--data-dir", fx.datadir, "--heartbeat-ms", "60000",
                       NULL };
    ok(cc_collector_start(&col, cargv3, logp3, 60000) == 0,
       "the collector starts again, reading the keys once a minute");
    usleep(500000);   /* its first read */
    PQreset(s_pg);    /* the cluster was restarted under it */
    ok(PQstatus(s_pg) == CONNECTION_OK, "its database answers again");
    s_world_t w3 = { ctx, &col, NULL, logp3 };
    s_stale(&w3, sr, sa);
    zmq_ctx_term(ctx);
    PQfinish(s_pg);
    ok(cc_collector_stop(&col, SIGTERM, 30000) == 0, "SIGTERM: exit 0");
    ok(!cc_log_has(fx.log, "Sanitizer", NULL)
       && !cc_log_has(fx.log, "runtime error", NULL)
       && !cc_log_has(logp2, "Sanitizer", NULL),
       "no sanitizer report in the collector's logs");
    zcert_t *all[] = { adm, filed, p, q, r, t1, t2, y, z, nw, bn, sr, sa,
                       late, tick };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        zcert_destroy(&all[i]);
    if (cc_files_remove(&fx, tap_failed_ == 0) != 0)
        tap_diag("could not remove %s", fx.dir);
    return tap_done();
}
