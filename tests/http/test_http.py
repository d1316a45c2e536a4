#!/usr/bin/env python3
"""test_http.py BUILD_DIR -- the collector over HTTP: the JSON API and
/metrics (TAP; docs/http.md).

A parity-collector with its private PostgreSQL and --http on loopback
(port 0: the log says which), a tokens file (ci: read, ops: triage,
bulk: read), fleet-feed's three hosts h1..h3 with a 10 % step at commit
c07 of two benchmarks (two fleet events), curl for every request, and
Python sockets where curl cannot be rude enough. Checked:

- the API answers what the protocol's queries answer, in the same JSON
  (hosts, history, series, regressions, changes, runs/ID/export),
  with paging, ETag and 304, HEAD;
- every error status with its exact body: 400 (a parameter out of
  range, unknown, not a number; NUL bytes and `..` in the path), 401
  (none, malformed, wrong), 403 (the read role acking), 404, 405 (with
  Allow), 413 (a 10 MB body), 414 (a 100 KB query string), 429 (the
  rate of one token), 503 (the database stopped);
- ack and unack from the triage token, as `parity regressions` sees;
- /metrics passes `promtool check metrics` and counts what happened;
- 300 idle connections do not stop another client's answer within
  2 s, and a client that stops mid-request is cut off;
- the tokens file read again when it changes; the log names the token,
  never shows it;
- start-up refusals: a non-loopback address without tokens, a tokens
  file that does not read, --http's own errors.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from http.client import HTTPConnection

sys.dont_write_bytecode = True
os.environ["PARITY_BUILD_DIR"] = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "jobs"))
import test_jobs as tj  # noqa: E402
from parity_fixtures import wait_until as wait  # noqa: E402

ok, diag = tj.ok, tj.diag
FEED, = tj.pf.built("tests/history/fleet-feed")
HOSTS = ("h1", "h2", "h3")
TOKENS = {"ci": ("read", "ci-0123456789abcdef"),
          "ops": ("triage", "ops-fedcba9876543210"),
          "bulk": ("read", "bulk-5555aaaa5555aaaa")}
PROMTOOL = shutil.which("promtool")


def plan(benches, seed):
    return tj.pf.step_plan(HOSTS, benches, seed)


def feed(w, lines):
    return tj.pf.feed_plan(FEED, w, lines)


class Http:
    """curl against the collector's HTTP side."""

    def __init__(self, base):
        self.base = base

    def __call__(self, path, token=None, method="GET", data=None,
                 headers=(), auth=None):
        cmd = ["curl", "-s", "-g", "-i", "--path-as-is", "-m", "20", "-X",
               method]
        if token:
            cmd += ["-H", "Authorization: Bearer " + TOKENS[token][1]]
        if auth is not None:
            cmd += ["-H", "Authorization: " + auth]
        for h in headers:
            cmd += ["-H", h]
        if data is not None:
            cmd += ["--data-binary", data]
        if method == "HEAD":
            cmd = [c for c in cmd if c not in ("-X", "HEAD")] + ["-I"]
        r = subprocess.run(cmd + [self.base + path], capture_output=True,
                           timeout=60)
        return parse(r.stdout)


def parse(raw):
    """(status, {header: value}, body text) of curl -i's output; the
    100 Continue of a large body skipped."""
    while raw.startswith(b"HTTP/1.1 100"):
        raw = raw.split(b"\r\n\r\n", 1)[1]
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.[01] (\d+)", lines[0] if lines else "")
    hdr = {}
    for x in lines[1:]:
        k, _, v = x.partition(":")
        hdr[k.strip().lower()] = v.strip()
    return (int(m.group(1)) if m else 0, hdr,
            body.decode("utf-8", "replace"))


def err(code, message):
    return json.dumps({"error": {"code": code, "message": message}},
                      separators=(",", ":")) + "\n"


