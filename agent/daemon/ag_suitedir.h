/* ag_suitedir.h -- the daemon's --suites directory: which suites this
 * agent offers, each with the SHA-256 of its file (docs/agent.md
 * "Daemon mode", docs/protocol.md Hello), and a watch that says when
 * the directory changed so the daemon scans it again.
 *
 * A scan reads every *.yaml / *.yml file of the directory (not those
 * starting with '.'), at most AG_SUITEDIR_MAX files, in name order.
 * A file that does not load as a suite (ag_suite_load) is logged
 * (event suite_invalid, "... (not offered)") and left out: the agent
 * never offers a suite it cannot run. A suite is found by the network
 * by its own name or its file name without the extension, never by a
 * path. A file whose suite is named `parity-selftest`, the built-in
 * A/A suite's reserved name (ag_selftest.h), is left out the same way.
 *
 * The digest is of the bytes parsed: a scan and ag_suitedir_load()
 * read the file once, hash those bytes and parse the same bytes, so an
 * edit between the two can never make a digest name other content.
 *
 * The watch (inotify on the directory): events on names that may be
 * suite files (*.yaml, *.yml, not starting with '.') and on the
 * directory itself count; an editor's swap and backup files do not. A
 * burst of events (an editor's write, rename and chmod, a checkout of
 * many files) is one change, reported once it has been quiet
 * AG_SUITEDIR_QUIET_MS, or AG_SUITEDIR_SETTLE_MAX_MS after its first
 * event while events keep coming. A directory that is removed or moved
 * away is a change (a scan then fails); the watch looks for the path
 * again every AG_SUITEDIR_REWATCH_MS and reports a change when it is
 * back. A watch belongs to one thread.
 *
 * Ownership: ag_suitedir_scan() returns a list the caller owns (free
 * with ag_suitedir_destroy()); entries and their strings belong to the
 * list. ag_suitedir_watch_new() returns a watch the caller owns (free
 * with ag_suitedir_watch_destroy()); the directory name is copied.
 */
#ifndef AG_SUITEDIR_H
#define AG_SUITEDIR_H

#include <stdbool.h>
#include <stddef.h>

#include "ag_suite.h"
#include "pw_wire.h"

/* What one Hello may list, less one place for the built-in A/A suite
 * (ag_selftest), which every Hello lists too. */
#define AG_SUITEDIR_MAX  (PW_WIRE_MAX_SUITES - 1)
#define AG_SUITEDIR_QUIET_MS      250   /* a burst ends after this quiet */
#define AG_SUITEDIR_SETTLE_MAX_MS 2000  /* ... or this long after it began */
#define AG_SUITEDIR_REWATCH_MS    1000  /* a vanished directory: look again */

typedef struct {
    char *name;           /* the suite's name */
    char *stem;           /* file name without .yaml/.yml */
    char *path;           /* DIR/FILE */
    char digest[65];      /* sha256 hex of the file */
    char **benchmarks;
    size_t benchmark_count;
    char *revision;       /* the suite's revision: variable, or NULL */
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

/* Load the suite file at path with vars (ag_suite_load) and the
 * --against instances of a job (ag_against_add, from the same bytes;
 * nagainst may be 0), and the SHA-256 of the bytes parsed into hex (64
 * hex digits). AG_SUITE_OK, or AG_SUITE_ERR with ag_suite_load()'s or
 * ag_against_add()'s message in err. */
int ag_suitedir_load(const char *path, const ag_var_t *vars, size_t nvars,
                     const ag_var_t *against, size_t nagainst,
                     ag_suite_t **out, char hex[65], char *err,
                     size_t errlen);

/* True when a and b offer the same suites: names, files, digests and
 * benchmarks. NULL is an empty list. */
bool ag_suitedir_same(const ag_suitedir_t *a, const ag_suitedir_t *b);

/* What changed from a to b, for the log: "added=x,y removed=z
 * changed=w" (the parts that apply, suites by name; "none" when
 * nothing did). Cut to textlen. */
void ag_suitedir_diff(const ag_suitedir_t *a, const ag_suitedir_t *b,
                      char *text, size_t textlen);

typedef struct ag_suitedir_watch ag_suitedir_watch_t;

/* Watch dir. NULL with err naming the call (inotify_init1,
 * inotify_add_watch) and dir. */
ag_suitedir_watch_t *ag_suitedir_watch_new(const char *dir, char *err,
                                           size_t errlen);

/* Wait up to wait_ms for events. True once a change has settled (see
 * above); the caller then scans the directory. */
bool ag_suitedir_watch_wait(ag_suitedir_watch_t *w, int wait_ms);

/* Also end a wait as soon as fd is readable (-1: none); fd stays the
 * caller's, which neither reads nor closes it here. A stop flag's
 * eventfd: the watching thread then needs no timeout to see it. */
void ag_suitedir_watch_set_wake(ag_suitedir_watch_t *w, int fd);

/* Close the watch, free *w, set it to NULL. Accepts NULL. */
void ag_suitedir_watch_destroy(ag_suitedir_watch_t **w);

#endif
