/* ag_daemon.c -- see ag_daemon.h, docs/agent.md "Daemon mode" and
 * docs/spool.md. */
#include "ag_daemon.h"

#include "ag_config.h"
#include "ag_env.h"
#include "ag_link.h"
#include "ag_notify.h"
#include "ag_spawn.h"
#include "ag_spool.h"
#include "ag_suite.h"
#include "config.h"
#include "pw_key.h"
#include "pw_wire.h"

#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define S_RUN_STATE   "run"      /* spool state file of the open run */
#define S_MAX_SUITES  PW_WIRE_MAX_SUITES   /* what one Hello may list */
#define S_ERR         512

/* Set by SIGTERM/SIGINT in daemon mode; read by the run-end callback so
 * the stopped run's RunEnd says why. */
/* Atomic, not volatile sig_atomic_t: the handler runs on whichever
 * thread takes the signal (often the network thread) while the main
 * thread reads it, and only an atomic makes that cross-thread hand-over
 * defined (TSan reported it). Lock-free, so async-signal-safe. */
static _Atomic int s_stop_signal;

/* ---------------------------------------------------------------- log */

static pthread_mutex_t s_log_lock = PTHREAD_MUTEX_INITIALIZER;

/* One structured line on stderr: time, event, free text. */
static void
s_logf(const char *event, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
s_logf(const char *event, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    pthread_mutex_lock(&s_log_lock);
    fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ parity-agent "
            "event=%s %s\n", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
            tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, event,
            text);
    fflush(stderr);
    pthread_mutex_unlock(&s_log_lock);
}

static void
s_link_log(void *ctx, const char *event, const char *text)
{
    (void)ctx;
    s_logf(event, "%s", text);
}

static int64_t
s_unix_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t
s_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
s_uuid(char out[37])
{
    zuuid_t *u = zuuid_new();
    snprintf(out, 37, "%s", u ? zuuid_str_canonical(u) : "");
    zuuid_destroy(&u);
}

/* ------------------------------------------------------------- suites */

typedef struct {
    char *name;           /* the suite's name */
    char *stem;           /* file name without .yaml/.yml */
    char *path;
    char digest[65];      /* sha256 hex of the file */
    char **benchmarks;
    size_t benchmark_count;
} s_suite_info_t;

static int
s_sha256_file(const char *path, char hex[65], char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    unsigned char buf[65536], out[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_state st;
    size_t n;
    if (!f) {
        snprintf(err, errlen, "fopen %.400s: %s", path, strerror(errno));
        return -1;
    }
    crypto_hash_sha256_init(&st);
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        crypto_hash_sha256_update(&st, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "read %.400s: I/O error", path);
        return -1;
    }
    crypto_hash_sha256_final(&st, out);
    for (size_t i = 0; i < sizeof out; i++)
        snprintf(hex + 2 * i, 3, "%02x", out[i]);
    return 0;
}

static void
s_suite_infos_free(s_suite_info_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].name);
        free(s[i].stem);
        free(s[i].path);
        for (size_t b = 0; b < s[i].benchmark_count; b++)
            free(s[i].benchmarks[b]);
        free(s[i].benchmarks);
    }
    free(s);
}

static int
s_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.yaml / *.yml in dir that loads; bad ones are logged and left
 * out (the agent never offers a suite it cannot run). */
static int
s_scan_suites(const char *dir, s_suite_info_t **out, size_t *count,
              char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char *names[S_MAX_SUITES];
    size_t nn = 0;
    *out = NULL;
    *count = 0;
    if (!d) {
        snprintf(err, errlen, "--suites %s: opendir: %s", dir,
                 strerror(errno));
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.')
            continue;
        if (!(l > 5 && strcmp(de->d_name + l - 5, ".yaml") == 0)
            && !(l > 4 && strcmp(de->d_name + l - 4, ".yml") == 0))
            continue;
        if (nn == S_MAX_SUITES) {
            s_logf("suite_invalid", "%s: more than %u suite files; %s and "
                   "the rest are not offered", dir, S_MAX_SUITES,
                   de->d_name);
            break;
        }
        names[nn++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof names[0], s_name_cmp);
    s_suite_info_t *infos = calloc(nn ? nn : 1, sizeof *infos);
    size_t k = 0;
    for (size_t i = 0; i < nn; i++) {
        char path[4096], e[S_ERR];
        ag_suite_t *suite = NULL;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (!infos || !names[i])
            continue;
        if (ag_suite_load(path, NULL, 0, &suite, e, sizeof e)
            != AG_SUITE_OK) {
            s_logf("suite_invalid", "%s (not offered)", e);
            continue;
        }
        s_suite_info_t *si = &infos[k];
        if (s_sha256_file(path, si->digest, e, sizeof e) != 0) {
            s_logf("suite_invalid", "%s (not offered)", e);
            ag_suite_destroy(&suite);
            continue;
        }
        si->name = strdup(suite->name);
        si->path = strdup(path);
        si->stem = strdup(names[i]);
        char *dot = strrchr(si->stem, '.');
        if (dot)
            *dot = 0;
        si->benchmarks = calloc(suite->benchmark_count + 1, sizeof(char *));
        for (size_t b = 0; si->benchmarks && b < suite->benchmark_count; b++)
            si->benchmarks[si->benchmark_count++] =
                strdup(suite->benchmarks[b].name);
        ag_suite_destroy(&suite);
        k++;
    }
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    *out = infos;
    *count = k;
    return 0;
}

/* A name the network may use: a suite's own name or its file's stem,
 * never a path. NULL and a reason when there is no such suite. */
static const s_suite_info_t *
s_find_suite(const s_suite_info_t *s, size_t n, const char *name,
             char *why, size_t whylen)
{
    size_t len = name ? strlen(name) : 0;
    bool plain = len > 0 && len <= 128 && name[0] != '.';
    for (size_t i = 0; plain && i < len; i++) {
        char c = name[i];
        plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    }
    if (!plain) {
        snprintf(why, whylen, "suite \"%.128s\" is not a plain suite name "
                 "(letters, digits, '_', '-', '.'; no paths)",
                 name ? name : "");
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i].name, name) == 0 || strcmp(s[i].stem, name) == 0)
            return &s[i];
    snprintf(why, whylen, "unknown suite \"%s\": not in this agent's "
             "--suites directory", name);
    return NULL;
}

/* ------------------------------------------------------------- stream */

struct ag_stream {
    ag_spool_t *spool;
    ag_link_t *link;
    pthread_t net;
    bool net_started;
    atomic_bool stop;
    int wake_fd;                       /* eventfd: something was spooled */
    char collector[256];               /* --collector, for STATUS= */
    pthread_mutex_t emit_lock;         /* seq order == spool order */
    char *job_id;
    const Parity__JobOffer *job;       /* borrowed during a job's run */

