/* ag_recover.h -- finding the runs an earlier parity-agent process left
 * open in its spool (docs/spool.md "Recovery").
 *
 * While a run is measured, its stream keeps the spool state file
 * AG_RECOVER_RUN_STATE ("RUN_ID BATCHES SAMPLES\n": the run and the
 * batches and samples spooled so far). A process killed mid-run leaves
 * that file, or (killed between spooling RunStart and writing the file)
 * a RunStart in the spool with no RunEnd after it. ag_recover_open_runs
 * reads both and says which runs need a RunEnd INCOMPLETE, counting the
 * batches spooled after the state file's last update from the spool.
 * The stream (ag_stream) then spools those RunEnds after the batches.
 *
 * A module apart from ag_stream because it only reads: the spool's
 * files and the state file, never the link or a harness run, and so it
 * is the one piece of the stream a test can drive from a spool alone.
 * Nothing here writes to the spool; unreadable files are skipped (the
 * spool itself reports damaged ones) and a bad state file is logged.
 */
#ifndef AG_RECOVER_H
#define AG_RECOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ag_spool.h"

#define AG_RECOVER_RUN_STATE  "run"   /* spool state file of the open run */
#define AG_RECOVER_MAX_RUNS   64      /* runs one spool is looked at for */

typedef struct {
    char run_id[37];
    uint32_t batches;        /* the next batch_seq: batches spooled */
    uint64_t samples;        /* samples in them */
} ag_open_run_t;

/* The runs spool holds open (a RunStart or the state file, no RunEnd),
 * at most max of them, into out. Returns how many. *seen (may be NULL)
 * says whether any run at all was found in the state file or the
 * spool: then the caller clears the state file once the RunEnds are
 * spooled. */
size_t ag_recover_open_runs(ag_spool_t *spool, ag_open_run_t *out,
                            size_t max, bool *seen);

#endif
