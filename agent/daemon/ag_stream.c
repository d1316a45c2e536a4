/* ag_stream.c -- see ag_stream.h, docs/protocol.md and docs/spool.md. */
#include "ag_stream.h"

#include "ag_env.h"
#include "ag_log.h"
#include "pw_systemd.h"
#include "ag_recover.h"
#include "ag_spool.h"
#include "config.h"
#include "pw_clock.h"
#include "pw_limits.h"
#include "pw_wire.h"

#include <czmq.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* Samples and statuses go on the wire by a cast (x->kind, e->status): the
 * harness's enums must keep parity.proto's numbers. */
_Static_assert((int)PW_SAMPLE_MEASURED == PARITY__SAMPLE_KIND__MEASURED &&
               (int)PW_SAMPLE_WARMUP == PARITY__SAMPLE_KIND__WARMUP &&
               (int)PW_SAMPLE_CALIBRATION ==
               PARITY__SAMPLE_KIND__CALIBRATION &&
               (int)PW_SAMPLE_ERROR == PARITY__SAMPLE_KIND__ERROR,
               "pw_sample_kind_t is parity.proto's SampleKind");
_Static_assert((int)AG_RUN_COMPLETE == PARITY__RUN_STATUS__COMPLETE &&
               (int)AG_RUN_FAILED == PARITY__RUN_STATUS__FAILED &&
               (int)AG_RUN_INCOMPLETE == PARITY__RUN_STATUS__INCOMPLETE &&
               (int)AG_RUN_CANCELLED == PARITY__RUN_STATUS__CANCELLED,
               "ag_run_status_t is parity.proto's RunStatus");

#define S_ERR 512

static void
s_uuid(char out[37])
{
    zuuid_t *u = zuuid_new();
    snprintf(out, 37, "%s", u ? zuuid_str_canonical(u) : "");
    zuuid_destroy(&u);
}

static void
s_link_log(void *ctx, const char *event, const char *text)
{
    (void)ctx;
    ag_logf(event, "%s", text);
}

struct ag_stream {
    ag_spool_t *spool;
    ag_link_t *link;
    pthread_t net;
    bool net_started;
    atomic_bool stop;
    int wake_fd;                       /* eventfd: something was spooled */
    /* A measured run or a calibration is under way on this machine's
     * lock: spooled messages wait for the next heartbeat's tick instead
     * of waking the network thread (ag_stream_set_measuring). */
    atomic_bool measuring;
    char collector[256];               /* --collector, for STATUS= */
    pthread_mutex_t emit_lock;         /* seq order == spool order */
    char *job_id;
    const Parity__JobOffer *job;       /* borrowed during a job's run */

    /* Called on the network thread for JobOffer / JobCancel. */
    void (*on_job_message)(void *ctx, const Parity__Envelope *env);
    void *job_ctx;
    const _Atomic int *stop_signal;    /* the daemon's; NULL: none */
    /* The Hello's parts that stay, and the next Hello for the network
     * thread (ag_stream_set_suites), under hello_lock. */
    char *agent_name;
    char *env_json;
    pthread_mutex_t hello_lock;
    uint8_t *next_hello;
    size_t next_hello_len;

    /* The harness run in progress (harness thread only). */
    ag_callbacks_t inner;
    bool run_open;
    char run_id[37];
    uint32_t batch_seq;
    uint64_t samples_sent;
    Parity__Sample batch[PW_WIRE_MAX_BATCH];
    char *batch_errors[PW_WIRE_MAX_BATCH];
    size_t batch_count;
    int64_t last_flush_ms;
    char stop_reason[S_ERR];           /* set when we stop a run */
    atomic_bool spool_full;
    /* The job in progress (harness thread): why it failed, if a run
     * ended FAILED, and when progress was last reported. */
    char job_failed[S_ERR];
    int64_t last_progress_ms;
};

static void
s_wake(ag_stream_t *s)
{
    uint64_t one = 1;
    if (write(s->wake_fd, &one, sizeof one) < 0) {
        /* A full counter still wakes the reader. */
    }
}

/* Give env the next seq, pack it, spool it, wake the sender. force: pass
 * the spool's bound (RunEnd, JobStatus, the batch that fills it). */
static int
s_emit(ag_stream_t *s, Parity__Envelope *env, bool force, char *err,
       size_t errlen)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc;
    pthread_mutex_lock(&s->emit_lock);
    uint64_t seq = ag_spool_take_seq(s->spool, err, errlen);
    if (seq == 0) {
        rc = AG_SPOOL_ERR;
        goto out;
    }
    env->seq = seq;
    if (pw_wire_pack_alloc(env, &buf, &len, err, errlen) != PW_WIRE_OK) {
        rc = AG_SPOOL_ERR;
        goto out;
    }
    rc = ag_spool_append(s->spool, seq, buf, len, force, err, errlen);
out:
    pthread_mutex_unlock(&s->emit_lock);
    free(buf);
    if (rc == AG_SPOOL_OK && !atomic_load(&s->measuring))
        s_wake(s);
    return rc;
}

