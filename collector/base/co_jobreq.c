/* co_jobreq.c -- a run request's arguments and host rules; see
 * co_jobreq.h. */
#include "co_jobreq.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

#include "pw_clock.h"
#include "pw_err.h"
#include "pw_limits.h"

/* A string→string object with at most CO_JOBREQ_MAX_ITEMS entries, or
 * absent. */
static int
s_check_map(const json_t *args, const char *name, char *err, size_t errlen)
{
    const json_t *m = json_object_get(args, name);
    if (!m)
        return 0;
    if (!json_is_object(m) || json_object_size(m) > CO_JOBREQ_MAX_ITEMS) {
        pw_err(err, errlen, "\"%s\" must be an object of at most %d strings",
               name, CO_JOBREQ_MAX_ITEMS);
        return -1;
    }
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)m, k, v) {
        if (!json_is_string(v) || !*k || strlen(k) > CO_JOBREQ_MAX_TEXT ||
            json_string_length(v) > CO_JOBREQ_MAX_TEXT) {
            pw_err(err, errlen, "\"%s\": \"%.40s\" must have a non-empty key "
                   "and a string value of at most %d bytes", name, k,
                   CO_JOBREQ_MAX_TEXT);
            return -1;
        }
    }
    return 0;
}

static int
s_check_list(const json_t *args, const char *name, size_t max, char *err,
             size_t errlen)
{
    const json_t *a = json_object_get(args, name);
    if (!a)
        return 0;
    if (!json_is_array(a) || json_array_size(a) > max) {
        pw_err(err, errlen, "\"%s\" must be an array of at most %zu strings",
               name, max);
        return -1;
    }
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *v = json_array_get(a, i);
        if (!json_is_string(v) || json_string_length(v) == 0 ||
            json_string_length(v) > CO_JOBREQ_MAX_TEXT) {
            pw_err(err, errlen, "\"%s\"[%zu] must be a non-empty string of "
                   "at most %d bytes", name, i, CO_JOBREQ_MAX_TEXT);
            return -1;
        }
    }
    return 0;
}

static bool
s_list_has(const json_t *a, const char *s)
{
    for (size_t i = 0; i < json_array_size(a); i++)
        if (strcmp(json_string_value(json_array_get(a, i)), s) == 0)
            return true;
    return false;
}

/* Does host (its tags object) match one "k=v" entry of sel? */
static bool
s_tag_match(const json_t *sel, const json_t *tags)
{
    for (size_t i = 0; i < json_array_size(sel); i++) {
        const char *s = json_string_value(json_array_get(sel, i));
        const char *eq = strchr(s, '=');
        if (!eq)
            continue;
        char key[CO_JOBREQ_MAX_TEXT + 1];
        snprintf(key, sizeof key, "%.*s", (int)(eq - s), s);
        const char *v = json_string_value(json_object_get(tags, key));
        if (v && strcmp(v, eq + 1) == 0)
            return true;
    }
    return false;
}

/* "against": at most PW_AGAINST_MAX {"name", "value"} objects of
 * strings, all of one variable, values distinct and none the job's own
 * value of it. 0, or -1 with err. */
