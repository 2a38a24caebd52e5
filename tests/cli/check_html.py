#!/usr/bin/env python3
"""Structure check of `ncclscope triage --html` against the same run's `--json` document.

usage: check_html.py PAGE.html TRIAGE.json [--expect-text TEXT]... [--forbid-tag TAG]...

Parses the page with html.parser (no third-party module) and checks: one well-nested
document, no script, no external resource (the page is self-contained), the verdict and
summary as the document says, an inline SVG with one box per graph node (or group) and one
arrow per drawn wait, the ranks x communicators table holding every rank's launched counters,
the stack prefix tree as nested <details>, and each --expect-text string present in the
page's text exactly (an untrusted string that came through escaped, not as markup), and no
element of a --forbid-tag name (markup an untrusted string would have made).
Prints one line per failed check; exit 0 when all pass.
"""

import html.parser
import json
import sys

VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "source", "wbr"}


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []
        self.problems = []
        self.elements = []   # (tag, attrs dict, path of ancestors' tags)
        self.text = []       # (text, ancestor tags, ancestor ids)
        self.ids = []
        self.rows = []       # per <tr>: the id of the table it is in

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "tr":
            tables = [a.get("id") for t, a in self.stack if t == "table"]
            self.rows.append(tables[-1] if tables else None)
        self.elements.append((tag, attributes, [t for t, _ in self.stack]))
        if "id" in attributes:
            self.ids.append(attributes["id"])
        if tag not in VOID:
            self.stack.append((tag, attributes))

    def handle_startendtag(self, tag, attrs):
        attributes = dict(attrs)
        self.elements.append((tag, attributes, [t for t, _ in self.stack]))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            self.problems.append("misnested </%s> (open: %s)" % (tag, [t for t, _ in self.stack][-4:]))
            # recover: pop to the matching tag if any
            for i in range(len(self.stack) - 1, -1, -1):
                if self.stack[i][0] == tag:
                    del self.stack[i:]
                    break
            return
        self.stack.pop()

    def handle_data(self, data):
        self.text.append((data, [t for t, _ in self.stack], [a.get("id") for _, a in self.stack if a.get("id")],
                          [a.get("class", "") for _, a in self.stack]))


