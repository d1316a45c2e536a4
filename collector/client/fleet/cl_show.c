/* cl_show.c -- `parity show RUN` and `parity export JOB --out DIR`: runs
 * stored by the collector, shaped like the agent's local results file
 * (schema_version 3, proto/pw_results.h). docs/commands/show.md,
 * export.md. */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cl_conn.h"
#include "cl_out.h"
#include "pw_out.h"
#include "cl_verbs.h"
#include "pw_json.h"
#include "vd_metric.h"

/* Most runs one export writes. */
#define S_EXPORT_MAX_RUNS 100000

/* --metric NAME: the document keeps that metric's verdicts alone (wall
 * time's `verdict` is schema 3's and stays; another metric's are under
 * each benchmark's "metrics"). */
static void
s_only_metric(json_t *doc, const char *metric)
{
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(doc, "benchmarks"), i, b) {
        json_t *all = json_object_get(b, "metrics");
        json_t *keep = json_object_get(all, metric);
        json_t *one = keep ? json_pack("{s:O}", metric, keep) : NULL;
        if (one)
            json_object_set_new(b, "metrics", one);
        else
            json_object_del(b, "metrics");
    }
    if (json_object_get(doc, "metrics"))
        json_object_set_new(doc, "metrics", strcmp(metric, "wall") == 0
                            ? json_pack("[s]", "wall")
                            : json_pack("[s,s]", "wall", metric));
}

int
cl_show_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    const char *run = NULL, *metric = NULL;
    int begun = cl_conn_verb_begin("show",
        "usage: parity show RUN [--metric NAME] [connection options]\n\n"
        "One host's run in full, as JSON shaped like a local results file "
        "(schema 3):\nsamples of every kind, environment, floor, verdicts, "
        "diagnostics; plus run_id,\nhost, job_id, tags and label. RUN ids "
        "are in `parity verdicts --json`.\nThe verdicts on every metric "
        "the run was judged on (docs/verdict.md \"Metrics\");\n"
        "--metric NAME (wall, cpu, peak_rss) keeps that one's.\n", &argc,
        argv, &co);
    if (begun >= 0)
        return begun;
    static const struct option opts[] = {
        { "metric", required_argument, NULL, 'm' }, { NULL, 0, NULL, 0 } };
    int o;
    CL_CONN_EACH_OPTION(o, argc, argv, opts) {
        vd_metric_t m;
        if (o == 'm' && vd_metric_parse(optarg, &m) == 0) {
            metric = optarg;
        } else if (o == 'm') {
            cl_out_error("show", "--metric %.60s: want wall, cpu or "
                         "peak_rss", optarg);
            return PW_EXIT_USAGE;
        } else {
            cl_out_getopt_error("show", o, argv);
            return PW_EXIT_USAGE;
        }
    }
    if (cl_out_one_operand("show", argc, argv, &run) != 0)
        return PW_EXIT_USAGE;
    if (!run) {
        cl_out_error("show", "which run? (parity show RUN)");
        return PW_EXIT_USAGE;
    }
    json_t *args = json_pack("{s:s}", "run", run), *body = NULL;
    int rc = cl_conn_ask("show", &co, "show", args, &body);
    json_decref(args);
    if (rc != PW_EXIT_OK)
        return rc;
    if (metric)
        s_only_metric(body, metric);
    return cl_out_json_exit(body);
}