def write_tokens(path, names):
    with open(path, "w") as f:
        f.write("# NAME ROLE TOKEN\n")
        for n in names:
            f.write("%s %s %s\n" % (n, TOKENS[n][0], TOKENS[n][1]))
    os.chmod(path, 0o600)


def log_text(w):
    w.log.flush()
    with open(os.path.join(w.root, "collector.log"), errors="replace") as f:
        return f.read()


def has_ipv6():
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


def start(w, *extra):
    """The collector with --http on 127.0.0.1 (and [::1] when the machine
    has IPv6 loopback), port 0: the Http of the IPv4 address; w.http6
    the IPv6 one's, or None."""
    v6 = ["--http", "[::1]:0"] if has_ipv6() else []
    w.collector = subprocess.Popen(
        w.collector_cmd(w.endpoint, tj.HEARTBEAT_MS, "--http",
                        "127.0.0.1:0", *(v6 + list(extra))), stdout=w.log,
        stderr=w.log)
    w.wait_tcp(w.collector, w.port)
    got = []
    wait(lambda: got.extend(re.findall(r"event=http_listening url=(\S+)",
                                       log_text(w))) or
         len(got) >= 1 + bool(v6), 10)
    v4 = [u for u in got if u.startswith("http://127.")]
    w.http6 = next((Http(u) for u in got if u.startswith("http://[")), None)
    return Http(v4[-1]) if v4 else tj.pf.bail("no http_listening line")


def raw_zmq(w, command, args):
    """The protocol's answer to command with args, as (status, body)."""
    st, text = tj.requests(w, [(command, json.dumps(args))])[0]
    return st, (json.loads(text) if st == "0" else text)


def check_same(w, http):
    st, hdr, body = http("/api/v1/hosts", "ci")
    zst, zbody = raw_zmq(w, "hosts", {})
    api = json.loads(body) if st == 200 else {}
    ok(st == 200 and hdr.get("content-type") == "application/json" and
       zst == "0" and api.get("hosts") == zbody.get("hosts") and
       api.get("total") == 3 and api.get("next") is None,
       "GET /api/v1/hosts: the hosts of the protocol's `hosts`, total 3, "
       "no next page (%d, %s)" % (st, body[:200]))
    st, _, body = http("/api/v1/hosts?limit=2", "ci")
    p1 = json.loads(body) if st == 200 else {}
    st2, _, body2 = http("/api/v1/hosts?limit=2&offset=2", "ci")
    p2 = json.loads(body2) if st2 == 200 else {}
    ok([h["name"] for h in p1.get("hosts", [])] == ["h1", "h2"] and
       p1.get("next") == 2 and
       [h["name"] for h in p2.get("hosts", [])] == ["h3"] and
       p2.get("next") is None,
       "paging: ?limit=2 gives h1 h2 and next 2; &offset=2 gives h3 and "
       "no next (%s | %s)" % (body[:120], body2[:120]))
    tag = hdr.get("etag", "")
    st, hdr2, body = http("/api/v1/hosts", "ci",
                          headers=["If-None-Match: " + tag])
    ok(re.match(r'^"[0-9a-f]{16}"$', tag) and st == 304 and body == "" and
       hdr2.get("etag") == tag,
       "ETag %s, and If-None-Match with it: 304, no body" % tag)
    if w.http6:
        st6, _, body6 = w.http6("/api/v1/hosts", "ci")
        ok(st6 == 200 and json.loads(body6).get("hosts") ==
           api.get("hosts") and w.http6.base.startswith("http://[::1]:"),
           "--http [::1]:0 too: the same answer over IPv6 (%s)"
           % w.http6.base)
    else:
        tj.pf.skip("--http [::1]:0", "no IPv6 loopback here")
    st, hdr3, body = http("/api/v1/hosts", "ci", method="HEAD")
    ok(st == 200 and body == "" and hdr3.get("etag") == tag,
       "HEAD: 200, the same ETag, no body")
    for path, cmd, args in (
            ("/api/v1/history/b1?host=h1&tag=commit=c07", "history",
             {"benchmark": "b1", "hosts": ["h1"],
              "tags": {"commit": "c07"}}),
            ("/api/v1/series?benchmark=b2&host=h2&runs=5", "series",
             {"benchmark": "b2", "host": "h2", "runs": 5}),
            ("/api/v1/regressions?jobs=3", "regressions", {"jobs": 3})):
        st, _, body = http(path, "ci")
        zst, zbody = raw_zmq(w, cmd, args)
        ok(st == 200 and zst == "0" and json.loads(body) == zbody,
           "GET %s: the same JSON as `%s` %s" % (path, cmd, json.dumps(args)))
    st, _, body = http("/api/v1/changes", "ci")
    zst, zbody = raw_zmq(w, "regressions", {})
    ch = json.loads(body) if st == 200 else {}
    ok(st == 200 and ch == zbody.get("change_points") and
       len(ch.get("events", {}).get("open", [])) == 2,
       "GET /api/v1/changes: regressions' change_points, two open events")
    run = (json.loads(http("/api/v1/series?benchmark=b1&host=h1", "ci")[2])
           ["series"][0]["runs"][-1]["run"])
    st, _, body = http("/api/v1/runs/%s/export" % run, "ci")
    zst, zbody = raw_zmq(w, "show", {"run": run})
    ok(st == 200 and json.loads(body) == zbody and
       zbody.get("run_id") == run,
       "GET /api/v1/runs/ID/export: the run as `show` answers it")
    return ch


