"""Does splitting single_read_coop's kernels into @triton.jit helpers change the compiled code? Both kernels
(forward and backward), at a git revision REV and in the working tree, compiled offline for sm_90 at every
branch of their constexpr switches (resident, split held, overlapped, streamed; even and ragged; bfloat16 and
float32), and their SASS compared instruction by instruction (addresses aside). Exit 1 when any differs.

    python3 benchmarks/kernel_split_sass.py REV [--out FILE]
"""
from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FILES = {"forward": "variants/group_norm/single_read_coop.py", "backward": "variants/group_norm/single_read_coop_backward.py"}
KERNELS = {"forward": "coop_forward", "backward": "coop_backward"}
FORWARD_CASES = [dict(SPLIT=split, OVERLAP=overlap, CHUNKS=chunks, EVEN=even, PAIR=pair)
                 for split, overlap, chunks, even, pair in [(0, 0, 1, 1, 0), (0, 0, 1, 0, 0), (1, 1, 1, 1, 0), (1, 1, 1, 0, 1),
                                                            (1, 0, 1, 1, 0), (1, 0, 2, 0, 0), (1, 0, 2, 1, 1)]]
BACKWARD_CASES = [dict(SPLIT=split, EVEN=even, RPC=4) for split in (0, 1) for even in (1, 0)]


def _signature(pass_name: str, dt: str) -> dict:
    common = dict(Mean_ptr="*fp32", RSTD_ptr="*fp32", Part_ptr="*fp64", Count_ptr="*i32", n_rows="i32",
                  num_groups="i32", channels_per_group="i32", hidden_size="i32", slices="i32")
    if pass_name == "forward":
        return dict(Y_ptr=f"*{dt}", X_ptr=f"*{dt}", W_ptr=f"*{dt}", B_ptr=f"*{dt}", eps="fp32", **common)
    return dict(DX_ptr=f"*{dt}", DY_ptr=f"*{dt}", X_ptr=f"*{dt}", W_ptr=f"*{dt}", DW_ptr="*fp32", DB_ptr="*fp32", **common)


def _kernel(source: str, pass_name: str, tag: str):
    path = Path(tempfile.mkdtemp()) / f"{tag}_{pass_name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module    # dataclasses look their module up there
    spec.loader.exec_module(module)
    return getattr(module, KERNELS[pass_name])


def _sass(fn, signature: dict, constants: dict) -> list[str]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from compare.checks.ir.worker import _tool
    names = [n for n in fn.arg_names if n in signature or n in constants]
    ordered = {n: signature.get(n, "constexpr") for n in names}
    compiled = triton.compile(ASTSource(fn, ordered, constants, {}), target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": 4})
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        out = subprocess.run([_tool("cuobjdump"), "-sass", f.name], capture_output=True, text=True, check=True).stdout
    return [re.sub(r"/\*[0-9a-f]{4}\*/", "", line).strip() for line in out.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", line)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev")
    parser.add_argument("--out")
    args = parser.parse_args()
    rows, differing = ["| pass | dtype | constants | instructions at REV | now | same |", "|---|---|---|---|---|---|"], 0
    for pass_name, cases in (("forward", FORWARD_CASES), ("backward", BACKWARD_CASES)):
        before = _kernel(subprocess.run(["git", "show", f"{args.rev}:{FILES[pass_name]}"], cwd=ROOT, check=True,
                                        capture_output=True, text=True).stdout, pass_name, "rev")
        now = _kernel((ROOT / FILES[pass_name]).read_text(), pass_name, "now")
        for dt in ("bf16", "fp32"):
            for case in cases:
                if case.get("PAIR") and dt == "fp32":
                    continue    # PAIR packs two 16-bit values
                constants = dict(BLOCK=4096, HPC=1024, ROWS=16, SLICE_BLOCK=4, **case)
                a, b = (_sass(k, _signature(pass_name, dt), constants) for k in (before, now))
                differing += a != b
                label = " ".join(f"{k}={v}" for k, v in case.items())
                rows.append(f"| {pass_name} | {dt} | {label} | {len(a)} | {len(b)} | {'yes' if a == b else 'NO'} |")
    text = "\n".join(rows) + f"\n\n{len(rows) - 2} compilations compared, {differing} differing\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())
