/* fleet_load.c -- the fleet load benchmark: many CURVE
 * agents, some streaming runs, and an admin client querying, against a
 * running parity-collector on 127.0.0.1. tests/bench/fleet_load.sh starts
 * the collector, loads its history and runs this.
 *
 *   fleet-load keygen DIR N
 *       DIR/collector{,_secret}, DIR/admin/admin (public), DIR/secret/
 *       admin_secret, DIR/allow/aNNNN (public), DIR/secret/aNNNN_secret,
 *       DIR/agent_keys.txt ("INDEX\tNAME\tZ85" per agent). Keys already
 *       there are kept: a cached history names its hosts by these keys.
 *   fleet-load run --endpoint tcp://127.0.0.1:PORT[,PORT2...] --keys DIR
 *       [--agents 1000] [--streamers 100] [--duration 300]
 *       [--heartbeat-ms 1000] [--rounds 200] [--batch-ms 1000]
 *       [--job-every 60] [--collector-pid PID] [--collector-log FILE]
 *       [--queries 1]  (0: no hosts/verdicts/history/regressions loop)
 *       [--batch-samples 128]
 *
 * One process, one ZeroMQ context. The agents share one loop: epoll over
 * their sockets' ZMQ_FDs (fl_pump; zmq_poll over 1,001 sockets was most
 * of its CPU). While the load is measured the admin client runs on a
 * thread of its own (fl_admin_main), as it would be a program of its
 * own: decoding a `hosts` reply of 1,000 hosts (~650 KB) took the
 * agents' loop 24 ms, and every Ack arriving meanwhile waited for it.
 * Agents (names fl-0000 ...) say Hello with the suite "fleet" (bench0..3)
 * and tag role=stream|idle, beat every --heartbeat-ms, and behave as the
 * protocol asks an agent to (docs/protocol.md sections 5 and 6): at most
 * 64 unacked data messages, resend all of them when no Ack came for 5 s
 * and after a reconnect, and reconnect (new socket, Hello) after 5 silent
 * heartbeat intervals with back-off 0.5 s doubling to 16 s times
 * [0.5, 1.5). The first --streamers agents stream runs back to back:
 * RunStart, SampleBatches of --batch-samples (at most 512) one every
 * --batch-ms (an agent flushes a batch once it is 1 s old: a benchmark of
 * ~10 ms per process makes ~100 samples a second),
 * RunEnd with the right counts, a Calibration of 100 samples every 20
 * runs; they take JobOffers (JobStatus running, one run with the job id,
 * JobStatus done). The admin client loops over hosts, verdicts, history
 * and regressions, asks `stats` every 10 s and creates a job for every
 * streamer (`run`, hosts ["role=stream"], only bench0) every --job-every
 * seconds.
 *
 * Measured from the end of the connect ramp to --duration later:
 *  - ack latency of every data message, first send to its Ack;
 *  - verdict latency: RunEnd sent to its Ack (the collector acks a RunEnd
 *    only after the transaction holding the run's verdicts committed);
 *  - each request's time; hosts_ms etc. are medians, *_max_ms maxima;
 *  - false_offline: agents the collector called offline while they were
 *    alive: distinct names in the collector's `event=offline` log lines
 *    written during the load, together with the greeted agents a `hosts`
 *    reply said were not online;
 *  - lost_jobs: host rows of the jobs this run created that ended `lost`
 *    (the `jobs` request at the end);
 *  - heartbeats_missed: collector Heartbeats an agent should have had
 *    (one per interval while greeted) and did not get; silence_max_ms the
 *    longest any agent heard nothing at all;
 *  - collector RSS from /proc/PID/status (VmHWM, VmRSS).
 * The last line is one JSON object. Bounded: every count, wait and
 * duration has a cap; only loopback endpoints are accepted.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <czmq.h>
#include <jansson.h>
#include <zmq.h>

#include "pw_clock.h"
#include "pw_wire.h"

#define FL_AGENTS_MAX     5000
#define FL_WINDOW         64       /* unacked data messages per agent */
#define FL_RESEND_MS      5000     /* no Ack for this long: resend all */
#define FL_SILENT_BEATS   5        /* heartbeat intervals before reconnect */
#define FL_BACKOFF_MIN_MS 500
#define FL_BACKOFF_MAX_MS 16000
#define FL_BATCH          512
#define FL_CAL_SAMPLES    100
#define FL_CAL_EVERY_RUNS 20
#define FL_BENCHMARKS     4
#define FL_LAT_MAX        (20u << 20)  /* latencies kept per kind */
#define FL_REQ_TIMEOUT_MS 120000
#define FL_RAMP_MAX_MS    120000
#define FL_DRAIN_MS       30000
#define FL_STATS_EVERY_MS 10000
#define FL_NAMES_MAX      64

/* ---- latency samples ------------------------------------------------ */

/* A growable array of milliseconds, at most FL_LAT_MAX kept (dropped
 * counts the rest; the maximum still sees them). */
typedef struct {
    float *ms;
    size_t n, cap, dropped;
    double max;
} fl_lat_t;

static void
fl_lat_add(fl_lat_t *l, double ms)
{
    if (ms > l->max)
        l->max = ms;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        float *p = cap <= FL_LAT_MAX ? realloc(l->ms, cap * sizeof *p) : NULL;
        if (!p) {
            l->dropped++;
            return;
        }
        l->ms = p;
        l->cap = cap;
    }
    l->ms[l->n++] = (float)ms;
}

static int
fl_cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static void
fl_lat_sort(fl_lat_t *l)
{
    if (l->n)
        qsort(l->ms, l->n, sizeof *l->ms, fl_cmp_float);
}

/* Quantile q of a sorted array; NAN when empty. */
static double
fl_lat_q(const fl_lat_t *l, double q)
{
    if (!l->n)
        return NAN;
    size_t i = (size_t)ceil(q * (double)l->n);
    i = i ? i - 1 : 0;
    return l->ms[i < l->n ? i : l->n - 1];
}

/* A JSON number, or null for NAN. */
static void
fl_json_num(FILE *f, const char *key, double x, const char *sep)
{
    if (isnan(x))
        fprintf(f, "\"%s\":null%s", key, sep);
    else
        fprintf(f, "\"%s\":%.3f%s", key, x, sep);
}

/* ---- agents --------------------------------------------------------- */

enum { FL_K_OTHER, FL_K_RUN_END };

typedef struct {
    uint64_t seq;
    double first_ms;        /* first send */
    uint8_t *buf;
    size_t len;
    int kind;
} fl_msg_t;

enum { FL_RUN_IDLE, FL_RUN_BATCHES, FL_RUN_DONE };

typedef struct {
    int index;
    char name[32];
    zcert_t *cert;
    void *sock;               /* NULL while waiting to reconnect */
    bool streamer;
    bool greeted;             /* Ack{0} on this connection */
    int64_t greeted_at_ms;
    int64_t connected_ms;
    int64_t last_heard_ms;    /* any frame from the collector */
    int64_t next_beat_ms;
    int64_t reconnect_at_ms;
    int backoff_ms;
    uint64_t beats_in;        /* collector Heartbeats while measuring */
    int64_t beat_expect_from_ms; /* greeted and measuring since */
    uint64_t beats_expected;
    /* data */
    uint64_t seq;
    fl_msg_t win[FL_WINDOW];
    int nwin;
    int64_t last_progress_ms; /* last Ack, or last resend */
    /* streaming */
    int run_state;
    unsigned runs_done;
    char run_id[64];
    unsigned batch_seq, nbatches;
    uint64_t run_samples;
    int64_t next_send_ms;
    char job_id[32];          /* the job of the current run, or "" */
    char job_next[32];        /* offered, not started */
    bool job_done_pending;    /* JobStatus done still to send */
    bool check;               /* look at ZMQ_EVENTS at the next pump */
} fl_agent_t;

#define FL_MAX_ENDPOINTS 8

typedef struct {
    const char *endpoint;
    /* --endpoint A,B,...: agent i connects to endpoints[i % n] (several
     * collectors on one database); the admin client to the
     * first. */
    char *endpoints[FL_MAX_ENDPOINTS];
    int nendpoints;
    const char *keys;
    int agents, streamers, duration_s, heartbeat_ms, rounds, batch_ms;
    int herd;   /* --phase batch: every streamer's runs in step */
    int batch_samples;        /* samples per SampleBatch, <= 512 */
    int job_every_s;
    int queries;              /* 0: the admin loop asks only stats */
    int slow_ms;              /* >0: each Ack later than this to slow */
    FILE *slow;               /* --slow-log */
    pid_t collector_pid;
    const char *collector_log;
    const char *collector_log2;   /* the second collector's, or NULL */
} fl_opts_t;