static int
s_check_against(co_jobreq_t *c, char *err, size_t errlen)
{
    size_t n = json_array_size(c->against);
    if (c->against && (!json_is_array(c->against) || n > PW_AGAINST_MAX)) {
        pw_err(err, errlen, "\"against\" must be an array of at most %d "
               "{\"name\", \"value\"} objects", PW_AGAINST_MAX);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *a = json_array_get(c->against, i);
        const char *name = json_string_value(json_object_get(a, "name"));
        const char *value = json_string_value(json_object_get(a, "value"));
        if (!json_is_object(a) || json_object_size(a) != 2 ||
            !pw_var_name_ok(name) || !value ||
            strlen(value) > CO_JOBREQ_MAX_TEXT) {
            pw_err(err, errlen, "\"against\"[%zu] must be {\"name\": a "
                   "variable name, \"value\": a string of at most %d "
                   "bytes}", i, CO_JOBREQ_MAX_TEXT);
            return -1;
        }
        if (i == 0)
            c->against_name = name;
        if (strcmp(name, c->against_name) != 0) {
            pw_err(err, errlen, "\"against\"[%zu]: values of one variable "
                   "only, the suite's revision (\"%s\", then \"%s\")", i,
                   c->against_name, name);
            return -1;
        }
        const char *own = json_string_value(json_object_get(c->vars, name));
        if (own && strcmp(own, value) == 0) {
            pw_err(err, errlen, "\"against\"[%zu]: %s=%s is the job's own "
                   "value (give another)", i, name, value);
            return -1;
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(json_string_value(json_object_get(
                    json_array_get(c->against, k), "value")), value) == 0) {
                pw_err(err, errlen, "\"against\"[%zu]: %s=%s given twice",
                       i, name, value);
                return -1;
            }
    }
    return 0;
}

void
co_jobreq_uuid(char *out, size_t len)
{
    unsigned char b[6];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        /* getrandom cannot fail for 6 bytes after boot; time is enough
         * to stay unique within one collector. */
        int64_t t = pw_clock_unix_us();
        memcpy(b, &t, sizeof b);
    }
    snprintf(out, len, "%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
             b[4], b[5]);
}

int
co_jobreq_parse(const json_t *args, co_jobreq_t *c, char *err, size_t errlen)
{
    c->suite = json_string_value(json_object_get(args, "suite"));
    if (!json_is_object(args) || !c->suite || !*c->suite ||
        strlen(c->suite) > CO_JOBREQ_MAX_TEXT) {
        pw_err(err, errlen, "\"suite\" must be a non-empty string of at most "
               "%d bytes", CO_JOBREQ_MAX_TEXT);
        return -1;
    }
    if (s_check_list(args, "hosts", CO_JOBREQ_MAX_HOSTS, err, errlen) ||
        s_check_list(args, "only", CO_JOBREQ_MAX_ITEMS, err, errlen) ||
        s_check_map(args, "tags", err, errlen) ||
        s_check_map(args, "vars", err, errlen))
        return -1;
    c->runs = json_object_get(args, "runs");
    c->expire = json_object_get(args, "expire_us");
    c->label = json_object_get(args, "label");
    /* "auto" is kept and offered as PW_RUNS_AUTO (pw_limits.h). */
    c->runs_auto = json_is_string(c->runs) &&
                   strcmp(json_string_value(c->runs), "auto") == 0;
    json_int_t runs = json_integer_value(c->runs);
    if (c->runs && !c->runs_auto &&
        (!json_is_integer(c->runs) || runs < 0 ||
         (runs > 0 && runs < PW_RUNS_MIN) || runs > PW_RUNS_MAX)) {
        pw_err(err, errlen, "\"runs\" must be 0 (the suite's), \"auto\" or "
               "an integer %d..%d", PW_RUNS_MIN, PW_RUNS_MAX);
        return -1;
    }
    if (c->expire && (!json_is_integer(c->expire) ||
                      json_integer_value(c->expire) < 0 ||
                      json_integer_value(c->expire) >
                      CO_JOBREQ_MAX_EXPIRE_US)) {
        pw_err(err, errlen, "\"expire_us\" must be 0 (never) or an integer "
               "of microseconds up to %lld (30 days)",
               (long long)CO_JOBREQ_MAX_EXPIRE_US);
        return -1;
    }
    if (c->label && (!json_is_string(c->label) ||
                     json_string_length(c->label) > CO_JOBREQ_MAX_TEXT)) {
        pw_err(err, errlen, "\"label\" must be a string of at most %d bytes",
               CO_JOBREQ_MAX_TEXT);
        return -1;
    }
    c->sel = json_object_get(args, "hosts");
    c->only = json_object_get(args, "only");
    c->tags = json_object_get(args, "tags");
    c->vars = json_object_get(args, "vars");
    c->against = json_object_get(args, "against");
    c->against_name = NULL;
    c->all = !c->sel || json_array_size(c->sel) == 0 ||
             s_list_has(c->sel, "all");
    return s_check_against(c, err, errlen);
}

