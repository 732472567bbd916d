"""online: cross entropy with the gradient written over the logits, the row read twice.

Pass 1 keeps a running max and the sum of exp(x - max) rescaled whenever the max grows (online softmax),
with the sum of the logits for label smoothing; pass 2 the gradient (common.gradient_pass). It exists to
measure what one read of the row fewer than `two_pass` buys on LLM vocabularies (V up to 256k), and what
the rescaling costs in accuracy.
"""
import triton
import triton.language as tl

from variants.cross_entropy.common import gradient_pass, ignored_row, row_loss


@triton.jit
def cross_entropy_forward(X_ptr, X_row_stride, T_ptr, Loss_ptr, n_cols, n_valid, ignore_index, label_smoothing,
                          reduction: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = X_ptr + row * X_row_stride
    target = tl.load(T_ptr + row)
    if target == ignore_index:
        ignored_row(x_row, Loss_ptr, row, n_cols, BLOCK_SIZE)
    else:
        cols = tl.arange(0, BLOCK_SIZE)
        row_max = tl.full((), float("-inf"), tl.float32)
        row_sum = tl.zeros((), tl.float32)
        x_sum = tl.zeros((), tl.float32)
        smooth = label_smoothing / n_cols
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
            new_max = tl.maximum(row_max, tl.max(x, axis=0))
            # the first chunk always holds a logit, so new_max is finite there and exp(-inf - new_max) = 0
            row_sum = row_sum * tl.exp(row_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
            row_max = new_max
            x_sum += tl.sum(tl.where(mask, x, 0.0) * smooth, axis=0)
        tl.store(Loss_ptr + row, row_loss(x_row, target, row_max, row_sum, x_sum, label_smoothing))
        gradient_pass(x_row, target, row_max, row_sum, n_cols, n_valid, label_smoothing, reduction, BLOCK_SIZE)