def check_ack(w, http, ch):
    cp = ch["events"]["open"][0]["id"]
    path = "/api/v1/regressions/%d/ack" % cp
    st, _, body = http(path, "ci", "POST", '{"note": "known"}')
    ok(st == 403 and body == err(
        "forbidden", "the token of ci has the role read; POST "
        "/api/v1/regressions/%d/ack needs triage" % cp),
       "403: the read role may not ack (%s)" % body.strip())
    st, _, body = http(path, "ops", "POST", "")
    ok(st == 400 and body == err(
        "bad_parameter", '"note" is required: say why the change is known'),
       "400: an ack without a note (%s)" % body.strip())
    st, _, body = http(path, "ops", "POST", "[1]")
    ok(st == 400 and body == err(
        "bad_body", 'the body must be a JSON object, such as {"note": '
        '"why the change is known"}'), "400: a body that is no object")
    st, _, body = http(path, "ops", "POST", '{"note": "kernel update"}')
    a = json.loads(body) if st == 200 else {}
    ok(st == 200 and a.get("acked") is True and
       a.get("note") == "kernel update" and cp in a.get("members", []) and
       sorted(a.get("hosts", [])) == list(HOSTS),
       "POST ack (triage): acked, with its note, members and hosts (%s)"
       % body[:200])
    zst, z = raw_zmq(w, "regressions", {})
    ok(cp in [e["id"] for e in z["change_points"]["events"]["acked"]],
       "regressions over ZeroMQ lists the event as acked")
    st, _, body = http("/api/v1/regressions/%d/unack" % cp, "ops", "POST")
    ok(st == 200 and json.loads(body).get("acked") is False,
       "POST unack: open again")
    st, _, body = http("/api/v1/regressions/999999/ack", "ops", "POST",
                       '{"note": "x"}')
    ok(st == 404 and body == err("not_found", "no change point 999999"),
       "404: ack of an unknown change point")


