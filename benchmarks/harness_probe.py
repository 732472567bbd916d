"""Do kernel-ab's timing and the configuration probe agree on one callable? (GPU only, one call.)

The probe (`coop_probe.time_ms`) replays one callable's CUDA graph and waits for each call; kernel-ab
(`compare.timing.time_case`) queues a round of every entry's calls, L2 flushed by a read before each,
and waits once a round. On bfloat16 N16 C320 they disagreed on `single_read_coop`'s slices read again
from L2 (probe 28.3-29.3 us, kernel-ab 35.7-36.0 us) but not on the slices held in registers. This
times the very same bench calls (the family's `bench_call`, as kernel-ab builds them) under each
harness and a few of kernel-ab's settings taken one at a time, so the difference lands on one of them.

    python3 benchmarks/harness_probe.py
    python3 benchmarks/harness_probe.py --placements   # the same x at 8 places in device memory

What it found (the harness agrees; state left by earlier cases in the process does not):
reports/timing_order_effect/README.md.
"""
from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPES = ((16, 320, 32, (64, 64), "bfloat16"), (16, 320, 32, (64, 64), "float32"), (32, 512, 32, (64, 64), "bfloat16"))


def reread_config(shape, x):
    """Slices read again from L2 as `choose` picked them at d11bd41 (`coop_launch.read_again`)."""
    import torch
    from variants.group_norm.coop_launch import read_again
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    return read_again(shape.hidden_size, shape.batch * shape.num_groups / sms)


def eager_ms(fn, flush, reps):
    """Median ms of `fn` called eagerly, flushed and waited for each call (kernel-ab's warm-up call)."""
    from compare.timing import _one_call_ms
    return statistics.median(_one_call_ms(fn, flush) for _ in range(reps))


def placements(flush, copies=8):
    """bfloat16 N16 C320: the same x copied to `copies` places in device memory, each after a pad of another
    size, and single_read_coop, its read-again slices and pointer_mutation timed on each copy (the
    probe's harness): does where x lies change what they take?"""
    import torch
    from benchmarks.coop_probe import time_ms
    from variants.group_norm import FAMILY, Shape
    shape = Shape(16, 320, 32, (64, 64))
    inputs = FAMILY.make_inputs(shape, torch.bfloat16, "cuda", 0)
    outputs = FAMILY.alloc_outputs(shape, torch.bfloat16, "cuda")
    names = ("single_read_coop", "single_read_coop_reread", "pointer_mutation")
    variants = {v.name: v for v in FAMILY.variants() if v.name in names}
    kept = []
    for k in range(copies):
        kept.append(torch.empty((k * 37 + 11) << 20, dtype=torch.uint8, device="cuda"))   # pads of 11-270 MiB
        x = inputs.x.clone()
        kept.append(x)
        placed = inputs.replace(x=x)
        row = {"copy": k, "x_at_mib": x.data_ptr() >> 20}
        for name in names:
            row[name] = round(time_ms(lambda v=variants[name]: v.run(placed, outputs, shape), flush, 15) * 1e3, 1)
        print(json.dumps(row), flush=True)


def main():
    print("$ python3 benchmarks/harness_probe.py " + " ".join(sys.argv[1:]), flush=True)
    if sys.argv[1:] == ["--placements"]:
        import torch
        import compare.backend as backend
        backend.configure("cuda")
        placements(torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda"))
        return
    import torch
    import compare.backend as backend
    backend.configure("cuda")
    from benchmarks.coop_probe import time_ms
    from compare import timing
    from variants.group_norm import FAMILY, Shape
    from variants.group_norm.single_read_coop import launch_with
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    copy_gbs = timing.copy_bandwidth_gbs()
    base = next(v for v in FAMILY.variants() if v.name == "single_read_coop")
    print(f"GPU {torch.cuda.get_device_name()}, copy {copy_gbs:.0f} GB/s", flush=True)
    for n, c, g, s, dtype in SHAPES:
        shape = Shape(n, c, g, s)
        inputs = FAMILY.make_inputs(shape, getattr(torch, dtype), "cuda", 0)
        config = reread_config(shape, inputs.x)
        reread = dataclasses.replace(base, name="reread", run=lambda i, o, sh, c=config: launch_with(c, i, o, sh))
        variants = [base, reread]
        moved = FAMILY.bytes_moved(shape, getattr(torch, dtype), "forward")

        def record(harness, medians):
            for name, ms in medians.items():
                print(json.dumps(dict(shape=shape.label, dtype=dtype, harness=harness, entry=name,
                                      us=round(ms * 1e3, 1), pct=round(100 * moved / (ms * 1e-3) / 1e9 / copy_gbs, 1),
                                      config=config.label if name == "reread" else "")), flush=True)

        def kernel_ab(harness, entries, control=True, sleep_ms=0.0, **settings):
            config_ = timing.TimingConfig(**{"rounds": 12, "max_seconds": 2.0, **settings})
            calls, ctrl = timing.case_calls(FAMILY.bench_call, entries, inputs, shape, "forward", config_.placements)
            if sleep_ms:   # a long neighbour that moves no memory: the GPU busy, its SMs spinning
                cycles = int(sleep_ms * 1.98e6)   # at the H200's 1,980 MHz top clock
                calls = {"sleep": (lambda: torch.cuda._sleep(cycles),) * config_.placements, **calls}
            started = time.perf_counter()
            case = timing.time_case(calls, moved, copy_gbs, shape.label, "forward", config_, dtype=dtype,
                                    control=ctrl if control else None)
            record(f"{harness} ({case.graph and 'graph' or 'eager'}, {time.perf_counter() - started:.1f} s)",
                   {v.variant: v.median_ms for v in case.variants if v.status == "ok"})

        if dtype == "bfloat16" and n == 16:   # kernel-ab's report put it at 35.4 us here, among these neighbours
            slow = [v for v in FAMILY.variants() if v.name in ("pointer_mutation", "flat")]
            kernel_ab("kernel-ab: pointer_mutation (2.7 ms) and flat (1 ms) in the rounds", slow + variants)
            kernel_ab("kernel-ab: pointer_mutation (2.7 ms) in the rounds", slow[:1] + variants)
            kernel_ab("kernel-ab: a 2.7 ms sleep in the rounds", variants, sleep_ms=2.7)
            kernel_ab("kernel-ab: a 0.3 ms sleep in the rounds", variants, sleep_ms=0.3)
        calls = {v.name: FAMILY.bench_call(v, inputs, shape, "forward") for v in variants}
        record("probe: graph, wait after each call", {k: time_ms(f, flush, 30) for k, f in calls.items()})
        record("probe harness, eager", {k: eager_ms(f, flush, 30) for k, f in calls.items()})
        kernel_ab("kernel-ab: both, A/A control, 3 placements", variants)
        kernel_ab("kernel-ab: each alone", [reread], control=False)
        kernel_ab("kernel-ab: each alone", [base], control=False)
        kernel_ab("kernel-ab: both, 1 placement", variants, placements=1)
        kernel_ab("kernel-ab: both, 1 call a round", variants, calls_per_round=1)
        kernel_ab("kernel-ab: both, eager", variants, graph="off")
        record("probe again: graph, wait after each call", {k: time_ms(f, flush, 30) for k, f in calls.items()})


if __name__ == "__main__":
    main()
