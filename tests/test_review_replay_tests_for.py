"""Which of a library's tests review records an op's calls from: those naming the op or a public wrapper
of it, however many steps away (in the op's own module too), the most pointed alone; a test of whole
models naming many far wrappers is not taken for the op's own."""
from __future__ import annotations

from compare.review import replay
from compare.review.replay import OpToReplay, wrappers_of

LIBRARY = {
    "lib/modules/norm_gate.py": '''
class NormGateFunction(torch.autograd.Function):
    pass

def norm_gated(x, g):
    return NormGateFunction.apply(x, g)

class FusedNormGated(nn.Module):
    def forward(self, x, g):
        return norm_gated(x, g)
''',
    "lib/layers/attention.py": '''
from lib.modules.norm_gate import FusedNormGated

class GatedAttention(nn.Module):
    def __init__(self):
        self.norm = FusedNormGated()

class _Private(nn.Module):
    norm = FusedNormGated
''',
    "lib/models/model.py": "from lib.layers.attention import GatedAttention\nclass Model:\n    layer = GatedAttention\n",
    "tests/modules/test_norm_gated.py": "from lib.modules import FusedNormGated\ndef test_norm(): FusedNormGated()\n",
    "tests/layers/test_all_layers.py": "from lib.layers.attention import GatedAttention\nfrom lib.models.model import Model\n",
    "tests/test_unrelated.py": "def test_nothing(): pass\n",
}


class FakeRepository:
    """The two methods tests_for and wrappers_of read: blob ids are the paths themselves."""

    def read(self, blobs):
        return {b: LIBRARY[b] for b in blobs}


FILES = {path: path for path in LIBRARY}
OP = OpToReplay("lib.modules.norm_gate:NormGateFunction", "NormGateFunction", "lib/modules/norm_gate.py",
                "lib.modules.norm_gate", "NormGateFunction.apply")


def test_wrappers_are_found_in_the_ops_own_module_and_beyond_with_their_steps_from_the_op():
    found = wrappers_of(FakeRepository(), FILES, OP)
    assert found == {"norm_gated": 1, "FusedNormGated": 2, "GatedAttention": 3}   # no private class, no test
    assert wrappers_of(FakeRepository(), FILES, OP, depth=1) == {"norm_gated": 1}


def test_the_test_naming_a_near_wrapper_is_taken_and_a_test_of_every_layer_is_not():
    wrappers = wrappers_of(FakeRepository(), FILES, OP)
    assert replay.tests_for(FakeRepository(), FILES, OP, wrappers) == ["tests/modules/test_norm_gated.py"]


def test_no_test_is_taken_where_none_names_the_op_or_a_near_wrapper():
    assert replay.tests_for(FakeRepository(), FILES, OP, {"GatedAttention": 3}) == []