static int
s_job_status(ag_stream_t *s, const char *job_id, const char *state,
             const char *reason, const char *run_id, const char *digest)
{
    Parity__Envelope env;
    Parity__JobStatus js;
    char err[S_ERR];
    parity__job_status__init(&js);
    js.job_id = (char *)(job_id ? job_id : "");
    js.state = (char *)state;
    js.reason = (char *)(reason ? reason : "");
    js.run_id = (char *)(run_id ? run_id : "");
    js.suite_digest = (char *)(digest ? digest : "");
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_JOB_STATUS, &js);
    int rc = s_emit(s, &env, true, err, sizeof err);
    if (rc != AG_SPOOL_OK)
        ag_logf("spool_error", "job %s status %s: %s", job_id, state, err);
    else
        ag_logf("job_status", "job=%s state=%s%s%s", job_id, state,
                reason ? " reason=" : "", reason ? reason : "");
    return rc;
}

int
ag_stream_job_status(ag_stream_t *s, const char *job_id, const char *state,
                     const char *reason, const char *run_id)
{
    return s_job_status(s, job_id, state, reason, run_id, NULL);
}

int
ag_stream_job_started(ag_stream_t *s, const char *job_id,
                      const char *suite_digest)
{
    return s_job_status(s, job_id, "running", NULL, NULL, suite_digest);
}

int
ag_stream_calibration(ag_stream_t *s, const ag_cal_batch_t *c, bool quiet,
                      char *err, size_t errlen)
{
    Parity__Envelope env;
    Parity__Calibration cal;
    char id[37];
    size_t n = c->n < PW_WIRE_MAX_CALIBRATION ? c->n
                                              : PW_WIRE_MAX_CALIBRATION;
    bool counted = n > 0 && c->task_clock_us;
    for (size_t i = 0; counted && i < n; i++)
        counted = c->task_clock_us[i] > 0;
    s_uuid(id);
    parity__calibration__init(&cal);
    cal.calibration_id = id;
    cal.wall_us = (double *)c->wall_us;
    cal.n_wall_us = n;
    /* The other metrics' values go beside wall time's, each column all
     * or nothing (docs/protocol.md, Calibration). */
    if (c->cpu_us) {
        cal.cpu_us = (double *)c->cpu_us;
        cal.n_cpu_us = n;
    }
    if (counted) {
        cal.task_clock_us = (double *)c->task_clock_us;
        cal.n_task_clock_us = n;
    }
    if (c->peak_rss_kb) {
        cal.peak_rss_kb = (double *)c->peak_rss_kb;
        cal.n_peak_rss_kb = n;
    }
    cal.taken_at_us = c->taken_at_us;
    cal.quiet = quiet;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_CALIBRATION, &cal);
    return s_emit(s, &env, false, err, errlen);
}

static void
s_write_run_state(ag_stream_t *s)
{
    char text[128], err[S_ERR];
    snprintf(text, sizeof text, "%s %" PRIu32 " %" PRIu64 "\n", s->run_id,
             s->batch_seq, s->samples_sent);
    if (ag_spool_state_write(s->spool, AG_RECOVER_RUN_STATE, text, err, sizeof err)
        != AG_SPOOL_OK)
        ag_logf("spool_error", "%s", err);
}

static void
s_batch_clear(ag_stream_t *s)
{
    for (size_t i = 0; i < s->batch_count; i++) {
        free(s->batch_errors[i]);
        s->batch_errors[i] = NULL;
    }
    s->batch_count = 0;
}

/* Spool the pending samples as the next SampleBatch. Returns -1 when the
 * spool is full (the batch is still kept, forced) so the run stops. */
static int
s_flush(ag_stream_t *s)
{
    char err[S_ERR];
    s->last_flush_ms = pw_clock_mono_ms();
    if (s->batch_count == 0 || !s->run_open)
        return 0;
    Parity__Envelope env;
    Parity__SampleBatch b;
    Parity__Sample *ptrs[PW_WIRE_MAX_BATCH];
    parity__sample_batch__init(&b);
    b.run_id = s->run_id;
    b.batch_seq = s->batch_seq;
    for (size_t i = 0; i < s->batch_count; i++)
        ptrs[i] = &s->batch[i];
    b.samples = ptrs;
    b.n_samples = s->batch_count;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_SAMPLE_BATCH, &b);
    int rc = s_emit(s, &env, false, err, sizeof err);
    int ret = 0;
    if (rc == AG_SPOOL_FULL) {
        /* Keep what was measured (one batch over the bound), stop the run
         * and refuse new ones until the collector catches up. */
        ag_logf("spool_full", "%s; stopping the run", err);
        snprintf(s->stop_reason, sizeof s->stop_reason, "%s", err);
        atomic_store(&s->spool_full, true);
        rc = s_emit(s, &env, true, err, sizeof err);
        ret = -1;
    }
    if (rc != AG_SPOOL_OK) {
        ag_logf("spool_error", "batch %" PRIu32 " of run %s: %s",
                s->batch_seq, s->run_id, err);
        snprintf(s->stop_reason, sizeof s->stop_reason, "%s", err);
        s_batch_clear(s);
        return -1;
    }
    s->batch_seq++;
    s->samples_sent += s->batch_count;
    s_batch_clear(s);
    s_write_run_state(s);
    return ret;
}

