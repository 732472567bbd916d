"""pyproject.toml agrees with the code: the Python floor it allows can import what the code imports (tomllib
from 3.11, tomli below it) and parse every source; the metadata claims nothing the repository lacks."""
import ast
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

try:
    import tomllib
except ImportError:   # Python 3.10: the dependency pyproject.toml declares for it
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def sources() -> list[Path]:
    return [ROOT / "main.py", *(p for d in ("compare", "variants") for p in sorted((ROOT / d).rglob("*.py")))]


def floor() -> tuple[int, int]:
    """The lowest 3.x that requires-python allows."""
    allowed = SpecifierSet(PROJECT["requires-python"])
    return next((3, minor) for minor in range(0, 40) if f"3.{minor}" in allowed)


def imported(name: str) -> list[Path]:
    def names(node):
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        return [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
    return [p for p in sources() if any(name in names(n) for n in ast.walk(ast.parse(p.read_text())))]


def needed_on(python: str) -> set[str]:
    """The dependencies pip installs on that Python."""
    reqs = [Requirement(r) for r in PROJECT["dependencies"]]
    return {r.name for r in reqs if r.marker is None or r.marker.evaluate({"python_version": python})}


def test_the_floor_gets_tomli_where_tomllib_is_missing_and_only_there():
    assert imported("tomllib"), "the code reads pyproject.toml with tomllib"
    if floor() < (3, 11):
        assert imported("tomli"), "below 3.11 the code needs its tomli fallback"
        assert "tomli" in needed_on(f"{floor()[0]}.{floor()[1]}")
    assert "tomli" not in needed_on("3.11")


def test_every_source_parses_on_the_lowest_python_allowed():
    for path in sources():
        ast.parse(path.read_text(), filename=str(path), feature_version=floor())


def test_the_python_classifiers_are_versions_requires_python_allows():
    versions = [c.rpartition(" :: ")[2] for c in PROJECT["classifiers"] if c.startswith("Programming Language :: "
                                                                                         "Python :: 3.")]
    assert versions and all(v in SpecifierSet(PROJECT["requires-python"]) for v in versions)
    assert f"{floor()[0]}.{floor()[1]}" in versions


def test_the_metadata_names_its_authors_and_claims_no_license_it_lacks():
    assert PROJECT["authors"] == [{"name": "kernel-ab developers"}]
    has_license_file = any((ROOT / n).exists() for n in ("LICENSE", "LICENSE.txt", "LICENSE.md", "COPYING"))
    claims = "license" in PROJECT or any(c.startswith("License ::") for c in PROJECT["classifiers"])
    assert claims == has_license_file
