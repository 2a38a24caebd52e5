#!/usr/bin/env python3
"""The data members of C++ structs as a source header declares them, in declaration order.

Usage: scripts/torch_struct_members.py HEADER STRUCT[::NESTED][=NAME]...
Prints one line per struct: "NAME: member member ..." (NAME: the struct's name in the layout
profile, e.g. c10d::FlightRecorder<c10::cuda::CUDAEvent>::Entry; default STRUCT), and first
"source: HEADER sha256".
The manifest it writes (tests/data/torch_members/) is what tests/cli/torch_profile_members_test.sh
holds each torch layout profile to: a profile whose members are not the source's, in the source's
order, fails. Non-static data members only: methods, static members, types, using-declarations
and access specifiers are skipped; `T *a, *b;` declares two members.
"""
import hashlib
import re
import sys


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("#"))


def block_end(text, open_at):
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced braces")


def struct_body(text, name):
    match = re.search(r"\b(?:struct|class)\s+(?:\w+\s+)?%s\b[^;{]*\{" % re.escape(name), text)
    if not match:
        raise ValueError("no struct %s" % name)
    start = match.end() - 1
    return text[start + 1:block_end(text, start)]


def statements(body):
    """Top-level statements of a struct body; a function body or nested type ends its statement."""
    out, current, i = [], "", 0
    while i < len(body):
        c = body[i]
        if c == "{":
            end = block_end(body, i)
            head = current.strip()
            is_type = re.match(r"^(template\s*<.*>\s*)?(struct|class|union|enum)\b", head, flags=re.S)
            is_function = "(" in head.split("=")[0]
            if is_type or is_function:
                out.append(head + " {}")
                current, i = "", end + 1
                if i < len(body) and body[i:].lstrip().startswith(";"):
                    i = body.index(";", i) + 1
                continue
            current += body[i:end + 1]
            i = end + 1
            continue
        if c == ";":
            out.append(current.strip())
            current = ""
        elif c == ":" and re.fullmatch(r"\s*(public|private|protected)\s*", current):
            current = ""
        else:
            current += c
        i += 1
    return [s for s in out if s]


def data_members(body):
    members = []
    for statement in statements(body):
        words = statement.split()
        if not words or words[0] in ("static", "using", "typedef", "friend", "template", "struct", "class",
                                     "enum", "union", "static_assert", "constexpr", "inline"):
            continue
        declaration = re.split(r"[={]", statement, maxsplit=1)[0] if "(" not in statement else statement
        if "(" in declaration:  # a method (or operator)
            continue
        depth, parts, part = 0, [], ""
        for c in declaration:  # split `T *a, *b` at commas outside template brackets
            depth += c == "<"
            depth -= c == ">"
            if c == "," and depth == 0:
                parts.append(part)
                part = ""
            else:
                part += c
        parts.append(part)
        for part in parts:
            names = re.findall(r"[A-Za-z_]\w*", re.sub(r"\[[^\]]*\]", "", part))
            if names:
                members.append(names[-1])
    return members


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: torch_struct_members.py HEADER STRUCT[::NESTED][=NAME]...")
    raw = open(sys.argv[1], encoding="utf-8").read()
    text = strip_comments(raw)
    print("source: %s %s" % (sys.argv[1], hashlib.sha256(raw.encode()).hexdigest()))
    for argument in sys.argv[2:]:
        path, _, profile_name = argument.partition("=")
        body = text
        for name in path.split("::"):
            body = struct_body(body, name)
        # A nested struct's members are not the outer one's: its body was skipped as a type.
        print("%s: %s" % (profile_name or path, " ".join(data_members(body))))


if __name__ == "__main__":
    main()
