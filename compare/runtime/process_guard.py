"""What a variant's code may not change in the process it shares with kernel-ab and the other variants: around
every launch (its import, each call: compare.runtime.supervisor.running) a snapshot of torch's, triton's and
kernel-ab's functions by identity, of the registry's objects and of flags (process_flags.py); what differs is
put back and named ("patched torch.Tensor.__ne__"), and the process ends as tampered with.
docs/threat-model.md ("The shared process") tables what is checked, what is not, and the cost."""
from __future__ import annotations

import contextlib
import importlib.machinery
import os
import sys
import time
import types
import warnings
from pathlib import Path
from typing import Any, Callable

from compare.model.habits import Act, ImportAct
from compare.runtime.standard_streams import streams
from compare.runtime.process_flags import (MISSING, Watch, environ, in_platform, library_environ, library_filter,
                                           process_flags, torch_flags, watch_atexit)

# namespaces whose attributes are compared by identity: (label, module name, attribute path or "")
_MODULES = (("torch", "torch", ""), ("torch.nn", "torch", "nn"), ("torch.nn.functional", "torch", "nn.functional"),
            ("torch.linalg", "torch", "linalg"), ("torch.autograd", "torch", "autograd"),
            ("torch.cuda", "torch", "cuda"), ("torch.library", "torch", "library"), ("numpy", "numpy", ""),
            ("triton", "triton", ""), ("triton.language", "triton", "language"),
            ("triton.language.math", "triton", "language.math"), ("math", "math", ""), ("builtins", "builtins", ""),
            ("os", "os", ""), ("sys", "sys", ""), ("atexit", "atexit", ""), ("signal", "signal", ""),
            ("time", "time", ""))   # the timer's clocks
# those whose functions are Python's (their code can be swapped): the functions kernel-ab's reference calls
_CODES = frozenset({"torch.nn.functional", "torch.Tensor", "triton.language", "triton.language.math"})
_CLASSES = (("torch.Tensor", "torch", "Tensor"), ("torch.cuda.Event", "torch", "cuda.Event"),
            ("torch.cuda.Stream", "torch", "cuda.Stream"), ("torch.cuda.CUDAGraph", "torch", "cuda.CUDAGraph"),
            ("torch.autograd.Function", "torch", "autograd.Function"),
            ("triton.runtime.jit.JITFunction", "triton", "runtime.jit.JITFunction"))
_CONSTANTS = (int, float, str, bytes, tuple, frozenset, type(None))   # a module's values that are no cache
ENVIRON, FILTERS = "os.environ", "warnings.filters"   # the environment's watch, the warnings filters' snapshot
_STREAMS = ("stdout", "stderr")


def _resolve(module: str, path: str):
    obj = sys.modules.get(module)
    for part in path.split(".") if path and obj is not None else ():
        obj = getattr(obj, part, None)
    return obj


# ---------------------------------------------------------------- namespaces (identities)
_FUNCTION = types.FunctionType


def _parts(fn) -> tuple:
    return fn.__code__, fn.__defaults__, fn.__kwdefaults__


def _swapped(items: dict, first: dict) -> list[str]:
    """The names of functions among `items` whose code or defaults differ from what they were when first
    seen (`first`: id -> (function, its parts), filled here; the function is kept so that its id stays its)."""
    found = []
    for k, v in items.items():
        if type(v) is _FUNCTION:
            seen = first.setdefault(id(v), (v, _parts(v)))
            if not all(a is b for a, b in zip(seen[1], _parts(v))):
                found.append(k)
    return found


def _quietly(fn, *args) -> None:
    with contextlib.suppress(AttributeError, TypeError, ValueError):
        fn(*args)


