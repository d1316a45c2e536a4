/* fz_frame.c -- libFuzzer target: raw frames from an agent, as the
 * collector reads and stores them.
 *
 * The input is one connection's frames, each preceded by its length as
 * a protobuf varint (a "delimited" stream; a length past the end takes
 * the rest). Each frame goes the way co_server and co_writer send it:
 *
 *   1. pw_wire_peek, as the network loop routes it; when the frame also
 *      decodes, peek must name the same body and seq as the decode (the
 *      loop routes and drops resends by peek, the writer acts on the
 *      decode), else the target aborts;
 *   2. pw_wire_unpack with the collector's bound and decode budget;
 *   3. co_writer's dispatch: Hello first on the connection, then
 *      Calibration, RunStart, SampleBatch (through co_ingest_batches, the
 *      group path, and co_runs), RunEnd (with co_runs' samples) stored
 *      by co_db inside one burst transaction, as the writer does.
 *
 * co_db runs against fz_pq.c, an in-memory libpq: the statements, their
 * parameters and the COPY buffers are real, the server is not.
 * co_server and co_writer themselves are not linked: both are bound to
 * ZeroMQ sockets and threads, so their few lines of dispatch are
 * repeated here (s_frame); JobStatus (co_jobs, its own connection) and
 * Requests (co_query) stop after the decode.
 */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "co_cals.h"
#include "co_db.h"
#include "co_hosts.h"
#include "co_ingest.h"
#include "co_runs.h"
#include "co_verdicts.h"
#include "fz_pq.h"
#include "pw_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The agent's host id in the fake database (fz_pq.c's run is its). */
#define S_HOST_ID 1
/* The authenticated key of the connection (40 Z85 characters). */
#define S_KEY "0123456789012345678901234567890123456789"
/* Frames read from one input at most. */
#define S_FRAMES_MAX 64

typedef struct {
    co_db_t *db;
    co_runs_t *runs;
    bool hello;            /* Hello stored on this connection */
    int64_t host_id;
} s_conn_t;

/* Peek must agree with the decode (pw_wire.h promises it). */
static void
s_peek_agrees(const uint8_t *buf, size_t len, const Parity__Envelope *env)
{
    int body_case = -1;
    uint64_t seq = 0;
    if (pw_wire_peek(buf, len, &body_case, &seq) != PW_WIRE_OK
        || body_case != (int)env->body_case || seq != env->seq) {
        fprintf(stderr, "fz_frame: peek says body %d seq %llu, the decode "
                "body %d seq %llu\n", body_case, (unsigned long long)seq,
                (int)env->body_case, (unsigned long long)env->seq);
        abort();
    }
}

/* With FZ_VERBOSE set, say what became of each frame (to see how far a
 * seed gets). */
static void
s_verbose(const char *what, int rc, const char *err)
{
    static int verbose = -1;
    if (verbose < 0)
        verbose = getenv("FZ_VERBOSE") != NULL;
    if (verbose)
        fprintf(stderr, "fz_frame: %s: %d %s\n", what, rc, rc ? err : "");
}

/* A SampleBatch through the group path, then into co_runs as the writer
 * does after its COMMIT. */
static void
s_batch(s_conn_t *c, const Parity__SampleBatch *b)
{
    char err[512];
    co_ingest_item_t item = { .host_id = c->host_id, .batch = b };
    co_ingest_batches(c->db, &item, 1, err, sizeof err);
    s_verbose("batch", item.rc, item.err);
    if (item.rc == CO_DB_OK && item.stored > 0)
        co_runs_add(c->runs, c->host_id, b);
}

static void
s_run_end(s_conn_t *c, const Parity__RunEnd *re)
{
    char err[512];
    unsigned verdicts = 0;
    co_db_set_run_samples(c->db, co_runs_get(c->runs, c->host_id,
                                             re->run_id));
    int rc = co_verdicts_run_end(c->db, c->host_id, re, CO_DB_FLOOR_WINDOW,
                           0.04, &verdicts, err, sizeof err);
    s_verbose("run_end", rc, err);
    if (rc == CO_DB_OK || rc == CO_DB_DUP || rc == CO_DB_REFUSED
        || rc == CO_DB_DEPENDS)
        co_runs_forget(c->runs, c->host_id, re->run_id);
}

/* One frame: what co_server's s_handle and co_writer's s_on_frame and
 * s_on_data do with it. */
static void
s_frame(s_conn_t *c, const uint8_t *buf, size_t len)
{
    Parity__Envelope *env = NULL;
    uint64_t seq = 0;
    char err[512];

    /* The loop peeks at every frame, decodable or not. */
    int body_case = 0;
    uint64_t peek_seq = 0;
    (void)pw_wire_peek(buf, len, &body_case, &peek_seq);
    int rc = pw_wire_unpack(buf, len, PW_WIRE_MAX_FRAME, &env, &seq, err,
                            sizeof err);
    if (rc != PW_WIRE_OK) {
        s_verbose("unpack", rc, err);
        return;
    }
    s_peek_agrees(buf, len, env);
    switch (env->body_case) {
    case PARITY__ENVELOPE__BODY_HELLO: {
        int64_t host_id = 0;
        rc = co_hosts_hello(c->db, S_KEY, env->hello, &host_id, err,
                         sizeof err);
        s_verbose("hello", rc, err);
        c->hello = rc == CO_DB_OK;
        c->host_id = rc == CO_DB_OK ? host_id : 0;
        break;
    }
    case PARITY__ENVELOPE__BODY_CALIBRATION:
        if (c->hello)
            s_verbose("calibration", co_cals_store(c->db, c->host_id,
                      env->calibration, err, sizeof err), err);
        break;
    case PARITY__ENVELOPE__BODY_RUN_START:
        if (c->hello)
            s_verbose("run_start", co_ingest_run_start(c->db, c->host_id,
                      env->run_start, err, sizeof err), err);
        break;
    case PARITY__ENVELOPE__BODY_SAMPLE_BATCH:
        if (c->hello)
            s_batch(c, env->sample_batch);
        break;
    case PARITY__ENVELOPE__BODY_RUN_END:
        if (c->hello)
            s_run_end(c, env->run_end);
        break;
    default:
        break;   /* Heartbeat, JobStatus, Request, what agents never send */
    }
    pw_wire_free(&env);
}

/* A varint length at *p (protobuf's base 128); false when cut short. */
static bool
s_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    char err[512];
    s_conn_t c = { 0 };

    /* One handle for the process: a new one per input costs more than
     * the input (its run cache is 150 KB of fresh pages); connecting
     * again forgets everything the last input left in it. */
    static co_db_t *db;
    if (!db && !(db = co_db_new("fuzz")))
        abort();
    fz_pq_reset();
    c.db = db;
    c.runs = co_runs_new(CO_RUNS_MAX_SAMPLES);
    if (!c.runs || co_db_connect(c.db, err, sizeof err) != CO_DB_OK)
        abort();
    /* The writer's burst: one transaction around every frame. */
    co_db_begin(c.db, err, sizeof err);
    for (int n = 0; n < S_FRAMES_MAX && p < end; n++) {
        uint64_t len;
        if (!s_varint(&p, end, &len))
            break;
        size_t take = len < (uint64_t)(end - p) ? (size_t)len
                                                 : (size_t)(end - p);
        s_frame(&c, p, take);
        p += take;
    }
    co_db_commit(c.db, err, sizeof err);
    co_runs_destroy(&c.runs);
    return 0;
}
