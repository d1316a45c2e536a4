#!/usr/bin/env python3
"""test_protocol.py BUILD_DIR -- the daemon's side of the protocol (TAP).

A real parity-agent daemon on 127.0.0.1 against daemon-peer (a minimal
protocol peer; see tests/daemon/daemon_peer.c for why not the collector):
1. jobs: suites only from --suites, refusals with reasons, one job at a
   time with a queue, JobCancel of a running and a queued job, variables
   passed as values, a failing benchmark, progress;
2. SIGTERM during a job;
3. recovery of a spooled RunStart left without state file;
4. reconnect back-off and its reset, silence after 5 heartbeats;
5. spool files damaged before and after open;
6. the in-flight window of 64, and resends that back off while acks are
   late (only the oldest, 5 s then 10 s ...), then everything delivered;
7. a window the peer dropped comes back in growing bursts, a second
   apart, each message resent once."""
import atexit
import json
import re
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
from parity_fixtures import built, finish, free_port, ok  # noqa: E402

AGENT, PEER, KEYGEN = built("agent/parity-agent", "tests/daemon/daemon-peer",
                            "tests/daemon/daemon-keygen")
children = []   # every process started here; killed at exit


@atexit.register
def s_kill_children():
    for p in children:
        if p.poll() is None:
            p.kill()
            p.wait()


root = tempfile.mkdtemp(prefix="parity-jobs-")
keys = os.path.join(root, "keys")
suites = os.path.join(root, "suites")
os.makedirs(keys)
os.makedirs(suites)
for name in ("agent", "peer"):
    subprocess.run([KEYGEN, os.path.join(keys, name)], check=True)


def suite(name, runs, sleep, var=False):
    cmd = '[/bin/sleep, "${pause}"]' if var else \
        '[/bin/sleep, "%g"]' % sleep
    with open(os.path.join(suites, name + ".yaml"), "w") as f:
        f.write("suite: %s\n%sbenchmarks:\n  - name: b\n    runs: %d\n"
                "    warmup: 0\n    arms:\n      - name: x\n"
                "        command: %s\n      - name: y\n"
                "        command: [/bin/sleep, \"%g\"]\n"
                % (name, "variables:\n  pause: \"%g\"\n" % sleep if var
                   else "", runs, cmd, sleep))


suite("quick", 3, 0.001)
suite("long", 2000, 0.01)
suite("withvar", 2, 0.001, var=True)
with open(os.path.join(suites, "broken-arm.yaml"), "w") as f:
    f.write("suite: fails\nbenchmarks:\n  - name: falls\n    runs: 3\n"
            "    arms:\n      - name: x\n        command: [/bin/false]\n"
            "      - name: y\n        command: [/bin/true]\n")
# A suite file may not take the built-in A/A suite's name: left out.
with open(os.path.join(suites, "reserved.yaml"), "w") as f:
    f.write("suite: parity-selftest\nbenchmarks:\n  - name: b\n    arms:\n"
            "      - name: x\n        command: [/bin/true]\n"
            "      - name: y\n        command: [/bin/true]\n")
with open(os.path.join(root, "outside.yaml"), "w") as f:
    f.write("suite: outside\nbenchmarks:\n  - name: b\n    arms:\n"
            "      - name: x\n        command: [/bin/true]\n"
            "      - name: y\n        command: [/bin/true]\n")


class Peer:
    def __init__(self, seconds, actions, port=None):
        self.port = port or free_port()
        self.endpoint = "tcp://127.0.0.1:%d" % self.port
        self.out = os.path.join(root, "peer-%d.jsonl" % self.port)
        self.proc = subprocess.Popen(
            [PEER, "tcp://127.0.0.1:%d" % self.port,
             os.path.join(keys, "peer"), str(seconds)] + actions,
            stdout=open(self.out, "w"), stderr=subprocess.DEVNULL)
        children.append(self.proc)
        time.sleep(0.2)

    def messages(self):
        with open(self.out) as f:
            return [json.loads(x) for x in f if x.strip()]

    def statuses(self, job):
        return [(m["state"], m["reason"]) for m in self.messages()
                if m["body"] == "job_status" and m["job_id"] == job]

    def wait(self, cond, timeout):
        end = time.time() + timeout
        while time.time() < end:
            if cond():
                return True
            time.sleep(0.1)
        return cond()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=10)


