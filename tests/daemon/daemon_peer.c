/* daemon_peer.c -- a minimal collector-side protocol peer for the job
 * tests of the agent daemon.
 *
 *   daemon-peer ENDPOINT CERT SECONDS [ACTION]...
 *
 * Why it exists: the real collector only offers a job to an agent whose
 * Hello listed the suite, so it can never show that the agent itself
 * refuses "../x" or an unknown suite. This peer speaks docs/protocol.md
 * over a real CURVE ROUTER socket (CERT: its certificate; no ZAP, so any
 * client key is admitted): it acks Hello and every data message, sends
 * the JobOffers it is told to once the agent's Hello arrives, and prints
 * every message it receives as one JSON line on stdout. It runs SECONDS
 * seconds (or until SIGTERM).
 *
 * ACTION:
 *   offer:JOB:SUITE:RUNS[:NAME=VALUE...]  a JobOffer after Hello, with
 *                                         label "label-JOB", tag job=JOB
 *   cancel-running:JOB                    JobCancel once JOB is running
 *   cancel-queued:JOB                     JobCancel once JOB is queued
 *   cancel-measuring:JOB                  JobCancel at JOB's first batch
 *   ack-none                              ack Hello only, never data
 *   ack-hold:SECONDS                      a collector stalled that long:
 *                                         data acks (duplicates too, as
 *                                         the collector acks them) are
 *                                         held until SECONDS after start,
 *                                         then sent in order; prompt after
 *   ack-drop:SECONDS                      a collector whose database is
 *                                         down that long: data arriving
 *                                         before then is never acked
 *
 * Each line has "ms": milliseconds since the peer started.
 */
#include "pw_wire.h"

#include <czmq.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_ACTIONS 32
#define S_MAX_VARS    8

static volatile sig_atomic_t s_stop;

static void
s_on_term(int sig)
{
    (void)sig;
    s_stop = 1;
}

static void
s_send(void *sock, const uint8_t *rid, size_t rid_len,
       Parity__Envelope *env)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (pw_wire_pack_alloc(env, &buf, &len, NULL, 0) != PW_WIRE_OK)
        return;
    zmq_send(sock, rid, rid_len, ZMQ_SNDMORE);
    zmq_send(sock, buf, len, 0);
    free(buf);
}

static void
s_ack(void *sock, const uint8_t *rid, size_t rid_len, uint64_t seq)
{
    uint8_t buf[64];
    size_t len = 0;
    if (pw_wire_pack_ack(seq, buf, sizeof buf, &len) != PW_WIRE_OK)
        return;
    zmq_send(sock, rid, rid_len, ZMQ_SNDMORE);
    zmq_send(sock, buf, len, 0);
}

static void
s_offer(void *sock, const uint8_t *rid, size_t rid_len, char *spec)
{
    /* spec: JOB:SUITE:RUNS[:NAME=VALUE...] (modified in place) */
    char *parts[3 + S_MAX_VARS] = { 0 };
    size_t n = 0;
    for (char *p = strtok(spec, ":"); p && n < 3 + S_MAX_VARS;
         p = strtok(NULL, ":"))
        parts[n++] = p;
    if (n < 3)
        return;
    Parity__JobOffer jo = PARITY__JOB_OFFER__INIT;
    Parity__Var vars[S_MAX_VARS], *vp[S_MAX_VARS];
    jo.job_id = parts[0];
    jo.suite = parts[1];
    char label[160];
    snprintf(label, sizeof label, "label-%s", parts[0]);
    jo.label = label;
    Parity__Tag tag = PARITY__TAG__INIT, *tp = &tag;
    tag.key = "job";
    tag.value = parts[0];
    jo.tags = &tp;
    jo.n_tags = 1;
    jo.runs = (uint32_t)atoi(parts[2]);
    for (size_t i = 3; i < n; i++) {
        parity__var__init(&vars[i - 3]);
        char *eq = strchr(parts[i], '=');
        if (!eq)
            continue;
        *eq = 0;
        vars[i - 3].name = parts[i];
        vars[i - 3].value = eq + 1;
        vp[jo.n_vars++] = &vars[i - 3];
    }
    jo.vars = vp;
    Parity__Envelope env;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_JOB_OFFER, &jo);
    s_send(sock, rid, rid_len, &env);
}

