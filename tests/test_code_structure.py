"""The house rules that keep the code readable: no import cycle among embtie's modules, no long
functions, and no capability probes (an embtie object declares what it can do)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules() -> dict[str, Path]:
    mods = {}
    for p in (SRC / "embtie").rglob("*.py"):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


def import_graph() -> dict[str, set[str]]:
    """module -> embtie modules it imports, at module level, inside functions or under ``if TYPE_CHECKING:``
    (an import for annotations only still ties the two modules: a cycle through one is a cycle of concepts;
    ``from pkg import submodule`` is an edge to the submodule; the implicit import of parent packages is not
    an edge)."""
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        tree = ast.parse(p.read_text(encoding="utf-8"))
        pkg = m if p.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for t in targets:
                r = resolve(t) if t.startswith("embtie") else None
                if r is not None and r != m:
                    graph[m].add(r)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (as a path that returns to its start), or None."""
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        color[n] = 1
        stack.append(n)
        for nxt in sorted(graph[n]):
            if color.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in color and (found := visit(nxt)):
                return found
        stack.pop()
        color[n] = 2
        return None

    for n in sorted(graph):
        if n not in color and (found := visit(n)):
            return found
    return None


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_import_graph_sees_known_edges():
    g = import_graph()
    assert "embtie.tasks.registry" in g["embtie.tasks.lm.task"]
    assert "embtie.training.trainer" in g["embtie.training.api"]
    assert "embtie.config" in g["embtie.tasks.base"]  # only under TYPE_CHECKING: an edge all the same


def test_no_import_cycle_among_embtie_modules():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph between embtie's top-level packages and modules (``embtie.training``, ``embtie.files``):
    an edge where any module of one imports any module of the other, TYPE_CHECKING imports included."""

    def top(m: str) -> str:
        return ".".join(m.split(".")[:2])

    out: dict[str, set[str]] = {top(m): set() for m in graph}
    for m, targets in graph.items():
        out[top(m)] |= {top(t) for t in targets} - {top(m)}
    return out


def edges_in_cycles(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The edges a -> b that lie on some cycle (b reaches a back)."""

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reached = {n: reach(n) for n in graph}
    return {(a, b) for a in graph for b in graph[a] if a in reached[b]}


def test_cycle_edges_are_found_in_a_planted_package_graph():
    modules = {"embtie.a.x": {"embtie.b.y"}, "embtie.b.y": {"embtie.a.z"}, "embtie.a.z": set(),
               "embtie.c": {"embtie.a.x"}}  # fmt: skip
    packages = package_graph(modules)
    assert packages == {"embtie.a": {"embtie.b"}, "embtie.b": {"embtie.a"}, "embtie.c": {"embtie.a"}}
    assert edges_in_cycles(packages) == {("embtie.a", "embtie.b"), ("embtie.b", "embtie.a")}


def test_no_package_cycle():
    """Layers run one way (issue 51): no package imports, through any chain, a package that imports it back.
    The last cycle, through hf (below models for model.name=hf, above training for the Trainer's parameter
    groups and FiniteCallback's error), went when those moved to embtie.loop and embtie.errors."""
    edges = edges_in_cycles(package_graph(import_graph()))
    assert not edges, f"package edges on a cycle: {sorted(edges)}"