def daemon(peer, spool):
    log = open(os.path.join(root, "daemon-%d.log" % peer.port), "w")
    p = subprocess.Popen(
        [AGENT, "--collector", peer.endpoint, "--collector-key",
         os.path.join(keys, "peer"), "--key", os.path.join(keys, "agent"),
         "--suites", suites, "--spool", os.path.join(root, spool),
         "--heartbeat-ms", "200"], stdout=log, stderr=log)
    children.append(p)
    return p


def stop_daemon(d):
    d.send_signal(signal.SIGTERM)
    try:
        d.wait(timeout=20)
    except subprocess.TimeoutExpired:
        d.kill()
        d.wait()
    return d.returncode


# --- 1: refusals, a queue, cancel of a running and of a queued job -----
peer = Peer(90, [
    "offer:j1:quick:3",
    "offer:j2:../outside:1",
    "offer:j3:/etc/passwd:1",
    "offer:j4:nosuch:1",
    "offer:j5:long:2000",
    "offer:j6:quick:2",
    "offer:j7:withvar:2:pause=0.002",
    "offer:j8:withvar:1:bad-name=1",
    "offer:j11:fails:3",
    "offer:j12:quick:1",
    "offer:j13:quick:100001",
    "offer:j14:parity-selftest:2:trials=2:loops=50",
    "offer:j15:parity-selftest:2:trials=0",
    "offer:j16:parity-selftest:2:trials=257",
    "offer:j17:parity-selftest:2:loops=5x",
    "offer:j18:parity-selftest:2:colour=red",
    "offer:j9:quick:2",
    "cancel-measuring:j5",
    "offer:j10:long:2000",
    "cancel-queued:j10",
    "offer:j6:quick:2",
])
d = daemon(peer, "spool1")
done = peer.wait(lambda: ("done", "") in peer.statuses("j9"), 60)
ok(done, "the last job offered finishes")
hello = [m for m in peer.messages() if m["body"] == "hello"]
ok(hello and hello[0]["suites"] == 5, "Hello lists the 4 suites of "
   "--suites and the built-in parity-selftest, not the file that took its "
   "name (%s)" % (hello[0]["suites"] if hello else None))
ok("reserved.yaml: the suite name \"parity-selftest\" is reserved for the "
   "built-in A/A self-test (not offered)" in open(os.path.join(
       root, "daemon-%d.log" % peer.port)).read(),
   "a suite file named parity-selftest is left out, and the log says why")
cal = [m for m in peer.messages() if m["body"] == "calibration"]
ok(cal and cal[0]["samples"] == 97, "no Calibration at start-up: the "
   "first is job j1's session-start one, 100 no-op runs less its 3 rounds "
   "(%s)" % (cal[0]["samples"] if cal else None))
ok([s for s, _ in peer.statuses("j1")] == ["queued", "running", "done"],
   "a good job goes queued, running, done (%s)" % peer.statuses("j1"))
for job, name in (("j2", "../outside"), ("j3", "/etc/passwd")):
    st = peer.statuses(job)
    ok(len(st) == 1 and st[0][0] == "refused"
       and "is not a plain suite name" in st[0][1] and "no paths" in st[0][1],
       "suite %s is refused as a path: %s" % (name, st))
st = peer.statuses("j4")
ok(st == [("refused", "unknown suite \"nosuch\": not in this agent's "
           "--suites directory")], "an unknown suite is refused: %s" % st)
st = peer.statuses("j5")
ok([s for s, _ in st] == ["queued", "running", "cancelled"],
   "JobCancel stops the running job: %s" % [s for s, _ in st])
runs = {m["run_id"]: m for m in peer.messages() if m["body"] == "run_start"}
ends = {m["run_id"]: m for m in peer.messages() if m["body"] == "run_end"}
j5_runs = [r for r, m in runs.items() if m["job_id"] == "j5"]
ok(len(j5_runs) == 1 and ends.get(j5_runs[0], {}).get("status") == 3,
   "the cancelled run ends CANCELLED (3)")
