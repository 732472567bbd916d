"""The registry record: the families found and their variants, by name (variants/discovery.py fills it).

Loading machinery, above the protocol (variants/family.py, variants/variant.py): it imports no family."""
from __future__ import annotations

import dataclasses
import pkgutil
from pathlib import Path
from typing import Mapping, Optional

from variants.family import Family, UnknownName
from variants.variant import Variant

# the family `compare` runs when neither a family nor a variant is named (else the first one found)
DEFAULT_FAMILY = "group_norm"


@dataclasses.dataclass(frozen=True)
class Registry:
    """The families found and their variants, in registration order."""

    families: Mapping[str, Family]
    by_family: Mapping[str, Mapping[str, Variant]]
    origins: Mapping[str, str] = dataclasses.field(default_factory=dict)   # family -> where it came from

    @property
    def default_family(self) -> str:
        return DEFAULT_FAMILY if DEFAULT_FAMILY in self.families else next(iter(self.families))

    def family(self, name: str) -> Family:
        try:
            return self.families[name]
        except KeyError:
            raise UnknownName(f"unknown family {name!r}; known families: {', '.join(self.families)}") from None

    def variants(self, family: Optional[str] = None) -> list[Variant]:
        """Every variant of `family` (None: of every family, family by family)."""
        names = [family] if family else list(self.families)
        return [v for f in names for v in self.by_family.get(f, {}).values()]

    def has(self, name: str, family: Optional[str] = None) -> bool:
        return any(v.name == name for v in self.variants(family))

    def get(self, name: str, family: Optional[str] = None) -> Variant:
        """The variant `name` of `family`; without a family, the default family's, else the one family's
        that has it (UnknownName naming the known ones, or the families to choose from)."""
        if family is not None:
            found = self.by_family.get(self.family(family).name, {})
            if name not in found:
                raise UnknownName(f"unknown variant {name!r} of family {family}; known variants: {', '.join(found)}")
            return found[name]
        default = self.by_family.get(self.default_family, {})
        if name in default:
            return default[name]
        owners = [f for f, vs in self.by_family.items() if name in vs]
        if len(owners) == 1:
            return self.by_family[owners[0]][name]
        if owners:
            raise UnknownName(f"variant {name!r} exists in families {', '.join(owners)}; pick one with --family")
        raise UnknownName(f"unknown variant {name!r}; known variants: "
                          f"{', '.join(v.name for v in self.variants(self.default_family))} "
                          f"(family {self.default_family}; --family picks another)")

    def with_variant(self, variant: Variant) -> "Registry":
        """A registry that also holds `variant` (a name its family already has is an error)."""
        family = self.family(variant.family).name
        if variant.name in self.by_family.get(family, {}):
            raise ValueError(f"variant name {variant.name!r} is already registered in {family}; pick another name")
        return Registry(self.families, {**self.by_family, family: {**self.by_family.get(family, {}), variant.name: variant}},
                        self.origins)

    def with_family(self, family: Family, origin: str = "given", variants=None) -> "Registry":
        """A registry that also holds `family` and its variants (`variants`: those already collected)."""
        if family.name in self.families:
            raise ValueError(f"family {family.name!r} is already registered")
        return Registry({**self.families, family.name: family},
                        {**self.by_family, family.name: collect(family) if variants is None else variants},
                        {**self.origins, family.name: origin})


def collect(family: Family) -> dict[str, Variant]:
    """The variants of `family` by name (ValueError: a name given twice, or a variant of another family)."""
    found: dict[str, Variant] = {}
    for variant in family.variants():
        if variant.name in found:
            raise ValueError(f"variant {variant.name!r} is registered twice in family {family.name}")
        if variant.family != family.name:
            raise ValueError(f"variant {variant.name!r} of family {family.name} says it is of {variant.family!r}")
        found[variant.name] = variant
    return found


def family_packages() -> list[str]:
    """The packages under variants/ (the folders with an __init__.py), sorted: where families live."""
    return sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.ispkg)
