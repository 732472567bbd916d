"""The op as libraries ship it: an autograd Function whose forward runs a kernel over the logits themselves
(no copy: X holds the gradient afterwards) and whose backward scales that buffer in place.

Not a registered variant (those get a copy of X from their launcher); load it with --variant to time the
kernels as training runs them (docs/variants-and-families.md, "cross_entropy")."""
from __future__ import annotations

import torch

from variants.cross_entropy import common, online, two_pass


class _InPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, kernel, X, target, ignore_index, label_smoothing, reduction):
        x = X.detach()   # the kernel writes the gradient here: the caller's logits are spent
        loss = common.launch(kernel, x, target, ignore_index, label_smoothing, reduction)
        ctx.save_for_backward(x)
        ctx.per_row = reduction == "none"
        return loss

    @staticmethod
    def backward(ctx, dloss):
        (grad,) = ctx.saved_tensors
        scale = dloss[:, None] if ctx.per_row else dloss
        # through .data, as a Triton kernel writes it: autograd sees no in-place op on the saved buffer, so
        # the graph may run backward again (training does not, timing does; an in-place torch op fails it)
        grad.data.mul_(scale.to(grad.dtype))
        return None, grad, None, None, None, None


def online_cross_entropy(X, target, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    """The online kernel in place: `--variant online_op=variants/cross_entropy/inplace_op.py::online_cross_entropy`."""
    return _InPlace.apply(online.cross_entropy_forward, X, target, ignore_index, label_smoothing, reduction)


def two_pass_cross_entropy(X, target, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    return _InPlace.apply(two_pass.cross_entropy_forward, X, target, ignore_index, label_smoothing, reduction)