typedef struct {
    fl_lat_t ack, verdict;
    uint64_t data_sent, acked, resends, reconnects, refused, no_hello;
    uint64_t send_failed, unexpected;
    uint64_t samples_sent;
    uint64_t hello_acks;
    int64_t silence_max_ms;
    bool measuring;
    int64_t measure_from_ms, measure_until_ms;
} fl_stats_t;

static fl_stats_t S;
static fl_opts_t O;
static void *s_ctx;
static char s_server_key[41];
static uint8_t s_server_key_bin[32];
static volatile sig_atomic_t s_stop;

static void
fl_on_signal(int sig)
{
    (void)sig;
    s_stop = 1;
}

/* The sockets are watched with epoll on their ZMQ_FD, not with
 * zmq_poll: zmq_poll over 1,001 sockets asks each one for its events
 * on every call (two system calls a socket), and that was 60 % of a
 * core of this 2-core machine, taken from the collector it measures
 * (perf: getpid and poll). ZMQ_FD only says "look at ZMQ_EVENTS", and
 * a send that ran the socket's commands may have taken the signal of a
 * message now waiting, so a socket is looked at when its fd fires and
 * again after every send on it (fl_agent_t.check). */
static int s_ep = -1;
/* Each agent's greeted_at_ms while it is greeted, else -1 (fl_greeted):
 * what the admin thread's hosts check reads. The agents themselves
 * belong to the main thread. */
static _Atomic int64_t *s_alive_since;
/* The admin client runs on its thread (A belongs to it): the main
 * thread neither reads its socket nor ticks it. Main thread only. */
static bool s_admin_threaded;
static atomic_bool s_admin_stop;

static void
fl_greeted(fl_agent_t *a, bool greeted, int64_t now)
{
    a->greeted = greeted;
    if (greeted)
        a->greeted_at_ms = now;
    atomic_store_explicit(&s_alive_since[a->index], greeted ? now : -1,
                          memory_order_relaxed);
}

static uint64_t s_sends;      /* zmq_send calls, to see which tick sent */
static bool s_again = true;   /* a socket to look at: do not wait */

static int
fl_send(void *s, const void *buf, size_t len)
{
    s_sends++;
    return zmq_send(s, buf, len, ZMQ_DONTWAIT);
}

/* tag: the agent's index + 1, 0 the admin client. */
static int
fl_watch(void *s, uint32_t tag)
{
    int fd;
    size_t len = sizeof fd;
    if (zmq_getsockopt(s, ZMQ_FD, &fd, &len) != 0)
        return -1;
    struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };
    return epoll_ctl(s_ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Out of the epoll set before zmq_close: libzmq closes the fd later,
 * and its number may come back for a new socket meanwhile. */
static void
fl_close(void **sp)
{
    void *s = *sp;
    int fd = -1;
    size_t len = sizeof fd;
    *sp = NULL;
    if (!s)
        return;
    if (zmq_getsockopt(s, ZMQ_FD, &fd, &len) == 0)
        epoll_ctl(s_ep, EPOLL_CTL_DEL, fd, NULL);
    zmq_close(s);
}

static bool
fl_readable(void *s)
{
    int ev = 0;
    size_t len = sizeof ev;
    return s && zmq_getsockopt(s, ZMQ_EVENTS, &ev, &len) == 0
           && (ev & ZMQ_POLLIN);
}

static void *
fl_socket(zcert_t *cert, const char *endpoint, uint32_t tag)
{
    void *s = zmq_socket(s_ctx, ZMQ_DEALER);
    if (!s)
        return NULL;
    int linger = 0, sndhwm = 1000, rcvhwm = 1000;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_SNDHWM, &sndhwm, sizeof sndhwm);
    zmq_setsockopt(s, ZMQ_RCVHWM, &rcvhwm, sizeof rcvhwm);
    zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, s_server_key_bin, 32);
    zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, zcert_public_key(cert), 32);
    zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, zcert_secret_key(cert), 32);
    if (zmq_connect(s, endpoint) != 0 || fl_watch(s, tag) != 0) {
        zmq_close(s);
        return NULL;
    }
    return s;
}

static int
fl_send_env(void *s, const Parity__Envelope *env, uint8_t **keep,
            size_t *keep_len)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (pw_wire_pack_alloc(env, &buf, &len, NULL, 0) != PW_WIRE_OK)
        return -1;
    int rc = s ? fl_send(s, buf, len) : -1;
    if (rc < 0)
        S.send_failed++;
    if (keep) {
        *keep = buf;
        *keep_len = len;
    } else {
        free(buf);
    }
    return 0;
}

static void
fl_hello(fl_agent_t *a)
{
    Parity__Envelope env;
    Parity__Hello h = PARITY__HELLO__INIT;
    Parity__SuiteInfo si = PARITY__SUITE_INFO__INIT;
    Parity__SuiteInfo *sis[] = { &si };
    Parity__Tag t0 = PARITY__TAG__INIT, t1 = PARITY__TAG__INIT;
    Parity__Tag *tags[] = { &t0, &t1 };
    char *bench[FL_BENCHMARKS] = { "bench0", "bench1", "bench2", "bench3" };
    char fp[41];
    zmq_z85_encode(fp, zcert_public_key(a->cert), 32);
    si.name = "fleet";
    si.n_benchmarks = FL_BENCHMARKS;
    si.benchmarks = bench;
    si.digest = "0000000000000000000000000000000000000000000000000000000000f1ee70";
    t0.key = "role";
    t0.value = a->streamer ? "stream" : "idle";
    t1.key = "arch";
    t1.value = "x86_64";
    h.agent_name = a->name;
    h.agent_version = "fleet-load";
    h.key_fingerprint = fp;
    h.environment_json = "{\"cpu_model\":\"fleet-load CPU\",\"kernel\":"
                         "\"6.1.0\",\"arch\":\"x86_64\",\"logical_cpus\":2}";
    h.n_suites = 1;
    h.suites = sis;
    h.n_tags = 2;
    h.tags = tags;
    /* Each agent its own machine, as on a fleet: one shared boot id
     * would make the collector run jobs on one agent at a time (one
     * machine) and list every other agent under each host's
     * same_machine (2,000 x 1,999 names: more than a frame). */
    char boot[48];
    snprintf(boot, sizeof boot, "fleet-load-%d", a->index);
    h.boot_id = boot;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_HELLO, &h);
    fl_send_env(a->sock, &env, NULL, NULL);
}

static void
fl_connect(fl_agent_t *a, int64_t now)
{
    a->sock = fl_socket(a->cert, O.endpoints[a->index % O.nendpoints],
                        (uint32_t)a->index + 1);
    a->check = true;
    s_again = true;
    fl_greeted(a, false, now);
    a->connected_ms = now;
    a->last_heard_ms = now;
    a->next_beat_ms = now + O.heartbeat_ms;
    a->reconnect_at_ms = 0;
    if (a->sock)
        fl_hello(a);
}

/* Close the socket after 5 silent intervals; reconnect after back-off. */
static void
fl_give_up(fl_agent_t *a, int64_t now)
{
    fl_close(&a->sock);
    fl_greeted(a, false, now);
    if (S.measuring) {
        S.reconnects++;
        if (now - a->last_heard_ms > S.silence_max_ms)
            S.silence_max_ms = now - a->last_heard_ms;
    }
    if (a->beat_expect_from_ms) {
        a->beats_expected += (uint64_t)((now - a->beat_expect_from_ms)
                                        / O.heartbeat_ms);
        a->beat_expect_from_ms = 0;
    }
    double f = 0.5 + (double)rand() / ((double)RAND_MAX + 1.0);
    a->reconnect_at_ms = now + (int64_t)(a->backoff_ms * f);
    a->backoff_ms = a->backoff_ms * 2 > FL_BACKOFF_MAX_MS
                        ? FL_BACKOFF_MAX_MS : a->backoff_ms * 2;
}

/* Send msg, the body of a data message, under the agent's next seq, and
 * keep it for resend. With a full window the caller must not call this. */
static void
fl_send_data(fl_agent_t *a, Parity__Envelope__BodyCase body, void *msg,
             int kind)
{
    Parity__Envelope env;
    pw_wire_init(&env, ++a->seq);
    pw_wire_set_body(&env, body, msg);
    fl_msg_t *m = &a->win[a->nwin];
    m->seq = env.seq;
    m->kind = kind;
    m->first_ms = (pw_clock_mono_sec() * 1e3);
    if (fl_send_env(a->greeted ? a->sock : NULL, &env, &m->buf, &m->len) != 0)
        return;
    if (!a->greeted)
        S.send_failed--;   /* not a failure: sent after the Hello's Ack */
    if (a->nwin == 0)
        a->last_progress_ms = pw_clock_mono_ms();
    a->nwin++;
    S.data_sent++;
}

