/* test_peers.c -- parity-collector and raw CURVE peers:
 * Heartbeats go to agents only (a client that never said Hello is not
 * heartbeated, and nothing is counted as dropped for it), spread over
 * the interval rather than all at once. */
#include <libpq-fe.h>
#include <jansson.h>

#include "co_client.h"
#include "tap.h"

#define S_SPREAD_AGENTS 16

/* Heartbeats received within ms on each of n sockets (other messages
 * skipped) into beats[i], beating every 100 ms like agents (cc_recv
 * hides Heartbeats, so not it); first[i], when first is not NULL, gets
 * when socket i's first one came (0: none). n <= S_SPREAD_AGENTS. */
static void
s_beats_n(void **s, int n, int ms, int *beats, int64_t *first)
{
    zmq_pollitem_t it[S_SPREAD_AGENTS];
    for (int i = 0; i < n; i++) {
        it[i] = (zmq_pollitem_t){ s[i], 0, ZMQ_POLLIN, 0 };
        beats[i] = 0;
        if (first)
            first[i] = 0;
    }
    int64_t until = cc_now_ms() + ms, next = 0;
    for (int64_t now; (now = cc_now_ms()) < until;) {
        if (now >= next) {
            for (int i = 0; i < n; i++)
                cc_beat(s[i]);
            next = now + 100;
        }
        if (zmq_poll(it, n, until - now < 10 ? (long)(until - now) : 10)
            <= 0)
            continue;
        int64_t at = cc_now_ms();
        for (int i = 0; i < n; i++) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            Parity__Envelope *e = NULL;
            if ((it[i].revents & ZMQ_POLLIN)
                && zmq_msg_recv(&m, s[i], ZMQ_DONTWAIT) >= 0
                && pw_wire_unpack(zmq_msg_data(&m), zmq_msg_size(&m), 0, &e,
                                  NULL, NULL, 0) == PW_WIRE_OK
                && e->body_case == PARITY__ENVELOPE__BODY_HEARTBEAT) {
                beats[i]++;
                if (first && !first[i])
                    first[i] = at;
            }
            pw_wire_free(&e);
            zmq_msg_close(&m);
        }
    }
}

static int
s_beats(void *s, int ms)
{
    int n = 0;
    s_beats_n(&s, 1, ms, &n, NULL);
    return n;
}

/* A client (no Hello) that sends a Heartbeat and goes away is not
 * heartbeated: sends_dropped does not grow, while the agent (Hello)
 * keeps getting its Heartbeats. */
static void
s_client_beats(void *ctx, cc_collector_t *col, void *agent, zcert_t *c)
{
    long dropped0 = cc_stat(agent, "sends_dropped");
    void *cl = cc_dealer(ctx, col->endpoint, c, col->public_key);
    /* A first Request waits out the CURVE handshake (a DEALER drops a
     * DONTWAIT send before it is connected). */
    long hb0 = cc_stat(cl, "heartbeats_in");
    cc_beat(cl);
    /* Answered on the client's connection after its Heartbeat was read. */
    long hb1 = cc_stat(cl, "heartbeats_in");
    ok(hb1 > hb0, "the client's Heartbeat arrived (%ld -> %ld)", hb0, hb1);
    zmq_close(cl);
    /* 200 ms beats: 6 intervals, before the client is taken offline. */
    int beats = s_beats(agent, 1200);
    long dropped = cc_stat(agent, "sends_dropped");
    ok(beats >= 3, "the agent (Hello) gets its Heartbeats (%d in 1.2 s)",
       beats);
    ok(dropped0 >= 0 && dropped == dropped0,
       "a client without Hello is not heartbeated: sends_dropped %ld -> "
       "%ld", dropped0, dropped);
}

/* The collector's Heartbeats to S_SPREAD_AGENTS agents are spread over
 * the interval (16 slices of 200 ms), not sent in one burst: the first
 * one each agent gets after a common instant comes at times that span
 * most of an interval (all at once, they would lie within a few ms). */
static void
s_spread(void *ctx, cc_collector_t *col, zcert_t **certs)
{
    void *s[S_SPREAD_AGENTS];
    int greeted = 0;
    for (int i = 0; i < S_SPREAD_AGENTS; i++) {
        char name[32];
        snprintf(name, sizeof name, "spread-%02d", i);
        s[i] = cc_dealer(ctx, col->endpoint, certs[i], col->public_key);
        greeted += cc_hello(s[i], name) == 0 && cc_wait_ack(s[i], 0, 5000);
    }
    ok(greeted == S_SPREAD_AGENTS, "%d agents greeted", greeted);
    int64_t first[S_SPREAD_AGENTS];
    int beats[S_SPREAD_AGENTS];
    s_beats_n(s, S_SPREAD_AGENTS, 400, beats, NULL);   /* settle */
    s_beats_n(s, S_SPREAD_AGENTS, 1200, beats, first);
    int64_t lo = INT64_MAX, hi = 0;
    int fewest = INT32_MAX;
    for (int i = 0; i < S_SPREAD_AGENTS; i++) {
        if (first[i] && first[i] < lo)
            lo = first[i];
        if (first[i] > hi)
            hi = first[i];
        if (beats[i] < fewest)
            fewest = beats[i];
    }
    ok(fewest >= 4, "every agent gets its Heartbeats (fewest: %d in 1.2 s "
       "at 200 ms)", fewest);
    ok(lo != INT64_MAX && hi - lo >= 80, "the first Heartbeats after one "
       "instant span %lld ms of the 200 ms interval (at least 80: spread)",
       (long long)(hi - lo));
    for (int i = 0; i < S_SPREAD_AGENTS; i++)
        zmq_close(s[i]);
}

