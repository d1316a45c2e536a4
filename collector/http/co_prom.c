/* co_prom.c -- /metrics in Prometheus's text format (co_prom.h). */
#include "co_prom.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "co_writer.h"
#include "pw_wire.h"

static void
s_head(pw_buf_t *b, const char *name, const char *type, const char *help)
{
    pw_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
s_one(pw_buf_t *b, const char *name, const char *type, const char *help,
      double v)
{
    s_head(b, name, type, help);
    pw_buf_printf(b, "%s %.17g\n", name, v);
}

static void
s_counter(pw_buf_t *b, const char *name, const char *help, uint64_t v)
{
    s_head(b, name, "counter", help);
    pw_buf_printf(b, "%s %" PRIu64 "\n", name, v);
}

static void
s_hist(pw_buf_t *b, const char *name, const char *help, const co_hist_t *h)
{
    s_head(b, name, "histogram", help);
    for (int i = 0; i < CO_HIST_BUCKETS; i++)
        pw_buf_printf(b, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name,
                      co_hist_bounds_s[i], co_hist_cumulative(h, i));
    pw_buf_printf(b, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, h->count);
    pw_buf_printf(b, "%s_sum %.17g\n%s_count %" PRIu64 "\n", name, h->sum_s,
                  name, h->count);
}

/* Frames by Envelope body, one series per kind with a name. */
static void
s_kinds(pw_buf_t *b, const char *name, const char *help,
        const uint64_t kinds[32])
{
    s_head(b, name, "counter", help);
    for (int k = 0; k < 32; k++) {
        const char *kind = k ? pw_wire_body_name((Parity__Envelope__BodyCase)k)
                             : "unknown";
        if (kind && strcmp(kind, "?") != 0 && (k || kinds[k]))
            pw_buf_printf(b, "%s{kind=\"%s\"} %" PRIu64 "\n", name, kind,
                          kinds[k]);
    }
}

static void
s_loop(pw_buf_t *b, const co_stats_snap_t *s)
{
    const co_counters_t *c = &s->total;
    s_one(b, "parity_peers", "gauge", "Peers the network loop holds: "
          "agents and clients.", (double)s->peers);
    s_one(b, "parity_peers_online", "gauge", "Agents connected that said "
          "Hello.", (double)s->peers_online);
    s_kinds(b, "parity_messages_received_total", "Frames received from "
            "authenticated peers, by message kind.", c->kinds);
    s_kinds(b, "parity_messages_sent_total", "Frames sent to peers, by "
            "message kind.", c->kinds_out);
    s_head(b, "parity_messages_bad_total", "counter", "Frames dropped as "
           "malformed, by reason.");
    for (int k = 1; k < PW_WIRE_ECOUNT; k++)
        pw_buf_printf(b, "parity_messages_bad_total{reason=\"%s\"} %" PRIu64
                      "\n", pw_wire_err_name(-k), c->bad[k]);
    s_counter(b, "parity_acks_total", "Data messages stored and acked.",
              c->acked);
    s_counter(b, "parity_duplicates_total", "Data messages acked again, "
              "already stored.", c->duplicates);
    s_counter(b, "parity_deferred_total", "Data messages not acked yet: "
              "the database was down or a dependency missing.", c->deferred);
    s_counter(b, "parity_sends_dropped_total", "Replies dropped: the peer's "
              "queue was full.", c->sends_dropped);
    s_counter(b, "parity_samples_stored_total", "Samples stored.",
              c->samples_stored);
    s_counter(b, "parity_verdicts_stored_total", "Verdicts stored.",
              c->verdicts_stored);
    s_counter(b, "parity_requests_total", "Client requests received over "
              "ZeroMQ.", c->requests);
    s_counter(b, "parity_requests_busy_total", "Client requests answered "
              "busy: the query queue was full.", c->busy);
    s_one(b, "parity_store_queue_frames", "gauge", "Frames waiting for the "
          "writer.", (double)s->store_items);
    s_one(b, "parity_store_queue_bytes", "gauge", "Bytes of frames waiting "
          "for the writer.", (double)s->store_bytes);
    s_one(b, "parity_writer_lag_seconds", "gauge", "How long the oldest "
          "frame waiting for the writer has waited.",
          (double)s->writer_lag_us / 1e6);
    s_one(b, "parity_query_queue_requests", "gauge", "Client requests "
          "waiting for a query worker.", (double)s->query_waiting);
    s_one(b, "parity_query_workers_busy", "gauge", "Query workers "
          "answering a request.", (double)s->query_busy);
    s_hist(b, "parity_ack_latency_seconds", "From a frame read to its "
           "message stored and acked.", &s->ack);
    s_hist(b, "parity_loop_pass_seconds", "One working pass of the "
           "network loop: the gap an agent's frame may wait.", &s->loop_gap);
    s_hist(b, "parity_query_latency_seconds", "From a client request read "
           "to its answer.", &s->query);
}

static void
s_store(pw_buf_t *b, const co_stats_snap_t *s)
{
    const co_counters_t *c = &s->total;
    s_one(b, "parity_database_up", "gauge", "1 while the writer's "
          "PostgreSQL connection is up.", s->db_up ? 1 : 0);
    s_counter(b, "parity_database_failures_total", "Database statements "
              "or connections that failed.", c->db_failures);
    s_counter(b, "parity_database_reconnects_total", "Reconnections to "
              "the database.", c->db_reconnects);
    s_counter(b, "parity_detect_runs_total", "Runs looked at for change "
              "points.", c->detect_runs);
    s_counter(b, "parity_change_points_found_total", "Change points "
              "stored.", c->change_points);
    s_counter(b, "parity_detect_failed_total", "Runs whose detection "
              "failed.", c->detect_failed);
    s_counter(b, "parity_notices_queued_total", "Webhook notices queued.",
              c->notices_queued);
    s_counter(b, "parity_notices_delivered_total", "Webhook notices "
              "answered 2xx.", c->notices_delivered);
    s_counter(b, "parity_notices_failed_total", "Webhook notices refused "
              "by the receiver (a 4xx).", c->notices_refused);
    s_counter(b, "parity_notices_dropped_total", "Webhook notices not "
              "queued: the queue was full.", c->notices_dropped);
    s_head(b, "parity_writer_step_seconds_total", "counter", "The writer's "
           "time, by step.");
    for (int k = 0; k < CO_STEP_COUNT; k++)
        pw_buf_printf(b, "parity_writer_step_seconds_total{step=\"%s\"} "
                      "%.17g\n", co_step_name((co_step_t)k),
                      (double)c->step_us[k] / 1e6);
}

int
co_prom_render(pw_buf_t *b, const co_stats_snap_t *s,
               const co_prom_http_t *h, const char *version)
{
    s_head(b, "parity_collector_info", "gauge", "The collector's version.");
    pw_buf_printf(b, "parity_collector_info{version=\"%s\"} 1\n", version);
    s_one(b, "parity_stats_published_seconds", "gauge", "When the network "
          "loop last published these figures (unix time).",
          (double)s->published_us / 1e6);
    s_loop(b, s);
    s_store(b, s);
    s_head(b, "parity_http_requests_total", "counter", "HTTP requests "
           "answered, by status.");
    bool any = false;
    for (int i = 100; i < CO_PROM_STATUS_MAX; i++)
        if (h->requests[i] || (!any && i == 200)) {
            pw_buf_printf(b, "parity_http_requests_total{code=\"%d\"} %"
                          PRIu64 "\n", i, h->requests[i]);
            any = true;
        }
    s_counter(b, "parity_http_connections_total", "HTTP connections "
              "accepted.", h->connections);
    s_one(b, "parity_http_connections_open", "gauge", "HTTP connections "
          "open now.", (double)h->open);
    return pw_buf_status(b);
}
