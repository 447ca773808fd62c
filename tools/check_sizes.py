#!/usr/bin/env python3
"""Sizes that fit a reader: no source file over 1,000 lines and no function over 120 lines in
src/, include/, tools/ and python/src/.

    tools/check_sizes.py [REPO]      lists what is over; exits 1 if anything is

A function is found by its braces: a line that ends with `{` and opens a definition at the
outermost level of a namespace or class (not a struct, class, enum or namespace body), to the
line that closes it. Lambdas inside a function count with it.
"""
import os
import re
import sys

MAX_FILE, MAX_FUNCTION = 1000, 120
ROOTS = ("src", "include", "tools", "python/src")
EXTS = (".cpp", ".h", ".hpp", ".cc")
NOT_FUNCTION = re.compile(r"^\s*(namespace|struct|class|union|enum|extern)\b|=\s*\{\s*$|^\s*(template\s*<[^>]*>\s*)?(struct|class)\b")
DEFINITION = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(->\s*[\w:<>, ]+)?\s*\{\s*$|^\s*[\w:~<>,*& ]+::[\w~]+\(.*\)\s*:\s*.*\{\s*$")


def functions(lines):
    """(name line, start, end) of each function, 1-based."""
    out = []
    depth = 0
    open_at = None
    container = []  # depth at which each enclosing namespace/class body opened
    for i, line in enumerate(lines, 1):
        code = re.sub(r"//.*$", "", line)
        code = re.sub(r'"(\\.|[^"\\])*"', '""', code)
        code = re.sub(r"'(\\.|[^'\\])*'", "''", code)
        if open_at is None and code.rstrip().endswith("{"):
            at_outer = not container or depth == container[-1]
            if NOT_FUNCTION.search(code):
                container.append(depth + code.count("{") - code.count("}"))
            elif at_outer and DEFINITION.search(code):
                open_at = (i, depth)
        depth += code.count("{") - code.count("}")
        while container and depth < container[-1]:
            container.pop()
        if open_at and depth <= open_at[1]:
            out.append((lines[open_at[0] - 1].strip()[:90], open_at[0], i))
            open_at = None
    return out


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    over = []
    for root in ROOTS:
        for d, _, names in os.walk(os.path.join(repo, root)):
            for name in sorted(names):
                if not name.endswith(EXTS):
                    continue
                path = os.path.join(d, name)
                rel = os.path.relpath(path, repo)
                lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
                if len(lines) > MAX_FILE:
                    over.append(f"{rel}: {len(lines)} lines (at most {MAX_FILE})")
                for head, a, b in functions(lines):
                    if b - a + 1 > MAX_FUNCTION:
                        over.append(f"{rel}:{a}: a function of {b - a + 1} lines (at most {MAX_FUNCTION}): {head}")
    for o in over:
        print(o)
    print(f"{len(over)} over the limits" if over else "every file and function within the limits")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
