"""On a GPU: the IR comes from the kernels Triton launched, and the registers and spills read from
their cubins agree with what the launched kernels report (n_regs, n_spills)."""
import pytest

from compare.checks import ir
from compare.runtime.backend import configure
from variants import registry
from variants.group_norm import PRESETS

pytestmark = pytest.mark.gpu
BACKEND = configure("auto")


@pytest.mark.parametrize("preset", ["default", "seed512"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_registers_and_spills_agree_with_the_launched_kernel(preset, dtype):
    reg = registry()
    names = ["pointer_mutation", "explicit_offset", "explicit_offset_range", "pointer_mutation_tlrange", "flat"]
    s = ir.run(reg.family("group_norm"), [reg.get(n) for n in names], PRESETS[preset].shapes[0], dtype, gpu=True)
    assert s.mode == "launched"
    for v in s.variants:
        assert v.status == "ok", (v.variant, v.error)
        assert v.launched_registers > 0, v.variant
        assert (v.launched_registers, v.launched_spills) == (v.registers, v.spill_bytes // 4), v
    a, b = s.variants[:2]
    loops = lambda v: {l.path: l for l in next(x for x in v.stages if x.stage == "ttir").loops}
    assert max(l.carried_pointers for l in loops(a).values()) == 2
    assert max(l.carried_pointers for l in loops(b).values()) == 0
