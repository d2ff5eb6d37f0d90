"""Export-time stand-ins for library functions whose only data-dependent step is an argument check.

F.gaussian_nll_loss raises when `torch.any(var < 0)`: a branch on tensor values that torch.export cannot trace,
although the loss itself is plain elementwise math and a mean. While a model is exported, `tracing()` swaps in a
copy of the function that keeps every shape check and the computation (clamp at eps, log, squared error / var,
the optional constant, the reduction) and drops the value check alone. `tracing()` also covers the dry run's
meta-tensor run of the user's model (a value check cannot read a meta tensor). The composed file's reference is
the user's code run by real PyTorch, so a negative variance still raises there.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F


def _gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * torch.ones_like(input)
    if var.size() != input.size():
        if input.size()[:-1] == var.size():
            var = torch.unsqueeze(var, -1)
        elif not (input.ndim == var.ndim
                  and sum(y for x, y in zip(input.size(), var.size()) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clamp(min=eps)  # exported under no_grad: the original clamps a clone in place without grad
    loss = 0.5 * (torch.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


SHIMS = {(F, "gaussian_nll_loss"): _gaussian_nll_loss}


@contextlib.contextmanager
def tracing() -> Iterator[None]:
    """The stand-ins installed for the duration of an export or a meta run, the originals restored afterwards."""
    saved = {key: getattr(*key) for key in SHIMS}
    try:
        for (owner, name), fn in SHIMS.items():
            setattr(owner, name, fn)
        yield
    finally:
        for (owner, name), fn in saved.items():
            setattr(owner, name, fn)
