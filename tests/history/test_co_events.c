/* test_co_events.c -- co_events_group on canned change points: two hosts'
 * steps of one series key at one commit are one event (its id the
 * smaller member's, hosts named, magnitudes spanned); another commit,
 * the other direction, another metric or the environment's side are
 * events of their own; an event is open while any member is; regressions
 * come first. */
#include <stdbool.h>
#include <string.h>

#include "co_events.h"
#include "tap.h"

static json_t *
s_cp(int id, const char *host, double magnitude, const char *commit,
     const char *metric, const char *quantity, bool regression)
{
    return json_pack("{s:I,s:s,s:s,s:s,s:s,s:{},s:s,s:s,s:f,s:s,s:s,s:b,s:b,"
                     "s:{s:{s:s},s:s,s:s},s:{s:{s:s},s:s,s:s},s:I,s:I,"
                     "s:n}",
                     "id", (json_int_t)id, "suite", "s", "benchmark", "b",
                     "subject", "new", "other", "old", "vars", "host", host,
                     "metric", metric, "magnitude", magnitude, "outcome",
                     magnitude > 1 ? "loss" : "win", "quantity",
                     quantity, "regression", regression, "within_noise", 0,
                     "before", "tags", "commit", "c1", "job", "", "run", "r1",
                     "after", "tags", "commit", commit, "job", "", "run",
                     "r2", "hosts_with_step", (json_int_t)2, "hosts_total",
                     (json_int_t)2, "confirm");
}

static json_t *
s_find(json_t *list, json_int_t id)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
        if (json_integer_value(json_object_get(e, "id")) == id)
            return e;
    return NULL;
}

int
main(void)
{
    json_t *open = json_pack("[o,o,o,o,o]",
        s_cp(7, "beta", 1.12, "c2", "ratio", "wall", true),
        s_cp(5, "alpha", 1.10, "c2", "ratio", "wall", true),
        s_cp(9, "alpha", 1.10, "c3", "ratio", "wall", true),
        s_cp(11, "alpha", 0.90, "c2", "ratio", "wall", false),
        s_cp(13, "alpha", 1.14, "c2", "ratio", "peak_rss", true));
    json_t *acked = json_pack("[o,o]",
        s_cp(3, "gamma", 1.11, "c2", "subject", "wall", true),
        s_cp(15, "alpha", 1.20, "c2", "other", "wall", false));
    ok(open && acked, "canned change points");
    json_t *ev = co_events_group(open, acked);
    ok(ev != NULL, "grouped");
    json_t *eo = json_object_get(ev, "open"), *ea = json_object_get(ev,
                                                                    "acked");
    ok(json_array_size(eo) == 4 && json_array_size(ea) == 1,
       "4 open events, 1 acked (%zu, %zu)", json_array_size(eo),
       json_array_size(ea));
    json_t *one = s_find(eo, 3);
    ok(one && json_array_size(json_object_get(one, "hosts")) == 3
       && json_array_size(json_object_get(one, "members")) == 3,
       "alpha, beta (ratio) and gamma (subject, acked) at c2: one event of "
       "3 hosts, open while any member is, its id the smallest member's");
    ok(one && json_number_value(json_object_get(one, "magnitude_min"))
       == 1.10 && json_number_value(json_object_get(one, "magnitude_max"))
       == 1.12, "its magnitudes spanned (1.10 to 1.12)");
    ok(one && strcmp(json_string_value(json_object_get(one, "direction")),
                     "slower") == 0, "a step above 1 is slower");
    ok(s_find(eo, 9) != NULL, "the same host at another commit: another "
       "event");
    json_t *fast = s_find(eo, 11);
    ok(fast && strcmp(json_string_value(json_object_get(fast, "direction")),
                      "faster") == 0, "the other direction: another event, "
       "faster");
    ok(s_find(eo, 13) != NULL, "another metric (peak_rss): another event");
    ok(s_find(ea, 15) != NULL, "the environment's side (other): another "
       "event, acked");
    ok(json_is_true(json_object_get(json_array_get(eo, 0), "regression")),
       "regressions first");
    json_decref(ev);
    json_decref(open);
    json_decref(acked);
    return tap_done();
}
