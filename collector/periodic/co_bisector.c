/* co_bisector.c -- the thread that drives bisects (co_bisector.h). */
#include "co_bisector.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "co_bisect.h"
#include "co_every.h"
#include "co_jobreq.h"
#include "co_jobs.h"
#include "co_kinds.h"
#include "co_lease.h"
#include "co_log.h"
#include "co_reply.h"
#include "pw_clock.h"
#include "pw_json.h"
#include "pw_limits.h"
#include "vd_adaptive.h"
#include "vd_bisect.h"
#include "vd_verdict.h"

struct co_bisector {
    co_conn_t *conn;           /* the thread's own connection */
    co_jobs_t *jobs;           /* the jobs it asks for, on conn */
    co_notify_t *notify;       /* borrowed; NULL without webhooks */
    char owner[160];
    bool warned;               /* a database failure said, none since */
    co_every_t *every;         /* the thread: s_pass every second */
};

/* Most measured samples read at once (three commits on every host). */
#define S_SAMPLES_MAX 2000000
/* Passes of one bisect's search per look (judging a midpoint lets the
 * next one start at once). */
#define S_PASSES 16

/* The subject's measured wall times at the points $2 of the bisect's
 * complete runs of its benchmark, on every host: all of them, or ($4
 * not null) only those measured for the judgement of midpoint $4 at try
 * $5 (a group). A group is one job that runs the subject at each of its
 * points (--against, docs/suites.md "Against"): a point's arm is the
 * instance at its commit, or the subject itself when the run's revision
 * is that commit. */
static const char S_SAMPLES_SQL[] =
    "SELECT st.point, h.name, s.wall_us FROM bisect_steps st "
    "JOIN bisects b ON b.id = st.bisect "
    "JOIN runs r ON r.job_id = st.job_uuid AND r.status = 'complete' "
    "JOIN benchmarks bm ON bm.id = r.benchmark_id AND bm.suite = b.suite "
    "  AND bm.name = b.benchmark "
    "JOIN hosts h ON h.id = r.host_id "
    "JOIN LATERAL (SELECT idx FROM arms WHERE run = r.id AND (instance = "
    "  b.commits[st.point + 1] OR (instance IS NULL AND subject AND "
    "  r.revision = b.commits[st.point + 1])) ORDER BY idx LIMIT 1) sa ON "
    "  true "
    "JOIN samples s ON s.run = r.id AND s.arm = sa.idx AND s.kind = " CO_SQL_MEASURED " "
    "WHERE st.bisect = $1::bigint AND st.point = ANY($2::int[]) AND "
    "  ($4::int IS NULL OR (st.mid = $4::int AND st.try = $5::int)) "
    "LIMIT $3::int";
static const co_stmt_t s_st_samples = { "bisector.samples", S_SAMPLES_SQL, 5,
    PGRES_TUPLES_OK, false };

/* Each host's floor: its newest complete run's in this bisect. */
static const char S_FLOORS_SQL[] =
    "SELECT DISTINCT ON (h.name) h.name, f.floor_us, f.is_default "
    "FROM bisect_steps st JOIN runs r ON r.job_id = st.job_uuid AND "
    "  r.status = 'complete' JOIN hosts h ON h.id = r.host_id "
    "JOIN floors f ON f.run = r.id WHERE st.bisect = $1::bigint "
    "ORDER BY h.name, r.id DESC";
static const co_stmt_t s_st_floors = { "bisector.floors", S_FLOORS_SQL, 1,
    PGRES_TUPLES_OK, false };

/* The points of a group (the steps measured for the judgement of
 * midpoint $2 at try $3) that a host of the bisect has no complete run
 * of, with what the newest of the group's jobs of that point says of the
 * host (NULL: the job did not go to it) and of its run. */
static const char S_MISSING_SQL[] =
    "WITH g AS (SELECT * FROM bisect_steps WHERE bisect = $1::bigint AND "
    "  mid = $2::int AND try = $3::int), "
    "p AS (SELECT DISTINCT point FROM g) "
    "SELECT p.point, hn AS host, (SELECT jh.state || CASE WHEN jh.reason <> '' "
    "  THEN ': ' || jh.reason ELSE '' END FROM g JOIN jobs j ON j.job_uuid "
    "  = g.job_uuid JOIN job_hosts jh ON jh.job = j.id JOIN hosts ho ON "
    "  ho.id = jh.host_id WHERE g.point = p.point AND ho.name = hn ORDER BY "
    "  g.seq DESC LIMIT 1) AS job, (SELECT r.status || coalesce(': ' || "
    "  nullif(r.reason, ''), '') FROM g JOIN runs r ON r.job_id = "
    "  g.job_uuid JOIN hosts ho ON ho.id = r.host_id WHERE g.point = "
    "  p.point AND ho.name = hn ORDER BY r.id DESC LIMIT 1) AS run "
    "FROM bisects b, p, unnest(b.hosts) hn WHERE b.id = $1::bigint AND NOT "
    "  EXISTS (SELECT 1 FROM g JOIN runs r ON r.job_id = g.job_uuid AND "
    "  r.status = 'complete' JOIN hosts ho ON ho.id = r.host_id JOIN "
    "  benchmarks bm ON bm.id = r.benchmark_id AND bm.suite = b.suite AND "
    "  bm.name = b.benchmark WHERE g.point = p.point AND ho.name = hn) "
    "ORDER BY p.point, hn";
static const co_stmt_t s_st_missing = { "bisector.missing", S_MISSING_SQL, 3,
    PGRES_TUPLES_OK, false };

