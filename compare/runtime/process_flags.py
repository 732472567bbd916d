"""The process-wide flags and values compare.runtime.process_guard watches, each read, said and put back:
torch's modes and flags, the interpreter's (recursion limit, hooks, warning filters), the operating
system's (working directory, environment, signal handlers and mask, a pending alarm, resource limits,
umask) and atexit handlers registered from outside the platform. A flag a build cannot read is not watched."""
from __future__ import annotations

import contextlib
import atexit
import dataclasses
import functools
import gc
import os
import signal
import site
import sys
import sysconfig
import threading
import warnings
from typing import Any, Callable

MISSING = object()


@dataclasses.dataclass(frozen=True)
class Watch:
    """One piece of process-wide state: how to read it, say a change, and put it back."""

    read: Callable[[], Any]
    say: Callable[[Any, Any], list[str]]
    put: Callable[[Any, Any], None]


@functools.cache
def platform_folders() -> tuple[str, ...]:
    """Where the code kernel-ab runs on lives: the standard library and the installed packages (torch,
    triton and what they import), each ending in os.sep."""
    paths = sysconfig.get_paths()
    found = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")} | set(site.getsitepackages())
    return tuple(os.path.realpath(p) + os.sep for p in found if p)


def in_platform(filename: str) -> bool:
    return os.path.realpath(filename or "?").startswith(platform_folders())


_SYS_HOOKS = ("stdout", "stderr", "stdin", "excepthook", "unraisablehook", "displayhook", "breakpointhook")
_LIMITS = ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_DATA", "RLIMIT_STACK")
_TORCH_NAMESPACES = ("aten",)   # a kernel registered there replaces one of torch's own (torch.compile adds prims)
_SIGNALS = tuple(s for s in signal.Signals if s not in (signal.SIGKILL, signal.SIGSTOP))


def value(read: Callable[[], Any], say: Callable[[Any, Any], str], put: Callable[[Any], None],
          differs: Callable[[Any, Any], bool] = lambda old, new: old != new) -> Watch:
    """A watch of one value, compared by equality (or `differs`: the changes that count)."""
    def safe_read():
        try:
            return read()
        except Exception:   # noqa: BLE001 - a state this build cannot read is not watched
            return MISSING

    def differ(old, new) -> bool:
        return old is not MISSING and new is not MISSING and differs(old, new)

    def put_back(old, new) -> None:
        if differ(old, new):
            with contextlib.suppress(Exception):   # what cannot be put back: the process ends as poisoned anyway
                put(old)
    return Watch(safe_read, lambda old, new: [say(old, new)] if differ(old, new) else [], put_back)


def _torch():
    return sys.modules["torch"]


def _flushes_denormals() -> bool:
    torch = _torch()
    return bool(torch.tensor([1e-40], dtype=torch.float32).mul(1.0).item() == 0.0)


def _function_modes() -> int:
    """Torch function modes active, the default device's own (torch.set_default_device: watched apart) left out."""
    c = _torch()._C
    return sum(type(c._get_function_stack_at(i)).__name__ != "DeviceContext" for i in range(c._len_torch_function_stack()))


def _pop_modes(kind: str) -> Callable[[int], None]:
    def put(old: int) -> None:
        c = _torch()._C
        while getattr(c, f"_len_torch_{kind}_stack")() > old:
            getattr(c, f"_pop_torch_{kind}_stack")()
    return put


def _backends():
    b = _torch().backends
    return (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic, b.cudnn.allow_tf32, b.cuda.matmul.allow_tf32,
            b.cuda.matmul.allow_fp16_reduced_precision_reduction)


def _put_backends(old) -> None:
    b = _torch().backends
    (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic, b.cudnn.allow_tf32, b.cuda.matmul.allow_tf32,
     b.cuda.matmul.allow_fp16_reduced_precision_reduction) = old


