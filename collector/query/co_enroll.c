/* co_enroll.c -- see co_enroll.h. */
#include "co_enroll.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co_reply.h"
#include "pw_clock.h"
#include "pw_err.h"
#include "pw_key.h"

/* Candidates a name or fingerprint may match at most (a fingerprint is
 * compared in C against every host without a host_keys row). */
#define S_CANDIDATES_MAX 100000
/* Fingerprints an ambiguous name's error lists at most. */
#define S_AMBIGUOUS_SHOWN 4
#define S_REVOKED_REASON "the host's key was revoked (parity hosts revoke)"

enum { S_HELLO_UPDATE, S_HELLO_INSERT, S_KEY_STATE, S_POLL };
static const co_stmt_t s_sql[] = {
    /* A known key: only a pending one's claims change (the name of a
     * decided key is the one the operator decided on). */
    [S_HELLO_UPDATE] = { "enroll.hello_update",
        "UPDATE host_keys SET name = CASE WHEN state = 'pending' THEN $2 "
        "ELSE name END, agent_version = CASE WHEN state = 'pending' THEN $3 "
        "ELSE agent_version END, address = $4, last_seen = now() "
        "WHERE public_key = $1 RETURNING state",
        4, PGRES_TUPLES_OK, false },
    [S_HELLO_INSERT] = { "enroll.hello_insert",
        "INSERT INTO host_keys (public_key, name, agent_version, "
        "address, fingerprint, state) SELECT $1, $2, $3, $4, $5, "
        "'pending' WHERE (SELECT count(*) FROM host_keys WHERE state = "
        "'pending') < $6::int ON CONFLICT (public_key) DO NOTHING "
        "RETURNING state",
        6, PGRES_TUPLES_OK, false },
    [S_KEY_STATE] = { "enroll.key_state",
        "SELECT state FROM host_keys WHERE public_key = $1",
        1, PGRES_TUPLES_OK, false },
    [S_POLL] = { "enroll.poll",
        "SELECT public_key, state, version FROM host_keys WHERE version > "
        "$1::bigint ORDER BY version LIMIT $2::int",
        2, PGRES_TUPLES_OK, false },
};

/* One statement of the table on the writer's connection; NULL with err.
 * *data says the database refused the values themselves (SQLSTATE class
 * 22, e.g. a name that is not UTF-8). */
static PGresult *
s_rows(co_conn_t *conn, int stmt, const char *const *p, bool *data,
       char *err, size_t errlen)
{
    char e[256];
    int kind;
    PGresult *r = co_conn_run(conn, &s_sql[stmt], p, &kind, e, sizeof e);
    if (data)
        *data = !r && kind == CO_CONN_DATA;
    if (!r && kind == CO_CONN_DATA)   /* goes to the peer: the reason */
        pw_err_line(err, errlen, "host_keys: %s", co_conn_reason(conn));
    else if (!r)
        pw_err_line(err, errlen, "%s%s", kind == CO_CONN_DOWN
                    ? "database unavailable: " : "", e);
    return r;
}

/* ---- the writer's side ------------------------------------------------ */

int
co_enroll_hello(co_conn_t *conn, const char *key, const char *name,
                const char *agent_version, const char *address,
                co_key_state_t *state, bool *created, char *err,
                size_t errlen)
{
    char fp[PW_KEY_FP_SIZE], max[16], nm[CO_ENROLL_TEXT_MAX + 1],
         ver[CO_ENROLL_TEXT_MAX + 1];
    bool data = false;
    *state = CO_KEY_UNKNOWN;
    *created = false;
    if (pw_key_fingerprint(key, fp) != 0) {
        pw_err_line(err, errlen, "key %.40s is not a Z85 public key", key);
        return CO_ENROLL_REFUSED;
    }
    /* A claim, shown to the operator: bounded like any stored text. */
    snprintf(nm, sizeof nm, "%s", name ? name : "");
    snprintf(ver, sizeof ver, "%s", agent_version ? agent_version : "");
    snprintf(max, sizeof max, "%d", CO_ENROLL_MAX_PENDING);
    const char *p[] = { key, nm, ver, address ? address : "", fp, max };
    PGresult *r = s_rows(conn, S_HELLO_UPDATE, p, &data, err, errlen);
    if (r && PQntuples(r) == 0) {
        PQclear(r);
        r = s_rows(conn, S_HELLO_INSERT, p, &data, err, errlen);
        *created = r && PQntuples(r) == 1;
    }
    if (r && PQntuples(r) == 0) {
        /* Not inserted: the table is full, or another collector was
         * faster (then the row says what it is now). */
        PQclear(r);
        r = s_rows(conn, S_KEY_STATE, p, &data, err, errlen);
        if (r && PQntuples(r) == 0) {
            PQclear(r);
            pw_err_line(err, errlen, "%d keys wait for approval already",
                        CO_ENROLL_MAX_PENDING);
            return CO_ENROLL_FULL;
        }
    }
    if (!r)
        return data ? CO_ENROLL_REFUSED : CO_ENROLL_FAIL;
    *state = co_key_state_parse(co_val(r, 0, co_col(r, "state")));
    PQclear(r);
    return CO_ENROLL_OK;
}

