/* detect_bench.c -- what incremental change-point detection costs per
 * stored run (the target: "adds <= 5 ms to a RunEnd"), on a loaded
 * database (tests/bench/changes_bench.sh loads one).
 *
 *   detect-bench CONNINFO [--runs N] [--seed S] [--between CMD]
 *
 * What a RunEnd costs: the detection thread (collector/detect/co_detect.h)
 * calls co_detect_run on the run just stored, the newest of its series,
 * whose window (detect_windows, migration 015) its previous run left.
 * So for N (default 500, at most 100000) series drawn at random
 * (setseed(S)), each series' newest two complete runs:
 *
 *   1. rebuild: co_detect_run on the second newest, with no kept window
 *      (the table starts empty): the series' window read run by run and
 *      kept. This is the cost of a series' first RunEnd after an upgrade,
 *      or after a run arrived out of order or was dropped from the queue;
 *   2. CMD, when given, through sh (changes_bench.sh restarts PostgreSQL
 *      there, so that step 3 reads from the OS's page cache, not from
 *      shared buffers), then a new connection;
 *   3. RunEnd: co_detect_run on the newest run, timed; beside each call
 *      the named peer on the same run (which of the two goes first
 *      alternates): the window read run by run (the same SELECT as
 *      co_detect.c's s_read_full, copied here) and vd_change_find on its
 *      three metrics, i.e. what co_detect_run did per RunEnd before 014.
 *
 * One connection, in the detection thread's session (CO_DETECT_SETTINGS).
 * Prints one line per figure and, last, one JSON object:
 *   {"runs", "found", "detect_ms": {"median", "p90", "p99", "max"},
 *    "peer_ms", "read_ms", "find_ms", "rebuild_ms": {...}, "ratio_median",
 *    "between" (CMD was given), "target_ms": 5, "met"}
 * Not a test: figures go to docs/performance.md. Exit 0, or 1 with the
 * error on stderr. */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "co_detect.h"
#include "pw_clock.h"
#include "vd_change.h"

#define S_RUNS_DEFAULT 500
#define S_RUNS_MAX     100000
#define S_TARGET_MS    5.0

/* co_detect.c's s_read_full query, for one (run, subject, other): the
 * window of points detection read at every RunEnd before migration 015,
 * prepared once as co_detect does. Kept in step by hand. */
static const char s_window_sql[] =
    "SELECT r.id, ss.median AS s_median, ss.min AS s_min, ss.q25 AS s_q25, "
    "ss.q75 AS s_q75, ss.max AS s_max, ss.n AS s_n, so.median AS o_median, "
    "so.min AS o_min, so.q25 AS o_q25, so.q75 AS o_q75, so.max AS o_max, "
    "so.n AS o_n FROM runs r "
    "JOIN arms a1 ON a1.run = r.id AND a1.name = $4 "
    "JOIN run_summaries ss ON ss.run = r.id AND ss.arm = a1.idx "
    "LEFT JOIN arms a2 ON a2.run = r.id AND a2.name = $5 "
    "LEFT JOIN run_summaries so ON so.run = r.id AND so.arm = a2.idx "
    "WHERE r.benchmark_id = $1 AND r.host_id = $2 AND r.vars = "
    "$3::jsonb AND r.status = 'complete' AND r.started_at_us <= $6 "
    "AND ss.median IS NOT NULL AND ($5 = '' OR so.median IS NOT NULL) "
    "ORDER BY r.started_at_us DESC LIMIT $7";

