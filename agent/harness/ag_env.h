/* ag_env.h -- the machine a benchmark ran on, as the seeds ask to record
 * it (and pyperf's `system show` checks it).
 *
 * Every field is {"value": ..., "source": "<file path or call>"} and is
 * left out, never guessed, when the machine does not have it (no cpufreq
 * directory in a VM, no battery on a server). Per-CPU fields (governor,
 * scaling driver, frequencies) are given for the CPUs in use: the
 * benchmark's `cpus:` or the agent's affinity. "warnings" is a list of
 * {"code", "message"} for what makes timings less trustworthy: governor
 * not "performance", turbo/boost on, on battery, load above 0.1 per core,
 * a CPU quota. docs/agent.md lists every field.
 *
 * Nothing here prints or exits. Reading /proc and /sys is all it does.
 */
#ifndef AG_ENV_H
#define AG_ENV_H

#include <stddef.h>
#include <jansson.h>

/* Load per core above which the machine is called busy (pyperf's). */
#define AG_ENV_LOAD_PER_CORE_MAX 0.1
/* CPUs described one by one at most; more are summarised. */
#define AG_ENV_MAX_CPUS_LISTED 256

/* Collect the environment for cpus[0..ncpus-1] (NULL/0: the calling
 * thread's affinity). Returns a new object the caller owns (json_decref),
 * with "warnings" filled; NULL with err set only when out of memory. */
json_t *ag_env_collect(const int *cpus, size_t ncpus, char *err,
                       size_t errlen);

/* The same, reading every /proc and /sys file under root (a directory
 * laid out like /, for tests; "" or NULL is the machine itself). uname,
 * sysconf and the affinity still come from the running system; "source"
 * names the plain path. */
json_t *ag_env_collect_root(const char *root, const int *cpus, size_t ncpus,
                            char *err, size_t errlen);

/* The value of field key in env (borrowed), or NULL when absent. */
const json_t *ag_env_value(const json_t *env, const char *key);

#endif
