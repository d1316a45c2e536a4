/* ag_env.c -- see ag_env.h. */
#include "ag_env.h"
#include "ag_counters.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "config.h"

/* The directory /proc and /sys are read under: "" for the machine, a
 * fixture tree for tests (ag_env_collect_root). Per thread, so collecting
 * stays thread-safe. */
static _Thread_local const char *s_root = "";

/* root + path into buf (sources in the output keep the plain path). */
static const char *
s_at(const char *path, char *buf, size_t cap)
{
    if (!*s_root)
        return path;
    snprintf(buf, cap, "%s%s", s_root, path);
    return buf;
}

/* Bounded read of a small text file, trailing whitespace cut. Returns
 * buf, or NULL when the file cannot be read or is empty. */
static char *
s_read(const char *path, char *buf, size_t cap)
{
    char full[4096];
    int fd = open(s_at(path, full, sizeof full), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t got = 0;
    while (got + 1 < cap) {
        ssize_t r = read(fd, buf + got, cap - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    while (got > 0 && isspace((unsigned char)buf[got - 1]))
        buf[--got] = '\0';
    return got ? buf : NULL;
}

/* Add {"value": v, "source": src} under key; steals v. */
static void
s_put(json_t *obj, const char *key, json_t *v, const char *src)
{
    if (!v)
        return;
    json_t *f = json_pack("{s:o,s:s}", "value", v, "source", src);
    if (f)
        json_object_set_new(obj, key, f);
}

static void
s_put_file(json_t *obj, const char *key, const char *path)
{
    char buf[512];
    if (s_read(path, buf, sizeof buf))
        s_put(obj, key, json_string(buf), path);
}

static void
s_put_int_file(json_t *obj, const char *key, const char *path)
{
    char buf[64], *end;
    if (!s_read(path, buf, sizeof buf))
        return;
    long long v = strtoll(buf, &end, 10);
    if (end != buf && *end == '\0')
        s_put(obj, key, json_integer(v), path);
}

static void
s_warn(json_t *warnings, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The message is made by jansson (json_vsprintf): its arguments are
 * values this module read into bounded buffers. */
static void
s_warn(json_t *warnings, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *msg = json_vsprintf(fmt, ap);
    va_end(ap);
    json_array_append_new(warnings, json_pack("{s:s,s:o}", "code", code,
                                              "message", msg));
}

/* "key: value" line of a /proc file such as /proc/cpuinfo. */
static bool
s_proc_line(const char *path, const char *key, char *out, size_t cap)
{
    char full[4096];
    FILE *f = fopen(s_at(path, full, sizeof full), "re");
    char line[1024];
    bool found = false;
    size_t klen = strlen(key);
    if (!f)
        return false;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0)
            continue;
        char *p = line + klen;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != ':')
            continue;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        size_t n = strcspn(p, "\n");
        if (n >= cap)
            n = cap - 1;
        memcpy(out, p, n);
        out[n] = '\0';
        found = true;
        break;
    }
    fclose(f);
    return found;
}

static void
s_os_release(json_t *env)
{
    static const char *const paths[] = { "/etc/os-release",
                                         "/usr/lib/os-release" };
    for (size_t i = 0; i < 2; i++) {
        char full[4096];
        FILE *f = fopen(s_at(paths[i], full, sizeof full), "re");
        char line[512];
        if (!f)
            continue;
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "PRETTY_NAME=", 12) != 0)
                continue;
            char *v = line + 12;
            v[strcspn(v, "\n")] = '\0';
            size_t n = strlen(v);
            if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
                v[n - 1] = '\0';
                v++;
            }
            s_put(env, "os_release", json_string(v), paths[i]);
            break;
        }
        fclose(f);
        return;
    }
}

/* Physical cores: distinct (package, core) pairs among online CPUs. */
static void
s_cores(json_t *env)
{
    enum { MAX = 4096 };         /* CPUs looked at, at most */
    long *seen = malloc(MAX * sizeof *seen);
    size_t nseen = 0;
    if (!seen)
        return;
    char path[128], buf[64];
    int cpus = 0;
    for (int cpu = 0; cpu < MAX; cpu++) {
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d", cpu);
        char full[4096];
        if (access(s_at(path, full, sizeof full), F_OK) != 0)
            break;
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
        if (!s_read(path, buf, sizeof buf))
            continue;   /* offline CPUs have no topology */
        long core = strtol(buf, NULL, 10);
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
                 cpu);
        long pkg = s_read(path, buf, sizeof buf) ? strtol(buf, NULL, 10) : 0;
        long key = pkg * 65536 + core;
        bool dup = false;
        for (size_t i = 0; i < nseen; i++)
            if (seen[i] == key)
                dup = true;
        if (!dup && nseen < MAX)
            seen[nseen++] = key;
        cpus++;
    }
    if (cpus > 0)
        s_put(env, "physical_cores", json_integer((json_int_t)nseen),
              "/sys/devices/system/cpu/cpu*/topology/{core_id,"
              "physical_package_id}");
    free(seen);
}

