#!/usr/bin/env python3
"""Fails when the cold build grows past its budget, so that a new dependency or test binary is a
decision taken in the commit that adds it, with its measured cold cost, not found later as a CI
run past 90 minutes.

What a cold build costs on the 2-core machine follows three counts, each read from Cargo's own
metadata (no build needed):

- crates compiled: every package the workspace's builds, tests and build scripts compile for
  this machine (normal, build and dev dependencies, Weir's own crates included);
- crates in two or more versions: each extra version is compiled again;
- linked executables: what `cargo build --all-targets` links (binaries, each library's and
  binary's unit-test harness, integration tests, benches, examples). Most of them link
  DataFusion, librdkafka or both: every one costs its own code generation and a link of
  ~200 MB; those that link DataFusion are counted apart.

The budgets below are today's counts, so anything that adds to them fails the check until the
commit adding it raises the budget: say why there, with the measured cold build cost
(`cargo build --release --timings` before and after) and the README's stage table in mind.

Usage: scripts/build_budget.py            check (prints "build budget: N passed, N failed")
       scripts/build_budget.py --list     also lists the duplicates and the executables
"""
import json
import subprocess
import sys
from collections import defaultdict

BUDGET = {
    # 425 and 22: weir-wire (client/wire), the protocol client moved out of the broker so that
    # the clients live in one folder: no new dependency; its library took 1.5 s and its
    # unit-test binary 2.1 s (`cargo build --release -p weir-wire --lib --tests --timings`
    # after `cargo clean -p weir-wire`), the broker's library lost the same code.
    "crates compiled": 425,
    "crates in two or more versions": 20,
    # 21 and 6: the interval join's crash test is a binary of its own again (5 s of build,
    # cli/tests/interval_crash.rs says why); 22 with weir-wire's unit tests.
    "linked executables": 22,
    "executables linking DataFusion": 6,
}
HEAVY = "datafusion"


def metadata():
    host = subprocess.run(
        ["rustc", "-vV"], check=True, capture_output=True, text=True
    ).stdout.split("host: ")[1].split()[0]
    output = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", host],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(output)


def reachable(meta, roots, kinds):
    """Package ids reachable from roots over dependency edges of the given kinds."""
    nodes = {node["id"]: node for node in meta["resolve"]["nodes"]}
    seen, stack = set(), list(roots)
    while stack:
        package = stack.pop()
        if package in seen:
            continue
        seen.add(package)
        for dep in nodes[package]["deps"]:
            if any(kind["kind"] in kinds for kind in dep["dep_kinds"]):
                stack.append(dep["pkg"])
    return seen


def executables(meta):
    """(package, target kind, name) of everything `cargo build --all-targets` links."""
    members = set(meta["workspace_members"])
    found = []
    for package in meta["packages"]:
        if package["id"] not in members:
            continue
        for target in package["targets"]:
            kind = target["kind"][0]
            if kind in ("bin", "test", "bench", "example"):
                found.append((package["id"], kind, target["name"]))
            if kind in ("lib", "bin") and target.get("test", True):
                found.append((package["id"], f"{kind} unit tests", target["name"]))
    return found


def main():
    meta = metadata()
    members = meta["workspace_members"]
    by_id = {package["id"]: package for package in meta["packages"]}
    compiled = reachable(meta, members, {None, "build", "dev"})
    versions = defaultdict(set)
    for package in compiled:
        versions[by_id[package]["name"]].add(by_id[package]["version"])
    duplicates = {name: sorted(v) for name, v in versions.items() if len(v) > 1}
    linked = executables(meta)
    heavy = []
    for package, kind, name in linked:
        # An executable links its package's normal dependencies, and dev ones unless it is the
        # binary itself.
        kinds = {None, "build"} if kind == "bin" else {None, "build", "dev"}
        if any(by_id[p]["name"] == HEAVY for p in reachable(meta, [package], kinds)):
            heavy.append((package, kind, name))
    counts = {
        "crates compiled": len(compiled),
        "crates in two or more versions": len(duplicates),
        "linked executables": len(linked),
        "executables linking DataFusion": len(heavy),
    }
    if "--list" in sys.argv:
        for name, found in sorted(duplicates.items()):
            print(f"duplicate: {name} {', '.join(found)}")
        for package, kind, name in linked:
            mark = " (DataFusion)" if (package, kind, name) in heavy else ""
            print(f"executable: {by_id[package]['name']} {kind} {name}{mark}")
    failed = 0
    for what, count in counts.items():
        budget = BUDGET[what]
        verdict = "ok" if count <= budget else "OVER BUDGET"
        print(f"{what}: {count} (budget {budget}) {verdict}")
        failed += count > budget
    if failed:
        print(
            "The cold build grew past its budget: measure the cost of what was added "
            "(README, Build and test time) and raise the budget in scripts/build_budget.py "
            "in the same commit, saying why."
        )
    print(f"build budget: {len(counts) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