def torch_flags() -> list[Watch]:
    """torch's modes and flags (torch is imported by then: every variant runs on it)."""
    t = _torch
    return [
        value(lambda: t().is_grad_enabled(), lambda o, n: f"{'disabled' if o else 'enabled'} grad "
              "(torch.set_grad_enabled)", lambda o: t().set_grad_enabled(o)),
        value(lambda: t().is_inference_mode_enabled(), lambda o, n: "left inference mode on",
              lambda o: t()._C._set_inference_mode(o)),
        value(lambda: str(t().get_default_device()), lambda o, n: f"set the default device to {n} "
              "(torch.set_default_device)", lambda o: t().set_default_device(None if o == "cpu" else o)),
        value(_function_modes, lambda o, n: "left a torch function mode active", _pop_modes("function")),
        value(lambda: t()._C._len_torch_dispatch_stack(), lambda o, n: "left a torch dispatch mode active",
              _pop_modes("dispatch")),
        value(lambda: t().get_default_dtype(), lambda o, n: f"set the default dtype to {n}",
              lambda o: t().set_default_dtype(o)),
        value(_flushes_denormals, lambda o, n: f"turned {'on' if n else 'off'} flush-denormal (torch.set_flush_denormal)",
              lambda o: t().set_flush_denormal(o)),
        value(lambda: t().is_anomaly_enabled(), lambda o, n: "changed autograd's anomaly mode",
              lambda o: t().set_anomaly_enabled(o)),
        value(lambda: t().are_deterministic_algorithms_enabled(), lambda o, n: "changed torch's deterministic "
              "algorithms", lambda o: t().use_deterministic_algorithms(o)),
        value(lambda: t().get_num_threads(), lambda o, n: f"set torch's threads from {o} to {n}",
              lambda o: t().set_num_threads(o)),
        value(lambda: t().get_float32_matmul_precision(), lambda o, n: f"set the float32 matmul precision to {n}",
              lambda o: t().set_float32_matmul_precision(o)),
        value(_backends, lambda o, n: "changed torch.backends flags (cudnn, tf32, reduced-precision reductions)",
              _put_backends),
        value(_aten_impls,
              lambda o, n: "registered a kernel for torch's own operators (torch.library: "
              + ", ".join(sorted(n - o)[:3]) + ")", lambda o: None),
    ]


_IMPLS: dict[int, frozenset] = {}


def _aten_impls() -> frozenset:
    """The kernels registered through torch.library for torch's own operators (read again only when the
    registrations grew: there are thousands)."""
    impls = _torch().library._impls
    if len(impls) not in _IMPLS:
        _IMPLS.clear()
        _IMPLS[len(impls)] = frozenset(i for i in impls if i.split("/")[0] in _TORCH_NAMESPACES)
    return _IMPLS[len(impls)]


# environment variables torch, Triton, CUDA and the math libraries under them read (set by a variant, they
# change what is measured, here or in the processes kernel-ab starts), and kernel-ab's own
MEASURED_PREFIXES = ("TORCH", "PYTORCH", "TRITON", "CUDA", "CUBLAS", "CUDNN", "NCCL", "NVIDIA", "NV_", "OMP_", "KMP_",
                     "MKL", "OPENBLAS", "GOMP_", "HIP", "ROCM", "HSA_", "LD_", "PYTHON", "KERNEL_AB_")
# of those, the ones the platform sets by itself (torch's inductor: its cache folders, ptxas and libdevice,
# cuBLAS's workspace when its numeric checks are imported, and the OpenMP runtime when a library loads it:
# KMP_INIT_AT_FORK, seen on the H200 importing three of a real library's op modules)
PLATFORM_SETS = frozenset({"TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TRITON_PTXAS_PATH", "TRITON_LIBDEVICE_PATH",
                           "CUBLAS_WORKSPACE_CONFIG", "KMP_DUPLICATE_LIB_OK", "KMP_INIT_AT_FORK", "CUDA_HOME"})
_START_ENV: dict[str, str] = {}   # os.environ when the guard began: what the user set