/* One CPU's frequency scaling, each field where cpufreq exposes it. */
static json_t *
s_cpu(int cpu, json_t *warnings)
{
    json_t *o = json_object();
    char path[160];
    static const struct { const char *key, *file; bool num; } f[] = {
        { "scaling_driver", "scaling_driver", false },
        { "governor", "scaling_governor", false },
        { "min_freq_khz", "cpuinfo_min_freq", true },
        { "max_freq_khz", "cpuinfo_max_freq", true },
        { "cur_freq_khz", "scaling_cur_freq", true },
        { "energy_performance_preference",
          "energy_performance_preference", false },
    };
    json_object_set_new(o, "cpu", json_integer(cpu));
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu%d/cpufreq/%s", cpu, f[i].file);
        if (f[i].num)
            s_put_int_file(o, f[i].key, path);
        else
            s_put_file(o, f[i].key, path);
    }
    const json_t *gov = ag_env_value(o, "governor");
    if (gov && strcmp(json_string_value(gov), "performance") != 0)
        s_warn(warnings, "governor", "CPU %d: scaling governor is \"%s\", "
               "not \"performance\"", cpu, json_string_value(gov));
    return o;
}

static void
s_boost(json_t *env, json_t *warnings)
{
    char buf[32];
    const char *p = "/sys/devices/system/cpu/intel_pstate/no_turbo";
    if (s_read(p, buf, sizeof buf)) {
        bool on = strcmp(buf, "0") == 0;
        s_put(env, "turbo", json_boolean(on), p);
        if (on)
            s_warn(warnings, "turbo", "turbo boost is on (%s is 0)", p);
        return;
    }
    p = "/sys/devices/system/cpu/cpufreq/boost";
    if (s_read(p, buf, sizeof buf)) {
        bool on = strcmp(buf, "1") == 0;
        s_put(env, "turbo", json_boolean(on), p);
        if (on)
            s_warn(warnings, "turbo", "CPU boost is on (%s is 1)", p);
    }
}

/* The cgroup path of this process: the v2 line "0::/path", else the v1
 * line whose controllers include want. */
static bool
s_cgroup_path(const char *want, char *out, size_t cap)
{
    char full[4096];
    FILE *f = fopen(s_at("/proc/self/cgroup", full, sizeof full), "re");
    char line[1024];
    bool found = false;
    if (!f)
        return false;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = '\0';
        *c2 = '\0';
        const char *ctrls = c1 + 1, *path = c2 + 1;
        bool match = false;
        if (!want) {
            match = strcmp(line, "0") == 0 && *ctrls == '\0';
        } else {
            /* "cpu,cpuacct": whole names only ("cpu" is not "cpuset"). */
            size_t wl = strlen(want);
            for (const char *p = ctrls; *p; p += strcspn(p, ",") +
                                               (p[strcspn(p, ",")] ? 1 : 0))
                if (strncmp(p, want, wl) == 0 &&
                    (p[wl] == ',' || p[wl] == '\0'))
                    match = true;
        }
        if (match) {
            snprintf(out, cap, "%s", path);
            found = true;
            break;
        }
    }
    fclose(f);
    return found;
}