/* One host's samples of up to three points, and its floor. */
typedef struct {
    double *x[3];
    size_t n[3], cap[3];
    double floor_us;
    bool floor_default;
    bool have_floor;           /* a floors row was read */
} s_host_t;

/* The samples of points pts[0..npts) of one bisect, host by host (in the
 * order of its hosts list). */
typedef struct {
    const json_t *hosts;       /* borrowed: the bisect's names */
    size_t nhosts;
    int pts[3];
    size_t npts;
    s_host_t *h;
} s_samples_t;

/* ---- helpers ------------------------------------------------------ */

static void
s_db_warn(co_bisector_t *n, int64_t id, const char *why)
{
    char q[600];
    if (n->warned)
        return;
    n->warned = true;
    co_log(CO_LOG_WARN, "bisect_db", "bisect=%" PRId64 " why=%s", id,
           co_log_quote(q, sizeof q, why));
}

static json_int_t
s_int(const json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

static const char *
s_commit(const json_t *b, size_t point)
{
    const char *s = json_string_value(json_array_get(json_object_get(
        b, "commits"), point));
    return s ? s : "?";
}

/* Runs of a try: the bisect's, doubled with each retry. */
static int
s_runs(const json_t *b, int try_no)
{
    long r = (long)s_int(b, "runs");
    for (int k = 0; k < try_no && r < PW_RUNS_MAX; k++)
        r *= 2;
    return r > PW_RUNS_MAX ? PW_RUNS_MAX : (int)r;
}

static void
s_samples_free(s_samples_t *s)
{
    for (size_t i = 0; s->h && i < s->nhosts; i++)
        for (int k = 0; k < 3; k++)
            free(s->h[i].x[k]);
    free(s->h);
    s->h = NULL;
}

static bool
s_push(s_host_t *h, int slot, double v)
{
    if (h->n[slot] == h->cap[slot]) {
        size_t cap = h->cap[slot] ? 2 * h->cap[slot] : 64;
        double *x = realloc(h->x[slot], cap * sizeof *x);
        if (!x)
            return false;
        h->x[slot] = x;
        h->cap[slot] = cap;
    }
    h->x[slot][h->n[slot]++] = v;
    return true;
}

static long
s_host_index(const s_samples_t *s, const char *name)
{
    for (size_t i = 0; i < s->nhosts; i++)
        if (strcmp(json_string_value(json_array_get(s->hosts, i)), name)
            == 0)
            return (long)i;
    return -1;
}

/* A group: the steps measured for the judgement of midpoint mid (-1:
 * the ends) at one try. */
typedef struct {
    int mid;
    int try_no;
} s_grp_t;

/* Read the samples of npts points (at most 3) and the floors: all of
 * them (g NULL), or group g's only. False with c's status set. */
static bool
s_samples(co_reply_t *c, const json_t *b, const int *pts, size_t npts,
          const s_grp_t *g, s_samples_t *s)
{
    char id[24], arr[64], lim[16], gm[16], gt[16];
    memset(s, 0, sizeof *s);
    s->hosts = json_object_get(b, "hosts");
    s->nhosts = json_array_size(s->hosts);
    s->npts = npts;
    memcpy(s->pts, pts, npts * sizeof *pts);
    if (!(s->h = calloc(s->nhosts ? s->nhosts : 1, sizeof *s->h))) {
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
        return false;
    }
    snprintf(id, sizeof id, "%" JSON_INTEGER_FORMAT, s_int(b, "id"));
    size_t at = (size_t)snprintf(arr, sizeof arr, "{");
    for (size_t k = 0; k < npts; k++)
        at += (size_t)snprintf(arr + at, sizeof arr - at, "%s%d",
                               k ? "," : "", pts[k]);
    snprintf(arr + at, sizeof arr - at, "}");
    snprintf(lim, sizeof lim, "%d", S_SAMPLES_MAX + 1);
    snprintf(gm, sizeof gm, "%d", g ? g->mid : 0);
    snprintf(gt, sizeof gt, "%d", g ? g->try_no : 0);
    const char *p[] = { id, arr, lim, g ? gm : NULL, gt };
    PGresult *r = co_reply_run(c, &s_st_samples, p);
    if (r && PQntuples(r) > S_SAMPLES_MAX) {
        co_reply_fail(c, CO_REPLY_TOO_BIG, "more than %d samples of three "
                      "commits", S_SAMPLES_MAX);
        PQclear(r);
        r = NULL;
    }
    int i_point = co_col(r, "point"), i_name = co_col(r, "name"),
        i_wall = co_col(r, "wall_us");
    for (int i = 0; r && i < PQntuples(r); i++) {
        int pt = (int)co_val_i64(r, i, i_point);
        long h = s_host_index(s, co_val(r, i, i_name));
        for (size_t k = 0; h >= 0 && k < npts; k++)
            if (pts[k] == pt && !s_push(&s->h[h], (int)k,
                                        co_val_f64(r, i, i_wall))) {
                co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
                PQclear(r);
                return false;
            }
    }
    PQclear(r);
    if (!r || !(r = co_reply_run(c, &s_st_floors, p)))
        return false;
    i_name = co_col(r, "name");
    int i_floor = co_col(r, "floor_us"), i_default = co_col(r, "is_default");
    for (int i = 0; i < PQntuples(r); i++) {
        long h = s_host_index(s, co_val(r, i, i_name));
        if (h < 0)
            continue;
        s->h[h].floor_us = co_val_f64(r, i, i_floor);
        s->h[h].floor_default = co_val_bool(r, i, i_default);
        s->h[h].have_floor = true;
    }
    PQclear(r);
    return true;
}

static vd_params_t
s_params(const json_t *b, const s_host_t *h)
{
    vd_params_t p;
    vd_params_default(&p);
    p.parity = json_number_value(json_object_get(b, "parity"));
    if (h->have_floor) {        /* else the rule's default floor */
        p.floor_us = h->floor_us;
        p.floor_is_default = h->floor_default;
    }
    return p;
}

/* A verdict as the result shows it. */
static json_t *
s_verdict_json(const char *host, const vd_verdict_t *v)
{
    return json_pack("{s:s,s:s,s:f,s:f,s:b}", "host", host, "outcome",
                     vd_outcome_name(v->outcome), "ratio", v->ratio,
                     "tolerance", v->tolerance, "decisive",
                     vd_adaptive_decisive(v));
}

/* ---- writing ------------------------------------------------------ */

/* Measure the points pts[0 .. np) of group g in one job (rerun: on
 * hosts only, else on all): the subject at pts[head]'s commit, and at
 * each other point's as an --against instance, interleaved in the same
 * rounds; then a step per point, all naming that job. 0; 1 when the
 * bisect ended (no host can run it); -1 with c's status (tried again
 * next pass). */
static int s_finish(co_bisector_t *n, co_reply_t *c, const json_t *b,
                    const char *state, const char *reason, json_t *result);

static const co_stmt_t s_st_measure = { "bisector.measure",
    "INSERT INTO bisect_steps (bisect, seq, "
    "point, try, rerun, runs, job_uuid, created_at_us, mid) SELECT $1, "
    "(SELECT coalesce(max(seq), -1) FROM bisect_steps WHERE bisect = "
    "$1::bigint) + u.o, u.p, $3, $4, $5, $6, $7, $8 FROM "
    "unnest($2::int[]) WITH ORDINALITY AS u (p, o) RETURNING seq",
    8, PGRES_TUPLES_OK, false };

static int
s_measure(co_bisector_t *n, co_reply_t *c, const json_t *b,
          const size_t *pts, size_t np, size_t head, s_grp_t g, int rerun,
          const json_t *hosts)
{
    char err[512], tag[24], seq_args[4][24], now[24];
    int try_no = g.try_no;
    const char *commit = s_commit(b, pts[head]);
    snprintf(tag, sizeof tag, "%" JSON_INTEGER_FORMAT, s_int(b, "id"));
    json_t *vars = json_deep_copy(json_object_get(b, "vars"));
    json_t *against = json_array();
    json_object_set_new(vars, "commit", json_string(commit));
    for (size_t k = 0; k < np; k++)
        if (k != head)
            json_array_append_new(against, json_pack("{s:s,s:s}", "name",
                                  "commit", "value", s_commit(b, pts[k])));
    json_t *args = json_pack("{s:s,s:O,s:[s],s:i,s:o,s:o,s:{s:s},s:s,s:I}",
        "suite", co_reply_str(b, "suite"), "hosts", hosts ? hosts :
        json_object_get(b, "hosts"), "only", co_reply_str(b, "benchmark"), "runs",
        s_runs(b, try_no), "vars", vars, "against", against, "tags",
        "bisect", tag, "label", "bisect", "expire_us",
        (json_int_t)CO_BISECTOR_JOB_EXPIRE_US);
    json_t *reply = NULL;
    int rc = args ? co_jobs_create(c->jobs, co_reply_str(b, "requested_by"), args,
                                   pw_clock_unix_us(), &reply, err,
                                   sizeof err) : CO_JOBS_FAIL;
    json_decref(args);
    if (rc == CO_JOBS_BADARGS) {
        char why[700];
        snprintf(why, sizeof why, "commit %s could not be measured: %s",
                 commit, err);
        return s_finish(n, c, b, "failed", why, NULL) == 0 ? 1 : -1;
    }
    if (rc != CO_JOBS_OK) {
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "%s", err);
        return -1;
    }
    const char *job = co_reply_str(reply, "job");
    char points[80];
    size_t at = (size_t)snprintf(points, sizeof points, "{");
    for (size_t k = 0; k < np && at < sizeof points; k++)
        at += (size_t)snprintf(points + at, sizeof points - at, "%s%zu",
                               k ? "," : "", pts[k]);
    if (at < sizeof points)
        snprintf(points + at, sizeof points - at, "}");
    snprintf(seq_args[0], 24, "%d", try_no);
    snprintf(seq_args[1], 24, "%d", rerun);
    snprintf(seq_args[2], 24, "%d", s_runs(b, try_no));
    snprintf(seq_args[3], 24, "%d", g.mid);
    snprintf(now, sizeof now, "%" PRId64, pw_clock_unix_us());
    const char *p[] = { tag, points, seq_args[0], seq_args[1], seq_args[2],
                        job, now, seq_args[3] };
    /* The group's steps in one statement: all of them or none. */
    PGresult *r = co_reply_run(c, &s_st_measure, p);
    if (r)
        co_log(CO_LOG_INFO, "bisect_step", "bisect=%s commit=%s points=%zu "
               "mid=%d try=%d rerun=%d runs=%d job=%s", tag, commit, np,
               g.mid, try_no, rerun, s_runs(b, try_no), job);
    PQclear(r);
    json_decref(reply);
    return r ? 0 : -1;
}