static int
s_cb_calibration(void *ctx, const ag_cal_batch_t *cal)
{
    ag_stream_t *s = ctx;
    char err[S_ERR];
    /* The harness reports its session-start calibration even when the
     * rounds alone reach the target (n == 0): nothing to send, and the
     * collector refuses a Calibration without samples. */
    if (cal->n > 0 && ag_stream_calibration(s, cal, false, err, sizeof err)
                      != AG_SPOOL_OK) {
        ag_logf("spool_error", "calibration: %s", err);
        snprintf(s->stop_reason, sizeof s->stop_reason, "%s", err);
        return -1;
    }
    return s->inner.on_calibration
           ? s->inner.on_calibration(s->inner.ctx, cal)
           : 0;
}

/* A copy of text (a program's output) that is valid UTF-8: each byte
 * that is not part of a valid sequence becomes '?'. The collector refuses
 * a RunStart holding other text (its database cannot store it), and
 * then every batch of the run with it; a `--version` in Latin-1, or
 * output cut at 16 KiB inside a character, must not lose the run.
 * NULL on out of memory. */
static char *
s_utf8_copy(const char *text)
{
    size_t n = strlen(text);
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    memcpy(out, text, n + 1);
    for (size_t at = 0; at < n;) {
        at += pw_wire_utf8_valid(out + at, n - at);
        if (at < n)
            out[at++] = '?';
    }
    return out;
}

static int
s_cb_run_start(void *ctx, const ag_run_start_t *st)
{
    ag_stream_t *s = ctx;
    char err[S_ERR];
    Parity__Envelope env;
    Parity__RunStart rs;
    Parity__Arm arms[PW_WIRE_MAX_ARMS], *arm_ptrs[PW_WIRE_MAX_ARMS];
    char *versions[PW_WIRE_MAX_ARMS] = { NULL };
    size_t na = st->arm_count < PW_WIRE_MAX_ARMS ? st->arm_count
                                                 : PW_WIRE_MAX_ARMS;
    s_uuid(s->run_id);
    s->batch_seq = 0;
    s->samples_sent = 0;
    s->batch_count = 0;
    s->stop_reason[0] = 0;
    parity__run_start__init(&rs);
    rs.run_id = s->run_id;
    rs.job_id = s->job_id ? s->job_id : "";
    if (s->job) {
        /* The job's tags and label go with each of its runs. */
        rs.tags = s->job->tags;
        rs.n_tags = s->job->n_tags;
        rs.label = s->job->label;
    }
    rs.suite = (char *)st->suite;
    rs.benchmark = (char *)st->benchmark;
    Parity__Var revision = PARITY__VAR__INIT;
    if (st->revision) {
        revision.name = (char *)st->revision;
        revision.value = (char *)st->revision_value;
        rs.revision = &revision;
    }
    for (size_t i = 0; i < na; i++) {
        parity__arm__init(&arms[i]);
        arms[i].name = (char *)st->arms[i].name;
        arms[i].subject = st->arms[i].subject;
        if (st->arms[i].argv) {
            size_t c = 0;
            while (st->arms[i].argv[c])
                c++;
            arms[i].argv = (char **)st->arms[i].argv;
            arms[i].n_argv = c;
        }
        arms[i].shell = (char *)(st->arms[i].shell ? st->arms[i].shell : "");
        versions[i] = s_utf8_copy(st->arms[i].version_output
                                  ? st->arms[i].version_output : "");
        arms[i].version_output = versions[i] ? versions[i] : "";
        arms[i].instance = (char *)(st->arms[i].instance
                                    ? st->arms[i].instance : "");
        arm_ptrs[i] = &arms[i];
    }
    rs.arms = arm_ptrs;
    rs.n_arms = na;
    rs.started_at_us = st->started_at_us;
    rs.runs = st->runs;
    rs.warmup = st->warmup;
    /* The metrics the benchmark is judged and tracked on (docs/suites.md
     * "Metrics"); none sent for wall alone, which an older collector
     * reads the same. */
    char *metrics[VD_METRIC_COUNT];
    size_t nm = 0;
    for (size_t i = 0; st->bench && i < st->bench->metric_count &&
         i < VD_METRIC_COUNT; i++)
        metrics[nm++] = (char *)vd_metric_name(st->bench->metrics[i]);
    if (!(nm == 1 && st->bench->metrics[0] == VD_METRIC_WALL)) {
        rs.metrics = metrics;
        rs.n_metrics = nm;
    }
    rs.environment_json = (char *)(st->environment_json
                                   ? st->environment_json : "");
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_RUN_START, &rs);
    int rc = s_emit(s, &env, false, err, sizeof err);
    for (size_t i = 0; i < na; i++)
        free(versions[i]);
    if (rc != AG_SPOOL_OK) {
        if (rc == AG_SPOOL_FULL)
            atomic_store(&s->spool_full, true);
        ag_logf(rc == AG_SPOOL_FULL ? "spool_full" : "spool_error",
                "run of %s not started: %s", st->benchmark, err);
        snprintf(s->stop_reason, sizeof s->stop_reason, "%s", err);
        return -1;
    }
    s->run_open = true;
    s->last_flush_ms = pw_clock_mono_ms();
    s_write_run_state(s);
    ag_logf("run_start", "run=%s suite=%s benchmark=%s", s->run_id,
            st->suite, st->benchmark);
    return s->inner.on_run_start ? s->inner.on_run_start(s->inner.ctx, st)
                                 : 0;
}

