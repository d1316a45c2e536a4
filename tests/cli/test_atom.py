#!/usr/bin/env python3
"""test_atom.py -- the site's Atom feed of regressions (regressions.xml),
emitting TAP.

tests/cli/site_render ($SITE_RENDER) writes the site of the fixture
($SITE_FIXTURE) and of variations of it; no collector is needed. Each
feed is validated with xmllint against tests/cli/atom.rng (RFC 4287's
rules for the elements Parity writes), then read: which events are
entries (regressions, open or acknowledged; not a win, not within
noise), their order (newest first, an acknowledgement counts as an
update), their ids, titles, dates and summaries exactly, that each link
leads to a row of index.html, that index.html announces the feed, that
a name with markup or control bytes stays well-formed, the cap of 100
entries, and that the schema does refuse a broken feed.
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "helpers"))
import parity_fixtures as pf  # noqa: E402
from parity_fixtures import ok, bail, plan  # noqa: E402

RENDER = os.environ.get("SITE_RENDER", "")
FIXTURE = os.environ.get("SITE_FIXTURE", "")
SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "atom.rng")
A = "{http://www.w3.org/2005/Atom}"


def render(tmp, doc, name):
    path = os.path.join(tmp, name + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    site = os.path.join(tmp, name)
    p = subprocess.run([RENDER, path, site], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        bail("site-render %s: %s" % (name, p.stderr.strip()))
    return site


def validate(path):
    return pf.xmllint(path, "--relaxng", SCHEMA)


def entries(path):
    root = ET.parse(path).getroot()
    out = []
    for e in root.findall(A + "entry"):
        out.append({k: e.find(A + k).text for k in
                    ("id", "title", "updated", "published", "summary")} |
                   {"href": e.find(A + "link").get("href")})
    return root, out


def check_fixture(tmp, data):
    site = render(tmp, data, "site")
    feed = os.path.join(site, "regressions.xml")
    rc, err = validate(feed)
    ok(rc == 0, "the fixture's feed validates against atom.rng (%s)" % err)
    root, es = entries(feed)
    ok([e["id"] for e in es] == ["urn:parity:event:21", "urn:parity:event:20",
                                 "urn:parity:event:17"],
       "entries: the three regression events, newest first (the "
       "acknowledgement of 20 counts as its update), not the win (19) nor "
       "the step within noise (18): %s" % [e["id"] for e in es])
    ok(es[0]["title"] == 'slower: long <run> & "odd" (new vs old) on 1 of 2 '
       "hosts, ratio x1.120" and
       es[1]["title"].endswith("ratio x1.050 (acknowledged)"),
       "titles: direction, benchmark, arms, hosts, change (%s)" %
       [e["title"] for e in es[:2]])
    ok(es[2]["summary"] == "slower on h1 between commit=c007 branch=main and "
       "commit=c008 branch=main: ratio x1.080, loss; variables lines=10." and
       es[1]["summary"].endswith("; acknowledged: known: new allocator."),
       "summaries: hosts, commit range, change, outcome, variables, the "
       "acknowledgement's note (%s)" % es[2]["summary"])
    ok(es[2]["published"] == es[2]["updated"] == "2026-12-08T00:53:20Z" and
       es[1]["published"] == "2026-12-03T00:53:20Z" and
       es[1]["updated"] == "2026-12-20T00:53:20Z" and
       root.find(A + "updated").text == es[0]["updated"],
       "dates: published is the first run after the step, updated the "
       "newest change (the ack), the feed's its newest entry's")
    index = open(os.path.join(site, "index.html"), encoding="utf-8").read()
    ok([e["href"] for e in es] == ["index.html#event-21", "index.html#cp-20",
                                   "index.html#event-17"] and
       all(('id="%s"' % e["href"].split("#")[1]) in index for e in es),
       "each entry links to its row of index.html (an open event's row, "
       "an acknowledged one's change point)")
    ok('<link rel="alternate" type="application/atom+xml" title="Parity: '
       'regressions" href="regressions.xml">' in index,
       "index.html announces the feed")
    return feed


def check_variations(tmp, data):
    empty = copy.deepcopy(data)
    empty["regressions"]["events"] = {"open": [], "acked": []}
    feed = os.path.join(render(tmp, empty, "empty"), "regressions.xml")
    rc, err = validate(feed)
    root, es = entries(feed)
    ok(rc == 0 and es == [] and root.find(A + "updated").text ==
       "2026-12-12T00:53:20Z",
       "no regression: a valid feed of no entry, updated at the site's "
       "time (%s)" % err)

    odd = copy.deepcopy(data)
    ev = odd["regressions"]["events"]["open"][1]
    ev["benchmark"] = "bad\x01name <x> & 'y'"
    ev["hosts"] = ["h\x02"]
    feed = os.path.join(render(tmp, odd, "odd"), "regressions.xml")
    rc, err = validate(feed)
    titles = [e["title"] for e in entries(feed)[1]] if rc == 0 else []
    ok(rc == 0 and "slower: bad?name <x> & 'y' (new vs old) on 1 of 2 hosts,"
       " ratio x1.080" in titles,
       "a control byte becomes ?, markup stays text: still valid (%s)" %
       err)

    many = copy.deepcopy(data)
    base = many["regressions"]["events"]["open"][1]
    lst = []
    for i in range(150):
        e = copy.deepcopy(base)
        e["id"] = 1000 + i
        e["members"] = [1000 + i]
        e["after"]["time_us"] = 1796691200000000 + i * 1000000
        lst.append(e)
    many["regressions"]["events"] = {"open": lst, "acked": []}
    feed = os.path.join(render(tmp, many, "many"), "regressions.xml")
    rc, err = validate(feed)
    ids = [e["id"] for e in entries(feed)[1]]
    ok(rc == 0 and len(ids) == 100 and ids[0] == "urn:parity:event:1149" and
       ids[-1] == "urn:parity:event:1050",
       "150 regressions: the newest 100 (%d, %s .. %s)" %
       (len(ids), ids[:1], ids[-1:]))


def check_schema_refuses(tmp, feed):
    text = open(feed, encoding="utf-8").read()
    broken = [
        ("an entry without updated", re.sub(
            r"<updated>[^<]*</updated>\n    <published>", "<published>",
            text, count=1)),
        ("a date without a zone", text.replace("T00:53:20Z", "T00:53:20",
                                               1)),
        ("a feed without an author", re.sub(r"  <author>.*?</author>\n",
                                            "", text, count=1)),
    ]
    for what, t in broken:
        path = os.path.join(tmp, "broken.xml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(t)
        rc, err = validate(path)
        ok(t != text and rc != 0, "the schema refuses %s" % what)


def main():
    if not RENDER or not os.access(RENDER, os.X_OK) or not FIXTURE:
        bail("SITE_RENDER and SITE_FIXTURE are not set (meson test sets "
             "them)")
    if not shutil.which("xmllint"):
        bail("xmllint is not installed (libxml2-utils, deploy/install.sh)")
    data = json.load(open(FIXTURE, encoding="utf-8"))
    tmp = tempfile.mkdtemp(prefix="parity-atom-")
    try:
        feed = check_fixture(tmp, data)
        check_variations(tmp, data)
        check_schema_refuses(tmp, feed)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return plan()


if __name__ == "__main__":
    sys.exit(main())
