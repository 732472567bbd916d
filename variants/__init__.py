"""The variant registry: every kernel variant kernel-ab can compare, by name.

A variant is a frozen, self-validating record (`Variant`); a family (`Family`) owns what every
comparison needs for its variants: inputs, reference, output buffers, bytes moved, presets and the
launcher. Nothing here imports Triton: `registry()` imports the families when first asked, after
`compare.backend.configure()` has decided whether Triton runs compiled or interpreted.
"""
from __future__ import annotations

import dataclasses
import importlib
import re
from typing import Any, Callable, Mapping, Optional

KINDS = ("triton", "torch", "inductor")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
FAMILY_MODULES = {"group_norm": "variants.group_norm"}


class UnknownName(LookupError):
    """A name (variant, preset, family, dtype) that is not registered; the message names the known ones."""


@dataclasses.dataclass(frozen=True)
class Variant:
    """One kernel variant.

    `run(inputs, outputs, shape)` computes the forward into preallocated `outputs`. For Triton
    variants `kernel` is the `@triton.jit` function the family's launcher runs (and the IR
    comparison compiles); `origin` says where its code came from."""

    name: str
    family: str
    why: str
    kind: str
    run: Callable[..., None]
    needs_gpu: bool = False
    kernel: Any = None
    origin: str = ""
    import_roots: tuple[str, ...] = ()   # folders to put on sys.path to import the kernel's module again

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise ValueError(f"variant name {self.name!r} must be an identifier (letters, digits, _ . -)")
        if self.kind not in KINDS:
            raise ValueError(f"variant {self.name}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if not self.why.strip() or "\n" in self.why:
            raise ValueError(f"variant {self.name}: `why` must be one non-empty line")
        if self.kind == "triton" and self.kernel is None:
            raise ValueError(f"variant {self.name}: a Triton variant needs its @triton.jit kernel")
        if not callable(self.run):
            raise ValueError(f"variant {self.name}: `run` must be callable")


@dataclasses.dataclass(frozen=True)
class Family:
    """A kernel family: the shared pieces every comparison of its variants uses."""

    name: str
    presets: Mapping[str, Any]
    parse_shape: Callable[..., Any]
    default_preset: str
    default_pair: tuple[str, str]
    make_inputs: Callable[..., Any]
    reference: Callable[..., dict]
    alloc_outputs: Callable[..., dict]
    bytes_moved: Callable[..., int]
    bench_call: Callable[..., Callable[[], None]]
    triton_variant: Callable[..., Variant]
    variants: Callable[[], list]
    forward_params: tuple[str, ...] = ()   # parameter names, in order, that the launcher passes a Triton kernel
    # the backward pass, for families that have one (None: forward only)
    reference_backward: Optional[Callable[..., dict]] = None
    alloc_grads: Optional[Callable[..., dict]] = None
    run_backward: Optional[Callable[..., None]] = None
    backward_unsupported: Optional[Callable[..., Optional[str]]] = None

    def __post_init__(self):
        if self.default_preset not in self.presets:
            raise ValueError(f"family {self.name}: default preset {self.default_preset!r} is not a preset")

    def preset(self, name: str):
        try:
            return self.presets[name]
        except KeyError:
            raise UnknownName(f"unknown preset {name!r} for family {self.name}; "
                              f"known presets: {', '.join(self.presets)}") from None


@dataclasses.dataclass(frozen=True)
class Registry:
    """The registered variants, in registration order, and their families."""

    families: Mapping[str, Family]
    variants: Mapping[str, Variant]

    def get(self, name: str) -> Variant:
        try:
            return self.variants[name]
        except KeyError:
            raise UnknownName(f"unknown variant {name!r}; known variants: {', '.join(self.variants)}") from None

    def family(self, name: str) -> Family:
        try:
            return self.families[name]
        except KeyError:
            raise UnknownName(f"unknown family {name!r}; known families: {', '.join(self.families)}") from None

    def with_variant(self, variant: Variant) -> "Registry":
        """A registry that also holds `variant` (a name already taken is an error)."""
        if variant.name in self.variants:
            raise ValueError(f"variant name {variant.name!r} is already registered; pick another name")
        self.family(variant.family)
        return Registry(self.families, {**self.variants, variant.name: variant})


def registry() -> Registry:
    """Import every family and collect its variants. Call after `compare.backend.configure()`."""
    families: dict[str, Family] = {}
    variants: dict[str, Variant] = {}
    for name, module in FAMILY_MODULES.items():
        family = importlib.import_module(module).FAMILY
        families[name] = family
        for variant in family.variants():
            if variant.name in variants:
                raise ValueError(f"variant {variant.name!r} is registered twice")
            variants[variant.name] = variant
    return Registry(families, variants)
