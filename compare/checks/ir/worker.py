"""The compile worker: `python -m compare.checks.ir.worker` compiles the Triton kernels of a JSON request on stdin
in a process of its own and prints every stage as JSON; a kernel that fails is reported, the rest still
come out. It runs without TRITON_INTERPRET (an interpreting process cannot compile). "offline" compiles
for a target with no GPU; "launched" runs the family's launcher once on the GPU and reads back what ran."""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from compare.model.vocabulary import TEXT_STAGES

ERROR_LINES = 6


def _tool(name: str) -> str:
    """Path of an NVIDIA tool (cuobjdump, nvdisasm) bundled with Triton, else the one on PATH."""
    import triton
    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
    return str(bundled) if bundled.exists() else name


def load_kernel(spec: dict):
    """The @triton.jit function named in `spec`, imported again in this (compiling) process."""
    if spec["root"] not in sys.path:
        sys.path.insert(0, spec["root"])
    module_name = spec.get("module") or ""
    if spec.get("import_roots") and module_name:
        # a kernel loaded with --variant: import it as its own revision's package, isolated from any other
        # revision of the same package compiled in this process (as variants.external loaded it)
        from variants.discovery import family_folders
        from variants.isolation import import_kept
        roots = tuple(Path(r) for r in spec["import_roots"])
        # a family's folder (variants/discovery.py) builds on kernel-ab's own modules; a reviewed tree never does;
        # a tree's modules are imported once in this process, for every kernel and request naming them
        return _jitted(getattr(import_kept(module_name, roots, share_own=set(roots) <= family_folders()),
                               spec["function"]))
    module = None
    if module_name and not module_name.startswith("__"):
        try:
            module = importlib.import_module(module_name)
            if Path(inspect.getsourcefile(module) or "").resolve() != Path(spec["file"]).resolve():
                module = None
        except ImportError:
            module = None
    if module is None:
        unique = f"_kernel_ab_ir_{re.sub(r'[^0-9A-Za-z_]', '_', spec['name'])}"
        loader_spec = importlib.util.spec_from_file_location(unique, spec["file"])
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[unique] = module
        loader_spec.loader.exec_module(module)
    return _jitted(getattr(module, spec["function"]))


def _jitted(found):
    """The @triton.jit function under `found`'s @triton.autotune or @triton.heuristics (each keeps what it
    wraps as `fn`): the launch was recorded at the function itself, with the configuration's arguments."""
    from triton.runtime.jit import JITFunction
    while not isinstance(found, JITFunction) and hasattr(found, "fn"):
        found = found.fn
    return found


def _cuobjdump(flag: str, cubin: bytes) -> subprocess.CompletedProcess:
    """`cuobjdump FLAG` run on a cubin (written to a file of its own for it)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([_tool("cuobjdump"), flag, f.name], capture_output=True, text=True, timeout=60)


def resource_usage(cubin: bytes) -> dict:
    """Registers, stack, shared and local bytes from `cuobjdump -res-usage` of a cubin."""
    found = dict(re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)", _cuobjdump("-res-usage", cubin).stdout))
    return {k.lower(): int(v) for k, v in found.items()}


def sass(cubin: bytes) -> str:
    """The SASS listing of a cubin (`cuobjdump -sass`)."""
    r = _cuobjdump("-sass", cubin)
    if r.returncode:
        raise RuntimeError(f"cuobjdump -sass failed: {r.stderr.strip()[:200]}")
    return r.stdout


def compile_offline(fn, spec: dict, req: dict):
    """A CompiledKernel for `fn` at the kernel's specialization and the request's target, without a GPU."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    spec = spec["specialization"]
    attrs = {(fn.arg_names.index(name),): [["tt.divisibility", 16]] for name in spec["divisible_by_16"]}
    constexprs = {k: _constant(v) for k, v in spec["constexprs"].items()}
    src = ASTSource(fn, dict(spec["signature"]), constexprs, attrs)
    return triton.compile(src, target=GPUTarget("cuda", int(req["capability"]), 32),
                          options=dict(spec.get("options", {})) or None)


def _constant(value):
    """A constexpr value back from its JSON form (see compare.checks.ir.compile._constant)."""
    if isinstance(value, dict) and "tl_dtype" in value:
        import triton.language as tl
        return tl.dtype(value["tl_dtype"])
    return value


def _family(req: dict):
    """The family object named in the request, from the module that defines it."""
    from variants.family import Family
    try:
        module = importlib.import_module(req["family_module"])
    except ModuleNotFoundError:   # a family from a folder or an entry point (variants/discovery.py)
        from variants import registry
        return registry().family(req["family"])
    for value in vars(module).values():
        if isinstance(value, Family) and value.name == req["family"]:
            return value
    raise RuntimeError(f"no family {req['family']!r} in module {req['family_module']}")


def _launched_kernels(fn) -> list:
    """Every compiled kernel in the JIT's cache of `fn` (the cache layout moved between Triton versions)."""
    found = []
    for entry in getattr(fn, "device_caches", {}).values():
        cache = entry[0] if isinstance(entry, tuple) else entry
        found.extend(cache.values())
    for cache in getattr(fn, "cache", {}).values():
        found.extend(cache.values())
    unique = {id(k): k for k in found}   # some versions expose one dict under both names
    return list(unique.values())


