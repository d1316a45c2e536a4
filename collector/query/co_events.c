/* co_events.c -- fleet events from change points; see co_events.h. */
#include "co_events.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The key of cp's event: every field two members share. NULL on out of
 * memory; the caller frees. */
static char *
s_key(const json_t *cp)
{
    const json_t *after = json_object_get(cp, "after");
    const char *commit = json_string_value(json_object_get(
        json_object_get(after, "tags"), "commit"));
    const char *job = json_string_value(json_object_get(after, "job"));
    const char *metric = json_string_value(json_object_get(cp, "metric"));
    char *vars = json_dumps(json_object_get(cp, "vars"),
                            JSON_COMPACT | JSON_SORT_KEYS);
    char *key = NULL;
    bool env = metric && strcmp(metric, "other") == 0;
    bool up = json_number_value(json_object_get(cp, "magnitude")) > 1.0;
    /* The job first, as hosts_with_step counts: hosts of one job ran one
     * commit; a commit run again in another job is another event. */
    bool by_job = job && *job;
    /* The metric the series measures: another metric's steps are
     * another event. */
    const char *q = json_string_value(json_object_get(cp, "quantity"));
    if (vars && asprintf(&key, "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%d%d"
                         "\x1f%s%s", q ? q : "wall",
                         json_string_value(json_object_get(cp, "suite")),
                         json_string_value(json_object_get(cp, "benchmark")),
                         json_string_value(json_object_get(cp, "subject")),
                         json_string_value(json_object_get(cp, "other")),
                         vars, env, up,
                         by_job ? "j:" : commit ? "c:" : "r:",
                         by_job ? job : commit ? commit
                         : json_string_value(json_object_get(after, "run")))
        < 0)
        key = NULL;
    free(vars);
    return key;
}

static int
s_cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A new event from its first member. */
static json_t *
s_event_new(const json_t *cp)
{
    json_t *e = json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:O*,s:O,s:O,s:[],s:[],"
                          "s:[],s:b,s:b,s:O,s:b}",
        "suite", json_object_get(cp, "suite"),
        "benchmark", json_object_get(cp, "benchmark"),
        "subject", json_object_get(cp, "subject"),
        "other", json_object_get(cp, "other"),
        "vars", json_object_get(cp, "vars"),
        "metric", json_object_get(cp, "metric"),
        "quantity", json_object_get(cp, "quantity"),
        "before", json_object_get(cp, "before"),
        "after", json_object_get(cp, "after"),
        "hosts", "members", "mags", "regression", 0, "within_noise", 1,
        "outcome", json_object_get(cp, "outcome"), "open", 0);
    if (e && json_object_set_new(e, "confirm", json_null()) != 0) {
        json_decref(e);
        return NULL;
    }
    if (e && json_object_set(e, "trend", json_object_get(cp, "trend")
                             ? json_object_get(cp, "trend")
                             : json_null()) != 0) {
        json_decref(e);
        return NULL;
    }
    if (e && json_object_set_new(e, "direction", json_string(
            json_number_value(json_object_get(cp, "magnitude")) > 1.0
            ? "slower" : "faster")) != 0) {
        json_decref(e);
        return NULL;
    }
    return e;
}

/* Add cp (open or not) to event e. */
static int
s_event_add(json_t *e, const json_t *cp, bool open)
{
    json_t *hosts = json_object_get(e, "hosts");
    const char *host = json_string_value(json_object_get(cp, "host"));
    size_t i;
    json_t *h;
    bool seen = false;
    json_array_foreach(hosts, i, h)
        seen = seen || (host && strcmp(json_string_value(h), host) == 0);
    bool reg = json_is_true(json_object_get(cp, "regression"));
    json_int_t id = json_integer_value(json_object_get(cp, "id"));
    json_int_t total = json_integer_value(json_object_get(cp, "hosts_total"));
    int rc = 0;
    if (!seen && host)
        rc |= json_array_append_new(hosts, json_string(host));
    rc |= json_array_append_new(json_object_get(e, "members"),
                                json_integer(id));
    rc |= json_array_append_new(json_object_get(e, "mags"), json_real(
        json_number_value(json_object_get(cp, "magnitude"))));
    if (!json_object_get(e, "id") ||
        id < json_integer_value(json_object_get(e, "id")))
        rc |= json_object_set_new(e, "id", json_integer(id));
    if (total > json_integer_value(json_object_get(e, "hosts_total")))
        rc |= json_object_set_new(e, "hosts_total", json_integer(total));
    if (reg && !json_is_true(json_object_get(e, "regression")))
        rc |= json_object_set_new(e, "regression", json_true()) |
              json_object_set(e, "outcome", json_object_get(cp, "outcome"));
    if (!json_is_true(json_object_get(cp, "within_noise")))
        rc |= json_object_set_new(e, "within_noise", json_false());
    if (open)
        rc |= json_object_set_new(e, "open", json_true());
    /* The event's confirm: its members' newest (one confirm measures
     * them all), less the member's own host answer. */
    const json_t *k = json_object_get(cp, "confirm"),
                 *had = json_object_get(e, "confirm");
    if (json_is_object(k) && (!json_is_object(had) ||
                              json_integer_value(json_object_get(k, "id")) >
                              json_integer_value(json_object_get(had, "id")))) {
        json_t *copy = json_copy((json_t *)k);
        if (copy)
            json_object_del(copy, "host");   /* absent is fine */
        rc |= copy ? json_object_set_new(e, "confirm", copy) : -1;
    }
    return rc ? -1 : 0;
}

