/* test_collector.c -- parity-collector against its own private PostgreSQL,
 * over real CURVE sockets on 127.0.0.1. One collector serves every check;
 * a second start on the same data dir checks reuse and re-migration.
 *
 *   test-collector PATH/TO/parity-collector
 */
#include <dirent.h>
#include <glob.h>
#include <math.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "co_client.h"
#include "tap.h"
#include "co_sql.h"
#include "vd_verdict.h"

#define N_MEASURED 60          /* per arm */
#define N_WARMUP 3             /* per arm */
#define N_ROUND_CAL 40         /* CALIBRATION samples in the batches */
#define N_CAL 200              /* samples of the Calibration message */
#define INJECT "'); DROP TABLE runs; --"

static cc_files_t s_fx;
static PGconn *s_pg;

static long
s_sql_long(const char *sql)
{
    return cc_sql_long(s_pg, sql);
}

/* Deterministic sample values: two clouds about 10 % apart. */
static double
s_wall(unsigned arm, unsigned i)
{
    return arm == 0 ? 1000.0 + (double)((i * 37) % 50) + 0.25
                    : 1100.0 + (double)((i * 53) % 60) + 0.5;
}

static double
s_cal(unsigned i)
{
    return 500.0 + (double)((i * 7) % 40) + 0.125;
}

typedef struct {
    Parity__Sample s[512];
    Parity__Sample *ps[512];
    size_t n;
} s_batch_t;

static void
s_add(s_batch_t *b, Parity__SampleKind kind, unsigned arm, unsigned round,
      double wall, int64_t start)
{
    Parity__Sample *x = &b->s[b->n];
    parity__sample__init(x);
    x->kind = kind;
    x->arm = arm;
    x->round = round;
    x->position = arm;
    x->wall_us = wall;
    x->user_us = wall / 3;
    x->sys_us = wall / 5;
    x->maxrss_kb = 1234;
    x->cpu = 1;
    x->start_unix_us = start;
    x->error = kind == PARITY__SAMPLE_KIND__ERROR ? "exit status 3\t\"x\"\n"
                                                  : "";
    x->exit_status = kind == PARITY__SAMPLE_KIND__ERROR ? 3 : 0;
    /* Counters on MEASURED samples only: the rest stand for a host that
     * does not count (stored as NULL). */
    if (kind == PARITY__SAMPLE_KIND__MEASURED) {
        x->instructions = 1000000 + (int64_t)round;
        x->cycles = 2000000;
        x->task_clock_ns = (int64_t)(wall * 1000);
    }
    b->ps[b->n] = x;
    b->n++;
}

static int
s_send_batch(void *s, uint64_t seq, const char *run, unsigned batch_seq,
             s_batch_t *b)
{
    Parity__Envelope env;
    Parity__SampleBatch sb = PARITY__SAMPLE_BATCH__INIT;
    sb.run_id = (char *)run;
    sb.batch_seq = batch_seq;
    sb.n_samples = b->n;
    sb.samples = b->ps;
    pw_wire_init(&env, seq);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &sb);
    return cc_send(s, &env);
}

static int
s_send_run_start(void *s, uint64_t seq, const char *run, const char *bench)
{
    Parity__Envelope env;
    Parity__RunStart rs = PARITY__RUN_START__INIT;
    Parity__Arm a0 = PARITY__ARM__INIT, a1 = PARITY__ARM__INIT;
    Parity__Arm *arms[] = { &a0, &a1 };
    char *argv0[] = { "./new", "--fast" };
    a0.name = "new";
    a0.subject = 1;
    a0.n_argv = 2;
    a0.argv = argv0;
    a1.name = "old";
    a1.shell = "./old | cat";
    rs.run_id = (char *)run;
    rs.suite = "suite1";
    rs.benchmark = (char *)bench;
    rs.n_arms = 2;
    rs.arms = arms;
    rs.runs = N_MEASURED;
    rs.warmup = N_WARMUP;
    rs.started_at_us = cc_unix_us();
    rs.environment_json = "{\"os\":\"linux\"}";
    pw_wire_init(&env, seq);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_RUN_START, &rs);
    return cc_send(s, &env);
}

static int
s_send_run_end(void *s, uint64_t seq, const char *run, unsigned batches,
               uint64_t samples)
{
    Parity__Envelope env;
    Parity__RunEnd re = PARITY__RUN_END__INIT;
    re.run_id = (char *)run;
    re.status = PARITY__RUN_STATUS__COMPLETE;
    re.batches = batches;
    re.samples = samples;
    re.ended_at_us = cc_unix_us() + 1000000;
    pw_wire_init(&env, seq);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_RUN_END, &re);
    return cc_send(s, &env);
}

static void
s_pg_bin(char *out, size_t len, const char *tool)
{
    glob_t g;
    snprintf(out, len, "%s", tool);
    if (glob("/usr/lib/postgresql/*/bin/pg_ctl", 0, NULL, &g) == 0
        && g.gl_pathc > 0) {
        snprintf(out, len, "%s", g.gl_pathv[g.gl_pathc - 1]);
        char *slash = strrchr(out, '/');
        if (slash)
            snprintf(slash + 1, len - (size_t)(slash + 1 - out), "%s", tool);
    }
    globfree(&g);
}

