/* pw_clock.c -- see pw_clock.h. */
#include "pw_clock.h"

#include <time.h>

/* A clock in microseconds. */
static int64_t
s_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
pw_clock_unix_us(void)
{
    return s_us(CLOCK_REALTIME);
}

int64_t
pw_clock_mono_us(void)
{
    return s_us(CLOCK_MONOTONIC);
}

int64_t
pw_clock_mono_ms(void)
{
    return pw_clock_mono_us() / 1000;
}

double
pw_clock_mono_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
