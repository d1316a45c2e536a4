/* test_env.c -- ag_env on this machine and on two fixture trees laid out
 * like / : one with everything pyperf warns about (powersave governor,
 * turbo on, on battery, busy, a CPU quota) and one with nothing, where
 * every file-backed field must be absent rather than guessed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ag_env.h"
#include "tap.h"

static char s_root[256];

/* Write text to root/rel, making the directories. */
static void
s_file(const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s%s", s_root, rel);
    for (char *p = path + strlen(s_root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static const char *
s_str(const json_t *env, const char *key)
{
    return json_string_value(ag_env_value(env, key));
}

static const char *
s_source(const json_t *env, const char *key)
{
    return json_string_value(json_object_get(json_object_get(env, key),
                                             "source"));
}

/* The message of the warning with this code, or NULL. */
static const char *
s_warning(const json_t *env, const char *code)
{
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(env, "warnings"), i, w)
        if (strcmp(json_string_value(json_object_get(w, "code")), code) == 0)
            return json_string_value(json_object_get(w, "message"));
    return NULL;
}

int
main(void)
{
    char err[256];

    /* This machine. */
    json_t *env = ag_env_collect(NULL, 0, err, sizeof err);
    ok(env != NULL, "collect on this machine");
    ok(s_str(env, "hostname") && strcmp(s_source(env, "hostname"),
                                        "uname(2)") == 0,
       "hostname from uname(2)");
    ok(json_integer_value(ag_env_value(env, "logical_cpus")) ==
       sysconf(_SC_NPROCESSORS_ONLN), "logical_cpus");
    ok(json_integer_value(ag_env_value(env, "memory_total_kb")) > 0,
       "memory_total_kb");
    ok(json_is_array(json_object_get(env, "cpus")) &&
       json_array_size(json_object_get(env, "cpus")) > 0,
       "one entry per CPU in use");
    ok(json_is_array(json_object_get(env, "warnings")), "warnings list");
    json_decref(env);

    /* Everything to warn about. */
    snprintf(s_root, sizeof s_root, "/tmp/parity-env-XXXXXX");
    if (!mkdtemp(s_root)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    s_file("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
           "powersave\n");
    s_file("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver",
           "intel_pstate\n");
    s_file("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_min_freq", "800000\n");
    s_file("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq",
           "4200000\n");
    s_file("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq",
           "3100000\n");
    s_file("/sys/devices/system/cpu/cpu0/topology/core_id", "0\n");
    s_file("/sys/devices/system/cpu/cpu0/topology/physical_package_id", "0\n");
    s_file("/sys/devices/system/cpu/cpu1/topology/core_id", "0\n");
    s_file("/sys/devices/system/cpu/cpu1/topology/physical_package_id", "0\n");
    s_file("/sys/devices/system/cpu/intel_pstate/no_turbo", "0\n");
    s_file("/sys/devices/system/cpu/isolated", "1\n");
    s_file("/sys/devices/system/cpu/smt/control", "on\n");
    s_file("/sys/class/power_supply/BAT0/type", "Battery\n");
    s_file("/sys/class/power_supply/BAT0/status", "Discharging\n");
    s_file("/sys/class/power_supply/AC/type", "Mains\n");
    s_file("/sys/class/power_supply/AC/online", "0\n");
    s_file("/proc/self/cgroup", "0::/bench.slice\n");
    s_file("/sys/fs/cgroup/bench.slice/cpu.max", "50000 100000\n");
    s_file("/sys/fs/cgroup/bench.slice/memory.max", "1073741824\n");
    s_file("/proc/loadavg", "64.00 8.00 1.00 1/100 1\n");
    s_file("/proc/meminfo", "MemTotal:       1000 kB\nMemAvailable:    500 kB\n");
    s_file("/proc/cpuinfo", "processor\t: 0\nmodel name\t: Fixture CPU 9000\n");
    s_file("/proc/sys/kernel/randomize_va_space", "2\n");
    s_file("/proc/sys/kernel/random/boot_id", "fixture-boot-id\n");
    s_file("/proc/uptime", "12.50 20.00\n");
    s_file("/sys/kernel/mm/transparent_hugepage/enabled",
           "always madvise [never]\n");
    s_file("/sys/devices/system/clocksource/clocksource0/current_clocksource",
           "hpet\n");
    s_file("/etc/os-release", "NAME=Fix\nPRETTY_NAME=\"Fixture OS 1\"\n");

    int cpu0[] = { 0 };
    env = ag_env_collect_root(s_root, cpu0, 1, err, sizeof err);
    ok(env != NULL, "collect on the warning fixture");
    json_t *c0 = json_array_get(json_object_get(env, "cpus"), 0);
    ok_str(s_str(c0, "governor"), "powersave", "cpu 0 governor");
    ok_str(s_source(c0, "governor"),
           "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
           "with its source (the plain path)");
    ok(json_integer_value(ag_env_value(c0, "max_freq_khz")) == 4200000 &&
       json_integer_value(ag_env_value(c0, "cur_freq_khz")) == 3100000,
       "frequencies");
    ok_str(s_str(env, "cpu_model"), "Fixture CPU 9000", "cpu_model");
    ok_str(s_str(env, "os_release"), "Fixture OS 1", "os_release unquoted");
    ok(json_integer_value(ag_env_value(env, "physical_cores")) == 1,
       "two CPUs on one core: 1 physical core");
    ok_str(s_str(env, "isolated_cpus"), "1", "isolated CPUs");
    ok_str(s_str(env, "transparent_hugepages"), "never", "THP setting");
    ok_str(s_str(env, "clocksource"), "hpet", "clocksource");
    ok_str(s_str(env, "boot_id"), "fixture-boot-id", "boot_id");
    ok_str(s_str(env, "power_source"), "battery", "on battery");
    ok(json_integer_value(ag_env_value(env, "memory_limit_bytes")) ==
       1073741824, "cgroup v2 memory.max");
    ok(json_number_value(ag_env_value(env, "cpu_quota")) == 0.5,
       "cgroup v2 cpu.max: 0.5 CPUs");
    ok(json_is_true(ag_env_value(env, "turbo")), "turbo on");
    ok_str(s_warning(env, "governor"), "CPU 0: scaling governor is "
           "\"powersave\", not \"performance\"", "governor warning");
    ok_str(s_warning(env, "turbo"), "turbo boost is on "
           "(/sys/devices/system/cpu/intel_pstate/no_turbo is 0)",
           "turbo warning");
    ok_str(s_warning(env, "battery"), "running on battery power",
           "battery warning");
    ok_str(s_warning(env, "cpu_quota"), "a CPU quota of 0.50 CPUs is set "
           "(/sys/fs/cgroup/bench.slice/cpu.max: 50000 100000)",
           "CPU quota warning");
    char want[128];
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(want, sizeof want, "load average 64.00 is above 0.1 per core "
             "(%ld cores)", ncpu);
    ok_str(s_warning(env, "load"), want, "load warning");
    json_decref(env);

    /* A quiet machine: performance governor, no boost, AC, idle. */
    s_file("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
           "performance\n");
    s_file("/sys/devices/system/cpu/intel_pstate/no_turbo", "1\n");
    s_file("/sys/class/power_supply/AC/online", "1\n");
    s_file("/proc/loadavg", "0.00 0.00 0.00 1/100 1\n");
    s_file("/sys/fs/cgroup/bench.slice/cpu.max", "max 100000\n");
    env = ag_env_collect_root(s_root, cpu0, 1, err, sizeof err);
    ok(json_array_size(json_object_get(env, "warnings")) == 0,
       "nothing to warn about: no warnings");
    ok_str(s_str(env, "power_source"), "ac", "on AC (mains online)");
    ok(json_is_false(ag_env_value(env, "turbo")), "turbo off");
    ok(!ag_env_value(env, "cpu_quota") &&
       strcmp(s_str(env, "cgroup_cpu_max"), "max 100000") == 0,
       "cpu.max \"max\": no quota");
    json_decref(env);

    /* cgroup v1: the cpu controller's own line, not cpuset's. */
    s_file("/proc/self/cgroup", "5:cpuset:/elsewhere\n3:cpu,cpuacct:/grp\n"
           "4:memory:/grp\n0::/\n");
    s_file("/sys/fs/cgroup/cpu/grp/cpu.cfs_quota_us", "25000\n");
    s_file("/sys/fs/cgroup/cpu/grp/cpu.cfs_period_us", "100000\n");
    s_file("/sys/fs/cgroup/cpu/elsewhere/cpu.cfs_quota_us", "-1\n");
    s_file("/sys/fs/cgroup/cpu/elsewhere/cpu.cfs_period_us", "100000\n");
    s_file("/sys/fs/cgroup/memory/grp/memory.limit_in_bytes", "2147483648\n");
    env = ag_env_collect_root(s_root, cpu0, 1, err, sizeof err);
    ok(json_integer_value(ag_env_value(env, "cgroup_cfs_quota_us")) ==
       25000 && json_number_value(ag_env_value(env, "cpu_quota")) == 0.25,
       "cgroup v1 quota from the cpu controller's path");
    ok_str(s_warning(env, "cpu_quota"), "a CPU quota of 0.25 CPUs is set "
           "(/sys/fs/cgroup/cpu/grp/cpu.cfs_quota_us: 25000 per 100000 µs)",
           "v1 CPU quota warning");
    ok(json_integer_value(ag_env_value(env, "memory_limit_bytes")) ==
       2147483648LL, "cgroup v1 memory limit");
    json_decref(env);

    /* An empty tree: everything read from files is absent. */
    char empty[300];
    snprintf(empty, sizeof empty, "%s/empty", s_root);
    mkdir(empty, 0755);
    env = ag_env_collect_root(empty, cpu0, 1, err, sizeof err);
    static const char *const absent[] = {
        "os_release", "cpu_model", "physical_cores", "smt", "turbo",
        "isolated_cpus", "cgroup_cpu_max", "cpu_quota", "memory_limit_bytes",
        "load_average", "memory_total_kb", "power_source", "aslr",
        "clocksource", "transparent_hugepages", "boot_id", "uptime_s", NULL };
    int missing = 0;
    for (size_t i = 0; absent[i]; i++)
        if (json_object_get(env, absent[i])) {
            tap_diag("present: %s", absent[i]);
            missing++;
        }
    ok(missing == 0, "no file, no field: nothing guessed");
    ok(json_object_size(json_array_get(json_object_get(env, "cpus"), 0)) == 1,
       "cpu 0 has only its number");
    ok(s_str(env, "hostname") && s_str(env, "agent_version"),
       "uname and the build still answer");
    json_decref(env);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_root);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", s_root);
    return tap_done();
}
