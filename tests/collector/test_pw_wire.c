/* test_pw_wire.c -- Envelope framing: round trips, every rejection code. */
#include <stdbool.h>
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

/* Pack a minimal valid Envelope of each body kind with the given seq:
 * the body made from its descriptor (protobuf-c's reflection), with the
 * strings the collector's checks want set where the kind has them. */
static size_t
s_pack_kind(Parity__Envelope__BodyCase kind, uint64_t seq, uint8_t *buf,
            size_t cap)
{
    static const char *const strings[][2] = {
        { "agent_name", "alpha" }, { "calibration_id", "cal-1" },
        { "run_id", "run-1" }, { "command", "ping" },
    };
    const ProtobufCFieldDescriptor *fd =
        protobuf_c_message_descriptor_get_field(&parity__envelope__descriptor,
                                                (unsigned)kind);
    if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE)
        return 0;
    const ProtobufCMessageDescriptor *md = fd->descriptor;
    ProtobufCMessage *body = calloc(1, md->sizeof_message);
    if (!body)
        return 0;
    protobuf_c_message_init(md, body);
    for (size_t i = 0; i < sizeof strings / sizeof *strings; i++) {
        const ProtobufCFieldDescriptor *s =
            protobuf_c_message_descriptor_get_field_by_name(md, strings[i][0]);
        if (s && s->type == PROTOBUF_C_TYPE_STRING)
            *(const char **)((char *)body + s->offset) = strings[i][1];
    }
    Parity__Envelope env;
    size_t len = 0;
    pw_wire_init(&env, seq);
    pw_wire_set_body(&env, kind, body);
    if (pw_wire_pack(&env, buf, cap, &len, NULL, 0) != PW_WIRE_OK)
        len = 0;
    free(body);
    return len;
}

/* Does peek say what unpack says about frame f? */
static bool
s_peek_agrees(const uint8_t *f, size_t len)
{
    int body = -1;
    uint64_t seq = 1;
    Parity__Envelope *env = NULL;
    int prc = pw_wire_peek(f, len, &body, &seq);
    int urc = pw_wire_unpack(f, len, 0, &env, NULL, NULL, 0);
    bool agree = urc == PW_WIRE_OK
        ? prc == PW_WIRE_OK && body == (int)env->body_case
          && seq == env->seq
        : prc != PW_WIRE_EPARSE || urc == PW_WIRE_EPARSE;
    pw_wire_free(&env);
    return agree && (prc == PW_WIRE_OK || (body == 0 && seq == 0));
}

/* pw_wire_peek against pw_wire_unpack: every kind, last body wins,
 * truncation at every byte, and the frames that do not scan. */