static void
s_cgroup(json_t *env, json_t *warnings)
{
    char cg[512], path[1200], buf[128];
    /* cgroup v2: cpu.max is "max PERIOD" or "QUOTA PERIOD". */
    if (s_cgroup_path(NULL, cg, sizeof cg)) {
        snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpu.max",
                 strcmp(cg, "/") == 0 ? "" : cg);
        if (s_read(path, buf, sizeof buf)) {
            s_put(env, "cgroup_cpu_max", json_string(buf), path);
            long quota, period;
            if (sscanf(buf, "%ld %ld", &quota, &period) == 2 && period > 0) {
                double share = (double)quota / (double)period;
                s_put(env, "cpu_quota", json_real(share), path);
                s_warn(warnings, "cpu_quota", "a CPU quota of %.2f CPUs is "
                       "set (%s: %s)", share, path, buf);
            }
        }
        snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max",
                 strcmp(cg, "/") == 0 ? "" : cg);
        if (s_read(path, buf, sizeof buf)) {
            char *end;
            long long v = strtoll(buf, &end, 10);
            if (end != buf && *end == '\0')
                s_put(env, "memory_limit_bytes", json_integer(v), path);
        }
    }
    /* cgroup v1: cfs_quota_us of -1 means no quota. */
    if (!ag_env_value(env, "cgroup_cpu_max") &&
        s_cgroup_path("cpu", cg, sizeof cg)) {
        const char *sub = strcmp(cg, "/") == 0 ? "" : cg;
        char qpath[1200];
        snprintf(qpath, sizeof qpath, "/sys/fs/cgroup/cpu%s/cpu.cfs_quota_us",
                 sub);
        snprintf(path, sizeof path, "/sys/fs/cgroup/cpu%s/cpu.cfs_period_us",
                 sub);
        char qbuf[64];
        if (s_read(qpath, qbuf, sizeof qbuf) && s_read(path, buf, sizeof buf)) {
            long quota = strtol(qbuf, NULL, 10);
            long period = strtol(buf, NULL, 10);
            s_put(env, "cgroup_cfs_quota_us", json_integer(quota), qpath);
            if (quota > 0 && period > 0) {
                double share = (double)quota / (double)period;
                s_put(env, "cpu_quota", json_real(share), qpath);
                s_warn(warnings, "cpu_quota", "a CPU quota of %.2f CPUs is "
                       "set (%s: %ld per %ld µs)", share, qpath, quota,
                       period);
            }
        }
    }
    if (!ag_env_value(env, "memory_limit_bytes") &&
        s_cgroup_path("memory", cg, sizeof cg)) {
        snprintf(path, sizeof path,
                 "/sys/fs/cgroup/memory%s/memory.limit_in_bytes",
                 strcmp(cg, "/") == 0 ? "" : cg);
        if (!s_read(path, buf, sizeof buf))
            snprintf(path, sizeof path,
                     "/sys/fs/cgroup/memory/memory.limit_in_bytes");
        if (s_read(path, buf, sizeof buf)) {
            long long v = strtoll(buf, NULL, 10);
            /* v1 writes "no limit" as a page-rounded LLONG_MAX. */
            if (v > 0 && v < (1LL << 62))
                s_put(env, "memory_limit_bytes", json_integer(v), path);
            else
                s_put(env, "memory_limit_bytes", json_null(), path);
        }
    }
}

static void
s_power(json_t *env, json_t *warnings)
{
    const char *dir = "/sys/class/power_supply";
    char full[4096];
    DIR *d = opendir(s_at(dir, full, sizeof full));
    struct dirent *e;
    bool any = false, mains_online = false, battery_discharging = false;
    char path[512], buf[64];
    if (!d)
        return;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s/type", dir, e->d_name);
        if (!s_read(path, buf, sizeof buf))
            continue;
        if (strcmp(buf, "Mains") == 0) {
            any = true;
            snprintf(path, sizeof path, "%s/%s/online", dir, e->d_name);
            if (s_read(path, buf, sizeof buf) && strcmp(buf, "1") == 0)
                mains_online = true;
        } else if (strcmp(buf, "Battery") == 0) {
            any = true;
            snprintf(path, sizeof path, "%s/%s/status", dir, e->d_name);
            if (s_read(path, buf, sizeof buf) &&
                strcmp(buf, "Discharging") == 0)
                battery_discharging = true;
        }
    }
    closedir(d);
    if (!any)
        return;
    bool battery = battery_discharging && !mains_online;
    s_put(env, "power_source", json_string(battery ? "battery" : "ac"),
          "/sys/class/power_supply/*/{type,online,status}");
    if (battery)
        s_warn(warnings, "battery", "running on battery power");
}

static json_t *s_collect(const int *cpus, size_t ncpus, char *err,
                         size_t errlen);

/* The counters this host can keep beside wall time (ag_counters.h), and
 * one warning naming those it cannot and why. A syscall, not a file:
 * a fixture root (tests) has none to say. */
static void
s_counters(json_t *env, json_t *warnings)
{
    ag_counters_t *c = ag_counters_new();
    json_t *have = json_array();
    for (int i = 0; c && have && i < AG_CTR_COUNT; i++)
        if (ag_counters_has(c, (ag_ctr_t)i))
            json_array_append_new(have,
                                  json_string(ag_counters_name((ag_ctr_t)i)));
    s_put(env, "counters", have, "perf_event_open");
    if (c && *ag_counters_missing(c))
        s_warn(warnings, "counters", "%s; runs keep wall time without them",
               ag_counters_missing(c));
    ag_counters_destroy(&c);
}

const json_t *
ag_env_value(const json_t *env, const char *key)
{
    const json_t *f = json_object_get(env, key);
    return f ? json_object_get(f, "value") : NULL;
}

json_t *
ag_env_collect(const int *cpus, size_t ncpus, char *err, size_t errlen)
{
    return ag_env_collect_root("", cpus, ncpus, err, errlen);
}

json_t *
ag_env_collect_root(const char *root, const int *cpus, size_t ncpus,
                    char *err, size_t errlen)
{
    s_root = root ? root : "";
    json_t *env = s_collect(cpus, ncpus, err, errlen);
    s_root = "";
    return env;
}

