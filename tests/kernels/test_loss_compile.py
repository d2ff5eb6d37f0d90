"""Loss family (CPU; corpus specs: test_corpus_compile.py): one snippet per loss/reduction variant generates, trace and compile
ahead of time for sm_90 and sm_100; the snippets are also executed by the CPU emulator against their references."""

from __future__ import annotations

import pytest

from .cutile_emulator import check_emulated
from .helpers import compile_spec
from .helpers_indexed import forward, make_inputs, snippet_spec

FAMILY = "loss"
XY = "x, y"
XYZ = "x, y, z"

# name → (forward body, inputs, make_input kwargs)
CASES = {
    "mse_mean": (forward("F.mse_loss(x, y)", XY), "[torch.randn(13, 37), torch.randn(13, 37)]", {}),
    "mse_sum_large": (forward("F.mse_loss(x, y, reduction='sum')", XY),
                      "[torch.randn(300, 301), torch.randn(300, 301)]", {}),
    "mse_none_epilogue": (forward("F.mse_loss(x, y, reduction='none') * 2", XY),
                          "[torch.randn(3, 5), torch.randn(3, 5)]", {}),
    "l1_fp16": (forward("F.l1_loss(x, y)", XY), "[torch.randn(7, 33).half(), torch.randn(7, 33).half()]", {}),
    "smooth_l1_bf16": (forward("F.smooth_l1_loss(x, y, beta=0.3)", XY),
                       "[torch.randn(9, 21).to(torch.bfloat16), torch.randn(9, 21).to(torch.bfloat16)]", {}),
    "huber_none": (forward("F.huber_loss(x, y, reduction='none', delta=0.7)", XY),
                   "[torch.randn(3, 50), torch.randn(3, 50)]", {}),
    "kl_div_prologue": (forward("F.kl_div(torch.log(x), y, reduction='batchmean')", XY),
                        "[torch.rand(6, 19) + 0.1, torch.rand(6, 19) + 0.1]", {"positive": ("x", "y")}),
    "kl_div_log_target": (forward("F.kl_div(x, y, reduction='sum', log_target=True)", XY),
                          "[torch.randn(5, 9), torch.randn(5, 9)]", {}),
    "hinge_embedding": (forward("F.hinge_embedding_loss(x, y, margin=0.5)", XY),
                        "[torch.randn(17, 3), torch.randn(17, 3).sign()]", {"signs": ("y",)}),
    "bce_sigmoid_prologue": (forward("F.binary_cross_entropy(torch.sigmoid(x), y)", XY),
                             "[torch.randn(3, 25), torch.rand(3, 25)]", {"probs": ("y",)}),
    "bce_logits_sum": (forward("F.binary_cross_entropy_with_logits(x, y, reduction='sum')", XY),
                       "[torch.randn(4, 45), torch.rand(4, 45)]", {"probs": ("y",)}),
    "bce_logits_pos_weight": (forward("F.binary_cross_entropy_with_logits(x, y, pos_weight=z)", XYZ),
                              "[torch.randn(4, 45), torch.rand(4, 45), torch.rand(45) + 0.5]",
                              {"probs": ("y",), "positive": ("z",)}),
    "margin_ranking": (forward("F.margin_ranking_loss(x, y, z, margin=0.3)", XYZ),
                       "[torch.randn(37), torch.randn(37), torch.randn(37).sign()]", {"signs": ("z",)}),
    "soft_margin": (forward("F.soft_margin_loss(x, y)", XY), "[torch.randn(3, 50), torch.randn(3, 50).sign()]",
                    {"signs": ("y",)}),
    "poisson_nll": (forward("F.poisson_nll_loss(x, y)", XY), "[torch.randn(3, 50), torch.rand(3, 50) * 3]",
                    {"positive": ("y",)}),
    "cross_entropy_nd_ignore": (forward("F.cross_entropy(x, y, ignore_index=1)", XY),
                                "[torch.randn(3, 5, 4, 2), torch.randint(0, 5, (3, 4, 2))]",
                                {"int_ranges": {"y": (0, 5)}}),
    "cross_entropy_weight_smoothing": (forward("F.cross_entropy(x, y, weight=z, label_smoothing=0.1)", XYZ),
                                       "[torch.randn(6, 37), torch.randint(0, 37, (6,)), torch.rand(37) + 0.1]",
                                       {"int_ranges": {"y": (0, 37)}, "positive": ("z",)}),
    "cross_entropy_many_classes_fp16": (forward("F.cross_entropy(x, y)", XY),
                                        "[torch.randn(5, 1500).half(), torch.randint(0, 1500, (5,))]",
                                        {"int_ranges": {"y": (0, 1500)}}),
    "cross_entropy_weight_ignore_2d": (forward("F.cross_entropy(x, y, weight=z, ignore_index=2)", XYZ),
                                       "[torch.randn(37, 2500), torch.randint(0, 2500, (37,)), torch.rand(2500) + 0.1]",
                                       {"int_ranges": {"y": (0, 4)}, "positive": ("z",)}),
    "cross_entropy_none_bf16_2d": (forward("F.cross_entropy(x, y, reduction='none')", XY),
                                   "[torch.randn(6, 3000).to(torch.bfloat16), torch.randint(0, 3000, (6,))]",
                                   {"int_ranges": {"y": (0, 3000)}}),
    "cross_entropy_none_scaled": (forward("F.cross_entropy(x / 2.0, y, reduction='none')", XY),
                                  "[torch.randn(9, 10), torch.randint(0, 10, (9,))]",
                                  {"int_ranges": {"y": (0, 10)}}),
    "cross_entropy_many_rows": (forward("F.cross_entropy(x, y, reduction='sum')", XY),
                                "[torch.randn(700, 12), torch.randint(0, 12, (700,))]",
                                {"int_ranges": {"y": (0, 12)}}),
    # rows off 16-byte alignment read as aligned tiles of the flat logits (loss_ce.flat_rows)
    "cross_entropy_flat_rows_weight_ignore": (forward("F.cross_entropy(x, y, weight=z, ignore_index=2)", XYZ),
                                              "[torch.randn(16, 2053), torch.randint(0, 2053, (16,)), "
                                              "torch.rand(2053) + 0.1]",
                                              {"int_ranges": {"y": (0, 4)}, "positive": ("z",)}),
    "cross_entropy_flat_rows_bf16_sum": (forward("F.cross_entropy(x, y, reduction='sum')", XY),
                                         "[torch.randn(16, 2053).to(torch.bfloat16), torch.randint(0, 2053, (16,))]",
                                         {"int_ranges": {"y": (0, 2053)}}),
    # 15 x 2053 logits, not a multiple of 16 in all: the last flat tile is gathered (loss_ce._tail_load), the
    # last row's target among its last classes
    "cross_entropy_flat_rows_tail_fp16": (forward("F.cross_entropy(x, y, reduction='none')", XY),
                                          "[torch.randn(15, 2053).half(), torch.randint(0, 2053, (15,))]",
                                          {"int_ranges": {"y": (2040, 2053)}}),
    "nll_weight_sum": (forward("F.nll_loss(x, y, weight=z, reduction='sum')", XYZ),
                       "[torch.randn(7, 5), torch.randint(0, 5, (7,)), torch.rand(5)]",
                       {"int_ranges": {"y": (0, 5)}, "positive": ("z",)}),
    "nll_2d_ignore": (forward("F.nll_loss(x, y, ignore_index=2)", XY),
                      "[torch.randn(3, 5, 4, 2), torch.randint(0, 5, (3, 4, 2))]", {"int_ranges": {"y": (0, 5)}}),
    "cosine_similarity_dim0": (forward("F.cosine_similarity(x, y, dim=0)", XY),
                               "[torch.randn(30, 5), torch.randn(30, 5)]", {}),
    "cosine_similarity_broadcast": (forward("F.cosine_similarity(x, y, dim=-1)", XY),
                                    "[torch.randn(2, 3, 700), torch.randn(3, 700)]", {}),
    "pairwise_distance_keepdim": (forward("F.pairwise_distance(x, y, p=3.0, keepdim=True)", XY),
                                  "[torch.randn(6, 20), torch.randn(6, 20)]", {}),
    "triplet_swap_p1_sum": (forward("F.triplet_margin_loss(x, y, z, p=1.0, swap=True, reduction='sum')", XYZ),
                            "[torch.randn(9, 33), torch.randn(9, 33), torch.randn(9, 33)]", {}),
    "triplet_none_fp16": (forward("F.triplet_margin_loss(x, y, z, reduction='none')", XYZ),
                          "[torch.randn(9, 33).half(), torch.randn(9, 33).half(), torch.randn(9, 33).half()]", {}),
    "cosine_embedding": (forward("F.cosine_embedding_loss(x, y, z, margin=0.2)", XYZ),
                         "[torch.randn(8, 21), torch.randn(8, 21), torch.randn(8).sign()]", {"signs": ("z",)}),
}
BOTH_ARCHES = {"mse_sum_large", "cross_entropy_nd_ignore", "triplet_swap_p1_sum"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_variant_compiles_and_emulates(name):
    body, inputs, kw = CASES[name]
    spec = snippet_spec(body, inputs, FAMILY)
    source = compile_spec(spec, ("sm_90", "sm_100") if name in BOTH_ARCHES else ("sm_90",))
    result = check_emulated(spec, source, make_input=make_inputs(**kw))
    assert result.ok, result.message


def test_large_reductions_are_two_stage():
    from tilestudio.core.kernels import generate_kernel

    spec = snippet_spec(*CASES["mse_sum_large"][:2], FAMILY)
    source = generate_kernel(spec)
    assert source.kernel_names == [f"{spec.id}_partial", f"{spec.id}_finish"]
    assert "atomic" not in source.code


def test_unsupported_losses_become_skeletons():
    from tilestudio.core.kernels import generate_kernel

    spec = snippet_spec(forward("F.cross_entropy(x, y)", XY), "[torch.randn(3, 5), torch.rand(3, 5)]", FAMILY)
    source = generate_kernel(spec)
    assert source.skeleton and "class-probability" in source.notes[0]


@pytest.mark.parametrize("name", ["mse_mean", "cross_entropy_weight_smoothing", "cross_entropy_nd_ignore",
                                  "cross_entropy_weight_ignore_2d", "cross_entropy_many_classes_fp16",
                                  "cosine_similarity_broadcast", "triplet_swap_p1_sum", "bce_logits_pos_weight"])
def test_loss_strided_inputs(name):
    """Non-contiguous operands (flattened by the wrapper or read through their strides)."""
    body, inputs, kw = CASES[name]
    spec = snippet_spec(body, inputs, FAMILY)
    result = check_emulated(spec, compile_spec(spec, ("sm_90",)), make_input=make_inputs(strided=True, **kw))
    assert result.ok, result.message


@pytest.mark.parametrize("name", ["cross_entropy_many_classes_fp16", "cross_entropy_many_rows"])
def test_cross_entropy_load_latency_hint(name, monkeypatch):
    """MEMORY_TUNING["ce_latency"]: the plain-logits chunk loop's loads carry the latency hint; same values."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "ce_latency", 10)
    body, inputs, kw = CASES[name]
    spec = snippet_spec(body, inputs, FAMILY)
    source = compile_spec(spec, ("sm_90",))
    assert "padding_mode=ct.PaddingMode.NEG_INF, latency=10)" in source.code
    result = check_emulated(spec, source, make_input=make_inputs(**kw))
    assert result.ok, result.message


CE_KNOBS = {"lane_max": {"ce_lane_max": True, "ce_exp_ftz": False}, "exp_ftz": {"ce_exp_ftz": True},
            "lane_max_exp_ftz": {"ce_lane_max": True, "ce_exp_ftz": True}, "exp_no_ftz": {"ce_exp_ftz": False}}


@pytest.mark.parametrize("knobs", sorted(CE_KNOBS))
@pytest.mark.parametrize("name", ["cross_entropy_many_classes_fp16", "cross_entropy_many_rows",
                                  "cross_entropy_weight_ignore_2d", "cross_entropy_none_bf16_2d",
                                  "cross_entropy_weight_smoothing", "cross_entropy_nd_ignore",
                                  "cross_entropy_flat_rows_weight_ignore"])
def test_cross_entropy_class_loop_variants(name, knobs, monkeypatch):
    """MEMORY_TUNING["ce_lane_max"] (off: per-lane running maxima and sums, one exponential per logit, the lanes
    meet once per row; plain logits only) and ["ce_exp_ftz"] (on: exponentials flushing denormal results), each
    way: logits scaled past float32's exp range and a -inf class column still match."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    for key, value in CE_KNOBS[knobs].items():
        monkeypatch.setitem(MEMORY_TUNING, key, value)
    body, inputs, kw = CASES[name]
    spec = snippet_spec(body, inputs, FAMILY)
    source = compile_spec(spec, ("sm_90",))
    plain = "smoothing" not in name and "nd_" not in name
    if "lane_max" in knobs and plain:
        assert "e = ct.exp2(-ct.abs(x2 - m)" in source.code and "ct.max(xv" not in source.code
    if CE_KNOBS[knobs]["ce_exp_ftz"]:
        assert "ct.exp(" not in source.code and "flush_to_zero=True)" in source.code
    else:
        assert "flush_to_zero" not in source.code
    lo, hi = kw["int_ranges"]["y"]
    base = make_inputs(**{**kw, "int_ranges": {"y": (max(lo, 1), hi)}})

    def extreme(t, gen):
        x = base(t, gen)
        if t.name == "x":
            x = x * 60
            x[:, 0] = -float("inf")
        return x

    for make in (make_inputs(**kw), extreme):
        result = check_emulated(spec, source, make_input=make)
        assert result.ok, result.message


def test_cross_entropy_flat_rows_where_rows_are_off_16_bytes(monkeypatch):
    """Plain logits of one row per block whose rows are not 16-byte aligned read aligned tiles of the flat tensor,
    one more per row than its chunks (a flat length off 16: from its prefix of a multiple of 16, the last tile
    gathered); aligned rows, several rows per block and the knob off keep the (N, C) tiles."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    def flat(n, c, dtype="torch.float32"):
        spec = snippet_spec(forward("F.cross_entropy(x, y)", XY),
                            f"[torch.randn({n}, {c}, dtype={dtype}), torch.randint(0, {c}, ({n},))]", FAMILY)
        code = generate_kernel(spec).code
        return "a_x = x.reshape(-1)" in code and "xv = ct.where((ff >= 0) & (ff <" in code

    assert flat(16, 2053) and flat(4096, 50257, "torch.bfloat16") and flat(16, 4100, "torch.bfloat16")
    assert not flat(16, 4096) and not flat(16, 4096, "torch.bfloat16")  # 16-byte rows
    assert flat(8, 2053)  # 16424 elements: not a multiple of 16
    spec = snippet_spec(forward("F.cross_entropy(x, y)", XY), "[torch.randn(8, 2053), torch.randint(0, 2053, (8,))]",
                        FAMILY)
    code = generate_kernel(spec).code
    assert ("p_x = a_x[:16416]" in code and "ff = 16416 + ct.arange(BC" in code
            and "ct.gather(a_x, ff, mask=ff < 16424" in code), code
    assert not flat(16, 1001)  # 4 rows per block
    monkeypatch.setitem(MEMORY_TUNING, "ce_flat", False)
    assert not flat(16, 2053)


@pytest.mark.parametrize("classes", [5000, 5001])
def test_cross_entropy_rows_whose_first_chunk_is_all_minus_inf(classes):
    """A row whose first 4096-class chunk is all -inf (masked logits) has a finite loss: the online log-sum-exp
    must not compute exp(-inf - -inf) while the row's max is still -inf. (N, C) tiles (5000) and flat tiles
    (5001: rows off 16 bytes, 3 x 5001 not a multiple of 16, the last tile gathered)."""
    import torch

    from tilestudio.core.kernels import generate_kernel

    from .cutile_emulator import emulation, load_emulated

    spec = snippet_spec(forward("F.cross_entropy(x, y, reduction='none')", XY),
                        f"[torch.randn(3, {classes}), torch.randint(0, {classes}, (3,))]", FAMILY)
    source = generate_kernel(spec)
    x = torch.randn(3, classes)
    x[0, :4200] = -torch.inf
    x[2, 100:] = -torch.inf
    y = torch.tensor([4500, 7, 50])
    with emulation():
        got = load_emulated(source)[source.launch_name](x, y)
    want = torch.nn.functional.cross_entropy(x.double(), y, reduction="none")
    assert torch.isfinite(got).all(), got
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)
