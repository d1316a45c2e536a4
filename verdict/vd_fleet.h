/* vd_fleet.h -- the cross-host summary of one comparison.
 *
 * Hosts never pool samples: each host's verdict is its own, computed with
 * its own floor by vd_compare. This module only counts those verdicts and
 * says whether they agree. Pure computation, no I/O, no allocation.
 */
#ifndef VD_FLEET_H
#define VD_FLEET_H

#include <stddef.h>
#include "vd_verdict.h"

typedef struct {
    unsigned hosts;                       /* verdicts counted */
    unsigned count[VD_OUTCOME_COUNT];     /* per outcome; sums to hosts */
    double geomean_ratio;                 /* of the hosts' median ratios */
    double geomean_best_ratio;            /* of the hosts' best ratios */
} vd_fleet_t;

/* Fill f from n host verdicts (outcomes[i], ratios[i], best_ratios[i]).
 * n == 0 gives hosts 0 and geomeans of 0. Ratios must be > 0 and finite;
 * returns VD_ERR and writes err for the first one that is not. */
int vd_fleet_summarize(const vd_outcome_t *outcomes, const double *ratios,
                       const double *best_ratios, size_t n, vd_fleet_t *f,
                       char *err, size_t errlen);

/* The consensus sentence into buf: "loss on all 4 hosts",
 * "parity on the only host", "mixed: loss on 2, parity on 2", "no hosts".
 * Outcomes in a mixed sentence are in order loss, win, parity, most
 * frequent first within that order. Returns buf. */
char *vd_fleet_consensus(const vd_fleet_t *f, char *buf, size_t buflen);

#endif