def _environ() -> dict:
    return dict(os.environ)


def _measured(name: str, old: dict, new: dict) -> bool:
    """A change of `name` that reaches kernel-ab's measurements: a variable the user set, or one torch,
    Triton, CUDA or kernel-ab reads (set by anyone but the platform)."""
    return old.get(name) != new.get(name) and (
        name in _START_ENV or (name.startswith(MEASURED_PREFIXES) and name not in PLATFORM_SETS))


def _environ_changes(old: dict, new: dict) -> list[str]:
    return sorted(k for k in old.keys() | new.keys() if _measured(k, old, new))


def library_environ(old: dict, new: dict) -> list[str]:
    """The variables of its own a library set or changed between `old` and `new` (os.environ's snapshots):
    none the user set, none that reaches a measurement, none the platform sets by itself."""
    return sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k) and not _measured(k, old, new)
                  and k not in PLATFORM_SETS)


def _environ_say(old: dict, new: dict) -> str:
    names = _environ_changes(old, new)
    return f"changed os.environ ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''})"


def _put_environ(old: dict) -> None:
    for k in set(os.environ) - set(old):
        del os.environ[k]
    for k, v in old.items():
        if os.environ.get(k) != v:
            os.environ[k] = v


def environ() -> Watch:
    """os.environ: the variables set at the start (the user's) and those that reach a measurement; a
    library's own variables are its own (compare.runtime.import_acts says those its import sets)."""
    if not _START_ENV:
        _START_ENV.update(os.environ)
    return value(_environ, _environ_say, _put_environ, lambda o, n: bool(_environ_changes(o, n)))


def _handlers() -> dict:
    return {s: signal.getsignal(s) for s in _SIGNALS}


def _handlers_say(old: dict, new: dict) -> str:
    changed = [s.name for s in old if old[s] is not new.get(s)]
    return f"installed signal handlers ({', '.join(changed[:4])}{', ...' if len(changed) > 4 else ''})"


def _put_handlers(old: dict) -> None:
    for s, handler in old.items():
        if handler is not None and signal.getsignal(s) is not handler:
            with contextlib.suppress(OSError, ValueError, TypeError):
                signal.signal(s, handler)


def _identities(values) -> tuple:
    return tuple(id(v) for v in values)


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


def _limits() -> tuple:
    import resource
    return tuple(resource.getrlimit(getattr(resource, name)) for name in _LIMITS if hasattr(resource, name))


def _put_limits(old) -> None:
    import resource
    for name, limit in zip([n for n in _LIMITS if hasattr(resource, n)], old):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(getattr(resource, name), limit)


