/* test_fleet.c -- cross-host counts, geometric means and consensus. */
#include "vd_fleet.h"
#include "../tap.h"

int
main(void)
{
    vd_fleet_t f;
    char buf[128], err[128];
    const vd_outcome_t all_loss[] = {VD_LOSS, VD_LOSS, VD_LOSS, VD_LOSS};
    const double r4[] = {1.2, 1.25, 1.1, 1.3};
    const double b4[] = {1.1, 1.2, 1.1, 1.2};

    ok(vd_fleet_summarize(all_loss, r4, b4, 4, &f, err, sizeof err) == VD_OK,
       "four losses summarise");
    ok(f.hosts == 4 && f.count[VD_LOSS] == 4 && f.count[VD_WIN] == 0,
       "counts 4 loss");
    ok_near(f.geomean_ratio, pow(1.2 * 1.25 * 1.1 * 1.3, 0.25), 1e-12,
            "geometric mean of ratios");
    ok_str(vd_fleet_consensus(&f, buf, sizeof buf), "loss on all 4 hosts",
           "unanimous consensus");

    const vd_outcome_t mixed[] = {VD_LOSS, VD_PARITY, VD_PARITY, VD_LOSS};
    vd_fleet_summarize(mixed, r4, b4, 4, &f, err, sizeof err);
    ok_str(vd_fleet_consensus(&f, buf, sizeof buf),
           "mixed: loss on 2, parity on 2", "mixed, loss first on a tie");

    const vd_outcome_t three[] = {VD_PARITY, VD_WIN, VD_PARITY, VD_LOSS};
    vd_fleet_summarize(three, r4, b4, 4, &f, err, sizeof err);
    ok_str(vd_fleet_consensus(&f, buf, sizeof buf),
           "mixed: parity on 2, loss on 1, win on 1", "most frequent first");

    vd_fleet_summarize(three, r4, b4, 1, &f, err, sizeof err);
    ok_str(vd_fleet_consensus(&f, buf, sizeof buf), "parity on the only host",
           "one host");
    vd_fleet_summarize(three, r4, b4, 0, &f, err, sizeof err);
    ok_str(vd_fleet_consensus(&f, buf, sizeof buf), "no hosts", "no hosts");

    const double bad[] = {1.0, 0.0};
    ok(vd_fleet_summarize(three, bad, b4, 2, &f, err, sizeof err) == VD_ERR,
       "a zero ratio is an error");
    ok_str(err, "host 2: ratio 0 / best ratio 1.2: must be finite and > 0",
           "message: %s", err);
    const vd_outcome_t junk[] = {(vd_outcome_t)9};
    ok(vd_fleet_summarize(junk, r4, b4, 1, &f, err, sizeof err) == VD_ERR,
       "an unknown outcome is an error");
    return tap_done();
}
