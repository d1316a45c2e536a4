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
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <czmq.h>
#include <zmq.h>

#include "pw_wire.h"

/* Longest stdin line: a little above the collector's args bound, so a
 * test can send one byte too many. */
#define S_LINE_MAX (1u << 20)

static int64_t
s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
    int64_t until = s_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = until - s_now_ms();
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

int
main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: jobs-request ENDPOINT COLLECTOR_PUBLIC_CERT "
                "CLIENT_CERT [TIMEOUT_MS] < COMMAND<TAB>ARGS lines\n");
        return 2;
    }
    int timeout_ms = argc > 4 ? atoi(argv[4]) : 5000;
    zcert_t *server = zcert_load(argv[2]), *me = zcert_load(argv[3]);
    if (!server || !me) {
        fprintf(stderr, "jobs-request: cannot load %s or %s\n", argv[2],
                argv[3]);
        zcert_destroy(&server);
        zcert_destroy(&me);
        return 2;
    }
    void *ctx = zmq_ctx_new();
    void *sock = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, zcert_public_key(server), 32);
    zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, zcert_public_key(me), 32);
    zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, zcert_secret_key(me), 32);
    zmq_connect(sock, argv[1]);
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
