"""Families found outside variants/ (variants/discovery.py): a --family-path folder, the reviewed repository's
pyproject table, an installed package's entry point; `list` names each one's origin; a name found twice, a
package that fails to import and a folder that is none are one line and exit 2; folders import isolated."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import main
from compare.runtime.backend import configure
from variants import discovery, registry

configure("auto")
ROOT = Path(__file__).resolve().parent.parent



def _origin(section: str) -> str:
    """A family's `from:` line in `list`'s output (its heading before it may wrap)."""
    return next(line for line in section.splitlines() if line.startswith("from: "))

def copy_rms_norm(folder: Path, name: str) -> Path:
    """variants/rms_norm as the package `folder/name` of a family called `name`: only its own files change."""
    dest = folder / name
    dest.mkdir(parents=True)
    for src in (ROOT / "variants" / "rms_norm").glob("*.py"):
        text = src.read_text().replace("variants.rms_norm", name).replace("variants/rms_norm/", f"{name}/")
        (dest / src.name).write_text(text.replace('name = "rms_norm"', f'name = "{name}"'))
    return folder


def package(folder: Path, name: str, init: str, **files: str) -> Path:
    """A package `folder/name` with this __init__.py (dedented), and top-level modules `files` beside it."""
    (folder / name).mkdir(parents=True)
    (folder / name / "__init__.py").write_text(textwrap.dedent(init))
    for module, text in files.items():
        (folder / f"{module}.py").write_text(textwrap.dedent(text))
    return folder


def scale_family(name: str, doc: str = '"""A scale family for the test."""', extra: str = "") -> str:
    """An __init__.py whose FAMILY is tests/fake_family's Scale under another name."""
    return f"from tests.fake_family import Scale\n{extra}\nclass F(Scale):\n    {doc}\n    name = {name!r}\n\nFAMILY = F()\n"


def run_main(capsys, *argv) -> tuple[int, str, str]:
    code = main.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_family_path_folder_outside_the_tree_is_listed_with_its_origin(tmp_path, capsys):
    folder = copy_rms_norm(tmp_path / "fams", "tiny_rms")
    code, out, _ = run_main(capsys, "list", "--family-path", str(folder))
    assert code == 0
    assert "tiny_rms" in out.splitlines()[0]
    section = out.split("## family tiny_rms:")[1]
    assert _origin(section) == f"from: --family-path {folder}"
    assert any(line.startswith("pointer_mutation ") for line in section.splitlines())
    assert "## family rms_norm:" in out and "from: built-in" in out


def test_pyproject_family_paths_are_relative_to_its_folder(tmp_path, capsys):
    package(tmp_path / "kernels" / "families", "mine", scale_family("py_scale"))
    (tmp_path / "pyproject.toml").write_text('[tool.kernel-ab]\nfamily-paths = ["kernels/families"]\n'
                                             '[tool.kernel-ab.kernels]\nignored = "by discovery"\n')
    (tmp_path / "sub").mkdir()
    code, out, _ = run_main(capsys, "list", "--repo", str(tmp_path / "sub"))   # found from a folder below it
    assert code == 0
    assert _origin(out.split("## family py_scale:")[1]) == "from: pyproject kernels/families"


def test_a_registry_outside_a_command_has_only_built_in_families(tmp_path, capsys):
    folder = package(tmp_path, "mine", scale_family("gone_after"))
    assert run_main(capsys, "list", "--family-path", str(folder))[0] == 0
    assert "gone_after" not in registry().families   # the command's folders ended with it


def compare_json(capsys, tmp_path, *argv) -> dict:
    folder = copy_rms_norm(tmp_path / "fams", "tiny_rms")
    code, _, err = run_main(capsys, "compare", *argv, "--family-path", str(folder), "--family", "tiny_rms",
                            "--shape", "3,24", "--trials", "1", "--inputs", "normal", "--json", str(tmp_path / "r.json"),
                            "--quiet")
    assert code == 0, err
    return json.loads((tmp_path / "r.json").read_text())


def test_compare_runs_a_family_added_in_a_temporary_folder(tmp_path, capsys):
    report = compare_json(capsys, tmp_path, "--check", "numerics", "--fail-on-numerics")
    assert report["family"] == "tiny_rms"
    statuses = {v["variant"]: v["status"] for case in report["numerics"]["cases"] for v in case["variants"]}
    assert statuses["pointer_mutation"] == statuses["explicit_offset"] == "pass"


def test_the_compile_worker_imports_a_folder_familys_kernels_again(tmp_path, capsys):
    """The compiled code comes from a worker process: it finds the kernel in the family's folder, on
    kernel-ab's own modules (a reviewed tree's kernel could not import them)."""
    report = compare_json(capsys, tmp_path, "explicit_offset", "--check", "ir", "--stage", "ttir")
    compiled = [(k["variant"], k["status"], k["error"]) for ir in report["ir_kernels"] for k in ir["variants"]]
    assert compiled == [("explicit_offset", "ok", "")], compiled


def test_two_families_with_one_name_is_one_line_and_exit_2(tmp_path, capsys):
    folder = package(tmp_path, "again", scale_family("rms_norm"))
    code, out, err = run_main(capsys, "list", "--family-path", str(folder))
    assert code == 2 and out == ""
    assert err == (f"kernel-ab: error: two families are named 'rms_norm': one from built-in, one from "
                   f"--family-path {folder}; rename one (its class's `name`) or leave one out\n")


