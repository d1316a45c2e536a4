/* expected.h -- a printer's whole output against a file of what it must
 * print, as PostgreSQL's regression tests compare expected/NAME.out: every
 * line, every space. The files are tests/expected/NAME.out.
 *
 *     ok(expected_match("verdicts-table", text), "the verdict table");
 *
 * PARITY_EXPECTED_DIR names the folder (meson sets it); with
 * PARITY_UPDATE_EXPECTED=1 the file is written from text instead, and the
 * check passes: tests/update-expected.sh runs every such test so.
 * On a difference, the first differing line of each side is printed as
 * TAP diagnostics. Header-only, like tap.h; include after it.
 */
#ifndef PARITY_EXPECTED_H
#define PARITY_EXPECTED_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole file at path (caller frees), or NULL. */
static inline char *
expected_read_(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int c;
    while ((c = fgetc(f)) != EOF) {
        if (len + 1 >= cap) {
            char *nb = realloc(buf, cap = cap ? cap * 2 : 4096);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        buf[len++] = (char)c;
    }
    fclose(f);
    if (!buf && !(buf = malloc(1)))
        return NULL;
    buf[len] = '\0';
    return buf;
}

/* True when text is exactly tests/expected/NAME.out. */
static inline int
expected_match(const char *name, const char *text)
{
    const char *dir = getenv("PARITY_EXPECTED_DIR");
    char path[1024];
    if (!dir || !text) {
        tap_diag("expected %s: %s", name, !dir ? "PARITY_EXPECTED_DIR is not "
                 "set" : "no output");
        return 0;
    }
    snprintf(path, sizeof path, "%s/%s.out", dir, name);
    const char *update = getenv("PARITY_UPDATE_EXPECTED");
    if (update && strcmp(update, "1") == 0) {
        FILE *f = fopen(path, "wb");
        int done = f && fputs(text, f) >= 0;
        if (f && fclose(f) != 0)
            done = 0;
        tap_diag("expected %s: %s %s", name, done ? "wrote" : "could not "
                 "write", path);
        return done;
    }
    char *want = expected_read_(path);
    if (!want) {
        tap_diag("expected %s: cannot read %s (tests/update-expected.sh "
                 "writes it)", name, path);
        return 0;
    }
    int same = strcmp(want, text) == 0;
    if (!same) {
        const char *a = text, *b = want;
        int line = 1;
        while (*a && *a == *b) {
            line += *a == '\n';
            a++;
            b++;
        }
        while (a > text && a[-1] != '\n') {
            a--;
            b--;
        }
        tap_diag("expected %s: line %d differs from %s", name, line, path);
        tap_diag("got:  %.*s", (int)strcspn(a, "\n"), a);
        tap_diag("want: %.*s", (int)strcspn(b, "\n"), b);
    }
    free(want);
    return same;
}

#endif