def check_errors(http):
    cases = [
        ("/api/v1/hosts", None, 401, err(
            "unauthorized", 'a token is required: send Authorization: '
            'Bearer TOKEN (docs/http.md, "Tokens")'), {}),
        ("/api/v1/hosts", "Basic Y2k6eA==", 401, err(
            "unauthorized", "malformed Authorization header: want Bearer "
            "TOKEN"), {}),
        ("/api/v1/hosts", "Bearer " + "x" * 40, 401, err(
            "unauthorized", "the token is not in the collector's tokens "
            "file"), {}),
        ("/api/v1/hosts", "Bearer short", 401, err(
            "unauthorized", "the token is not in the collector's tokens "
            "file"), {}),
    ]
    for path, auth, want, body, _ in cases:
        st, hdr, got = http(path, auth=auth)
        ok(st == want and got == body and
           hdr.get("www-authenticate") == 'Bearer realm="parity"',
           "%d for Authorization %r, with WWW-Authenticate (%s)"
           % (want, (auth or "")[:20], got.strip()))
    for path, want, body in [
            ("/api/v1/hosts?limit=0", 400, err(
                "bad_parameter", 'parameter "limit": want a whole number '
                'from 1 to 1000, not "0"')),
            ("/api/v1/jobs?limit=5000", 400, err(
                "bad_parameter", '"limit" must be 1..1000')),
            ("/api/v1/jobs?limit=five", 400, err(
                "bad_parameter", 'parameter "limit": "five" is not a whole '
                'number')),
            ("/api/v1/hosts?colour=red", 400, err(
                "bad_parameter", 'unknown parameter "colour" for GET '
                '/api/v1/hosts (known: limit offset)')),
            ("/api/v1/jobs?limit=1&limit=2", 400, err(
                "bad_parameter", 'parameter "limit" is given twice')),
            ("/api/v1/bisect/seven", 400, err(
                "bad_parameter", '"seven" in the path is not a bisect id '
                '(a positive integer)')),
            ("/api/v1/ho%00sts", 400, err(
                "bad_request", "the path holds a NUL byte, a control "
                "character or a broken %-escape")),
            ("/api/v1/hosts?limit=%00", 400, err(
                "bad_request", "a parameter holds a NUL byte, a control "
                "character or a broken %-escape")),
            ("/api/v1/../etc/passwd", 400, err(
                "bad_request", 'the path may not hold "." or ".." '
                'segments')),
            ("/api/v1/%2e%2e/hosts", 400, err(
                "bad_request", 'the path may not hold "." or ".." '
                'segments')),
            ("/api/v1/nothing", 404, err(
                "not_found", "no such endpoint: /api/v1/nothing (the API's "
                "endpoints: docs/http.md)")),
            ("/api/v1/jobs/000000000000", 404, err(
                "not_found", 'no job "000000000000" (parity jobs lists '
                'them)')),
            ("/api/v1/verdicts?latest", 404, err(
                "not_found", "no job yet (parity run starts one)")),
            ("/api/v1/verdicts?latest=maybe", 400, err(
                "bad_parameter", 'parameter "latest" takes no value (or '
                'true), not "maybe"')),
            ("/api/v1/hosts?" + "q=" + "a" * 100000, 414, err(
                "too_long", "the request target has 100016 bytes: at most "
                "8192"))]:
        st, _, got = http(path, "ci")
        ok(st == want and got == body, "%d for %s (%s)"
           % (want, path[:50], got.strip()[:160]))
    st, hdr, got = http("/api/v1/hosts", "ops", "POST", "{}")
    ok(st == 405 and hdr.get("allow") == "GET, HEAD" and got == err(
        "method_not_allowed", "POST is not allowed on /api/v1/hosts "
        "(allowed: GET, HEAD)"), "405 for POST /api/v1/hosts, Allow: GET, "
       "HEAD")
    st, hdr, got = http("/api/v1/regressions/1/ack", "ops")
    ok(st == 405 and hdr.get("allow") == "POST", "405 for GET on ack, "
       "Allow: POST (%s)" % got.strip())
    st, hdr, got = http("/api/v1/hosts", "ops", "DELETE")
    ok(st == 405 and hdr.get("allow") == "GET, HEAD, POST" and got == err(
        "method_not_allowed", "DELETE is not a method the collector "
        "answers (GET, HEAD, POST)"), "405 for DELETE")
    big = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                       "parity-http-10mb-%d" % os.getpid())
    with open(big, "wb") as f:
        f.write(b"{" + b" " * (10 << 20) + b"}")
    st, _, got = http("/api/v1/regressions/1/ack", "ops", "POST", "@" + big)
    os.unlink(big)
    ok(st == 413 and got == err("too_large", "the body has 10485762 bytes: "
                                "at most 65536"),
       "413 for a 10 MB body, refused before it is read (%s)" % got.strip())