static int
s_cb_sample(void *ctx, const ag_sample_t *x)
{
    ag_stream_t *s = ctx;
    int stop = 0;
    if (s->run_open) {
        Parity__Sample *p = &s->batch[s->batch_count];
        parity__sample__init(p);
        p->kind = (Parity__SampleKind)x->kind;
        p->arm = x->arm;
        p->round = x->round;
        p->position = x->position;
        p->wall_us = x->wall_us;
        p->user_us = x->user_us;
        p->sys_us = x->sys_us;
        p->maxrss_kb = x->maxrss_kb;
        p->exit_status = x->exit_status;
        p->term_signal = x->term_signal;
        p->cpu = x->cpu;
        p->start_unix_us = x->start_unix_us;
        p->instructions = x->instructions;
        p->cycles = x->cycles;
        p->task_clock_ns = x->task_clock_ns;
        if (x->error) {
            s->batch_errors[s->batch_count] = strdup(x->error);
            if (s->batch_errors[s->batch_count])
                p->error = s->batch_errors[s->batch_count];
        }
        s->batch_count++;
        if (s->batch_count == PW_WIRE_MAX_BATCH
            || pw_clock_mono_ms() - s->last_flush_ms >= AG_STREAM_FLUSH_MS)
            stop = s_flush(s);
    }
    int inner = s->inner.on_sample ? s->inner.on_sample(s->inner.ctx, x) : 0;
    return stop ? stop : inner;
}

/* A round ended: flush when the batch has waited AG_STREAM_FLUSH_MS.
 * Not every round: each flush is two fsyncs (~3 ms here, see
 * docs/performance.md) on the measuring thread, between timed runs; a
 * quick benchmark would spend more time syncing than measuring. */
static void
s_cb_progress(void *ctx, const ag_progress_t *p)
{
    ag_stream_t *s = ctx;
    if (pw_clock_mono_ms() - s->last_flush_ms >= AG_STREAM_FLUSH_MS
        && s_flush(s) != 0)
        ag_logf("spool_full", "run %s stops after this round", s->run_id);
    /* A job's progress, at most every AG_STREAM_PROGRESS_MS (each is a
     * spooled, fsync'd message). */
    if (s->job_id && pw_clock_mono_ms() - s->last_progress_ms
        >= AG_STREAM_PROGRESS_MS) {
        Parity__Envelope env;
        Parity__JobStatus js;
        char err[S_ERR];
        parity__job_status__init(&js);
        js.job_id = s->job_id;
        js.state = "running";
        js.run_id = s->run_id;
        js.benchmark = (char *)p->benchmark;
        js.round = p->round;
        js.rounds = p->rounds;
        pw_wire_init(&env, 0);
        pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_JOB_STATUS, &js);
        if (s_emit(s, &env, false, err, sizeof err) != AG_SPOOL_OK)
            ag_logf("spool_error", "progress of job %s: %s", s->job_id, err);
        s->last_progress_ms = pw_clock_mono_ms();
    }
    if (s->inner.on_progress)
        s->inner.on_progress(s->inner.ctx, p);
}

static void
s_emit_run_end(ag_stream_t *s, const char *run_id, Parity__RunStatus status,
               const char *reason, uint32_t batches, uint64_t samples)
{
    Parity__Envelope env;
    Parity__RunEnd re;
    char err[S_ERR];
    parity__run_end__init(&re);
    re.run_id = (char *)run_id;
    re.status = status;
    re.reason = (char *)(reason ? reason : "");
    re.batches = batches;
    re.samples = samples;
    re.ended_at_us = pw_clock_unix_us();
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_RUN_END, &re);
    if (s_emit(s, &env, true, err, sizeof err) != AG_SPOOL_OK) {
        ag_logf("spool_error", "RunEnd of %s: %s", run_id, err);
        return;
    }
    if (ag_spool_state_clear(s->spool, AG_RECOVER_RUN_STATE, err, sizeof err)
        != AG_SPOOL_OK)
        ag_logf("spool_error", "%s", err);
    ag_logf("run_end", "run=%s status=%s batches=%" PRIu32 " samples=%"
            PRIu64 "%s%s", run_id,
            ag_run_status_name((ag_run_status_t)status), batches, samples,
            reason && *reason ? " reason=" : "", reason ? reason : "");
}

