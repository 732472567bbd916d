"""Shapes, presets and input kinds of the cross-entropy family (shared/specs/cross_entropy.md).

A shape is (rows, V) logits with the op's settings (reduction, label smoothing, ignore_index) and the
widest chunk of a row a program reads at once (`max_block`: the `default` preset keeps it small, so the
interpreter runs the kernels' chunk loops as long vocabularies do). An input kind has a generator for the
logits and one for the targets (all_ignored is about the targets)."""
from __future__ import annotations

import dataclasses

import torch

from variants.cross_entropy.common import MAX_BLOCK, REDUCTIONS, block_size
from variants.family import Preset, check_elements

IGNORE_INDEX = -100
IGNORED_SHARE = 0.1   # about this share of the rows is set to ignore_index (seeded)
CONFIDENT_MARGIN = 20.0   # the confident kind's target logit above the others' standard normal
SHAPE_FORM = ("ROWS,V[,REDUCTION[,SMOOTHING]] with REDUCTION mean, sum or none and SMOOTHING in [0, 1) "
              "(for example 4096,128256,mean)")


@dataclasses.dataclass(frozen=True)
class CEShape:
    """Logits (rows, vocab), integer targets (rows,), and the op's settings."""

    rows: int
    vocab: int
    reduction: str = "mean"
    label_smoothing: float = 0.0
    ignore_index: int = IGNORE_INDEX
    max_block: int = MAX_BLOCK

    def __post_init__(self):
        for field in ("rows", "vocab", "max_block"):
            value = getattr(self, field)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{field} must be a positive integer, got {value!r}")
        check_elements(self.numel)
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"reduction {self.reduction!r} is not one of {', '.join(REDUCTIONS)}")
        if not (isinstance(self.label_smoothing, (int, float)) and 0.0 <= self.label_smoothing < 1.0):
            raise ValueError(f"label smoothing must be a number in [0, 1), got {self.label_smoothing!r}")
        if 0 <= self.ignore_index < self.vocab:
            raise ValueError(f"ignore_index {self.ignore_index} is a class of V {self.vocab}; take one outside [0, V)")

    @property
    def numel(self) -> int:
        return self.rows * self.vocab

    @property
    def tensor_shape(self) -> tuple[int, int]:
        return (self.rows, self.vocab)

    @property
    def block_size(self) -> int:
        return block_size(self.vocab, self.max_block)

    @property
    def label(self) -> str:
        extra = "" if self.label_smoothing == 0.0 else f" smoothing {self.label_smoothing:g}"
        return f"R{self.rows} V{self.vocab} {self.reduction}{extra}"

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


PRESETS = {p.name: p for p in (
    Preset("default", "small shapes the CPU interpreter runs in seconds: rows 8..32, V 1000..5000 (4000 not a "
           "power of two), each reduction, label smoothing once; rows read in chunks of 1024",
           (CEShape(8, 1000, "mean", max_block=1024), CEShape(16, 4096, "sum", 0.1, max_block=1024),
            CEShape(32, 4000, "none", max_block=1024)), x_name="vocab"),
    Preset("llm", "an LLM's last layer: rows 16384 x V 32000 (Llama 2), 8192 x 128256 (Llama 3), 4096 x 256000 "
           "(Gemma), mean over the rows; about 10^9 logits at most", (CEShape(16384, 32000), CEShape(8192, 128256),
                                                                      CEShape(4096, 256000)), x_name="vocab"),
    Preset("review", "what review takes on a GPU: 256 rows x V 128256 (Llama 3), mean (rows are independent: each "
           "row's work as in llm)", (CEShape(256, 128256),), x_name="vocab"),
)}


def parse_shape(text: str, eps: float = 1e-6) -> Preset:
    """A one-shape preset from 'ROWS,V[,REDUCTION[,SMOOTHING]]' (ValueError if bad); `eps` is not used."""
    parts = [p.strip() for p in text.split(",")]
    try:
        if not 2 <= len(parts) <= 4:
            raise ValueError
        rows, vocab = int(parts[0]), int(parts[1])
        smoothing = float(parts[3]) if len(parts) > 3 else 0.0
    except ValueError:
        raise ValueError(f"--shape {text!r} is not {SHAPE_FORM}") from None
    shape = CEShape(rows, vocab, parts[2] if len(parts) > 2 else "mean", smoothing)
    return Preset("custom", f"the one shape {shape.label}", (shape,), x_name="vocab")


