"""Imports point down only (DESIGN.md, "Layers"), and memcore_py has no import cycles.

Every import statement of every module under ``memcore_py/`` is read with ``ast`` (imports
inside functions included); compiled modules (``.pyx``/``.pxd``) are read with a regex over
their ``import``/``cimport`` lines. Nothing is imported.

(a) Layers, bottom to top::

        memcore (engine) -> memcore_py.errors -> ir -> analysis -> planning -> transform
        -> (frontend, tvm) -> cli

    A module may import its own layer and the layers below it. ``memcore_py.testing`` and
    ``memcore_py.examples`` sit just below ``cli``: they may import anything but ``cli``.
    ``memcore_py/__init__.py`` may import ``errors``, and ``ir.text.parser`` only lazily (inside
    ``parse``). The engine (``memcore/``) imports nothing from ``memcore_py``.
(b) No cycle in the module graph built from all imports, lazy ones included (strongly
    connected components), except the one edge of :data:`ALLOWED_EDGES`. ``from .pkg import
    name`` is an edge to ``pkg`` (its ``__init__``) unless ``name`` is a submodule, so a
    submodule that imports its own package closes a circle through that ``__init__``. An
    import of ``a.b.c`` is also an edge to ``a.b`` (Python runs its ``__init__`` first) when
    the importer is outside ``a.b``. A cimport counts too (a compiled module imports what it
    cimports when it starts).

Every failure names the file, the line and the import as written.
"""
from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from _helpers import REPO_ROOT

#: Dotted prefix -> (rank, layer name); the longest matching prefix wins ("memcore_py" matches
#: the package root only). A module may import a module of the same or a lower rank.
LAYERS = {
    "memcore": (0, "memcore (engine)"),
    "memcore_py.errors": (1, "errors"),
    "memcore_py._compiled": (1, "errors"),  # the compiled-helper loader: stdlib only, used by analysis/transform
    "memcore_py": (2, "memcore_py (package root)"),  # this module only: errors, and ir.text.parser in parse()
    "memcore_py.ir": (2, "ir"),
    "memcore_py.analysis": (3, "analysis"),
    "memcore_py.planning": (4, "planning"),
    "memcore_py.transform": (5, "transform"),
    "memcore_py.frontend": (6, "frontend"),
    "memcore_py.tvm": (6, "tvm"),
    "memcore_py.executorch": (6, "executorch"),
    "memcore_py.testing": (7, "testing"),
    "memcore_py.examples": (7, "examples"),
    "memcore_py.sweep": (8, "sweep"),
    "memcore_py.cli": (9, "cli"),
    "memcore_py.__main__": (9, "cli"),
}
ORDER = "cli -> sweep -> (frontend, tvm, executorch) -> (testing, examples: anything but cli) -> transform -> planning -> analysis -> ir -> errors -> memcore"

#: What memcore_py/__init__.py may import: target -> whether only lazily.
ROOT_IMPORTS = {"memcore_py.errors": False, "memcore_py.ir.text.parser": True,
                "memcore": False}  # the version, written once in memcore/__init__.py (its kernels load lazily)

#: Import edges exempt from the cycle check (only when every such import is lazy).
ALLOWED_EDGES = {("memcore_py.ir.module", "memcore_py.ir.text.printer")}  # IRModule.script()

SOURCE_SUFFIXES = (".py", ".pyx", ".pxd")


@dataclass(frozen=True)
class Import:
    """One imported module: where the statement is, as written, and what it resolves to."""

    path: Path
    line: int
    statement: str
    importer: str
    target: str
    lazy: bool
    via_package: bool = False  # the edge to a package whose submodule the statement imports

    def where(self) -> str:
        via = " (runs its package's __init__)" if self.via_package else ""
        return f"{self.path.relative_to(REPO_ROOT)}:{self.line}: `{self.statement}`{via}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources(package: str) -> list[Path]:
    root = REPO_ROOT / package
    return sorted(p for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())


def _known_modules() -> set[str]:
    return {_module_name(p) for pkg in ("memcore", "memcore_py") for p in _sources(pkg)}


def _package_of(path: Path, module: str) -> str:
    return module if path.name.startswith("__init__.") else module.rpartition(".")[0]


def _resolve(path: Path, module: str, level: int, name: str | None) -> str:
    """Absolute dotted name of ``from <level dots><name> import ...``."""
    if not level:
        return name or ""
    base = _package_of(path, module).split(".")
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _targets(base: str, names: list[str], known: set[str]) -> list[str]:
    """``from base import a, b``: a submodule when ``base.a`` is one, else ``base`` itself."""
    out = []
    for n in names:
        sub = f"{base}.{n}"
        t = sub if sub in known else base
        if t not in out:
            out.append(t)
    return out


