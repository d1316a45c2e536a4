#!/usr/bin/env python3
"""test_systemd.py CASE BUILD_DIR -- the daemons under a service manager
and their configuration files (TAP). PID 1 is not systemd on these
machines, so the test plays its part: it listens on a NOTIFY_SOCKET
(AF_UNIX datagrams, the sender's pid from SCM_CREDENTIALS, as systemd
checks NotifyAccess=main) and sets WATCHDOG_USEC and WATCHDOG_PID.

Cases (one meson test each):

  units             systemd-analyze verify on both built units (ExecStart
                    pointed at the built binaries) says nothing, and does
                    complain about a misspelled copy; the drop-in
                    example of docs/operations.md verifies; the settings the
                    daemons rely on are there; the sysusers.d file makes
                    the user (systemd-sysusers --root). SKIP without
                    systemd-analyze.
  notify-agent      parity-agent against daemon-peer: READY=1 once
                    started (no calibration first), no ping before it, WATCHDOG=1 every half
                    WATCHDOG_USEC, STATUS= connected and spooled,
                    STOPPING=1 at SIGTERM; with WATCHDOG_PID naming
                    another process: no pings, STATUS= "connecting to"
  notify-collector  parity-collector with its private PostgreSQL: READY=1
                    once listening, pings, STATUS= peers online going
                    from 0 to 1 when an agent connects, STOPPING=1
  collector-syscalls
                    every system call parity-collector, initdb and its
                    PostgreSQL make (strace -f -c) through a start, an
                    agent's Hello and calibration, and a stop is in the
                    unit's SystemCallFilter=@system-service (expanded by
                    systemd-analyze syscall-filter); SKIP without strace
                    or systemd-analyze
  config            both daemons' config files: file over defaults, flags
                    over file, and every error message (unknown key,
                    bad value, missing file, ...) pinned; the shipped
                    examples' keys, uncommented, are all accepted

Environment: PARITY_PG_BINDIR (as tests/daemon/test_system.py).
"""
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

CASE = sys.argv[1]
BUILD = os.path.abspath(sys.argv[2])
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
AGENT = os.path.join(BUILD, "agent", "parity-agent")
COLLECTOR = os.path.join(BUILD, "collector", "parity-collector")
KEYGEN = os.path.join(BUILD, "tests", "daemon", "daemon-keygen")
PEER = os.path.join(BUILD, "tests", "daemon", "daemon-peer")
# WATCHDOG_USEC given to the daemons: pings are due every second.
WATCHDOG_USEC = 2000000

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
import parity_fixtures as pf  # noqa: E402
from parity_fixtures import ok, diag, tap  # noqa: E402,F401

children = []


def bail(text):
    print("Bail out! " + text, flush=True)
    cleanup()
    sys.exit(1)


def cleanup():
    for p in children:
        if p.poll() is None:
            p.kill()
            p.wait()


free_port = pf.free_port


def wait_for(cond, timeout, step=0.1):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def keygen(path):
    subprocess.run([KEYGEN, path], check=True, capture_output=True,
                   timeout=30)
    return path


def key_dirs(root, *names):
    """root/keys (a key pair per name in it), root/allow, root/suites:
    made, and returned in that order."""
    dirs = [os.path.join(root, d) for d in ("keys", "allow", "suites")]
    for d in dirs:
        os.makedirs(d)
    for name in names:
        keygen(os.path.join(dirs[0], name))
    return dirs


