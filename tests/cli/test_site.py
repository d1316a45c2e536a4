#!/usr/bin/env python3
"""test_site.py -- `parity report --site` as a person sees it, in Debian's
headless Chromium, emitting TAP.

tests/cli/site_render ($SITE_RENDER) writes the site of the fixture
($SITE_FIXTURE, the document cl_site_write takes) and the single-job HTML
report of its "report_job" into a temporary directory; no collector is
needed. Chromium ($CHROMIUM, default /usr/bin/chromium) loads each page
from file:// and the test reads the DOM it built (--dump-dom) and its
console (--enable-logging=stderr):

  - every plot is there with the number of points, change points and
    environment marks the fixture gives (counting SVG elements by class),
    capped at 200 runs with the page saying so;
  - outcome colours: the class of every verdict cell and ratio point, and
    the colour Chromium computed for them (a copy of the page with a
    probe script appended reports getComputedStyle);
  - no console message at all (the pages have no script, so any message
    is an error or a failed load), checked to work on a page that makes
    one;
  - no external URL: no src or href that names a scheme or a host, and
    every link leads to a file of the site.

Screenshots of the overview and a benchmark page are kept in $SITE_OUT
(meson's build dir for tests/cli) and their paths printed. Without
Chromium the whole test is a TAP skip that says why.
"""
import html.parser
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
from parity_fixtures import ok, plan, skip  # noqa: E402

RENDER = os.environ.get("SITE_RENDER", "")
FIXTURE = os.environ.get("SITE_FIXTURE", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "site_fixture.json"))
OUTDIR = os.environ.get("SITE_OUT") or os.getcwd()
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
MAX_POINTS = 200      # CO_SVG_MAX_POINTS
BOX_RUNS = 5          # CO_PAGE_BOX_RUNS
COLOURS = {           # cl_report_outcome_colour, and the site's CSS
    "svg": {"win": "rgb(46, 125, 50)", "parity": "rgb(117, 117, 117)",
            "loss": "rgb(198, 40, 40)"},
    "cell": {"win": "rgb(200, 230, 201)", "parity": "rgb(238, 238, 238)",
             "loss": "rgb(255, 205, 210)"},
}


# --- the DOM as Chromium serialised it ------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
        "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, dict(attrs), parent
        self.children, self.text = [], ""

    @property
    def classes(self):
        return set((self.attrs.get("class") or "").split())

    def all(self, tag=None, cls=()):
        out = []
        for c in self.children:
            if (tag is None or c.tag == tag) and set(cls) <= c.classes:
                out.append(c)
            out.extend(c.all(tag, cls))
        return out

    def first(self, tag=None, cls=()):
        found = self.all(tag, cls)
        return found[0] if found else None

    def alltext(self):
        return self.text + "".join(c.alltext() for c in self.children)


class Tree(html.parser.HTMLParser):
    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.cur = self.root
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.text += data


# --- Chromium -------------------------------------------------------------

