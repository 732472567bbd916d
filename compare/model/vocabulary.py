"""The words every stage shares, stated once: the checks a comparison runs, the passes it times, the
compiled code's stages and their titles, and the facts and name of each floating-point dtype kernel-ab reads.

Free of torch and of the families, so that the result model and the renderers can read it; the passes a
family times (`MODES`) are the family protocol's own list (variants.variant), imported from there by the
layers above variants."""
from __future__ import annotations

NUMERICS, BACKWARD, TIMING, IR = "numerics", "backward", "timing", "ir"   # the --check words, tested by these names
CHECKS = (NUMERICS, BACKWARD, TIMING, IR)   # what `--check` names; numerics is the forward pass
STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")
STAGE_TITLES = {"ttir": "TTIR", "ttgir": "TTGIR", "llir": "LLIR", "ptx": "PTX", "sass": "SASS"}
TEXT_STAGES = STAGES[:4]   # the ones Triton's compiler keeps as text; SASS is disassembled from the cubin
# explicit mantissa bits and smallest normal exponent of each dtype, for units in the last place
MANTISSA_BITS = {"float32": 23, "float16": 10, "bfloat16": 7, "float64": 52}
MIN_NORMAL_EXPONENT = {"float32": -126, "float16": -14, "bfloat16": -126, "float64": -1022}

DEFAULT_NOISE = 0.01   # the timing verdict's noise band, a fraction (--noise)
CONFIDENCE = 0.95   # the timing verdict's interval: of a ratio, paired bootstrap over rounds


def dtype_name(dtype) -> str:
    """A torch dtype as kernel-ab's words and report.json say it: torch.float32 -> 'float32'."""
    return str(dtype).removeprefix("torch.")
