"""Which configuration of `single_read` comes closest to the memory roofline (GPU only, one call).

Times candidate configurations of variants/group_norm/single_read.py (path, block, warps, slices)
against pointer_mutation, flat, torch and a same-size torch copy, on the seed preset and on image
shapes, float32 and bfloat16, the way kernel-ab times (256 MiB L2 flush by a read before every call, CUDA events
around the call, median), and prints a table: % of the measured copy bandwidth for the family's fewest
bytes. Kernels are compiled first by worker processes in parallel (Triton's disk cache), so the
timing process only loads them. It stops starting new measurements after --budget seconds.

    python3 benchmarks/roofline_probe.py --out DIR [--budget 170]

The numbers choose `single_read.choose`'s rule; kernel-ab's own timing (README) is the evidence.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

IMAGE_SHAPES = ((16, 320, 32, (64, 64)), (32, 512, 32, (64, 64)), (16, 640, 32, (32, 32)), (16, 1280, 32, (16, 16)))
SEED_CHANNELS = (32, 64, 128, 256, 512, 1024, 2048)
DTYPES = ("float32", "bfloat16")


def shapes():
    from variants.group_norm import Shape
    seed = [Shape(128, c, c // 4, (512,)) for c in SEED_CHANNELS]
    return seed + [Shape(n, c, g, s) for n, c, g, s in IMAGE_SHAPES]


def candidates(shape):
    """Configurations worth timing for this shape (labels for the baselines)."""
    from variants.group_norm.single_read import Config
    import triton
    h, cpg = shape.hidden_size, shape.channels_per_group
    block = triton.next_power_of_2(h)
    found = []
    for warps in (1, 2, 4, 8, 16, 32):
        per_thread = block // (32 * warps)
        if 4 <= per_thread <= 32 and block <= 32768:
            found.append(Config("resident", block, warps))
    if h > 8192:
        for b, w in ((2048, 8), (4096, 8), (4096, 16), (4096, 32), (8192, 16), (8192, 32), (16384, 32)):
            found.append(Config("streamed", b, w))
        least = max(1, -(-4096 // (h // cpg)))   # channels per slice for at least 4096 elements
        for per_slice, b, w, rev in ((least, 4096, 4, True), (least, 4096, 8, True), (least, 4096, 8, False),
                                     (2 * least, 8192, 8, True)):
            found.append(Config("split", b, w, slices=-(-cpg // per_slice), reverse=rev))
    return found


def make_case(shape, dtype_name, device="cuda"):
    import torch
    from variants.group_norm import Inputs, alloc_outputs
    dtype = getattr(torch, dtype_name)
    gen = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(shape.batch, shape.channels, *shape.spatial, device=device, generator=gen).to(dtype)
    w = (1 + 0.5 * torch.randn(shape.channels, device=device, generator=gen)).to(dtype)
    b = (0.5 * torch.randn(shape.channels, device=device, generator=gen)).to(dtype)
    return Inputs(x, w, b, seed=0, kind="normal"), alloc_outputs(shape, dtype, device)


def runner(name, shape, inputs, outputs):
    """A zero-argument callable for a baseline name or a single_read Config."""
    import variants.group_norm as gn
    from variants.group_norm import single_read
    if isinstance(name, single_read.Config):
        return lambda: single_read.launch_with(name, inputs, outputs, shape)
    if name == "copy":
        return lambda: outputs["y"].copy_(inputs.x)
    if name == "torch":
        return lambda: next(v for v in gn.FAMILY.variants() if v.name == "torch").run(inputs, outputs, shape)
    if name == "single_read_tiled":   # its own launcher's default configuration
        from variants.group_norm import single_read_tiled
        return lambda: single_read_tiled.launch(inputs, outputs, shape)
    import importlib
    kernel = importlib.import_module(f"variants.group_norm.{name}").group_norm_forward
    return lambda: gn.FAMILY.launch_forward(kernel, inputs, outputs, shape)


def plan():
    """(shape index, dtype, candidate) for every measurement, baselines first."""
    items = []
    for i, shape in enumerate(shapes()):
        baselines = ["copy", "torch", "single_read_tiled"] + (["pointer_mutation", "flat"] if shape.hidden_size <= 8192 else [])
        for dtype in DTYPES:
            for c in baselines + candidates(shape):
                items.append((i, dtype, c))
    return items


def _compile_worker(chunk):
    """Launch each item once so Triton compiles it into the disk cache; returns failures."""
    import torch
    failures = []
    all_shapes = shapes()
    for i, dtype, c in chunk:
        if c in ("copy", "torch"):
            continue
        try:
            inputs, outputs = make_case(all_shapes[i], dtype)
            runner(c, all_shapes[i], inputs, outputs)()
            torch.cuda.synchronize()
        except Exception as exc:  # reported by the timing pass too
            failures.append(f"{all_shapes[i].label} {dtype} {getattr(c, 'label', c)}: {type(exc).__name__}: {exc}"[:300])
    return failures


def precompile(items, workers):
    """Compile distinct kernels in parallel processes (one representative item per kernel)."""
    distinct, seen = [], set()
    all_shapes = shapes()
    for i, dtype, c in items:
        if c in ("copy", "torch"):
            continue
        label = getattr(c, "label", c)
        key = (dtype, label, all_shapes[i].hidden_size > 8192, getattr(c, "slices", 0))
        if key not in seen:
            seen.add(key)
            distinct.append((i, dtype, c))
    chunks = [distinct[k::workers] for k in range(workers)]
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        return len(distinct), [f for part in pool.map(_compile_worker, chunks) for f in part]


def time_ms(fn, flush, reps):
    import torch
    from compare.timing import flush_l2
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        flush_l2(flush)   # kernel-ab's flush: a read, which leaves no dirty lines to write back
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def check(shape, inputs, outputs):
    """Relative L2 error of y against float64, and whether every value is finite."""
    import torch
    ref = torch.nn.functional.group_norm(inputs.x.double(), shape.num_groups, inputs.weight.double(),
                                         inputs.bias.double(), shape.eps)
    y = outputs["y"].double()
    finite = bool(torch.isfinite(y).all())
    return (float((y - ref).norm() / ref.norm()) if finite else float("nan")), finite


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget", type=float, default=170.0, help="seconds after which no new measurement starts")
    parser.add_argument("--workers", type=int, default=12)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    t0 = time.time()
    import torch
    import compare.backend as backend
    backend.configure("cuda")
    from compare.timing import copy_bandwidth_gbs
    from variants.group_norm import FAMILY
    bytes_moved = FAMILY.bytes_moved
    items = plan()
    args.out.mkdir(parents=True, exist_ok=True)
    n_distinct, failures = precompile(items, args.workers)
    print(f"compiled {n_distinct} kernels in {time.time() - t0:.0f} s; {len(failures)} failed", flush=True)
    for f in failures:
        print("  compile failure:", f, flush=True)
    copy_gbs = copy_bandwidth_gbs()
    print(f"GPU {torch.cuda.get_device_name()}, copy {copy_gbs:.0f} GB/s (read + write)", flush=True)
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    rows, all_shapes, case = [], shapes(), None
    for i, dtype, c in items:
        if time.time() - t0 > args.budget:
            print(f"budget of {args.budget:.0f} s reached; stopping", flush=True)
            break
        shape = all_shapes[i]
        if case is None or case[0] != (i, dtype):
            case = ((i, dtype), *make_case(shape, dtype))
        _, inputs, outputs = case
        label = getattr(c, "label", c)
        row = {"shape": shape.label, "hidden": shape.hidden_size, "dtype": dtype, "config": label}
        try:
            outputs["y"].fill_(float("nan"))
            fn = runner(c, shape, inputs, outputs)
            ms = time_ms(fn, flush, args.reps)
            gbs = bytes_moved(shape, getattr(torch, dtype), "forward") / (ms * 1e-3) / 1e9
            row.update(ms=ms, gbs=gbs, pct=100 * gbs / copy_gbs)
            if c != "copy":
                row["rel_l2"], row["finite"] = check(shape, inputs, outputs)
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"[:200]
            torch.cuda.synchronize()
        rows.append(row)
        print(json.dumps(row), flush=True)
    (args.out / "probe_rows.json").write_text(json.dumps({"copy_gbs": copy_gbs, "rows": rows}, indent=1))
    summary(rows)
    hard_inputs(all_shapes[4])


def hard_inputs(shape):
    """single_read's default launch on every input kind of the family, float32: finite where the
    float64 reference is, and the worst error against it (a GPU check of what the interpreter showed)."""
    import torch
    import variants.group_norm as gn
    from variants.group_norm import single_read
    print(f"\nhard inputs, {shape.label}, float32, single_read's default configuration:")
    for kind in gn.INPUT_KINDS:
        inputs = gn.make_inputs(shape, torch.float32, "cuda", 0, kind)
        outputs = gn.alloc_outputs(shape, torch.float32, "cuda")
        single_read.launch(inputs, outputs, shape)
        ref = gn.FAMILY.reference(inputs, shape)
        parts = []
        for name in ("y", "mean", "rstd"):
            out, r = outputs[name].double(), ref[name]
            mismatched = int((torch.isfinite(out) != torch.isfinite(r)).sum())
            both = torch.isfinite(out) & torch.isfinite(r)
            err = float((out - r)[both].abs().max()) if bool(both.any()) else 0.0
            parts.append(f"{name}: {mismatched} non-finite mismatches, max abs {err:.2e}")
        print(f"  {kind}: " + "; ".join(parts), flush=True)


def summary(rows):
    """Per shape and dtype: copy, torch, the seed baselines and the best single_read configuration."""
    print("\n| shape | dtype | copy % | torch % | pointer_mutation % | flat % | single_read_tiled % | best single_read | % | rel L2 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    keys = list(dict.fromkeys((r["shape"], r["dtype"]) for r in rows))
    for shape, dtype in keys:
        rs = [r for r in rows if (r["shape"], r["dtype"]) == (shape, dtype) and "pct" in r]
        by = {r["config"]: r for r in rs}
        ours = [r for r in rs if r["config"].split()[0] in ("resident", "streamed", "split") and r.get("finite")]
        best = max(ours, key=lambda r: r["pct"], default=None)
        cell = lambda name: f"{by[name]['pct']:.0f}" if name in by else "-"
        print(f"| {shape} | {dtype} | {cell('copy')} | {cell('torch')} | {cell('pointer_mutation')} | {cell('flat')} | "
              f"{cell('single_read_tiled')} | {best['config'] if best else '-'} | {best['pct']:.0f} | {best['rel_l2']:.1e} |"
              if best else f"| {shape} | {dtype} | {cell('copy')} | {cell('torch')} | - | - | - | - | - | - |")
    print("\nevery single_read configuration (% of copy):")
    for shape, dtype in keys:
        ours = [r for r in rows if (r["shape"], r["dtype"]) == (shape, dtype) and r["config"].split()[0] in
                ("resident", "streamed", "split")]
        print(f"{shape} {dtype}: " + ", ".join(
            f"{r['config']}={r['pct']:.0f}" if "pct" in r and r.get("finite") else f"{r['config']}=FAIL" for r in ours))


if __name__ == "__main__":
    main()
