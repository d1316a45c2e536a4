/* cl_site.h -- the static site of `parity report --site DIR`
 * (docs/commands/report.md): HTML pages with inline CSS and SVG plots,
 * no script, no server, nothing loaded from the network, readable from
 * file://. The pages are co_page's (collector/page), as the collector's
 * live dashboard's are.
 *
 *   index.html          hosts (online, floor, warnings), open and acked
 *                       change points (regressions first, worst first),
 *                       the latest job's verdicts per host, coloured by
 *                       outcome, and the list of benchmark pages;
 *   bench-NNNN-NAME.html per benchmark: per series (host, arm pair,
 *                       variables) the history plot (co_svg.h) and the
 *                       box plots of its newest runs (cl_report.h);
 *   regressions.xml     the Atom feed of regression events (co_atom.h);
 *   .parity-site        the marker that DIR holds a site of ours.
 *
 * The document is what the client assembles from four collector answers:
 *   {"generated_at_us": N,
 *    "hosts":       the `hosts` body (docs/protocol.md 10.7),
 *    "latest":      the `verdicts` body of the newest job (10.8) or null,
 *    "regressions": {"open": [CP...], "acked": [CP...], "truncated": b},
 *    "series":      {"series": [SERIES...], "truncated": b}}
 * with CP and SERIES the change-point and series objects of the
 * collector's `regressions` and `series` answers.
 */
#ifndef CL_SITE_H
#define CL_SITE_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

/* The file whose presence says DIR holds a site this command wrote, so
 * rewriting it (and deleting its old bench-*.html pages) is safe. */
#define CL_SITE_MARKER ".parity-site"
/* Most benchmark pages; series of further benchmarks are left out and
 * the overview says so. */
#define CL_SITE_MAX_PAGES 10000

/* A site written one benchmark at a time, so that the client holds one
 * benchmark's series, not the fleet's:
 *   cl_site_begin   prepares dir (as cl_site_write) and keeps a reference
 *                   to doc, whose "series" may be absent (its "truncated"
 *                   is read when present); NULL with err on failure;
 *   cl_site_add     writes the page of each benchmark of series (an array
 *                   of SERIES, borrowed; give each benchmark's series in
 *                   one call: a second call rewrites its page); truncated
 *                   says an answer left series out; 0 or -1 with err;
 *   cl_site_end     writes index.html (unless err is NULL: then it only
 *                   frees, after a failure) and frees *s, setting it to
 *                   NULL; 0 or -1 with err.
 * Nothing here prints. */
typedef struct cl_site cl_site_t;
cl_site_t *cl_site_begin(json_t *doc, const char *dir, char *err,
                         size_t errlen);
int cl_site_add(cl_site_t *s, const json_t *series, bool truncated,
                char *err, size_t errlen);
int cl_site_end(cl_site_t **s, char *err, size_t errlen);

/* Write the site of doc (borrowed) into dir: created when missing (its
 * parent must exist); an existing dir must be empty or hold
 * CL_SITE_MARKER. Each page is written beside its name and renamed into
 * place. Returns 0, or -1 with err naming the failing call and path (or
 * why dir is refused). Never prints. */
int cl_site_write(const json_t *doc, const char *dir, char *err,
                  size_t errlen);

#endif
