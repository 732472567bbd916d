"""The copy-bandwidth ceiling a timed case is judged against (the floor under any variant's time)."""
from __future__ import annotations

import torch

from compare.runtime.device_busy import median_ms


def copy_bandwidth_gbs(nbytes: int = 1 << 30, repeats: int = 10) -> float:
    """A large device-to-device copy, in GB/s counting bytes read plus written: the memory ceiling."""
    # varied bytes without the CUDA generator (a failed graph capture earlier in the process can leave it
    # refusing offsets: "Offset increment outside graph capture")
    src = torch.arange(nbytes // 4, dtype=torch.int32, device="cuda").view(torch.uint8)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    ms = median_ms(lambda: dst.copy_(src), repeats)
    del src, dst
    return 2 * nbytes / (ms * 1e-3) / 1e9
