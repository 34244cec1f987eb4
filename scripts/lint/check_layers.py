#!/usr/bin/env python3
"""Keeps the Rust crates in layers: reads core/src (and edge/src, sign-in/src, app/src), builds the module graph from
`crate::`/`super::`/`self::`/`ringi_core::` paths and fails on

  (a) an import cycle between modules (of one crate),
  (b) an import from a lower layer folder of core/src to a higher one (LAYERS below),
  (c) a file over MAX_FILE_LINES lines or a function over MAX_FN_LINES lines (tests excluded: files under
      tests/ and benches/, `#[cfg(test)]` modules, `#[test]` functions) without a `// size: <reason>` comment
      (for a file: among its first lines; for a function: right above it, among its docs and attributes).

A `pub use` that re-exports a module's own descendants is a facade, not a dependency; a path through a
re-export counts as a use of the module that defines the item. Prints the figures (modules, cycles, largest
files and functions). Standard library only: `python3 scripts/lint/check_layers.py [--quiet]`.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_FILE_LINES = 600
MAX_FN_LINES = 120

# core/src's top folders, bottom first: a module may use its own folder and the folders before it, never one
# after it. Folders on one line are one layer (they may not form a cycle either).
LAYERS = [
    ["base"],  # value types, text rules, the one error enum
    ["dev"],  # dev/bench-only switches
    ["domain"],  # the approval's rules
    ["adapters", "sql"],  # platform-free halves of the worker's adapters; D1 statements
    ["api"],  # wire types and request parsing
    ["config"],  # the worker's typed configuration
]
CRATES = {"core": "core/src", "edge": "edge/src", "sign-in": "sign-in/src", "app": "app/src"}
# Crates whose cycles and sizes fail the check; the others' cycles are printed as notes.
ENFORCED = {"core", "edge", "sign-in", "app"}
EXTERNAL_ALIASES = {"ringi_core": "core"}


# ---- lexing: code without comments and string contents, and the line of each offset ----


def strip_code(text):
    """`text` with comments and string/char literal contents blanked (newlines kept), so that braces and
    paths are real code."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(blank(text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(blank(text[i:j + 1]))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if m:  # a char literal (a lifetime has no closing quote)
                out.append(blank(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def blank(s):
    return re.sub(r"[^\n]", " ", s)


def matching_brace(code, open_at):
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if not depth:
                return j
    return len(code) - 1


def test_spans(code):
    """Offsets of `#[cfg(test)]` items and `#[test]` functions."""
    spans = []
    for m in re.finditer(r"#\[(cfg\(test\)|test)\]", code):
        brace = code.find("{", m.end())
        semi = code.find(";", m.end())
        if brace < 0 or (0 <= semi < brace):
            continue
        spans.append((m.start(), matching_brace(code, brace)))
    return spans


def in_spans(pos, spans):
    return any(a <= pos <= b for a, b in spans)


# ---- modules ----


class Module:
    def __init__(self, crate, path, file):
        self.crate, self.path, self.file = crate, path, file  # path: tuple of names below the crate root
        self.text = file.read_text()
        self.code = strip_code(self.text)
        self.tests = test_spans(self.code)
        self.children = set(re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", self.code, re.M))
        self.test_children = set(re.findall(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", self.code))
        self.is_test = False  # a file of tests (`#[cfg(test)] mod tests;` in its parent)
        self.reexports = {}  # name -> absolute path it re-exports
        self.uses = []  # (absolute path, is a pub use) in non-test code
        self.aliases = {}  # local name -> absolute path, from `use`

    @property
    def name(self):
        return "::".join((self.crate,) + self.path)


def module_path(src, file):
    rel = file.relative_to(src).with_suffix("").parts
    if rel in (("lib",), ("main",)):
        return ()
    return rel[:-1] if rel[-1] == "mod" else rel


def expand_use(tree):
    """`a::{b, c::{d as e, self}, f::*}` -> [(["a","b"], "b"), (["a","c","d"], "e"), (["a","c"], "c"), ...]."""
    tree = re.sub(r"\s*(::|[{},])\s*", r"\1", re.sub(r"\s+", " ", tree.strip()))
    out = []

    def walk(prefix, s):
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "," and not depth:
                parts.append(cur)
                cur = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            cur += ch
        parts.append(cur)
        for p in filter(None, parts):
            if "{" in p:
                head, rest = p.split("{", 1)
                walk(prefix + [x for x in head.split("::") if x], rest[:-1])
                continue
            path_s, _, alias = p.partition(" as ")
            segs = prefix + [x for x in path_s.split("::") if x]
            if segs and segs[-1] == "self":
                segs = segs[:-1]
            if segs:
                out.append((segs, alias or segs[-1]))

    walk([], tree)
    return out


def absolute(mod, segs, modules):
    """The absolute (crate, path) a path in `mod` names, or None for another crate / std."""
    head, rest = segs[0], segs[1:]
    if head == "crate":
        return mod.crate, tuple(rest)
    if head in EXTERNAL_ALIASES:
        return EXTERNAL_ALIASES[head], tuple(rest)
    if head in ("super", "self"):
        base = list(mod.path)
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
        return mod.crate, tuple(base) + tuple(segs)
    if head in mod.children:
        return mod.crate, mod.path + tuple(segs)
    if head in mod.aliases:
        crate, path = mod.aliases[head]
        return crate, path + tuple(rest)
    return None


def resolve(target, modules, seen=()):
    """The module that defines what `target` names (following re-exports), as a key of `modules`."""
    crate, path = target
    for cut in range(len(path), -1, -1):
        key = (crate, path[:cut])
        if key in modules:
            rest = path[cut:]
            m = modules[key]
            if rest and rest[0] in m.reexports and (key, rest[0]) not in seen:
                c2, p2 = m.reexports[rest[0]]
                return resolve((c2, p2 + rest[1:]), modules, seen + ((key, rest[0]),))
            return key
    return None


def load(crates):
    modules = {}
    for crate, src in crates.items():
        srcdir = ROOT / src
        if not srcdir.is_dir():
            continue
        for f in sorted(srcdir.rglob("*.rs")):
            m = Module(crate, module_path(srcdir, f), f)
            modules[(crate, m.path)] = m
    for m in list(modules.values()):
        for name in m.test_children:
            if (m.crate, m.path + (name,)) in modules:
                modules[(m.crate, m.path + (name,))].is_test = True
    use_re = re.compile(r"(^|[;{}\]]\s*)(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
    for m in modules.values():
        if m.is_test:
            continue
        for u in use_re.finditer(m.code):
            if in_spans(u.start(3), m.tests):
                continue
            for segs, alias in expand_use(u.group(3)):
                if segs[-1] == "*":
                    segs = segs[:-1]
                target = absolute(m, segs, modules)
                if target is None:
                    continue
                if u.group(2):
                    m.reexports[alias] = target
                if target in modules or resolve(target, modules) == target:
                    m.aliases[alias] = target
                m.uses.append((target, bool(u.group(2))))
        for p in re.finditer(r"(?<![\w:])((?:crate|super|self|ringi_core|\w+)(?:::\w+)+)", m.code):
            if in_spans(p.start(), m.tests) or re.match(r"\s*(pub(\([^)]*\))?\s+)?use\b", m.code[m.code.rfind("\n", 0, p.start()) + 1:p.start()]):
                continue
            segs = p.group(1).split("::")
            if segs[0] not in ("crate", "super", "self") and segs[0] not in EXTERNAL_ALIASES and segs[0] not in m.children and segs[0] not in m.aliases:
                continue
            target = absolute(m, segs, modules)
            if target:
                m.uses.append((target, False))
    return modules


def graph(modules):
    edges = {k: set() for k in modules}
    for key, m in modules.items():
        for target, is_pub in m.uses:
            to = resolve(target, modules)
            if to is None or to == key:
                continue
            facade = is_pub and to[0] == key[0] and to[1][: len(key[1])] == key[1]
            if not facade and not (to[1][: len(key[1])] == key[1] and to[0] == key[0] and not key[1]):
                edges[key].add(to)
    return edges


def cycles(edges):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return out


def layer_of(key):
    crate, path = key
    if crate != "core" or not path:
        return None
    for i, names in enumerate(LAYERS):
        if path[0] in names:
            return i
    return -1


# ---- sizes ----


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def reason_above(lines, line_no):
    """A `// size:` comment among the doc/attribute/comment lines right above line `line_no` (1-based)."""
    i = line_no - 2
    while i >= 0 and re.match(r"\s*(//|#\[|#!\[)", lines[i]):
        if re.match(r"\s*// size:\s*\S", lines[i]):
            return True
        i -= 1
    return False


def sizes(m):
    """(file lines, [(fn name, line, length, excused)])."""
    lines = m.text.split("\n")
    fns = []
    for f in re.finditer(r"\bfn\s+(\w+)", m.code):
        if in_spans(f.start(), m.tests):
            continue
        j = f.end()
        while j < len(m.code) and m.code[j] not in "{;":
            j += 1
        if j >= len(m.code) or m.code[j] == ";":
            continue
        end = matching_brace(m.code, j)
        start = line_of(m.code, f.start())
        fns.append((f.group(1), start, line_of(m.code, end) - start + 1, reason_above(lines, start)))
    return len(lines) - (1 if m.text.endswith("\n") else 0), fns


def main():
    quiet = "--quiet" in sys.argv
    modules = load(CRATES)
    edges = graph(modules)
    problems = []

    notes = []
    for comp in cycles(edges):
        (problems if comp[0][0] in ENFORCED else notes).append("import cycle: " + " <-> ".join(modules[k].name for k in comp))

    for key, tos in edges.items():
        lk = layer_of(key)
        if lk == -1:
            problems.append(f"{modules[key].file.relative_to(ROOT)}: not in a layer folder (scripts/lint/check_layers.py LAYERS)")
        for to in tos:
            lt = layer_of(to)
            if lk is not None and lt is not None and lk >= 0 and lt > lk:
                problems.append(f"layer: {modules[key].name} (layer {LAYERS[lk]}) uses {modules[to].name} (layer {LAYERS[lt]})")

    file_sizes, fn_sizes = [], []
    for key, m in modules.items():
        if key[0] not in ENFORCED or m.is_test:
            continue
        n, fns = sizes(m)
        rel = m.file.relative_to(ROOT)
        file_ok = any(re.match(r"\s*// size:\s*\S", l) for l in m.text.split("\n")[:5])
        file_sizes.append((n, str(rel)))
        if n > MAX_FILE_LINES and not file_ok:
            problems.append(f"size: {rel} has {n} lines (> {MAX_FILE_LINES}) and no `// size:` reason")
        for name, line, length, ok in fns:
            fn_sizes.append((length, f"{rel}:{line} {name}"))
            if length > MAX_FN_LINES and not ok:
                problems.append(f"size: {rel}:{line} fn {name} has {length} lines (> {MAX_FN_LINES}) and no `// size:` reason")

    if not quiet:
        for crate in CRATES:
            mods = [k for k in modules if k[0] == crate and not modules[k].is_test]
            n_edges = sum(len(edges[k]) for k in mods)
            cyc = [c for c in cycles(edges) if c[0][0] == crate]
            print(f"{crate}: {len(mods)} modules, {n_edges} imports between them, {len(cyc)} cycles"
                  + (f" ({sum(map(len, cyc))} modules in them)" if cyc else ""))
        core_files = sorted((s for s in file_sizes if s[1].startswith("core/")), reverse=True)
        print("largest core files: " + ", ".join(f"{p.removeprefix('core/src/')} {n}" for n, p in core_files[:5]))
        core_fns = sorted((s for s in fn_sizes if s[1].startswith("core/")), reverse=True)
        print("longest core functions: " + ", ".join(f"{p.removeprefix('core/src/')} {n}" for n, p in core_fns[:3]))
        for n in notes:
            print("note:", n)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problems")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
