#!/usr/bin/env python3
"""Checks the broker's layering: each module imports only from its own layer or below.

The layers, bottom to top, are in LAYERS below (the order DESIGN.md and broker/src/lib.rs
describe). Every `crate::` path a file names — in `use` items (braces expanded), inline paths
and `super::` paths — is resolved to the top-level module it lands in; a path into a higher
layer is a violation. Files are also grouped into import cycles (strongly connected components
of the file graph), and a cycle of more than MAX_CYCLE_FILES files fails the check.

Usage: scripts/layers/check.py [CRATE_SRC]   (default broker/src)
       scripts/layers/check.py --graph       also prints the module-to-module imports
       scripts/layers/check.py --self-test   checks the checker on small made-up crates
Prints "layers: N passed, N failed" last; exits non-zero on a violation.
"""
import os
import re
import sys
from collections import defaultdict

# Bottom first. Modules in one layer may use each other.
LAYERS = [
    ["clock", "memory_pool", "seeded_rng", "shutdown"],
    ["config"],
    ["log", "producer", "security", "client"],
    ["partition"],
    ["cluster", "topic", "error"],
    ["group", "transaction", "replication", "broker_configs", "user_credentials", "acls",
     "fetch_session"],
    ["context", "metrics"],
    ["handler"],
    ["server"],
    ["lib"],
]
MAX_CYCLE_FILES = 2


def rank_of(module):
    for rank, layer in enumerate(LAYERS):
        if module in layer:
            return rank
    return None


def strip_comments(text):
    """Drops comments and the contents of string and char literals (they may say `crate::`)."""
    out, index, length = [], 0, len(text)
    while index < length:
        char, rest = text[index], text[index : index + 2]
        if rest == "//":
            index = text.find("\n", index)
            index = length if index < 0 else index
        elif rest == "/*":
            depth, index = 1, index + 2
            while index < length and depth:
                if text.startswith("/*", index):
                    depth, index = depth + 1, index + 2
                elif text.startswith("*/", index):
                    depth, index = depth - 1, index + 2
                else:
                    index += 1
        elif raw := re.match(r'b?r(#*)"', text[index : index + 260]):
            if index and (text[index - 1].isalnum() or text[index - 1] == "_"):
                out.append(char)
                index += 1
                continue
            end = text.find('"' + raw.group(1), index + raw.end())
            out.append('""')
            index = length if end < 0 else end + 1 + len(raw.group(1))
        elif char == '"':
            index += 1
            while index < length and text[index] != '"':
                index += 2 if text[index] == "\\" else 1
            out.append('""')
            index += 1
        elif char == "'" and (literal := re.match(r"'(?:\\.[^']*|[^\\'])'", text[index : index + 12])):
            out.append("' '")
            index += literal.end()
        else:
            out.append(char)
            index += 1
    return "".join(out)


def expand_tree(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (self and globs kept as segments)."""
    tree = tree.strip()
    depth = 0
    for index, char in enumerate(tree):
        if char == "{":
            if depth == 0:
                prefix = tree[:index]
                inner = tree[index + 1 : tree.rindex("}")]
                parts, start, level = [], 0, 0
                for position, c in enumerate(inner):
                    if c == "{":
                        level += 1
                    elif c == "}":
                        level -= 1
                    elif c == "," and level == 0:
                        parts.append(inner[start:position])
                        start = position + 1
                parts.append(inner[start:])
                paths = []
                for part in parts:
                    if part.strip():
                        paths += [prefix + p for p in expand_tree(part)]
                return paths
            depth += 1
    return [re.sub(r"\s+as\s+\w+$", "", tree)]


def module_path(src, path):
    """broker/src/a/b.rs -> [a, b]; a/mod.rs -> [a]; lib.rs -> []."""
    relative = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
    if relative[-1] in ("mod", "lib"):
        relative = relative[:-1]
    return relative


def resolve(segments, here):
    """A path's segments -> absolute module segments (from the crate root), or None."""
    if not segments:
        return None
    if segments[0] == "crate":
        return segments[1:]
    if segments[0] in ("super", "self"):
        base = list(here)
        while segments and segments[0] in ("super", "self"):
            if segments[0] == "super":
                if not base:
                    return None
                base.pop()
            segments = segments[1:]
        return base + segments
    return None


def paths_in(text):
    """Every path a file names that starts at crate, super or self."""
    found = []
    for item in re.finditer(r"\buse\s+([^;]+);", text):
        for path in expand_tree(item.group(1)):
            found.append([s.strip() for s in path.split("::") if s.strip()])
    body = re.sub(r"\buse\s+[^;]+;", "", text)
    for inline in re.finditer(r"\b((?:crate|super)(?:::\w+)+)", body):
        found.append(inline.group(1).split("::"))
    return found


def file_for(src, segments):
    """The longest prefix of segments that is a file: src/a/b.rs or src/a/b/mod.rs."""
    for length in range(len(segments), 0, -1):
        base = os.path.join(src, *segments[:length])
        for candidate in (base + ".rs", os.path.join(base, "mod.rs")):
            if os.path.isfile(candidate):
                return candidate
    return None


def is_test_file(src, path, text):
    name = os.path.basename(path)
    return name == "tests.rs" or name.endswith("_tests.rs") or "/tests/" in path


def strip_test_modules(text):
    """Drops `#[cfg(test)] mod x { ... }` bodies: tests may reach any layer."""
    out, index = [], 0
    for match in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if match.start() < index:
            continue
        out.append(text[index : match.start()])
        depth, position = 1, match.end()
        while position < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[position], 0)
            position += 1
        index = position
    out.append(text[index:])
    return "".join(out)


