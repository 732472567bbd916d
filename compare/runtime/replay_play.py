"""The replaying side of compare/runtime/replay_worker.py: recorded calls played at one revision (fresh inputs,
then the backward from a seeded upstream gradient), each call's result saved beside the recording; and, for both
sides, the file beside the output that says what runs now (`running`: compare/review/replay_process.py names a
process that ended in a test or a call for it). Runs a reviewed library's code in a replay worker only;
kernel-ab's own process reads only the marker's name and `running` from here."""
from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import time
from pathlib import Path

from compare.runtime.library_imports import first_line as _first_line

MARKER = "running.json"


def running(out: Path, what: str, stage: str = "") -> None:
    """This process runs `what` (a test's node id, a call's file; "" nothing), in its `stage` (a call's pass)."""
    marker = out / MARKER
    marker.with_suffix(".tmp").write_text(json.dumps({"what": what, "since": time.time() if what else 0,
                                                      "stage": stage}))
    marker.with_suffix(".tmp").replace(marker)


def _upstream(outputs: dict, seed: int) -> dict:
    """A seeded upstream gradient for each output that has a graph: drawn on the CPU, the same at both sides."""
    import torch
    found = {}
    for i, (name, t) in enumerate(outputs.items()):
        if isinstance(t, torch.Tensor) and t.grad_fn is not None and t.is_floating_point():
            g = torch.Generator().manual_seed(seed + i)
            found[name] = torch.randn(t.shape, generator=g, dtype=torch.float32).to(t.dtype).to(t.device)
    return found


def _play_one(fn, kept: dict, device: str, seed: int, at=lambda stage: None) -> dict:
    import torch
    from compare.runtime import call_capture as cc
    metas = [cc.TensorMeta.of(m) for m in kept["meta"]]
    fresh = [cc.remake(v, m, device if device == "cpu" else None) for v, m in zip(kept["tensors"], metas)]
    before = [t.detach().clone() for t in fresh]
    args, kwargs = cc.unpack(kept["args"], fresh)
    names = kept["names"]
    result: dict = {"outputs": {}, "grads": {}, "failure": None}
    torch.manual_seed(seed)
    at("forward")
    try:
        out = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the op's own failure, that side's
        result["failure"] = {"stage": "forward", "error": _first_line(exc)}
        return result
    outputs = cc.named_outputs(out)
    label = _labels(names, args, kwargs, fresh)
    from compare.runtime.sealing import changed_elements
    written = {f"{label[i]} (written)": t for i, t in enumerate(fresh) if changed_elements(t.detach(), before[i])}
    result["outputs"] = {k: (v.detach().cpu() if isinstance(v, torch.Tensor) else repr(v))
                         for k, v in {**outputs, **written}.items()}
    ups = _upstream(outputs, seed)
    leaves = [(i, t) for i, t in enumerate(fresh) if t.requires_grad]
    if ups and leaves:
        at("backward")
        try:
            grads = torch.autograd.grad([outputs[k] for k in ups], [t for _, t in leaves], list(ups.values()),
                                        allow_unused=True)
        except Exception as exc:  # noqa: BLE001 - the op's backward, that side's failure
            result["failure"] = {"stage": "backward", "error": _first_line(exc)}
            return result
        result["grads"] = {f"grad {label[i]}": g.detach().cpu() for (i, _), g in zip(leaves, grads) if g is not None}
    return result


def _labels(names: list[str], args, kwargs, fresh: list) -> dict[int, str]:
    """Each tensor's index -> the argument it is (`X`, `arg2[0]`)."""
    found: dict[int, str] = {}
    for name, value in [*zip(names, args), *kwargs.items()]:
        for sub, t in _tensors(value, name):
            for i, f in enumerate(fresh):
                if f is t:
                    found.setdefault(i, sub)
    return {i: found.get(i, f"tensor {i}") for i in range(len(fresh))}


def _tensors(value, name: str):
    import torch
    if isinstance(value, torch.Tensor):
        yield name, value
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            yield from _tensors(v, f"{name}[{i}]")


def _ready(request: dict, imports) -> dict:
    """Started beside the recording: torch, the ops' library (`imports`: library_imports.Imports) and the device
    made ready, then the request with the ops' calls once the recording is done (`go`); ends with the review if
    that never comes."""
    import torch
    for op in request["ops"]:
        with contextlib.suppress(Exception):  # said when the op is played (unloadable.json)
            imports.resolve(op["module"], op["name"])
    if request["device"] == "cuda":
        torch.zeros(1, device="cuda")
    go, parent = Path(request["go"]), os.getppid()
    while not go.exists():
        if os.getppid() != parent:
            sys.exit(0)
        time.sleep(0.02)
    return {**request, **json.loads(go.read_text())}


def play(request: dict) -> int:
    """The recorded calls played; an op that cannot be loaded is in unloadable.json: the record of the import
    that raised (`import`), or what its lookup in its module raised (`lookup`)."""
    import torch
    from compare.runtime.library_imports import ImportFailed, Imports
    imports = Imports()
    request = _ready(request, imports) if request.get("go") else request
    out, unloadable = Path(request["out"]), {}
    for op in request["ops"]:
        key = f"{op['module']}:{op['name']}"
        try:
            fn = imports.resolve(op["module"], op["name"])[2]
        except Exception as exc:  # noqa: BLE001 - the library's import or lookup, whatever it raises
            unloadable[key] = {"import": exc.record} if isinstance(exc, ImportFailed) else {"lookup": _first_line(exc)}
            (out / "unloadable.json").write_text(json.dumps(unloadable))
            continue
        for call in op["calls"]:
            kept = torch.load(Path(request["recording"]) / call, weights_only=False)
            at = functools.partial(running, out, call)   # a call that ends this process is named for it
            result = _play_one(fn, kept, request["device"], request["seed"], at)
            torch.save(result, out / call.replace("call_", "played_"))
            if request["again"]:   # the same call once more: what differs between the two is run-to-run spread
                again = _play_one(fn, kept, request["device"], request["seed"], at)
                torch.save(again, out / call.replace("call_", "again_"))
    running(out, "")
    return 0
