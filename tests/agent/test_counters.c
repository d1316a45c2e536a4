/* test_counters.c -- ag_counters through ag_spawn against real processes
 * (parity-testprog): only the measured command and its children are
 * counted, never the harness; a missing counter reads -1 and is named
 * once with its reason.
 *
 *   test-agent-counters PATH/TO/parity-testprog
 *
 * This VM has no virtual PMU (instructions and cycles are "not
 * supported"); task-clock, a software counter, always opens under
 * perf_event_paranoid <= 2. Hardware counters are checked where they
 * open, and their absence is checked where they do not. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "ag_counters.h"
#include "ag_env.h"
#include "ag_spawn.h"
#include "tap.h"

static const char *s_prog;

static int
s_run(ag_counters_t *c, const char *const *argv, ag_spawn_result_t *res)
{
    ag_spawn_req_t req;
    char err[256];
    ag_spawn_req_init(&req);
    req.argv = argv;
    req.counters = c;
    int rc = ag_spawn_run(&req, res, err, sizeof err);
    if (rc != AG_SPAWN_OK)
        printf("# %s\n", err);
    return rc;
}

/* Burn the calling thread's CPU for us microseconds. */
static void
s_burn(double us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do {
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((double)(b.tv_sec - a.tv_sec) * 1e6 +
             (double)(b.tv_nsec - a.tv_nsec) / 1e3 < us);
}

int
main(int argc, char **argv)
{
    s_prog = argc > 1 ? argv[1] : "parity-testprog";
    ag_counters_t *c = ag_counters_new();
    ok(c != NULL, "ag_counters_new");
    const char *missing = ag_counters_missing(c);
    printf("# missing: %s\n", *missing ? missing : "(none)");

    /* Spin 60 ms of CPU in the child: task-clock sees about that. */
    const char *spin[] = { s_prog, "spin", "60000", NULL };
    ag_spawn_result_t r;
    ok(s_run(c, spin, &r) == AG_SPAWN_OK && r.exit_status == 0,
       "spin 60 ms with counters");
    double cpu_ns = (r.user_us + r.sys_us) * 1e3;
    printf("# task_clock %lld ns, rusage cpu %.0f ns, wall %.0f us\n",
           (long long)r.counters[AG_CTR_TASK_CLOCK], cpu_ns, r.wall_us);
    ok(r.counters[AG_CTR_TASK_CLOCK] >= 0.8 * cpu_ns &&
       r.counters[AG_CTR_TASK_CLOCK] <= 1.25 * cpu_ns + 2e6,
       "task-clock counts the child's CPU time (%lld ns, rusage %.0f ns)",
       (long long)r.counters[AG_CTR_TASK_CLOCK], cpu_ns);

    /* The child's own start is its CPU too: under ASan, mapping the
     * shadow memory took 60 ms of it on one VM. The same program asked
     * to sleep 0 gives that cost. */
    const char *nap0[] = { s_prog, "sleep", "0", NULL };
    ok(s_run(c, nap0, &r) == AG_SPAWN_OK, "sleep 0 with counters");
    long long start = r.counters[AG_CTR_TASK_CLOCK];
    /* The harness's own CPU is not counted: 80 ms burnt by this thread
     * between runs, then a child that sleeps. */
    s_burn(80000);
    const char *nap[] = { s_prog, "sleep", "50000", NULL };
    ok(s_run(c, nap, &r) == AG_SPAWN_OK, "sleep 50 ms with counters");
    ok(start >= 0 && r.counters[AG_CTR_TASK_CLOCK] >= 0 &&
       r.counters[AG_CTR_TASK_CLOCK] < start + 20e6,
       "a sleeping child counts little task-clock (%lld ns; its start "
       "alone %lld ns), nothing of the 80 ms the harness burnt before it "
       "or the 50 ms it slept",
       (long long)r.counters[AG_CTR_TASK_CLOCK], start);

    /* Children of the command are counted: sh runs two spinners. */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s' spin 30000; '%s' spin 30000", s_prog,
             s_prog);
    const char *sh[] = { "/bin/sh", "-c", cmd, NULL };
    ok(s_run(c, sh, &r) == AG_SPAWN_OK, "sh -c with two spinning children");
    /* wait4's rusage of sh includes the children it reaped. */
    cpu_ns = (r.user_us + r.sys_us) * 1e3;
    ok(cpu_ns > 30e6 && r.counters[AG_CTR_TASK_CLOCK] >= 0.8 * cpu_ns,
       "their CPU is in the count (%lld ns; rusage of sh and its children "
       "%.0f ns)", (long long)r.counters[AG_CTR_TASK_CLOCK], cpu_ns);

    /* Every later run of the same set is counted too: one event kept
     * across spawns once counted the first two and 0 from then on. */
    const char *spin10[] = { s_prog, "spin", "10000", NULL };
    int counted = 0;
    for (int k = 0; k < 6; k++) {
        if (s_run(c, spin10, &r) != AG_SPAWN_OK)
            continue;
        /* The fault gave 0. spin runs 10 ms of wall time on the CPU,
         * so even a loaded machine gives it over 1 ms; rusage is no
         * yardstick at this size (tick-sampled, it once said 3.9 ms
         * beside task-clock's 12.6 ms). */
        cpu_ns = (r.user_us + r.sys_us) * 1e3;
        if (r.counters[AG_CTR_TASK_CLOCK] > 1e6)
            counted++;
        else
            printf("# run %d: task_clock %lld ns, rusage %.0f ns\n", k,
                   (long long)r.counters[AG_CTR_TASK_CLOCK], cpu_ns);
    }
    ok(counted == 6, "6 more runs of one set: each counts its CPU time "
       "(%d did)", counted);

    /* Hardware counters: counted where they open, named where not. */
    for (int k = AG_CTR_INSTRUCTIONS; k <= AG_CTR_CYCLES; k++) {
        const char *name = ag_counters_name((ag_ctr_t)k);
        s_run(c, spin, &r);
        if (r.counters[k] >= 0) {
            ok(r.counters[k] > 1000000, "%s: %lld for 60 ms of spinning",
               name, (long long)r.counters[k]);
        } else {
            ok(strstr(missing, name) != NULL &&
               (strstr(missing, "not supported") ||
                strstr(missing, "not permitted")),
               "%s missing: -1, and ag_counters_missing names it with the "
               "reason (%s)", name, missing);
        }
    }
    /* The environment says once what this host cannot count. */
    char err[256], want[400];
    json_t *env = ag_env_collect(NULL, 0, err, sizeof err);
    const json_t *have = ag_env_value(env, "counters");
    ok(json_is_array(have) && json_array_size(have) ==
       (size_t)(r.counters[0] >= 0) + (size_t)(r.counters[1] >= 0) + 1,
       "env: counters lists the %zu this host keeps",
       json_array_size(have));
    snprintf(want, sizeof want, "%s; runs keep wall time without them",
             missing);
    size_t i, n = 0;
    json_t *w;
    const char *text = NULL;
    json_array_foreach(json_object_get(env, "warnings"), i, w)
        if (strcmp(json_string_value(json_object_get(w, "code")),
                   "counters") == 0) {
            n++;
            text = json_string_value(json_object_get(w, "message"));
        }
    if (*missing)
        ok(n == 1 && text && strcmp(text, want) == 0,
           "env: one warning, code counters: %s", text ? text : "(none)");
    else
        ok(n == 0, "env: every counter opens, no warning");
    json_decref(env);
    ag_counters_destroy(&c);
    ok(c == NULL, "destroy clears the pointer");

    /* Without a set nothing is counted. */
    ag_spawn_req_t req;
    ag_spawn_req_init(&req);
    req.argv = nap;
    ok(ag_spawn_run(&req, &r, err, sizeof err) == AG_SPAWN_OK &&
       r.counters[0] == -1 && r.counters[1] == -1 && r.counters[2] == -1,
       "no counters asked for: all -1");
    return tap_done();
}