class Notify:
    """The service manager's end: every datagram with its sender's pid
    and the time it arrived."""

    def __init__(self, root):
        self.path = os.path.join(root, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.lock = threading.Lock()
        self.msgs = []        # (monotonic time, pid, {KEY: VALUE})
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        size = socket.CMSG_SPACE(struct.calcsize("iII"))
        while not self.stop:
            try:
                data, anc, _, _ = self.sock.recvmsg(4096, size)
            except socket.timeout:
                continue
            except OSError:
                return
            pid = None
            for level, kind, cdata in anc:
                if level == socket.SOL_SOCKET and \
                        kind == socket.SCM_CREDENTIALS:
                    pid = struct.unpack("iII", cdata[:12])[0]
            fields = {}
            for line in data.decode(errors="replace").split("\n"):
                if "=" in line:
                    k, v = line.split("=", 1)
                    fields[k] = v
            with self.lock:
                self.msgs.append((time.monotonic(), pid, fields))

    def of(self, pid):
        with self.lock:
            return [m for m in self.msgs if m[1] == pid]

    def first(self, pid, key, value=None, after=0.0):
        for t, _, f in self.of(pid):
            if t >= after and key in f and (value is None
                                            or value(f[key])):
                return t, f
        return None

    def times(self, pid, key):
        return [t for t, _, f in self.of(pid) if key in f]

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


def notify_env(notify, watchdog_pid=None):
    env = dict(os.environ)
    env["NOTIFY_SOCKET"] = notify.path
    env["WATCHDOG_USEC"] = str(WATCHDOG_USEC)
    if watchdog_pid is not None:
        env["WATCHDOG_PID"] = str(watchdog_pid)
    return env


def spawn(cmd, env, log, own_watchdog_pid=True):
    """Start cmd; with own_watchdog_pid, WATCHDOG_PID is its own pid (as
    systemd sets it): the shell exports its pid, then execs cmd in
    place."""
    if own_watchdog_pid:
        cmd = ["/bin/sh", "-c", 'WATCHDOG_PID=$$; export WATCHDOG_PID; '
               'exec "$@"', "sh"] + cmd
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=log)
    children.append(p)
    return p


def check_watchdog(notify, pid, ready_t, who):
    """Pings start after READY=1, never before, about once a second."""
    ok(not [t for t in notify.times(pid, "WATCHDOG") if t < ready_t],
       "%s: no WATCHDOG=1 before READY=1 (it would arm the watchdog "
       "during start-up)" % who)
    ok(wait_for(lambda: len([t for t in notify.times(pid, "WATCHDOG")
                             if t > ready_t]) >= 4, 10),
       "%s: WATCHDOG=1 pings arrive after READY=1" % who)
    pings = [t for t in notify.times(pid, "WATCHDOG") if t > ready_t]
    gaps = [b - a for a, b in zip(pings, pings[1:])]
    diag("%s: gaps between pings: %s" % (
        who, " ".join("%.2f" % g for g in gaps)))
    half = WATCHDOG_USEC / 2e6
    ok(gaps and all(0.8 * half <= g <= 1.6 * half for g in gaps),
       "%s: pings every half of WATCHDOG_USEC (%.1f s; gaps %.2f..%.2f s)"
       % (who, half, min(gaps or [0]), max(gaps or [0])))


def stop_and_check(notify, proc, who):
    rc = pf.stop(proc, wait=90)
    ok(rc == 0, "%s: SIGTERM: exit 0 (got %s)" % (who, rc))
    stopping = notify.first(proc.pid, "STOPPING", lambda v: v == "1")
    ok(stopping is not None and "stopping" in stopping[1].get("STATUS", ""),
       "%s: STOPPING=1 with a STATUS= at SIGTERM (%s)" % (
           who, stopping[1] if stopping else "none"))


# ------------------------------------------------------------------ units