static json_t *
s_collect(const int *cpus, size_t ncpus, char *err, size_t errlen)
{
    json_t *env = json_object();
    json_t *warnings = json_array();
    json_t *percpu = json_array();
    char buf[512];
    if (!env || !warnings || !percpu) {
        snprintf(err, errlen, "ag_env_collect: out of memory");
        json_decref(env);
        json_decref(warnings);
        json_decref(percpu);
        return NULL;
    }

    struct utsname u;
    if (uname(&u) == 0) {
        s_put(env, "hostname", json_string(u.nodename), "uname(2)");
        snprintf(buf, sizeof buf, "%s %s %s", u.sysname, u.release,
                 u.version);
        s_put(env, "kernel", json_string(buf), "uname(2)");
        s_put(env, "arch", json_string(u.machine), "uname(2)");
    }
    s_os_release(env);
    if (s_proc_line("/proc/cpuinfo", "model name", buf, sizeof buf) ||
        s_proc_line("/proc/cpuinfo", "Model", buf, sizeof buf))
        s_put(env, "cpu_model", json_string(buf), "/proc/cpuinfo");
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online > 0)
        s_put(env, "logical_cpus", json_integer(online),
              "sysconf(_SC_NPROCESSORS_ONLN)");
    s_cores(env);
    s_put_file(env, "smt", "/sys/devices/system/cpu/smt/control");
    s_put_int_file(env, "smt_active", "/sys/devices/system/cpu/smt/active");

    /* The CPUs in use. */
    int used[AG_ENV_MAX_CPUS_LISTED];
    size_t nused = 0;
    if (cpus && ncpus) {
        for (size_t i = 0; i < ncpus && nused < AG_ENV_MAX_CPUS_LISTED; i++)
            used[nused++] = cpus[i];
    } else {
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) == 0) {
            s_put(env, "affinity_cpus", json_integer(CPU_COUNT(&set)),
                  "sched_getaffinity(2)");
            for (int c = 0; c < CPU_SETSIZE && nused < AG_ENV_MAX_CPUS_LISTED;
                 c++)
                if (CPU_ISSET(c, &set))
                    used[nused++] = c;
        }
    }
    for (size_t i = 0; i < nused; i++)
        json_array_append_new(percpu, s_cpu(used[i], warnings));
    json_object_set_new(env, "cpus", percpu);
    s_boost(env, warnings);
    s_put_file(env, "isolated_cpus", "/sys/devices/system/cpu/isolated");
    s_put_file(env, "nohz_full_cpus", "/sys/devices/system/cpu/nohz_full");
    s_cgroup(env, warnings);

    double l1, l5, l15;
    if (s_read("/proc/loadavg", buf, sizeof buf) &&
        sscanf(buf, "%lf %lf %lf", &l1, &l5, &l15) == 3) {
        s_put(env, "load_average", json_pack("[f,f,f]", l1, l5, l15),
              "/proc/loadavg");
        double cores = online > 0 ? (double)online : 1.0;
        if (l1 / cores > AG_ENV_LOAD_PER_CORE_MAX)
            s_warn(warnings, "load", "load average %.2f is above %.1f per "
                   "core (%ld cores)", l1, AG_ENV_LOAD_PER_CORE_MAX,
                   (long)cores);
    }
    static const struct { const char *key, *line; } mem[] = {
        { "memory_total_kb", "MemTotal" },
        { "memory_available_kb", "MemAvailable" },
    };
    for (size_t i = 0; i < 2; i++)
        if (s_proc_line("/proc/meminfo", mem[i].line, buf, sizeof buf))
            s_put(env, mem[i].key, json_integer(strtoll(buf, NULL, 10)),
                  "/proc/meminfo");
    s_power(env, warnings);
    s_put_int_file(env, "aslr", "/proc/sys/kernel/randomize_va_space");
    s_put_file(env, "clocksource",
               "/sys/devices/system/clocksource/clocksource0/"
               "current_clocksource");
    const char *thp = "/sys/kernel/mm/transparent_hugepage/enabled";
    if (s_read(thp, buf, sizeof buf)) {
        /* "always [madvise] never": the bracketed word is the setting. */
        char *l = strchr(buf, '['), *r = l ? strchr(l, ']') : NULL;
        if (l && r) {
            *r = '\0';
            s_put(env, "transparent_hugepages", json_string(l + 1), thp);
        }
    }
    s_put_file(env, "boot_id", "/proc/sys/kernel/random/boot_id");
    if (s_read("/proc/uptime", buf, sizeof buf))
        s_put(env, "uptime_s", json_real(strtod(buf, NULL)), "/proc/uptime");
    s_put(env, "agent_version", json_string(PARITY_VERSION),
          "parity-agent build");
    if (!*s_root)
        s_counters(env, warnings);
    json_object_set_new(env, "warnings", warnings);
    return env;
}