static int
s_cb_run_end(void *ctx, const ag_run_end_t *e)
{
    ag_stream_t *s = ctx;
    if (s->run_open) {
        s_flush(s);
        const char *reason = e->reason;
        if (s->stop_reason[0] && e->status != AG_RUN_COMPLETE)
            reason = s->stop_reason;
        else if (s->stop_signal && *s->stop_signal
                 && e->status == AG_RUN_INCOMPLETE)
            reason = AG_STREAM_STOP_REASON;
        s_emit_run_end(s, s->run_id, (Parity__RunStatus)e->status, reason,
                       s->batch_seq, s->samples_sent);
        s->run_open = false;
        if (e->status == AG_RUN_FAILED && !s->job_failed[0])
            snprintf(s->job_failed, sizeof s->job_failed, "%.128s: %.300s",
                     e->benchmark, reason ? reason : "failed");
    }
    return s->inner.on_run_end ? s->inner.on_run_end(s->inner.ctx, e) : 0;
}

void
ag_stream_callbacks(ag_stream_t *s, const ag_callbacks_t *inner,
                    ag_callbacks_t *out)
{
    if (inner)
        s->inner = *inner;
    else
        memset(&s->inner, 0, sizeof s->inner);
    out->ctx = s;
    out->on_calibration = s_cb_calibration;
    out->on_run_start = s_cb_run_start;
    out->on_sample = s_cb_sample;
    out->on_progress = s_cb_progress;
    out->on_run_end = s_cb_run_end;
}

void
ag_stream_set_job(ag_stream_t *s, const char *job_id,
                  const Parity__JobOffer *offer)
{
    free(s->job_id);
    s->job_id = job_id ? strdup(job_id) : NULL;
    s->job = offer;
    s->job_failed[0] = 0;
    s->stop_reason[0] = 0;
    s->last_progress_ms = pw_clock_mono_ms();
}

const char *
ag_stream_job_failed(const ag_stream_t *s)
{
    return s->job_failed;
}

/* Close the runs an earlier process left open (ag_recover.h), after
 * their batches. */
static void
s_recover(ag_stream_t *s)
{
    ag_open_run_t runs[AG_RECOVER_MAX_RUNS];
    bool seen = false;
    size_t n = ag_recover_open_runs(s->spool, runs, AG_RECOVER_MAX_RUNS,
                                    &seen);
    for (size_t i = 0; i < n; i++) {
        ag_logf("run_recovered", "run=%s was open when the agent stopped; "
                 "closing it as incomplete after %" PRIu32 " batches",
                 runs[i].run_id, runs[i].batches);
        s_emit_run_end(s, runs[i].run_id, PARITY__RUN_STATUS__INCOMPLETE,
                       AG_STREAM_RESTART_REASON, runs[i].batches,
                       runs[i].samples);
    }
    if (!seen)
        return;
    char err[S_ERR];
    if (ag_spool_state_clear(s->spool, AG_RECOVER_RUN_STATE, err, sizeof err)
        != AG_SPOOL_OK)
        ag_logf("spool_error", "%s", err);
}

static void
s_on_link_message(void *ctx, const Parity__Envelope *env)
{
    ag_stream_t *s = ctx;
    if (s->on_job_message && (env->body_case
                              == PARITY__ENVELOPE__BODY_JOB_OFFER
                              || env->body_case
                              == PARITY__ENVELOPE__BODY_JOB_CANCEL)) {
        s->on_job_message(s->job_ctx, env);
        return;
    }
    /* The collector refused our key (revoked): a job in progress can
     * never be delivered; the daemon stops it. */
    if (s->on_job_message && env->body_case == PARITY__ENVELOPE__BODY_ERROR
        && env->error->code == PW_WIRE_KEY_DENIED) {
        s->on_job_message(s->job_ctx, env);
        return;
    }
    if (env->body_case != PARITY__ENVELOPE__BODY_ERROR)
        ag_logf("ignored", "%s from the collector ignored",
                pw_wire_body_name(env->body_case));
}

/* On the network thread: a Hello from ag_stream_set_suites goes to the
 * link, which sends it now when the connection said Hello already. */
static void
s_take_hello(ag_stream_t *s)
{
    pthread_mutex_lock(&s->hello_lock);
    uint8_t *buf = s->next_hello;
    size_t len = s->next_hello_len;
    s->next_hello = NULL;
    pthread_mutex_unlock(&s->hello_lock);
    if (!buf)
        return;
    if (ag_link_set_hello(s->link, buf, len) != AG_LINK_OK)
        ag_logf("hello_failed", "malloc: out of memory; the collector keeps "
                "the suites of the last Hello");
    else
        ag_logf("hello", "name=%s: the suites changed, Hello sent again",
                s->agent_name);
    free(buf);
}

/* STATUS= for `systemctl status` (daemon mode, pw_systemd.h). */
static void
s_notify_status(ag_stream_t *s)
{
    ag_link_stats_t st;
    ag_link_stats(s->link, &st);
    pw_systemd_status("%s %s, %zu messages spooled",
                     st.ready ? "connected to" : "connecting to",
                     s->collector, ag_spool_count(s->spool));
}

