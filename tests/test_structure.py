"""The shape docs/architecture.md promises, checked on the source: imports point one way (faces ->
collection -> ingest, components -> stages -> store, models -> the data types), no import circle, and no
module, class or function grown past the size at which it is usually two things sharing a room."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "hyperfolio"

# Each top-level part of the package and its tier: an import may go to its own tier or below, never up.
TIERS = {
    "model": 0, "errors": 0, "version": 0, "timing": 0, "phrases": 0, "lexicon": 0, "textmatch": 0, "config": 0,
    "labels": 0,  # the numbered labels documents give their parts ("Table 3"), read one way
    "render": 0,  # plain-data views of answers, for the faces' JSON
    "store": 1, "llm": 1, "embed": 1,
    "parse": 2, "cards": 2, "hypergraph": 2, "retrieve": 2, "answer": 2, "viz": 2,
    "dialogue": 2,  # a conversation's turns and follow-ups rewritten to stand alone
    "ingest": 3, "components": 3,
    "collection": 4,
    "cli": 5, "server": 5, "eval": 5, "sample": 5, "__main__": 5, "__init__": 5,
}  # fmt: skip
MAX_MODULE, MAX_CLASS, MAX_FUNCTION = 800, 400, 80


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 2:
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Project modules `name` imports, those under `if TYPE_CHECKING:` included (a circle of types is
    still a circle of meaning)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            candidates = [target, *(f"{target}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        out.update(c for c in candidates if c in known and c != name)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def _tier(module: str) -> int:
    return TIERS[module.split(".")[1] if "." in module else "__init__"]


def test_every_part_of_the_package_has_a_tier():
    tops = {m.split(".")[1] for m in _modules() if "." in m}
    assert tops <= set(TIERS), f"add these to TIERS (and docs/architecture.md): {sorted(tops - set(TIERS))}"


def test_imports_never_point_up():
    upward = [
        f"{source} -> {target}"
        for source, targets in _graph().items()
        for target in targets
        if _tier(target) > _tier(source) and target != "hyperfolio"
    ]
    assert not upward, "\n".join(sorted(upward))


def test_no_import_circle():
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    # A package's __init__ re-exporting its children is not a circle of meaning: drop those edges' circles.
    real = [c for c in circles if not all(m == c[0] or m.startswith(c[0] + ".") for m in c)]
    assert not real, real


def test_no_module_class_or_function_past_its_size():
    too_big = []
    for name, path in _modules().items():
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE:
            too_big.append(f"module {name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            size = (node.end_lineno or node.lineno) - node.lineno + 1 if hasattr(node, "lineno") else 0
            if isinstance(node, ast.ClassDef) and size > MAX_CLASS:
                too_big.append(f"class {name}.{node.name}: {size} lines")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and size > MAX_FUNCTION:
                too_big.append(f"function {name}.{node.name}: {size} lines")
    assert not too_big, "\n".join(sorted(too_big))