ok(peer.statuses("j10") == [("queued", ""), ("cancelled", "cancelled "
   "before it started")], "JobCancel of a queued job drops it: %s"
   % peer.statuses("j10"))
ok([s for s, _ in peer.statuses("j6")] == ["queued", "queued", "running",
                                           "done"],
   "the job queued behind it runs after the cancel; offered twice, it is "
   "queued once and runs once (%s)" % [s for s, _ in peer.statuses("j6")])
ok([s for s, _ in peer.statuses("j7")] == ["queued", "running", "done"],
   "a job's variable is applied as a value (withvar, pause=0.002)")
st = peer.statuses("j8")
ok(st == [("refused", "variable name \"bad-name\" is not "
           "[A-Za-z_][A-Za-z0-9_]* (at most 100 bytes)")],
   "a variable that is not a name is refused: %s" % st)
st = peer.statuses("j13")
ok(st == [("refused", "runs 100001 / vars 0 outside this agent's bounds "
           "(2..100000 runs, 256 vars)")],
   "runs 100001 (outside pw_limits.h's) is refused, never started: %s" % st)
# runs 1 is never a count (pw_limits.h): it is PW_RUNS_AUTO.
ok([s for s, _ in peer.statuses("j12")] == ["queued", "running", "done"],
   "runs 1 is runs: auto, and runs: %s" % peer.statuses("j12"))
ok([s for s, _ in peer.statuses("j14")] == ["queued", "running", "done"],
   "the built-in parity-selftest runs without a suite file (%s)"
   % peer.statuses("j14"))
aa = sorted((m["benchmark"], m["arms"]) for m in runs.values()
            if m["job_id"] == "j14")
ok(aa == [("aa-001", ["a", "a-again"]), ("aa-002", ["a", "a-again"])],
   "trials=2: benchmarks aa-001 and aa-002, arms a and a-again (%s)" % aa)
for job, why in (
        ("j15", "parity-selftest: variable trials \"0\" is not a whole "
                "number from 1 to 256"),
        ("j16", "parity-selftest: variable trials \"257\" is not a whole "
                "number from 1 to 256"),
        ("j17", "parity-selftest: variable loops \"5x\" is not a whole "
                "number from 1 to 10000000"),
        ("j18", "parity-selftest: unknown variable \"colour\" (known: "
                "trials loops)")):
    st = peer.statuses(job)
    ok(st == [("queued", ""), ("refused", why)],
       "parity-selftest %s is refused: %s" % (job, st))
st = peer.statuses("j11")
ok(len(st) == 3 and st[2][0] == "failed" and st[2][1].startswith("falls: "),
   "a job whose benchmark fails is reported failed with the benchmark and "
   "reason: %s" % st[-1:])
order = [m["job_id"] for m in peer.messages() if m["body"] == "run_start"]
ok(order == ["j1", "j5", "j6", "j7", "j11", "j12", "j14", "j14", "j9"],
   "one job at a time, in offer "
   "order (%s)" % order)
ok(all(m.get("job_id") for m in runs.values()), "every RunStart names its "
   "job")
ok(all(m["label"] == "label-" + m["job_id"] and m["tag"] == m["job_id"]
       for m in runs.values()), "every RunStart carries its job's label and "
   "tags")
rc = stop_daemon(d)
ok(rc == 0, "SIGTERM while idle: exit 0 (%d)" % rc)
peer.stop()

# --- 2: SIGTERM during a job ------------------------------------------
peer = Peer(60, ["offer:k1:long:2000"])
d = daemon(peer, "spool2")
running = peer.wait(lambda: any(m["body"] == "sample_batch"
                                for m in peer.messages()), 30)
ok(running, "the long job is measuring")
progress = peer.wait(lambda: any(
    m["body"] == "job_status" and m["state"] == "running"
    and m.get("rounds", 0) > 0 for m in peer.messages()), 15)