int
co_enroll_poll(co_conn_t *conn, co_keys_t *keys, int64_t *version,
               char *err, size_t errlen)
{
    char since[24], lim[16];
    snprintf(since, sizeof since, "%" PRId64, *version);
    snprintf(lim, sizeof lim, "%d", CO_ENROLL_POLL_MAX);
    const char *p[] = { since, lim };
    PGresult *r = s_rows(conn, S_POLL, p, NULL, err, errlen);
    if (!r)
        return -1;
    int n = PQntuples(r);
    int i_key = co_col(r, "public_key"), i_state = co_col(r, "state"),
        i_version = co_col(r, "version");
    for (int i = 0; i < n; i++) {
        co_keys_set(keys, co_val(r, i, i_key),
                    co_key_state_parse(co_val(r, i, i_state)));
        int64_t v = co_val_i64(r, i, i_version);
        if (v > *version)
            *version = v;
    }
    PQclear(r);
    return n;
}

/* ---- the commands ------------------------------------------------------ */

bool
co_enroll_handles(const char *command)
{
    return command && (strcmp(command, "pending") == 0
                       || strcmp(command, "approve") == 0
                       || strcmp(command, "reject") == 0
                       || strcmp(command, "revoke") == 0);
}

static const co_stmt_t s_st_pending = { "enroll.pending",
    "SELECT fingerprint, name, public_key, agent_version, address, "
    "(extract(epoch FROM first_seen) * 1000000)::bigint AS "
    "first_seen_us, (extract(epoch FROM last_seen) * 1000000)::bigint "
    "AS last_seen_us "
    "FROM host_keys WHERE state = 'pending' "
    "ORDER BY first_seen, public_key LIMIT $1::int",
    1, PGRES_TUPLES_OK, false };

static json_t *
s_pending(co_reply_t *c)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", 4 * CO_ENROLL_MAX_PENDING);
    const char *p[] = { lim };
    PGresult *r = co_reply_run(c, &s_st_pending, p);
    if (!r)
        return NULL;
    static const co_reply_col_t cols[] = {
        { "fingerprint", CO_REPLY_COL_STR }, { "name", CO_REPLY_COL_STR },
        { "public_key", CO_REPLY_COL_STR },
        { "agent_version", CO_REPLY_COL_STR },
        { "address", CO_REPLY_COL_STR },
        { "first_seen_us", CO_REPLY_COL_INT },
        { "last_seen_us", CO_REPLY_COL_INT },
    };
    json_t *list = co_reply_rows(r, cols, sizeof cols / sizeof cols[0]);
    PQclear(r);
    return list ? json_pack("{s:o}", "pending", list) : NULL;
}

/* A key a name or fingerprint matched. */
typedef struct {
    char key[PW_KEY_Z85_LEN + 1];
    char fp[PW_KEY_FP_SIZE];
    char name[CO_ENROLL_TEXT_MAX + 1];
    co_key_state_t state;     /* APPROVED for a host without a row */
} s_cand_t;

/* What a command does to each state: acts on it, finds it already done
 * (an idempotent answer), or refuses with a hint. */
typedef struct {
    const char *command;
    co_key_state_t to;
    co_key_state_t act[3];
    co_key_state_t done[2];
} s_rule_t;

static const s_rule_t s_rules[] = {
    { "approve", CO_KEY_APPROVED,
      { CO_KEY_PENDING, CO_KEY_REJECTED, CO_KEY_REVOKED },
      { CO_KEY_APPROVED } },
    { "reject", CO_KEY_REJECTED, { CO_KEY_PENDING },
      { CO_KEY_REJECTED, CO_KEY_REVOKED } },
    { "revoke", CO_KEY_REVOKED, { CO_KEY_APPROVED },
      { CO_KEY_REVOKED, CO_KEY_REJECTED } },
};

static bool
s_in(const co_key_state_t *set, size_t n, co_key_state_t s)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == s && s != CO_KEY_UNKNOWN)
            return true;
    return false;
}

static const co_stmt_t s_st_candidates = { "enroll.candidates",
    "SELECT public_key, fingerprint, name, state FROM ("
    " SELECT k.public_key, k.fingerprint, COALESCE(h.name, k.name) AS "
    "  name, k.state FROM host_keys k LEFT JOIN hosts h ON "
    "  h.public_key = k.public_key"
    " UNION ALL SELECT h.public_key, '', h.name, 'approved' FROM hosts h "
    "  WHERE NOT EXISTS (SELECT 1 FROM host_keys k WHERE "
    "  k.public_key = h.public_key)) x "
    "WHERE CASE WHEN $1 <> '' THEN fingerprint IN ($1, '') "
    "ELSE name = $2 END LIMIT $3::int",
    3, PGRES_TUPLES_OK, false };