    /* Called on the network thread for JobOffer / JobCancel. */
    void (*on_job_message)(void *ctx, const Parity__Envelope *env);
    void *job_ctx;

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
    if (rc == AG_SPOOL_OK)
        s_wake(s);
    return rc;
}

static int
s_emit_job_status(ag_stream_t *s, const char *job_id, const char *state,
                  const char *reason, const char *run_id)
{
    Parity__Envelope env;
    Parity__JobStatus js;
    char err[S_ERR];
    parity__job_status__init(&js);
    js.job_id = (char *)(job_id ? job_id : "");
    js.state = (char *)state;
    js.reason = (char *)(reason ? reason : "");
    js.run_id = (char *)(run_id ? run_id : "");
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_JOB_STATUS, &js);
    int rc = s_emit(s, &env, true, err, sizeof err);
    if (rc != AG_SPOOL_OK)
        s_logf("spool_error", "job %s status %s: %s", job_id, state, err);
    else
        s_logf("job_status", "job=%s state=%s%s%s", job_id, state,
               reason ? " reason=" : "", reason ? reason : "");
    return rc;
}

static int
s_emit_calibration(ag_stream_t *s, const double *wall_us, size_t n,
                   int64_t taken_at_us, char *err, size_t errlen)
{
    Parity__Envelope env;
    Parity__Calibration cal;
    char id[37];
    if (n > PW_WIRE_MAX_CALIBRATION)
        n = PW_WIRE_MAX_CALIBRATION;
    s_uuid(id);
    parity__calibration__init(&cal);
    cal.calibration_id = id;
    cal.wall_us = (double *)wall_us;
    cal.n_wall_us = n;
    cal.taken_at_us = taken_at_us;
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
    if (ag_spool_state_write(s->spool, S_RUN_STATE, text, err, sizeof err)
        != AG_SPOOL_OK)
        s_logf("spool_error", "%s", err);
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
    s->last_flush_ms = s_mono_ms();
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
        s_logf("spool_full", "%s; stopping the run", err);
        snprintf(s->stop_reason, sizeof s->stop_reason, "%s", err);
        atomic_store(&s->spool_full, true);
        rc = s_emit(s, &env, true, err, sizeof err);
        ret = -1;
    }
    if (rc != AG_SPOOL_OK) {
        s_logf("spool_error", "batch %" PRIu32 " of run %s: %s",
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
s_cb_calibration(void *ctx, const double *wall_us, size_t n,
                 int64_t taken_at_us)
{
    ag_stream_t *s = ctx;
    char err[S_ERR];
    /* The harness reports its session-start calibration even when the
     * rounds alone reach the target (n == 0): nothing to send, and the
     * collector refuses a Calibration without samples. */
    if (n > 0 && s_emit_calibration(s, wall_us, n, taken_at_us, err,
                                    sizeof err) != AG_SPOOL_OK) {
        s_logf("spool_error", "calibration: %s", err);
        snprintf(s->stop_reason, sizeof s->stop_reason, "%s", err);
        return -1;
    }
    return s->inner.on_calibration
           ? s->inner.on_calibration(s->inner.ctx, wall_us, n, taken_at_us)
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
        arm_ptrs[i] = &arms[i];
    }
    rs.arms = arm_ptrs;
    rs.n_arms = na;
    rs.started_at_us = st->started_at_us;
    rs.runs = st->runs;
    rs.warmup = st->warmup;
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
        s_logf(rc == AG_SPOOL_FULL ? "spool_full" : "spool_error",
               "run of %s not started: %s", st->benchmark, err);
        snprintf(s->stop_reason, sizeof s->stop_reason, "%s", err);
        return -1;
    }
    s->run_open = true;
    s->last_flush_ms = s_mono_ms();
    s_write_run_state(s);
    s_logf("run_start", "run=%s suite=%s benchmark=%s", s->run_id,
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
        if (x->error) {
            s->batch_errors[s->batch_count] = strdup(x->error);
            if (s->batch_errors[s->batch_count])
                p->error = s->batch_errors[s->batch_count];
        }
        s->batch_count++;
        if (s->batch_count == PW_WIRE_MAX_BATCH
            || s_mono_ms() - s->last_flush_ms >= AG_DAEMON_FLUSH_MS)
            stop = s_flush(s);
    }
    int inner = s->inner.on_sample ? s->inner.on_sample(s->inner.ctx, x) : 0;
    return stop ? stop : inner;
}

/* A round ended: flush when the batch has waited AG_DAEMON_FLUSH_MS.
 * Not every round: each flush is two fsyncs (~3 ms here, see
 * docs/performance.md) on the measuring thread, between timed runs; a
 * quick benchmark would spend more time syncing than measuring. */
static void
s_cb_progress(void *ctx, const ag_progress_t *p)
{
    ag_stream_t *s = ctx;
    if (s_mono_ms() - s->last_flush_ms >= AG_DAEMON_FLUSH_MS
        && s_flush(s) != 0)
        s_logf("spool_full", "run %s stops after this round", s->run_id);
    /* A job's progress, at most every AG_DAEMON_PROGRESS_MS (each is a
     * spooled, fsync'd message). */
    if (s->job_id && s_mono_ms() - s->last_progress_ms
        >= AG_DAEMON_PROGRESS_MS) {
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
            s_logf("spool_error", "progress of job %s: %s", s->job_id, err);
        s->last_progress_ms = s_mono_ms();
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
    re.ended_at_us = s_unix_us();
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_RUN_END, &re);
    if (s_emit(s, &env, true, err, sizeof err) != AG_SPOOL_OK) {
        s_logf("spool_error", "RunEnd of %s: %s", run_id, err);
        return;
    }
    if (ag_spool_state_clear(s->spool, S_RUN_STATE, err, sizeof err)
        != AG_SPOOL_OK)
        s_logf("spool_error", "%s", err);
    s_logf("run_end", "run=%s status=%s batches=%" PRIu32 " samples=%"
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
        else if (s_stop_signal && e->status == AG_RUN_INCOMPLETE)
            reason = AG_DAEMON_STOP_REASON;
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
ag_stream_set_job(ag_stream_t *s, const char *job_id)
{
    free(s->job_id);
    s->job_id = job_id ? strdup(job_id) : NULL;
    s->job_failed[0] = 0;
    s->last_progress_ms = s_mono_ms();
}

/* Runs an earlier process left open, found by s_recover. */
#define S_MAX_OPEN_RUNS 64

typedef struct {
    char run_id[37];
    uint32_t batches;        /* next batch_seq */
    uint64_t samples;
    bool opened;             /* the state file or a spooled RunStart */
    bool ended;              /* a RunEnd of it is in the spool */
} s_open_run_t;

static s_open_run_t *
s_open_run(s_open_run_t *runs, size_t *n, const char *run_id)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(runs[i].run_id, run_id) == 0)
            return &runs[i];
    if (*n == S_MAX_OPEN_RUNS || strlen(run_id) > 36)
        return NULL;
    memset(&runs[*n], 0, sizeof runs[*n]);
    snprintf(runs[*n].run_id, sizeof runs[*n].run_id, "%s", run_id);
    return &runs[(*n)++];
}

