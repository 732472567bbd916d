"""What the numerics keep out of a variant's reach while it runs: freed memory of its outputs' sizes poisoned
before each call (an output never written says so), no tensor of the reference or of other variants'
outputs until all have run (outputs kept as bare storage), and no Tensor subclass ever read (a foul).
docs/threat-model.md ("What a variant cannot fake in a call") says what each defends against."""
from __future__ import annotations

import dataclasses

import torch

from compare.model.fouls import Finding, Foul

SCRUB_COPIES = 4   # blocks of each output's size poisoned and freed before a call (the allocator reuses the last)


def scrub_freed(like: dict[str, torch.Tensor], poison) -> None:
    """Take blocks the size of each of `like`'s tensors from the allocator, poison them (`poison`, the
    numerics' poison_) and free them again: the next allocations of those sizes get poisoned memory."""
    if any(t.device.type == "cuda" for t in like.values()):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()   # cached blocks go back; the ones taken below are fresh and poisoned
    taken = [poison(torch.empty(t.shape, dtype=t.dtype, device=t.device))
             for t in like.values() for _ in range(SCRUB_COPIES)]
    del taken


@dataclasses.dataclass(frozen=True)
class Stowed:
    """A tensor kept as its bare storage and layout: no tensor object exists for `gc` to find."""

    storage: torch.UntypedStorage
    dtype: torch.dtype
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int

    @classmethod
    def of(cls, t: torch.Tensor) -> "Stowed":
        return cls(t.untyped_storage(), t.dtype, tuple(t.shape), tuple(t.stride()), t.storage_offset())

    def tensor(self) -> torch.Tensor:
        return torch.empty(0, dtype=self.dtype, device=self.storage.device).set_(
            self.storage, self.offset, self.shape, self.stride)


def stow(outputs: dict[str, torch.Tensor]) -> dict[str, Stowed]:
    return {k: Stowed.of(t) for k, t in outputs.items()}


def unstow(kept: dict[str, Stowed]) -> dict[str, torch.Tensor]:
    return {k: s.tensor() for k, s in kept.items()}


def not_plain(outputs: dict) -> str:
    """The type name of the first output that is not a plain torch.Tensor ("" if all are)."""
    return next((type(t).__name__ for t in outputs.values() if type(t) is not torch.Tensor), "")


def subclass_finding(variant: str, type_name: str) -> Finding:
    return Finding(variant, Foul.SUBCLASS, f"{type_name}, not torch.Tensor")