def shadowed_modules(init_source: str, package: str, submodules: set[str]) -> list[str]:
    """The submodules of ``package`` whose name its ``__init__`` binds to something else: a function, class
    or constant defined there or imported from another module (``from pkg.plan import plan`` hides the
    module ``pkg.plan`` behind the function)."""
    found = set()
    for node in ast.parse(init_source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound = {node.name}
        elif isinstance(node, ast.Assign):
            bound = {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom) and node.module != package:
            bound = {a.asname or a.name for a in node.names}
        else:
            bound = set()
        found |= bound & submodules
    return sorted(found)


def test_shadow_finder_finds_a_planted_shadow():
    source = "from pkg.plan import plan\nfrom pkg import grid\ndef spec(): ...\n"
    assert shadowed_modules(source, "pkg", {"plan", "grid", "spec", "other"}) == ["plan", "spec"]


def test_no_module_is_shadowed_by_a_name_of_its_package():
    shadows = []
    for init in sorted((SRC / "embtie").rglob("__init__.py")):
        package = ".".join(init.parent.relative_to(SRC).parts)
        submodules = {p.stem for p in init.parent.glob("*.py")} | {d.name for d in init.parent.iterdir() if d.is_dir()}
        shadows += [f"{package}.{n}" for n in shadowed_modules(init.read_text(encoding="utf-8"), package, submodules)]
    assert not shadows, f"modules hidden behind a name their package binds (rename one): {shadows}"


BOTTOM = {"embtie.errors": set(), "embtie.files": set(), "embtie.decisions": {"embtie.errors"}}
"""modules and packages that import nothing of embtie but the modules listed (``embtie.files``: the file
helpers every layer writes with; ``embtie.decisions``: verdicts from paired seeds, generic over metrics)."""


@pytest.mark.parametrize("low", sorted(BOTTOM))
def test_bottom_layers_import_nothing_above_them(low: str):
    g = import_graph()
    mine = [m for m in g if m == low or m.startswith(low + ".")]
    above = {t for m in mine for t in g[m] if not (t == low or t.startswith(low + "."))} - BOTTOM[low]
    assert not above, f"{low} imports {sorted(above)}"


def test_metrics_sit_below_comparison():
    g = import_graph()
    assert not any(t.startswith("embtie.comparison") for t in g["embtie.metrics"]), g["embtie.metrics"]


def test_config_does_not_import_tasks():
    g = import_graph()
    assert not any(t.startswith("embtie.tasks") for t in g["embtie.config"])


LONG_FUNCTION_LINES = 80
CHECKED = ["embtie"]

def _checked_files() -> list[Path]:
    files: list[Path] = []
    for pattern in CHECKED:
        hits = sorted(SRC.glob(pattern))
        for h in hits:
            files.extend(sorted(h.rglob("*.py")) if h.is_dir() else [h])
    return files


@pytest.mark.parametrize("path", _checked_files(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_long_functions(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = [
        f"{n.name} ({n.end_lineno - n.lineno + 1} lines)"
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.end_lineno - n.lineno + 1 > LONG_FUNCTION_LINES
    ]
    assert not long, f"{path.name}: functions over {LONG_FUNCTION_LINES} lines: {', '.join(long)}"


PROBE_CHECKED = ["embtie"]
"""the modules held to the no-probe rule: all of src/embtie."""
FOREIGN = re.compile(r"#\s*foreign:\s*\S")
"""the trailing comment that allows a probe of an object that is not embtie's: ``# foreign: <what>``."""


def capability_probes(source: str) -> list[str]:
    """``line: call`` for each ``hasattr(...)`` and ``getattr(obj, "<literal>", default)`` in ``source`` whose
    lines carry no ``# foreign: <what>`` comment. ``getattr(obj, name)`` with a computed name (reflection
    over a dataclass's fields) and without a default are not probes."""
    marked = {
        tok.start[0]
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT and FOREIGN.match(tok.string)
    }
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        literal_getattr = (
            node.func.id == "getattr"
            and len(node.args) == 3
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        )
        lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        if (node.func.id == "hasattr" or literal_getattr) and not marked.intersection(lines):
            found.append((node.lineno, f"{node.lineno}: {ast.unparse(node)}"))
    return [text for _, text in sorted(found)]


def test_probe_finder_finds_planted_probes():
    source = """
if hasattr(model, "on_train_step"):
    x = getattr(module, "holds_tables", False)
y = getattr(ns, "path_probe", 0)  # foreign: an argparse namespace
z = getattr(self, field.name)  # reflection over dataclass fields
w = getattr(obj, "weight")
"""
    assert capability_probes(source) == [
        "2: hasattr(model, 'on_train_step')",
        "3: getattr(module, 'holds_tables', False)",
    ]
    assert capability_probes("v = hasattr(a, 'b')  # foreign:\n") == ["1: hasattr(a, 'b')"]  # <what> is required


def _probe_checked_files() -> list[Path]:
    files: list[Path] = []
    for rel in PROBE_CHECKED:
        p = SRC / rel
        files.extend(sorted(p.rglob("*.py")) if p.is_dir() else [p])
    return files


@pytest.mark.parametrize("path", _probe_checked_files(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_capability_probes(path: Path):
    probes = capability_probes(path.read_text(encoding="utf-8"))
    assert not probes, (
        f"{path.name}: capability probes (declare the capability on the class, or mark a probe of a non-embtie "
        "object with a trailing '# foreign: <what>'):\n  " + "\n  ".join(probes)
    )
