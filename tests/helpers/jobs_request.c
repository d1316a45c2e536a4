/* jobs_request.c -- send raw client Requests to parity-collector, for
 * tests/jobs/test_jobs.py (the `parity` client only sends well-formed
 * ones).
 *
 *   jobs-request ENDPOINT COLLECTOR_PUBLIC_CERT CLIENT_CERT [TIMEOUT_MS]
 *
 * reads lines COMMAND<TAB>ARGS_JSON from stdin (ARGS_JSON sent as is,
 * maybe empty or not JSON at all) and sends each as one Request on one
 * CURVE connection, waiting for its Reply. For each line it prints
 *
 *   STATUS<TAB>ERROR                      status > 0
 *   0<TAB>BODY_JSON                       status 0
 *   TIMEOUT                               no Reply within TIMEOUT_MS
 *
 * one line each (tabs and newlines in the text become spaces). Exit 0
 * after the last line, 2 on a usage or key error.
 *
 *   jobs-request --agent ENDPOINT COLLECTOR_PUBLIC_CERT AGENT_CERT NAME SUITE
 *
 * plays an agent that restarted mid-job: Hello listing SUITE (benchmark
 * "b"), heartbeats; on the first JobOffer prints "offer JOB", stores
 * JobStatus running, then connects again, says Hello and beats `idle`
 * for 10 s ("again" printed after the new Hello), never running the job.
 * Exit 0, 1 when no offer came within 20 s.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <czmq.h>
#include <zmq.h>

#include "pw_clock.h"
#include "pw_wire.h"

/* Longest stdin line: a little above the collector's args bound, so a
 * test can send one byte too many. */
#define S_LINE_MAX (1u << 20)

static void
s_print_flat(const char *s)
{
    for (; *s; s++)
        putchar(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s);
}

/* Send one Request; print its answer. */
static void
s_ask(void *sock, uint64_t id, const char *command, const char *args,
      int timeout_ms)
{
    Parity__Request req = PARITY__REQUEST__INIT;
    req.request_id = id;
    req.command = (char *)command;
    req.args_json = (char *)args;
    Parity__Envelope env;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_REQUEST, &req);
    uint8_t *buf = NULL;
    size_t len = 0;
    char err[256];
    if (pw_wire_pack_alloc(&env, &buf, &len, err, sizeof err) != PW_WIRE_OK
        || zmq_send(sock, buf, len, 0) < 0) {
        printf("SENDFAIL\n");
        free(buf);
        return;
    }
    free(buf);
    int64_t until = pw_clock_mono_ms() + timeout_ms;
    for (;;) {
        int64_t left = until - pw_clock_mono_ms();
        zmq_pollitem_t it = { sock, 0, ZMQ_POLLIN, 0 };
        if (left <= 0 || zmq_poll(&it, 1, (long)left) <= 0) {
            printf("TIMEOUT\n");
            return;
        }
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            continue;
        }
        Parity__Envelope *in = NULL;
        int rc = pw_wire_unpack(zmq_msg_data(&m), zmq_msg_size(&m), 0, &in,
                                NULL, NULL, 0);
        zmq_msg_close(&m);
        if (rc == PW_WIRE_OK && in->body_case == PARITY__ENVELOPE__BODY_REPLY
            && in->reply->request_id == id) {
            printf("%u\t", in->reply->status);
            s_print_flat(in->reply->status ? in->reply->error :
                         in->reply->body_json);
            putchar('\n');
            pw_wire_free(&in);
            return;
        }
        if (rc == PW_WIRE_OK && in->body_case == PARITY__ENVELOPE__BODY_ERROR) {
            printf("ERROR%u\t", in->error->code);
            s_print_flat(in->error->message);
            putchar('\n');
            pw_wire_free(&in);
            return;
        }
        pw_wire_free(&in);   /* a heartbeat */
    }
}

/* ---- the socket, and --agent -------------------------------------- */

/* The collector's public certificate and the client's, loaded: 0, or
 * -1 having said which could not be (and loaded neither). */
static int
s_certs(const char *server_path, const char *me_path, zcert_t **server,
        zcert_t **me)
{
    *server = zcert_load(server_path);
    *me = zcert_load(me_path);
    if (*server && *me)
        return 0;
    fprintf(stderr, "jobs-request: cannot load %s or %s\n", server_path,
            me_path);
    zcert_destroy(server);
    zcert_destroy(me);
    return -1;
}

static void *
s_dealer(void *ctx, const char *endpoint, zcert_t *server, zcert_t *me)
{
    void *sock = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, zcert_public_key(server), 32);
    zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, zcert_public_key(me), 32);
    zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, zcert_secret_key(me), 32);
    zmq_connect(sock, endpoint);
    return sock;
}

