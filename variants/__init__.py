"""The variant registry: every family kernel-ab finds, and every variant of each, by name.

A family is a package whose `__init__.py` sets `FAMILY` (variants/discovery.py says where they are found);
variant names are unique within a family. Nothing here imports Triton: `registry()` imports the families on
first use, after `compare.runtime.backend.configure()` has chosen compiled or interpreted Triton.
"""
from __future__ import annotations

from typing import Iterable

from variants.catalog import DEFAULT_FAMILY, Registry
from variants.family import Family, NotForThisShape, Preset, UnknownName
from variants.variant import KINDS, Variant

__all__ = ["Family", "NotForThisShape", "Preset", "Registry", "UnknownName", "Variant", "KINDS", "registry", "DEFAULT_FAMILY"]


def registry(extra: Iterable[Family] = ()) -> Registry:
    """Every family found (variants/discovery.py: built-in, --family-path, the reviewed repository's
    pyproject, entry points) plus `extra`, and their variants. Call after `compare.runtime.backend.configure()`:
    families import their Triton kernels here."""
    from variants.discovery import registry as discovered   # the loading machinery, when first asked
    reg = discovered()
    for family in extra:
        reg = reg.with_family(family)
    return reg
