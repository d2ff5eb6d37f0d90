"""Loss kernels: pointwise losses, class-index losses (cross entropy, NLL) and row losses (cosine similarity,
pairwise distance, triplet margin, cosine embedding), with fused elementwise prologues and epilogues.

Three shapes of computation:
- pointwise (mse, l1, smooth_l1, huber, kl_div, hinge_embedding, binary_cross_entropy[_with_logits],
  margin_ranking, soft_margin, poisson_nll): one loss value per element of the broadcast operand shape. Operands
  with the full shape are read as flat coalesced tiles (`ct.load` on a 1-D view); broadcast ones are gathered by
  coordinates.
- class losses (cross_entropy_loss, nll_loss, nll_loss_nd, nll_loss2d): one value per sample; the input is viewed
  as (N, C, spatial...), a block owns BR samples and walks the classes in BC chunks with an online log-sum-exp
  (cross entropy; plain (N, C) logits come in as coalesced `ct.load` tiles, other layouts by coordinates), or
  gathers x[n, target, s] directly (NLL). weight, ignore_index and label_smoothing follow PyTorch (the mean divides
  by the summed weights of the non-ignored samples). Class-probability targets are unsupported.
- row losses: a block owns BR rows of the broadcast operands and walks the reduced dim in BD chunks,
  accumulating dot products / norms in float32.

Reductions (0 none, 1 mean, 2 sum) to a scalar are deterministic and two-stage: every block writes its float32
partial sums (loss, and the weight total for class losses) to a buffer; one finishing block adds them in a fixed
order, divides for the mean, applies the fused epilogue and stores. When one block covers everything, a single
kernel does both stages.

Modules: loss_plan (bound arguments, operand values), loss_output (stores, two-stage reduction, wrapper),
loss_pointwise, loss_ce (class-index losses), loss_rows; this one dispatches on the loss op.
"""

from __future__ import annotations

from ..specs import KernelSpec
from .base import KernelSource, Unsupported
from .indexing import guarded, split_anchor
from .loss_ce import class_loss
from .loss_plan import LossPlan
from .loss_pointwise import pointwise_loss
from .loss_rows import row_loss

POINTWISE = {"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "hinge_embedding_loss",
             "binary_cross_entropy", "binary_cross_entropy_with_logits", "margin_ranking_loss", "soft_margin_loss",
             "poisson_nll_loss"}
CLASS = {"cross_entropy_loss", "nll_loss", "nll_loss_nd", "nll_loss2d"}
ROWS = {"cosine_similarity", "pairwise_distance", "triplet_margin_loss", "cosine_embedding_loss"}


@guarded
def generate(spec: KernelSpec) -> KernelSource:
    prologue, rec, epilogue = split_anchor(spec, "loss")
    plan = LossPlan(spec, prologue, rec, epilogue)
    if rec.op in POINTWISE:
        return pointwise_loss(plan)
    if rec.op in CLASS:
        return class_loss(plan)
    if rec.op in ROWS:
        return row_loss(plan)
    raise Unsupported(f"{rec.target}: no loss generator for this op")