def case_units():
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        print("1..0 # SKIP systemd-analyze is not installed")
        sys.exit(0)
    root = tempfile.mkdtemp(prefix="parity-units-")
    binaries = {"parity-agent": AGENT, "parity-collector": COLLECTOR}
    for name, binary in binaries.items():
        built = os.path.join(BUILD, "deploy", "systemd", name + ".service")
        if not ok(os.path.exists(built), "%s.service is built" % name):
            continue
        with open(built) as f:
            text = f.read()
        # The installed path does not exist here: point at the build.
        text, n = re.subn(r"^ExecStart=\S+/%s " % name,
                          "ExecStart=%s " % binary, text, flags=re.M)
        ok(n == 1, "%s: one ExecStart= of %s" % (name, name))
        unit = os.path.join(root, name + ".service")
        with open(unit, "w") as f:
            f.write(text)
        # --man=no: the man pages are installed with the package, not
        # on this machine's MANPATH.
        r = subprocess.run([analyze, "verify", "--man=no", unit],
                           capture_output=True, text=True, timeout=60)
        out = (r.stdout + r.stderr).strip()
        ok(r.returncode == 0 and not out,
           "systemd-analyze verify %s.service: no complaint" % name)
        if out:
            diag(out)
        settings = dict(line.split("=", 1) for line in text.splitlines()
                        if "=" in line and not line.startswith("#"))
        want = {"Type": "notify", "NotifyAccess": "main",
                "User": "parity", "Restart": "on-failure",
                "WatchdogSec": "30s", "StateDirectory": name,
                "ConfigurationDirectory": "parity",
                "ProtectSystem": "strict", "NoNewPrivileges": "yes",
                "PrivateTmp": "yes", "RestartPreventExitStatus": "2"}
        if name == "parity-agent":
            want["ReadWritePaths"] = "-/run/lock"   # the machine lock
        wrong = {k: settings.get(k) for k, v in want.items()
                 if settings.get(k) != v}
        ok(not wrong, "%s: %s" % (name, wrong or
                                  "Type=notify, User=parity, watchdog, "
                                  "state dir, hardening"))
        ok(settings.get("ExecStart", "").endswith(
            "--config %s/%s.yaml" % (conf_dir(binary),
                                     name.replace("parity-", ""))),
           "%s: ExecStart reads the default config file" % name)
        # A misspelled directive must be reported: the check above can
        # fail.
        bad = os.path.join(root, "bad-" + name + ".service")
        with open(bad, "w") as f:
            f.write(text.replace("ProtectSystem=strict",
                                 "ProtectSystem=strict\nProtectSytem=yes"))
        r = subprocess.run([analyze, "verify", "--man=no", bad],
                           capture_output=True, text=True, timeout=60)
        ok("ProtectSytem" in r.stdout + r.stderr,
           "systemd-analyze verify names a misspelled key in a copy of "
           "%s.service" % name)
    # The drop-in docs/operations.md shows, beside the agent's unit
    # (verify reads NAME.service.d/ next to the unit).
    with open(os.path.join(SOURCE, "docs", "operations.md")) as f:
        blocks = [b for b in re.findall(r"^```ini\n(.*?)^```", f.read(),
                                        re.M | re.S)
                  if b.startswith("[Service]")]
    dropin = os.path.join(root, "parity-agent.service.d")
    os.makedirs(dropin)
    with open(os.path.join(dropin, "override.conf"), "w") as f:
        f.write(blocks[0] if blocks else "")
    r = subprocess.run([analyze, "verify", "--man=no",
                        os.path.join(root, "parity-agent.service")],
                       capture_output=True, text=True, timeout=60)
    out = (r.stdout + r.stderr).strip()
    ok(len(blocks) == 1 and "RestrictRealtime=no" in blocks[0]
       and r.returncode == 0 and not out,
       "the drop-in of docs/operations.md verifies with the agent's unit")
    if out:
        diag(out)
    sysusers = shutil.which("systemd-sysusers")
    src = os.path.join(SOURCE, "deploy", "systemd", "parity.sysusers")
    if not sysusers:
        ok(True, "# SKIP systemd-sysusers is not installed")
    else:
        sysroot = os.path.join(root, "sysroot")
        os.makedirs(os.path.join(sysroot, "etc"))
        r = subprocess.run([sysusers, "--root=" + sysroot, src],
                           capture_output=True, text=True, timeout=60)
        passwd = open(os.path.join(sysroot, "etc", "passwd")).read() \
            if os.path.exists(os.path.join(sysroot, "etc", "passwd")) \
            else ""
        line = [x for x in passwd.splitlines() if x.startswith("parity:")]
        ok(r.returncode == 0 and line and line[0].endswith("nologin"),
           "parity.sysusers makes user parity without a login shell "
           "(%s)" % (line or r.stderr.strip()))
    shutil.rmtree(root, ignore_errors=True)


def conf_dir(binary):
    """The default config directory a daemon names in its --help."""
    r = subprocess.run([binary, "--help"], capture_output=True, text=True,
                       timeout=30)
    m = re.search(r"(\S+)/(agent|collector)\.yaml when it exists",
                  r.stdout)
    return m.group(1) if m else "?"


# ----------------------------------------------------------- notify-agent

