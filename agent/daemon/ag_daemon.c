/* ag_daemon.c -- see ag_daemon.h, docs/agent.md "Daemon mode" and
 * docs/spool.md. */
#include "ag_daemon.h"

#include "ag_against.h"
#include "ag_calstore.h"
#include "pw_conffile.h"
#include "ag_log.h"
#include "ag_machine.h"
#include "pw_systemd.h"
#include "ag_selftest.h"
#include "ag_spawn.h"
#include "ag_spool.h"
#include "ag_stream.h"
#include "ag_suite.h"
#include "ag_suitedir.h"
#include "ag_topup.h"
#include "pw_clock.h"
#include "pw_key.h"
#include "pw_limits.h"
#include "pw_wire.h"

#include <czmq.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S_ERR         512

/* Set by SIGTERM/SIGINT in daemon mode; read by the stream's run-end
 * callback so the stopped run's RunEnd says why. */
/* Atomic, not volatile sig_atomic_t: the handler runs on whichever
 * thread takes the signal (often the network thread) while the main
 * thread reads it, and only an atomic makes that cross-thread hand-over
 * defined (TSan reported it). Lock-free, so async-signal-safe. */
static _Atomic int s_stop_signal;
/* The job loop's eventfd: a signal, or a job queued, wakes it. The
 * suite watcher's: a signal, or the daemon's end (never read, so it
 * stays readable once written). */
static _Atomic int s_wake_fd = -1;
static _Atomic int s_watch_wake_fd = -1;

static void
s_wake_fd_write(int fd)
{
    uint64_t one = 1;
    if (fd >= 0 && write(fd, &one, sizeof one) < 0) {
        /* a full counter wakes the reader all the same */
    }
}

static void
s_wake_main(void)
{
    s_wake_fd_write(s_wake_fd);
}

typedef struct {
    uint8_t *bytes;     /* the JobOffer envelope, packed (a deep copy) */
    size_t len;
    char job_id[128];
} s_job_t;

typedef struct {
    ag_stream_t *stream;
    ag_harness_t *harness;
    /* What --suites offers now. The watcher thread replaces it (under
     * lock); the others read it under lock and copy what they keep. */
    ag_suitedir_t *suites;
    const char *suites_dir;
    const char *spool_dir;          /* keeps the calibration store */
    ag_suitedir_watch_t *watch;     /* NULL: inotify unavailable */
    pthread_t watcher;
    bool watcher_started;
    atomic_bool watch_stop;
    pthread_mutex_t lock;           /* queue, current and suites */
    s_job_t queue[AG_DAEMON_MAX_QUEUE];
    size_t queued;
    char current[128];              /* job running now, "" when idle */
    ag_machine_t *machine;          /* NULL: no lock could be opened */
    ag_topup_t topup;               /* calibration while idle */
} s_daemon_t;

static ag_harness_t *_Atomic s_signal_harness;   /* as s_stop_signal */

static void
s_on_signal(int sig)
{
    s_stop_signal = sig;
    s_wake_main();
    s_wake_fd_write(s_watch_wake_fd);
    if (s_signal_harness)
        ag_harness_cancel(s_signal_harness, AG_RUN_INCOMPLETE);
}

/* A job's calibration runs, kept for the agent's calibration store
 * (ag_calstore.h, in its spool directory): the store's runs feed the
 * stopping rule of runs: auto, and the job's are added to it after. */
typedef struct {
    char path[4096];             /* "" when the store is not usable */
    double *store;
    size_t store_n;
    double *cal;
    size_t n, cap;
} s_calkeep_t;

static int
s_calkeep_add(s_calkeep_t *k, const double *x, size_t n)
{
    if (n == 0)
        return 0;   /* a session-start report with nothing (x NULL) */
    if (k->n + n > k->cap) {
        size_t cap = k->cap ? k->cap : 256;
        while (cap < k->n + n)
            cap *= 2;
        double *p = realloc(k->cal, cap * sizeof *p);
        if (!p)
            return 0;   /* the store misses some runs, nothing worse */
        k->cal = p;
        k->cap = cap;
    }
    memcpy(k->cal + k->n, x, n * sizeof *x);
    k->n += n;
    return 0;
}

static int
s_calkeep_session(void *ctx, const ag_cal_batch_t *cal)
{
    return s_calkeep_add(ctx, cal->wall_us, cal->n);
}

