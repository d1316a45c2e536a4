/* ag_suitedir.c -- see ag_suitedir.h. */
#include "ag_suitedir.h"

#include "ag_log.h"
#include "ag_suite.h"

#include <dirent.h>
#include <errno.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_ERR 512

int
ag_suitedir_sha256(const char *path, char hex[65], char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    unsigned char buf[65536], out[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_state st;
    size_t n;
    if (!f) {
        snprintf(err, errlen, "fopen %.400s: %s", path, strerror(errno));
        return -1;
    }
    crypto_hash_sha256_init(&st);
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        crypto_hash_sha256_update(&st, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "read %.400s: I/O error", path);
        return -1;
    }
    crypto_hash_sha256_final(&st, out);
    for (size_t i = 0; i < sizeof out; i++)
        snprintf(hex + 2 * i, 3, "%02x", out[i]);
    return 0;
}

void
ag_suitedir_destroy(ag_suitedir_t **lp)
{
    if (!lp || !*lp)
        return;
    ag_suitedir_t *l = *lp;
    for (size_t i = 0; i < l->count; i++) {
        ag_suite_entry_t *s = &l->entries[i];
        free(s->name);
        free(s->stem);
        free(s->path);
        for (size_t b = 0; b < s->benchmark_count; b++)
            free(s->benchmarks[b]);
        free(s->benchmarks);
    }
    free(l->entries);
    free(l);
    *lp = NULL;
}

static int
s_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The suite files' names in dir, sorted; at most AG_SUITEDIR_MAX. */
static int
s_list_files(const char *dir, char **names, size_t *count, char *err,
             size_t errlen)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t nn = 0;
    if (!d) {
        snprintf(err, errlen, "--suites %s: opendir: %s", dir,
                 strerror(errno));
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.')
            continue;
        if (!(l > 5 && strcmp(de->d_name + l - 5, ".yaml") == 0)
            && !(l > 4 && strcmp(de->d_name + l - 4, ".yml") == 0))
            continue;
        if (nn == AG_SUITEDIR_MAX) {
            ag_logf("suite_invalid", "%s: more than %u suite files; %s and "
                    "the rest are not offered", dir, AG_SUITEDIR_MAX,
                    de->d_name);
            break;
        }
        names[nn++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof names[0], s_name_cmp);
    *count = nn;
    return 0;
}

/* Load dir/file into *si; false (logged) when it is not offered. */
static bool
s_load_entry(const char *dir, const char *file, ag_suite_entry_t *si)
{
    char path[4096], e[S_ERR];
    ag_suite_t *suite = NULL;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (ag_suite_load(path, NULL, 0, &suite, e, sizeof e) != AG_SUITE_OK) {
        ag_logf("suite_invalid", "%s (not offered)", e);
        return false;
    }
    if (ag_suitedir_sha256(path, si->digest, e, sizeof e) != 0) {
        ag_logf("suite_invalid", "%s (not offered)", e);
        ag_suite_destroy(&suite);
        return false;
    }
    si->name = strdup(suite->name);
    si->path = strdup(path);
    si->stem = strdup(file);
    char *dot = si->stem ? strrchr(si->stem, '.') : NULL;
    if (dot)
        *dot = 0;
    si->benchmarks = calloc(suite->benchmark_count + 1, sizeof(char *));
    for (size_t b = 0; si->benchmarks && b < suite->benchmark_count; b++)
        si->benchmarks[si->benchmark_count++] =
            strdup(suite->benchmarks[b].name);
    ag_suite_destroy(&suite);
    return true;
}

ag_suitedir_t *
ag_suitedir_scan(const char *dir, char *err, size_t errlen)
{
    char *names[AG_SUITEDIR_MAX];
    size_t nn = 0;
    if (s_list_files(dir, names, &nn, err, errlen) != 0)
        return NULL;
    ag_suitedir_t *l = calloc(1, sizeof *l);
    if (l)
        l->entries = calloc(nn ? nn : 1, sizeof *l->entries);
    if (!l || !l->entries) {
        snprintf(err, errlen, "calloc: out of memory");
        free(l);
        l = NULL;
    }
    for (size_t i = 0; i < nn; i++) {
        if (l && names[i] && s_load_entry(dir, names[i],
                                          &l->entries[l->count]))
            l->count++;
        free(names[i]);
    }
    return l;
}

const ag_suite_entry_t *
ag_suitedir_find(const ag_suitedir_t *l, const char *name, char *why,
                 size_t whylen)
{
    size_t len = name ? strlen(name) : 0;
    bool plain = len > 0 && len <= 128 && name[0] != '.';
    for (size_t i = 0; plain && i < len; i++) {
        char c = name[i];
        plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    }
    if (!plain) {
        snprintf(why, whylen, "suite \"%.128s\" is not a plain suite name "
                 "(letters, digits, '_', '-', '.'; no paths)",
                 name ? name : "");
        return NULL;
    }
    for (size_t i = 0; l && i < l->count; i++)
        if (strcmp(l->entries[i].name, name) == 0
            || strcmp(l->entries[i].stem, name) == 0)
            return &l->entries[i];
    snprintf(why, whylen, "unknown suite \"%s\": not in this agent's "
             "--suites directory", name);
    return NULL;
}
