/* ag_load.c -- see ag_load.h. */
#include "ag_load.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

int
ag_load_parse_stat(const char *text, double *busy_ticks)
{
    /* user nice system idle iowait irq softirq steal [guest guest_nice]:
     * guest time is already inside user and nice. */
    unsigned long long v[8];
    if (!text || strncmp(text, "cpu ", 4) != 0)
        return AG_LOAD_ERR;
    const char *p = text + 4;
    for (int i = 0; i < 8; i++) {
        char *end;
        while (*p == ' ')
            p++;
        if (*p < '0' || *p > '9')
            return AG_LOAD_ERR;
        errno = 0;
        v[i] = strtoull(p, &end, 10);
        if (errno || end == p)
            return AG_LOAD_ERR;
        p = end;
    }
    *busy_ticks = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]);
    return AG_LOAD_OK;
}

static double
s_tv_s(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

int
ag_load_snap(ag_load_snap_t *s, char *err, size_t errlen)
{
    char buf[512];
    FILE *f = fopen("/proc/stat", "re");
    if (!f) {
        snprintf(err, errlen, "fopen(/proc/stat): %s", strerror(errno));
        return AG_LOAD_ERR;
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    double ticks;
    if (ag_load_parse_stat(buf, &ticks) != AG_LOAD_OK) {
        snprintf(err, errlen, "/proc/stat: no \"cpu \" line of 8 counters");
        return AG_LOAD_ERR;
    }
    long hz = sysconf(_SC_CLK_TCK);
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s->mono_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    s->machine_busy_s = ticks / (double)(hz > 0 ? hz : 100);
    s->own_s = s_tv_s(&self.ru_utime) + s_tv_s(&self.ru_stime)
             + s_tv_s(&kids.ru_utime) + s_tv_s(&kids.ru_stime);
    return AG_LOAD_OK;
}

double
ag_load_others(const ag_load_snap_t *a, const ag_load_snap_t *b)
{
    double wall_s = (double)(b->mono_us - a->mono_us) / 1e6;
    if (wall_s <= 0)
        return 0;
    double others = (b->machine_busy_s - a->machine_busy_s)
                  - (b->own_s - a->own_s);
    return others > 0 ? others / wall_s : 0;
}