# ---------------------------------------------------------------- input kinds
# Two generators per kind, drawn in this order from one seeded stream: the logits (float64, cast to the
# dtype by the protocol), then the int64 targets.
def normal(shape: CEShape, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """Logits standard normal."""
    return torch.randn(shape.tensor_shape, generator=gen, dtype=torch.float64)


def large(shape: CEShape, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """Logits uniform in +-1e4 (float32) or +-max/4 of a 16-bit dtype: a naive sum of exp(x) overflows."""
    top = 1e4 if dtype == torch.float32 else float(torch.finfo(dtype).max) / 4
    return top * (2 * torch.rand(shape.tensor_shape, generator=gen, dtype=torch.float64) - 1)


def all_equal(shape: CEShape, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """Every row one value repeated (4 * randn per row): a uniform softmax, loss log V."""
    return (4 * torch.randn(shape.rows, 1, generator=gen, dtype=torch.float64)).expand(shape.tensor_shape).clone()


def nonfinite(shape: CEShape, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """Standard normal, a NaN and a +Inf in row 0 (seeded columns), whose target is never ignored
    (`targets_nonfinite`): that row's loss and gradient are NaN, and so the mean and the sum."""
    x = normal(shape, gen, dtype)
    nan_at, inf_at = torch.randint(shape.vocab, (2,), generator=gen).tolist()
    x[0, nan_at], x[0, inf_at] = float("nan"), float("inf")
    return x


def _confident_classes(shape: CEShape) -> torch.Tensor:
    """Each row's confident class: spread over the vocabulary, fixed by the row (no draw), so that the logits'
    generator and the targets' agree on it."""
    return (torch.arange(shape.rows) * 7919 + 13) % shape.vocab


def confident(shape: CEShape, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """A confident model's logits: standard normal, the target class CONFIDENT_MARGIN above. At V 128256
    softmax at the target lies between 0.99 and 1 - 1e-4, so its gradient (p - 1) / N cancels: rounded to a 16-bit
    dtype before the -1 is added, it keeps almost no significant bits (Liger-Kernel #1329 fixes this)."""
    x = normal(shape, gen, dtype)
    x[torch.arange(shape.rows), _confident_classes(shape)] += CONFIDENT_MARGIN
    return x


def targets_confident(shape: CEShape, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """Each row's confident class, about 10% of the rows set to ignore_index."""
    ignored = torch.rand(shape.rows, generator=gen) < IGNORED_SHARE
    target = _confident_classes(shape)
    return torch.where(ignored, torch.full_like(target, shape.ignore_index), target)


def targets(shape: CEShape, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """Uniform classes, about 10% of the rows set to ignore_index."""
    target = torch.randint(shape.vocab, (shape.rows,), generator=gen)
    ignored = torch.rand(shape.rows, generator=gen) < IGNORED_SHARE
    return torch.where(ignored, torch.full_like(target, shape.ignore_index), target)


def targets_all_ignored(shape: CEShape, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """Every target ignore_index: the mean is NaN (0/0), every gradient 0."""
    return torch.full((shape.rows,), shape.ignore_index, dtype=torch.int64)


def targets_nonfinite(shape: CEShape, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """As `targets`, with row 0 (where `nonfinite` plants NaN and Inf) never ignored."""
    target = targets(shape, gen, dtype)
    target[0] = int(torch.randint(shape.vocab, (1,), generator=gen))
    return target


LOGITS = {"normal": normal, "large": large, "all_equal": all_equal, "all_ignored": normal, "nonfinite": nonfinite,
          "confident": confident}
TARGETS = {kind: targets for kind in LOGITS} | {"all_ignored": targets_all_ignored, "nonfinite": targets_nonfinite,
                                                "confident": targets_confident}