static void
fl_resend_all(fl_agent_t *a, int64_t now)
{
    for (int i = 0; i < a->nwin && a->sock; i++) {
        if (fl_send(a->sock, a->win[i].buf, a->win[i].len) < 0)
            S.send_failed++;
        S.resends++;
    }
    a->last_progress_ms = now;
}

static void
fl_job_status(fl_agent_t *a, const char *job, const char *state)
{
    Parity__JobStatus js = PARITY__JOB_STATUS__INIT;
    js.job_id = (char *)job;
    js.state = (char *)state;
    js.run_id = a->run_id;
    js.benchmark = "bench0";
    fl_send_data(a, PARITY__ENVELOPE__BODY_JOB_STATUS, &js, FL_K_OTHER);
}

static void
fl_calibration(fl_agent_t *a)
{
    double wall[FL_CAL_SAMPLES];
    char id[80];
    Parity__Calibration c = PARITY__CALIBRATION__INIT;
    for (int i = 0; i < FL_CAL_SAMPLES; i++)
        wall[i] = 30.0 + (double)((i * 37 + a->index) % 100) / 10.0;
    snprintf(id, sizeof id, "fl-cal-%d-%u-%lld", a->index, a->runs_done,
             (long long)pw_clock_unix_us());
    c.calibration_id = id;
    c.n_wall_us = FL_CAL_SAMPLES;
    c.wall_us = wall;
    c.taken_at_us = pw_clock_unix_us();
    fl_send_data(a, PARITY__ENVELOPE__BODY_CALIBRATION, &c, FL_K_OTHER);
}

static void
fl_run_start(fl_agent_t *a)
{
    Parity__RunStart rs = PARITY__RUN_START__INIT;
    Parity__Arm a0 = PARITY__ARM__INIT, a1 = PARITY__ARM__INIT;
    Parity__Arm *arms[] = { &a0, &a1 };
    char *argv[] = { "/bin/true" };
    snprintf(a->run_id, sizeof a->run_id, "fl-run-%d-%u-%lld", a->index,
             a->runs_done, (long long)pw_clock_unix_us());
    a0.name = "new";
    a0.subject = 1;
    a0.n_argv = 1;
    a0.argv = argv;
    a1.name = "old";
    a1.n_argv = 1;
    a1.argv = argv;
    rs.run_id = a->run_id;
    rs.job_id = a->job_id;
    rs.suite = "fleet";
    rs.benchmark = a->job_id[0] ? "bench0"
                                : (char *[]){ "bench0", "bench1", "bench2",
                                              "bench3" }[a->runs_done % 4];
    rs.n_arms = 2;
    rs.arms = arms;
    rs.started_at_us = pw_clock_unix_us();
    rs.runs = (uint32_t)O.rounds;
    rs.environment_json = "";
    fl_send_data(a, PARITY__ENVELOPE__BODY_RUN_START, &rs, FL_K_OTHER);
    a->batch_seq = 0;
    a->nbatches = (unsigned)((O.rounds * 3 + O.batch_samples - 1)
                             / O.batch_samples);
    a->run_samples = 0;
    a->run_state = FL_RUN_BATCHES;
}

/* Batch b of the current run: samples k = b*512 .. of rounds*3; sample k
 * is round k/3, position k%3: the round's calibration no-op, then arms
 * "new" and "old". */
static void
fl_batch(fl_agent_t *a)
{
    static Parity__Sample smp[FL_BATCH];
    static Parity__Sample *ps[FL_BATCH];
    Parity__SampleBatch sb = PARITY__SAMPLE_BATCH__INIT;
    unsigned total = (unsigned)O.rounds * 3;
    unsigned first = a->batch_seq * (unsigned)O.batch_samples;
    unsigned per = (unsigned)O.batch_samples;
    unsigned n = total - first < per ? total - first : per;
    int64_t t = pw_clock_unix_us();
    for (unsigned i = 0; i < n; i++) {
        unsigned k = first + i;
        parity__sample__init(&smp[i]);
        smp[i].kind = k % 3 == 0 ? PARITY__SAMPLE_KIND__CALIBRATION
                                 : PARITY__SAMPLE_KIND__MEASURED;
        smp[i].arm = k % 3 == 2 ? 1 : 0;
        smp[i].round = k / 3;
        smp[i].position = k % 3;
        smp[i].wall_us = k % 3 == 0 ? 30.0 + (double)(k % 97) / 10.0
                                    : 1000.0 + (double)((k * 13 + a->index)
                                                        % 101) / 10.0;
        smp[i].user_us = 300.0;
        smp[i].sys_us = 100.0;
        smp[i].maxrss_kb = 2048;
        smp[i].cpu = (int32_t)(k % 2);
        smp[i].start_unix_us = t - (int64_t)(n - i) * 1000;
        smp[i].error = "";
        ps[i] = &smp[i];
    }
    sb.run_id = a->run_id;
    sb.batch_seq = a->batch_seq;
    sb.n_samples = n;
    sb.samples = ps;
    fl_send_data(a, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &sb, FL_K_OTHER);
    a->batch_seq++;
    a->run_samples += n;
    S.samples_sent += n;
}

static void
fl_run_end(fl_agent_t *a)
{
    Parity__RunEnd re = PARITY__RUN_END__INIT;
    re.run_id = a->run_id;
    re.status = PARITY__RUN_STATUS__COMPLETE;
    re.reason = "";
    re.batches = a->batch_seq;
    re.samples = a->run_samples;
    re.ended_at_us = pw_clock_unix_us();
    fl_send_data(a, PARITY__ENVELOPE__BODY_RUN_END, &re, FL_K_RUN_END);
    a->runs_done++;
    a->run_state = FL_RUN_IDLE;
}

/* One streaming step when due and the window has room. */
static void
fl_stream(fl_agent_t *a, int64_t now, bool streaming)
{
    if (!a->streamer || !a->greeted || now < a->next_send_ms
        || a->nwin > FL_WINDOW - 6)
        return;
    if (a->run_state == FL_RUN_IDLE) {
        if (a->job_done_pending) {
            fl_job_status(a, a->job_id, "done");
            a->job_done_pending = false;
            a->job_id[0] = '\0';
        }
        if (!streaming)
            return;
        if (a->runs_done % FL_CAL_EVERY_RUNS == 0)
            fl_calibration(a);
        if (a->job_next[0]) {
            snprintf(a->job_id, sizeof a->job_id, "%s", a->job_next);
            a->job_next[0] = '\0';
            fl_job_status(a, a->job_id, "running");
        }
        fl_run_start(a);
        fl_batch(a);
    } else if (a->batch_seq < a->nbatches) {
        fl_batch(a);
    } else {
        fl_run_end(a);
        if (a->job_id[0])
            a->job_done_pending = true;
        return;   /* the next run starts at once */
    }
    /* A fixed rate from the streamer's own phase, as an agent on its own
     * host keeps: from `now` instead, every streamer that came due
     * within one slow pass of this loop took the same next time, and
     * the phases spread at the start merged into ever larger clumps
     * (data messages a writer burst met at once 4 -> 8 within 90 s).
     * Behind by a whole interval (a full window): its phase restarts. */
    a->next_send_ms += O.batch_ms;
    if (a->next_send_ms <= now)
        a->next_send_ms = now + O.batch_ms;
}

static void
fl_on_ack(fl_agent_t *a, uint64_t seq, double now_f)
{
    if (seq == 0) {
        if (!a->greeted) {
            fl_greeted(a, true, (int64_t)now_f);
            a->backoff_ms = FL_BACKOFF_MIN_MS;
            S.hello_acks++;
            if (S.measuring)
                a->beat_expect_from_ms = (int64_t)now_f;
            fl_resend_all(a, (int64_t)now_f);
        }
        return;
    }
    for (int i = 0; i < a->nwin; i++) {
        if (a->win[i].seq != seq)
            continue;
        double ms = now_f - a->win[i].first_ms;
        if (S.measuring) {
            if (O.slow && O.slow_ms > 0 && ms > O.slow_ms)
                fprintf(O.slow, "slow_ack wall=%.3f agent=%d seq=%" PRIu64
                        " kind=%s ms=%.1f\n", (pw_clock_unix_us() / 1e6), a->index, seq,
                        a->win[i].kind == FL_K_RUN_END ? "run_end" : "other",
                        ms);
            fl_lat_add(&S.ack, ms);
            if (a->win[i].kind == FL_K_RUN_END)
                fl_lat_add(&S.verdict, ms);
        }
        S.acked++;
        free(a->win[i].buf);
        memmove(&a->win[i], &a->win[i + 1],
                (size_t)(a->nwin - i - 1) * sizeof a->win[0]);
        a->nwin--;
        a->last_progress_ms = (int64_t)now_f;
        return;
    }
    /* An Ack of a message resent and acked before: nothing to do. */
}