static int
s_calkeep_sample(void *ctx, const ag_sample_t *sm)
{
    return sm->kind == PW_SAMPLE_CALIBRATION
           ? s_calkeep_add(ctx, &sm->wall_us, 1) : 0;
}

static void
s_calkeep_load(s_calkeep_t *k, const char *dir, ag_harness_opts_t *ho)
{
    char err[1024], note[1024];
    if (ag_calstore_path(dir, k->path, sizeof k->path, err, sizeof err)
            != AG_CALSTORE_OK ||
        ag_calstore_load(k->path, &k->store, &k->store_n, note, sizeof note,
                         err, sizeof err) != AG_CALSTORE_OK) {
        ag_logf("calibration", "store unusable: %s", err);
        k->path[0] = '\0';
        return;
    }
    if (note[0])
        ag_logf("calibration", "%s", note);
    ho->store_us = k->store;
    ho->store_n = k->store_n;
}

static void
s_calkeep_store(s_calkeep_t *k)
{
    char err[1024], note[1024];
    if (k->path[0] && k->n &&
        ag_calstore_append(k->path, k->cal, k->n, pw_clock_unix_us(), note,
                           sizeof note, err, sizeof err) != AG_CALSTORE_OK)
        ag_logf("calibration", "store not updated: %s", err);
    free(k->store);
    free(k->cal);
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
    ag_logf("jobs_stopped", "the collector refused this agent's key: %s%s%s"
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
            ag_stream_job_status(d->stream, id, "cancelled", "cancelled before "
                                 "it started", NULL);
        else
            ag_logf("job_cancel", "job %s is neither queued nor running", id);
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
        ag_logf("job_duplicate", "job %s offered again; it is %s", jo->job_id,
                already);
        ag_stream_job_status(d->stream, jo->job_id, already, NULL, NULL);
        return;
    }
    pthread_mutex_lock(&d->lock);
    bool known = ag_selftest_is(jo->suite)
                 || ag_suitedir_find(d->suites, jo->suite, why, sizeof why);
    pthread_mutex_unlock(&d->lock);
    if (!known) {
        ag_stream_job_status(d->stream, jo->job_id, "refused", why, NULL);
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
            ag_stream_job_status(d->stream, jo->job_id, "refused", why, NULL);
            return;
        }
    }
    if ((jo->runs && jo->runs != PW_RUNS_AUTO &&
         (jo->runs < AG_SUITE_MIN_RUNS || jo->runs > AG_SUITE_MAX_RUNS)) ||
        jo->n_vars > AG_SUITE_MAX_VARS) {
        snprintf(why, sizeof why, "runs %u / vars %zu outside this agent's "
                 "bounds (%d..%d runs, %d vars)", jo->runs, jo->n_vars,
                 AG_SUITE_MIN_RUNS, AG_SUITE_MAX_RUNS, AG_SUITE_MAX_VARS);
        ag_stream_job_status(d->stream, jo->job_id, "refused", why, NULL);
        return;
    }
    if (!ag_stream_has_room(d->stream, AG_STREAM_START_ROOM)) {
        ag_stream_job_status(d->stream, jo->job_id, "refused", "spool full: "
                             "waiting for the collector to ack earlier runs",
                             NULL);
        return;
    }
    s_job_t job = { 0 };
    snprintf(job.job_id, sizeof job.job_id, "%s", jo->job_id);
    if (pw_wire_pack_alloc(env, &job.bytes, &job.len, why, sizeof why)
        != PW_WIRE_OK) {
        ag_stream_job_status(d->stream, jo->job_id, "refused", why, NULL);
        return;
    }
    pthread_mutex_lock(&d->lock);
    bool full = d->queued == AG_DAEMON_MAX_QUEUE;
    if (!full)
        d->queue[d->queued++] = job;
    pthread_mutex_unlock(&d->lock);
    if (full) {
        free(job.bytes);
        ag_stream_job_status(d->stream, jo->job_id, "refused", "job queue full",
                             NULL);
        return;
    }
    ag_stream_job_status(d->stream, jo->job_id, "queued", NULL, NULL);
    s_wake_main();
}

/* Take the machine lock for a job, waiting for the machine's other
 * agents. false: not held (no lock file, a signal, an error: logged). */