static const co_stmt_t s_st_judged = { "bisector.judged",
    "UPDATE bisect_steps SET call = $3, reason "
    "= $4, hosts = $5::jsonb, judged_at_us = $6 WHERE bisect = "
    "$1::bigint AND seq = $2::int RETURNING seq",
    6, PGRES_TUPLES_OK, false };

/* Set the call of step seq. False with c's status. */
static bool
s_judged(co_reply_t *c, const json_t *b, json_int_t seq, const char *call,
         const char *reason, const json_t *hosts)
{
    char id[24], sq[24], now[24];
    snprintf(id, sizeof id, "%" JSON_INTEGER_FORMAT, s_int(b, "id"));
    snprintf(sq, sizeof sq, "%" JSON_INTEGER_FORMAT, seq);
    snprintf(now, sizeof now, "%" PRId64, pw_clock_unix_us());
    char *h = hosts ? pw_json_dumps(hosts) : NULL;
    const char *p[] = { id, sq, call, reason, h, now };
    PGresult *r = co_reply_run(c, &s_st_judged, p);
    free(h);
    PQclear(r);
    return r != NULL;
}

/* The notice of a bisect that ended (docs/collector.md "Notices"). */
static char *
s_notice(const json_t *b, const char *state, const char *reason,
         const json_t *result)
{
    char text[1024];
    int at = snprintf(text, sizeof text, "Parity: bisect #%"
                      JSON_INTEGER_FORMAT " of %s/%s ", s_int(b, "id"),
                      co_reply_str(b, "suite"), co_reply_str(b, "benchmark"));
    size_t i;
    json_t *cu;
    const json_t *cs = json_object_get(result, "culprits");
    if (strcmp(state, "done") != 0)
        snprintf(text + at, sizeof text - (size_t)at, "%s: %s", state,
                 reason);
    else
        json_array_foreach(cs, i, cu)
            if (at > 0 && (size_t)at < sizeof text)
                at += snprintf(text + at, sizeof text - (size_t)at,
                               "%s%s %s (x%.3f, after %s)", i ? "; " : "",
                               i ? "then" : json_array_size(cs) > 1 ?
                               "found a step spread over commits: first" :
                               "found the first bad commit:",
                               co_reply_str(cu, "commit"), json_number_value(
                               json_object_get(cu, "magnitude")),
                               co_reply_str(cu, "previous"));
    json_t *body = json_pack("{s:s,s:{s:s,s:{s:I,s:s,s:s,s:s,s:s,s:O,s:O}}}",
        "text", text, "parity", "kind", "bisect", "bisect", "id",
        s_int(b, "id"), "suite", co_reply_str(b, "suite"), "benchmark",
        co_reply_str(b, "benchmark"), "state", state, "reason", reason, "event",
        json_object_get(b, "event"), "result", result ? result :
        json_null());
    char *t = body ? pw_json_dumps(body) : NULL;
    json_decref(body);
    return t;
}

