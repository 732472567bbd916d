"""What the row-normalization families (layer_norm, rms_norm) share: a (rows, cols) shape, presets,
--shape parsing, the launch geometry of shared/specs/layer_norm.md (one block per row, num_warps from
the row length, persistent backward programs) and the sum of per-program partial buffers."""
from __future__ import annotations

import dataclasses

import torch

from variants.family import Preset, check_elements, check_float32

# The SM count assumed when a launcher runs on meta tensors (the IR's offline compile for sm_90):
# an H100/H200 SXM has 132 SMs, so a persistent backward gets 132 programs as it would there.
OFFLINE_PROGRAMS = 132
SHAPE_FORM = "ROWS,COLS (for example 4096,1024)"


def next_power_of_2(n: int) -> int:
    return 1 << (n - 1).bit_length()


@dataclasses.dataclass(frozen=True)
class RowShape:
    """X viewed as (rows, cols): each row is normalized on its own over its `cols` (hidden) elements."""

    rows: int
    cols: int
    eps: float = 1e-6

    def __post_init__(self):
        for field, value in (("rows", self.rows), ("cols", self.cols)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{field} must be a positive integer, got {value!r}")
        check_elements(self.numel)
        check_float32("eps", self.eps, positive=True)

    @property
    def hidden_size(self) -> int:
        return self.cols

    @property
    def numel(self) -> int:
        return self.rows * self.cols

    @property
    def tensor_shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    def units(self, t):
        """The input as (1, rows, cols): every row is a unit of its own."""
        return t.view(1, self.rows, self.cols)

    @property
    def block_size(self) -> int:
        return next_power_of_2(self.cols)

    @property
    def num_warps(self) -> int:
        """The spec's: 4 below 2048 columns, 8 from 2048, 16 from 8192, 32 from 32768."""
        return 32 if self.cols >= 32768 else 16 if self.cols >= 8192 else 8 if self.cols >= 2048 else 4

    @property
    def label(self) -> str:
        return f"R{self.rows} H{self.cols}"

    def as_dict(self) -> dict:
        return {"rows": self.rows, "cols": self.cols, "eps": self.eps}


def presets(family: str, make=RowShape, suffix: str = "", why: str = "") -> dict[str, Preset]:
    """The spec's presets: `default` small for the CPU interpreter, `llm` rows 4096 x hidden 1024..16384,
    and edge cases; `make(rows, cols)` builds a shape, `suffix` and `why` name and describe a variation."""
    return {p.name: p for p in (
        Preset(f"default{suffix}", f"small {family} shapes the CPU interpreter runs in seconds: 64 rows, "
               f"hidden 64, 200, 512{why}", tuple(make(64, c) for c in (64, 200, 512)), x_name="cols"),
        Preset(f"llm{suffix}", f"an LLM's activations: 4096 rows (batch 4 x sequence 1024), hidden 1024..16384{why}",
               tuple(make(4096, c) for c in (1024, 2048, 4096, 8192, 16384)), x_name="cols"),
        Preset(f"llm4096{suffix}", f"the llm preset's hidden 4096 alone{why}", (make(4096, 4096),), x_name="cols"),
        Preset(f"review{suffix}", f"what review takes on a GPU: one sequence of 2048 tokens x hidden 4096 (rows are "
               f"independent: each row's work as in llm4096){why}", (make(2048, 4096),), x_name="cols"),
        Preset(f"edge{suffix}", f"edge cases: one row of one element; hidden not a power of two; one long row{why}",
               (make(1, 1), make(3, 1000), make(2, 40000)), x_name="cols"),
    )}


def parse_shape(text: str, eps: float = 1e-6) -> Preset:
    """A one-shape preset from 'ROWS,COLS' (ValueError if bad)."""
    try:
        rows, cols = (int(p) for p in text.split(","))
    except ValueError:
        raise ValueError(f"--shape {text!r} is not {SHAPE_FORM}") from None
    shape = RowShape(rows, cols, eps)
    return Preset("custom", f"the one shape {shape.label}", (shape,), x_name="cols")


def programs(device) -> int:
    """Programs of a persistent backward: the GPU's SM count, OFFLINE_PROGRAMS on meta tensors, 1 on the CPU."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return OFFLINE_PROGRAMS if device.type == "meta" else 1
