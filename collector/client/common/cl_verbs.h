/* cl_verbs.h -- the one table of `parity` subcommands.
 *
 * A verb is one line here, X(name, summary), and a file cl_<name>.c that
 * defines int cl_<name>_main(int argc, char **argv). argv[0] is the verb's
 * name; the function parses its own options, answers --help (usage on
 * stdout, exit 0) and returns one of the PW_EXIT_* codes of pw_out.h.
 * parity.c builds --help, `parity help VERB` and dispatch from this list,
 * so only verbs that work belong here, in the order --help shows them.
 */
#ifndef CL_VERBS_H
#define CL_VERBS_H

#define CL_VERBS(X) \
    X(verdict, "judge two lists of samples: win, parity or loss") \
    X(import,  "verdicts from hyperfine or Google Benchmark JSON files") \
    X(compare, "run commands interleaved here and judge them") \
    X(keygen,  "write a CURVE key pair for an agent, client or collector") \
    X(run,     "run a suite on the fleet's hosts (a job); --wait for verdicts") \
    X(verdicts, "a job's per-host verdicts and the cross-host summary") \
    X(hosts,   "the collector's hosts: state, floor, CPU, warnings") \
    X(selftest, "an A/A job: each host's false-verdict rate") \
    X(jobs,    "the latest jobs and their per-host states") \
    X(cancel,  "cancel a job") \
    X(show,    "one stored run in full, as a results file") \
    X(export,  "write every host's results file of a job") \
    X(history, "one benchmark's verdicts over time, per job and host") \
    X(regressions, "change points over time: steps of a series, open first") \
    X(changes, "change points of any series (CSV, JSON Lines), offline") \
    X(bisect,  "find the commit that made a step, across the fleet's hosts") \
    X(report,  "one job as a Markdown or HTML report for people")

#define CL_VERB_PROTOTYPE(name, summary) \
    int cl_##name##_main(int argc, char **argv);
CL_VERBS(CL_VERB_PROTOTYPE)
#undef CL_VERB_PROTOTYPE

#endif
