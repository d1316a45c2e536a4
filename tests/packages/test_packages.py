#!/usr/bin/env python3
"""test_packages.py -- the Debian packages, built, installed, used and
removed on this machine, emitting TAP.

  1. deploy/package.sh builds parity, parity-agent and parity-collector
     into a temporary directory, reusing the meson build directory
     $PKG_BUILD_DIR (so a second run only builds what changed); its
     time is printed. Its command-line errors are pinned first.
  2. The packages' control data: versions, library dependencies from
     dpkg-shlibdeps, postgresql for the collector, the conffiles. The
     packages unpacked into one tree and packaged again with --stage
     give the same files; a listed file missing from that tree, or a
     file no package lists, is an error naming it.
  3. `apt-get install ./parity_*.deb ./parity-agent_*.deb
     ./parity-collector_*.deb` (any copy already installed is purged
     first), then every file where Debian expects it, the parity system
     user, and no daemon started (PID 1 is not systemd here).
  4. The installed programs from their installed paths: --version of
     all three; `parity-agent run` of a suite comparing `true` with
     `true` and `parity compare -- true -- true`, each calibrating with
     /usr/libexec/parity/parity-noop (seen by swapping in a no-op that
     counts its runs), while the build tree's parity-agent
     ($PARITY_AGENT_BUILD) still calibrates with the build tree's;
     `man -w` finds every page; bash, and an interactive zsh (zpty)
     with Debian's fpath, complete a verb, an option and an agent verb. The daemons as
     their installed units start them (ExecStart=, --config
     /etc/parity/NAME.yaml): an unknown key in the installed config
     names the file and line; the collector from its config file with
     its private PostgreSQL, the agent's `run --collector` acked, and
     `parity hosts` showing the agent's host.
  5. `apt-get remove`: the programs are gone, the edited conffile stays;
     `apt-get purge`: every file the packages had is gone.

Needs root (it installs into /usr): otherwise the whole test is a TAP
skip. Cleans up (purges the packages) even when a check fails.
"""
import glob
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

PACKAGE_SH = os.environ.get("PACKAGE_SH", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy",
    "package.sh"))
PKG_BUILD_DIR = os.environ.get("PKG_BUILD_DIR", "")
AGENT_BUILD = os.environ.get("PARITY_AGENT_BUILD", "")
PACKAGES = ["parity", "parity-agent", "parity-collector"]
NOOP = "/usr/libexec/parity/parity-noop"
APT_ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
# Another apt on the machine holds dpkg's lock for a while at most.
APT = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300"]

count = 0
failed = 0


def ok(cond, name, diag=None):
    global count, failed
    count += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (count, name))
    if not cond:
        failed += 1
        if diag:
            for line in str(diag).splitlines()[-25:]:
                print("# " + line)
    sys.stdout.flush()
    return cond


def skip(name, reason):
    global count
    count += 1
    print("ok %d - %s # SKIP %s" % (count, name, reason))
    sys.stdout.flush()


def run(cmd, timeout=600, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout, **kw)


def installed(pkg):
    r = run(["dpkg-query", "-W", "-f=${Status}", pkg])
    return r.returncode == 0 and "ok installed" in r.stdout


def present(pkg):
    """Installed, or removed with its conffiles left (rc)."""
    r = run(["dpkg-query", "-W", "-f=${Status}", pkg])
    return r.returncode == 0 and "not-installed" not in r.stdout


def purge_all():
    there = [p for p in PACKAGES if present(p)]
    if there:
        return run(APT + ["purge"] + there, env=APT_ENV)
    return None


def daemon_pids(exe):
    """PIDs whose executable is exe (not the build tree's copies)."""
    pids = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            if os.readlink(d + "/exe") == exe:
                pids.append(int(os.path.basename(d)))
        except OSError:
            pass
    return pids