def main(argv):
    page_path, json_path = argv[1], argv[2]
    expected_texts, forbidden_tags = [], []
    i = 3
    while i < len(argv):
        if argv[i] in ("--expect-text", "--forbid-tag") and i + 1 < len(argv):
            (expected_texts if argv[i] == "--expect-text" else forbidden_tags).append(argv[i + 1])
            i += 2
        else:
            print("usage: check_html.py PAGE TRIAGE.json [--expect-text TEXT]... [--forbid-tag TAG]...")
            return 64
    raw = open(page_path, "rb").read()
    failures = []
    try:
        source = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as error:
        print("FAIL page is not UTF-8: %s" % error)
        return 1
    report = json.load(open(json_path))
    parser = Page()
    parser.feed(source)
    parser.close()
    failures += parser.problems
    if parser.stack:
        failures.append("unclosed elements at the end: %s" % [t for t, _ in parser.stack])
    if not source.startswith("<!DOCTYPE html>"):
        failures.append("no <!DOCTYPE html> first")
    tags = [tag for tag, _, _ in parser.elements]
    if "svg" in tags and "text" not in tags:
        failures.append("an svg without any <text>")

    def elements(tag, **wanted):
        return [(a, path) for t, a, path in parser.elements if t == tag and all(a.get(k) == v for k, v in wanted.items())]

    def text_under(element_id=None, klass=None):
        parts = []
        for data, _, ids, classes in parser.text:
            if element_id is not None and element_id not in ids:
                continue
            if klass is not None and not any(klass in c.split() for c in classes):
                continue
            parts.append(data)
        return "".join(parts)

    # Self-contained: no script, no stylesheet link, no frame, no external URL anywhere.
    for forbidden in ["script", "link", "iframe", "object", "embed", "img"] + forbidden_tags:
        if forbidden in tags:
            failures.append("a <%s> element (the page must be self-contained, script-free)" % forbidden)
    for tag, attributes, _ in parser.elements:
        for name, value in attributes.items():
            if name.startswith("on"):
                failures.append("event handler attribute %s on <%s>" % (name, tag))
            if name in ("src", "href", "xlink:href", "action") and value and not value.startswith("#"):
                failures.append("external reference %s=%r on <%s>" % (name, value, tag))
            if value and "url(" in value and "url(#" not in value:
                failures.append("external url() in %s on <%s>" % (name, tag))
    if len([t for t in tags if t == "html"]) != 1 or len([t for t in tags if t == "body"]) != 1:
        failures.append("not exactly one <html> and one <body>")
    duplicates = sorted({i for i in parser.ids if parser.ids.count(i) > 1})
    if duplicates:
        failures.append("duplicate ids: %s" % duplicates)

    # Verdict and summary, as the document says.
    verdict = text_under("verdict").strip()
    if verdict != report.get("verdict"):
        failures.append("verdict %r, the document says %r" % (verdict, report.get("verdict")))
    summary = text_under("summary").strip()
    if summary != (report.get("summary") or "").strip():
        failures.append("summary differs from the document's: %r" % summary[:120])

    graph = report.get("graph") or {}
    nodes = graph.get("nodes") or []
    # The wait-for graph: inline SVG, one box per node (2..64 nodes are drawn one each).
    svgs = elements("svg")
    if nodes:
        if len(svgs) != 1 or svgs[0][0].get("id") != "wait-graph":
            failures.append("expected one inline <svg id=wait-graph>, found %d svg" % len(svgs))
        if svgs and "section" not in svgs[0][1]:
            failures.append("the svg is not inside a section")
        boxes = [a for a, path in elements("g") if "node" in a.get("class", "").split()]
        if len(nodes) <= 64 and len(boxes) != len(nodes):
            failures.append("%d node boxes in the SVG, %d nodes in the graph" % (len(boxes), len(nodes)))
        # Laid out by Graphviz (dot -Tsvg of the DOT): boxes are paths, one <g class=edge> per
        # drawn arrow (per wait edge and pair of boxes); else the built-in drawing's rects and arrows.
        graphviz = any("graph" in a.get("class", "").split() for a, _ in elements("g"))
        rects = elements("rect")
        if not graphviz and len(nodes) <= 64 and len(rects) < len(nodes):
            failures.append("%d <rect> in the SVG for %d nodes" % (len(rects), len(nodes)))
        if "legend" not in parser.ids:
            failures.append("no legend (id=legend) beside the graph")
        for node in nodes if len(nodes) <= 64 else []:  # above, alike ranks share a box
            label = node.get("label") or ""
            if label and label[:20] not in text_under("wait-graph"):
                failures.append("node label %r not drawn in the SVG" % label)
        if graphviz:
            arrows = [a for a, _ in elements("g") if "edge" in a.get("class", "").split()]
            pairs = [(f, t, i) for i, e in enumerate(graph.get("edges") or [])
                     for f in set(e.get("from", [])) for t in set(e.get("to", []))]
        else:
            arrows = [a for a, _ in elements("path") if (a.get("marker-end") or "").startswith("url(#arrow")]
            pairs = {(f, t) for e in graph.get("edges") or [] for f in e.get("from", []) for t in e.get("to", [])}
        if len(nodes) <= 64 and len(arrows) != len(pairs):
            failures.append("%d arrows in the SVG, %d waits (from, to) in the graph" % (len(arrows), len(pairs)))
        roles = {n.get("role") for n in nodes}
        drawn_roles = {c for a in boxes for c in a.get("class", "").split() if c.startswith("role-")}
        if {"role-" + r for r in roles if r} != drawn_roles:
            failures.append("roles drawn %s, roles in the graph %s" % (sorted(drawn_roles), sorted(roles)))

    # Ranks x communicators table of launched counters.
    comms = report.get("communicators") or []
    if comms:
        table = elements("table", id="launched")
        if len(table) != 1:
            failures.append("no <table id=launched>")
        headers = [d for d, path, ids, _ in parser.text if "launched" in ids and "th" in path]
        for comm in comms if "launched-cut" not in parser.ids else [c for c in comms if c.get("is_world")]:
            if not any(comm["comm_hash"] in h for h in headers):
                failures.append("communicator %s has no column" % comm["comm_hash"])
        inputs = {name for comm in comms for name in comm.get("inputs", [])}
        row_count = parser.rows.count("launched")
        cut = "launched-cut" in parser.ids
        if row_count != len(inputs) + 1 and not (cut and 1 < row_count <= len(inputs)):
            failures.append("%d rows in the launched table, %d inputs + 1 header" % (row_count, len(inputs)))
        table_text = text_under("launched")
        for comm in comms if not cut else []:
            for counters in comm.get("seq_launched", []):
                for name, value in (counters or {}).items():
                    if isinstance(value, int) and value and "%s %d" % (name, value) not in table_text:
                        failures.append("counter %s %d of %s not in the table" % (name, value, comm["comm_hash"]))

    # The stack prefix tree: nested <details>, one per tree node with children (depth-capped).
    tree = (report.get("stack_classes") or {}).get("tree")
    if tree and tree.get("children"):  # no thread read (dump files alone): nothing to fold
        details = elements("details", **{"class": "tree"})
        if not details:
            failures.append("no <details> for the stack tree")
        nested = [path for _, path in details if path.count("details") >= 1]
        if count_drawn_branches(tree, 0) > 1 and not nested:
            failures.append("the stack tree's <details> are not nested")
        summaries = [a for a, path in elements("summary") if path and path[-1] == "details"]
        if len(summaries) != len(elements("details")):
            failures.append("%d <summary> for %d <details>" % (len(summaries), len(details)))
        if len(details) != count_drawn_branches(tree, 0):
            failures.append("%d <details>, %d tree nodes with children" % (len(details), count_drawn_branches(tree, 0)))
        page_text = text_under("stacks")
        for frame in map(terminal_escaped, leaf_frames(tree)):
            if frame and frame not in page_text:
                failures.append("frame %r of the stack tree not on the page" % frame)

    all_text = "".join(data for data, _, _, _ in parser.text)
    for wanted in expected_texts:
        if wanted not in all_text:
            failures.append("text %r not on the page (as text)" % wanted)
    for failure in failures:
        print("FAIL " + failure)
    if not failures:
        print("ok   %d elements, %d graph nodes, %d communicators" % (len(parser.elements), len(nodes), len(comms)))
    return 1 if failures else 0