static const co_stmt_t s_st_finish = { "bisector.finish",
    "UPDATE bisects SET state = $2, reason = $3, "
    "result = $4::jsonb, ended_at_us = $5 WHERE id = $1::bigint AND "
    "state = 'running' RETURNING id",
    5, PGRES_TUPLES_OK, false };

static const co_stmt_t s_st_notice = { "bisector.notice",
    "INSERT INTO notices (kind, ref, "
    "body, created_at_us) VALUES ('bisect', $1, $2, $3) ON CONFLICT "
    "DO NOTHING RETURNING id",
    3, PGRES_TUPLES_OK, false };

/* End the bisect (state done or failed) with reason and result (taken;
 * may be NULL): written once, by the collector whose UPDATE finds it
 * running; that one logs and tells. 0, or -1 with c's status. */
static int
s_finish(co_bisector_t *n, co_reply_t *c, const json_t *b, const char *state,
         const char *reason, json_t *result)
{
    char id[24], now[24];
    snprintf(id, sizeof id, "%" JSON_INTEGER_FORMAT, s_int(b, "id"));
    snprintf(now, sizeof now, "%" PRId64, pw_clock_unix_us());
    char *res = result ? pw_json_dumps(result) : NULL;
    const char *p[] = { id, state, reason, res, now };
    PGresult *r = co_reply_run(c, &s_st_finish, p);
    free(res);
    if (r && PQntuples(r) == 1) {
        char q[600];
        co_log(strcmp(state, "done") == 0 ? CO_LOG_INFO : CO_LOG_WARN,
               strcmp(state, "done") == 0 ? "bisect_done" : "bisect_failed",
               "bisect=%s why=%s", id, co_log_quote(q, sizeof q, reason));
        char *body = s_notice(b, state, reason, result);
        const char *pn[] = { id, body ? body : "{}", now };
        PGresult *t = body ? co_reply_run(c, &s_st_notice, pn) : NULL;
        if (t && PQntuples(t) == 1)
            co_notify_post(n->notify, body);
        PQclear(t);
        free(body);
    }
    PQclear(r);
    json_decref(result);
    return r ? 0 : -1;
}

/* ---- the steps ----------------------------------------------------- */

/* The last step of point in group g (reruns included), NULL when none;
 * *reruns gets its highest rerun (-1 when none). */
static const json_t *
s_group(const json_t *b, s_grp_t g, size_t point, int *reruns)
{
    const json_t *last = NULL;
    size_t i;
    json_t *st;
    *reruns = -1;
    json_array_foreach(json_object_get(b, "steps"), i, st)
        if (s_int(st, "mid") == g.mid && s_int(st, "try") == g.try_no &&
            (size_t)s_int(st, "point") == point) {
            last = st;
            if (s_int(st, "rerun") > *reruns)
                *reruns = (int)s_int(st, "rerun");
        }
    return last;
}

/* The points of group g, in order, and which of them the group's job
 * runs as the subject (the others as its --against instances): the ends
 * (the bad end the subject), or the midpoint (the subject) between
 * low and high. The number of points. */
