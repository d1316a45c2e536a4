/* test_co_jobreq.c -- co_jobreq, decisions without a database: a run
 * request's arguments checked with the exact error a client gets, which
 * hosts a host list picks (names counted, "k=v" tags, "all"), why a
 * picked host cannot run a job, --against against the suite's revision,
 * names that match no host or several, the revision hint, the job id. */
#include <stdio.h>
#include <string.h>

#include "co_jobreq.h"
#include "pw_limits.h"
#include "tap.h"

/* Parse args (JSON text): 0, or -1 with err. */
static int
s_parse(const char *text, co_jobreq_t *c, json_t **keep, char *err,
        size_t len)
{
    json_decref(*keep);
    *keep = json_loads(text, 0, NULL);
    err[0] = '\0';
    return co_jobreq_parse(*keep, c, err, len);
}

static void
s_refusals(void)
{
    char err[512], want[256];
    co_jobreq_t c;
    json_t *a = NULL;
    ok(s_parse("{}", &c, &a, err, sizeof err) == -1 && strcmp(err,
       "\"suite\" must be a non-empty string of at most 1024 bytes") == 0,
       "no suite: %s", err);
    ok(s_parse("{\"suite\": \"s\", \"runs\": 1}", &c, &a, err, sizeof err)
       == -1, "runs 1 is refused");
    snprintf(want, sizeof want, "\"runs\" must be 0 (the suite's), \"auto\" "
             "or an integer %d..%d", PW_RUNS_MIN, PW_RUNS_MAX);
    ok(strcmp(err, want) == 0, "with the range: %s", err);
    ok(s_parse("{\"suite\": \"s\", \"runs\": \"many\"}", &c, &a, err,
               sizeof err) == -1 && strcmp(err, want) == 0,
       "runs of another word is refused alike");
    ok(s_parse("{\"suite\": \"s\", \"expire_us\": -1}", &c, &a, err,
               sizeof err) == -1 && strstr(err, "\"expire_us\" must be 0 "
               "(never)"), "a negative expiry: %s", err);
    ok(s_parse("{\"suite\": \"s\", \"label\": 5}", &c, &a, err, sizeof err)
       == -1 && strcmp(err, "\"label\" must be a string of at most 1024 "
       "bytes") == 0, "a label that is not text: %s", err);
    ok(s_parse("{\"suite\": \"s\", \"hosts\": [\"\"]}", &c, &a, err,
               sizeof err) == -1 && strncmp(err, "\"hosts\"[0] must be a "
               "non-empty string", 27) == 0, "an empty host name: %s", err);
    ok(s_parse("{\"suite\": \"s\", \"tags\": {\"k\": 1}}", &c, &a, err,
               sizeof err) == -1 && strncmp(err, "\"tags\"", 6) == 0,
       "a tag value that is not text: %s", err);
    json_decref(a);
}

