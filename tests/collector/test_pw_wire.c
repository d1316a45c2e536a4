/* test_pw_wire.c -- Envelope framing: round trips, every rejection code. */
#include <stdlib.h>
#include <string.h>

#include "pw_wire.h"
#include "tap.h"

static int
s_pack_batch(size_t n, uint64_t seq, uint8_t **buf, size_t *len)
{
    Parity__Envelope env;
    Parity__SampleBatch b = PARITY__SAMPLE_BATCH__INIT;
    Parity__Sample *s = calloc(n ? n : 1, sizeof *s);
    Parity__Sample **ps = calloc(n ? n : 1, sizeof *ps);
    char err[256];
    for (size_t i = 0; i < n; i++) {
        parity__sample__init(&s[i]);
        s[i].wall_us = 100.0 + (double)i;
        s[i].round = (uint32_t)i;
        ps[i] = &s[i];
    }
    b.run_id = "run-1";
    b.batch_seq = 3;
    b.n_samples = n;
    b.samples = ps;
    pw_wire_init(&env, seq);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &b);
    int rc = pw_wire_pack_alloc(&env, buf, len, err, sizeof err);
    free(s);
    free(ps);
    return rc;
}

int
main(void)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    uint64_t seq = 0;
    char err[256];
    Parity__Envelope *env = NULL;

    ok(s_pack_batch(512, 7, &buf, &len) == PW_WIRE_OK, "pack 512 samples");
    ok(pw_wire_unpack(buf, len, 0, &env, &seq, err, sizeof err)
       == PW_WIRE_OK, "unpack it");
    ok(env && env->sample_batch && env->sample_batch->n_samples == 512
       && env->sample_batch->batch_seq == 3 && env->seq == 7
       && env->sample_batch->samples[511]->wall_us == 611.0,
       "fields survive the round trip");
    pw_wire_free(&env);
    ok(env == NULL, "pw_wire_free clears the pointer");
    pw_wire_free(&env);
    pw_wire_free(NULL);

    /* Truncation: a prefix of a valid frame is not an Envelope. */
    ok(pw_wire_unpack(buf, len / 2, 0, &env, NULL, err, sizeof err)
       == PW_WIRE_EPARSE && env == NULL, "truncated frame: parse");
    ok(pw_wire_unpack(buf, len, len - 1, &env, NULL, err, sizeof err)
       == PW_WIRE_ETOOBIG, "frame above the caller's limit: too_big");
    ok(strstr(err, "unpack: frame of ") && strstr(err, "limit"),
       "too_big names the sizes: %s", err);
    free(buf);

    ok(s_pack_batch(513, 7, &buf, &len) == PW_WIRE_ELIMIT,
       "pack refuses 513 samples");
    ok(s_pack_batch(1, 0, &buf, &len) == PW_WIRE_ESEQ,
       "pack refuses a data message with seq 0");

    {
        /* Hello: 256 suites pack, 257 do not, and nor do 257 tags. */
        static Parity__SuiteInfo si[257];
        static Parity__SuiteInfo *psi[257];
        static Parity__Tag tg[257];
        static Parity__Tag *ptg[257];
        for (int i = 0; i < 257; i++) {
            parity__suite_info__init(&si[i]);
            si[i].name = "s";
            psi[i] = &si[i];
            parity__tag__init(&tg[i]);
            ptg[i] = &tg[i];
        }
        Parity__Envelope he;
        Parity__Hello h = PARITY__HELLO__INIT;
        h.suites = psi;
        h.n_suites = 256;
        pw_wire_init(&he, 0);
        pw_wire_set_body(&he, PARITY__ENVELOPE__BODY_HELLO, &h);
        uint8_t *hb = NULL;
        size_t hl = 0;
        ok(pw_wire_pack_alloc(&he, &hb, &hl, err, sizeof err) == PW_WIRE_OK,
           "a Hello with 256 suites packs");
        free(hb);
        h.n_suites = 257;
        ok(pw_wire_pack_alloc(&he, &hb, &hl, err, sizeof err)
           == PW_WIRE_ELIMIT && strstr(err, "hello: 257 suites (at most "
                                       "256)"),
           "257 suites: limit (%s)", err);
        h.n_suites = 1;
        h.tags = ptg;
        h.n_tags = 257;
        ok(pw_wire_pack_alloc(&he, &hb, &hl, err, sizeof err)
           == PW_WIRE_ELIMIT && strstr(err, "hello: 257 tags (at most 256)"),
           "257 tags: limit (%s)", err);
    }

    uint8_t garbage[64];
    for (size_t i = 0; i < sizeof garbage; i++)
        garbage[i] = (uint8_t)(0xff - i);
    ok(pw_wire_unpack(garbage, sizeof garbage, 0, &env, NULL, err,
                      sizeof err) == PW_WIRE_EPARSE, "garbage: parse");
    ok(pw_wire_unpack(garbage, 0, 0, &env, NULL, err, sizeof err)
       == PW_WIRE_EEMPTY, "empty frame: empty");

    /* Wrong version: hand-made frame, version 2, heartbeat body. */
    uint8_t small[128];
    ok(pw_wire_pack_heartbeat(1, 0, "idle", "", small, sizeof small, &len)
       == PW_WIRE_OK, "pack heartbeat");
    ok(small[0] == 0x08 && small[1] == 0x01, "version is field 1 = 1");
    small[1] = 0x02;
    ok(pw_wire_unpack(small, len, 0, &env, &seq, err, sizeof err)
       == PW_WIRE_EVERSION, "version 2: version");
    ok_str(err, "unpack: protocol version 2 (this side speaks 1)",
           "version error text");

    /* Unknown body: field 99 (varint) after version. */
    uint8_t unknown[] = { 0x08, 0x01, 0x98, 0x06, 0x01 };
    ok(pw_wire_unpack(unknown, sizeof unknown, 0, &env, NULL, err,
                      sizeof err) == PW_WIRE_EUNKNOWN, "field 99: unknown");
    uint8_t nobody[] = { 0x08, 0x01 };
    ok(pw_wire_unpack(nobody, sizeof nobody, 0, &env, NULL, err, sizeof err)
       == PW_WIRE_ENOBODY, "no body: no_body");

    ok(pw_wire_pack_ack(42, small, sizeof small, &len) == PW_WIRE_OK
       && pw_wire_unpack(small, len, 0, &env, NULL, err, sizeof err)
          == PW_WIRE_OK
       && env->body_case == PARITY__ENVELOPE__BODY_ACK
       && env->ack->seq == 42, "ack round trip");
    pw_wire_free(&env);
    ok(pw_wire_pack_error(PW_WIRE_EVERSION, "bad", 9, small, 2, &len)
       == PW_WIRE_ETOOBIG, "pack into a too small buffer: too_big");

    ok_str(pw_wire_err_name(PW_WIRE_EPARSE), "parse", "err name");
    ok_str(pw_wire_err_name(-100), "?", "err name out of range");
    ok_str(pw_wire_body_name(PARITY__ENVELOPE__BODY_RUN_END), "run_end",
           "body name");
    ok(pw_wire_is_data(PARITY__ENVELOPE__BODY_SAMPLE_BATCH)
       && !pw_wire_is_data(PARITY__ENVELOPE__BODY_HELLO), "is_data");
    return tap_done();
}