/* pg_ctl on the collector's private cluster, as the cluster's owner. */
static int
s_pg_ctl(const char *action)
{
    char bin[512], cmd[1400];
    s_pg_bin(bin, sizeof bin, "pg_ctl");
    snprintf(cmd, sizeof cmd, "%s %s -D %s/data/pg -l %s/data/pg.log -w "
             "-m fast %s >/dev/null 2>&1",
             geteuid() == 0 ? "runuser -u postgres --" : "", bin, s_fx.dir,
             s_fx.dir, action);
    return system(cmd);
}

static bool
s_pg_running(void)
{
    return s_pg_ctl("status") == 0;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-collector PATH/TO/parity-collector\n");
        return 2;
    }
    const char *exe = argv[1];
    cc_collector_t col;

    if (cc_files_make(&s_fx, "/tmp/parity-co-XXXXXX") != 0)
        return 1;
    zcert_t *agent = zcert_new(), *rogue = zcert_new();
    zcert_t *agent2 = zcert_new();
    cc_files_allow(&s_fx, "agent", agent);
    cc_files_allow(&s_fx, "agent2", agent2);

    /* Enrollment off: a key in no directory fails the handshake, as the
     * security checks below expect (test_enroll.c has it on). */
    char *cargv[] = { (char *)exe, "--bind", "tcp://127.0.0.1:0", "--key",
                      s_fx.key, "--allow", s_fx.allow, "--data-dir",
                      s_fx.datadir, "--heartbeat-ms", "500", "--enroll", "off",
                      NULL };
    if (!ok(cc_collector_start(&col, cargv, s_fx.log, 60000) == 0,
            "collector starts with a new private cluster (endpoint %s)",
            col.endpoint)) {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "sed 's/^/# /' %s", s_fx.log);
        if (system(cmd) != 0)
            tap_diag("no log");
        printf("Bail out! collector did not start\n");
        return 1;
    }
    ok(strcmp(col.public_key, zcert_public_txt(s_fx.server)) == 0,
       "it logs the public key of --key");

    s_pg = PQconnectdb(s_fx.conninfo);
    ok(PQstatus(s_pg) == CONNECTION_OK, "psql-style access to the "
       "collector's database through DATA_DIR/pg");
    long version = s_sql_long("SELECT max(version) FROM schema_version");
    char want[64];
    snprintf(want, sizeof want, "migrations_applied=%ld schema_version=%ld",
             version, version);
    ok(version >= 1 && cc_log_has(s_fx.log, "event=db_up", want),
       "first start applies every migration (%s)", want);
    ok(s_sql_long("SELECT count(*) FROM schema_version") == version,
       "one schema_version row per migration");

    void *ctx = zmq_ctx_new();
    void *s = cc_dealer(ctx, col.endpoint, agent, col.public_key);

    /* ---- a run, end to end ------------------------------------------ */
    ok(cc_hello(s, "host-1") == 0 && cc_wait_ack(s, 0, 5000),
       "Hello is answered with Ack{0}");
    ok(s_sql_long("SELECT count(*) FROM hosts WHERE online") == 1,
       "the host is stored online");
    {
        char q[512];
        snprintf(q, sizeof q, "SELECT count(*) FROM hosts WHERE public_key "
                 "= '%s' AND name = 'host-1'", zcert_public_txt(agent));
        ok(s_sql_long(q) == 1, "the host is keyed by its CURVE public key");
    }

    uint64_t seq = 0;
    Parity__Envelope env;
    Parity__Calibration cal = PARITY__CALIBRATION__INIT;
    double calw[N_CAL];
    for (unsigned i = 0; i < N_CAL; i++)
        calw[i] = s_cal(i);
    cal.calibration_id = "cal-1";
    cal.n_wall_us = N_CAL;
    cal.wall_us = calw;
    cal.taken_at_us = cc_unix_us() - 1000000;
    pw_wire_init(&env, ++seq);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_CALIBRATION, &cal);
    ok(cc_send(s, &env) == 0 && cc_wait_ack(s, seq, 5000),
       "Calibration acked");
    ok(cc_send(s, &env) == 0 && cc_wait_ack(s, seq, 5000)
       && s_sql_long("SELECT count(*) FROM calibration_samples") == N_CAL,
       "Calibration resent: acked again, still %d samples", N_CAL);

    const char *run = "run-0001";
    ok(s_send_run_start(s, ++seq, run, INJECT) == 0
       && cc_wait_ack(s, seq, 5000), "RunStart acked");

    /* Three batches: warmups, rounds of (subject, other, calibration),
     * and two ERROR samples. */
    static s_batch_t b[3];
    int64_t t0 = cc_unix_us();
    unsigned total = 0;
    for (unsigned a = 0; a < 2; a++)
        for (unsigned i = 0; i < N_WARMUP; i++)
            s_add(&b[0], PARITY__SAMPLE_KIND__WARMUP, a, i, 5000.0, t0);
    for (unsigned r = 0; r < N_MEASURED; r++) {
        s_batch_t *bb = &b[r < N_MEASURED / 2 ? 1 : 2];
        s_add(bb, PARITY__SAMPLE_KIND__MEASURED, 0, r, s_wall(0, r), t0 + r);
        s_add(bb, PARITY__SAMPLE_KIND__MEASURED, 1, r, s_wall(1, r), t0 + r);
        if (r < N_ROUND_CAL)
            s_add(bb, PARITY__SAMPLE_KIND__CALIBRATION, 0, r,
                  s_cal(r + 1000), t0 + r);
    }
    s_add(&b[2], PARITY__SAMPLE_KIND__ERROR, 1, 99, 7.0, t0);
    s_add(&b[2], PARITY__SAMPLE_KIND__ERROR, 0, 99, 8.0, t0);
    for (unsigned k = 0; k < 3; k++)
        total += (unsigned)b[k].n;

    /* RunEnd before its batches is not acked (silence, not an Error). */
    uint64_t early = ++seq;
    ok(s_send_run_end(s, early, run, 3, total) == 0
       && !cc_wait_ack(s, early, 700),
       "RunEnd before its batches: no ack");
    bool all = true;
    for (unsigned k = 0; k < 3; k++) {
        ++seq;
        all = all && s_send_batch(s, seq, run, k, &b[k]) == 0
              && cc_wait_ack(s, seq, 5000);
    }
    ok(all, "3 batches acked");
    ok(s_sql_long("SELECT count(*) FROM samples") == (long)total,
       "%u samples stored", total);
    ok(s_send_batch(s, ++seq, run, 1, &b[1]) == 0 && cc_wait_ack(s, seq, 5000)
       && s_sql_long("SELECT count(*) FROM samples") == (long)total
       && s_sql_long("SELECT count(*) FROM batches") == 3,
       "batch 1 resent: acked, nothing changed");
    ok(s_sql_long("SELECT count(*) FROM samples WHERE kind = 3 AND error = "
                  "E'exit status 3\\t\"x\"\\n' AND exit_status = 3") == 2,
       "ERROR samples keep their reason text verbatim");
    ok(s_sql_long("SELECT count(*) FROM samples WHERE maxrss_kb = 1234 AND "
                  "cpu = 1 AND user_us > 0 AND sys_us > 0") == (long)total,
       "every harness field is stored");
    ok(s_sql_long("SELECT count(*) FROM samples WHERE kind = 0 AND "
                  "instructions >= 1000000 AND cycles = 2000000 AND "
                  "task_clock_ns > 0") ==
       s_sql_long("SELECT count(*) FROM samples WHERE kind = 0") &&
       s_sql_long("SELECT count(*) FROM samples WHERE kind <> 0 AND "
                  "(instructions IS NOT NULL OR cycles IS NOT NULL OR "
                  "task_clock_ns IS NOT NULL)") == 0,
       "counters stored where sent, NULL where 0 (not counted)");

    ok(s_send_run_end(s, ++seq, run, 3, total) == 0
       && cc_wait_ack(s, seq, 5000), "RunEnd acked once its batches are in");
    ok(s_send_run_end(s, early, run, 3, total) == 0
       && cc_wait_ack(s, early, 5000)
       && s_sql_long("SELECT count(*) FROM verdicts") == 1,
       "the early RunEnd resent: acked as a duplicate, one verdict");
    /* Both arms counted the same instructions on every run: beside the
     * wall-time verdict, a comparison of them that finds no change. */
    ok(s_sql_long("SELECT count(*) FROM verdicts WHERE verdict_json::jsonb "
                  "-> 'instructions' ->> 'text' = 'wall time ' || outcome "
                  "|| '; instructions +0.0 % (parity, decisive)' AND "
                  "(verdict_json::jsonb -> 'instructions' ->> 'ratio')"
                  "::float8 = 1") == 1,
       "the verdict carries the instructions comparison and its line");

    /* The stored verdict equals vd_compare on the same samples. */
    double A[N_MEASURED], B[N_MEASURED], C[N_CAL + N_ROUND_CAL];
    for (unsigned i = 0; i < N_MEASURED; i++) {
        A[i] = s_wall(0, i);
        B[i] = s_wall(1, i);
    }
    for (unsigned i = 0; i < N_CAL; i++)
        C[i] = s_cal(i);
    for (unsigned i = 0; i < N_ROUND_CAL; i++)
        C[N_CAL + i] = s_cal(i + 1000);
    double floor_us;
    bool is_default;
    char verr[256];
    vd_params_t vp;
    vd_verdict_t v;
    vd_floor(C, N_CAL + N_ROUND_CAL, &floor_us, &is_default, verr,
             sizeof verr);
    vd_params_default(&vp);
    vp.floor_us = floor_us;
    vp.floor_is_default = is_default;
    ok(vd_compare(A, N_MEASURED, B, N_MEASURED, &vp, &v, verr, sizeof verr)
       == VD_OK, "vd_compare on the same samples");
    PGresult *r = PQexec(s_pg, "SELECT outcome, ratio, best_ratio, tolerance, "
        "noise, best_tolerance, floor_us, floor_is_default, floor_samples, "
        "parity, n_subject, n_other, other_name, verdict_json FROM verdicts");
    ok(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1,
       "one verdict stored (subject new vs old)");
    if (PQntuples(r) == 1) {
        ok_str(PQgetvalue(r, 0, 0), vd_outcome_name(v.outcome),
               "outcome %s", vd_outcome_name(v.outcome));
        ok(strtod(PQgetvalue(r, 0, 1), NULL) == v.ratio
           && strtod(PQgetvalue(r, 0, 2), NULL) == v.best_ratio
           && strtod(PQgetvalue(r, 0, 3), NULL) == v.tolerance
           && strtod(PQgetvalue(r, 0, 4), NULL) == v.noise
           && strtod(PQgetvalue(r, 0, 5), NULL) == v.best_tolerance,
           "ratio, best_ratio, tolerance, noise, best_tolerance are "
           "bit-identical (ratio %.6f)", v.ratio);
        ok(strtod(PQgetvalue(r, 0, 6), NULL) == floor_us
           && strcmp(PQgetvalue(r, 0, 7), "f") == 0
           && atoi(PQgetvalue(r, 0, 8)) == N_CAL + N_ROUND_CAL,
           "floor %.4f us from the host's %d calibration samples, not the "
           "default", floor_us, N_CAL + N_ROUND_CAL);
        ok(strtod(PQgetvalue(r, 0, 9), NULL) == 0.04
           && atoi(PQgetvalue(r, 0, 10)) == N_MEASURED
           && atoi(PQgetvalue(r, 0, 11)) == N_MEASURED
           && strcmp(PQgetvalue(r, 0, 12), "old") == 0,
           "parity, sample counts and the other arm's name");
        json_t *j = json_loads(PQgetvalue(r, 0, 13), 0, NULL);
        ok(j && json_real_value(json_object_get(j, "ratio")) == v.ratio
           && strcmp(json_string_value(json_object_get(j, "outcome")),
                     vd_outcome_name(v.outcome)) == 0,
           "the verdict's JSON form is stored too");
        json_decref(j);
    }
    PQclear(r);
    r = PQexec(s_pg, "SELECT floor_us, is_default, n_samples, window_size "
               "FROM floors");
    ok(PQntuples(r) == 1 && strtod(PQgetvalue(r, 0, 0), NULL) == floor_us
       && strcmp(PQgetvalue(r, 0, 1), "f") == 0
       && atoi(PQgetvalue(r, 0, 2)) == N_CAL + N_ROUND_CAL
       && atoi(PQgetvalue(r, 0, 3)) == 1000,
       "the floor is recorded in floors (window 1000)");
    PQclear(r);
    r = PQexec(s_pg, "SELECT name FROM benchmarks");
    ok(PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), INJECT) == 0,
       "benchmark named %s stored verbatim", INJECT);
    PQclear(r);
    ok(s_sql_long("SELECT count(*) FROM runs WHERE status = 'complete'") == 1,
       "and the runs table is still there");

    /* ---- group commit: a burst of batches, good, duplicate and bad ---- */
    long grouped = 0;
    {
        const char *run3 = "run-0003";
        ok(s_send_run_start(s, ++seq, run3, "group") == 0
           && cc_wait_ack(s, seq, 5000), "third run started");
        static s_batch_t g_bad_text, g_nan;
        g_bad_text = b[1];
        for (size_t i = 0; i < g_bad_text.n; i++)
            g_bad_text.ps[i] = &g_bad_text.s[i];
        g_bad_text.s[3].error = "\xff\xfe not UTF-8";
        g_nan = b[1];
        for (size_t i = 0; i < g_nan.n; i++)
            g_nan.ps[i] = &g_nan.s[i];
        g_nan.s[0].wall_us = NAN;
        uint64_t sa = ++seq, sb = ++seq, sc = ++seq, sd = ++seq, se = ++seq;
        /* Back to back, no waiting: the collector sees one burst. */
        s_send_batch(s, sa, run3, 0, &b[1]);
        s_send_batch(s, sb, run3, 0, &b[1]);
        s_send_batch(s, sc, run3, 1, &g_bad_text);
        s_send_batch(s, sd, run3, 2, &b[2]);
        s_send_batch(s, se, run3, 3, &g_nan);
        int acks[5] = { 0 }, errs[5] = { 0 };
        int64_t until_g = cc_now_ms() + 5000;
        while (cc_now_ms() < until_g) {
            Parity__Envelope *g = cc_recv(s, 500);
            if (!g)
                continue;
            uint64_t which = g->body_case == PARITY__ENVELOPE__BODY_ACK
                                 ? g->ack->seq
                             : g->body_case == PARITY__ENVELOPE__BODY_ERROR
                                 ? g->error->seq : 0;
            if (which >= sa && which <= se) {
                if (g->body_case == PARITY__ENVELOPE__BODY_ACK)
                    acks[which - sa]++;
                else if (g->error->code == 10)
                    errs[which - sa]++;
            }
            pw_wire_free(&g);
            if (acks[0] && acks[1] && errs[2] && acks[3] && errs[4])
                break;
        }
        ok(acks[0] == 1 && acks[1] == 1 && acks[3] == 1,
           "burst: the new batches and the duplicate are acked once each");
        ok(errs[2] == 1 && acks[2] == 0,
           "burst: invalid UTF-8 in an error text: Error{code 10, seq}");
        ok(errs[4] == 1 && acks[4] == 0,
           "burst: a NaN wall time: Error{code 10, seq}");
        grouped = (long)(b[1].n + b[2].n);
        ok(s_sql_long("SELECT count(*) FROM batches WHERE run = (SELECT id "
                      "FROM runs WHERE run_uuid = 'run-0003')") == 2
           && s_sql_long("SELECT count(*) FROM samples") == (long)total
                                                           + grouped,
           "burst: exactly batches 0 and 2 stored, once");
    }

    /* ---- bad input from an authenticated peer ------------------------ */
    long parse0 = cc_stat(s, "bad_parse");
    uint8_t junk[300];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)(i * 31 + 7);
    cc_send_raw(s, junk, sizeof junk);
    Parity__Envelope *e = cc_recv(s, 3000);
    ok(e && e->body_case == PARITY__ENVELOPE__BODY_ERROR
       && e->error->code == 3, "garbage: Error{code 3}");
    pw_wire_free(&e);
    {
        uint8_t *full = NULL;
        size_t flen = 0;
        Parity__SampleBatch sb = PARITY__SAMPLE_BATCH__INIT;
        sb.run_id = "run-0001";
        sb.batch_seq = 77;
        sb.n_samples = b[1].n;
        sb.samples = b[1].ps;
        pw_wire_init(&env, ++seq);
        pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &sb);
        pw_wire_pack_alloc(&env, &full, &flen, NULL, 0);
        cc_send_raw(s, full, flen / 2);
        free(full);
        ok(!cc_wait_ack(s, seq, 800), "truncated batch: no ack");
    }
    ok(cc_stat(s, "bad_parse") == parse0 + 2,
       "bad_parse moved by 2 (garbage, truncated)");

    uint8_t small[256];
    size_t slen;
    pw_wire_pack_heartbeat(1, 0, "idle", "", small, sizeof small, &slen);
    small[1] = 9;   /* version 9 */
    cc_send_raw(s, small, slen);
    e = cc_recv(s, 3000);
    ok(e && e->body_case == PARITY__ENVELOPE__BODY_ERROR
       && e->error->code == 4
       && strstr(e->error->message, "protocol version 9"),
       "wrong version: Error{code 4, \"%s\"}",
       e && e->error ? e->error->message : "");
    pw_wire_free(&e);
    uint8_t unknown[] = { 0x08, 0x01, 0x98, 0x06, 0x01 };
    cc_send_raw(s, unknown, sizeof unknown);
    e = cc_recv(s, 3000);
    ok(e && e->body_case == PARITY__ENVELOPE__BODY_ERROR
       && e->error->code == 6, "unknown body: Error{code 6}");
    pw_wire_free(&e);
    zmq_send(s, "a", 1, ZMQ_SNDMORE);
    zmq_send(s, "b", 1, 0);
    e = cc_recv(s, 3000);
    ok(e && e->body_case == PARITY__ENVELOPE__BODY_ERROR
       && e->error->code == 3 && cc_stat(s, "frames") == 1,
       "two frames in one message: Error{code 3}, frames counted");
    pw_wire_free(&e);
    ok(cc_stat(s, "bad_version") == 1 && cc_stat(s, "bad_unknown_body")
       == 1, "bad_version and bad_unknown_body counted");
    ok(cc_log_count(s_fx.log, "event=bad_input", zcert_public_txt(agent)) == 1,
       "six bad messages within 10 s: one bad_input line for this peer");
    {
        Parity__Envelope ue;
        Parity__Ack ua = PARITY__ACK__INIT;
        long unexpected0 = cc_stat(s, "unexpected");
        ua.seq = 5;
        pw_wire_init(&ue, 0);
        pw_wire_set_body(&ue, PARITY__ENVELOPE__BODY_ACK, &ua);
        cc_send(s, &ue);
        ok(cc_stat(s, "unexpected") == unexpected0 + 1,
           "an Ack sent to the collector: counted as unexpected, ignored");
    }

    /* Data before Hello: a new connection with the same key. */
    {
        void *s2 = cc_dealer(ctx, col.endpoint, agent2, col.public_key);
        s_send_batch(s2, ++seq, run, 50, &b[1]);
        e = cc_recv(s2, 3000);
        ok(e && e->body_case == PARITY__ENVELOPE__BODY_ERROR
           && e->error->code == 9 && e->error->seq == seq,
           "data before Hello on a new connection: Error{code 9, seq}");
        pw_wire_free(&e);
        zmq_close(s2);
    }

    /* A Hello the database can never store: refused, not kept. */
    {
        void *s3 = cc_dealer(ctx, col.endpoint, agent2, col.public_key);
        cc_hello(s3, "bad\xff\xfename");
        e = cc_recv(s3, 3000);
        ok(e && e->body_case == PARITY__ENVELOPE__BODY_ERROR
           && e->error->code == 10 && e->error->seq == 0,
           "Hello with a name that is not UTF-8: Error{code 10, seq 0}");
        pw_wire_free(&e);
        s_send_batch(s3, ++seq, run, 51, &b[1]);
        e = cc_recv(s3, 3000);
        ok(e && e->body_case == PARITY__ENVELOPE__BODY_ERROR
           && e->error->code == 9,
           "and data after it on that connection: Error{code 9}");
        pw_wire_free(&e);
        zmq_close(s3);
    }

    /* 100 MB in one frame: libzmq cuts that connection (ZMQ_MAXMSGSIZE). */
    long disc0 = cc_stat(s, "disconnects");
    {
        void *big = cc_dealer(ctx, col.endpoint, agent2, col.public_key);
        size_t n = 100u << 20;
        uint8_t *buf = calloc(1, n);
        cc_hello(big, "big");
        ok(cc_wait_ack(big, 0, 5000), "second connection says Hello");
        zmq_send(big, buf, n, 0);
        free(buf);
        ok(!cc_wait_ack(big, 0, 1500), "100 MB message: nothing comes back");
        zmq_close(big);
    }
    e = cc_request(s, 1, "ping", 3000);
    ok(e && e->reply->status == 0, "collector alive after 100 MB (ping)");
    pw_wire_free(&e);
    ok(cc_stat(s, "disconnects") > disc0, "disconnects counter moved");
    ok(s_sql_long("SELECT count(*) FROM samples") == (long)total + grouped
       && s_sql_long("SELECT count(*) FROM batches") == 5,
       "none of the bad input was stored");
    e = cc_request(s, 2, "launch-missiles", 3000);
    ok(e && e->reply->status == 2
       && strcmp(e->reply->error, "unknown command") == 0,
       "unknown request: Reply{status 2, \"unknown command\"}");
    pw_wire_free(&e);

    /* ---- security: rejected peers get nothing in and nothing out ----- */
    long auth0 = cc_stat(s, "auth_failed");
    {
        void *u = cc_dealer(ctx, col.endpoint, rogue, col.public_key);
        cc_hello(u, "rogue");
        s_send_run_start(u, 1, "run-rogue", "evil");
        Parity__Envelope *got = cc_recv(u, 1500);
        ok(got == NULL, "unknown client key: nothing comes back");
        pw_wire_free(&got);
        zmq_close(u);
    }
    {
        zcert_t *fake = zcert_new();
        void *w = cc_dealer(ctx, col.endpoint, agent,
                            zcert_public_txt(fake));
        cc_hello(w, "wrong-server-key");
        Parity__Envelope *got = cc_recv(w, 1500);
        ok(got == NULL, "wrong server key: nothing comes back");
        pw_wire_free(&got);
        zmq_close(w);
        zcert_destroy(&fake);
    }
    {
        void *n = cc_dealer(ctx, col.endpoint, NULL, NULL);
        cc_hello(n, "no-curve");
        Parity__Envelope *got = cc_recv(n, 1500);
        ok(got == NULL, "no CURVE at all: nothing comes back");
        pw_wire_free(&got);
        zmq_close(n);
    }
    ok(cc_stat(s, "auth_failed") >= auth0 + 3,
       "auth_failed counted all three (%ld -> %ld)", auth0,
       cc_stat(s, "auth_failed"));
    ok(cc_stat(s, "peers") == 2,
       "not one of their messages reached the server loop (peers 2)");
    ok(s_sql_long("SELECT count(*) FROM hosts") == 2
       && s_sql_long("SELECT count(*) FROM runs") == 2,
       "nothing of theirs stored");
    ok(cc_log_has(s_fx.log, "event=auth_denied", zcert_public_txt(rogue)),
       "the denied key is logged");

    /* ---- database down: no acks; back: acks ------------------------- */
    static s_batch_t b4;
    s_add(&b4, PARITY__SAMPLE_KIND__MEASURED, 0, 500, 999.0, t0);
    const char *run2 = "run-0002";
    /* The checks above kept this socket quiet for seconds: like an agent
     * after silence, say Hello again. */
    cc_hello(s, "host-1");
    ok(cc_wait_ack(s, 0, 5000), "Hello again after the security checks");
    ok(s_send_run_start(s, ++seq, run2, "second") == 0
       && cc_wait_ack(s, seq, 5000), "second run started");
    PQfinish(s_pg);
    s_pg = NULL;
    ok(s_pg_ctl("stop") == 0, "PostgreSQL stopped under the collector");
    uint64_t pending = ++seq;
    s_send_batch(s, pending, run2, 0, &b4);
    ok(!cc_wait_ack(s, pending, 1500), "database down: the batch is not "
       "acked");
    void *late = cc_dealer(ctx, col.endpoint, agent2, col.public_key);
    cc_hello(late, "late");
    ok(!cc_wait_ack(late, 0, 700), "database down: a Hello is not acked");
    e = cc_request(s, 3, "ping", 3000);
    ok(e && e->reply->status == 0, "collector still answers while the "
       "database is down");
    pw_wire_free(&e);
    ok(s_pg_ctl("start") == 0, "PostgreSQL started again");
    bool acked = false;
    for (int i = 0; i < 20 && !acked; i++) {
        s_send_batch(s, pending, run2, 0, &b4);   /* the agent's resend */
        for (int k = 0; k < 10 && !acked; k++) {
            cc_beat(late);
            acked = cc_wait_ack(s, pending, 100);
        }
    }
    ok(acked, "after the database is back the resent batch is acked");
    {
        Parity__Envelope le;
        Parity__Calibration lc = PARITY__CALIBRATION__INIT;
        double lw[3] = { 500.5, 501.5, 502.5 };
        lc.calibration_id = "cal-late";
        lc.n_wall_us = 3;
        lc.wall_us = lw;
        lc.taken_at_us = cc_unix_us();
        pw_wire_init(&le, 1);
        pw_wire_set_body(&le, PARITY__ENVELOPE__BODY_CALIBRATION, &lc);
        bool hello_acked = false, cal_acked = false;
        for (int i = 0; i < 5 && !cal_acked; i++) {
            cc_send(late, &le);
            int64_t lu = cc_now_ms() + 1000;
            while (cc_now_ms() < lu && !cal_acked) {
                cc_beat(s);
                Parity__Envelope *g = cc_recv(late, 100);
                if (g && g->body_case == PARITY__ENVELOPE__BODY_ACK) {
                    hello_acked |= g->ack->seq == 0;
                    cal_acked |= g->ack->seq == 1;
                }
                pw_wire_free(&g);
            }
        }
        tap_diag("late: hello_acked %d cal_acked %d", hello_acked, cal_acked);
        ok(hello_acked && cal_acked, "the Hello kept while the database was "
           "down is stored by the next data message: Ack{0}, then its Ack");
    }
    zmq_close(late);
    ok(cc_log_has(s_fx.log, "event=db_down", NULL)
       && cc_log_has(s_fx.log, "event=db_up", "migrations_applied=0"),
       "db_down and db_up are logged");
    s_pg = PQconnectdb(s_fx.conninfo);
    ok(s_sql_long("SELECT count(*) FROM batches WHERE batch_seq = 0 AND "
                  "run = (SELECT id FROM runs WHERE run_uuid = 'run-0002')")
       == 1, "stored exactly once");
    ok(s_sql_long("SELECT count(*) FROM hosts WHERE name = 'late'") == 1,
       "the late Hello updated the host's stored name");


    /* ---- quiet calibration runs (017) ---------------------------------
     * Busy runs spread wide, then quiet ones close together: the floor
     * pools every run of the window until 100 quiet ones are there, then
     * those alone, and says so on the host's row. */
    {
        enum { N_BUSY = 150, N_Q1 = 60, N_Q2 = 40 };
        double busy[N_BUSY], quiet[N_Q1 + N_Q2];
        for (unsigned i = 0; i < N_BUSY; i++)
            busy[i] = 3000.0 + (double)((i * 13) % 2000);
        for (unsigned i = 0; i < N_Q1 + N_Q2; i++)
            quiet[i] = 900.0 + (double)((i * 11) % 60) + 0.5;
        int64_t qt0 = cc_unix_us();
        struct { const char *id; double *w; size_t n; bool quiet;
                 int64_t at; } msgs[] = {
            { "cal-busy", busy, N_BUSY, false, qt0 },
            { "cal-quiet-1", quiet, N_Q1, true, qt0 + 1000 },
            { "cal-quiet-2", quiet + N_Q1, N_Q2, true, qt0 + 2000 },
        };
        const char *row = "SELECT floor_quiet::int, floor_samples, "
                          "floor_oldest_us, floor_newest_us FROM hosts WHERE "
                          "name = 'host-1'";
        for (unsigned k = 0; k < 3; k++) {
            Parity__Envelope qe;
            Parity__Calibration qc = PARITY__CALIBRATION__INIT;
            qc.calibration_id = (char *)msgs[k].id;
            qc.n_wall_us = msgs[k].n;
            qc.wall_us = msgs[k].w;
            qc.taken_at_us = msgs[k].at;
            qc.quiet = msgs[k].quiet;
            pw_wire_init(&qe, 900 + k);
            pw_wire_set_body(&qe, PARITY__ENVELOPE__BODY_CALIBRATION, &qc);
            ok(cc_send(s, &qe) == 0 && cc_wait_ack(s, 900 + k, 5000),
               "Calibration %s (quiet %d) acked", msgs[k].id,
               msgs[k].quiet);
            PGresult *qr = PQexec(s_pg, row);
            bool got = PQresultStatus(qr) == PGRES_TUPLES_OK
                       && PQntuples(qr) == 1;
            long q = got ? atol(PQgetvalue(qr, 0, 0)) : -1;
            long n = got ? atol(PQgetvalue(qr, 0, 1)) : -1;
            long long lo = got ? atoll(PQgetvalue(qr, 0, 2)) : -1;
            long long hi = got ? atoll(PQgetvalue(qr, 0, 3)) : -1;
            PQclear(qr);
            if (k < 2)
                ok(q == 0 && n > N_BUSY && hi == msgs[k].at,
                   "%s: fewer than 100 quiet runs: the floor pools every "
                   "run of the window, busy ones too (quiet %ld, %ld runs, "
                   "newest %lld)", msgs[k].id, q, n, hi);
            else
                ok(q == 1 && n == N_Q1 + N_Q2 && lo == qt0 + 1000
                   && hi == qt0 + 2000,
                   "100 quiet runs: the floor is theirs alone (quiet %ld, "
                   "%ld runs, %lld to %lld)", q, n, lo - qt0, hi - qt0);
        }
        double qwant = 0;
        bool dflt = true;
        char qerr[128];
        vd_floor(quiet, N_Q1 + N_Q2, &qwant, &dflt, qerr, sizeof qerr);
        PGresult *fr = PQexec(s_pg, "SELECT floor_us FROM hosts WHERE name "
                              "= 'host-1'");
        double got = PQntuples(fr) == 1 ? strtod(PQgetvalue(fr, 0, 0), NULL)
                                        : -1;
        PQclear(fr);
        ok(got == qwant && !dflt, "its value is vd_floor of the quiet runs: "
           "%.3f us (want %.3f)", got, qwant);
    }

    /* ---- offline detection ---------------------------------------- */
    int offline0 = cc_log_count(s_fx.log, "event=offline",
                                zcert_public_txt(agent));
    ok(s_sql_long("SELECT count(*) FROM hosts WHERE online AND name = "
                  "'host-1'") == 1, "host-1 is online while it beats");
    zmq_close(s);
    s = NULL;
    /* Offline after 5 silent intervals (2.5 s). The collector logs the
     * line before its UPDATE commits and marks the other silent host
     * (late) in the same sweep or the next, so wait for both the line and
     * the rows, up to a deadline far beyond 2.5 s (a loaded ASan run),
     * instead of reading the table the moment the line appears. */
    int64_t until = cc_now_ms() + 15000;
    bool line = false, rows = false;
    while (cc_now_ms() < until && !(line && rows)) {
        usleep(100000);
        line = cc_log_count(s_fx.log, "event=offline", zcert_public_txt(agent))
               > offline0;
        rows = line && s_sql_long("SELECT count(*) FROM hosts WHERE "
                                  "online") == 0;
    }
    tap_diag("offline: line %d rows %d after %lld ms", line, rows,
             (long long)(cc_now_ms() - until + 15000));
    ok(line && rows && cc_log_count(s_fx.log, "event=offline",
                                    zcert_public_txt(agent))
                       == offline0 + 1,
       "a silent agent is marked offline (logged once, stored)");

    /* A second collector on the same data dir is refused. */
    {
        char cmd[3000], log3[700];
        snprintf(log3, sizeof log3, "%s.second", s_fx.log);
        snprintf(cmd, sizeof cmd, "timeout 30 %s --bind tcp://127.0.0.1:0 "
                 "--key %s --allow %s --data-dir %s 2>%s", exe, s_fx.key,
                 s_fx.allow, s_fx.datadir, log3);
        int st = system(cmd);
        char want2[800];
        snprintf(want2, sizeof want2, "data dir %s is in use by another "
                 "parity-collector (pid %d;", s_fx.datadir, (int)col.pid);
        ok(WIFEXITED(st) && WEXITSTATUS(st) == 1
           && cc_log_has(log3, "event=pg_failed", want2),
           "a second collector on the same data dir: exit 1, names the pid");
    }

    /* A host still connected when the collector stops. */
    void *last = cc_dealer(ctx, col.endpoint, agent2, col.public_key);
    cc_hello(last, "connected-at-stop");
    ok(cc_wait_ack(last, 0, 5000)
       && s_sql_long("SELECT count(*) FROM hosts WHERE online") == 1,
       "one host online before the stop (the first collector unharmed)");

    /* ---- SIGUSR1, SIGTERM: counters, exit 0, PostgreSQL stopped ------ */
    kill(col.pid, SIGUSR1);
    until = cc_now_ms() + 3000;
    while (cc_now_ms() < until
           && !cc_log_has(s_fx.log, "event=counters", NULL))
        usleep(50000);
    ok(cc_log_has(s_fx.log, "event=counters", "samples_stored="),
       "SIGUSR1 logs the counters");
    PQfinish(s_pg);
    s_pg = NULL;
    ok(cc_collector_stop(&col, SIGTERM, 30000) == 0, "SIGTERM: exit 0");
    zmq_close(last);
    ok(cc_log_has(s_fx.log, "event=final_counters", "bad_parse=")
       && cc_log_has(s_fx.log, "event=pg_stopped", NULL),
       "final counters logged, PostgreSQL stopped");
    ok(!s_pg_running(), "pg_ctl status: no server running");

    /* ---- restart on the same data dir: reuse, nothing to migrate ---- */
    char logp2[700];
    snprintf(logp2, sizeof logp2, "%s.2", s_fx.log);
    ok(cc_collector_start(&col, cargv, logp2, 60000) == 0,
       "restart on the same data dir");
    snprintf(want, sizeof want, "migrations_applied=0 schema_version=%ld",
             version);
    ok(cc_log_has(logp2, "event=db_up", want), "re-migration applies nothing "
       "(%s)", want);
    s_pg = PQconnectdb(s_fx.conninfo);
    ok(s_sql_long("SELECT count(*) FROM hosts WHERE online") == 0,
       "at start every stored host is offline");
    ok(s_sql_long("SELECT count(*) FROM samples") == (long)total + grouped
                                                    + 1
       && s_sql_long("SELECT count(*) FROM schema_version") == version,
       "the data survived the restart");
    long before_drain = s_sql_long("SELECT count(*) FROM batches");
    PQfinish(s_pg);
    s_pg = NULL;

    /* SIGTERM in the middle of a burst: whatever was acked is stored. */
    void *d = cc_dealer(ctx, col.endpoint, agent, col.public_key);
    cc_hello(d, "host-1");
    ok(cc_wait_ack(d, 0, 5000) && s_send_run_start(d, ++seq, "run-drain",
                                                   "drain") == 0
       && cc_wait_ack(d, seq, 5000), "a run to drain");
    uint64_t first = seq + 1;
    for (unsigned k = 0; k < 40; k++)
        s_send_batch(d, ++seq, "run-drain", k, &b[1]);
    kill(col.pid, SIGTERM);
    int drained = 0;
    for (;;) {
        Parity__Envelope *g = cc_recv(d, 1500);
        if (!g)
            break;
        if (g->body_case == PARITY__ENVELOPE__BODY_ACK && g->ack->seq >= first)
            drained++;
        pw_wire_free(&g);
    }
    zmq_close(d);
    ok(cc_collector_stop(&col, SIGTERM, 30000) == 0,
       "SIGTERM during a burst: exit 0 (%d of 40 batches acked first)",
       drained);
    ok(!s_pg_running(), "and its PostgreSQL is stopped again");
    ok(s_pg_ctl("start") == 0, "(PostgreSQL started by the test to look)");
    s_pg = PQconnectdb(s_fx.conninfo);
    long stored_drain = s_sql_long("SELECT count(*) FROM batches WHERE run = "
                                   "(SELECT id FROM runs WHERE run_uuid = "
                                   "'run-drain')");
    ok(stored_drain >= drained && stored_drain <= 40
       && s_sql_long("SELECT count(*) FROM batches") == before_drain
                                                         + stored_drain,
       "every acked batch is stored (%ld stored, %d acked)", stored_drain,
       drained);
    PQfinish(s_pg);
    s_pg = NULL;
    s_pg_ctl("stop");

    zmq_ctx_term(ctx);
    zcert_destroy(&agent);
    zcert_destroy(&rogue);
    zcert_destroy(&agent2);
    if (cc_files_remove(&s_fx, tap_failed_ == 0) != 0)
        tap_diag("could not remove %s", s_fx.dir);
    else if (tap_failed_ != 0)
        tap_diag("kept %s (collector.log, data/pg.log)", s_fx.dir);
    return tap_done();
}
