"""kernel-ab as one installed package. Its code imports itself by the names a checkout has at its root
(`compare`, `variants`, `main`); installed, those lie inside this package (setup.py maps them there), so
site-packages holds no `compare` of kernel-ab's: the names resolve only in a process that imported
kernel_ab, through the finder below, and always to kernel-ab's own files. In a checkout or an editable
install the same finder answers them from the checkout's root."""
from __future__ import annotations

import sys
from importlib.machinery import PathFinder
from pathlib import Path

_HERE = Path(__file__).resolve().parent
# the folder holding compare/, variants/ and main.py: this package when installed, else the checkout's root
HOME = _HERE if (_HERE / "compare").is_dir() else _HERE.parent
NAMES = frozenset({"compare", "variants", "main"})


class HomeFinder:
    """First on sys.meta_path: kernel-ab's top-level names from HOME (a `compare` elsewhere on sys.path, or
    installed by another distribution, is never taken for kernel-ab's); every other name passes on."""

    def find_spec(self, fullname, path=None, target=None):
        if path is None and fullname in NAMES:
            return PathFinder.find_spec(fullname, [str(HOME)], target)
        return None

    def invalidate_caches(self):
        pass


if not any(isinstance(f, HomeFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, HomeFinder())


def cli() -> None:
    """The `kernel-ab` command and `python -m kernel_ab`."""
    import main
    main.cli()


def dask_task(*args):
    """A --scheduler task (compare/processes/dask_executor.py), sent by this name: a Dask worker unpickling it
    imports kernel_ab first, and with it the finder that resolves kernel-ab's own names."""
    from compare.processes.dask_executor import run_task
    return run_task(*args)
