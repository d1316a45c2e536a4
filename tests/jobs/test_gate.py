#!/usr/bin/env python3
"""test_gate.py gate BUILD_DIR -- `parity run --wait` as a CI gate (TAP).

Real processes, as in test_jobs.py: parity-collector with its private
PostgreSQL, three parity-agent daemons (alpha, beta, gamma) on 127.0.0.1,
and the `parity` client. Their suite `perf` has a benchmark `tool` whose
subject sleeps 50 ms, or 100 ms (twice as long) for a commit whose id starts
with `slow`, against a release arm of 50 ms, and `startup` (/bin/true
against echo).

The two YAML examples of docs/ci.md are read, their shape checked, and
their `parity` scripts run with the CI's variables, at the collector's
default --parity 0.04: a history job on main, an A/A pull request (exit
0, nothing fails) and a slowed one (exit 1, a loss on each host), each
judged against its base in one job (--against). What a user reads is checked exactly: the gate
table's rows, the Markdown's result line and rows (with their anchors),
the JUnit file's cases and failures, which xmllint validates against
tests/jobs/junit.xsd. Then: no baseline (undecided: reported, skipped in
JUnit; failed with --fail-on undecided), --fail-on any on an A/A job,
every usage error (no job made), and the raw `baseline` request's
errors.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True
import yaml  # noqa: E402  (python3-yaml, deploy/install.sh)

import test_jobs as tj  # noqa: E402
from parity_fixtures import ok, diag  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "..", "..", "docs", "ci.md")
SCHEMA = os.path.join(HERE, "junit.xsd")

PERF = """suite: perf
revision: commit
variables:
  commit: none
defaults:
  runs: 10
  warmup: 1
benchmarks:
  - name: tool
    arms:
      - name: tool
        subject: true
        shell: 'case "${commit}" in slow*) sleep 0.1;; *) sleep 0.05;; esac'
      - name: release
        command: [sleep, "0.05"]
  - name: startup
""" + tj.STARTUP_ARMS

HOSTS = ("alpha", "beta", "gamma")


class World(tj.World):
    def __init__(self):
        super().__init__()
        with open(os.path.join(self.suites, "perf.yaml"), "w") as f:
            f.write(PERF)
        self.work = tempfile.mkdtemp(prefix="ci-", dir=self.root)

    def env(self, extra):
        e = self.client_env(extra=extra)
        e["PATH"] = os.path.dirname(tj.PARITY) + ":" + e["PATH"]
        return e

    def script(self, text, extra, timeout=180):
        """Run a CI script as the runner would (sh -e), in the work dir."""
        return subprocess.run(["sh", "-e", "-c", text], capture_output=True,
                              text=True, timeout=timeout, cwd=self.work,
                              env=self.env(extra))


def yaml_blocks():
    with open(DOCS) as f:
        text = f.read()
    return [yaml.safe_load(b) for b in
            re.findall(r"```yaml\n(.*?)```", text, re.S)]


def xmllint(path):
    return tj.pf.xmllint(path, "--schema", SCHEMA)


def junit_cases(path):
    root = ET.parse(path).getroot()
    out = {}
    for tc in root.iter("testcase"):
        kids = {k.tag: k for k in tc}
        out[tc.get("name")] = (tc.get("classname"), kids)
    return root, out


def md_rows(path):
    """The Markdown table's rows as lists of cells (header skipped)."""
    with open(path) as f:
        lines = f.read().splitlines()
    rows = [ln for ln in lines if ln.startswith("| ")]
    return lines, [[c.strip() for c in r.strip("|").split(" | ")]
                   for r in rows[1:]]


def check_examples(gh, gl):
    on = gh.get("on", gh.get(True, {}))   # YAML 1.1 reads `on` as true
    ok("push" in on and on["push"]["branches"] == ["main"] and
       "pull_request" in on, "GitHub: on push to main and pull_request")
    steps = gh["jobs"]["parity"]["steps"]
    ok(gh["jobs"]["parity"]["runs-on"] == ["self-hosted", "parity"],
       "GitHub: a self-hosted runner labelled parity")
    named = {s.get("name"): s for s in steps}
    ok("History" in named and "Gate" in named and
       "--junit parity.xml" in named["Gate"]["run"] and
       '--against commit="$BASE_SHA"' in named["Gate"]["run"] and
       named["Gate"]["env"]["BASE_SHA"] ==
       "${{ github.event.pull_request.base.sha }}" and
       named["Test report"]["with"]["path"] == "parity.xml",
       "GitHub: History and Gate steps, the gate against the base; the "
       "report uploads the --junit file")
    gate = gl["parity-gate"]
    junit = re.search(r"--junit (\S+)", gate["script"][0]).group(1)
    ok(gate["artifacts"]["reports"]["junit"] == junit and
       gate["artifacts"]["when"] == "always" and gate["tags"] == ["parity"],
       "GitLab: the gate's junit report is the --junit file (%s), kept "
       "always" % junit)
    ok(gl["parity-history"]["rules"][0]["if"] ==
       '$CI_COMMIT_BRANCH == "main"' and '--against commit='
       '"$CI_MERGE_REQUEST_DIFF_BASE_SHA"' in gate["script"][0],
       "GitLab: the history runs on main, the gate against the merge base")
    return named["History"]["run"], named["Gate"]["run"]


