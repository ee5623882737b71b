#!/usr/bin/env python3
"""Compiles every C++ code block of gpumath's documentation (README.md and docs/*.md).

Usage: check_snippets.py --source-dir DIR --cxx COMPILER [--work-dir DIR] [--jobs N]
                         [--list] [FILE.md ...] [-- COMPILER FLAGS...]

A fenced block whose info string is `cpp` (or `c++`) is compiled with `COMPILER -std=c++20
-fsyntax-only -Werror` and the flags after `--` (gpumath's include directories and definitions).
An HTML comment right before the block (blank lines may come between) says how:

    <!-- snippet: fragment -->          statements: compiled as the body of a function (default)
    <!-- snippet: declarations -->      namespace-scope declarations (functions, types)
    <!-- snippet: file -->              a whole translation unit, compiled alone as written
    <!-- snippet: skip REASON -->       not compiled; the reason is required

A block without a comment is a fragment, or a file when it defines `int main(`. Fragments and
declarations see `<gpumath/gpumath.hpp>` and the common standard headers; their `#include` lines
are moved to the top of the translation unit. Each block gets a namespace of its own, so names do
not clash between blocks, and the blocks of one Markdown file share one translation unit.

A comment `<!-- snippet: setup` followed by lines of code and `-->`, not before a block, is
shared setup: hidden code compiled before every later fragment and declarations block of the same
Markdown file (a later setup comment replaces it), e.g. the `using namespace gpumath;` and stream
that a guide's text says its snippets assume.

Options after the mode: `requires=dlpack` or `requires=dist` compiles the block only when gpumath
was built with DLPack or the multi-GPU module (GPUMATH_HAS_DLPACK / GPUMATH_HAS_DIST). Lines
between the first line of the comment and `-->` are hidden setup: code compiled before the block
(declarations of the variables a reference fragment uses) but not shown to readers:

    <!-- snippet: fragment
    gpumath::core::Stream stream;
    gpumath::Tensor x;
    -->

Every block is compiled with `#line` directives, so the compiler names the Markdown file and line.
Exits 1 when a block does not compile or a comment is malformed, printing the file, line and the
compiler's message.
"""
import argparse
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys
import time

MODES = ("fragment", "declarations", "file", "skip", "setup")
FEATURES = {"dlpack": "GPUMATH_HAS_DLPACK", "dist": "GPUMATH_HAS_DIST"}
CPP_INFO = ("cpp", "c++")
STANDARD_HEADERS = ("algorithm", "array", "chrono", "complex", "cstdint", "cstdio", "cstring", "filesystem",
                    "fstream", "iostream", "memory", "numeric", "optional", "span", "string", "thread", "vector")
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)")
MARKER = re.compile(r"^ {0,3}<!--\s*snippet:\s*(.*)$")
INCLUDE = re.compile(r"^\s*#\s*include\b")
MAIN = re.compile(r"\bint\s+main\s*\(")


class DocError(Exception):
    """A malformed snippet comment or fence, reported as `file:line: message`."""


class Block:
    def __init__(self, path, line, code, mode, requires, setup, setup_line, reason, shared=None):
        self.path = path  # relative to the source directory, as the compiler will print it
        self.line = line  # line of the block's first code line
        self.code = code
        self.mode = mode
        self.requires = requires
        self.setup = setup
        self.setup_line = setup_line
        self.reason = reason
        self.shared = shared or ([], None)  # the file's shared setup: (lines, first line)

    def where(self):
        return f"{self.path}:{self.line - 1}"  # the opening fence

    def covers(self, line):
        last = self.line + max(len(self.code), 1)
        in_setup = self.setup and self.setup_line <= line < self.setup_line + len(self.setup)
        shared, first = self.shared
        in_shared = shared and first <= line < first + len(shared)
        return self.line <= line < last or in_setup or in_shared


def parse_marker(text, path, line):
    """`text` is the comment after `snippet:`; returns (mode, requires, reason)."""
    words = text.split()
    if not words:
        raise DocError(f"{path}:{line}: snippet comment without a mode (one of {', '.join(MODES)})")
    mode, rest = words[0], words[1:]
    if mode not in MODES:
        raise DocError(f"{path}:{line}: unknown snippet mode '{mode}' (one of {', '.join(MODES)})")
    if mode == "setup" and rest:
        raise DocError(f"{path}:{line}: 'snippet: setup' takes no options")
    if mode == "skip":
        if not rest:
            raise DocError(f"{path}:{line}: 'snippet: skip' needs a reason")
        return mode, None, " ".join(rest)
    requires = None
    for word in rest:
        key, _, value = word.partition("=")
        if key != "requires" or value not in FEATURES:
            raise DocError(f"{path}:{line}: unknown snippet option '{word}' "
                           f"(requires={'|'.join(FEATURES)})")
        requires = value
    return mode, requires, None


