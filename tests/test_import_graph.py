"""The code's import graph has no circle: compare/ and variants/ import one way (a circle of lazy,
function-level imports counts too: it still ties the modules' meanings to each other). The imports are
read as tests/test_layers.py reads them."""
from pathlib import Path

from tests.test_layers import PACKAGES, ROOT, imports


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def graph() -> dict[str, set[str]]:
    files = {_module(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    known = set(files)
    # importing a package runs its __init__, but a module importing its own package's names is not a circle
    return {m: {d for _, d in imports(p.read_text(), m, known, p.name == "__init__.py")
                if d != m and not m.startswith(d + ".")} for m, p in files.items()}


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