static void
fl_on_error(fl_agent_t *a, const Parity__Error *e, int64_t now)
{
    if (e->code == 9) {            /* data before Hello: greet again */
        S.no_hello++;
        fl_greeted(a, false, now);
        fl_hello(a);
        return;
    }
    if (e->seq == 0)
        return;
    S.refused++;
    if (S.refused <= 5)
        fprintf(stderr, "fleet-load: %s: Error %u seq %llu: %s\n", a->name,
                e->code, (unsigned long long)e->seq,
                e->message ? e->message : "");
    for (int i = 0; i < a->nwin; i++)
        if (a->win[i].seq == e->seq) {
            free(a->win[i].buf);
            memmove(&a->win[i], &a->win[i + 1],
                    (size_t)(a->nwin - i - 1) * sizeof a->win[0]);
            a->nwin--;
            a->last_progress_ms = now;
            return;
        }
}

static void
fl_agent_read(fl_agent_t *a)
{
    for (int i = 0; i < 256 && a->sock; i++) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, a->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            return;
        }
        double now_f = (pw_clock_mono_sec() * 1e3);
        int64_t now = (int64_t)now_f;
        if (a->greeted && now - a->last_heard_ms > S.silence_max_ms
            && S.measuring)
            S.silence_max_ms = now - a->last_heard_ms;
        a->last_heard_ms = now;
        Parity__Envelope *env = NULL;
        if (pw_wire_unpack(zmq_msg_data(&m), zmq_msg_size(&m), 0, &env,
                           NULL, NULL, 0) == PW_WIRE_OK) {
            switch (env->body_case) {
            case PARITY__ENVELOPE__BODY_HEARTBEAT:
                if (S.measuring && a->beat_expect_from_ms)
                    a->beats_in++;
                break;
            case PARITY__ENVELOPE__BODY_ACK:
                fl_on_ack(a, env->ack->seq, now_f);
                break;
            case PARITY__ENVELOPE__BODY_ERROR:
                fl_on_error(a, env->error, now);
                break;
            case PARITY__ENVELOPE__BODY_JOB_OFFER:
                if (a->streamer && !a->job_next[0])
                    snprintf(a->job_next, sizeof a->job_next, "%s",
                             env->job_offer->job_id);
                else
                    fl_job_status(a, env->job_offer->job_id, "refused");
                break;
            case PARITY__ENVELOPE__BODY_JOB_CANCEL:
                if (strcmp(a->job_next, env->job_cancel->job_id) == 0) {
                    fl_job_status(a, a->job_next, "cancelled");
                    a->job_next[0] = '\0';
                }
                break;
            default:
                S.unexpected++;
                break;
            }
        }
        pw_wire_free(&env);
        zmq_msg_close(&m);
    }
}

/* Timers of one agent: reconnect, heartbeat, silence, resend, stream. */
static void
fl_agent_tick(fl_agent_t *a, int64_t now, bool streaming)
{
    if (!a->sock) {
        if (a->reconnect_at_ms && now >= a->reconnect_at_ms)
            fl_connect(a, now);
        return;
    }
    if (now >= a->next_beat_ms) {
        uint8_t hb[160];
        size_t len;
        bool running = a->job_id[0] != '\0';
        if (pw_wire_pack_heartbeat(pw_clock_unix_us(), (uint32_t)a->nwin,
                                   running ? "running" : "idle",
                                   running ? a->job_id : "", hb, sizeof hb,
                                   &len) == PW_WIRE_OK
            && fl_send(a->sock, hb, len) < 0)
            S.send_failed++;
        a->next_beat_ms += O.heartbeat_ms;
        if (a->next_beat_ms <= now)
            a->next_beat_ms = now + O.heartbeat_ms;
    }
    if (now - a->last_heard_ms >= (int64_t)FL_SILENT_BEATS * O.heartbeat_ms) {
        fl_give_up(a, now);
        return;
    }
    if (a->greeted && a->nwin > 0
        && now - a->last_progress_ms >= FL_RESEND_MS)
        fl_resend_all(a, now);
    fl_stream(a, now, streaming);
}

/* ---- admin client --------------------------------------------------- */

typedef struct {
    const char *command;
    fl_lat_t lat;
    uint64_t errors, timeouts;
    char last_error[200];
} fl_cmd_t;

enum { FL_C_HOSTS, FL_C_VERDICTS, FL_C_HISTORY, FL_C_REGRESSIONS,
       FL_C_STATS, FL_C_RUN, FL_C_JOBS, FL_C_COUNT };

static fl_cmd_t s_cmd[FL_C_COUNT] = {
    { .command = "hosts" }, { .command = "verdicts" },
    { .command = "history" }, { .command = "regressions" },
    { .command = "stats" }, { .command = "run" }, { .command = "jobs" },
};

typedef struct {
    void *sock;
    uint64_t next_id;
    uint64_t pending_id;      /* 0: none */
    bool pending_timed;       /* its timeout already counted */
    int pending_cmd;
    double sent_ms;
    int loop_pos;
    int64_t next_job_ms, next_stats_ms;
    char jobs[256][16];       /* jobs created (ids) */
    int njobs;
    double loop_max_ms;       /* from stats, NAN when it has none */
    /* The collector's own view, when its stats has it (the worst of the
     * minutes seen): frame read to writer finished. */
    double store_p99_ms, store_max_ms, queue_dropped, dup_dropped;
    json_t *last_stats;       /* the newest stats body (owned) */
    char loop_key[128];
    uint64_t false_offline_hosts;
    bool *offline_seen;       /* per agent, from hosts replies */
    uint64_t send_failed;
    int lost, done, active_rows, other_rows;
} fl_admin_t;

static fl_admin_t A;

static void
fl_admin_send(int cmd, const char *args)
{
    Parity__Envelope env;
    Parity__Request r = PARITY__REQUEST__INIT;
    r.request_id = ++A.next_id;
    r.command = (char *)s_cmd[cmd].command;
    r.args_json = (char *)args;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_REQUEST, &r);
    /* Not fl_send_env: its counters are the agents' (main thread). */
    uint8_t *buf = NULL;
    size_t len = 0;
    if (pw_wire_pack_alloc(&env, &buf, &len, NULL, 0) != PW_WIRE_OK
        || zmq_send(A.sock, buf, len, ZMQ_DONTWAIT) < 0)
        A.send_failed++;
    free(buf);
    A.pending_id = r.request_id;
    A.pending_timed = false;
    A.pending_cmd = cmd;
    A.sent_ms = (pw_clock_mono_sec() * 1e3);
}

/* *out = max(*out, stats[key]) when the stats body has that number. */
static void
fl_stat_max(json_t *stats, const char *key, double *out)
{
    json_t *v = json_object_get(stats, key);
    if (json_is_number(v)
        && (isnan(*out) || json_number_value(v) > *out))
        *out = json_number_value(v);
}

/* A number in a stats body whose key says loop and max (loop_max_ms,
 * loop_gap_max_ms, {"loop": {"max_ms": ...}}): the longest gap between
 * polls. NAN when there is none. */
static double
fl_find_loop_max(json_t *j, const char *path, char *key_out, size_t keylen)
{
    const char *k;
    json_t *v;
    if (!json_is_object(j))
        return NAN;
    v = json_object_get(j, "loop_max_ms");   /* the collector's name */
    if (!*path && json_is_number(v)) {
        snprintf(key_out, keylen, "loop_max_ms");
        return json_number_value(v);
    }
    json_object_foreach(j, k, v) {
        char full[128];
        snprintf(full, sizeof full, "%s%s%s", path, *path ? "." : "", k);
        if (json_is_number(v) && strstr(full, "loop") && strstr(full, "max")) {
            snprintf(key_out, keylen, "%s", full);
            return json_number_value(v);
        }
        if (json_is_object(v)) {
            double x = fl_find_loop_max(v, full, key_out, keylen);
            if (!isnan(x))
                return x;
        }
    }
    return NAN;
}

static void
fl_on_hosts(json_t *body, double sent_ms)
{
    json_t *hosts = json_object_get(body, "hosts"), *h;
    size_t i;
    json_array_foreach(hosts, i, h) {
        const char *name = json_string_value(json_object_get(h, "name"));
        int idx;
        if (!name || sscanf(name, "fl-%d", &idx) != 1 || idx < 0
            || idx >= O.agents)
            continue;
        /* Greeted well before the request and still greeted: alive. */
        int64_t since = atomic_load_explicit(&s_alive_since[idx],
                                             memory_order_relaxed);
        if (json_is_false(json_object_get(h, "online")) && since >= 0
            && since + 2 * O.heartbeat_ms < (int64_t)sent_ms
            && !A.offline_seen[idx]) {
            A.offline_seen[idx] = true;
            A.false_offline_hosts++;
        }
    }
}