static bool
s_machine_take(s_daemon_t *d, const char *job_id)
{
    char err[S_ERR];
    long waited = 0;
    if (!d->machine)
        return false;
    int rc = ag_machine_take(d->machine, true, &s_stop_signal, &waited, err,
                             sizeof err);
    if (rc == AG_MACHINE_ERR)
        ag_logf("machine_lock_failed", "job %s runs without the machine "
                "lock: %s", job_id, err);
    else if (rc == AG_MACHINE_OK && waited >= AG_MACHINE_POLL_MS)
        ag_logf("machine_lock_waited", "job %s waited %ld ms for another "
                "agent of this machine", job_id, waited);
    return rc == AG_MACHINE_OK;
}

static void
s_run_job(s_daemon_t *d, s_job_t *job)
{
    Parity__Envelope *env = NULL;
    char err[S_ERR], why[512], path[4096] = "", digest[65];
    ag_var_t vars[AG_SUITE_MAX_VARS], against[AG_AGAINST_MAX];
    ag_suite_t *suite = NULL;
    if (pw_wire_unpack(job->bytes, job->len, 0, &env, NULL, err, sizeof err)
        != PW_WIRE_OK) {
        ag_stream_job_status(d->stream, job->job_id, "failed", err, NULL);
        return;
    }
    const Parity__JobOffer *jo = env->job_offer;
    /* The built-in A/A suite is made from the job's variables; a suite
     * file cannot take its name (ag_suitedir leaves such a file out).
     * Its digest is empty, as in Hello. */
    bool builtin = ag_selftest_is(jo->suite);
    /* The path under the lock: the suite watcher may replace the list
     * (and free this entry) at any moment. */
    pthread_mutex_lock(&d->lock);
    const ag_suite_entry_t *si = builtin ? NULL :
        ag_suitedir_find(d->suites, jo->suite, why, sizeof why);
    if (si)
        snprintf(path, sizeof path, "%s", si->path);
    pthread_mutex_unlock(&d->lock);
    size_t nv = jo->n_vars < AG_SUITE_MAX_VARS ? jo->n_vars
                                               : AG_SUITE_MAX_VARS;
    for (size_t i = 0; i < nv; i++) {
        vars[i].name = jo->vars[i]->name;
        vars[i].value = jo->vars[i]->value;
    }
    size_t na = jo->n_against;
    for (size_t i = 0; i < na && i < AG_AGAINST_MAX; i++) {
        against[i].name = jo->against[i]->name;
        against[i].value = jo->against[i]->value;
    }
    if (na > AG_AGAINST_MAX || (builtin && na)) {
        if (builtin)
            snprintf(why, sizeof why, "the built-in A/A suite takes no "
                     "--against");
        else
            snprintf(why, sizeof why, "more than %d --against values",
                     AG_AGAINST_MAX);
        ag_stream_job_status(d->stream, job->job_id, "refused", why, NULL);
        goto out;
    }
    if (!path[0] && !builtin) {
        ag_stream_job_status(d->stream, job->job_id, "refused", why, NULL);
        goto out;
    }
    if (jo->expires_at_us > 0 && pw_clock_unix_us() > jo->expires_at_us) {
        ag_stream_job_status(d->stream, job->job_id, "refused", "expired "
                             "before it could start", NULL);
        goto out;
    }
    digest[0] = 0;
    if ((builtin ? ag_selftest_suite(vars, nv, &suite, err, sizeof err)
                 : ag_suitedir_load(path, vars, nv, against, na, &suite,
                                    digest, err,
                                    sizeof err))
        != AG_SUITE_OK) {
        ag_stream_job_status(d->stream, job->job_id, "refused", err, NULL);
        goto out;
    }
    bool autorun = jo->runs == PW_RUNS_AUTO;
    ag_harness_opts_t ho = { .runs = autorun ? 0 : jo->runs,
                             .runs_auto = autorun, .warmup = -1,
                             .only = (const char *const *)jo->only,
                             .only_count = jo->n_only };
    s_calkeep_t keep = { 0 };
    ag_callbacks_t inner = { .ctx = &keep,
                             .on_calibration = s_calkeep_session,
                             .on_sample = s_calkeep_sample };
    ag_callbacks_t cb;
    s_calkeep_load(&keep, d->spool_dir, &ho);
    /* Reset before the job becomes current: a JobCancel that arrives
     * from now on must not be cleared. */
    ag_harness_reset(d->harness);
    pthread_mutex_lock(&d->lock);
    snprintf(d->current, sizeof d->current, "%s", job->job_id);
    pthread_mutex_unlock(&d->lock);
    /* The machine's other agents calibrate or run a job: wait (a cancel
     * meanwhile is seen by the harness as it starts). */
    bool locked = s_machine_take(d, job->job_id);
    ag_stream_set_state(d->stream, "running", job->job_id);
    ag_stream_job_started(d->stream, job->job_id, digest);
    ag_stream_set_job(d->stream, job->job_id, jo);
    ag_stream_callbacks(d->stream, &inner, &cb);
    if (s_stop_signal)
        ag_harness_cancel(d->harness, AG_RUN_INCOMPLETE);
    ag_stream_set_measuring(d->stream, true);
    int rc = ag_harness_run(d->harness, suite, &ho, &cb, err, sizeof err);
    ag_stream_set_measuring(d->stream, false);
    char failed[S_ERR];
    snprintf(failed, sizeof failed, "%s", ag_stream_job_failed(d->stream));
    ag_stream_set_job(d->stream, NULL, NULL);
    pthread_mutex_lock(&d->lock);
    d->current[0] = 0;
    pthread_mutex_unlock(&d->lock);
    ag_stream_set_state(d->stream, "idle", NULL);
    if (rc == AG_HARNESS_OK && failed[0])
        ag_stream_job_status(d->stream, job->job_id, "failed", failed, NULL);
    else if (rc == AG_HARNESS_OK)
        ag_stream_job_status(d->stream, job->job_id, "done", NULL, NULL);
    else if (rc == AG_HARNESS_STOPPED)
        ag_stream_job_status(d->stream, job->job_id, s_stop_signal ? "failed"
                             : "cancelled", s_stop_signal
                             ? AG_STREAM_STOP_REASON : NULL, NULL);
    else
        ag_stream_job_status(d->stream, job->job_id, "failed", err, NULL);
    s_calkeep_store(&keep);
    if (locked) {
        /* The machine's next job measures once the collector has stored
         * this one's runs: their ingest (the collector and PostgreSQL on
         * this machine, as in the quickstart) is not in its samples. */
        if (ag_stream_drain(d->stream, AG_DAEMON_HANDOFF_MS / 1000.0) > 0)
            ag_logf("handoff", "job %s: runs not yet acked after %d ms; "
                    "the machine lock is released", job->job_id,
                    AG_DAEMON_HANDOFF_MS);
        ag_machine_release(d->machine);
    }
out:
    ag_suite_destroy(&suite);
    pw_wire_free(&env);
}

