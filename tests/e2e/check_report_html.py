#!/usr/bin/python3
"""Checks that a report.html is a well-formed, self-contained page and prints what it holds.

usage: check_report_html.py REPORT.html [--min-svg N] [--expect-text TEXT ...] [--reject-text TEXT ...]

Checked: UTF-8; starts with <!DOCTYPE html>; every element is closed, in order (void elements
aside; SVG elements may self-close); no script, iframe, object, embed, img, link or base
element, no attribute that loads anything (src, or an href/xlink:href that is not a #fragment),
no url( or @import in CSS, no event handler attribute (on...); the legend has one item per cause
(9) with its colour; at least N inline <svg> charts (default 5); the sections of the report are
there. Prints a JSON summary (legend causes and colours, counts) on stdout; exit 1 with the
problems on stderr.
"""
import json
import re
import sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
FORBIDDEN = {"script", "iframe", "object", "embed", "img", "link", "base", "frame", "applet", "audio", "video"}
SECTIONS = ["summary", "suggestions", "units", "ops", "layers", "chips", "time", "critical", "stalls", "dmas"]


class Checker(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.problems, self.counts = [], [], {}
        self.legend, self.in_legend, self.ids = [], 0, set()
        self.text = []

    def where(self):
        return "line %d col %d" % self.getpos()

    def handle_starttag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1
        if tag in FORBIDDEN:
            self.problems.append("%s: <%s> element" % (self.where(), tag))
        for k, v in attrs:
            v = v or ""
            if k == "src" or k.startswith("on") or (k in ("href", "xlink:href", "action") and not v.startswith("#")):
                self.problems.append("%s: <%s %s=%r> loads or runs something" % (self.where(), tag, k, v))
            if k == "style" and ("url(" in v or "expression(" in v):
                self.problems.append("%s: url() in a style attribute" % self.where())
            if k == "id":
                self.ids.add(v)
        a = dict(attrs)
        if tag == "div" and a.get("class") == "legend":
            self.in_legend = len(self.stack) + 1
        if self.in_legend and tag == "span" and "data-cause" in a:
            self.legend.append({"cause": a["data-cause"], "color": a.get("data-color", "")})
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        # <x/>: SVG elements self-close; an HTML element must not
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            self.problems.append("%s: </%s> for a void element" % (self.where(), tag))
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append("%s: </%s> closes <%s>" % (self.where(), tag, self.stack[-1] if self.stack else "nothing"))
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()
        if self.in_legend and len(self.stack) < self.in_legend:
            self.in_legend = 0

    def handle_data(self, data):
        if self.stack and self.stack[-1] == "style":
            if "url(" in data or "@import" in data:
                self.problems.append("%s: url() or @import in CSS" % self.where())
            return
        self.text.append(data)

    def handle_pi(self, data):
        self.problems.append("%s: processing instruction" % self.where())


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path, min_svg, expect, reject = argv[1], 5, [], []
    i = 2
    while i + 1 < len(argv):
        if argv[i] == "--min-svg":
            min_svg = int(argv[i + 1])
        elif argv[i] == "--expect-text":
            expect.append(argv[i + 1])
        elif argv[i] == "--reject-text":
            reject.append(argv[i + 1])
        else:
            print("check_report_html: unknown option " + argv[i], file=sys.stderr)
            return 2
        i += 2
    raw = open(path, "rb").read()
    try:
        html = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        print("check_report_html: %s: not UTF-8: %s" % (path, e), file=sys.stderr)
        return 1
    c = Checker()
    if not html.startswith("<!DOCTYPE html>"):
        c.problems.append("does not start with <!DOCTYPE html>")
    c.feed(html)
    c.close()
    if c.stack:
        c.problems.append("never closed: " + " > ".join(c.stack))
    causes = [x["cause"] for x in c.legend]
    colors = [x["color"] for x in c.legend]
    if len(c.legend) != 9 or len(set(causes)) != 9 or len(set(colors)) != 9:
        c.problems.append("the legend has %d causes and %d colours, expected 9 of each: %r" % (len(set(causes)), len(set(colors)), c.legend))
    for col in colors:
        if not re.fullmatch(r"#[0-9a-f]{6}", col):
            c.problems.append("legend colour %r is not #rrggbb" % col)
    if c.counts.get("svg", 0) < min_svg:
        c.problems.append("%d inline <svg>, expected at least %d" % (c.counts.get("svg", 0), min_svg))
    for s in SECTIONS:
        if s not in c.ids:
            c.problems.append("no section id=%r" % s)
    text = "".join(c.text)
    for t in expect:
        if t not in text:
            c.problems.append("the page does not say %r" % t)
    for t in reject:
        if t in html:
            c.problems.append("the page source holds %r" % t)
    if c.problems:
        for p in c.problems[:20]:
            print("check_report_html: %s: %s" % (path, p), file=sys.stderr)
        return 1
    print(json.dumps({"bytes": len(raw), "svg": c.counts.get("svg", 0), "table": c.counts.get("table", 0),
                      "rect": c.counts.get("rect", 0), "legend": c.legend}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