def extract(source_dir, path):
    """The C++ blocks of one Markdown file."""
    lines = (source_dir / path).read_text(encoding="utf-8").splitlines()
    blocks = []
    marker = None  # (mode, requires, reason, setup, setup_line, line)
    shared = ([], None)
    i = 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line)
        if m:
            if marker:
                raise DocError(f"{path}:{marker[5]}: snippet comment not followed by a code block")
            start = i + 1
            text = m.group(1)
            setup, setup_line = [], None
            if "-->" in text:
                text = text[:text.index("-->")]
            else:
                i += 1
                setup_line = i + 1
                while i < len(lines) and "-->" not in lines[i]:
                    setup.append(lines[i])
                    i += 1
                if i == len(lines):
                    raise DocError(f"{path}:{start}: snippet comment without its closing '-->'")
                if lines[i].strip() != "-->":
                    raise DocError(f"{path}:{i + 1}: put a snippet comment's closing '-->' on a line of its own")
            mode, requires, reason = parse_marker(text, path, start)
            i += 1
            if mode == "setup":
                if not setup:
                    raise DocError(f"{path}:{start}: 'snippet: setup' holds no code")
                shared = (setup, setup_line)
                continue
            marker = (mode, requires, reason, setup, setup_line, start)
            continue
        f = FENCE.match(line)
        if f:
            indent, fence, info = len(f.group(1)), f.group(2), f.group(3).lower()
            opened = i + 1
            code = []
            i += 1
            while i < len(lines):
                stripped = lines[i].strip()
                if stripped.startswith(fence[0] * len(fence)) and stripped.strip(fence[0]) == "":
                    break
                text = lines[i]
                code.append(text[min(indent, len(text) - len(text.lstrip(" "))):])
                i += 1
            if i == len(lines):
                raise DocError(f"{path}:{opened}: code block never closed")
            if info in CPP_INFO:
                if marker:
                    mode, requires, reason, setup, setup_line, _ = marker
                else:
                    mode = "file" if any(MAIN.search(c) for c in code) else "fragment"
                    requires, reason, setup, setup_line = None, None, [], None
                blocks.append(Block(path, opened + 1, code, mode, requires, setup, setup_line, reason, shared))
            elif marker:
                raise DocError(f"{path}:{marker[5]}: snippet comment before a '{info or 'plain'}' block; "
                               "only cpp blocks are compiled")
            marker = None
            i += 1
            continue
        if marker and line.strip():
            raise DocError(f"{path}:{marker[5]}: snippet comment not followed by a code block")
        i += 1
    if marker:
        raise DocError(f"{path}:{marker[5]}: snippet comment not followed by a code block")
    return blocks


def quoted(path):
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def guarded(block, text):
    if not block.requires:
        return text
    macro = FEATURES[block.requires]
    return f"#if defined({macro})\n{text}#endif  // {macro}\n"


def code_lines(block, lines, first):
    """`lines` starting at Markdown line `first`, behind a #line directive."""
    return f"#line {first} {quoted(block.path)}\n" + "".join(f"{c}\n" for c in lines)


def file_unit(block):
    text = ""
    if block.setup:
        text += code_lines(block, block.setup, block.setup_line)
    text += code_lines(block, block.code, block.line)
    return guarded(block, text)


def shared_unit(blocks, path):
    """One translation unit holding every fragment and declarations block of a Markdown file."""
    head = [f"// Generated by tests/docs/check_snippets.py from {path}: do not edit.\n",
            "#include <gpumath/gpumath.hpp>\n"]
    head += [f"#include <{h}>\n" for h in STANDARD_HEADERS]
    body = []
    for n, block in enumerate(blocks):
        includes, code = [], []
        for offset, c in enumerate(block.code):
            if INCLUDE.match(c):
                includes.append(f"#line {block.line + offset} {quoted(block.path)}\n{c}\n")
                code.append("")  # keeps the lines of the rest in place
            else:
                code.append(c)
        head.append(guarded(block, "".join(includes)) if includes else "")
        text = f"namespace gpumath_snippet_{n} {{\n"
        if block.mode == "fragment":
            text += "[[maybe_unused]] void snippet() {\n"
        if block.shared[0]:
            text += code_lines(block, *block.shared)
        if block.setup:
            text += code_lines(block, block.setup, block.setup_line)
        text += code_lines(block, code, block.line)
        if block.mode == "fragment":
            text += "}\n"
        text += f"}}  // namespace gpumath_snippet_{n}\n"
        body.append(guarded(block, text))
    return "".join(head) + "".join(body)