static void
s_cancel(void *sock, const uint8_t *rid, size_t rid_len, const char *job)
{
    Parity__JobCancel jc = PARITY__JOB_CANCEL__INIT;
    jc.job_id = (char *)job;
    Parity__Envelope env;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_JOB_CANCEL, &jc);
    s_send(sock, rid, rid_len, &env);
}

static int64_t s_start_ms;

static void
s_print(const Parity__Envelope *env)
{
    json_t *o = json_object();
    json_object_set_new(o, "ms", json_integer(zclock_mono() - s_start_ms));
    json_object_set_new(o, "body", json_string(pw_wire_body_name(
                                                   env->body_case)));
    json_object_set_new(o, "seq", json_integer((json_int_t)env->seq));
    switch (env->body_case) {
    case PARITY__ENVELOPE__BODY_HELLO:
        json_object_set_new(o, "name", json_string(env->hello->agent_name));
        json_object_set_new(o, "suites",
                            json_integer((json_int_t)env->hello->n_suites));
        break;
    case PARITY__ENVELOPE__BODY_JOB_STATUS:
        json_object_set_new(o, "job_id",
                            json_string(env->job_status->job_id));
        json_object_set_new(o, "state", json_string(env->job_status->state));
        json_object_set_new(o, "reason",
                            json_string(env->job_status->reason));
        json_object_set_new(o, "round", json_integer(env->job_status->round));
        json_object_set_new(o, "rounds",
                            json_integer(env->job_status->rounds));
        break;
    case PARITY__ENVELOPE__BODY_RUN_START:
        json_object_set_new(o, "run_id", json_string(env->run_start->run_id));
        json_object_set_new(o, "job_id", json_string(env->run_start->job_id));
        json_object_set_new(o, "runs", json_integer(env->run_start->runs));
        json_object_set_new(o, "label", json_string(env->run_start->label));
        json_object_set_new(o, "benchmark",
                            json_string(env->run_start->benchmark));
        json_t *arms = json_array();
        for (size_t i = 0; i < env->run_start->n_arms; i++)
            json_array_append_new(arms,
                                  json_string(env->run_start->arms[i]->name));
        json_object_set_new(o, "arms", arms);
        json_object_set_new(o, "tag", json_string(
            env->run_start->n_tags ? env->run_start->tags[0]->value : ""));
        break;
    case PARITY__ENVELOPE__BODY_RUN_END:
        json_object_set_new(o, "run_id", json_string(env->run_end->run_id));
        json_object_set_new(o, "status", json_integer(env->run_end->status));
        json_object_set_new(o, "reason", json_string(env->run_end->reason));
        break;
    case PARITY__ENVELOPE__BODY_SAMPLE_BATCH:
        json_object_set_new(o, "samples", json_integer(
                                (json_int_t)env->sample_batch->n_samples));
        break;
    case PARITY__ENVELOPE__BODY_CALIBRATION:
        json_object_set_new(o, "samples", json_integer(
                                (json_int_t)env->calibration->n_wall_us));
        break;
    default:
        break;
    }
    char *line = json_dumps(o, JSON_COMPACT);
    if (line) {
        printf("%s\n", line);
        fflush(stdout);
        free(line);
    }
    json_decref(o);
}