static void *
s_net_main(void *arg)
{
    ag_stream_t *s = arg;
    /* Named, so that what each thread costs can be read per thread
     * (/proc/PID/task/TID/comm; tests/bench/daemon_floor.py). */
    pthread_setname_np(pthread_self(), "ag-net");
    while (!atomic_load(&s->stop)) {
        bool woken = false;
        /* While measuring, the tick sleeps until its own timers (the
         * heartbeat, a resend) or a message from the collector: nothing
         * of ours wakes during a timed run that need not. */
        ag_link_tick(s->link, atomic_load(&s->measuring)
                              ? AG_STREAM_MEASURING_WAIT_MS : 200,
                     s->wake_fd, &woken);
        s_take_hello(s);
        /* Pings come from this thread, not the job loop: a job runs for
         * as long as its suite says, while this loop turns every 200 ms
         * and stops turning only when the agent is stuck. */
        if (pw_systemd_tick())
            s_notify_status(s);
        if (woken) {
            uint64_t v;
            if (read(s->wake_fd, &v, sizeof v) < 0) {
                /* EAGAIN: someone else drained it. */
            }
        }
    }
    return NULL;
}

static char *
s_hello_env_json(void)
{
    char err[S_ERR];
    json_t *env = ag_env_collect(NULL, 0, err, sizeof err);
    if (!env) {
        ag_logf("env_failed", "%s", err);
        return strdup("{}");
    }
    char *text = json_dumps(env, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(env);
    return text ? text : strdup("{}");
}

/* The Hello listing suites (may be NULL: none), packed, into *buf (the
 * caller frees it). The name and environment are the ones taken at
 * open; the boot id and arch are read again (cheap, and a suite change
 * is no reason to send stale ones). */
static int
s_pack_hello(ag_stream_t *s, const ag_suitedir_t *suites, uint8_t **buf,
             size_t *len, char *err, size_t errlen)
{
    Parity__Envelope env;
    Parity__Hello h;
    Parity__Tag arch, *tags[1];
    struct utsname un;
    char boot[64] = "";
    size_t nsuites = suites ? suites->count : 0;
    int rc = -1;
    /* One more for the built-in A/A suite, listed without benchmarks
     * (they are made per job from its `trials`) or digest. */
    Parity__SuiteInfo *sinfo = calloc(nsuites + 1, sizeof *sinfo);
    Parity__SuiteInfo **sptrs = calloc(nsuites + 1, sizeof *sptrs);

    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (fgets(boot, sizeof boot, f))
            boot[strcspn(boot, "\n")] = 0;
        fclose(f);
    }
    if (!sinfo || !sptrs) {
        snprintf(err, errlen, "calloc: out of memory");
        goto out;
    }
    parity__hello__init(&h);
    h.agent_name = s->agent_name;
    h.agent_version = PARITY_VERSION;
    h.key_fingerprint = (char *)ag_link_public_key(s->link);
    h.environment_json = s->env_json;
    h.boot_id = boot;
    parity__tag__init(&arch);
    arch.key = "arch";
    arch.value = uname(&un) == 0 ? un.machine : "";
    tags[0] = &arch;
    h.tags = tags;
    h.n_tags = 1;
    for (size_t i = 0; i < nsuites; i++) {
        const ag_suite_entry_t *e = &suites->entries[i];
        parity__suite_info__init(&sinfo[i]);
        sinfo[i].name = e->name;
        sinfo[i].digest = (char *)e->digest;
        sinfo[i].benchmarks = e->benchmarks;
        sinfo[i].n_benchmarks = e->benchmark_count;
        sinfo[i].revision = e->revision ? e->revision : "";
        sptrs[i] = &sinfo[i];
    }
    parity__suite_info__init(&sinfo[nsuites]);
    sinfo[nsuites].name = PW_SELFTEST_SUITE;
    sinfo[nsuites].digest = "";
    sptrs[nsuites] = &sinfo[nsuites];
    h.suites = sptrs;
    h.n_suites = nsuites + 1;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_HELLO, &h);
    if (pw_wire_pack_alloc(&env, buf, len, err, errlen) != PW_WIRE_OK)
        goto out;
    rc = 0;
out:
    free(sinfo);
    free(sptrs);
    return rc;
}

/* The first Hello, before the network thread starts. */
static int
s_set_hello(ag_stream_t *s, const ag_stream_opts_t *o, char *err,
            size_t errlen)
{
    char host[256] = "";
    uint8_t *buf = NULL;
    size_t len = 0;
    gethostname(host, sizeof host - 1);
    s->agent_name = strdup(o->name ? o->name : host);
    s->env_json = s_hello_env_json();
    if (!s->agent_name || !s->env_json) {
        snprintf(err, errlen, "strdup: out of memory");
        return -1;
    }
    if (s_pack_hello(s, o->suites, &buf, &len, err, errlen) != 0)
        return -1;
    int rc = ag_link_set_hello(s->link, buf, len);
    free(buf);
    if (rc != AG_LINK_OK) {
        snprintf(err, errlen, "malloc: out of memory");
        return -1;
    }
    ag_logf("hello", "name=%s suites=%zu key=%s", s->agent_name,
            o->suites ? o->suites->count : 0, ag_link_public_key(s->link));
    return 0;
}