/* The keys args name ({"fingerprint": FP} or {"name": NAME}): every
 * host_keys row, and every host without one (approved by --allow).
 * Returns the count (cands malloc'd, caller frees) or -1 with c set. */
static int
s_candidates(co_reply_t *c, const json_t *args, s_cand_t **cands)
{
    const char *fp = json_string_value(json_object_get(args, "fingerprint"));
    const char *name = json_string_value(json_object_get(args, "name"));
    *cands = NULL;
    if ((json_object_get(args, "fingerprint") && !fp)
        || (json_object_get(args, "name") && !name) || (!fp == !name)) {
        co_reply_fail(c, CO_REPLY_BADARGS, "give the key's \"fingerprint\" "
                      "or its host's \"name\" (one string, not both)");
        return -1;
    }
    if (fp && !pw_key_is_fingerprint(fp)) {
        co_reply_fail(c, CO_REPLY_BADARGS, "\"fingerprint\" %.80s: want "
                      "SHA256: and 43 base64 characters, as parity hosts "
                      "--pending and parity-agent --fingerprint show it",
                      fp);
        return -1;
    }
    char lim[16];
    snprintf(lim, sizeof lim, "%d", S_CANDIDATES_MAX);
    const char *p[] = { fp ? fp : "", name ? name : "", lim };
    PGresult *r = co_reply_run(c, &s_st_candidates, p);
    if (!r)
        return -1;
    int rows = PQntuples(r), n = 0;
    s_cand_t *out = calloc(rows ? (size_t)rows : 1, sizeof *out);
    int i_key = co_col(r, "public_key"), i_fp = co_col(r, "fingerprint"),
        i_name = co_col(r, "name"), i_state = co_col(r, "state");
    for (int i = 0; out && i < rows; i++) {
        s_cand_t *k = &out[n];
        snprintf(k->key, sizeof k->key, "%s", co_val(r, i, i_key));
        snprintf(k->fp, sizeof k->fp, "%s", co_val(r, i, i_fp));
        if (!k->fp[0] && pw_key_fingerprint(k->key, k->fp) != 0)
            continue;
        if (fp && strcmp(k->fp, fp) != 0)
            continue;
        snprintf(k->name, sizeof k->name, "%s", co_val(r, i, i_name));
        k->state = co_key_state_parse(co_val(r, i, i_state));
        n++;
    }
    PQclear(r);
    if (!out) {
        co_reply_fail(c, CO_REPLY_UNAVAILABLE, "out of memory");
        return -1;
    }
    if (n == 0) {
        free(out);
        if (fp)
            co_reply_fail(c, CO_REPLY_NOTFOUND, "no key has fingerprint %s "
                          "(parity hosts --pending lists the keys waiting "
                          "for approval)", fp);
        else
            co_reply_fail(c, CO_REPLY_NOTFOUND, "no host or pending key is "
                          "named \"%.100s\" (parity hosts, parity hosts "
                          "--pending)", name);
        return -1;
    }
    *cands = out;
    return n;
}

/* The one candidate in one of the n states, NULL when none; more than
 * one is an error naming their fingerprints (c set, *ambiguous true). */
static const s_cand_t *
s_pick(co_reply_t *c, const s_cand_t *cands, int n,
       const co_key_state_t *states, size_t nstates, bool *ambiguous)
{
    const s_cand_t *one = NULL;
    int count = 0;
    char list[S_AMBIGUOUS_SHOWN * (PW_KEY_FP_SIZE + 2) + 8] = "";
    for (int i = 0; i < n; i++) {
        if (!s_in(states, nstates, cands[i].state))
            continue;
        one = &cands[i];
        if (count++ < S_AMBIGUOUS_SHOWN)
            snprintf(list + strlen(list), sizeof list - strlen(list),
                     "%s%s", count > 1 ? ", " : "", cands[i].fp);
    }
    if (count <= 1)
        return one;
    *ambiguous = true;
    co_reply_fail(c, CO_REPLY_BADARGS, "name \"%.100s\" is claimed by %d "
                  "keys (%s%s): give the fingerprint instead", one->name,
                  count, list, count > S_AMBIGUOUS_SHOWN ? ", ..." : "");
    return NULL;
}

