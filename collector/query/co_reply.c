/* co_reply.c -- see co_reply.h. */
#include "co_reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_json.h"
#include "vd_fleet.h"
#include "vd_verdict.h"


co_reply_t
co_reply_begin(co_conn_t *conn, co_jobs_t *jobs, char *err, size_t errlen)
{
    co_reply_t c = { conn, jobs, CO_REPLY_OK, err, errlen };
    if (errlen)
        err[0] = '\0';
    return c;
}

json_t *
co_reply_end(co_reply_t *c, json_t *body, int *status)
{
    if (!body && c->status == CO_REPLY_OK)
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
    *status = c->status;
    return body;
}

void
co_reply_fail(co_reply_t *c, int status, const char *fmt, ...)
{
    va_list ap;
    c->status = status;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
}

PGresult *
co_reply_run(co_reply_t *c, const co_stmt_t *st, const char *const *p)
{
    char e[256];
    int kind;
    PGresult *r = co_conn_run(c->conn, st, p, &kind, e, sizeof e);
    if (r)
        return r;
    if (kind == CO_CONN_TIMEOUT)
        co_reply_fail(c, CO_REPLY_TIMEOUT, CO_REPLY_TIMEOUT_FMT,
                      co_conn_timeout_ms(c->conn) / 1000.0);
    else if (kind == CO_CONN_DOWN && !co_conn_raw(c->conn))
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "database unavailable: %s", e);
    else
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "database unavailable: "
                      "query failed: %s", e);
    return NULL;
}

PGresult *
co_reply_text(co_reply_t *c, const char *name, const char *sql, int n,
              const char *const *p)
{
    co_stmt_t st = { name, sql, n, PGRES_TUPLES_OK, false };
    return co_reply_run(c, &st, p);
}

json_int_t
co_reply_int(PGresult *r, int row, int col)
{
    return (json_int_t)co_val_i64(r, row, col);
}

json_t *
co_reply_int_or_null(PGresult *r, int row, int col)
{
    return co_val_null(r, row, col) ? json_null() :
           json_integer(co_reply_int(r, row, col));
}

/* A JSON text column, parsed; null when NULL or unparsable. */
json_t *
co_reply_json_col(PGresult *r, int row, int col)
{
    if (co_val_null(r, row, col))
        return json_null();
    json_t *j = json_loads(co_val(r, row, col), JSON_DECODE_ANY, NULL);
    return j ? j : json_null();
}

json_t *
co_reply_rows(PGresult *r, const co_reply_col_t *cols, size_t n)
{
    int col[CO_REPLY_ROWS_COLS_MAX];
    if (n > CO_REPLY_ROWS_COLS_MAX)
        return NULL;
    for (size_t k = 0; k < n; k++)
        col[k] = co_col(r, cols[k].key);
    json_t *out = json_array();
    for (int i = 0; out && i < PQntuples(r); i++) {
        json_t *o = json_object();
        for (size_t k = 0; o && k < n; k++) {
            json_t *v;
            switch (cols[k].kind) {
            case CO_REPLY_COL_INT:
                v = json_integer(co_reply_int(r, i, col[k]));
                break;
            case CO_REPLY_COL_INT_NULL:
                v = co_reply_int_or_null(r, i, col[k]);
                break;
            case CO_REPLY_COL_JSON:
                v = co_reply_json_col(r, i, col[k]);
                break;
            default:
                v = json_string(co_val(r, i, col[k]));
                break;
            }
            if (json_object_set_new(o, cols[k].key, v) != 0) {
                json_decref(o);
                o = NULL;
            }
        }
        json_array_append_new(out, o);
    }
    return out;
}

/* ag_env's {"value", "source"} shape, or a bare value. */
json_t *
co_reply_env_value(const json_t *env, const char *key)
{
    const json_t *f = json_object_get(env, key);
    const json_t *v = json_is_object(f) ? json_object_get(f, "value") : f;
    return v ? json_incref((json_t *)v) : json_null();
}