int
ag_stream_set_suites(ag_stream_t *s, const ag_suitedir_t *suites, char *err,
                     size_t errlen)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (s_pack_hello(s, suites, &buf, &len, err, errlen) != 0)
        return -1;
    pthread_mutex_lock(&s->hello_lock);
    free(s->next_hello);
    s->next_hello = buf;
    s->next_hello_len = len;
    pthread_mutex_unlock(&s->hello_lock);
    s_wake(s);
    return 0;
}

bool
ag_stream_wanted(const ag_stream_opts_t *o)
{
    /* Any stream option counts, so that one given without --collector
     * is an error rather than silently ignored. */
    return o->collector || o->collector_key || o->key || o->spool_dir
        || o->name || o->spool_max_bytes || o->heartbeat_ms
        || o->ack_timeout_s > 0 || o->collector_fingerprint
        || o->trust_first_use;
}

int
ag_stream_take_args(int *argc, char **argv, ag_stream_opts_t *o, char *err,
                    size_t errlen)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        const char **str = NULL;
        bool mb = false, secs = false;
        if (strcmp(a, "--collector") == 0) str = &o->collector;
        else if (strcmp(a, "--collector-key") == 0) str = &o->collector_key;
        else if (strcmp(a, "--collector-fingerprint") == 0)
            str = &o->collector_fingerprint;
        else if (strcmp(a, "--trust-first-use") == 0) {
            o->trust_first_use = true;   /* a flag: no value */
            continue;
        }
        else if (strcmp(a, "--key") == 0) str = &o->key;
        else if (strcmp(a, "--spool") == 0) str = &o->spool_dir;
        else if (strcmp(a, "--name") == 0) str = &o->name;
        else if (strcmp(a, "--spool-max") == 0) mb = true;
        else if (strcmp(a, "--heartbeat-ms") == 0) { }
        else if (strcmp(a, "--ack-timeout") == 0) secs = true;
        else {
            argv[out++] = argv[i];
            continue;
        }
        if (i + 1 >= *argc) {
            snprintf(err, errlen, "%s needs a value", a);
            return -1;
        }
        const char *v = argv[++i];
        if (str) {
            *str = v;
            continue;
        }
        char *end = NULL;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        unsigned max = mb ? AG_STREAM_MAX_SPOOL_MB
                     : secs ? AG_STREAM_MAX_ACK_TIMEOUT_S : 60000u;
        if (errno || end == v || *end || n == 0 || n > max) {
            snprintf(err, errlen, "%s %s: expected a whole number from 1 "
                     "to %u", a, v, max);
            return -1;
        }
        if (secs)
            o->ack_timeout_s = (double)n;
        else if (mb)
            o->spool_max_bytes = (uint64_t)n << 20;
        else
            o->heartbeat_ms = (unsigned)n;
    }
    argv[out] = NULL;
    *argc = out;
    return 0;
}

ag_stream_t *
ag_stream_open(const ag_stream_opts_t *o, char *err, size_t errlen)
{
    ag_stream_t *s = NULL;
    /* A pinned fingerprint (or trust on first use) fetches the key. */
    bool fetch = o->collector_fingerprint || o->trust_first_use;
    const char *missing = !o->collector ? "--collector"
                        : !o->collector_key && !fetch ? "--collector-key"
                        : !o->key ? "--key" : !o->spool_dir ? "--spool" : NULL;
    if (!o->collector) {
        snprintf(err, errlen, "--collector is required with --collector-key, "
                 "--key, --spool, --name, --spool-max, --heartbeat-ms and "
                 "--ack-timeout");
        return NULL;
    }
    if (missing) {
        snprintf(err, errlen, "%s is required with --collector%s", missing,
                 strcmp(missing, "--collector-key") == 0
                 ? " (the collector's public key file), unless "
                   "--collector-fingerprint pins the collector" : "");
        return NULL;
    }
    if (sodium_init() < 0) {
        snprintf(err, errlen, "sodium_init failed");
        return NULL;
    }
    /* CZMQ's own SIGINT handler would hide ours. */
    zsys_handler_set(NULL);
    s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "calloc: out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->emit_lock, NULL);
    pthread_mutex_init(&s->hello_lock, NULL);
    snprintf(s->collector, sizeof s->collector, "%s", o->collector);
    s->on_job_message = o->on_job_message;
    s->job_ctx = o->job_ctx;
    s->stop_signal = o->stop_signal;
    s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->wake_fd < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        goto fail;
    }
    ag_spool_limits_t lim = { .max_bytes = o->spool_max_bytes };
    if (ag_spool_open(o->spool_dir, &lim, &s->spool, err, errlen)
        != AG_SPOOL_OK)
        goto fail;
    for (size_t i = 0; i < ag_spool_problem_count(s->spool); i++)
        ag_logf("spool_corrupt", "%s", ag_spool_problem(s->spool, i));
    ag_link_opts_t lo = {
        .endpoint = o->collector,
        .key_path = o->key,
        .collector_key_path = o->collector_key,
        .collector_fingerprint = o->collector_fingerprint,
        .trust_first_use = o->trust_first_use,
        .heartbeat_ms = o->heartbeat_ms,
        .ctx = s,
        .on_message = s_on_link_message,
        .log = s_link_log,
    };
    s->link = ag_link_new(&lo, s->spool, err, errlen);
    if (!s->link)
        goto fail;
    if (s_set_hello(s, o, err, errlen) != 0)
        goto fail;
    s_recover(s);
    if (ag_spool_count(s->spool) > 0)
        ag_logf("spool", "%zu messages spooled from earlier; resending",
                ag_spool_count(s->spool));
    if (pthread_create(&s->net, NULL, s_net_main, s) != 0) {
        snprintf(err, errlen, "pthread_create: %s", strerror(errno));
        goto fail;
    }
    s->net_started = true;
    return s;