ok(progress, "a running job reports its progress (round of rounds)")
rc = stop_daemon(d)
ok(rc == 0, "SIGTERM during a job: exit 0 (%d)" % rc)
peer.wait(lambda: ("failed", "agent stopped") in peer.statuses("k1"), 5)
ends = [m for m in peer.messages() if m["body"] == "run_end"]
ok(len(ends) == 1 and ends[0]["status"] == 2
   and ends[0]["reason"] == "agent stopped",
   "its run ends INCOMPLETE \"agent stopped\" (%s)" % ends)
ok(("failed", "agent stopped") in peer.statuses("k1"),
   "the job is reported failed, \"agent stopped\" (%s)"
   % peer.statuses("k1"))
left = [x for x in os.listdir(os.path.join(root, "spool2"))
        if x.endswith(".msg")]
ok(len(left) == 0, "everything was delivered before exit (%d left)"
   % len(left))
peer.stop()

# --- 3: a RunStart spooled by a process killed before its state file --
def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def fv(num, v):
    return varint(num << 3) + varint(v)


def fb(num, data):
    return varint((num << 3) | 2) + varint(len(data)) + data


arm = lambda name, subj: fb(5, fb(1, name) + (fv(2, 1) if subj else b""))
run_start = fb(1, b"orphan-run-1") + fb(3, b"quick") + fb(4, b"b") + \
    arm(b"x", True) + arm(b"y", False) + fv(8, 3)
envelope = fv(1, 1) + fv(2, 7) + fb(13, run_start)
spool3 = os.path.join(root, "spool3")
os.makedirs(spool3)
with open(os.path.join(spool3, "%020d.msg" % 7), "wb") as f:
    f.write(b"PSPOOL1\n" + (7).to_bytes(8, "little")
            + len(envelope).to_bytes(4, "little")
            + (zlib.crc32(envelope) & 0xFFFFFFFF).to_bytes(4, "little")
            + envelope)
peer = Peer(30, [])
d = daemon(peer, "spool3")
peer.wait(lambda: any(m["body"] == "run_end" for m in peer.messages()), 20)
msgs = [m for m in peer.messages() if m.get("run_id") == "orphan-run-1"]
ok([m["body"] for m in msgs] == ["run_start", "run_end"],
   "a spooled RunStart without RunEnd or state file is resent, then closed "
   "(%s)" % [m["body"] for m in msgs])
ok(msgs and msgs[-1]["status"] == 2
   and msgs[-1]["reason"] == "agent restarted during run",
   "closed INCOMPLETE \"agent restarted during run\"")
rc = stop_daemon(d)
ok(rc == 0, "daemon exits 0")
peer.stop()

# --- 4: reconnect back-off: nothing listening, then a peer, then silence
class NoPeer:
    port = free_port()
    endpoint = "tcp://127.0.0.1:%d" % port


d = daemon(NoPeer, "spool4")
log_path = os.path.join(root, "daemon-%d.log" % NoPeer.port)
time.sleep(9)


def waits(path):
    with open(path) as f:
        return [int(x) for x in re.findall(r"reconnecting in (\d+) ms",
                                           f.read())]


w = waits(log_path)
bases = [min(500 * 2 ** i, 16000) for i in range(len(w))]
ok(len(w) >= 3, "with no collector it keeps reconnecting (%d waits)"
   % len(w))
ok(all(0.5 * b <= x < 1.5 * b for x, b in zip(w, bases)),
   "each wait is 0.5 s doubling, times [0.5, 1.5) (%s for bases %s)"
   % (w, bases))
with open(log_path) as f:
    text = f.read()
ok("no answer from the collector (down, or its key is not the pinned one)"
   in text, "the log says why it reconnects")
peer = Peer(60, [], port=NoPeer.port)
acked = peer.wait(lambda: "event=hello_acked" in open(log_path).read(), 40)
ok(acked, "once a peer listens, the daemon connects and its Hello is "
   "acked")
before = len(waits(log_path))
peer.proc.send_signal(signal.SIGSTOP)   # silent, connection still up
time.sleep(2.0)
peer.proc.send_signal(signal.SIGCONT)
peer.stop()
time.sleep(1.0)
w = waits(log_path)[before:]
with open(log_path) as f:
    text = f.read()