# Drives an interactive zsh through zpty: compinit with the installed
# fpath (/usr/share/zsh/vendor-completions), three lines completed with
# TAB, then erased with ^U (never run), the screen printed.
ZSH_COMPLETE = r"""
zmodload zsh/zpty
zpty -b z zsh -f -i
zpty -w z "autoload -Uz compinit && compinit -u -D; PS1='> '; setopt nobeep"
sleep 2
for line in 'parity comp' 'parity compare --ru' 'parity-agent r'; do
  zpty -w -n z "$line"$'\t'
  sleep 2
  zpty -w -n z $'\x15'
  sleep 1
done
out=""
while zpty -r -t z chunk; do out+=$chunk; done
zpty -d z
print -r -- "$out"
"""


def check_errors(tmp):
    """package.sh's own command-line errors."""
    cases = [
        (["--build-dir"], 2, "package: --build-dir needs a directory"),
        (["--fast"], 2, "package: unknown option --fast (usage: "
                        "deploy/package.sh [--build-dir DIR] [--stage DIR] [OUTDIR])"),
        (["a", "b"], 2, "package: one OUTDIR only (usage: "
                        "deploy/package.sh [--build-dir DIR] [--stage DIR] [OUTDIR])"),
    ]
    for args, code, msg in cases:
        r = run(["sh", PACKAGE_SH] + args)
        ok(r.returncode == code and r.stderr.strip() == msg,
           "package.sh %s: exit %d, %r" % (" ".join(args), code, msg),
           "exit %d, stderr %r" % (r.returncode, r.stderr))
    r = run(["sh", PACKAGE_SH, "--help"])
    ok(r.returncode == 0 and r.stdout.startswith("usage: deploy/package.sh"),
       "package.sh --help", r.stdout + r.stderr)
    # A tool it needs, missing: PATH without dpkg-deb.
    bindir = os.path.join(tmp, "nodpkg")
    os.makedirs(bindir)
    for tool in ("meson", "ninja", "dirname", "sh"):
        p = shutil.which(tool)
        if p:
            os.symlink(p, os.path.join(bindir, tool))
    r = run(["/bin/sh", PACKAGE_SH, os.path.join(tmp, "x")],
            env=dict(os.environ, PATH=bindir))
    ok(r.returncode == 1 and r.stderr.strip() ==
       "package: dpkg-deb not found: run deploy/install.sh",
       "package.sh without dpkg-deb: exit 1, names it",
       "exit %d, stderr %r" % (r.returncode, r.stderr))


def deb_files(deb):
    """The paths of a .deb's files and links (not directories)."""
    r = run(["dpkg-deb", "-c", deb])
    out = []
    for line in r.stdout.splitlines():
        f = line.split(None, 5)
        if len(f) == 6 and not f[0].startswith("d"):
            out.append(f[5].split(" -> ")[0].lstrip("."))
    return sorted(out)