fail:
    ag_stream_destroy(&s);
    return NULL;
}

size_t
ag_stream_spooled(ag_stream_t *s)
{
    return ag_spool_count(s->spool);
}

bool
ag_stream_has_room(ag_stream_t *s, uint64_t bytes)
{
    return ag_spool_has_room(s->spool, bytes);
}

void
ag_stream_set_measuring(ag_stream_t *s, bool on)
{
    atomic_store(&s->measuring, on);
    if (!on)
        s_wake(s);   /* what was spooled meanwhile goes now */
}

void
ag_stream_set_state(ag_stream_t *s, const char *state, const char *job_id)
{
    ag_link_set_state(s->link, state, job_id);
}

const char *
ag_stream_public_key(const ag_stream_t *s)
{
    return ag_link_public_key(s->link);
}

void
ag_stream_link_stats(ag_stream_t *s, ag_link_stats_t *out)
{
    ag_link_stats(s->link, out);
}

size_t
ag_stream_drain(ag_stream_t *s, double timeout_s)
{
    int64_t end = pw_clock_mono_ms() + (int64_t)(timeout_s * 1000);
    while (ag_spool_count(s->spool) > 0 && pw_clock_mono_ms() < end) {
        struct timespec ts = { 0, 20 * 1000000 };
        nanosleep(&ts, NULL);
    }
    return ag_spool_count(s->spool);
}

void
ag_stream_destroy(ag_stream_t **sp)
{
    if (!sp || !*sp)
        return;
    ag_stream_t *s = *sp;
    if (s->net_started) {
        atomic_store(&s->stop, true);
        s_wake(s);
        pthread_join(s->net, NULL);
    }
    ag_link_destroy(&s->link);
    ag_spool_destroy(&s->spool);
    s_batch_clear(s);
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    free(s->job_id);
    free(s->agent_name);
    free(s->env_json);
    free(s->next_hello);
    pthread_mutex_destroy(&s->emit_lock);
    pthread_mutex_destroy(&s->hello_lock);
    free(s);
    *sp = NULL;
}

static void
s_wrap(void *ctx, const ag_callbacks_t *inner, ag_callbacks_t *out)
{
    ag_stream_callbacks(ctx, inner, out);
}

int
ag_stream_session(const ag_suite_t *suite, const ag_harness_opts_t *hopts,
                  const ag_cli_opts_t *copts, const ag_stream_opts_t *so)
{
    char err[S_ERR];
    ag_stream_t *s = ag_stream_open(so, err, sizeof err);
    if (!s) {
        fprintf(stderr, "%s: %s\n", copts->prog, err);
        return AG_EXIT_USAGE;
    }
    if (!ag_spool_has_room(s->spool, AG_STREAM_START_ROOM)) {
        fprintf(stderr, "%s: spool %s is full (%zu messages, %" PRIu64
                " bytes not yet acked by the collector); the run is refused "
                "so that no spooled data is dropped: wait for the collector, "
                "or raise --spool-max\n", copts->prog, so->spool_dir,
                ag_spool_count(s->spool), ag_spool_bytes(s->spool));
        ag_stream_destroy(&s);
        return AG_EXIT_SYSTEM;
    }
    ag_cli_opts_t c = *copts;
    c.wrap = s_wrap;
    c.wrap_ctx = s;
    /* The agent's state directory keeps its calibration store. */
    if (!c.calstore_dir)
        c.calstore_dir = so->spool_dir;
    int code = ag_cli_session(suite, hopts, &c);
    double timeout = so->ack_timeout_s > 0 ? so->ack_timeout_s
                                           : AG_STREAM_ACK_TIMEOUT_S;
    /* Interrupted: the user wants out; what is not acked stays spooled. */
    if (code == AG_EXIT_INTERRUPTED && timeout > 2.0)
        timeout = 2.0;
    size_t left = ag_stream_drain(s, timeout);
    if (left > 0) {
        fprintf(stderr, "%s: %zu messages remain spooled in %s (not acked "
                "by %s within %.0f s); the next parity-agent start with "
                "--spool %s sends them\n", copts->prog, left, so->spool_dir,
                so->collector, timeout, so->spool_dir);
        if (code == AG_EXIT_OK)
            code = AG_EXIT_SYSTEM;
    }
    ag_stream_destroy(&s);
    return code;
}