static size_t
s_group_points(const json_t *b, s_grp_t g, size_t low, size_t high,
               size_t pts[3], size_t *head)
{
    size_t last = json_array_size(json_object_get(b, "commits")) - 1;
    if (g.mid < 0) {
        pts[0] = 0;
        pts[1] = last;
        *head = 1;
        return 2;
    }
    pts[0] = low;
    pts[1] = (size_t)g.mid;
    pts[2] = high;
    *head = 1;
    return 3;
}

/* Measure group g: the ends, or the midpoint beside its interval's ends,
 * in one job whose rounds interleave them, so that the judgement reads
 * samples taken side by side (a machine drifts between jobs minutes
 * apart). A retry is the same job with twice the runs. 1, or -1 with
 * c's status. */
static int
s_measure_group(co_bisector_t *n, co_reply_t *c, const json_t *b, s_grp_t g,
                size_t low, size_t high)
{
    size_t pts[3], head;
    size_t np = s_group_points(b, g, low, high, pts, &head);
    int rc = s_measure(n, c, b, pts, np, head, g, 0, NULL);
    return rc != 0 ? rc : 1;
}

/* The points of group g as its first job measured them, and its
 * subject's place among them: 0 when the group has no step. */
static size_t
s_group_steps(const json_t *b, s_grp_t g, size_t pts[3], size_t *head)
{
    size_t i, np = 0;
    json_t *st;
    *head = 0;
    json_array_foreach(json_object_get(b, "steps"), i, st)
        if (s_int(st, "mid") == g.mid && s_int(st, "try") == g.try_no &&
            s_int(st, "rerun") == 0 && np < 3)
            pts[np++] = (size_t)s_int(st, "point");
    size_t want = g.mid < 0 ? np - 1 : (size_t)g.mid;
    for (size_t k = 0; k < np; k++)
        if (pts[k] == want)
            *head = k;
    return np;
}

/* Every host completed group g's job (every point of it): 0. Hosts that
 * did not run the group's job again, on those hosts alone (1), or, the
 * rerun spent, the bisect fails naming the first of them (1). -1 with
 * c's status. */
static int
s_complete(co_bisector_t *n, co_reply_t *c, const json_t *b, s_grp_t g)
{
    char id[24], gm[24], gt[24];
    snprintf(id, sizeof id, "%" JSON_INTEGER_FORMAT, s_int(b, "id"));
    snprintf(gm, sizeof gm, "%d", g.mid);
    snprintf(gt, sizeof gt, "%d", g.try_no);
    const char *p[] = { id, gm, gt };
    PGresult *r = co_reply_run(c, &s_st_missing, p);
    if (!r)
        return -1;
    size_t pts[3], head;
    size_t np = s_group_steps(b, g, pts, &head);
    int rc = 0, reruns = -1;
    if (PQntuples(r) > 0 && np > 0)
        s_group(b, g, pts[head], &reruns);
    if (PQntuples(r) > 0 && np > 0 && reruns >= CO_BISECTOR_RERUNS) {
        char why[1200], beside[300] = "";
        size_t at = 0;
        for (size_t k = 0; k < np && at < sizeof beside; k++)
            if (k != head)
                at += (size_t)snprintf(beside + at, sizeof beside - at,
                                       "%s%s", at ? ", " : "",
                                       s_commit(b, pts[k]));
        const char *job = co_val_or_null(r, 0, co_col(r, "job")),
                   *run = co_val_or_null(r, 0, co_col(r, "run"));
        snprintf(why, sizeof why, "host %s did not complete commit %s "
                 "(beside %.200s), twice (its job: %.300s%s%.300s)",
                 co_val(r, 0, co_col(r, "host")), s_commit(b, pts[head]),
                 beside, job ? job : "not given the job (it does not list "
                 "the suite now)", run ? "; its run: " : "", run ? run : "");
        rc = s_finish(n, c, b, "failed", why, NULL) < 0 ? -1 : 1;
    } else if (PQntuples(r) > 0 && np > 0) {
        /* The hosts without a run of some point (rows are by point). */
        json_t *hosts = json_array();
        int i_host = co_col(r, "host");
        for (int i = 0; hosts && i < PQntuples(r); i++) {
            bool seen = false;
            for (size_t k = 0; k < json_array_size(hosts); k++)
                seen |= strcmp(json_string_value(json_array_get(hosts, k)),
                               co_val(r, i, i_host)) == 0;
            if (!seen)
                json_array_append_new(hosts,
                                      json_string(co_val(r, i, i_host)));
        }
        rc = s_measure(n, c, b, pts, np, head, g, reruns + 1, hosts) < 0
             ? -1 : 1;
        json_decref(hosts);
    }
    PQclear(r);
    return rc;
}

/* Judge the ends: go on (0) when a host sees a decisive step; else
 * measure them again, or fail (1). -1 with c's status. */
