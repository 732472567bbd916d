"""`@triton.autotune` on Triton's CPU interpreter, which has no GPU driver to time configurations on (Triton
raises "0 active drivers"): while interpreting, `install()` makes the Autotuner run the first configuration
its `early_config_prune` leaves, timing none; `recording()` collects the kernels that ran so, for the report.
Compiled kernels (the GPU, the IR worker) never see this: there autotuning runs as the library wrote it."""
from __future__ import annotations

import contextlib
import dataclasses
import functools


@dataclasses.dataclass(frozen=True)
class FirstConfig:
    """An autotuned kernel that ran with its first configuration instead of the one autotuning would pick."""

    kernel: str        # the kernel function's name
    config: str        # the configuration it ran with: its meta-parameters, num_warps, num_stages
    of: int            # how many configurations the library gave


_RECORDS: list[list[FirstConfig]] = []   # one list per open recording()
_INSTALLED: list = []


def _kernel_name(tuner) -> str:
    return getattr(getattr(tuner, "base_fn", None), "__name__", "") or "an autotuned kernel"


def _text(config) -> str:
    meta = [f"{k}={v}" for k, v in config.kwargs.items()]
    return ", ".join(meta + [f"num_warps={config.num_warps}", f"num_stages={config.num_stages}"])


def _first(tuner, kwargs) -> list:
    configs = tuner.configs
    if tuner.early_config_prune:   # the library's own filter: a configuration that cannot run these arguments
        configs = tuner.early_config_prune(tuner.configs, tuner.nargs, **kwargs) or configs
    return list(configs[:1])


def install() -> None:
    """Make the Autotuner run its first configuration (idempotent; call only in interpret mode)."""
    if _INSTALLED:
        return
    from triton.runtime.autotuner import Autotuner
    original = Autotuner.run

    @functools.wraps(original)
    def run(self, *args, **kwargs):
        if len(self.configs) > 1 and _RECORDS:
            self.nargs = dict(zip(self.arg_names, args))
            used = FirstConfig(_kernel_name(self), _text(_first(self, kwargs)[0]), len(self.configs))
            for record in _RECORDS:
                if used not in record:
                    record.append(used)
        return original(self, *args, **kwargs)

    Autotuner.run, Autotuner.prune_configs = run, _first   # _first(self, kwargs): prune_configs' own signature
    _INSTALLED.append(original)


@contextlib.contextmanager
def recording():
    """The autotuned kernels run while the block runs, each once, in the order first run (a list filled in)."""
    record: list[FirstConfig] = []
    _RECORDS.append(record)
    try:
        yield record
    finally:
        _RECORDS.remove(record)


def said(used: list[FirstConfig]) -> tuple[str, ...]:
    """The report's line for `used` (none when no autotuned kernel ran)."""
    if not used:
        return ()
    kernels = "; ".join(f"{u.kernel} with {u.config} (the first of {u.of})" for u in used)
    return (f"autotuning was not run on Triton's interpreter (it times configurations on a GPU): each autotuned "
            f"kernel ran with its first configuration: {kernels}",)
