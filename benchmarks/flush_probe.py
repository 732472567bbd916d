"""Does the L2 flush before a timed call charge that call with work of its own? (GPU only, one call.)

Zeroing a buffer larger than L2 (what triton.testing.do_bench does, and kernel-ab did) evicts L2 but
leaves it full of dirty lines, which the next call writes back to device memory as its own misses evict
them; reading the buffer evicts L2 and leaves clean lines. Times a copy, a read-only pass (an amax) and
single_read_coop's launch on the image preset, float32 and bfloat16, after each flush, with the same
inputs every call and with 3 input sets in turn (a kernel that left its input in L2 across the flush
would be faster on the same inputs). CUDA graph replays, CUDA events, median of 30.

    python3 benchmarks/flush_probe.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main():
    print("$ python3 benchmarks/flush_probe.py " + " ".join(sys.argv[1:]), flush=True)
    import torch
    import compare.backend as backend
    backend.configure("cuda")
    from benchmarks.coop_probe import chosen, shapes, time_ms
    from benchmarks.roofline_probe import make_case
    from compare.timing import flush_l2
    from variants.group_norm import FAMILY
    from variants.group_norm.single_read_coop import launch_with
    buffer = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    flushes = {"zeroing": buffer.zero_, "reading": lambda: flush_l2(buffer)}
    print(f"GPU {torch.cuda.get_device_name()}, L2 {torch.cuda.get_device_properties(0).L2_cache_size >> 20} MiB")
    for shape in shapes()[3:]:
        for dtype in ("bfloat16", "float32"):
            sets = [make_case(shape, dtype) for _ in range(3)]
            config = chosen(shape, dtype)
            made = {
                "copy": lambda i, o: (lambda: o["y"].copy_(i.x)),
                "read only (amax)": lambda i, o: (lambda: i.x.view(torch.int16 if i.x.element_size() == 2
                                                                   else torch.int32).amax()),
                f"single_read_coop ({config.label})": lambda i, o: (lambda: launch_with(config, i, o, shape)),
            }
            moved = FAMILY.bytes_moved(shape, getattr(torch, dtype), "forward")
            for what, make in made.items():
                for name, flush in flushes.items():
                    same = round(time_ms([make(*sets[0])], flush, 30) * 1e3, 1)
                    rotated = round(time_ms([make(*s) for s in sets], flush, 30) * 1e3, 1)
                    print(json.dumps(dict(shape=shape.label, dtype=dtype, what=what, flush=name, same_inputs_us=same,
                                          three_input_sets_us=rotated, forward_mb=round(moved / 1e6, 1))), flush=True)


if __name__ == "__main__":
    main()
