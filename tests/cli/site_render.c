/* site_render.c -- write the site of a fixture, without a collector, for
 * tests/cli/test_site.py:
 *
 *   site-render FIXTURE.json DIR [REPORT.html]
 *
 * FIXTURE is the document cl_site_write takes (cl_site.h). When REPORT is
 * given and the fixture has "report_job": {"report", "verdicts"}, the
 * single-job HTML report of those two answers is written there too, so
 * the same browser test sees `parity report --html`'s box plots.
 * Exit 0, or 1 after one line on stderr. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cl_report.h"
#include "cl_site.h"

int
main(int argc, char **argv)
{
    char err[1024];
    json_error_t jerr;
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: site-render FIXTURE.json DIR [REPORT.html]\n");
        return 1;
    }
    json_t *doc = json_load_file(argv[1], 0, &jerr);
    if (!doc) {
        fprintf(stderr, "site-render: %s:%d: %s\n", argv[1], jerr.line,
                jerr.text);
        return 1;
    }
    int rc = 0;
    if (cl_site_write(doc, argv[2], err, sizeof err) != 0) {
        fprintf(stderr, "site-render: %s\n", err);
        rc = 1;
    }
    const json_t *job = json_object_get(doc, "report_job");
    if (rc == 0 && argc == 4 && json_is_object(job)) {
        FILE *f = fopen(argv[3], "w");
        if (!f || cl_report_write(f, CL_REPORT_HTML,
                                  json_object_get(job, "report"),
                                  json_object_get(job, "verdicts")) != 0) {
            fprintf(stderr, "site-render: writing %s failed\n", argv[3]);
            rc = 1;
        }
        if (f && fclose(f) != 0)
            rc = 1;
    }
    json_decref(doc);
    return rc;
}