static int
s_ends(co_bisector_t *n, co_reply_t *c, const json_t *b, int try_no)
{
    size_t last = json_array_size(json_object_get(b, "commits")) - 1;
    int pts[2] = { 0, (int)last }, rc = -1;
    s_grp_t g = { -1, try_no };
    s_samples_t s;
    /* This try's measurements alone: both ends again, side by side. */
    if (!s_samples(c, b, pts, 2, &g, &s)) {
        s_samples_free(&s);
        return -1;
    }
    json_t *hosts = json_array();
    bool step = false, unsure = false;
    char said[600] = "";
    size_t at = 0;
    for (size_t i = 0; i < s.nhosts; i++) {
        const char *name = json_string_value(json_array_get(s.hosts, i));
        vd_params_t p = s_params(b, &s.h[i]);
        vd_verdict_t v;
        char e[160];
        if (vd_compare(s.h[i].x[1], s.h[i].n[1], s.h[i].x[0], s.h[i].n[0],
                       &p, &v, e, sizeof e) != VD_OK) {
            unsure = true;
            json_array_append_new(hosts, json_pack("{s:s,s:s}", "host", name,
                                                   "error", e));
            continue;
        }
        bool decisive = vd_adaptive_decisive(&v);
        step |= decisive && v.outcome != VD_PARITY;
        unsure |= !decisive;
        json_array_append_new(hosts, s_verdict_json(name, &v));
        if (at < sizeof said)
            at += (size_t)snprintf(said + at, sizeof said - at, "%s%s x%.3f "
                                   "%s (tolerance %.1f %%)", i ? ", " : "",
                                   name, v.ratio, vd_outcome_name(v.outcome),
                                   100 * v.tolerance);
    }
    s_samples_free(&s);
    int reruns;
    const json_t *lo = s_group(b, g, 0, &reruns);
    const json_t *hi = s_group(b, g, last, &reruns);
    const char *call = step ? "ends" : "ends again";
    bool again = !step && unsure && try_no + 1 < VD_BISECT_TRIES_MAX;
    if ((step || again) &&
        (!s_judged(c, b, s_int(lo, "seq"), call, said, hosts) ||
         !s_judged(c, b, s_int(hi, "seq"), call, said, hosts)))
        rc = -1;
    else if (step)
        rc = 0;
    else if (again)
        rc = s_measure_group(n, c, b, (s_grp_t){ -1, try_no + 1 }, 0, last);
    else {
        char why[900];
        snprintf(why, sizeof why, "no host sees a step between the good end "
                 "%s and the bad end %s%s: %s", s_commit(b, 0),
                 s_commit(b, last), unsure ? " after " "more runs" : "", said);
        rc = s_finish(n, c, b, "failed", why, NULL) < 0 ? -1 : 1;
    }
    json_decref(hosts);
    return rc;
}

/* Judge group g's midpoint against (low, high) on every host, and store
 * the fleet's call on step seq, from the group's own job alone: the
 * three commits measured side by side, so that a machine drifting
 * between jobs minutes apart is never read as a step. 0, or -1 with c's
 * status. */
static int
s_judge(co_reply_t *c, const json_t *b, s_grp_t g, size_t low, size_t high,
        json_int_t seq)
{
    size_t mid = (size_t)g.mid;
    int pts[3] = { (int)low, (int)high, (int)mid };
    s_samples_t s;
    if (!s_samples(c, b, pts, 3, &g, &s)) {
        s_samples_free(&s);
        return -1;
    }
    vd_bisect_host_t *hv = calloc(s.nhosts ? s.nhosts : 1, sizeof *hv);
    json_t *hosts = json_array();
    int rc = -1;
    if (!hv || !hosts) {
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < s.nhosts; i++) {
        const s_host_t *h = &s.h[i];
        vd_params_t p = s_params(b, h);
        char e[160];
        static const double none = 0;
        vd_bisect_judge(h->n[0] ? h->x[0] : &none, h->n[0],
                        h->n[1] ? h->x[1] : &none, h->n[1],
                        h->n[2] ? h->x[2] : &none, h->n[2], &p, &hv[i], e,
                        sizeof e);
        json_t *o = json_pack("{s:s,s:s,s:s}", "host", json_string_value(
            json_array_get(s.hosts, i)), "call", vd_bisect_call_name(
            hv[i].call), "reason", hv[i].reason);
        if (hv[i].have) {
            json_object_set_new(o, "vs_good", s_verdict_json("", &hv[i].vs_low));
            json_object_set_new(o, "vs_bad", s_verdict_json("", &hv[i].vs_high));
            json_object_del(json_object_get(o, "vs_good"), "host");
            json_object_del(json_object_get(o, "vs_bad"), "host");
        }
        json_array_append_new(hosts, o);
    }
    char reason[512];
    vd_bisect_call_t call = vd_bisect_fleet(hv, s.nhosts, reason,
                                            sizeof reason);
    co_log(CO_LOG_INFO, "bisect_judged", "bisect=%" JSON_INTEGER_FORMAT
           " commit=%s call=\"%s\"", s_int(b, "id"), s_commit(b, mid),
           vd_bisect_call_name(call));
    rc = s_judged(c, b, seq, vd_bisect_call_name(call), reason, hosts) ? 0
                                                                      : -1;
done:
    free(hv);
    json_decref(hosts);
    s_samples_free(&s);
    return rc;
}

/* The newest group whose job measured both points a and b side by side
 * (the judgement that made them an interval's ends, or the ends' check):
 * true with *g. */
static bool
s_pair_group(const json_t *b, size_t a, size_t bb, s_grp_t *g)
{
    size_t i, k;
    json_t *st, *o;
    bool found = false;
    json_array_foreach(json_object_get(b, "steps"), i, st) {
        if ((size_t)s_int(st, "point") != a)
            continue;
        json_array_foreach(json_object_get(b, "steps"), k, o)
            if ((size_t)s_int(o, "point") == bb &&
                s_int(o, "mid") == s_int(st, "mid") &&
                s_int(o, "try") == s_int(st, "try") &&
                strcmp(co_reply_str(o, "job"), co_reply_str(st, "job")) == 0) {
                *g = (s_grp_t){ (int)s_int(st, "mid"), (int)s_int(st, "try") };
                found = true;
            }
    }
    return found;
}

