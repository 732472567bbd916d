"""Planted faults: a real variant's source with one edit, loaded as a new variant.

Each mutant asserts that its edit matched the source, so a test built on one cannot silently turn
into a comparison of the unchanged kernel."""
from __future__ import annotations

import importlib.util
import inspect
import shutil
import sys
from pathlib import Path

from variants.group_norm import FAMILY

ROOT = Path(__file__).resolve().parent.parent


def load_mutated(tmp_path: Path, module, name: str, old: str, new: str, count: int):
    """`module`'s source with `old` replaced by `new` (which must occur `count` times), imported from a file."""
    source = inspect.getsource(module)
    found = source.count(old)
    assert found == count, f"planted fault {name}: expected {count} match(es) of {old!r}, found {found}"
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(old, new))
    spec = importlib.util.spec_from_file_location(f"planted_{name}", path)
    mutated = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mutated
    spec.loader.exec_module(mutated)
    return mutated, path


def load_mutated_coop(tmp_path: Path, name: str, old: str, new: str, count: int = 1):
    """single_read_coop with one edit, wherever the edited text lies: in the variant's file, or in the
    arithmetic its kernels import (coop_math), whose mutant the variant's file then imports instead."""
    from variants.group_norm import coop_math, single_read_coop
    if inspect.getsource(coop_math).count(old):
        arithmetic, _ = load_mutated(tmp_path, coop_math, f"{name}_math", old, new, count)
        return load_mutated(tmp_path, single_read_coop, name, "from variants.group_norm.coop_math import",
                            f"from {arithmetic.__name__} import", 1)
    return load_mutated(tmp_path, single_read_coop, name, old, new, count)


def mutant(tmp_path: Path, base_module, name: str, old: str, new: str, count: int = 1, why: str = ""):
    """A forward variant: `base_module` (a variant file) with one edit (`why`: its one-line description,
    by default the edit itself)."""
    module, path = load_mutated(tmp_path, base_module, name, old, new, count)
    return FAMILY.triton_variant(name, why or f"planted fault: {new.strip()}", str(path),
                                 forward=module.group_norm_forward)


def variants_tree(folder: Path) -> Path:
    """`folder` holding a copy of kernel-ab's `variants` package: a tree in which a --variant file's
    `from variants.group_norm.common import ...` resolves (a --variant never imports kernel-ab's own)."""
    shutil.copytree(ROOT / "variants", folder / "variants", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def mutant_file(tmp_path: Path, base_module, name: str, old: str, new: str, count: int = 1) -> Path:
    """`base_module` (a variant file) with one edit, written beside it in a copy of the `variants`
    package (for `--variant NAME=FILE::FUNCTION`, whose imports resolve in the file's own tree)."""
    path = load_mutated(tmp_path, base_module, name, old, new, count)[1]
    tree = variants_tree(tmp_path / f"{name}_tree")
    copy = tree / Path(inspect.getsourcefile(base_module)).resolve().relative_to(ROOT).with_name(path.name)
    copy.write_text(path.read_text())
    return copy


def mutant_backward(tmp_path: Path, name: str, old: str, new: str, count: int = 1):
    """The shared backward kernel (variants/group_norm/backward.py) with one edit: its @triton.jit
    function, to give a variant as its backward kernel (`triton_variant(..., backward=...)`)."""
    import variants.group_norm.backward as backward
    return load_mutated(tmp_path, backward, name, old, new, count)[0].group_norm_backward