def check_stage(tmp, debs):
    """--stage: the three packages unpacked again are a staging tree that
    gives the same packages; one listed file missing, or one file no
    package lists, is an error naming it."""
    stage = os.path.join(tmp, "stage")
    for pkg in PACKAGES:
        subprocess.run(["dpkg-deb", "-x", debs[pkg], stage], check=True)
    # What package.sh adds itself, not meson install.
    for pkg in PACKAGES:
        os.remove(os.path.join(stage, "usr/share/doc", pkg, "copyright"))
    work = os.path.join(tmp, "stage-work")
    out = os.path.join(tmp, "stage-debs")
    r = run(["sh", PACKAGE_SH, "--stage", stage, "--build-dir", work, out],
            timeout=300)
    again = {p: glob.glob(os.path.join(out, "%s_*.deb" % p))
             for p in PACKAGES}
    same = r.returncode == 0 and all(
        len(again[p]) == 1 and deb_files(again[p][0]) == deb_files(debs[p])
        for p in PACKAGES)
    ok(same, "package.sh --stage: the packages unpacked give the same "
       "packages", r.stdout + r.stderr)

    os.remove(os.path.join(stage, "etc/parity/agent.yaml"))
    r = run(["sh", PACKAGE_SH, "--stage", stage, "--build-dir", work, out],
            timeout=300)
    want = ("package: parity-agent: etc/parity/agent.yaml is not in the "
            "meson install staging dir %s/stage (not installed by the "
            "build?)" % work)
    ok(r.returncode == 1 and r.stderr.strip() == want,
       "a listed file missing: exit 1, " + want.replace(work, "WORK"),
       "exit %d, stderr %r" % (r.returncode, r.stderr))
    with open(os.path.join(stage, "etc/parity/agent.yaml"), "w") as f:
        f.write("# agent\n")

    with open(os.path.join(stage, "usr/bin/parity-stray"), "w") as f:
        f.write("")
    os.makedirs(os.path.join(stage, "usr/share/stray"))
    with open(os.path.join(stage, "usr/share/stray/x"), "w") as f:
        f.write("")
    r = run(["sh", PACKAGE_SH, "--stage", stage, "--build-dir", work, out],
            timeout=300)
    want = ("package: staged but in no package (add them to "
            "deploy/package.sh):\n  usr/bin/parity-stray\n"
            "  usr/share/stray/x")
    ok(r.returncode == 1 and r.stderr.strip() == want,
       "files no package lists: exit 1, each named",
       "exit %d, stderr %r" % (r.returncode, r.stderr))

    r = run(["sh", PACKAGE_SH, "--stage", os.path.join(tmp, "none"), out])
    want = "package: --stage %s: not a directory" % os.path.join(tmp, "none")
    ok(r.returncode == 2 and r.stderr.strip() == want,
       "--stage NOTDIR: exit 2, 'package: --stage NOTDIR: not a directory'",
       "exit %d, stderr %r" % (r.returncode, r.stderr))
    r = run(["sh", PACKAGE_SH, "--stage"])
    ok(r.returncode == 2 and
       r.stderr.strip() == "package: --stage needs a directory",
       "--stage: exit 2, 'package: --stage needs a directory'",
       "exit %d, stderr %r" % (r.returncode, r.stderr))


def check_control(debs):
    info = {}
    for pkg in PACKAGES:
        r = run(["dpkg-deb", "-f", debs[pkg]])
        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", r.stdout, re.M))
        info[pkg] = fields
        deps = fields.get("Depends", "")
        ok(fields.get("Package") == pkg and "libc6" in deps and
           "libzmq5" in deps and "libczmq4" in deps,
           "%s: control names it, library dependencies from dpkg-shlibdeps"
           % pkg, r.stdout)
    ok("postgresql" in info["parity-collector"]["Depends"] and
       "libpq5" in info["parity-collector"]["Depends"],
       "parity-collector depends on postgresql and libpq5",
       info["parity-collector"]["Depends"])
    v = info["parity"]["Version"]
    ok("parity (= %s)" % v in info["parity-agent"]["Depends"] and
       "parity (= %s)" % v in info["parity-collector"]["Depends"],
       "the daemons depend on parity of their own version (%s)" % v)
    for pkg, conf in (("parity-agent", "/etc/parity/agent.yaml"),
                      ("parity-collector", "/etc/parity/collector.yaml")):
        d = tempfile.mkdtemp()
        subprocess.run(["dpkg-deb", "-e", debs[pkg], d], check=True)
        conffiles = open(os.path.join(d, "conffiles")).read().split() \
            if os.path.exists(os.path.join(d, "conffiles")) else []
        ok(conffiles == [conf], "%s: conffiles is %s" % (pkg, conf),
           conffiles)
        scripts = [s for s in ("postinst", "prerm", "postrm")
                   if os.access(os.path.join(d, s), os.X_OK)]
        ok(scripts == ["postinst", "prerm", "postrm"],
           "%s: postinst, prerm and postrm, executable" % pkg, scripts)
        shutil.rmtree(d)