@pytest.mark.parametrize("source, error", [
    ("import no_such_module_anywhere\n", "ModuleNotFoundError: No module named 'no_such_module_anywhere'"),
    ("raise SystemExit('no GPU, no family')\n", "SystemExit: no GPU, no family"),
    ("import sys\nsys.exit(0)\n", "SystemExit: 0"),   # a success code is no success here: the family is not there
    ("import sys\nsys.exit()\n", "SystemExit"),
])
def test_a_family_package_that_fails_to_import_is_named_in_one_line(tmp_path, capsys, source, error):
    folder = package(tmp_path, "broken", source)
    code, out, err = run_main(capsys, "list", "--family-path", str(folder))
    assert code == 2 and out == ""
    assert err == f"kernel-ab: error: family package broken (--family-path {folder}) failed to load: {error}\n"


@pytest.mark.parametrize("bad", ["/no/such/folder", ""])
def test_a_family_path_that_is_no_folder_is_refused(bad, capsys):
    code, _, err = run_main(capsys, "list", "--family-path", bad)
    assert code == 2 and err.count("\n") == 1 and "--family-path" in err


def test_pyproject_family_paths_not_a_list_is_refused(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.kernel-ab]\nfamily-paths = "fams"\n')
    code, _, err = run_main(capsys, "list", "--repo", str(tmp_path))
    assert code == 2 and "family-paths must be a list" in err and err.count("\n") == 1


def test_a_family_class_without_docstring_is_listed(tmp_path, capsys):
    folder = package(tmp_path, "nodoc", scale_family("nodoc_scale", doc="pass"))
    code, out, _ = run_main(capsys, "list", "--family-path", str(folder))
    assert code == 0
    assert "## family nodoc_scale: (its class has no docstring)" in out


def test_family_folders_import_isolated_from_each_other(tmp_path):
    """Two folders, each a package `fam` importing a top-level `common` of its own: each family gets its
    own, at import and in imports its code makes later (of a module imported already, and of one not yet
    imported), and neither stays in sys.modules."""
    which = ("    def which(self):\n        import common\n        from fam.late import VALUE\n"
             "        return common.VALUE, VALUE\n")
    for tag in ("a", "b"):
        init = scale_family(f"iso_{tag}", extra="import common").replace("\nFAMILY", which + "\nFAMILY")
        package(tmp_path / tag, "fam", init, common=f"VALUE = {tag!r}\n")
        (tmp_path / tag / "fam" / "late.py").write_text(f"VALUE = 'late {tag}'\n")
    with discovery.configured([str(tmp_path / "a"), str(tmp_path / "b")]):
        reg = registry()
    assert reg.family("iso_a").which() == ("a", "late a") and reg.family("iso_b").which() == ("b", "late b")
    assert "common" not in sys.modules and "fam" not in sys.modules and "fam.late" not in sys.modules
    assert reg.origins["iso_b"] == f"--family-path {tmp_path / 'b'}"


def install_by_hand(site: Path, name: str, version: str, entry_points: str, package_init: str) -> Path:
    """`site` holding package `name` (this __init__.py) as installed: NAME-VERSION.dist-info with METADATA,
    entry_points.txt and RECORD, as an installer writes it (no build backend, no wheel package needed)."""
    module = name.replace("-", "_")
    package(site, module, package_init)
    info = site / f"{module}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    files = [f"{module}/__init__.py"] + [f"{info.name}/{f}" for f in ("METADATA", "entry_points.txt", "RECORD")]
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files))
    return site


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory) -> Path:
    """A folder, like site-packages, where a tiny distribution kab-demo is installed whose entry point in
    group kernel_ab.families is a Family class."""
    return install_by_hand(tmp_path_factory.mktemp("plugin"), "kab-demo", "0.1", """\
        [kernel_ab.families]
        demo = kab_demo:F
        """, scale_family("ep_scale").replace("\nFAMILY = F()\n", "\n"))


def list_families(*argv: str, site: Path | None = None) -> subprocess.CompletedProcess:
    """`main.py list` in a process of its own, with `site` (if any) first on its PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (site and str(site), str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "main.py", "list", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True)


def test_list_names_entry_point_and_folder_origins(plugin_site, tmp_path):
    folder = copy_rms_norm(tmp_path, "tiny_rms")
    proc = list_families("--family-path", str(folder), site=plugin_site)
    assert proc.returncode == 0, proc.stderr
    assert "## family ep_scale:" in proc.stdout
    assert _origin(proc.stdout.split("## family ep_scale:")[1]) == "from: entry point demo from kab-demo"
    assert _origin(proc.stdout.split("## family tiny_rms:")[1]) == f"from: --family-path {folder}"


def test_a_family_is_found_through_the_installed_distribution_only(plugin_site):
    """Without the folder holding the distribution, its family is not listed: the entry point found it."""
    proc = list_families()
    assert proc.returncode == 0, proc.stderr
    assert "## family rms_norm:" in proc.stdout and "ep_scale" not in proc.stdout
