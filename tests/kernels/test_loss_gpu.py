"""Loss family on the GPU: each loss/reduction variant on three shapes (unaligned ones included, large ones to
exercise the two-stage reduction) in float32/float16/bfloat16, checked against the float64 reference with poisoned
outputs. Targets are drawn from their valid domain (class indices, probabilities, signs, positive values)."""

from __future__ import annotations

import pytest

from .helpers import case_ids, run_check
from .helpers_indexed import DT, forward, gpu_cases, make_inputs, shape_str, snippet_spec

pytestmark = pytest.mark.gpu
CHECK = None  # checking.check_kernel; swapped for the CPU emulator when validating this file without a GPU

PAIR_SHAPES = [(13, 37), (1000, 1025), (1,)]
SUM_SHAPES = [(13, 37), (60, 257), (1,)]  # sums of ~1e6 elements overflow float16 outputs (as in PyTorch)


def _pair(shape, dt, extra=""):
    s = shape_str(shape)
    return f"torch.randn({s}){dt}, torch.randn({s}){dt}{extra}"


def _classes(shape, dt, weight=False):
    n, c, *d = shape
    tshape = shape_str([n] + d)
    w = f", torch.rand({c}){dt}" if weight else ""
    return f"torch.randn({shape_str(shape)}){dt}, torch.randint(0, {c}, ({tshape},)){w}"


# name → (forward expression, args, input builder (shape, dt) → str, make_input kwargs (shape → dict), shapes)
VARIANTS = {
    "mse_mean": ("F.mse_loss(x, y)", "x, y", _pair, lambda s: {}, PAIR_SHAPES),
    "mse_sum": ("F.mse_loss(x, y, reduction='sum')", "x, y", _pair, lambda s: {}, SUM_SHAPES),
    "mse_none_scaled": ("F.mse_loss(x, y, reduction='none') * 2", "x, y", _pair, lambda s: {}, PAIR_SHAPES),
    "l1": ("F.l1_loss(x, y)", "x, y", _pair, lambda s: {}, PAIR_SHAPES),
    "smooth_l1": ("F.smooth_l1_loss(x, y, beta=0.5)", "x, y", _pair, lambda s: {}, PAIR_SHAPES),
    "huber_sum": ("F.huber_loss(x, y, reduction='sum', delta=1.5)", "x, y", _pair, lambda s: {}, SUM_SHAPES),
    "kl_div_batchmean": ("F.kl_div(torch.log(x), y, reduction='batchmean')", "x, y", _pair,
                         lambda s: {"positive": ("x", "y")}, PAIR_SHAPES),
    "kl_div_log_target": ("F.kl_div(x, y, reduction='mean', log_target=True)", "x, y", _pair, lambda s: {},
                          PAIR_SHAPES),
    "hinge_embedding": ("F.hinge_embedding_loss(x, y)", "x, y", _pair, lambda s: {"signs": ("y",)}, PAIR_SHAPES),
    "bce": ("F.binary_cross_entropy(torch.sigmoid(x), y)", "x, y", _pair, lambda s: {"probs": ("y",)},
            PAIR_SHAPES),
    "bce_logits_pos_weight": ("F.binary_cross_entropy_with_logits(x, y, pos_weight=z)", "x, y, z",
                              lambda s, dt: _pair(s, dt, f", torch.rand({s[-1]}){dt}"),
                              lambda s: {"probs": ("y",), "positive": ("z",)}, PAIR_SHAPES),
    "margin_ranking": ("F.margin_ranking_loss(x, y, z, margin=0.3)", "x, y, z",
                       lambda s, dt: _pair(s, dt, f", torch.randn({shape_str(s)}){dt}"),
                       lambda s: {"signs": ("z",)}, [(37,), (100003,), (1,)]),
    "soft_margin": ("F.soft_margin_loss(x, y)", "x, y", _pair, lambda s: {"signs": ("y",)}, PAIR_SHAPES),
    "poisson_nll": ("F.poisson_nll_loss(x, y)", "x, y", _pair, lambda s: {"positive": ("y",)}, PAIR_SHAPES),
    "cross_entropy": ("F.cross_entropy(x, y)", "x, y", _classes, lambda s: {"int_ranges": {"y": (0, s[1])}},
                      [(20, 10), (2048, 5003), (1, 1)]),
    "cross_entropy_nd_ignore": ("F.cross_entropy(x, y, ignore_index=1)", "x, y", _classes,
                                lambda s: {"int_ranges": {"y": (0, s[1])}}, [(3, 5, 4, 2), (8, 21, 64, 65),
                                                                             (1, 3, 1)]),
    "cross_entropy_weight_smoothing": ("F.cross_entropy(x, y, weight=z, label_smoothing=0.1)", "x, y, z",
                                       lambda s, dt: _classes(s, dt, True),
                                       lambda s: {"int_ranges": {"y": (0, s[1])}, "positive": ("z",)},
                                       [(6, 37), (1000, 1000), (1, 2)]),
    # rows off 16 bytes (flat tiles, loss_ce.flat_rows): GPT-2's vocabulary, with class weights and an ignored class;
    # odd row counts (not a multiple of 16 logits in all: the last flat tile gathered)
    "cross_entropy_vocab_weight_ignore": ("F.cross_entropy(x, y, weight=z, ignore_index=3)", "x, y, z",
                                          lambda s, dt: _classes(s, dt, True),
                                          lambda s: {"int_ranges": {"y": (0, s[1])}, "positive": ("z",)},
                                          [(16, 2053), (512, 50257), (64, 50257), (511, 50257), (7, 50257)]),
    "cross_entropy_none": ("F.cross_entropy(x, y, reduction='none')", "x, y", _classes,
                           lambda s: {"int_ranges": {"y": (0, s[1])}}, [(9, 10), (4096, 333), (1, 1)]),
    "nll_weight_sum": ("F.nll_loss(x, y, weight=z, reduction='sum')", "x, y, z",
                       lambda s, dt: _classes(s, dt, True), lambda s: {"int_ranges": {"y": (0, s[1])},
                                                                       "positive": ("z",)},
                       [(7, 5), (5000, 1000), (1, 1)]),
    "nll_mean": ("F.nll_loss(F.log_softmax(x, 1), y)", "x, y", _classes,
                 lambda s: {"int_ranges": {"y": (0, s[1])}}, [(15, 7), (3000, 100), (1, 2)]),
    "cosine_similarity": ("F.cosine_similarity(x, y)", "x, y", _pair, lambda s: {}, [(14, 100), (4096, 777),
                                                                                      (1, 1)]),
    "cosine_similarity_rsub": ("1 - F.cosine_similarity(x, y, dim=0)", "x, y", _pair, lambda s: {},
                               [(30, 5), (3000, 65), (2, 1)]),
    "pairwise_distance": ("F.pairwise_distance(x, y)", "x, y", _pair, lambda s: {}, [(6, 20), (2000, 513),
                                                                                      (1, 1)]),
    "triplet": ("F.triplet_margin_loss(x, y, z)", "x, y, z", lambda s, dt: _pair(s, dt, f", torch.randn("
                                                                                    f"{shape_str(s)}){dt}"),
                lambda s: {}, [(10, 50), (3000, 257), (1, 3)]),
    "triplet_swap_p1_none": ("F.triplet_margin_loss(x, y, z, p=1.0, swap=True, reduction='none')", "x, y, z",
                             lambda s, dt: _pair(s, dt, f", torch.randn({shape_str(s)}){dt}"),
                             lambda s: {}, [(10, 50), (3000, 257), (1, 3)]),
    "cosine_embedding": ("F.cosine_embedding_loss(x, y, z, margin=0.2)", "x, y, z",
                         lambda s, dt: _pair(s, dt, f", torch.randn({s[0]}){dt}"), lambda s: {"signs": ("z",)},
                         [(8, 21), (3000, 300), (1, 1)]),
}
CORE = {"mse_mean", "cross_entropy", "cross_entropy_nd_ignore", "cosine_similarity", "triplet"}
CASES = gpu_cases({name: v[4] for name, v in VARIANTS.items()}, CORE)
IDS = case_ids(CASES)


