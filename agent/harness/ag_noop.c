/* ag_noop.c -- parity-noop: the calibration program. It does nothing on
 * purpose: its wall time through the harness's spawn path is what no code
 * change can move (the per-host noise floor, verdict-rule.md). */
int
main(void)
{
    return 0;
}