static void
s_send_env(void *sock, Parity__Envelope *env)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (pw_wire_pack_alloc(env, &buf, &len, NULL, 0) == PW_WIRE_OK)
        zmq_send(sock, buf, len, 0);
    free(buf);
}

static void
s_hello(void *sock, const char *name, const char *suite)
{
    char *bench[] = { "b" };
    Parity__SuiteInfo si = PARITY__SUITE_INFO__INIT;
    si.name = (char *)suite;
    si.n_benchmarks = 1;
    si.benchmarks = bench;
    Parity__SuiteInfo *sp[] = { &si };
    Parity__Hello h = PARITY__HELLO__INIT;
    h.agent_name = (char *)name;
    h.agent_version = "test";
    h.environment_json = "{}";
    h.n_suites = 1;
    h.suites = sp;
    Parity__Envelope env;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_HELLO, &h);
    s_send_env(sock, &env);
}

static void
s_beat(void *sock, const char *state, const char *job)
{
    uint8_t hb[256];
    size_t len;
    if (pw_wire_pack_heartbeat(pw_clock_unix_us(), 0, state, job, hb,
                               sizeof hb, &len) == PW_WIRE_OK)
        zmq_send(sock, hb, len, ZMQ_DONTWAIT);
}

/* Beat for ms; the first JobOffer's id into job (when job is set). */
static void
s_beat_for(void *sock, int ms, const char *state, char *job, size_t len)
{
    int64_t until = pw_clock_mono_ms() + ms;
    while (pw_clock_mono_ms() < until) {
        s_beat(sock, state, "");
        zmq_pollitem_t it = { sock, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 100) <= 0)
            continue;
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, sock, ZMQ_DONTWAIT) >= 0) {
            Parity__Envelope *in = NULL;
            if (pw_wire_unpack(zmq_msg_data(&m), zmq_msg_size(&m), 0, &in,
                               NULL, NULL, 0) == PW_WIRE_OK && job &&
                in->body_case == PARITY__ENVELOPE__BODY_JOB_OFFER) {
                snprintf(job, len, "%s", in->job_offer->job_id);
                pw_wire_free(&in);
                zmq_msg_close(&m);
                return;
            }
            pw_wire_free(&in);
        }
        zmq_msg_close(&m);
    }
}

static int
s_agent(char **argv)
{
    zcert_t *server, *me;
    if (s_certs(argv[3], argv[4], &server, &me) != 0)
        return 2;
    void *ctx = zmq_ctx_new();
    void *sock = s_dealer(ctx, argv[2], server, me);
    s_hello(sock, argv[5], argv[6]);
    char job[128] = "";
    s_beat_for(sock, 20000, "idle", job, sizeof job);
    int rc = 1;
    if (*job) {
        printf("offer %s\n", job);
        fflush(stdout);
        Parity__JobStatus js = PARITY__JOB_STATUS__INIT;
        js.job_id = job;
        js.state = "running";
        Parity__Envelope env;
        pw_wire_init(&env, 1);
        pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_JOB_STATUS, &js);
        s_send_env(sock, &env);
        s_beat_for(sock, 500, "running", NULL, 0);
        zmq_close(sock);
        /* The restarted process: a new connection that never runs it. */
        sock = s_dealer(ctx, argv[2], server, me);
        s_hello(sock, argv[5], argv[6]);
        printf("again\n");
        fflush(stdout);
        s_beat_for(sock, 10000, "idle", NULL, 0);
        rc = 0;
    }
    zmq_close(sock);
    zmq_ctx_term(ctx);
    zcert_destroy(&server);
    zcert_destroy(&me);
    return rc;
}

int
main(int argc, char **argv)
{
    if (argc >= 7 && strcmp(argv[1], "--agent") == 0)
        return s_agent(argv);
    if (argc < 4) {
        fprintf(stderr, "usage: jobs-request ENDPOINT COLLECTOR_PUBLIC_CERT "
                "CLIENT_CERT [TIMEOUT_MS] < COMMAND<TAB>ARGS lines\n");
        return 2;
    }
    int timeout_ms = argc > 4 ? atoi(argv[4]) : 5000;
    zcert_t *server, *me;
    if (s_certs(argv[2], argv[3], &server, &me) != 0)
        return 2;
    void *ctx = zmq_ctx_new();
    void *sock = s_dealer(ctx, argv[1], server, me);
    char *line = malloc(S_LINE_MAX + 2);
    uint64_t id = 1;
    while (line && fgets(line, S_LINE_MAX + 2, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        char *tab = strchr(line, '\t');
        if (tab)
            *tab = '\0';
        s_ask(sock, id++, line, tab ? tab + 1 : "", timeout_ms);
        fflush(stdout);
    }
    free(line);
    zmq_close(sock);
    zmq_ctx_term(ctx);
    zcert_destroy(&server);
    zcert_destroy(&me);
    return 0;
}
