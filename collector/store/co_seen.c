/* co_seen.c -- see co_seen.h. */
#include "co_seen.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "co_conn.h"
#include "co_log.h"
#include "pw_buf.h"

/* Rows held by another transaction are skipped, never waited for; in id
 * order, as every UPDATE of hosts should take its rows. */
#define S_SQL "UPDATE hosts h SET last_seen = now() FROM (SELECT id FROM " \
              "hosts WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY " \
              "UPDATE SKIP LOCKED) x WHERE h.id = x.id"
/* One error line a minute at most: a broken table would say so every
 * heartbeat interval otherwise. */
#define S_LOG_EVERY_US 60000000

struct co_seen {
    /* Its own connection, made by co_conn; conn is co_conn's while in
     * use, in non-blocking mode (NULL: none). */
    co_conn_t *cn;
    PGconn *conn;
    bool out;                  /* an UPDATE sent, its answer not read */
    bool down_logged;          /* "cannot connect" said, not yet mended */
    int64_t retry_at_us;
    int64_t error_logged_us;
    int64_t *ids;              /* [CO_SEEN_MAX] the next write's */
    size_t n;
};

co_seen_t *
co_seen_new(const char *conninfo)
{
    co_seen_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    co_conn_opts_t o = { .conninfo = conninfo,
                         .settings = "SET synchronous_commit = off",
                         .statement_timeout_ms = 10000 };
    s->cn = co_conn_new(&o);
    s->ids = calloc(CO_SEEN_MAX, sizeof *s->ids);
    if (!s->cn || !s->ids)
        co_seen_destroy(&s);
    return s;
}

static void
s_close(co_seen_t *s)
{
    co_conn_close(s->cn);
    s->conn = NULL;
    s->out = false;
}

void
co_seen_destroy(co_seen_t **sp)
{
    if (!sp || !*sp)
        return;
    co_seen_t *s = *sp;
    s_close(s);
    free(s->ids);
    co_conn_destroy(&s->cn);
    free(s);
    *sp = NULL;
}

/* A new connection, or false (said once until one works again). */
static bool
s_connect(co_seen_t *s, int64_t now_us)
{
    if (s->conn)
        return true;
    if (now_us < s->retry_at_us)
        return false;
    char err[256], q[300];
    s->conn = co_conn_pg(s->cn, err, sizeof err);
    if (s->conn && PQsetnonblocking(s->conn, 1) == 0) {
        s->down_logged = false;
        return true;
    }
    if (!s->down_logged) {
        co_log(CO_LOG_WARN, "seen_db", "why=%s",
               co_log_quote(q, sizeof q, s->conn ? "PQsetnonblocking failed"
                                                 : err));
        s->down_logged = true;
    }
    s_close(s);
    s->retry_at_us = now_us + CO_SEEN_RETRY_US;
    return false;
}

/* The answer of the UPDATE that is out, if all of it came. */
static void
s_read(co_seen_t *s, int64_t now_us)
{
    if (PQflush(s->conn) < 0 || !PQconsumeInput(s->conn)) {
        s_close(s);
        return;
    }
    PGresult *r;
    while (!PQisBusy(s->conn) && (r = PQgetResult(s->conn)) != NULL) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK &&
            now_us - s->error_logged_us >= S_LOG_EVERY_US) {
            char q[300], first[256];
            const char *m = PQresultErrorMessage(r);
            snprintf(first, sizeof first, "%.*s", (int)strcspn(m, "\n"), m);
            co_log(CO_LOG_WARN, "seen_failed", "why=%s",
                   co_log_quote(q, sizeof q, first));
            s->error_logged_us = now_us;
        }
        PQclear(r);
    }
    /* The NULL after the last result: the connection is free again. */
    if (!PQisBusy(s->conn))
        s->out = false;
}

static int
s_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The waiting ids sorted, each once. */
static void
s_unique(co_seen_t *s)
{
    size_t k = 0;
    qsort(s->ids, s->n, sizeof *s->ids, s_cmp);
    for (size_t i = 0; i < s->n; i++)
        if (k == 0 || s->ids[i] != s->ids[k - 1])
            s->ids[k++] = s->ids[i];
    s->n = k;
}

/* Send the waiting ids as one UPDATE. */
static void
s_send(co_seen_t *s)
{
    pw_buf_t t;
    s_unique(s);
    pw_buf_init(&t, CO_SEEN_MAX * 21 + 3);
    pw_buf_adds(&t, "{");
    for (size_t i = 0; i < s->n; i++)
        pw_buf_printf(&t, "%s%" PRId64, i ? "," : "", s->ids[i]);
    pw_buf_adds(&t, "}");
    const char *p[] = { pw_buf_data(&t) };
    if (pw_buf_status(&t) == PW_BUF_OK &&
        PQsendQueryParams(s->conn, S_SQL, 1, NULL, p, NULL, NULL, 0) == 1) {
        s->out = true;
        s->n = 0;
        if (PQflush(s->conn) < 0)
            s_close(s);
    } else if (pw_buf_status(&t) == PW_BUF_OK)
        s_close(s);        /* the ids wait for the next connection */
    pw_buf_free(&t);
}

void
co_seen_poll(co_seen_t *s, int64_t now_us)
{
    if (!s)
        return;
    if (s->conn && s->out)
        s_read(s, now_us);
    if (s->n == 0 || (s->conn && s->out) || !s_connect(s, now_us))
        return;
    s_send(s);
}

void
co_seen_add(co_seen_t *s, const int64_t *ids, size_t n, int64_t now_us)
{
    if (!s)
        return;
    if (n > CO_SEEN_MAX - s->n)
        s_unique(s);       /* an UPDATE out for long: the same hosts again */
    size_t room = CO_SEEN_MAX - s->n;
    size_t take = n < room ? n : room;
    memcpy(s->ids + s->n, ids, take * sizeof *ids);
    s->n += take;
    co_seen_poll(s, now_us);
}