def compile_unit(cxx, flags, unit, cwd):
    command = [cxx, "-std=c++20", "-fsyntax-only", "-Werror", *flags, str(unit)]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def blocks_in_error(output, blocks):
    """The blocks the compiler's messages point into, with the first error of each."""
    found = {}
    for m in re.finditer(r"^(\S+?\.md):(\d+):(?:\d+:)? (?:fatal )?error: (.*)$", output, re.M):
        path, line, message = m.group(1), int(m.group(2)), m.group(3)
        for block in blocks:
            if str(block.path) == path and block.covers(line) and block not in found:
                found[block] = f"{path}:{line}: {message}"
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-dir", required=True, type=pathlib.Path)
    parser.add_argument("--cxx", help="the C++ compiler (not needed with --list)")
    parser.add_argument("--work-dir", type=pathlib.Path, default=pathlib.Path("doc-snippets"),
                        help="where the generated translation units are written (kept for inspection)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--list", action="store_true", help="list the blocks and how each is compiled")
    parser.add_argument("files", nargs="*", help="Markdown files relative to --source-dir "
                        "(default: README.md and docs/*.md)")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args, flags = parser.parse_args(argv[:cut]), argv[cut + 1:]
    source_dir = args.source_dir.resolve()
    files = [pathlib.Path(f) for f in args.files] or (
        [pathlib.Path("README.md")] + sorted(p.relative_to(source_dir) for p in (source_dir / "docs").glob("*.md")))

    try:
        per_file = {path: extract(source_dir, path) for path in files}
    except DocError as e:
        print(f"{e}", file=sys.stderr)
        return 1
    blocks = [b for bs in per_file.values() for b in bs]
    if args.list:
        for b in blocks:
            extra = f" ({b.reason})" if b.reason else (f" (requires {b.requires})" if b.requires else "")
            print(f"{b.where()}: {b.mode}{extra}")
        return 0
    if not blocks:
        print(f"no cpp code blocks found in {', '.join(map(str, files))} under {source_dir}", file=sys.stderr)
        return 1
    if not args.cxx:
        parser.error("--cxx is required unless --list is given")

    args.work_dir.mkdir(parents=True, exist_ok=True)
    units = []  # (path of the generated file, blocks it holds)
    for path, bs in per_file.items():
        stem = re.sub(r"\W", "_", str(path.with_suffix("")))
        shared = [b for b in bs if b.mode in ("fragment", "declarations")]
        if shared:
            unit = args.work_dir / f"{stem}.cpp"
            unit.write_text(shared_unit(shared, path), encoding="utf-8")
            units.append((unit, shared))
        for b in bs:
            if b.mode == "file":
                unit = args.work_dir / f"{stem}_line{b.line - 1}.cpp"
                unit.write_text(file_unit(b), encoding="utf-8")
                units.append((unit, [b]))

    started = time.monotonic()
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        results = pool.map(lambda u: compile_unit(args.cxx, flags, u[0].resolve(), source_dir), units)
        for (unit, ubs), (rc, output) in zip(units, results):
            if rc == 0:
                continue
            failed.append(unit)
            print(f"==== {unit} does not compile ({len(ubs)} block(s) of {ubs[0].path}):\n{output}")
            culprits = blocks_in_error(output, ubs)
            for block, first in culprits.items():
                print(f"FAILED {block.where()}: this code block does not compile: {first}")
            if not culprits:
                print(f"FAILED {unit}: the compiler named no line of the blocks it holds "
                      f"({', '.join(b.where() for b in ubs)})")

    skipped = [b for b in blocks if b.mode == "skip"]
    compiled = len(blocks) - len(skipped)
    print(f"{len(blocks)} cpp blocks in {len(files)} files: {compiled} compiled in {len(units)} translation "
          f"units ({time.monotonic() - started:.1f} s, {args.jobs} jobs), {len(skipped)} skipped")
    for b in skipped:
        print(f"  skipped {b.where()}: {b.reason}")
    if failed:
        print(f"{len(failed)} of {len(units)} translation units failed; generated sources in {args.work_dir}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