const char *
co_reply_str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* args "tags" as jsonb text for `tags @> $n` ({} when absent). Every
 * value must be a string: a job's tags are. Caller frees the text. */
char *
co_reply_tags_arg(co_reply_t *c, const json_t *args)
{
    const json_t *t = json_object_get(args, "tags");
    if (!t)
        return strdup("{}");
    if (!json_is_object(t) || json_object_size(t) > CO_REPLY_FILTERS_MAX) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"tags\" must be an object of at most "
               "%d string values", CO_REPLY_FILTERS_MAX);
        return NULL;
    }
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)t, k, v)
        if (!json_is_string(v)) {
            co_reply_fail(c, CO_REPLY_BADARGS, "tag \"%.60s\" must be a string", k);
            return NULL;
        }
    char *text = pw_json_dumps(t);
    if (!text)
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
    return text;
}

void
co_reply_pool_cols(const PGresult *r, co_reply_pool_cols_t *c)
{
    c->runs = co_col(r, "pool_runs");
    c->quiet = co_col(r, "pool_quiet");
    c->oldest_us = co_col(r, "pool_oldest_us");
    c->newest_us = co_col(r, "pool_newest_us");
}

json_t *
co_reply_floor_pool(PGresult *r, int row, const co_reply_pool_cols_t *c)
{
    return json_pack("{s:I,s:o,s:o,s:o}",
        "runs", co_reply_int(r, row, c->runs),
        "quiet", co_val_null(r, row, c->quiet) ? json_null()
                 : json_boolean(co_val_bool(r, row, c->quiet)),
        "oldest_us", co_reply_int_or_null(r, row, c->oldest_us),
        "newest_us", co_reply_int_or_null(r, row, c->newest_us));
}

/* An optional integer argument in lo..hi; dflt when absent. */
bool
co_reply_int_arg(co_reply_t *c, const json_t *args, const char *key, json_int_t lo,
          json_int_t hi, json_int_t dflt, json_int_t *out)
{
    const json_t *j = json_object_get(args, key);
    if (!j) {
        *out = dflt;
        return true;
    }
    if (!json_is_integer(j) || json_integer_value(j) < lo ||
        json_integer_value(j) > hi) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"%s\" must be an integer from %"
               JSON_INTEGER_FORMAT " to %" JSON_INTEGER_FORMAT, key, lo, hi);
        return false;
    }
    *out = json_integer_value(j);
    return true;
}

/* See co_reply.h: shared by `verdicts` (co_query) and co_history's rows. */
json_t *
co_reply_summary(const json_t *entries)
{
    size_t n = json_array_size(entries), k = 0;
    vd_outcome_t *oc = calloc(n + 1, sizeof *oc);
    double *ra = calloc(n + 1, sizeof *ra), *br = calloc(n + 1, sizeof *br);
    json_t *out = NULL;
    if (!oc || !ra || !br)
        goto done;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(json_array_get(entries, i), "verdict");
        vd_verdict_t vd;
        char e[256];
        if (!json_is_object(v) ||
            pw_verdict_from_json(v, &vd, e, sizeof e) != PW_OK ||
            !(vd.ratio > 0) || !(vd.best_ratio > 0))
            continue;
        oc[k] = vd.outcome;
        ra[k] = vd.ratio;
        br[k] = vd.best_ratio;
        k++;
    }
    vd_fleet_t f;
    char e[256], sentence[256];
    if (vd_fleet_summarize(oc, ra, br, k, &f, e, sizeof e) != VD_OK)
        goto done;
    vd_fleet_consensus(&f, sentence, sizeof sentence);
    out = json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:s}",
        "hosts", (json_int_t)f.hosts,
        "win", (json_int_t)f.count[VD_WIN],
        "parity", (json_int_t)f.count[VD_PARITY],
        "loss", (json_int_t)f.count[VD_LOSS],
        "geomean_ratio", f.geomean_ratio,
        "geomean_best_ratio", f.geomean_best_ratio,
        "consensus", sentence);
done:
    free(oc);
    free(ra);
    free(br);
    return out;
}
