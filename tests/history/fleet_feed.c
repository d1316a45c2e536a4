/* fleet_feed.c -- agents that send exactly the samples they are given:
 * the independent fleet of the change-points tests (tests/history
 * test_fleet_changes.py), which needs a 10 % step with 1 % noise at a
 * known commit, not what a busy test machine measures.
 *
 *   fleet-feed ENDPOINT COLLECTOR_PUBLIC_KEY KEYS_DIR < PLAN.jsonl
 *
 * PLAN, one message a line, sent in order, each acked before the next:
 *   {"host": "h1", "calibration": [us, ...], "quiet": true}
 *   {"host": "h1", "suite": "s", "bench": "b", "tags": {"commit": "c01"},
 *    "start_us": N, "arms": [{"name": "new", "subject": true,
 *                              "samples": [us, ...]}, {...}]}
 * A run is RunStart, one SampleBatch of its MEASURED samples (round i of
 * arm k is samples[i]) and RunEnd. Each host says Hello once, with the
 * CURVE key KEYS_DIR/HOST_secret (`parity keygen HOST`, on the
 * collector's allow-list). Speaks docs/protocol.md through pw_wire, as
 * an agent written from it would. Exit 0 when every message was acked;
 * 1 with the line and the reason on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co_client.h"

#define S_HOSTS_MAX   32
#define S_SAMPLES_MAX 512
#define S_LINE_MAX    (1 << 20)
#define S_ACK_MS      10000

typedef struct {
    char name[64];
    zcert_t *cert;
    void *sock;
    uint64_t seq;
} s_host_t;

static s_host_t s_hosts[S_HOSTS_MAX];
static size_t s_nhosts;

static int
s_fail(size_t line, const char *what)
{
    fprintf(stderr, "fleet-feed: line %zu: %s\n", line, what);
    return 1;
}

static s_host_t *
s_host(void *ctx, const char *endpoint, const char *server_key,
       const char *keys, const char *name)
{
    char path[4096];
    for (size_t i = 0; i < s_nhosts; i++)
        if (strcmp(s_hosts[i].name, name) == 0)
            return &s_hosts[i];
    if (s_nhosts == S_HOSTS_MAX || strlen(name) >= sizeof s_hosts[0].name)
        return NULL;
    s_host_t *h = &s_hosts[s_nhosts];
    snprintf(path, sizeof path, "%s/%s_secret", keys, name);
    if (!(h->cert = zcert_load(path)))
        return NULL;
    snprintf(h->name, sizeof h->name, "%s", name);
    h->sock = cc_dealer(ctx, endpoint, h->cert, server_key);
    if (cc_hello(h->sock, name) != 0 || !cc_wait_ack(h->sock, 0, S_ACK_MS))
        return NULL;
    s_nhosts++;
    return h;
}

static bool
s_send(s_host_t *h, Parity__Envelope *env)
{
    return cc_send(h->sock, env) == 0 &&
           cc_wait_ack(h->sock, env->seq, S_ACK_MS);
}

static const char *
s_calibration(s_host_t *h, const json_t *plan, size_t line)
{
    static double w[4096];
    char id[128];
    const json_t *arr = json_object_get(plan, "calibration"), *v;
    size_t i;
    if (json_array_size(arr) > 4096)
        return "more than 4096 calibration samples";
    json_array_foreach(arr, i, v) w[i] = json_number_value(v);
    Parity__Envelope env;
    Parity__Calibration cal = PARITY__CALIBRATION__INIT;
    snprintf(id, sizeof id, "cal-%s-%zu", h->name, line);
    cal.calibration_id = id;
    cal.n_wall_us = json_array_size(arr);
    cal.wall_us = w;
    cal.taken_at_us = cc_unix_us();
    cal.quiet = json_is_true(json_object_get(plan, "quiet"));
    pw_wire_init(&env, ++h->seq);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_CALIBRATION, &cal);
    return s_send(h, &env) ? NULL : "Calibration not acked";
}

static const char *
s_run(s_host_t *h, const json_t *plan, size_t line)
{
    static Parity__Sample smp[2 * S_SAMPLES_MAX];
    static Parity__Sample *ps[2 * S_SAMPLES_MAX];
    Parity__Arm arm[2] = { PARITY__ARM__INIT, PARITY__ARM__INIT };
    Parity__Arm *arms[2] = { &arm[0], &arm[1] };
    Parity__Tag tag[16], *tags[16];
    char run_id[128];
    const json_t *ja = json_object_get(plan, "arms"), *jt, *a, *v;
    const char *key;
    size_t k, i, n = 0, ntags = 0, runs = 0;
    int64_t start = json_integer_value(json_object_get(plan, "start_us"));

    if (json_array_size(ja) < 1 || json_array_size(ja) > 2)
        return "a run has one or two arms";
    json_array_foreach(ja, k, a) {
        const json_t *s = json_object_get(a, "samples");
        arm[k].name = (char *)json_string_value(json_object_get(a, "name"));
        arm[k].subject = json_is_true(json_object_get(a, "subject"));
        if (!arm[k].name || json_array_size(s) > S_SAMPLES_MAX)
            return "an arm needs a name and at most 512 samples";
        runs = json_array_size(s);
        json_array_foreach(s, i, v) {
            Parity__Sample *x = &smp[n];
            parity__sample__init(x);
            x->kind = PARITY__SAMPLE_KIND__MEASURED;
            x->arm = (uint32_t)k;
            x->round = (uint32_t)i;
            x->position = (uint32_t)k;
            x->wall_us = json_number_value(v);
            x->cpu = -1;
            x->start_unix_us = start + (int64_t)(i * 2 + k) * 1000;
            ps[n++] = x;
        }
    }
    jt = json_object_get(plan, "tags");
    json_object_foreach((json_t *)jt, key, v) {
        if (ntags == 16)
            return "more than 16 tags";
        parity__tag__init(&tag[ntags]);
        tag[ntags].key = (char *)key;
        tag[ntags].value = (char *)json_string_value(v);
        tags[ntags] = &tag[ntags];
        ntags++;
    }
    snprintf(run_id, sizeof run_id, "feed-%s-%zu-%lld", h->name, line,
             (long long)start);
    Parity__Envelope env;
    Parity__RunStart rs = PARITY__RUN_START__INIT;
    rs.run_id = run_id;
    rs.suite = (char *)json_string_value(json_object_get(plan, "suite"));
    rs.benchmark = (char *)json_string_value(json_object_get(plan, "bench"));
    rs.n_arms = json_array_size(ja);
    rs.arms = arms;
    rs.n_tags = ntags;
    rs.tags = tags;
    rs.started_at_us = start;
    rs.runs = (uint32_t)runs;
    rs.environment_json = "{\"os\":\"linux\"}";
    if (!rs.suite || !rs.benchmark)
        return "a run needs suite and bench";
    pw_wire_init(&env, ++h->seq);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_RUN_START, &rs);
    if (!s_send(h, &env))
        return "RunStart not acked";
    Parity__SampleBatch sb = PARITY__SAMPLE_BATCH__INIT;
    sb.run_id = run_id;
    sb.batch_seq = 0;
    sb.n_samples = n;
    sb.samples = ps;
    pw_wire_init(&env, ++h->seq);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &sb);
    if (!s_send(h, &env))
        return "SampleBatch not acked";
    Parity__RunEnd re = PARITY__RUN_END__INIT;
    re.run_id = run_id;
    re.status = PARITY__RUN_STATUS__COMPLETE;
    re.batches = 1;
    re.samples = n;
    re.ended_at_us = start + (int64_t)n * 1000;
    pw_wire_init(&env, ++h->seq);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_RUN_END, &re);
    return s_send(h, &env) ? NULL : "RunEnd not acked";
}

int
main(int argc, char **argv)
{
    static char buf[S_LINE_MAX];
    size_t line = 0;
    int rc = 0;
    if (argc != 4) {
        fprintf(stderr, "usage: fleet-feed ENDPOINT COLLECTOR_PUBLIC_KEY "
                "KEYS_DIR < PLAN.jsonl\n");
        return 2;
    }
    zcert_t *server = zcert_load(argv[2]);
    if (!server) {
        fprintf(stderr, "fleet-feed: %s: not a key file\n", argv[2]);
        return 1;
    }
    void *ctx = zmq_ctx_new();
    while (rc == 0 && fgets(buf, sizeof buf, stdin)) {
        json_error_t jerr;
        line++;
        json_t *plan = json_loads(buf, 0, &jerr);
        const char *host = plan ? json_string_value(json_object_get(plan,
                                                    "host")) : NULL;
        s_host_t *h = host ? s_host(ctx, argv[1], zcert_public_txt(server),
                                    argv[3], host) : NULL;
        const char *why = !plan ? "not JSON" : !host ? "no host"
                          : !h ? "the host's key or Hello failed"
                          : json_object_get(plan, "calibration")
                          ? s_calibration(h, plan, line) : s_run(h, plan, line);
        if (why)
            rc = s_fail(line, why);
        json_decref(plan);
    }
    for (size_t i = 0; i < s_nhosts; i++) {
        zmq_close(s_hosts[i].sock);
        zcert_destroy(&s_hosts[i].cert);
    }
    zcert_destroy(&server);
    zmq_ctx_term(ctx);
    return rc;
}
