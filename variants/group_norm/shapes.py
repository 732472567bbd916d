"""Group-norm shapes and presets (shared/specs/group_norm.md, "Shapes worth having as presets")."""
from __future__ import annotations

import dataclasses
import math

from variants.family import Preset, check_elements, check_float32

BLOCK_CAP = 65536


def triton_next_power_of_2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def _divisors(n: int, limit: int = 24) -> str:
    """The divisors of n, ascending, at most `limit` of them listed (found up to sqrt(n), so a huge n is quick)."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    found = sorted(set(small + [n // d for d in small]))
    shown = ", ".join(map(str, found[:limit]))
    return shown + (f", ... ({len(found)} in all)" if len(found) > limit else "")


@dataclasses.dataclass(frozen=True)
class Shape:
    """A group-norm problem: input (batch, channels, *spatial), `num_groups` groups."""

    batch: int
    channels: int
    num_groups: int
    spatial: tuple[int, ...]
    eps: float = 1e-6

    def __post_init__(self):
        for field, value in (("batch", self.batch), ("channels", self.channels), ("num_groups", self.num_groups)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{field} must be a positive integer, got {value!r}")
        if not self.spatial or any((not isinstance(s, int)) or s < 1 for s in self.spatial):
            raise ValueError(f"spatial sizes must be positive integers, got {self.spatial!r}")
        check_elements(self.numel)   # before the divisors are listed: a huge count must not be searched
        if self.channels % self.num_groups:
            raise ValueError(f"channels ({self.channels}) must be divisible by num_groups ({self.num_groups}); "
                             f"divisors of {self.channels} are {_divisors(self.channels)}")
        check_float32("eps", self.eps, positive=True)

    @property
    def channels_per_group(self) -> int:
        return self.channels // self.num_groups

    @property
    def spatial_size(self) -> int:
        return math.prod(self.spatial)

    @property
    def hidden_size(self) -> int:
        return self.channels_per_group * self.spatial_size

    @property
    def numel(self) -> int:
        return self.batch * self.channels * self.spatial_size

    @property
    def tensor_shape(self) -> tuple[int, ...]:
        return (self.batch, self.channels, *self.spatial)

    def units(self, t):
        """The input viewed as (batch, groups, hidden): each group of each sample is normalized on its own."""
        return t.view(self.batch, self.num_groups, -1)

    @property
    def block_size(self) -> int:
        return min(BLOCK_CAP, triton_next_power_of_2(self.hidden_size))

    @property
    def label(self) -> str:
        spatial = "x".join(map(str, self.spatial))
        return f"N{self.batch} C{self.channels} G{self.num_groups} S{spatial}"

    def as_dict(self) -> dict:
        return {"batch": self.batch, "channels": self.channels, "num_groups": self.num_groups,
                "spatial": list(self.spatial), "eps": self.eps}

    @classmethod
    def from_dict(cls, d: dict) -> "Shape":
        return cls(**{**d, "spatial": tuple(d["spatial"])})


def _seed_sweep(batch: int, spatial: int, channels: tuple[int, ...]) -> tuple[Shape, ...]:
    return tuple(Shape(batch, c, c // 4, (spatial,)) for c in channels)


PRESETS = {p.name: p for p in (
    Preset("default", "the seed's structure (4 channels per group, channel sweep) at a size the CPU "
           "interpreter runs in seconds", _seed_sweep(2, 256, (32, 64, 128)), x_name="channels"),
    Preset("seed", "the seed's benchmark sweep: batch 128, spatial 512, 4 channels per group, "
           "channels 32..2048, eps 1e-6", _seed_sweep(128, 512, (32, 64, 128, 256, 512, 1024, 2048)),
           x_name="channels"),
    Preset("seed512", "the seed's 512-channel shape alone", _seed_sweep(128, 512, (512,)), x_name="channels"),
    Preset("review", "what review takes on a GPU: seed512 on batch 32 (each group's work as at batch 128; samples "
           "are independent), so a review's float64 inputs, drawn on the host, take seconds",
           _seed_sweep(32, 512, (512,)), x_name="channels"),
    Preset("edge", "edge cases: 1 channel of 1 element; hidden size not a power of two; a group "
           "larger than BLOCK_SIZE's cap (both passes loop more than once); batch 1",
           (Shape(2, 1, 1, (1,)), Shape(3, 6, 2, (7, 5)), Shape(2, 2, 1, (300, 300)), Shape(1, 8, 2, (16,))),
           x_name="hidden_size"),
    Preset("image", "image-model shapes, groups too large to keep on chip: batch 16, 320 channels, and batch "
           "32, 512 channels, 32 groups, 64x64",
           (Shape(16, 320, 32, (64, 64)), Shape(32, 512, 32, (64, 64))), x_name="hidden_size"),
)}

SHAPE_FORM = "BATCH,CHANNELS,GROUPS,SPATIAL (for example 16,320,32,64x64)"


def parse_shape(text: str, eps: float = 1e-6) -> Preset:
    """A one-shape preset from 'BATCH,CHANNELS,GROUPS,SPATIAL' with SPATIAL like 64x64 (ValueError if bad)."""
    parts = text.split(",")
    try:
        if len(parts) != 4:
            raise ValueError
        batch, channels, groups = (int(p) for p in parts[:3])
        spatial = tuple(int(s) for s in parts[3].lower().split("x"))
    except ValueError:
        raise ValueError(f"--shape {text!r} is not {SHAPE_FORM}") from None
    shape = Shape(batch, channels, groups, spatial, eps)
    return Preset("custom", f"the one shape {shape.label}", (shape,), x_name="channels")
