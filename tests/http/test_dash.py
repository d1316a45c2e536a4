#!/usr/bin/env python3
"""test_dash.py BUILD_DIR -- the collector's live dashboard (TAP;
docs/http.md "The dashboard").

The world of test_http.py (a collector with --http and tokens,
fleet-feed's three hosts with a 10 % step at c07 of two benchmarks),
then:

- headless Chromium signs in with the login link (/login?token=T, a
  session cookie) and renders the overview, the hosts, the regressions
  and a benchmark's page: the hosts and events the database holds, the
  plots as inline SVG, links that stay the same, no console message;
- the overview and regressions pages reload themselves, a benchmark's
  page does not;
- a triage session acknowledges an event from its acknowledge page
  (the regressions page links it, and has nothing to type that its
  reload would lose; the page's form takes the note and does not
  reload), posting as the browser does (curl with the session's
  cookie), and `regressions` over the protocol says so; a form without
  the session's CSRF token, or from a read session, is refused with
  403, the page of one that is not open is a 404;
- a page without a session: 401 with the login hint; a bad login link:
  401; `next` never leaves the server; sign-out ends the session;
- the Atom feed of regressions;
- the static site (`parity report --site`) is still written, by the
  same code: its overview lists the same events.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_http as th  # noqa: E402

tj, ok, diag = th.tj, th.ok, th.diag
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def chromium(url, profile, timeout=90):
    """Headless Chromium on url: (rc, the DOM, its console lines)."""
    p = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--user-data-dir=" + profile,
         "--enable-logging=stderr", "--v=0", "--dump-dom", url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    err = p.stderr.decode("utf-8", "replace")
    console = [x for x in err.splitlines()
               if ":CONSOLE" in x or "Failed to load resource" in x or
               "net::ERR_" in x or "Refused to" in x]
    return p.returncode, p.stdout.decode("utf-8", "replace"), console


def login_url(http, token, nxt=None):
    u = "%s/login?token=%s" % (http.base, th.TOKENS[token][1])
    if nxt:
        from urllib.parse import quote
        u += "&next=" + quote(nxt, safe="")
    return u


def check_pages(w, http, profile):
    rc, dom, console = chromium(login_url(http, "ci"), profile)
    ok(rc == 0 and "<h1>Parity</h1>" in dom and not console,
       "Chromium: the login link leads to the overview, no console "
       "message (%s)" % console[:3])
    ok(all(">%s</td>" % h in dom for h in th.HOSTS) and
       '<meta http-equiv="refresh" content="30">' in dom and
       'href="/regressions"' in dom and 'href="/hosts"' in dom,
       "overview: every host, the navigation, reloads every 30 s")
    events = re.findall(r'<tr class="event" id="event-(\d+)"', dom)
    zst, z = th.raw_zmq(w, "regressions", {})
    want = sorted(str(e["id"]) for e in
                  z["change_points"]["events"]["open"])
    ok(sorted(events) == want and len(want) == 2,
       "overview: the open events the database holds, by id (%s, %s)"
       % (events, want))
    links = sorted(set(re.findall(r'href="(/bench/[^"]+)"', dom)))
    ok(links == ["/bench/b1?suite=fleet", "/bench/b2?suite=fleet"],
       "overview: a stable link per benchmark (%s)" % links)
    ok("<form" not in dom, "a read session sees no acknowledge form")
    rc, dom, console = chromium(login_url(
        http, "ci", "/bench/b1?suite=fleet"), profile)
    svgs = re.findall(r'<svg[^>]*class="history"', dom)
    ok(rc == 0 and len(svgs) == 3 and "b1" in dom and
       "http-equiv=\"refresh\"" not in dom and not console,
       "Chromium: the benchmark page of b1 draws 3 history plots as "
       "inline SVG (one per host), no reload, no console message (%d, %s)"
       % (len(svgs), console[:3]))
    rc, dom, console = chromium(login_url(http, "ci", "/hosts"), profile)
    ok(rc == 0 and all(">%s</td>" % h in dom for h in th.HOSTS) and
       not console, "Chromium: the hosts page lists h1 h2 h3")
    rc, dom, console = chromium(login_url(http, "ci", "/regressions"),
                                profile)
    ok(rc == 0 and sorted(re.findall(r'id="event-(\d+)"', dom)) == want
       and '<meta http-equiv="refresh" content="30">' in dom and
       not console, "Chromium: the regressions page: the same events, "
       "reloads itself")
    ok('class="ack"' not in dom, "a read session sees no acknowledge link")
    page = "/regressions/%s/ack" % (want[0] if want else "0")
    rc, dom, console = chromium(login_url(http, "ops", page), profile)
    ok(rc == 0 and re.search(r'<tr class="event" id="event-%s"' % (
        want[0] if want else "?"), dom) and re.search(
        r'<form class="note" method="post" action="%s">' % page, dom) and
       'name="note"' in dom and 'http-equiv="refresh"' not in dom and
       not console, "Chromium: a triage session's %s: the event's row, "
       "the note's form, no reload, no console message (%s)" % (
           page, console[:3]))
    return want


class Jar:
    """curl with a cookie jar: a browser's session, without the
    browser."""

    def __init__(self, root, name):
        self.path = os.path.join(root, name + ".cookies")

    def __call__(self, url, method="GET", data=None):
        cmd = ["curl", "-s", "-i", "-m", "30", "-b", self.path, "-c",
               self.path, "-X", method]
        if data is not None:
            cmd += ["--data-binary", data]
        r = subprocess.run(cmd + [url], capture_output=True, timeout=60)
        return th.parse(r.stdout)


def check_ack(w, http, events):
    ops = Jar(w.root, "ops")
    st, hdr, _ = ops(login_url(http, "ops"))
    cookie = hdr.get("set-cookie", "")
    ok(st == 303 and hdr.get("location") == "/" and
       re.match(r"parity_session=[0-9a-f]{64}; HttpOnly; SameSite=Strict; "
                r"Path=/; Max-Age=43200$", cookie),
       "the login link: 303 to /, a session cookie HttpOnly and "
       "SameSite=Strict (%s)" % cookie)
    st, _, page = ops(http.base + "/regressions")
    links = re.findall(r'<a class="ack" href="/regressions/(\d+)/ack">'
                       r'acknowledge&hellip;</a>', page)
    ok(st == 200 and set(links) >= set(events) and
       '<input type="text"' not in page,
       "a triage session: the regressions page links each open event's "
       "acknowledge page, and has nothing to type that its reload would "
       "lose (%s)" % links[:6])
    ev = events[0]
    st, hdr, page = ops(http.base + "/regressions/%s/ack" % ev)
    forms = re.findall(r'<form class="note" method="post" action="'
                       r'/regressions/%s/ack"><input type="hidden" '
                       r'name="csrf" value="([0-9a-f]{64})">' % ev, page)
    ok(st == 200 and len(forms) == 1 and 'id="event-%s"' % ev in page and
       "<h1>Acknowledge #%s</h1>" % ev in page and
       'http-equiv="refresh"' not in page,
       "the acknowledge page of event %s: its row and one form with the "
       "session's CSRF token, no reload" % ev)
    csrf = forms[0] if forms else ""
    st, _, body = ops(http.base + "/regressions/%s/ack" % ev, "POST",
                      "csrf=0&note=known+from+the+page")
    ok(st == 403 and "CSRF token is not this session" in body,
       "a form without the session's CSRF token: 403")
    st, hdr, _ = ops(http.base + "/regressions/%s/ack" % ev, "POST",
                     "csrf=%s&note=known+from+the+page" % csrf)
    ok(st == 303 and hdr.get("location") == "/regressions#event-%s" % ev,
       "the form with it: 303 back to /regressions#event-%s" % ev)
    zst, z = th.raw_zmq(w, "regressions", {})
    acked = {str(e["id"]): e for e in z["change_points"]["events"]["acked"]}
    members = z["change_points"]["acked"]
    ok(ev in acked and all(c["ack"]["note"] == "known from the page"
                           for c in members),
       "`regressions` over ZeroMQ: event %s acked with the page's note" % ev)
    st, _, body = ops(http.base + "/regressions/%s/ack" % ev)
    ok(st == 404 and "no open change point or event #%s (the acknowledged "
       "ones are reopened from /regressions)" % ev in body,
       "the acknowledge page of one acked: 404 saying where it is")
    st, _, page = ops(http.base + "/regressions")
    ok(re.search(r'action="/regressions/%s/unack"' % re.escape(
        str(members[0]["id"]) if members else "?"), page) is not None,
       "the regressions page offers to reopen what was acked")
    ci = Jar(w.root, "ci")
    ci(login_url(http, "ci"))
    st, _, body = ci(http.base + "/regressions/%s/ack" % events[-1])
    ok(st == 403 and "acknowledging needs the session of a triage token "
       "(its login link)" in body,
       "a read session's acknowledge page: 403")
    st, _, body = ci(http.base + "/regressions/%s/unack" % ev, "POST",
                     "csrf=" + csrf)
    ok(st == 403, "a read session posting a triage session's CSRF token: "
       "403")
    st, hdr, body = ops(http.base + "/logout")
    ok(st == 200 and "Max-Age=0" in hdr.get("set-cookie", ""),
       "sign-out: the cookie is cleared")
    st, _, body = th.Http(http.base)("/regressions")
    ok(st == 401 and "/login?token=TOKEN" in body,
       "a page without a session: 401 with the login hint")


def check_login_edges(http):
    get = th.Http(http.base)
    st, _, body = get("/login?token=not-a-token-at-all")
    ok(st == 401 and "the token is not in the collector&#39;s tokens file"
       in body, "a login link with a wrong token: 401")
    st, _, body = get("/login")
    ok(st == 401 and "/login?token=TOKEN" in body,
       "a login link without its token: 401")
    for nxt, want in (("//evil.example/x", "/"), ("https://evil/", "/"),
                      ("/hosts", "/hosts")):
        st, hdr, _ = get("/login?token=%s&next=%s"
                         % (th.TOKENS["ci"][1], nxt))
        ok(st == 303 and hdr.get("location") == want,
           "next=%s goes to %s (%s)" % (nxt, want, hdr.get("location")))
    st, hdr, body = get("/regressions", "ci", "DELETE")
    ok(st == 405, "DELETE of a page: 405")
    st, hdr, body = get("/nowhere", "ci")
    ok(st == 404 and "no such page: /nowhere" in body, "an unknown page: "
       "404")
    st, hdr, body = get("/bench/zzz?suite=fleet", "ci")
    ok(st == 404 and 'no series of benchmark &quot;zzz&quot; in suite '
       '&quot;fleet&quot;' in body,
       "a benchmark without series: 404")
    st, hdr, body = get("/regressions.xml", "ci")
    ok(st == 200 and hdr.get("content-type", "").startswith(
        "application/atom+xml") and body.count("<entry>") == 2 and
       body.count('href="/regressions#') == 2,
       "the Atom feed: an entry per regression event, open or acknowledged, "
       "linking into /regressions (%d)" % body.count("<entry>"))


def check_site(w):
    out = tempfile.mkdtemp(prefix="parity-dash-site-")
    try:
        r = w.parity("report", "--site", os.path.join(out, "site"),
                     timeout=120)
        path = os.path.join(out, "site", "index.html")
        page = open(path).read() if os.path.exists(path) else ""
        ok(r.returncode == 0 and len(re.findall(
            r'<tr class="event" id="event-\d+"', page)) == 1 and
           'href="bench-0001-b1.html"' in page,
           "parity report --site still writes the static site, by the "
           "same code: its events (one open now), its own file links "
           "(%d)" % r.returncode) or diag(r.stderr[-300:])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    w = tj.World()
    profile = tempfile.mkdtemp(prefix="parity-dash-chromium-")
    try:
        for h in th.HOSTS:
            w.keygen(h, allow=True)
        tokens = os.path.join(w.root, "tokens")
        th.write_tokens(tokens, list(th.TOKENS))
        http = th.start(w, "--http-tokens", tokens, "--http-rate", "0")
        ok(th.feed(w, th.plan(["b1", "b2"], 7)), "fleet-feed: 3 hosts, 12 "
           "commits, 2 benchmarks with a 10 % step at c07")
        ok(th.wait(lambda: w.psql("SELECT count(*) FROM change_points")
                   == "6", 60), "the six change points are found")
        if os.access(CHROMIUM, os.X_OK):
            events = check_pages(w, http, profile)
        else:
            tj.pf.skip("the pages in Chromium", "no " + CHROMIUM)
            zst, z = th.raw_zmq(w, "regressions", {})
            events = sorted(str(e["id"]) for e in
                            z["change_points"]["events"]["open"])
        check_ack(w, http, events)
        check_login_edges(http)
        check_site(w)
        log = th.log_text(w)
        ok("path=\"/login\"" in log and not any(
            tok in log for _, tok in th.TOKENS.values()),
           "the log has the logins, never a login link's query string or "
           "any token")
    finally:
        shutil.rmtree(profile, ignore_errors=True)
        w.close(keep=tj.tap.n_failed > 0)
    tj.pf.finish()


if __name__ == "__main__":
    main()