static int
s_cmp_name(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a),
                  json_string_value(*(json_t *const *)b));
}

/* The hosts by name, as every view lists them. */
static int
s_sort_hosts(json_t *e)
{
    json_t *hosts = json_object_get(e, "hosts"), *sorted = json_array(), *h;
    size_t n = json_array_size(hosts), i;
    json_t **v = malloc((n ? n : 1) * sizeof *v);
    int rc = -1;
    if (v && sorted) {
        json_array_foreach(hosts, i, h) v[i] = h;
        qsort(v, n, sizeof *v, s_cmp_name);
        rc = 0;
        for (i = 0; i < n; i++)
            rc |= json_array_append(sorted, v[i]);
        rc |= json_object_set(e, "hosts", sorted);
    }
    free(v);
    json_decref(sorted);
    return rc ? -1 : 0;
}

/* The magnitudes' median, min and max; "mags" and "open" go. */
static int
s_event_finish(json_t *e)
{
    json_t *mags = json_object_get(e, "mags");
    size_t n = json_array_size(mags), i;
    json_t *m;
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    json_array_foreach(mags, i, m) v[i] = json_number_value(m);
    qsort(v, n, sizeof *v, s_cmp_dbl);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
    int rc = json_object_set_new(e, "magnitude", json_real(med)) |
             json_object_set_new(e, "magnitude_min", json_real(v[0])) |
             json_object_set_new(e, "magnitude_max", json_real(v[n - 1])) |
             json_object_set_new(e, "hosts_with_step", json_integer(
                 (json_int_t)json_array_size(json_object_get(e, "hosts"))));
    free(v);
    json_object_del(e, "mags");
    return rc || s_sort_hosts(e) ? -1 : 0;
}

/* Regressions first, then the largest step, then the smallest id. */
static int
s_cmp_event(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int rx = json_is_true(json_object_get(x, "regression")),
        ry = json_is_true(json_object_get(y, "regression"));
    if (rx != ry)
        return ry - rx;
    double mx = fabs(log(json_number_value(json_object_get(x, "magnitude")))),
           my = fabs(log(json_number_value(json_object_get(y, "magnitude"))));
    if (mx != my)
        return mx < my ? 1 : -1;
    json_int_t ix = json_integer_value(json_object_get(x, "id")),
               iy = json_integer_value(json_object_get(y, "id"));
    return (ix > iy) - (ix < iy);
}

/* The events of map sorted into out's "open" and "acked". */
static json_t *
s_sorted(json_t *map)
{
    size_t n = json_object_size(map), k = 0;
    json_t **all = malloc((n ? n : 1) * sizeof *all), *e;
    json_t *out = json_pack("{s:[],s:[]}", "open", "acked");
    const char *key;
    if (!all || !out) {
        free(all);
        json_decref(out);
        return NULL;
    }
    json_object_foreach(map, key, e) all[k++] = e;
    qsort(all, n, sizeof *all, s_cmp_event);
    int rc = 0;
    for (k = 0; k < n; k++) {
        bool open = json_is_true(json_object_get(all[k], "open"));
        rc |= s_event_finish(all[k]);
        json_object_del(all[k], "open");
        rc |= json_array_append(json_object_get(out, open ? "open" : "acked"),
                                all[k]);
    }
    free(all);
    if (rc) {
        json_decref(out);
        return NULL;
    }
    return out;
}

json_t *
co_events_group(const json_t *open, const json_t *acked)
{
    json_t *map = json_object(), *out = NULL;
    const json_t *lists[2] = { open, acked };
    if (!map)
        return NULL;
    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *cp;
        json_array_foreach(lists[l], i, cp) {
            char *key = s_key(cp);
            json_t *e = key ? json_object_get(map, key) : NULL;
            if (key && !e && (e = s_event_new(cp)) &&
                json_object_set_new(map, key, e) != 0)
                e = NULL;
            free(key);
            if (!e || s_event_add(e, cp, l == 0) != 0)
                goto done;
        }
    }
    out = s_sorted(map);
done:
    json_decref(map);
    return out;
}
