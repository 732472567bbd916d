"""The skipped-extra check (tests/extras.py): a test of an extra the README installs skips where the extra is
missing, and fails under KERNEL_AB_REQUIRE_EXTRAS=1, which .ci/run sets; its table follows pyproject.toml."""
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.extras import MODULES, REQUIRE_ENV, EXTRA_OF

ROOT = Path(__file__).resolve().parent.parent

try:
    import tomllib
except ImportError:   # Python 3.10
    import tomli as tomllib


def test_the_table_names_each_distribution_of_each_extra_in_pyproject():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra, reqs in extras.items():
        names = set()
        for req in map(Requirement, reqs):   # dask[distributed] installs distributed too
            names |= {canonicalize_name(req.name), *map(canonicalize_name, req.extras)}
        assert names == {canonicalize_name(n) for n in MODULES[extra]}, extra
    assert set(MODULES) == set(extras)


def test_ci_sets_the_check_and_installs_every_extra_in_the_table():
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.index(f"export {REQUIRE_ENV}=1") < ci.index("while IFS= read -r command")
    installed = re.search(r'pip install -e "\.\[([a-z,]+)\]"', (ROOT / "README.md").read_text()).group(1)
    assert set(installed.split(",")) == set(MODULES)


def test_no_test_skips_on_a_missing_extra_but_through_need():
    found = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip" and node.args
                    and getattr(node.args[0], "value", "").split(".")[0] in EXTRA_OF):
                found.append(f"{path.name}:{node.lineno}")
    assert not found, f"pytest.importorskip of an extra's module (use tests.extras.need): {found}"


TINY = """import sys
sys.modules["matplotlib"] = None   # `import matplotlib` raises ModuleNotFoundError
from tests.extras import need


def test_a_plot():
    need("matplotlib")


def test_something_else():
    assert True
"""


def _pytest(tmp_path, source=TINY, **env):
    (tmp_path / "test_tiny.py").write_text(source)
    env = {**{k: v for k, v in os.environ.items() if k != REQUIRE_ENV}, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_tiny.py")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


def test_a_missing_extra_skips_naming_it_and_the_run_passes(tmp_path):
    r = _pytest(tmp_path)
    assert r.returncode == 0, r.stdout
    assert "1 passed, 1 skipped" in r.stdout
    assert "matplotlib is not installed (pip install 'kernel-ab[plot]')" in r.stdout


def test_under_the_check_a_missing_extra_fails_the_run(tmp_path):
    r = _pytest(tmp_path, **{REQUIRE_ENV: "1"})
    assert r.returncode == 1, r.stdout
    assert "1 failed, 1 passed" in r.stdout
    assert f"matplotlib is missing, but this run installs kernel-ab[plot] ({REQUIRE_ENV}=1)" in r.stdout


def test_under_the_check_a_module_level_need_fails_the_collection(tmp_path):
    source = ('import sys\nsys.modules["distributed"] = None\nfrom tests.extras import need\n'
              'need("distributed")\n\n\ndef test_a_cluster():\n    pass\n')
    r = _pytest(tmp_path, source, **{REQUIRE_ENV: "1"})
    assert r.returncode != 0 and "1 error" in r.stdout, r.stdout
    assert "distributed is missing, but this run installs kernel-ab[dask]" in r.stdout
