/* test_co_reply.c -- co_reply's parts that need no database: a command's
 * status and error line, the tags argument (an object of strings, as
 * jsonb text) and an integer argument in its range, each refusal's exact
 * text and status, an environment field's value in either shape, and
 * the cross-host summary of entries without a verdict. */
#include <stdlib.h>
#include <string.h>

#include "co_reply.h"
#include "tap.h"

int
main(void)
{
    char err[256] = "stale";
    co_reply_t c = co_reply_begin(NULL, NULL, err, sizeof err);
    ok(c.status == CO_REPLY_OK && err[0] == '\0',
       "begin: OK and an empty error line");

    json_t *args = json_pack("{s:{s:s,s:s}}", "tags", "branch", "main",
                             "commit", "c1");
    char *tags = co_reply_tags_arg(&c, args);
    json_t *back = tags ? json_loads(tags, 0, NULL) : NULL;
    ok(back && json_equal(back, json_object_get(args, "tags")),
       "tags: the object as JSON text (%s)", tags ? tags : "NULL");
    free(tags);
    json_decref(back);
    json_decref(args);
    args = json_object();
    tags = co_reply_tags_arg(&c, args);
    ok(tags && strcmp(tags, "{}") == 0, "no tags: {}");
    free(tags);
    json_decref(args);
    args = json_pack("{s:{s:i}}", "tags", "n", 3);
    ok(co_reply_tags_arg(&c, args) == NULL && c.status == CO_REPLY_BADARGS
       && strcmp(err, "tag \"n\" must be a string") == 0,
       "a tag that is not a string: %s", err);
    json_decref(args);

    c = co_reply_begin(NULL, NULL, err, sizeof err);
    json_int_t v = 0;
    args = json_pack("{s:i}", "limit", 20);
    ok(co_reply_int_arg(&c, args, "limit", 1, 100, 50, &v) && v == 20,
       "an integer in range");
    ok(co_reply_int_arg(&c, args, "other", 1, 100, 50, &v) && v == 50,
       "absent: the default");
    json_object_set_new(args, "limit", json_integer(0));
    ok(!co_reply_int_arg(&c, args, "limit", 1, 100, 50, &v)
       && c.status == CO_REPLY_BADARGS && strcmp(err, "\"limit\" must be an "
       "integer from 1 to 100") == 0, "out of range: %s", err);
    json_object_set_new(args, "limit", json_string("9"));
    c = co_reply_begin(NULL, NULL, err, sizeof err);
    ok(!co_reply_int_arg(&c, args, "limit", 1, 100, 50, &v)
       && c.status == CO_REPLY_BADARGS, "a string is not an integer");
    json_decref(args);

    json_t *env = json_pack("{s:{s:s,s:s},s:s}", "kernel", "value", "6.1",
                            "source", "uname", "arch", "x86_64");
    json_t *k = co_reply_env_value(env, "kernel"),
           *a = co_reply_env_value(env, "arch"),
           *m = co_reply_env_value(env, "missing");
    ok(strcmp(json_string_value(k), "6.1") == 0
       && strcmp(json_string_value(a), "x86_64") == 0 && json_is_null(m),
       "an environment field: {value, source} or bare, null when absent");
    json_decref(k);
    json_decref(a);
    json_decref(m);
    ok(strcmp(co_reply_str(env, "arch"), "x86_64") == 0
       && strcmp(co_reply_str(env, "kernel"), "") == 0,
       "co_reply_str: a string member, \"\" otherwise");
    json_decref(env);

    c = co_reply_begin(NULL, NULL, err, sizeof err);
    co_reply_fail(&c, CO_REPLY_NOTFOUND, "no job \"%s\"", "x");
    int status = -1;
    json_t *body = co_reply_end(&c, NULL, &status);
    ok(!body && status == CO_REPLY_NOTFOUND && strcmp(err, "no job \"x\"")
       == 0, "fail, then end: the status and line kept");
    c = co_reply_begin(NULL, NULL, err, sizeof err);
    body = co_reply_end(&c, NULL, &status);
    ok(!body && status == CO_REPLY_UNAVAILABLE && strcmp(err, "out of "
       "memory") == 0, "no body and no failure said: out of memory");
    return tap_done();
}
