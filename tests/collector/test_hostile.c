/* test_hostile.c -- parity-collector against hostile but authenticated
 * peers, over real CURVE sockets on 127.0.0.1 with its private
 * PostgreSQL: another host's run ids, a stolen name, content the wire
 * bounds let through but the database must never hold (arms that do not
 * exist, times that are not times, environments that are not JSON),
 * incomplete runs. Every refusal is an Error{10, seq} naming the problem,
 * nothing of it is stored, and the collector stays up. After a restart:
 * a ~4 MiB frame of 2 M empty samples is Error 7 with the collector's
 * peak RSS up by less than 64 MiB, and 20 copies of one batch queued
 * behind a busy writer are stored once (dup_dropped).
 *
 *   test-hostile PATH/TO/parity-collector
 */
#include <libpq-fe.h>
#include <math.h>

#include <jansson.h>

#include "co_client.h"
#include "tap.h"

static PGconn *s_pg;

static long
s_sql_long(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static long
s_sql_long(const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(s_pg, sql);
    long v = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        v = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    else
        tap_diag("sql %s: %s", sql, PQerrorMessage(s_pg));
    PQclear(r);
    return v;
}

/* The answer to data message seq: 1 Ack, 0 silence, -1 Error (its
 * message copied to msg, its code to *code). */
static int
s_answer(void *s, uint64_t seq, int timeout_ms, char *msg, size_t len,
         unsigned *code)
{
    int64_t until = cc_now_ms() + timeout_ms;
    if (msg && len)
        msg[0] = '\0';
    for (;;) {
        int64_t left = until - cc_now_ms();
        if (left <= 0)
            return 0;
        Parity__Envelope *e = cc_recv(s, (int)left);
        if (!e)
            return 0;
        int rc = 2;
        if (e->body_case == PARITY__ENVELOPE__BODY_ACK && e->ack->seq == seq)
            rc = 1;
        else if (e->body_case == PARITY__ENVELOPE__BODY_ERROR
                 && e->error->seq == seq) {
            rc = -1;
            if (msg && len)
                snprintf(msg, len, "%s", e->error->message);
            if (code)
                *code = e->error->code;
        }
        pw_wire_free(&e);
        if (rc != 2)
            return rc;
    }
}

/* Refused with Error{code} whose message contains want. */
static bool
s_refused(void *s, uint64_t seq, unsigned code, const char *want)
{
    char msg[512];
    unsigned got = 0;
    int rc = s_answer(s, seq, 5000, msg, sizeof msg, &got);
    if (rc != -1 || got != code || !strstr(msg, want)) {
        tap_diag("seq %" PRIu64 ": answer %d code %u message \"%s\" (want "
                 "code %u \"%s\")", seq, rc, got, msg, code, want);
        return false;
    }
    return true;
}

/* Packed by protobuf-c itself, not pw_wire_pack: a hostile peer does not
 * keep to the bounds pw_wire_pack enforces. */
static int
s_send_body(void *s, uint64_t seq, Parity__Envelope__BodyCase kind,
            void *body)
{
    Parity__Envelope env;
    pw_wire_init(&env, seq);
    pw_wire_set_body(&env, kind, body);
    size_t len = parity__envelope__get_packed_size(&env);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return -1;
    parity__envelope__pack(&env, buf);
    int rc = cc_send_raw(s, buf, len);
    free(buf);
    return rc;
}

#define MAX_ARMS 70
static Parity__Arm s_arm[MAX_ARMS];
static Parity__Arm *s_arms[MAX_ARMS];
static char s_arm_name[MAX_ARMS][24];  /* "a" and any size_t */

/* A RunStart with n arms named a0, a1 ... (arm 0 the subject). */
static int
s_run_start(void *s, uint64_t seq, const char *run, const char *bench,
            size_t n, const char *env_json)
{
    Parity__RunStart rs = PARITY__RUN_START__INIT;
    for (size_t i = 0; i < n; i++) {
        parity__arm__init(&s_arm[i]);
        snprintf(s_arm_name[i], sizeof s_arm_name[i], "a%zu", i);
        s_arm[i].name = s_arm_name[i];
        s_arm[i].subject = i == 0;
        s_arm[i].shell = "true";
        s_arms[i] = &s_arm[i];
    }
    rs.run_id = (char *)run;
    rs.suite = "hostile";
    rs.benchmark = (char *)bench;
    rs.n_arms = n;
    rs.arms = s_arms;
    rs.runs = 3;
    rs.started_at_us = cc_unix_us();
    rs.environment_json = (char *)env_json;
    return s_send_body(s, seq, PARITY__ENVELOPE__BODY_RUN_START, &rs);
}

static Parity__Sample s_smp[16];
static Parity__Sample *s_psmp[16];

/* A batch of n MEASURED samples alternating arms 0 and 1; sample `bad`
 * (n or more: none) gets arm bad_arm, kind bad_kind and wall bad_wall. */
static int
s_batch(void *s, uint64_t seq, const char *run, unsigned batch_seq, size_t n,
        size_t bad, unsigned bad_arm, int bad_kind, double bad_wall)
{
    Parity__SampleBatch b = PARITY__SAMPLE_BATCH__INIT;
    for (size_t i = 0; i < n; i++) {
        parity__sample__init(&s_smp[i]);
        s_smp[i].arm = (unsigned)(i % 2);
        s_smp[i].round = (unsigned)(i / 2);
        s_smp[i].position = (unsigned)(i % 2);
        s_smp[i].wall_us = 1000.0 + (double)i;
        s_smp[i].cpu = -1;
        if (i == bad) {
            s_smp[i].arm = bad_arm;
            s_smp[i].kind = (Parity__SampleKind)bad_kind;
            s_smp[i].wall_us = bad_wall;
        }
        s_psmp[i] = &s_smp[i];
    }
    b.run_id = (char *)run;
    b.batch_seq = batch_seq;
    b.n_samples = n;
    b.samples = s_psmp;
    return s_send_body(s, seq, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &b);
}

static int
s_run_end(void *s, uint64_t seq, const char *run, unsigned batches,
          uint64_t samples)
{
    Parity__RunEnd re = PARITY__RUN_END__INIT;
    re.run_id = (char *)run;
    re.batches = batches;
    re.samples = samples;
    re.ended_at_us = cc_unix_us();
    return s_send_body(s, seq, PARITY__ENVELOPE__BODY_RUN_END, &re);
}

static int
s_calibration(void *s, uint64_t seq, const char *id, size_t n)
{
    static double w[70000];
    Parity__Calibration c = PARITY__CALIBRATION__INIT;
    for (size_t i = 0; i < n; i++)
        w[i] = 500.0 + (double)(i % 40);
    c.calibration_id = (char *)id;
    c.n_wall_us = n;
    c.wall_us = w;
    c.taken_at_us = cc_unix_us();
    return s_send_body(s, seq, PARITY__ENVELOPE__BODY_CALIBRATION, &c);
}

static int
s_hello_env(void *s, const char *name, const char *env_json)
{
    Parity__Hello h = PARITY__HELLO__INIT;
    h.agent_name = (char *)name;
    h.agent_version = "test";
    h.environment_json = (char *)env_json;
    return s_send_body(s, 0, PARITY__ENVELOPE__BODY_HELLO, &h);
}

/* Refused with Error{code} whose message is exactly want. */
static bool
s_refused_exactly(void *s, uint64_t seq, unsigned code, const char *want)
{
    char msg[1024];
    unsigned got = 0;
    int rc = s_answer(s, seq, 5000, msg, sizeof msg, &got);
    if (rc != -1 || got != code || strcmp(msg, want) != 0) {
        tap_diag("seq %" PRIu64 ": answer %d code %u message \"%s\" (want "
                 "code %u \"%s\")", seq, rc, got, msg, code, want);
        return false;
    }
    return true;
}

/* A RunStart of run without arms: the collector refuses it (Error 10). */
static int
s_run_start_no_arms(void *s, uint64_t seq, const char *run)
{
    Parity__RunStart rs = PARITY__RUN_START__INIT;
    rs.run_id = (char *)run;
    rs.suite = "hostile";
    rs.benchmark = "dep";
    rs.started_at_us = cc_unix_us();
    return s_send_body(s, seq, PARITY__ENVELOPE__BODY_RUN_START, &rs);
}

#define S_DEP_NO_ARMS(run) \
    "depends on run_start " run ", which was refused: run_start " run \
    ": no arms"

/* A message that depends on one refused for good (a batch or
 * RunEnd of a refused RunStart, a RunEnd counting a refused batch) is
 * answered with Error 14 naming that message, not with silence: an agent
 * following docs/protocol.md section 5 would resend it forever. sa is
 * host A, sb host B; *seqp is A's last seq. */
static void
s_dependency_checks(void *sa, void *sb, uint64_t *seqp)
{
    uint64_t seq = *seqp;
    long dep0 = cc_stat(sa, "bad_dependency");
    long refused0 = cc_stat(sa, "refused");

    ok(s_run_start_no_arms(sa, ++seq, "run-dep") == 0
       && s_refused_exactly(sa, seq, 10, "run_start run-dep: no arms"),
       "dependency: RunStart run-dep without arms: Error 10");
    ok(s_batch(sa, ++seq, "run-dep", 0, 4, 99, 0, 0, 0) == 0
       && s_refused_exactly(sa, seq, 14, "batch run-dep/0 "
                            S_DEP_NO_ARMS("run-dep")),
       "a batch of the refused run: Error 14 \"batch run-dep/0 depends on "
       "run_start run-dep, which was refused: run_start run-dep: no arms\"");
    ok(s_run_end(sa, ++seq, "run-dep", 1, 4) == 0
       && s_refused_exactly(sa, seq, 14, "run_end run-dep "
                            S_DEP_NO_ARMS("run-dep")),
       "its RunEnd: Error 14 \"run_end run-dep depends on run_start "
       "run-dep, ...\"");

    /* As an agent sends them: RunStart, batches and RunEnd back to back,
     * before the refusal arrives (one burst of the writer). */
    uint64_t rs = ++seq, b0 = ++seq, b1 = ++seq, re = ++seq;
    int sent = s_run_start_no_arms(sa, rs, "run-dep2")
               + s_batch(sa, b0, "run-dep2", 0, 4, 99, 0, 0, 0)
               + s_batch(sa, b1, "run-dep2", 1, 4, 99, 0, 0, 0)
               + s_run_end(sa, re, "run-dep2", 2, 8);
    ok(sent == 0 && s_refused_exactly(sa, rs, 10, "run_start run-dep2: no "
                                      "arms")
       && s_refused_exactly(sa, b0, 14, "batch run-dep2/0 "
                            S_DEP_NO_ARMS("run-dep2"))
       && s_refused_exactly(sa, b1, 14, "batch run-dep2/1 "
                            S_DEP_NO_ARMS("run-dep2"))
       && s_refused_exactly(sa, re, 14, "run_end run-dep2 "
                            S_DEP_NO_ARMS("run-dep2")),
       "sent back to back: Error 10 for the RunStart, then Error 14 for "
       "each batch and the RunEnd, in order");

    /* A RunEnd that counts a refused batch. */
    ok(s_run_start(sa, ++seq, "run-gap", "dep", 2, "") == 0
       && s_answer(sa, seq, 5000, NULL, 0, NULL) == 1
       && s_batch(sa, ++seq, "run-gap", 0, 4, 99, 0, 0, 0) == 0
       && s_answer(sa, seq, 5000, NULL, 0, NULL) == 1
       && s_batch(sa, ++seq, "run-gap", 1, 4, 1, 7, 0, 1000.0) == 0
       && s_refused_exactly(sa, seq, 10, "batch run-gap/1: sample 1 names "
                            "arm 7 (the run has 2 arms)")
       && s_batch(sa, ++seq, "run-gap", 2, 4, 99, 0, 0, 0) == 0
       && s_answer(sa, seq, 5000, NULL, 0, NULL) == 1,
       "run-gap: batches 0 and 2 acked, batch 1 refused (arm 7)");
    ok(s_run_end(sa, ++seq, "run-gap", 3, 12) == 0
       && s_refused_exactly(sa, seq, 14, "run_end run-gap counts batch 1, "
                            "which was refused: batch run-gap/1: sample 1 "
                            "names arm 7 (the run has 2 arms)"),
       "a RunEnd counting the refused batch 1: Error 14 \"run_end run-gap "
       "counts batch 1, which was refused: batch run-gap/1: sample 1 names "
       "arm 7 (the run has 2 arms)\"");
    ok(s_run_end(sa, ++seq, "run-gap", 4, 16) == 0
       && s_refused(sa, seq, 14, "counts batch 1,"),
       "one counting batches 1 (refused) and 3 (never sent): Error 14 all "
       "the same");
    ok(s_run_end(sa, ++seq, "run-gap", 1, 4) == 0
       && s_answer(sa, seq, 5000, NULL, 0, NULL) == 1,
       "a RunEnd that counts only batch 0 is acked");
    ok(s_sql_long("SELECT count(*) FROM runs WHERE run_uuid LIKE 'run-dep%%'")
       == 0 && s_sql_long("SELECT count(*) FROM batches b JOIN runs r ON "
                          "r.id = b.run WHERE r.run_uuid = 'run-gap'") == 2,
       "nothing of the refused runs is stored; run-gap holds batches 0, 2");
    ok(cc_stat(sa, "bad_dependency") == dep0 + 7
       && cc_stat(sa, "refused") == refused0 + 3,
       "bad_dependency +7, refused +3 (the RunStarts and the batch)");
    ok(s_sql_long("SELECT count(*) FROM refusals WHERE run_uuid = 'run-a' "
                  "AND batch_seq = -1") == 0,
       "B's RunStart of A's run is not remembered as a refusal (runs "
       "says whose it is)");

    /* Refusals are per host: B never sent run-dep, so for B a batch of it
     * waits for a RunStart like any other. */
    ok(cc_hello(sb, "alpha") == 0 && cc_wait_ack(sb, 0, 5000),
       "host B says Hello again (it was silent meanwhile)");
    long deferred0 = cc_stat(sb, "deferred");
    char msg[512];
    int ans = s_batch(sb, 77, "run-dep", 0, 4, 99, 0, 0, 0) == 0
              ? s_answer(sb, 77, 1500, msg, sizeof msg, NULL) : 2;
    long deferred = cc_stat(sb, "deferred");
    ok(ans == 0 && deferred > deferred0,
       "host B's batch of run-dep (A's refused run): silence (%d \"%s\"), "
       "deferred %ld -> %ld", ans, msg, deferred0, deferred);
    *seqp = seq;
}

/* A batch the database would refuse is refused before it sees
 * it, and the Error names the first bad sample (index, field, why) or the
 * batch's own field, never PostgreSQL's statement or schema. run is one
 * of A's stored runs (2 arms); *seqp is A's last seq. */
static void
s_batch_text_checks(void *sa, const char *run, uint64_t *seqp)
{
    uint64_t seq = *seqp;
    char want[256], msg[1024];
    unsigned code = 0;

    /* An error text that is not UTF-8 (a program's stderr, cut). */
    Parity__SampleBatch b = PARITY__SAMPLE_BATCH__INIT;
    for (size_t i = 0; i < 3; i++) {
        parity__sample__init(&s_smp[i]);
        s_smp[i].arm = (unsigned)(i % 2);
        s_smp[i].wall_us = 100.0;
        s_psmp[i] = &s_smp[i];
    }
    s_smp[2].kind = PARITY__SAMPLE_KIND__ERROR;
    s_smp[2].error = "exit status 1: caf\xc3";
    b.run_id = (char *)run;
    b.batch_seq = 40;
    b.n_samples = 3;
    b.samples = s_psmp;
    snprintf(want, sizeof want, "batch %s/40: sample 2 has an error that is "
             "not UTF-8 (byte 18)", run);
    ok(s_send_body(sa, ++seq, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &b) == 0
       && s_refused_exactly(sa, seq, 10, want),
       "an ERROR sample whose error text is not UTF-8: Error 10 \"%s\"",
       want);

    /* A batch_seq the database's integer cannot hold. */
    snprintf(want, sizeof want, "batch %s/3000000000: batch_seq is above "
             "2147483647", run);
    ok(s_batch(sa, ++seq, run, 3000000000u, 2, 99, 0, 0, 0) == 0
       && s_refused_exactly(sa, seq, 10, want),
       "batch_seq 3000000000: Error 10 \"%s\"", want);

    /* Round and position are named apart. */
    s_smp[2].kind = PARITY__SAMPLE_KIND__MEASURED;
    s_smp[2].error = "";
    s_smp[1].position = 2147483648u;
    b.batch_seq = 41;
    snprintf(want, sizeof want, "batch %s/41: sample 1 has a position above "
             "2147483647", run);
    ok(s_send_body(sa, ++seq, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &b) == 0
       && s_refused_exactly(sa, seq, 10, want),
       "a position above INT32_MAX: Error 10 \"%s\"", want);
    s_smp[1].position = 0;
    s_smp[1].user_us = -1.0;
    snprintf(want, sizeof want, "batch %s/41: sample 1 has a negative "
             "user_us", run);
    ok(s_send_body(sa, ++seq, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &b) == 0
       && s_refused_exactly(sa, seq, 10, want),
       "a negative user_us: Error 10 \"%s\"", want);
    s_smp[1].user_us = 0;
    s_smp[0].cycles = -5;
    snprintf(want, sizeof want, "batch %s/41: sample 0 has a negative "
             "cycles", run);
    ok(s_send_body(sa, ++seq, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &b) == 0
       && s_refused_exactly(sa, seq, 10, want),
       "a negative counter: Error 10 \"%s\"", want);
    s_smp[0].cycles = 0;

    /* A run_id that is not UTF-8, in a burst with a good batch: refused
     * alone, the other stored. */
    uint64_t bad = ++seq, good = ++seq;
    int sent = s_batch(sa, bad, "run-\xff\xfe", 0, 2, 99, 0, 0, 0)
               + s_batch(sa, good, run, 42, 2, 99, 0, 0, 0);
    ok(sent == 0 && s_refused_exactly(sa, bad, 10, "sample_batch: run_id is "
                                      "not UTF-8")
       && s_answer(sa, good, 5000, NULL, 0, NULL) == 1,
       "a run_id that is not UTF-8: Error 10 \"sample_batch: run_id is not "
       "UTF-8\"; the good batch after it in the burst is acked");

    /* The same in a burst behind a RunStart: before, the run_id reached
     * PostgreSQL, its look-up failed outside any savepoint, the burst's
     * COMMIT became a ROLLBACK, and the RunStart was acked but not
     * stored. */
    uint64_t rs = ++seq;
    bad = ++seq;
    sent = s_run_start(sa, rs, "run-burst", "burst", 2, "")
           + s_batch(sa, bad, "run-\xff", 0, 2, 99, 0, 0, 0);
    /* The frame that does not decode is answered at once, the RunStart
     * after its COMMIT: either may come first. */
    int ans_rs = 0, ans_bad = 0;
    for (int64_t until = cc_now_ms() + 5000;
         (!ans_rs || !ans_bad) && cc_now_ms() < until;) {
        Parity__Envelope *e = cc_recv(sa, 500);
        if (e && e->body_case == PARITY__ENVELOPE__BODY_ACK
            && e->ack->seq == rs)
            ans_rs = 1;
        if (e && e->body_case == PARITY__ENVELOPE__BODY_ERROR
            && e->error->seq == bad) {
            ans_bad = e->error->code == 10 && strcmp(e->error->message,
                "sample_batch: run_id is not UTF-8") == 0 ? 1 : -1;
            if (ans_bad < 0)
                tap_diag("Error %u \"%s\"", e->error->code,
                         e->error->message);
        }
        pw_wire_free(&e);
    }
    ok(sent == 0 && ans_rs == 1 && ans_bad == 1
       && s_sql_long("SELECT count(*) FROM runs WHERE run_uuid = "
                     "'run-burst'") == 1,
       "a RunStart and a batch whose run_id is not UTF-8 in one burst: the "
       "RunStart is acked and stored, the batch refused");
    long dup0 = cc_stat(sa, "duplicates");
    int rc = s_batch(sa, ++seq, run, 42, 2, 99, 0, 0, 0) == 0
             ? s_answer(sa, seq, 5000, msg, sizeof msg, &code) : 0;
    ok(rc == 1 && cc_stat(sa, "duplicates") == dup0 + 1,
       "a copy of batch 42 is acked as a duplicate");
    *seqp = seq;
}

/* The collector's peak resident set (VmHWM) in KiB, -1 when unreadable. */
static long
s_vmhwm_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static size_t
s_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

/* An Envelope{version 1, seq, sample_batch{run_id, n empty samples}}
 * written byte by byte (no encoder would make it): field 14 of the
 * Envelope, and `1a 00` (field 3, samples, length 0) n times. Caller
 * frees; *len is its size. */
static uint8_t *
s_empty_samples_frame(uint64_t seq, const char *run, size_t n, size_t *len)
{
    size_t rl = strlen(run), body = 2 + rl + 2 * n;
    uint8_t *f = malloc(body + 32), *p = f;
    if (!f)
        return NULL;
    *p++ = 0x08;                       /* version = 1 */
    *p++ = 0x01;
    *p++ = 0x10;                       /* seq */
    p += s_varint(p, seq);
    *p++ = 0x72;                       /* sample_batch = 14, bytes */
    p += s_varint(p, body);
    *p++ = 0x0a;                       /* run_id = 1 */
    *p++ = (uint8_t)rl;
    memcpy(p, run, rl);
    p += rl;
    for (size_t i = 0; i < n; i++) {
        *p++ = 0x1a;                   /* samples = 3, empty */
        *p++ = 0x00;
    }
    *len = (size_t)(p - f);
    return f;
}

/* The threaded collector under a frame that would cost hundreds
 * of MiB decoded, and under an agent's resends of one frame while the
 * writer is busy (a fresh collector: its VmHWM is a clean baseline). */
static void
s_threads_checks(cc_collector_t *col, zcert_t *cert)
{
    void *ctx = zmq_ctx_new();
    void *s = cc_dealer(ctx, col->endpoint, cert, col->public_key);
    uint64_t seq = 1000;
    char msg[512];
    unsigned code = 0;

    ok(cc_hello(s, "alpha") == 0 && cc_wait_ack(s, 0, 5000)
       && s_run_start(s, ++seq, "run-t", "threads", 2, "") == 0
       && s_answer(s, seq, 5000, NULL, 0, NULL) == 1,
       "threads: Hello and RunStart run-t acked");

    /* ~4 MiB of 2,000,000 empty samples: decoded they would be 2 M
     * Parity__Sample structs (~250 MiB). Counted on the wire first
     * (docs/protocol.md section 7): Error 7, within the memory budget. */
    size_t len = 0;
    uint8_t *frame = s_empty_samples_frame(++seq, "run-t", 2000000, &len);
    long limit0 = cc_stat(s, "bad_limit");
    long batches0 = s_sql_long("SELECT count(*) FROM batches");
    long hwm0 = s_vmhwm_kb(col->pid);
    ok(frame && len > (3u << 20) + (3u << 18) && len < PW_WIRE_MAX_FRAME,
       "the frame of empty samples is %zu bytes (~4 MiB, under the 4 MiB "
       "bound)", len);
    int64_t t0 = cc_now_ms();
    int rc = frame ? cc_send_raw(s, frame, len) : -1;
    free(frame);
    int ans = rc == 0 ? s_answer(s, seq, 10000, msg, sizeof msg, &code) : 0;
    ok(ans == -1 && code == 7
       && strcmp(msg, "sample_batch: 2000000 samples (at most 512)") == 0,
       "2 M empty samples: Error 7 \"sample_batch: 2000000 samples (at "
       "most 512)\" after %" PRId64 " ms (answer %d code %u \"%s\")",
       cc_now_ms() - t0, ans, code, msg);
    long hwm1 = s_vmhwm_kb(col->pid);
    ok(hwm0 > 0 && hwm1 >= hwm0 && hwm1 - hwm0 < 64 * 1024,
       "the collector's VmHWM grew by %ld KiB (< 64 MiB; %ld -> %ld)",
       hwm1 - hwm0, hwm0, hwm1);
    ok(cc_stat(s, "bad_limit") == limit0 + 1
       && s_sql_long("SELECT count(*) FROM batches") == batches0,
       "bad_limit +1, no batch stored");
    Parity__Envelope *e = cc_request(s, 9001, "ping", 3000);
    ok(e && e->reply->status == 0, "and the collector still answers ping");
    pw_wire_free(&e);

    /* Resends: one SampleBatch sent 20 times back to back behind a
     * Calibration of 65,536 samples (the writer is busy storing it).
     * Each copy is either dropped while its first copy waits
     * (dup_dropped) or acked again once stored (duplicates); one row. */
    long dd0 = cc_stat(s, "dup_dropped"), dup0 = cc_stat(s, "duplicates");
    uint64_t cal = ++seq, data = ++seq;
    ok(s_calibration(s, cal, "cal-busy", 65536) == 0,
       "a Calibration of 65536 samples sent");
    int sent = 0;
    for (int i = 0; i < 20; i++)
        sent += s_batch(s, data, "run-t", 0, 8, 99, 0, 0, 0) == 0;
    int acks = 0, cal_acked = 0;
    /* Until both are acked (storing 65,536 samples took over 2 s under
     * TSan once), then until 2 s pass without a message (the acks of
     * duplicates); 60 s at most. */
    int64_t give_up = cc_now_ms() + 60000;
    for (;;) {
        bool both = cal_acked && acks;
        Parity__Envelope *in = cc_recv(s, both ? 2000 : 500);
        if (!in && (both || cc_now_ms() > give_up))
            break;
        if (!in)
            continue;
        if (in->body_case == PARITY__ENVELOPE__BODY_ACK) {
            acks += in->ack->seq == data;
            cal_acked += in->ack->seq == cal;
        }
        pw_wire_free(&in);
    }
    long dd = cc_stat(s, "dup_dropped") - dd0;
    long dup = cc_stat(s, "duplicates") - dup0;
    ok(sent == 20 && cal_acked == 1 && acks >= 1,
       "20 copies sent; the Calibration and the batch acked (%d acks of "
       "the batch)", acks);
    ok(dd >= 1 && dd + dup == 19 && acks == 1 + dup,
       "19 resends: dup_dropped +%ld (>= 1) and duplicates +%ld, one Ack "
       "each for the first copy and the duplicates (%d)", dd, dup, acks);
    ok(s_sql_long("SELECT count(*) FROM batches b JOIN runs r ON r.id = "
                  "b.run WHERE r.run_uuid = 'run-t'") == 1
       && s_sql_long("SELECT count(*) FROM samples s JOIN runs r ON r.id = "
                     "s.run WHERE r.run_uuid = 'run-t'") == 8,
       "exactly one batch row of run-t, with its 8 samples");
    zmq_close(s);
    zmq_ctx_term(ctx);
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-hostile PATH/TO/parity-collector\n");
        return 2;
    }
    cc_files_t fx;
    char logp[160];
    cc_collector_t col;

    if (cc_files_make(&fx, "/tmp/parity-hostile-XXXXXX") != 0)
        return 1;
    snprintf(logp, sizeof logp, "%s", fx.log);
    zcert_t *a = zcert_new(), *b = zcert_new(), *c = zcert_new();
    cc_files_allow(&fx, "a", a);
    cc_files_allow(&fx, "b", b);
    cc_files_allow(&fx, "c", c);
    char *cargv[] = { argv[1], "--bind", "tcp://127.0.0.1:0", "--key",
                      fx.key, "--allow", fx.allow, "--data-dir", fx.datadir,
                      "--heartbeat-ms", "500", NULL };
    if (!ok(cc_collector_start(&col, cargv, logp, 60000) == 0,
            "collector starts")) {
        printf("Bail out! collector did not start\n");
        return 1;
    }
    s_pg = PQconnectdb(fx.conninfo);
    void *ctx = zmq_ctx_new();
    void *sa = cc_dealer(ctx, col.endpoint, a, col.public_key);
    void *sb = cc_dealer(ctx, col.endpoint, b, col.public_key);
    uint64_t seq = 0;
    char msg[512];

    /* ---- identity is the key ----------------------------------------- */
    ok(cc_hello(sa, "alpha") == 0 && cc_wait_ack(sa, 0, 5000)
       && cc_hello(sb, "alpha") == 0 && cc_wait_ack(sb, 0, 5000),
       "two keys both claiming the name alpha are both greeted");
    ok(s_sql_long("SELECT count(DISTINCT public_key) FROM hosts WHERE name "
                  "= 'alpha'") == 2
       && s_sql_long("SELECT count(*) FROM hosts WHERE public_key = '%s'",
                     zcert_public_txt(a)) == 1,
       "a name is a claim: two hosts, each keyed by its own public key");
    ok(s_run_start(sa, ++seq, "run-a", "bench", 2, "{\"os\":\"a\"}") == 0
       && s_answer(sa, seq, 5000, NULL, 0, NULL) == 1, "A's RunStart acked");
    long refused0 = cc_stat(sa, "refused");
    ok(s_run_start(sb, ++seq, "run-a", "stolen", 2, "") == 0
       && s_refused(sb, seq, 10, "run run-a belongs to another host"),
       "B replaying A's run id: Error 10 \"belongs to another host\"");
    ok(s_batch(sb, ++seq, "run-a", 0, 4, 99, 0, 0, 0) == 0
       && s_refused(sb, seq, 10, "belongs to another host")
       && s_run_end(sb, ++seq, "run-a", 0, 0) == 0
       && s_refused(sb, seq, 10, "belongs to another host"),
       "B's SampleBatch and RunEnd for A's run: refused the same way");
    ok(s_sql_long("SELECT count(*) FROM runs r JOIN hosts h ON h.id = "
                  "r.host_id JOIN benchmarks b ON b.id = r.benchmark_id "
                  "WHERE run_uuid = 'run-a' AND h.public_key = '%s' AND "
                  "b.name = 'bench' AND r.status IS NULL",
                  zcert_public_txt(a)) == 1
       && s_sql_long("SELECT count(*) FROM batches") == 0,
       "A's run is untouched: its host, benchmark, no batch, not ended");
    ok(cc_stat(sa, "refused") == refused0 + 3, "refused counter +3");
    long dup0 = cc_stat(sa, "duplicates");
    ok(s_run_start(sa, ++seq, "run-a", "other-content", 3, "") == 0
       && s_answer(sa, seq, 5000, NULL, 0, NULL) == 1
       && cc_stat(sa, "duplicates") == dup0 + 1
       && s_sql_long("SELECT count(*) FROM arms a JOIN runs r ON r.id = "
                     "a.run WHERE run_uuid = 'run-a'") == 2
       && s_sql_long("SELECT count(*) FROM benchmarks WHERE name = "
                     "'other-content'") == 0,
       "the same run id with other content: acked as a duplicate, the "
       "first copy wins (2 arms, its benchmark)");

    /* ---- RunStart content ------------------------------------------- */
    long limit0 = cc_stat(sa, "bad_limit");
    ok(s_run_start(sa, ++seq, "run-65", "b", 65, "") == 0
       && s_refused(sa, seq, 7, "65 arms")
       && cc_stat(sa, "bad_limit") == limit0 + 1,
       "RunStart with 65 arms: Error 7, bad_limit +1");
    s_arm_name[1][0] = '\0';
    {
        Parity__RunStart rs = PARITY__RUN_START__INIT;
        parity__arm__init(&s_arm[0]);
        parity__arm__init(&s_arm[1]);
        s_arm[0].name = "x";
        s_arm[1].name = "";
        s_arms[0] = &s_arm[0];
        s_arms[1] = &s_arm[1];
        rs.run_id = "run-noname";
        rs.n_arms = 2;
        rs.arms = s_arms;
        ok(s_send_body(sa, ++seq, PARITY__ENVELOPE__BODY_RUN_START, &rs) == 0
           && s_refused(sa, seq, 10, "run_start run-noname: arm 1 has no "
                        "name"), "an arm without a name: Error 10");
        s_arm[1].name = "x";
        rs.run_id = "run-twice";
        ok(s_send_body(sa, ++seq, PARITY__ENVELOPE__BODY_RUN_START, &rs) == 0
           && s_refused(sa, seq, 10, "run_start run-twice: arms 0 and 1 are "
                        "both named \"x\""),
           "two arms with the same name: Error 10");
        /* Metrics (docs/suites.md "Metrics"): known names, each once. */
        s_arm[1].name = "y";
        char *bad[] = { "wall", "rss" }, *twice[] = { "cpu", "cpu" };
        char *four[] = { "wall", "cpu", "peak_rss", "wall" };
        rs.run_id = "run-rss";
        rs.metrics = bad;
        rs.n_metrics = 2;
        ok(s_send_body(sa, ++seq, PARITY__ENVELOPE__BODY_RUN_START, &rs) == 0
           && s_refused(sa, seq, 10, "run_start run-rss: unknown metric "
                        "\"rss\" (want wall, cpu or peak_rss)"),
           "an unknown metric: Error 10");
        rs.run_id = "run-cpu2";
        rs.metrics = twice;
        ok(s_send_body(sa, ++seq, PARITY__ENVELOPE__BODY_RUN_START, &rs) == 0
           && s_refused(sa, seq, 10, "run_start run-cpu2: metric cpu given "
                        "twice"), "a metric twice: Error 10");
        rs.run_id = "run-m4";
        rs.metrics = four;
        rs.n_metrics = 4;
        ok(s_send_body(sa, ++seq, PARITY__ENVELOPE__BODY_RUN_START, &rs) == 0
           && s_refused(sa, seq, 10, "run_start run-m4: 4 metrics (at most "
                        "3)"), "four metrics: Error 10");
        rs.metrics = NULL;
        rs.n_metrics = 0;
        rs.run_id = "run-noarms";
        rs.n_arms = 0;
        ok(s_send_body(sa, ++seq, PARITY__ENVELOPE__BODY_RUN_START, &rs) == 0
           && s_refused(sa, seq, 10, "run_start run-noarms: no arms"),
           "no arms at all: Error 10");
    }
    ok(s_run_start(sa, ++seq, "run-env", "b", 2, "not json {") == 0
       && s_refused(sa, seq, 10, "run_start: environment_json is not a JSON "
                    "object"), "an environment that is not JSON: Error 10");
    {
        size_t big = 3u << 20;
        char *huge = malloc(big + 1);
        memset(huge, 'x', big);
        huge[big] = '\0';
        ok(s_run_start(sa, ++seq, "run-huge", "b", 2, huge) == 0
           && s_refused(sa, seq, 10, "environment_json is not a JSON object"),
           "3 MiB of text as environment: Error 10");
        free(huge);
    }
    ok(s_run_start(sa, ++seq, "run-arr", "b", 2, "[1,2]") == 0
       && s_refused(sa, seq, 10, "is not a JSON object (another JSON value)"),
       "an environment that is a JSON array: Error 10");
    ok(s_sql_long("SELECT count(*) FROM runs WHERE run_uuid <> 'run-a'") == 0
       && s_sql_long("SELECT count(*) FROM environments WHERE "
                     "environment_json NOT LIKE '{%%'") == 0,
       "none of the refused runs or environments is stored");

    /* ---- SampleBatch content ----------------------------------------- */
    ok(s_batch(sa, ++seq, "run-a", 0, 4, 2, 999, 0, 1000.0) == 0
       && s_refused(sa, seq, 10, "batch run-a/0: sample 2 names arm 999 (the "
                    "run has 2 arms)"), "a sample of arm 999: Error 10");
    ok(s_batch(sa, ++seq, "run-a", 0, 4, 1, 1, 0, NAN) == 0
       && s_refused_exactly(sa, seq, 10, "batch run-a/0: sample 1 has a "
                            "wall_us that is not finite")
       && s_batch(sa, ++seq, "run-a", 0, 4, 1, 1, 0, INFINITY) == 0
       && s_refused(sa, seq, 10, "not finite"),
       "NaN and infinite wall_us: Error 10");
    ok(s_batch(sa, ++seq, "run-a", 0, 4, 3, 1, 0, -5.0) == 0
       && s_refused_exactly(sa, seq, 10, "batch run-a/0: sample 3 has a "
                            "negative wall_us"),
       "a negative wall_us: Error 10 naming sample and field");
    ok(s_batch(sa, ++seq, "run-a", 0, 4, 0, 0, 9, 1000.0) == 0
       && s_refused(sa, seq, 10, "batch run-a/0: sample 0 has unknown kind "
                    "9"), "a sample kind this version does not know: "
       "Error 10");
    ok(s_batch(sa, ++seq, "run-a", 0, 4, 0, 999, PARITY__SAMPLE_KIND__CALIBRATION,
               500.0) == 0 && s_answer(sa, seq, 5000, NULL, 0, NULL) == 1,
       "a CALIBRATION sample's arm is meaningless: any is stored");
    ok(s_sql_long("SELECT count(*) FROM batches") == 1
       && s_sql_long("SELECT count(*) FROM samples") == 4,
       "only the good batch is stored (1 batch, 4 samples)");

    /* The same checks when batches arrive together (one transaction for
     * the group, the bad one alone refused). */
    {
        uint64_t first = seq + 1;
        s_batch(sa, ++seq, "run-a", 1, 4, 99, 0, 0, 0);
        uint64_t bad = ++seq;
        s_batch(sa, bad, "run-a", 2, 4, 1, 7, 0, 1000.0);
        s_batch(sa, ++seq, "run-a", 3, 4, 99, 0, 0, 0);
        int r1 = s_answer(sa, first, 5000, NULL, 0, NULL);
        ok(r1 == 1 && s_refused(sa, bad, 10, "names arm 7")
           && s_answer(sa, seq, 5000, NULL, 0, NULL) == 1,
           "three batches in a burst: the one with arm 7 refused, the "
           "others acked");
    }

    /* ---- RunEnd before its batches ------------------------------------ */
    uint64_t end = ++seq;
    ok(s_run_end(sa, end, "run-a", 6, 24) == 0
       && s_refused(sa, end, 14, "run_end run-a counts batch 2, which was "
                    "refused: batch run-a/2: sample 1 names arm 7")
       && s_sql_long("SELECT count(*) FROM runs WHERE status IS NULL AND "
                     "run_uuid = 'run-a'") == 1,
       "RunEnd claiming 6 batches with 0, 1, 3 stored (2 refused, 4, 5 "
       "never sent): Error 14 naming batch 2, run not ended");
    long deferred0 = cc_stat(sa, "deferred");
    ok(s_batch(sa, ++seq, "run-a", 2, 4, 99, 0, 0, 0) == 0
       && s_answer(sa, seq, 5000, NULL, 0, NULL) == 1
       && s_run_end(sa, end, "run-a", 6, 24) == 0
       && s_answer(sa, end, 1500, NULL, 0, NULL) == 0
       && cc_stat(sa, "deferred") > deferred0,
       "a good batch 2 stored since wins over its refusal: the RunEnd now "
       "waits for 4 and 5 (no answer, deferred moved)");
    ok(s_batch(sa, ++seq, "run-a", 4, 4, 99, 0, 0, 0) == 0
       && s_answer(sa, seq, 5000, NULL, 0, NULL) == 1
       && s_run_end(sa, end, "run-a", 6, 24) == 0
       && s_answer(sa, end, 1500, NULL, 0, NULL) == 0,
       "with batch 5 still missing the resent RunEnd is still not acked");
    ok(s_batch(sa, ++seq, "run-a", 5, 4, 99, 0, 0, 0) == 0
       && s_answer(sa, seq, 5000, NULL, 0, NULL) == 1
       && s_run_end(sa, end, "run-a", 6, 24) == 0
       && s_answer(sa, end, 5000, NULL, 0, NULL) == 1
       && s_sql_long("SELECT count(*) FROM runs WHERE status = 'complete' "
                     "AND run_uuid = 'run-a' AND batches = 6") == 1
       && s_sql_long("SELECT count(*) FROM samples") == 24,
       "the gap filled, the resent RunEnd is acked: 6 batches, 24 samples");

    s_dependency_checks(sa, sb, &seq);
    s_batch_text_checks(sa, "run-gap", &seq);

    /* ---- Calibration bounds ----------------------------------------- */
    ok(s_calibration(sa, ++seq, "cal-0", 0) == 0
       && s_refused(sa, seq, 10, "calibration cal-0: no samples"),
       "a Calibration with 0 samples: Error 10");
    {
        double w[3] = { 500, 510, 520 }, cpu[2] = { 1, 2 };
        double rss[3] = { 1400, -1, 1400 };
        Parity__Calibration cm = PARITY__CALIBRATION__INIT;
        cm.calibration_id = "cal-cpu";
        cm.wall_us = w;
        cm.n_wall_us = 3;
        cm.cpu_us = cpu;
        cm.n_cpu_us = 2;
        cm.taken_at_us = cc_unix_us();
        ok(s_send_body(sa, ++seq, PARITY__ENVELOPE__BODY_CALIBRATION, &cm)
           == 0 && s_refused(sa, seq, 10, "calibration cal-cpu: 2 cpu_us "
                             "values for 3 wall times (want none or one "
                             "each)"),
           "a Calibration with 2 CPU times for 3 runs: Error 10");
        cm.calibration_id = "cal-rss";
        cm.n_cpu_us = 0;
        cm.peak_rss_kb = rss;
        cm.n_peak_rss_kb = 3;
        ok(s_send_body(sa, ++seq, PARITY__ENVELOPE__BODY_CALIBRATION, &cm)
           == 0 && s_refused(sa, seq, 10, "calibration cal-rss: peak_rss_kb "
                             "1 is -1 (must be finite and >= 0)"),
           "a Calibration with a negative peak RSS: Error 10");
    }
    limit0 = cc_stat(sa, "bad_limit");
    ok(s_calibration(sa, ++seq, "cal-big", 65537) == 0
       && s_refused(sa, seq, 7, "65537")
       && cc_stat(sa, "bad_limit") == limit0 + 1,
       "a Calibration with 65537 samples: Error 7, bad_limit +1");
    ok(s_calibration(sa, ++seq, "cal-max", 65536) == 0
       && s_answer(sa, seq, 5000, NULL, 0, NULL) == 1
       && s_sql_long("SELECT count(*) FROM calibrations") == 1
       && s_sql_long("SELECT count(*) FROM calibration_samples") == 65536,
       "65536 samples (the bound) are stored");

    /* ---- a Hello that cannot be stored -------------------------------- */
    {
        void *sc = cc_dealer(ctx, col.endpoint, c, col.public_key);
        ok(s_hello_env(sc, "gam\xffma", "") == 0
           && s_refused_exactly(sc, 0, 10, "hello: the database refused "
                                "it: invalid byte sequence for encoding "
                                "\"UTF8\": 0xff (SQLSTATE 22021)"),
           "a Hello whose name is not UTF-8: Error 10 naming the message "
           "and PostgreSQL's reason, not its statement");
        ok(s_hello_env(sc, "gamma", "{\"os\": ") == 0
           && s_refused(sc, 0, 10, "hello: environment_json is not a JSON "
                        "object")
           && s_sql_long("SELECT count(*) FROM hosts WHERE name = 'gamma'")
              == 0, "a Hello whose environment is not JSON: Error 10, no "
           "host stored");
        ok(s_calibration(sc, 1, "cal-c", 3) == 0
           && s_refused(sc, 1, 9, ""),
           "and the connection counts as not greeted (Error 9)");
        ok(cc_hello(sc, "gamma") == 0 && cc_wait_ack(sc, 0, 5000),
           "a good Hello afterwards is stored");
        zmq_close(sc);
    }

    /* ---- a Hello listing more suites than it may ---------------------- */
    {
        static Parity__SuiteInfo si[257];
        static Parity__SuiteInfo *psi[257];
        static char nm[257][8];
        for (int i = 0; i < 257; i++) {
            parity__suite_info__init(&si[i]);
            snprintf(nm[i], sizeof nm[i], "s%d", i);
            si[i].name = nm[i];
            psi[i] = &si[i];
        }
        Parity__Hello h = PARITY__HELLO__INIT;
        h.agent_name = "many";
        h.suites = psi;
        h.n_suites = 257;
        void *sc = cc_dealer(ctx, col.endpoint, c, col.public_key);
        long limit1 = cc_stat(sa, "bad_limit");
        ok(s_send_body(sc, 0, PARITY__ENVELOPE__BODY_HELLO, &h) == 0
           && s_refused(sc, 0, 7, "hello: 257 suites (at most 256)")
           && cc_stat(sa, "bad_limit") == limit1 + 1
           && s_sql_long("SELECT count(*) FROM hosts WHERE name = 'many'")
              == 0, "a Hello with 257 suites: Error 7, bad_limit +1, not "
           "stored");
        h.n_suites = 256;
        ok(s_send_body(sc, 0, PARITY__ENVELOPE__BODY_HELLO, &h) == 0
           && cc_wait_ack(sc, 0, 5000)
           && s_sql_long("SELECT count(*) FROM hosts WHERE name = 'many'")
              == 1, "256 suites (the bound) are stored");
        zmq_close(sc);
    }

    /* ---- a key in --allow only is not a client ------------------------ */
    Parity__Envelope *e = cc_request(sa, 7, "hosts", 3000);
    ok(e && e->reply->status == 3
       && strstr(e->reply->error, "forbidden"),
       "an agent's key asking for hosts: status 3 forbidden");
    pw_wire_free(&e);
    snprintf(msg, sizeof msg, "%s", "");
    ok(cc_stat(sa, "received") > 0, "collector alive after all of it");
    zmq_close(sa);
    zmq_close(sb);
    zmq_ctx_term(ctx);
    PQfinish(s_pg);

    /* kill -9 of the collector and of its PostgreSQL at once, and a start
     * straight away: the old server is still dying (postmaster.pid left
     * behind); the new collector waits for it to go and starts its own. */
    {
        char pidfile[300];
        long pgpid = 0;
        snprintf(pidfile, sizeof pidfile, "%s/pg/postmaster.pid", fx.datadir);
        FILE *f = fopen(pidfile, "r");
        if (f) {
            if (fscanf(f, "%ld", &pgpid) != 1)
                pgpid = 0;
            fclose(f);
        }
        kill(col.pid, SIGKILL);
        if (pgpid > 0)
            kill((pid_t)pgpid, SIGKILL);
        cc_collector_stop(&col, SIGKILL, 5000);
        ok(!cc_log_has(logp, "runtime error", NULL)
           && !cc_log_has(logp, "Sanitizer", NULL),
           "no sanitizer report in the collector's log (ASan/UBSan builds)");
        snprintf(logp, sizeof logp, "%s/collector2.log", fx.dir);
        ok(pgpid > 0 && cc_collector_start(&col, cargv, logp, 90000) == 0
           && cc_log_has(logp, "event=db_up", "migrations_applied=0"),
           "after kill -9 of the collector and its server, a new start "
           "comes up on the same data dir");
        s_pg = PQconnectdb(fx.conninfo);
        ok(s_sql_long("SELECT count(*) FROM samples") == 24 + 8 + 2
           && s_sql_long("SELECT count(*) FROM runs WHERE status = "
                         "'complete'") == 2,
           "everything committed before the kill is there");
        /* The refusals are kept in the database: a resend after the
         * restart is still answered. */
        void *ctx2 = zmq_ctx_new();
        void *s2 = cc_dealer(ctx2, col.endpoint, a, col.public_key);
        ok(cc_hello(s2, "alpha") == 0 && cc_wait_ack(s2, 0, 5000)
           && s_batch(s2, 900, "run-dep", 3, 4, 99, 0, 0, 0) == 0
           && s_refused_exactly(s2, 900, 14, "batch run-dep/3 "
                                S_DEP_NO_ARMS("run-dep"))
           && s_run_end(s2, 901, "run-dep", 4, 16) == 0
           && s_refused_exactly(s2, 901, 14, "run_end run-dep "
                                S_DEP_NO_ARMS("run-dep")),
           "after the restart a batch and the RunEnd of the refused run "
           "still get Error 14");
        zmq_close(s2);
        zmq_ctx_term(ctx2);
        s_threads_checks(&col, a);
        PQfinish(s_pg);
    }
    ok(cc_collector_stop(&col, SIGTERM, 30000) == 0, "SIGTERM: exit 0");
    {
        char pidfile[300];
        snprintf(pidfile, sizeof pidfile, "%s/pg/postmaster.pid", fx.datadir);
        ok(access(pidfile, F_OK) != 0, "and its PostgreSQL is stopped "
           "(no postmaster.pid)");
    }
    zcert_destroy(&a);
    zcert_destroy(&b);
    zcert_destroy(&c);
    if (cc_files_remove(&fx, tap_failed_ == 0) != 0)
        tap_diag("could not remove %s", fx.dir);
    return tap_done();
}
