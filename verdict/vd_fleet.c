/* vd_fleet.c -- cross-host summary; see vd_fleet.h. */
#include "vd_fleet.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int
vd_fleet_summarize(const vd_outcome_t *outcomes, const double *ratios,
                   const double *best_ratios, size_t n, vd_fleet_t *f,
                   char *err, size_t errlen)
{
    double log_sum = 0.0, best_log_sum = 0.0;

    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < n; i++) {
        if ((unsigned)outcomes[i] >= VD_OUTCOME_COUNT) {
            snprintf(err, errlen, "host %zu: outcome %d is not win, parity "
                     "or loss", i + 1, (int)outcomes[i]);
            return VD_ERR;
        }
        if (!isfinite(ratios[i]) || !(ratios[i] > 0) ||
            !isfinite(best_ratios[i]) || !(best_ratios[i] > 0)) {
            snprintf(err, errlen, "host %zu: ratio %g / best ratio %g: must "
                     "be finite and > 0", i + 1, ratios[i], best_ratios[i]);
            return VD_ERR;
        }
        f->count[outcomes[i]]++;
        log_sum += log(ratios[i]);
        best_log_sum += log(best_ratios[i]);
    }
    f->hosts = (unsigned)n;
    if (n) {
        f->geomean_ratio = exp(log_sum / (double)n);
        f->geomean_best_ratio = exp(best_log_sum / (double)n);
    }
    return VD_OK;
}

char *
vd_fleet_consensus(const vd_fleet_t *f, char *buf, size_t buflen)
{
    /* Loss first: a regression is what a reader looks for. */
    static const vd_outcome_t order[] = {VD_LOSS, VD_WIN, VD_PARITY};
    vd_outcome_t sorted[3];
    size_t used = 0, kinds = 0;

    if (buflen == 0)
        return buf;
    buf[0] = '\0';
    if (f->hosts == 0) {
        snprintf(buf, buflen, "no hosts");
        return buf;
    }
    for (size_t i = 0; i < 3; i++)
        if (f->count[order[i]] == f->hosts) {
            if (f->hosts == 1)
                snprintf(buf, buflen, "%s on the only host",
                         vd_outcome_name(order[i]));
            else
                snprintf(buf, buflen, "%s on all %u hosts",
                         vd_outcome_name(order[i]), f->hosts);
            return buf;
        }
    /* Stable sort of the three by count, descending. */
    memcpy(sorted, order, sizeof sorted);
    for (size_t i = 1; i < 3; i++)
        for (size_t j = i; j > 0 &&
             f->count[sorted[j]] > f->count[sorted[j - 1]]; j--) {
            vd_outcome_t t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    used = (size_t)snprintf(buf, buflen, "mixed:");
    for (size_t i = 0; i < 3 && used < buflen; i++) {
        if (!f->count[sorted[i]])
            continue;
        used += (size_t)snprintf(buf + used, buflen - used, "%s %s on %u",
                                 kinds++ ? "," : "",
                                 vd_outcome_name(sorted[i]),
                                 f->count[sorted[i]]);
    }
    return buf;
}