static int
s_cmp(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Quantile p of sorted x[0..n) (nearest rank). */
static double
s_q(const double *x, size_t n, double p)
{
    if (n == 0)
        return NAN;
    size_t k = (size_t)ceil(p * (double)n);
    return x[k > 0 ? k - 1 : 0];
}

/* The peer for run id: read its series' window (every other arm) and
 * run vd_change_find on each metric, as co_detect does, storing
 * nothing. *read_ms and *find_ms get the two parts. 0, or -1 with err. */
static int
s_peer(PGconn *c, const char *id, const vd_change_params_t *params,
       double *read_ms, double *find_ms, char *err, size_t errlen)
{
    const char *p1[] = { id };
    double t0 = (pw_clock_mono_sec() * 1e3);
    *find_ms = 0.0;
    PGresult *info = PQexecParams(c, "SELECT r.benchmark_id, r.host_id, "
        "r.vars::text, r.started_at_us, COALESCE(h.floor_us, 0), "
        "(SELECT name FROM arms WHERE run = r.id AND subject LIMIT 1), "
        "(SELECT string_agg(name, chr(31)) FROM arms WHERE run = r.id AND "
        "NOT subject) FROM runs r JOIN hosts h ON h.id = r.host_id WHERE "
        "r.id = $1", 1, NULL, p1, NULL, NULL, 0);
    if (PQresultStatus(info) != PGRES_TUPLES_OK || PQntuples(info) != 1) {
        snprintf(err, errlen, "run %s: %s", id, PQerrorMessage(c));
        PQclear(info);
        return -1;
    }
    char lim[16], others[4096];
    snprintf(lim, sizeof lim, "%zu", params->window);
    snprintf(others, sizeof others, "%s", PQgetvalue(info, 0, 6));
    double floor_us = strtod(PQgetvalue(info, 0, 4), NULL);
    int rc = 0;
    for (char *o = others, *next; o && rc == 0; o = next) {
        next = strchr(o, '\x1f');
        if (next)
            *next++ = '\0';
        const char *pw[] = { PQgetvalue(info, 0, 0), PQgetvalue(info, 0, 1),
                             PQgetvalue(info, 0, 2), PQgetvalue(info, 0, 5),
                             o, PQgetvalue(info, 0, 3), lim };
        PGresult *r = PQexecPrepared(c, "detect_bench_window", 7, pw, NULL,
                                     NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            snprintf(err, errlen, "window of run %s: %s", id,
                     PQerrorMessage(c));
            PQclear(r);
            rc = -1;
            break;
        }
        double t1 = (pw_clock_mono_sec() * 1e3);
        size_t n = (size_t)PQntuples(r);
        vd_point_t *pt[3];
        for (int m = 0; m < 3; m++)
            pt[m] = calloc(n ? n : 1, sizeof *pt[m]);
        co_detect_cols_t cs, co;
        co_detect_cols(r, "s_", &cs);
        co_detect_cols(r, "o_", &co);
        for (size_t i = 0; pt[0] && pt[1] && pt[2] && i < n; i++) {
            int row = (int)(n - 1 - i);
            co_detect_point(r, row, &cs, &pt[1][i]);
            co_detect_point(r, row, &co, &pt[2][i]);
            pt[0][i] = (vd_point_t){ pt[1][i].median / pt[2][i].median,
                                     NAN, NAN, NAN, NAN, pt[1][i].n };
        }
        for (int m = 0; m < 3 && rc == 0 && n >= 2; m++) {
            vd_change_params_t mp = *params;
            vd_change_t ch[16];
            size_t nch = 0;
            mp.floor_us = m == 0 ? 0.0 : floor_us;
            if (!pt[m] || vd_change_find(pt[m], n, &mp, ch, 16, &nch, err,
                                         errlen) != VD_OK)
                rc = -1;
        }
        for (int m = 0; m < 3; m++)
            free(pt[m]);
        PQclear(r);
        *find_ms += (pw_clock_mono_sec() * 1e3) - t1;
    }
    PQclear(info);
    *read_ms = (pw_clock_mono_sec() * 1e3) - t0 - *find_ms;
    return rc;
}

static void
s_print(const char *what, double *x, size_t n)
{
    qsort(x, n, sizeof *x, s_cmp);
    printf("%-34s median %7.3f  p90 %7.3f  p99 %7.3f  max %7.3f ms\n", what,
           s_q(x, n, 0.5), s_q(x, n, 0.9), s_q(x, n, 0.99), x[n - 1]);
}

static void
s_json(const char *key, const double *sorted, size_t n, bool comma)
{
    printf("\"%s\": {\"median\": %.3f, \"p90\": %.3f, \"p99\": %.3f, "
           "\"max\": %.3f}%s", key, s_q(sorted, n, 0.5), s_q(sorted, n, 0.9),
           s_q(sorted, n, 0.99), sorted[n - 1], comma ? ", " : "");
}

/* A connection in the detection thread's session (timeout, no JIT,
 * generic plans), the peer's window query prepared once as co_detect's
 * are. NULL after printing why. */
static co_conn_t *
s_connect(const char *conninfo)
{
    char err[512];
    co_conn_opts_t o = { .conninfo = conninfo,
                         .settings = CO_DETECT_SETTINGS,
                         .statement_timeout_ms = CO_DETECT_TIMEOUT_MS };
    co_conn_t *cn = co_conn_new(&o);
    if (!cn || co_conn_connect(cn, err, sizeof err) != 0) {
        fprintf(stderr, "detect-bench: %s\n", cn ? err : "out of memory");
        co_conn_destroy(&cn);
        return NULL;
    }
    PGconn *c = co_conn_raw(cn);
    PGresult *prep = PQprepare(c, "detect_bench_window", s_window_sql, 7,
                               NULL);
    if (PQresultStatus(prep) != PGRES_COMMAND_OK) {
        fprintf(stderr, "detect-bench: PQprepare: %s", PQerrorMessage(c));
        PQclear(prep);
        co_conn_destroy(&cn);
        return NULL;
    }
    PQclear(prep);
    return cn;
}

/* n series at random (setseed(seed)), each as its newest two complete
 * runs' ids (columns "newest", "previous"); not timed. */
static PGresult *
s_pick(PGconn *c, long n, double seed)
{
    char sseed[32], slimit[24];
    snprintf(sseed, sizeof sseed, "%.6f", seed);
    snprintf(slimit, sizeof slimit, "%ld", n);
    const char *ps[] = { sseed }, *pl[] = { slimit };
    PQclear(PQexecParams(c, "SELECT setseed($1::float8)", 1, NULL, ps, NULL,
                         NULL, 0));
    return PQexecParams(c, "WITH k AS (SELECT DISTINCT benchmark_id, "
        "host_id, vars FROM series), pick AS (SELECT * FROM k ORDER BY "
        "random() LIMIT $1::int) SELECT x.ids[1], x.ids[2] FROM pick p "
        "CROSS JOIN LATERAL (SELECT array_agg(id ORDER BY started_at_us DESC) "
        "AS ids FROM (SELECT r.id, r.started_at_us FROM runs r WHERE "
        "r.benchmark_id = p.benchmark_id AND r.host_id = p.host_id AND "
        "r.vars = p.vars AND r.status = 'complete' ORDER BY r.started_at_us "
        "DESC LIMIT 2) q) x WHERE x.ids[2] IS NOT NULL", 1, NULL, pl, NULL,
        NULL, 0);
}

/* co_detect_run on run, timed into *ms; found accumulates. */
static int
s_detect(co_conn_t *c, const char *run, const vd_change_params_t *params,
         double *ms, long *found)
{
    char err[512];
    int f = 0;
    double t0 = (pw_clock_mono_sec() * 1e3);
    int rc = co_detect_run(c, strtoll(run, NULL, 10), params, &f, err,
                           sizeof err);
    *ms = (pw_clock_mono_sec() * 1e3) - t0;
    *found += f;
    if (rc != 0)
        fprintf(stderr, "detect-bench: co_detect_run %s: %s\n", run, err);
    return rc;
}

int
main(int argc, char **argv)
{
    long runs = S_RUNS_DEFAULT;
    double seed = 0.42;
    const char *between = NULL;
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: detect-bench CONNINFO [--runs N] "
                        "[--seed S (-1..1)] [--between CMD]\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = strtol(argv[++i], &end, 10);
            if (*end || runs < 1 || runs > S_RUNS_MAX) {
                fprintf(stderr, "detect-bench: --runs 1..%d\n", S_RUNS_MAX);
                return 2;
            }
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            seed = strtod(argv[++i], &end);
            if (*end || seed < -1.0 || seed > 1.0) {
                fprintf(stderr, "detect-bench: --seed -1..1\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--between") == 0 && i + 1 < argc) {
            between = argv[++i];
        } else {
            fprintf(stderr, "detect-bench: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    co_conn_t *cn = s_connect(argv[1]);
    if (!cn)
        return 1;
    PGconn *c = co_conn_raw(cn);
    PGresult *ids = s_pick(c, runs, seed);
    if (PQresultStatus(ids) != PGRES_TUPLES_OK || PQntuples(ids) == 0) {
        fprintf(stderr, "detect-bench: no series with two complete runs: "
                "%s", PQerrorMessage(c));
        PQclear(ids);
        co_conn_destroy(&cn);
        return 1;
    }
    size_t n = (size_t)PQntuples(ids);
    double *total = calloc(n, sizeof *total), *read = calloc(n, sizeof *read),
           *find = calloc(n, sizeof *find), *peer = calloc(n, sizeof *peer),
           *rebuild = calloc(n, sizeof *rebuild);
    if (!total || !read || !find || !peer || !rebuild) {
        fprintf(stderr, "detect-bench: out of memory\n");
        return 1;
    }
    vd_change_params_t params;
    vd_change_params_default(&params);
    long found = 0;
    int rc = 0;
    char err[512];
    /* 1: each series' window as its previous RunEnd left it. */
    PQclear(PQexec(c, "DELETE FROM detect_windows"));
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = s_detect(cn, PQgetvalue(ids, (int)i, 1), &params, &rebuild[i],
                      &found) ? 1 : 0;
    /* 2 */
    if (rc == 0 && between) {
        co_conn_destroy(&cn);
        int st = system(between);
        if (st != 0)
            fprintf(stderr, "detect-bench: --between exited %d\n", st);
        if (!(cn = s_connect(argv[1])))
            rc = 1;
        else
            c = co_conn_raw(cn);
    }
    /* 3: whichever goes first reads the run's pages from disk or the OS
     * cache, the second from shared buffers: the order alternates, so
     * both see the same mix. */
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *id = PQgetvalue(ids, (int)i, 0);
        for (int step = 0; step < 2 && rc == 0; step++) {
            if ((step == 0) == (i % 2 == 0)) {
                if (s_peer(c, id, &params, &read[i], &find[i], err,
                           sizeof err) != 0) {
                    fprintf(stderr, "detect-bench: %s\n", err);
                    rc = 1;
                }
                peer[i] = read[i] + find[i];
            } else if (s_detect(cn, id, &params, &total[i], &found) != 0) {
                rc = 1;
            }
        }
    }
    if (rc == 0) {
        printf("detect-bench: %zu random series, each's newest complete run "
               "(a RunEnd), window %zu, vd_change_params_default; %ld change "
               "points stored%s%s\n", n, params.window, found,
               between ? "; between the kept windows and the RunEnds: " : "",
               between ? between : "");
        s_print("co_detect_run (per RunEnd)", total, n);
        s_print("peer: window read + vd_change_find", peer, n);
        s_print("  of which the window read", read, n);
        s_print("  of which vd_change_find x3", find, n);
        s_print("rebuild (no kept window)", rebuild, n);
        double ratio = s_q(total, n, 0.5) / s_q(peer, n, 0.5);
        bool met = s_q(total, n, 0.99) <= S_TARGET_MS;
        printf("ratio co_detect_run / peer (medians): %.2f\n", ratio);
        printf("target p99 <= %.0f ms per run: %s\n", S_TARGET_MS,
               met ? "met" : "NOT met");
        printf("{\"runs\": %zu, \"found\": %ld, ", n, found);
        s_json("detect_ms", total, n, true);
        s_json("peer_ms", peer, n, true);
        s_json("read_ms", read, n, true);
        s_json("find_ms", find, n, true);
        s_json("rebuild_ms", rebuild, n, true);
        printf("\"ratio_median\": %.3f, \"between\": %s, \"target_ms\": "
               "%.0f, \"met\": %s}\n", ratio, between ? "true" : "false",
               S_TARGET_MS, met ? "true" : "false");
    }
    free(total);
    free(read);
    free(find);
    free(peer);
    free(rebuild);
    PQclear(ids);
    co_conn_destroy(&cn);
    return rc;
}
