#!/usr/bin/env python3
"""Checks each crate's layering: a module imports only from its own layer or below.

The layers of every crate, bottom to top, are in LAYERS below (each crate's lib.rs tour says
what they are). Every path a file names — `use` items (braces expanded) and inline paths that
start at `crate`, `super`, `self` or one of the file's own child modules — is resolved to the
top-level module it lands in; a path into a higher layer is a violation. Files are also grouped
into import cycles (strongly connected components of the file graph), and a simple cycle of
more than MAX_CYCLE_FILES files fails the check (a parent that calls its children, each of
which imports from the parent, is only cycles of two).

Usage: scripts/layers/check.py [CRATE_SRC…]  (default: every crate in LAYERS)
       scripts/layers/check.py --graph       also prints the module-to-module imports
       scripts/layers/check.py --self-test   checks the checker on small made-up crates
Prints "layers: N passed, N failed" last; exits non-zero on a violation.
"""
import os
import re
import sys
from collections import defaultdict

# Per crate, bottom first. Modules in one layer may use each other; `lib` (or `main`) is the
# crate root.
CRATE_LAYERS = {
    "broker/src": [
        ["clock", "durable_file", "memory_pool", "seeded_rng", "shutdown"],
        ["config"],
        ["log", "producer", "security"],
        ["partition"],
        ["cluster", "topic", "error"],
        ["group", "transaction", "replication", "broker_configs", "user_credentials", "acls",
         "fetch_session", "quota"],
        ["context", "metrics"],
        ["handler"],
        ["server"],
        ["lib"],
    ],
    "tls/src": [["pem"], ["followed", "verify"], ["lib"]],
    "weblog/src": [["clock"], ["access", "body"], ["lib"]],
    "client/rdkafka/src": [["error", "settings"], ["reach", "checkpoint", "topics"], ["lib"]],
    "client/wire/src": [
        ["mechanism"],
        ["scram_client", "security"],
        ["connection", "sasl_login"],
        ["lib"],
    ],
    "streams/src": [
        # base: errors, records, the state map, watermarks
        ["error", "record", "state_map", "watermark"],
        # I/O: records <-> Arrow batches, reading topics to their end
        ["io"],
        # planning every query shares: the session, streaming rules, SQL's windows
        ["plan"],
        # operators with their plans and state
        ["aggregate", "join"],
        # the transform: a query planned into one operator, or stateless
        ["sql"],
        # the exactly-once loop
        ["job"],
        # ad-hoc queries over topics
        ["adhoc"],
        ["lib"],
    ],
    "connectors/src": [
        ["error"],
        ["source", "sink", "connector"],
        ["file", "generator", "http", "kafka", "parquet", "postgres", "stdout"],
        ["registry"],
        ["lib"],
    ],
    "pipelines/src": [
        # a pipeline file: where its parts are, what is wrong with them
        ["locate"],
        ["diagnostic", "interpolate"],
        ["error", "config"],
        ["repair"],
        ["load"],
        # what the stages share
        ["cluster", "membership", "metrics", "positions", "schema"],
        # the stages
        ["rows", "windows", "ingest"],
        ["http_ingest", "deliver", "validate"],
        ["run"],
        ["lib"],
    ],
    "cli/src": [
        ["client", "weblog"],
        ["protocol_client", "broker_command", "group_seek"],
        ["acl", "consume", "group", "job", "nexmark", "produce", "sql", "topic_reassign", "txn",
         "user"],
        ["topic", "pipeline"],
        ["main"],
    ],
    "compat/scenario/src": [
        ["broker_configs", "fetch_sessions", "security", "static_members", "transactions"],
        ["compression", "fencing", "oauth"],
        ["main"],
    ],
}
LAYERS = CRATE_LAYERS["broker/src"]
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
    if relative[-1] == "mod" or relative in (["lib"], ["main"]):
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