ok("collector silent for 5 heartbeats" in text,
   "a silent collector is noticed after 5 heartbeats")
ok(w and 250 <= w[0] < 750, "the back-off was reset by the acked Hello "
   "(first wait %s ms)" % (w[0] if w else None))
rc = stop_daemon(d)
ok(rc == 0, "daemon exits 0")

# --- 5: files damaged after the spool was opened are skipped -----------
def spool_file(d, seq, envelope):
    with open(os.path.join(d, "%020d.msg" % seq), "wb") as f:
        f.write(b"PSPOOL1\n" + seq.to_bytes(8, "little")
                + len(envelope).to_bytes(4, "little")
                + (zlib.crc32(envelope) & 0xFFFFFFFF).to_bytes(4, "little")
                + envelope)


spool5 = os.path.join(root, "spool5")
os.makedirs(spool5)
for seq in range(1, 101):
    cal = fb(1, b"cal-%d" % seq) + fb(2, struct.pack("<3d", 1.0, 2.0, 3.0)) \
        + fv(3, 1)
    spool_file(spool5, seq, fv(1, 1) + fv(2, seq) + fb(12, cal))
with open(os.path.join(spool5, "%020d.msg" % 200), "wb") as f:
    f.write(b"not a spool file, but long enough for a header")
peer = Peer(60, [])
peer.proc.send_signal(signal.SIGSTOP)   # nothing acked until we say so
d = daemon(peer, "spool5")
time.sleep(1.0)
for seq in range(1, 71):    # more than the in-flight window of 64
    with open(os.path.join(spool5, "%020d.msg" % seq), "r+b") as f:
        f.truncate(30)
peer.proc.send_signal(signal.SIGCONT)
got = lambda: {m.get("seq") for m in peer.messages()
               if m["body"] == "calibration"}
peer.wait(lambda: set(range(71, 101)) <= got(), 40)
ok(set(range(71, 101)) <= got() and not (set(range(1, 71)) & got()),
   "the 30 good messages are delivered past 70 files damaged after open "
   "(%d of 30)" % len(set(range(71, 101)) & got()))
left = sorted(x for x in os.listdir(spool5) if x.endswith(".msg"))
ok(peer.wait(lambda: not [x for x in os.listdir(spool5)
                          if x.endswith(".msg")], 10),
   "the spool empties (%d left)" % len(left))
ok(len(os.listdir(os.path.join(spool5, "corrupt"))) == 71,
   "the damaged files are in corrupt/")
with open(os.path.join(root, "daemon-%d.log" % peer.port)) as f:
    text = f.read()
ok(re.search(r"event=spool_corrupt \S+/00000000000000000200\.msg: bad magic;"
             r" moved to", text), "a bad file found at start is logged with "
             "its name and reason")
ok(re.search(r"event=spool_error \S+/00000000000000000001\.msg: truncated "
             r"payload", text), "a file damaged later is logged when read")
rc = stop_daemon(d)
ok(rc == 0, "daemon exits 0")
peer.stop()

# --- 6: at most 64 unacked in flight; late acks: resends back off -------
# The peer holds every data ack for 25 s (a stalled collector), then sends
# them in order. The agent must resend only the oldest message, at growing
# intervals (5 s, then 10 s, each times [1, 1.5)), not the whole window
# every 5 s (which would be 64 x 4 copies here), and deliver all 100
# exactly once (besides those few copies) once acks flow.
HOLD_MS = 25000
spool6 = os.path.join(root, "spool6")
os.makedirs(spool6)
for seq in range(1, 101):
    cal = fb(1, b"w-%d" % seq) + fb(2, struct.pack("<3d", 1.0, 2.0, 3.0)) \
        + fv(3, 1)
    spool_file(spool6, seq, fv(1, 1) + fv(2, seq) + fb(12, cal))
