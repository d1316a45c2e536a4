#!/usr/bin/env python3
"""daemon_stream.py [BUILD_DIR] [RUNS] -- what streaming a run costs.

Runs the same quick suite (two /bin/true arms, RUNS rounds) with
`parity-agent run` three ways, alternating, 3 times each:
  local    no collector (the peer)
  stream   --collector: every sample spooled (fsync) and sent to a real
           parity-collector with its private PostgreSQL, then waits for
           every ack
and prints the wall time of each, the ratio stream/local (medians) and
the samples per second of the stream runs. Not a test: figures go to
docs/performance.md."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
AGENT = os.path.join(BUILD, "agent", "parity-agent")
COLLECTOR = os.path.join(BUILD, "collector", "parity-collector")
PARITY = os.path.join(BUILD, "collector", "client", "parity")

root = tempfile.mkdtemp(prefix="parity-stream-bench-")
os.chmod(root, 0o755)
keys = os.path.join(root, "keys")
allow = os.path.join(root, "allow")
os.makedirs(allow)
for name in ("collector", "agent"):
    subprocess.run([PARITY, "keygen", name, "--dir", keys], check=True,
                   capture_output=True)
shutil.copy(os.path.join(keys, "agent"), allow)
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
coll = subprocess.Popen(
    [COLLECTOR, "--data-dir", os.path.join(root, "data"), "--bind",
     "tcp://127.0.0.1:%d" % port, "--key",
     os.path.join(keys, "collector_secret"), "--allow", allow],
    stdout=subprocess.DEVNULL, stderr=open(os.path.join(root, "c.log"), "w"))
for _ in range(600):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        break
    except OSError:
        time.sleep(0.1)
suite = os.path.join(root, "s.yaml")
with open(suite, "w") as f:
    f.write("suite: bench\nbenchmarks:\n  - name: t\n    runs: %d\n"
            "    warmup: 0\n    arms:\n      - name: a\n        command: "
            "[/bin/true]\n      - name: b\n        command: [/bin/true]\n"
            % RUNS)


def one(stream, i):
    cmd = [AGENT, "run", suite, "--json"]
    if stream:
        cmd += ["--collector", "tcp://127.0.0.1:%d" % port,
                "--collector-key", os.path.join(keys, "collector"),
                "--key", os.path.join(keys, "agent"),
                "--spool", os.path.join(root, "spool")]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    t = time.time() - t0
    if r.returncode != 0:
        sys.exit("run failed: %s" % r.stderr[-500:])
    return t, r.stderr


samples = RUNS * 3   # two arms and one calibration run per round
print("daemon_stream: %d rounds (%d samples) per run, build %s"
      % (RUNS, samples, BUILD))
local, stream = [], []
for i in range(3):
    local.append(one(False, i)[0])
    t, err = one(True, i)
    stream.append(t)
print("local  (peer)  %s s" % " ".join("%.2f" % x for x in local))
print("stream         %s s" % " ".join("%.2f" % x for x in stream))
ml, ms = sorted(local)[1], sorted(stream)[1]
print("median: local %.2f s, stream %.2f s, ratio stream/local %.3f"
      % (ml, ms, ms / ml))
print("stream: %.0f samples/s measured, spooled, sent and acked"
      % (samples / ms))
coll.terminate()
coll.wait(timeout=60)
shutil.rmtree(root, ignore_errors=True)