int
main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: daemon-peer ENDPOINT CERT SECONDS "
                "[ACTION]...\n");
        return 2;
    }
    zsys_handler_set(NULL);
    signal(SIGTERM, s_on_term);
    zcert_t *cert = zcert_load(argv[2]);
    if (!cert) {
        fprintf(stderr, "daemon-peer: zcert_load %s failed\n", argv[2]);
        return 2;
    }
    zsock_t *router = zsock_new(ZMQ_ROUTER);
    zcert_apply(cert, router);
    zsock_set_curve_server(router, 1);
    zsock_set_linger(router, 0);
    if (zsock_bind(router, "%s", argv[1]) < 0) {
        fprintf(stderr, "daemon-peer: bind %s failed\n", argv[1]);
        return 1;
    }
    void *sock = zsock_resolve(router);
    bool offered = false, cancelled[S_MAX_ACTIONS] = { false };
    bool ack_data = true;
    s_start_ms = zclock_mono();
    int64_t hold_until = 0, drop_until = 0;
    /* Held acks, in the order their messages came. */
    static uint64_t held[1 << 16];
    size_t n_held = 0;
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "ack-none") == 0)
            ack_data = false;
        if (strncmp(argv[i], "ack-hold:", 9) == 0)
            hold_until = s_start_ms + (int64_t)atoi(argv[i] + 9) * 1000;
        if (strncmp(argv[i], "ack-drop:", 9) == 0)
            drop_until = s_start_ms + (int64_t)atoi(argv[i] + 9) * 1000;
    }
    char current_job[128] = "";   /* job of the last RunStart */
    uint8_t rid[256];
    size_t rid_len = 0;
    int64_t end = zclock_mono() + (int64_t)atoi(argv[3]) * 1000;
    int64_t next_hb = 0;
    while (!s_stop && zclock_mono() < end) {
        /* Heartbeats every 200 ms: the agent's liveness needs them. */
        if (rid_len > 0 && zclock_mono() >= next_hb) {
            uint8_t hb[128];
            size_t hl = 0;
            if (pw_wire_pack_heartbeat(zclock_time() * 1000, 0, "", "", hb,
                                       sizeof hb, &hl) == PW_WIRE_OK) {
                zmq_send(sock, rid, rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT);
                zmq_send(sock, hb, hl, ZMQ_DONTWAIT);
            }
            next_hb = zclock_mono() + 200;
        }
        if (n_held > 0 && zclock_mono() >= hold_until) {
            for (size_t i = 0; i < n_held; i++)
                s_ack(sock, rid, rid_len, held[i]);
            n_held = 0;
        }
        zmq_pollitem_t it = { sock, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 100) <= 0)
            continue;
        int r = zmq_recv(sock, rid, sizeof rid, 0);
        if (r < 0)
            continue;
        rid_len = (size_t)r;
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, sock, 0) < 0)
            continue;
        Parity__Envelope *env = NULL;
        if (pw_wire_unpack(zmq_msg_data(&msg), zmq_msg_size(&msg), 0, &env,
                           NULL, NULL, 0) != PW_WIRE_OK) {
            zmq_msg_close(&msg);
            continue;
        }
        zmq_msg_close(&msg);
        if (env->body_case != PARITY__ENVELOPE__BODY_HEARTBEAT)
            s_print(env);
        if (env->body_case == PARITY__ENVELOPE__BODY_HELLO) {
            s_ack(sock, rid, rid_len, 0);
            for (int i = 4; !offered && i < argc; i++)
                if (strncmp(argv[i], "offer:", 6) == 0)
                    s_offer(sock, rid, rid_len, argv[i] + 6);
            offered = true;
        } else if (pw_wire_is_data(env->body_case) && ack_data
                   && zclock_mono() < hold_until) {
            if (n_held < sizeof held / sizeof held[0])
                held[n_held++] = env->seq;
        } else if (pw_wire_is_data(env->body_case) && ack_data
                   && zclock_mono() >= drop_until) {
            s_ack(sock, rid, rid_len, env->seq);
        }
        if (env->body_case == PARITY__ENVELOPE__BODY_RUN_START)
            snprintf(current_job, sizeof current_job, "%s",
                     env->run_start->job_id);
        if (env->body_case == PARITY__ENVELOPE__BODY_SAMPLE_BATCH) {
            for (int i = 4; i < argc && i - 4 < S_MAX_ACTIONS; i++) {
                if (strncmp(argv[i], "cancel-measuring:", 17) == 0
                    && !cancelled[i - 4]
                    && strcmp(current_job, argv[i] + 17) == 0) {
                    s_cancel(sock, rid, rid_len, argv[i] + 17);
                    cancelled[i - 4] = true;
                }
            }
        }
        if (env->body_case == PARITY__ENVELOPE__BODY_JOB_STATUS) {
            for (int i = 4; i < argc && i - 4 < S_MAX_ACTIONS; i++) {
                const char *a = argv[i];
                const char *want = strncmp(a, "cancel-running:", 15) == 0
                                 ? "running"
                                 : strncmp(a, "cancel-queued:", 14) == 0
                                 ? "queued" : NULL;
                const char *job = want ? strchr(a, ':') + 1 : NULL;
                if (want && !cancelled[i - 4]
                    && strcmp(env->job_status->job_id, job) == 0
                    && strcmp(env->job_status->state, want) == 0) {
                    s_cancel(sock, rid, rid_len, job);
                    cancelled[i - 4] = true;
                }
            }
        }
        pw_wire_free(&env);
    }
    zsock_destroy(&router);
    zcert_destroy(&cert);
    return 0;
}
