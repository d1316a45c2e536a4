/* co_query.h -- the collector's answers to client Requests.
 *
 * A Request carries a command and a JSON object of arguments; the Reply
 * carries a status, a JSON body and an error line. docs/protocol.md,
 * section 10, is the reference of every command and body:
 *
 *   hosts      the fleet: state, floor, CPU, kernel, warnings, suites
 *   run        create a job (co_jobs_create)
 *   job        one job: per-host state and progress, its runs
 *   jobs       the latest jobs, or only the active ones
 *   cancel     cancel a job (co_jobs_cancel)
 *   verdicts   per benchmark and arm pair, one verdict per host (the
 *              spec's written form) and the vd_fleet summary
 *   show       one run in full, shaped like a local results file
 *   pending, approve, reject, revoke    agents' keys (co_enroll)
 *
 * Authorisation: only keys loaded from the --admin directory may send
 * these; anyone else gets CO_REPLY_FORBIDDEN and nothing happens.
 *
 * Arguments: a command's unknown argument, a value of the wrong type or
 * out of range is CO_REPLY_BADARGS naming it, before anything is read or
 * written. Each request first checks the database connection
 * (co_conn_ready): down is CO_REPLY_UNAVAILABLE, "database
 * unavailable: ..."; every error text is one line.
 *
 * The module borrows a co_jobs_t (the job operations, and their
 * connection, which every command uses but those --query-db takes); it keeps only the admin keys. Nothing here prints.
 */
#ifndef CO_QUERY_H
#define CO_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#include "co_jobs.h"
#include "co_keys.h"
#include "co_reply.h"
#include "parity.pb-c.h"

/* Most admin keys, and the largest args_json accepted. */
#define CO_QUERY_MAX_ADMINS 4096
#define CO_QUERY_MAX_ARGS   65536

typedef struct co_query co_query_t;

/* A new module borrowing jobs and keys (which must outlive it; keys may
 * be NULL). floor_window is the collector's --floor-window, for the
 * floors `hosts` shows; keys gets the decisions of `approve`, `reject`
 * and `revoke` (co_enroll). Caller owns the result; NULL on out of
 * memory. */
co_query_t *co_query_new(co_jobs_t *jobs, int floor_window, co_keys_t *keys);
void co_query_destroy(co_query_t **q);

/* The read-only commands (hosts, job, jobs, verdicts, show, history,
 * regressions, report, baseline) run on read's connection from now on: a
 * streaming replica (--query-db). Borrowed; NULL: the primary's. */
void co_query_set_reader(co_query_t *q, co_conn_t *read);

/* The flat tolerance of the verdicts it computes itself (`baseline`):
 * the collector's --parity. VD_DEFAULT_PARITY until set. */
void co_query_set_parity(co_query_t *q, double parity);

/* Load (again) the admin keys: every public certificate file of dir
 * (CZMQ zcert format, as `parity keygen` writes; *_secret files are
 * skipped). Returns the number loaded, or -1 with err. The directory is
 * remembered and re-read before a request when it has changed. */
int co_query_load_admins(co_query_t *q, const char *dir, char *err,
                         size_t errlen);

bool co_query_is_admin(const co_query_t *q, const char *public_key);

/* Admin key i (Z85, owned by q), i < co_query_admin_count(q): for the
 * ZAP handler, which admits the union of --allow and --admin. */
size_t co_query_admin_count(const co_query_t *q);
const char *co_query_admin_key(const co_query_t *q, size_t i);

/* True for the commands this module answers (the server keeps `ping` and
 * `stats`). */
bool co_query_handles(const char *command);

/* Answer req from the peer with public_key into *reply (initialised
 * here). reply->body_json and reply->error are malloc'd: free them with
 * co_query_reply_clear(). Never fails: errors are a status. */
void co_query_handle(co_query_t *q, const char *public_key,
                     const Parity__Request *req, Parity__Reply *reply);

/* co_query_handle without the admin check, for a caller that has made
 * its own (the HTTP side's tokens, co_http); key is who asks, for the
 * log of the commands that record it. */
void co_query_answer(co_query_t *q, const char *key,
                     const Parity__Request *req, Parity__Reply *reply);

void co_query_reply_clear(Parity__Reply *reply);

#endif
