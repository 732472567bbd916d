"""Which configuration of single_read_coop's backward comes closest to the memory roofline (GPU only).

Times configurations of variants/group_norm/single_read_coop_backward.py against the shared backward
(variants/group_norm/backward.py) on the seed shapes with 512 channels or more and the image preset,
float32 and bfloat16, as benchmarks/coop_probe.py times the forward (CUDA-graph replays, L2 flushed
before each, median; % of copy bandwidth for the backward's fewest bytes: x, dy in, dx out). Checks dx,
dW and dB of every configuration against float64 autograd, and that a split run repeats dx's bits.

    python3 benchmarks/coop_backward_probe.py --out DIR [--budget 150]

The numbers choose `single_read_coop_backward.choose`'s rule; kernel-ab's own timing is the evidence.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.coop_probe import DTYPES, shapes, time_ms  # noqa: E402


def candidates(shape):
    from variants.group_norm.single_read_coop_backward import TILE_WIDTH_PER_WARP, Config, choose, tile_width
    import triton
    hpc = shape.hidden_size // shape.channels_per_group
    found = ["shared", choose(shape.hidden_size)]
    block = triton.next_power_of_2(shape.hidden_size)
    if block <= 16384:
        found += [Config(block, w) for w in (1, 2, 4, 8) if 8 <= block // (32 * w) <= 64]
    else:
        found += [Config(b, w, split=True) for b, w in ((2048, 2), (4096, 2), (4096, 4), (8192, 4), (8192, 8))]
    aligned = [c for c in found if c == "shared" or tile_width(c, hpc) == TILE_WIDTH_PER_WARP * c.num_warps]
    return list(dict.fromkeys(aligned))


def make(shape, dtype):
    import torch
    import variants.group_norm as gn
    inputs = gn.make_inputs(shape, getattr(torch, dtype), "cuda", 0)
    saved = gn.alloc_outputs(shape, inputs.x.dtype, "cuda")
    next(v for v in gn.FAMILY.variants() if v.name == "single_read_coop").run(inputs, saved, shape)
    grads = gn.FAMILY.alloc_grads(shape, inputs.x.dtype, "cuda")
    return inputs, saved, grads


def runner(c, shape, inputs, saved, grads):
    import variants.group_norm as gn
    from variants.group_norm import single_read_coop_backward as cb
    if c == "shared":
        return gn.FAMILY.backward_call(gn.FAMILY.shared_backward(), inputs, saved, grads, shape)
    return cb.launch_backward_with(c, cb.coop_backward, inputs, saved, grads, shape)


def errors(shape, inputs, grads, reference):
    import torch
    found = {}
    for name in ("dx", "dW", "dB"):
        g, r = grads[name].double(), reference[name]
        found[name] = float((g - r).norm() / r.norm()) if bool(torch.isfinite(g).all()) else float("nan")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget", type=float, default=150.0)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    t0 = time.time()
    import torch
    import compare.backend as backend
    backend.configure("cuda")
    from compare.timing import copy_bandwidth_gbs
    from variants.group_norm import FAMILY
    args.out.mkdir(parents=True, exist_ok=True)
    copy_gbs = copy_bandwidth_gbs()
    print(f"GPU {torch.cuda.get_device_name()}, copy {copy_gbs:.0f} GB/s", flush=True)
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    rows = []
    for shape in shapes():
        for dtype in DTYPES:
            if time.time() - t0 > args.budget:
                print("budget reached; stopping", flush=True)
                break
            inputs, saved, grads = make(shape, dtype)
            reference = FAMILY.reference_backward(inputs, shape)
            for c in candidates(shape):
                row = {"shape": shape.label, "dtype": dtype, "config": getattr(c, "label", c)}
                try:
                    for g in grads.values():
                        g.fill_(float("nan"))
                    fn = runner(c, shape, inputs, saved, grads)
                    fn()
                    first = grads["dx"].clone()
                    fn()
                    row["dx_bits_repeat"] = bool(torch.equal(first.view(torch.int16 if first.element_size() == 2
                                                                         else torch.int32),
                                                             grads["dx"].view(torch.int16 if first.element_size() == 2
                                                                              else torch.int32)))
                    row["rel_l2"] = errors(shape, inputs, grads, reference)
                    ms = time_ms(fn, flush, args.reps)
                    gbs = FAMILY.bytes_moved(shape, getattr(torch, dtype), "backward") / (ms * 1e-3) / 1e9
                    row.update(us=round(ms * 1e3, 1), pct=round(100 * gbs / copy_gbs, 1))
                except Exception as exc:
                    row["error"] = f"{type(exc).__name__}: {exc}"[:300]
                    torch.cuda.synchronize()
                rows.append(row)
                print(json.dumps(row), flush=True)
    (args.out / "coop_backward_rows.json").write_text(json.dumps({"copy_gbs": copy_gbs, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
