"""Where kernels run: compiled on a CUDA GPU, or through Triton's interpreter on the CPU.

Triton decides at import time whether `@triton.jit` compiles or interprets (TRITON_INTERPRET),
so `configure()` must run before anything imports Triton; it refuses if Triton was already imported
in the other mode rather than silently running the wrong one.
"""
from __future__ import annotations

import dataclasses
import os
import sys


class BackendError(RuntimeError):
    """The requested backend cannot be had here."""


@dataclasses.dataclass(frozen=True)
class Backend:
    device: str          # "cuda" or "cpu"
    interpreted: bool    # Triton kernels run through Triton's CPU interpreter
    note: str

    @property
    def gpu(self) -> bool:
        return self.device == "cuda"


def _cuda_available() -> bool:
    import torch
    return torch.cuda.is_available()


def configure(requested: str = "auto", probe: bool = False) -> Backend:
    """Pick the backend: 'auto' (the GPU when there is one), 'cuda' or 'cpu' (the interpreter). `probe`: on a GPU,
    take the idle device's probe that later checks read against (compare.runtime.device_busy)."""
    if requested not in ("auto", "cuda", "cpu"):
        raise BackendError(f"unknown device {requested!r}; use auto, cuda or cpu")
    has_gpu = _cuda_available()
    if requested == "cuda" and not has_gpu:
        raise BackendError("--device cuda was asked for, but torch sees no CUDA GPU here; use --device cpu "
                           "(Triton's interpreter) or run on a GPU machine")
    use_gpu = has_gpu and requested != "cpu"
    interpret = not use_gpu
    if "triton" in sys.modules:
        import triton
        if bool(triton.knobs.runtime.interpret) != interpret:
            raise BackendError("triton was imported before the backend was chosen, in the other mode; "
                               "call compare.runtime.backend.configure() first")
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
        from compare.runtime import libdevice_bridge
        libdevice_bridge.install()   # kernels calling libdevice math run on the interpreter too
        from compare.runtime import interpreted_autotune
        interpreted_autotune.install()   # an autotuned kernel runs with its first configuration, said in the report
        note = ("no GPU: Triton kernels ran through Triton's CPU interpreter (numpy), not compiled code; "
                "numerics there are the interpreter's, timing is skipped")
        return Backend("cpu", True, note)
    os.environ.pop("TRITON_INTERPRET", None)
    import torch
    if probe:   # before any variant is imported, so that none can have made the device busy yet
        from compare.runtime import device_busy
        device_busy.at_start()
    return Backend("cuda", False, f"compiled Triton kernels on {torch.cuda.get_device_name()}")


def synchronize(backend: Backend) -> None:
    if backend.gpu:
        import torch
        torch.cuda.synchronize()
