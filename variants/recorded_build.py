"""A recording made a family package: `write_family` reads an op's recorded calls (manifest.json and its call
files, compare/runtime/replay_worker.py) and writes FOLDER/<name>/__init__.py setting FAMILY beside family.json,
which child processes find as any family folder's (variants/discovery.py). The family is variants/recorded.py;
which call is timed, and how far it is grown, variants/recorded_growth.py."""
from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import torch

from variants import recorded_growth as growth
from variants.call_values import MARK, TensorMeta, is_marker
from variants.recorded import FAMILY_FILE
from variants.spec import CallMap


class NotTimeable(ValueError):
    """A recording no family can be made of (no call kept, none returning a tensor); one line says why."""


@dataclasses.dataclass(frozen=True)
class Built:
    """A family package written from a recording: where, its name, how its op is called, what it times."""

    folder: Path            # the family folder (holding the package)
    name: str               # the family's name
    call: CallMap           # the op's argument list for a --variant spec: `(X, W, eps=eps)[0]`
    timed: str              # which call is timed and how it was grown, one line
    dtype: str              # the timed call's dtype name
    dtypes: dict            # preset -> its call's dtype name (`timed`, `smallest`, `callN`)
    left_out: tuple[str, ...] = ()   # calls not in the family, each with why
    smallest: str = ""               # the call moving the fewest bytes (the CPU's), with its signature


def _main_dtype(metas: list[TensorMeta]) -> str:
    floats = [m for m in metas if getattr(torch, m.dtype).is_floating_point]
    return max(floats, key=lambda m: math.prod(m.shape) * getattr(torch, m.dtype).itemsize).dtype if floats else "float32"