/* A batch into the agent's store with its other metrics (a task clock
 * of 0 was not counted: no value). */
static int
s_store_topup(const char *path, const ag_topup_batch_t *b, char *note,
              size_t notelen, char *err, size_t errlen)
{
    double tc[AG_TOPUP_BATCH];
    for (size_t i = 0; i < b->n; i++)
        tc[i] = b->task_clock_us[i] > 0 ? b->task_clock_us[i] : NAN;
    const double *const more[AG_CALSTORE_MORE] = { b->cpu_us, tc,
                                                   b->peak_rss_kb };
    return ag_calstore_append_runs(path, b->wall_us, more, b->n, b->from_us,
                                   note, notelen, err, errlen);
}

/* Idle: a calibration batch if one is due (ag_topup.h), sent as one
 * Calibration and added to the agent's store. */
static void
s_topup(s_daemon_t *d)
{
    char err[S_ERR], note[1024], path[4096];
    ag_topup_batch_t b;
    if (!d->machine || pw_clock_mono_ms() < ag_topup_next_ms(&d->topup))
        return;
    ag_stream_set_measuring(d->stream, true);
    int rc = ag_topup_try(&d->topup, d->machine, ag_harness_default_noop(),
                          &s_stop_signal, pw_clock_mono_ms(), &b, err,
                          sizeof err);
    ag_stream_set_measuring(d->stream, false);
    if (rc == AG_TOPUP_ERR) {
        ag_logf("calibration_failed", "%s", err);
        return;
    }
    if (rc != AG_TOPUP_DONE)
        return;
    ag_cal_batch_t cal = { .wall_us = b.wall_us, .cpu_us = b.cpu_us,
                           .task_clock_us = b.task_clock_us,
                           .peak_rss_kb = b.peak_rss_kb, .n = b.n,
                           .taken_at_us = b.from_us };
    if (ag_stream_calibration(d->stream, &cal, !b.busy, err, sizeof err)
        != AG_SPOOL_OK) {
        ag_logf("calibration_failed", "not spooled: %s", err);
        return;
    }
    /* The agent's store (runs: auto's floor) takes them too. */
    if (ag_calstore_path(d->spool_dir, path, sizeof path, err, sizeof err)
            != AG_CALSTORE_OK
        || s_store_topup(path, &b, note, sizeof note, err, sizeof err)
            != AG_CALSTORE_OK)
        ag_logf("calibration", "store not updated: %s", err);
    double lo = b.wall_us[0], hi = b.wall_us[0];
    for (size_t i = 1; i < b.n; i++) {
        lo = b.wall_us[i] < lo ? b.wall_us[i] : lo;
        hi = b.wall_us[i] > hi ? b.wall_us[i] : hi;
    }
    ag_logf("calibration", "runs=%zu from_us=%" PRId64 " to_us=%" PRId64
            " load=%.2f busy=%s min_us=%.1f max_us=%.1f quiet_since_start=%zu",
            b.n, b.from_us, b.to_us, b.load, b.busy ? "yes" : "no", lo, hi,
            d->topup.quiet_runs);
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
"pinned), say hello, run the jobs the collector offers, one at a time,\n"
"from suites in --suites only, and calibrate this host's noise floor in\n"
"small batches while idle and the machine is quiet.\n"
"Every message is written to the spool (fsync) before it is sent and kept\n"
"until the collector acks it. The first start without --key's files\n"
"makes the key pair; until an operator approves it on the collector\n"
"(parity hosts approve) the agent is pending: it measures and spools,\n"
"and sends when approved.\n"
"\n"
"  --collector URL       the collector's ROUTER, tcp://HOST:PORT; several,\n"
"                        comma-separated (collectors of one database),\n"
"                        are tried in turn at each reconnect\n"
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
"  --heartbeat-ms N      heartbeat interval (default 1000)\n"
"  --machine-lock FILE   the lock every agent of this machine shares: one\n"
"                        job or calibration at a time (default\n"
"                        $PARITY_MACHINE_LOCK, else %s)\n"
"  --calibration-every S  seconds between calibration batches once %d\n"
"                        quiet runs were taken (default %d; 0: none); each\n"
"                        batch is %d no-op runs, taken idle and quiet\n",
            AG_MACHINE_LOCK_DEFAULT, AG_TOPUP_FILL, AG_TOPUP_EVERY_DEFAULT,
            AG_TOPUP_BATCH);
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
            pw_conffile_dir());
    fprintf(f,
"\n"
"Under systemd (Type=notify) it says READY=1 once started, STATUS=\n"
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
    "key", "suites", "spool", "name", "spool-max", "heartbeat-ms",
    "machine-lock", "calibration-every", NULL,
};