/* The result of a search that found its culprits: each with its
 * verdict against the commit before it on every host, from the newest
 * job that ran the two side by side. NULL with c's status. */
static json_t *
s_result(co_reply_t *c, const json_t *b, const vd_bisect_t *v)
{
    size_t cul[VD_BISECT_CULPRITS_MAX];
    size_t nc = vd_bisect_culprits(v, cul, VD_BISECT_CULPRITS_MAX);
    json_t *list = json_array();
    for (size_t k = 0; list && k < nc; k++) {
        int pts[2] = { (int)cul[k] - 1, (int)cul[k] };
        s_samples_t s;
        s_grp_t g;
        bool paired = s_pair_group(b, cul[k] - 1, cul[k], &g);
        if (!s_samples(c, b, pts, 2, paired ? &g : NULL, &s)) {
            s_samples_free(&s);
            json_decref(list);
            return NULL;
        }
        json_t *hosts = json_array();
        double ratios[CO_JOBREQ_MAX_HOSTS];
        size_t nr = 0;
        for (size_t i = 0; i < s.nhosts; i++) {
            vd_params_t p = s_params(b, &s.h[i]);
            vd_verdict_t vv;
            char e[160];
            if (vd_compare(s.h[i].x[1], s.h[i].n[1], s.h[i].x[0],
                           s.h[i].n[0], &p, &vv, e, sizeof e) != VD_OK)
                continue;
            json_array_append_new(hosts, s_verdict_json(json_string_value(
                json_array_get(s.hosts, i)), &vv));
            if (vv.outcome != VD_PARITY && nr < CO_JOBREQ_MAX_HOSTS)
                ratios[nr++] = vv.ratio;
        }
        s_samples_free(&s);
        /* The magnitude: the median of the hosts that see the step. */
        for (size_t i = 1; i < nr; i++)
            for (size_t j = i; j > 0 && ratios[j - 1] > ratios[j]; j--) {
                double t = ratios[j];
                ratios[j] = ratios[j - 1];
                ratios[j - 1] = t;
            }
        double mag = nr == 0 ? NAN : nr % 2 ? ratios[nr / 2] :
                     (ratios[nr / 2 - 1] + ratios[nr / 2]) / 2;
        json_array_append_new(list, json_pack("{s:s,s:s,s:I,s:o,s:I,s:o}",
            "commit", s_commit(b, cul[k]), "previous", s_commit(b,
            cul[k] - 1), "index", (json_int_t)cul[k], "magnitude", isnan(mag)
            ? json_null() : json_real(mag), "hosts_with_step",
            (json_int_t)nr, "hosts", hosts));
    }
    int64_t started = (int64_t)s_int(b, "started_at_us");
    /* Jobs, not steps: a job measures each of its group's points. */
    json_t *jobs = json_object();
    size_t i;
    json_t *st;
    json_array_foreach(json_object_get(b, "steps"), i, st)
        json_object_set_new(jobs, co_reply_str(st, "job"), json_true());
    json_t *res = list && jobs ? json_pack(
        "{s:o,s:b,s:I,s:I,s:I,s:I}", "culprits", list, "spread", nc > 1,
        "rounds", (json_int_t)vd_bisect_rounds(v), "retries",
        (json_int_t)vd_bisect_retries(v), "jobs",
        (json_int_t)json_object_size(jobs), "wall_us",
        (json_int_t)(pw_clock_unix_us() - started)) : NULL;
    if (!jobs)
        json_decref(list);   /* json_pack took it otherwise */
    json_decref(jobs);
    return res;
}

/* The search replayed (co_bisect_replay); a replay that disagrees with
 * the steps fails the bisect (*ended). NULL with c's status. */
static vd_bisect_t *
s_replay(co_bisector_t *n, co_reply_t *c, const json_t *b, bool *ended)
{
    char err[256];
    vd_bisect_t *v = co_bisect_replay(b, err, sizeof err);
    if (!v)
        *ended = s_finish(n, c, b, "failed", err, NULL) == 0;
    return v;
}

/* One move of a running bisect whose jobs have all ended. 0 when it
 * moved on and may move again now (a call stored), 1 when it waits for
 * a job or ended, -1 with c's status. */
static int
s_move(co_bisector_t *n, co_reply_t *c, const json_t *b)
{
    size_t last = json_array_size(json_object_get(b, "commits")) - 1;
    size_t i, mid, low, high;
    unsigned t;
    json_t *st;
    int ends_try = -1, reruns, rc;
    bool ends = false, ended = false;
    json_array_foreach(json_object_get(b, "steps"), i, st) {
        if (s_int(st, "mid") < 0 && s_int(st, "try") > ends_try)
            ends_try = (int)s_int(st, "try");
        ends |= strcmp(co_reply_str(st, "call"), "ends") == 0;
    }
    if (ends_try < 0)
        return s_measure_group(n, c, b, (s_grp_t){ -1, 0 }, 0, last);
    if (!ends)
        return (rc = s_complete(n, c, b, (s_grp_t){ -1, ends_try })) != 0
               ? rc : s_ends(n, c, b, ends_try);
    vd_bisect_t *v = s_replay(n, c, b, &ended);
    if (!v)
        return ended ? 1 : -1;
    const char *why;
    if (vd_bisect_failed(v, &why))
        rc = s_finish(n, c, b, "failed", why, NULL) < 0 ? -1 : 1;
    else if (!vd_bisect_next(v, &mid, &low, &high, &t)) {
        json_t *res = s_result(c, b, v);
        rc = !res ? -1 : s_finish(n, c, b, "done", "", res) < 0 ? -1 : 1;
    } else {
        s_grp_t g = { (int)mid, (int)t };
        if (!(st = (json_t *)s_group(b, g, mid, &reruns)))
            rc = s_measure_group(n, c, b, g, low, high);
        else if ((rc = s_complete(n, c, b, g)) == 0)
            rc = s_judge(c, b, g, low, high, s_int(st, "seq"));
    }
    vd_bisect_destroy(&v);
    return rc;
}

