"""Tests of an optional extra import its module through `need`: it skips, naming the extra, where the extra
is not installed, and fails where it should be (KERNEL_AB_REQUIRE_EXTRAS=1, set by .ci/run, which installs
every extra the README installs), so that a CI run cannot go green with an extra's tests silently skipped."""
from __future__ import annotations

import importlib
import os

import pytest

REQUIRE_ENV = "KERNEL_AB_REQUIRE_EXTRAS"

# the module each distribution of an extra installs, by extra (pyproject.toml's optional-dependencies;
# tests/test_extras.py keeps the two in step)
MODULES = {"test": {"pytest": "pytest", "pytest-xdist": "xdist", "pyyaml": "yaml", "setuptools": "setuptools",
                    "transformers": "transformers", "einops": "einops"},
           "plot": {"matplotlib": "matplotlib"},
           "dask": {"dask": "dask", "distributed": "distributed"}}
EXTRA_OF = {module: extra for extra, modules in MODULES.items() for module in modules.values()}


def need(module: str):
    """The module, imported; where it is missing, skip (fail under KERNEL_AB_REQUIRE_EXTRAS=1). Works at a
    module's top level too (the whole file then skips, or fails to collect)."""
    extra = EXTRA_OF[module]   # a KeyError: a module of no extra is a plain dependency, imported plainly
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{module} is missing, but this run installs kernel-ab[{extra}] ({REQUIRE_ENV}=1): {exc}",
                        pytrace=False)
        pytest.skip(f"{module} is not installed (pip install 'kernel-ab[{extra}]')", allow_module_level=True)
