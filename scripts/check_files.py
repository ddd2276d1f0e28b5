#!/usr/bin/env python3
"""File-level architecture checks (run by scripts/check_architecture.sh):

- no Rust source file in the workspace over 800 lines;
- no circle between the files of a crate: file A naming an item of file B while B
  names one of A (through `use` or a path), crate roots (lib.rs, main.rs) excepted —
  they are the index every file may name;
- every source file (crate roots and mod.rs aside) is in ARCHITECTURE.md's code map:
  under its crate's `crates/NAME` line, as `src/….rs` or by name beneath its
  directory's `src/dir/` line, or anywhere by its full path.

What exists today and is not yet fixed is listed, each with its reason, in
scripts/architecture-allow.txt; anything new fails:

    size  PATH  LINES  reason…      a file allowed up to LINES lines (it may shrink)
    cycle PATH PATH …  reason…      a circle allowed among these files (or fewer)

Usage: check_files.py [--root DIR] [--allow FILE] [--list]
  --list prints every oversize file and every circle, allowed or not.

Written by hand rather than with a crate-graph tool: cargo-modules and friends work on
modules, not files, need a full build, and cannot carry an allow list with reasons.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

LIMIT = 800
PATH_RE = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_RE = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
MOD_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;", re.M)


CHAR_RE = re.compile(r"'(?:\\(?:x[0-9A-Fa-f]{2}|u\{[0-9A-Fa-f]{1,6}\}|.)|[^\\'\n])'")
RAW_RE = re.compile(r'b?r(#*)"')


def strip_comments_and_strings(text: str) -> str:
    """Comments, strings and char literals out, in one left-to-right scan: a
    regular expression per kind cannot tell `"http://"` (a string) from a
    comment, nor `'"'` (a char) from the start of a string."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif (m := RAW_RE.match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + m.group(1)
            j = text.find(close, m.end())
            i = n if j < 0 else j + len(close)
            out.append('""')
        elif c == '"' or (c == "b" and text.startswith('b"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))):
            i += 1 if c == '"' else 2
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and (m := CHAR_RE.match(text, i)):
            i = m.end()
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_inline_modules(text: str) -> str:
    """Inline `mod name { … }` blocks (tests, mostly) name their parent through
    `super::`; they are the same file, so they are dropped before reading paths."""
    out, i = [], 0
    for m in re.finditer(r"\bmod\s+[A-Za-z_]\w*\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 0, m.end() - 1
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        i = j + 1
    out.append(text[i:])
    return "".join(out)


def expand_use(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` → [a::b, a::c::d, a::c::e] (aliases and globs kept as prefixes)."""
    tree = re.sub(r"\s*(::|[{},])\s*", r"\1", tree.strip())

    def parse(s: str, prefix: str) -> list[str]:
        if "{" not in s:
            leaf = s.split()[0] if s.split() else ""  # `a::b as c` → a::b
            return [prefix + leaf.rstrip("*").rstrip(":")]
        head, rest = s.split("{", 1)
        inner = rest[: rest.rfind("}")]
        parts, depth, cur = [], 0, ""
        for ch in inner:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            cur += ch
        parts.append(cur)
        found = []
        for part in filter(None, parts):
            if part == "self":
                found.append(prefix + head.rstrip(":"))
            else:
                found.extend(parse(part, prefix + head))
        return found

    return parse(tree, "")


class Crate:
    def __init__(self, src: Path, root: Path):
        self.src, self.root = src, root
        self.files: dict[tuple[str, ...], Path] = {}
        for f in src.rglob("*.rs"):
            rel = f.relative_to(src).with_suffix("")
            parts = tuple(rel.parts)
            if parts[-1] == "mod":
                parts = parts[:-1]
            if parts and parts[0] == "bin":
                continue
            if parts in (("lib",), ("main",)):
                parts = ()
            self.files.setdefault(parts, f)

    def module_of(self, f: Path) -> tuple[str, ...]:
        for parts, path in self.files.items():
            if path == f:
                return parts
        raise KeyError(f)

    def resolve(self, segments: list[str]) -> Path | None:
        for n in range(len(segments), 0, -1):
            if tuple(segments[:n]) in self.files:
                return self.files[tuple(segments[:n])]
        return None

    def edges(self, f: Path) -> set[Path]:
        module = self.module_of(f)
        text = strip_inline_modules(strip_comments_and_strings(f.read_text()))
        children = set(MOD_RE.findall(text))
        paths: list[str] = []
        for m in USE_RE.finditer(text):
            if m.group(1):  # `pub use` re-exports a facade, not a dependency
                continue
            paths.extend(expand_use(m.group(2)))
        body = USE_RE.sub("", text)
        paths.extend(PATH_RE.findall(body))
        found: set[Path] = set()
        for p in paths:
            segs = [s for s in p.split("::") if s]
            if not segs:
                continue
            if segs[0] == "crate":
                absolute = segs[1:]
            elif segs[0] in ("super", "self"):
                base = list(module)
                # a mod.rs / x.rs file is module `module`; super climbs from it
                while segs and segs[0] in ("super", "self"):
                    if segs[0] == "super":
                        base = base[:-1]
                    segs = segs[1:]
                absolute = base + segs
            elif segs[0] in children:
                absolute = list(module) + segs
            else:
                continue
            target = self.resolve(absolute)
            if target is not None and target != f and self.module_of(target) != ():
                found.add(target)
        return found


def strongly_connected(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def read_allow(path: Path) -> tuple[dict[str, int], list[set[str]]]:
    sizes: dict[str, int] = {}
    cycles: list[set[str]] = []
    if not path.exists():
        return sizes, cycles
    for n, line in enumerate(path.read_text().splitlines(), 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "size" and len(words) >= 4 and words[2].isdigit():
            sizes[words[1]] = int(words[2])
        elif words[0] == "cycle":
            files = [w for w in words[1:] if w.endswith(".rs")]
            reason = words[1 + len(files):]
            if len(files) < 2 or not reason:
                sys.exit(f"{path}:{n}: a cycle entry names two or more files, then its reason")
            cycles.append(set(files))
        else:
            sys.exit(f"{path}:{n}: expected `size PATH LINES reason` or `cycle PATH PATH… reason`")
    return sizes, cycles


def code_map(text: str) -> set[str]:
    """The files ARCHITECTURE.md's code map names (see the module's doc): generous — a
    bare `name.rs` counts under the directory line above it and under its crate's src."""
    mapped: set[str] = set(re.findall(r"crates/[\w-]+/[\w/]+\.rs", text))
    crate, context = None, []  # context: (indent, directory) of `src/dir/` lines
    for line in text.splitlines():
        if line.startswith(("```", "#")):
            crate, context = None, []
            continue
        head = re.match(r"^crates/([\w-]+)(\s|$)", line)
        if head:
            crate, context = head.group(1), []
            continue
        full_line = re.match(r"^crates/([\w-]+)/src/", line)
        bases = [f"crates/{full_line.group(1)}/src/"] if full_line else []
        if crate is not None:
            entry = re.match(r"^(\s+)(\S+?)[,;:]?(\s|$)", line)
            indent = len(entry.group(1)) if entry else 0
            while context and context[-1][0] >= indent and entry:
                context.pop()
            if entry and entry.group(2).endswith("/"):
                token = entry.group(2)
                full = f"crates/{crate}/{token}" if token.startswith("src/") or not context else context[-1][1] + token
                context.append((indent, full))
            bases += [f"crates/{crate}/", f"crates/{crate}/src/"] + [c[1] for c in context]
        for token in re.findall(r"(?<![\w/.-])([\w/-]+\.rs)\b", line):
            mapped.update(base + token for base in bases)
    return mapped


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("--allow", default=None)
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    root = Path(args.root).resolve()
    allow = Path(args.allow) if args.allow else root / "scripts" / "architecture-allow.txt"
    sizes, cycles = read_allow(allow)
    failures = 0

    for f in sorted(root.glob("crates/**/*.rs")):
        if "target" in f.relative_to(root).parts:
            continue
        rel = str(f.relative_to(root))
        lines = f.read_text().count("\n")
        if lines > LIMIT:
            allowed = sizes.get(rel)
            if args.list:
                print(f"size  {rel} {lines}" + ("" if allowed else "  (new)"))
            if allowed is None:
                print(f"architecture: {rel} has {lines} lines (at most {LIMIT}): split it by concern")
                failures += 1
            elif lines > allowed:
                print(f"architecture: {rel} grew to {lines} lines (allowed {allowed} until it is split)")
                failures += 1

    for src in sorted(root.glob("crates/*/src")):
        crate = Crate(src, root)
        graph = {f: crate.edges(f) for f in crate.files.values()}
        for comp in strongly_connected(graph):
            names = [str(p.relative_to(root)) for p in comp]
            ok = any(set(names) <= allowed for allowed in cycles)
            if args.list:
                print("cycle " + " ".join(names) + ("" if ok else "  (new)"))
            if not ok:
                print("architecture: files name each other in a circle: " + " ↔ ".join(names))
                failures += 1
    architecture = root / "ARCHITECTURE.md"
    if architecture.exists():
        mapped = code_map(architecture.read_text())
        for f in sorted(root.glob("crates/*/src/**/*.rs")):
            rel = str(f.relative_to(root))
            if f.name in ("lib.rs", "main.rs", "mod.rs") or rel in mapped:
                continue
            print(f"architecture: {rel} is not in ARCHITECTURE.md's code map: say there what it is")
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