def child_modules(text):
    """The modules a file declares (`mod x;`, `pub mod x { … }`), not those behind cfg(test)."""
    declared = set(re.findall(r"\bmod\s+(\w+)\s*[;{]", text))
    testing = set(re.findall(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)", text))
    return declared - testing


def paths_in(text):
    """Every path a file names that starts at crate, super, self or one of its child modules
    (a child path comes back as self::child::…)."""
    found = []
    children = child_modules(text)
    for item in re.finditer(r"\buse\s+([^;]+);", text):
        for path in expand_tree(item.group(1)):
            segments = [s.strip() for s in path.split("::") if s.strip()]
            if segments and segments[0] in children:
                segments = ["self"] + segments
            found.append(segments)
    body = re.sub(r"\buse\s+[^;]+;", "", text)
    for inline in re.finditer(r"\b((?:crate|super)(?:::\w+)+)", body):
        found.append(inline.group(1).split("::"))
    if children:
        names = "|".join(sorted(children))
        for inline in re.finditer(rf"(?<![\w:])((?:{names})(?:::\w+)+)", body):
            found.append(["self"] + inline.group(1).split("::"))
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


def imported_names(src, path, text):
    """Name -> absolute module path of what a file's `use` items bring in (re-exports and
    plain imports alike: a child may reach either through `super::`)."""
    here = module_path(src, path)
    names = {}
    children = child_modules(text)
    for item in re.finditer(r"\buse\s+([^;]+);", text):
        for raw in expand_tree(item.group(1)):
            alias = re.search(r"\s+as\s+(\w+)\s*$", raw)
            segments = [s.strip() for s in re.sub(r"\s+as\s+\w+\s*$", "", raw).split("::")]
            segments = [s for s in segments if s]
            if not segments or segments[-1] == "*":
                continue
            if segments[0] in children:
                segments = ["self"] + segments
            if segments[-1] == "self":
                segments = segments[:-1]
            target = resolve(segments, here)
            if target:
                names[alias.group(1) if alias else segments[-1]] = target
    return names


def landing_file(src, target, imports, hops=8):
    """The file that defines what `target` names, following `use` re-exports."""
    target_file = file_for(src, target)
    while target_file and hops:
        depth = len(module_path(src, target_file))
        if len(target) <= depth:
            break
        further = imports.get(target_file, {}).get(target[depth])
        if not further or further == target:
            break
        target, hops = further + target[depth + 1 :], hops - 1
        target_file = file_for(src, target) or target_file
    return target_file


def longest_cycle_exceeds(graph, component, limit):
    """Whether the strongly connected `component` holds a simple cycle of more than `limit`
    (1 or 2) files. A parent module and children that each import from it and are called by it
    form one component, but only cycles of two files: that passes. It holds a longer cycle iff
    an edge inside it is one-way (with the shortest way back it is a cycle of three or more), or
    its two-way edges close a loop (more of them than a tree over its files has)."""
    if len(component) <= limit:
        return False
    members = set(component)
    two_way = 0
    for node in component:
        for succ in graph.get(node, ()):
            if succ not in members:
                continue
            if node not in graph.get(succ, ()):
                return True
            two_way += 1
    return two_way // 2 >= len(component) or limit < 2


def check(src, show_graph=False, layers=None):
    global LAYERS
    LAYERS = layers or CRATE_LAYERS.get(src.rstrip("/"), LAYERS)
    files = {}
    for directory, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(directory, name)
                files[path] = strip_comments(open(path, encoding="utf-8").read())
    tests = test_only_files(src, files)
    imports = {path: imported_names(src, path, strip_test_modules(text)) for path, text in files.items()}
    violations, unknown, graph, modules = [], set(), defaultdict(set), defaultdict(set)
    for path, text in sorted(files.items()):
        if path in tests or is_test_file(src, path, text):
            continue
        here = module_path(src, path)
        top = here[0] if here else os.path.basename(path)[: -len(".rs")]
        own_rank = rank_of(top)
        if own_rank is None:
            unknown.add(top)
            continue
        for segments in paths_in(strip_test_modules(text)):
            target = resolve(segments, here)
            if not target:
                continue
            target_top = target[0]
            target_file = landing_file(src, target, imports)
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
    cycles = [sorted(c) for c in scc(graph) if longest_cycle_exceeds(graph, c, MAX_CYCLE_FILES)]
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
    "a cycle through a child module path fails": (
        {
            "log/mod.rs": "mod a;\nmod b;\npub struct Hub;\nfn go() { a::run(); }\n",
            "log/a.rs": "use super::b::helper;\npub fn run() {}\n",
            "log/b.rs": "use super::Hub;\npub fn helper() {}\n",
        },
        1,
    ),
    "a re-export is followed to where the item is": (
        {
            "log/mod.rs": "mod a;\nmod b;\npub use a::Thing;\nfn go() { b::run(); }\n",
            "log/a.rs": "pub struct Thing;\n",
            "log/b.rs": "use super::Thing;\npub fn run() {}\n",
        },
        0,
    ),
    "an unknown module fails": ({"widgets/mod.rs": "use crate::log::x;\n"}, 1),
    "a cycle of three files fails": (
        {
            "log/a.rs": "use crate::log::b::g;\npub fn f() {}\n",
            "log/b.rs": "use crate::log::c::h;\npub fn g() {}\n",
            "log/c.rs": "use crate::log::a::f;\npub fn h() {}\n",
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
    crates = [a for a in sys.argv[1:] if not a.startswith("--")] or list(CRATE_LAYERS)
    passed = failed = 0
    for src in crates:
        if src.rstrip("/") not in CRATE_LAYERS:
            print(f"{src}: no layers for this crate: add them to CRATE_LAYERS")
            failed += 1
            continue
        crate_passed, crate_failed = check(src, "--graph" in sys.argv)
        print(f"{src}: {crate_passed} files pass, {crate_failed} failures")
        passed, failed = passed + crate_passed, failed + crate_failed
    print(f"layers: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