def check_aa(w, r, summary, junit, base):
    if r.returncode:
        diag(r.stdout)
    ok(r.returncode == 0, "A/A pull request: the gate exits 0 (%d: %s)" %
       (r.returncode, r.stderr.strip()[-300:]))
    ok("\nagainst commit=%s:\n" % base in r.stdout and
       "gate passed: 0 of 6 cases fail (fail on loss; against commit=%s)"
       % base in r.stdout, "A/A: the gate table and its result line on "
       "stdout") or diag(r.stdout[-1500:])
    lines, rows = md_rows(summary)
    ok(lines[0] == "### Parity: suite perf against commit=%s" % base and
       lines[2].startswith("**passed**: 0 of 6 cases fail (fail on loss; "
                           "against commit=%s): " % base),
       "A/A: the Markdown's heading and result line (%s)" % lines[:3])
    tool = [x for x in rows if x[0] == "tool"]
    ok(len(tool) == 3 and all(x[2] in ("parity", "undecided")
                              for x in tool),
       "A/A: tool is parity (or too near the edge) on every host: %s" %
       [x[2] for x in tool])
    rc, err = xmllint(junit)
    ok(rc == 0, "A/A: the JUnit file validates against junit.xsd (%s)" % err)
    root, cases = junit_cases(junit)
    suite = root.find("testsuite")
    ok(len(cases) == 6 and suite.get("failures") == "0" and
       suite.get("tests") == "6" and
       all(n in cases for n in ("tool on alpha", "startup on gamma")),
       "A/A: 6 testcases (benchmark x host), no failure: %s" %
       sorted(cases))


def check_slow(w, r, summary, junit, base):
    ok(r.returncode == 1, "slowed pull request: the gate exits 1 (%d)" %
       r.returncode)
    ok("parity run: the gate failed: 3 of 6 cases" in r.stderr,
       "slowed: stderr says the gate failed (%s)" % r.stderr.strip()[-200:])
    fails = [ln.split() for ln in r.stdout.splitlines()
             if ln.rstrip().endswith(" FAIL")]
    ok(sorted(f[1] for f in fails) == list(HOSTS) and
       all(f[0] == "tool" and f[2] == "loss" for f in fails),
       "slowed: the gate table has tool's loss on each host, FAIL: %s" %
       fails)
    lines, rows = md_rows(summary)
    diag("the Markdown summary:\n" + "\n".join(lines))
    ok(lines[2].startswith("**failed**: 3 of 6 cases fail (fail on loss; "
                           "against commit=%s): " % base),
       "slowed: the Markdown's result line (%s)" % lines[2])
    tool = {x[1]: x for x in rows if x[0] == "tool"}
    want = {'<a id="parity-tool-%s"></a>%s' % (h, h) for h in HOSTS}
    ok(set(tool) == want, "slowed: a row per host with its anchor: %s" %
       sorted(tool))
    ratios = [float(x[3]) for x in tool.values()]
    tols = [float(x[4].split()[0]) for x in tool.values()]
    ok(all(x[2] == "**loss**" for x in tool.values()) and
       all(1.4 < q < 2.6 for q in ratios) and
       all(x[4].endswith(" %") and t >= 4.0 for x, t in
           zip(tool.values(), tols)),
       "slowed: each row reads **loss**, a ratio near 2 and a tolerance "
       "of at least the collector's 4 %%: %s, %s" % (ratios, tols))
    ok(any(ln.startswith("- tool: loss on all 3 hosts") for ln in lines),
       "slowed: tool's consensus line")
    rc, err = xmllint(junit)
    ok(rc == 0, "slowed: the JUnit file validates (%s)" % err)
    root, cases = junit_cases(junit)
    failed = {n: k["failure"] for n, (c, k) in cases.items()
              if "failure" in k}
    ok(sorted(failed) == ["tool on %s" % h for h in HOSTS] and
       all(cases[n][0] == "perf.tool" for n in failed) and
       all(f.get("type") == "loss" and
           re.match(r"loss: ratio [12]\.\d{4}, tolerance \d+\.\d %, best "
                    r"ratio [12]\.\d{4}, floor \d+\.\d us$",
                    f.get("message"))
           for f in failed.values()) and
       root.get("failures") == "3",
       "slowed: one <failure type=loss> with the numbers per host: %s" %
       {n: f.get("message") for n, f in failed.items()})


