#!/usr/bin/env python3
"""tests/fuzz/mkseeds.py -- (re)write the generated seed corpora.

    python3 tests/fuzz/mkseeds.py

Writes corpus/frame/ (delimited streams of Envelope frames, the agent's
usual sequence), corpus/reply/ (Reply and Error frames, and bare bodies)
and corpus/batch/, corpus/results/, corpus/import/ and corpus/suite/
seeds taken from examples/ and the shapes in docs/ and tests/. The
protobuf encoding is written out here by hand from proto/parity.proto
(field numbers and wire types), so the script needs nothing installed.
Seeds are small valid inputs; libFuzzer finds the invalid ones.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")


# ---- protobuf, by hand ----------------------------------------------------

def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def f_int(field, n):
    return key(field, 0) + varint(n) if n else b""


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return key(field, 2) + varint(len(data)) + data


def f_double(field, x):
    return key(field, 1) + struct.pack("<d", x)


def f_packed_doubles(field, xs):
    return f_bytes(field, b"".join(struct.pack("<d", x) for x in xs))


def envelope(seq, body_field, body):
    return f_int(1, 1) + f_int(2, seq) + f_bytes(body_field, body)


def tag(k, v):
    return f_bytes(1, k) + f_bytes(2, v)


def hello():
    suite = f_bytes(1, "example") + f_bytes(2, "compress") + \
        f_bytes(2, "same") + f_bytes(3, "ab" * 32)
    return envelope(0, 10, f_bytes(1, "host-a") + f_bytes(2, "0.1.0") +
                    f_bytes(3, "K" * 40) +
                    f_bytes(4, '{"cpu":{"model":"x"},"kernel":"6.1"}') +
                    f_bytes(5, suite) + f_bytes(6, tag("arch", "x86_64")) +
                    f_bytes(7, "boot-1"))


RUN = "6f1c8c1e-0000-4000-8000-000000000001"


def calibration():
    return envelope(1, 12, f_bytes(1, "cal-1") +
                    f_packed_doubles(2, [31.5, 30.25, 33.0, 29.75]) +
                    f_int(3, 1796221290000000))


def arm(name, subject, argv):
    return f_bytes(1, name) + f_int(2, 1 if subject else 0) + \
        b"".join(f_bytes(3, a) for a in argv) + f_bytes(5, "gzip 1.12")


def run_start():
    return envelope(2, 13, f_bytes(1, RUN) + f_bytes(3, "example") +
                    f_bytes(4, "compress") +
                    f_bytes(5, arm("gzip-1", True, ["gzip", "-1"])) +
                    f_bytes(5, arm("gzip-9", False, ["gzip", "-9"])) +
                    f_bytes(6, tag("commit", "abc123")) +
                    f_int(7, 1796221290000000) + f_int(8, 3) +
                    f_int(9, 1) + f_bytes(10, '{"kernel":"6.1"}') +
                    f_bytes(11, "label"))


def sample(kind, arm_i, rnd, pos, wall, error=""):
    return (f_int(1, kind) + f_int(2, arm_i) + f_int(3, rnd) +
            f_int(4, pos) + f_double(5, wall) + f_double(6, wall / 2) +
            f_double(7, wall / 10) + f_int(8, 2048) +
            f_int(9, 1 if error else 0) + f_int(11, 1) +
            f_int(12, 1796221290000000 + rnd) +
            (f_bytes(13, error) if error else b""))


def batch(seq, batch_seq):
    s = [sample(1, 0, 0, 0, 900.0), sample(0, 0, 1, 0, 566.0),
         sample(0, 1, 1, 1, 587.0), sample(2, 0, 1, 2, 31.0),
         sample(0, 1, 2, 0, 700.0), sample(0, 0, 2, 1, 568.0),
         sample(3, 1, 3, 0, 0.0, "exit status 1")]
    return envelope(seq, 14, f_bytes(1, RUN) + f_int(2, batch_seq) +
                    b"".join(f_bytes(3, x) for x in s))


def run_end(seq, batches):
    return envelope(seq, 15, f_bytes(1, RUN) + f_int(2, 0) +
                    f_int(4, batches) + f_int(5, 7 * batches) +
                    f_int(6, 1796221299000000))


def heartbeat():
    return envelope(0, 11, f_int(1, 1796221290000000) + f_int(2, 3) +
                    f_bytes(3, "running") + f_bytes(4, "job-1"))


def job_status():
    return envelope(9, 22, f_bytes(1, "job-1") + f_bytes(2, "running") +
                    f_bytes(3, RUN) + f_bytes(4, "compress") + f_int(5, 1) +
                    f_int(6, 3))


def delimited(*frames):
    return b"".join(varint(len(f)) + f for f in frames)


def reply(request_id, body, status=0, error=""):
    return envelope(0, 31, f_int(1, request_id) + f_int(2, status) +
                    f_bytes(3, body) + (f_bytes(4, error) if error else b""))


# ---- files ----------------------------------------------------------------

def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


def verdict(outcome, ratio):
    return {"outcome": outcome, "ratio": ratio, "best_ratio": ratio,
            "tolerance": 0.05, "noise": 0.01, "best_tolerance": 0.04,
            "floor_us": 25.0, "parity": 0.04, "diagnostics": ["few_runs"],
            "extra_runs": 3}


SUMMARY = {"n": 5, "min": 566.0, "q25": 568.0, "median": 576.0,
           "q75": 690.0, "max": 722.0, "iqr": 122.0, "mean": 624.4}

VERDICTS_BODY = {
    "job": "0123456789ab", "suite": "demo", "state": "ended",
    "tags": {"commit": "abc"}, "label": "",
    "hosts": [{"host": "alpha", "state": "done", "reason": ""},
              {"host": "beta", "state": "lost", "reason": "offline"}],
    "comparisons": [{
        "benchmark": "zip", "subject": "new", "other": "old|x",
        "hosts": [{"host": "alpha", "run_id": "r1", "status": "complete",
                   "verdict": verdict("loss", 1.162)},
                  {"host": "beta", "run_id": "r2", "status": "incomplete",
                   "error": "the run did not complete"}],
        "summary": {"hosts": 1, "win": 0, "parity": 0, "loss": 1,
                    "geomean_ratio": 1.162, "geomean_best_ratio": 1.162,
                    "consensus": "loss on the only host"}}]}

HISTORY_BODY = {
    "benchmark": "zip", "truncated": False,
    "pairs": [{"suite": "s", "subject": "new", "other": "old", "rows": [
        {"job": "0123456789ab", "run_id": "", "at_us": 1796221290000000,
         "tags": {"commit": "c,1"}, "label": "",
         "hosts": [{"host": "beta", "run_id": "r", "status": "complete",
                    "verdict": verdict("parity", 1.01)},
                   {"host": "alpha", "run_id": "r", "status": "complete",
                    "verdict": verdict("loss", 1.5)}],
         "summary": {"hosts": 2, "win": 0, "parity": 1, "loss": 1,
                     "geomean_ratio": 1.2, "geomean_best_ratio": 1.2,
                     "consensus": "mixed"}},
        {"job": "", "run_id": "run-x", "at_us": 1796221300000000,
         "tags": {}, "label": "adhoc",
         "hosts": [{"host": "alpha", "run_id": "r", "status": "complete",
                    "verdict": verdict("win", 0.5)}],
         "summary": {"hosts": 1, "win": 1, "parity": 0, "loss": 0,
                     "geomean_ratio": 0.5, "geomean_best_ratio": 0.5,
                     "consensus": "win on the only host"}}]}]}


def results_doc():
    samples = []
    for r in range(3):
        samples.append({"kind": "measured", "arm": "gzip1", "round": r,
                        "position": 0, "wall_us": 566.0 + r,
                        "user_us": 300.0, "sys_us": 20.0, "maxrss_kb": 2048,
                        "exit_status": 0, "term_signal": 0, "cpu": 1,
                        "start_unix_us": 1796221290000000})
        samples.append({"kind": "measured", "arm": "gzip9", "round": r,
                        "position": 1, "wall_us": 700.0 + r,
                        "user_us": 400.0, "sys_us": 20.0, "maxrss_kb": 2048,
                        "exit_status": 0, "term_signal": 0, "cpu": None,
                        "start_unix_us": 1796221290000000})
        samples.append({"kind": "calibration", "arm": None, "round": r,
                        "position": 2, "wall_us": 31.0 + r,
                        "user_us": 0.0, "sys_us": 0.0, "maxrss_kb": 0,
                        "exit_status": 0, "term_signal": 0, "cpu": 0,
                        "start_unix_us": 1796221290000000})
    samples.append({"kind": "error", "arm": "gzip9", "round": 3,
                    "position": 0, "wall_us": 12.0, "user_us": 0.0,
                    "sys_us": 0.0, "maxrss_kb": 0, "exit_status": 1,
                    "term_signal": 0, "cpu": 0,
                    "start_unix_us": 1796221290000000,
                    "error": "exit status 1"})
    return {
        "schema_version": 3, "tool": "parity-agent", "tool_version": "0.1.0",
        "suite": "example", "suite_file": "examples/suites/example.yaml",
        "complete": True, "started_at_us": 1796221290000000,
        "ended_at_us": 1796221299000000, "environment": {"kernel": "6.1"},
        "warnings": [],
        "floor": {"floor_us": 31.2, "default": False,
                  "calibration_samples": 7, "parity": 0.04},
        "calibration": {"taken_at_us": 1796221290000000,
                        "wall_us": [31.0, 30.0, 32.5, 29.0]},
        "benchmarks": [{
            "name": "compress", "status": "complete", "reason": None,
            "stderr_tail": None, "runs": 3, "warmup": 0,
            "arms": [{"name": "gzip1", "subject": True,
                      "command": ["gzip", "-1"], "version_output": ""},
                     {"name": "gzip9", "subject": False,
                      "shell": "gzip -9", "version_output": ""}],
            "order": [["gzip1", "gzip9"], ["gzip9", "gzip1"]],
            "samples": samples,
            "summary": {"gzip1": SUMMARY, "gzip9": SUMMARY},
            "verdict": {"gzip9": dict(verdict("win", 0.809),
                                      subject=SUMMARY, other=SUMMARY)},
            "verdict_error": None}]}


def main():
    # frame: one connection's frames, each after its varint length.
    write("frame", "hello", delimited(hello()))
    write("frame", "session", delimited(hello(), calibration(), run_start(),
                                        batch(3, 0), batch(4, 1),
                                        run_end(5, 2)))
    write("frame", "heartbeat-jobstatus", delimited(hello(), heartbeat(),
                                                    job_status()))
    write("frame", "no-hello", delimited(run_start(), batch(3, 0)))
    # An over-long tag (82 00: field 0) inside a sample, which protobuf-c
    # skips as unknown and pw_wire_unpack refuses.
    write("frame", "overlong-tag-sample", delimited(
        hello(), run_start(),
        envelope(3, 14, f_bytes(1, RUN) + f_int(2, 0) +
                 f_bytes(3, sample(0, 0, 1, 0, 566.0) + b"\x82\x00\x00"))))
    write("frame", "request", delimited(envelope(0, 30, f_int(1, 7) +
                                                 f_bytes(2, "ping") +
                                                 f_bytes(3, "{}"))))

    # reply: frames the client reads, and bare bodies the target wraps.
    write("reply", "verdicts-frame", reply(1, json.dumps(VERDICTS_BODY)))
    write("reply", "history-frame", reply(1, json.dumps(HISTORY_BODY)))
    write("reply", "status", reply(1, "", status=7, error="query timed out"))
    write("reply", "error", envelope(0, 17, f_int(1, 10) +
                                     f_bytes(2, "refused") + f_int(3, 4)))
    write("reply", "older", reply(0, "{}"))
    write("reply", "verdicts.json", json.dumps(VERDICTS_BODY))
    write("reply", "history.json", json.dumps(HISTORY_BODY))

    # batch: JSON Lines as in README.md and docs/commands/verdict.md.
    write("batch", "readme", '{"a":[566,568,576,690,722],'
          '"b":[587,700,712,718,725]}\n')
    write("batch", "params", '{"a": [1.5, 2.25, 3e2, 4E-1], "b": [2, 3, 4],'
          ' "floor_us": 0, "parity": 0.04}\n'
          '{"b":[10,11,12],"a":[10.5,11.5,12.5],"parity":1e-3}\n')
    write("batch", "errors", '\n{"a":[1,2]}\n{"a":[1,2],"b":[1,2],"c":1}\n'
          '{"a":[0,1],"b":[-1,2]}\n\xef\xbb\xbf{"a":[1,2],"b":[3,4]}\n'
          '{"a":[1,2],"a":[1,2],"b":[1,2]}\n[1,2]\n')

    # results: a schema 3 results file (proto/pw_results.h's shape).
    write("results", "compress.json", json.dumps(results_doc(), indent=1))

    # import: the format word and options, then the file(s).
    for name in ("hyperfine-modes.json", "hyperfine-spawn.json"):
        write("import", name, b"hyperfine\n" + read("examples/" + name))
    write("import", "hyperfine-json-ref",
          b"hyperfine --json --reference=true --parity 0.1\n" +
          read("examples/hyperfine-spawn.json"))
    write("import", "gbench", b"gbench\n" +
          read("examples/gbench-baseline.json") + b"\n--8<--\n" +
          read("examples/gbench-contender.json"))
    write("import", "gbench-json", b"gbench --json --floor-us 1\n" +
          read("examples/gbench-baseline.json") + b"\n--8<--\n" +
          read("examples/gbench-baseline.json"))

    # suite: the example suite, and small ones with variables.
    write("suite", "example.yaml", read("examples/suites/example.yaml"))
    write("suite", "vars.yaml",
          "--var n=3\n--var who=world\n"
          "suite: s\nvariables:\n  n: '1'\n  greeting: hello ${who}\n"
          "defaults:\n  runs: 3\n  warmup: 0\n  timeout: 5\n"
          "benchmarks:\n  - name: b\n    cpus: 0-1\n    expect_exit: 0\n"
          "    stdout: discard\n    arms:\n"
          "      - name: a\n        subject: true\n"
          "        command: [echo, '${greeting}', '${n}']\n"
          "        env: {K: '${n}'}\n        cwd: /tmp\n"
          "      - name: b\n        shell: 'echo $$ ${n}'\n"
          "        prepare: [true]\n        conclude: [true]\n"
          "        setup: [true]\n        cleanup: [true]\n"
          "        versions: [[echo, '1'], 'echo 2']\n")
    write("suite", "anchors.yaml",
          "suite: s\nbenchmarks:\n  - name: x\n    runs: 2\n    arms:\n"
          "      - &a {name: p, command: [true]}\n"
          "      - {name: q, command: [false]}\n")


if __name__ == "__main__":
    main()