/* A file name part: letters, digits, '-', '_', '.'; others become '_'. */
static void
s_safe(char *out, size_t len, const char *in)
{
    size_t i = 0;
    for (; in[i] && i + 1 < len; i++) {
        char ch = in[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
                  (ch == '.' && i > 0);
        out[i] = ok ? ch : '_';
    }
    out[i] = '\0';
}

/* s_write's answer when the file is there and force is not given. */
#define S_EXISTS -2

/* Write doc to path: 0, or -1 with err. An existing file is kept
 * (S_EXISTS, err says so) unless force. */
static int
s_write(const char *path, const json_t *doc, bool force, char *err,
        size_t errlen)
{
    char *text = pw_json_dumps(doc);
    if (!text) {
        snprintf(err, errlen, "%.1500s: out of memory", path);
        return -1;
    }
    FILE *f = fopen(path, force ? "w" : "wx");
    if (!f && errno == EEXIST) {
        snprintf(err, errlen, "%.1500s exists (an earlier export?); "
                 "--force overwrites it", path);
        free(text);
        return S_EXISTS;
    }
    int rc = -1;
    if (!f) {
        snprintf(err, errlen, "%.1500s: %s", path, strerror(errno));
    } else {
        fputs(text, f);
        fputc('\n', f);
        rc = ferror(f) ? -1 : 0;
        if (fclose(f) != 0 || rc) {
            snprintf(err, errlen, "%.1500s: write failed: %s", path,
                     strerror(errno));
            rc = -1;
        }
    }
    free(text);
    return rc;
}

/* Every run of job, each `show`n, into per_host: host -> one results
 * document (the host's first run, with every later run's benchmarks
 * appended and the run ids in "run_ids"). A PW_EXIT_* code (said). */
static int
s_collect(cl_conn_t *c, const char *job, json_t *per_host)
{
    char err[2048];
    json_t *args = json_pack("{s:s}", "job", job), *jb = NULL;
    int rc = cl_conn_request(c, "job", args, &jb, NULL, err, sizeof err);
    json_decref(args);
    if (rc != CL_CONN_OK) {
        cl_out_error("export", "%s", err);
        return cl_conn_exit_code(rc);
    }
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(jb, "run_list"), i, r) {
        if (i >= S_EXPORT_MAX_RUNS)
            break;
        json_t *sa = json_pack("{s:s}", "run", pw_out_str(r, "run_id", "")),
               *doc = NULL;
        rc = cl_conn_request(c, "show", sa, &doc, NULL, err, sizeof err);
        json_decref(sa);
        if (rc != CL_CONN_OK) {
            cl_out_error("export", "run %s: %s", pw_out_str(r, "run_id", "?"),
                         err);
            json_decref(jb);
            return cl_conn_exit_code(rc);
        }
        const char *host = pw_out_str(r, "host", "host");
        json_t *have = json_object_get(per_host, host);
        if (!have) {
            /* The first run of the host is the document; later runs add
             * their benchmark to it. */
            json_object_set_new(doc, "run_ids", json_pack("[s]",
                                pw_out_str(doc, "run_id", "")));
            json_object_del(doc, "run_id");
            json_object_set_new(per_host, host, doc);
        } else {
            json_array_extend(json_object_get(have, "benchmarks"),
                              json_object_get(doc, "benchmarks"));
            json_array_append_new(json_object_get(have, "run_ids"),
                                  json_string(pw_out_str(doc, "run_id", "")));
            json_decref(doc);
        }
    }
    json_decref(jb);
    return PW_EXIT_OK;
}

int
cl_export_main(int argc, char **argv)
{
    cl_conn_opts_t co = { 0 };
    char err[2048];
    const char *job = NULL, *out = NULL;
    bool force = false;
    int begun = cl_conn_verb_begin("export",
        "usage: parity export JOB --out DIR [--force] [connection "
        "options]\n\nWrite the results file of every host of JOB: "
        "DIR/HOST.json, one document per\nhost with one entry in "
        "\"benchmarks\" per run (the shape of `parity show`).\nDIR is "
        "created if missing; an existing HOST.json is kept unless --force.\n",
        &argc, argv, &co);
    if (begun >= 0)
        return begun;
    enum { O_OUT = 256, O_FORCE };
    static const struct option opts[] = {
        { "out", required_argument, NULL, O_OUT },
        { "force", no_argument, NULL, O_FORCE },
        { NULL, 0, NULL, 0 } };
    int o;
    CL_CONN_EACH_OPTION(o, argc, argv, opts) {
        if (o == O_OUT) {
            out = optarg;
        } else if (o == O_FORCE) {
            force = true;
        } else {
            cl_out_getopt_error("export", o, argv);
            return PW_EXIT_USAGE;
        }
    }
    if (cl_out_one_operand("export", argc, argv, &job) != 0)
        return PW_EXIT_USAGE;
    if (!job || !out) {
        cl_out_error("export", "give JOB and --out DIR");
        return PW_EXIT_USAGE;
    }
    struct stat st;
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
        cl_out_error("export", "--out %s: mkdir: %s", out, strerror(errno));
        return PW_EXIT_SYSTEM;
    }
    if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) {
        cl_out_error("export", "--out %s: not a directory", out);
        return PW_EXIT_SYSTEM;
    }
    int code;
    cl_conn_t *c = cl_conn_open(&co, &code, err, sizeof err);
    if (!c) {
        cl_out_error("export", "%s", err);
        return cl_conn_exit_code(code);
    }
    json_t *per_host = json_object();
    int rc = s_collect(c, job, per_host);
    if (rc != PW_EXIT_OK)
        goto done;
    const char *host;
    json_t *doc;
    size_t files = 0;
    json_object_foreach(per_host, host, doc) {
        char name[256], path[4096 + 300];
        s_safe(name, sizeof name, host);
        snprintf(path, sizeof path, "%s/%s.json", out, name);
        int w = s_write(path, doc, force, err, sizeof err);
        if (w != 0) {
            cl_out_error("export", "%s", err);
            /* The exit status of keygen's "exists" too. */
            rc = w == S_EXISTS ? PW_EXIT_DATA : PW_EXIT_SYSTEM;
            goto done;
        }
        printf("%s\n", path);
        files++;
    }
    if (files == 0)
        printf("(job %s has no stored runs)\n", job);
    rc = PW_EXIT_OK;
done:
    json_decref(per_host);
    cl_conn_destroy(&c);
    return rc;
}
