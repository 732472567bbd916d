"""Which configuration of `single_read_coop` comes closest to the memory roofline (GPU only, one call).

Times configurations of variants/group_norm/single_read_coop.py (resident: warps per group; split:
slice size and warps) against a same-size copy, `flat`, `single_read_tiled`
and torch on the seed shapes with 512 channels or more and the image preset, float32 and bfloat16 (256 MiB L2
flush by a read before every call, each call replayed from a CUDA graph, CUDA events, median); checks
every input kind against float64 for the chosen configurations, and that a split run repeats its bits.

    python3 benchmarks/coop_probe.py --out DIR [--budget 200]

The numbers choose `single_read_coop.choose`'s rule; kernel-ab's own timing (README) is the evidence.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.roofline_probe import check, make_case  # noqa: E402

SHAPES = ((128, 512, 128, (512,)), (128, 1024, 256, (512,)), (128, 2048, 512, (512,)),
          (16, 320, 32, (64, 64)), (32, 512, 32, (64, 64)))
DTYPES = ("float32", "bfloat16")


def shapes():
    from variants.group_norm import Shape
    return [Shape(n, c, g, s) for n, c, g, s in SHAPES]


def chosen(shape, dtype):
    """The configuration single_read_coop's launcher picks for `shape` in `dtype` on this GPU."""
    import torch
    from variants.group_norm.coop_launch import chosen
    return chosen(torch.empty(0, dtype=getattr(torch, dtype), device="cuda"), shape)