/* Close the runs an earlier process left open, after their batches.
 * The "run" state file names the run being measured with the batches
 * and samples spooled so far; batches spooled after its last update (a
 * kill between the two writes) are counted from the spool. A RunStart in
 * the spool with neither a RunEnd nor a state file (a kill between
 * spooling RunStart and writing the state) is closed the same way. */
static void
s_recover(ag_stream_t *s)
{
    s_open_run_t runs[S_MAX_OPEN_RUNS];
    size_t nruns = 0;
    char *text = ag_spool_state_read(s->spool, S_RUN_STATE);
    if (text) {
        char run_id[37] = "";
        uint32_t batches = 0;
        uint64_t samples = 0;
        if (sscanf(text, "%36s %" SCNu32 " %" SCNu64, run_id, &batches,
                   &samples) == 3) {
            s_open_run_t *r = s_open_run(runs, &nruns, run_id);
            if (r) {
                r->batches = batches;
                r->samples = samples;
                r->opened = true;
            }
        } else {
            s_logf("spool_error", "%s/%s: unreadable (\"%.60s\"); ignored",
                   ag_spool_dir(s->spool), S_RUN_STATE, text);
        }
        free(text);
    }
    size_t n = ag_spool_count(s->spool);
    uint64_t *seqs = calloc(n ? n : 1, sizeof *seqs);
    n = seqs ? ag_spool_list(s->spool, 0, seqs, n) : 0;
    for (size_t i = 0; i < n; i++) {
        void *data = NULL;
        size_t len = 0;
        Parity__Envelope *env = NULL;
        if (ag_spool_read(s->spool, seqs[i], &data, &len, NULL, 0)
            != AG_SPOOL_OK)
            continue;
        if (pw_wire_unpack(data, len, 0, &env, NULL, NULL, 0)
            != PW_WIRE_OK) {
            free(data);
            continue;
        }
        s_open_run_t *r = NULL;
        switch (env->body_case) {
        case PARITY__ENVELOPE__BODY_RUN_START:
            if ((r = s_open_run(runs, &nruns, env->run_start->run_id)))
                r->opened = true;
            break;
        case PARITY__ENVELOPE__BODY_RUN_END:
            if ((r = s_open_run(runs, &nruns, env->run_end->run_id)))
                r->ended = true;
            break;
        case PARITY__ENVELOPE__BODY_SAMPLE_BATCH:
            r = s_open_run(runs, &nruns, env->sample_batch->run_id);
            if (r && env->sample_batch->batch_seq >= r->batches) {
                r->samples += env->sample_batch->n_samples;
                r->batches = env->sample_batch->batch_seq + 1;
            }
            break;
        default:
            break;
        }
        pw_wire_free(&env);
        free(data);
    }
    free(seqs);
    for (size_t i = 0; i < nruns; i++) {
        /* Batches alone do not make a run open: its RunEnd may have been
         * acked while a batch's ack was lost; resending the batch is all
         * that run needs. */
        if (!runs[i].opened || runs[i].ended)
            continue;
        s_logf("run_recovered", "run=%s was open when the agent stopped; "
               "closing it as incomplete after %" PRIu32 " batches",
               runs[i].run_id, runs[i].batches);
        s_emit_run_end(s, runs[i].run_id, PARITY__RUN_STATUS__INCOMPLETE,
                       AG_DAEMON_RESTART_REASON, runs[i].batches,
                       runs[i].samples);
    }
    if (nruns == 0)
        return;
    char err[S_ERR];
    if (ag_spool_state_clear(s->spool, S_RUN_STATE, err, sizeof err)
        != AG_SPOOL_OK)
        s_logf("spool_error", "%s", err);
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
        s_logf("ignored", "%s from the collector ignored",
               pw_wire_body_name(env->body_case));
}

/* STATUS= for `systemctl status` (daemon mode, ag_notify.h). */
static void
s_notify_status(ag_stream_t *s)
{
    ag_link_stats_t st;
    ag_link_stats(s->link, &st);
    ag_notify_status("%s %s, %zu messages spooled",
                     st.ready ? "connected to" : "connecting to",
                     s->collector, ag_spool_count(s->spool));
}

