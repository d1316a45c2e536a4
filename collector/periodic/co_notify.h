/* co_notify.h -- notices to webhooks (--notify-url) when a fleet
 * change-point event opens (docs/collector.md "Notices").
 *
 * A thread with its own database connection (co_jobs) looks every
 * CO_NOTIFY_POLL_MS at the change points stored since it started
 * (co_detect stores them on its thread). Once one that is neither
 * superseded nor within noise has settled -- its job has ended, or,
 * outside jobs, CO_NOTIFY_SETTLE_US after it was found -- its event is
 * found as `regressions` finds it (co_changes_list, co_events, over the
 * change points of its job's or commit's runs), so the notice names the
 * same id, hosts and magnitudes. The change point opens the event when
 * no older member is outside noise; then the event is claimed in the notices table (migration 021; one row per event, so of
 * several collectors on one database one sends it) and its notice is
 * queued on every hook (co_hook: a thread per URL, bounded queue,
 * retries). The network loop and the writer never wait for any of it.
 *
 * With confirm (--confirm), a new event is confirmed first
 * (co_confirm_event; co_confirmer measures it and sends the notice with
 * the answer); one that cannot be (its suite names no revision) is told
 * at once, saying why.
 *
 * The notice is JSON with a "text" field, which Slack and Mattermost
 * incoming webhooks show as it is, and the event under "parity".
 */
#ifndef CO_NOTIFY_H
#define CO_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "co_hook.h"

/* How often the change points are looked at. */
#define CO_NOTIFY_POLL_MS 1000
/* Outside jobs, how long an event waits for the other hosts' change
 * points of its commit before its notice goes. */
#define CO_NOTIFY_SETTLE_US (10LL * 1000000)
/* Within a job, how long after the job ended (detection trails it). */
#define CO_NOTIFY_SETTLE_JOB_US (3LL * 1000000)
/* Most URLs (--notify-url may repeat). */
#define CO_NOTIFY_URLS_MAX 8
/* Change points looked at per poll. */
#define CO_NOTIFY_BATCH 200

typedef struct co_notify co_notify_t;

/* Hooks for urls[0..n) (each checked, copied) with queues of queue_max
 * notices, and the thread on conninfo (copied). Caller owns the result;
 * NULL with err. */
co_notify_t *co_notify_new(const char *conninfo, const char *const *urls,
                           size_t n, size_t queue_max, bool confirm,
                           char *err, size_t errlen);

/* The notice of event e (a co_events event, borrowed): its "text" and
 * the event under "parity", with confirm (borrowed; NULL: none) beside
 * it and said at the end of the text. Caller frees; NULL on out of
 * memory. co_confirmer tells a --confirm event with it. */
char *co_notify_event_body(const json_t *e, const json_t *confirm);

/* Queue body (a JSON notice with a "text" field, copied) on every hook;
 * never blocks (co_hook_post). Other threads call it (co_bisector when a
 * bisect ends). NULL n is fine: no webhooks. */
void co_notify_post(co_notify_t *n, const char *body);

/* Stop the thread and the hooks (co_hook_destroy), close, free; NULL is
 * fine. */
/* The hooks' counters summed (co_hook.h); NULL n: all 0. */
void co_notify_counters(co_notify_t *n, co_hook_counters_t *out);

void co_notify_destroy(co_notify_t **n);

#endif
