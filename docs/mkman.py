#!/usr/bin/env python3
"""mkman.py -- one man page from the Markdown pages of docs/, with pandoc.

    mkman.py --pandoc PANDOC --name NAME --version V --out FILE.1
             (--summary TEXT | --verbs-h cl_verbs.h)
             [--see-also NAME(S),...] PAGE.md...

The pages are the documentation as people read it on the web; this turns
them into a man page without a second copy to keep in step:

  - each page's title (its first line, '# ...') is dropped, and a NAME
    section 'NAME - SUMMARY' comes first, so whatis and apropos find it;
    the summary of a `parity` verb is its line in cl_verbs.h (--verbs-h,
    NAME being parity-VERB), the one table `parity --help` prints too;
  - what stands before a page's first section becomes DESCRIPTION (the
    first page's) or a section named after the page's title;
  - the first page's headings move up one level ('## Output' is the man
    section OUTPUT, '### Exit status' a subsection); a later page's
    sections are subsections of its own;
  - a link to another page of docs/ keeps only its text (a man page has
    nowhere to go); a link to a web address stays;
  - SEE ALSO lists --see-also.

Exit status 0, or 1 with one line on stderr naming the problem.
"""
import argparse
import os
import re
import subprocess
import sys

# pandoc's own Markdown, because only its pipe tables carry column widths
# (the gfm reader's give tbl equal narrow columns), less what GitHub's
# Markdown does not have and the pages do not mean: ~x~, ^x^, $math$,
# @citations, raw TeX, figures from images, curly quotes.
READER = ("markdown-subscript-superscript-tex_math_dollars-citations"
          "-raw_tex-implicit_figures-smart-definition_lists-example_lists"
          "-fancy_lists-line_blocks-yaml_metadata_block-pandoc_title_block")
LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^(```|~~~)")


def fail(msg):
    sys.stderr.write("mkman: %s\n" % msg)
    sys.exit(1)


def verb_summary(verbs_h, verb):
    try:
        with open(verbs_h, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        fail("%s: %s" % (verbs_h, e.strerror))
    for m in re.finditer(r'X\(\s*(\w+)\s*,\s*"((?:[^"\\]|\\.)*)"\s*\)', text):
        if m.group(1) == verb:
            return m.group(2)
    fail("%s: no verb %s in CL_VERBS" % (verbs_h, verb))


def man_name(page_dir, target):
    """The man page of a docs/ page a link names, or None."""
    path = os.path.normpath(os.path.join(page_dir, target.split("#")[0]))
    base = os.path.basename(path)
    parent = os.path.basename(os.path.dirname(path))
    if parent == "commands":
        return "parity(1)" if base == "README.md" else \
            "parity-%s(1)" % base[:-len(".md")]
    return {"agent.md": "parity-agent(1)",
            "collector.md": "parity-collector(1)"}.get(base)


def link_text(page_dir, m):
    """A link's text; a link whose text is a file name (compare.md) names
    the man page instead when there is one."""
    text, target = m.group(1), m.group(2)
    if re.match(r"^[a-z]+://", target):
        return m.group(0)
    if text.endswith(".md") and target.split("#")[0].endswith(".md"):
        return man_name(page_dir, target) or text
    return text


def split_row(line):
    cells = line.strip()
    if cells.startswith("|"):
        cells = cells[1:]
    if cells.endswith("|") and not cells.endswith("\\|"):
        cells = cells[:-1]
    return re.split(r"(?<!\\)\|", cells)


def size_tables(lines):
    """pandoc sizes a wide pipe table's columns by the dashes of its
    delimiter row; the pages write '|---|---|', which would give a short
    option the same width as its explanation. Rewrite each delimiter row
    with dashes in proportion to the column's longest cell."""
    i = 0
    while i + 1 < len(lines):
        if (lines[i].lstrip().startswith("|") and
                re.match(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$",
                         lines[i + 1])):
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            rows = [split_row(lines[k]) for k in [i] + list(range(i + 2, j))]
            delim = split_row(lines[i + 1])
            widths = [3] * len(delim)
            for row in rows:
                for c, cell in enumerate(row[:len(delim)]):
                    widths[c] = max(widths[c], len(cell.strip()))
            cells = []
            for c, d in enumerate(delim):
                d = d.strip()
                left, right = d.startswith(":"), d.endswith(":") and len(d) > 1
                cells.append((":" if left else "") +
                             "-" * min(widths[c], 60) + (":" if right else ""))
            lines[i + 1] = "|" + "|".join(cells) + "|"
            i = j
        else:
            i += 1
    return lines


def convert(path, first):
    """The page's Markdown with its title dropped and headings moved up.
    Text before the first heading goes under DESCRIPTION (first page) or
    a section named after the title."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    title = None
    if lines and lines[0].startswith("# "):
        title = lines[0][2:].strip().strip("`")
        lines = lines[1:]
    if first or not title:
        out = ["# DESCRIPTION"]
    else:
        out = ["# " + re.sub(r"\s*\(.*\)$", "", title).upper()]
    shift = 1 if first else 0
    def relink(m):
        return link_text(os.path.dirname(os.path.abspath(path)), m)
    in_code = False
    for line in lines:
        if FENCE.match(line):
            in_code = not in_code
            out.append(line)
            continue
        if in_code:
            out.append(line)
            continue
        h = HEADING.match(line)
        if h and len(h.group(1)) >= 2:
            level = len(h.group(1)) - shift
            text = LINK.sub(relink, h.group(2))
            out.append("#" * level + " " + (text.upper() if level == 1
                                             else text))
            continue
        out.append(LINK.sub(relink, line))
    return "\n".join(size_tables(out))


def main():
    ap = argparse.ArgumentParser(add_help=True)
    ap.add_argument("--pandoc", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--summary")
    ap.add_argument("--verbs-h")
    ap.add_argument("--see-also", default="")
    ap.add_argument("pages", nargs="+")
    a = ap.parse_args()

    if a.summary:
        summary = a.summary
    elif a.verbs_h:
        if not a.name.startswith("parity-"):
            fail("--verbs-h needs a NAME of the form parity-VERB, not %s"
                 % a.name)
        summary = verb_summary(a.verbs_h, a.name[len("parity-"):])
    else:
        fail("one of --summary or --verbs-h is needed")

    parts = ["# NAME", "", "%s - %s" % (a.name, summary), ""]
    for i, page in enumerate(a.pages):
        parts.append(convert(page, i == 0))
        parts.append("")
    see = [s for s in a.see_also.split(",") if s]
    if see:
        # parity(1) -> **parity**(1), the man convention
        parts += ["# SEE ALSO", "",
                  ", ".join(re.sub(r"^([^(]+)", r"**\1**", s) for s in see),
                  ""]
    parts += ["The Markdown pages these come from are in "
              "/usr/share/doc/parity.", ""]
    md = "\n".join(parts)

    cmd = [a.pandoc, "--from", READER, "--to", "man", "--standalone",
           "--metadata", "title=" + a.name.upper(),
           "--metadata", "section=1",
           "--metadata", "header=Parity Manual",
           "--metadata", "footer=parity " + a.version]
    try:
        p = subprocess.run(cmd, input=md.encode("utf-8"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        fail("%s: %s" % (a.pandoc, e.strerror))
    if p.returncode != 0:
        fail("%s failed (status %d): %s" % (a.pandoc, p.returncode,
             p.stderr.decode("utf-8", "replace").strip()))
    tmp = a.out + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(p.stdout)
        os.replace(tmp, a.out)
    except OSError as e:
        fail("%s: %s" % (a.out, e.strerror))


if __name__ == "__main__":
    main()
