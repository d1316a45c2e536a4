/* vd_name.h -- an enum's names, written once as a table: the text of a
 * value ("?" when out of range, so a stray value prints, never crashes)
 * and the value of a text. Each module that names an enum defines its
 * functions with these, from its table:
 *
 *     static const char *const s_names[VD_STOP_COUNT] = { ... };
 *     VD_NAME_FN(vd_stop_name, vd_stop_t, s_names, VD_STOP_COUNT)
 *
 * Header-only: nothing here allocates or keeps state.
 */
#ifndef VD_NAME_H
#define VD_NAME_H

#include <string.h>

/* Defines `const char *fn(type v)`: names[v], or "?" out of range. */
#define VD_NAME_FN(fn, type, names, count)                              \
    const char *fn(type v)                                              \
    {                                                                   \
        return (unsigned)v < (count) ? (names)[v] : "?";                \
    }

/* Defines `int fn(const char *s, type *v)`: 0 with *v set when s is one
 * of the names; -1 with *v untouched when it is not (or s is NULL). */
#define VD_PARSE_FN(fn, type, names, count)                             \
    int fn(const char *s, type *v)                                      \
    {                                                                   \
        for (unsigned i_ = 0; s && i_ < (count); i_++)                  \
            if ((names)[i_] && strcmp(s, (names)[i_]) == 0) {           \
                *v = (type)i_;                                          \
                return 0;                                               \
            }                                                           \
        return -1;                                                      \
    }

#endif