def case_notify_agent():
    root = tempfile.mkdtemp(prefix="parity-notify-agent-")
    keys, _, suites = key_dirs(root, "agent", "peer")
    port = free_port()
    endpoint = "tcp://127.0.0.1:%d" % port
    peer = subprocess.Popen([PEER, endpoint, os.path.join(keys, "peer"),
                             "120"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    children.append(peer)
    notify = Notify(root)

    def agent_cmd(ep, spool):
        return [AGENT, "--collector", ep, "--collector-key",
                os.path.join(keys, "peer"), "--key",
                os.path.join(keys, "agent"), "--suites", suites,
                "--spool", os.path.join(root, spool), "--heartbeat-ms",
                "200"]

    log_path = os.path.join(root, "agent.log")
    log = open(log_path, "w")
    agent = spawn(agent_cmd(endpoint, "spool"), notify_env(notify), log)
    ready = None
    if wait_for(lambda: notify.first(agent.pid, "READY") or
                agent.poll() is not None, 30):
        ready = notify.first(agent.pid, "READY", lambda v: v == "1")
    ok(ready is not None, "agent: READY=1 from the agent's own pid")
    if not ready:
        diag(open(log_path).read())
        bail("no READY=1")
    ok(ready[1].get("STATUS", "").startswith("started; connecting to "),
       "agent: READY=1 comes with STATUS=%s" % ready[1].get("STATUS"))
    with open(log_path) as f:
        ok("event=calibration " not in f.read(),
           "agent: READY=1 at once, before any calibration (the machine "
           "is busy starting)")
    want = "connected to %s, 0 messages spooled" % endpoint
    ok(wait_for(lambda: notify.first(agent.pid, "STATUS",
                                     lambda v: v == want), 15),
       "agent: STATUS=%s once the peer acked Hello" % want)
    check_watchdog(notify, agent.pid, ready[0], "agent")
    stop_and_check(notify, agent, "agent")

    # WATCHDOG_PID names another process (a child that inherited the
    # variables): no pings; and no collector there: "connecting to".
    dead = "tcp://127.0.0.1:%d" % free_port()
    other = spawn(agent_cmd(dead, "spool2"), notify_env(notify, 1), log,
                  own_watchdog_pid=False)
    ok(wait_for(lambda: notify.first(other.pid, "READY"), 30),
       "agent without a collector: READY=1 all the same (the spool "
       "holds what it measures)")
    want = "connecting to %s," % dead
    ok(wait_for(lambda: notify.first(other.pid, "STATUS",
                                     lambda v: v.startswith(want)), 10),
       "agent: STATUS=%s... while not connected" % want)
    time.sleep(2.5)
    ok(not notify.times(other.pid, "WATCHDOG"),
       "agent: no WATCHDOG=1 when WATCHDOG_PID is another process's")
    stop_and_check(notify, other, "agent (no collector)")
    peer.send_signal(signal.SIGTERM)
    peer.wait(timeout=10)
    notify.close()
    shutil.rmtree(root, ignore_errors=True)


# ------------------------------------------------------- notify-collector

def case_notify_collector():
    root = tempfile.mkdtemp(prefix="parity-notify-collector-")
    os.chmod(root, 0o755)   # the postgres user must reach DATA/pg (root)
    keys, allow, suites = key_dirs(root, "collector", "agent")
    shutil.copy(os.path.join(keys, "agent"), allow)
    port = free_port()
    endpoint = "tcp://127.0.0.1:%d" % port
    notify = Notify(root)
    log_path = os.path.join(root, "collector.log")
    log = open(log_path, "w")
    col = spawn([COLLECTOR, "--data-dir", os.path.join(root, "data"),
                 "--bind", endpoint, "--key",
                 os.path.join(keys, "collector_secret"), "--allow", allow,
                 "--heartbeat-ms", "500"], notify_env(notify), log)
    wait_for(lambda: notify.first(col.pid, "READY") or
             col.poll() is not None, 120)
    ready = notify.first(col.pid, "READY", lambda v: v == "1")
    ok(ready is not None, "collector: READY=1 from the collector's pid")
    if not ready:
        diag(open(log_path).read()[-3000:])
        bail("no READY=1")
    ok(ready[1].get("STATUS") == "listening on %s" % endpoint,
       "collector: READY=1 with STATUS=%s" % ready[1].get("STATUS"))
    with open(log_path) as f:
        text = f.read()
    ok("event=db_up" in text and "event=pg_ready" in text,
       "collector: READY=1 after its PostgreSQL and the migrations")
    ok(wait_for(lambda: notify.first(col.pid, "STATUS", lambda v:
                                     v.startswith("0 peers online, "
                                                  "store queue ")), 10),
       "collector: STATUS=0 peers online, store queue ...")
    agent_log = open(os.path.join(root, "agent.log"), "w")
    agent = spawn([AGENT, "--collector", endpoint, "--collector-key",
                   os.path.join(keys, "collector"), "--key",
                   os.path.join(keys, "agent"), "--suites", suites,
                   "--spool", os.path.join(root, "spool"),
                   "--heartbeat-ms", "200"], dict(os.environ), agent_log,
                  own_watchdog_pid=False)
    got = wait_for(lambda: notify.first(col.pid, "STATUS", lambda v:
                                        v.startswith("1 peers online, ")),
                   20)
    ok(got, "collector: STATUS=1 peers online, ... once an agent "
       "connected")
    check_watchdog(notify, col.pid, ready[0], "collector")
    others = [m for m in notify.msgs if m[1] != col.pid]
    diag("messages from other processes (the private PostgreSQL "
         "inherits NOTIFY_SOCKET; NotifyAccess=main ignores them): %d"
         % len(others))
    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=30)
    stop_and_check(notify, col, "collector")
    notify.close()
    shutil.rmtree(root, ignore_errors=True)


# ----------------------------------------------------- collector-syscalls

def syscall_set(analyze, group):
    """group expanded to system call names by systemd-analyze."""
    out = subprocess.run([analyze, "syscall-filter"], capture_output=True,
                         text=True, timeout=30).stdout
    groups, cur = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            cur = line.split()[0]
            groups[cur] = []
        elif cur and line.strip() and not line.strip().startswith("#"):
            groups[cur].append(line.split()[0])
    names, todo, seen = set(), [group], set()
    while todo:
        g = todo.pop()
        for x in groups.get(g, []):
            if x.startswith("@"):
                if x not in seen:
                    seen.add(x)
                    todo.append(x)
            else:
                names.add(x)
    return names


def case_collector_syscalls():
    analyze, strace = shutil.which("systemd-analyze"), shutil.which("strace")
    if not analyze or not strace:
        print("1..0 # SKIP needs systemd-analyze and strace")
        sys.exit(0)
    ldd = subprocess.run(["ldd", COLLECTOR], capture_output=True,
                         text=True, timeout=30).stdout
    if "libasan" in ldd or "libtsan" in ldd:
        # The sanitizer runtimes make calls of their own; the packaged
        # collector has none of them.
        print("1..0 # SKIP a sanitized build")
        sys.exit(0)
    unit = os.path.join(BUILD, "deploy", "systemd",
                        "parity-collector.service")
    with open(unit) as f:
        filt = re.search(r"^SystemCallFilter=(\S+)$", f.read(), re.M)
    ok(filt is not None, "the collector's unit has one SystemCallFilter= "
       "group (%s)" % (filt.group(1) if filt else None))
    allowed = syscall_set(analyze, filt.group(1) if filt else "@x")
    root = tempfile.mkdtemp(prefix="parity-syscalls-")
    os.chmod(root, 0o755)
    keys, allow, suites = key_dirs(root, "collector", "agent")
    shutil.copy(os.path.join(keys, "agent"), allow)
    port = free_port()
    endpoint = "tcp://127.0.0.1:%d" % port
    summary = os.path.join(root, "strace.txt")
    log_path = os.path.join(root, "collector.log")
    log = open(log_path, "w")
    tracer = spawn([strace, "-f", "-c", "-o", summary, COLLECTOR,
                    "--data-dir", os.path.join(root, "data"), "--bind",
                    endpoint, "--key", os.path.join(keys, "collector_secret"),
                    "--allow", allow], dict(os.environ), log,
                   own_watchdog_pid=False)

    def logged(word):
        with open(log_path) as f:
            return ("event=%s " % word) in f.read()
    if not wait_for(lambda: logged("listening") or tracer.poll() is not None,
                    150):
        bail("collector not listening under strace")
    agent_log = open(os.path.join(root, "agent.log"), "w")
    agent = spawn([AGENT, "--collector", endpoint, "--collector-key",
                   os.path.join(keys, "collector"), "--key",
                   os.path.join(keys, "agent"), "--suites", suites,
                   "--spool", os.path.join(root, "spool")],
                  dict(os.environ), agent_log, own_watchdog_pid=False)
    spool = os.path.join(root, "spool")
    agent_log_path = os.path.join(root, "agent.log")

    def calibration_acked():
        # Spooled (the agent logs it after), then acked once stored: the
        # spool is empty again.
        with open(agent_log_path) as f:
            if "event=calibration " not in f.read():
                return False
        return not [x for x in os.listdir(spool) if x.endswith(".msg")]
    stored = wait_for(calibration_acked, 60)
    ok(stored, "an agent's Hello and calibration stored under strace")
    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=30)
    # strace's child is the collector: SIGTERM it, as systemd would.
    with open("/proc/%d/task/%d/children" % (tracer.pid, tracer.pid)) as f:
        collector_pid = int(f.read().split()[0])
    os.kill(collector_pid, signal.SIGTERM)
    tracer.wait(timeout=120)
    used = []
    with open(summary) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and parts[0][0].isdigit() \
                    and parts[-1] != "total":
                used.append(parts[-1])
    diag("%d distinct system calls" % len(used))
    outside = sorted(set(used) - allowed)
    ok(len(used) > 30 and not outside,
       "every system call of the collector and its PostgreSQL is in %s "
       "(outside: %s)" % (filt.group(1) if filt else "?", outside))
    shutil.rmtree(root, ignore_errors=True)


