/* ingest_load.c -- the collector's ingest benchmark.
 *
 *   ingest-load PATH/TO/parity-collector [--agents 8] [--batches 300]
 *               [--idle 200] [--window 64]
 *
 * Starts a collector with its private PostgreSQL in a temp dir, then:
 *  1. ingest: --agents CURVE DEALER connections on 127.0.0.1, each in its
 *     own thread, each a run of --batches SampleBatch of 512 samples with
 *     up to --window unacked in flight; samples stored AND acked per
 *     second, from the first send to the last ack, checked against
 *     count(*) in the database;
 *  2. the peer: plain binary COPY of the same number of rows (same
 *     columns, same values) into the same table, one COPY per agent's
 *     share, through one libpq connection to the same server;
 *     1 and 2 alternate (COPY, ingest, COPY, ingest ...) for --rounds, so
 *     that neither always meets the bigger table; the best of each;
 *  3. memory: the collector's RSS with --idle more agents connected and
 *     said Hello, minus its RSS before, divided by --idle.
 * Prints one line per figure and a JSON summary last.
 */
#include <arpa/inet.h>
#include <pthread.h>

#include <libpq-fe.h>

#include "../collector/co_client.h"

#define BATCH 512

/* Agents pack every batch before the clock starts, then all start
 * together: packing is the agent's cost, not what this measures. */
static pthread_barrier_t s_start;

typedef struct {
    int index;
    const char *endpoint;
    const char *server_key;
    zcert_t *cert;
    int batches;
    int window;
    uint64_t acked_samples;
    int failed;
} s_agent_t;

static void
s_fill(Parity__Sample *s, Parity__Sample **ps, unsigned agent, unsigned b)
{
    for (unsigned i = 0; i < BATCH; i++) {
        parity__sample__init(&s[i]);
        s[i].kind = PARITY__SAMPLE_KIND__MEASURED;
        s[i].arm = i % 2;
        s[i].round = b * BATCH / 2 + i / 2;
        s[i].position = i % 2;
        s[i].wall_us = 1000.0 + (double)((i * 37 + b) % 97) + agent * 0.5;
        s[i].user_us = 300.25;
        s[i].sys_us = 120.5;
        s[i].maxrss_kb = 2048;
        s[i].cpu = (int32_t)(i % 2);
        s[i].start_unix_us = 1700000000000000 + (int64_t)b * 1000 + i;
        s[i].error = "";
        ps[i] = &s[i];
    }
}

static void *
s_agent(void *arg)
{
    s_agent_t *a = arg;
    void *ctx = zmq_ctx_new();
    void *s = cc_dealer(ctx, a->endpoint, a->cert, a->server_key);
    static __thread Parity__Sample samples[BATCH];
    static __thread Parity__Sample *ps[BATCH];
    char run[64];
    uint64_t seq = 0, sent_batches = 0, acked = 0;
    Parity__Envelope env;

    uint8_t **bufs = calloc((size_t)a->batches, sizeof *bufs);
    size_t *lens = calloc((size_t)a->batches, sizeof *lens);
    bool waited = false;

    snprintf(run, sizeof run, "bench-run-%d-%lld", a->index,
             (long long)cc_unix_us());
    if (cc_hello(s, "bench") != 0 || !cc_wait_ack(s, 0, 10000)) {
        a->failed = 1;
        goto done;
    }
    Parity__RunStart rs = PARITY__RUN_START__INIT;
    Parity__Arm a0 = PARITY__ARM__INIT, a1 = PARITY__ARM__INIT;
    Parity__Arm *arms[] = { &a0, &a1 };
    a0.name = "new";
    a0.subject = 1;
    a1.name = "old";
    rs.run_id = run;
    rs.suite = "bench";
    rs.benchmark = "ingest";
    rs.n_arms = 2;
    rs.arms = arms;
    pw_wire_init(&env, ++seq);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_RUN_START, &rs);
    if (cc_send(s, &env) != 0 || !cc_wait_ack(s, seq, 10000)) {
        a->failed = 1;
        goto done;
    }
    uint64_t first_batch_seq = seq + 1;
    for (int b = 0; b < a->batches; b++) {
        Parity__SampleBatch sb = PARITY__SAMPLE_BATCH__INIT;
        s_fill(samples, ps, (unsigned)a->index, (unsigned)b);
        sb.run_id = run;
        sb.batch_seq = (uint32_t)b;
        sb.n_samples = BATCH;
        sb.samples = ps;
        pw_wire_init(&env, first_batch_seq + (uint64_t)b);
        pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &sb);
        if (pw_wire_pack_alloc(&env, &bufs[b], &lens[b], NULL, 0)
            != PW_WIRE_OK) {
            a->failed = 1;
            goto done;
        }
    }
    pthread_barrier_wait(&s_start);
    waited = true;
    int inflight = 0;
    while (acked < (uint64_t)a->batches) {
        while (sent_batches < (uint64_t)a->batches && inflight < a->window) {
            if (zmq_send(s, bufs[sent_batches], lens[sent_batches], 0) < 0) {
                a->failed = 1;
                goto done;
            }
            sent_batches++;
            inflight++;
        }
        Parity__Envelope *e = cc_recv(s, 30000);
        if (!e) {
            a->failed = 1;
            goto done;
        }
        if (e->body_case == PARITY__ENVELOPE__BODY_ACK
            && e->ack->seq >= first_batch_seq) {
            acked++;
            inflight--;
        }
        pw_wire_free(&e);
    }
    a->acked_samples = acked * BATCH;