def candidates(shape, dtype):
    from variants.group_norm.single_read_coop import Config
    import triton
    block = triton.next_power_of_2(shape.hidden_size)
    found = [chosen(shape, dtype)]
    if block <= 16384:
        found += [Config(block, w, max_registers=r) for w, r in ((1, None), (1, 96), (2, None), (2, 64), (4, None),
                                                                  (4, 48))
                  if 8 <= block // (32 * w) <= 128]
    else:
        found += [Config(b, w, split=True, max_registers=r, overlap=o) for b, w, r, o in (
            (8192, 4, 128, False), (8192, 4, 128, True))]
        # slices streamed through and read again from L2 (runs 12-16 tried chunk sizes, warps, programs an SM,
        # L2 hints, pipelined chunks and overlap; these are what came closest)
        found += [Config(b, w, split=True, chunks=-(-shape.hidden_size // (b * s))) for b, w, s in (
            (2048, 2, 4), (2048, 4, 2), (4096, 4, 2))]
    return list(dict.fromkeys(found))


def registers(c, shape, inputs, outputs):
    """(registers a thread, bytes spilled) of configuration `c`'s compiled kernel."""
    from variants.group_norm.single_read_coop import coop_forward, kernel_arguments
    args, constants = kernel_arguments(c, inputs.x.contiguous(), inputs, outputs, shape)
    compiled = coop_forward.warmup(*args, grid=(1,), **constants)
    compiled._init_handles()
    return compiled.n_regs, compiled.n_spills


def _label(c) -> str:
    if isinstance(c, tuple):
        return f"{c[0]} b{c[1]} w{c[2]}"
    return getattr(c, "label", c)


def captured(fn):
    """`fn` captured in a CUDA graph (after a warm-up call and one on a side stream, as capture requires)."""
    import torch
    fn()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def time_ms(fns, flush, reps):
    """Median ms of `fns` (one callable, or several taken in turn) replayed from CUDA graphs (so host
    launch cost cannot leave the GPU idle inside the timed span, as kernel-ab's timing does for short
    cases), `flush` before every replay: a buffer larger than L2 for kernel-ab's flush (a read, which
    leaves no dirty lines to write back), or a callable."""
    import statistics
    import torch
    from compare.timing import flush_l2
    graphs = [captured(fn) for fn in (fns if isinstance(fns, (list, tuple)) else [fns])]
    times = []
    for i in range(reps):
        flush() if callable(flush) else flush_l2(flush)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graphs[i % len(graphs)].replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def runner(c, shape, inputs, outputs):
    import variants.group_norm as gn
    if isinstance(c, tuple):
        from variants.group_norm.coop_launch import Config, streamed
        from variants.group_norm.single_read_coop import group_norm_forward
        return lambda: streamed(group_norm_forward, Config(c[1], c[2], split=True), inputs.x, inputs, outputs, shape)
    if not isinstance(c, str):
        from variants.group_norm.single_read_coop import launch_with
        return lambda: launch_with(c, inputs, outputs, shape)
    if c == "copy":
        return lambda: outputs["y"].copy_(inputs.x)
    if c == "torch":
        return lambda: next(v for v in gn.FAMILY.variants() if v.name == "torch").run(inputs, outputs, shape)
    import importlib
    module = importlib.import_module(f"variants.group_norm.{c}")
    if hasattr(module, "launch"):
        return lambda: module.launch(inputs, outputs, shape)
    return lambda: gn.FAMILY.launch_forward(module.group_norm_forward, inputs, outputs, shape)


def plan(only=None):
    items = []
    for i, shape in enumerate(shapes()):
        if only is not None and i not in only:
            continue
        base = ["copy", "torch", "single_read_tiled"] + (["flat"] if shape.hidden_size <= 8192 else [])
        for dtype in DTYPES:
            items += [(i, dtype, c) for c in base + candidates(shape, dtype)]
    return items


def _compile(chunk):
    import torch
    failures = []
    all_shapes = shapes()
    for i, dtype, c in chunk:
        try:
            inputs, outputs = make_case(all_shapes[i], dtype)
            runner(c, all_shapes[i], inputs, outputs)()
            torch.cuda.synchronize()
        except Exception as exc:
            failures.append(f"{all_shapes[i].label} {dtype} {_label(c)}: {type(exc).__name__}: {exc}"[:300])
    return failures


def hard_inputs(configs, out):
    """Every input kind of the family against float64, for each (shape, dtype, config) given."""
    import torch
    import variants.group_norm as gn
    from variants.group_norm.single_read_coop import launch_with
    for shape, dtype, c in configs:
        for kind in gn.INPUT_KINDS:
            inputs = gn.make_inputs(shape, getattr(torch, dtype), "cuda", 0, kind)
            outputs = gn.alloc_outputs(shape, getattr(torch, dtype), "cuda")
            for t in outputs.values():
                t.fill_(float("nan"))
            launch_with(c, inputs, outputs, shape)
            first = outputs["y"].clone()
            launch_with(c, inputs, outputs, shape)
            repeat = bool(torch.equal(first.view(torch.uint8) if first.dtype != torch.bfloat16 else first.view(torch.int16),
                                      outputs["y"].view(torch.uint8) if first.dtype != torch.bfloat16 else outputs["y"].view(torch.int16)))
            ref = gn.FAMILY.reference(inputs, shape)
            parts = [f"bits repeat: {repeat}"]
            for name in ("y", "mean", "rstd"):
                o, r = outputs[name].double(), ref[name]
                mismatched = int((torch.isfinite(o) != torch.isfinite(r)).sum())
                both = torch.isfinite(o) & torch.isfinite(r)
                scale = float(r[both].abs().max()) if bool(both.any()) else 1.0
                err = float((o - r)[both].abs().max()) / (scale or 1.0) if bool(both.any()) else 0.0
                parts.append(f"{name}: {mismatched} finite mismatches, max err/max|ref| {err:.1e}")
            line = f"{shape.label} {dtype} {c.label} {kind}: " + "; ".join(parts)
            print(line, flush=True)
            out.write(line + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget", type=float, default=200.0)
    parser.add_argument("--workers", type=int, default=14)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--shapes", default="", help="comma-separated indexes into SHAPES (default: all)")
    args = parser.parse_args()
    print("$ python3 benchmarks/coop_probe.py " + " ".join(sys.argv[1:]), flush=True)
    t0 = time.time()
    import torch
    import compare.backend as backend
    backend.configure("cuda")
    from compare.timing import copy_bandwidth_gbs
    from variants.group_norm import FAMILY
    args.out.mkdir(parents=True, exist_ok=True)
    items = plan({int(i) for i in args.shapes.split(",")} if args.shapes else None)
    todo = [it for it in items if it[2] not in ("copy", "torch")]
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        pending = pool.map_async(_compile, [todo[k::args.workers] for k in range(args.workers)])
        try:
            failures = [f for part in pending.get(timeout=args.budget / 2) for f in part]
        except multiprocessing.TimeoutError:
            failures = [f"compilation did not finish in {args.budget / 2:.0f} s; timing what compiled"]
            pool.terminate()
    print(f"compiled {len(todo)} items in {time.time() - t0:.0f} s; {len(failures)} failed", flush=True)
    for f in failures:
        print("  failure:", f, flush=True)
    copy_gbs = copy_bandwidth_gbs()
    print(f"GPU {torch.cuda.get_device_name()}, copy {copy_gbs:.0f} GB/s", flush=True)
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    rows, all_shapes, case = [], shapes(), None
    for i, dtype, c in items:
        if time.time() - t0 > args.budget:
            print("budget reached; stopping", flush=True)
            break
        shape = all_shapes[i]
        if case is None or case[0] != (i, dtype):
            case = ((i, dtype), *make_case(shape, dtype))
        _, inputs, outputs = case
        row = {"shape": shape.label, "dtype": dtype, "config": _label(c)}
        try:
            outputs["y"].fill_(float("nan"))
            ms = time_ms(runner(c, shape, inputs, outputs), flush, args.reps)
            gbs = FAMILY.bytes_moved(shape, getattr(torch, dtype), "forward") / (ms * 1e-3) / 1e9
            row.update(us=round(ms * 1e3, 1), pct=round(100 * gbs / copy_gbs, 1))
            if c != "copy":
                row["rel_l2"], row["finite"] = check(shape, inputs, outputs)
            if not isinstance(c, (str, tuple)):
                row["regs"], row["spills"] = registers(c, shape, inputs, outputs)
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"[:300]
            torch.cuda.synchronize()
        rows.append(row)
        print(json.dumps(row), flush=True)
    (args.out / "coop_rows.json").write_text(json.dumps({"copy_gbs": copy_gbs, "rows": rows}, indent=1))
    print("\nbest per shape and dtype:")
    for key in dict.fromkeys((r["shape"], r["dtype"]) for r in rows):
        rs = [r for r in rows if (r["shape"], r["dtype"]) == key and "pct" in r]
        ours = [r for r in rs if r["config"].split()[0] in ("resident", "split", "streamed") and r.get("finite")]
        by = {r["config"]: r["pct"] for r in rs}
        best = max(ours, key=lambda r: r["pct"], default=None)
        print(key, {k: by.get(k) for k in ("copy", "torch", "flat", "single_read_tiled")},
              "best", best and (best["config"], best["pct"], best["rel_l2"]))
    wanted = {int(i) for i in args.shapes.split(",")} if args.shapes else {0, 3}
    configs = [(s, d, chosen(s, d)) for s in (all_shapes[0], all_shapes[3]) for d in DTYPES
               if all_shapes.index(s) in wanted]
    # and each shape's fastest configuration, if it is not the chosen one
    for s in all_shapes:
        for d in DTYPES:
            rs = [r for r in rows if (r["shape"], r["dtype"]) == (s.label, d) and r.get("finite") and "pct" in r]
            best = max((r for r in rs if r["config"].startswith(("resident", "split"))), key=lambda r: r["pct"],
                       default=None)
            found = [c for c in candidates(s, d) if best and _label(c) == best["config"]]
            if found and found[0] != chosen(s, d):
                configs.append((s, d, found[0]))
    with open(args.out / "hard_inputs.txt", "w") as out:
        hard_inputs(configs, out)


if __name__ == "__main__":
    main()