# ------------------------------------------------------------------ config

def run(cmd, timeout=30):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def first_line(text):
    return text.strip().splitlines()[0] if text.strip() else ""


def run_until(cmd, pattern, log_path, timeout=30):
    """Start a daemon, wait for a log line matching pattern, stop it.
    Returns the match (or None) and the log."""
    log = open(log_path, "w")
    p = subprocess.Popen(cmd, stdout=log, stderr=log)
    children.append(p)
    found = [None]

    def seen():
        with open(log_path) as f:
            found[0] = re.search(pattern, f.read())
        return found[0] is not None or p.poll() is not None
    wait_for(seen, timeout)
    pf.stop(p, wait=30)
    with open(log_path) as f:
        return found[0], f.read()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def config_errors(prog, root, flag_cases, file_cases):
    """Each flag_case (other args, key, value, line in the file): the
    key with that value at that line gives the flag's own message, after
    FILE:LINE. file_cases: (text, expected message after "prog: ")."""
    for base, key, value, lineno in flag_cases:
        rc, _, err = run([prog] + base + ["--" + key, value])
        flag_msg = first_line(err)
        path = write(os.path.join(root, "bad-%s.yaml" % key),
                     "# bad value\n" * (lineno - 1) +
                     "%s: %s\n" % (key, value))
        rc2, _, err2 = run([prog, "--config", path] + base)
        name = os.path.basename(prog)
        want = flag_msg.replace("%s: " % name,
                                "%s: %s:%d: " % (name, path, lineno), 1)
        ok(rc == 2 and rc2 == 2 and first_line(err2) == want,
           "%s: %s: %s in the file: the flag's message after FILE:LINE "
           "(%s)" % (name, key, value, first_line(err2)))
    for text, want in file_cases:
        path = write(os.path.join(root, "case.yaml"), text)
        rc, _, err = run([prog, "--config", path])
        got = first_line(err)
        want = want.replace("FILE", path)
        ok(rc == 2 and got == "%s: %s" % (os.path.basename(prog), want),
           "%s: %r -> %s (got %s)" % (os.path.basename(prog), text, want,
                                      got))