def check_files():
    """Every file where Debian expects it."""
    expect = ["/usr/bin/parity", "/usr/bin/parity-agent",
              "/usr/bin/parity-collector", NOOP,
              "/usr/share/man/man1/parity.1.gz",
              "/usr/share/man/man1/parity-agent.1.gz",
              "/usr/share/man/man1/parity-collector.1.gz",
              "/usr/share/man/man1/parity-compare.1.gz",
              "/usr/share/bash-completion/completions/parity",
              "/usr/share/bash-completion/completions/parity-agent",
              "/usr/share/zsh/vendor-completions/_parity",
              "/usr/share/doc/parity/README.md",
              "/usr/share/doc/parity/commands/compare.md",
              "/usr/share/doc/parity/examples/suites/example.yaml",
              "/usr/share/doc/parity/copyright",
              "/usr/share/doc/parity-agent/copyright",
              "/usr/share/doc/parity-collector/copyright",
              "/etc/parity/agent.yaml", "/etc/parity/collector.yaml"]
    missing = [p for p in expect if not os.path.exists(p)]
    ok(not missing, "installed where Debian expects (%d paths)" % len(expect),
       missing)
    for exe in ["/usr/bin/parity", "/usr/bin/parity-agent",
                "/usr/bin/parity-collector", NOOP]:
        ok(os.access(exe, os.X_OK), "%s is executable" % exe)
    units = [u for u in ("parity-agent.service", "parity-collector.service")
             if not any(os.path.exists(d + u) for d in
                        ("/lib/systemd/system/", "/usr/lib/systemd/system/"))]
    ok(not units, "both units in the systemd unit directory", units)
    for p in ["/usr/bin/parity-noop", "/usr/local/bin/parity"]:
        ok(not os.path.exists(p), "nothing at %s" % p)


def count_lines(path):
    try:
        with open(path) as f:
            return len(f.read().splitlines())
    except OSError:
        return 0


