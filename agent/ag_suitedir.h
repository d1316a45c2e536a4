/* ag_suitedir.h -- the daemon's --suites directory: which suites this
 * agent offers, each with the SHA-256 of its file (docs/agent.md
 * "Daemon mode", docs/protocol.md Hello).
 *
 * A scan reads every *.yaml / *.yml file of the directory (not those
 * starting with '.'), at most AG_SUITEDIR_MAX files, in name order.
 * A file that does not load as a suite (ag_suite_load) is logged
 * (event suite_invalid, "... (not offered)") and left out: the agent
 * never offers a suite it cannot run. A suite is found by the network
 * by its own name or its file name without the extension, never by a
 * path.
 *
 * Ownership: ag_suitedir_scan() returns a list the caller owns (free
 * with ag_suitedir_destroy()); entries and their strings belong to the
 * list.
 */
#ifndef AG_SUITEDIR_H
#define AG_SUITEDIR_H

#include <stddef.h>

#include "pw_wire.h"

#define AG_SUITEDIR_MAX  PW_WIRE_MAX_SUITES   /* what one Hello may list */

typedef struct {
    char *name;           /* the suite's name */
    char *stem;           /* file name without .yaml/.yml */
    char *path;           /* DIR/FILE */
    char digest[65];      /* sha256 hex of the file */
    char **benchmarks;
    size_t benchmark_count;
} ag_suite_entry_t;

typedef struct {
    ag_suite_entry_t *entries;
    size_t count;
} ag_suitedir_t;

/* The suites in dir that load. NULL with err when dir cannot be read. */
ag_suitedir_t *ag_suitedir_scan(const char *dir, char *err, size_t errlen);

/* Free *list and set it to NULL. Accepts NULL. */
void ag_suitedir_destroy(ag_suitedir_t **list);

/* The entry the network may call name: a suite's own name or its file's
 * stem. NULL with why when name is not a plain name (letters, digits,
 * '_', '-', '.'; no paths) or no suite has it. list may be NULL. */
const ag_suite_entry_t *ag_suitedir_find(const ag_suitedir_t *list,
                                         const char *name, char *why,
                                         size_t whylen);

/* SHA-256 of the file at path as 64 hex digits. -1 with err naming the
 * call and the file. */
int ag_suitedir_sha256(const char *path, char hex[65], char *err,
                       size_t errlen);

#endif
