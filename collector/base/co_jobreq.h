/* co_jobreq.h -- what a run request asks (docs/protocol.md 10.2), and
 * the rules that decide which hosts it goes to.
 *
 * Decides only: no database, no thread. co_jobs reads the hosts from
 * PostgreSQL, asks here which of them the request picks and whether
 * each can run it, then writes the job and its per-host states. The
 * request's strings stay borrowed from its args object.
 */
#ifndef CO_JOBREQ_H
#define CO_JOBREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Most hosts one job may name, and most entries of --only / --tag /
 * --var each. */
#define CO_JOBREQ_MAX_HOSTS 4096
#define CO_JOBREQ_MAX_ITEMS 256
/* Longest key or value of a tag or var, and of a label. */
#define CO_JOBREQ_MAX_TEXT 1024
/* Longest expire_us of a job: 30 days. */
#define CO_JOBREQ_MAX_EXPIRE_US (30LL * 86400 * 1000000)
/* Room for the reason a host cannot run a job (co_jobreq_cannot_run). */
#define CO_JOBREQ_WHY_MAX (CO_JOBREQ_MAX_TEXT + 128)

/* A run request's arguments, borrowed from its args object. */
typedef struct {
    const char *suite;
    const json_t *sel, *only, *runs, *expire, *label, *tags, *vars;
    const json_t *against;     /* [{"name", "value"}], or NULL */
    const char *against_name;  /* the variable they are values of */
    bool all;                  /* no host list, or "all" in it */
    bool runs_auto;            /* runs is "auto" */
} co_jobreq_t;

/* Check run's args into c: 0, or -1 with err naming the argument. */
int co_jobreq_parse(const json_t *args, co_jobreq_t *c, char *err,
                    size_t errlen);

/* The names the host list gives (neither "all" nor "k=v"), each mapped
 * to 0: co_jobreq_picks counts the hosts that say it. NULL when out of
 * memory. Caller owns it (json_decref). */
json_t *co_jobreq_named(const co_jobreq_t *c);

/* Does the request go to the host called name with these tags (the
 * text of a JSON object)? All hosts, a name in the list (counted in
 * named), or one of its "k=v" entries matching a tag. */
bool co_jobreq_picks(const co_jobreq_t *c, json_t *named, const char *name,
                     const char *tags_json);

/* Why a picked host cannot run the job, into why (CO_JOBREQ_WHY_MAX);
 * empty when it can. has_suite: its last Hello listed the suite;
 * benchmarks_json: that suite's benchmarks, a JSON array. */
void co_jobreq_cannot_run(const co_jobreq_t *c, bool has_suite,
                          const char *benchmarks_json, char *why,
                          size_t len);

/* Whether the request's --against values fit the suite as a host lists
 * it: they must be of its revision variable (revision; "" for none).
 * 0, or -1 with why (CO_JOBREQ_WHY_MAX): a request that names another
 * variable is wrong whichever hosts it picks, so the job is refused. */
int co_jobreq_against_ok(const co_jobreq_t *c, const char *revision,
                         char *why, size_t len);

/* Every name in the host list must be exactly one host (named, as
 * co_jobreq_picks counted it): 0, or -1 with err. */
int co_jobreq_names_known(const json_t *named, char *err, size_t errlen);

/* The one variable in which vars (a new job's) and prev (the suite's
 * newest earlier job's, with other variables) differ, when both have
 * the same names, every value a string and exactly one value differs:
 * the likely revision of
 * a suite that names none (docs/suites.md "Revision"). NULL otherwise;
 * the name is borrowed from vars. */
const char *co_jobreq_revision_hint(const json_t *vars, const json_t *prev);

/* A new job id: 12 hex digits (out has at least 13 bytes). */
void co_jobreq_uuid(char *out, size_t len);

#endif