void
co_jobreq_cannot_run(const co_jobreq_t *c, bool has_suite,
                     const char *benchmarks_json, char *why, size_t len)
{
    why[0] = '\0';
    if (!has_suite) {
        snprintf(why, len, "did not list suite \"%s\" in its last Hello",
                 c->suite);
        return;
    }
    json_t *b = json_loads(benchmarks_json, 0, NULL);
    for (size_t k = 0; k < json_array_size(c->only); k++) {
        const char *want = json_string_value(json_array_get(c->only, k));
        if (!s_list_has(b, want)) {
            snprintf(why, len, "its suite \"%s\" has no benchmark \"%s\"",
                     c->suite, want);
            break;
        }
    }
    json_decref(b);
}

int
co_jobreq_against_ok(const co_jobreq_t *c, const char *revision, char *why,
                     size_t len)
{
    why[0] = '\0';
    if (c->against_name && !*revision) {
        snprintf(why, len, "--against %s: its suite \"%s\" names no "
                 "revision variable (add \"revision: %s\" to compare its "
                 "values in one job; docs/suites.md \"Revision\")",
                 c->against_name, c->suite, c->against_name);
        return -1;
    }
    if (c->against_name && strcmp(revision, c->against_name) != 0) {
        snprintf(why, len, "--against %s: --against takes its suite "
                 "\"%s\"'s revision variable, %s", c->against_name,
                 c->suite, revision);
        return -1;
    }
    return 0;
}

int
co_jobreq_names_known(const json_t *named, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)named, k, v) {
        if (json_integer_value(v) == 0) {
            pw_err(err, errlen, "no host is named \"%s\" (parity hosts "
                   "lists them)", k);
            return -1;
        }
        /* A host is its key; the name is only what it says in Hello.
         * Two keys saying the same name must not both get a job meant
         * for one machine. */
        if (json_integer_value(v) > 1) {
            pw_err(err, errlen, "host name \"%s\" is claimed by %"
                   JSON_INTEGER_FORMAT " hosts with different keys (parity "
                   "hosts lists them): select by tag, or take the other "
                   "keys off the allow-list", k, json_integer_value(v));
            return -1;
        }
    }
    return 0;
}

json_t *
co_jobreq_named(const co_jobreq_t *c)
{
    json_t *named = json_object();
    for (size_t i = 0; named && i < json_array_size(c->sel); i++) {
        const char *s = json_string_value(json_array_get(c->sel, i));
        if (strcmp(s, "all") != 0 && !strchr(s, '='))
            json_object_set_new(named, s, json_integer(0));
    }
    return named;
}

bool
co_jobreq_picks(const co_jobreq_t *c, json_t *named, const char *name,
                const char *tags_json)
{
    json_t *nm = json_object_get(named, name);
    if (nm)
        json_integer_set(nm, json_integer_value(nm) + 1);
    if (c->all || nm)
        return true;
    json_t *tags = json_loads(tags_json, 0, NULL);
    bool pick = s_tag_match(c->sel, tags);
    json_decref(tags);
    return pick;
}

const char *
co_jobreq_revision_hint(const json_t *vars, const json_t *prev)
{
    const char *key, *differs = NULL;
    json_t *v;
    if (!json_is_object(vars) || !json_is_object(prev) ||
        json_object_size(vars) != json_object_size(prev))
        return NULL;
    json_object_foreach((json_t *)vars, key, v) {
        json_t *p = json_object_get(prev, key);
        if (!json_is_string(p) || !json_is_string(v))
            return NULL;
        if (json_equal(v, p))
            continue;
        if (differs)
            return NULL;
        differs = key;
    }
    return differs;
}
