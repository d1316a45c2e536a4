/* co_atom.h -- the site's Atom feed of regressions (regressions.xml, as
 * asv publishes one), written by `parity report --site` beside
 * index.html (docs/commands/report.md).
 *
 * One entry per fleet event that is a regression (docs/regressions.md,
 * docs/protocol.md 10.12 EVENT), open or acknowledged: a feed reader
 * hears of each once, and an acknowledgement changes the entry rather
 * than taking it away. Newest first (by the newest of the event's first
 * run after the step and its change points' updates), at most
 * CO_ATOM_MAX_ENTRIES. Entry ids are urn:parity:event:ID, ID the
 * event's (its smallest change point's, stable while the step is the
 * same); links point into the page that lists them (#event-ID, #cp-ID
 * for an acknowledged one): the site's index.html, the dashboard's
 * /regressions.
 *
 * The document is co_page.h's; borrowed. Nothing here prints.
 */
#ifndef CO_ATOM_H
#define CO_ATOM_H

#include <stdio.h>
#include <jansson.h>

/* Most entries in the feed. */
#define CO_ATOM_MAX_ENTRIES 100

/* Write the feed of doc to f, its entries linking into page
 * ("index.html", "/regressions") and self the feed's own address: 0, or
 * -1 on out of memory or a write error. */
int co_atom_write(FILE *f, const json_t *doc, const char *page,
                  const char *self);

#endif
