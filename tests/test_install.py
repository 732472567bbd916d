"""Installed, kernel-ab is one package, kernel_ab: a wheel built from this checkout (setuptools' own
bdist_wheel, no `wheel` package, no network) and installed into a fresh venv gives `import kernel_ab`,
`python -m kernel_ab` and the `kernel-ab` command, and no top-level `compare`, `variants` or `main`."""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


ENV = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "KERNEL_AB"))}
SOURCES = ("pyproject.toml", "setup.py", "README.md", "main.py", "kernel_ab", "compare", "variants")


def _sh(*argv, cwd):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=120, env=ENV, cwd=cwd)


def _checkout(dest: Path) -> str:
    """What the build reads of this checkout, committed in a repository of its own (the build runs there, so
    it leaves nothing in this checkout, and the commit it records is known); that commit."""
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, dest / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if copy is
                                          shutil.copytree else {}))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", dest]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "built"]):
        assert _sh(*git, *step, cwd=dest).returncode == 0
    return _sh(*git, "rev-parse", "HEAD", cwd=dest).stdout.strip()


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh venv with kernel-ab's wheel installed; its dependencies are those of this interpreter, put on
    its path by a .pth line (a plain folder: the editable install's finder there is never run)."""
    tmp = tmp_path_factory.mktemp("install")
    (tmp / "src").mkdir()
    commit = _checkout(tmp / "src")
    built = _sh(sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-q",
                "-w", tmp / "dist", tmp / "src", cwd=tmp)
    assert built.returncode == 0, built.stderr
    wheel = next((tmp / "dist").glob("kernel_ab-*.whl"))
    home = tmp / "venv"
    assert _sh(sys.executable, "-m", "venv", "--without-pip", home, cwd=tmp).returncode == 0
    python = home / "bin" / "python"
    installed = _sh(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q",
                    wheel, cwd=tmp)
    assert installed.returncode == 0, installed.stderr
    site = Path(_sh(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp).stdout.strip())
    import torch
    (site / "dependencies.pth").write_text(str(Path(torch.__file__).resolve().parents[1]) + "\n")
    return {"python": python, "bin": home / "bin", "site": site, "wheel": wheel, "commit": commit, "cwd": tmp}


def _in(venv, *argv):
    return _sh(*argv, cwd=venv["cwd"])


def test_the_wheel_holds_one_package_and_the_commit_it_was_built_from(venv):
    names = zipfile.ZipFile(venv["wheel"]).namelist()
    assert {n.split("/")[0] for n in names} == {"kernel_ab", venv["wheel"].name.split("-py3")[0] + ".dist-info"}
    for inside in ("kernel_ab/main.py", "kernel_ab/compare/model/results.py", "kernel_ab/variants/family.py"):
        assert inside in names
    assert zipfile.ZipFile(venv["wheel"]).read("kernel_ab/COMMIT").decode().strip() == venv["commit"]


@pytest.mark.parametrize("name", ["compare", "variants", "main"])
def test_no_generic_top_level_name_is_importable_after_installing(venv, name):
    got = _in(venv, venv["python"], "-c", f"import {name}")
    assert got.returncode == 1 and f"No module named '{name}'" in got.stderr


def test_kernel_abs_own_imports_resolve_inside_its_package(venv):
    got = _in(venv, venv["python"], "-c", "import kernel_ab, compare, variants; print(compare.__file__); "
                                          "print(variants.__file__)")
    assert got.returncode == 0, got.stderr
    for line in got.stdout.split():
        assert Path(line).is_relative_to(venv["site"] / "kernel_ab")


@pytest.mark.parametrize("command", [["bin/kernel-ab"], ["bin/python", "-m", "kernel_ab"]])
def test_the_command_and_the_module_print_the_version_with_the_commit(venv, command):
    exe = venv["bin"].parent / command[0]
    got = _in(venv, exe, *command[1:], "--version")
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == f"kernel-ab 0.1.0 (commit {venv['commit'][:7]})"


def test_an_installed_run_records_the_commit_its_wheel_was_built_from(venv):
    out = venv["cwd"] / "r.json"
    ran = _in(venv, venv["bin"] / "kernel-ab", "compare", "--shape", "2,8,2,4", "--trials", "1", "--inputs", "normal",
              "--check", "numerics", "--quiet", "--json", out)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(out.read_text())["environment"]["git_commit"] == venv["commit"]


def test_python_m_kernel_ab_runs_a_command_and_names_itself_in_its_errors(venv):
    listed = _in(venv, venv["python"], "-m", "kernel_ab", "list")
    assert listed.returncode == 0 and listed.stdout.startswith("families: "), listed.stderr
    wrong = _in(venv, venv["python"], "-m", "kernel_ab", "lis")
    assert wrong.returncode == 2 and wrong.stderr.startswith("kernel-ab: error: argument command: invalid choice")


def test_a_dask_worker_of_an_install_resolves_the_task_it_is_sent(venv):
    """--scheduler sends its task by reference (pickle): sent from an installed kernel-ab, it names kernel_ab's
    entry, which a worker process that never imported kernel-ab can load, with kernel-ab's names after it."""
    sent = _in(venv, venv["python"], "-c", "import kernel_ab, pickle, sys; from compare.processes import dask_executor; "
                                           "sys.stdout.write(pickle.dumps(dask_executor._entry()).hex())")
    assert sent.returncode == 0, sent.stderr
    got = _in(venv, venv["python"], "-c", f"import pickle, sys; f = pickle.loads(bytes.fromhex('{sent.stdout}')); "
                                          "import compare.processes.dask_executor as d; print(f.__module__, d.__file__)")
    assert got.returncode == 0, got.stderr
    module, file = got.stdout.split()
    assert module == "kernel_ab" and Path(file).is_relative_to(venv["site"] / "kernel_ab")