def chromium(url, extra, timeout=90):
    """Run headless Chromium on url with a new profile; (rc, stdout,
    stderr)."""
    profile = tempfile.mkdtemp(prefix="parity-site-chromium-")
    try:
        p = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-quic", "--no-first-run",
             "--disable-background-networking",
             "--disable-component-update", "--disable-sync",
             "--user-data-dir=" + profile, "--enable-logging=stderr",
             "--v=0"] + extra + [url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        return (p.returncode, p.stdout.decode("utf-8", "replace"),
                p.stderr.decode("utf-8", "replace"))
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def console_lines(stderr):
    """What the page said on its console, or failed to load."""
    return [l for l in stderr.splitlines()
            if ":CONSOLE" in l or "Failed to load resource" in l or
            "net::ERR_" in l or "Refused to" in l]


def dump(path):
    rc, out, err = chromium("file://" + path, ["--dump-dom"])
    return rc, out, console_lines(err), err


PROBE = """<script>
(function () {
  var out = [];
  document.querySelectorAll("td.win,td.parity,td.loss").forEach(function (e) {
    out.push(["cell", e.className, getComputedStyle(e).backgroundColor]);
  });
  document.querySelectorAll("circle.ratio").forEach(function (e) {
    out.push(["svg", e.getAttribute("class"), getComputedStyle(e).fill]);
  });
  var pre = document.createElement("pre");
  pre.id = "site-test-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def computed(path):
    """The colours Chromium computed for the outcome cells and ratio
    points of a copy of path with PROBE appended."""
    copy = os.path.join(os.path.dirname(path),
                        "probe-" + os.path.basename(path))
    text = open(path, encoding="utf-8").read()
    with open(copy, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", PROBE + "</body>"))
    try:
        rc, out, _console, err = dump(copy)
    finally:
        os.unlink(copy)
    pre = [n for n in Tree(out).root.all("pre")
           if n.attrs.get("id") == "site-test-probe"]
    if rc != 0 or not pre:
        return None, err
    return json.loads(pre[0].text), ""


# --- what the fixture says the pages must show ----------------------------

def worst_first(cps):
    def key(cp):
        m = cp["magnitude"]
        return (not cp["regression"], cp["outcome"] != "loss",
                -(abs(math.log(m)) if m > 0 else 0))
    return sorted(cps, key=key)


def expect_history(ser):
    runs = ser["runs"]
    total = len(runs)
    shown = min(total, MAX_POINTS)
    first = total - shown
    drawn = runs[first:]
    return {
        "total": total, "shown": shown, "first": first,
        "subject": sum(1 for r in drawn if r["subject"] is not None),
        "other": sum(1 for r in drawn if r["other"] is not None),
        "ratio": [r["outcome"] for r in drawn if r["ratio"] is not None],
        "cp": [c["outcome"] for c in ser["change_points"]
               if first <= c["index"] < total],
        "ann": [a["kind"] for a in ser["annotations"]
                if first <= a["index"] < total],
        "tags": ["commit=" + r["tags"]["commit"] for r in drawn],
    }


def check_history(svg, ser, label):
    e = expect_history(ser)
    if not ok(svg is not None, "%s: a history plot" % label):
        return
    ok(svg.attrs.get("data-runs") == str(e["total"]) and
       svg.attrs.get("data-shown") == str(e["shown"]),
       "%s: %d runs, %d drawn" % (label, e["total"], e["shown"]),
       svg.attrs)
    sub = svg.all("circle", ("pt", "subject"))
    oth = svg.all("circle", ("pt", "other"))
    rat = svg.all("circle", ("pt", "ratio"))
    ok(len(sub) == e["subject"] and len(oth) == e["other"],
       "%s: %d subject and %d other median points" %
       (label, e["subject"], e["other"]), (len(sub), len(oth)))
    got = [next(iter(c.classes - {"pt", "ratio"}), "") for c in rat]
    ok(got == e["ratio"], "%s: %d ratio points, each coloured by its "
       "outcome" % (label, len(e["ratio"])), (got[:10], e["ratio"][:10]))
    fills = {next(iter(c.classes - {"pt", "ratio"}), ""):
             c.attrs.get("fill") for c in rat}
    ok(all(fills[o] == {"win": "#2e7d32", "parity": "#757575",
                        "loss": "#c62828"}[o] for o in fills),
       "%s: ratio points filled green, grey, red" % label, fills)
    cps = svg.all("line", ("cp",))
    got = [next(iter(c.classes & {"win", "parity", "loss"}), "")
           for c in cps]
    ok(got == e["cp"], "%s: %d change point(s) marked: %s" %
       (label, len(e["cp"]), " ".join(e["cp"]) or "none"), got)
    anns = svg.all("line", ("ann",))
    got = [next(iter(c.classes - {"ann"}), "") for c in anns]
    ok(got == e["ann"], "%s: %d environment mark(s)" %
       (label, len(e["ann"])), got)
    hits = svg.all("rect", ("hit",))
    titles = [c.first("title").alltext() if c.first("title") else ""
              for c in hits]
    ok(len(titles) == e["shown"] and
       all(w in t for w, t in zip(e["tags"], titles)),
       "%s: every run's column has hover text with its tags" % label,
       titles[:2])
    ok(len(svg.all("polygon", ("band",))) == 2 and
       len(svg.all("polyline", ("median",))) == 2,
       "%s: a min-max band and a median line per arm" % label)


def check_boxes(boxes, ser, label):
    runs = ser["runs"]
    k = min(len(runs), BOX_RUNS)
    newest = list(reversed(runs))[:k]
    ok(len(boxes) == k, "%s: box plots of the newest %d runs" % (label, k),
       len(boxes))
    good = True
    for svg, run in zip(boxes, newest):
        arms = svg.all("g", ("arm",))
        iqr = svg.all("rect", ("iqr",))
        ratio = svg.all("circle", ("ratio",))
        tol = svg.all("rect", ("tol",))
        want_ratio = [run["outcome"]] if run["ratio"] is not None else []
        present = [run["subject"], run["other"]]
        if (len(arms) != 2 or
                len(iqr) != sum(1 for s in present if s is not None) or
                [next(iter(c.classes - {"ratio"}), "") for c in ratio] !=
                want_ratio or len(tol) != len(want_ratio)):
            good = False
            print("# box of %s: arms %d iqr %d ratio %s tol %d" %
                  (run["run"], len(arms), len(iqr),
                   [c.attrs.get("class") for c in ratio], len(tol)))
    ok(good, "%s: each box plot has both arms, and the ratio with its "
       "tolerance band when there is a verdict" % label)


# --- the pages --------------------------------------------------------------

def external(text):
    """src/href values (raw HTML) that name a scheme or a host."""
    return re.findall(r"""\b(?:src|href|xlink:href)\s*=\s*["']?\s*"""
                      r"""((?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)[^"'\s>]*)""", text)


def check_static(site, report):
    pages = sorted(p for p in os.listdir(site) if p.endswith(".html"))
    bad, broken = [], []
    for p in pages + [report]:
        path = p if os.path.isabs(p) else os.path.join(site, p)
        text = open(path, encoding="utf-8").read()
        bad += ["%s: %s" % (p, u) for u in external(text)]
        if "<script" in text or "@import" in text or "url(" in text:
            bad.append("%s: a script or a CSS load" % p)
        for href in re.findall(r'href="([^"]*)"', text):
            if not os.path.isfile(os.path.join(site, href)):
                broken.append("%s -> %s" % (p, href))
    ok(not bad, "no page loads or links anything outside the site "
       "(no http://, https:// or // in src or href, no script)", bad)
    ok(not broken, "every link leads to a page of the site", broken)
    return pages


def check_dir_rules(tmp):
    full = os.path.join(tmp, "occupied")
    os.mkdir(full)
    open(os.path.join(full, "notes.txt"), "w").write("mine\n")
    p = subprocess.run([RENDER, FIXTURE, full], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    err = p.stderr.decode()
    ok(p.returncode == 1 and "refusing to write into it" in err and
       os.listdir(full) == ["notes.txt"],
       "a non-empty directory that is not a site is refused, untouched",
       err)


def check_index(site, data):
    path = os.path.join(site, "index.html")
    rc, out, console, err = dump(path)
    if not ok(rc == 0 and "<h1>" in out,
              "Chromium renders the overview", err[-2000:]):
        return None
    ok(not console, "overview: no console message", console)
    root = Tree(out).root
    rows = root.first("table", ("hosts",)).all("tr")[1:]
    states = {r.all("td")[0].alltext(): r.all("td")[1] for r in rows}
    want = {h["name"]: "online" if h["online"] else "offline"
            for h in data["hosts"]["hosts"]}
    ok({k: next(iter(v.classes)) for k, v in states.items()} == want and
       all(v.alltext() == want[k] for k, v in states.items()),
       "overview: every host with its state (%s)" %
       ", ".join("%s %s" % kv for kv in sorted(want.items())))
    table = root.first("table", ("open",))
    cells = [r.all("td") for r in table.all("tr")[1:]] if table else []
    # Within noise: folded into the series, not on the front page.
    expect = worst_first([c for c in data["regressions"]["open"]
                          if not c["within_noise"]])
    got = [(c[1].alltext(), c[2].alltext(), next(iter(c[0].classes)))
           for c in cells]
    want = [(cp["benchmark"], cp["host"], cp["outcome"]) for cp in expect]
    ok(got == want, "overview: open change points worst first, each cell "
       "classed by its outcome", (got, want))
    ids = [c[0].alltext().split()[0] for c in cells]
    ok(ids == ["#%d" % cp["id"] for cp in expect],
       "overview: each change point with its id, as parity regressions and "
       "history show it (%s)" % ids)
    # The events first, as the collector sorted them, with the same
    # host count as their change points.
    table = root.first("table", ("events",))
    cells = [r.all("td") for r in table.all("tr")[1:]] if table else []
    got = [(c[1].alltext(), c[6].alltext(), next(iter(c[0].classes)))
           for c in cells]
    events = data["regressions"]["events"]["open"]
    want = [(e["benchmark"], "%d of %d: %s" % (
        e["hosts_with_step"], e["hosts_total"], ", ".join(e["hosts"])),
        e["outcome"]) for e in events if not e["within_noise"]]
    noise = root.first("p", ("noise",))
    ok(got == want and len(want) == len(expect) and noise is not None and
       noise.alltext() == "%d within noise, on their benchmarks' pages." %
       sum(e["within_noise"] for e in events),
       "overview: the open events, one row each with its hosts; those "
       "within noise counted", (got, want))
    acked = root.first("table", ("acked",))
    ok(acked is not None and len(acked.all("tr")) - 1 ==
       len(data["regressions"]["acked"]) and
       data["regressions"]["acked"][0]["ack"]["note"] in acked.alltext(),
       "overview: acknowledged change points apart, with their note")
    latest = root.first("table", ("latest",))
    hosts = [h["host"] for h in data["latest"]["hosts"]]
    good, seen = latest is not None, []
    for r, cmp in zip(latest.all("tr")[1:] if latest else [],
                      data["latest"]["comparisons"]):
        tds = r.all("td")[2:2 + len(hosts)]
        for h, td in zip(hosts, tds):
            e = [x for x in cmp["hosts"] if x["host"] == h]
            v = e[0].get("verdict") if e else None
            want_cls = v["outcome"] if v else "none"
            seen.append((cmp["benchmark"], h, want_cls))
            if td.classes != {want_cls} or (
                    v and not td.alltext().startswith(v["outcome"])):
                good = False
                print("# %s %s: class %s text %r, want %s" %
                      (cmp["benchmark"], h, td.classes, td.alltext(),
                       want_cls))
    ok(good and len(seen) == len(hosts) *
       len(data["latest"]["comparisons"]),
       "overview: the latest job's cells follow the outcome (%s)" %
       ", ".join("%s/%s %s" % s for s in seen))
    links = [a.attrs["href"] for a in
             root.first("ul", ("benchmarks",)).all("a")]
    return links


def check_colours(site, page):
    got, err = computed(os.path.join(site, page))
    if not ok(got is not None, "%s: the probe read computed colours" % page,
              err[-1500:]):
        return
    bad = []
    for kind, cls, colour in got:
        outcome = next((o for o in ("win", "parity", "loss")
                        if o in cls.split()), None)
        if outcome and COLOURS[kind][outcome] != colour:
            bad.append((kind, cls, colour))
    kinds = sorted(set((k, next((o for o in ("win", "parity", "loss")
                                 if o in c.split()), "")) for k, c, _ in got))
    ok(got and not bad, "%s: Chromium paints %s" % (page, ", ".join(
        "%s %s" % k for k in kinds)), bad)


def check_bench_pages(site, links, data):
    groups = []
    for ser in data["series"]["series"]:
        key = (ser["suite"], ser["benchmark"])
        if not groups or key not in [g[0] for g in groups]:
            groups.append((key, []))
        [g for g in groups if g[0] == key][0][1].append(ser)
    ok(len(links) == len(groups), "overview: one page per benchmark (%d)" %
       len(groups), links)
    for link, (key, series) in zip(links, groups):
        path = os.path.join(site, link)
        rc, out, console, err = dump(path)
        if not ok(rc == 0, "Chromium renders %s" % link, err[-1500:]):
            continue
        ok(not console, "%s: no console message" % link, console)
        root = Tree(out).root
        ok(key[1] in root.first("h1").alltext(), "%s: titled %s" %
           (link, key[1]))
        sections = root.all("section", ("series",))
        ok(len(sections) == len(series), "%s: %d series" %
           (link, len(series)))
        for sec, ser in zip(sections, series):
            label = "%s on %s" % (ser["benchmark"], ser["host"])
            check_history(sec.first("svg", ("history",)), ser, label)
            capped = len(ser["runs"]) > MAX_POINTS
            note = "newest %d of %d runs" % (MAX_POINTS, len(ser["runs"]))
            ok((note in sec.alltext()) == capped,
               "%s: %s" % (label, "the page says the plot is capped"
                           if capped else "no cap note"))
            check_boxes(sec.all("svg", ("boxplot",)), ser, label)


def check_report(path, data):
    rc, out, console, err = dump(path)
    if not ok(rc == 0, "Chromium renders the --html report", err[-1500:]):
        return
    ok(not console, "--html report: no console message", console)
    root = Tree(out).root
    boxes = root.all("svg", ("boxplot",))
    runs = data["report_job"]["report"]["run_list"]
    ok(len(boxes) == len(runs), "--html report: a box plot per run (%d)" %
       len(runs), len(boxes))
    want, got = [], []
    for svg, run in zip(boxes, runs):
        cmp = [c for c in data["latest"]["comparisons"]
               if c["benchmark"] == run["benchmark"]]
        e = [x for c in cmp for x in c["hosts"]
             if x["host"] == run["host"] and x.get("verdict")]
        want.append((len(run["arms"]), [x["verdict"]["outcome"]
                                        for x in e]))
        got.append((len(svg.all("g", ("arm",))),
                    [next(iter(c.classes - {"ratio"}), "")
                     for c in svg.all("circle", ("ratio",))]))
    ok(got == want, "--html report: every arm's box, the verdict's ratio "
       "in its outcome colour", (got, want))


def screenshot(site, page, name):
    shot = os.path.join(OUTDIR, name)
    if os.path.exists(shot):
        os.unlink(shot)
    rc, _out, err = chromium("file://" + os.path.join(site, page),
                             ["--screenshot=" + shot,
                              "--window-size=1280,2000",
                              "--hide-scrollbars"])
    good = rc == 0 and os.path.exists(shot) and \
        open(shot, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    ok(good, "screenshot of %s" % page, err[-1500:])
    if good:
        print("# screenshot: %s" % shot)


def console_works(tmp):
    """The console check must see a page that errs, or it proves
    nothing."""
    page = os.path.join(tmp, "noisy.html")
    with open(page, "w") as f:
        f.write('<!DOCTYPE html><html><body><p>x</p>'
                '<script>console.error("site-test-probe")</script>'
                '<img src="missing.png"></body></html>')
    _rc, _out, console, err = dump(page)
    ok(any("site-test-probe" in l for l in console),
       "the console check sees a page's console.error", err[-1500:])


# (arguments, exit status, stderr) of `parity report` that need no
# collector: the option rules of --site.
USAGE = [
    (["--site", "d", "--latest"], 2, "parity report: --site writes a whole "
     "site: give it without JOB, --latest, --markdown, --html, --out or "
     "--metric"),
    (["--latest", "--since", "3d"], 2,
     "parity report: --since and --tag go with --site"),
    (["--site", "d", "--metric", "cpu"], 2, "parity report: --site writes a "
     "whole site: give it without JOB, --latest, --markdown, --html, --out "
     "or --metric"),
    (["--metric", "rss"], 2, "parity report: --metric rss: want wall, cpu "
     "or peak_rss"),
    (["--site"], 2, "parity report: --site needs a directory"),
    (["--site="], 2, "parity report: --site needs a directory"),
    (["--site", "d", "--since", "400d"], 2, 'parity report: --since "400d": '
     "want a duration up to 366d (90s, 10m, 2h, 3d, 2w)"),
    (["--site", "d", "--tag", "nokey"], 2,
     'parity report: --tag "nokey": want KEY=VALUE'),
    (["--bogus"], 2,
     'parity report: unexpected argument "--bogus" (parity report --help)'),
]


def check_usage():
    parity = os.environ.get("PARITY", "")
    if not parity or not os.access(parity, os.X_OK):
        ok(True, "parity report's --site options # SKIP PARITY is not set")
        return
    for args, status, msg in USAGE:
        p = subprocess.run([parity, "report"] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        err = p.stderr.decode().strip()
        ok(p.returncode == status and err == msg, "report %s: %d %s" %
           (" ".join(args), status, msg), "%d %s" % (p.returncode, err))


def main():
    check_usage()
    if not os.access(CHROMIUM, os.X_OK):
        skip("the site in a browser", "%s not found: install Debian's "
             "chromium (deploy/install.sh does)" % CHROMIUM)
        return plan()
    if not RENDER or not os.access(RENDER, os.X_OK):
        skip("the site in a browser", "SITE_RENDER is not set to the "
             "site-render program (meson test sets it)")
        return plan()
    data = json.load(open(FIXTURE, encoding="utf-8"))
    tmp = tempfile.mkdtemp(prefix="parity-site-")
    try:
        site = os.path.join(tmp, "site")
        report = os.path.join(tmp, "report.html")
        p = subprocess.run([RENDER, FIXTURE, site, report],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if not ok(p.returncode == 0 and
                  os.path.isfile(os.path.join(site, "index.html")),
                  "site-render writes the site", p.stderr.decode()):
            return plan()
        p = subprocess.run([RENDER, FIXTURE, site], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        ok(p.returncode == 0, "a site is rewritten in place (its marker "
           "file allows it)", p.stderr.decode())
        check_dir_rules(tmp)
        check_static(site, report)
        console_works(tmp)
        links = check_index(site, data) or []
        check_colours(site, "index.html")
        check_bench_pages(site, links, data)
        if links:
            check_colours(site, links[0])
        check_report(report, data)
        screenshot(site, "index.html", "site-index.png")
        if links:
            screenshot(site, links[0], "site-bench.png")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return plan()


if __name__ == "__main__":
    sys.exit(main())