def raw(http, data, timeout=5):
    host, port = re.match(r"http://([\d.]+):(\d+)", http.base).groups()
    s = socket.create_connection((host, int(port)), timeout=timeout)
    s.sendall(data)
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except socket.timeout:
        pass
    s.close()
    return got


def check_raw(http):
    got = raw(http, b"GET /api/v1/ho\x00sts HTTP/1.1\r\nHost: x\r\n"
              b"Authorization: Bearer " + TOKENS["ci"][1].encode() +
              b"\r\n\r\n")
    st, _, body = parse(got)
    # libmicrohttpd reads the target as a C string: a raw NUL ends it,
    # and the answer is that of the part before it, never more.
    ok(st == 404 and body == err(
        "not_found", "no such endpoint: /api/v1/ho (the API's endpoints: "
        "docs/http.md)"), "a raw NUL byte in the request line ends the "
       "target there: 404 for /api/v1/ho (%r)" % got[:60])
    host, port = re.match(r"http://([\d.]+):(\d+)", http.base).groups()
    idle = []
    try:
        for _ in range(300):
            idle.append(socket.create_connection((host, int(port)),
                                                 timeout=5))
        for s in idle[::2]:
            s.sendall(b"GET /api/v1/hosts HTTP/1.1\r\nHost: x\r\n")
        t = time.time()
        st, _, _ = http("/api/v1/hosts", "ci")
        dt = time.time() - t
        ok(st == 200 and dt < 2, "300 idle connections (half of them "
           "mid-headers): another client's answer in %.2f s" % dt)
    finally:
        for s in idle:
            s.close()
    s = socket.create_connection((host, int(port)), timeout=30)
    s.sendall(b"GET /api/v1/hosts HTTP/1.1\r\nHost: x\r\n")
    t = time.time()
    try:
        gone = s.recv(100) == b""
    except OSError:
        gone = True
    dt = time.time() - t
    s.close()
    ok(gone and 8 < dt < 20, "a client that stops mid-headers is cut off "
       "after the 10 s idle limit (%.1f s)" % dt)


def check_metrics(w, http):
    st, hdr, body = http("/metrics", "ci")
    ok(st == 200 and hdr.get("content-type", "").startswith(
        "text/plain; version=0.0.4"), "GET /metrics: 200, text/plain; "
       "version=0.0.4")
    if PROMTOOL:
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=body,
                           capture_output=True, text=True, timeout=60)
        ok(r.returncode == 0, "promtool check metrics passes (%s%s)"
           % (r.stdout[-300:], r.stderr[-300:]))
    else:
        tj.pf.skip("promtool check metrics", "no promtool (Debian's "
                   "prometheus package)")
    vals = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            vals[k] = float(v)
    n_runs = 3 * 12 * 2
    ok(vals.get("parity_database_up") == 1 and
       vals.get('parity_http_requests_total{code="401"}', 0) >= 4 and
       vals.get('parity_http_requests_total{code="414"}', 0) == 1 and
       vals.get('parity_messages_received_total{kind="run_end"}') == n_runs
       and vals.get('parity_messages_sent_total{kind="ack"}', 0) >= n_runs
       and vals.get("parity_ack_latency_seconds_count", 0) >= n_runs and
       vals.get('parity_ack_latency_seconds_bucket{le="+Inf"}') ==
       vals.get("parity_ack_latency_seconds_count") and
       vals.get("parity_change_points_found_total", 0) >= 6 and
       "parity_writer_lag_seconds" in vals and
       "parity_loop_pass_seconds_sum" in vals,
       "/metrics counts: database up, the 401s and the 414, %d RunEnds in "
       "and their acks out, the ack latency histogram, 6 change points"
       % n_runs) or diag({k: v for k, v in vals.items()
                          if "http" in k or "run_end" in k or "ack" in k})


