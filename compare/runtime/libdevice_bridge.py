"""libdevice math on Triton's CPU interpreter, where its stubs return None or raise, so kernels from real
libraries (`from triton.language.extra.libdevice import rsqrt`) would fail on the CPU. While interpreting,
`install()` bridges each: to the `tl.math` function where there is one (the same bits as `tl.rsqrt`), to
numpy in the argument's dtype for common others (`tanh`, `pow`, ...), else to a one-line error naming it.
Compiled kernels (the GPU, the IR worker) never see the bridge."""
from __future__ import annotations

import contextlib
import functools

import numpy as np

# libdevice name -> triton.language.math function of the same meaning
SAME_AS_TL = {"rsqrt": "rsqrt", "sqrt": "sqrt_rn", "sqrt_rn": "sqrt_rn", "exp": "exp", "exp2": "exp2",
              "log": "log", "log2": "log2", "sin": "sin", "cos": "cos", "floor": "floor", "ceil": "ceil",
              "abs": "abs", "fabs": "abs", "erf": "erf", "fma": "fma", "div_rn": "div_rn",
              "fast_expf": "exp", "fast_logf": "log", "fast_log2f": "log2", "fast_sinf": "sin", "fast_cosf": "cos"}


def _round_half_away(x):
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


UNARY = {"tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
         "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "expm1": np.expm1,
         "log1p": np.log1p, "log10": np.log10, "exp10": lambda x: np.power(x.dtype.type(10), x), "cbrt": np.cbrt,
         "trunc": np.trunc, "rint": np.rint, "nearbyint": np.rint, "round": _round_half_away,
         "rsqrt_rn": lambda x: 1 / np.sqrt(x), "rcp_rn": lambda x: 1 / x, "fast_tanf": np.tan}
BINARY = {"pow": np.power, "powf": np.power, "atan2": np.arctan2, "fmod": np.fmod, "copysign": np.copysign,
          "hypot": np.hypot, "fmin": np.fmin, "fmax": np.fmax, "fast_powf": np.power}
BRIDGED = tuple(sorted({*SAME_AS_TL, *UNARY, *BINARY}))
_FLOATS = {"fp32": np.float32, "fp64": np.float64}


class NoBridge(NotImplementedError):
    """A libdevice function kernel-ab cannot run on Triton's CPU interpreter."""


# float64 for the functions whose triton.language.math version takes float32 only (libdevice has both)
FLOAT64 = {"rsqrt": lambda x: 1 / np.sqrt(x), "sqrt": np.sqrt, "sqrt_rn": np.sqrt, "exp": np.exp, "exp2": np.exp2,
           "log": np.log, "log2": np.log2, "sin": np.sin, "cos": np.cos, "div_rn": np.divide}


def _same_as_tl(name: str, tl_name: str):
    fp64 = _numpy(name, FLOAT64[name], 2 if name == "div_rn" else 1) if name in FLOAT64 else None

    def bridge(*args, **kwargs):
        import triton.language as tl
        kwargs.pop("_semantic", None)
        if fp64 and any(isinstance(a, tl.tensor) and a.type.scalar.name == "fp64" for a in args):
            return fp64(*args, **kwargs)
        return getattr(tl.math, tl_name)(*args, **kwargs)   # the interpreter's patched tl.math at call time
    return bridge


def _tensor_of(name: str, arg):
    import triton.language as tl
    if isinstance(arg, tl.tensor):
        scalar = arg.type.scalar.name
        if scalar not in _FLOATS:
            raise TypeError(f"libdevice.{name} takes fp32 or fp64 tensors (as on the GPU), got {scalar}")
        return arg
    return None


def _numpy(name: str, op, arity: int):
    def bridge(*args, **kwargs):
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle
        kwargs.pop("_semantic", None)
        if len(args) != arity or kwargs:
            raise TypeError(f"libdevice.{name} takes {arity} argument(s)")
        tensors = [_tensor_of(name, a) for a in args]
        like = max((t for t in tensors if t is not None), key=lambda t: len(t.shape), default=None)
        if like is None:
            raise TypeError(f"libdevice.{name}: no tensor argument")
        if arity == 2 and all(t is not None for t in tensors) and tensors[0].shape != tensors[1].shape:
            tensors = list(tl.broadcast(*tensors))
            like = tensors[0]
        np_dtype = _FLOATS[like.type.scalar.name]
        data = [t.handle.data if t is not None else np.asarray(getattr(a, "value", a), dtype=np_dtype)
                for t, a in zip(tensors, args)]
        with np.errstate(all="ignore"):
            out = np.asarray(op(*data)).astype(np_dtype, copy=False)
        return tl.tensor(TensorHandle(out, like.handle.dtype.scalar), like.type)
    return bridge


def _missing(name: str):
    def bridge(*args, **kwargs):
        raise NoBridge(f"libdevice.{name} has no bridge to Triton's CPU interpreter in kernel-ab (it bridges "
                       f"{len(BRIDGED)} common functions: compare/runtime/libdevice_bridge.py); run this kernel on a GPU, "
                       "or write it with tl.* math")
    return bridge


def bridge_for(name: str):
    if name in SAME_AS_TL:
        fn = _same_as_tl(name, SAME_AS_TL[name])
    elif name in UNARY:
        fn = _numpy(name, UNARY[name], 1)
    elif name in BINARY:
        fn = _numpy(name, BINARY[name], 2)
    else:
        fn = _missing(name)
    fn.__name__ = fn.__qualname__ = name
    return fn


_INSTALLED: dict = {}   # original libdevice function -> its bridge


def install() -> None:
    """Bridge libdevice while Triton interprets (idempotent; call only in interpret mode): the functions of
    both libdevice modules, and, as the interpreter prepares each kernel, the names its module imported."""
    if _INSTALLED:
        return
    import inspect

    import triton.runtime.interpreter as interpreter
    from triton.language.extra import libdevice as generic
    modules = [generic]
    with contextlib.suppress(ImportError):  # pragma: no cover - a Triton without the CUDA backend
        from triton.language.extra.cuda import libdevice as cuda
        modules.append(cuda)
    for module in modules:
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ != module.__name__ or name.startswith("_"):
                continue
            _INSTALLED[fn] = bridge_for(name)
            setattr(module, name, _INSTALLED[fn])
    original = interpreter._patch_lang

    @functools.wraps(original)
    def patch_lang(fn):
        names = fn.__globals__
        for key, value in list(names.items()):
            try:
                bridge = _INSTALLED.get(value)    # `from ...libdevice import rsqrt` bound the original
            except TypeError:                     # an unhashable global
                continue
            if bridge is not None:
                names[key] = bridge
        return original(fn)

    interpreter._patch_lang = patch_lang