/* What the command line asks besides serving (--enroll, --fingerprint),
 * and the daemon's own settings (the machine lock, calibration). */
typedef struct {
    bool enroll;
    bool fingerprint;
    const char *machine_lock;     /* NULL: ag_machine's default */
    long cal_every;               /* -1: not given */
} s_mode_t;

/* --machine-lock FILE or --calibration-every S (flag names, value). 1
 * taken, 0 not one of them, -1 bad value (err). */
static int
s_take_mode_opt(const char *flag, const char *value, s_mode_t *m, char *err,
                size_t errlen)
{
    if (strcmp(flag, "--machine-lock") == 0) {
        if (!value || !*value) {
            snprintf(err, errlen, "--machine-lock needs a FILE");
            return -1;
        }
        m->machine_lock = value;
        return 1;
    }
    if (strcmp(flag, "--calibration-every") != 0)
        return 0;
    char *end = NULL;
    errno = 0;
    long v = value ? strtol(value, &end, 10) : -1;
    if (!value || !*value || *end || errno || v < 0
        || v > AG_TOPUP_EVERY_MAX) {
        snprintf(err, errlen, "--calibration-every \"%.64s\": want whole "
                 "seconds, 0 (no calibration batches) to %d", value ? value
                 : "", AG_TOPUP_EVERY_MAX);
        return -1;
    }
    m->cal_every = v;
    return 1;
}

