"""The family's side of the timing audit (compare/checks/audit.py): a variant's checked run before timing,
fresh inputs for the audit's calls, and the judgement of their outputs against the float64 reference."""
from __future__ import annotations

import secrets

import torch

from compare.checks import numerics, referee
from compare.model.fouls import Finding, Foul
from compare.runtime import sealing, supervisor

MISMATCH_FACTOR = 10.0    # a fresh output's rel L2 beyond this times the checked run's, plus
MISMATCH_FLOOR_U = 10.0   # ... this many units of the dtype's epsilon: TIMED_MISMATCH
NONFINITE_SHARE = 0.01    # non-finite mismatches beyond MISMATCH_FACTOR times the checked run's plus this share


class Checked:
    """One case's checked runs and fresh inputs. `variants`: name -> Variant, the entries' variants; `inputs`:
    the inputs as drawn for timing; the backward pass gets fresh upstream gradients only (its saved forward
    outputs belong to the inputs it was timed on), the forward and full passes every input fresh."""

    def __init__(self, family, variants: dict, inputs, shape, mode: str, unseen=None):
        self.family, self.variants, self.inputs, self.shape, self.mode = family, variants, inputs, shape, mode
        self.dtype = inputs.dtype
        # inputs drawn from a seed no variant can know (`unseen`: drawn already, for every pass of the shape);
        # each audited call gets them rolled by a shift of its own, so no two calls see the same values
        self.unseen = unseen if unseen is not None else draw_unseen(family, shape, inputs)
        self.checked: dict[str, dict] = {}   # name -> output -> OutputError of its checked run

    def _direction(self) -> str:
        return "forward" if self.mode == "forward" else "backward"

    def _reference(self, inputs) -> dict:
        copy = sealing.sealed_copy(inputs)
        if self._direction() == "forward":
            return self.family.reference(copy, self.shape)
        return self.family.reference_backward(copy, self.shape)

    def _measure(self, outputs: dict, inputs) -> dict:
        ref = self._reference(inputs)
        over = self.family.overwrites(self._direction())
        tensors = sealing.tensors(inputs)
        return {k: numerics.measure(t, ref[k], k, self.dtype, tensors[over[k]] if k in over else None)
                for k, t in outputs.items() if k in ref}

    def run_checked(self) -> None:
        """Each variant run once plainly (not timed) on the drawn inputs, before any timed call, measured."""
        for name, v in self.variants.items():
            inputs = sealing.sealed_copy(self.inputs)
            try:
                with supervisor.running((name,), f"timing {self.shape.label} {self.mode}: checked run"):
                    run = numerics.pass_of(self.family, v, self._direction(), self.shape, self.dtype, inputs.device)
                    outs = {k: numerics.poison_(t) for k, t in run.alloc().items()}
                    run.run(inputs, outs)
            except BaseException as exc:   # its timed calls will fail (and be reported) the same way
                supervisor.variant_fault(name, exc)
                continue
            self.checked[name] = self._measure(outs, self.inputs)

    def poison(self, outputs: dict) -> None:
        # through .data: an output may be a buffer the op saved for its backward (Liger's cross entropy returns
        # the logits' storage as its gradient), and a version bump would fail the op's next call
        for t in outputs.values():
            if type(t) is torch.Tensor:
                numerics.poison_(t.data)

    @staticmethod
    def snapshot(own):
        return sealing.sealed_copy(own)

    @staticmethod
    def put_back(own, snapshot) -> None:
        sealing.restore(own, snapshot)

    @staticmethod
    def kept(outputs: dict) -> dict:
        """The outputs as a call left them (its buffers are written again by the next): plain tensors cloned,
        anything else kept as returned, for judge() to name."""
        return {k: t.detach().clone() if type(t) is torch.Tensor else t for k, t in outputs.items()}

    def fresh(self, name: str, own, k: int):
        """Fresh values written into `own` (the entry's inputs, in place); a copy of them as written."""
        index = list(self.variants).index(name) if name in self.variants else 0
        shift = 7919 * (index * 8 + k) + 1   # a prime step: each (entry, call) its own arrangement of the values
        names = set(self.inputs.upstream) if self.mode == "backward" else set(sealing.tensors(self.unseen))
        mine = sealing.tensors(own)
        for n, t in sealing.tensors(self.unseen).items():
            if n in names and n in mine:
                mine[n].data.copy_(t.reshape(-1).roll(shift).reshape(t.shape))
        return sealing.sealed_copy(own)

    def judge(self, name: str, fresh, outputs: dict) -> list[Finding]:
        """The fouls the outputs of a timed call on `fresh` show against the variant's checked run."""
        odd = referee.not_plain(outputs)
        if odd:
            return [referee.subclass_finding(name, odd)]
        before = self.checked.get(name)
        if before is None:
            return []
        u = float(torch.finfo(self.dtype).eps)
        for out, e in self._measure(outputs, fresh).items():
            b = before.get(out)
            if b is None:
                continue
            if e.unwritten > b.unwritten:   # an honest pass writes every element, whatever its inputs
                return [Finding(name, Foul.TIMED_MISMATCH, f"{out}: {e.unwritten} of {e.numel} elements never "
                                                           f"written on fresh inputs (checked run: {b.unwritten})")]
            # non-finite inputs put their non-finite outputs elsewhere in each draw: counts are compared loosely
            if e.nonfinite_mismatch > MISMATCH_FACTOR * b.nonfinite_mismatch + NONFINITE_SHARE * e.numel:
                return [Finding(name, Foul.TIMED_MISMATCH, f"{out}: {e.nonfinite_mismatch} of {e.numel} elements "
                                                           f"non-finite where the reference is finite on fresh "
                                                           f"inputs (checked run: {b.nonfinite_mismatch})")]
            if e.rel_l2 > MISMATCH_FACTOR * b.rel_l2 + MISMATCH_FLOOR_U * u:
                return [Finding(name, Foul.TIMED_MISMATCH, f"{out}: rel L2 {e.rel_l2:.2e} on fresh inputs against "
                                                           f"{b.rel_l2:.2e} in its checked run")]
        return []


def draw_unseen(family, shape, inputs):
    """The family's inputs for `shape`, of the kind and dtype of `inputs`, from a seed drawn at run time."""
    return family.make_inputs(shape, inputs.dtype, inputs.device, secrets.randbits(30), inputs.kind)