def check_rate(http):
    # One connection, requests back to back: faster than the default
    # rate of 50 a second with its burst of 100.
    host, port = re.match(r"http://([\d.]+):(\d+)", http.base).groups()
    c = HTTPConnection(host, int(port), timeout=10)
    codes, first = [], None
    t = time.time()
    for _ in range(400):
        c.request("GET", "/api/v1/jobs?limit=1", headers={
            "Authorization": "Bearer " + TOKENS["bulk"][1]})
        r = c.getresponse()
        body = r.read().decode()
        codes.append(r.status)
        if r.status == 429 and first is None:
            first = (r.getheader("Retry-After"), body)
    dt = time.time() - t
    c.close()
    n200 = codes.count(200)
    ok(first == ("1", err("too_many_requests", "more than 50 requests a "
                          "second from bulk; try again")) and
       100 <= n200 <= 100 + 50 * dt + 2,
       "429 once bulk passes the default --http-rate 50: %d of 400 in "
       "%.2f s answered 200, Retry-After: 1 (%s)" % (n200, dt, first))
    st, _, _ = http("/api/v1/jobs?limit=1", "ci")
    ok(st == 200, "the rate is per token: ci is still answered")


def check_reload(w, http, path):
    write_tokens(path, ["ops", "bulk"])
    ok(wait(lambda: http("/api/v1/hosts", "ci")[0] == 401, 10) and
       http("/api/v1/hosts", "ops")[0] == 200,
       "the tokens file rewritten without ci: ci is refused, ops answered")
    write_tokens(path, list(TOKENS))
    ok(wait(lambda: http("/api/v1/hosts", "ci")[0] == 200, 10),
       "ci written back: answered again")
    with open(path, "a") as f:
        f.write("broken line\n")
    ok(wait(lambda: http("/api/v1/hosts", "ci")[0] == 200 and
            "event=http_tokens_failed" in log_text(w), 10) and
       http("/api/v1/hosts", "ci")[0] == 200,
       "a tokens file that no longer reads is logged, the last good set "
       "kept")
    log = log_text(w)
    ok(not any(t in log for _, t in TOKENS.values()) and
       "who=ops" in log and "who=ci" in log,
       "the log names each token's NAME and never shows a token")


def check_db_down(w, http):
    pg = os.path.join(w.data, "pg")
    ctl = tj.pf.as_pg_owner([os.path.join(tj.pg_bindir(), "pg_ctl"), "stop",
                             "-D", pg, "-m", "fast", "-w"])
    r = subprocess.run(ctl, capture_output=True, text=True, timeout=60)
    # An answer kept (co_hcache) is given until its refresh fails: then
    # the database's state shows.
    got = []
    wait(lambda: got.append(http("/api/v1/hosts", "ci")) or
         got[-1][0] != 200, 15)
    st, hdr, body = got[-1]
    e = json.loads(body).get("error", {}) if body.startswith("{") else {}
    ok(r.returncode == 0 and st == 503 and e.get("code") == "unavailable"
       and e.get("message", "").startswith("database unavailable: ") and
       hdr.get("retry-after") == "1",
       "503 while the database is down, once the kept answer's refresh "
       "failed (%d answers), Retry-After: 1 (%s)" % (len(got),
                                                    body.strip()[:200]))
    st, _, body = http("/metrics", "ci")
    ok(st == 200, "/metrics still answers with the database down")
    ctl[ctl.index("stop")] = "start"
    ctl += ["-l", os.path.join(w.root, "pg-restart.log")]
    if os.getuid() == 0:
        os.chmod(w.root, 0o777)   # the postgres user writes that log
    r = subprocess.run(ctl, capture_output=True, text=True, timeout=60)
    ok(r.returncode == 0 and
       wait(lambda: http("/api/v1/hosts", "ci")[0] == 200, 30),
       "the database back: answered again")