def terminal_escaped(text):
    """What escape_for_terminal (native/src/util/strings.cc) prints: backslash doubled, C0/DEL
    controls and the lead byte of a C1 control as \\xNN (a C1 then shows as \\xc2\\x9b)."""
    out = []
    for char in text:
        code = ord(char)
        if char == "\\":
            out.append("\\\\")
        elif code < 0x20 or code == 0x7F:
            out.append("\\x%02x" % code)
        elif 0x80 <= code <= 0x9F:
            out.append("\\xc2\\x%02x" % (0x80 | (code & 0x3F)))
        else:
            out.append(char)
    return "".join(out)


def collapse(node):
    """The node a rendered line ends at: single-child chains with equal ranks/threads merge."""
    current = node
    while len(current.get("children", [])) == 1:
        child = current["children"][0]
        if child.get("rank_set") != current.get("rank_set") or child.get("threads") != current.get("threads"):
            break
        current = child
    return current


def count_drawn_branches(node, depth):
    end = collapse(node)
    children = end.get("children", [])
    if not children or depth >= 40:
        return 0
    return 1 + sum(count_drawn_branches(c, depth + 1) for c in children)


def leaf_frames(node):
    end = collapse(node)
    if not end.get("children"):
        return [end.get("frame", "")]
    frames = []
    for child in end["children"]:
        frames += leaf_frames(child)
    return frames


if __name__ == "__main__":
    sys.exit(main(sys.argv))