def _python_imports(path: Path, known: set[str]) -> list[Import]:
    module = _module_name(path)
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[Import] = []

    def visit(node, lazy):
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(Import(path, child.lineno, ast.unparse(child), module, alias.name, lazy))
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(path, module, child.level, child.module)
                for t in _targets(base, [a.name for a in child.names], known):
                    found.append(Import(path, child.lineno, ast.unparse(child), module, t, lazy))
            visit(child, inner)

    visit(tree, False)
    return found


_FROM = re.compile(r"^(?P<indent>\s*)from\s+(?P<mod>\.*[\w.]*)\s+c?import\s+(?P<names>.+)$")
_PLAIN = re.compile(r"^(?P<indent>\s*)c?import\s+(?P<names>[\w.]+(\s+as\s+\w+)?(\s*,\s*[\w.]+(\s+as\s+\w+)?)*)\s*(#.*)?$")


def _compiled_imports(path: Path, known: set[str]) -> list[Import]:
    """``import``/``cimport`` lines of a .pyx/.pxd (a regex; Cython is not Python).

    An indented import counts as lazy (it sits in a function or a block; Cython modules put
    their module-level imports flush left).
    """
    module = _module_name(path)
    lines = path.read_text().splitlines()
    found: list[Import] = []
    i = 0
    while i < len(lines):
        text = lines[i]
        m = _FROM.match(text)
        if m:
            names = m.group("names").split("#")[0].strip()
            statement, first = text.strip(), i
            if names.startswith("(") and ")" not in names:  # a parenthesised list goes on
                while ")" not in names and i + 1 < len(lines):
                    i += 1
                    names += " " + lines[i].split("#")[0].strip()
            names = [n.split(" as ")[0].strip() for n in names.strip("() ").split(",") if n.strip()]
            raw = m.group("mod")
            level = len(raw) - len(raw.lstrip("."))
            base = _resolve(path, module, level, raw.lstrip(".") or None)
            for t in _targets(base, names, known):
                found.append(Import(path, first + 1, statement, module, t, bool(m.group("indent"))))
        else:
            m = _PLAIN.match(text)
            if m:
                for n in m.group("names").split(","):
                    target = n.split(" as ")[0].strip()
                    found.append(Import(path, i + 1, text.strip(), module, target, bool(m.group("indent"))))
        i += 1
    return found


def _imports(package: str) -> list[Import]:
    known = _known_modules()
    out = []
    for path in _sources(package):
        out += _python_imports(path, known) if path.suffix == ".py" else _compiled_imports(path, known)
    return out


def _layer(module: str):
    """``(rank, name)`` of the layer ``module`` belongs to, or None outside memcore/memcore_py."""
    best = None
    for prefix, layer in LAYERS.items():
        if module == prefix or (prefix != "memcore_py" and module.startswith(prefix + ".")):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, layer)
    return best[1] if best else None


def _is_ours(module: str) -> bool:
    return module == "memcore_py" or module.startswith("memcore_py.")


# ------------------------------------------------------------------------------------------
def test_the_scanner_reads_python_and_compiled_modules():
    """A floor for the scanner itself: lazy imports and the .pyx imports are seen."""
    imports = _imports("memcore_py")
    assert any(i.lazy and i.path.suffix == ".py" for i in imports)
    assert any(i.path.suffix == ".pyx" and i.target.startswith("memcore_py.ir.") for i in imports)
    assert any(i.path.suffix == ".pyx" and i.target == "memcore._typedefs" for i in imports)


def test_every_module_is_in_a_layer():
    unplaced = sorted({_module_name(p) for p in _sources("memcore_py") if _layer(_module_name(p)) is None})
    assert not unplaced, f"modules in no layer (add them to DESIGN.md's Layers and LAYERS here): {unplaced}"


