/* co_page.h -- the HTML pages of the fleet: the overview, hosts,
 * regressions and events, one page per benchmark with its SVG plots.
 * The static site of `parity report --site` (collector/client's cl_site)
 * and the collector's live dashboard (collector/http's co_dash) are both
 * written by this code; they differ only in the options below: where a
 * link points, whether a page reloads itself, and whether a change
 * point carries the links and forms that acknowledge it.
 *
 * Pages are plain HTML with one inline style sheet and inline SVG; there
 * is no script, so nothing can fail in a browser's console and nothing
 * is loaded from the network. Every text from a host, a suite or a user
 * is escaped (co_svg_text).
 *
 * The document the pages read is what the client and the dashboard
 * assemble from the collector's answers (docs/protocol.md 10):
 *   {"generated_at_us": N,
 *    "hosts":       the `hosts` body (10.7),
 *    "latest":      the `verdicts` body of the newest job (10.8) or null,
 *    "regressions": the `change_points` of the `regressions` body (10.12)}
 * A benchmark list is [{"suite", "benchmark", "count"}], a series list
 * the `series` answer's "series" (10.14). Everything is borrowed; the
 * writers return 0, or -1 when out of memory. Errors of the stream show
 * in ferror(f). Nothing here prints elsewhere. */
#ifndef CO_PAGE_H
#define CO_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* Newest runs of a series that get a box plot on its page. */
#define CO_PAGE_BOX_RUNS 5
/* Most rows of one table of change points or events. */
#define CO_PAGE_MAX_ROWS 500

typedef struct {
    /* The href of (suite, benchmark)'s page written into buf, or NULL
     * when it has none (no link is made). */
    const char *(*bench_href)(void *ctx, const char *suite,
                              const char *bench, char *buf, size_t len);
    void *ctx;
    const char *home;       /* the overview: "index.html", "/" */
    const char *feed;       /* the Atom feed of regressions */
    const char *maker;      /* the footer's "Made by ..." */
    /* The dashboard's pages: the navigation to /hosts and /regressions,
     * and the reload of the overview and regressions pages every
     * refresh_s seconds (0: never). */
    bool live;
    int refresh_s;
    /* Not NULL: each open change point and event links to its
     * acknowledge page (co_page_ack), each acknowledged one carries a
     * form to reopen it; the forms post this CSRF token. */
    const char *csrf;
} co_page_opts_t;

/* The overview: hosts, open events, open change points, the latest
 * job's verdicts, acknowledged ones and the benchmarks (benches;
 * truncated and dropped say the list is incomplete). */
int co_page_overview(FILE *f, const json_t *doc, const json_t *benches,
                     bool truncated, size_t dropped,
                     const co_page_opts_t *o);

/* The page of one benchmark: per series its history plot, its marks
 * and the box plots of its newest runs. */
int co_page_bench(FILE *f, const json_t *doc, const char *suite,
                  const char *bench, const json_t *series,
                  const co_page_opts_t *o);

/* The hosts page (the overview's table alone). */
int co_page_hosts(FILE *f, const json_t *doc, const co_page_opts_t *o);

/* The regressions page: open events, open and acknowledged change
 * points. */
int co_page_regressions(FILE *f, const json_t *doc,
                        const co_page_opts_t *o);

/* The dashboard's page that acknowledges the open event or change point
 * id: its row, and a form taking the note (o->csrf). It does not reload
 * itself, so a note being typed is kept. 1, writing nothing, when id is
 * not open (or o has no csrf). */
int co_page_ack(FILE *f, const json_t *doc, json_int_t id,
                const co_page_opts_t *o);

#endif
