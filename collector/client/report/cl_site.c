/* cl_site.c -- the static site of `parity report --site` (cl_site.h):
 * its directory and files; the pages themselves are co_page's, the code
 * the collector's live dashboard writes them with. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cl_site.h"

#include "co_atom.h"
#include "co_page.h"
#include "pw_out.h"

/* A page's file name: "bench-NNNN-" and at most this many characters of
 * the benchmark's name, letters, digits, '.', '_' and '-' only. */
#define S_NAME_CHARS 48
#define S_PATH_MAX   4096

/* The pages keep their series only until the page is written; then
 * "count" says how many it had. */
struct cl_site {
    json_t *doc;          /* the caller's, one reference */
    char dir[S_PATH_MAX];
    json_t *pages;        /* [{"suite", "benchmark", "file", "series": [],
                             "count"}] */
    json_t *by_key;       /* "suite\x1fbenchmark" -> index into pages */
    size_t dropped;       /* series beyond CL_SITE_MAX_PAGES benchmarks */
    bool truncated;       /* some answer left series out */
};
typedef struct cl_site s_site_t;

static void
s_err(char *err, size_t errlen, const char *call, const char *path)
{
    snprintf(err, errlen, "%s %s: %s", call, path, strerror(errno));
}

/* --- the directory ------------------------------------------------------ */

static bool
s_is_page(const char *name)
{
    size_t n = strlen(name);
    return strncmp(name, "bench-", 6) == 0 && n > 11 &&
           strcmp(name + n - 5, ".html") == 0;
}

/* Make dir ready: create it, or accept it empty or marked as ours; in a
 * marked one the old benchmark pages go (a benchmark may have gone). */
static int
s_prepare(const char *dir, char *err, size_t errlen)
{
    char path[S_PATH_MAX];
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT) {
            s_err(err, errlen, "stat", dir);
            return -1;
        }
        if (mkdir(dir, 0777) != 0) {
            s_err(err, errlen, "mkdir", dir);
            return -1;
        }
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a directory", dir);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", dir, CL_SITE_MARKER);
    bool marked = access(path, F_OK) == 0;
    DIR *d = opendir(dir);
    if (!d) {
        s_err(err, errlen, "opendir", dir);
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (!marked) {
            snprintf(err, errlen, "%s is not empty and holds no %s of an "
                     "earlier site: refusing to write into it (give a new "
                     "or empty directory)", dir, CL_SITE_MARKER);
            rc = -1;
        } else if (s_is_page(e->d_name)) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (unlink(path) != 0) {
                s_err(err, errlen, "unlink", path);
                rc = -1;
            }
        }
    }
    closedir(d);
    return rc;
}

/* Open dir/name's temporary twin; s_close renames it into place. */
static FILE *
s_open(const char *dir, const char *name, char *tmp, size_t tmplen,
       char *err, size_t errlen)
{
    snprintf(tmp, tmplen, "%s/%s.tmp", dir, name);
    FILE *f = fopen(tmp, "w");
    if (!f)
        s_err(err, errlen, "fopen", tmp);
    else    /* a page is 1.5 MB: fewer write calls than stdio's 4 KB */
        setvbuf(f, NULL, _IOFBF, 1 << 16);
    return f;
}

