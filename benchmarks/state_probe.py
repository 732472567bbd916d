"""Does what ran earlier in the process change a kernel's time? (GPU only, one call of about 2 minutes.)

kernel-ab's report timed the bfloat16 image cases of the kernels that lean on L2 hits slower when torch
and inductor had timed the float32 image cases earlier in the same process (reports/timing_order_effect/): pointer_mutation 1.19 to 2.65 ms and single_read_coop's read-again
slices 29.2 to 35.8 us on N16 C320, slices held in registers unmoved. This takes the run apart: it
times those three kernels on bfloat16 N16 C320 (the probe's harness: CUDA graph, L2 flushed by a read,
median of 30) in a fresh process, then again after each step that kernel-ab's run took or could take:
torch's float32 image cases timed as kernel-ab times them, inductor's, Python's garbage collection
with the allocator's cache emptied, dynamo's caches reset. The step after which the times move is
where the state comes from; device memory in use is printed with each line.

    python3 benchmarks/state_probe.py
"""
from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

IMAGE = ((16, 320, 32, (64, 64)), (32, 512, 32, (64, 64)))


def main():
    print("$ python3 benchmarks/state_probe.py " + " ".join(sys.argv[1:]), flush=True)
    import torch
    import compare.backend as backend
    backend.configure("cuda")
    from benchmarks.coop_probe import time_ms
    from compare import timing
    from variants.group_norm import FAMILY, Shape
    from variants.group_norm.coop_launch import SPLIT_BLOCK, SPLIT_REGISTERS, SPLIT_WARPS, Config
    from variants.group_norm.single_read_coop import launch_with
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    by_name = {v.name: v for v in FAMILY.variants()}
    shape = Shape(16, 320, 32, (64, 64))
    inputs = FAMILY.make_inputs(shape, torch.bfloat16, "cuda", 0)
    outputs = FAMILY.alloc_outputs(shape, torch.bfloat16, "cuda")
    held = Config(SPLIT_BLOCK, SPLIT_WARPS, split=True, max_registers=SPLIT_REGISTERS[2])
    kernels = {
        "pointer_mutation": lambda: by_name["pointer_mutation"].run(inputs, outputs, shape),
        "read again": lambda: by_name["single_read_coop_reread"].run(inputs, outputs, shape),
        "held": lambda: launch_with(held, inputs, outputs, shape),
    }

    def measure(after: str):
        row = {"after": after, **{k: round(time_ms(f, flush, 30) * 1e3, 1) for k, f in kernels.items()},
               "allocated_mib": torch.cuda.memory_allocated() >> 20, "reserved_mib": torch.cuda.memory_reserved() >> 20}
        print(json.dumps(row), flush=True)

    def time_float32_image(name: str):
        config = timing.TimingConfig(rounds=12, max_seconds=2.0)
        copy_gbs = 4200.0   # the % of copy is not read here
        for n, c, g, s in IMAGE:
            case_shape = Shape(n, c, g, s)
            case_inputs = FAMILY.make_inputs(case_shape, torch.float32, "cuda", 0)
            calls, control = timing.case_calls(FAMILY.bench_call, [by_name["pointer_mutation"], by_name[name]],
                                               case_inputs, case_shape, "forward", config.placements)
            timing.time_case(calls, FAMILY.bytes_moved(case_shape, torch.float32, "forward"), copy_gbs,
                             case_shape.label, "forward", config, dtype="float32", control=control)
            del calls, control, case_inputs
            torch.cuda.empty_cache()   # as compare.timing_run.run_timing does after each shape

    measure("a fresh process")
    measure("a fresh process, again")
    time_float32_image("torch")
    measure("torch's float32 image cases")
    time_float32_image("inductor")
    measure("inductor's float32 image cases")
    gc.collect()
    torch.cuda.empty_cache()
    measure("gc.collect() and torch.cuda.empty_cache()")
    torch._dynamo.reset()
    gc.collect()
    torch.cuda.empty_cache()
    measure("torch._dynamo.reset()")


if __name__ == "__main__":
    main()