peer = Peer(60, ["ack-hold:%d" % (HOLD_MS // 1000)])
d = daemon(peer, "spool6")


def cals():
    return [m for m in peer.messages() if m["body"] == "calibration"]


def spooled():
    return [x for x in os.listdir(spool6) if x.endswith(".msg")]


peer.wait(lambda: any(m["ms"] >= HOLD_MS for m in peer.messages()),
          HOLD_MS / 1000 + 5)
held = [m for m in cals() if m["ms"] < HOLD_MS]
seen = [m["seq"] for m in held]
ok(seen[:64] == list(range(1, 65)),
   "the first 64 spooled messages are sent in seq order")
ok(max(seen) == 64 if seen else False, "nothing beyond the window of 64 "
   "is sent while none is acked (highest %s)" % (max(seen) if seen else None))
resent = held[64:]
ok(2 <= len(resent) <= 3 and all(m["seq"] == 1 for m in resent),
   "while acks are late only the oldest is resent: %s"
   % [(m["seq"], m["ms"]) for m in resent])
gaps = []
if len(resent) >= 2:
    gaps = [resent[0]["ms"] - held[0]["ms"], resent[1]["ms"] - resent[0]["ms"]]
ok(len(gaps) == 2 and gaps[0] >= 4900 and gaps[1] > gaps[0] * 1.3,
   "the resend wait grows: %s ms (5 s then 10 s, times [1, 1.5))" % gaps)
ok(peer.wait(lambda: not spooled(), 15),
   "once acks flow every message is acked and leaves the spool (%d left)"
   % len(spooled()))
counts = {}
for m in cals():
    counts[m["seq"]] = counts.get(m["seq"], 0) + 1
# (the daemon's own Calibration at start comes after the spooled ones)
ok(set(range(1, 101)) <= set(counts)
   and all(c == 1 for q, c in counts.items() if q != 1)
   and counts[1] == 1 + len(resent),
   "all 100 arrived, every message once besides the %d copies of seq 1 (copies: "
   "%s, missing: %s)" % (len(resent),
                         {q: c for q, c in counts.items() if c > 1},
                         sorted(set(range(1, 101)) - set(counts))))
rc = stop_daemon(d)
ok(rc == 0, "daemon exits 0")
peer.stop()

# --- 7: a dropped window comes back quickly once acks resume -------------
# The peer never acks what arrives in its first 4 s (a collector whose
# database is down: silence, nothing stored). The oldest message is
# resent after 5 s and acked; then the agent resends 2, 4, 16, then the
# rest, a second or so apart (one at a time every 5 s would take 5 min):
# each lost message once, nothing else twice.
DROP_MS = 4000
spool7 = os.path.join(root, "spool7")
os.makedirs(spool7)
for seq in range(1, 101):
    cal = fb(1, b"d-%d" % seq) + fb(2, struct.pack("<3d", 1.0, 2.0, 3.0)) \
        + fv(3, 1)
    spool_file(spool7, seq, fv(1, 1) + fv(2, seq) + fb(12, cal))
peer = Peer(60, ["ack-drop:%d" % (DROP_MS // 1000)])
d = daemon(peer, "spool7")
emptied = peer.wait(lambda: not [x for x in os.listdir(spool7)
                                 if x.endswith(".msg")], 30)
msgs = [m for m in peer.messages() if m["body"] == "calibration"]
counts = {}
for m in msgs:
    counts[m["seq"]] = counts.get(m["seq"], 0) + 1
first_ack = min([m["ms"] for m in msgs if m["ms"] >= DROP_MS] or [0])
last = max([m["ms"] for m in msgs] or [0])
ok(emptied, "after the drop every message is acked and leaves the spool")
ok(first_ack >= 5000 and last - first_ack < 15000,
   "the first copy came after 5 s (%d ms) and the window was back %d ms "
   "later" % (first_ack, last - first_ack))
ok(all(counts.get(q) == 2 for q in range(2, 65))
   and all(counts.get(q) == 1 for q in range(65, 101))
   and counts.get(1) == 2,
   "each dropped message was sent again once, the others once: %s"
   % sorted({(q, c) for q, c in counts.items()
             if c != (2 if q <= 64 else 1)}))
rc = stop_daemon(d)
ok(rc == 0, "daemon exits 0")
peer.stop()

shutil.rmtree(root, ignore_errors=True) if not os.environ.get("PARITY_KEEP") else print("# kept " + root)
finish()
