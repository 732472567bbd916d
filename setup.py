"""Packaging (the metadata is pyproject.toml's): everything kernel-ab installs lies under one package,
kernel_ab. The repository's folders are mapped into it at build time: compare/ -> kernel_ab/compare,
variants/ -> kernel_ab/variants, main.py -> kernel_ab/main.py; the commit built from is kept in
kernel_ab/COMMIT for `kernel-ab --version`. kernel_ab/__init__.py makes the code's own absolute imports
(`import compare...`) resolve there."""
import importlib.util
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
MAPPED = ("compare", "variants")


def _commit() -> str:
    """The commit of the checkout built from ('' outside a git checkout, as in an sdist): --version's own
    function, loaded from its file (the package is not importable while it is being built)."""
    spec = importlib.util.spec_from_file_location("_kernel_ab_version", ROOT / "compare" / "runtime" / "version.py")
    version = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(version)
    return version.commit(ROOT, full=True)


class BuildPy(build_py):
    """main.py is one file at the repository's top: no package folder holds it, so it is copied in here."""

    def run(self):
        super().run()
        if self.editable_mode:   # an editable install runs the checkout itself; its git tells the commit
            return
        target = Path(self.build_lib, "kernel_ab")
        self.copy_file(str(ROOT / "main.py"), str(target / "main.py"))
        sha = _commit()
        if sha:
            (target / "COMMIT").write_text(sha + "\n")

    def get_source_files(self):   # an sdist carries main.py too
        return [*super().get_source_files(), "main.py"]


setup(
    packages=["kernel_ab", *(f"kernel_ab.{p}" for p in find_packages(include=[f"{m}*" for m in MAPPED]))],
    package_dir={"kernel_ab": "kernel_ab", **{f"kernel_ab.{m}": m for m in MAPPED}},
    cmdclass={"build_py": BuildPy},
)
