/* test_link.c -- ag_link's window and resends against a fake collector:
 * a CURVE ROUTER in this process on 127.0.0.1 that acks the Hello and
 * then only what the test says. Over a spool of 100 messages:
 *   - no data before Ack{0}; then exactly AG_LINK_WINDOW messages, in seq
 *     order, and no more while none is acked;
 *   - each Ack lets one more go, and removes its message from the spool;
 *   - with no Ack for the resend wait, only the oldest unacked message
 *     goes again; an Ack of that copy makes the next resend, a second
 *     later, send the two oldest;
 *   - after the collector went away (a new ROUTER on the same port), the
 *     link says Hello first and, after Ack{0}, resends every unacked
 *     message in order.
 * Real time: about 20 s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <czmq.h>

#include "ag_link.h"
#include "ag_spool.h"
#include "pw_clock.h"
#include "pw_wire.h"
#include "tap.h"

#define S_MESSAGES 100

typedef struct {
    void *ctx, *router;
    zcert_t *cert;
    char endpoint[64];
    uint8_t rid[256];
    size_t rid_len;
    bool hello;              /* a Hello came on this ROUTER */
    uint64_t got[4096];      /* data seqs in arrival order */
    int64_t at[4096];        /* and when each came (monotonic ms) */
    size_t n_got;
    int64_t last_beat_ms;
} s_fake_t;

static void
s_bind(s_fake_t *f, const char *endpoint)
{
    f->router = zmq_socket(f->ctx, ZMQ_ROUTER);
    int one = 1, linger = 0;
    zmq_setsockopt(f->router, ZMQ_CURVE_SERVER, &one, sizeof one);
    zmq_setsockopt(f->router, ZMQ_CURVE_SECRETKEY,
                   zcert_secret_key(f->cert), 32);
    zmq_setsockopt(f->router, ZMQ_LINGER, &linger, sizeof linger);
    /* The port of a ROUTER just closed is released by libzmq's I/O
     * thread a moment later: try again for up to 5 s. */
    for (int i = 0; i < 100 && zmq_bind(f->router, endpoint) != 0; i++)
        usleep(50000);
    size_t len = sizeof f->endpoint;
    zmq_getsockopt(f->router, ZMQ_LAST_ENDPOINT, f->endpoint, &len);
    f->hello = false;
}

static void
s_send(s_fake_t *f, const uint8_t *buf, size_t len)
{
    zmq_send(f->router, f->rid, f->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(f->router, buf, len, ZMQ_DONTWAIT);
}

static void
s_ack(s_fake_t *f, uint64_t seq)
{
    uint8_t buf[64];
    size_t len;
    if (pw_wire_pack_ack(seq, buf, sizeof buf, &len) == PW_WIRE_OK)
        s_send(f, buf, len);
}

/* Tick the link and read the fake collector for ms: Hellos acked when
 * ack_hello, data seqs recorded, a Heartbeat back every 300 ms so the
 * link never takes the collector for gone. */
static void
s_run(s_fake_t *f, ag_link_t *link, int ms, bool ack_hello)
{
    int64_t until = pw_clock_mono_ms() + ms;
    while (pw_clock_mono_ms() < until) {
        ag_link_tick(link, 5, -1, NULL);
        for (;;) {
            zmq_msg_t id, m;
            zmq_msg_init(&id);
            zmq_msg_init(&m);
            if (zmq_msg_recv(&id, f->router, ZMQ_DONTWAIT) < 0
                || zmq_msg_recv(&m, f->router, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&id);
                zmq_msg_close(&m);
                break;
            }
            f->rid_len = zmq_msg_size(&id) < sizeof f->rid
                         ? zmq_msg_size(&id) : sizeof f->rid;
            memcpy(f->rid, zmq_msg_data(&id), f->rid_len);
            int body = 0;
            uint64_t seq = 0;
            if (pw_wire_peek(zmq_msg_data(&m), zmq_msg_size(&m), &body,
                             &seq) == PW_WIRE_OK) {
                if (body == PARITY__ENVELOPE__BODY_HELLO) {
                    f->hello = true;
                    if (ack_hello)
                        s_ack(f, 0);
                } else if (body != PARITY__ENVELOPE__BODY_HEARTBEAT
                           && f->n_got < sizeof f->got / sizeof f->got[0]) {
                    f->at[f->n_got] = pw_clock_mono_ms();
                    f->got[f->n_got++] = seq;
                }
            }
            zmq_msg_close(&id);
            zmq_msg_close(&m);
        }
        if (f->rid_len && pw_clock_mono_ms() - f->last_beat_ms >= 300) {
            uint8_t hb[128];
            size_t hlen;
            if (pw_wire_pack_heartbeat(pw_clock_unix_us(), 0, "idle", "", hb,
                                       sizeof hb, &hlen) == PW_WIRE_OK)
                s_send(f, hb, hlen);
            f->last_beat_ms = pw_clock_mono_ms();
        }
    }
}

/* The spooled messages: RunEnds of run "r", seqs from the spool. */
static void
s_fill(ag_spool_t *sp)
{
    char err[256];
    for (int i = 0; i < S_MESSAGES; i++) {
        Parity__Envelope env;
        Parity__RunEnd re = PARITY__RUN_END__INIT;
        re.run_id = "r";
        uint64_t seq = ag_spool_take_seq(sp, err, sizeof err);
        pw_wire_init(&env, seq);
        pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_RUN_END, &re);
        uint8_t *buf = NULL;
        size_t len = 0;
        if (pw_wire_pack_alloc(&env, &buf, &len, err, sizeof err) ==
            PW_WIRE_OK)
            ag_spool_append(sp, seq, buf, len, true, err, sizeof err);
        free(buf);
    }
}

