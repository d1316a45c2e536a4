/* ag_recover.c -- see ag_recover.h. */
#include "ag_recover.h"

#include "ag_log.h"
#include "pw_wire.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char run_id[37];
    uint32_t batches;        /* next batch_seq */
    uint64_t samples;
    bool opened;             /* the state file or a spooled RunStart */
    bool ended;              /* a RunEnd of it is in the spool */
} s_run_t;

static s_run_t *
s_run(s_run_t *runs, size_t *n, const char *run_id)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(runs[i].run_id, run_id) == 0)
            return &runs[i];
    if (*n == AG_RECOVER_MAX_RUNS || strlen(run_id) > 36)
        return NULL;
    memset(&runs[*n], 0, sizeof runs[*n]);
    snprintf(runs[*n].run_id, sizeof runs[*n].run_id, "%s", run_id);
    return &runs[(*n)++];
}

/* The state file: the run being measured, batches and samples so far. */
static void
s_read_state(ag_spool_t *spool, s_run_t *runs, size_t *nruns)
{
    char *text = ag_spool_state_read(spool, AG_RECOVER_RUN_STATE);
    if (!text)
        return;
    char run_id[37] = "";
    uint32_t batches = 0;
    uint64_t samples = 0;
    if (sscanf(text, "%36s %" SCNu32 " %" SCNu64, run_id, &batches,
               &samples) == 3) {
        s_run_t *r = s_run(runs, nruns, run_id);
        if (r) {
            r->batches = batches;
            r->samples = samples;
            r->opened = true;
        }
    } else {
        ag_logf("spool_error", "%s/%s: unreadable (\"%.60s\"); ignored",
                ag_spool_dir(spool), AG_RECOVER_RUN_STATE, text);
    }
    free(text);
}

/* One spooled message's part in its run's story. */
static void
s_read_message(ag_spool_t *spool, uint64_t seq, s_run_t *runs,
               size_t *nruns)
{
    void *data = NULL;
    size_t len = 0;
    Parity__Envelope *env = NULL;
    if (ag_spool_read(spool, seq, &data, &len, NULL, 0) != AG_SPOOL_OK)
        return;
    if (pw_wire_unpack(data, len, 0, &env, NULL, NULL, 0) != PW_WIRE_OK) {
        free(data);
        return;
    }
    s_run_t *r = NULL;
    switch (env->body_case) {
    case PARITY__ENVELOPE__BODY_RUN_START:
        if ((r = s_run(runs, nruns, env->run_start->run_id)))
            r->opened = true;
        break;
    case PARITY__ENVELOPE__BODY_RUN_END:
        if ((r = s_run(runs, nruns, env->run_end->run_id)))
            r->ended = true;
        break;
    case PARITY__ENVELOPE__BODY_SAMPLE_BATCH:
        r = s_run(runs, nruns, env->sample_batch->run_id);
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

size_t
ag_recover_open_runs(ag_spool_t *spool, ag_open_run_t *out, size_t max,
                     bool *seen)
{
    s_run_t runs[AG_RECOVER_MAX_RUNS];
    size_t nruns = 0, nout = 0;
    s_read_state(spool, runs, &nruns);
    size_t n = ag_spool_count(spool);
    uint64_t *seqs = calloc(n ? n : 1, sizeof *seqs);
    n = seqs ? ag_spool_list(spool, 0, seqs, n) : 0;
    for (size_t i = 0; i < n; i++)
        s_read_message(spool, seqs[i], runs, &nruns);
    free(seqs);
    for (size_t i = 0; i < nruns && nout < max; i++) {
        /* Batches alone do not make a run open: its RunEnd may have been
         * acked while a batch's ack was lost; resending the batch is all
         * that run needs. */
        if (!runs[i].opened || runs[i].ended)
            continue;
        memcpy(out[nout].run_id, runs[i].run_id, sizeof out[nout].run_id);
        out[nout].batches = runs[i].batches;
        out[nout].samples = runs[i].samples;
        nout++;
    }
    if (seen)
        *seen = nruns > 0;
    return nout;
}
