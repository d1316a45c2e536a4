/* cl_atom.h -- the site's Atom feed of regressions (regressions.xml, as
 * asv publishes one), written by `parity report --site` beside
 * index.html (docs/commands/report.md).
 *
 * One entry per fleet event that is a regression (docs/regressions.md,
 * docs/protocol.md 10.12 EVENT), open or acknowledged: a feed reader
 * hears of each once, and an acknowledgement changes the entry rather
 * than taking it away. Newest first (by the newest of the event's first
 * run after the step and its change points' updates), at most
 * CL_ATOM_MAX_ENTRIES. Entry ids are urn:parity:event:ID, ID the
 * event's (its smallest change point's, stable while the step is the
 * same); links point into index.html (#event-ID, #cp-ID for an
 * acknowledged one).
 *
 * The document is the site's (cl_site.h); borrowed. Nothing here prints.
 */
#ifndef CL_ATOM_H
#define CL_ATOM_H

#include <stdio.h>
#include <jansson.h>

/* Most entries in the feed. */
#define CL_ATOM_MAX_ENTRIES 100

/* Write the feed of doc to f: 0, or -1 on out of memory or a write
 * error. */
int cl_atom_write(FILE *f, const json_t *doc);

#endif
