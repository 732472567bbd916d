"""Does pointer_mutation's bfloat16 N32 C512 forward time follow where its inputs land? Times it (and
single_read_coop) with the inputs drawn at several places in device memory, in one process."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import torch  # noqa: E402

from compare.runtime.backend import configure  # noqa: E402

configure("cuda")
from compare.checks import harness, timing  # noqa: E402
from variants import registry  # noqa: E402
from variants.group_norm import FAMILY, Shape  # noqa: E402

reg = registry()
shape = Shape(32, 512, 32, (64, 64))
flush = torch.empty((256 << 20) // 4, dtype=torch.int32, device="cuda")
pads = []
for k in range(8):
    inputs = FAMILY.make_inputs(shape, torch.bfloat16, "cuda", 0)
    row = [f"placement {k}: x at {inputs.x.data_ptr() >> 20} MiB"]
    for name in ("pointer_mutation", "single_read_coop"):
        fn = harness.bench_call(FAMILY, reg.get(name), inputs, shape, "forward")
        t = sorted(timing._one_call_ms(fn, flush) for _ in range(7))
        row.append(f"{name} {t[3]:.3f} ms")
    print("; ".join(row), flush=True)
    del inputs
    pads.append(torch.empty((300 + 137 * k) << 20, dtype=torch.uint8, device="cuda"))
