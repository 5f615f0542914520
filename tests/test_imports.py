"""The import graph of the package, built from the source: no circles, analyses never fetch.

The graph is read with :mod:`ast` from every ``dentalkit/**/*.py`` file, so it sees what a
newcomer reads: module-level imports **and** imports inside functions (the usual way a circle
is hidden). Imports under ``if TYPE_CHECKING:`` are left out: they never run.
An edge goes to the most specific module that exists: ``from dentalkit import settings``
is an edge to ``dentalkit.settings``; ``from dentalkit.errors import InputError`` to
``dentalkit.errors``; ``from dentalkit import Client`` to ``dentalkit`` (the root
``__init__``). Importing a submodule is not counted as importing its parent package (the
parent only runs its ``__init__``), as in grimp / import-linter.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Analysis packages: pure functions on tables (docs/DESIGN: "none imports fetch/").
ANALYSIS = (
    "convert",
    "qc",
    "ceph",
    "arch",
    "teeth",
    "findings",
    "tle",
    "stats",
    "agreement",
    "plot",
)
#: Fetch code.
FETCH = ("dentalkit.fetch",)
#: At most this many modules at the package root (``.py`` files directly in
#: ``dentalkit/``): the root holds what every stage shares, the stages live in packages.
MAX_ROOT_MODULES = 14
#: Longest file of the study package (lines): a longer one is a list of steps that wants
#: its own module.
MAX_STUDY_LINES = 800

#: Circles that exist today and are fixed by a named step. The test fails when one of them
#: disappears, so that its entry is removed with the fix (and cannot hide a new circle).
KNOWN_CIRCLES: set[frozenset[str]] = set()


@cache
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST):
    """Yield every Import / ImportFrom node that can run (all depths, not TYPE_CHECKING)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def module_files(src: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Map dotted module names to (file, is_package) for ``src/package``."""
    out = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


def import_graph(src: Path, package: str = "dentalkit") -> dict[str, set[str]]:
    """Edges module → modules it imports (inside ``package`` only), from the source."""
    mods = module_files(src, package)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, (path, is_pkg) in mods.items():
        targets: set[str] = set()
        for node in _imports(_parse(path)):
            if isinstance(node, ast.Import):
                targets |= {resolve(a.name) for a in node.names if a.name.startswith(package)}
                continue
            base = node.module or ""
            if node.level:  # relative import
                anchor = name if is_pkg else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            if base != package and not base.startswith(package + "."):
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in mods else resolve(base))
        targets.discard(None)
        targets.discard(name)
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[frozenset[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.add(member)
                    if member == node:
                        break
                if len(comp) > 1:
                    found.append(frozenset(comp))
    return found


def reachable(graph: dict[str, set[str]], start: str, stop: str = "") -> dict[str, str]:
    """Modules reachable from ``start``, each with the module that imports it (for paths).

    ``stop`` is reached but not walked through.
    """
    seen = {start: ""}
    todo = [start]
    while todo:
        node = todo.pop()
        if node == stop:
            continue
        for nxt in graph.get(node, ()):
            if nxt not in seen:
                seen[nxt] = node
                todo.append(nxt)
    return seen


def _path(seen: dict[str, str], end: str) -> str:
    chain = [end]
    while seen[chain[-1]]:
        chain.append(seen[chain[-1]])
    return " -> ".join(reversed(chain))


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT)


def test_no_import_circles(graph):
    found = set(circles(graph))
    new = found - KNOWN_CIRCLES
    assert not new, "import circles (module-level or inside functions): " + "; ".join(
        " <-> ".join(sorted(c)) for c in new
    )
    fixed = KNOWN_CIRCLES - found
    assert not fixed, f"circle(s) fixed, remove them from KNOWN_CIRCLES: {fixed}"


def root_names(src: Path, package: str = "dentalkit") -> dict[str, set[str]]:
    """Names each module takes from the root package (``from dentalkit import __version__``)
    that are not submodules."""
    mods = module_files(src, package)
    out: dict[str, set[str]] = {}
    for name, (path, _) in mods.items():
        for node in _imports(_parse(path)):
            if isinstance(node, ast.ImportFrom) and node.module == package and not node.level:
                out.setdefault(name, set()).update(
                    a.name for a in node.names if f"{package}.{a.name}" not in mods
                )
    return out


def _all_of(path: Path) -> set[str]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    raise AssertionError(f"{path} has no __all__")


def _analysis(name: str) -> bool:
    parts = name.split(".")
    return len(parts) > 1 and parts[1] in ANALYSIS


def test_analysis_modules_never_reach_fetch_code(graph):
    # The root package is reached but not walked through: every submodule import runs the
    # root ``__init__`` anyway, and two modules take ``__version__`` from it. What an analysis
    # module takes from the root is checked by name below.
    bad = []
    for name in sorted(graph):
        if _analysis(name):
            seen = reachable(graph, name, stop="dentalkit")
            bad += [
                _path(seen, m)
                for m in sorted(seen)
                if any(m == f or m.startswith(f + ".") for f in FETCH)
            ]
    assert not bad, "analysis modules import fetch code:\n" + "\n".join(bad)


def test_sandbox_reaches_no_analysis_module(graph):
    # DESIGN: the simulator builds its geometry with its own code, or a recovery test would
    # check the analysis code against itself
    bad = []
    for name in sorted(graph):
        if name == "dentalkit.sandbox" or name.startswith("dentalkit.sandbox."):
            seen = reachable(graph, name, stop="dentalkit")
            bad += [_path(seen, m) for m in sorted(seen) if _analysis(m)]
    assert not bad, "the sandbox imports analysis code:\n" + "\n".join(bad)


def test_analysis_modules_take_no_fetch_name_from_the_root(graph):
    fetch_names = _all_of(ROOT / "dentalkit" / "fetch" / "__init__.py")
    assert {"Client", "fetch_cohort", "read_responses"} <= fetch_names
    taken = root_names(ROOT)
    # the same walk as above, from every module an analysis module reaches
    bad = {
        f"{mod} (reached from {name}): {sorted(taken[mod] & fetch_names)}"
        for name in graph
        if _analysis(name)
        for mod in reachable(graph, name, stop="dentalkit")
        if taken.get(mod, set()) & fetch_names
    }
    assert not bad, "analysis code takes fetch names from dentalkit: " + "; ".join(sorted(bad))
    # the walk sees root imports (plot's savefig and the export stamp the version)
    assert any("__version__" in names for names in taken.values())


def test_fetch_modules_live_in_the_fetch_package(graph):
    # the old root paths are gone, and every fetch module is found by the graph
    for old in ("client", "cohort", "store", "distributed", "pipeline", "demo", "_deprecate"):
        assert f"dentalkit.{old}" not in graph
    for gone in ("_http", "_download", "_manifest", "_build", "_methods", "_rediscache"):
        assert f"dentalkit.{gone}" not in graph
        assert f"dentalkit.fetch.{gone}" in graph
    assert "dentalkit.fetch._result" in graph["dentalkit.fetch._download"]
    assert "dentalkit.fetch.client" not in graph["dentalkit.fetch._download"]


def upward_reexports(src: Path, package: str = "dentalkit") -> list[str]:
    """Public names a subpackage's ``__init__`` takes from outside the subpackage.

    A package re-exports (lists in ``__all__``) only what its own modules define: a name
    taken from a module outside it (``io`` re-exporting ``dentalkit.distributed``'s
    functions from its last line, before issue 24) points upward or sideways, and hides
    where the code lives. The root package is the public facade and is exempt; helpers
    imported for use and not listed in ``__all__`` are not re-exports.
    """
    mods = module_files(src, package)
    bad = []
    for name, (path, is_pkg) in sorted(mods.items()):
        if not is_pkg or name == package:
            continue
        tree = _parse(path)
        try:
            public = _all_of(path)
        except AssertionError:
            continue
        for node in _imports(tree):
            if not isinstance(node, ast.ImportFrom) or node.level:
                continue  # relative imports stay inside the package by construction
            base = node.module or ""
            if base == name or base.startswith(name + "."):
                continue
            taken = sorted(a.asname or a.name for a in node.names if (a.asname or a.name) in public)
            bad += [f"{name} re-exports {n} from {base}" for n in taken]
    return bad


def test_packages_reexport_only_their_own_modules():
    assert not upward_reexports(ROOT), "re-exports from outside the package: " + "; ".join(
        upward_reexports(ROOT)
    )


def test_partitioned_parquet_lives_in_the_io_package(graph):
    assert "dentalkit.io.partitioned" in graph["dentalkit.io"]


def test_the_package_root_holds_few_modules():
    root = sorted(p.name for p in (ROOT / "dentalkit").glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, f"{len(root)} modules at the root: {root}"


def test_no_study_file_is_longer_than_the_limit():
    long = {
        p.name: n
        for p in sorted((ROOT / "dentalkit" / "study").glob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_STUDY_LINES
    }
    assert not long, f"study files over {MAX_STUDY_LINES} lines: {long}"


#: What the command line may import: the stages' public entry points and what it prints
#: (the fetch's wording of failures, the report's notes), never an analysis package.
CLI_MAY_IMPORT = {
    "dentalkit",
    "dentalkit._progress",
    "dentalkit.contract",
    "dentalkit.convert",
    "dentalkit.endpoints",
    "dentalkit.errors",
    "dentalkit.io",
    "dentalkit.openapi",
    "dentalkit.settings",
    "dentalkit.study",
    "dentalkit.study.demo",
    "dentalkit.study.report",
}


def cli_imports(graph: dict[str, set[str]]) -> set[str]:
    """Modules the command line imports that it may not (:data:`CLI_MAY_IMPORT`, plus the
    I/O stages — images, fetch, sandbox — and their and io's wording helpers)."""
    stages = ("dentalkit.images", "dentalkit.fetch", "dentalkit.sandbox", "dentalkit.io._")
    allowed = lambda m: m in CLI_MAY_IMPORT or m.startswith(stages)  # noqa: E731
    return {m for m in graph["dentalkit.cli"] if not allowed(m)}


def test_the_command_line_only_parses_and_prints(graph):
    # the study's logic (analyses, calibration, groups, treatment length) lives in
    # dentalkit.study; the command line calls its public names and prints their notes
    assert not cli_imports(graph), f"cli imports {sorted(cli_imports(graph))}"
    assert {"dentalkit.study", "dentalkit.study.report"} <= graph["dentalkit.cli"]
    # the check can fail: an analysis package or a study internal is refused
    bad = {**graph, "dentalkit.cli": {"dentalkit.arch", "dentalkit.study.analyses"}}
    assert cli_imports(bad) == {"dentalkit.arch", "dentalkit.study.analyses"}


def test_package_code_takes_layout_names_from_plot_layout():
    # plot.style re-exports the layout names it had (for users' imports); the package's
    # own modules import them where they live, dentalkit/plot/_layout.py
    layout = _all_of(ROOT / "dentalkit" / "plot" / "_layout.py")
    assert {"figure", "savefig", "PIXEL_VIEWS"} <= layout
    bad = []
    for name, (path, _) in module_files(ROOT, "dentalkit").items():
        if name == "dentalkit.plot.style":
            continue
        for node in _imports(_parse(path)):
            if isinstance(node, ast.ImportFrom) and node.module == "dentalkit.plot.style":
                bad += [f"{name}: {a.name}" for a in node.names if a.name in layout]
    assert not bad, "layout names taken through plot.style: " + "; ".join(sorted(bad))


# ---- the checker itself, on small packages written here -----------------------------
def _write(tmp: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp


def test_checker_finds_a_circle_hidden_in_a_function(tmp_path):
    src = _write(
        tmp_path,
        {
            "pk/__init__.py": "",
            "pk/a.py": "from pk.b import f\n",
            "pk/b.py": "def f():\n    from pk import a\n    return a\n",
            "pk/c.py": "import pk.a\n",
        },
    )
    graph = import_graph(src, "pk")
    assert graph["pk.b"] == {"pk.a"}  # `from pk import a` is the module pk.a
    assert circles(graph) == [frozenset({"pk.a", "pk.b"})]


def test_checker_resolves_relative_imports_and_skips_type_checking(tmp_path):
    src = _write(
        tmp_path,
        {
            "pk/__init__.py": "from .sub import x\n",
            "pk/sub/__init__.py": "from ..y import Y\nx = 1\n",
            "pk/y.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pk.sub import x\n"
                "Y = 2\n"
            ),
        },
    )
    graph = import_graph(src, "pk")
    assert graph == {"pk": {"pk.sub"}, "pk.sub": {"pk.y"}, "pk.y": set()}
    assert circles(graph) == []


def test_checker_finds_an_upward_reexport(tmp_path):
    src = _write(
        tmp_path,
        {
            "pk/__init__.py": "from pk.sub import f\n__all__ = ['f']\n",
            "pk/top.py": "def g():\n    return 1\n",
            "pk/sub/__init__.py": (
                "from pk.sub.inner import f\nfrom pk.top import g\nfrom pk.errors import E\n"
                "__all__ = ['f', 'g']\n"
            ),
            "pk/sub/inner.py": "def f():\n    return 2\n",
            "pk/errors.py": "class E(Exception):\n    pass\n",
        },
    )
    # g is listed in __all__ and comes from above; E is used, not re-exported; the root is
    # the facade
    assert upward_reexports(src, "pk") == ["pk.sub re-exports g from pk.top"]