/* Write the decision; the number of job rows it failed into *failed. */
static bool
s_decide(co_reply_t *c, const s_rule_t *rule, const s_cand_t *k,
         const char *admin, long *failed)
{
    char now[24];
    snprintf(now, sizeof now, "%" PRId64, pw_clock_unix_us());
    const char *p[] = { k->key, k->fp, k->name, admin ? admin : "",
                        co_key_state_name(rule->to), now,
                        S_REVOKED_REASON };
    /* One statement each: nothing half done. The row of a host approved
     * by --allow is made here (the fingerprint computed in C). */
    static const char upsert[] =
        "INSERT INTO host_keys (public_key, fingerprint, name, decided_by, "
        " state, decided_at) VALUES ($1, $2, $3, $4, $5, now()) "
        "ON CONFLICT (public_key) DO UPDATE SET state = $5, decided_at = "
        " now(), decided_by = $4, version = nextval('host_keys_version') ";
    char sql[1400];
    if (rule->to == CO_KEY_REVOKED)
        snprintf(sql, sizeof sql, "WITH k AS (%s RETURNING 1), "
                 "h AS (SELECT id FROM hosts WHERE public_key = $1), "
                 "f AS (UPDATE job_hosts SET state = 'failed', reason = $7, "
                 " ended_at_us = $6::bigint, updated_at_us = $6::bigint "
                 " WHERE host_id IN (SELECT id FROM h) AND state IN "
                 " ('queued', 'running') RETURNING job), "
                 "s AS (DELETE FROM host_suites WHERE host_id IN (SELECT id "
                 " FROM h) RETURNING 1), "
                 "o AS (UPDATE hosts SET online = false WHERE id IN (SELECT "
                 " id FROM h) RETURNING 1) "
                 "SELECT (SELECT count(*) FROM f) AS failed, (SELECT "
                 "count(*) FROM k) AS changed",
                 upsert);
    else
        snprintf(sql, sizeof sql, "WITH k AS (%s RETURNING 1) "
                 "SELECT 0 AS failed, (SELECT count(*) FROM k) AS changed",
                 upsert);
    PGresult *r = co_reply_text(c, "enroll.decide", sql,
                                rule->to == CO_KEY_REVOKED ? 7 : 5, p);
    if (!r)
        return false;
    *failed = (long)co_val_i64(r, 0, co_col(r, "failed"));
    PQclear(r);
    return true;
}

static json_t *
s_decision(co_reply_t *c, co_keys_t *keys, const char *admin,
           const s_rule_t *rule, const json_t *args)
{
    s_cand_t *cands = NULL;
    int n = s_candidates(c, args, &cands);
    if (n < 0)
        return NULL;
    bool ambiguous = false;
    long failed = 0;
    json_t *body = NULL;
    const s_cand_t *k = s_pick(c, cands, n, rule->act,
                               sizeof rule->act / sizeof *rule->act,
                               &ambiguous);
    const s_cand_t *done = k || ambiguous ? NULL
        : s_pick(c, cands, n, rule->done,
                 sizeof rule->done / sizeof *rule->done, &ambiguous);
    if (ambiguous)
        goto out;
    if (!k && !done) {
        /* Matched, but in a state this command does not take. */
        const s_cand_t *x = &cands[0];
        co_reply_fail(c, CO_REPLY_BADARGS, "key %s (%.100s) is %s: %s", x->fp,
                      x->name, co_key_state_name(x->state),
                      x->state == CO_KEY_PENDING
                      ? "it was never approved; reject it instead (parity "
                        "hosts reject)"
                      : "revoke it instead (parity hosts revoke)");
        goto out;
    }
    if (k && !s_decide(c, rule, k, admin, &failed))
        goto out;
    const s_cand_t *x = k ? k : done;
    if (k && keys)
        co_keys_set(keys, k->key, rule->to);
    body = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I}", "fingerprint", x->fp,
                     "public_key", x->key, "name", x->name,
                     "state", co_key_state_name(k ? rule->to : x->state),
                     "was", co_key_state_name(x->state),
                     "jobs_failed", (json_int_t)failed);
out:
    free(cands);
    return body;
}

json_t *
co_enroll_handle(co_conn_t *conn, co_keys_t *keys, const char *admin_key,
                 const char *command, const json_t *args, int *status,
                 char *err, size_t errlen)
{
    co_reply_t c = co_reply_begin(conn, NULL, err, errlen);
    json_t *body = NULL;
    if (strcmp(command, "pending") == 0) {
        body = s_pending(&c);
    } else {
        const s_rule_t *rule = NULL;
        for (size_t i = 0; i < sizeof s_rules / sizeof *s_rules; i++)
            if (strcmp(command, s_rules[i].command) == 0)
                rule = &s_rules[i];
        if (rule)
            body = s_decision(&c, keys, admin_key, rule, args);
        else
            co_reply_fail(&c, CO_REPLY_UNKNOWN, "unknown command \"%.40s\"",
                          command);
    }
    return co_reply_end(&c, body, status);
}