def uncommented(example):
    """The shipped example with every "#key: value" line uncommented."""
    with open(example) as f:
        lines = f.read().splitlines()
    out = [re.sub(r"^#([a-z-]+: )", r"\1", x) for x in lines]
    return "\n".join(out) + "\n", sum(1 for a, b in zip(lines, out)
                                      if a != b)


def case_config():
    root = tempfile.mkdtemp(prefix="parity-config-")
    keys, allow, suites = key_dirs(root, "collector", "agent")
    secret = os.path.join(keys, "collector_secret")
    port = free_port()
    # A database that is not there: the collector waits for it, bound
    # and logging its settings, which is all this case needs.
    nodb = "host=%s/nodb dbname=x connect_timeout=1" % root
    conf = write(os.path.join(root, "collector.yaml"),
                 "# the collector\nbind: tcp://127.0.0.1:%d\n"
                 "heartbeat-ms: 700\nkey: %s\nallow: %s\ndb: %s\n"
                 % (port, secret, allow, nodb))
    listening = r"event=listening endpoint=(\S+) .* heartbeat_ms=(\d+)"
    m, log = run_until([COLLECTOR, "--config", conf], listening,
                       os.path.join(root, "c1.log"))
    ok(m and m.group(1) == "tcp://127.0.0.1:%d" % port
       and m.group(2) == "700",
       "collector: the file's bind and heartbeat-ms win over the "
       "defaults (%s)" % (m.group(0) if m else log[-300:]))
    m, log = run_until([COLLECTOR, "--config", conf, "--heartbeat-ms",
                        "900"], listening, os.path.join(root, "c2.log"))
    ok(m and m.group(2) == "900" and m.group(1).endswith(":%d" % port),
       "collector: --heartbeat-ms 900 wins over the file's 700, bind "
       "still the file's (%s)" % (m.group(0) if m else log[-300:]))
    # Without the key in the file: the default.
    conf2 = write(os.path.join(root, "collector2.yaml"),
                  "bind: tcp://127.0.0.1:%d\nkey: %s\nallow: %s\n"
                  "db: %s\n" % (port, secret, allow, nodb))
    m, log = run_until([COLLECTOR, "--config", conf2], listening,
                       os.path.join(root, "c3.log"))
    ok(m and m.group(2) == "1000",
       "collector: heartbeat-ms not in the file: the default 1000 (%s)"
       % (m.group(0) if m else log[-300:]))
    default = os.path.join(conf_dir(COLLECTOR), "collector.yaml")
    if os.path.exists(default):
        ok(True, "# SKIP %s exists on this machine" % default)
    else:
        m, log = run_until([COLLECTOR, "--bind", "tcp://127.0.0.1:%d" % port,
                            "--key", secret, "--allow", allow, "--db",
                            nodb], listening, os.path.join(root, "c4.log"))
        ok(m is not None, "collector: no --config and no %s: flags and "
           "defaults are enough" % default)
    config_errors(COLLECTOR, root, [
        (["--bind", "x"], "heartbeat-ms", "5", 3),
        (["--bind", "x"], "parity", "2", 1),
        (["--bind", "x"], "keep-samples", "1h", 2),
        ([], "log-level", "loud", 4),
    ], [
        ("bind: a\nbogus: 1\n", 'FILE:2: unknown key "bogus"'),
        ("bind: a\nconfig: other.yaml\n", 'FILE:2: unknown key "config"'),
        ("help: 1\n", 'FILE:1: unknown key "help"'),
        ("bind: [a, b]\n", "FILE:1: bind: want one value, not a list or "
         "a mapping"),
        ("bind:\n", "FILE:1: bind: no value (comment the line out to "
         "keep the default)"),
        ("bind: a\n\nbind: b\n", "FILE:3: bind given twice (first at "
         "line 1)"),
        ("- bind\n", "FILE:1: want a mapping of option: value"),
        ("bind: a\n  key: : b\n", "FILE:2: mapping values are not allowed "
         "in this context"),
        ("# nothing but comments\n", "--bind ENDPOINT is required"),
    ])
    missing = os.path.join(root, "none.yaml")
    rc, _, err = run([COLLECTOR, "--config", missing])
    ok(rc == 2 and first_line(err) == "parity-collector: config file %s: "
       "No such file or directory" % missing,
       "collector: a missing --config FILE is an error: %s"
       % first_line(err))
    rc, _, err = run([COLLECTOR, "--bind", "x", "--config"])
    ok(rc == 2 and first_line(err) == "parity-collector: unknown or "
       "incomplete option --config", "collector: --config without FILE: %s"
       % first_line(err))
    text, n = uncommented(os.path.join(SOURCE, "deploy", "etc",
                                       "collector.yaml"))
    path = write(os.path.join(root, "example-collector.yaml"), text)
    rc, _, err = run([COLLECTOR, "--config", path])
    # Every key read and its value accepted, the collector starts and
    # then stops at the first file it needs: the example's key, which
    # this machine does not have.
    ok(n == 20 and rc == 1 and 'event=config_failed why="--key /var/lib/'
       'parity-collector/collector_secret: cannot read' in err
       and "unknown key" not in err,
       "collector: the example's %d keys, uncommented, are all accepted "
       "(%s)" % (n, err.strip().splitlines()[1:2]))

    # The agent: the file's collector and name, --name over the file.
    aconf = write(os.path.join(root, "agent.yaml"),
                  "collector: tcp://127.0.0.1:%d\ncollector-key: %s\n"
                  "key: %s\nsuites: %s\nspool: %s\nname: from-file\n"
                  "heartbeat-ms: 200\n"
                  % (free_port(), os.path.join(keys, "collector"),
                     os.path.join(keys, "agent"), suites,
                     os.path.join(root, "spool")))
    hello = r"event=hello name=(\S+)"
    m, log = run_until([AGENT, "--config", aconf], hello,
                       os.path.join(root, "a1.log"))
    ok(m and m.group(1) == "from-file" and "collector=tcp://127.0.0.1:"
       in log, "agent: the file's name and collector over the defaults "
       "(%s)" % (m.group(0) if m else log[-300:]))
    m, log = run_until([AGENT, "--config", aconf, "--name", "from-flag"],
                       hello, os.path.join(root, "a2.log"))
    ok(m and m.group(1) == "from-flag",
       "agent: --name wins over the file (%s)"
       % (m.group(0) if m else log[-300:]))
    config_errors(AGENT, root, [
        (["--collector", "x"], "spool-max", "0", 2),
        (["--collector", "x"], "heartbeat-ms", "70000", 1),
    ], [
        ("collector: x\nbind: y\n", 'FILE:2: unknown key "bind"'),
        ("ack-timeout: 5\n", 'FILE:1: unknown key "ack-timeout"'),
        ("name: {a: 1}\n", "FILE:1: name: want one value, not a list or "
         "a mapping"),
        ("collector: ~\n", "FILE:1: collector: no value (comment the line "
         "out to keep the default)"),
        ("collector: x\n", "--collector-key is required (the collector's "
         "public key file), unless --collector-fingerprint pins the "
         "collector"),
    ])
    rc, _, err = run([AGENT, "--config", missing])
    ok(rc == 2 and first_line(err) == "parity-agent: config file %s: No "
       "such file or directory" % missing,
       "agent: a missing --config FILE is an error: %s" % first_line(err))
    rc, _, err = run([AGENT, "--collector", "x", "--config"])
    ok(rc == 2 and first_line(err) == "parity-agent: --config needs a FILE",
       "agent: --config without FILE: %s" % first_line(err))
    text, n = uncommented(os.path.join(SOURCE, "deploy", "etc",
                                       "agent.yaml"))
    path = write(os.path.join(root, "example-agent.yaml"), text)
    rc, _, err = run([AGENT, "--config", path])
    # Every key accepted: what fails is a path of the example (its suites
    # directory or its key files), which this machine does not have.
    ok(n == 10 and rc == 2 and path not in err and "required" not in err
       and "/etc/parity/suites" in err + str(os.path.isdir(
           "/etc/parity/suites")),
       "agent: the example's %d keys, uncommented, are all accepted (%s)"
       % (n, first_line(err)))
    shutil.rmtree(root, ignore_errors=True)


def main():
    cases = {"units": case_units, "notify-agent": case_notify_agent,
             "notify-collector": case_notify_collector,
             "collector-syscalls": case_collector_syscalls,
             "config": case_config}
    if CASE not in cases:
        bail("unknown case %s" % CASE)
    try:
        cases[CASE]()
    finally:
        cleanup()
    pf.finish()


if __name__ == "__main__":
    main()
