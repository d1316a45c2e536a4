/* tap.h -- a minimal Test Anything Protocol emitter for meson test.
 *
 * Header-only on purpose: each test program includes it once. ok() never
 * aborts, so one failing check does not hide the next; tap_done() prints
 * the plan and returns the exit status meson expects. */
#ifndef PARITY_TAP_H
#define PARITY_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <math.h>

static int tap_count_;
static int tap_failed_;

static inline int tap_ok_(int cond, const char *file, int line,
                          const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static inline int
tap_ok_(int cond, const char *file, int line, const char *fmt, ...)
{
    /* A description may carry the text under test after a newline: its
     * first line names the check; the rest is shown, as comments that
     * meson's TAP reader skips, only when the check fails. */
    char text[8192];
    va_list ap;
    tap_count_++;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    char *nl = strchr(text, '\n');
    if (nl)
        *nl = '\0';
    printf("%sok %d - %s\n", cond ? "" : "not ", tap_count_, text);
    while (nl && !cond) {
        char *rest = nl + 1;
        nl = strchr(rest, '\n');
        if (nl)
            *nl = '\0';
        if (*rest || nl)
            printf("# %s\n", rest);
    }
    if (!cond) {
        tap_failed_++;
        printf("# failed at %s:%d\n", file, line);
    }
    fflush(stdout);
    return cond;
}

#define ok(cond, ...) tap_ok_(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/* Relative closeness, for values computed in two ways. */
#define ok_near(got, want, rel, ...) \
    tap_ok_(tap_near_((double)(got), (double)(want), (rel)), \
            __FILE__, __LINE__, __VA_ARGS__)

#define ok_str(got, want, ...) \
    tap_ok_(tap_streq_((got), (want)), __FILE__, __LINE__, __VA_ARGS__)

static inline int
tap_near_(double got, double want, double rel)
{
    return fabs(got - want) <= rel * fabs(want) + 1e-300;
}

static inline int
tap_streq_(const char *got, const char *want)
{
    if (!got || strcmp(got, want) != 0) {
        printf("# got:  \"%s\"\n# want: \"%s\"\n", got ? got : "(null)",
               want);
        return 0;
    }
    return 1;
}

static inline void
tap_diag(const char *fmt, ...)
{
    va_list ap;
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static inline int
tap_done(void)
{
    printf("1..%d\n", tap_count_);
    return tap_failed_ ? 1 : 0;
}

#endif