static void
s_peek(void)
{
    static const Parity__Envelope__BodyCase kinds[] = {
        PARITY__ENVELOPE__BODY_HELLO, PARITY__ENVELOPE__BODY_HEARTBEAT,
        PARITY__ENVELOPE__BODY_CALIBRATION, PARITY__ENVELOPE__BODY_RUN_START,
        PARITY__ENVELOPE__BODY_SAMPLE_BATCH, PARITY__ENVELOPE__BODY_RUN_END,
        PARITY__ENVELOPE__BODY_ACK, PARITY__ENVELOPE__BODY_ERROR,
        PARITY__ENVELOPE__BODY_JOB_OFFER, PARITY__ENVELOPE__BODY_JOB_CANCEL,
        PARITY__ENVELOPE__BODY_JOB_STATUS, PARITY__ENVELOPE__BODY_REQUEST,
        PARITY__ENVELOPE__BODY_REPLY,
    };
    uint8_t a[256], b[256], both[512];
    /* Also a varint longer than protobuf's 10 bytes. */
    uint8_t long_varint[12] = { 0x10 };
    memset(long_varint + 1, 0xff, 10);
    int body;
    uint64_t seq;

    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        uint64_t want_seq = pw_wire_is_data(kinds[k]) ? 300 + k : 0;
        size_t len = s_pack_kind(kinds[k], want_seq, a, sizeof a);
        body = -1;
        seq = 1;
        int rc = pw_wire_peek(a, len, &body, &seq);
        ok(len > 0 && rc == PW_WIRE_OK && body == (int)kinds[k]
           && seq == want_seq && s_peek_agrees(a, len),
           "peek %s: body %d seq %llu",
           pw_wire_body_name(kinds[k]), body, (unsigned long long)seq);
    }

    /* Two Envelopes back to back are one whose later fields win. */
    size_t la = s_pack_kind(PARITY__ENVELOPE__BODY_SAMPLE_BATCH, 41, a,
                            sizeof a);
    size_t lb = s_pack_kind(PARITY__ENVELOPE__BODY_REQUEST, 0, b, sizeof b);
    memcpy(both, a, la);
    memcpy(both + la, b, lb);
    int rc = pw_wire_peek(both, la + lb, &body, &seq);
    ok(rc == PW_WIRE_OK && body == PARITY__ENVELOPE__BODY_REQUEST && seq == 41
       && s_peek_agrees(both, la + lb),
       "batch then request: request wins, seq 41 stays (body %d)", body);
    memcpy(both, b, lb);
    memcpy(both + lb, a, la);
    rc = pw_wire_peek(both, la + lb, &body, &seq);
    ok(rc == PW_WIRE_OK && body == PARITY__ENVELOPE__BODY_SAMPLE_BATCH && seq == 41
       && s_peek_agrees(both, la + lb),
       "request then batch: batch wins (body %d)", body);

    /* Every prefix: peek agrees with unpack, and some do not scan. */
    size_t cuts = 0, agreed = 0;
    for (size_t n = 0; n <= la + lb; n++) {
        cuts += pw_wire_peek(both, n, &body, &seq) == PW_WIRE_EPARSE;
        agreed += s_peek_agrees(both, n);
    }
    ok(agreed == la + lb + 1 && cuts > 0 && cuts < la + lb,
       "every prefix of a 2-envelope frame: peek agrees with unpack "
       "(%zu of %zu, %zu do not scan)", agreed, la + lb + 1, cuts);

    static const struct { const char *name; uint8_t f[8]; size_t len; }
    bad[] = {
        { "seq without its varint", { 0x10 }, 1 },
        { "an unterminated varint", { 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                  0xff }, 8 },
        { "body longer than the frame", { 0x72, 0x05, 0x0a }, 3 },
        { "body with a varint wire type", { 0x70, 0x01 }, 2 },
        { "version as a string", { 0x0a, 0x00 }, 2 },
        { "a group", { 0x0b, 0x0c }, 2 },
        { "field number 0", { 0x00, 0x01 }, 2 },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        body = -1;
        seq = 1;
        ok(pw_wire_peek(bad[k].f, bad[k].len, &body, &seq) == PW_WIRE_EPARSE
           && body == 0 && seq == 0 && s_peek_agrees(bad[k].f, bad[k].len),
           "peek refuses %s: parse", bad[k].name);
    }
    ok(pw_wire_peek(long_varint, sizeof long_varint, &body, &seq)
       == PW_WIRE_EPARSE && s_peek_agrees(long_varint, sizeof long_varint),
       "peek refuses a varint of 11 bytes: parse");
    uint8_t skip[] = { 0x98, 0x06, 0x01, 0x10, 0x09 };
    ok(pw_wire_peek(skip, sizeof skip, &body, &seq) == PW_WIRE_OK
       && body == 0 && seq == 9, "peek skips an unknown field 99");
    ok(pw_wire_peek(skip, 0, NULL, NULL) == PW_WIRE_OK,
       "peek: an empty frame scans, outputs may be NULL");
    /* The version, as the loop reads it before dropping a Heartbeat. */
    uint32_t version = 7;
    size_t lh = s_pack_kind(PARITY__ENVELOPE__BODY_HEARTBEAT, 0, a, sizeof a);
    ok(pw_wire_peek_version(a, lh, &version) == PW_WIRE_OK
       && version == PW_WIRE_VERSION, "peek_version: a Heartbeat is "
       "version %d (%u)", PW_WIRE_VERSION, version);
    a[1] = 9;
    ok(pw_wire_peek_version(a, lh, &version) == PW_WIRE_OK && version == 9,
       "peek_version: the byte changed to 9 reads 9 (%u)", version);
    ok(pw_wire_peek_version(skip, sizeof skip, &version) == PW_WIRE_OK
       && version == 0, "peek_version: none is 0");
    ok(pw_wire_peek_version(bad[4].f, bad[4].len, &version)
       == PW_WIRE_EPARSE && version == 0,
       "peek_version refuses a version as a string: parse");
    /* tests/fuzz found it: protobuf-c reads the over-long tag
     * 82 00 as field 0 and accepts the frame, peek does not scan it. */
    uint8_t overlong[] = { 0x08, 0x01, 0x82, 0x00, 0x00, 0x5a, 0x00 };
    Parity__Envelope *env = NULL;
    ok(pw_wire_peek(overlong, sizeof overlong, &body, &seq) == PW_WIRE_EPARSE
       && pw_wire_unpack(overlong, sizeof overlong, 0, &env, NULL, NULL, 0)
          == PW_WIRE_EPARSE && env == NULL
       && s_peek_agrees(overlong, sizeof overlong),
       "an over-long tag (82 00, field 0): unpack refuses it as peek does");

    /* The same tag at any depth (found by fuzzing): protobuf-c
     * skips field 0 as unknown inside a body or a sample; unpack refuses
     * it as a frame that does not parse (Error 3), naming the field. */
    static const struct {
        const char *name;
        uint8_t f[32];
        size_t len;
        const char *in;
    } nested[] = {
        /* heartbeat { 82 00 00 } */
        { "in a Heartbeat", { 0x08, 0x01, 0x5a, 0x03, 0x82, 0x00, 0x00 }, 7,
          "heartbeat" },
        /* sample_batch { run_id "r", samples { 82 00 00 } } */
        { "in a Sample", { 0x08, 0x01, 0x10, 0x05, 0x72, 0x08, 0x0a, 0x01,
                           'r', 0x1a, 0x03, 0x82, 0x00, 0x00 }, 14,
          "samples" },
        /* hello { tags { key "k", 82 00 00 } } */
        { "in a Hello's tag", { 0x08, 0x01, 0x52, 0x08, 0x32, 0x06, 0x0a,
                                0x01, 'k', 0x82, 0x00, 0x00 }, 12, "tags" },
        /* run_start { run_id "r", arms { name "a", 80 00 01 (field 0,
         * varint 1, tag over-long) } } */
        { "as a varint in an Arm", { 0x08, 0x01, 0x10, 0x05, 0x6a, 0x0b,
                                     0x0a, 0x01, 'r', 0x2a, 0x06, 0x0a, 0x01,
                                     'a', 0x80, 0x00, 0x01 }, 17, "arms" },
    };
    char err[256], want[256];
    for (size_t k = 0; k < sizeof nested / sizeof nested[0]; k++) {
        uint64_t s2 = 0;
        int urc = pw_wire_unpack(nested[k].f, nested[k].len, 0, &env, &s2,
                                 err, sizeof err);
        snprintf(want, sizeof want, "unpack: %zu bytes are not a "
                 "parity.Envelope (field number 0, or a field protobuf does "
                 "not have, inside %s)", nested[k].len, nested[k].in);
        ok(urc == PW_WIRE_EPARSE && env == NULL && strcmp(err, want) == 0
           && pw_wire_peek(nested[k].f, nested[k].len, &body, &seq)
              == PW_WIRE_OK,
           "field number 0 %s: parse, \"%s\" (peek, which reads the top "
           "level only, still scans it); got %d \"%s\"", nested[k].name,
           want, urc, err);
    }
    /* Unknown fields are not looked into: a field 0 in the bytes of one
     * is no field of any message. hello { 99: "\x82\x00\x00" } */
    uint8_t unknown[] = { 0x08, 0x01, 0x52, 0x06, 0x9a, 0x06, 0x03, 0x82,
                          0x00, 0x00 };
    ok(pw_wire_unpack(unknown, sizeof unknown, 0, &env, NULL, err,
                      sizeof err) == PW_WIRE_OK,
       "the same bytes inside an unknown field of a Hello: unpacks (%s)",
       env ? "ok" : err);
    pw_wire_free(&env);
}

