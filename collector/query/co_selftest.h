/* co_selftest.h -- a host's last A/A self-test, read from what the
 * collector already stores (docs/verdict.md "The A/A self-test").
 *
 * `parity selftest` is a job of the built-in suite parity-selftest
 * (proto/pw_limits.h): every benchmark compares one command with itself,
 * so any verdict other than parity is a false verdict. Nothing extra is
 * written: the result is read from the job's stored runs and verdicts,
 * so it cannot disagree with them, needs no migration, and is the same
 * on every collector of one database. A host's last self-test is its
 * newest job of that suite whose row ended `done`; among its complete
 * runs, `trials` counts the wall-time verdicts (a run whose verdict is
 * an error counts in neither), `false_verdicts` those other than
 * parity, `floor_us` is the median floor they used and `at_us` when the
 * host's row ended; `metrics` has the trials and false verdicts of each
 * metric (the suite judges wall, cpu and peak_rss; an older self-test
 * has wall time's alone).
 *
 * CO_SELFTEST_SQL(HOST) is a scalar subquery: the JSON text {"job",
 * "at_us", "trials", "false_verdicts", "floor_us", "metrics"} of host id
 * HOST (an SQL expression, e.g. "h.id"), or NULL when the host has none.
 * It uses the indexes job_hosts_host and runs_job: one host costs a few
 * index reads, whatever the fleet has stored.
 *
 * Nothing here prints or exits.
 */
#ifndef CO_SELFTEST_H
#define CO_SELFTEST_H

#include <jansson.h>

#include "pw_limits.h"

/* One metric's trials and false verdicts, as a JSON object's text. */
#define CO_SELFTEST_METRIC_SQL(M) \
    " json_build_object('trials', count(v.outcome) FILTER (WHERE v.metric" \
    " = '" M "'), 'false_verdicts', count(v.outcome) FILTER (WHERE" \
    " v.metric = '" M "' AND v.outcome <> 'parity'))"

#define CO_SELFTEST_SQL(HOST) \
    "(SELECT json_build_object('job', st.job_uuid, 'at_us', st.ended_at_us," \
    " 'trials', count(v.outcome) FILTER (WHERE v.metric = 'wall')," \
    " 'false_verdicts', count(v.outcome) FILTER (WHERE v.metric = 'wall'" \
    " AND v.outcome <> 'parity'), 'floor_us', percentile_cont(0.5)" \
    " WITHIN GROUP (ORDER BY v.floor_us) FILTER (WHERE v.metric = 'wall')," \
    " 'metrics', json_build_object('wall'," CO_SELFTEST_METRIC_SQL("wall") \
    ", 'cpu'," CO_SELFTEST_METRIC_SQL("cpu") ", 'peak_rss'," \
    CO_SELFTEST_METRIC_SQL("peak_rss") "))::text FROM (SELECT j.job_uuid," \
    " jh.ended_at_us FROM job_hosts jh JOIN jobs j ON j.id = jh.job WHERE" \
    " jh.host_id = " HOST " AND jh.state = 'done' AND j.suite = '" \
    PW_SELFTEST_SUITE "' ORDER BY jh.ended_at_us DESC NULLS LAST," \
    " jh.job DESC LIMIT 1) st LEFT JOIN runs r ON r.job_id = st.job_uuid" \
    " AND r.host_id = " HOST " AND r.status = 'complete' LEFT JOIN" \
    " verdicts v ON v.run = r.id AND v.outcome IS NOT NULL" \
    " GROUP BY st.job_uuid, st.ended_at_us)"

/* The "selftest" object of a host from CO_SELFTEST_SQL's text (NULL or
 * empty: none): {"job", "at_us", "trials", "false_verdicts", "rate",
 * "floor_us"}, rate false_verdicts / trials (null without trials).
 * A new reference; json null when there is none (or the text is not
 * JSON, which the query never gives). */
json_t *co_selftest_json(const char *text);

/* When selftest (co_selftest_json's) has a rate above
 * PW_SELFTEST_WARN_RATE, append {"code": "selftest", "message"} to the
 * array warnings; 0, or -1 out of memory. */
int co_selftest_warn(json_t *warnings, const json_t *selftest);

#endif