done:
    if (!waited)
        pthread_barrier_wait(&s_start);
    for (int b = 0; b < a->batches; b++)
        free(bufs[b]);
    free(bufs);
    free(lens);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return NULL;
}

static long
s_rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

/* CPU seconds (user + system) the process has used so far. */
static double
s_cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    unsigned long ut = 0, st = 0;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    /* Fields after the command name, which ends at the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                     "%lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double
s_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the peer: plain binary COPY ------------------------------------- */

static char *s_buf;
static size_t s_len, s_cap;

static void
s_put(const void *p, size_t n)
{
    if (s_len + n > s_cap) {
        s_cap = s_cap ? s_cap * 2 : 1 << 20;
        while (s_cap < s_len + n)
            s_cap *= 2;
        s_buf = realloc(s_buf, s_cap);
    }
    memcpy(s_buf + s_len, p, n);
    s_len += n;
}
static void s_i16(int16_t v) { uint16_t b = htons((uint16_t)v); s_put(&b, 2); }
static void s_i32(int32_t v) { uint32_t b = htonl((uint32_t)v); s_put(&b, 4); }
static void
s_u64(uint64_t v)
{
    s_i32((int32_t)(v >> 32));
    s_i32((int32_t)v);
}
static void s_f_i16(int16_t v) { s_i32(2); s_i16(v); }
static void s_f_i32(int32_t v) { s_i32(4); s_i32(v); }
static void s_f_i64(int64_t v) { s_i32(8); s_u64((uint64_t)v); }
static void
s_f_f64(double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    s_i32(8);
    s_u64(b);
}

/* COPY rows*batches samples for one fake run id into samples; returns
 * seconds, or -1. */
static double
s_copy_peer(PGconn *c, int agents, int batches)
{
    Parity__Sample samples[BATCH];
    Parity__Sample *ps[BATCH];
    double t0 = s_now_s();
    for (int a = 0; a < agents; a++) {
        s_len = 0;
        s_put("PGCOPY\n\377\r\n", 11);
        s_i32(0);
        s_i32(0);
        for (int b = 0; b < batches; b++) {
            s_fill(samples, ps, (unsigned)a, (unsigned)b);
            for (int i = 0; i < BATCH; i++) {
                Parity__Sample *x = &samples[i];
                s_i16(16);
                s_f_i64(-1 - a);   /* a run id no real run has */
                s_f_i32(b);
                s_f_i32(i);
                s_f_i16((int16_t)x->kind);
                s_f_i32((int32_t)x->arm);
                s_f_i32((int32_t)x->round);
                s_f_i32((int32_t)x->position);
                s_f_f64(x->wall_us);
                s_f_f64(x->user_us);
                s_f_f64(x->sys_us);
                s_f_i64(x->maxrss_kb);
                s_f_i32(x->exit_status);
                s_f_i32(x->term_signal);
                s_f_i32(x->cpu);
                s_f_i64(x->start_unix_us);
                s_i32(0);   /* error: empty text */
            }
        }
        s_i16(-1);
        PGresult *r = PQexec(c, "COPY samples (run, batch_seq, idx, kind, "
                             "arm, round, position, wall_us, user_us, sys_us, "
                             "maxrss_kb, exit_status, term_signal, cpu, "
                             "start_unix_us, error) FROM STDIN (FORMAT binary)");
        if (PQresultStatus(r) != PGRES_COPY_IN) {
            fprintf(stderr, "ingest-load: COPY: %s", PQerrorMessage(c));
            PQclear(r);
            return -1;
        }
        PQclear(r);
        if (PQputCopyData(c, s_buf, (int)s_len) != 1
            || PQputCopyEnd(c, NULL) != 1)
            return -1;
        int bad = 0;
        while ((r = PQgetResult(c)) != NULL) {
            bad |= PQresultStatus(r) != PGRES_COMMAND_OK;
            PQclear(r);
        }
        if (bad) {
            fprintf(stderr, "ingest-load: COPY: %s", PQerrorMessage(c));
            return -1;
        }
    }
    return s_now_s() - t0;
}