@pytest.mark.parametrize("name,shape,dtype", CASES, ids=IDS)
def test_loss_kernel_matches_reference(name, shape, dtype):
    expr, args, build, kw, _ = VARIANTS[name]
    spec = snippet_spec(forward(expr, args), f"[{build(shape, DT[dtype])}]", "loss")
    result = run_check(spec, make_inputs(**kw(shape)), CHECK)
    assert result.ok, result.message


STRIDED = [("mse_mean", (1000, 1025), "float32"), ("cross_entropy", (2048, 5003), "float16"),
           ("cosine_similarity", (4096, 777), "bfloat16"), ("triplet", (3000, 257), "float32")]


@pytest.mark.parametrize("name,shape,dtype", STRIDED, ids=[s[0] for s in STRIDED])
def test_loss_kernel_strided_inputs(name, shape, dtype):
    """Operands as non-contiguous views (dims stored in reverse order)."""
    expr, args, build, kw, _ = VARIANTS[name]
    spec = snippet_spec(forward(expr, args), f"[{build(shape, DT[dtype])}]", "loss")
    result = run_check(spec, make_inputs(strided=True, **kw(shape)), CHECK)
    assert result.ok, result.message


CLASS_LOOP = [("cross_entropy", (2048, 5003), "bfloat16"), ("cross_entropy", (20, 10), "float32"),
              ("cross_entropy", (1, 1), "float16"), ("cross_entropy_none", (4096, 333), "float32"),
              ("cross_entropy", (64, 65536), "bfloat16"), ("cross_entropy_weight_smoothing", (1000, 1000), "float16")]
CE_KNOBS = {"lane_max": {"ce_lane_max": True}, "exp_no_ftz": {"ce_exp_ftz": False}}  # the default: exp_ftz


@pytest.mark.parametrize("knobs", sorted(CE_KNOBS))
@pytest.mark.parametrize("name,shape,dtype", CLASS_LOOP, ids=case_ids(CLASS_LOOP))
def test_cross_entropy_class_loop_variants(name, shape, dtype, knobs, monkeypatch):
    """MEMORY_TUNING["ce_lane_max"] (off: per-lane running maxima and sums) and ["ce_exp_ftz"] turned off (the
    exponentials' denormal range kept) in the class loop; the default runs in test_loss_kernel_matches_reference."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    for key, value in CE_KNOBS[knobs].items():
        monkeypatch.setitem(MEMORY_TUNING, key, value)
    expr, args, build, kw, _ = VARIANTS[name]
    spec = snippet_spec(forward(expr, args), f"[{build(shape, DT[dtype])}]", "loss")
    result = run_check(spec, make_inputs(**kw(shape)), CHECK)
    assert result.ok, result.message