def compile_launched(fn, spec: dict, req: dict):
    """Launch `fn` once through the family's launcher on the GPU, and return the kernel the JIT compiled."""
    import torch
    from compare.checks.ir.compile import launch_as
    family = _family(req)
    launch_as(family, spec.get("role", "forward"), spec.get("launcher") or "", fn,
              family.shape_from_dict(req["shape"]), family.dtypes[req["dtype"]], "cuda")
    torch.cuda.synchronize()
    kernels = _launched_kernels(fn)
    if len(kernels) != 1:
        raise RuntimeError(f"expected one compiled kernel in the JIT cache after one launch, found {len(kernels)}")
    kernel = kernels[0]
    if hasattr(kernel, "result"):  # an asynchronous compile's future
        kernel = kernel.result()
    if hasattr(kernel, "_init_handles"):
        kernel._init_handles()
    return kernel


def error_lines(exc: BaseException) -> str:
    """At most ERROR_LINES lines: the error's type and first line, then the last lines of its message
    (Triton's compilation errors end with the offending source line and the cause)."""
    from compare.model.errors import summarize
    message = [l for l in str(exc).strip().splitlines() if l.strip()] or [""]
    return "\n".join([summarize(exc), *message[1:][-(ERROR_LINES - 1):]])


def describe(kernel, name: str, launched: bool) -> dict:
    """Every stage and the resource usage of a compiled kernel (`launched`: also what it reports)."""
    stages = {s: kernel.asm[s] for s in TEXT_STAGES}
    stages["sass"] = sass(kernel.asm["cubin"])
    res = resource_usage(kernel.asm["cubin"])
    resources = {"registers": res.get("reg", -1), "spill_bytes": res.get("local", -1),
                 "stack_bytes": res.get("stack", -1), "local_bytes": res.get("local", -1),
                 "shared_bytes": int(getattr(kernel.metadata, "shared", -1)),
                 "num_warps": int(getattr(kernel.metadata, "num_warps", -1))}
    reported = {}
    if launched:
        if hasattr(kernel, "_init_handles"):
            kernel._init_handles()
        reported = {"registers": int(kernel.n_regs), "spills": int(kernel.n_spills),
                    "shared_bytes": int(kernel.metadata.shared)}
    return {"name": name, "ok": True, "error": "", "kernel_name": kernel.metadata.name,
            "stages": stages, "resources": resources, "launched": reported}


def failed(name: str, exc: BaseException) -> dict:
    return {"name": name, "ok": False, "error": error_lines(exc), "kernel_name": "",
            "stages": {}, "resources": {}, "launched": {}}


def compile_one(spec: dict, req: dict, pool=None):
    """Every stage and the resource usage of one kernel, or its error. With a thread `pool` (offline
    compiles), a future of them: the disassembly (cuobjdump, a process of its own) of one kernel then
    runs while the next compiles."""
    launched = req["mode"] == "launched"
    try:
        fn = load_kernel(spec)
        kernel = compile_launched(fn, spec, req) if launched else compile_offline(fn, spec, req)
    except Exception as exc:  # reported per kernel: one failing variant must not hide the others
        return failed(spec["name"], exc)
    if pool is None:
        return _described(kernel, spec["name"], launched)
    return pool.submit(_described, kernel, spec["name"], launched)


def _described(kernel, name: str, launched: bool) -> dict:
    try:
        return describe(kernel, name, launched)
    except Exception as exc:  # as in compile_one
        return failed(name, exc)


def compile_all(req: dict, pool) -> list[dict]:
    """Every kernel of the request, in its order (compiled offline in `pool`'s threads)."""
    # a launched kernel is read back on the GPU's context: those stay on this thread
    found = [compile_one(spec, req, pool if req["mode"] == "offline" else None) for spec in req["kernels"]]
    return [r.result() if isinstance(r, Future) else r for r in found]


def serve(words_fd: int) -> int:
    """`--serve WORDS_FD`: request after request (compare/runtime/warm_worker.py), each {"request", "answer"}:
    its results written to the answer file, then "done" said."""
    from compare.runtime.warm_worker import Serving, die_with_parent
    die_with_parent()
    serving = Serving(words_fd)
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        while (asked := serving.next()) is not None:
            Path(asked["answer"]).write_text(json.dumps({"results": compile_all(asked["request"], pool)}))
            serving.say("done")
    return 0


def main(argv: list[str]) -> int:
    if os.environ.get("TRITON_INTERPRET"):
        print(json.dumps({"error": "the IR worker must run without TRITON_INTERPRET"}))
        print("the IR worker must run without TRITON_INTERPRET", file=sys.stderr)
        return 1
    if argv[:1] == ["--serve"]:
        return serve(int(argv[1]))
    req = json.loads(sys.stdin.read())
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        results = compile_all(req, pool)
    sys.stdout.write(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