static long
s_sql_long(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    long v = PQresultStatus(r) == PGRES_TUPLES_OK ? atol(PQgetvalue(r, 0, 0))
                                                  : -1;
    PQclear(r);
    return v;
}

int
main(int argc, char **argv)
{
    int agents = 8, batches = 300, idle = 200, window = 64, rounds = 3;
    if (argc < 2) {
        fprintf(stderr, "usage: ingest-load PATH/TO/parity-collector "
                "[--agents N] [--batches N] [--idle N] [--window N]\n");
        return 2;
    }
    for (int i = 2; i + 1 < argc; i += 2) {
        int v = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--agents") == 0 && v > 0 && v <= 64)
            agents = v;
        else if (strcmp(argv[i], "--batches") == 0 && v > 0 && v <= 100000)
            batches = v;
        else if (strcmp(argv[i], "--idle") == 0 && v >= 0 && v <= 2000)
            idle = v;
        else if (strcmp(argv[i], "--window") == 0 && v > 0 && v <= 64)
            window = v;
        else if (strcmp(argv[i], "--rounds") == 0 && v > 0 && v <= 10)
            rounds = v;
        else {
            fprintf(stderr, "ingest-load: bad option %s %s\n", argv[i],
                    argv[i + 1]);
            return 2;
        }
    }
    cc_files_t fx;
    if (cc_files_make(&fx, "/tmp/parity-ingest-XXXXXX") != 0)
        return 1;
    int total_certs = agents + idle;
    zcert_t **certs = calloc((size_t)total_certs, sizeof *certs);
    cc_files_allow_new(&fx, "a", total_certs, certs);
    char *cargv[] = { argv[1], "--bind", "tcp://127.0.0.1:0", "--key",
                      fx.key, "--allow", fx.allow, "--data-dir", fx.datadir,
                      "--log-level", "warn", NULL };
    /* --log-level warn hides "listening"; start at info instead. */
    cargv[9] = "--log-level";
    cargv[10] = "info";
    cc_collector_t col;
    if (cc_collector_start(&col, cargv, fx.log, 60000) != 0) {
        fprintf(stderr, "ingest-load: collector did not start, see %s\n",
                fx.log);
        return 1;
    }
    PGconn *pg = PQconnectdb(fx.conninfo);

    /* 3. memory per connected idle agent, first: after the ingest the
     * heap has room to spare and would hide what connections cost. */
    usleep(500000);
    long rss0 = s_rss_kb(col.pid);
    void *ctx = zmq_ctx_new();
    int maxs = 4096;
    zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, maxs);
    void **idle_s = calloc((size_t)(idle ? idle : 1), sizeof *idle_s);
    int said = 0;
    for (int i = 0; i < idle; i++) {
        idle_s[i] = cc_dealer(ctx, col.endpoint, certs[agents + i],
                              col.public_key);
        if (cc_hello(idle_s[i], "idle") == 0)
            said++;
    }
    int acks = 0;
    for (int i = 0; i < idle; i++)
        acks += cc_wait_ack(idle_s[i], 0, 10000);
    usleep(1500000);   /* a few heartbeats */
    long rss1 = s_rss_kb(col.pid);
    double per = idle ? (double)(rss1 - rss0) * 1024.0 / idle : 0;
    printf("memory: RSS %ld kB -> %ld kB with %d idle agents (%d acked "
           "Hello) = %.1f KiB per agent\n", rss0, rss1, idle, acks,
           per / 1024.0);
    for (int i = 0; i < idle; i++)
        zmq_close(idle_s[i]);
    zmq_ctx_term(ctx);

    pthread_t *th = calloc((size_t)agents, sizeof *th);
    s_agent_t *ag = calloc((size_t)agents, sizeof *ag);
    double best_rate = 0, best_copy = 0, t_ingest = 0, t_copy = 0;
    double ratios[10] = { 0 };
    uint64_t acked = 0, acked_all = 0;
    int failed = 0;
    long stored = 0;
  for (int round = 0; round < rounds; round++) {
    /* 2. the peer: plain COPY of as many rows into the same table */
    t_copy = s_copy_peer(pg, agents, batches);
    double copy_rate = t_copy > 0 ? (double)agents * batches * BATCH / t_copy
                                  : 0;
    printf("round %d peer (plain binary COPY, same rows, same table): "
           "%.2f s = %.0f rows/s\n", round + 1, t_copy, copy_rate);
    if (copy_rate > best_copy)
        best_copy = copy_rate;

    /* 1. ingest through the collector */
    acked = 0;
    long stored0 = s_sql_long(pg, "SELECT count(*) FROM samples WHERE run > 0");
    pthread_barrier_init(&s_start, NULL, (unsigned)agents + 1);
    for (int i = 0; i < agents; i++) {
        ag[i] = (s_agent_t){ .index = i, .endpoint = col.endpoint,
                             .server_key = col.public_key, .cert = certs[i],
                             .batches = batches, .window = window };
        pthread_create(&th[i], NULL, s_agent, &ag[i]);
    }
    pthread_barrier_wait(&s_start);
    double cpu0 = s_cpu_s(col.pid);
    double t0 = s_now_s();
    for (int i = 0; i < agents; i++) {
        pthread_join(th[i], NULL);
        acked += ag[i].acked_samples;
        failed += ag[i].failed;
    }
    pthread_barrier_destroy(&s_start);
    t_ingest = s_now_s() - t0;
    double cpu = s_cpu_s(col.pid) - cpu0;
    long stored_round = s_sql_long(pg, "SELECT count(*) FROM samples WHERE "
                                   "run > 0") - stored0;
    stored += stored_round;
    acked_all += acked;
    double rate = (double)acked / t_ingest;
    printf("round %d ingest: %d agents x %d batches x %d samples: %llu "
           "acked, %ld stored in %.2f s = %.0f samples/s (collector CPU "
           "%.2f s) ratio to this round's COPY %.1f %%%s\n", round + 1,
           agents, batches, BATCH, (unsigned long long)acked, stored_round,
           t_ingest, rate, cpu, copy_rate > 0 ? 100 * rate / copy_rate : 0,
           failed ? " (SOME AGENTS FAILED)" : "");
    ratios[round] = copy_rate > 0 ? rate / copy_rate : 0;
    if (rate > best_rate)
        best_rate = rate;
  }
    double rate = best_rate, copy_rate = best_copy;
    acked = acked_all;
    /* The ratio is paired: each round's ingest against the COPY just
     * before it (the same load and table size); the median of those. */
    for (int i = 1; i < rounds; i++)
        for (int j = i; j > 0 && ratios[j - 1] > ratios[j]; j--) {
            double t = ratios[j];
            ratios[j] = ratios[j - 1];
            ratios[j - 1] = t;
        }
    double ratio = rounds % 2 ? ratios[rounds / 2]
                              : (ratios[rounds / 2 - 1] + ratios[rounds / 2]) / 2;
    printf("best ingest %.0f samples/s, best COPY %.0f rows/s; median "
           "paired ratio collector/COPY %.1f %%\n", rate, copy_rate,
           100.0 * ratio);

    printf("{\"rounds\":%d,\"agents\":%d,\"batches\":%d,\"samples_acked\":%llu,"
           "\"samples_stored\":%ld,\"last_ingest_s\":%.3f,\"ingest_per_s\":%.0f,"
           "\"last_copy_s\":%.3f,\"copy_per_s\":%.0f,\"ratio\":%.3f,"
           "\"idle_agents\":%d,\"rss_before_kb\":%ld,\"rss_after_kb\":%ld,"
           "\"kib_per_agent\":%.1f}\n", rounds, agents, batches,
           (unsigned long long)acked, stored, t_ingest, rate, t_copy,
           copy_rate, ratio, idle, rss0,
           rss1, per / 1024.0);
    PQfinish(pg);
    int st = cc_collector_stop(&col, SIGTERM, 60000);
    for (int i = 0; i < total_certs; i++)
        zcert_destroy(&certs[i]);
    free(certs);
    free(th);
    free(ag);
    free(idle_s);
    free(s_buf);
    /* How well group commit grouped: from the collector's last line. */
    {
        char line[8192];
        long groups = -1;
        FILE *f = fopen(fx.log, "r");
        while (f && fgets(line, sizeof line, f)) {
            const char *g = strstr(line, "event=final_counters");
            g = g ? strstr(g, " groups=") : NULL;
            if (g)
                groups = atol(g + 8);
        }
        if (f)
            fclose(f);
        if (groups > 0)
            printf("group commit: %ld transactions for %d batches = %.1f "
                   "batches each\n", groups, rounds * agents * batches,
                   (double)rounds * agents * batches / (double)groups);
    }
    if (cc_files_remove(&fx, true) != 0)
        fprintf(stderr, "ingest-load: could not remove %s\n", fx.dir);
    return failed || st != 0 || (long)acked != stored ? 1 : 0;
}
