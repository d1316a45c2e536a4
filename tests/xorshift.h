/* xorshift.h -- the tests' and benchmarks' pseudo-random numbers:
 * xorshift64*, deterministic, so a failing case reproduces from its seed
 * and a benchmark's inputs are the same on every run.
 *
 * Header-only (static functions), like tap.h. The state is the caller's:
 * each program keeps one uint64_t, seeded with any value but 0.
 */
#ifndef PARITY_XORSHIFT_H
#define PARITY_XORSHIFT_H

#include <stdint.h>

/* The next 53 random bits, in 0 .. 2^53 - 1. */
static inline uint64_t
xs_next53(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return (*state * 2685821657736338717ull) >> 11;
}

/* Uniform in [0, 1). */
static inline double
xs_uniform(uint64_t *state)
{
    return (double)xs_next53(state) / 9007199254740992.0;
}

/* Uniform in (0, 1): never 0, for a log(). */
static inline double
xs_uniform_open(uint64_t *state)
{
    return ((double)xs_next53(state) + 0.5) / 9007199254740992.0;
}

#endif