/* U+0000 inside any text field, at any depth, is refused (Error 10):
 * protobuf-c would cut the string there. */
static void
s_nul(void)
{
    char err[256];
    Parity__Envelope env, *out = NULL;
    Parity__Hello h = PARITY__HELLO__INIT;
    Parity__Tag tag = PARITY__TAG__INIT, *tags[] = { &tag };
    uint8_t buf[512];
    size_t len;

    h.agent_name = "a\001" "b";   /* patched to "a\0b" on the wire */
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_HELLO, &h);
    ok(pw_wire_pack(&env, buf, sizeof buf, &len, NULL, 0) == PW_WIRE_OK,
       "pack a Hello");
    uint8_t *x = (uint8_t *)memmem(buf, len, "a\x01", 2) + 1;
    *x = 0;
    ok(pw_wire_unpack(buf, len, 0, &out, NULL, err, sizeof err)
       == PW_WIRE_EFIELD, "agent_name \"a\\0b\": field (Error 10)");
    ok_str(err, "hello: text field agent_name holds U+0000 (NUL)",
           "the error names the field");
    pw_wire_free(&out);
    *x = 'z';
    ok(pw_wire_unpack(buf, len, 0, &out, NULL, err, sizeof err)
       == PW_WIRE_OK, "the same Hello without the NUL unpacks");
    pw_wire_free(&out);

    h.agent_name = "a";
    tag.key = "k";
    tag.value = "v\x01";
    h.tags = tags;
    h.n_tags = 1;
    ok(pw_wire_pack(&env, buf, sizeof buf, &len, NULL, 0) == PW_WIRE_OK,
       "pack a Hello with a tag");
    x = (uint8_t *)memmem(buf, len, "v\x01", 2) + 1;
    *x = 0;
    ok(pw_wire_unpack(buf, len, 0, &out, NULL, err, sizeof err)
       == PW_WIRE_EFIELD, "a NUL in a nested tag value: field");
    ok_str(err, "hello: text field value holds U+0000 (NUL)",
           "named by its field");
    pw_wire_free(&out);
}