def check_programs(tmp):
    for prog in ("parity", "parity-agent", "parity-collector"):
        r = run(["/usr/bin/" + prog, "--version"], timeout=30)
        ok(r.returncode == 0 and re.match(r"^%s \d+\.\d+\.\d+$" % prog,
                                          r.stdout.strip()),
           "/usr/bin/%s --version" % prog, r.stdout + r.stderr)
    r = run(["/usr/bin/parity", "--help"], timeout=30)
    ok(r.returncode == 0 and "compare" in r.stdout, "/usr/bin/parity --help")

    suite = os.path.join(tmp, "true.yaml")
    with open(suite, "w") as f:
        f.write("suite: package-test\n"
                "benchmarks:\n"
                "  - name: true-vs-true\n"
                "    runs: 5\n"
                "    warmup: 1\n"
                "    arms:\n"
                "      - name: first\n"
                "        subject: true\n"
                "        command: [\"true\"]\n"
                "      - name: second\n"
                "        command: [\"true\"]\n")
    # A real comparison with the real no-op.
    r = run(["/usr/bin/parity-agent", "run", suite, "--json"], timeout=120,
            cwd=tmp)
    doc = None
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        pass
    bench = doc["benchmarks"][0] if doc and doc.get("benchmarks") else {}
    ok(r.returncode == 0 and doc and doc.get("complete") is True and
       bench.get("status") == "complete" and
       ((bench.get("verdict") or {}).get("second") or {}).get("outcome")
       in ("win", "parity", "loss") and
       doc["floor"]["calibration_samples"] > 0,
       "/usr/bin/parity-agent run: true vs true, complete, a verdict, "
       "a floor from calibration", "exit %d\n%s\n%s" % (
           r.returncode, r.stdout[:2000], r.stderr))

    # Which no-op calibrates: swap in one that counts its runs.
    mark = os.path.join(tmp, "noop-runs")
    saved = os.path.join(tmp, "parity-noop.real")
    shutil.copy2(NOOP, saved)
    try:
        with open(NOOP, "w") as f:
            f.write("#!/bin/sh\necho x >> '%s'\n" % mark)
        os.chmod(NOOP, 0o755)
        r = run(["/usr/bin/parity-agent", "run", suite, "--runs", "2",
                 "--warmup", "0", "--json"], timeout=120, cwd=tmp)
        n_agent = count_lines(mark)
        ok(r.returncode == 0 and n_agent > 0,
           "the installed parity-agent calibrates with %s (%d runs)"
           % (NOOP, n_agent), r.stderr)
        r = run(["/usr/bin/parity", "compare", "--runs", "2", "--warmup",
                 "0", "--", "true", "--", "true"], timeout=120, cwd=tmp)
        n_client = count_lines(mark) - n_agent
        ok(r.returncode == 0 and n_client > 0,
           "the installed parity compare calibrates with %s (%d runs)"
           % (NOOP, n_client), r.stdout + r.stderr)
        if AGENT_BUILD and os.access(AGENT_BUILD, os.X_OK):
            before = count_lines(mark)
            r = run([AGENT_BUILD, "run", suite, "--runs", "2", "--warmup",
                     "0", "--json"], timeout=120, cwd=tmp)
            ok(r.returncode == 0 and count_lines(mark) == before,
               "the build tree's parity-agent still calibrates with the "
               "build tree's parity-noop", r.stderr)
        else:
            skip("the build tree's parity-agent calibrates with its own "
                 "parity-noop", "no build-tree parity-agent given")
    finally:
        shutil.copy2(saved, NOOP)
    r = run(["dpkg", "--verify", "parity-agent"])
    ok(r.returncode == 0 and r.stdout.strip() == "",
       "parity-agent's files as packaged again (dpkg --verify)", r.stdout)

    pages = ["parity", "parity-agent", "parity-collector"] + [
        "parity-" + v for v in ("verdict", "import", "compare", "keygen",
                                "run", "verdicts", "hosts", "jobs", "cancel",
                                "show", "export", "history", "regressions",
                                "changes", "report")]
    bad = []
    for page in pages:
        r = run(["man", "-w", page], timeout=30)
        if r.returncode != 0 or r.stdout.strip() != \
                "/usr/share/man/man1/%s.1.gz" % page:
            bad.append((page, r.stdout.strip(), r.stderr.strip()))
    ok(not bad, "man -w finds all %d pages in /usr/share/man/man1"
       % len(pages), bad)
    r = run(["sh", "-c", "man -P cat parity-compare 2>/dev/null"],
            timeout=60, env=dict(os.environ, MANWIDTH="80"))
    ok(r.returncode == 0 and "parity-compare - run commands interleaved" in
       r.stdout and "EXIT STATUS" in r.stdout,
       "man parity-compare renders its NAME and EXIT STATUS", r.stdout[:600])

    bc = "/usr/share/bash-completion/bash_completion"
    if os.path.exists(bc) and shutil.which("bash"):
        script = ('. %s; . /usr/share/bash-completion/completions/parity; '
                  'COMP_WORDS=(parity comp); COMP_CWORD=1; COMP_LINE="parity '
                  'comp"; COMP_POINT=${#COMP_LINE}; _parity parity comp '
                  'parity; echo "${COMPREPLY[*]}"; '
                  'COMP_WORDS=(parity compare --ru); COMP_CWORD=2; '
                  'COMP_LINE="parity compare --ru"; COMP_POINT=${#COMP_LINE}; '
                  '_parity parity --ru compare; echo "${COMPREPLY[*]}"' % bc)
        r = run(["bash", "-c", script], timeout=30,
                env=dict(os.environ, PATH="/usr/bin:/bin"))
        lines = r.stdout.splitlines()
        ok(len(lines) == 2 and lines[0] == "compare" and
           lines[1] == "--runs",
           "bash completes 'parity comp' to compare and 'compare --ru' to "
           "--runs", r.stdout + r.stderr)
    else:
        skip("bash completion", "bash-completion is not installed")
    if shutil.which("zsh"):
        r = run(["zsh", "-n", "/usr/share/zsh/vendor-completions/_parity"])
        ok(r.returncode == 0, "_parity parses in zsh", r.stderr)
        # An interactive zsh (zpty) with Debian's fpath, as a person types:
        # TAB after "parity comp", "parity compare --ru", "parity-agent r".
        script = os.path.join(tmp, "complete.zsh")
        with open(script, "w") as f:
            f.write(ZSH_COMPLETE)
        empty = os.path.join(tmp, "zsh-cwd")   # no file to complete to
        os.makedirs(empty)
        r = run(["zsh", "-f", script], timeout=60, cwd=empty,
                env=dict(os.environ, PATH="/usr/bin:/bin", HOME=empty))
        screen = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "",
                        r.stdout.replace("\r", ""))
        # A completed word ends with a space; the typed text never does.
        ok(all(w in screen for w in ("parity compare ",
                                     "parity compare --runs ",
                                     "parity-agent run ")),
           "zsh completes 'parity comp' to compare, 'compare --ru' to "
           "--runs and 'parity-agent r' to run", screen[-1500:])
    else:
        skip("_parity parses in zsh", "zsh is not installed")


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def exec_start(name):
    """The command line of the installed unit's ExecStart= (what systemd
    would run, without its sandbox), or None."""
    for d in ("/lib/systemd/system/", "/usr/lib/systemd/system/"):
        try:
            with open(d + name + ".service") as f:
                for line in f:
                    if line.startswith("ExecStart="):
                        return shlex.split(line[len("ExecStart="):].strip())
        except OSError:
            pass
    return None


