"""The code's shape, as the project's issue asks it: no .py file of compare/, variants/, benchmarks/, tests/
or main.py over 400 lines, and no function over 60 (end_lineno - lineno + 1, decorators aside), Triton kernels
included: Triton inlines a kernel's @triton.jit helpers, so a kernel split into them compiles to the same code
(single_read_coop's two kernels, split so, gave the same SASS for sm_90 on every configuration tried)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("compare", "variants", "benchmarks", "tests")
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60


def _sources() -> list[Path]:
    found = [ROOT / "main.py"]
    for folder in FOLDERS:
        # a virtual environment or cache someone made inside a folder is not the project's code
        found += [p for p in sorted((ROOT / folder).rglob("*.py"))
                  if not any(part.startswith((".", "__pycache__", "venv")) for part in p.relative_to(ROOT).parts)]
    return found


def _long_functions(tree: ast.AST, name: str) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return found


def _offenders() -> tuple[list[str], list[str]]:
    long_files, long_functions = [], []
    for path in _sources():
        text = path.read_text()
        name = path.relative_to(ROOT).as_posix()
        if len(text.splitlines()) > MAX_FILE_LINES:
            long_files.append(f"{name}: {len(text.splitlines())} lines")
        long_functions += _long_functions(ast.parse(text, filename=name), name)
    return long_files, long_functions


def test_no_file_over_400_lines_and_no_function_over_60():
    long_files, long_functions = _offenders()
    assert not long_files and not long_functions, (
        f"files over {MAX_FILE_LINES} lines: {long_files or 'none'}; "
        f"functions over {MAX_FUNCTION_LINES} lines: {long_functions or 'none'}")


def test_the_check_names_a_long_function_and_a_long_kernel_and_spares_one_at_the_limit():
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    at_limit = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    source = f"@triton.jit\ndef kernel():\n{body}\n\ndef plain():\n{body}\n\ndef short():\n{at_limit}"
    lines = source.splitlines()
    kernel, plain = lines.index("def kernel():") + 1, lines.index("def plain():") + 1
    assert _long_functions(ast.parse(source), "t.py") == [f"t.py:{kernel} kernel: {MAX_FUNCTION_LINES + 1} lines",
                                                          f"t.py:{plain} plain: {MAX_FUNCTION_LINES + 1} lines"]
