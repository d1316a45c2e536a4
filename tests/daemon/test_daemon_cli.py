#!/usr/bin/env python3
"""test_daemon_cli.py BUILD_DIR -- parity-agent's daemon and streaming
command lines: --help, every usage error, unreadable keys and suites, the
spool-full refusal, SIGTERM while no collector answers. TAP. No collector
is started: these are the errors a user meets before one is reached."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
from parity_fixtures import built, finish, ok  # noqa: E402

AGENT, PARITY, KEYGEN = built("agent/parity-agent", "collector/client/parity",
                              "tests/daemon/daemon-keygen")


def run(args, timeout=30):
    r = subprocess.run([AGENT] + args, capture_output=True, text=True,
                       timeout=timeout)
    return r.returncode, r.stdout, r.stderr


root = tempfile.mkdtemp(prefix="parity-daemon-cli-")
keys = os.path.join(root, "keys")
os.makedirs(keys)
for name in ("agent", "collector"):
    r = subprocess.run([PARITY, "keygen", name, "--dir", keys],
                       capture_output=True, text=True) \
        if os.access(PARITY, os.X_OK) else None
    if r is None or r.returncode != 0:
        subprocess.run([KEYGEN, os.path.join(keys, name)], check=True)
    else:
        with open(os.path.join(keys, name + ".keygen"), "w") as f:
            f.write(r.stdout)
suites = os.path.join(root, "suites")
os.makedirs(suites)
with open(os.path.join(suites, "good.yaml"), "w") as f:
    f.write("suite: good\nbenchmarks:\n  - name: b\n    runs: 2\n"
            "    arms:\n      - name: x\n        command: [/bin/true]\n"
            "      - name: y\n        command: [/bin/true]\n")
with open(os.path.join(suites, "broken.yaml"), "w") as f:
    f.write("suite: broken\nbenchmarks: 3\n")
AK = os.path.join(keys, "agent")
CK = os.path.join(keys, "collector")
SP = os.path.join(root, "spool")
base = ["--collector", "tcp://127.0.0.1:9", "--collector-key", CK,
        "--key", AK, "--suites", suites, "--spool", SP]

rc, out, err = run(["--help"])
ok(rc == 0 and "--collector-key FILE" in out and "Exit status" in out
   and "--ack-timeout S" in out,
   "--help prints the daemon usage and exits 0")

# (arguments, expected exit, expected text on stderr)
cases = [
    (["--collector"], 2, "--collector needs a value"),
    (["--collector", "tcp://h:1"], 2, "--collector-key is required (the "
     "collector's public key file), unless --collector-fingerprint pins "
     "the collector"),
    (base + ["--collector-fingerprint", "SHA256:short"], 2,
     "--collector-fingerprint SHA256:short: want SHA256: and 43 base64 "
     "characters, as `parity-collector --fingerprint` prints it"),
    (base[:2] + base[4:] + ["--trust-first-use"], 2,
     "--trust-first-use needs --collector-key FILE: where the collector's "
     "key seen first is kept and pinned"),
    (["--fingerprint"], 2, "--fingerprint needs --key FILE"),
    (["--fingerprint", "--key", os.path.join(root, "nokey")], 2,
     "--key %s: no key there (parity-agent --enroll, or the first start, "
     "makes one)" % os.path.join(root, "nokey")),
    (["--collector", "tcp://h:1", "--collector-key", CK], 2,
     "--key is required"),
    (["--collector", "tcp://h:1", "--collector-key", CK, "--key", AK], 2,
     "--spool is required"),
    (["--collector", "tcp://h:1", "--collector-key", CK, "--key", AK,
      "--spool", SP], 2, "--suites is required"),
    (base + ["--bogus"], 2, "unknown argument \"--bogus\""),
    (base + ["--spool-max", "0"], 2,
     "--spool-max 0: expected a whole number from 1 to 1048576"),
    (base + ["--spool-max", "12x"], 2,
     "--spool-max 12x: expected a whole number"),
    (base + ["--heartbeat-ms", "70000"], 2,
     "--heartbeat-ms 70000: expected a whole number from 1 to 60000"),
    (base[:-4] + ["--suites", os.path.join(root, "nope"), "--spool", SP], 2,
     "--suites %s: opendir: No such file or directory"
     % os.path.join(root, "nope")),
    (["--collector", "udp://h:1"] + base[2:], 2,
     "--collector udp://h:1: expected tcp://HOST:PORT"),
    # Several collectors (docs/operations.md): each item is checked.
    (["--collector", "tcp://127.0.0.1:1,udp://h:1"] + base[2:], 2,
     "--collector udp://h:1: expected tcp://HOST:PORT in each item of the "
     "comma-separated list"),
    (["--collector", ",".join(["tcp://127.0.0.1:%d" % (i + 1)
                               for i in range(17)])] + base[2:], 2,
     "--collector: at most 16 collectors"),
    # A missing key pair is made (the first start), but not where no
    # directory is.
    (base[:4] + ["--key", os.path.join(root, "nodir", "agent")] + base[6:],
     2, "--key %s: cannot make a new key pair there: No such file or "
     "directory" % os.path.join(root, "nodir", "agent")),
    (base[:2] + ["--collector-key", os.path.join(root, "missing")]
     + base[4:], 2, "--collector-key %s: zcert_load failed"
     % os.path.join(root, "missing")),
    (base[:-2] + ["--spool", "/proc/no/spool"], 2,
     "mkdir /proc/no/spool: No such file or directory"),
]
for args, want_rc, want in cases:
    rc, out, err = run(args)
    ok(rc == want_rc and want in err, "%s -> exit %d, \"%s\" (got %d: %s)"
       % (" ".join(a.replace(root, "T") for a in args[-2:]), want_rc,
          want.replace(root, "T"), rc, err.strip().replace(root, "T")))

# The pinned fingerprint that a key file contradicts names both.
rc, out, err = run(base + ["--collector-fingerprint", "SHA256:" + "A" * 43])
ok(rc == 2 and "but --collector-fingerprint pins SHA256:%s: they name "
   "different collectors (`parity-collector --fingerprint` on the collector "
   "says which one is right)" % ("A" * 43) in err,
   "a --collector-key file that is not the pinned collector: %s"
   % err.strip().replace(root, "T"))

# --fingerprint prints what `parity keygen` printed for the key.
rc, out, err = run(["--fingerprint", "--key", AK + "_secret"])
want = [x.split()[1] for x in open(os.path.join(keys, "agent.keygen"))
        if x.startswith("fingerprint ")] if os.path.exists(
            os.path.join(keys, "agent.keygen")) else []
ok(rc == 0 and out.startswith("SHA256:") and len(out.strip()) == 50
   and (not want or out.strip() == want[0]),
   "--fingerprint prints the key's fingerprint (%s)" % out.strip())

# --enroll (and the first start) make the key pair: secret 0600.
NK = os.path.join(root, "newkeys", "agent")
os.makedirs(os.path.dirname(NK))
rc, out, err = run(["--enroll", "--collector", "tcp://127.0.0.1:9",
                    "--collector-key", CK, "--key", NK, "--spool",
                    os.path.join(root, "enroll-spool"), "--ack-timeout",
                    "1"])
ok(rc == 1 and "no answer from the collector at tcp://127.0.0.1:9 within "
   "1 s (is it running and reachable, and is its key the one pinned?)"
   in err, "--enroll with nobody answering: exit 1 within --ack-timeout: %s"
   % err.strip().splitlines()[-1] if err.strip() else "(no stderr)")
ok(os.path.exists(NK) and oct(os.stat(NK + "_secret").st_mode & 0o777)
   == "0o600" and oct(os.stat(NK).st_mode & 0o777) == "0o644",
   "--enroll made the key pair (secret 0600, public 0644)")
ok("event=key_created" in err, "and says so (event=key_created)")
rc2, out2, err2 = run(["--fingerprint", "--key", NK])
ok(rc2 == 0 and out2.strip() in err,
   "its fingerprint is the one --fingerprint prints (%s)" % out2.strip())

# A --collector port without a next one: no key service to ask.
rc, out, err = run(["--enroll", "--collector", "tcp://127.0.0.1:65535",
                    "--collector-fingerprint", "SHA256:" + "A" * 43,
                    "--key", NK, "--spool", os.path.join(root, "enroll-spool"),
                    "--ack-timeout", "1"])
ok(rc == 1 and "event=key_fetch_failed --collector tcp://127.0.0.1:65535: "
   "no port + 1 for the key service" in err,
   "--collector-fingerprint with port 65535: the key service cannot be "
   "asked, and it says so")

# trust-first-use in agent.yaml is yes or no.
conf = os.path.join(root, "agent.yaml")
with open(conf, "w") as f:
    f.write("trust-first-use: maybe\n")
rc, out, err = run(base + ["--config", conf])
ok(rc == 2 and "%s:1: trust-first-use maybe: want yes or no" % conf in err,
   "agent.yaml trust-first-use: maybe is refused: %s"
   % err.strip().replace(root, "T"))

# The machine lock and the calibration batches' interval.
for args, want in (
        (["--calibration-every", "soon"], 'parity-agent: --calibration-every '
         '"soon": want whole seconds, 0 (no calibration batches) to 86400\n'
         '(see parity-agent --help)\n'),
        (["--calibration-every", "-5"], 'parity-agent: --calibration-every '
         '"-5": want whole seconds, 0 (no calibration batches) to 86400\n'
         '(see parity-agent --help)\n'),
        (["--calibration-every"], 'parity-agent: --calibration-every "": '
         'want whole seconds, 0 (no calibration batches) to 86400\n'
         '(see parity-agent --help)\n'),
        (["--machine-lock"], 'parity-agent: --machine-lock needs a FILE\n'
         '(see parity-agent --help)\n'),
        (["--machine-lock", os.path.join(root, "no", "such", "dir", "m.lock")],
         "parity-agent: --machine-lock: machine lock %s: open: No such file "
         "or directory\n" % os.path.join(root, "no", "such", "dir",
                                         "m.lock"))):
    rc, out, err = run(base + args)
    # (the suites directory's broken file is logged first)
    err = "".join(x for x in err.splitlines(True) if " event=" not in x)
    ok(rc == 2 and err == want, "%s: exit 2, %r" % (" ".join(args)
                                                    .replace(root, "T"),
                                                    err.replace(root, "T")))
with open(conf, "w") as f:
    f.write("calibration-every: 1.5\n")
rc, out, err = run(base + ["--config", conf])
ok(rc == 2 and '%s:1: --calibration-every "1.5": want whole seconds' % conf
   in err, "agent.yaml calibration-every: 1.5 is refused: %s"
   % err.strip().replace(root, "T"))

# A key file without its secret half cannot authenticate.
shutil.copy(AK, os.path.join(root, "public-only"))
rc, out, err = run(base[:4] + ["--key", os.path.join(root, "public-only")]
                   + base[6:])
ok(rc == 2 and "no secret key" in err,
   "a public-only --key is refused: %s" % err.strip().replace(root, "T"))

# The daemon offers valid suites only and stops cleanly on SIGTERM even
# while no collector ever answers.
elog_path = os.path.join(root, "daemon-err.log")
elog = open(elog_path, "w")
p = subprocess.Popen([AGENT] + base + ["--heartbeat-ms", "100"],
                     stdout=subprocess.PIPE, stderr=elog, text=True)
time.sleep(1.0)
rc, out, err = run(base)
ok(rc == 2 and "spool %s is in use by another process" % SP in err,
   "a second agent on the same spool is refused: %s"
   % err.strip().splitlines()[-1].replace(root, "T") if err.strip()
   else "(no stderr)")
# Idle, it calibrates after its first seconds (agent/daemon/ag_topup.h): a
# batch of 20 no-op runs, spooled while no collector answers.
end = time.time() + 30
while time.time() < end and "event=calibration " not in open(elog_path).read():
    time.sleep(0.2)
p.send_signal(signal.SIGTERM)
try:
    out, _ = p.communicate(timeout=20)
except subprocess.TimeoutExpired:
    p.kill()
    out, _ = p.communicate()
elog.close()
err = open(elog_path).read()
ok(p.returncode == 0, "SIGTERM with no collector: exit 0 (%d)"
   % p.returncode)
ok("event=suite_invalid" in err and "broken.yaml" in err,
   "a suite file that does not load is reported and not offered")
ok("suites=1" in err, "the one valid suite is offered")
ok(re.search(r"event=calibration runs=20 from_us=\d+ to_us=\d+ load=[\d.]+ "
             r"busy=(yes|no) ", err),
   "a calibration batch of 20 runs, with its instants and the machine's "
   "load: %s" % [x for x in err.splitlines() if "calibration" in x][:1])


def log_at(text, event):
    """The instant (s) of the first log line of event=EVENT, or None."""
    import datetime
    m = re.search(r"^(\S+)Z parity-agent event=%s " % event, text, re.M)
    return datetime.datetime.fromisoformat(m.group(1)).timestamp() \
        if m else None


t_start, t_cal = log_at(err, "start"), log_at(err, "calibration")
ok(t_start is not None and t_cal is not None and t_cal - t_start >= 2.0,
   "the first batch comes 2 s or more after the start (%s s)"
   % (round(t_cal - t_start, 3) if t_start and t_cal else None))
ok("messages left in the spool for the next start" in err,
   "on stop it says what stays in the spool")
spooled = [x for x in os.listdir(SP) if x.endswith(".msg")]
ok(len(spooled) >= 1, "the calibration is kept in the spool (%d)"
   % len(spooled))

# Run mode: a full spool refuses a new run instead of dropping data. The
# spool is filled with one valid 1 MiB message file (docs/spool.md).
big = os.urandom(1 << 20)
with open(os.path.join(SP, "%020d.msg" % 999999), "wb") as f:
    f.write(b"PSPOOL1\n" + (999999).to_bytes(8, "little")
            + len(big).to_bytes(4, "little")
            + (zlib.crc32(big) & 0xFFFFFFFF).to_bytes(4, "little") + big)
suite = os.path.join(suites, "good.yaml")
stream = ["--collector", "tcp://127.0.0.1:9", "--collector-key", CK,
          "--key", AK + "_secret", "--spool", SP]
rc, out, err = run(["run", suite] + stream + ["--spool-max", "1"])
ok(rc == 3 and "is full" in err and "the run is refused" in err,
   "run with a full spool is refused, exit 3: %s"
   % err.strip().splitlines()[-1].replace(root, "T") if err.strip()
   else "(no stderr)")
rc, out, err = run(["run", suite, "--collector", "tcp://h:1"])
ok(rc == 2 and "--collector-key is required with --collector (the "
   "collector's public key file), unless --collector-fingerprint pins the "
   "collector" in err, "run --collector alone: %s" % err.strip())
# Run mode makes no key pair: a missing --key is an error.
rc, out, err = run(["run", suite] + stream[:4] + ["--key",
                   os.path.join(root, "missing"), "--spool", SP])
ok(rc == 2 and "--key %s: zcert_load failed" % os.path.join(root, "missing")
   in err, "run --collector with a missing --key: %s"
   % err.strip().replace(root, "T"))
rc, out, err = run(["run", suite, "--spool", SP])
ok(rc == 2 and "--collector is required with --collector-key, --key, "
   "--spool" in err, "run --spool without --collector: %s"
   % err.strip().replace(root, "T"))
rc, out, err = run(["run", suite, "--spool"])
ok(rc == 2 and "--spool needs a value" in err, "run --spool without DIR")
os.remove(os.path.join(SP, "%020d.msg" % 999999))
# Ctrl-C of a streamed run: results as without --collector (exit 130),
# and no 60 s wait for acks that cannot come.
with open(os.path.join(root, "slow.yaml"), "w") as f:
    f.write("suite: slow\nbenchmarks:\n  - name: b\n    runs: 1000\n"
            "    arms:\n      - name: x\n        command: [/bin/sleep, "
            "\"0.01\"]\n      - name: y\n        command: [/bin/sleep, "
            "\"0.01\"]\n")
p = subprocess.Popen([AGENT, "run", os.path.join(root, "slow.yaml")]
                     + stream, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
time.sleep(1.5)
t0 = time.time()
p.send_signal(signal.SIGINT)
out, err = p.communicate(timeout=30)
ok(p.returncode == 130 and time.time() - t0 < 10 and "remain spooled" in err,
   "SIGINT of run --collector: exit 130 within 10 s, saying what remains "
   "spooled (%d, %.1f s)" % (p.returncode, time.time() - t0))
rc, out, err = run(["run", suite] + stream + ["--ack-timeout", "1"])
ok(rc == 3 and "remain spooled in" in err,
   "run with nobody to ack: exit 3 and how many remain spooled")

shutil.rmtree(root, ignore_errors=True)
finish()
