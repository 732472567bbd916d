"""Docstrings say what and why in at most 5 lines (non-empty, after cleaning): every module, class and
function under compare/, variants/, benchmarks/ and main.py, read with `ast` (nothing is imported)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 5


def sources() -> list[Path]:
    files = [ROOT / "main.py"]
    for folder in ("compare", "variants", "benchmarks"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


def long_docstrings(path: Path, root: Path = ROOT) -> list[str]:
    """'file:line name (n lines)' for each docstring in `path` over MAX_LINES non-empty lines."""
    tree = ast.parse(path.read_text(), filename=str(path))
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    found = []
    for node in [tree, *(n for n in ast.walk(tree) if isinstance(n, kinds))]:
        lines = [line for line in (ast.get_docstring(node, clean=True) or "").splitlines() if line.strip()]
        if len(lines) > MAX_LINES:
            where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 1)}"
            found.append(f"{where} {getattr(node, 'name', 'module')} ({len(lines)} lines)")
    return found


def test_the_check_names_each_docstring_over_five_non_empty_lines(tmp_path):
    source = tmp_path / "m.py"
    four, six = "\n".join("2345"), "\n".join("123456")
    source.write_text(f'"""One.\n\n{four}\n"""\n\n\nclass C:\n    """{six}"""\n\n'
                      f'    async def f(self):\n        """{six}"""\n')
    assert long_docstrings(source, tmp_path) == ["m.py:10 C (6 lines)", "m.py:18 f (6 lines)"]


def test_every_docstring_is_at_most_five_lines():
    found = [line for path in sources() for line in long_docstrings(path)]
    assert not found, "docstrings over 5 lines (say what and why, shorter):\n" + "\n".join(found)
