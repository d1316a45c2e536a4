/* co_hosts.h -- the hosts' rows: a Hello's host (by its public key), its
 * environment and its suites, and whether it is online.
 *
 * Tables: hosts, environments, suites. Status codes and the handle are
 * co_db's; called on the writer thread (co_hosts_offline at start, before
 * it runs).
 */
#ifndef CO_HOSTS_H
#define CO_HOSTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co_db.h"
#include "parity.pb-c.h"

/* Insert or update the host with this authenticated public key from a
 * Hello; *host_id gets its id. Marks it online. CO_DB_REFUSED when its
 * environment_json is neither empty nor a JSON object. */
int co_hosts_hello(co_db_t *db, const char *public_key, const Parity__Hello *h,
                   int64_t *host_id, char *err, size_t errlen);

/* Mark a host online or offline (best effort, no transaction needed). */
int co_hosts_online(co_db_t *db, int64_t host_id, bool online, char *err,
                    size_t errlen);

/* Mark offline every host this collector held (co_db_set_collector), and
 * those no collector holds: at start nobody is connected here yet. Hosts
 * of other collectors on the same database are theirs to keep. */
int co_hosts_offline(co_db_t *db, char *err, size_t errlen);

/* The tags as the text of one JSON object (caller frees); NULL when out
 * of memory. */
char *co_hosts_tags_json(Parity__Tag **tags, size_t n);

/* environment_json is empty or the text of one JSON object (readers such
 * as the hosts and show requests parse it). Returns 0, or -1 with err
 * naming what ("hello", "run_start"). */
int co_hosts_check_environment(const char *what, const char *text, char *err,
                               size_t errlen);

#endif