/* ---- the pass ----------------------------------------------------- */

/* A queued bisect starts when no older live bisect of its suite shares a
 * host. False while it waits, or with c's status. */
static bool
s_start(co_reply_t *c, int64_t id)
{
    static const co_stmt_t start = { "bisector.start",
        "UPDATE bisects b SET state = 'running', started_at_us = $2 WHERE "
        "id = $1::bigint AND state = 'queued' AND NOT EXISTS (SELECT 1 FROM "
        "bisects o WHERE o.id < b.id AND o.state IN ('queued', 'running') "
        "AND o.suite = b.suite AND o.hosts && b.hosts) RETURNING id",
        2, PGRES_TUPLES_OK, false };
    PGresult *r = co_bisect_q_now(c, &start, id);
    bool started = r && PQntuples(r) == 1;
    if (started)
        co_log(CO_LOG_INFO, "bisect_started", "bisect=%" PRId64, id);
    PQclear(r);
    return started;
}

/* Move bisect id on as far as it goes now. False when the database
 * failed (said). */
static bool
s_advance(co_bisector_t *n, int64_t id)
{
    char err[1024];
    co_reply_t c = co_reply_begin(n->conn, n->jobs, err, sizeof err);
    for (int pass = 0; pass < S_PASSES; pass++) {
        json_t *b = co_bisect_load(&c, id);
        if (b && strcmp(co_reply_str(b, "state"), "queued") == 0 &&
            s_start(&c, id)) {
            json_decref(b);
            b = co_bisect_load(&c, id);
        }
        if (!b || strcmp(co_reply_str(b, "state"), "running") != 0) {
            json_decref(b);
            break;
        }
        size_t i;
        json_t *st;
        bool waiting = false;
        json_array_foreach(json_object_get(b, "steps"), i, st)
            waiting |= json_is_null(json_object_get(st, "call")) &&
                       strcmp(co_reply_str(st, "job_state"), "active") == 0;
        int rc = waiting ? 1 : s_move(n, &c, b);
        json_decref(b);
        if (rc != 0)
            break;
    }
    if (c.status != CO_REPLY_OK)
        s_db_warn(n, id, err);
    return c.status == CO_REPLY_OK;
}

/* Take (or keep) the lease of every live bisect no other collector
 * holds, and move each on (co_every). */
static void
s_pass(void *arg, co_every_t *e)
{
    co_bisector_t *n = arg;
    char err[512];
    co_reply_t c = co_reply_begin(n->conn, n->jobs, err, sizeof err);
    PGresult *r = co_lease_take(&c, "bisects", n->owner);
    if (!r) {
        s_db_warn(n, 0, err);
        return;
    }
    size_t nb = (size_t)PQntuples(r);
    int64_t *ids = calloc(nb ? nb : 1, sizeof *ids);
    int i_id = co_col(r, "id");
    for (size_t i = 0; ids && i < nb; i++)
        ids[i] = co_val_i64(r, (int)i, i_id);
    PQclear(r);
    /* Oldest first (co_lease_take's order): an older bisect starts
     * before a younger one that shares its hosts is looked at. */
    bool ok = ids != NULL;
    for (size_t i = 0; ids && i < nb && !co_every_stopping(e); i++)
        ok &= s_advance(n, ids[i]);
    if (ok)
        n->warned = false;      /* said again at the next failure */
    free(ids);
}

co_bisector_t *
co_bisector_new(const char *conninfo, const char *owner,
                co_notify_t *notify, char *err, size_t errlen)
{
    /* Its own connection, with the detection thread's statement
     * timeout: a pass must never hang on one query. */
    co_conn_opts_t co = { .conninfo = conninfo,
                          .statement_timeout_ms = 10000 };
    co_bisector_t *n = calloc(1, sizeof *n);
    if (n && (n->conn = co_conn_new(&co))) {
        co_jobs_opts_t o = { .conn = n->conn };
        n->jobs = co_jobs_new(&o);
    }
    if (!n || !n->jobs) {
        if (n)
            co_conn_destroy(&n->conn);
        snprintf(err, errlen, "co_bisector: out of memory");
        free(n);
        return NULL;
    }
    n->notify = notify;
    co_lease_owner(n->owner, sizeof n->owner, owner);
    if (!(n->every = co_every_new("bisector", CO_BISECTOR_POLL_MS, s_pass, n,
                                  err, errlen)))
        co_bisector_destroy(&n);
    return n;
}

void
co_bisector_destroy(co_bisector_t **np)
{
    co_bisector_t *n = np ? *np : NULL;
    if (!n)
        return;
    *np = NULL;
    if (n->every) {
        co_every_destroy(&n->every);
        /* Give the leases back: a restarted collector, or another one,
         * carries on at once rather than after CO_LEASE_US. */
        char err[256];
        co_reply_t c = co_reply_begin(n->conn, n->jobs, err, sizeof err);
        co_lease_give_back(&c, "bisects", n->owner);
    }
    co_jobs_destroy(&n->jobs);
    co_conn_destroy(&n->conn);
    free(n);
}
