/* ag_record.h -- harness callbacks that build the results file.
 *
 * `parity-agent run` and `parity compare` hand ag_record_callbacks() to
 * ag_harness_run(); every callback appends to a pw_results document,
 * and ag_record_finish() adds the floor and the verdicts. An optional
 * progress function is passed through (the program draws it).
 *
 * Ownership: the recorder owns its document until ag_record_finish()
 * hands a new reference to the caller. Nothing here prints.
 */
#ifndef AG_RECORD_H
#define AG_RECORD_H

#include <stdbool.h>
#include <jansson.h>

#include "ag_calstore.h"
#include "ag_harness.h"

typedef struct ag_record ag_record_t;

/* A recorder for suite (borrowed; must outlive the recorder). tool names
 * the program in the file ("parity-agent", "parity compare"). */
ag_record_t *ag_record_new(const ag_suite_t *suite, const char *tool,
                           char *err, size_t errlen);

/* Free r and set *r to NULL. Accepts NULL. */
void ag_record_destroy(ag_record_t **r);

/* Callbacks feeding r; progress (may be NULL) is called on each round. */
ag_callbacks_t ag_record_callbacks(ag_record_t *r,
                                   void (*progress)(void *, const ag_progress_t *),
                                   void *progress_ctx);

/* Every calibration run recorded so far (session start and rounds) into
 * a new malloc'd array the caller frees; *n the count. */
int ag_record_calibration(const ag_record_t *r, double **out, size_t *n,
                          char *err, size_t errlen);

/* The other metrics of those runs, in the same order (cpu_us,
 * task_clock_us, peak_rss_kb; NAN where none): three new arrays of *n
 * the caller frees. 0, or -1 with err. */
int ag_record_calibration_metrics(const ag_record_t *r, double **cpu_us,
                                  double **task_clock_us,
                                  double **peak_rss_kb, size_t *n,
                                  char *err, size_t errlen);

/* True when any benchmark ended "failed". */
bool ag_record_any_failed(const ag_record_t *r);

/* Floor and verdicts (parity: the flat tolerance); complete false after
 * an interrupt. floor (borrowed) is the floor chosen with the host's
 * calibration store (ag_calstore_floor), recorded with where it came
 * from; NULL: q90 - q10 of the document's own calibration runs. Returns
 * a new reference to the document (caller owns), or NULL with err set. */
json_t *ag_record_finish(ag_record_t *r, double parity,
                         const ag_floor_t *floor, bool complete,
                         char *err, size_t errlen);

#endif
