"""The op in torch and its float64 reference (shared/specs/cross_entropy.md): the loss and the gradient
over the logits for an upstream gradient of 1, the pair every forward kernel of the family computes."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def cross_entropy_op(X, target, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    """The op with the family's canonical arguments, as torch computes it (the loss in X's dtype)."""
    return F.cross_entropy(X, target, ignore_index=ignore_index, label_smoothing=label_smoothing,
                           reduction=reduction)


def loss_and_gradient(X, target, ignore_index=-100, label_smoothing=0.0, reduction="mean", dtype=None):
    """(loss, dX) of the op through autograd, in `dtype` (default X's): dX for an upstream gradient of 1
    (per row for `none`), which is what a kernel writes over the logits."""
    x = X.detach().to(dtype or X.dtype).requires_grad_(True)
    loss = cross_entropy_op(x, target, ignore_index, label_smoothing, reduction)
    (dx,) = torch.autograd.grad(loss, (x,), torch.ones_like(loss))
    return loss.detach(), dx


def reference(X, target, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    """(loss, dX) in float64, from the logits as the kernels see them."""
    return loss_and_gradient(X, target, ignore_index, label_smoothing, reduction, torch.float64)