def test_only_files(src, files):
    """Files declared behind #[cfg(test)] (`#[cfg(test)] mod x;`), and everything under them."""
    declared = set()
    for path, text in files.items():
        for match in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text):
            here = module_path(src, path)
            target = file_for(src, here + [match.group(1)])
            if target and module_path(src, target) == here + [match.group(1)]:
                declared.add(os.path.dirname(target) if target.endswith("mod.rs") else target)
    return {p for p in files if any(p == d or p.startswith(d + os.sep) for d in declared)}


def scc(graph):
    index, low, stack, on_stack, result, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            result.append(component)

    sys.setrecursionlimit(10000)
    for node in list(graph):
        if node not in index:
            visit(node)
    return result


def check(src, show_graph=False):
    files = {}
    for directory, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(directory, name)
                files[path] = strip_comments(open(path, encoding="utf-8").read())
    tests = test_only_files(src, files)
    violations, unknown, graph, modules = [], set(), defaultdict(set), defaultdict(set)
    for path, text in sorted(files.items()):
        if path in tests or is_test_file(src, path, text):
            continue
        here = module_path(src, path)
        top = here[0] if here else "lib"
        own_rank = rank_of(top)
        if own_rank is None:
            unknown.add(top)
            continue
        for segments in paths_in(strip_test_modules(text)):
            target = resolve(segments, here)
            if not target:
                continue
            target_top = target[0]
            target_file = file_for(src, target)
            if target_file and target_file != path and target_file not in tests:
                graph[path].add(target_file)
            if target_top == top:
                continue
            target_rank = rank_of(target_top)
            if target_rank is None:
                if file_for(src, [target_top]):
                    unknown.add(target_top)
                continue
            modules[top].add(target_top)
            if target_rank > own_rank:
                violations.append(f"{path}: uses {'::'.join(target)} ({target_top} is above {top})")
    if show_graph:
        for module in sorted(modules, key=lambda m: (rank_of(m), m)):
            print(f"{module} -> {', '.join(sorted(modules[module], key=lambda m: (rank_of(m), m)))}")
    cycles = [sorted(c) for c in scc(graph) if len(c) > MAX_CYCLE_FILES]
    failed = 0
    for violation in sorted(set(violations)):
        print(f"upward import: {violation}")
    failed += len(set(violations))
    for module in sorted(unknown):
        print(f"module {module} is in no layer: add it to LAYERS in scripts/layers/check.py")
    failed += len(unknown)
    for cycle in cycles:
        print(f"import cycle of {len(cycle)} files: {', '.join(cycle)}")
    failed += len(cycles)
    checked = len(files) - len(tests)
    return checked - min(failed, checked), failed


SELF_TESTS = {
    # name: (files, expected failures)
    "downward imports pass": (
        {
            "lib.rs": "pub mod log;\npub mod handler;\n",
            "log/mod.rs": "pub mod segment;\nuse crate::clock::Clock;\n",
            "log/segment.rs": "use super::super::config::X;\n",
            "handler/mod.rs": "use crate::{log::segment, group::{self, GroupError}};\n",
        },
        0,
    ),
    "an upward use fails": ({"log/mod.rs": "use crate::handler::errors::error_for;\n"}, 1),
    "an upward path in braces fails": ({"group/mod.rs": "use crate::{log, server::stopped};\n"}, 1),
    "an inline upward path fails": ({"cluster/mod.rs": "fn f() { crate::context::go(); }\n"}, 1),
    "an upward super path fails": ({"log/mod.rs": "use super::handler::x;\n"}, 1),
    "paths in comments and strings pass": (
        {"log/mod.rs": '// crate::server::x\n/* crate::server::y */\nconst S: &str = "crate::server";\n'},
        0,
    ),
    "test modules may reach up": (
        {"log/mod.rs": "#[cfg(test)]\nmod tests {\n    use crate::server::x;\n}\n"},
        0,
    ),
    "an unknown module fails": ({"widgets/mod.rs": "use crate::log::x;\n"}, 1),
    "a cycle of three files fails": (
        {
            "log/a.rs": "use crate::log::b::x;\n",
            "log/b.rs": "use crate::log::c::x;\n",
            "log/c.rs": "use crate::log::a::x;\n",
        },
        1,
    ),
}


def self_test():
    import tempfile

    failures = 0
    for name, (files, expected) in SELF_TESTS.items():
        with tempfile.TemporaryDirectory() as src:
            for path, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(src, path)), exist_ok=True)
                with open(os.path.join(src, path), "w", encoding="utf-8") as out:
                    out.write(text)
            import contextlib
            import io

            with contextlib.redirect_stdout(io.StringIO()):
                _, failed = check(src)
        if failed != expected:
            failures += 1
            print(f"self-test '{name}': {failed} failures, expected {expected}")
    print(f"layers self-test: {len(SELF_TESTS) - failures} passed, {failures} failed")
    return 1 if failures else 0


def main():
    if "--self-test" in sys.argv:
        return self_test()
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    passed, failed = check(args[0] if args else "broker/src", "--graph" in sys.argv)
    print(f"layers: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
