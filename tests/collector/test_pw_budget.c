/* test_pw_budget.c -- pw_wire_unpack within its memory budget.
 *
 * Hostile frames (every one under the 4 MiB frame bound, each mostly
 * 2-byte entries that cost 50 to 150 bytes decoded) are refused, and the
 * decoding process's peak RSS grows by less than S_PEAK_LIMIT_KIB: each is
 * decoded in its own child so that one case's peak cannot hide another's.
 * The largest legal messages still decode. Before the budget, the
 * empty-samples frame alone took ~300 MiB. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pw_wire.h"
#include "tap.h"

/* The peak growth a refused frame may cause: the budget (16 MiB) plus
 * malloc's per-block overhead (a 1-byte string is charged 17 bytes and
 * takes 32), well under the 300 MiB of an unbounded decode. ASan adds a
 * redzone of 16 bytes or more to every block, which the process's RSS
 * shows but the decoder does not hold: twice the limit there. */
#if defined(__SANITIZE_ADDRESS__)
#define S_PEAK_LIMIT_KIB (128L * 1024)
#else
#define S_PEAK_LIMIT_KIB (64L * 1024)
#endif

/* A frame under construction: hand-made so that it can hold what no
 * conforming sender would pack. */
typedef struct {
    uint8_t *d;
    size_t len, cap;
} s_buf_t;

static void
s_put(s_buf_t *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->d = realloc(b->d, b->cap);
        if (!b->d)
            abort();
    }
    memcpy(b->d + b->len, p, n);
    b->len += n;
}