def case_examples(w):
    gh, gl = yaml_blocks()
    base, gate = check_examples(gh, gl)
    r = w.script(base, {"GITHUB_SHA": "base0001"})
    ok(r.returncode == 0, "GitHub History step exits 0 (%d: %s)" %
       (r.returncode, r.stderr.strip()[-300:]))
    summary = os.path.join(w.work, "step-summary.md")
    r = w.script(gate, {"GITHUB_SHA": "aa000002", "BASE_SHA": "base0001",
                        "GITHUB_STEP_SUMMARY": summary})
    check_aa(w, r, summary, os.path.join(w.work, "parity.xml"), "base0001")
    r = w.script(gate, {"GITHUB_SHA": "slow0003", "BASE_SHA": "base0001",
                        "GITHUB_STEP_SUMMARY": summary})
    check_slow(w, r, summary, os.path.join(w.work, "parity.xml"),
               "base0001")

    # GitLab: history on main, then a slowed merge request.
    r = w.script(gl["parity-history"]["script"][0],
                 {"CI_COMMIT_SHA": "base0004"})
    ok(r.returncode == 0, "GitLab parity-history exits 0 (%d)" %
       r.returncode)
    os.unlink(os.path.join(w.work, "parity.xml"))
    r = w.script(gl["parity-gate"]["script"][0],
                 {"CI_COMMIT_SHA": "slow0005",
                  "CI_MERGE_REQUEST_DIFF_BASE_SHA": "base0004"})
    check_slow(w, r, os.path.join(w.work, "parity.md"),
               os.path.join(w.work, "parity.xml"), "base0004")
    jobs = (w.pjson("jobs", "--json") or {}).get("jobs", [])
    row = w.psql("SELECT vars::text || ' ' || against::text FROM jobs "
                 "ORDER BY id DESC LIMIT 1")
    ok(len(jobs) >= 5 and jobs[0].get("tags") == {"branch": "merge-request"}
       and row == '{"commit": "slow0005"} [{"name": "commit", "value": '
       '"base0004"}]', "the gate's job is a normal job with its tags, "
       "variables and against (%s, %s)" %
       (jobs[0].get("tags") if jobs else None, row))
    runs = w.psql("SELECT string_agg(DISTINCT r.tags->>'commit', ',') FROM "
                  "runs r JOIN jobs j ON j.job_uuid = r.job_id WHERE "
                  "j.vars->>'commit' = 'slow0005'")
    ok(runs == "slow0005", "its runs carry the revision as their commit "
       "tag (%s)" % runs)


