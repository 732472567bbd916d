"""The recorded family: an op's calls, recorded by value, as the shapes two revisions of it are timed and compiled
at (variants/recorded_build.py writes one). Presets `callN`, `smallest`, `timed` (the call moving the most bytes,
grown on a GPU: variants/recorded_growth.py); inputs the recorded tensors, the same for every seed; op arguments
the recorded parameter names. No float64 reference (replay compares what the op computes): timing and ir only."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import torch

from variants.call_values import TensorMeta, remake, unpack
from variants.family import Family, Preset
from variants.operands import Operands, Output, nbytes

FAMILY_FILE = "family.json"
UPSTREAM = "upstream_gradient"
KIND = "recorded"   # the one input kind: the values recorded


@dataclasses.dataclass(frozen=True)
class RecordedShape:
    call: int               # the call's index among the family's calls
    factor: int = 1         # how many times its grown arguments are repeated along their leading dimension
    text: str = ""

    @property
    def label(self) -> str:
        return self.text

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _recorded_kind(*_):
    raise ValueError("the recorded family's inputs are the recorded values; nothing is drawn")


class RecordedFamily(Family):
    """A family read from FOLDER/family.json (see the module docstring)."""

    def __init__(self, folder: Path):
        data = json.loads((Path(folder) / FAMILY_FILE).read_text())
        self.data, self.recording, self._kept = data, Path(data["recording"]), {}
        self.calls, timed = data["calls"], data["timed"]
        self.name, self.default_pair, self.input_kinds = data["name"], ("base", "head"), {KIND: _recorded_kind}
        positional, keywords = data["form"]
        self.op_params = (*positional, *keywords)
        first = self.calls[timed["call"]]
        self.op_grads = {f"grad_{n}": n for n in first["grads"]}
        self.grads = tuple(self.op_grads)
        self.outputs = (Output("out", size=lambda s: self._out(s)[0], dtype=lambda s, _: self._out(s)[1]),)
        self.dtypes = {c["dtype"]: getattr(torch, c["dtype"]) for c in self.calls}
        shapes = [self._shape(c["index"]) for c in self.calls]
        smallest = min(shapes, key=lambda s: self._bytes(s))
        grown = self._shape(timed["call"], timed["factor"])
        self.presets = {**{f"call{self._number(s.call)}": Preset(f"call{self._number(s.call)}", s.text, (s,), "call")
                           for s in shapes},
                        "smallest": Preset("smallest", "the recorded call moving the fewest bytes", (smallest,), "call"),
                        "timed": Preset("timed", f"call {self._number(timed['call'])}, {timed['why']}", (grown,),
                                        "call")}
        self.default_preset, self.gpu_preset = "smallest", "timed"
        self.shape_help = f"CALL (a recorded call's number: {', '.join(str(self._number(c['index'])) for c in self.calls)})"
        super().__init__()

    def _shape(self, index: int, factor: int = 1) -> RecordedShape:
        rows = self.data["timed"]["rows"]
        grown = f" grown x{factor} ({rows * factor} rows)" if factor > 1 else ""
        return RecordedShape(index, factor, f"call {self._number(index)}{grown}")

    def _number(self, index: int) -> int:
        """The call's number as the review's table of replayed calls shows it (calls left out keep theirs)."""
        return self.calls[index].get("number", index + 1)

    def _grows(self, shape: RecordedShape, size) -> tuple:
        """`size` grown with the shape where its leading dimension is the grown one."""
        rows = self.data["timed"]["rows"]
        return (size[0] * shape.factor, *size[1:]) if shape.factor > 1 and size and size[0] == rows else tuple(size)

    def _out(self, shape: RecordedShape) -> tuple[tuple, torch.dtype]:
        out = self.calls[shape.call]["out"]
        return self._grows(shape, tuple(out["shape"])), getattr(torch, out["dtype"])

    def _bytes(self, shape: RecordedShape) -> int:
        return sum(math.prod(self._grows(shape, m["shape"])) * getattr(torch, m["dtype"]).itemsize
                   for m in self.calls[shape.call]["metas"])

    # ---------------------------------------------------------------- shapes and inputs
    def parse_shape(self, text: str, eps: float = 1e-6) -> Preset:
        numbers = {self._number(c["index"]): c["index"] for c in self.calls}
        if not text.strip().isdigit() or int(text) not in numbers:
            raise ValueError(f"--shape {text!r}: give {self.shape_help}")
        shape = self._shape(numbers[int(text)])
        return Preset("custom", shape.text, (shape,), "call")

    def shape_from_dict(self, d: dict) -> RecordedShape:
        return RecordedShape(**d)

    def _recorded(self, index: int) -> dict:
        if index not in self._kept:
            self._kept[index] = torch.load(self.recording / self.calls[index]["file"], weights_only=False)
        return self._kept[index]

    def make_inputs(self, shape, dtype: torch.dtype, device: str, seed: int, kind: str = KIND) -> Operands:
        """The recorded call's arguments as fresh tensors on `device` (grown arguments repeated along their
        leading dimension), with a seeded standard-normal upstream gradient; on "meta" nothing is copied."""
        self.check_input_kind(kind)
        call = self.calls[shape.call]
        if getattr(torch, call["dtype"]) != dtype:
            raise ValueError(f"call {shape.call + 1} of family {self.name} was recorded in {call['dtype']}; "
                             f"ask for --dtype {call['dtype']}")
        kept = self._recorded(shape.call) if torch.device(device).type != "meta" else None
        fresh = []
        for i, m in enumerate(call["metas"]):
            meta = dataclasses.replace(TensorMeta.of(m), requires_grad=False)
            size = self._grows(shape, meta.shape)
            if size != meta.shape:   # grown: contiguous (a strided call is never grown)
                meta = dataclasses.replace(meta, shape=size, stride=tuple(torch.empty(size, device="meta").stride()))
                value = kept["tensors"][i].repeat(shape.factor, *(1,) * (len(size) - 1)) if kept else None
            else:
                value = kept["tensors"][i] if kept else None
            fresh.append(remake(value, meta, str(device)))
        args, kwargs = unpack(self._packed(call), fresh)
        values = {**dict(zip(self.op_params, args)), **kwargs}
        out_size, out_dtype = self._out(shape)
        upstream = ()
        if self.grads:
            gen = torch.Generator().manual_seed(seed)
            values[UPSTREAM] = torch.empty(out_size, dtype=out_dtype, device="meta") if kept is None else \
                torch.randn(out_size, generator=gen, dtype=torch.float32).to(dtype=out_dtype, device=device)
            upstream = (UPSTREAM,)
        nominal = dtype if dtype.is_floating_point else torch.float32
        return Operands(values, seed, kind, nominal, torch.device(device), upstream)

    def _packed(self, call: dict):
        """The call's packed arguments (markers for its tensors), read from its file (kept once read)."""
        return self._recorded(call["index"])["args"]

    def upstream(self, inputs: Operands) -> torch.Tensor:
        return inputs[UPSTREAM]

    def op_arguments(self, inputs: Operands, shape) -> dict:
        return {n: inputs[n] for n in self.op_params}

    def bytes_moved(self, shape, dtype: torch.dtype, mode: str) -> int:
        """Forward: every tensor argument read and every tensor the call returned written once (grown alike);
        backward: the upstream gradient, the arguments and the gradients; full: each of them once."""
        call = self.calls[shape.call]
        inputs = self._bytes(shape)
        outs = sum(math.prod(self._grows(shape, o["shape"])) * getattr(torch, o["dtype"]).itemsize
                   for o in call["outputs"].values())
        grads = nbytes(self.alloc_grads(shape, dtype, "meta").values()) if self.grads else 0
        upstream = math.prod(self._out(shape)[0]) * self._out(shape)[1].itemsize if self.grads else 0
        return {"forward": inputs + outs, "backward": upstream + inputs + grads,
                "full": inputs + outs + upstream + grads}[mode]

    # ---------------------------------------------------------------- no reference, no kernels of its own
    def reference(self, inputs: Operands, shape) -> dict:
        """None: the replay compares what the op computes; the timing audit judges no output against one."""
        return {}

    def reference_backward(self, inputs: Operands, shape) -> dict:
        return {}

    def launch_forward(self, kernel, inputs, outputs, shape) -> None:
        raise NotImplementedError(f"family {self.name} compares ops; it launches no kernel of its own")

    def variants(self) -> list:
        return []
