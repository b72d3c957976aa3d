"""The packages form a layered graph: every import, at the top of a file or inside a function, goes to the same
layer or one below it, and packages of one layer do not import each other both ways.

Layers, bottom to top (``LAYERS``): the leaf modules any layer may use, the IR (which knows no operator), the
operators (declarations, NumPy semantics, the reference interpreter), the compiler's middle (frontend, passes,
graph transforms), code generation and its runtime (backend), and the API (decorators, transforms' callables,
the CLI).

Imports go at the top of a file; one inside a function says why on its line or the line above: an optional
dependency, an import-time saving (``test_import_cost.py``), a cycle.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "scriptc"

LAYERS = [
    (
        "base",
        [
            "scriptc.version",
            "scriptc.interop",
            "scriptc.parallel",
            "scriptc.gc_pause",
            "scriptc.realign",
            "scriptc.installed",
            "scriptc.calling",
        ],
    ),
    ("ir", ["scriptc.ir", "scriptc.errors", "scriptc.signatures"]),
    ("ops", ["scriptc.ops"]),
    ("middle", ["scriptc.frontend", "scriptc.passes", "scriptc.transforms"]),
    ("backend", ["scriptc.backend"]),
    ("api", ["scriptc", "scriptc.transforms.api", "scriptc.transforms.vmap_api"]),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}


def layer_of(module: str) -> int:
    """The layer of the longest prefix ``LAYERS`` names (``scriptc`` itself: the API)."""
    best, level = "", None
    for k, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, level = prefix, k
    return level


def imports(module: str):
    """(imported module, line, inside a function, the source line and the one before) of every import."""
    path = MODULES[module]
    source = path.read_text()
    lines = source.splitlines()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(source)
    inside = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.update(id(n) for n in ast.walk(fn) if n is not fn)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        context = " ".join(lines[max(node.lineno - 2, 0) : node.end_lineno])
        for name in names:
            if name.startswith("scriptc") and name in MODULES and name != module:
                yield name, node.lineno, id(node) in inside, context


def test_no_import_goes_up_a_layer():
    upward = set()
    for module in MODULES:
        for target, _, _, _ in imports(module):
            if layer_of(target) > layer_of(module):
                upward.add((module, target))
    assert upward == set(), f"imports that go up a layer: {sorted(upward)}"


def test_no_cycle_between_packages():
    """Between the packages of one layer (frontend, passes, transforms), imports go one way (no cycle through
    them, of any length)."""

    def package(m: str) -> str:
        return m if MODULES[m].name == "__init__.py" else m.rpartition(".")[0]

    edges = {}
    for module in MODULES:
        for target, _, _, _ in imports(module):
            a, b = package(module), package(target)
            if a != b and not a.startswith(b + ".") and not b.startswith(a + ".") and layer_of(a) == layer_of(b):
                edges.setdefault(a, set()).add(b)

    def reachable(start):
        seen, todo = set(), [start]
        while todo:
            for b in edges.get(todo.pop(), ()):
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return seen

    cycles = sorted(a for a in edges if a in reachable(a))
    assert cycles == [], f"packages on an import cycle: {cycles}"


def comments(path: Path) -> tuple[dict[int, str], set[int]]:
    """({line: its comment's text}, the lines that hold a comment only), pragmas (noqa, type:) left out."""
    found, alone = {}, set()
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type == tokenize.COMMENT:
            text = re.sub(r"#\s*(noqa\b[:\s\w,]*|type:.*)", "", tok.string).strip("# ")
            if text:
                found[tok.start[0]] = text
                if not tok.line[: tok.start[1]].strip():
                    alone.add(tok.start[0])
    return found, alone


def test_an_import_inside_a_function_says_why():
    """An import of a scriptc module inside a function has a comment on its line (or lines) or the line above
    saying why it is not at the top of the file: ``# (cycle: X imports this module)``, ``# loads llvmlite: only
    on a cache miss``, ``# at the first compile: decorating loads no pass (test_import_cost)``."""
    unexplained = []
    for module, path in sorted(MODULES.items()):
        last_line = {
            n.lineno: n.end_lineno
            for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, (ast.Import, ast.ImportFrom))
        }
        found, alone = comments(path)
        for first in sorted({line for _, line, within, _ in imports(module) if within}):
            if not (first - 1 in alone or any(k in found for k in range(first, last_line[first] + 1))):
                unexplained.append(f"{path.relative_to(ROOT.parent)}:{first}")
    assert unexplained == [], f"imports inside functions without a reason: {unexplained}"


BACKEND_LAYERS = ["scriptc.backend.llvm.runtime", "scriptc.backend.llvm.lowering", "scriptc.backend.llvm.compile"]


def test_the_runtime_imports_no_lowering():
    """Inside the CPU backend, ``runtime/`` (engine, loader, symbols, tiers, cache, entry points, pool) is below
    ``lowering/`` (IR to LLVM IR), which is below the driver (``compile.py``): no import goes the other way, at the
    top of a file or inside a function."""

    def level(m: str):
        return next((k for k, p in enumerate(BACKEND_LAYERS) if m == p or m.startswith(p + ".")), None)

    upward = sorted(
        (module, target, line)
        for module in MODULES
        if level(module) is not None
        for target, line, _, _ in imports(module)
        if level(target) is not None and level(target) > level(module)
    )
    assert upward == [], f"imports that go up inside backend/llvm: {upward}"
    assert {level(m) for m in MODULES} >= {0, 1, 2}, "the backend's layers moved: update BACKEND_LAYERS"