static void
fl_on_jobs(json_t *body)
{
    json_t *jobs = json_object_get(body, "jobs"), *j;
    size_t i;
    A.lost = A.done = A.active_rows = A.other_rows = 0;
    json_array_foreach(jobs, i, j) {
        const char *id = json_string_value(json_object_get(j, "job"));
        bool ours = false;
        for (int k = 0; id && k < A.njobs; k++)
            ours |= strcmp(A.jobs[k], id) == 0;
        if (!ours)
            continue;
        const char *st;
        json_t *n;
        json_object_foreach(json_object_get(j, "hosts"), st, n) {
            int c = (int)json_integer_value(n);
            if (strcmp(st, "lost") == 0)
                A.lost += c;
            else if (strcmp(st, "done") == 0)
                A.done += c;
            else if (strcmp(st, "running") == 0 || strcmp(st, "queued") == 0)
                A.active_rows += c;
            else
                A.other_rows += c;
        }
    }
}

static void
fl_admin_read(void)
{
    for (int i = 0; i < 64; i++) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, A.sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            return;
        }
        double now = (pw_clock_mono_sec() * 1e3);
        Parity__Envelope *env = NULL;
        if (pw_wire_unpack(zmq_msg_data(&m), zmq_msg_size(&m), 0, &env,
                           NULL, NULL, 0) == PW_WIRE_OK
            && env->body_case == PARITY__ENVELOPE__BODY_REPLY
            && env->reply->request_id == A.pending_id) {
            fl_cmd_t *c = &s_cmd[A.pending_cmd];
            if (S.measuring)
                fl_lat_add(&c->lat, now - A.sent_ms);
            /* With --slow-log: every answer's time, to line the Acks up
             * with what the admin client asked. */
            if (S.measuring && O.slow)
                fprintf(O.slow, "query wall=%.3f cmd=%s ms=%.1f\n",
                        (pw_clock_unix_us() / 1e6), c->command, now - A.sent_ms);
            json_t *body = NULL;
            if (env->reply->status != 0) {
                c->errors++;
                snprintf(c->last_error, sizeof c->last_error, "%d %s",
                         env->reply->status,
                         env->reply->error ? env->reply->error : "");
            } else {
                body = json_loads(env->reply->body_json, 0, NULL);
            }
            if (body && A.pending_cmd == FL_C_HOSTS)
                fl_on_hosts(body, A.sent_ms);
            else if (body && A.pending_cmd == FL_C_STATS) {
                char key[128] = "";
                double x = fl_find_loop_max(body, "", key, sizeof key);
                if (!isnan(x) && (isnan(A.loop_max_ms) || x > A.loop_max_ms)) {
                    A.loop_max_ms = x;
                    snprintf(A.loop_key, sizeof A.loop_key, "%s", key);
                }
                fl_stat_max(body, "store_p99_ms", &A.store_p99_ms);
                fl_stat_max(body, "store_max_ms", &A.store_max_ms);
                fl_stat_max(body, "queue_dropped", &A.queue_dropped);
                fl_stat_max(body, "dup_dropped", &A.dup_dropped);
                json_decref(A.last_stats);
                A.last_stats = json_incref(body);
                /* The writer's step totals over time (--slow-log). */
                char *txt = O.slow ? json_dumps(body, JSON_COMPACT) : NULL;
                if (txt)
                    fprintf(O.slow, "stats wall=%.3f %s\n", (pw_clock_unix_us() / 1e6), txt);
                free(txt);
            } else if (body && A.pending_cmd == FL_C_RUN && A.njobs < 256) {
                const char *id = json_string_value(json_object_get(body,
                                                                   "job"));
                if (id)
                    snprintf(A.jobs[A.njobs++], sizeof A.jobs[0], "%s", id);
            } else if (body && A.pending_cmd == FL_C_JOBS)
                fl_on_jobs(body);
            json_decref(body);
            A.pending_id = 0;
        }
        pw_wire_free(&env);
        zmq_msg_close(&m);
    }
}

/* Next admin request when none is pending: a job when due, stats when
 * due, else the next of hosts, verdicts, history, regressions. */
static void
fl_admin_tick(int64_t now, bool loop)
{
    if (A.pending_id) {
        if ((pw_clock_mono_sec() * 1e3) - A.sent_ms > FL_REQ_TIMEOUT_MS) {
            s_cmd[A.pending_cmd].timeouts++;
            if (S.measuring)
                fl_lat_add(&s_cmd[A.pending_cmd].lat, FL_REQ_TIMEOUT_MS);
            A.pending_id = 0;
        }
        return;
    }
    if (!loop)
        return;
    if (O.job_every_s > 0 && now >= A.next_job_ms && O.streamers > 0) {
        A.next_job_ms = now + (int64_t)O.job_every_s * 1000;
        fl_admin_send(FL_C_RUN, "{\"suite\":\"fleet\",\"hosts\":"
                      "[\"role=stream\"],\"only\":[\"bench0\"],"
                      "\"tags\":{\"branch\":\"fleet-load\"},"
                      "\"label\":\"fleet-load\"}");
        return;
    }
    if (now >= A.next_stats_ms) {
        A.next_stats_ms = now + FL_STATS_EVERY_MS;
        fl_admin_send(FL_C_STATS, "{}");
        return;
    }
    if (!O.queries)
        return;
    switch (A.loop_pos++ % 4) {
    case 0: fl_admin_send(FL_C_HOSTS, "{}"); break;
    case 1: fl_admin_send(FL_C_VERDICTS, "{}"); break;
    case 2: fl_admin_send(FL_C_HISTORY, "{\"benchmark\":\"bench0\","
                          "\"suite\":\"fleet\",\"limit\":50}"); break;
    default: fl_admin_send(FL_C_REGRESSIONS, "{\"since_us\":"
                           "31622400000000}"); break;
    }
}

/* Wait for the pending request (up to timeout), reading agents too. */
static void fl_pump(fl_agent_t *ag, int ms, bool streaming);

static void
fl_admin_sync(fl_agent_t *ag, int cmd, const char *args, int timeout_ms)
{
    int64_t until = pw_clock_mono_ms() + timeout_ms;
    while (A.pending_id && pw_clock_mono_ms() < until)
        fl_pump(ag, 50, false);
    A.pending_id = 0;
    fl_admin_send(cmd, args);
    while (A.pending_id && pw_clock_mono_ms() < until)
        fl_pump(ag, 50, false);
    if (A.pending_id) {
        s_cmd[cmd].timeouts++;
        A.pending_id = 0;
    }
}

/* ---- the poll loop -------------------------------------------------- */

/* Read one agent's socket if it has a message; false when it is left
 * with more (a read takes at most 256), to be read at the next pump. */
static bool
fl_agent_drain(fl_agent_t *a)
{
    if (!fl_readable(a->sock))
        return true;
    fl_agent_read(a);
    return !fl_readable(a->sock);
}

static void
fl_pump(fl_agent_t *ag, int ms, bool streaming)
{
    struct epoll_event ev[256];
    int n = epoll_wait(s_ep, ev, 256, s_again ? 0 : ms);
    for (int k = 0; k < n; k++)
        if (ev[k].data.u32 > 0 && ev[k].data.u32 <= (uint32_t)O.agents)
            ag[ev[k].data.u32 - 1].check = true;
    s_again = false;
    /* The admin socket, when not on its thread: looked at on every pass
     * (fl_admin_sync sends on it outside this loop). */
    if (!s_admin_threaded && fl_readable(A.sock))
        fl_admin_read();
    s_again |= !s_admin_threaded && fl_readable(A.sock);
    for (int i = 0; i < O.agents; i++)
        if (ag[i].check) {
            uint64_t sent = s_sends;
            ag[i].check = !fl_agent_drain(&ag[i]) || s_sends != sent;
            s_again |= ag[i].check;
        }
    int64_t now = pw_clock_mono_ms();
    for (int i = 0; i < O.agents; i++) {
        uint64_t sent = s_sends;
        fl_agent_tick(&ag[i], now, streaming);
        if (s_sends != sent && ag[i].sock) {
            ag[i].check = true;
            s_again = true;
        }
    }
    if (!s_admin_threaded)      /* outside the measured load: no loop */
        fl_admin_tick(now, false);
}

/* The admin client's loop while the load is measured: its replies and
 * its next requests, never in the agents' way. */