static bool
s_in_order(const uint64_t *seqs, size_t n, uint64_t first)
{
    for (size_t i = 0; i < n; i++)
        if (seqs[i] != first + i)
            return false;
    return true;
}

int
main(void)
{
    char dir[] = "/tmp/parity-link-XXXXXX", path[256], err[512];
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    s_fake_t f;
    memset(&f, 0, sizeof f);
    f.ctx = zmq_ctx_new();
    f.cert = zcert_new();
    zcert_t *agent = zcert_new();
    snprintf(path, sizeof path, "%s/collector", dir);
    zcert_save_public(f.cert, path);
    snprintf(path, sizeof path, "%s/agent", dir);
    zcert_save(agent, path);
    s_bind(&f, "tcp://127.0.0.1:*");

    ag_spool_t *sp = NULL;
    snprintf(path, sizeof path, "%s/spool", dir);
    ok(ag_spool_open(path, NULL, &sp, err, sizeof err) == AG_SPOOL_OK,
       "a spool (%s)", err);
    s_fill(sp);
    ok(ag_spool_count(sp) == S_MESSAGES, "%d messages spooled", S_MESSAGES);

    char agent_key[256], collector_key[256];
    snprintf(agent_key, sizeof agent_key, "%s/agent_secret", dir);
    snprintf(collector_key, sizeof collector_key, "%s/collector", dir);
    ag_link_opts_t o = { .endpoint = f.endpoint, .key_path = agent_key,
                         .collector_key_path = collector_key };
    ag_link_t *link = ag_link_new(&o, sp, err, sizeof err);
    ok(link != NULL, "a link to %s (%s)", f.endpoint, link ? "" : err);
    if (!link)
        return tap_done();
    Parity__Envelope henv;
    Parity__Hello h = PARITY__HELLO__INIT;
    h.agent_name = "linktest";
    h.agent_version = "test";
    h.environment_json = "{}";
    pw_wire_init(&henv, 0);
    pw_wire_set_body(&henv, PARITY__ENVELOPE__BODY_HELLO, &h);
    uint8_t *hbuf = NULL;
    size_t hlen = 0;
    pw_wire_pack_alloc(&henv, &hbuf, &hlen, err, sizeof err);
    ag_link_set_hello(link, hbuf, hlen);

    s_run(&f, link, 1000, false);
    ok(f.hello && f.n_got == 0, "Hello first, and no data before Ack{0} "
       "(%zu data messages)", f.n_got);

    s_ack(&f, 0);                  /* the Hello it sent */
    s_run(&f, link, 1000, true);
    ag_link_stats_t st;
    ag_link_stats(link, &st);
    ok(f.n_got == AG_LINK_WINDOW && s_in_order(f.got, f.n_got, 1),
       "after Ack{0}: exactly the window, %d messages, in seq order (%zu)",
       AG_LINK_WINDOW, f.n_got);
    ok(st.ready && st.in_flight == AG_LINK_WINDOW, "ready, %zu in flight",
       st.in_flight);
    s_run(&f, link, 500, true);
    ok(f.n_got == AG_LINK_WINDOW, "and no more while none is acked");

    for (uint64_t s = 1; s <= 10; s++)
        s_ack(&f, s);
    s_run(&f, link, 1000, true);
    ag_link_stats(link, &st);
    ok(f.n_got == AG_LINK_WINDOW + 10 && s_in_order(f.got, f.n_got, 1),
       "ten Acks let ten more go, in order (%zu sent)", f.n_got);
    ok(ag_spool_count(sp) == S_MESSAGES - 10 && st.acked == 10,
       "and took their messages off the spool (%zu left)",
       ag_spool_count(sp));

    /* No Ack for the resend wait (5 s, times up to 1.5, from the last
     * send): the oldest only. */
    size_t before = f.n_got;
    int64_t t0 = pw_clock_mono_ms();
    while (f.n_got == before && pw_clock_mono_ms() - t0 < 9000)
        s_run(&f, link, 100, true);
    int64_t waited = f.n_got > before ? f.at[before] - f.at[before - 1] : 0;
    s_run(&f, link, 300, true);
    ag_link_stats(link, &st);
    ok(f.n_got == before + 1 && f.got[before] == 11,
       "no Ack: only the oldest unacked (11) goes again (%zu copies, the "
       "first of %" PRIu64 ")", f.n_got - before,
       f.n_got > before ? f.got[before] : 0);
    ok(waited >= AG_LINK_RESEND_MS - 100 && waited <= AG_LINK_RESEND_MS * 3 / 2
       + 500, "after the resend wait (%lld ms)", (long long)waited);
    ok(st.resent == 1, "counted as a resend (%" PRIu64 ")", st.resent);

    /* The copy's Ack frees a slot (75 goes), and the next resend comes
     * after about a second, of the two oldest. */
    before = f.n_got;
    s_ack(&f, 11);
    t0 = pw_clock_mono_ms();
    s_run(&f, link, 3000, true);
    ok(f.n_got == before + 3 && f.got[before] == 75
       && f.got[before + 1] == 12 && f.got[before + 2] == 13,
       "an Ack of a copy: 75 into the freed slot, then a resend of the two "
       "oldest, 12 and 13 (%zu messages)", f.n_got - before);
    waited = f.n_got > before + 1 ? f.at[before + 1] - t0 : 0;
    ok(waited >= AG_LINK_RESEND_RESUME_MS - 100
       && waited < AG_LINK_RESEND_MS, "a second or so after the Ack, not "
       "the full wait (%lld ms)", (long long)waited);

    /* The collector goes away: a new ROUTER on the same port, silent
     * until the link notices (liveness), then Hello, then every unacked
     * message in order. */
    zmq_close(f.router);
    s_bind(&f, f.endpoint);
    f.rid_len = 0;
    before = f.n_got;
    t0 = pw_clock_mono_ms();
    while (!f.hello && pw_clock_mono_ms() - t0 < 20000)
        s_run(&f, link, 100, false);
    ok(f.hello && f.n_got == before, "after the collector went away: Hello "
       "on the new connection before any data (%lld ms)",
       (long long)(pw_clock_mono_ms() - t0));
    s_ack(&f, 0);
    s_run(&f, link, 1500, true);
    size_t resent = f.n_got - before;
    ok(resent == AG_LINK_WINDOW && s_in_order(f.got + before, resent, 12),
       "after Ack{0} every unacked message again, in order from 12 (%zu)",
       resent);
    ag_link_stats(link, &st);
    ok(st.reconnects >= 1, "a reconnect counted (%" PRIu64 ")",
       st.reconnects);

    ag_link_destroy(&link);
    ok(link == NULL, "destroy clears");
    ag_spool_destroy(&sp);
    free(hbuf);
    zmq_close(f.router);
    zcert_destroy(&f.cert);
    zcert_destroy(&agent);
    zmq_ctx_term(f.ctx);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    if (system(path) != 0)
        tap_diag("could not remove %s", dir);
    return tap_done();
}
