#!/usr/bin/env python3
"""test_packages.py -- the Debian packages, built, installed, used and
removed on this machine, emitting TAP.

  1. deploy/package.sh builds parity, parity-agent and parity-collector
     into a temporary directory, reusing the meson build directory
     $PKG_BUILD_DIR (so a second run only builds what changed); its
     time is printed. Its command-line errors are pinned first.
  2. The packages' control data: versions, library dependencies from
     dpkg-shlibdeps, postgresql for the collector, the conffiles.
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
     `man -w` finds every page; bash completes a verb.
  5. `apt-get remove`: the programs are gone, the edited conffile stays;
     `apt-get purge`: every file the packages had is gone.

Needs root (it installs into /usr): otherwise the whole test is a TAP
skip. Cleans up (purges the packages) even when a check fails.
"""
import glob
import json
import os
import re
import shutil
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


def check_errors(tmp):
    """package.sh's own command-line errors."""
    cases = [
        (["--build-dir"], 2, "package: --build-dir needs a directory"),
        (["--fast"], 2, "package: unknown option --fast (usage: "
                        "deploy/package.sh [--build-dir DIR] [OUTDIR])"),
        (["a", "b"], 2, "package: one OUTDIR only (usage: "
                        "deploy/package.sh [--build-dir DIR] [OUTDIR])"),
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
            ok(True, "# SKIP no build-tree parity-agent given")
    finally:
        shutil.copy2(saved, NOOP)
    r = run(["dpkg", "--verify", "parity-agent"])
    ok(r.returncode == 0 and r.stdout.strip() == "",
       "parity-agent's files as packaged again (dpkg --verify)", r.stdout)

    pages = ["parity", "parity-agent", "parity-collector"] + [
        "parity-" + v for v in ("verdict", "import", "compare", "keygen",
                                "run", "verdicts", "hosts", "jobs", "cancel",
                                "show", "export", "history", "regressions",
                                "report")]
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
                  'COMP_WORDS=(parity compare --r); COMP_CWORD=2; '
                  'COMP_LINE="parity compare --r"; COMP_POINT=${#COMP_LINE}; '
                  '_parity parity --r compare; echo "${COMPREPLY[*]}"' % bc)
        r = run(["bash", "-c", script], timeout=30,
                env=dict(os.environ, PATH="/usr/bin:/bin"))
        lines = r.stdout.splitlines()
        ok(len(lines) == 2 and lines[0] == "compare" and
           lines[1] == "--runs",
           "bash completes 'parity comp' to compare and 'compare --r' to "
           "--runs", r.stdout + r.stderr)
    else:
        ok(True, "# SKIP bash-completion is not installed")
    if shutil.which("zsh"):
        r = run(["zsh", "-n", "/usr/share/zsh/vendor-completions/_parity"])
        ok(r.returncode == 0, "_parity parses in zsh", r.stderr)
    else:
        ok(True, "# SKIP zsh is not installed")


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
        check_control(debs)

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
            ok(True, "# SKIP PID 1 is systemd here")
        print("# at %.1f s" % (time.monotonic() - started))
        check_programs(tmp)

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
