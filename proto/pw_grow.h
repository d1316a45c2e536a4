/* pw_grow.h -- room for one more element in an array that doubles:
 *
 *     if (!pw_grow(&sp->entries, &sp->cap, sp->count, sizeof *sp->entries,
 *                  256, SIZE_MAX))
 *         return AG_SPOOL_ERR;
 *     sp->entries[sp->count++] = e;
 *
 * Header-only, like pw_locked.h: the arrays live in every layer.
 */
#ifndef PW_GROW_H
#define PW_GROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Room for element n of *arrayp (a pointer to an array of *cap elements
 * of size bytes): when n == *cap the array is reallocated at twice *cap
 * (first when empty), never beyond max elements. False, with the array
 * and *cap unchanged, when there is no room within max or no memory. */
static inline bool
pw_grow(void *arrayp, size_t *cap, size_t n, size_t size, size_t first,
        size_t max)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : first;
    if (c > max)
        c = max;
    if (c <= n || c > SIZE_MAX / size)
        return false;
    void *p = realloc(*(void **)arrayp, c * size);
    if (!p)
        return false;
    *(void **)arrayp = p;
    *cap = c;
    return true;
}

#endif
