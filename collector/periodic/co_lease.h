/* co_lease.h -- which collector drives a live row (a bisect, a confirm):
 * a lease in the row (lease_owner, lease_until_us), taken when free or
 * ours, renewed every pass, given back at a stop, so that of several
 * collectors on one database one drives each row, and another takes it
 * over CO_LEASE_US after its holder stopped renewing (migrations 022,
 * 024). Called on the periodic thread that holds c's connection; nothing
 * here prints.
 */
#ifndef CO_LEASE_H
#define CO_LEASE_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "co_reply.h"

/* A lease not renewed for this long is free for another collector. */
#define CO_LEASE_US (60LL * 1000000)

/* This collector's owner name into buf: name (--name) when given, else
 * the host name and pid. */
void co_lease_owner(char *buf, size_t len, const char *name);

/* Take or renew the lease of every row of table (a constant: "bisects"
 * or "confirms") in state queued or running that is free or owner's:
 * their ids, oldest first, in a result the caller PQclears; NULL with
 * c's status. */
PGresult *co_lease_take(co_reply_t *c, const char *table, const char *owner);

/* Give owner's leases of table back (a stop), so that a restarted or
 * other collector carries on at once; failures are ignored. */
void co_lease_give_back(co_reply_t *c, const char *table, const char *owner);

#endif