def _form(kept: dict, entry: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(positional names, keyword names) of a recorded call."""
    args, kwargs = kept["args"]
    return tuple(kept["names"][:len(args)]), tuple(kwargs)


def _top_tensors(kept: dict) -> dict[str, int]:
    """Argument name -> its tensor's index, for arguments that are a tensor themselves."""
    args, kwargs = kept["args"]
    named = [*zip(kept["names"], args), *kwargs.items()]
    return {n: v[MARK] for n, v in named if is_marker(v)}


def _scalars(kept: dict) -> dict:
    args, kwargs = kept["args"]
    return {n: v for n, v in [*zip(kept["names"], args), *kwargs.items()] if isinstance(v, (int, float, bool))}


def _call_record(index: int, entry: dict, kept: dict) -> dict:
    metas = [TensorMeta.of(m) for m in kept["meta"]]
    tensors = _top_tensors(kept)
    reached = set(entry.get("reached", ()))
    result = entry["result"]
    out = result["tensors"][result["output"]]
    return {"index": index, "file": entry["file"], "signature": entry["signature"], "test": entry.get("test", ""),
            "select": result["select"], "out": out, "outputs": result["tensors"], "dtype": _main_dtype(metas),
            "grads": [n for n, i in tensors.items() if i in reached and out["grad"]
                      and getattr(torch, metas[i].dtype).is_floating_point],
            "metas": [m.__dict__ for m in metas], "names": {str(i): n for n, i in tensors.items()}}


def _sized(call: dict, scalars: dict) -> tuple[list, dict, list]:
    names = call["names"]
    tensors = [growth.Sized(names.get(str(i), f"tensor {i}"), tuple(m["shape"]), getattr(torch, m["dtype"]).itemsize,
                            _contiguous(m)) for i, m in enumerate(call["metas"])]
    outputs = [growth.Sized(n, tuple(o["shape"]), getattr(torch, o["dtype"]).itemsize) for n, o in call["outputs"].items()]
    return tensors, scalars, outputs


def _contiguous(meta: dict) -> bool:
    expected, step = [], 1
    for n in reversed(meta["shape"]):
        expected.insert(0, step)
        step *= max(n, 1)
    return all(s == e for n, s, e in zip(meta["shape"], meta["stride"], expected) if n > 1)


def _bytes(call: dict) -> int:
    return sum(math.prod(m["shape"]) * getattr(torch, m["dtype"]).itemsize for m in call["metas"])


def _package_name(label: str) -> str:
    return "recorded_" + re.sub(r"\W", "_", label).strip("_")


def write_family(recording: Path, op: str, folder: Path, label: str, free_bytes: int | None,
                 target: int = growth.TARGET_BYTES, factor: int | None = None, why: str = "",
                 avoid: dict[int, str] | None = None) -> Built:
    """The family package of `op`'s calls in `recording` (manifest.json and its call files), written under
    `folder`. `free_bytes`: the GPU's free memory (None: no GPU, no call grown); `factor`: a growth already
    decided (1 with `why`: declined after a trial) instead of planning one; `avoid`: calls left out (by
    their 0-based place among the op's calls), each with why. NotTimeable if no call fits."""
    manifest = json.loads((recording / "manifest.json").read_text())
    calls, left, form = [], [], None
    for entry in (e for e in manifest.get("calls", []) if e["op"] == op):
        n = len(calls) + len(left) + 1
        if not isinstance(entry.get("result"), dict) or entry["result"].get("output") is None:
            said = f"raised when recorded ({entry['raised']})" if entry.get("raised") else "returned no tensor" \
                if "result" in entry else "what it returned was not recorded"
            left.append(f"call {n} ({entry['signature']}): {said}")
            continue
        if (avoid or {}).get(n - 1):
            left.append(f"call {n} ({entry['signature']}): {avoid[n - 1]}")
            continue
        kept = torch.load(recording / entry["file"], weights_only=False)
        form = form or _form(kept, entry)
        if _form(kept, entry) != form:
            left.append(f"call {n} ({entry['signature']}): passes other arguments than call 1 of the family")
            continue
        record = {**_call_record(len(calls), entry, kept), "number": n}
        record["scalars"] = {k: v for k, v in _scalars(kept).items()}
        calls.append(record)
    if not calls:
        raise NotTimeable("; ".join(left) or f"no call of {op} was recorded")
    largest = max(calls, key=_bytes)
    planned = growth.plan(*_sized(largest, largest["scalars"]), free_bytes, target)
    if factor is not None:
        planned = dataclasses.replace(planned, factor=factor, why=why or planned.why)
    timed = {"call": largest["index"], "factor": planned.factor, "grown": list(planned.grown), "rows": planned.rows,
             "why": planned.why}
    name = _package_name(label)
    data = {"name": name, "op": op, "recording": str(recording.resolve()), "form": [list(form[0]), list(form[1])],
            "calls": calls, "timed": timed, "left_out": left}
    package = folder / name
    package.mkdir(parents=True, exist_ok=True)
    (package / FAMILY_FILE).write_text(json.dumps(data, indent=1))
    (package / "__init__.py").write_text('"""A family made from a recording of an op\'s calls (variants/recorded.py)."""\n'
                                         "from pathlib import Path\n\nfrom variants.recorded import RecordedFamily\n\n"
                                         "FAMILY = RecordedFamily(Path(__file__).parent)\n")
    smallest = min(calls, key=_bytes)
    dtypes = {"timed": largest["dtype"], "smallest": smallest["dtype"], **{f"call{c['number']}": c["dtype"]
                                                                            for c in calls}}
    return Built(folder, name, call_of(form, largest["select"]), f"call {largest['number']} "
                 f"({largest['signature']}), {planned.why}", largest["dtype"], dtypes, tuple(left),
                 f"call {smallest['number']} ({smallest['signature']})")


def call_of(form, select) -> CallMap:
    """The argument list a --variant spec gives the op: every recorded parameter by its name."""
    positional, keywords = form
    return CallMap(tuple(positional), tuple((k, k) for k in keywords), select)