/* The file's entries into *fo and *fm, each checked by the flag's own
 * parser, whose error is prefixed with FILE:LINE. */
static int
s_config_opts(const pw_conffile_t *conf, ag_stream_opts_t *fo, s_mode_t *fm,
              char *err, size_t errlen)
{
    for (size_t i = 0; i < pw_conffile_count(conf); i++) {
        const pw_conffile_entry_t *e = pw_conffile_entry(conf, i);
        char flag[64], where[600], why[S_ERR];
        snprintf(flag, sizeof flag, "--%s", e->key);
        char *mini[] = { (char *)"parity-agent", flag, (char *)e->value,
                         NULL };
        int n = 3;
        pw_conffile_where(conf, e, where, sizeof where);
        int taken = s_take_mode_opt(flag, e->value, fm, why, sizeof why);
        if (taken < 0) {
            snprintf(err, errlen, "%.250s: %.250s", where, why);
            return -1;
        }
        if (taken) {
            continue;
        } else if (strcmp(e->key, "suites") == 0) {
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

/* The daemon's options: flags from args (a copy of argv the strings of
 * *o then point into), then the configuration file (--config FILE, else
 * SYSCONFDIR/parity/agent.yaml if it exists) for what the flags left
 * unset. *conf owns the file's strings. */
static int
s_daemon_options(int argc, char **args, ag_stream_opts_t *o, s_mode_t *mode,
                 pw_conffile_t **conf, char *err, size_t errlen)
{
    const char *path = NULL;
    char def[512];
    ag_stream_opts_t fo = { 0 };
    s_mode_t fm = { .cal_every = -1 };
    int n = argc;
    if (pw_conffile_take_arg(&n, args, &path, err, errlen) != PW_CONFFILE_OK
        || ag_stream_take_args(&n, args, o, err, errlen) != 0)
        return -1;
    for (int i = 1; i < n; i++) {
        int taken = s_take_mode_opt(args[i], i + 1 < n ? args[i + 1] : NULL,
                                    mode, err, errlen);
        if (taken < 0)
            return -1;
        if (taken) {
            i++;
        } else if (strcmp(args[i], "--suites") == 0 && i + 1 < n) {
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
    snprintf(def, sizeof def, "%s/agent.yaml", pw_conffile_dir());
    if (pw_conffile_load(path ? path : def, s_config_keys, path != NULL, conf,
                       err, errlen) != PW_CONFFILE_OK
        || s_config_opts(*conf, &fo, &fm, err, errlen) != 0)
        return -1;
    if (!mode->machine_lock)
        mode->machine_lock = fm.machine_lock;
    if (mode->cal_every < 0)
        mode->cal_every = fm.cal_every;
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
        ag_logf("key_created", "a new key pair in %s and %s; fingerprint %s "
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
    pw_key_fingerprint(ag_stream_public_key(s), fp);
    ag_link_stats_t st;
    int64_t end = pw_clock_mono_ms() + (int64_t)(timeout * 1000);
    for (;;) {
        ag_stream_link_stats(s, &st);
        if (st.ready || st.pending || st.denied || st.key_mismatch
            || st.auth_refused || pw_clock_mono_ms() >= end)
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

/* The suites directory changed (the watch says so, on the watcher
 * thread): scan it, and when what is offered differs, swap the list and
 * say Hello again. A directory that cannot be read offers nothing; a
 * file that does not load is logged by the scan and left out. */
static void
s_rescan(s_daemon_t *d)
{
    char err[S_ERR], what[1024];
    ag_suitedir_t *fresh = ag_suitedir_scan(d->suites_dir, err, sizeof err);
    if (!fresh) {
        ag_logf("suites_unreadable", "%s; no suite is offered until it can "
                "be read", err);
        fresh = calloc(1, sizeof *fresh);
        if (!fresh)
            return;
    }
    /* Only this thread replaces d->suites, so reading it unlocked here
     * is safe; the others read it under the lock. */
    if (ag_suitedir_same(d->suites, fresh)) {
        ag_suitedir_destroy(&fresh);
        return;
    }
    ag_suitedir_diff(d->suites, fresh, what, sizeof what);
    ag_suitedir_t *old = d->suites;
    pthread_mutex_lock(&d->lock);
    d->suites = fresh;
    pthread_mutex_unlock(&d->lock);
    ag_suitedir_destroy(&old);
    ag_logf("suites_changed", "%s; %zu suites offered, telling the "
            "collector", what, d->suites->count);
    if (ag_stream_set_suites(d->stream, d->suites, err, sizeof err) != 0)
        ag_logf("hello_failed", "%s; the collector keeps the suites of the "
                "last Hello", err);
}

static void *
s_watch_main(void *arg)
{
    s_daemon_t *d = arg;
    pthread_setname_np(pthread_self(), "ag-watch");
    /* No timeout to turn on: a signal or the daemon's end writes
     * s_watch_wake_fd, so the thread sleeps through every measured run. */
    while (!s_stop_signal && !atomic_load(&d->watch_stop))
        if (ag_suitedir_watch_wait(d->watch, s_watch_wake_fd >= 0
                                             ? AG_DAEMON_IDLE_MAX_MS : 200))
            s_rescan(d);
    return NULL;
}

/* The job loop: one job at a time from the queue, until a signal; a
 * calibration batch when one is due and no job waits. Between them it
 * sleeps on s_wake_fd (a job queued, a signal) until the next batch is
 * due: nothing of it wakes while another agent of the machine measures. */
static void
s_job_loop(s_daemon_t *d)
{
    while (!s_stop_signal) {
        s_job_t job = { 0 };
        bool have = false;
        pthread_mutex_lock(&d->lock);
        if (d->queued > 0) {
            job = d->queue[0];
            memmove(d->queue, d->queue + 1,
                    (d->queued - 1) * sizeof d->queue[0]);
            d->queued--;
            have = true;
        }
        pthread_mutex_unlock(&d->lock);
        if (have) {
            s_run_job(d, &job);
            free(job.bytes);
            ag_topup_postpone(&d->topup, pw_clock_mono_ms());
            continue;
        }
        s_topup(d);
        int64_t now = pw_clock_mono_ms(), due = ag_topup_next_ms(&d->topup);
        int64_t wait = due > now ? due - now : 0;
        if (!d->machine || wait > AG_DAEMON_IDLE_MAX_MS)
            wait = AG_DAEMON_IDLE_MAX_MS;
        struct pollfd pfd = { .fd = s_wake_fd, .events = POLLIN };
        if (poll(&pfd, 1, (int)wait) > 0) {
            uint64_t v;
            if (read(s_wake_fd, &v, sizeof v) < 0) {
                /* EAGAIN: nothing left to read */
            }
        }
    }
}

/* Serve until a signal: stream, calibration, the suite watcher, jobs.
 * Returns an exit code; err says why for a failure. */
static int
s_serve(s_daemon_t *d, ag_stream_opts_t *o, const s_mode_t *mode, char *err,
        size_t errlen)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;   /* no SA_RESTART: waits must end */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    d->harness = ag_harness_new(err, errlen);
    if (!d->harness)
        return AG_DAEMON_EXIT_FAIL;
    /* The machine lock: a path given and not usable is the operator's
     * mistake; the default not usable (a sandbox without /run/lock) is
     * said once, and jobs then rely on the collector's grouping alone,
     * with no calibration batches (they would measure the siblings). */
    char lerr[S_ERR];
    d->machine = ag_machine_new(mode->machine_lock, lerr, sizeof lerr);
    if (!d->machine && mode->machine_lock) {
        snprintf(err, errlen, "--machine-lock: %.400s", lerr);
        return AG_DAEMON_EXIT_USAGE;
    }
    if (!d->machine)
        ag_logf("machine_lock_unavailable", "%s; jobs run without it and "
                "the floor comes from the jobs' calibration runs alone", lerr);
    int wfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wfd < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        return AG_DAEMON_EXIT_FAIL;
    }
    s_wake_fd = wfd;
    ag_topup_init(&d->topup, mode->cal_every < 0 ? AG_TOPUP_EVERY_DEFAULT
                                                 : (unsigned)mode->cal_every,
                  pw_clock_mono_ms());
    o->on_job_message = s_daemon_job_message;
    o->job_ctx = d;
    o->stop_signal = &s_stop_signal;
    o->suites = d->suites;
    d->spool_dir = o->spool_dir;
    d->stream = ag_stream_open(o, err, errlen);
    if (!d->stream)
        return AG_DAEMON_EXIT_USAGE;
    s_signal_harness = d->harness;
    /* Counted before the watcher starts: from then on d->suites is read
     * under the lock only. */
    size_t nsuites = d->suites->count;
    ag_logf("start", "collector=%s spool=%s suites=%s (%zu)", o->collector,
            o->spool_dir, o->suites_dir, nsuites);
    if (d->watch) {
        int wfd2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (wfd2 >= 0) {
            s_watch_wake_fd = wfd2;
            ag_suitedir_watch_set_wake(d->watch, wfd2);
        }
    }
    int prc = d->watch ? pthread_create(&d->watcher, NULL, s_watch_main, d)
                       : 0;
    d->watcher_started = d->watch && prc == 0;
    if (prc != 0)
        ag_logf("suites_unwatched", "pthread_create: %s; changes to --suites "
                "are not noticed until the agent restarts", strerror(prc));
    /* Ready without waiting for the collector: the spool holds what is
     * measured while it is away, and `systemctl start` must not hang
     * on another host. STATUS= says whether it is connected. No
     * calibration first: the machine is busy starting (docs/agent.md
     * "Calibration"); the batches come once it is idle. */
    if (!s_stop_signal && pw_systemd_ready("started; connecting to %s, "
                                          "%zu suites", o->collector,
                                          nsuites) < 0)
        ag_logf("notify_failed", "READY=1 could not be sent to "
                "NOTIFY_SOCKET");
    s_job_loop(d);
    ag_logf("stop", "signal %d: delivering the spool (%zu messages) for up "
            "to 2 s", (int)s_stop_signal, ag_stream_spooled(d->stream));
    pw_systemd_stopping("stopping: delivering %zu spooled messages",
                       ag_stream_spooled(d->stream));
    size_t left = ag_stream_drain(d->stream, 2.0);
    ag_logf("stopped", "%zu messages left in the spool for the next start",
            left);
    return AG_DAEMON_EXIT_OK;
}

int
ag_daemon_main(int argc, char **argv)
{
    ag_stream_opts_t o = { 0 };
    s_mode_t mode = { .cal_every = -1 };
    char err[S_ERR];
    int code = AG_DAEMON_EXIT_FAIL;
    s_daemon_t d = { 0 };
    pw_conffile_t *conf = NULL;
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
    /* Everything else is checked before the key pair is made. The watch
     * comes first: a change during the scan is then not missed. */
    d.suites_dir = o.suites_dir;
    if (!mode.enroll) {
        char werr[S_ERR];
        d.watch = ag_suitedir_watch_new(o.suites_dir, werr, sizeof werr);
        if (!(d.suites = ag_suitedir_scan(o.suites_dir, err, sizeof err)))
            goto usage;
        if (!d.watch)
            ag_logf("suites_unwatched", "%s; changes to it are not noticed "
                    "until the agent restarts", werr);
    }
    if (s_make_key(o.key, err, sizeof err) != 0)
        goto usage;
    if (mode.enroll) {
        code = s_enroll(&o);
        goto out;
    }
    code = s_serve(&d, &o, &mode, err, sizeof err);
    if (code != AG_DAEMON_EXIT_OK)
        fprintf(stderr, "parity-agent: %s\n", err);
    goto out;
usage:
    fprintf(stderr, "parity-agent: %s\n(see parity-agent --help)\n", err);
    code = AG_DAEMON_EXIT_USAGE;
out:
    if (d.watcher_started) {
        atomic_store(&d.watch_stop, true);
        s_wake_fd_write(s_watch_wake_fd);
        pthread_join(d.watcher, NULL);
    }
    if (s_watch_wake_fd >= 0) {
        int fd = s_watch_wake_fd;
        s_watch_wake_fd = -1;
        close(fd);
    }
    ag_suitedir_watch_destroy(&d.watch);
    s_signal_harness = NULL;
    ag_machine_destroy(&d.machine);
    if (s_wake_fd >= 0) {
        int fd = s_wake_fd;
        s_wake_fd = -1;
        close(fd);
    }
    ag_stream_destroy(&d.stream);
    ag_harness_destroy(&d.harness);
    pthread_mutex_lock(&d.lock);
    for (size_t i = 0; i < d.queued; i++)
        free(d.queue[i].bytes);
    pthread_mutex_unlock(&d.lock);
    ag_suitedir_destroy(&d.suites);
    pw_conffile_destroy(&conf);
    free(args);
    return code;
}
