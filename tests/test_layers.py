"""The contract of docs/architecture.md: compare/'s folders, variants/ and main.py import one way. LAYERS
lists them bottom first; a folder may import only folders of lower layers (folders sharing a layer may
not import each other). Every import counts that runs: at module level, inside a function (a lazy
import), in a module `__getattr__`, `importlib.import_module("literal")`; only those under
`if TYPE_CHECKING:` are left out (annotations, never run). `python -m pytest -q tests/test_layers.py`."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = (
    ("compare.model",),                     # the result model: standard library only
    ("compare.render", "variants"),         # renderers read only the model; variants import no comparison code
    ("compare.runtime",),                   # one process's runtime: backend, launch guard, sealing, progress
    ("compare.checks",),                    # numerics, timing, compiled code
    ("compare.comparison",),                # one comparison: plan, pipeline, timing run, memory, environment
    ("compare.processes",),                 # supervision, distributed execution, tasks, workers
    ("compare.command_line",),              # arguments, usage checks, --jobs/--scheduler
    ("compare.review",),                    # review BASE HEAD
    ("main",),                              # the program
)
PACKAGES = ("compare", "variants")
OUTSIDE = ("compare",)   # package roots: their __init__ holds only a docstring


def _module(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _typing_only(tree: ast.AST) -> set[int]:
    """The nodes under `if TYPE_CHECKING:` (or `if typing.TYPE_CHECKING:`): imported for annotations only."""
    def is_flag(test):
        return getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == "TYPE_CHECKING"
    return {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and is_flag(block.test)
            for s in block.body for n in ast.walk(s)}


def _names(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The modules one node imports (a `from pkg import name` counts as pkg and as pkg.name)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:   # relative: from the module's own package up
            package = module.split(".") if is_package else module.split(".")[:-1]
            base = ".".join([*package[:len(package) - node.level + 1], *([base] if base else [])])
        return [base, *(f"{base}.{a.name}" for a in node.names)]
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str):
        called = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
        if called in ("import_module", "__import__"):
            return [node.args[0].value]
    return []


def imports(source: str, module: str, known: set[str], is_package: bool = False) -> list[tuple[int, str]]:
    """(line, project module) for every import in `source` that runs."""
    tree = ast.parse(source)
    skipped = _typing_only(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        for name in _names(node, module, is_package):
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and (node.lineno, name) not in found:
                found.append((node.lineno, name))
    return found


def folder(module: str) -> str | None:
    """The declared folder holding `module` (the longest that is a prefix of it)."""
    held = [f for layer in LAYERS for f in layer if module == f or module.startswith(f + ".")]
    return max(held, key=len) if held else None


RANK = {f: i for i, layer in enumerate(LAYERS) for f in layer}


def violations(sources: dict[str, tuple[str, str, bool]]) -> list[str]:
    """'file:line: a imports b (folder -> folder)' for each import of a folder not below the importer's.
    `sources`: {module: (where, text, is_package)}."""
    known = set(sources)
    out = []
    for module, (where, text, is_package) in sorted(sources.items()):
        mine = folder(module)
        for line, target in imports(text, module, known, is_package):
            theirs = folder(target)
            if mine is None or theirs is None or mine == theirs:
                continue
            if RANK[theirs] >= RANK[mine]:
                out.append(f"{where}:{line}: {module} imports {target} ({mine} -> {theirs})")
    return out


def project_sources() -> dict[str, tuple[str, str, bool]]:
    files = [*(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")), ROOT / "main.py"]
    return {_module(p, ROOT): (str(p.relative_to(ROOT)), p.read_text(), p.name == "__init__.py") for p in files}


def test_every_import_that_runs_is_counted_and_only_typing_blocks_are_left_out():
    text = ("from typing import TYPE_CHECKING\nimport compare.model.a\nif TYPE_CHECKING:\n"
            "    from compare.checks import b\n"
            "def f():\n    from compare.runtime.c import g\n"
            "def __getattr__(name):\n    import variants.d\n"
            "def h():\n    importlib.import_module('compare.review.e')\n")
    known = {"compare.model.a", "compare.checks.b", "compare.runtime.c", "variants.d", "compare.review.e"}
    assert [m for _, m in imports(text, "compare.model.z", known)] == [
        "compare.model.a", "compare.runtime.c", "variants.d", "compare.review.e"]
    assert imports("from . import a\nfrom ..runtime import c\n", "compare.model.z", known) == [
        (1, "compare.model.a"), (2, "compare.runtime.c")]


def test_an_upward_or_sideways_import_is_a_violation_and_a_downward_one_is_not():
    known = {"compare.model.a": ("model/a.py", "def f():\n    import compare.checks.b\n", False),
             "compare.checks.b": ("checks/b.py", "import compare.model.a\nimport compare.runtime.c\n", False),
             "compare.runtime.c": ("runtime/c.py", "", False),
             "compare.render.d": ("render/d.py", "import variants.e\n", False),
             "variants.e": ("variants/e.py", "", False)}
    assert violations(known) == [
        "model/a.py:2: compare.model.a imports compare.checks.b (compare.model -> compare.checks)",
        "render/d.py:1: compare.render.d imports variants.e (compare.render -> variants)"]


def test_every_module_lies_in_a_declared_folder():
    assert [m for m in project_sources() if folder(m) is None and m not in OUTSIDE] == []


def test_the_folders_import_one_way():
    found = violations(project_sources())
    assert found == [], f"{len(found)} imports against the layers:\n" + "\n".join(found)