def process_flags() -> list[Watch]:
    """The interpreter's and the operating system's state."""
    return [
        value(sys.getrecursionlimit, lambda o, n: f"set the recursion limit from {o} to {n}", sys.setrecursionlimit,
              lambda o, n: n < o),   # torch.compile raises it; a lower one fails kernel-ab's own code
        value(os.getcwd, lambda o, n: f"changed the working directory to {n} (os.chdir)", os.chdir),
        value(_handlers, _handlers_say, _put_handlers),
        value(lambda: frozenset(signal.pthread_sigmask(signal.SIG_BLOCK, ())), lambda o, n: "blocked signals "
              f"({', '.join(sorted(signal.Signals(s).name for s in n - o)) or 'changed the mask'})",
              lambda o: signal.pthread_sigmask(signal.SIG_SETMASK, o)),
        value(lambda: signal.getitimer(signal.ITIMER_REAL) != (0.0, 0.0), lambda o, n: "set an alarm (signal.alarm, "
              "setitimer)", lambda o: signal.setitimer(signal.ITIMER_REAL, 0)),
        value(lambda: len(REGISTERED), _atexit_say, lambda o: None, lambda o, n: bool(_foreign(o, n))),
        value(_limits, lambda o, n: "changed resource limits (resource.setrlimit)", _put_limits),
        value(_umask, lambda o, n: f"changed the umask to {n:03o}", os.umask),
        value(lambda: (sys.gettrace(), sys.getprofile(), threading.gettrace(), threading.getprofile()),
              lambda o, n: "installed a trace or profile hook", _put_traces),
        value(lambda: _identities(getattr(sys, h, None) for h in _SYS_HOOKS) + (id(threading.excepthook),),
              lambda o, n: "replaced sys's streams or hooks (stdout, stderr, excepthook, ...)", lambda o: None),
        value(lambda: (gc.isenabled(), gc.get_threshold(), len(gc.callbacks)),
              lambda o, n: "changed the garbage collector (gc.disable, set_threshold, callbacks)", _put_gc),
        value(lambda: tuple(warnings.filters), lambda o, n: "made warnings errors (warnings.simplefilter('error'))",
              _put_filters, lambda o, n: any(f[0] == "error" and not library_filter(f) for f in n if f not in o)),
        # libraries add finders of their own when imported (transformers, torch's lazy modules on a GPU host):
        # only a finder or hook taken away, or replaced, is a change of the variant's
        value(lambda: (_identities(sys.meta_path), _identities(sys.path_hooks)),
              lambda o, n: "took away or replaced import machinery (sys.meta_path, sys.path_hooks)", lambda o: None,
              lambda o, n: not (set(o[0]) <= set(n[0]) and set(o[1]) <= set(n[1]))),
        value(sys.getswitchinterval, lambda o, n: "changed the thread switch interval", sys.setswitchinterval),
        value(lambda: sys.modules["numpy"].geterr(), lambda o, n: "changed numpy's floating-point error handling "
              f"(numpy.seterr: {', '.join(f'{k}={v}' for k, v in sorted(n.items()) if o.get(k) != v)})",
              lambda o: sys.modules["numpy"].seterr(**o)),
    ]


def _put_traces(old) -> None:
    sys.settrace(old[0])
    sys.setprofile(old[1])
    threading.settrace(old[2])
    threading.setprofile(old[3])


def _put_gc(old) -> None:
    (gc.enable if old[0] else gc.disable)()
    gc.set_threshold(*old[1])
    del gc.callbacks[old[2]:]


_MEASURING_MODULES = ("torch", "triton", "numpy", "compare", "variants", "kernel_ab", "__main__")


def library_filter(f: tuple) -> str:
    """The module pattern of a warnings filter that makes only a library's own warnings errors (its `module`
    matches none of torch's, Triton's, numpy's or kernel-ab's), else ""."""
    module = f[3]
    if f[0] != "error" or module is None or not module.pattern:
        return ""
    if any(module.match(m) or module.match(m + ".x") for m in _MEASURING_MODULES):
        return ""
    return module.pattern.removesuffix("\\Z")


def _put_filters(old) -> None:
    warnings.filters[:] = list(old)
    warnings._filters_mutated()


# atexit handlers registered since kernel-ab started, with where: (handler, file, line). The platform's
# (torch.compile registers several on first use) are its own; one registered from elsewhere (a variant's
# file) is named. `watch_atexit` puts the recorder in place, once, before any variant's code runs.
REGISTERED: list[tuple[Any, str, int]] = []
_REAL_REGISTER = atexit.register


def _recording_register(func, *args, **kwargs):
    frame = sys._getframe(1)
    REGISTERED.append((func, frame.f_code.co_filename, frame.f_lineno))
    return _REAL_REGISTER(func, *args, **kwargs)


def watch_atexit() -> None:
    if atexit.register is _REAL_REGISTER:
        atexit.register = _recording_register


def _foreign(old: int, new: int) -> list[str]:
    return [f"{os.path.basename(file)}:{line}" for _, file, line in REGISTERED[old:new] if not in_platform(file)]


def _atexit_say(old: int, new: int) -> str:
    where = _foreign(old, new)
    return f"registered an atexit handler (at {', '.join(where[:3])})"
