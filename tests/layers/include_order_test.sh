#!/bin/bash
# Layers include only downward: every `#include "DIR/..."` in native/src must name its own
# directory or one on an earlier line of the layer order in docs/architecture.md.
set -u
src=${NCCLSCOPE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v python3 >/dev/null || { echo "python3 not found: skipping"; exit 77; }
exec python3 - "$src" <<'PY'
import pathlib, re, sys

root = pathlib.Path(sys.argv[1])
doc = (root / "docs/architecture.md").read_text()
block = re.search(r"<!-- layers:begin -->\s*```text\n(.*?)```\s*<!-- layers:end -->", doc, re.S)
if not block:
    sys.exit("docs/architecture.md: no layer order between <!-- layers:begin --> and <!-- layers:end -->")
rank = {}
for number, line in enumerate(block.group(1).splitlines()):
    for layer in line.split("#")[0].split():
        rank[layer] = number

problems = []
include = re.compile(r'^\s*#\s*include\s+"([^"/]+)/')
for path in sorted((root / "native/src").rglob("*")):
    if path.suffix not in (".cc", ".h", ".c") or not path.is_file():
        continue
    layer = path.relative_to(root / "native/src").parts[0]
    where = path.relative_to(root)
    if layer not in rank:
        problems.append("%s: directory %s is in no layer of docs/architecture.md" % (where, layer))
        continue
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        match = include.match(line)
        if not match or match.group(1) == layer:
            continue
        used = match.group(1)
        if used not in rank:
            problems.append("%s:%d: includes %s/, which is in no layer" % (where, number, used))
        elif rank[used] >= rank[layer]:
            problems.append("%s:%d: %s includes %s/ (same or higher layer: includes only run downward)"
                            % (where, number, layer, used))
for problem in problems:
    print(problem)
print("%d include(s) against the layer order" % len(problems))
sys.exit(1 if problems else 0)
PY