static void
s_picks(void)
{
    char err[512], why[CO_JOBREQ_WHY_MAX];
    co_jobreq_t c;
    json_t *a = NULL;
    ok(s_parse("{\"suite\": \"s\", \"runs\": \"auto\", \"hosts\": [\"alpha\", "
               "\"gpu=yes\"], \"only\": [\"b1\"]}", &c, &a, err, sizeof err)
       == 0 && c.runs_auto && !c.all, "a host list, runs auto (%s)", err);
    json_t *named = co_jobreq_named(&c);
    ok(json_object_size(named) == 1 && json_object_get(named, "alpha"),
       "named: the plain names only");
    ok(co_jobreq_picks(&c, named, "alpha", "{}"), "alpha is picked by name");
    ok(co_jobreq_picks(&c, named, "beta", "{\"gpu\": \"yes\"}"),
       "beta by its tag gpu=yes");
    ok(!co_jobreq_picks(&c, named, "gamma", "{\"gpu\": \"no\"}"),
       "gamma, tagged gpu=no, is not");
    ok(co_jobreq_names_known(named, err, sizeof err) == 0,
       "a name said by one host is known");
    co_jobreq_picks(&c, named, "alpha", "{}");
    ok(co_jobreq_names_known(named, err, sizeof err) == -1
       && strncmp(err, "host name \"alpha\" is claimed by 2 hosts with "
       "different keys", 50) == 0, "a name two keys say is refused: %s", err);
    json_decref(named);
    named = json_pack("{s:i}", "ghost", 0);
    ok(co_jobreq_names_known(named, err, sizeof err) == -1 && strcmp(err,
       "no host is named \"ghost\" (parity hosts lists them)") == 0,
       "a name no host says: %s", err);
    json_decref(named);

    co_jobreq_cannot_run(&c, false, "[]", why, sizeof why);
    ok(strcmp(why, "did not list suite \"s\" in its last Hello") == 0,
       "a host without the suite: %s", why);
    co_jobreq_cannot_run(&c, true, "[\"b2\"]", why, sizeof why);
    ok(strcmp(why, "its suite \"s\" has no benchmark \"b1\"") == 0,
       "a suite without the --only benchmark: %s", why);
    co_jobreq_cannot_run(&c, true, "[\"b1\", \"b2\"]", why, sizeof why);
    ok(why[0] == '\0', "a host that can run it: no reason");

    ok(s_parse("{\"suite\": \"s\", \"hosts\": [\"all\"]}", &c, &a, err,
               sizeof err) == 0 && c.all, "\"all\" picks every host");
    ok(co_jobreq_picks(&c, NULL, "anyone", "{}"), "so anyone");
    json_decref(a);
}

static void
s_against(void)
{
    char err[512], why[CO_JOBREQ_WHY_MAX];
    co_jobreq_t c;
    json_t *a = NULL;
    ok(s_parse("{\"suite\": \"s\", \"vars\": {\"commit\": \"c2\"}, "
               "\"against\": [{\"name\": \"commit\", \"value\": \"c1\"}]}",
               &c, &a, err, sizeof err) == 0
       && strcmp(c.against_name, "commit") == 0, "--against commit=c1");
    ok(co_jobreq_against_ok(&c, "commit", why, sizeof why) == 0,
       "fits a suite whose revision is commit");
    ok(co_jobreq_against_ok(&c, "", why, sizeof why) == -1
       && strncmp(why, "--against commit: its suite \"s\" names no revision "
       "variable", 58) == 0, "a suite with no revision: %s", why);
    ok(co_jobreq_against_ok(&c, "sha", why, sizeof why) == -1
       && strcmp(why, "--against commit: --against takes its suite \"s\"'s "
       "revision variable, sha") == 0, "another revision variable: %s", why);
    ok(s_parse("{\"suite\": \"s\", \"vars\": {\"commit\": \"c1\"}, "
               "\"against\": [{\"name\": \"commit\", \"value\": \"c1\"}]}",
               &c, &a, err, sizeof err) == -1 && strstr(err, "is the job's "
               "own"), "--against the job's own value: %s", err);
    json_decref(a);
}

int
main(void)
{
    s_refusals();
    s_picks();
    s_against();

    json_t *v = json_pack("{s:s,s:s}", "commit", "c2", "mode", "fast");
    json_t *p = json_pack("{s:s,s:s}", "commit", "c1", "mode", "fast");
    const char *hint = co_jobreq_revision_hint(v, p);
    ok(hint && strcmp(hint, "commit") == 0, "the one variable that differs "
       "is the revision hint");
    json_object_set_new(p, "mode", json_string("slow"));
    ok(co_jobreq_revision_hint(v, p) == NULL, "two that differ: no hint");
    ok(co_jobreq_revision_hint(v, NULL) == NULL, "no earlier job: no hint");
    json_decref(v);
    json_decref(p);

    char id1[16], id2[16];
    co_jobreq_uuid(id1, sizeof id1);
    co_jobreq_uuid(id2, sizeof id2);
    ok(strlen(id1) == 12 && strspn(id1, "0123456789abcdef") == 12
       && strcmp(id1, id2) != 0, "job ids: 12 hex digits, new each time "
       "(%s, %s)", id1, id2);
    return tap_done();
}