static void *
fl_admin_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&s_admin_stop)) {
        zmq_pollitem_t it = { A.sock, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 20) > 0)
            fl_admin_read();
        fl_admin_tick(pw_clock_mono_ms(), true);
    }
    return NULL;
}

/* Hand the admin socket to its thread (out of the agents' epoll set,
 * where its level would wake the loop for nothing), or take it back. */
static int
fl_admin_thread(pthread_t *t, bool start)
{
    int fd;
    size_t len = sizeof fd;
    if (zmq_getsockopt(A.sock, ZMQ_FD, &fd, &len) != 0)
        return -1;
    if (start) {
        epoll_ctl(s_ep, EPOLL_CTL_DEL, fd, NULL);
        atomic_store(&s_admin_stop, false);
        s_admin_threaded = true;
        if (pthread_create(t, NULL, fl_admin_main, NULL) == 0)
            return 0;
        s_admin_threaded = false;
        fl_watch(A.sock, 0);
        return -1;
    }
    atomic_store(&s_admin_stop, true);
    pthread_join(*t, NULL);
    s_admin_threaded = false;
    s_again = true;
    return fl_watch(A.sock, 0);
}

/* ---- /proc and the collector's log ---------------------------------- */

static long
fl_proc_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    long kb = -1;
    size_t fl = strlen(field);
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
            kb = atol(line + fl + 1);
            break;
        }
    if (f)
        fclose(f);
    return kb;
}

static long
fl_file_size(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Distinct agents in `event=offline` lines between two offsets of the
 * collector's log, named by peer=KEY (keys[i] agent i's Z85 key) or by
 * name=fl-NNNN / name="fl-NNNN". */
static int
fl_log_offline(const char *path, long from, long to, char (*keys)[41],
               bool *seen)
{
    char line[8192];
    int n = 0;
    FILE *f = path && from >= 0 ? fopen(path, "r") : NULL;
    if (!f)
        return -1;
    fseek(f, from, SEEK_SET);
    while (ftell(f) < to && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "event=offline");
        if (!p)
            continue;
        int idx = -1;
        const char *nm = strstr(p, " name=");
        if (nm) {
            nm += 6 + (nm[6] == '"');
            if (strncmp(nm, "fl-", 3) != 0 || sscanf(nm + 3, "%d", &idx) != 1)
                idx = -1;
        }
        const char *pk = strstr(p, " peer=");
        for (int i = 0; idx < 0 && pk && i < O.agents; i++)
            if (strncmp(pk + 6, keys[i], 40) == 0)
                idx = i;
        if (idx >= 0 && idx < O.agents && !seen[idx]) {
            seen[idx] = true;
            n++;
        }
    }
    fclose(f);
    return n;
}

/* ---- keygen --------------------------------------------------------- */

