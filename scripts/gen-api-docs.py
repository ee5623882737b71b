#!/usr/bin/env python3
"""Generates docs/api.md from the `///` comments of gpumath's public headers.

Usage: scripts/gen-api-docs.py [--check]
Each `///` block is paired with the declaration that follows it (up to the first `{`, `;` or
blank line). Headers under include/gpumath/detail/ are private and skipped. With --check the
script exits 1 when docs/api.md is out of date (used by the test suite).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "include"
OUTPUT = ROOT / "docs" / "api.md"


def declarations(text):
    lines = text.splitlines()
    i = 0
    scope = []
    while i < len(lines):
        line = lines[i].strip()
        m = re.match(r"namespace\s+([\w:]+)\s*\{", line)
        if m:
            scope.append(m.group(1))
        elif re.match(r"\}\s*//\s*namespace", line) and scope:
            scope.pop()
        if line.startswith("///"):
            doc = []
            while i < len(lines) and lines[i].strip().startswith("///"):
                doc.append(lines[i].strip()[3:].strip())
                i += 1
            decl = []
            while i < len(lines):
                s = lines[i].strip()
                if not s or s.startswith("//"):
                    break
                decl.append(s)
                if s.endswith(";") or re.search(r"\{(?!\})", s) or s.endswith("}"):
                    break
                i += 1
            signature = " ".join(decl)
            signature = re.sub(r"\s*(:\s*[\w:]+\(.*)?\{(?!\}).*$", "", signature).rstrip(";").strip()
            if signature and not any("detail" in part for part in scope):
                yield (scope[-1] if scope else ""), signature, " ".join(doc)
        i += 1


def render():
    out = ["# gpumath API reference", "",
           "Generated from the `///` comments of the public headers by `scripts/gen-api-docs.py`; "
           "do not edit by hand.", ""]
    for header in sorted(INCLUDE.rglob("*.hpp")):
        rel = header.relative_to(INCLUDE).as_posix()
        if "/detail/" in rel:
            continue
        items = list(declarations(header.read_text()))
        if not items:
            continue
        out += [f"## `<{rel}>`", ""]
        for ns, signature, doc in items:
            sig = signature.replace("|", "\\|")
            out.append(f"- `{sig}`" + (f" — {doc}" if doc else ""))
        out.append("")
    return "\n".join(out)


def main():
    text = render()
    if "--check" in sys.argv:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != text:
            print("docs/api.md is out of date: run scripts/gen-api-docs.py")
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
