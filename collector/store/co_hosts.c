/* co_hosts.c -- the hosts' rows; see co_hosts.h. */
#include "co_hosts.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "co_floors.h"
#include "pw_err.h"

enum { S_HOST, S_ENVIRONMENT, S_SUITE, S_ONLINE, S_OFFLINE };
static const co_stmt_t s_sql[] = {
    [S_HOST] = { "hosts.host",
        "INSERT INTO hosts (public_key, name, agent_version, key_claimed, "
        "boot_id, tags, online, collector) VALUES ($1, $2, $3, $4, $5, "
        "$6::jsonb, true, NULLIF($7, '')) "
        "ON CONFLICT (public_key) DO UPDATE SET name = EXCLUDED.name, "
        "agent_version = EXCLUDED.agent_version, key_claimed = "
        "EXCLUDED.key_claimed, boot_id = EXCLUDED.boot_id, tags = "
        "EXCLUDED.tags, online = true, collector = EXCLUDED.collector, "
        "last_hello = now(), last_seen = now() RETURNING id",
        7, PGRES_TUPLES_OK, false },
    [S_ENVIRONMENT] = { "hosts.environment",
        "INSERT INTO environments (host_id, digest, environment_json) "
        "VALUES ($1, md5($2), $2) ON CONFLICT (host_id, digest) DO NOTHING",
        2, PGRES_COMMAND_OK, false },
    [S_SUITE] = { "hosts.suite",
        "INSERT INTO suites (host_id, name, digest, benchmarks) VALUES ($1, "
        "$2, $3, ARRAY(SELECT json_array_elements_text($4::json))) ON "
        "CONFLICT (host_id, name, digest) DO NOTHING",
        4, PGRES_COMMAND_OK, false },
    /* Offline only while this collector still holds the host: after a
     * failover the host's row belongs to the collector it went to. */
    [S_ONLINE] = { "hosts.online",
        "UPDATE hosts SET online = $2::boolean, last_seen = now() WHERE id "
        "= $1 AND ($2::boolean OR collector IS NOT DISTINCT FROM "
        "NULLIF($3, ''))",
        3, PGRES_COMMAND_OK, false },
    [S_OFFLINE] = { "hosts.offline",
        "UPDATE hosts SET online = false WHERE online AND (collector IS "
        "NULL OR collector = $1)",
        1, PGRES_COMMAND_OK, false },
};

char *
co_hosts_tags_json(Parity__Tag **tags, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++)
        json_object_set_new(o, tags[i]->key ? tags[i]->key : "",
                            json_string(co_db_str(tags[i]->value)));
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

int
co_hosts_check_environment(const char *what, const char *text, char *err,
                           size_t errlen)
{
    json_error_t je;
    if (!text || !text[0])
        return 0;
    json_t *j = json_loads(text, 0, &je);
    bool object = json_is_object(j);
    json_decref(j);
    if (!object) {
        pw_err_line(err, errlen, "%s: environment_json is not a JSON object "
                    "(%s)", what, j ? "another JSON value" : je.text);
        return -1;
    }
    return 0;
}

/* The Hello's suites, inside its transaction. */
static int
s_suites(co_db_t *db, const char *id, const Parity__Hello *h, char *err,
         size_t errlen)
{
    int rc = CO_DB_OK;
    for (size_t i = 0; i < h->n_suites && rc == CO_DB_OK; i++) {
        const Parity__SuiteInfo *s = h->suites[i];
        json_t *a = json_array();
        for (size_t k = 0; a && k < s->n_benchmarks; k++)
            json_array_append_new(a, json_string(co_db_str(
                s->benchmarks[k])));
        char *benches = a ? json_dumps(a, JSON_COMPACT) : NULL;
        json_decref(a);
        if (!benches) {
            pw_err_line(err, errlen, "hello: suites to JSON: out of memory");
            return CO_DB_FAIL;
        }
        const char *ps[] = { id, co_db_str(s->name), co_db_str(s->digest),
                             benches };
        PQclear(co_db_run(db, &s_sql[S_SUITE], ps, &rc, err, errlen));
        free(benches);
    }
    return rc;
}

static int
s_hello(co_db_t *db, const char *public_key, const Parity__Hello *h,
        int64_t *host_id, char *err, size_t errlen)
{
    int rc;
    char id[24];
    char *tags = co_hosts_tags_json(h->tags, h->n_tags);
    PGresult *r = NULL;

    *host_id = 0;
    if (!tags) {
        pw_err_line(err, errlen, "hello: tags to JSON: out of memory");
        return CO_DB_FAIL;
    }
    if (co_hosts_check_environment("hello", h->environment_json, err,
                                   errlen) != 0) {
        free(tags);
        return CO_DB_REFUSED;
    }
    if ((rc = co_db_exec(db, "BEGIN", err, errlen)) != CO_DB_OK)
        goto done;
    const char *p[] = { public_key, co_db_str(h->agent_name),
                        co_db_str(h->agent_version),
                        co_db_str(h->key_fingerprint), co_db_str(h->boot_id),
                        tags, co_db_collector(db) };
    if (!(r = co_db_run(db, &s_sql[S_HOST], p, &rc, err, errlen)))
        goto end;
    *host_id = co_val_i64(r, 0, co_col(r, "id"));
    snprintf(id, sizeof id, "%" PRId64, *host_id);
    PQclear(r);
    if (h->environment_json && h->environment_json[0]) {
        const char *pe[] = { id, h->environment_json };
        if (!(r = co_db_run(db, &s_sql[S_ENVIRONMENT], pe, &rc, err,
                            errlen)))
            goto end;
        PQclear(r);
    }
    if ((rc = s_suites(db, id, h, err, errlen)) != CO_DB_OK)
        goto end;
end:
    if ((rc = co_db_end(db, rc, err, errlen)) != CO_DB_OK)
        *host_id = 0;
    /* Its calibration rows may have been stored through another
     * collector since this one held them. */
    co_floors_forget(co_db_floors(db), *host_id);
done:
    free(tags);
    return rc;
}

int
co_hosts_hello(co_db_t *db, const char *public_key, const Parity__Hello *h,
               int64_t *host_id, char *err, size_t errlen)
{
    co_db_what(db, "hello");
    int rc = s_hello(db, public_key, h, host_id, err, errlen);
    co_db_what(db, NULL);
    return rc;
}

int
co_hosts_online(co_db_t *db, int64_t host_id, bool online, char *err,
                size_t errlen)
{
    int rc;
    char id[24];
    snprintf(id, sizeof id, "%" PRId64, host_id);
    const char *p[] = { id, online ? "true" : "false", co_db_collector(db) };
    co_floors_forget(co_db_floors(db), host_id);   /* s_hello says why */
    PQclear(co_db_run(db, &s_sql[S_ONLINE], p, &rc, err, errlen));
    return rc;
}

int
co_hosts_offline(co_db_t *db, char *err, size_t errlen)
{
    int rc;
    const char *p[] = { co_db_collector(db) };
    PQclear(co_db_run(db, &s_sql[S_OFFLINE], p, &rc, err, errlen));
    return rc;
}
