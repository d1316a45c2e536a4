/* ag_against.h -- one job that interleaves revisions (docs/suites.md
 * "Against"): `--var commit=HEAD --against commit=BASE` runs every
 * benchmark's subject arm once more per --against value, as an arm of
 * the same benchmark, in the same rounds as its other arms.
 *
 * Each instance is the suite file loaded again with the job's variables
 * and the revision variable set to that value, so that its command,
 * hooks, `cwd`, `env` (PARITY_VAR_* included) and `versions` are the
 * value's own: its `setup` builds or finds BASE, as the subject's does
 * HEAD. The instance of subject arm "work" at BASE is the arm
 * "work@BASE"; the verdict of "work" against it is subject@HEAD against
 * subject@BASE, computed by the rule like any other arm's.
 *
 * Only the suite's revision variable (`revision:`) may be given: the
 * revision is no part of a series, so the job's other verdicts stay in
 * theirs. Nothing here prints or exits.
 */
#ifndef AG_AGAINST_H
#define AG_AGAINST_H

#include <stddef.h>

#include "ag_suite.h"
#include "pw_limits.h"

/* Most --against values of one job: with the subject and one other arm,
 * a benchmark's arms stay within AG_SUITE_MAX_ARMS. */
#define AG_AGAINST_MAX PW_AGAINST_MAX
_Static_assert(AG_AGAINST_MAX + 2 == AG_SUITE_MAX_ARMS,
               "the subject, one other arm and every instance fit");

/* Add the instances of against[0 .. n) to s, which was loaded from text
 * (len bytes) with vars. 0, or -1 with err saying which --against and
 * why: the suite names no revision variable or another one, a value is
 * the subject's own or given twice, a benchmark would have more than
 * AG_SUITE_MAX_ARMS arms, an instance arm's name is taken, or the file
 * does not load with the value (ag_suite_load's message). s may hold
 * some instances after a failure; the caller destroys it then. Nothing
 * is kept of text, vars or against. */
int ag_against_add(ag_suite_t *s, const char *text, size_t len,
                   const ag_var_t *vars, size_t nvars,
                   const ag_var_t *against, size_t n, char *err,
                   size_t errlen);

#endif