def case_undecided(w):
    md = os.path.join(w.work, "none.md")
    xml = os.path.join(w.work, "none.xml")
    args = ("run", "perf", "--wait", "--only", "tool", "--var",
            "commit=aa0006", "--baseline", "branch=nothing",
            "--summary-markdown", md, "--junit", xml)
    r = w.parity(*args, timeout=180)
    ok(r.returncode == 0 and "gate passed: 0 of 3 cases fail (fail on "
       "nothing; against branch=nothing): 0 win, 0 parity, 0 loss, 3 "
       "undecided" in r.stdout,
       "no baseline, no --fail-on: 3 undecided cases reported, exit 0 "
       "(%d)" % r.returncode)
    ok("  tool on alpha: undecided: no baseline: no complete run of this "
       "benchmark on this host in an ended job with the baseline's tags"
       in r.stdout, "the reason is printed under the table")
    rc, err = xmllint(xml)
    root, cases = junit_cases(xml)
    ok(rc == 0 and root.get("skipped") == "3" and
       all("skipped" in k and k["skipped"].get("type") == "undecided"
           for c, k in cases.values()),
       "undecided cases are <skipped type=undecided> (%s)" % err)
    lines, rows = md_rows(md)
    ok([x[2] for x in rows] == ["undecided"] * 3 and
       all(x[5] == "none" for x in rows),
       "Markdown: undecided, baseline none: %s" % rows)
    r = w.parity(*(args + ("--fail-on", "undecided")), timeout=180)
    ok(r.returncode == 1 and "gate failed: 3 of 3 cases fail (fail on "
       "undecided;" in r.stdout,
       "--fail-on undecided: the same job fails (%d)" % r.returncode)
    root, cases = junit_cases(xml)
    ok(root.get("failures") == "3" and root.get("skipped") == "0",
       "--fail-on undecided: they are failures in JUnit")
    r = w.parity("run", "perf", "--wait", "--only", "tool", "--var",
                 "commit=aa0007", "--baseline", "branch=main", "--fail-on",
                 "any", "--json", timeout=180)
    g = {}
    try:
        g = json.loads(r.stdout).get("gate", {})
    except ValueError:
        diag(r.stdout[-500:])
    ok(r.returncode == (1 if g.get("win") or g.get("loss") else 0) and
       g.get("cases") == 3 and g.get("failed") == g.get("win", 0) +
       g.get("loss", 0),
       "--fail-on any --json: the gate object counts the cases, a win or "
       "a loss fails (%s, exit %d)" % (g, r.returncode))


def case_errors(w):
    before = len((w.pjson("jobs", "--json") or {}).get("jobs", []))
    # Their exact messages are pinned in tests/cli/cli_cases.yaml (they
    # come before any connection); here, that none makes a job.
    refused = [
        ("--baseline", "branch=main"), ("--wait", "--fail-on", "lose"),
        ("--wait", "--fail-on", "loss,"), ("--wait", "--baseline", "main"),
        ("--wait", "--junit", "/nonexistent/x.xml"),
        ("--wait", "--summary-markdown", "/nonexistent/m"),
    ]
    for args in refused:
        r = w.parity("run", "perf", *args)
        ok(r.returncode == 2 and r.stderr.startswith("parity run: --"),
           "run perf %s: exit 2, parity run: ... (got %d: %s)"
           % (" ".join(args), r.returncode, r.stderr.strip()))
    after = len((w.pjson("jobs", "--json") or {}).get("jobs", []))
    ok(before == after, "no job was made by a refused command line (%d, "
       "%d)" % (before, after))
    job = (w.pjson("jobs", "--json") or {}).get("jobs", [{}])[0].get("job")
    got = tj.requests(w, [
        ("baseline", '{"tags": {"branch": "main"}}'),
        ("baseline", '{"job": "%s"}' % job),
        ("baseline", '{"job": "%s", "tags": {}}' % job),
        ("baseline", '{"job": "%s", "tags": {"b": 1}}' % job),
        ("baseline", '{"job": "%s", "tags": {"b": "x"}, "x": 1}' % job),
        ("baseline", '{"job": "nope", "tags": {"b": "x"}}'),
        ("baseline", '{"job": "%s", "tags": {"branch": "main"}}' % job)])
    want = [
        ("1", '"job" (a job id, a string) is required'),
        ("1", '"tags" (an object of at least one tag, e.g. {"branch": '
              '"main"}) is required: it names the baseline\'s jobs'),
        ("1", '"tags" (an object of at least one tag, e.g. {"branch": '
              '"main"}) is required: it names the baseline\'s jobs'),
        ("1", 'tag "b" must be a string'),
        ("1", 'unknown argument "x" for baseline (known: job tags)'),
        ("4", 'no job "nope" (parity jobs lists them)')]
    for (st, text), (wst, wtext) in zip(got, want):
        ok(st == wst and text == wtext, "baseline request: %s %s" %
           (wst, wtext) + ("" if st == wst and text == wtext else
                           " (got %s %s)" % (st, text)))
    st, body = got[-1]
    ok(st == "0" and '"baseline": {"branch": "main"}' in body.replace(
        '":{', '": {').replace('":"', '": "'),
       "a well-formed baseline request answers (%s)" % body[:200])


def case_online(w):
    ok(w.start_fleet(HOSTS), "three agents are online")


def main():
    tj.pf.need(tj.PARITY, tj.AGENT, tj.COLLECTOR, tj.REQUEST)
    if not shutil.which("xmllint"):
        tj.pf.bail("xmllint is not installed (libxml2-utils, "
                   "deploy/install.sh)")
    tj.run_world(World(), case_online, case_examples, case_undecided,
                 case_errors)


if __name__ == "__main__":
    main()
