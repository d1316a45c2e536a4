/* pw_clock.h -- the two clocks the daemons read, in the units the
 * protocol and the logs use.
 *
 * Wall-clock time is for what is stored or sent (timestamps in
 * messages, a job's expiry); the monotonic clock is for intervals
 * (heartbeats, back-off, flush and log timers), which a step of the
 * wall clock must not stretch or cut. Nothing here can fail on Linux.
 */
#ifndef PW_CLOCK_H
#define PW_CLOCK_H

#include <stdint.h>

/* CLOCK_REALTIME: microseconds since the Unix epoch. */
int64_t pw_clock_unix_us(void);

/* CLOCK_MONOTONIC: microseconds, and milliseconds, from an arbitrary
 * start; only differences mean anything. */
int64_t pw_clock_mono_us(void);
int64_t pw_clock_mono_ms(void);

/* CLOCK_MONOTONIC in seconds, to the nanosecond: for timing what runs
 * in microseconds (the benchmarks and tests). */
double pw_clock_mono_sec(void);

#endif