static void *
s_net_main(void *arg)
{
    ag_stream_t *s = arg;
    while (!atomic_load(&s->stop)) {
        bool woken = false;
        ag_link_tick(s->link, 200, s->wake_fd, &woken);
        /* Pings come from this thread, not the job loop: a job runs for
         * as long as its suite says, while this loop turns every 200 ms
         * and stops turning only when the agent is stuck. */
        if (ag_notify_tick())
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
        s_logf("env_failed", "%s", err);
        return strdup("{}");
    }
    char *text = json_dumps(env, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(env);
    return text ? text : strdup("{}");
}

static int
s_set_hello(ag_stream_t *s, const ag_stream_opts_t *o, char *err,
            size_t errlen)
{
    Parity__Envelope env;
    Parity__Hello h;
    Parity__Tag arch, *tags[1];
    struct utsname un;
    char host[256] = "", boot[64] = "";
    s_suite_info_t *suites = NULL;
    size_t nsuites = 0;
    int rc = -1;
    Parity__SuiteInfo *sinfo = NULL, **sptrs = NULL;
    char *env_json = s_hello_env_json();
    uint8_t *buf = NULL;
    size_t len = 0;

    gethostname(host, sizeof host - 1);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (fgets(boot, sizeof boot, f))
            boot[strcspn(boot, "\n")] = 0;
        fclose(f);
    }
    if (o->suites_dir && s_scan_suites(o->suites_dir, &suites, &nsuites,
                                       err, errlen) != 0)
        goto out;
    parity__hello__init(&h);
    h.agent_name = (char *)(o->name ? o->name : host);
    h.agent_version = PARITY_VERSION;
    h.key_fingerprint = (char *)ag_link_public_key(s->link);
    h.environment_json = env_json ? env_json : "{}";
    h.boot_id = boot;
    parity__tag__init(&arch);
    arch.key = "arch";
    arch.value = uname(&un) == 0 ? un.machine : "";
    tags[0] = &arch;
    h.tags = tags;
    h.n_tags = 1;
    sinfo = calloc(nsuites ? nsuites : 1, sizeof *sinfo);
    sptrs = calloc(nsuites ? nsuites : 1, sizeof *sptrs);
    if (!sinfo || !sptrs) {
        snprintf(err, errlen, "calloc: out of memory");
        goto out;
    }
    for (size_t i = 0; i < nsuites; i++) {
        parity__suite_info__init(&sinfo[i]);
        sinfo[i].name = suites[i].name;
        sinfo[i].digest = suites[i].digest;
        sinfo[i].benchmarks = suites[i].benchmarks;
        sinfo[i].n_benchmarks = suites[i].benchmark_count;
        sptrs[i] = &sinfo[i];
    }
    h.suites = sptrs;
    h.n_suites = nsuites;
    pw_wire_init(&env, 0);
    pw_wire_set_body(&env, PARITY__ENVELOPE__BODY_HELLO, &h);
    if (pw_wire_pack_alloc(&env, &buf, &len, err, errlen) != PW_WIRE_OK)
        goto out;
    ag_link_set_hello(s->link, buf, len);
    s_logf("hello", "name=%s suites=%zu key=%s", h.agent_name, nsuites,
           h.key_fingerprint);
    rc = 0;
out:
    free(buf);
    free(sinfo);
    free(sptrs);
    free(env_json);
    s_suite_infos_free(suites, nsuites);
    return rc;
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
        unsigned max = mb ? AG_DAEMON_MAX_SPOOL_MB
                     : secs ? AG_DAEMON_MAX_ACK_TIMEOUT_S : 60000u;
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
    snprintf(s->collector, sizeof s->collector, "%s", o->collector);
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
        s_logf("spool_corrupt", "%s", ag_spool_problem(s->spool, i));
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
        s_logf("spool", "%zu messages spooled from earlier; resending",
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

void
ag_stream_link_stats(ag_stream_t *s, ag_link_stats_t *out)
{
    ag_link_stats(s->link, out);
}

size_t
ag_stream_drain(ag_stream_t *s, double timeout_s)
{
    int64_t end = s_mono_ms() + (int64_t)(timeout_s * 1000);
    while (ag_spool_count(s->spool) > 0 && s_mono_ms() < end) {
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
    pthread_mutex_destroy(&s->emit_lock);
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
    if (!ag_spool_has_room(s->spool, AG_DAEMON_START_ROOM)) {
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
    int code = ag_cli_session(suite, hopts, &c);
    double timeout = so->ack_timeout_s > 0 ? so->ack_timeout_s
                                           : AG_DAEMON_ACK_TIMEOUT_S;
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

/* ------------------------------------------------------------- daemon */

typedef struct {
    uint8_t *bytes;     /* the JobOffer envelope, packed (a deep copy) */
    size_t len;
    char job_id[128];
} s_job_t;

typedef struct {
    ag_stream_t *stream;
    ag_harness_t *harness;
    s_suite_info_t *suites;
    size_t suite_count;
    pthread_mutex_t lock;           /* queue and current */
    s_job_t queue[AG_DAEMON_MAX_QUEUE];
    size_t queued;
    char current[128];              /* job running now, "" when idle */
} s_daemon_t;

static ag_harness_t *_Atomic s_signal_harness;   /* as s_stop_signal */

static void
s_on_signal(int sig)
{
    s_stop_signal = sig;
    if (s_signal_harness)
        ag_harness_cancel(s_signal_harness, AG_RUN_INCOMPLETE);
}

/* Error 21: the collector revoked our key. The job running here and
 * the ones waiting can never be delivered: stop and drop them (the
 * collector has failed their rows already). */
static void
s_daemon_denied(s_daemon_t *d)
{
    char running[128];
    pthread_mutex_lock(&d->lock);
    snprintf(running, sizeof running, "%s", d->current);
    size_t dropped = d->queued;
    for (size_t i = 0; i < d->queued; i++)
        free(d->queue[i].bytes);
    d->queued = 0;
    pthread_mutex_unlock(&d->lock);
    if (!running[0] && dropped == 0)
        return;
    s_logf("jobs_stopped", "the collector refused this agent's key: %s%s%s"
           "%zu queued jobs dropped", running[0] ? "job " : "", running,
           running[0] ? " cancelled, " : "", dropped);
    if (running[0])
        ag_harness_cancel(d->harness, AG_RUN_CANCELLED);
}

static void
s_daemon_job_message(void *ctx, const Parity__Envelope *env)
{
    s_daemon_t *d = ctx;
    char why[512];
    if (env->body_case == PARITY__ENVELOPE__BODY_ERROR) {
        s_daemon_denied(d);
        return;
    }
    if (env->body_case == PARITY__ENVELOPE__BODY_JOB_CANCEL) {
        const char *id = env->job_cancel->job_id;
        pthread_mutex_lock(&d->lock);
        bool running = strcmp(d->current, id) == 0 && *id;
        bool found = false;
        for (size_t i = 0; !running && i < d->queued; i++) {
            if (strcmp(d->queue[i].job_id, id) == 0) {
                free(d->queue[i].bytes);
                memmove(d->queue + i, d->queue + i + 1,
                        (d->queued - i - 1) * sizeof d->queue[0]);
                d->queued--;
                found = true;
                break;
            }
        }
        pthread_mutex_unlock(&d->lock);
        if (running)
            ag_harness_cancel(d->harness, AG_RUN_CANCELLED);
        else if (found)
            s_emit_job_status(d->stream, id, "cancelled", "cancelled before "
                              "it started", NULL);
        else
            s_logf("job_cancel", "job %s is neither queued nor running", id);
        return;
    }
    const Parity__JobOffer *jo = env->job_offer;
    /* The same offer again (e.g. resent after a reconnect) must not run
     * the job twice: say where it stands instead. */
    pthread_mutex_lock(&d->lock);
    const char *already = *jo->job_id && strcmp(d->current, jo->job_id) == 0
                        ? "running" : NULL;
    for (size_t i = 0; !already && i < d->queued; i++)
        if (strcmp(d->queue[i].job_id, jo->job_id) == 0)
            already = "queued";
    pthread_mutex_unlock(&d->lock);
    if (already) {
        s_logf("job_duplicate", "job %s offered again; it is %s", jo->job_id,
               already);
        s_emit_job_status(d->stream, jo->job_id, already, NULL, NULL);
        return;
    }
    if (!s_find_suite(d->suites, d->suite_count, jo->suite, why,
                      sizeof why)) {
        s_emit_job_status(d->stream, jo->job_id, "refused", why, NULL);
        return;
    }
    /* The bounds `parity run` checks (proto/pw_limits.h): a job another
     * client made beyond them is refused here, never started to fail. */
    for (size_t i = 0; i < jo->n_vars; i++) {
        const char *v = jo->vars[i]->name;
        if (!pw_var_name_ok(v)) {
            snprintf(why, sizeof why, "variable name \"%.128s\" is not "
                     "[A-Za-z_][A-Za-z0-9_]* (at most %d bytes)", v ? v : "",
                     PW_VAR_NAME_MAX);
            s_emit_job_status(d->stream, jo->job_id, "refused", why, NULL);
            return;
        }
    }
    if ((jo->runs && (jo->runs < AG_SUITE_MIN_RUNS ||
                      jo->runs > AG_SUITE_MAX_RUNS)) ||
        jo->n_vars > AG_SUITE_MAX_VARS) {
        snprintf(why, sizeof why, "runs %u / vars %zu outside this agent's "
                 "bounds (%d..%d runs, %d vars)", jo->runs, jo->n_vars,
                 AG_SUITE_MIN_RUNS, AG_SUITE_MAX_RUNS, AG_SUITE_MAX_VARS);
        s_emit_job_status(d->stream, jo->job_id, "refused", why, NULL);
        return;
    }
    if (!ag_spool_has_room(d->stream->spool, AG_DAEMON_START_ROOM)) {
        s_emit_job_status(d->stream, jo->job_id, "refused", "spool full: "
                          "waiting for the collector to ack earlier runs",
                          NULL);
        return;
    }
    s_job_t job = { 0 };
    snprintf(job.job_id, sizeof job.job_id, "%s", jo->job_id);
    if (pw_wire_pack_alloc(env, &job.bytes, &job.len, why, sizeof why)
        != PW_WIRE_OK) {
        s_emit_job_status(d->stream, jo->job_id, "refused", why, NULL);
        return;
    }
    pthread_mutex_lock(&d->lock);
    bool full = d->queued == AG_DAEMON_MAX_QUEUE;
    if (!full)
        d->queue[d->queued++] = job;
    pthread_mutex_unlock(&d->lock);
    if (full) {
        free(job.bytes);
        s_emit_job_status(d->stream, jo->job_id, "refused", "job queue full",
                          NULL);
        return;
    }
    s_emit_job_status(d->stream, jo->job_id, "queued", NULL, NULL);
}

static void
s_run_job(s_daemon_t *d, s_job_t *job)
{
    Parity__Envelope *env = NULL;
    char err[S_ERR], why[512];
    ag_var_t vars[AG_SUITE_MAX_VARS];
    ag_suite_t *suite = NULL;
    if (pw_wire_unpack(job->bytes, job->len, 0, &env, NULL, err, sizeof err)
        != PW_WIRE_OK) {
        s_emit_job_status(d->stream, job->job_id, "failed", err, NULL);
        return;
    }
    const Parity__JobOffer *jo = env->job_offer;
    const s_suite_info_t *si = s_find_suite(d->suites, d->suite_count,
                                            jo->suite, why, sizeof why);
    size_t nv = jo->n_vars < AG_SUITE_MAX_VARS ? jo->n_vars
                                               : AG_SUITE_MAX_VARS;
    for (size_t i = 0; i < nv; i++) {
        vars[i].name = jo->vars[i]->name;
        vars[i].value = jo->vars[i]->value;
    }
    if (!si) {
        s_emit_job_status(d->stream, job->job_id, "refused", why, NULL);
        goto out;
    }
    if (jo->expires_at_us > 0 && s_unix_us() > jo->expires_at_us) {
        s_emit_job_status(d->stream, job->job_id, "refused", "expired "
                          "before it could start", NULL);
        goto out;
    }
    if (ag_suite_load(si->path, vars, nv, &suite, err, sizeof err)
        != AG_SUITE_OK) {
        s_emit_job_status(d->stream, job->job_id, "refused", err, NULL);
        goto out;
    }
    ag_harness_opts_t ho = { .runs = jo->runs, .warmup = -1,
                             .only = (const char *const *)jo->only,
                             .only_count = jo->n_only };
    ag_callbacks_t cb;
    /* Reset before the job becomes current: a JobCancel that arrives
     * from now on must not be cleared. */
    ag_harness_reset(d->harness);
    pthread_mutex_lock(&d->lock);
    snprintf(d->current, sizeof d->current, "%s", job->job_id);
    pthread_mutex_unlock(&d->lock);
    ag_link_set_state(d->stream->link, "running", job->job_id);
    s_emit_job_status(d->stream, job->job_id, "running", NULL, NULL);
    ag_stream_set_job(d->stream, job->job_id);
    d->stream->job = jo;
    ag_stream_callbacks(d->stream, NULL, &cb);
    if (s_stop_signal)
        ag_harness_cancel(d->harness, AG_RUN_INCOMPLETE);
    snprintf(d->stream->stop_reason, sizeof d->stream->stop_reason, "%s",
             "");
    int rc = ag_harness_run(d->harness, suite, &ho, &cb, err, sizeof err);
    char failed[S_ERR];
    snprintf(failed, sizeof failed, "%s", d->stream->job_failed);
    d->stream->job = NULL;
    ag_stream_set_job(d->stream, NULL);
    pthread_mutex_lock(&d->lock);
    d->current[0] = 0;
    pthread_mutex_unlock(&d->lock);
    ag_link_set_state(d->stream->link, "idle", NULL);
    if (rc == AG_HARNESS_OK && failed[0])
        s_emit_job_status(d->stream, job->job_id, "failed", failed, NULL);
    else if (rc == AG_HARNESS_OK)
        s_emit_job_status(d->stream, job->job_id, "done", NULL, NULL);
    else if (rc == AG_HARNESS_STOPPED)
        s_emit_job_status(d->stream, job->job_id, s_stop_signal ? "failed"
                          : "cancelled", s_stop_signal
                          ? AG_DAEMON_STOP_REASON : NULL, NULL);
    else
        s_emit_job_status(d->stream, job->job_id, "failed", err, NULL);
out:
    ag_suite_destroy(&suite);
    pw_wire_free(&env);
}

/* The floor at start: >= 100 no-op runs through the harness's spawn
 * path, sent as one Calibration. */
static int
s_calibrate(ag_stream_t *s, char *err, size_t errlen)
{
    double wall[AG_HARNESS_CALIBRATION_TARGET];
    const char *argv[] = { ag_harness_default_noop(), NULL };
    int64_t taken = s_unix_us();
    for (size_t i = 0; i < AG_HARNESS_CALIBRATION_TARGET; i++) {
        ag_spawn_req_t req;
        ag_spawn_result_t res;
        ag_spawn_req_init(&req);
        req.argv = argv;
        req.timeout_us = 10e6;
        if (s_stop_signal)
            return -1;
        if (ag_spawn_run(&req, &res, err, errlen) != AG_SPAWN_OK)
            return -1;
        wall[i] = res.wall_us;
    }
    if (s_emit_calibration(s, wall, AG_HARNESS_CALIBRATION_TARGET, taken, err,
                           errlen) != AG_SPOOL_OK)
        return -1;
    double lo = wall[0], hi = wall[0];
    for (size_t i = 1; i < AG_HARNESS_CALIBRATION_TARGET; i++) {
        lo = wall[i] < lo ? wall[i] : lo;
        hi = wall[i] > hi ? wall[i] : hi;
    }
    s_logf("calibration", "runs=%d noop=%s min_us=%.1f max_us=%.1f",
           AG_HARNESS_CALIBRATION_TARGET, argv[0], lo, hi);
    return 0;
}

void
ag_daemon_usage(FILE *f)
{
    fprintf(f,
"usage: parity-agent --collector tcp://HOST:PORT --collector-key FILE\n"
"                    --key FILE --suites DIR --spool DIR [--name NAME]\n"
"                    [--collector-fingerprint FP] [--trust-first-use]\n"
"                    [--spool-max MB] [--heartbeat-ms N] [--config FILE]\n"
"       parity-agent --enroll --collector URL --key FILE --spool DIR\n"
"                    [--collector-fingerprint FP | --collector-key FILE]\n"
"       parity-agent --fingerprint --key FILE\n"
"\n"
"Daemon mode: connect to the collector (CURVE, the collector's public key\n"
"pinned), say hello, calibrate this host's noise floor, then run the jobs\n"
"the collector offers, one at a time, from suites in --suites only.\n"
"Every message is written to the spool (fsync) before it is sent and kept\n"
"until the collector acks it. The first start without --key's files\n"
"makes the key pair; until an operator approves it on the collector\n"
"(parity hosts approve) the agent is pending: it measures and spools,\n"
"and sends when approved.\n"
"\n"
"  --collector URL       the collector's ROUTER, tcp://HOST:PORT\n"
"  --collector-key FILE  the collector's public certificate (parity keygen);\n"
"                        with --collector-fingerprint or --trust-first-use\n"
"                        it may be missing: the key fetched is kept there\n"
"  --collector-fingerprint FP  pin the collector by the fingerprint that\n"
"                        `parity-collector --fingerprint` prints: its key is\n"
"                        fetched from its port + 1 and refused unless it\n"
"                        matches\n"
"  --trust-first-use     no fingerprint: keep the first key the collector\n"
"                        offers in --collector-key, and pin it from then on\n"
"  --key FILE            this agent's certificate (FILE and FILE_secret;\n"
"                        made when neither exists)\n"
"  --suites DIR          the suites this agent may run (*.yaml, *.yml)\n"
"  --spool DIR           the durable outbox (created, mode 0700)\n"
"  --name NAME           the name shown for this host (default: hostname)\n"
"  --spool-max MB        bound on the spool (default 256); when full, new\n"
"                        runs are refused until the collector acks\n"
"  --heartbeat-ms N      heartbeat interval (default 1000)\n");
    fprintf(f,
"  --config FILE         options from FILE (YAML, KEY: VALUE; the keys are\n"
"                        the options above without --, trust-first-use:\n"
"                        yes or no); default\n"
"                        %s/agent.yaml when it exists.\n"
"                        Flags win over the file.\n"
"  --enroll              make the key pair if missing, say Hello, print\n"
"                        whether the collector approved the key or holds it\n"
"                        pending (and its fingerprint), and exit (0; 1 when\n"
"                        refused or no answer within --ack-timeout, 30 s)\n"
"  --fingerprint         print this agent's key fingerprint (as `parity\n"
"                        hosts --pending` shows it) and exit\n",
            ag_config_dir());
    fprintf(f,
"\n"
"Under systemd (Type=notify) it says READY=1 once calibrated, STATUS=\n"
"(connected or not, messages spooled), STOPPING=1, and pings WatchdogSec=.\n"
"\n"
"SIGTERM or SIGINT: stop the current run (RunEnd INCOMPLETE \"agent\n"
"stopped\"), try for 2 s to deliver the spool, exit 0; what is not acked\n"
"stays in the spool for the next start.\n"
"\n"
"Exit status: 0 stopped cleanly, 1 runtime failure, 2 bad command line\n"
"or unreadable key/spool.\n"
"\n"
"parity-agent run SUITE.yaml ... --collector URL --collector-key FILE\n"
"                 --key FILE --spool DIR [--name NAME] [--spool-max MB]\n"
"                 [--heartbeat-ms N] [--ack-timeout S]\n"
"                 [--collector-fingerprint FP] [--trust-first-use]\n"
"  a local run whose messages also stream through the spool to the\n"
"  collector; it then waits up to --ack-timeout seconds (default 60) for\n"
"  every ack, and exits 3 saying how many remain spooled if some do (or\n"
"  when the spool is full before the run starts).\n"
"\n"
"See docs/agent.md (Daemon mode, Enrollment) and docs/spool.md.\n");
}

/* The keys of agent.yaml: the daemon's long options that take a value
 * (--ack-timeout is run mode's, --config the file's own), and
 * trust-first-use, a flag given as yes or no. */
static const char *const s_config_keys[] = {
    "collector", "collector-key", "collector-fingerprint", "trust-first-use",
    "key", "suites", "spool", "name", "spool-max", "heartbeat-ms", NULL,
};

/* The file's entries into *fo, each checked by the flag's own parser,
 * whose error is prefixed with FILE:LINE. */
static int
s_config_opts(const ag_config_t *conf, ag_stream_opts_t *fo, char *err,
              size_t errlen)
{
    for (size_t i = 0; i < ag_config_count(conf); i++) {
        const ag_config_entry_t *e = ag_config_entry(conf, i);
        char flag[64], where[600], why[S_ERR];
        snprintf(flag, sizeof flag, "--%s", e->key);
        char *mini[] = { (char *)"parity-agent", flag, (char *)e->value,
                         NULL };
        int n = 3;
        ag_config_where(conf, e, where, sizeof where);
        if (strcmp(e->key, "suites") == 0) {
            fo->suites_dir = e->value;
        } else if (strcmp(e->key, "trust-first-use") == 0) {
            bool yes = strcmp(e->value, "yes") == 0
                    || strcmp(e->value, "true") == 0;
            if (!yes && strcmp(e->value, "no") != 0
                && strcmp(e->value, "false") != 0) {
                snprintf(err, errlen, "%.250s: trust-first-use %.100s: want "
                         "yes or no", where, e->value);
                return -1;
            }
            fo->trust_first_use = yes;
        } else if (ag_stream_take_args(&n, mini, fo, why, sizeof why) != 0) {
            snprintf(err, errlen, "%.250s: %.250s", where, why);
            return -1;
        }
    }
    return 0;
}

/* What the command line asks besides serving: --enroll, --fingerprint. */
typedef struct {
    bool enroll;
    bool fingerprint;
} s_mode_t;

/* The daemon's options: flags from args (a copy of argv the strings of
 * *o then point into), then the configuration file (--config FILE, else
 * SYSCONFDIR/parity/agent.yaml if it exists) for what the flags left
 * unset. *conf owns the file's strings. */
static int
s_daemon_options(int argc, char **args, ag_stream_opts_t *o, s_mode_t *mode,
                 ag_config_t **conf, char *err, size_t errlen)
{
    const char *path = NULL;
    char def[512];
    ag_stream_opts_t fo = { 0 };
    int n = argc;
    if (ag_config_take_arg(&n, args, &path, err, errlen) != AG_CONFIG_OK
        || ag_stream_take_args(&n, args, o, err, errlen) != 0)
        return -1;
    for (int i = 1; i < n; i++) {
        if (strcmp(args[i], "--suites") == 0 && i + 1 < n) {
            o->suites_dir = args[++i];
        } else if (strcmp(args[i], "--enroll") == 0) {
            mode->enroll = true;
        } else if (strcmp(args[i], "--fingerprint") == 0) {
            mode->fingerprint = true;
        } else {
            snprintf(err, errlen, "unknown argument \"%s\"%s", args[i],
                     strcmp(args[i], "--suites") == 0 ? " (needs a DIR)"
                                                       : "");
            return -1;
        }
    }
    snprintf(def, sizeof def, "%s/agent.yaml", ag_config_dir());
    if (ag_config_load(path ? path : def, s_config_keys, path != NULL, conf,
                       err, errlen) != AG_CONFIG_OK
        || s_config_opts(*conf, &fo, err, errlen) != 0)
        return -1;
#define S_UNSET_TAKE(field) do { if (!o->field) o->field = fo.field; } while (0)
    S_UNSET_TAKE(collector);
    S_UNSET_TAKE(collector_key);
    S_UNSET_TAKE(collector_fingerprint);
    S_UNSET_TAKE(trust_first_use);
    S_UNSET_TAKE(key);
    S_UNSET_TAKE(suites_dir);
    S_UNSET_TAKE(spool_dir);
    S_UNSET_TAKE(name);
    S_UNSET_TAKE(spool_max_bytes);
    S_UNSET_TAKE(heartbeat_ms);
#undef S_UNSET_TAKE
    return 0;
}

/* --key's two file names: FILE and FILE_secret, whichever was given. */
static void
s_key_paths(const char *key, char *pub, size_t publen, char *sec,
            size_t seclen)
{
    snprintf(pub, publen, "%s", key);
    size_t n = strlen(pub);
    if (n > 7 && strcmp(pub + n - 7, "_secret") == 0)
        pub[n - 7] = '\0';
    snprintf(sec, seclen, "%s_secret", pub);
}

/* The first start: neither of --key's files exists, so make the pair
 * (the secret one born 0600, as `parity keygen` does). One of them
 * alone is left for ag_stream_open to refuse. */
static int
s_make_key(const char *key, char *err, size_t errlen)
{
    char pub[4096], sec[4200], fp[PW_KEY_FP_SIZE], host[256] = "";
    s_key_paths(key, pub, sizeof pub, sec, sizeof sec);
    if (access(pub, F_OK) == 0 || access(sec, F_OK) == 0)
        return 0;
    zcert_t *cert = zcert_new();
    if (!cert) {
        snprintf(err, errlen, "--key %s: zcert_new: out of memory or no "
                 "entropy", key);
        return -1;
    }
    gethostname(host, sizeof host - 1);
    zcert_set_meta(cert, "name", "%s", host);
    mode_t old = umask(077);
    int saved = zcert_save(cert, pub);
    umask(old);
    int rc = 0;
    if (saved != 0 || chmod(sec, 0600) != 0 || chmod(pub, 0644) != 0) {
        snprintf(err, errlen, "--key %s: cannot make a new key pair there: "
                 "%s", key, strerror(errno));
        unlink(pub);
        unlink(sec);
        rc = -1;
    } else {
        pw_key_fingerprint(zcert_public_txt(cert), fp);
        s_logf("key_created", "a new key pair in %s and %s; fingerprint %s "
               "(parity-agent --fingerprint)", pub, sec, fp);
    }
    zcert_destroy(&cert);
    return rc;
}

/* --fingerprint: the key's fingerprint on stdout. */
static int
s_print_fingerprint(const char *key)
{
    char pub[4096], sec[4200], fp[PW_KEY_FP_SIZE];
    if (!key) {
        fprintf(stderr, "parity-agent: --fingerprint needs --key FILE\n");
        return AG_DAEMON_EXIT_USAGE;
    }
    s_key_paths(key, pub, sizeof pub, sec, sizeof sec);
    zcert_t *cert = zcert_load(pub);
    if (!cert) {
        fprintf(stderr, "parity-agent: --key %s: no key there (parity-agent "
                "--enroll, or the first start, makes one)\n", key);
        return AG_DAEMON_EXIT_USAGE;
    }
    pw_key_fingerprint(zcert_public_txt(cert), fp);
    zcert_destroy(&cert);
    printf("%s\n", fp);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "parity-agent: write to stdout failed\n");
        return AG_DAEMON_EXIT_FAIL;
    }
    return AG_DAEMON_EXIT_OK;
}

/* --enroll: say Hello, wait for what the collector says of our key,
 * print it. 0 approved or pending, 1 refused or no answer, 2 usage. */
static int
s_enroll(const ag_stream_opts_t *o)
{
    char err[S_ERR], fp[PW_KEY_FP_SIZE];
    double timeout = o->ack_timeout_s > 0 ? o->ack_timeout_s
                                          : AG_DAEMON_ENROLL_TIMEOUT_S;
    ag_stream_t *s = ag_stream_open(o, err, sizeof err);
    if (!s) {
        fprintf(stderr, "parity-agent: %s\n", err);
        return AG_DAEMON_EXIT_USAGE;
    }
    pw_key_fingerprint(ag_link_public_key(s->link), fp);
    ag_link_stats_t st;
    int64_t end = s_mono_ms() + (int64_t)(timeout * 1000);
    for (;;) {
        ag_link_stats(s->link, &st);
        if (st.ready || st.pending || st.denied || st.key_mismatch
            || st.auth_refused || s_mono_ms() >= end)
            break;
        struct timespec ts = { 0, 50 * 1000000 };
        nanosleep(&ts, NULL);
    }
    int code = AG_DAEMON_EXIT_FAIL;
    if (st.ready) {
        printf("approved: the collector at %s accepts this agent's key "
               "%s\n", o->collector, fp);
        code = AG_DAEMON_EXIT_OK;
    } else if (st.pending) {
        printf("pending: this agent's key %s waits for an operator's "
               "approval on the collector at %s.\nCompare the fingerprint "
               "with `parity hosts --pending`, then approve it there:\n"
               "  parity hosts approve %s\n", fp, o->collector, fp);
        code = AG_DAEMON_EXIT_OK;
    } else if (st.denied) {
        fprintf(stderr, "parity-agent: the collector at %s refuses this "
                "agent's key %s: it was rejected or revoked by an operator "
                "(parity hosts approve %s there admits it again)\n",
                o->collector, fp, fp);
    } else if (st.key_mismatch) {
        fprintf(stderr, "parity-agent: %s\n", st.problem);
    } else if (st.auth_refused) {
        fprintf(stderr, "parity-agent: the collector at %s refuses this "
                "agent's key %s at the handshake: an operator rejected or "
                "revoked it (parity hosts approve %s there admits it "
                "again), or the collector runs with --enroll off and the "
                "key is not in its --allow directory\n", o->collector, fp,
                fp);
    } else {
        fprintf(stderr, "parity-agent: no answer from the collector at %s "
                "within %.0f s (is it running and reachable, and is its key "
                "the one pinned?)\n", o->collector, timeout);
    }
    if (fflush(stdout) != 0 && code == AG_DAEMON_EXIT_OK)
        code = AG_DAEMON_EXIT_FAIL;
    ag_stream_destroy(&s);
    return code;
}

/* The options every mode needs. 0, or -1 with err (a usage error). */
static int
s_daemon_ready(ag_stream_opts_t *o, const s_mode_t *mode, char *err,
               size_t errlen)
{
    bool fetch = o->collector_fingerprint || o->trust_first_use;
    const char *missing = !o->collector ? "--collector"
        : !o->collector_key && !fetch ? "--collector-key"
        : !o->key ? "--key" : !o->spool_dir ? "--spool"
        : !o->suites_dir && !mode->enroll ? "--suites" : NULL;
    if (missing) {
        snprintf(err, errlen, "%s is required%s", missing,
                 strcmp(missing, "--collector-key") == 0
                 ? " (the collector's public key file), unless "
                   "--collector-fingerprint pins the collector" : "");
        return -1;
    }
    return 0;
}

int
ag_daemon_main(int argc, char **argv)
{
    ag_stream_opts_t o = { 0 };
    s_mode_t mode = { 0 };
    char err[S_ERR];
    int code = AG_DAEMON_EXIT_FAIL;
    s_daemon_t d = { 0 };
    ag_config_t *conf = NULL;
    pthread_mutex_init(&d.lock, NULL);

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            ag_daemon_usage(stdout);
            return AG_DAEMON_EXIT_OK;
        }
    }
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (!args)
        return AG_DAEMON_EXIT_FAIL;
    memcpy(args, argv, (size_t)argc * sizeof *args);
    if (s_daemon_options(argc, args, &o, &mode, &conf, err, sizeof err) != 0)
        goto usage;
    if (mode.fingerprint) {
        code = s_print_fingerprint(o.key);
        goto out;
    }
    if (s_daemon_ready(&o, &mode, err, sizeof err) != 0)
        goto usage;
    /* Everything else is checked before the key pair is made. */
    if (!mode.enroll && s_scan_suites(o.suites_dir, &d.suites,
                                      &d.suite_count, err, sizeof err) != 0)
        goto usage;
    if (s_make_key(o.key, err, sizeof err) != 0)
        goto usage;
    if (mode.enroll) {
        code = s_enroll(&o);
        goto out;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;   /* no SA_RESTART: waits must end */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    d.harness = ag_harness_new(err, sizeof err);
    if (!d.harness)
        goto fail;
    d.stream = ag_stream_open(&o, err, sizeof err);
    if (!d.stream) {
        code = AG_DAEMON_EXIT_USAGE;
        goto fail;
    }
    d.stream->on_job_message = s_daemon_job_message;
    d.stream->job_ctx = &d;
    s_signal_harness = d.harness;
    s_logf("start", "collector=%s spool=%s suites=%s (%zu)", o.collector,
           o.spool_dir, o.suites_dir, d.suite_count);
    if (s_calibrate(d.stream, err, sizeof err) != 0 && !s_stop_signal)
        s_logf("calibration_failed", "%s", err);
    /* Ready without waiting for the collector: the spool holds what is
     * measured while it is away, and `systemctl start` must not hang
     * on another host. STATUS= says whether it is connected. */
    if (!s_stop_signal && ag_notify_ready("calibrated; connecting to %s, "
                                          "%zu suites", o.collector,
                                          d.suite_count) < 0)
        s_logf("notify_failed", "READY=1 could not be sent to "
               "NOTIFY_SOCKET");

    while (!s_stop_signal) {
        s_job_t job = { 0 };
        bool have = false;
        pthread_mutex_lock(&d.lock);
        if (d.queued > 0) {
            job = d.queue[0];
            memmove(d.queue, d.queue + 1,
                    (d.queued - 1) * sizeof d.queue[0]);
            d.queued--;
            have = true;
        }
        pthread_mutex_unlock(&d.lock);
        if (have) {
            s_run_job(&d, &job);
            free(job.bytes);
            continue;
        }
        struct timespec ts = { 0, 100 * 1000000 };
        nanosleep(&ts, NULL);
    }
    s_logf("stop", "signal %d: delivering the spool (%zu messages) for up "
           "to 2 s", (int)s_stop_signal, ag_spool_count(d.stream->spool));
    ag_notify_stopping("stopping: delivering %zu spooled messages",
                       ag_spool_count(d.stream->spool));
    size_t left = ag_stream_drain(d.stream, 2.0);
    s_logf("stopped", "%zu messages left in the spool for the next start",
           left);
    code = AG_DAEMON_EXIT_OK;
    goto out;
usage:
    fprintf(stderr, "parity-agent: %s\n(see parity-agent --help)\n", err);
    code = AG_DAEMON_EXIT_USAGE;
    goto out;
fail:
    fprintf(stderr, "parity-agent: %s\n", err);
out:
    s_signal_harness = NULL;
    ag_stream_destroy(&d.stream);
    ag_harness_destroy(&d.harness);
    pthread_mutex_lock(&d.lock);
    for (size_t i = 0; i < d.queued; i++)
        free(d.queue[i].bytes);
    pthread_mutex_unlock(&d.lock);
    s_suite_infos_free(d.suites, d.suite_count);
    ag_config_destroy(&conf);
    free(args);
    return code;
}