def _namespace(label: str, get: Callable[[], Any], is_class: bool, only_code: bool = False,
               allowed: Callable[[str, Any, Any], bool] = lambda name, old, new: False, codes: bool = False) -> Watch:
    """The attributes of a module or class by identity; on a class an added name counts (it shadows what the
    class inherits), on a module not (torch adds submodules lazily). `only_code`: kernel-ab's, whose functions,
    classes and constants count (elsewhere public names and dunders). `allowed(name, old, new)`: a change the
    platform makes itself. `codes`: functions' code too, against what it was when first seen."""
    first: dict = {}

    def read():
        obj = get()
        if obj is None or not hasattr(obj, "__dict__"):
            return None
        items = dict(vars(obj))   # a C-level copy: the snapshot before a launch costs little
        if codes and not first:
            _swapped(items, first)
        return items

    def changed(old, new) -> tuple[list[str], list[str]]:
        if old is None or new is None:
            return [], []
        swapped = _swapped(new, first) if codes else []
        if old == new and not swapped:   # dicts compare values by identity first: no __eq__ runs
            return [], []
        differ = [k for k, v in old.items() if (new.get(k, MISSING) is not v or k in swapped)
                  and watched(k, v) and not allowed(k, v, new.get(k, MISSING))]
        if not is_class:
            return differ, []
        return differ, [k for k, v in new.items() if k not in old and watched(k, v) and not _copyreg_cache(get(), k, v)]

    def watched(name: str, value) -> bool:
        if only_code:
            return callable(value) or isinstance(value, _CONSTANTS)
        return not name.startswith("_") or name.endswith("__")

    def say(old, new):
        differ, added = changed(old, new)
        return [f"{'patched' if k in new else 'removed'} {label}.{k}" for k in differ] + \
            [f"patched {label}.{k}" for k in added]

    def put(old, new):
        differ, added = changed(old, new)
        obj = get()
        for k in differ:
            value = old[k]
            for name, part in zip(("__code__", "__defaults__", "__kwdefaults__"), first.get(id(value), (0, ()))[1]):
                _quietly(setattr, value, name, part)
            _quietly(setattr, obj, k, value)
        for k in added:
            _quietly(delattr, obj, k)
    return Watch(read, say, put)


def _extension_file(module) -> str:
    """The file name a module was loaded from where it is a compiled extension, else ''."""
    origin = getattr(getattr(module, "__spec__", None), "origin", None) or ""
    return os.path.basename(origin) if origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)) else ""


def _rebuilt_extension(name: str, old, new) -> bool:
    """A compiled extension loaded again, from another build of the same file name, under the name it had:
    CPython files each load of a single-phase extension in sys.modules, so Triton's launcher of every new kernel
    (`__triton_launcher`, compiled into its cache) takes the entry of the last. The platform's act, no patch."""
    built = _extension_file(new)
    return bool(built) and built == _extension_file(old) and getattr(new, "__name__", None) == name


def _module_table() -> Watch:
    """sys.modules: an entry there before a launch that it replaced or removed (a variant's `json`, or one of
    kernel-ab's own packages, would answer every later import of it); entries it added are its imports."""
    def changed(old: dict, new: dict) -> list[str]:
        return [] if old == new else [k for k, v in old.items() if new.get(k, MISSING) is not v
                                      and not _rebuilt_extension(k, v, new.get(k))]

    def say(old, new) -> list[str]:
        return [f"{'replaced' if k in new else 'removed'} sys.modules[{k!r}]" for k in changed(old, new)]

    def put(old, new) -> None:
        for k in changed(old, new):
            sys.modules[k] = old[k]
    return Watch(lambda: dict(sys.modules), say, put)


def _copyreg_cache(cls, name: str, value) -> bool:
    """copyreg caches a class's slot names as `__slotnames__` the first time one of its objects is pickled or
    copied (torch.compile's graph capture copies Triton's JITFunction): the platform's own cache, no patch,
    when it holds what copyreg would compute."""
    if name != "__slotnames__" or not isinstance(cls, type) or not isinstance(value, list):
        return False
    names = []
    for base in cls.__mro__:
        declared = base.__dict__.get("__slots__", ())
        for slot in (declared,) if isinstance(declared, str) else declared:
            if slot in ("__dict__", "__weakref__"):
                continue
            private = slot.startswith("__") and not slot.endswith("__")
            names.append(f"_{base.__name__.lstrip('_')}{slot}" if private else slot)
    return value == names


def _third_party(name: str, old, new) -> bool:
    """A change kernel-ab or the platform made itself: builtins.__import__ set to variants.isolation's (a tree's
    later imports), or a function the platform wrapped (torch._dynamo wraps torch.manual_seed when first
    imported): the new value is defined in the platform's code and its __wrapped__ chain reaches the old one."""
    isolation = sys.modules.get("variants.isolation")
    if name == "__import__" and isolation is not None and new is getattr(isolation, "_tree_import", None):
        return True
    code = getattr(new, "__code__", None)
    if code is None or not in_platform(code.co_filename):
        return False
    seen = new
    for _ in range(8):
        seen = getattr(seen, "__wrapped__", None)
        if seen is old:
            return True
        if seen is None:
            return False
    return False


def _own_modules() -> dict[str, types.ModuleType]:
    """kernel-ab's modules loaded now (its checkout's top-level names; main.py as __main__)."""
    from variants.isolation import _own_names
    own = _own_names()
    found = {k: m for k, m in list(sys.modules.items()) if k.split(".")[0] in own and isinstance(m, types.ModuleType)}
    main = sys.modules.get("__main__")
    folder = str(Path(__file__).resolve().parents[2])
    if main is not None and str(getattr(main, "__file__", "") or "").startswith(folder + os.sep):
        found["__main__"] = main
    return found


