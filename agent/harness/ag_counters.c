/* ag_counters.c -- see ag_counters.h. */
#include "ag_counters.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct ag_counters {
    int fd[AG_CTR_COUNT];
    int err[AG_CTR_COUNT];       /* errno of a failed open, 0 if open */
    /* What each read gave at the last reset: value, time enabled, time
     * running. PERF_EVENT_IOC_RESET zeroes the event's own count but not
     * what exited children added to it, so a run is a difference. */
    uint64_t base[AG_CTR_COUNT][3];
    char missing[256];
};

static const struct {
    const char *name;
    uint32_t type;
    uint64_t config;
} s_defs[AG_CTR_COUNT] = {
    [AG_CTR_INSTRUCTIONS] = { "instructions", PERF_TYPE_HARDWARE,
                              PERF_COUNT_HW_INSTRUCTIONS },
    [AG_CTR_CYCLES] = { "cycles", PERF_TYPE_HARDWARE,
                        PERF_COUNT_HW_CPU_CYCLES },
    [AG_CTR_TASK_CLOCK] = { "task_clock_ns", PERF_TYPE_SOFTWARE,
                            PERF_COUNT_SW_TASK_CLOCK },
};

const char *
ag_counters_name(ag_ctr_t which)
{
    return which < AG_CTR_COUNT ? s_defs[which].name : "?";
}

static int
s_open(uint32_t type, uint64_t config)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = type;
    a.config = config;
    a.disabled = 1;
    a.enable_on_exec = 1;   /* the child's copy starts at its exec */
    a.inherit = 1;          /* children and theirs are counted */
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED |
                    PERF_FORMAT_TOTAL_TIME_RUNNING;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1,
                        PERF_FLAG_FD_CLOEXEC);
}

/* Why an open failed, for a person. */
static const char *
s_reason(int e)
{
    switch (e) {
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV:
        return "not supported by this CPU or VM";
    case EACCES:
    case EPERM:
        return "not permitted (kernel.perf_event_paranoid, or a seccomp "
               "filter)";
    case ENOSYS:
        return "perf_event_open is not available in this kernel";
    default:
        return "perf_event_open failed";
    }
}

ag_counters_t *
ag_counters_new(void)
{
    ag_counters_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    for (int i = 0; i < AG_CTR_COUNT; i++) {
        c->fd[i] = s_open(s_defs[i].type, s_defs[i].config);
        c->err[i] = c->fd[i] < 0 ? errno : 0;
    }
    /* One line: the missing ones grouped by reason (usually one). */
    size_t used = 0;
    for (int i = 0; i < AG_CTR_COUNT; i++) {
        if (!c->err[i])
            continue;
        bool seen = false;
        for (int k = 0; k < i; k++)
            seen = seen || (c->err[k] && strcmp(s_reason(c->err[k]),
                                                s_reason(c->err[i])) == 0);
        if (seen)
            continue;
        char names[96] = "";
        size_t nl = 0;
        for (int k = i; k < AG_CTR_COUNT; k++)
            if (c->err[k] && strcmp(s_reason(c->err[k]),
                                    s_reason(c->err[i])) == 0)
                nl += (size_t)snprintf(names + nl, sizeof names - nl, "%s%s",
                                       nl ? ", " : "", s_defs[k].name);
        int n = snprintf(c->missing + used, sizeof c->missing - used,
                         "%s%s: %s (perf_event_open: %s)", used ? "; " : "",
                         names, s_reason(c->err[i]), strerror(c->err[i]));
        if (n > 0)
            used += (size_t)n < sizeof c->missing - used ?
                    (size_t)n : sizeof c->missing - used - 1;
    }
    return c;
}

void
ag_counters_destroy(ag_counters_t **cp)
{
    if (!cp || !*cp)
        return;
    for (int i = 0; i < AG_CTR_COUNT; i++)
        if ((*cp)->fd[i] >= 0)
            close((*cp)->fd[i]);
    free(*cp);
    *cp = NULL;
}

bool
ag_counters_has(const ag_counters_t *c, ag_ctr_t which)
{
    return c && which < AG_CTR_COUNT && c->fd[which] >= 0;
}

bool
ag_counters_any(const ag_counters_t *c)
{
    for (int i = 0; c && i < AG_CTR_COUNT; i++)
        if (c->fd[i] >= 0)
            return true;
    return false;
}

const char *
ag_counters_missing(const ag_counters_t *c)
{
    return c ? c->missing : "";
}

void
ag_counters_reset(ag_counters_t *c)
{
    for (int i = 0; c && i < AG_CTR_COUNT; i++) {
        if (c->fd[i] < 0)
            continue;
        /* A fresh event for each spawn: with one event kept across
         * spawns, Linux 6.1 counted the first two children and 0 for
         * every later one (see the header). A reopen that fails leaves
         * the counter missing from here on, its reads -1. */
        close(c->fd[i]);
        c->fd[i] = s_open(s_defs[i].type, s_defs[i].config);
        if (c->fd[i] < 0 ||
            read(c->fd[i], c->base[i], sizeof c->base[i]) !=
            sizeof c->base[i])
            memset(c->base[i], 0, sizeof c->base[i]);
    }
}

void
ag_counters_read(const ag_counters_t *c, int64_t out[AG_CTR_COUNT])
{
    for (int i = 0; i < AG_CTR_COUNT; i++) {
        out[i] = -1;
        uint64_t v[3];   /* value, time enabled, time running */
        if (!c || c->fd[i] < 0 || read(c->fd[i], v, sizeof v) != sizeof v)
            continue;
        uint64_t n = v[0] - c->base[i][0], en = v[1] - c->base[i][1],
                 run = v[2] - c->base[i][2];
        /* Multiplexed (more events than the PMU has counters): scale by
         * the share of the time it was counting. Never running: 0. */
        if (run == 0)
            out[i] = en == 0 ? (int64_t)n : 0;
        else if (run < en)
            out[i] = (int64_t)((double)n * (double)en / (double)run);
        else
            out[i] = (int64_t)n;
    }
}