def test_imports_point_down_only():
    violations = []
    for imp in _imports("memcore_py"):
        if not (imp.target == "memcore" or imp.target.startswith("memcore.") or _is_ours(imp.target)):
            continue  # stdlib, numpy, tvm, ...
        if imp.importer == "memcore_py":
            lazy_only = ROOT_IMPORTS.get(imp.target)
            if lazy_only is None:
                violations.append(f"{imp.where()}: memcore_py/__init__.py may import only "
                                  f"{sorted(ROOT_IMPORTS)}; got {imp.target}")
            elif lazy_only and not imp.lazy:
                violations.append(f"{imp.where()}: memcore_py/__init__.py may import {imp.target} "
                                  "only lazily (inside a function)")
            continue
        mine, theirs = _layer(imp.importer), _layer(imp.target)
        if mine is None or theirs is None:
            continue  # reported by test_every_module_is_in_a_layer
        if theirs[0] > mine[0]:
            violations.append(
                f"{imp.where()}{' (lazy)' if imp.lazy else ''}: {mine[1]} ({imp.importer}) imports "
                f"{theirs[1]} ({imp.target}), a higher layer; imports point down: {ORDER}"
            )
    assert not violations, f"{len(violations)} layer violation(s):\n" + "\n".join(violations)


def test_engine_does_not_import_the_python_layer():
    bad = [f"{i.where()}: the engine imports {i.target}" for i in _imports("memcore") if _is_ours(i.target)]
    assert not bad, "memcore (engine) knows nothing about the IR:\n" + "\n".join(bad)


def _strongly_connected(nodes, edges):
    """Tarjan's algorithm, iterative; returns the components (lists of nodes)."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                comps.append(sorted(comp))
    return comps


def test_strongly_connected_finds_cycles():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    comps = sorted(_strongly_connected({"a", "b", "c", "d", "e"}, edges))
    assert comps == [["a", "b", "c"], ["d"], ["e"]]


def _with_packages(imports: list[Import]) -> list[Import]:
    """``imports`` plus, per import of ``a.b.c``, one of ``a.b``: Python runs a package's
    ``__init__`` before its submodule. The importer's own packages are left out (they are
    already running when it runs)."""
    out = list(imports)
    for imp in imports:
        parts = imp.target.split(".")
        for k in range(1, len(parts)):
            package = ".".join(parts[:k])
            if not (imp.importer == package or imp.importer.startswith(package + ".")):
                out.append(replace(imp, target=package, via_package=True))
    return out


def test_the_scanner_resolves_imports_to_modules(tmp_path, monkeypatch):
    """``from . import sub`` -> the submodule; ``from ..pkg import name`` -> the package unless
    ``name`` is a submodule; ``import a.b.c`` also reaches ``a.b``; a function's import is lazy."""
    monkeypatch.setattr(sys.modules[__name__], "REPO_ROOT", tmp_path)
    pkg = tmp_path / "memcore_py" / "pkg"
    (pkg / "inner").mkdir(parents=True)
    for name in ("__init__", "a", "b", "inner/__init__", "inner/c"):
        (pkg / f"{name}.py").write_text("")
    (pkg / "a.py").write_text(
        "from . import b\nfrom .inner import c, NAME\nfrom ..pkg.inner import OTHER\n"
        "import memcore_py.pkg.inner.c\ndef f():\n    from .b import x\n"
    )
    known = {"memcore_py", "memcore_py.pkg", "memcore_py.pkg.a", "memcore_py.pkg.b",
             "memcore_py.pkg.inner", "memcore_py.pkg.inner.c"}
    found = {(i.target, i.lazy, i.via_package)
             for i in _with_packages(_python_imports(pkg / "a.py", known))}
    assert found == {
        ("memcore_py.pkg.b", False, False), ("memcore_py.pkg.b", True, False),
        ("memcore_py.pkg.inner.c", False, False), ("memcore_py.pkg.inner", False, False),
        ("memcore_py.pkg.inner", False, True),
    }


def test_no_import_cycles():
    imports = [i for i in _with_packages(_imports("memcore_py"))
               if _is_ours(i.target) and i.target != i.importer]
    by_edge: dict[tuple[str, str], list[Import]] = {}
    for imp in imports:
        by_edge.setdefault((imp.importer, imp.target), []).append(imp)
    edges: dict[str, set[str]] = {}
    for (a, b), imps in by_edge.items():
        if (a, b) in ALLOWED_EDGES and all(i.lazy for i in imps):
            continue
        edges.setdefault(a, set()).add(b)
    nodes = set(edges) | {b for targets in edges.values() for b in targets}
    cycles = []
    for comp in _strongly_connected(nodes, edges):
        if len(comp) < 2:
            continue
        members = set(comp)
        lines = [f"import cycle among {', '.join(comp)}:"]
        for a in comp:
            for b in sorted(edges.get(a, ()) & members):
                for imp in by_edge[(a, b)]:
                    lines.append(f"  {imp.where()}{' (lazy)' if imp.lazy else ''} -> {b}")
        cycles.append("\n".join(lines))
    assert not cycles, f"{len(cycles)} import cycle(s):\n" + "\n".join(cycles)