static int
s_close(FILE *f, const char *dir, const char *name, const char *tmp,
        char *err, size_t errlen)
{
    char path[S_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) {
        s_err(err, errlen, "write", tmp);
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        s_err(err, errlen, "rename", path);
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* --- pages of benchmarks ------------------------------------------------ */

/* Group the series by (suite, benchmark), in the order they come, and
 * name each group's page. */
static int
s_group(s_site_t *s, const json_t *series)
{
    size_t i;
    json_t *ser;
    json_array_foreach(series, i, ser) {
        char key[2048];
        snprintf(key, sizeof key, "%s\x1f%s", pw_out_str(ser, "suite", ""),
                 pw_out_str(ser, "benchmark", ""));
        json_t *at = json_object_get(s->by_key, key);
        if (!at) {
            size_t n = json_array_size(s->pages);
            if (n >= CL_SITE_MAX_PAGES) {
                s->dropped++;
                continue;
            }
            char file[128], safe[S_NAME_CHARS + 1];
            const char *b = pw_out_str(ser, "benchmark", "unnamed");
            size_t k = 0;
            for (; b[k] && k < S_NAME_CHARS; k++) {
                char c = b[k];
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                          c == '-';
                safe[k] = ok ? c : '_';
            }
            safe[k] = '\0';
            snprintf(file, sizeof file, "bench-%04zu-%s.html", n + 1, safe);
            if (json_array_append_new(s->pages, json_pack(
                    "{s:s,s:s,s:s,s:[],s:i}", "suite", pw_out_str(ser, "suite",
                    ""), "benchmark", pw_out_str(ser, "benchmark", ""), "file",
                    file, "series", "count", 0)) != 0 ||
                json_object_set_new(s->by_key, key, json_integer(
                    (json_int_t)n)) != 0)
                return -1;
            at = json_object_get(s->by_key, key);
        }
        json_t *page = json_array_get(s->pages,
                                      (size_t)json_integer_value(at));
        if (json_array_append(json_object_get(page, "series"), ser) != 0)
            return -1;
    }
    return 0;
}

/* The page file of (suite, benchmark), or NULL when it has none. */
static const char *
s_page_of(const s_site_t *s, const char *suite, const char *bench)
{
    char key[2048];
    snprintf(key, sizeof key, "%s\x1f%s", suite ? suite : "",
             bench ? bench : "");
    json_t *at = json_object_get(s->by_key, key);
    if (!at)
        return NULL;
    return pw_out_str(json_array_get(s->pages, (size_t)json_integer_value(at)),
                 "file", NULL);
}

/* co_page's link to a benchmark's page: its file, when it has one. */
static const char *
s_bench_href(void *ctx, const char *suite, const char *bench, char *buf,
             size_t len)
{
    const char *file = s_page_of(ctx, suite, bench);
    if (!file)
        return NULL;
    snprintf(buf, len, "%s", file);
    return buf;
}

static co_page_opts_t
s_opts(const s_site_t *s)
{
    return (co_page_opts_t){ .bench_href = s_bench_href, .ctx = (void *)s,
                             .home = "index.html",
                             .feed = "regressions.xml",
                             .maker = "parity report --site" };
}

static int
s_bench_page(const s_site_t *s, const json_t *page, const char *dir,
             char *err, size_t errlen)
{
    char tmp[S_PATH_MAX];
    const char *file = pw_out_str(page, "file", "bench.html");
    FILE *f = s_open(dir, file, tmp, sizeof tmp, err, errlen);
    if (!f)
        return -1;
    co_page_opts_t o = s_opts(s);
    co_page_bench(f, s->doc, pw_out_str(page, "suite", ""),
                  pw_out_str(page, "benchmark", "?"),
                  json_object_get(page, "series"), &o);
    return s_close(f, dir, file, tmp, err, errlen);
}

static int
s_index(const s_site_t *s, const char *dir, char *err, size_t errlen)
{
    char tmp[S_PATH_MAX];
    json_t *benches = json_array(), *page;
    size_t i;
    json_array_foreach(s->pages, i, page)
        json_array_append_new(benches, json_pack(
            "{s:s,s:s,s:O}", "suite", pw_out_str(page, "suite", ""),
            "benchmark", pw_out_str(page, "benchmark", ""), "count",
            json_object_get(page, "count")));
    FILE *f = benches ? s_open(dir, "index.html", tmp, sizeof tmp, err,
                               errlen) : NULL;
    if (!f) {
        if (!benches)
            snprintf(err, errlen, "out of memory writing %s/index.html",
                     dir);
        json_decref(benches);
        return -1;
    }
    co_page_opts_t o = s_opts(s);
    int rc = co_page_overview(f, s->doc, benches, s->truncated, s->dropped,
                              &o);
    json_decref(benches);
    if (rc != 0) {
        fclose(f);
        unlink(tmp);
        snprintf(err, errlen, "out of memory writing %s/index.html", dir);
        return -1;
    }
    if (s_close(f, dir, "index.html", tmp, err, errlen) != 0)
        return -1;
    /* The feed of regressions beside it (co_atom.h). */
    if (!(f = s_open(dir, "regressions.xml", tmp, sizeof tmp, err, errlen)))
        return -1;
    if (co_atom_write(f, s->doc, "index.html", "regressions.xml") != 0) {
        fclose(f);
        unlink(tmp);
        snprintf(err, errlen, "out of memory or a write error writing "
                 "%s/regressions.xml", dir);
        return -1;
    }
    return s_close(f, dir, "regressions.xml", tmp, err, errlen);
}

cl_site_t *
cl_site_begin(json_t *doc, const char *dir, char *err, size_t errlen)
{
    char tmp[S_PATH_MAX];
    s_site_t *s = NULL;
    if (strlen(dir) > S_PATH_MAX - 128) {
        snprintf(err, errlen, "%.64s...: directory name too long", dir);
        return NULL;
    }
    if (!json_is_object(doc)) {
        snprintf(err, errlen, "the site's document is not a JSON object");
        return NULL;
    }
    if (s_prepare(dir, err, errlen) != 0)
        return NULL;
    /* The marker first: a site left half written can be written again. */
    FILE *m = s_open(dir, CL_SITE_MARKER, tmp, sizeof tmp, err, errlen);
    if (!m)
        return NULL;
    fputs("written by parity report --site; this directory may be "
          "rewritten by it\n", m);
    if (s_close(m, dir, CL_SITE_MARKER, tmp, err, errlen) != 0)
        return NULL;
    if (!(s = calloc(1, sizeof *s)) || !(s->pages = json_array()) ||
        !(s->by_key = json_object())) {
        snprintf(err, errlen, "out of memory starting the site");
        goto fail;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    s->doc = json_incref(doc);
    s->truncated = json_is_true(json_object_get(json_object_get(doc,
                                                "series"), "truncated"));
    return s;
fail:
    if (s) {
        json_decref(s->pages);
        json_decref(s->by_key);
    }
    free(s);
    return NULL;
}

int
cl_site_add(cl_site_t *s, const json_t *series, bool truncated, char *err,
            size_t errlen)
{
    size_t i;
    json_t *page;
    s->truncated = s->truncated || truncated;
    if (s_group(s, series) != 0) {
        snprintf(err, errlen, "out of memory grouping the series");
        return -1;
    }
    json_array_foreach(s->pages, i, page) {
        json_t *list = json_object_get(page, "series");
        size_t n = json_array_size(list);
        if (n == 0)
            continue;
        if (s_bench_page(s, page, s->dir, err, errlen) != 0)
            return -1;
        json_object_set_new(page, "count", json_integer(json_integer_value(
            json_object_get(page, "count")) + (json_int_t)n));
        json_array_clear(list);
    }
    return 0;
}

int
cl_site_end(cl_site_t **sp, char *err, size_t errlen)
{
    s_site_t *s = sp ? *sp : NULL;
    int rc = -1;
    if (!s)
        return 0;
    *sp = NULL;
    if (err)
        rc = s_index(s, s->dir, err, errlen);
    json_decref(s->doc);
    json_decref(s->pages);
    json_decref(s->by_key);
    free(s);
    return rc;
}

int
cl_site_write(const json_t *doc, const char *dir, char *err, size_t errlen)
{
    cl_site_t *s = cl_site_begin((json_t *)doc, dir, err, errlen);
    if (!s)
        return -1;
    if (cl_site_add(s, json_object_get(json_object_get(doc, "series"),
                                       "series"), false, err, errlen) != 0) {
        cl_site_end(&s, NULL, 0);
        return -1;
    }
    return cl_site_end(&s, err, errlen);
}