def check_fleet(tmp):
    """The installed daemons as their installed units start them (their
    ExecStart=, so with /etc/parity/NAME.yaml): an unknown key in each
    config file stops its daemon naming the file and line; the collector
    from its config file, its private PostgreSQL from the installed
    postgresql; the installed agent's run streamed to it; the installed
    client asking it for its hosts."""
    saved = {}
    for name in ("agent", "collector"):
        path = "/etc/parity/%s.yaml" % name
        with open(path) as f:
            saved[path] = f.read()
    try:
        for name in ("agent", "collector"):
            path = "/etc/parity/%s.yaml" % name
            with open(path, "a") as f:
                f.write("colour: red\n")
            line = len(saved[path].splitlines()) + 1
            cmd = exec_start("parity-" + name)
            if not ok(cmd and cmd[0] == "/usr/bin/parity-" + name,
                      "the parity-%s unit starts /usr/bin/parity-%s"
                      % (name, name), cmd):
                return
            r = run(cmd, timeout=30)
            want = 'parity-%s: %s:%d: unknown key "colour"' % (name, path,
                                                                line)
            ok(r.returncode == 2 and
               r.stderr.splitlines()[:1] == [want],
               "/usr/bin/parity-%s reads the installed %s: %s" % (
                   name, path, want),
               "exit %d, stderr %r" % (r.returncode, r.stderr))
            with open(path, "w") as f:
                f.write(saved[path])

        root = os.path.join(tmp, "fleet")
        keys, allow, admin = (os.path.join(root, d)
                              for d in ("keys", "allow", "admin"))
        for d in (keys, allow, admin):
            os.makedirs(d)
        os.chmod(tmp, 0o755)     # the postgres user must reach DATA/pg
        os.chmod(root, 0o755)
        for name in ("collector", "agent", "admin"):
            r = run(["/usr/bin/parity", "keygen", name, "--dir", keys],
                    timeout=30)
            if not ok(r.returncode == 0, "/usr/bin/parity keygen %s" % name,
                      r.stdout + r.stderr):
                return
        shutil.copy(os.path.join(keys, "agent"), allow)
        shutil.copy(os.path.join(keys, "admin"), admin)
        port = free_port()
        endpoint = "tcp://127.0.0.1:%d" % port
        with open("/etc/parity/collector.yaml", "a") as f:
            f.write("bind: %s\nkey: %s\nallow: %s\nadmin: %s\n"
                    "data-dir: %s\n" % (
                        "tcp://127.0.0.1:%d" % port,
                        os.path.join(keys, "collector_secret"), allow,
                        admin, os.path.join(root, "data")))
        log_path = os.path.join(root, "collector.log")
        log = open(log_path, "ab")
        collector = subprocess.Popen(exec_start("parity-collector"),
                                     stdout=log, stderr=log)
        try:
            up = False
            end = time.monotonic() + 90
            while time.monotonic() < end and collector.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", port),
                                             timeout=0.2).close()
                    up = True
                    break
                except OSError:
                    time.sleep(0.1)
            with open(log_path, errors="replace") as f:
                tail = f.read()[-3000:]
            if not ok(up, "/usr/bin/parity-collector as its unit starts it, "
                      "from /etc/parity/collector.yaml, listens", tail):
                return
            suite = os.path.join(tmp, "true.yaml")
            r = run(["/usr/bin/parity-agent", "run", suite, "--runs", "3",
                     "--warmup", "0", "--collector", endpoint,
                     "--collector-key", os.path.join(keys, "collector"),
                     "--key", os.path.join(keys, "agent"),
                     "--spool", os.path.join(root, "spool"),
                     "--name", "package-test", "--ack-timeout", "60"],
                    timeout=120, cwd=tmp)
            ok(r.returncode == 0,
               "/usr/bin/parity-agent run --collector: every message acked",
               "exit %d\n%s%s" % (r.returncode, r.stdout[-1500:], r.stderr))
            env = dict(os.environ, PARITY_COLLECTOR=endpoint,
                       PARITY_COLLECTOR_KEY=os.path.join(keys, "collector"),
                       PARITY_KEY=os.path.join(keys, "admin"),
                       XDG_CONFIG_HOME=os.path.join(root, "config"))
            r = run(["/usr/bin/parity", "hosts", "--json"], timeout=60,
                    env=env)
            names = []
            try:
                doc = json.loads(r.stdout)
                hosts = doc.get("hosts", doc) if isinstance(doc, dict) \
                    else doc
                names = [h.get("name") for h in hosts]
            except (ValueError, AttributeError, TypeError):
                pass
            ok(r.returncode == 0 and "package-test" in names,
               "/usr/bin/parity hosts: the collector stored the agent's "
               "host", r.stdout[-1500:] + r.stderr)
        finally:
            if collector.poll() is None:
                collector.terminate()
                try:
                    collector.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    collector.kill()
                    collector.wait()
            log.close()
            ok(collector.returncode == 0,
               "parity-collector stops on SIGTERM with status 0",
               "status %s" % collector.returncode)
    finally:
        for path, text in saved.items():
            with open(path, "w") as f:
                f.write(text)