static void
s_varint(s_buf_t *b, uint64_t v)
{
    uint8_t x[10];
    size_t n = 0;
    do {
        x[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            x[n] |= 0x80;
        n++;
    } while (v);
    s_put(b, x, n);
}

static void
s_tag(s_buf_t *b, uint32_t field, unsigned wire)
{
    s_varint(b, (uint64_t)field << 3 | wire);
}

/* Field `field` holding the bytes of inner (length-delimited). */
static void
s_sub(s_buf_t *b, uint32_t field, const s_buf_t *inner)
{
    s_tag(b, field, 2);
    s_varint(b, inner->len);
    s_put(b, inner->d, inner->len);
}

static void
s_str(s_buf_t *b, uint32_t field, const char *s, size_t n)
{
    s_tag(b, field, 2);
    s_varint(b, n);
    s_put(b, s, n);
}

/* Envelope{version 1, seq, body field = inner}. */
static s_buf_t
s_envelope(uint64_t seq, uint32_t body_field, const s_buf_t *inner)
{
    s_buf_t e = { 0 };
    s_tag(&e, 1, 0);
    s_varint(&e, PW_WIRE_VERSION);
    s_tag(&e, 2, 0);
    s_varint(&e, seq);
    s_sub(&e, body_field, inner);
    return e;
}

/* What a child reports about one decode. */
typedef struct {
    int rc;
    long grew_kib;
    char err[256];
} s_result_t;

/* Decode buf in a child; its rc, error text and how far its peak RSS grew
 * during the decode alone. */
static s_result_t
s_decode_in_child(const s_buf_t *f)
{
    s_result_t r = { .rc = 1, .grew_kib = -1, .err = "child failed" };
    int fd[2];
    if (pipe(fd) != 0)
        return r;
    pid_t pid = fork();
    if (pid == 0) {
        struct rusage u0, u1;
        Parity__Envelope *env = NULL;
        close(fd[0]);
        getrusage(RUSAGE_SELF, &u0);
        r.err[0] = '\0';
        r.rc = pw_wire_unpack(f->d, f->len, 0, &env, NULL, r.err,
                              sizeof r.err);
        getrusage(RUSAGE_SELF, &u1);
        r.grew_kib = u1.ru_maxrss - u0.ru_maxrss;
        pw_wire_free(&env);
        ssize_t w = write(fd[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    if (pid > 0 && read(fd[0], &r, sizeof r) != (ssize_t)sizeof r)
        r.rc = 1;
    close(fd[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    return r;
}

static void
s_refused(const char *name, s_buf_t *f, int want_rc, const char *want_err)
{
    ok(f->len <= PW_WIRE_MAX_FRAME, "%s: the frame is %zu bytes, within "
       "the frame bound", name, f->len);
    s_result_t r = s_decode_in_child(f);
    ok(r.rc == want_rc, "%s: refused as %s (got %s: %s)", name,
       pw_wire_err_name(want_rc), pw_wire_err_name(r.rc), r.err);
    ok_str(r.err, want_err, "%s: error text", name);
    ok(r.grew_kib >= 0 && r.grew_kib < S_PEAK_LIMIT_KIB,
       "%s: peak RSS grew %ld KiB (limit %ld)", name, r.grew_kib,
       S_PEAK_LIMIT_KIB);
    free(f->d);
}

/* s_refused for a frame of body kind (its name) over the decode
 * budget: the error text says so. */
static void
s_over_budget(const char *name, s_buf_t *f, const char *kind)
{
    char want[256];
    snprintf(want, sizeof want, "unpack: decoding a %zu-byte %s frame "
             "needs more than %u bytes of memory (the decode budget)",
             f->len, kind, PW_WIRE_DECODE_BUDGET);
    s_refused(name, f, PW_WIRE_EBUDGET, want);
}

/* Frames that a hostile peer could send. */
static void
s_hostile(void)
{
    char want[256];
    s_buf_t in = { 0 }, f;
    size_t n;

    /* 1. The frame: a SampleBatch of empty Samples, 2 bytes each.
     * The wire pre-scan refuses it before anything is allocated. */
    s_str(&in, 1, "r", 1);
    for (n = 0; in.len + 2 <= PW_WIRE_MAX_FRAME - 16; n++)
        s_str(&in, 3, "", 0);
    f = s_envelope(7, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &in);
    snprintf(want, sizeof want, "sample_batch: %zu samples (at most 512)",
             n);
    s_refused("4 MiB of empty samples", &f, PW_WIRE_ELIMIT, want);
    free(in.d);

    /* 2. Two SampleBatch fields: protobuf-c keeps only the last (it
     * frees a oneof member another body field replaces, without merging),
     * and the pre-scan counts only the last one's samples. */
    s_buf_t few = { 0 };
    s_str(&few, 1, "r", 1);
    for (n = 0; n < 300; n++)
        s_str(&few, 3, "", 0);
    in = (s_buf_t){ 0 };
    s_str(&in, 1, "r", 1);
    for (n = 0; n < 600; n++)
        s_str(&in, 3, "", 0);
    f = s_envelope(7, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &in);
    s_sub(&f, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &few);
    Parity__Envelope *env = NULL;
    want[0] = '\0';
    ok(pw_wire_unpack(f.d, f.len, 0, &env, NULL, want, sizeof want)
       == PW_WIRE_OK && env->sample_batch->n_samples == 300,
       "600 samples then a batch of 300: the last one wins (%s)", want);
    pw_wire_free(&env);
    free(f.d);
    f = s_envelope(7, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &few);
    s_sub(&f, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &in);
    s_refused("300 samples then a batch of 600", &f, PW_WIRE_ELIMIT,
              "sample_batch: 600 samples (at most 512)");
    free(few.d);
    free(in.d);

    /* 3. One suite of 2 M empty benchmark names: no documented count
     * bounds it on the wire, the budget does (protobuf-c's scan table
     * alone would be 64 MiB). */
    s_buf_t suite = { 0 };
    s_str(&suite, 1, "s", 1);
    while (suite.len + 2 <= PW_WIRE_MAX_FRAME - 32)
        s_str(&suite, 2, "", 0);
    in = (s_buf_t){ 0 };
    s_sub(&in, 5, &suite);
    f = s_envelope(0, PARITY__ENVELOPE__BODY_HELLO, &in);
    s_over_budget("a suite of 2 M empty benchmarks", &f, "hello");
    free(suite.d);
    free(in.d);

    /* 4. 64 arms (the bound) of 32000 empty argv each: small scan tables,
     * many small blocks; the budget stops it part-way. */
    s_buf_t arm = { 0 };
    s_str(&arm, 1, "a", 1);
    for (n = 0; n < 32000; n++)
        s_str(&arm, 3, "", 0);
    in = (s_buf_t){ 0 };
    s_str(&in, 1, "r", 1);
    for (n = 0; n < PW_WIRE_MAX_ARMS; n++)
        s_sub(&in, 5, &arm);
    f = s_envelope(3, PARITY__ENVELOPE__BODY_RUN_START, &in);
    s_over_budget("64 arms of 32000 empty argv", &f, "run_start");
    free(arm.d);
    free(in.d);

    /* 5. 512 samples (the bound) each carrying 2600 unknown fields (field
     * 17, one past Sample's last, a varint 0: three bytes each, so the
     * frame stays within its bound): protobuf-c keeps every one. */
    s_buf_t sample = { 0 };
    for (n = 0; n < 2600; n++) {
        s_tag(&sample, 17, 0);
        s_varint(&sample, 0);
    }
    in = (s_buf_t){ 0 };
    s_str(&in, 1, "r", 1);
    for (n = 0; n < PW_WIRE_MAX_BATCH; n++)
        s_sub(&in, 3, &sample);
    f = s_envelope(4, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &in);
    s_over_budget("512 samples of 2600 unknown fields", &f, "sample_batch");
    free(sample.d);
    free(in.d);
}

/* Pack env, check it fits the frame bound, unpack it: PW_WIRE_OK? */
static void
s_decodes(const char *name, Parity__Envelope *env, size_t min_len)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    char err[256] = "";
    Parity__Envelope *out = NULL;
    int rc = pw_wire_pack_alloc(env, &buf, &len, err, sizeof err);
    ok(rc == PW_WIRE_OK && len >= min_len && len <= PW_WIRE_MAX_FRAME,
       "%s: packs into %zu bytes (%s)", name, len, err);
    rc = pw_wire_unpack(buf, len, 0, &out, NULL, err, sizeof err);
    ok(rc == PW_WIRE_OK && out && out->body_case == env->body_case,
       "%s: decodes (%s %s)", name, pw_wire_err_name(rc), err);
    pw_wire_free(&out);
    free(buf);
}

/* A string of n 'x'. */
static char *
s_text(size_t n)
{
    char *s = malloc(n + 1);
    memset(s, 'x', n);
    s[n] = '\0';
    return s;
}

/* The frame bound less what the rest of a message takes. */
#define S_NEAR_FULL (PW_WIRE_MAX_FRAME - (64u << 10))

static void
s_legal_batch(void)
{
    static Parity__Sample s[PW_WIRE_MAX_BATCH];
    static Parity__Sample *ps[PW_WIRE_MAX_BATCH];
    char *error = s_text(S_NEAR_FULL / PW_WIRE_MAX_BATCH - 64);
    Parity__SampleBatch b = PARITY__SAMPLE_BATCH__INIT;
    Parity__Envelope env;
    for (size_t i = 0; i < PW_WIRE_MAX_BATCH; i++) {
        parity__sample__init(&s[i]);
        s[i].kind = PARITY__SAMPLE_KIND__ERROR;
        s[i].arm = 3;
        s[i].round = (uint32_t)i + 1;
        s[i].position = 2;
        s[i].wall_us = s[i].user_us = s[i].sys_us = 1.5;
        s[i].maxrss_kb = 1 << 20;
        s[i].exit_status = -1;
        s[i].term_signal = 9;
        s[i].cpu = 1;
        s[i].start_unix_us = 1700000000000000;
        s[i].error = error;
        ps[i] = &s[i];
    }
    b.run_id = "run";
    b.samples = ps;
    b.n_samples = PW_WIRE_MAX_BATCH;
    pw_wire_init(&env, 1);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &b);
    s_decodes("512 full samples with 4 MiB of error text", &env,
              S_NEAR_FULL * 9 / 10);
    free(error);
}

/* 256 suites of 256 benchmarks and 256 tags, names of name_len bytes. */
static void
s_legal_hello(const char *name, size_t name_len, size_t min_len)
{
    enum { N = 256 };
    static Parity__SuiteInfo si[N];
    static Parity__SuiteInfo *psi[N];
    static char *bench[N];
    static Parity__Tag tg[N];
    static Parity__Tag *ptg[N];
    char *text = s_text(name_len);
    Parity__Hello h = PARITY__HELLO__INIT;
    Parity__Envelope env;
    for (int i = 0; i < N; i++) {
        bench[i] = text;
        parity__suite_info__init(&si[i]);
        si[i].name = text;
        si[i].benchmarks = bench;
        si[i].n_benchmarks = N;
        psi[i] = &si[i];
        parity__tag__init(&tg[i]);
        tg[i].key = tg[i].value = text;
        ptg[i] = &tg[i];
    }
    h.agent_name = "a";
    h.suites = psi;
    h.n_suites = N;
    h.tags = ptg;
    h.n_tags = N;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_HELLO, &h);
    s_decodes(name, &env, min_len);
    free(text);
}

/* 64 arms of 4096 empty argv (the agent's bounds) and 256 tags; the rest
 * of the frame in version output: the most blocks a legal frame holds. */
static void
s_legal_run_start(void)
{
    static char *argv[4096];
    static Parity__Arm arms[PW_WIRE_MAX_ARMS];
    static Parity__Arm *parms[PW_WIRE_MAX_ARMS];
    static Parity__Tag tg[PW_WIRE_MAX_TAGS];
    static Parity__Tag *ptg[PW_WIRE_MAX_TAGS];
    char *output = s_text((S_NEAR_FULL - PW_WIRE_MAX_ARMS * 4096 * 2)
                          / PW_WIRE_MAX_ARMS);
    Parity__RunStart rs = PARITY__RUN_START__INIT;
    Parity__Envelope env;
    for (size_t i = 0; i < 4096; i++)
        argv[i] = "";
    for (size_t i = 0; i < PW_WIRE_MAX_ARMS; i++) {
        parity__arm__init(&arms[i]);
        arms[i].name = "arm";
        arms[i].argv = argv;
        arms[i].n_argv = 4096;
        arms[i].version_output = output;
        parms[i] = &arms[i];
    }
    for (size_t i = 0; i < PW_WIRE_MAX_TAGS; i++) {
        parity__tag__init(&tg[i]);
        tg[i].key = "k";
        tg[i].value = "";
        ptg[i] = &tg[i];
    }
    rs.run_id = "run";
    rs.arms = parms;
    rs.n_arms = PW_WIRE_MAX_ARMS;
    rs.tags = ptg;
    rs.n_tags = PW_WIRE_MAX_TAGS;
    pw_wire_init(&env, 1);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_RUN_START, &rs);
    s_decodes("64 arms of 4096 argv with 4 MiB of version output", &env,
              S_NEAR_FULL * 9 / 10);
    free(output);
}

static void
s_legal_other(void)
{
    Parity__Envelope env;

    /* 65536 calibration samples, packed (as protobuf-c sends them)... */
    static double wall[PW_WIRE_MAX_CALIBRATION];
    Parity__Calibration c = PARITY__CALIBRATION__INIT;
    for (size_t i = 0; i < PW_WIRE_MAX_CALIBRATION; i++)
        wall[i] = 10.0 + (double)i;
    c.calibration_id = "cal";
    c.wall_us = wall;
    c.n_wall_us = PW_WIRE_MAX_CALIBRATION;
    pw_wire_init(&env, 1);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_CALIBRATION, &c);
    s_decodes("65536 calibration samples, packed", &env, 65536 * 8);

    /* ... and one field each, as another encoder may: 65536 scan
     * entries, and still counted right by the pre-scan. */
    s_buf_t in = { 0 };
    s_str(&in, 1, "cal", 3);
    for (size_t i = 0; i < PW_WIRE_MAX_CALIBRATION; i++) {
        s_tag(&in, 2, 1);
        s_put(&in, &wall[i], 8);
    }
    s_buf_t f = s_envelope(1, PARITY__ENVELOPE__BODY_CALIBRATION, &in);
    Parity__Envelope *out = NULL;
    char err[256] = "";
    int rc = pw_wire_unpack(f.d, f.len, 0, &out, NULL, err, sizeof err);
    ok(rc == PW_WIRE_OK && out->calibration->n_wall_us == 65536
       && out->calibration->wall_us[65535] == 65545.0,
       "65536 calibration samples, unpacked encoding: decode (%s)", err);
    pw_wire_free(&out);
    s_tag(&in, 2, 1);
    s_put(&in, &wall[0], 8);
    free(f.d);
    f = s_envelope(1, PARITY__ENVELOPE__BODY_CALIBRATION, &in);
    ok(pw_wire_unpack(f.d, f.len, 0, &out, NULL, err, sizeof err)
       == PW_WIRE_ELIMIT && out == NULL, "65537 of them: limit");
    ok_str(err, "calibration: 65537 samples (at most 65536)",
           "65537 calibration samples: the pre-scan's text");
    free(f.d);
    free(in.d);

    /* A 4 MiB Reply (a large query answer). */
    char *body = s_text(PW_WIRE_MAX_FRAME - 64);
    Parity__Reply rep = PARITY__REPLY__INIT;
    rep.body_json = body;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_REPLY, &rep);
    s_decodes("a 4 MiB Reply", &env, PW_WIRE_MAX_FRAME - 64);
    free(body);
}

int
main(void)
{
    s_hostile();
    s_legal_batch();
    s_legal_hello("256 suites of 256 benchmarks, 58-byte names", 58,
                  S_NEAR_FULL * 9 / 10);
    s_legal_hello("256 suites of 256 benchmarks, empty names", 0, 0);
    s_legal_run_start();
    s_legal_other();
    return tap_done();
}
