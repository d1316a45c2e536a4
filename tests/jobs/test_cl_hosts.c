/* test_cl_hosts.c -- the table of `parity hosts` (cl_hosts_print) on a
 * canned answer, compared whole with tests/expected/hosts.out: an online
 * host calibrated with every metric's floor, an offline one with the
 * default floor and no calibration, a revoked key, two agents of one
 * machine, and a self-test past 2 % false verdicts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "cl_hosts.h"
#include "tap.h"
#include "expected.h"

#define NOW_US 1765000000000000LL   /* ages below are from here */

int
main(void)
{
    json_error_t je;
    char text[4096];
    snprintf(text, sizeof text,
        "{\"hosts\": ["
        " {\"name\": \"alpha\", \"online\": true, \"key_state\": \"approved\","
        "  \"last_seen_us\": %lld, \"floor_us\": 312.5, \"floor_default\": false,"
        "  \"floor_samples\": 1000, \"floor_quiet\": true,"
        "  \"floor_oldest_us\": %lld, \"floor_newest_us\": %lld,"
        "  \"metric_floors\": {\"cpu\": {\"floor\": 160.0, \"default\": false},"
        "   \"peak_rss\": {\"floor\": 4.0, \"default\": false}},"
        "  \"calibrated_at_us\": %lld, \"cpu_model\": \"Xeon E5\","
        "  \"kernel\": \"6.1.0-18-amd64\", \"suites\": [\"example\", \"db\"],"
        "  \"warnings\": [], \"boot_id\": \"b00710aa55\","
        "  \"same_machine\": [\"alpha2\"], \"same_machine_count\": 1,"
        "  \"selftest\": {\"job\": \"j1\", \"at_us\": %lld, \"trials\": 50,"
        "   \"false_verdicts\": 3, \"rate\": 0.06, \"floor_us\": 300.0}},"
        " {\"name\": \"alpha2\", \"online\": false, \"key_state\": \"approved\","
        "  \"last_seen_us\": %lld, \"floor_us\": 25.0, \"floor_default\": true,"
        "  \"floor_samples\": 0, \"metric_floors\": {},"
        "  \"calibrated_at_us\": null, \"cpu_model\": null, \"kernel\": null,"
        "  \"suites\": [], \"warnings\": [{\"code\": \"turbo\"},"
        "   {\"code\": \"governor\"}], \"boot_id\": \"b00710aa55\","
        "  \"same_machine\": [\"alpha\"], \"same_machine_count\": 1,"
        "  \"selftest\": null},"
        " {\"name\": \"gamma\", \"online\": true, \"key_state\": \"revoked\","
        "  \"last_seen_us\": %lld, \"floor_us\": 40.0, \"floor_default\": false,"
        "  \"floor_samples\": 500, \"metric_floors\": {},"
        "  \"calibrated_at_us\": %lld, \"cpu_model\": \"EPYC 7302\","
        "  \"kernel\": \"6.1.0-18-amd64\", \"suites\": [\"example\"],"
        "  \"warnings\": [], \"boot_id\": \"\", \"same_machine\": [],"
        "  \"same_machine_count\": 0, \"selftest\": null}]}",
        NOW_US - 2000000LL, NOW_US - 86400000000LL, NOW_US - 60000000LL,
        NOW_US - 90000000LL, NOW_US - 3 * 86400000000LL,
        NOW_US - 7200000000LL, NOW_US - 45000000LL, NOW_US - 600000000LL);
    json_t *body = json_loads(text, 0, &je);
    ok(body != NULL, "canned answer (%s)", body ? "" : je.text);
    char *t = CAPTURE(f, cl_hosts_print(f, body, NOW_US));
    ok(expected_match("hosts", t), "the hosts table, whole");
    free(t);

    json_t *none = json_pack("{s:[]}", "hosts");
    t = CAPTURE(f, cl_hosts_print(f, none, NOW_US));
    ok(t && strstr(t, "(no host has said Hello to this collector yet)\n"),
       "no host: the header and a line saying so");
    free(t);
    json_decref(none);
    json_decref(body);
    return tap_done();
}