def check_release_build():
    """deploy/package.sh builds with -Dbuildtype=release (-O3), where GCC
    warns of things -O2 does not see (format-truncation): a user's or a
    distribution's build must compile cleanly, with nothing to hide."""
    log = os.path.join(PKG_BUILD_DIR, "package-ninja.log") \
        if PKG_BUILD_DIR else ""
    if not log or not os.path.exists(log):
        return skip("the release build compiles without a warning",
                    "no PKG_BUILD_DIR log")
    with open(log, errors="replace") as f:
        text = f.read()
    warnings = [line for line in text.splitlines() if "warning:" in line]
    with open(os.path.join(PKG_BUILD_DIR, "package-setup.log"),
              errors="replace") as f:
        release = re.search(r"buildtype\s*:\s*release", f.read())
    ok(not warnings and release,
       "the release build (-Dbuildtype=release) compiles without a "
       "warning (%d)" % len(warnings), "\n".join(warnings[:20]))


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP not root: the test installs packages into /usr")
        return 0
    for tool in ("apt-get", "dpkg-deb", "man"):
        if not shutil.which(tool):
            print("1..0 # SKIP %s not found (deploy/install.sh)" % tool)
            return 0
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="parity-packages-")
    try:
        check_errors(tmp)

        outdir = os.path.join(tmp, "debs")
        args = ["sh", PACKAGE_SH]
        if PKG_BUILD_DIR:
            args += ["--build-dir", PKG_BUILD_DIR]
        t0 = time.monotonic()
        r = run(args + [outdir], timeout=900)
        took = time.monotonic() - t0
        print("# deploy/package.sh took %.1f s" % took)
        debs = {}
        for pkg in PACKAGES:
            found = glob.glob(os.path.join(outdir, "%s_*.deb" % pkg))
            if len(found) == 1:
                debs[pkg] = found[0]
        if not ok(r.returncode == 0 and len(debs) == 3,
                  "deploy/package.sh builds parity, parity-agent and "
                  "parity-collector", r.stdout + r.stderr):
            print("1..%d" % count)
            return 1
        check_release_build()
        check_control(debs)
        check_stage(tmp, debs)

        r = purge_all()
        if r is not None:
            print("# purged an earlier install first")
        t0 = time.monotonic()
        r = run(APT + ["install", "--no-install-recommends"] +
                ["./" + os.path.basename(debs[p]) for p in PACKAGES],
                cwd=outdir, env=APT_ENV)
        print("# apt-get install took %.1f s" % (time.monotonic() - t0))
        if not ok(r.returncode == 0 and all(installed(p) for p in PACKAGES),
                  "apt-get install ./parity_*.deb ./parity-agent_*.deb "
                  "./parity-collector_*.deb", r.stdout + r.stderr):
            print("1..%d" % count)
            return 1
        print("# at %.1f s" % (time.monotonic() - started))
        check_files()
        r = run(["getent", "passwd", "parity"])
        ok(r.returncode == 0, "the parity system user exists",
           r.stdout + r.stderr)
        if not os.path.isdir("/run/systemd/system"):
            ok(not daemon_pids("/usr/bin/parity-agent") and
               not daemon_pids("/usr/bin/parity-collector"),
               "PID 1 is not systemd: no daemon was started")
        else:
            skip("no daemon started without systemd", "PID 1 is systemd")
        print("# at %.1f s" % (time.monotonic() - started))
        check_programs(tmp)
        print("# at %.1f s" % (time.monotonic() - started))
        check_fleet(tmp)

        # remove: programs gone, an edited conffile kept; purge: all gone.
        with open("/etc/parity/agent.yaml", "a") as f:
            f.write("# edited by tests/packages\n")
        files = {}
        for pkg in PACKAGES:
            r = run(["dpkg-query", "-L", pkg])
            files[pkg] = [p for p in r.stdout.splitlines()
                          if (os.path.isfile(p) or os.path.islink(p)) and
                          not os.path.isdir(p)]
        print("# at %.1f s" % (time.monotonic() - started))
        r = run(APT + ["remove"] + PACKAGES, env=APT_ENV)
        ok(r.returncode == 0 and not any(installed(p) for p in PACKAGES),
           "apt-get remove", r.stdout + r.stderr)
        left = [p for p in ("/usr/bin/parity", "/usr/bin/parity-agent",
                            "/usr/bin/parity-collector", NOOP,
                            "/usr/share/man/man1/parity-compare.1.gz")
                if os.path.exists(p)]
        ok(not left, "after remove the programs and pages are gone", left)
        ok(os.path.exists("/etc/parity/agent.yaml"),
           "after remove the edited /etc/parity/agent.yaml is kept")
        print("# at %.1f s" % (time.monotonic() - started))
        r = run(APT + ["purge"] + PACKAGES, env=APT_ENV)
        ok(r.returncode == 0 and not any(present(p) for p in PACKAGES),
           "apt-get purge", r.stdout + r.stderr)
        left = [p for pkg in PACKAGES for p in files[pkg]
                if os.path.lexists(p)]
        left += [p for p in ("/etc/parity/agent.yaml",
                             "/etc/parity/collector.yaml",
                             "/usr/libexec/parity") if os.path.lexists(p)]
        ok(not left, "after purge none of the %d packaged files is left"
           % sum(len(v) for v in files.values()), left)
    finally:
        purge_all()
        shutil.rmtree(tmp, ignore_errors=True)
    print("# the whole test took %.1f s" % (time.monotonic() - started))
    print("1..%d" % count)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