static int
fl_mkdir(const char *p)
{
    return mkdir(p, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

static int
fl_keygen(const char *dir, int n)
{
    char p[1024], q[1024];
    snprintf(p, sizeof p, "%s/allow", dir);
    snprintf(q, sizeof q, "%s/secret", dir);
    if (fl_mkdir(dir) || fl_mkdir(p) || fl_mkdir(q)) {
        fprintf(stderr, "fleet-load keygen: mkdir under %s: %s\n", dir,
                strerror(errno));
        return 1;
    }
    snprintf(p, sizeof p, "%s/admin", dir);
    fl_mkdir(p);
    snprintf(p, sizeof p, "%s/collector_secret", dir);
    if (access(p, R_OK) != 0) {
        zcert_t *c = zcert_new();
        snprintf(p, sizeof p, "%s/collector", dir);
        zcert_save(c, p);
        zcert_destroy(&c);
    }
    snprintf(p, sizeof p, "%s/secret/admin_secret", dir);
    if (access(p, R_OK) != 0) {
        zcert_t *c = zcert_new();
        zcert_save_secret(c, p);
        snprintf(p, sizeof p, "%s/admin/admin", dir);
        zcert_save_public(c, p);
        zcert_destroy(&c);
    }
    snprintf(p, sizeof p, "%s/agent_keys.txt", dir);
    FILE *list = fopen(p, "w");
    if (!list)
        return 1;
    for (int i = 0; i < n; i++) {
        zcert_t *c;
        snprintf(q, sizeof q, "%s/secret/a%04d_secret", dir, i);
        if (access(q, R_OK) == 0) {
            c = zcert_load(q);
        } else {
            c = zcert_new();
            zcert_save_secret(c, q);
            snprintf(q, sizeof q, "%s/allow/a%04d", dir, i);
            zcert_save_public(c, q);
        }
        if (!c) {
            fprintf(stderr, "fleet-load keygen: cannot load %s\n", q);
            fclose(list);
            return 1;
        }
        fprintf(list, "%d\tfl-%04d\t%s\n", i, i, zcert_public_txt(c));
        zcert_destroy(&c);
    }
    return fclose(list) == 0 ? 0 : 1;
}

/* ---- main ----------------------------------------------------------- */

static int
fl_usage(void)
{
    fprintf(stderr,
        "usage: fleet-load keygen DIR N\n"
        "       fleet-load run --endpoint tcp://127.0.0.1:PORT[,...] --keys DIR\n"
        "              [--agents N] [--streamers N] [--duration S]\n"
        "              [--heartbeat-ms N] [--rounds N] [--batch-ms N]\n"
        "              [--job-every S] [--collector-pid PID]\n"
        "              [--collector-log FILE] [--collector-log2 FILE]\n"
        "              [--queries 0|1]\n"
              "              [--batch-samples N] [--slow-ms N --slow-log FILE]\n"
        "              [--phase run|batch]\n");
    return 2;
}

static bool
fl_int_opt(const char *name, const char *val, const char *want, int lo,
           int hi, int *out)
{
    if (strcmp(name, want) != 0)
        return false;
    char *end;
    long v = strtol(val, &end, 10);
    if (*end || v < lo || v > hi) {
        fprintf(stderr, "fleet-load: %s %s: want %d..%d\n", name, val, lo,
                hi);
        exit(2);
    }
    *out = (int)v;
    return true;
}

int
main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "keygen") == 0) {
        int n = atoi(argv[3]);
        if (n < 1 || n > FL_AGENTS_MAX)
            return fl_usage();
        return fl_keygen(argv[2], n);
    }
    if (argc < 2 || strcmp(argv[1], "run") != 0)
        return fl_usage();
    O = (fl_opts_t){ .agents = 1000, .streamers = 100, .duration_s = 300,
                     .heartbeat_ms = 1000, .rounds = 200, .batch_ms = 1000,
                     .job_every_s = 60, .queries = 1,
                     .batch_samples = 128 };
    int pid = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--endpoint") == 0)
            O.endpoint = v;
        else if (strcmp(k, "--keys") == 0)
            O.keys = v;
        else if (strcmp(k, "--collector-log") == 0)
            O.collector_log = v;
        else if (strcmp(k, "--collector-log2") == 0)
            O.collector_log2 = v;
        else if (strcmp(k, "--slow-log") == 0) {
            if (O.slow)
                fclose(O.slow);
            O.slow = fopen(v, "w");
            if (!O.slow) {
                fprintf(stderr, "fleet-load: %s: %s\n", v, strerror(errno));
                return 2;
            }
        }
        else if (strcmp(k, "--phase") == 0) {
            if (strcmp(v, "run") != 0 && strcmp(v, "batch") != 0)
                return fl_usage();
            O.herd = strcmp(v, "batch") == 0;
        }
        else if (fl_int_opt(k, v, "--agents", 1, FL_AGENTS_MAX, &O.agents)
                 || fl_int_opt(k, v, "--streamers", 0, FL_AGENTS_MAX,
                               &O.streamers)
                 || fl_int_opt(k, v, "--duration", 1, 3600, &O.duration_s)
                 || fl_int_opt(k, v, "--heartbeat-ms", 10, 60000,
                               &O.heartbeat_ms)
                 || fl_int_opt(k, v, "--rounds", 1, 100000, &O.rounds)
                 || fl_int_opt(k, v, "--batch-ms", 1, 60000, &O.batch_ms)
                 || fl_int_opt(k, v, "--job-every", 0, 3600, &O.job_every_s)
                 || fl_int_opt(k, v, "--queries", 0, 1, &O.queries)
                 || fl_int_opt(k, v, "--slow-ms", 0, 60000, &O.slow_ms)
                 || fl_int_opt(k, v, "--batch-samples", 1, FL_BATCH,
                               &O.batch_samples)
                 || fl_int_opt(k, v, "--collector-pid", 0, 1 << 30, &pid))
            ;
        else
            return fl_usage();
    }
    O.collector_pid = pid;
    if (!O.endpoint || !O.keys)
        return fl_usage();
    /* Loopback only: this program floods what it connects to. */
    char *list = strdup(O.endpoint), *save = NULL;
    for (char *e = list ? strtok_r(list, ",", &save) : NULL; e;
         e = strtok_r(NULL, ",", &save)) {
        if (strncmp(e, "tcp://127.0.0.1:", 16) != 0 ||
            O.nendpoints == FL_MAX_ENDPOINTS) {
            fprintf(stderr, "fleet-load: --endpoint must be up to %d of "
                    "tcp://127.0.0.1:PORT, comma-separated\n",
                    FL_MAX_ENDPOINTS);
            return 2;
        }
        O.endpoints[O.nendpoints++] = e;
    }
    if (O.nendpoints == 0)
        return fl_usage();
    if (O.streamers > O.agents)
        O.streamers = O.agents;
    signal(SIGINT, fl_on_signal);
    signal(SIGTERM, fl_on_signal);
    srand((unsigned)getpid());

    /* Two descriptors per socket (the TCP connection and its mailbox). */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/collector", O.keys);
    zcert_t *server = zcert_load(path);
    if (!server) {
        fprintf(stderr, "fleet-load: cannot load %s\n", path);
        return 1;
    }
    snprintf(s_server_key, sizeof s_server_key, "%s",
             zcert_public_txt(server));
    memcpy(s_server_key_bin, zcert_public_key(server), 32);
    zcert_destroy(&server);

    fl_agent_t *ag = calloc((size_t)O.agents, sizeof *ag);
    A.offline_seen = calloc((size_t)O.agents, sizeof *A.offline_seen);
    bool *log_seen = calloc((size_t)O.agents, sizeof *log_seen);
    s_alive_since = calloc((size_t)O.agents, sizeof *s_alive_since);
    s_ep = epoll_create1(EPOLL_CLOEXEC);
    if (!ag || !A.offline_seen || !log_seen || !s_alive_since || s_ep < 0)
        return 1;
    for (int i = 0; i < O.agents; i++)
        atomic_init(&s_alive_since[i], -1);
    for (int i = 0; i < O.agents; i++) {
        snprintf(path, sizeof path, "%s/secret/a%04d_secret", O.keys, i);
        ag[i].cert = zcert_load(path);
        if (!ag[i].cert) {
            fprintf(stderr, "fleet-load: cannot load %s (fleet-load keygen "
                    "%s %d first)\n", path, O.keys, O.agents);
            return 1;
        }
        ag[i].index = i;
        ag[i].streamer = i < O.streamers;
        ag[i].backoff_ms = FL_BACKOFF_MIN_MS;
        snprintf(ag[i].name, sizeof ag[i].name, "fl-%04d", i);
    }
    A.loop_max_ms = NAN;
    A.store_p99_ms = A.store_max_ms = A.queue_dropped = A.dup_dropped = NAN;

    s_ctx = zmq_ctx_new();
    zmq_ctx_set(s_ctx, ZMQ_MAX_SOCKETS, O.agents + 64);
    zmq_ctx_set(s_ctx, ZMQ_IO_THREADS, 1);
    snprintf(path, sizeof path, "%s/secret/admin_secret", O.keys);
    zcert_t *admin = zcert_load(path);
    if (!admin) {
        fprintf(stderr, "fleet-load: cannot load %s\n", path);
        return 1;
    }
    A.sock = fl_socket(admin, O.endpoints[0], 0);
    if (!A.sock) {
        fprintf(stderr, "fleet-load: admin socket: %s\n", zmq_strerror(errno));
        return 1;
    }

    long rss_before = fl_proc_kb(O.collector_pid, "VmRSS");
    long log_from = fl_file_size(O.collector_log);
    long log2_from = fl_file_size(O.collector_log2);

    /* Ramp: 50 agents every 100 ms, until all are greeted (bounded). */
    int64_t t0 = pw_clock_mono_ms();
    int started = 0;
    while (!s_stop && pw_clock_mono_ms() - t0 < FL_RAMP_MAX_MS) {
        int64_t now = pw_clock_mono_ms();
        for (int k = 0; k < 50 && started < O.agents; k++)
            fl_connect(&ag[started++], now);
        fl_pump(ag, 100, false);
        if (started == O.agents && S.hello_acks >= (uint64_t)O.agents)
            break;
    }
    int64_t ramp_ms = pw_clock_mono_ms() - t0;
    int greeted = 0;
    for (int i = 0; i < O.agents; i++)
        greeted += ag[i].greeted;
    /* Let the greeted fleet beat a little before memory is read. */
    for (int64_t u = pw_clock_mono_ms() + 2 * O.heartbeat_ms; pw_clock_mono_ms() < u;)
        fl_pump(ag, 50, false);
    long rss_fleet = fl_proc_kb(O.collector_pid, "VmRSS");
    printf("fleet-load: %d agents connected, %d greeted in %.1f s; collector"
           " RSS %ld kB before, %ld kB with the fleet\n", started, greeted,
           (double)ramp_ms / 1e3, rss_before, rss_fleet);
    fflush(stdout);

    /* Measure. */
    S.measuring = true;
    S.measure_from_ms = pw_clock_mono_ms();
    S.measure_until_ms = S.measure_from_ms + (int64_t)O.duration_s * 1000;
    for (int i = 0; i < O.agents; i++) {
        /* Independent hosts do not finish runs together: by default a
         * streamer starts at its own point of a run's period (batches
         * plus RunEnd), so RunEnds arrive spread over it. --phase batch
         * starts every run within one batch interval: 100 RunEnds at
         * once, every run (the herd a job offered to all streamers at
         * the same instant would make). */
        int64_t span = O.batch_ms;
        if (!O.herd)
            span = (int64_t)O.batch_ms
                   * ((O.rounds * 3 + O.batch_samples - 1) / O.batch_samples
                      + 1);
        ag[i].next_send_ms = S.measure_from_ms
                             + (int64_t)i * span / (O.streamers + 1) % span;
        if (ag[i].greeted)
            ag[i].beat_expect_from_ms = S.measure_from_ms;
    }
    A.next_job_ms = S.measure_from_ms + 5000;
    A.next_stats_ms = S.measure_from_ms;
    int64_t next_report = S.measure_from_ms + 30000;
    pthread_t admin_thread;
    if (fl_admin_thread(&admin_thread, true) != 0) {
        fprintf(stderr, "fleet-load: cannot start the admin thread\n");
        return 1;
    }
    while (!s_stop && pw_clock_mono_ms() < S.measure_until_ms) {
        fl_pump(ag, 20, true);
        if (pw_clock_mono_ms() >= next_report) {
            next_report += 30000;
            printf("fleet-load: %4.0f s: %llu acks, %llu data sent, %llu "
                   "reconnects, %zu RunEnd acks\n",
                   (double)(pw_clock_mono_ms() - S.measure_from_ms) / 1e3,
                   (unsigned long long)S.acked,
                   (unsigned long long)S.data_sent,
                   (unsigned long long)S.reconnects, S.verdict.n);
            fflush(stdout);
        }
    }
    int64_t measured_ms = pw_clock_mono_ms() - S.measure_from_ms;
    if (fl_admin_thread(&admin_thread, false) != 0)
        fprintf(stderr, "fleet-load: admin socket: %s\n",
                zmq_strerror(errno));
    /* A request still unanswered counts with its time so far (a lower
     * bound): a query slower than the run must not vanish. */
    if (A.pending_id && !A.pending_timed)
        fl_lat_add(&s_cmd[A.pending_cmd].lat, (pw_clock_mono_sec() * 1e3) - A.sent_ms);
    long log_to = fl_file_size(O.collector_log);
    long log2_to = fl_file_size(O.collector_log2);
    for (int i = 0; i < O.agents; i++) {
        fl_agent_t *a = &ag[i];
        if (a->beat_expect_from_ms)
            a->beats_expected += (uint64_t)((pw_clock_mono_ms()
                                             - a->beat_expect_from_ms)
                                            / O.heartbeat_ms);
        a->beat_expect_from_ms = 0;
    }
    S.measuring = false;

    /* Drain: runs in progress finish and jobs say done, no new run
     * starts; their acks come. Bounded by FL_DRAIN_MS. */
    int64_t drain_until = pw_clock_mono_ms() + FL_DRAIN_MS;
    for (;;) {
        int busy = 0;
        for (int i = 0; i < O.agents; i++)
            busy += ag[i].nwin > 0 || ag[i].run_state != FL_RUN_IDLE
                    || ag[i].job_done_pending;
        if (!busy || pw_clock_mono_ms() >= drain_until || s_stop)
            break;
        fl_pump(ag, 50, false);
    }
    int unacked = 0;
    for (int i = 0; i < O.agents; i++)
        unacked += ag[i].nwin;
    fl_admin_sync(ag, FL_C_JOBS, "{\"limit\":1000}", 30000);
    fl_admin_sync(ag, FL_C_STATS, "{}", 30000);
    long hwm = fl_proc_kb(O.collector_pid, "VmHWM");
    long rss_end = fl_proc_kb(O.collector_pid, "VmRSS");
    char (*keys)[41] = calloc((size_t)O.agents, sizeof *keys);
    for (int i = 0; keys && i < O.agents; i++)
        zmq_z85_encode(keys[i], zcert_public_key(ag[i].cert), 32);
    int false_offline_log = keys ? fl_log_offline(O.collector_log, log_from,
                                                  log_to, keys, log_seen)
                                 : -1;
    if (keys && O.collector_log2)
        false_offline_log += fl_log_offline(O.collector_log2, log2_from,
                                            log2_to, keys, log_seen);
    free(keys);
    int false_offline = 0;
    for (int i = 0; i < O.agents; i++)
        false_offline += log_seen[i] || A.offline_seen[i];
    uint64_t beats_expected = 0, beats_in = 0, missed = 0;
    for (int i = 0; i < O.agents; i++) {
        beats_expected += ag[i].beats_expected;
        beats_in += ag[i].beats_in;
        /* One interval of slack per agent: the window's edges. */
        if (ag[i].beats_expected > ag[i].beats_in + 1)
            missed += ag[i].beats_expected - ag[i].beats_in - 1;
    }
    for (int c = 0; c < FL_C_COUNT; c++)
        fl_lat_sort(&s_cmd[c].lat);
    fl_lat_sort(&S.ack);
    fl_lat_sort(&S.verdict);
    for (int c = 0; c < FL_C_COUNT; c++)
        if (s_cmd[c].lat.n || s_cmd[c].errors || s_cmd[c].timeouts)
            printf("fleet-load: %-11s n %zu  p50 %.1f ms  p99 %.1f ms  max "
                   "%.1f ms  errors %llu timeouts %llu%s%s\n",
                   s_cmd[c].command, s_cmd[c].lat.n,
                   fl_lat_q(&s_cmd[c].lat, 0.5), fl_lat_q(&s_cmd[c].lat, 0.99),
                   s_cmd[c].lat.max, (unsigned long long)s_cmd[c].errors,
                   (unsigned long long)s_cmd[c].timeouts,
                   s_cmd[c].errors ? "  last: " : "", s_cmd[c].last_error);
    printf("fleet-load: acks n %zu p50 %.1f ms p99 %.1f ms max %.1f ms; "
           "RunEnd acks n %zu p99 %.1f ms; stats loop field %s\n", S.ack.n,
           fl_lat_q(&S.ack, 0.5), fl_lat_q(&S.ack, 0.99), S.ack.max,
           S.verdict.n, fl_lat_q(&S.verdict, 0.99),
           A.loop_key[0] ? A.loop_key : "(none)");

    FILE *o = stdout;
    fprintf(o, "{\"agents\":%d,\"agents_greeted\":%d,\"streamers\":%d,"
            "\"phase\":\"%s\",\"duration_s\":%.1f,\"ramp_s\":%.1f,",
            O.agents, greeted, O.streamers, O.herd ? "batch" : "run",
            (double)measured_ms / 1e3, (double)ramp_ms / 1e3);
    fprintf(o, "\"false_offline\":%d,\"false_offline_log\":%d,"
            "\"false_offline_hosts\":%llu,", false_offline, false_offline_log,
            (unsigned long long)A.false_offline_hosts);
    fprintf(o, "\"lost_jobs\":%d,\"jobs_created\":%d,\"job_hosts_done\":%d,"
            "\"job_hosts_unfinished\":%d,", A.lost, A.njobs, A.done,
            A.active_rows);
    fl_json_num(o, "ack_p50_ms", fl_lat_q(&S.ack, 0.5), ",");
    fl_json_num(o, "ack_p99_ms", fl_lat_q(&S.ack, 0.99), ",");
    fl_json_num(o, "ack_max_ms", S.ack.n ? S.ack.max : NAN, ",");
    fl_json_num(o, "verdict_p50_ms", fl_lat_q(&S.verdict, 0.5), ",");
    fl_json_num(o, "verdict_p99_ms", fl_lat_q(&S.verdict, 0.99), ",");
    fl_json_num(o, "verdict_max_ms", S.verdict.n ? S.verdict.max : NAN, ",");
    static const char *const key[FL_C_COUNT] = {
        "hosts", "verdicts", "history", "regressions", "stats", "run", "jobs"
    };
    for (int c = 0; c < FL_C_RUN; c++) {
        char k[64];
        snprintf(k, sizeof k, "%s_ms", key[c]);
        fl_json_num(o, k, fl_lat_q(&s_cmd[c].lat, 0.5), ",");
        snprintf(k, sizeof k, "%s_max_ms", key[c]);
        fl_json_num(o, k, s_cmd[c].lat.n ? s_cmd[c].lat.max : NAN, ",");
        fprintf(o, "\"%s_n\":%zu,\"%s_errors\":%llu,", key[c],
                s_cmd[c].lat.n, key[c],
                (unsigned long long)(s_cmd[c].errors + s_cmd[c].timeouts));
    }
    fl_json_num(o, "collector_rss_mb", hwm >= 0 ? hwm / 1024.0 : NAN, ",");
    fl_json_num(o, "collector_rss_end_mb",
                rss_end >= 0 ? rss_end / 1024.0 : NAN, ",");
    fl_json_num(o, "rss_kib_per_agent",
                rss_before >= 0 && rss_fleet >= 0 && greeted
                    ? (double)(rss_fleet - rss_before) / greeted : NAN, ",");
    fl_json_num(o, "loop_max_ms", A.loop_max_ms, ",");
    fl_json_num(o, "collector_store_p99_ms", A.store_p99_ms, ",");
    fl_json_num(o, "collector_store_max_ms", A.store_max_ms, ",");
    fl_json_num(o, "collector_queue_dropped", A.queue_dropped, ",");
    fl_json_num(o, "collector_dup_dropped", A.dup_dropped, ",");
    fprintf(o, "\"loop_field\":\"%s\",", A.loop_key);
    /* The writer's time per step since the collector started (its newest
     * stats): where the writer's time went. */
    fprintf(o, "\"collector_steps\":{");
    const char *sk;
    json_t *sv;
    int first = 1;
    json_object_foreach(A.last_stats, sk, sv) {
        size_t kl = strlen(sk);
        if (!json_is_number(sv) || ((strncmp(sk, "store_", 6) != 0 ||
            kl < 9 || strcmp(sk + kl - 3, "_ms") != 0) &&
            strcmp(sk, "slow_steps") != 0))
            continue;
        fprintf(o, "%s\"%s\":%g", first ? "" : ",", sk, json_number_value(sv));
        first = 0;
    }
    fprintf(o, "},");
    json_decref(A.last_stats);
    A.last_stats = NULL;
    fprintf(o, "\"reconnects\":%llu,\"heartbeats_missed\":%llu,"
            "\"heartbeats_expected\":%llu,\"heartbeats_in\":%llu,"
            "\"silence_max_ms\":%lld,", (unsigned long long)S.reconnects,
            (unsigned long long)missed, (unsigned long long)beats_expected,
            (unsigned long long)beats_in, (long long)S.silence_max_ms);
    fprintf(o, "\"data_sent\":%llu,\"acked\":%llu,\"resends\":%llu,"
            "\"unacked_at_end\":%d,\"refused\":%llu,\"send_failed\":%llu,"
            "\"samples_sent\":%llu,\"samples_per_s\":%.0f,"
            "\"run_ends_acked\":%zu}\n",
            (unsigned long long)S.data_sent, (unsigned long long)S.acked,
            (unsigned long long)S.resends, unacked,
            (unsigned long long)S.refused,
            (unsigned long long)(S.send_failed + A.send_failed),
            (unsigned long long)S.samples_sent,
            measured_ms > 0 ? (double)S.samples_sent * 1e3 / measured_ms : 0,
            S.verdict.n);
    fflush(o);

    for (int i = 0; i < O.agents; i++) {
        fl_close(&ag[i].sock);
        for (int k = 0; k < ag[i].nwin; k++)
            free(ag[i].win[k].buf);
        zcert_destroy(&ag[i].cert);
    }
    fl_close(&A.sock);
    zcert_destroy(&admin);
    zmq_ctx_term(s_ctx);
    for (int c = 0; c < FL_C_COUNT; c++)
        free(s_cmd[c].lat.ms);
    free(S.ack.ms);
    free(S.verdict.ms);
    free(ag);
    free(A.offline_seen);
    free(log_seen);
    if (s_ep >= 0)
        close(s_ep);
    return 0;
}