def check_refusals(w):
    base = w.collector_cmd(w.endpoint, tj.HEARTBEAT_MS)
    tok = os.path.join(w.root, "tokens-bad")
    with open(tok, "w") as f:
        f.write("ci read short\n")
    os.chmod(tok, 0o600)
    loose = os.path.join(w.root, "tokens-loose")
    write_tokens(loose, ["ci"])
    os.chmod(loose, 0o644)
    for extra, line in [
            (["--http", "0.0.0.0:8080"], "--http 0.0.0.0:8080: an address "
             "other than loopback needs --http-tokens FILE (anyone who "
             "reaches it could read the fleet's history)"),
            (["--http", "localhost:8080"], '--http localhost:8080: '
             '"localhost" is not a numeric IPv4 address or a bracketed '
             'IPv6 one'),
            (["--http", "8080"], "--http 8080: want ADDR:PORT, such as "
             "127.0.0.1:8080 or [::1]:8080"),
            (["--http-tokens", loose], "--http-tokens needs --http "
             "ADDR:PORT"),
            (["--http", "127.0.0.1:0", "--http-rate", "-1"],
             "--http-rate -1: want a whole number from 0 to 100000")]:
        r = subprocess.run(base + extra, capture_output=True, text=True,
                           timeout=30)
        first = r.stderr.splitlines()[0] if r.stderr else ""
        ok(r.returncode == 2 and first == "parity-collector: " + line,
           "refused at start, exit 2: %s (%d, %s)" % (line[:60],
                                                     r.returncode, first))
    # A tokens file that does not read: a runtime failure, as a key file
    # that does not (exit 1, event=config_failed), before any cluster.
    for path, why in [
            (tok, "--http-tokens %s:1: the token of ci has 5 characters: "
             "want 16 to 256" % tok),
            (loose, "--http-tokens %s: others may read it (its tokens are "
             "secrets): chmod o-r %s" % (loose, loose))]:
        r = subprocess.run(base + ["--http", "127.0.0.1:0", "--http-tokens",
                                   path], capture_output=True, text=True,
                           timeout=30)
        ok(r.returncode == 1 and 'event=config_failed why="%s"' % why in
           r.stderr and not os.path.exists(os.path.join(w.data, "pg")),
           "a tokens file that does not read: exit 1, config_failed: %s "
           "(%d)" % (why[:70], r.returncode))


def main():
    w = tj.World()
    try:
        for h in HOSTS:
            w.keygen(h, allow=True)
        check_refusals(w)
        tokens = os.path.join(w.root, "tokens")
        write_tokens(tokens, list(TOKENS))
        http = start(w, "--http-tokens", tokens)
        ok(feed(w, plan(["b1", "b2"], 7)), "fleet-feed: 3 hosts, 12 "
           "commits, 2 benchmarks with a 10 % step at c07")
        ok(wait(lambda: w.psql("SELECT count(*) FROM change_points") == "6",
                60), "the six change points are found")
        # fleet-feed is gone: once its hosts are offline the answers
        # stay the same from one request to the next.
        ok(wait(lambda: not any(h["online"] for h in raw_zmq(
            w, "hosts", {})[1]["hosts"]), 20), "fleet-feed's hosts go "
           "offline")
        ch = check_same(w, http)
        check_ack(w, http, ch)
        check_errors(http)
        check_raw(http)
        check_metrics(w, http)
        check_rate(http)
        check_reload(w, http, tokens)
        check_db_down(w, http)
    finally:
        w.close(keep=tj.tap.n_failed > 0)
    tj.pf.finish()


if __name__ == "__main__":
    main()