/* A Hello whose agent_name holds U+0000, from a raw peer: Error 10
 * naming the field, and no host row. */
static void
s_nul_hello(void *s)
{
    Parity__Envelope env;
    Parity__Hello h = PARITY__HELLO__INIT;
    uint8_t buf[512];
    size_t len;
    h.agent_name = "nul\001" "x";
    h.agent_version = "test";
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_HELLO, &h);
    if (pw_wire_pack(&env, buf, sizeof buf, &len, NULL, 0) != PW_WIRE_OK)
        return;
    *((uint8_t *)memmem(buf, len, "nul\001", 4) + 3) = 0;
    cc_send_raw(s, buf, len);
    Parity__Envelope *e = cc_recv(s, 5000);
    ok(e && e->body_case == PARITY__ENVELOPE__BODY_ERROR
       && e->error->code == 10
       && strstr(e->error->message, "agent_name holds U+0000"),
       "Hello with agent_name \"nul\\0x\": Error 10 naming the field "
       "(%s)", e && e->body_case == PARITY__ENVELOPE__BODY_ERROR
               ? e->error->message : "no Error");
    pw_wire_free(&e);
}

/* Requests the loop answers itself (docs/protocol.md section 3): ping
 * and stats read no arguments, and a Request that does not decode is
 * counted in its bad_<kind> like any frame. */
static void
s_requests(void *s)
{
    Parity__Envelope env, *e = NULL;
    Parity__Request r = PARITY__REQUEST__INIT;
    uint8_t buf[512];
    size_t len;
    const char *cmds[] = { "ping", "stats" };
    for (int i = 0; i < 2; i++) {
        r.request_id = 40 + (uint64_t)i;
        r.command = (char *)cmds[i];
        r.args_json = "not JSON at all {";
        pw_wire_init(&env, 0);
        pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_REQUEST, &r);
        cc_send(s, &env);
        e = cc_recv(s, 5000);
        ok(e && e->body_case == PARITY__ENVELOPE__BODY_REPLY
           && e->reply->request_id == r.request_id && e->reply->status == 0
           && (i == 1 || strcmp(e->reply->body_json, "{}") == 0),
           "%s with args_json that is not JSON: status 0 (arguments are "
           "not read)", cmds[i]);
        pw_wire_free(&e);
    }
    long field0 = cc_stat(s, "bad_field");
    r.request_id = 42;
    r.command = "ping";
    r.args_json = "{\"a\": \"x\001\"}";
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_REQUEST, &r);
    if (pw_wire_pack(&env, buf, sizeof buf, &len, NULL, 0) == PW_WIRE_OK) {
        *((uint8_t *)memmem(buf, len, "x\001", 2) + 1) = 0;
        cc_send_raw(s, buf, len);
    }
    e = cc_recv(s, 5000);
    ok(e && e->body_case == PARITY__ENVELOPE__BODY_ERROR
       && e->error->code == 10
       && strcmp(e->error->message, "request: text field args_json holds "
                 "U+0000 (NUL)") == 0,
       "a Request whose args_json holds U+0000: Error 10 (%s)",
       e && e->body_case == PARITY__ENVELOPE__BODY_ERROR
       ? e->error->message : "no Error");
    pw_wire_free(&e);
    ok(cc_stat(s, "bad_field") == field0 + 1,
       "and it is counted in bad_field");
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-peers PATH/TO/parity-collector\n");
        return 2;
    }
    cc_files_t fx;
    cc_collector_t col;

    if (cc_files_make(&fx, "/tmp/parity-peers-XXXXXX") != 0)
        return 1;
    zcert_t *a = zcert_new(), *c = zcert_new();
    zcert_t *spread[S_SPREAD_AGENTS];
    cc_files_allow(&fx, "a", a);
    cc_files_allow(&fx, "c", c);
    cc_files_allow_new(&fx, "s", S_SPREAD_AGENTS, spread);
    char *cargv[] = { argv[1], "--bind", "tcp://127.0.0.1:0", "--key",
                      fx.key, "--allow", fx.allow, "--data-dir", fx.datadir,
                      "--heartbeat-ms", "200", NULL };
    if (!ok(cc_collector_start(&col, cargv, fx.log, 60000) == 0,
            "collector starts")) {
        printf("Bail out! collector did not start\n");
        return 1;
    }
    void *ctx = zmq_ctx_new();
    void *sa = cc_dealer(ctx, col.endpoint, a, col.public_key);
    ok(cc_hello(sa, "alpha") == 0 && cc_wait_ack(sa, 0, 5000),
       "the agent is greeted");
    s_client_beats(ctx, &col, sa, c);
    s_nul_hello(sa);
    s_requests(sa);
    s_spread(ctx, &col, spread);   /* sa goes silent meanwhile: last */
    zmq_close(sa);
    zmq_ctx_term(ctx);
    ok(cc_collector_stop(&col, SIGTERM, 30000) == 0, "SIGTERM: exit 0");
    ok(!cc_log_has(fx.log, "runtime error", NULL)
       && !cc_log_has(fx.log, "Sanitizer", NULL),
       "no sanitizer report in the collector's log");
    zcert_destroy(&a);
    zcert_destroy(&c);
    for (int i = 0; i < S_SPREAD_AGENTS; i++)
        zcert_destroy(&spread[i]);
    if (cc_files_remove(&fx, tap_failed_ == 0) != 0)
        tap_diag("could not remove %s", fx.dir);
    return tap_done();
}
