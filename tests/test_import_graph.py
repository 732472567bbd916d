"""The code's import graph has no circle: compare/ and variants/ import one way (a circle of lazy,
function-level imports counts too: it still ties the modules' meanings to each other)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("compare", "variants")


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    """The project modules `path` imports, anywhere in it but under `if TYPE_CHECKING:` (a `from pkg import
    mod` counts as pkg.mod)."""
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and getattr(block.test, "id", "") == "TYPE_CHECKING" for s in block.body for n in ast.walk(s)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:   # annotations only: no import at run time
            continue
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def graph() -> dict[str, set[str]]:
    files = {_module(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    known = set(files)
    # importing a package runs its __init__, but a module importing its own package's names is not a circle
    return {m: {d for d in _imports(p, known) if d != m and not m.startswith(d + ".")} for m, p in files.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    found, state, stack = [], {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for d in sorted(edges.get(m, ())):
            if state.get(d) == "open":
                found.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = "done"
    for m in sorted(edges):
        if m not in state:
            visit(m)
    return found


def test_the_circle_finder_finds_a_planted_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_compare_and_variants_import_without_a_circle():
    assert circles(graph()) == []
