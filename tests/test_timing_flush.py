"""The L2 flush before each timed call reads its buffer: zeroing it (triton.testing.do_bench's way) left
L2 full of dirty lines that the timed call wrote back (reports/l2_flush)."""
import torch

from compare import timing


def test_the_l2_flush_reads_its_buffer_and_leaves_it_as_it_was():
    buffer = torch.arange(1, 4097, dtype=torch.int32)
    timing.flush_l2(buffer)
    assert torch.equal(buffer, torch.arange(1, 4097, dtype=torch.int32))


def test_the_method_line_says_the_flush_is_a_read():
    assert "flush before every call (a read" in timing.method_text(timing.TimingConfig())