class Guard:
    """Snapshots of process-wide state (`take`) and what changed since one, put back (`undo`)."""

    def __init__(self):
        watch_atexit()   # before the first snapshot: atexit.register records who registers what
        self.watches: dict[str, Watch] = {}
        for is_class, table in ((False, _MODULES), (True, _CLASSES)):
            for label, module, path in table:
                self.watches[label] = _namespace(label, lambda m=module, p=path: _resolve(m, p), is_class=is_class,
                                                 allowed=_third_party, codes=label in _CODES)
        for n, watch in enumerate(torch_flags() + process_flags()):
            self.watches[f"flag {n}"] = watch
        self.watches[ENVIRON] = environ()
        self.watches[FILTERS] = Watch(lambda: tuple(warnings.filters), lambda o, n: [], lambda o, n: None)
        self.watches["sys.modules"] = _module_table()
        self.watches["standard streams"] = streams()   # last: it may replace sys.stdout, which the "sys" watch reads
        self.seconds, self.count = 0.0, 0   # time spent taking snapshots and comparing (the cost, measured)
        self._modules_seen = 0

    def watch(self, label: str, obj) -> None:
        """Also watch an object's attributes (a family, a variant, a family's class), said as `label`."""
        self.watches[label] = _namespace(label, lambda: obj, is_class=True)

    def _own(self) -> None:
        if len(sys.modules) == self._modules_seen:   # nothing imported since: no module to add
            return
        self._modules_seen = len(sys.modules)
        for name, module in _own_modules().items():
            if name not in self.watches:
                label = "kernel-ab's main.py" if name == "__main__" else name
                self.watches[name] = _namespace(label, lambda m=module: m, is_class=False, only_code=True, codes=True)
                for k, v in vars(module).items():   # its classes, by what they define
                    if isinstance(v, type) and v.__module__ == module.__name__:
                        self.watches[f"{name}.{k}"] = _namespace(f"{label}.{k}", lambda c=v: c, is_class=True,
                                                                 only_code=True, codes=True)

    def take(self) -> dict[str, Any]:
        start = time.perf_counter()
        self._own()   # modules kernel-ab imported since the last launch are its own state: watched from now
        snapshot = {key: w.read() for key, w in self.watches.items()}
        self.seconds += time.perf_counter() - start
        return snapshot

    def library_acts(self, before: dict[str, Any]) -> list[ImportAct]:
        """What an import did since `before` that is a library's habit, not a change reaching a measurement:
        its own environment variables (kept: its code reads them), warnings of its own modules made errors
        (kept), and sys.stdout or sys.stderr replaced (put back, so that kernel-ab's report and progress go
        where they went). Called before `undo`, which then sees none of them."""
        acts = [ImportAct(Act.ENVIRON, k) for k in library_environ(before[ENVIRON], dict(os.environ))]
        acts += [ImportAct(Act.WARNINGS, library_filter(f)) for f in warnings.filters
                 if f not in before[FILTERS] and library_filter(f)]
        saved = before.get("sys") or {}
        for name in _STREAMS:
            old, new = saved.get(name), getattr(sys, name, None)
            if old is not None and new is not old and callable(getattr(new, "write", None)):
                setattr(sys, name, old)
                acts.append(ImportAct(Act.STREAM, f"sys.{name}"))
        return acts

    def undo(self, before: dict[str, Any]) -> list[str]:
        """What differs from `before`, one phrase each; every difference is put back."""
        start = time.perf_counter()
        said = []
        for key, old in before.items():
            watch = self.watches[key]
            new = watch.read()
            phrases = watch.say(old, new)
            if phrases:
                said += phrases
                watch.put(old, new)
        self.seconds += time.perf_counter() - start
        self.count += 1
        return list(dict.fromkeys(said))


_GUARD: list[Guard] = []


def enable(registry=None) -> Guard:
    """Guard every launch from now on (compare.runtime.supervisor.running), once per process; `registry`'s
    families (their objects and classes) and variants are watched too."""
    if not _GUARD:
        _GUARD.append(Guard())
    guard = _GUARD[0]
    for name, family in (registry.families.items() if registry is not None else ()):
        guard.watch(f"the {name} family", family)
        guard.watch(f"{type(family).__module__}.{type(family).__qualname__}", type(family))
        for variant in registry.variants(name):
            guard.watch(f"variant {variant.name} of {name}", variant)
    return guard


def active() -> Guard | None:
    return _GUARD[0] if _GUARD else None