/* pw_wire_utf8_valid, and the ids every answer quotes. */
static void
s_utf8(void)
{
    static const struct {
        const char *text;
        size_t valid;
        const char *what;
    } cases[] = {
        { "plain", 5, "ASCII" },
        { "caf\xc3\xa9", 5, "two-byte" },
        { "\xe2\x82\xac \xf0\x9f\x98\x80", 8, "three- and four-byte" },
        { "caf\xc3", 3, "cut inside a character" },
        { "a\xc0\xaf" "b", 1, "overlong two-byte" },
        { "a\xe0\x80\xaf" "b", 1, "overlong three-byte" },
        { "a\xed\xa0\x80", 1, "a surrogate" },
        { "a\xf4\x90\x80\x80", 1, "above U+10FFFF" },
        { "ab\xff", 2, "0xff" },
        { "\x80", 0, "a lone continuation byte" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ok(pw_wire_utf8_valid(cases[i].text, strlen(cases[i].text))
           == cases[i].valid, "utf8: %s: %zu valid bytes", cases[i].what,
           cases[i].valid);

    char err[256];
    uint8_t buf[256];
    size_t len;
    Parity__Envelope env, *out = NULL;
    Parity__SampleBatch b = PARITY__SAMPLE_BATCH__INIT;
    b.run_id = "run-\xff";
    pw_wire_init(&env, 5);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &b);
    ok(pw_wire_pack(&env, buf, sizeof buf, &len, err, sizeof err)
       == PW_WIRE_EFIELD, "pack refuses a run_id that is not UTF-8");
    len = parity__envelope__pack(&env, buf);
    ok(pw_wire_unpack(buf, len, 0, &out, NULL, err, sizeof err)
       == PW_WIRE_EFIELD, "unpack: field (Error 10)");
    ok_str(err, "sample_batch: run_id is not UTF-8", "naming the id");
    Parity__Calibration c = PARITY__CALIBRATION__INIT;
    c.calibration_id = "c\xe9";
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_CALIBRATION, &c);
    len = parity__envelope__pack(&env, buf);
    ok(pw_wire_unpack(buf, len, 0, &out, NULL, err, sizeof err)
       == PW_WIRE_EFIELD, "a calibration_id in Latin-1: field");
    ok_str(err, "calibration: calibration_id is not UTF-8", "named");
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
    ok_str(pw_wire_err_name(PW_WIRE_EBUDGET), "budget", "budget's name");
    ok_str(pw_wire_err_name(PW_WIRE_EDEPEND), "dependency",
           "dependency's name");
    ok_str(pw_wire_err_name(-PW_WIRE_ECOUNT), "?", "err name: sentinel");
    ok_str(pw_wire_body_name(PARITY__ENVELOPE__BODY_RUN_END), "run_end",
           "body name");
    ok(pw_wire_is_data(PARITY__ENVELOPE__BODY_SAMPLE_BATCH)
       && !pw_wire_is_data(PARITY__ENVELOPE__BODY_HELLO), "is_data");
    s_peek();
    s_nul();
    s_utf8();
    return tap_done();
}
